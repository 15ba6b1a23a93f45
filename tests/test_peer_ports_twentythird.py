"""A twenty-third round of the peers' own test cases: LangGraph's
durability modes (tests/test_interruption.py, test_pregel.py
`test_pending_writes_resume`: one graph invoked with `durability="sync"`,
`"async"` or `"exit"`, over each checkpointer; pregel/main.py "set
durability mode for subgraphs": a subgraph writes under the mode its
graph was invoked with). Found here, each with the level asked of a run
(`with_options(durability=)`) against its store's:
- a child run (a subgraph) wrote under its store's level, not its
  caller's: a parent asked for "fsync" over a store opened "none" ran its
  child's steps without one sync. Now the caller's, or the store's where
  that syncs more;
- a run asked for "fsync" over a local store opened "none" made its
  folders (its own, at its start; blobs/, for a large output, as it runs)
  without syncing them into their parents: a power loss could take the
  folder with the records synced in it;
- on an object store (memory://, as S3) a run under "none" noted nothing
  in its manifest, so a record lost since (an expiry rule) made the
  resume run its step again, where the level changes nothing there.
The kills under each level, changed between attempts, are in
tests/test_peer_ports_twentythird_procs.py; earlier rounds in
tests/test_peer_ports*.py. In-process: syncs are counted by wrapping
`os.fdatasync` and `os.fsync`, executions by the step bodies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import durable


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The inode of each file fdatasync'ed, in order."""
    seen: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        real(fd)
        seen.append(os.fstat(fd).st_ino)

    monkeypatch.setattr(os, "fdatasync", counting)
    return seen


def subgraph_flows(store: durable.Store, child_level: str | None = None) -> tuple[durable.Workflow[[int], int], list[str]]:
    ran: list[str] = []

    @durable.step(name="node")
    def node(x: int) -> int:
        ran.append(f"node{x}")
        return x * 10

    @durable.workflow(name="sub", store=store, durability=child_level)
    def sub(x: int) -> int:
        return node(x) + node(x + 1)

    @durable.workflow(name="graph", store=store)
    def graph(x: int) -> int:
        return sub(x) + node(x + 2)

    return graph, ran


def log_of(root: Path, workflow: str) -> int:
    (log,) = root.glob(f"{workflow}/*/records.log")
    return log.stat().st_ino


@pytest.mark.parametrize(("store_level", "asked"), [("none", "fsync"), ("fsync", "none"), ("none", "batch")])
def test_langgraph_a_subgraph_runs_under_the_level_its_parent_was_invoked_with(
    tmp_path: Path, synced: list[int], store_level: str, asked: str
) -> None:
    graph, ran = subgraph_flows(durable.open_store(tmp_path, durability=store_level, sync_interval=3600))
    assert graph.with_options(durability=asked, run_id="t1")(1) == 60
    assert ran == ["node1", "node2", "node3"]
    child, parent = log_of(tmp_path, "sub"), log_of(tmp_path, "graph")
    # "fsync": each record synced before its step returned; "batch": once, at
    # the run's end (the interval of an hour never passes); "none": never. A
    # child never syncs less than its store's level says ("none" asked of the
    # parent over a store opened "fsync": the child's records are synced).
    expected = {"fsync": (2, 2), "batch": (1, 1), "none": (2, 0)}[asked]
    assert (synced.count(child), synced.count(parent)) == expected, synced
    # Called again: the completed run answers, nothing runs.
    assert graph.with_options(durability=asked, run_id="t1")(1) == 60
    assert ran == ["node1", "node2", "node3"]


def test_langgraph_a_subgraph_given_its_own_level_keeps_it(tmp_path: Path, synced: list[int]) -> None:
    graph, ran = subgraph_flows(durable.open_store(tmp_path, durability="none"), child_level="none")
    assert graph.with_options(durability="fsync", run_id="t1")(1) == 60
    assert ran == ["node1", "node2", "node3"]
    assert (synced.count(log_of(tmp_path, "sub")), synced.count(log_of(tmp_path, "graph"))) == (0, 2), synced


def test_langgraph_sync_mode_over_a_store_opened_none_keeps_the_runs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LangGraph's durability="sync" over a checkpointer of its own: the level
    # asked for one invocation. Each record was synced, but the run's folder
    # was made under the store's level ("none"), its entry in the workflow's
    # folder never synced: a power loss could take the folder, records and all.
    synced_folders: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        real(fd)
        synced_folders.append(os.fstat(fd).st_ino)

    monkeypatch.setattr(os, "fsync", counting)
    root = tmp_path / "s"
    graph, ran = subgraph_flows(durable.open_store(root, durability="none"))
    assert graph.with_options(durability="fsync", run_id="t1")(1) == 60
    assert ran == ["node1", "node2", "node3"]
    # Each folder a run's records are in is synced into its parent: the
    # store's root into its own, the workflows' into the root, the runs' into theirs.
    for folder in (tmp_path, root, root / "graph", root / "sub"):
        assert folder.stat().st_ino in synced_folders, folder


