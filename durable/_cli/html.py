"""`durable show --html`: one self-contained HTML file with a Gantt-style
timeline of a run. Inline CSS only, no scripts, fonts or images, so opening
it never fetches anything."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from .._errortext import said_reason
from .._manage.history import StepInfo
from .._manage.runs import RunInfo
from .format import durability, duration, failed_tries, local, says_more, shown_rows, tries_cell

_CSS = """
:root { --ok:#2f9e61; --bad:#d64545; --warn:#e39b2d; --live:#3b7ddd; --wait:#8b6bd6;
  --idle:#9aa3ad; --ink:#1f2933; --soft:#66717d; --line:#e3e7eb; }
* { box-sizing: border-box; }
body { margin: 24px 32px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #fbfcfd; }
h1 { font-size: 20px; margin: 0 0 4px; }
h1 .run { font-weight: 400; color: var(--soft); }
.meta { color: var(--soft); margin: 0 0 18px; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; color: #fff;
  font-size: 12px; vertical-align: 3px; background: var(--idle); }
.completed { background: var(--ok); } .failed { background: var(--bad); }
.retrying, .suspended { background: var(--warn); } .running { background: var(--live); }
.sleeping, .forked { background: var(--wait); } .pending, .interrupted, .cancelled, .changed { background: var(--idle); }
.chart { border: 1px solid var(--line); border-radius: 8px; background: #fff; padding: 8px 0; }
.row, .axis { display: grid; grid-template-columns: 290px 1fr; align-items: center; }
.row { position: relative; min-height: 34px; border-top: 1px solid #f1f3f5; }
.row:hover { background: #f6f8fa; }
.label { padding: 0 14px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pos { display: inline-block; min-width: 22px; color: var(--soft); }
.kind, .tries { font-size: 11px; color: var(--soft); margin-left: 6px; }
.tries { color: var(--bad); }
.track { position: relative; height: 34px; margin-right: 18px; }
.bar { position: absolute; top: 9px; height: 16px; border-radius: 4px; min-width: 3px; }
.bar span { position: absolute; left: calc(100% + 6px); top: -1px; font-size: 12px;
  color: var(--soft); white-space: nowrap; }
.bar.late span { left: auto; right: calc(100% + 6px); }
.mark { position: absolute; top: 5px; width: 3px; height: 24px; background: var(--bad);
  border-radius: 2px; }
.row.resume { min-height: 24px; background: #f4f0fb; color: var(--wait); font-size: 12px; }
.row.resume .track { height: 24px; }
.cut { position: absolute; top: 0; bottom: 0; width: 0; border-left: 2px dashed var(--wait); }
.ticks { position: relative; height: 22px; margin-right: 18px; color: var(--soft);
  font-size: 11px; border-bottom: 1px solid var(--line); }
.ticks span { position: absolute; transform: translateX(-50%); }
.tip { display: none; position: absolute; z-index: 2; left: 300px; top: 32px; max-width: 640px;
  padding: 8px 10px; background: #1f2933; color: #f5f7fa; border-radius: 6px; font-size: 12px;
  white-space: pre-wrap; }
.row:hover .tip { display: block; }
table { border-collapse: collapse; margin-top: 22px; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); }
th { color: var(--soft); font-weight: 500; }
td.out { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
td.err { color: var(--bad); }
.ways { margin: 0 0 18px; padding-left: 18px; font-size: 13px; }
"""


def render(
    info: RunInfo, steps: Sequence[StepInfo], child: RunInfo | None = None, ways: Sequence[str] = ()
) -> str:
    """`child`: the child run a suspended run waits in (`waiting_child`);
    `ways`: the lines that go on with the run, as `durable show` prints them."""
    start, end = _window(info, steps)
    span = max(end - start, 1e-3)
    shown = shown_rows(info, steps, child)  # the text view's rows: the one in flight, where it waits
    rows = "\n".join(_rows(info, shown, start, span))
    title = f"{info.workflow} · {info.run_id}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{escape(title)} · durable</title>
<style>{_CSS}</style></head>
<body>
<h1>{escape(info.workflow)} <span class="run">{escape(info.run_id)}</span>
 <span class="badge {escape(info.status)}" id="run-status">{escape(info.status)}</span></h1>
<p class="meta">{escape(_meta(info, span))}</p>
{_ways(ways)}<div class="chart">
<div class="axis"><div class="label">step</div>{_ticks(span)}</div>
{rows}
</div>
{_details(info, shown)}
</body></html>
"""


def _ways(ways: Sequence[str]) -> str:
    if not ways:
        return ""
    items = "".join(f"<li>{escape(w)}</li>" for w in ways)
    return f'<ul class="ways" id="ways-on">{items}</ul>\n'


def _window(info: RunInfo, steps: Sequence[StepInfo]) -> tuple[float, float]:
    times = [info.created, info.updated]
    for s in steps:
        times += [t for t in (s.started, s.ended) if t]
        times += [f.at for f in s.failures]
    times = [t for t in times if t]
    return (min(times), max(times)) if times else (0.0, 1.0)


def _meta(info: RunInfo, span: float) -> str:
    parts = [
        f"fingerprint {info.fingerprint or '-'}",
        f"started {local(info.created)}",
        f"updated {local(info.updated)}",
        *([f"durability {durability(info)}"] if info.durability else []),
        f"{info.steps} steps finished",
        f"span {duration(span)}",
    ]
    if info.resumes:
        times = len(info.resumes)
        parts.append(f"resumed {times} time{'s' if times != 1 else ''}")
    if says_more(info):  # a suspended run's, or a fork's of one
        parts.append(f"waiting: {said_reason(info.reason)}")
    if info.error:
        parts.append(f"error: {info.error}")
    return " · ".join(parts)


def _ticks(span: float) -> str:
    marks = "".join(
        f'<span style="left:{i * 20}%">{escape(duration(span * i / 5))}</span>' for i in range(6)
    )
    return f'<div class="ticks">{marks}</div>'


def _pct(t: float, start: float, span: float) -> float:
    return max(0.0, min(100.0, (t - start) / span * 100))


def _row(info: RunInfo, s: StepInfo, said: str, start: float, span: float, since: float) -> str:
    """`since`: where a row with no time of its own starts (a step in flight,
    where a run waits: when what came before it ended), not at the run's start."""
    begin = s.started or (s.failures[0].at if s.failures else None) or s.ended or since
    finish = s.ended or begin
    left = _pct(begin, start, span)
    width = max(_pct(finish, start, span) - left, 0.4)
    retries = len(s.failures)
    tries = f'<span class="tries">↻ {retries} failed</span>' if retries else ""
    marks = "".join(
        f'<i class="mark" style="left:{_pct(f.at, start, span):.3f}%" '
        f'title="{escape(f"{tried}: {f.type}: {f.message}")}"></i>'
        for tried, f in zip(failed_tries(info, s), s.failures, strict=True)
    )
    return (
        f'<div class="row step" data-position="{s.position}" data-name="{escape(s.name)}" '
        f'data-status="{escape(s.status)}">'
        f'<div class="label"><span class="pos">{s.position}</span>{escape(s.name)}'
        f'<span class="kind">{escape(s.kind)}</span>{tries}</div>'
        f'<div class="track"><div class="bar {escape(s.status)}{" late" if left + width > 85 else ""}" '
        f'style="left:{left:.3f}%;width:{width:.3f}%" title="{escape(_tip(info, s, said))}">'
        f"<span>{escape(duration(s.duration))}</span></div>{marks}</div>"
        f'<div class="tip">{escape(_tip(info, s, said))}</div></div>'
    )


def _rows(info: RunInfo, shown: Sequence[tuple[StepInfo, str]], start: float, span: float) -> list[str]:
    """The steps' rows, with a labelled break before the first step each
    resumed attempt ran: where the run was interrupted and resumed."""
    rows, since = [], start
    for s, said in shown:
        rows.append(_row(info, s, said, start, span, since))
        since = max(since, s.ended or s.started or since)
    steps = [s for s, _ in shown]
    for at, before in sorted(info.resumes, reverse=True):  # latest first: indexes stay valid
        index = next((k for k, s in enumerate(steps) if _since(s) >= at), len(rows))
        rows.insert(index, _resume_row(at, before, start, span))
    return rows


def _since(s: StepInfo) -> float:
    """When a row's attempt started it, for the break before it: a row
    without a time (in flight, where it waits) is the latest attempt's."""
    if s.started:
        return s.started
    return math.inf if s.ended is None else 0.0


def _resume_row(at: float, before: str, start: float, span: float) -> str:
    label = f"{before} here · resumed {local(at)}"
    return (
        f'<div class="row resume" data-resumed-at="{at:.3f}" data-before="{escape(before)}">'
        f'<div class="label">⏯ {escape(label)}</div>'
        f'<div class="track"><i class="cut" style="left:{_pct(at, start, span):.3f}%"></i></div>'
        "</div>"
    )


def _tip(info: RunInfo, s: StepInfo, said: str) -> str:
    lines = [f"{s.name} ({s.kind}) · {s.status} · {duration(s.duration)}"]
    if s.started or s.ended:
        lines.append(f"{local(s.started)} → {local(s.ended)}")
    if said and said != (s.preview or "") and not s.error:  # in flight, waiting, changed, a wake-up
        lines.append(said)
    elif s.preview is not None:
        lines.append(f"output: {s.preview}")
    for tried, f in zip(failed_tries(info, s), s.failures, strict=True):
        lines.append(f"{tried}: {f.type}: {f.message}")
    for a in s.artifacts:
        lines.append(f"artifact {a.get('url')}: {a.get('state')}")
    return "\n".join(lines)


def _details(info: RunInfo, shown: Sequence[tuple[StepInfo, str]]) -> str:
    head = "<tr><th>pos</th><th>step</th><th>status</th><th>tries</th><th>time</th>"
    head += "<th>output / error</th></tr>"
    body = "".join(
        f"<tr><td>{s.position}</td><td>{escape(s.name)}</td>"
        f'<td><span class="badge {escape(s.status)}">{escape(s.status)}</span></td>'
        f"<td>{tries_cell(info, s)}</td><td>{escape(duration(s.duration))}</td>"
        + (
            f'<td class="out err">{escape(s.error)}</td>'
            if s.error
            else f'<td class="out">{escape(said)}</td>'
        )
        + "</tr>"
        for s, said in shown
    )
    return f"<table>{head}{body}</table>"
