"""What a newcomer gets wrong in a decorator's options or a resume, and what
durable says then: the error names the option, the value and the way out."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import child_env, write_flow
from .clikit import durable as cli


@pytest.mark.parametrize("given", [[ValueError], (ConnectionError, TimeoutError), ValueError])
def test_exceptions_given_as_retries_point_to_retry_on(given: Any) -> None:
    """`retries=[ValueError]` failed as "TypeError: '>=' not supported
    between instances of 'list' and 'int'", naming neither option."""
    with pytest.raises(durable.ConfigurationError) as refused:
        durable.step(retries=given)
    message = str(refused.value)
    assert message.startswith("retries must be a whole number >= 0, not ")
    assert "the exceptions to retry go in retry_on=" in message


@pytest.mark.parametrize("count", [2.5, True, "3", None])
def test_a_count_of_retries_that_is_no_whole_number_is_refused(count: Any) -> None:
    """`retries=2.5` made four tries (the loop compared the try's number with
    2.5) and `retries=True` one retry, silently; `"3"` and `None` were bare
    TypeErrors."""
    with pytest.raises(
        durable.ConfigurationError, match=r"^retries must be a whole number >= 0, not "
    ):
        durable.step(retries=count)


@pytest.mark.parametrize(
    ("option", "wanted"),
    [
        ("retry_delay", "retry_delay must be a number of seconds, not '1'"),
        ("backoff", "backoff must be a number >= 1, not '1'"),
        ("max_delay", "max_delay must be a number of seconds (math.inf for no cap), not '1'"),
    ],
)
def test_a_delay_that_is_no_number_is_named(option: str, wanted: str) -> None:
    with pytest.raises(durable.ConfigurationError) as refused:
        durable.step(retries=1, **{option: "1"})
    assert str(refused.value) == wanted


def test_a_count_of_retries_from_numpy_is_taken() -> None:
    np = pytest.importorskip("numpy")
    tries: list[int] = []

    @durable.step(retries=np.int64(2), retry_delay=0)
    def flaky() -> int:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("again")
        return len(tries)

    @durable.workflow(store=durable.testing.memory_store(), run_id="numpy-retries")
    def flow() -> int:
        return flaky()

    assert flow() == 3 and len(tries) == 3


def _waiting(store: durable.Store) -> durable.Workflow[[str], str]:
    @durable.workflow(store=store, run_id="review-1")
    def review(topic: str) -> str:
        return f"{topic}: {durable.wait_for('approval')}"

    return review


def test_a_run_waiting_for_an_input_is_not_told_to_resume_with_an_argument(
    store: durable.Store,
) -> None:
    """The message said "resume with inputs={'approval': ...}" and then
    "Resume it with workflow.resume('review-1', name=value, ...)", which is
    refused: approval is no parameter of the workflow."""
    review = _waiting(store)
    with pytest.raises(durable.Suspended) as waiting:
        review("owls")
    assert "name=value" not in str(waiting.value)
    assert "review.resume('review-1', inputs={'approval': VALUE})" in str(waiting.value)
    assert review.resume("review-1", inputs={"approval": "yes"}).value == "owls: yes"


def test_an_input_given_as_an_argument_is_pointed_to_inputs(store: durable.Store) -> None:
    review = _waiting(store)
    with pytest.raises(durable.Suspended):
        review("owls")
    with pytest.raises(durable.ConfigurationError) as refused:
        review.resume("review-1", approval="yes")
    assert "has no parameter(s) approval" in str(refused.value)
    assert "give its answer as inputs={'approval': ...}" in str(refused.value)


def test_a_suspend_of_the_users_own_still_says_resume_with_arguments(
    store: durable.Store,
) -> None:
    @durable.workflow(store=store, run_id="own")
    def own(decision: str | None = None) -> str:
        if decision is None:
            durable.suspend("waiting for decision")
        return decision

    with pytest.raises(durable.Suspended, match=r"as overrides: own.resume\('own', decision=VALUE\)"):
        own()


