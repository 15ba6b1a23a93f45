"""A workflow body setting what a helper of its step reads from the run's
argument (`helpers.FACTOR = k`, `Conf.factor = k` on a class of the user's,
`OPTS.update(f=k)` of a dict a `functools.partial` binds, or a closure or
an object's attribute holds: `held.set_f(k)`), the step computing through
that helper (`helper(x)` reading `FACTOR`, `Conf.factor`,
`o["f"]`) and naming none of it itself. A run suspended with `k=2` and
called again with `k=5` replayed the step's output for 2 (`value 6`, not
15): what the body fills counted only for a step whose own code names it.
Now the globals the user's functions it reaches name count too; with the
same `k` the call still replays. The same for what the body fills from the
environment or a file (`helpers.Conf.factor = int(os.environ["F"])`,
`OPTS.update(json.load(open(path)))`), counted by content."""

from __future__ import annotations

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import functools, json, os
import durable
{head}

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return helper(x)

@durable.workflow(run_id="r1")
def wf(k):
    {sets}
    out = s(3)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
RUN = """
import durable, flow, os
try:
    print("value", flow.wf(int(os.environ["K"])))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", e)
"""
HELPERS = "FACTOR = 1\n\nclass Conf:\n    factor = 1\n\ndef helper(x):\n    return x * FACTOR * Conf.factor\n"
# A dict the body fills through `set_f(k)`, reached through a closure or an object's attribute.
HELD = """OPTS = {"f": 1}
def set_f(k):
    OPTS["f"] = k
def make(opts):
    return lambda x: x * opts["f"]
by_closure = make(OPTS)
class Model:
    def __init__(self, opts):
        self.opts = opts
    def run(self, x):
        return x * self.opts["f"]
MODEL = Model(OPTS)
def by_object(x):
    return MODEL.run(x)
"""
PARTIAL = 'OPTS = {"f": 1}\nhelper = functools.partial(lambda x, o: x * o["f"], o=OPTS)'
FILES = {"helpers.py": HELPERS, "held.py": HELD, "f2.json": '{"f": 2}', "f5.json": '{"f": 5}'}
# name: (flow's head, what the body sets, the variable whose 2 becomes 5)
CASES = {
    "module": ("import helpers\nfrom helpers import helper", "helpers.FACTOR = k", "K"),
    "class": ("class Conf:\n    factor = 1\n\ndef helper(x):\n    return x * Conf.factor", "Conf.factor = k", "K"),
    "partial": (PARTIAL, "OPTS.update(f=k)", "K"),
    "class_from_env": ("import helpers\nfrom helpers import helper", 'helpers.Conf.factor = int(os.environ["F"])', "F"),
    "partial_from_file": (PARTIAL, 'OPTS.update(json.load(open(f"f{os.environ[\'F\']}.json")))', "F"),
    "closure": ("import held\nhelper = held.by_closure", "held.set_f(k)", "K"),
    "object": ("import held\nfrom held import by_object as helper", "held.set_f(k)", "K"),
}


# The cases also run with the same value again (a false refusal there is one on every run).
_SAME = ("module", "class_from_env", "object")
# A cached step reading through its helper what the body set from `k`
# (`helpers.FACTOR = k`), in runs of `k` 2, 5, then 2: the run with 5 was
# served the entry the run with 2 kept (`value 6`, not 15).
CACHED = FLOW.replace("@durable.step", "@durable.step(cache=True)").replace('(run_id="r1")', "")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    cached = tmp_path_factory.mktemp("cached")
    (cached / "flow.py").write_text(CACHED.format(head=CASES["module"][0], sets=CASES["module"][1]))
    (cached / "helpers.py").write_text(HELPERS)
    jobs, folders = [(cached, RUN, {"K": k}) for k in ("2", "5", "2")], {}
    for name, (head, sets, var) in CASES.items():
        for again in ("5", "2") if name in _SAME else ("5",):  # another value, the same
            folders[name, again] = folder = tmp_path_factory.mktemp(name)
            (folder / "flow.py").write_text(FLOW.format(head=head, sets=sets))
            for file, text in FILES.items():
                (folder / file).write_text(text)
            jobs += [(folder, RUN, {"K": "2", "F": "2", "STOP": "1"}), (folder, RUN, {"K": "2", "F": "2", var: again})]
    outs = run_each(jobs)
    found = {
        f"{name}-{again}": (outs[3 + 2 * i], outs[4 + 2 * i], (folder / "count").read_text().split())
        for i, ((name, again), folder) in enumerate(folders.items())
    }
    found["cached"] = (" ".join(outs[:3]), "", (cached / "count").read_text().split())
    return found


def test_a_cached_step_keys_on_what_the_body_set_for_it(runs: dict[str, tuple[str, str, list[str]]]) -> None:
    outs, _, count = runs["cached"]
    # was: `value 6` three times, the second served the first run's entry
    assert outs.split() == ["value", "6", "value", "15", "value", "6"] and count == ["s", "s"], (outs, count)


@pytest.mark.parametrize("name", sorted(CASES))
def test_what_the_body_sets_for_a_helper_of_the_step_counts(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, second, count = runs[f"{name}-5"]
    assert "suspended" in first, first
    # was: `value 6`, the output for k=2 replayed
    assert "value 6" not in second and count == ["s"] + (["s"] if "value 15" in second else []), (second, count)
    assert "refused" in second or "value 15" in second, second


@pytest.mark.parametrize("name", _SAME)
def test_the_same_argument_replays(runs: dict[str, tuple[str, str, list[str]]], name: str) -> None:
    first, second, count = runs[f"{name}-2"]
    assert "suspended" in first and "value 6" in second and count == ["s"], (second, count)
