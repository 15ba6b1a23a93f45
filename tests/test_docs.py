"""Every Python code block of README.md and docs/*.md runs, so the documentation
cannot drift from what durable does.

Each ```python block is written to `example.py` in a fresh temporary folder and
run there as `python example.py`, in its own process: a reader's script is a
file, and fingerprints read the source of the functions they cover. The store
is `$DURABLE_STORE` in that folder. A block passes when it exits with 0; blocks
state what they claim with `assert`.

An HTML comment on the line just before a block (invisible on GitHub and in
the site) changes how it runs:

- `<!-- not run: REASON -->` leaves it unrun. Meant for the rare fragment that
  cannot stand alone; the reason is required and there may be at most
  MAX_NOT_RUN of them in all.
- `<!-- run with: s3 -->` starts it against the moto S3 server of
  tests/conftest.py: the usual AWS_* variables point at it (and MINIO_URL,
  MINIO_KEY, MINIO_SECRET, DURABLE_SIGNING_KEY, which the examples read), and
  every bucket the block names as `s3://NAME/` exists and is empty.
- `dask` in that list (`<!-- run with: s3 dask -->`) marks the block slow: it
  starts a local Dask cluster.

Shell sessions (```console, ```bash, ```sh) are not run: they show timings,
files and a terminal that a test cannot reproduce exactly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import durable

from .conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_NOT_RUN = 3
README_MAX_LINES = 260

FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)")
MARKER = re.compile(r"^<!--\s*(?P<kind>not run|run with):\s*(?P<what>.*?)\s*-->$")
BUCKET = re.compile(r"s3://([a-z0-9][a-z0-9.-]+[a-z0-9])/")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    source: str
    not_run: str | None  # the reason, when exempt
    needs: frozenset[str]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def python_blocks(text: str, page: str) -> list[Block]:
    """The ```python blocks of a Markdown text, dedented (blocks may sit in a
    list item), with the marker comment that precedes each."""
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
        if opening["lang"] in ("python", "py"):
            body = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
            blocks.append(_block(page, i, body, _marker(lines, i)))
        i = end + 1
    return blocks


def _marker(lines: list[str], fence: int) -> re.Match[str] | None:
    before = [line.strip() for line in lines[:fence] if line.strip()]
    return MARKER.match(before[-1]) if before else None


def _block(page: str, index: int, body: str, marker: re.Match[str] | None) -> Block:
    if marker is None:
        return Block(page, index + 1, body, None, frozenset())
    if marker["kind"] == "not run":
        return Block(page, index + 1, body, marker["what"], frozenset())
    return Block(page, index + 1, body, None, frozenset(marker["what"].split()))


def all_blocks() -> list[Block]:
    found: list[Block] = []
    for path in PAGES:
        found += python_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return found


BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.not_run is None]


def _param(block: Block) -> object:
    marks = [pytest.mark.slow] if "dask" in block.needs else []
    return pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in RUN])
def test_code_block_runs(
    block: Block, tmp_path: Path, child_env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    env = dict(child_env, DURABLE_PROGRESS="0")
    if "s3" in block.needs:
        env.update(_s3_env(block, request.getfixturevalue("s3_env")))
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


def _s3_env(block: Block, env: dict[str, str]) -> dict[str, str]:
    """The environment of a `run with: s3` block, with its buckets made empty
    (the moto server lives for the whole session)."""
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=env["AWS_ENDPOINT_URL"],
        key="testing",
        secret="testing",
        skip_instance_cache=True,
    )
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

```console
$ python -c 'print(1)'
```

<!-- run with: s3 dask -->
```py
y = 2
```
"""


def test_collector_finds_indented_and_marked_blocks() -> None:
    blocks = python_blocks(SAMPLE, "sample.md")
    assert [(b.line, b.source) for b in blocks] == [
        (3, 'print("top")\n'),
        (9, "x = 1\n"),
        (14, "def f(*, x): ...\n"),
        (23, "y = 2\n"),
    ]
    assert [b.not_run for b in blocks] == [None, None, "shows a signature only", None]
    assert blocks[3].needs == {"s3", "dask"}


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
