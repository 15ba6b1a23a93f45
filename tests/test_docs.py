"""Every Python code block of README.md and docs/*.md runs, so the documentation
cannot drift from what durable does.

Each ```python block is written to `example.py` in a fresh temporary folder and
run there as `python example.py`, in its own process (fingerprints read the
source of the functions they cover, as they would in a reader's script), with
`$DURABLE_STORE` in that folder. It passes when it exits with 0; blocks state
what they claim with `assert`.

An HTML comment on the line before a block (invisible on GitHub and in the
site) changes how it runs:

- `<!-- not run: REASON -->` leaves it unrun: for the rare fragment that cannot
  stand alone; the reason is required, and MAX_NOT_RUN such blocks at most.
- `<!-- run with: s3 -->` runs it against the moto S3 server of conftest.py:
  the AWS_* variables point at it (and MINIO_URL, MINIO_KEY, MINIO_SECRET,
  DURABLE_SIGNING_KEY, which the examples read), and every bucket it names as
  `s3://NAME/` exists and is empty. `dask` or `s3` in the list marks it slow.
- `<!-- file: NAME -->` is also saved as NAME for the page's CLI sessions.
- `<!-- run with: cli -->` on a ```console block replays its `durable ...`
  commands and checks their output and exit status (`echo $?`).

Other shell blocks are not run: they show timings, machines and terminals.
"""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import durable

from .clikit import DURABLE
from .conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_NOT_RUN = 3
README_MAX_LINES = 260

FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)")
MARKER = re.compile(r"^<!--\s*(?P<kind>not run|run with|file):\s*(?P<what>.*?)\s*-->$")
BUCKET = re.compile(r"s3://([a-z0-9][a-z0-9.-]+[a-z0-9])/")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    source: str
    marker: tuple[str, str] | None = None  # (kind, what) of the comment before it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """The reason, when the block is exempt."""
        return self.marker[1] if self.marker and self.marker[0] == "not run" else None

    @property
    def needs(self) -> frozenset[str]:
        run_with = self.marker and self.marker[0] == "run with"
        return frozenset(self.marker[1].split()) if self.marker and run_with else frozenset()

    @property
    def file(self) -> str | None:
        """The name a `durable run` session of the same page knows it by."""
        return self.marker[1] if self.marker and self.marker[0] == "file" else None


