"""A step reading back what it wrote itself at an earlier call of the same
run (`ACC.append(x); return list(ACC)`), called twice, suspended after the
first call and resumed in a new process: the first call was replayed (its
append not redone) and the second ran live on the state the import made,
returning `[2]` where an uninterrupted run returns `[1, 2]`. So with a
dict, a counter (`global N`), a closure's cell (`nonlocal n`), an object's
attribute (`MEMORY.remember(x)` doing `self.seen.append(x)`), a class's
attribute, a step called by another step, and a step as a `loop_over`
item (items 1 and 2 restored, item 3 live: `[3]` for `[1, 2, 3]`). Each is
now refused, naming the state and the step, executing nothing; the way out
the refusal gives (`on_change="rerun"`) returns what an uninterrupted run
does. A step only writing, only reading, called once, or filling a memo
whose entries depend on their key alone resumes as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes, forked

HEAD = '''
import os, random, durable
import pkg69  # an empty `__init__.py`: seeds no generator (it was taken for text unread, one that may)

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

def failing():
    return os.path.exists(os.environ["COUNT_FILE"] + ".fail")
'''

# mode: (the definitions, the step's name); each mode's workflow calls it with 1,
# suspends, then calls it with 2. Refused on resume:
REFUSED = {
    "glist": ("ACC = []\n@durable.step\ndef glist(x):\n    count('glist')\n    ACC.append(x)\n    return list(ACC)", "ACC"),
    "gdict": ("SEEN = {}\n@durable.step\ndef gdict(x):\n    count('gdict')\n    SEEN[x] = x\n    return sorted(SEEN)", "SEEN"),
    "gcount": ("N = 0\n@durable.step\ndef gcount(x):\n    global N\n    count('gcount')\n    N += 1\n    return N", "N"),
    "cell": (
        "def make():\n    n = 0\n    @durable.step\n    def cell(x):\n        nonlocal n\n        count('cell')\n"
        "        n += 1\n        return n\n    return cell\ncell = make()",
        "n",
    ),
    "held": (
        "class Memory:\n    def __init__(self):\n        self.seen = []\n    def remember(self, x):\n"
        "        self.seen.append(x)\n        return list(self.seen)\nMEMORY = Memory()\n"
        "@durable.step\ndef held(x):\n    count('held')\n    return MEMORY.remember(x)",
        "MEMORY",
    ),
    "klass": ("class Kind:\n    seen = []\n@durable.step\ndef klass(x):\n    count('klass')\n    Kind.seen.append(x)\n    return list(Kind.seen)", "Kind"),
    "outer": (
        "INNER = []\n@durable.step\ndef inner(x):\n    INNER.append(x)\n    return list(INNER)\n"
        "@durable.step\ndef outer(x):\n    count('outer')\n    return inner(x)",
        "INNER",
    ),
    # A child workflow run twice by the same parent run, its step reading back its own write:
    # the child runs share the process's state (was `[[1], [2]]`).
    "kid": (
        "KID = []\n@durable.step\ndef kstep(x):\n    count('kid')\n    KID.append(x)\n    return list(KID)\n"
        "@durable.workflow\ndef kid(x):\n    return kstep(x)",
        "KID",
    ),
    # Another step reading what the replayed one wrote (held before: `test_stale68_inner`).
    "other": (
        "W = []\n@durable.step\ndef put(x):\n    count('other')\n    W.append(x)\n    return x\n"
        "@durable.step\ndef other(x):\n    count('other')\n    return sorted(W)",
        "W",
    ),
}
# A mutable default it appends to: refused before too, as an object it was given and changed.
DEFAULT = "@durable.step\ndef default(x, acc=[]):\n    count('default')\n    acc.append(x)\n    return list(acc)"
# Resumed: (the definitions, the value an uninterrupted run returns).
RESUMED = {
    "logs": ("LOG = []\n@durable.step\ndef logs(x):\n    count('logs')\n    LOG.append(x)\n    return x", [1, 2]),
    "reads": ("LIMIT = [5]\n@durable.step\ndef reads(x):\n    count('reads')\n    return x + LIMIT[0]", [6, 7]),
    # The entry for a key is made by the key alone: filled again alike in a new process.
    "memo": ("C = {}\n@durable.step\ndef memo(x):\n    count('memo')\n    if x not in C:\n        C[x] = x * 10\n    return C[x]", [10, 20]),
    # The same memo in a closure's cell.
    # A library's module it calls into (`os.remove`: `remove` changes a list) holds no data of the program's.
    "osmod": (
        "import os as fs\n@durable.step\ndef osmod(x):\n    count('osmod')\n    gone = fs.environ['COUNT_FILE'] + '.gone'\n"
        "    if fs.path.exists(gone):\n        fs.remove(gone)\n    return x",
        [1, 2],
    ),
    # A draw from a generator no module seeds: every run draws anew.
    "drawn": ("@durable.step\ndef drawn(x):\n    count('drawn')\n    return x + int(random.random() < 2)", [2, 3]),
    "cmemo": (
        "def make_memo():\n    cache = {}\n    @durable.step\n    def cmemo(x):\n        count('cmemo')\n"
        "        if x not in cache:\n            cache[x] = x * 10\n        return cache[x]\n    return cmemo\ncmemo = make_memo()",
        [10, 20],
    ),
}
ONCE = '''
ONCE = []
@durable.step
def once(x):
    count("once")
    ONCE.append(x)
    return list(ONCE)

@durable.workflow
def wf_once():
    first = once(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return [first]

ONCE_IN = []
@durable.step
def inner_once(x):
    ONCE_IN.append(x)
    return list(ONCE_IN)

@durable.step
def outer_once(x):
    count("outer_once")
    return inner_once(x)

@durable.workflow
def wf_outer_once():
    first = outer_once(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return [first]

ITEMS = []
@durable.step
def item(x):
    count("items")
    if x == 3 and failing():
        raise RuntimeError("item 3 fails in the first process")
    ITEMS.append(x)
    return list(ITEMS)

@durable.workflow
def wf_items():
    return durable.loop_over(item, [1, 2, 3], checkpoint_items=True)

@durable.step
def ditem(x):
    count("ditems")
    if x == 3 and failing():
        raise RuntimeError("item 3 fails in the first process")
    return x + int(random.random() < 2)

@durable.workflow
def wf_ditems():
    return durable.loop_over(ditem, [1, 2, 3], checkpoint_items=True)
'''
WF = '''
@durable.workflow
def wf_{mode}():
    first = {first}(1)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return [first, {mode}(2)]
'''
RUN = """
import durable, os, flow69
for mode in os.environ["MODES"].split():
    wf = getattr(flow69, "wf_" + mode).with_options(run_id=mode)
    try:
        print(mode, "value", wf())
    except durable.Suspended:
        print(mode, "suspended")
    except durable.DefinitionChangedError as e:
        print(mode, "refused", " ".join(str(e).split()))
        if mode == "glist":  # the way out it says
            print("rerun value", wf.with_options(on_change="rerun")())
    except RuntimeError as e:
        print(mode, "failed", e)