@pytest.mark.parametrize("level", ["fsync", "batch", "none"])
def test_langgraph_each_mode_over_a_remote_checkpointer_refuses_a_lost_checkpoint(level: str, tmp_path: Path) -> None:
    # LangGraph's durability tests run each mode against every checkpointer
    # (in memory, SQLite, Postgres) and expect one history. On an object
    # store (memory://, as S3) every PUT is durable once it returns, so the
    # level changes nothing: a record lost since (an expiry rule, a partial
    # `aws s3 rm`) is refused under each. Under "none" the run noted nothing,
    # and the resume ran every step again.
    store = durable.open_store(f"memory://peers48-{level}-{tmp_path.name}", durability=level)
    ran: list[int] = []

    @durable.step(name="node")
    def node(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(name="graph", store=store, run_id="t1")
    def graph(stop: bool) -> list[int]:
        out = [node(i) for i in range(3)]
        if stop:
            durable.suspend("interrupt_after")
        return out

    with pytest.raises(durable.Suspended):
        graph(True)
    (segment,) = [k for k in store.list("graph/t1/") if "/segments/" in k]
    store.delete([segment])
    with pytest.raises(durable.CorruptRecordError, match="deleted or lost"):
        graph(False)
    assert ran == [0, 1, 2]


@pytest.mark.parametrize("where", ["local", "memory"])
@pytest.mark.parametrize("level", ["fsync", "batch", "none"])
def test_langgraph_pending_writes_resume_under_each_mode(tmp_path: Path, level: str, where: str) -> None:
    # test_pending_writes_resume, parametrized over `durability` as LangGraph
    # runs it: node "one" succeeds and "two" fails twice (RetryPolicy(max_attempts=2))
    # in parallel; each resume calls "one" no more and gives "two" two tries.
    # Here the nodes are a checkpointed loop_over in a subgraph (a child run,
    # taking the level the graph is invoked with), the level changed between invocations.
    from concurrent.futures import ThreadPoolExecutor

    url = str(tmp_path) if where == "local" else f"memory://peers48-writes-{level}-{tmp_path.name}"
    store = durable.open_store(url, durability="none" if level == "fsync" else "fsync")
    calls = {"one": 0, "two": 0}
    fails = [True]

    @durable.step(name="node", retries=1, retry_delay=0)
    def node(name: str) -> int:
        calls[name] += 1
        if name == "two" and fails[0]:
            raise ConnectionError("I'm not good")
        return 2 if name == "one" else 3

    @durable.workflow(name="sub", store=store)
    def sub() -> list[int]:
        with ThreadPoolExecutor(2) as pool:
            return durable.loop_over(node, ["one", "two"], executor=pool, checkpoint_items=True)

    @durable.workflow(name="graph", store=store, run_id="1")
    def graph(value: int) -> int:
        return value + sum(sub())

    others = [lvl for lvl in ("fsync", "batch", "none") if lvl != level]
    for tries, asked in ((2, level), (4, others[0])):
        with pytest.raises(ConnectionError, match="I'm not good"):
            graph.with_options(durability=asked)(1)
        assert calls == {"one": 1, "two": tries}
    fails[0] = False
    assert graph.with_options(durability=others[1])(1) == 6
    assert graph.with_options(durability=level)(1) == 6
    assert calls == {"one": 1, "two": 5}


def test_langgraph_sync_mode_over_a_store_opened_none_keeps_a_large_outputs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same for a large output, kept beside the log in the run's blobs/
    # folder: the folder is made after the run started, and its entry in the
    # run's folder was synced under the store's level, not the run's. Each
    # folder sync is kept with whether blobs/ was there yet.
    blobs = tmp_path / "graph" / "t1" / "blobs"
    synced_folders: list[tuple[int, bool]] = []
    real = os.fsync

    def counting(fd: int) -> None:
        real(fd)
        synced_folders.append((os.fstat(fd).st_ino, blobs.is_dir()))

    monkeypatch.setattr(os, "fsync", counting)
    store = durable.open_store(tmp_path, durability="none", blob_threshold=100)
    ran: list[str] = []
    before_next: list[tuple[int, bool]] = []

    @durable.step(name="node")
    def node() -> str:
        ran.append("node")
        return "x" * 1000

    @durable.step(name="next")
    def next_node(n: int) -> int:
        ran.append("next")
        before_next.extend(synced_folders)  # what a power loss here would find synced
        return n

    @durable.workflow(name="graph", store=store, run_id="t1")
    def graph() -> int:
        return next_node(next_node(0) + len(node()))  # the log made first, then blobs/

    assert graph.with_options(durability="fsync")() == 1000 and ran == ["next", "node", "next"]
    assert len(list(blobs.iterdir())) == 1
    assert (blobs.parent.stat().st_ino, True) in before_next, before_next
