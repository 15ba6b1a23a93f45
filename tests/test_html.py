"""`durable show --html`: the timeline file is parsed back, checked step by
step, and checked for anything that would make a browser fetch."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from .clikit import durable, write_flow

RELEASE = '''
import os
import durable


def tries():
    path = os.environ["FLOW_COUNTS"]
    with open(path, "a") as f:
        f.write("flaky\\n")
    with open(path) as f:
        return f.read().split().count("flaky")


@durable.step
def fetch():
    return ["a", "b", "c"]


@durable.step(retries=2, retry_delay=0.01)
def flaky(items):
    if tries() < 3:
        raise ConnectionError("rate limited <429>")
    return len(items)


@durable.step
def publish(n):
    raise RuntimeError(f"publisher offline after {n} items")


@durable.workflow
def release():
    n = flaky(fetch())
    durable.sleep(0.01)
    return publish(n)
'''


class Timeline(HTMLParser):
    """Collects the step rows, their bars, retry marks and tooltips, every
    attribute value, and the text of <style> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.marks: dict[str, int] = {}
        self.bars: dict[str, str] = {}
        self.tips: dict[str, str] = {}
        self.attrs: list[tuple[str, str]] = []
        self.styles: list[str] = []
        self.run_status = ""
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.attrs += list(a.items())
        classes = a.get("class", "").split()
        if "step" in classes:
            self.rows.append(a)
        elif "bar" in classes:
            self.bars[self.rows[-1]["data-name"]] = next(c for c in classes if c != "bar")
        elif "mark" in classes:
            name = self.rows[-1]["data-name"]
            self.marks[name] = self.marks.get(name, 0) + 1
        if tag not in ("meta", "br", "hr", "img", "input", "link"):  # void: no end tag
            self._in.append("tip" if "tip" in classes else a.get("id", tag))

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        where = self._in[-1] if self._in else ""
        if where == "tip":
            name = self.rows[-1]["data-name"]
            self.tips[name] = self.tips.get(name, "") + data
        elif where == "style":
            self.styles.append(data)
        elif where == "run-status":
            self.run_status += data.strip()


def test_the_html_timeline_shows_every_step_and_fetches_nothing(tmp_path: Path) -> None:
    write_flow(tmp_path, RELEASE)
    assert durable(tmp_path, "run", "flow.py:release", "--run-id", "rel").returncode == 1
    done = durable(tmp_path, "show", "rel", "--html", "timeline.html")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "timeline.html").read_text()
    page = Timeline()
    page.feed(text)
    page.close()

    assert [(r["data-position"], r["data-name"], r["data-status"]) for r in page.rows] == [
        ("0", "fetch", "completed"),
        ("1", "flaky", "completed"),
        ("2", "sleep", "completed"),
        ("3", "publish", "failed"),
    ]
    assert page.bars == {"fetch": "completed", "flaky": "completed", "sleep": "completed",
                         "publish": "failed"}  # fmt: skip
    assert page.run_status == "failed"
    assert page.marks == {"flaky": 2, "publish": 1}  # one mark per failed attempt
    assert "output: ['a', 'b', 'c']" in page.tips["fetch"]
    assert "try 2 failed: ConnectionError: rate limited <429>" in page.tips["flaky"]  # numbered per call
    assert "RuntimeError: publisher offline after 3 items" in page.tips["publish"]

    # self-contained: nothing a browser would go and fetch
    assert not re.search(r"https?://", text, re.IGNORECASE)
    assert not [(k, v) for k, v in page.attrs if k in ("src", "href", "srcset", "action")]
    assert not [v for _, v in page.attrs if v.strip().startswith("//")]
    assert "<script" not in text and "<link" not in text
    assert page.styles and not any(("url(" in s or "@import" in s) for s in page.styles)