"""
MODES = [*REFUSED, "default", *RESUMED, "once", "outer_once", "items", "ditems"]


def _said(out: str) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line for line in out.splitlines() if line.split(" ", 1)[0] in [*MODES, "rerun"]}


def test_a_step_reading_back_its_own_earlier_write_is_refused_not_replayed_stale(tmp_path: Path) -> None:
    defs = [text for text, _ in [*REFUSED.values(), *RESUMED.values()]] + [DEFAULT]
    flows = [WF.format(mode=m, first="put" if m == "other" else m) for m in [*REFUSED, "default", *RESUMED]]
    (tmp_path / "flow69.py").write_text(HEAD + "\n\n".join(defs) + "\n" + "".join(flows) + ONCE)
    (tmp_path / "pkg69").mkdir()
    (tmp_path / "pkg69" / "__init__.py").write_text("")
    (tmp_path / "count.fail").write_text("")
    first = _said(run_each([(tmp_path, RUN, {"MODES": " ".join(MODES), "STOP": "1"})])[0])
    (tmp_path / "count.fail").unlink()
    second = _said(run_each([(tmp_path, RUN, {"MODES": " ".join(MODES)})])[0])
    counts = (tmp_path / "count").read_text().split()
    assert all(first[m] == f"{m} suspended" for m in MODES[:-2]), first
    assert first["items"] == "items failed item 3 fails in the first process", first
    assert first["ditems"] == "ditems failed item 3 fails in the first process", first
    # Was: `value [[1], [2]]` (glist, gdict, held, klass, outer), `[1, 1]` (gcount, cell), `[1, [2]]`... executing the second call.
    for mode, (_, state) in REFUSED.items():
        said = second[mode]
        assert said.startswith(f"{mode} refused") and f"{state}, which " in said, said
        assert counts.count(mode) == 1 + (mode == "glist") * 2, counts  # the first call alone, in the first process
    assert "default changed an object it was given" in second["default"] and counts.count("default") == 1, second
    assert "ACC, which glist writes and reads back at its next call, is not as glist left it" in second["glist"]
    assert "INNER, which outer writes and reads back at its next call" in second["outer"], second
    assert "is not the call made there now (what a step wrote" in second["glist"], second
    assert "on_change='rerun'" in second["glist"] and second["rerun"] == "rerun value [[1], [1, 2]]", second
    for mode, (_, value) in RESUMED.items():
        assert second[mode] == f"{mode} value {value}", second
        assert counts.count(mode) == 2, counts  # each call once: the first replayed
    assert second["once"] == "once value [[1]]" and counts.count("once") == 1, (second, counts)
    assert second["outer_once"] == "outer_once value [[1]]" and counts.count("outer_once") == 1, (second, counts)
    # Items 1 and 2 kept by the first process are not restored without their appends: all run again here.
    assert second["items"] == "items value [[1], [1, 2], [1, 2, 3]]", second
    assert counts.count("items") == 6, counts
    # Items 1 and 2 drawing from an unseeded generator, kept by the first process, are restored: item 3 alone runs.
    assert second["ditems"] == "ditems value [2, 3, 4]" and counts.count("ditems") == 4, (second, counts)