WAITING = """
import durable


@durable.workflow
def review(topic: str) -> str:
    return topic + ": " + durable.wait_for("approval")


@durable.workflow
def lookalike(topic: str) -> str:
    durable.suspend("waiting for input 'approval'; resume with inputs= later")
    return topic
"""


@pytest.mark.slow
def test_the_command_line_names_the_input_a_run_waits_for(tmp_path: Path) -> None:
    """`continue with: ... --resume --input NAME=VALUE` left the name to
    guess; `--var approval=yes` (what the line before suggests to someone
    who read only "waiting for input 'approval'") said only "has no
    parameter approval"."""
    write_flow(tmp_path, WAITING)
    first = cli(tmp_path, "run", "flow.py:review", "--run-id", "w1", "--var", "topic=owls")
    assert first.returncode == 3, first.stderr
    assert (
        "continue with: durable run flow.py:review --run-id w1 --resume --input approval=VALUE"
        in first.stderr
    )
    as_var = cli(tmp_path, "run", "flow.py:review", "--run-id", "w1", "--var", "approval=yes")
    assert as_var.returncode == 2
    assert "answer it with --resume --input approval=VALUE" in as_var.stderr
    done = cli(
        tmp_path, "run", "flow.py:review", "--run-id", "w1", "--resume", "--input", "approval=yes"
    )
    assert (done.returncode, done.stdout.strip()) == (0, '"owls: yes"')
    own = cli(tmp_path, "run", "flow.py:lookalike", "--run-id", "l1", "--var", "topic=owls")
    assert own.returncode == 3
    assert "continue with: durable run flow.py:lookalike --run-id l1 --resume --var NAME=VALUE" in own.stderr


def test_a_suspended_run_says_which_input_it_waits_for_and_survives_a_pickle(
    store: durable.Store,
) -> None:
    import pickle

    review = _waiting(store)
    with pytest.raises(durable.Suspended) as waiting:
        review("owls")
    again = pickle.loads(pickle.dumps(waiting.value))
    assert (again.waiting_for, str(again)) == ("approval", str(waiting.value))


def test_a_fork_past_the_end_of_a_completed_run_says_it_completed(store: durable.Store) -> None:
    """`durable fork nightly --at 9` of a completed run of six positions said
    "position 6 ... is not finished (it failed or was not reached)": nothing
    failed, the run ended there."""

    @durable.step
    def one(i: int) -> int:
        return i

    @durable.step
    def shaky(i: int) -> int:
        raise ValueError("caught by the body")

    @durable.workflow(store=store)
    def chain(catch: bool) -> list[int]:
        done = [one(0), one(1)]
        if catch:
            try:
                shaky(2)
            except ValueError:
                pass
            done.append(one(3))
        return done

    chain.with_options(run_id="done")(False)
    with pytest.raises(durable.ConfigurationError) as past:
        chain.fork("done", at=9)
    assert "run 'done' completed with positions 0 to 1" in str(past.value)
    assert "must be between 0 and 2" in str(past.value)
    assert "failed" not in str(past.value)
    # A completed run whose body caught a failed step still names that step.
    chain.with_options(run_id="caught")(True)
    with pytest.raises(durable.ConfigurationError) as gap:
        chain.fork("caught", at=3)
    assert "position 2 of run 'caught' is not finished (it failed" in str(gap.value)


@pytest.mark.parametrize("wait", [float("nan"), -1, "5"])
def test_a_wait_that_is_no_number_of_seconds_is_refused_before_anything_runs(
    store: durable.Store, wait: Any
) -> None:
    """`with_options(wait=float("nan"))` waited forever for a held run (no
    time is past a NaN deadline), `wait=-1` gave up at once as `wait=0`, and
    `wait="5"` failed as "unsupported operand type(s) for +"."""
    ran: list[int] = []

    @durable.step
    def work() -> int:
        ran.append(1)
        return 1

    @durable.workflow(store=store, run_id="held")
    def flow() -> int:
        return work()

    with pytest.raises(durable.ConfigurationError, match=r"^wait= takes a number of seconds >= 0"):
        flow.with_options(wait=wait)
    assert ran == []
    assert flow.with_options(wait=float("inf"))() == 1  # as long as the run is held


