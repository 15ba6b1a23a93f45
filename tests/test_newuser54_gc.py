"""`durable gc` on an object store whose endpoint goes down half way: each
run left cost the client's retries of a refused connection (about 10 s
each on S3); gc now stops after a few failures of one cause, says so,
exits 1, and `--json` lists the runs it did not try."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

import durable
from durable._cli.main import main
from durable._manage import runs

from . import s3proxy

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")


@durable.workflow(name="down54")
def flow(i: int) -> int:
    return i


@pytest.fixture
def behind(s3_endpoint: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Five completed runs in a bucket reached through a proxy, which
    stops (the endpoint down) once gc has listed them."""
    import s3fs

    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    s3fs.S3FileSystem.clear_instance_cache()  # one an earlier test made, on moto's own endpoint: not the proxy
    faults = s3proxy.Faults()
    endpoint, server = s3proxy.start(s3_endpoint, faults)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # each failure at once: the count is the point
    url = f"s3://durable-{uuid.uuid4().hex[:16]}/p"
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(url[5:].split("/")[0])
    store = durable.open_store(url, skip_instance_cache=True)
    for i in range(5):
        flow.with_options(store=store, run_id=f"r{i}")(i)
    listed = runs.list_runs

    def list_then_down(*args: object, **kwargs: object) -> list[runs.RunInfo]:
        found = listed(*args, **kwargs)  # type: ignore[arg-type]
        faults.deny("/", how="reset-mid")  # every request's connection dropped
        return found

    monkeypatch.setattr(runs, "list_runs", list_then_down)
    yield url
    server.shutdown()
    server.server_close()
    s3fs.S3FileSystem.clear_instance_cache()  # the CLI's, on the proxy's endpoint: no later test's


def test_gc_stops_after_a_few_failures_of_one_cause_and_lists_the_runs_not_tried(
    behind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gc", "--store", behind, "--status", "completed", "--json"]) == 1
    out, err = capsys.readouterr()
    said = json.loads(out)
    assert said["removed"] == []
    assert len(said["failed"]) == 3, said
    assert len(said["untried"]) == 2, said
    assert {r["runId"] for r in said["failed"] + said["untried"]} == {f"r{i}" for i in range(5)}
    assert "stopped after 3 failures of one cause in a row: 2 more not tried" in err, err
