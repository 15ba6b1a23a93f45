"""A run's manifest as stored: a summary (what a listing shows) and a payload
(the step fingerprints, the arguments and the result) in one object, each
part sealed on its own, so that listing a run reads only the summary's bytes
and never a large argument or result.

    DRM1 | summary length (4) | sealed summary | sealed payload

The summary names the payload's checksum, so a payload swapped in from
another manifest (of this run or another) is refused when it is read. This
is the one manifest codec: the run core and run management both read
through `read_manifest`/`decode_manifest`, which also refuse a valid (even
signed) manifest copied from another run."""

from __future__ import annotations

import copy
import struct
from dataclasses import fields as dataclass_fields
from typing import Any

from ..errors import CorruptRecordError
from .base import Store
from .clock import now
from .codec import pack, unpack
from .keys import is_incarnation, manifest_key
from .records import RunRecord, load_stored, seal, sealed_sum, unseal

_MAGIC = b"DRM1"
# The manifest's format, in its summary and payload ("v"): 1 without an
# incarnation token, 2 with one. A reader refuses a format above the highest
# it knows as a newer durable's (intact: upgrade), so a durable before tokens
# (which knows 1) names a manifest with one so, rather than "undecodable";
# one without a token it reads as before. Any later change of what a
# manifest holds raises MANIFEST_FORMAT (3 next), written in every manifest
# the change touches: a number written before means what it meant then.
FORMAT_WITHOUT_TOKEN, MANIFEST_FORMAT = 1, 2
_LEN = struct.Struct(">I")
_FRAME = len(_MAGIC) + _LEN.size
# How much of each manifest a listing reads first: most summaries fit (one
# with a long error message and traceback takes a second, exact read).
HEAD = 8 * 1024
_SUMMARY = ("workflow", "run_id", "fingerprint", "status", "created", "updated", "error",
            "reason", "extra", "incarnation")  # fmt: skip
_PAYLOAD = ("steps", "step_parts", "args_encoding", "args", "args_blob", "result_encoding",
            "result", "result_blob", "plan")  # fmt: skip


def pack_manifest(manifest: RunRecord, key: bytes | None) -> bytes:
    # Shallow: `asdict` would deep-copy the plan, one list per position.
    fields = {f.name: getattr(manifest, f.name) for f in dataclass_fields(manifest)}
    fields["plan"] = _plan_runs(manifest.plan)
    version = MANIFEST_FORMAT if manifest.incarnation else FORMAT_WITHOUT_TOKEN
    payload = seal(pack({"v": version, **{k: fields[k] for k in _PAYLOAD}}), key)
    summary = {"v": version, **{k: fields[k] for k in _SUMMARY}, "payload": sealed_sum(payload)}
    if not manifest.incarnation:  # as before tokens: a version without them reads it
        del summary["incarnation"]
    head = seal(pack(summary), key)
    return _MAGIC + _LEN.pack(len(head)) + head + payload


def summary_size(head: bytes) -> int:
    """How many leading bytes of a manifest hold its summary (0 when even
    the frame is cut short: the object is damaged)."""
    if len(head) < _FRAME or head[: len(_MAGIC)] != _MAGIC:
        return 0
    return _FRAME + int(_LEN.unpack_from(head, len(_MAGIC))[0])


def unpack_manifest(
    raw: bytes,
    key: bytes | None,
    *,
    run_id: str,
    name: str,
    summary_only: bool = False,
    plan: bool = True,
) -> RunRecord:
    """The verified manifest; with `summary_only`, from its leading bytes
    alone, with the payload's fields left empty; without `plan`, with the
    plan checked but left None (see `_plan_entries`)."""
    end = summary_size(raw)
    if not end or len(raw) < end:
        raise CorruptRecordError(run_id, None, name, "truncated or not a durable manifest")
    summary = _fields(unseal(raw[_FRAME:end], key, run_id=run_id, position=None, name=name),
                      run_id, name)  # fmt: skip
    wanted = summary.pop("payload", None)
    if summary_only:
        return _record(summary, dict(steps={}, step_parts={}, args_encoding="", args=b""),
                       run_id, name)  # fmt: skip
    sealed = raw[end:]
    payload = _fields(unseal(sealed, key, run_id=run_id, position=None, name=name), run_id, name)
    if sealed_sum(sealed) != wanted:
        why = "its arguments and result belong to another version of it (swapped in)"
        raise CorruptRecordError(run_id, None, name, why)
    payload["plan"] = _plan_entries(payload.get("plan"), run_id, name, expand=plan)
    return _record(summary, payload, run_id, name)


# The plan has one entry per position of the last completed attempt, and
# runs of the same operation are the rule (a loop of steps): it is stored as
# {"runs": [[entry, count], ...]}, so a completed run's re-call decodes a
# few entries, not one list per position, and none at all when it does
# not ask for the plan (`plan=False`: only a run that continues writes it back).
def _plan_runs(plan: list[Any] | None) -> dict[str, list[Any]] | None:
    if plan is None:
        return None
    runs: list[list[Any]] = []
    for entry in plan:
        if runs and runs[-1][0] == entry:
            runs[-1][1] += 1
        else:
            runs.append([entry, 1])
    return {"runs": runs}