@pytest.mark.parametrize("keep", ["3", 2.5, True, 0])
def test_keep_last_that_is_no_whole_number_is_refused(keep: Any) -> None:
    with pytest.raises(durable.ConfigurationError, match=r"^keep_last must be a whole number >= 1"):
        durable.workflow(keep_last=keep)(lambda: None)


@pytest.mark.parametrize("decorator", [durable.step, durable.workflow])
def test_a_name_given_positionally_is_pointed_to_name(decorator: Any) -> None:
    """`@durable.step("fetch")` said only "'fetch' is not callable"."""
    with pytest.raises(durable.ConfigurationError) as refused:
        decorator("fetch")
    assert "to name it, pass name='fetch'" in str(refused.value)


def test_restart_and_rebase_together_are_refused_before_anything_runs(
    store: durable.Store,
) -> None:
    """Both at once: the restart won without a word, so every step ran again
    for someone who had asked to replay the recorded ones."""
    ran: list[int] = []

    @durable.step
    def work() -> int:
        ran.append(1)
        return len(ran)

    @durable.workflow(store=store, run_id="both")
    def flow() -> int:
        return work()

    assert flow() == 1
    with pytest.raises(durable.ConfigurationError, match="pass one"):
        flow.with_options(restart=True, rebase=True)
    assert flow.with_options(rebase=True)() == 1 and ran == [1]


@pytest.mark.slow
def test_the_command_line_refuses_restart_with_rebase(tmp_path: Path) -> None:
    write_flow(tmp_path, FLOW_ONE_STEP)
    first = cli(tmp_path, "run", "flow.py:flow", "--run-id", "r1")
    assert first.returncode == 0, first.stderr
    both = cli(
        tmp_path, "run", "flow.py:flow", "--run-id", "r1", "--restart", "--rebase-checkpoint"
    )
    assert both.returncode == 2
    assert "not allowed with argument --restart" in both.stderr
    assert (tmp_path / "ran").read_text() == "x"  # the step ran once, for the first run


FLOW_ONE_STEP = """
import durable


@durable.step
def work():
    with open("ran", "a") as f:
        f.write("x")
    return 1


@durable.workflow
def flow():
    return work()
"""


def test_a_run_started_while_a_stop_stands_says_why_it_stops(store: durable.Store) -> None:
    """A stop asked for earlier (a drain, a cell that called request_stop())
    stands until clear_stop(): the next run raised Stopped(130) before its
    first step, a SystemExit that exits quietly, with no word of why."""
    ran: list[int] = []

    @durable.step
    def work() -> int:
        ran.append(1)
        return 1

    @durable.workflow(store=store, run_id="after-a-drain")
    def flow() -> int:
        return work()

    durable.request_stop()
    try:
        with pytest.warns(
            RuntimeWarning, match=r"call durable.clear_stop\(\) to let runs start again"
        ):
            with pytest.raises(durable.Stopped):
                flow()
    finally:
        durable.clear_stop()
    assert ran == []
    assert flow() == 1 and ran == [1]


def test_a_progress_file_that_is_no_path_is_refused_before_anything_runs() -> None:
    """`progress_file=5` failed with "expected str, bytes or os.PathLike
    object, not int" once the run had started."""
    with pytest.raises(
        durable.ConfigurationError, match=r"^progress_file= takes a file path, not 5"
    ):
        durable.workflow(progress_file=5)(lambda: None)  # type: ignore[arg-type]