def fenced_blocks(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown text, dedented (blocks may sit in a
    list item), each with the marker comment that precedes it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent = len(opening["indent"])
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        before = [line.strip() for line in lines[:i] if line.strip()]
        marker = MARKER.match(before[-1]) if before else None
        kind = (marker["kind"], marker["what"]) if marker else None
        blocks.append(Block(page, i + 1, opening["lang"], body, kind))
        i = end + 1
    return blocks


def python_blocks(text: str, page: str) -> list[Block]:
    return [b for b in fenced_blocks(text, page) if b.lang in ("python", "py")]


def all_blocks() -> list[Block]:
    found: list[Block] = []
    for path in PAGES:
        found += fenced_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return found


ALL = all_blocks()
BLOCKS = [b for b in ALL if b.lang in ("python", "py")]
SESSIONS = [b for b in ALL if b.lang == "console" and "cli" in b.needs]
RUN = [b for b in BLOCKS if b.not_run is None]


def _param(block: Block) -> object:
    # Blocks on Dask or on moto's S3 server take seconds, alike on every Python.
    marks = [pytest.mark.slow] if {"dask", "s3"} & set(block.needs) else []
    return pytest.param(block, id=block.id, marks=marks)


# The other blocks run twice each, one interpreter per page: test_newuser39_docs.py.
@pytest.mark.parametrize("block", [_param(b) for b in RUN if {"s3", "dask"} & b.needs])
def test_code_block_runs(
    block: Block, tmp_path: Path, child_env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    env = dict(child_env, DURABLE_PROGRESS="0")
    if "s3" in block.needs:
        env.update(_s3_env(block, request))
    (tmp_path / "example.py").write_text(block.source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, (
        f"the block at {block.id} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    )


def _s3_env(block: Block, request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of a `run with: s3` block, with its buckets made empty
    (the moto server lives for the whole session)."""
    import s3fs

    env: dict[str, str] = request.getfixturevalue("s3_env")
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **request.getfixturevalue("s3_options"))
    for bucket in set(BUCKET.findall(block.source)):
        if fs.exists(bucket):
            fs.rm(bucket, recursive=True)
        fs.mkdir(bucket)
    return dict(
        env,
        MINIO_URL=env["AWS_ENDPOINT_URL"],
        MINIO_KEY=env["AWS_ACCESS_KEY_ID"],
        MINIO_SECRET=env["AWS_SECRET_ACCESS_KEY"],
        DURABLE_SIGNING_KEY="a key every machine of the team shares",
    )


@pytest.mark.slow  # the durable command in child processes
@pytest.mark.parametrize("session", [pytest.param(b, id=b.id) for b in SESSIONS])
def test_cli_session_matches_the_real_command(
    session: Block, tmp_path: Path, child_env: dict[str, str]
) -> None:
    """A `<!-- run with: cli -->` console block is replayed command by command
    in a folder holding the page's `<!-- file: NAME -->` blocks; each command's
    output (stderr then stdout, as a terminal shows them) and each `echo $?`
    must be what the page shows."""
    for block in ALL:
        if block.page == session.page and block.file:
            (tmp_path / block.file).write_text(block.source, encoding="utf-8")
    status: int | None = None
    for command, shown in _commands(session.source):
        if command == "echo $?":
            assert shown == [str(status)], f"{session.id}: exit status of the command before"
            continue
        args = shlex.split(command)
        assert args[0] == "durable", f"{session.id}: only durable commands can be replayed"
        done = subprocess.run(
            [*DURABLE, *args[1:]],
            cwd=tmp_path,
            env=child_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        status = done.returncode
        assert (done.stderr + done.stdout).splitlines() == shown, f"{session.id}: $ {command}"


def _commands(session: str) -> list[tuple[str, list[str]]]:
    """`$ command` lines, each with the output lines shown under it."""
    commands: list[tuple[str, list[str]]] = []
    for line in session.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    for _, shown in commands:
        while shown and not shown[-1]:
            shown.pop()
    return commands


# -- the collector itself, and the rules around the blocks --------------------

SAMPLE = """\
Intro.

```python
print("top")
```

- a list item:

  ```python
  x = 1
  ```

<!-- not run: shows a signature only -->
```python
def f(*, x): ...
```

<!-- run with: cli -->
```console
$ durable run flow.py:wf
run r1 completed

$ echo $?
0
```

<!-- file: flow.py -->
```py
y = 2
```
"""


def test_collector_finds_indented_and_marked_blocks() -> None:
    blocks = fenced_blocks(SAMPLE, "sample.md")
    assert [(b.line, b.lang) for b in blocks] == [
        (3, "python"),
        (9, "python"),
        (14, "python"),
        (19, "console"),
        (28, "py"),
    ]
    assert [b.source for b in python_blocks(SAMPLE, "sample.md")] == [
        'print("top")\n',
        "x = 1\n",
        "def f(*, x): ...\n",
        "y = 2\n",
    ]
    assert [b.not_run for b in blocks] == [None, None, "shows a signature only", None, None]
    assert blocks[3].needs == {"cli"} and blocks[4].file == "flow.py"
    assert _commands(blocks[3].source) == [
        ("durable run flow.py:wf", ["run r1 completed"]),
        ("echo $?", ["0"]),
    ]


def test_every_page_has_code_that_runs() -> None:
    """A guard against a collector that silently finds nothing."""
    pages = {b.page for b in RUN}
    # Only the pages of tables and figures (reliability, performance, API) have none.
    assert pages >= {"README.md", "docs/getting-started.md", "docs/identity.md", "docs/storage.md"}
    assert len(RUN) >= 25


def test_exemptions_are_rare_and_explained() -> None:
    exempt = [b for b in BLOCKS if b.not_run is not None]
    assert len(exempt) <= MAX_NOT_RUN, [b.id for b in exempt]
    assert all(len(b.not_run or "") > 10 for b in exempt), [b.id for b in exempt]


def test_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines: move the details to a page under docs/ "
        "and link it from the README's map of the docs"
    )
    text = "\n".join(lines)
    # A pre-stop hook greps the README for the two quick-start commands.
    assert "make demo" in text and "make test" in text


LINK = re.compile(r"\]\((?!https?://|#)(?P<target>[^)#\s]+)(?:#[^)]*)?\)")


def test_readme_links_resolve() -> None:
    """The site's own links are checked by `mkdocs build --strict`; the README
    is outside the site, so its relative links are checked here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [m["target"] for m in LINK.finditer(text)]
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing


def test_api_reference_lists_exactly_the_public_names() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[?`(?:durable\.)?([A-Za-z_]\w*)", text, flags=re.M)
    assert sorted(rows) == sorted(durable.__all__), (
        "docs/api.md has a row for each name in durable.__all__, and no other"
    )


def _documented_parameters(call: str) -> list[tuple[str, bool]]:
    """(name, keyword-only) of each parameter a `name(a, *, b=None)` shows."""
    args = ast.parse(f"def f({call}): pass").body[0].args  # type: ignore[attr-defined]
    return [(a.arg, False) for a in args.args] + [(a.arg, True) for a in args.kwonlyargs]


def test_api_reference_signatures_match_the_code() -> None:
    """A row that shows a call shows the function's parameters, in order, with
    the keyword-only ones after `*`: `artifact(path, verify=None)` was shown
    while `artifact(path, "sha256")` is a TypeError."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    shown = re.findall(r"^\| `(\w+)` \| `(@durable\.|await )?(\w+)\((.*?)\)`", text, flags=re.M)
    assert len(shown) >= 10
    wrong = []
    for name, prefix, called, call in shown:
        if name != called or "=," in call or call.endswith("="):
            continue  # `configure(*, store=, ...)` lists names only
        parameters = inspect.signature(getattr(durable, name)).parameters.values()
        real = [(p.name, p.kind is p.KEYWORD_ONLY) for p in parameters
                if p.kind not in (p.POSITIONAL_ONLY, p.VAR_KEYWORD)]  # fmt: skip
        documented = _documented_parameters(call)
        if prefix == "@durable.":  # a decorator's options: keywords, as written there
            real, documented = [n for n, _ in real], [n for n, _ in documented]
        if documented != real:
            wrong.append(f"{name}({call}) but the code has {real}")
    assert wrong == []