def _plan_entries(stored: Any, run_id: str, name: str, *, expand: bool) -> list[Any] | None:
    """The plan as `RunRecord.plan` holds it; positions of one run share
    their entry (a plan is replaced, never changed in place). Checked
    whether or not it is `expand`ed: a damaged plan is refused either way."""
    if stored is None or isinstance(stored, list):  # None, or written as a list
        return stored if expand else None
    runs = stored.get("runs") if isinstance(stored, dict) else None
    if not isinstance(runs, list) or not all(
        isinstance(r, list) and len(r) == 2 and type(r[1]) is int and r[1] > 0 for r in runs
    ):
        raise CorruptRecordError(run_id, None, name, "undecodable: its plan is not a plan")
    if not expand:
        return None
    plan: list[Any] = []
    for entry, count in runs:
        plan += [entry] * count
    return plan


def _fields(body: bytes, run_id: str, name: str) -> dict[str, Any]:
    try:
        fields = unpack(body)
    except Exception as e:
        raise CorruptRecordError(run_id, None, name, f"undecodable: {e}") from e
    if not isinstance(fields, dict):
        raise CorruptRecordError(run_id, None, name, "unknown manifest format")
    version = fields.pop("v", None)
    if type(version) is int and version > MANIFEST_FORMAT:  # a teammate's newer durable wrote it
        why = f"formats {FORMAT_WITHOUT_TOKEN} to {MANIFEST_FORMAT}"
        raise CorruptRecordError(run_id, None, name, why, newer=version)
    if version not in (FORMAT_WITHOUT_TOKEN, MANIFEST_FORMAT) or type(version) is not int:
        raise CorruptRecordError(run_id, None, name, "unknown manifest format")
    return fields


def _record(summary: dict[str, Any], payload: dict[str, Any], run_id: str, name: str) -> RunRecord:
    try:
        record = RunRecord(**summary, **payload)
    except TypeError as e:
        raise CorruptRecordError(run_id, None, name, f"undecodable: {e}") from e
    if not is_incarnation(record.incarnation):  # it names a folder (`keys.space`)
        raise CorruptRecordError(run_id, None, name, "undecodable: its incarnation is no token")
    return record


def read_manifest(store: Store, workflow: str, run_id: str) -> RunRecord | None:
    """The run's verified manifest, None when the run has none."""
    raw = store.load_manifest(workflow, run_id)
    return None if raw is None else decode_manifest(store, workflow, run_id, raw)


def decode_manifest(
    store: Store,
    workflow: str,
    run_id: str,
    raw: bytes,
    *,
    summary_only: bool = False,
    plan: bool = True,
) -> RunRecord:
    """The manifest in `raw`, read from the run's key (with `summary_only`,
    from its leading bytes alone; without `plan`, its plan left None):
    CorruptRecordError or IntegrityError when it is damaged, forged or
    another run's."""
    key = manifest_key(workflow, run_id)
    manifest = unpack_manifest(
        raw, store.signing_key, run_id=run_id, name=key, summary_only=summary_only, plan=plan
    )
    if (manifest.workflow, manifest.run_id) != (workflow, run_id):
        # A valid (even signed) manifest copied from another run.
        why = f"it belongs to run {manifest.run_id!r} of {manifest.workflow!r}"
        raise CorruptRecordError(run_id, None, key, why)
    store.note_incarnation(workflow, run_id, manifest.incarnation)
    return manifest


def write_manifest(store: Store, manifest: RunRecord) -> None:
    manifest.updated = now()
    data = pack_manifest(manifest, store.signing_key)
    store.save_manifest(manifest.workflow, manifest.run_id, data)
    store.note_incarnation(manifest.workflow, manifest.run_id, manifest.incarnation)


def manifest_arguments(store: Store, manifest: RunRecord) -> dict[str, Any]:
    """The arguments a run recorded (those that could be serialised), decoded
    under the store's pickle and signing policy."""
    key = manifest_key(manifest.workflow, manifest.run_id)
    where = (manifest.workflow, manifest.run_id)
    args, blob = manifest.args, manifest.args_blob
    value = load_stored(store, where, manifest.args_encoding, args, blob, position=None, name=key)
    if not isinstance(value, dict):
        raise CorruptRecordError(manifest.run_id, None, key, "its arguments are not a mapping")
    return value


def copy_manifest(manifest: RunRecord | None) -> RunRecord | None:
    """A copy of the manifest to put back as it was (after a refusal). Its
    plan (one entry per position) is only ever replaced, never changed in
    place, so it is shared rather than copied entry by entry."""
    if manifest is None:
        return None
    plan, manifest.plan = manifest.plan, None
    try:
        before = copy.deepcopy(manifest)
    finally:
        manifest.plan = plan
    before.plan = plan
    return before