@pytest.mark.slow
def test_an_html_timeline_to_a_folder_says_to_give_a_file(tmp_path: Path) -> None:
    """`durable show r1 --html /tmp` said only "[Errno 21] Is a directory:
    '/tmp'", and exited 1 as if the run had failed."""
    write_flow(tmp_path, FLOW_ONE_STEP)
    assert cli(tmp_path, "run", "flow.py:flow", "--run-id", "r1").returncode == 0
    for where in (str(tmp_path), str(tmp_path / "no" / "such" / "t.html")):
        refused = cli(tmp_path, "show", "r1", "--html", where)
        assert refused.returncode == 2, refused.stderr
        assert f"cannot write the timeline to {where}" in refused.stderr
        assert "(--html timeline.html)" in refused.stderr
    written = cli(tmp_path, "show", "r1", "--html", "t.html")
    assert written.returncode == 0 and (tmp_path / "t.html").read_text().startswith("<!")


def test_a_validator_that_only_raises_is_told_to_return_true(store: durable.Store) -> None:
    """A validator written to raise on a bad output returns None on a good
    one, so it rejected every output; the error said only "it returned None"."""
    tries: list[int] = []

    def check(page: dict[str, str]) -> None:
        if page["status"] != "ok":
            raise ValueError("partial page")

    @durable.step(validate=check)
    def fetch() -> dict[str, str]:
        tries.append(1)
        return {"status": "ok"}

    @durable.workflow(store=store, run_id="validated")
    def crawl() -> str:
        return fetch()["status"]

    with pytest.raises(durable.ValidationError) as refused:
        crawl()
    assert "it returned None: a validator returns True to accept the output" in str(refused.value)
    assert "must end with `return True`" in str(refused.value) and tries == [1]


def test_an_async_step_called_without_await_is_named_in_the_warning(
    store: durable.Store,
) -> None:
    """A forgotten `await` warned "coroutine 'drive_async' was never
    awaited": durable's driver, not the step the program forgot to await."""
    import asyncio
    import gc
    import warnings

    @durable.step
    async def fetch_page(url: str) -> str:
        return url.upper()

    @durable.step
    async def count(page: str) -> int:
        return len(page)

    @durable.workflow(store=store, run_id="no-await")
    async def crawl() -> int:
        fetch_page("a")  # the await is missing, as on the next two lines
        durable.loop_over(fetch_page, ["b"])
        durable.asleep(0)
        return await count("a")

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert asyncio.run(crawl()) == 1
        gc.collect()
    said = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    step = "test_an_async_step_called_without_await_is_named_in_the_warning.<locals>.fetch_page"
    for name in (step, "durable.loop_over(fetch_page)", "durable.asleep"):
        assert any(f"coroutine '{name}' was never awaited" in m for m in said), (name, said)


TEXTS = """
from __future__ import annotations

import durable


@durable.step
def tag(version: str, note: str | None, n: int, plain) -> str:
    with open("ran", "a") as f:
        f.write("x")
    return f"release-{version}/{note}/{n}/{plain!r}"


@durable.workflow
def release(version: str, note: str | None = None, n: int = 0, plain=None) -> str:
    return tag(version, note, n, plain)
"""


@pytest.mark.slow
def test_a_number_given_for_a_str_parameter_is_refused_not_run(tmp_path: Path) -> None:
    """`--var version=1.10` for `version: str` ran the workflow with the
    float 1.1: it printed "release-1.1", silently another value than typed."""
    write_flow(tmp_path, TEXTS)
    refused = cli(tmp_path, "run", "flow.py:release", "--var", "version=1.10")
    assert refused.returncode == 2, refused.stderr
    assert "takes version as a str" in refused.stderr
    assert """quote it as a JSON string: --var 'version="1.10"'""" in refused.stderr
    assert not (tmp_path / "ran").exists()  # nothing ran
    quoted = cli(tmp_path, "run", "flow.py:release", "--var", 'version="1.10"', "--var", "n=5",
                 "--var", "note=null", "--var", "plain=1.5")  # fmt: skip
    assert quoted.returncode == 0, quoted.stderr
    assert quoted.stdout.strip() == '"release-1.10/None/5/1.5"'  # unannotated: JSON, as documented
    # Unannotated, a number JSON does not give back as typed is refused, as an input is.
    typed = cli(tmp_path, "run", "flow.py:release", "--var", "version=v", "--var", "plain=1.10")
    assert typed.returncode == 2 and "--var 'plain=\"1.10\"'" in typed.stderr, typed.stderr
    word = cli(tmp_path, "run", "flow.py:release", "--var", "version=v2", "--var", "note=2")
    assert word.returncode == 2 and "takes note as a str" in word.stderr


