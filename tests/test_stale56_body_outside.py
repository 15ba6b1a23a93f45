"""A function defined in the workflow's body that captures a local the body
read from a file or the environment (`cfg = json.load(open("cfg.json"))`,
then `def item(x): return x + cfg["j"]`): its fingerprint counted the dict
by type only (a body's locals were taken as made from the run's arguments
alone), so a run stopped after some calls, resumed after cfg.json changed,
replayed what the old file computed (`[0, 1]` for `[5, 6]`, a child
workflow's result too, or a `loop_over`'s kept items next to new ones). Such a local now counts by
content, as a global made from a file does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import durable

FLOW = """
    import json, os
    import durable

    CALLS = []
    STOP = []

    @durable.step
    def stop(v):
        if STOP:
            raise RuntimeError("stopped")
        return v

    @durable.workflow
    def wf(folder):
        cfg = json.load(open(os.path.join(folder, "cfg.json")))
        env = {"j": int(os.environ.get("J56", "0"))}

        @durable.step
        def item(x):
            CALLS.append(("item", x))
            return x + cfg["j"] + env["j"]

        def plain(x):
            CALLS.append(("plain", x))
            return x + cfg["j"] + env["j"]

        @durable.workflow
        def kid(x):
            CALLS.append(("kid", x))
            return x + cfg["j"] + env["j"]

        direct = [item(0), item(1)]
        kept = durable.loop_over(plain, [0, 1], checkpoint_items=True)
        return stop([direct, kept, [kid(0), kid(1)]])
"""


@pytest.mark.parametrize("what", ["file", "environment"])
def test_a_body_local_read_from_outside_is_no_replay(
    load: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    durable.configure(store=str(tmp_path / "store"))
    m = load("stale56_body_" + what, FLOW)
    (tmp_path / "cfg.json").write_text(json.dumps({"j": 0}))
    monkeypatch.setenv("J56", "0")
    m.STOP.append(1)
    with pytest.raises(RuntimeError, match="stopped"):
        m.wf.with_options(run_id="r")(str(tmp_path))
    assert sorted(m.CALLS) == [("item", 0), ("item", 1), ("kid", 0), ("kid", 1), ("plain", 0), ("plain", 1)]
    if what == "file":
        (tmp_path / "cfg.json").write_text(json.dumps({"j": 5}))
    else:
        monkeypatch.setenv("J56", "5")
    m.STOP.clear()
    m.CALLS.clear()
    with pytest.raises(durable.DefinitionChangedError, match="item"):
        m.wf.resume("r")
    assert m.CALLS == []
    run = m.wf.with_options(on_change="rerun").resume("r")
    assert run.value == [[5, 6], [5, 6], [5, 6]]
    assert sorted(m.CALLS) == [("item", 0), ("item", 1), ("kid", 0), ("kid", 1), ("plain", 0), ("plain", 1)]


FILLED = """
    import json, os
    import durable
    import stale56_conf

    LOCAL = {}
    CALLS = []

    class Settings:
        mode = "a"
    STOP = []

    @durable.step
    def stop(v):
        if STOP:
            raise RuntimeError("stopped")
        return v

    @durable.step
    def local(x):
        CALLS.append(("local", x))
        return x + LOCAL["j"]

    @durable.step
    def other(x):
        CALLS.append(("other", x))
        return x + stale56_conf.CONFIG["j"]

    def fill(folder):
        with open(os.path.join(folder, "cfg.json")) as f:
            cfg = json.load(f)
        LOCAL.update(cfg)
        stale56_conf.CONFIG.update(cfg)

    @durable.workflow
    def wf(folder):
        fill(folder)
        return stop([local(0), other(0)])

    @durable.step
    def klass(x):
        CALLS.append(("klass", x))
        return f"{x}{Settings.mode}"

    @durable.workflow
    def bare():
        with open(os.environ["CFG56"]) as f:
            LOCAL.update(json.load(f))
        Settings.mode = os.environ["MODE56"]
        return stop([local(1), klass(1)])
"""


@pytest.mark.parametrize("flow", ["wf", "bare"])
def test_a_global_the_body_filled_from_a_file_is_no_replay(
    load: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flow: str
) -> None:
    """The body (or a function it calls) fills a module's dict from a file,
    and steps of this module or another read it: resumed after the file
    changed, the steps replayed the old contents' outputs ([0, 0] for
    [5, 5]; in a workflow taking no argument, [1, "1a"] for [6, "1b"], a
    class attribute set from the environment too)."""
    durable.configure(store=str(tmp_path / "store"))
    load("stale56_conf", "CONFIG = {}\n")
    m = load("stale56_filled", FILLED)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"j": 0}))
    monkeypatch.setenv("CFG56", str(cfg))
    monkeypatch.setenv("MODE56", "a")
    wf = m.wf if flow == "wf" else m.bare
    call = wf.with_options(run_id="r")
    m.STOP.append(1)
    with pytest.raises(RuntimeError, match="stopped"):
        call(str(tmp_path)) if flow == "wf" else call()
    ran = sorted(m.CALLS)
    cfg.write_text(json.dumps({"j": 5}))
    monkeypatch.setenv("MODE56", "b")
    m.STOP.clear()
    m.CALLS.clear()
    with pytest.raises(durable.DefinitionChangedError):
        wf.resume("r")
    assert m.CALLS == []
    run = wf.with_options(on_change="rerun").resume("r")
    assert run.value == ([5, 5] if flow == "wf" else [6, "1b"])
    assert sorted(m.CALLS) == ran
