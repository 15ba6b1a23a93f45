"""Codecs of the user's (`codecs.register(search)`) and error handlers
(`codecs.register_error`) a step names by a string that does not stand in
the call itself, each run twice in a process of its own with one edit of
the codec's module between (`twice`):

- a codec named by a module-level constant (`ENC = "seven"`,
  `"a".encode(ENC)`): `codecnames` followed only a string written in the
  call;
- an error handler named in the call (`"é".encode("ascii", "sevens")`):
  its function runs as the call does, and no name of it shows.

Counted by the statements' text alone, the resume after the edit replayed
the old output (`value 70`). The same code, unchanged, replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

CODEC = """
import codecs

def encode(text, errors="strict"):
    return str(len(text) * 7).encode(), len(text)

def decode(data, errors="strict"):
    return bytes(data).decode(), len(data)

def search(name):
    return codecs.CodecInfo(encode, decode, name="seven") if name == "seven" else None

codecs.register(search)

def sevens(err):
    return "7" * (err.end - err.start), err.end

codecs.register_error("sevens", sevens)
"""

CASES: dict[str, str] = {
    "codec_by_constant": 'int("a".encode(ENC)) * x',
    "error_handler": 'int("\\u00e9".encode("ascii", "sevens")) * x',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, reads in {**CASES, "same": f"[{', '.join(CASES.values())}]"}.items():
        folders[name] = folder = tmp_path_factory.mktemp(name)
        head = 'import mycodec\nENC = "seven"'
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body=f"return {reads}"))
        (folder / "mycodec.py").write_text(CODEC)

    def between(name: str, folder: Path) -> dict[str, str]:
        if name != "same":
            path = folder / "mycodec.py"
            path.write_text(path.read_text().replace("* 7", "* 5").replace('"7" *', '"5" *'))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_codec_no_string_in_the_call_names_is_never_replayed_after_a_change(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_code_replays(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value [70, 70]" in second and after == ["s"], second