@pytest.mark.slow
def test_a_workflow_name_given_as_a_run_id_is_pointed_to_its_runs(tmp_path: Path) -> None:
    """`durable show flow` (the workflow, not one of its runs) said only "no
    run 'flow'"."""
    write_flow(tmp_path, FLOW_ONE_STEP)
    assert cli(tmp_path, "run", "flow.py:flow", "--run-id", "r1").returncode == 0
    for given in ("flow", "flow.flow"):
        shown = cli(tmp_path, "show", given)
        assert shown.returncode == 2
        assert f"{given} is a workflow, not a run id: `durable runs flow.flow` lists its runs" in (
            shown.stderr
        )


def said(stderr: str, lead: str) -> list[str]:
    """The command a line of advice gives, as a shell would split it."""
    line = next(line for line in stderr.splitlines() if lead in line)
    command = shlex.split(line.split(lead, 1)[1].split(";")[0])
    assert command[0] == "durable"
    return command[1:]


@pytest.mark.slow
def test_the_commands_durable_run_and_fork_advise_work_in_the_store_given_by_flag(
    tmp_path: Path,
) -> None:
    """Run with --store, the advice left the flag out: `continue with: durable
    run flow.py:review --run-id w1 ...`, typed as printed, looked in
    $DURABLE_STORE and said "no run 'w1'"; so did fork's `run it with:`."""
    write_flow(tmp_path, WAITING)
    mine = ["--store", "team runs"]
    first = cli(tmp_path, *mine, "run", "flow.py:review", "--run-id", "w1", "--var", "topic=owls")
    assert first.returncode == 3, first.stderr
    answer = [a.replace("=VALUE", "=yes") for a in said(first.stderr, "continue with: ")]
    done = cli(tmp_path, *answer)
    assert (done.returncode, done.stdout.strip()) == (0, '"owls: yes"'), done.stderr
    forked = cli(tmp_path, *mine, "fork", "w1", "--at", "0")
    assert forked.returncode == 0, forked.stderr
    # A fork at the input: the line answers it (newuser49), as the one above.
    again = [a.replace("=VALUE", "=no") for a in said(forked.stderr, "run it with: ")]
    resumed = cli(tmp_path, *again)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, '"owls: no"'), resumed.stderr
    typo = cli(tmp_path, *mine, "run", "flow.py:review", "--run-id", "w2", "--resume")
    assert typo.returncode == 2
    listing = re.search(r"Check the run id \(`durable ([^`]*)`", typo.stderr)
    assert listing is not None, typo.stderr
    listed = cli(tmp_path, *shlex.split(listing[1]), "--json")
    assert sorted(run["runId"] for run in json.loads(listed.stdout)) == ["w1", forked.stdout.strip()]
    assert not (tmp_path / "store").exists()


ARGUED = """
import durable


@durable.step
def double(n: int) -> int:
    return 2 * n


@durable.workflow
def twice(n: int, label: str = "x") -> str:
    return label + str(double(n)) + durable.wait_for("ok")
"""


