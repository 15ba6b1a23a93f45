"""A script's main block setting into its settings object an immutable
value that is not plain data (`settings.names = range(int(sys.argv[1]))`, a
slice, a `bytearray`, a library's Enum member such as `HTTPStatus(code)`,
a deque, an `array.array`, an `ipaddress` address, those in a list too):
the attributes walk skipped them, so a resume with another argument replayed the output the old one gave ("value 2" for 3).
Each now counts by its value; the same argument still replays. Each case's
script runs twice (`twice`: two interpreters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice
from tests.test_stale55_scripts import RUN, STEP

pytestmark = pytest.mark.slow

NS = "import http, types\n"
CASES = {  # name: (the script's head, what the step returns, what the main block sets)
    "range": (NS + "settings = types.SimpleNamespace(names=range(0))", "len(settings.names)",
              "settings.names = range(int(sys.argv[1]))"),
    "range_in_list": (NS + "settings = types.SimpleNamespace(rs=[])", "len(settings.rs[0])",
                      "settings.rs = [range(int(sys.argv[1]))]"),
    "slice": (NS + "settings = types.SimpleNamespace(cut=slice(0))", "len('abcdef'[settings.cut])",
              "settings.cut = slice(int(sys.argv[1]))"),
    "bytearray": (NS + "settings = types.SimpleNamespace(raw=bytearray())", "int(settings.raw)",
                  "settings.raw = bytearray(sys.argv[1], 'ascii')"),
    "library_enum": (NS + "settings = types.SimpleNamespace(status=None)", "int(settings.status) - 200",
                     "settings.status = http.HTTPStatus(200 + int(sys.argv[1]))"),
    "deque": (NS + "import collections\nsettings = types.SimpleNamespace(q=None)", "len(settings.q)",
              "settings.q = collections.deque(range(int(sys.argv[1])))"),
    "ip_address": (NS + "import ipaddress\nsettings = types.SimpleNamespace(ip=None)", "int(settings.ip)",
                   "settings.ip = ipaddress.ip_address(int(sys.argv[1]))"),
    "array": (NS + "import array\nsettings = types.SimpleNamespace(a=None)", "len(settings.a)",
              "settings.a = array.array('i', range(int(sys.argv[1])))"),
}  # fmt: skip


def test_a_range_slice_bytearray_or_enum_the_main_block_sets_into_settings_counts(tmp_path: Path) -> None:
    folders = {}
    for name, (head, reads, sets) in CASES.items():
        for arg in ("same", "other") if name == "range" else ("other",):  # a replay: twice
            folders[f"{name}-{arg}"] = place = tmp_path / f"{name}-{arg}"
            place.mkdir()
            (place / "flow.py").write_text(STEP.format(head=head, reads=reads, sets=sets))
    runs = twice(folders, RUN, lambda name, _: {"ARG": "2" if name.endswith("same") else "3"}, {"ARG": "2", "STOP": "1"})
    wrong = []
    for name, (first, count, second, after) in runs.items():
        assert "suspended" in first and count == ["s"], (name, first)
        if name.endswith("same"):
            ok = "value 2" in second and after == ["s"]
        else:  # was: "value 2", the old argument's output
            ok = "refused" in second and "changed" in second and after == ["s"]
        if not ok:
            wrong.append((name, second[:200]))
    assert not wrong



# Run as a script (`python flow.py`): imported as a module, another rule counted it already.
SUBCLASS_FLOW = STEP.replace("if __name__", """
class Base:
    registry = []

    def __init_subclass__(cls, k=0):
        [cls.registry.append(v) for v in (k,)]

class Sub(Base, k=int(os.environ["K"])):
    pass

if __name__""")


def test_a_class_list_its_init_subclass_fills_in_a_comprehension_counts(tmp_path: Path) -> None:
    """`Base.registry`, filled by `__init_subclass__` from a class statement's
    keyword (`class Sub(Base, k=K)`): the rule asked whether the hook names
    the attribute in its own code only, not in a comprehension of it, so a
    resume after K changed replayed the old sum ("value 2" for K=3)."""
    (tmp_path / "flow.py").write_text(SUBCLASS_FLOW.format(head="", reads="sum(Base.registry)", sets="pass"))
    runs = twice({"subclass": tmp_path}, RUN, lambda *_: {"K": "3", "ARG": "1"}, {"K": "2", "ARG": "1", "STOP": "1"})
    first, count, second, after = runs["subclass"]
    assert "suspended" in first and count == ["s"], first
    assert "refused" in second and "Base.registry" in second and after == ["s"], second
