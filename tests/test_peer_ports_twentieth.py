"""A twentieth round of the peers' own test cases, as their users write them
in a script: DBOS's tests/test_dbos.py `test_simple_workflow` (a workflow
id called twice, its step's executions counted in a module-level dict the
test sets to 0 first) and joblib's joblib/test/test_memory.py
`test_memory_integration` (a cached function appending to an
`accumulator` list the test empties first), with the reset, the calls and
the checks in the script's `main()`, run by `if __name__ == "__main__":`.
The count or log is state the step only writes: no input of it, however
`main()` resets it and reads it between the calls, nor is what `main()`
keeps besides (the results it collects and prints through a helper), nor
`asyncio.run(main())` running it. So the completed run
called again answers from its record and the cached call is a hit. A step
that reads the log (directly or through a helper it calls) still computes
from its contents. Earlier rounds are in tests/test_peer_ports*.py.
In-process (`runpy` runs the script as `__main__`, as `python flow.py`
would); executions are counted by the step bodies."""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

HEAD = """\
import durable

COUNTS = {"fetch": 0}
LOG = []
"""

# DBOS's test_simple_workflow: `wf_counter = 0` ... two calls of one id.
WORKFLOW = """
@durable.step
def fetch(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return i * 2


@durable.workflow(run_id="simple")
def pipeline(i):
    return fetch(i)


def main():
    COUNTS["fetch"] = 0
    LOG.clear()
    first = pipeline(3)
    assert COUNTS["fetch"] == 1 and LOG == [3], (COUNTS, LOG)
    second = pipeline(3)  # the completed run answers from its record
    print("values", first, second, "runs", COUNTS["fetch"], "log", LOG)


if __name__ == "__main__":
    main()
"""

# joblib's test_memory_integration: `accumulator = []`, `memory.cache(f)`.
CACHED = """
@durable.step(cache=True)
def fetch(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return i * 2


def main():
    LOG.clear()
    COUNTS.update(fetch=0)
    first = fetch(3)
    assert LOG == [3], LOG
    second = fetch(3)  # a hit: the body does not run again
    print("values", first, second, "runs", COUNTS["fetch"], "log", LOG)


if __name__ == "__main__":
    main()
"""


# The same with what main() keeps of the results, printed by a helper.
REPORTED = """
RESULTS = []


@durable.step
def fetch(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return i * 2


@durable.workflow(run_id="reported")
def pipeline(i):
    return fetch(i)


def report():
    return f"values {RESULTS[0]} {RESULTS[-1]} runs {COUNTS['fetch']} log {LOG}"


def main():
    LOG.clear()
    RESULTS.append(pipeline(3))
    assert report() == "values 6 6 runs 1 log [3]", report()
    RESULTS.append(pipeline(3))
    print(report())


if __name__ == "__main__":
    main()
"""


# DBOS's test_async_workflow: the same counted in an async script.
ASYNC = """
import asyncio


@durable.step
async def fetch(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return i * 2


@durable.workflow(run_id="async")
async def pipeline(i):
    return await fetch(i)


async def main():
    COUNTS["fetch"] = 0
    first = await pipeline(3)
    assert COUNTS["fetch"] == 1, COUNTS
    second = await pipeline(3)
    print("values", first, second, "runs", COUNTS["fetch"], "log", LOG)


if __name__ == "__main__":
    asyncio.run(main())
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], body: str) -> str:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    script = tmp_path / "flow.py"
    script.write_text(HEAD + textwrap.dedent(body))
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.strip()


@pytest.mark.parametrize("case", ["workflow", "cached", "reported", "async"])
def test_dbos_and_joblib_counters_a_script_resets_and_reads_between_calls(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {"workflow": WORKFLOW, "cached": CACHED, "reported": REPORTED, "async": ASYNC}[case]
    assert _run(tmp_path, monkeypatch, capsys, body) == "values 6 6 runs 1 log [3]"


# A step that reads the log, itself or through a plain helper it calls:
# its output is made of the log, so a call after the log grew computes.
READERS = """
def total():
    return len(LOG)


@durable.step(cache=True)
def count_direct(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return len(LOG)


@durable.step(cache=True)
def count_helper(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return total()


def main():
    LOG.clear()
    outs = [count_direct(1), count_direct(1), count_helper(1), count_helper(1)]
    print("values", outs, "runs", COUNTS["fetch"], "log", LOG)


if __name__ == "__main__":
    main()
"""


def test_a_step_reading_the_log_the_script_resets_still_computes_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, monkeypatch, capsys, READERS) == "values [1, 2, 3, 4] runs 4 log [1, 1, 1, 1]"


# main() also configures what the step reads (CFG) before it resets the log:
# its `def` binds CFG, so the statements of its body CFG may be made from are
# followed for the step (`handedpart`), not the log it empties and shows (was a
# strict xfail: "helper main changed; now LOG changed").
CONFIGURED = """
CFG = {"k": 1}


@durable.step
def fetch(i):
    COUNTS["fetch"] += 1
    LOG.append(i)
    return i * CFG["k"]


@durable.workflow(run_id="configured")
def pipeline(i):
    return fetch(i)


def main():
    CFG["k"] = 2
    LOG.clear()
    first = pipeline(3)
    assert LOG == [3], LOG
    second = pipeline(3)
    print("values", first, second, "runs", COUNTS["fetch"], "log", LOG)


if __name__ == "__main__":
    main()
"""


def test_dbos_counter_reset_by_a_main_that_also_configures_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, monkeypatch, capsys, CONFIGURED) == "values 6 6 runs 1 log [3]"