@pytest.mark.slow
def test_restarting_a_cancelled_run_as_advised_gives_its_arguments(tmp_path: Path) -> None:
    """"run c1 was cancelled; it runs again only with --restart": typed as
    said, `durable run flow.py:twice --run-id c1 --restart` failed with
    "missing a required argument: 'n'" (a restart takes the --vars, not the
    recorded arguments), and that error did not say what they had been."""
    write_flow(tmp_path, ARGUED)
    flow = ["run", "flow.py:twice", "--run-id", "c1"]
    first = cli(tmp_path, *flow, "--var", "n=3", "--var", "label=a b")
    assert first.returncode == 3, first.stderr
    assert cli(tmp_path, "cancel", "c1").returncode == 0
    cancelled = cli(tmp_path, *flow, "--resume", "--input", "ok=!")
    assert cancelled.returncode == 4, cancelled.stderr
    again = said(cancelled.stderr, "restart it with: ")
    restarted = cli(tmp_path, *again)
    assert restarted.returncode == 3, restarted.stderr
    bare = cli(tmp_path, *flow, "--restart")
    assert bare.returncode == 2
    assert "its recorded ones: --var n=3 --var 'label=\"a b\"'" in bare.stderr, bare.stderr
    assert said(bare.stderr, "restart it with: ") == again
    done = cli(tmp_path, *flow, "--resume", "--input", "ok=!")
    assert (done.returncode, done.stdout.strip()) == (0, '"a b6!"'), done.stderr


def test_cleaning_a_store_folder_that_is_not_there_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in --store: `durable runs` said "there is no such folder", but
    `cache ls`, `cache prune`, `cache clear` and `gc` said "no cache
    entries", "removed 0 entries", "removed 0 runs", as for an empty store."""
    from durable._cli.main import main

    typo = str(tmp_path / "sotre")
    for command in (
        ["cache", "ls"],
        ["cache", "prune", "--max-size", "1GB"],
        ["cache", "clear"],
        ["gc", "--keep-last", "1"],
    ):
        assert main(["--store", typo, *command]) == 2  # newuser38: not 0, as for an empty store
        assert f"{typo}: there is no such folder" in capsys.readouterr().err, command
    assert not os.path.exists(typo)


UNLOADABLE = """
import os
import durable


class Box:
    def __init__(self, v):
        self.v = v

    def __setstate__(self, state):
        if os.environ.get("BROKEN"):
            raise TypeError("Box changed")
        self.__dict__.update(state)


@durable.step
def make(n: int) -> Box:
    return Box(n)


@durable.step
def use(box: Box) -> int:
    if os.environ.get("FAIL"):
        raise RuntimeError("down")
    return box.v


@durable.workflow
def pipe(n: int) -> int:
    return use(make(n))
"""


@pytest.mark.slow
def test_the_fork_a_run_failing_on_an_unloadable_value_advises_is_in_its_store(
    tmp_path: Path,
) -> None:
    """`run r failed ...: CorruptRecordError: ... durable fork r --workflow
    flow.pipe --at 0` left out the --store the run was given."""
    write_flow(tmp_path, UNLOADABLE)
    mine = ["--store", "team runs"]
    flow = [*mine, "run", "flow.py:pipe", "--run-id", "r"]
    first = cli(tmp_path, *flow, "--var", "n=7", env=child_env(tmp_path, FAIL="1"))
    assert first.returncode == 1, first.stderr
    broken = child_env(tmp_path, BROKEN="1")
    failed = cli(tmp_path, *flow, "--resume", env=broken)
    assert failed.returncode == 1 and "cannot be loaded" in failed.stderr, failed.stderr
    fork = re.search(r"`durable ([^`]*)`", failed.stderr)
    assert fork is not None and fork[1].startswith("--store 'team runs' fork r "), failed.stderr
    forked = cli(tmp_path, *shlex.split(fork[1]), env=broken)
    assert forked.returncode == 0, forked.stderr
    done = cli(tmp_path, *mine, "run", "flow.py:pipe", "--run-id", forked.stdout.strip(),
               "--resume", env=broken)  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, "7"), done.stderr
