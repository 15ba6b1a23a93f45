"""A run's manifest (`<workflow>/<run id>/run`) as stored: the one codec
every reader and writer uses. Reading verifies the seal and that the
manifest is this run's own (a valid, even signed, manifest copied from
another run is refused as damaged)."""

from __future__ import annotations

from ..errors import CorruptRecordError
from .base import Store
from .clock import now
from .records import RunRecord, seal, unseal


def manifest_key(workflow: str, run_id: str) -> str:
    return f"{workflow}/{run_id}/run"


def read_manifest(store: Store, workflow: str, run_id: str) -> RunRecord | None:
    """The run's verified manifest, None when the run has none."""
    raw = store.load_manifest(workflow, run_id)
    return None if raw is None else decode_manifest(store, workflow, run_id, raw)


def decode_manifest(store: Store, workflow: str, run_id: str, raw: bytes) -> RunRecord:
    """The manifest in `raw`, read from the run's key: CorruptRecordError or
    IntegrityError when it is damaged, forged or another run's."""
    key = manifest_key(workflow, run_id)
    body = unseal(raw, store.signing_key, run_id=run_id, position=None, name=key)
    try:
        manifest = RunRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, None, key, f"undecodable: {e}") from e
    if (manifest.workflow, manifest.run_id) != (workflow, run_id):
        # A valid (even signed) manifest copied from another run.
        why = f"it belongs to run {manifest.run_id!r} of {manifest.workflow!r}"
        raise CorruptRecordError(run_id, None, key, why)
    return manifest


def write_manifest(store: Store, manifest: RunRecord) -> None:
    manifest.updated = now()
    data = seal(manifest.to_bytes(), store.signing_key)
    store.save_manifest(manifest.workflow, manifest.run_id, data)
