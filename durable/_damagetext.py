"""What the errors about something stored being damaged or gone say: a
record or manifest (`CorruptRecordError`), an artifact a step produced
(`ArtifactMissingError`). Kept apart from the error classes so that
`errors` stays one screen of classes; like `_errortext`, it imports
nothing of durable."""

from __future__ import annotations


def corrupt_record_text(
    run_id: str, position: object, key: str, why: str, advice: str | None, newer: int | None, unloadable: bool
) -> str:
    """`position`: an `_errortext.Position`, or None for the run's manifest or records."""
    if newer is not None:  # nothing to restart or remove: its writer reads it
        return (
            f"run {run_id!r}: {key} was written by a newer version of durable (format {newer};"
            f" this one reads {why}). It was not used and is not damaged: upgrade durable "
            "here (pip install -U durable-fn); the version that wrote it can resume it."
        )
    if position is not None:
        # `unloadable`: intact, but what it holds cannot be rebuilt here.
        state = "cannot be loaded" if unloadable else "is damaged"
        what = f"the record at position {position} ({key}) {state}"
        fallback = (
            "Start the run afresh with restart=True (durable run --restart); on an "
            "object store, deleting just that object re-runs only that operation"
        )
    else:
        manifest = key == "run" or key.endswith("/run")
        what = f"the run's {'manifest' if manifest else 'records'} ({key}) "
        what += "is damaged" if manifest else "are damaged"
        fallback = "Start the run afresh with restart=True (durable run --restart)"
    return (
        f"run {run_id!r}: {what}: {why}. It was not used. {advice or fallback}, or remove "
        "the run with `durable rm`."
    )


def artifact_missing_text(run_id: str, position: object, step: str, url: str, state: str) -> str:
    if state == "not produced":
        detail = (
            f"step {step!r} (position {position}) registered the artifact {url} but it "
            "did not exist when the step returned; the step was not recorded. Register "
            "the path after writing it, or fix the path, and call again."
        )
    else:
        detail = (
            f"the artifact {url} produced by step {step!r} (position {position}) is now "
            f"{state}, and the step has artifacts_policy='refuse' so it was not run "
            "again; nothing after it ran. Restore the artifact and call again, or start "
            "fresh with restart=True."
        )
    return f"run {run_id!r}: {detail}"
