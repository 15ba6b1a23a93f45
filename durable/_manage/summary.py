"""How a listing says what a run's manifest holds in its own shape: the
error it ended with, and a resume refused at its start."""

from __future__ import annotations

from typing import Any


def summarize_error(error: dict[str, str]) -> str:
    message = (error.get("message") or "").strip().splitlines()
    kind = error.get("type", "Error")  # alone for one without a message, a KeyboardInterrupt's
    return (f"{kind}: {message[0]}" if message else kind)[:300]


def refused_text(noted: Any) -> str | None:
    """What `lifecycle.REFUSED` notes ([recorded, refused, changed steps]), said."""
    if not (isinstance(noted, list) and len(noted) == 3 and isinstance(noted[2], list)):
        return None
    changed = ", ".join(map(str, noted[2])) or "the workflow body"
    return f"code changed since: definition {noted[0]} -> {noted[1]} (changed: {changed})"
