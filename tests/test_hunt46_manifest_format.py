"""A manifest with an incarnation token (every new run's on an object store)
was written with format 1, the format a durable before tokens reads: that
durable found a field it did not know and called a teammate's intact run
"undecodable" (damaged), where a manifest of a format above its own says
"written by a newer version of durable ... upgrade". A manifest with a
token is now format 2, so that reader names it newer; one without a token
(a local store's, a run recorded before tokens) stays format 1, which it
reads as before."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._storage import manifest as manifests
from durable._storage.codec import unpack
from durable._storage.envelope import unseal


@durable.workflow(name="fmt", run_id="r")
def flow() -> int:
    return 1


def _version(raw: bytes) -> object:
    """The format a manifest's summary says it has."""
    head = raw[: manifests.summary_size(raw)][8:]
    return unpack(unseal(head, None, run_id="r", position=None, name="run"))["v"]


def test_a_manifest_with_a_token_is_a_newer_format_to_a_durable_before_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects, local = durable.open_store("memory://hunt46-format"), durable.open_store(tmp_path)
    for store in (objects, local):
        flow.with_options(store=store).run()
    tokened, plain = objects.load_manifest("fmt", "r"), local.load_manifest("fmt", "r")
    assert tokened is not None and plain is not None
    assert (_version(tokened), _version(plain)) == (2, 1)
    # A reader that knows format 1 alone (a durable before tokens) names it newer.
    monkeypatch.setattr(manifests, "MANIFEST_FORMAT", 1)
    with pytest.raises(durable.CorruptRecordError, match="newer version of durable") as e:
        manifests.decode_manifest(objects, "fmt", "r", tokened)
    assert e.value.newer == 2
    assert manifests.decode_manifest(local, "fmt", "r", plain).incarnation == ""
