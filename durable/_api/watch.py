"""What the command line may watch of a run (see `_core.watch`): until the
event stream lands, `durable run` prints its per-operation lines from here."""

from __future__ import annotations

from .._core.watch import Watcher, watch

__all__ = ["Watcher", "watch"]
