"""A script's main block setting a `pathlib.Path` or a namedtuple from the
command line into its settings object (`settings.out = Path(sys.argv[1])`,
in a dict it holds too), or what `parser.parse_args()` returns, a compiled
pattern, a set of paths, read by the step. stale55 counts such an object by
its plain attributes and the settings objects it holds, and skipped any
other value: a resume with another argument replayed the output the old one
gave ("value aa" for bbb). The same argument still replays (no refusal on
every run; checked for two of them). Each case's script runs twice (`twice`: two interpreters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice
from tests.test_stale55_scripts import RUN, STEP

pytestmark = pytest.mark.slow

NS = "import pathlib, types, collections\nP = collections.namedtuple('P', 'n')\n"
CASES = {  # name: (the script's head, what the step returns, what the main block sets)
    "path": (NS + "settings = types.SimpleNamespace(out=pathlib.Path('a'))", "str(settings.out) * 2",
             "settings.out = pathlib.Path(sys.argv[1])"),
    "path_in_dict": (NS + "settings = types.SimpleNamespace(d={'o': pathlib.Path('a')})", "str(settings.d['o']) * 2",
                     "settings.d['o'] = pathlib.Path(sys.argv[1])"),
    "namedtuple": (NS + "settings = types.SimpleNamespace(p=P('a'))", "settings.p.n * 2", "settings.p = P(sys.argv[1])"),
    # What `parser.parse_args()` returns, kept in the settings; a pattern; a set of paths.
    "argparse": (NS + "import argparse\nsettings = types.SimpleNamespace(args=None)", "settings.args.name * 2",
                 "settings.args = argparse.ArgumentParser().parse_args([], argparse.Namespace(name=sys.argv[1]))"),
    "pattern": (NS + "import re\nsettings = types.SimpleNamespace(pat=re.compile('a'))", "settings.pat.pattern * 2",
                "settings.pat = re.compile(sys.argv[1])"),
    "set_of_paths": (NS + "settings = types.SimpleNamespace(ps={pathlib.Path('a')})", "''.join(map(str, settings.ps)) * 2",
                     "settings.ps = {pathlib.Path(sys.argv[1])}"),
}  # fmt: skip


def test_a_path_or_namedtuple_the_main_block_sets_into_settings_counts(tmp_path: Path) -> None:
    folders = {}
    for name, (head, reads, sets) in CASES.items():
        for arg in ("same", "other") if name in ("path_in_dict", "argparse") else ("other",):  # a replay: twice
            folders[f"{name}-{arg}"] = place = tmp_path / f"{name}-{arg}"
            place.mkdir()
            (place / "flow.py").write_text(STEP.format(head=head, reads=reads, sets=sets))
    runs = twice(folders, RUN, lambda name, _: {"ARG": "a" if name.endswith("same") else "bbb"}, {"ARG": "a", "STOP": "1"})
    wrong = []
    for name, (first, count, second, after) in runs.items():
        assert "suspended" in first and count == ["s"], (name, first)
        if name.endswith("same"):
            ok = "value aa" in second and after == ["s"]
        else:  # was: "value aa", the old argument's output
            ok = "refused" in second and "changed" in second and after == ["s"]
        if not ok:
            wrong.append((name, second[:200]))
    assert not wrong
