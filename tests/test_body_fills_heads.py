"""A global of another module filled from a run argument through a chain
that does not start at the module's name: `setattr`, `vars()`,
`__dict__`, `importlib.import_module`, or a local bound to the module, to
its global or to its class. A resume given another value for the argument
is a changed call at that step, never a replay of the output computed from
the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in
from tests.test_body_fills import SETTINGS_MODULE

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

BODIES = [
    "setattr(cfg, 'SCALE', scale)\n    return cfg.from_scale(10)",
    "setattr(cfg.Settings, 'rate', scale)\n    return cfg.from_settings(10)",
    "vars(cfg).update(SCALE=scale)\n    return cfg.from_scale(10)",
    "cfg.__dict__['SCALE'] = scale\n    return cfg.from_scale(10)",
    "importlib.import_module('cfg').SCALE = scale\n    return cfg.from_scale(10)",
    "m = cfg\n    m.SCALE = scale\n    return cfg.from_scale(10)",
    "m = cfg\n    m.configure(scale)\n    return cfg.from_config(10)",
    "c = cfg.CONFIG\n    c['scale'] = scale\n    return cfg.from_config(10)",
    "s = cfg.Settings\n    s.rate = scale\n    return cfg.from_settings(10)",
]

FLOW = """
import importlib, sys
import durable

def run(i, scale):
    try:
        if sys.argv[1] == "start":
            FLOWS[i](scale)
        else:
            print("value", FLOWS[i].resume(f"h{i}", scale=scale, ready=True).value)
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError as e:
        ok = "the record at position 0" in str(e) and "arguments changed" in str(e)
        print("refused", ok, *([] if ok else [repr(str(e))]))  # another refusal: say which
"""


def workflow(i: int, body: str) -> str:
    """The i-th workflow: its body fills a global of a module of its own
    (`cfg{i}`: one run's fill must not change another's definition), returns
    its step's output, and suspends first unless ready."""
    head, _, ret = body.replace("cfg", f"cfg{i}").rpartition("\n    return ")
    return f"""
import cfg{i}

@durable.workflow(run_id="h{i}")
def wf{i}(scale, ready=False):
    {head}
    out = {ret}
    if not ready:
        durable.suspend("waiting")
    return out
"""


@pytest.mark.slow
def test_a_global_filled_through_another_head_in_real_processes(tmp_path: Path) -> None:
    """Every workflow starts with scale=2 in one process (each suspends
    after its step), and is resumed with scale=3 in another: refused at its
    step for its arguments (running gives 30, not 20); then with scale=2:
    replayed. Each step ran once."""
    for i in range(len(BODIES)):
        (tmp_path / f"cfg{i}.py").write_text(SETTINGS_MODULE)
    script = FLOW + "".join(workflow(i, b) for i, b in enumerate(BODIES))
    script += f"\nFLOWS = [{', '.join(f'wf{i}' for i in range(len(BODIES)))}]\n"
    script += "for i in range(len(FLOWS)):\n    run(i, int(sys.argv[2]))\n"
    (tmp_path / "flow.py").write_text(script)
    assert run_in(tmp_path, "flow.py", "start", "2").split("\n")[:-1] == ["suspended"] * len(BODIES)
    assert run_in(tmp_path, "flow.py", "resume", "3").split("\n")[:-1] == ["refused True"] * len(BODIES)
    assert run_in(tmp_path, "flow.py", "resume", "2").split("\n")[:-1] == ["value 20"] * len(BODIES)
    for i, body in enumerate(BODIES):
        assert (tmp_path / f"count.cfg{i}").read_text() == "step\n", body
