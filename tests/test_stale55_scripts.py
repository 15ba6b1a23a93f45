"""A script's `if __name__ == "__main__":` block setting its configuration
from the command line before it calls the workflow, as users write it:
`settings.model.name = sys.argv[1]` into an object of nested objects of the
user's classes (a dataclass, a `SimpleNamespace`), and `cfg.configure(k)`
(or `configure(k)` imported), a function of another module that rebinds that module's number with
`global`. The statements' text is the same whatever the argument was, so
counted by it a resume with another argument was served the output the old
one gave. Each case's script runs twice (`twice`: two interpreters), the
argument changed between the runs; "same" keeps it, and replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow

# The script run as `python flow.py ARG` (runpy, in a forked interpreter).
RUN = """
import os, runpy, sys
sys.argv = ["flow.py", os.environ["ARG"]]
runpy.run_path("flow.py", run_name="__main__")
"""

STEP = """
import os, sys, durable
{head}

@durable.step
def s(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return {reads}

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out

if __name__ == "__main__":
    {sets}
    try:
        print("value", wf(10))
    except durable.Suspended:
        print("suspended")
    except durable.DefinitionChangedError as e:
        print("refused", e)
"""

CLASSES = """
class Model:
    def __init__(self):
        self.name = "a"

class Settings:
    def __init__(self):
        self.model = Model()

settings = Settings()
"""

DATACLASSES = """
import dataclasses

@dataclasses.dataclass
class Model:
    name: str = "a"

@dataclasses.dataclass
class Settings:
    model: Model = dataclasses.field(default_factory=Model)

settings = Settings()
"""

CONFIGURE = """
K = 1

def configure(k):
    global K
    K = k
"""

STAGES = """
class Stage:
    def __init__(self):
        self.name = "a"

class Settings:
    def __init__(self):
        self.stages = [Stage()]

settings = Settings()
"""

SET_NAME = """
CFG = {"name": "a"}

def set_name(name):
    CFG["name"] = name
"""

NAMESPACE = "import types\nsettings = types.SimpleNamespace(model=types.SimpleNamespace(name='a'))"
CHAIN = "settings.model.name = sys.argv[1]"
CASES: dict[str, tuple[dict[str, str], str, str, str]] = {
    # name: (other files, the script's head, what the step returns, what the main block sets)
    "classes": ({"cfg.py": CLASSES}, "from cfg import settings", "settings.model.name * 2", CHAIN),
    "dataclasses": ({"cfg.py": DATACLASSES}, "from cfg import settings", "settings.model.name * 2", CHAIN),
    "namespace": ({}, NAMESPACE, "settings.model.name * 2", CHAIN),
    "configure": ({"cfg.py": CONFIGURE}, "import cfg", "\"a\" * cfg.K", "cfg.configure(len(sys.argv[1]) + 1)"),
    "imported": (
        {"cfg.py": CONFIGURE},
        "import cfg\nfrom cfg import configure",
        "\"a\" * cfg.K",
        "configure(len(sys.argv[1]) + 1)",
    ),
    # Set by a function the main block calls, into a namespace.
    "main": (
        {},
        NAMESPACE + "\ndef main():\n    settings.model.name = sys.argv[1]",
        "settings.model.name * 2",
        "main()",
    ),
    "setattr": ({}, NAMESPACE, "settings.model.name * 2", "setattr(settings.model, 'name', sys.argv[1])"),
    "stages": ({"cfg.py": STAGES}, "from cfg import settings", "settings.stages[0].name * 2", "settings.stages[0].name = sys.argv[1]"),
    "class_attribute": (
        {"cfg.py": "import types\n\nclass Config:\n    model = types.SimpleNamespace(name='a')\n"},
        "from cfg import Config",
        "Config.model.name * 2",
        "Config.model.name = sys.argv[1]",
    ),
    # `from cfg import CFG` read by the step, changed through `cfg` by the main block.
    "from_import": ({"cfg.py": SET_NAME}, "import cfg\nfrom cfg import CFG", "CFG['name'] * 2", "cfg.set_name(sys.argv[1])"),
    "from_import_item": ({"cfg.py": SET_NAME}, "import cfg\nfrom cfg import CFG", "CFG['name'] * 2", "cfg.CFG['name'] = sys.argv[1]"),
}


def test_a_main_block_setting_configuration_from_the_command_line_is_a_changed_call(tmp_path: Path) -> None:
    folders = {}
    for name, (files, head, reads, sets) in {**CASES, "same": CASES["classes"]}.items():
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(STEP.format(head=head, reads=reads, sets=sets))
        for file, text in files.items():
            (place / file).write_text(text)
    runs = twice(folders, RUN, lambda name, _: {"ARG": "a" if name == "same" else "bbb"}, {"ARG": "a", "STOP": "1"})
    stale = []
    for name, (first, count, second, after) in runs.items():
        assert "suspended" in first and count == ["s"], (name, first)
        if name == "same":
            assert "value aa" in second and after == ["s"], second
        elif "refused" not in second or "changed" not in second or after != ["s"]:
            stale.append((name, second))  # "value aa": the old argument's output
    assert not stale
