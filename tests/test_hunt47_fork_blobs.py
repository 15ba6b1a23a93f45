"""A fork of a run whose outputs are blobs, then the removal of its source
(`durable rm`): the fork's records point at blobs of its own incarnation's
folder, so the removal takes none it reads. On an object store (moto's
server: blobs in `<wf>/<run>/inc-<token>/blobs/`) and on the local one."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._manage.delete import delete_run
from durable._manage.fork import fork_run

pytestmark = pytest.mark.slow  # moto's server

ran: list[int] = []


@durable.step(name="big")
def big(i: int) -> str:
    ran.append(i)
    return "x" * 2000 + str(i)  # over the store's blob threshold below: a blob


@durable.workflow(name="fb47", run_id="src")
def fb47(n: int) -> list[int]:
    return [len(big(i)) for i in range(n)]


@pytest.mark.parametrize("where", ["s3", "local"])
def test_a_fork_keeps_its_blobs_once_its_source_is_removed(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("s3_url") if where == "s3" else str(tmp_path / "runs")
    store = durable.open_store(url, blob_threshold=1000)
    ran.clear()
    assert fb47.with_options(store=store).run(3).value == [2001] * 3
    assert fork_run(store, "fb47", "src", 2, new_run_id="f") == "f"
    assert delete_run(store, "fb47", "src")
    ran.clear()
    fresh = durable.open_store(url, blob_threshold=1000)
    run = fb47.with_options(store=fresh).resume("f")
    assert (run.value, ran) == ([2001] * 3, [2])  # 0 and 1 from their blobs, 2 runs
    assert durable.open_store(url, blob_threshold=1000).list("fb47/src/") == []
