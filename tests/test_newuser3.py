"""Found by a third walk as new users: a team sharing a bucket, a data
scientist in a notebook, an engineer driving runs from the command line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

WAITS = """
import durable


@durable.step
def build() -> str:
    with open("built", "a") as f:
        f.write("x")
    return "build"


@durable.workflow(run_id="rel")
def release() -> str:
    return f"{build()} {durable.wait_for('version')!r}"
"""


def test_an_input_number_not_given_back_as_typed_is_refused_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--input version=1.10` recorded the float 1.1 as the wait's answer: a
    wait has no annotation to say it takes text, and a recorded answer is
    never replaced, so the run went on for good with a value nobody typed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(WAITS)
    store = str(tmp_path / "runs")
    assert main(["--store", store, "run", "flow.py:release"]) == 3  # suspended at the wait
    for typed in ("1.10", "1e3", "3.14159265358979323846"):
        capsys.readouterr()
        refused = main(["--store", store, "run", "flow.py:release", "--resume",
                        "--input", f"version={typed}"])  # fmt: skip
        said = capsys.readouterr().err
        assert refused == 2, said
        assert f"""--input 'version="{typed}"'""" in said  # how to pass the text
        assert "for the number, write --input version=" in said
    capsys.readouterr()
    assert main(["--store", store, "runs", "--json"]) == 0
    [info] = json.loads(capsys.readouterr().out)
    assert (info["status"], info["completedSteps"]) == ("suspended", 1)  # nothing recorded
    done = main(["--store", store, "run", "flow.py:release", "--resume",
                 "--input", 'version="1.10"'])  # fmt: skip
    assert done == 0
    assert json.loads(capsys.readouterr().out) == "build '1.10'"
    assert (tmp_path / "built").read_text() == "x"  # the step ran once


@pytest.mark.parametrize("typed", ["2", "1.5", "-3", "1.0", "yes", '"1.10"', "[1.10]"])
def test_an_input_given_back_as_typed_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    typed: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(WAITS)
    store = str(tmp_path / "runs")
    assert main(["--store", store, "run", "flow.py:release"]) == 3
    capsys.readouterr()
    assert main(["--store", store, "run", "flow.py:release", "--resume",
                 "--input", f"version={typed}"]) == 0  # fmt: skip
    expected = typed if typed == "yes" else json.loads(typed)
    assert json.loads(capsys.readouterr().out) == f"build {expected!r}"


# -- a team sharing a bucket: what each misconfiguration says ------------------


def _moto_with_users() -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    """A moto server that checks credentials and policies once the bucket,
    a user without S3 permissions and that user's key exist."""
    import boto3

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="4")  # the four calls below
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "moto did not start"
            time.sleep(0.05)
    admin = {"endpoint_url": endpoint, "region_name": "us-east-1",
             "aws_access_key_id": "admin", "aws_secret_access_key": "admin"}  # fmt: skip
    boto3.client("s3", **admin).create_bucket(Bucket="team")
    iam = boto3.client("iam", **admin)
    iam.create_user(UserName="intern")
    key = iam.create_access_key(UserName="intern")["AccessKey"]
    policy = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "*"}]}  # fmt: skip
    iam.put_user_policy(UserName="intern", PolicyName="none", PolicyDocument=json.dumps(policy))
    creds = {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    return server, endpoint, creds


def _counted(store: durable.Store, ran: list[str]) -> durable.Workflow[[], int]:
    @durable.step
    def work() -> int:
        ran.append("work")
        return 1

    @durable.workflow(store=store, run_id="r", name="team")
    def team() -> int:
        return work()

    return team


@pytest.mark.slow
def test_credentials_without_permission_are_told_apart_from_wrong_ones() -> None:
    """A user whose keys S3 accepts but whose policy allows nothing on the
    bucket was told 'Access Denied (check the credentials: ...)': other keys
    were not the cure, a grant (or another account's bucket) was."""
    server, endpoint, creds = _moto_with_users()
    fast = {"retries": {"max_attempts": 1}, "connect_timeout": 5}
    try:
        ran: list[str] = []
        denied = "accepted but are not allowed this: durable needs s3:ListBucket"
        for secret, said in ((creds["secret"], denied), ("wrong", "check the credentials")):
            store = durable.open_store("s3://team/runs", endpoint_url=endpoint, key=creds["key"],
                                       secret=secret, config_kwargs=fast, skip_instance_cache=True)  # fmt: skip
            with pytest.raises(durable.StorageError) as err:
                _counted(store, ran).run()
            assert said in str(err.value), str(err.value)
        assert ran == []  # nothing ran either time
    finally:
        server.kill()
        server.wait()


def test_an_unreachable_endpoint_names_the_variable_it_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AWS_ENDPOINT_URL pointing at nothing said only 'check the URL,
    credentials and network': the endpoint a team sets in its environment
    was not named."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    store = durable.open_store(
        "s3://team/runs", key="k", secret="s", skip_instance_cache=True,
        config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2},
    )  # fmt: skip
    ran: list[str] = []
    with pytest.raises(durable.StorageError) as err:
        _counted(store, ran).run()
    assert f"$AWS_ENDPOINT_URL (AWS_ENDPOINT_URL=http://127.0.0.1:{port})" in str(err.value)
    assert ran == []


def test_a_missing_bucket_is_named_once(s3_url: str) -> None:
    """'the bucket does not exist (The specified bucket does not exist). The
    bucket does not exist (any more): create it or fix the URL.'"""
    ran: list[str] = []
    store = durable.open_store("s3://no-such-team-bucket/runs", skip_instance_cache=True)
    with pytest.raises(durable.StorageError) as err:
        _counted(store, ran).run()
    text = str(err.value)
    assert "the bucket does not exist: no-such-team-bucket. Create it, or fix the URL." in text
    assert text.lower().count("does not exist") == 1 and ran == []


# -- steps as static and class methods, in either decorator order -------------


def test_a_step_written_over_staticmethod_or_classmethod_binds_as_python_says(
    store: durable.Store,
) -> None:
    """`@durable.step` above `@staticmethod`: called on an instance, the
    step was passed the instance ('takes 1 positional argument but 2 were
    given'); above `@classmethod` it was refused as 'not callable'. Both
    orders now give the same step."""
    ran: list[str] = []

    class Prices:
        @durable.step
        @staticmethod
        def rounded(x: float) -> float:
            ran.append("rounded")
            return round(x, 1)

        @durable.step
        @classmethod
        def scaled(cls, x: float) -> float:
            ran.append(f"scaled {cls.__name__}")
            return x * 10

        @durable.workflow(store=store, run_id="static")
        @staticmethod
        def report(x: float) -> float:
            prices = Prices()
            return prices.rounded(x) + prices.scaled(x) + Prices.rounded(x)

    assert Prices().report(1.26) == 1.3 + 12.6 + 1.3
    assert ran == ["rounded", "scaled Prices", "rounded"]
    again = Prices.report.run(1.26)  # the same run, completed: nothing runs
    assert again.value == 1.3 + 12.6 + 1.3 and again.steps_executed == 0
    assert ran == ["rounded", "scaled Prices", "rounded"]
    names = [s.name.rsplit(".", 2)[-2:] for s in Prices.report.history("static")[1:]]
    assert names == [["Prices", "rounded"], ["Prices", "scaled"], ["Prices", "rounded"]]


def test_a_signed_run_read_without_a_key_says_to_set_the_writers_key(tmp_path: Path) -> None:
    """Machine B without DURABLE_SIGNING_KEY resuming A's signed run was told
    'is signed but this store has no signing key; set DURABLE_SIGNING_KEY.
    ... Someone without the signing key wrote it, or the key differs': the
    writer had the key; the reader lacks it."""
    ran: list[str] = []
    signed = durable.open_store(tmp_path / "runs", signing_key=b"team key")
    assert _counted(signed, ran).run().value == 1
    with pytest.raises(durable.IntegrityError) as err:
        _counted(durable.open_store(tmp_path / "runs"), ran).run()
    text = str(err.value)
    assert "Its writer had a signing key and this process has none: set DURABLE_SIGNING_KEY" in text
    assert "Someone without the signing key" not in text and ran == ["work"]


# -- cancel on an object store ---------------------------------------------------


@pytest.mark.parametrize("url", ["memory", "s3"])
def test_a_cancel_during_a_new_runs_first_step_stops_it_at_the_next_boundary(
    url: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`durable cancel` from machine B while machine A's new run was in its
    first long step: A's first look for the marker, seconds later, took the
    answer of the listing made when the run started (no marker) instead of
    reading, so the next step ran and the run ended `completed`, although
    the cancel had said it would end `cancelled` after the step in flight."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0.05")
    location = f"memory://cancel-{os.getpid()}-{time.monotonic_ns()}"
    store = durable.open_store(request.getfixturevalue("s3_url") if url == "s3" else location)
    ran: list[str] = []
    said: list[str] = []

    @durable.step
    def slow() -> int:
        ran.append("slow")
        said.append(flow.cancel("c").status)  # as `durable cancel c` from elsewhere
        time.sleep(0.1)  # a long step: more than the poll interval passes
        return 1

    @durable.step
    def after(x: int) -> int:
        ran.append("after")
        return x + 1

    @durable.workflow(store=store, run_id="c", name="cancelled-flow")
    def flow() -> int:
        return after(after(slow()))

    with pytest.raises(durable.Cancelled):
        flow()
    assert said == ["cancelling"] and ran == ["slow"]  # the step in flight, and no other
    assert flow.runs()[0].status == "cancelled"


# -- --var values against their parameter's annotation -------------------------

TYPED = """
import durable


@durable.step
def deploy(force: bool, n: int, ratio: float, label: str | None) -> str:
    with open("ran", "a") as f:
        f.write("x")
    return f"force={force!r} n={n!r} ratio={ratio!r} label={label!r}"


@durable.workflow
def release(force: bool = False, n: int = 1, ratio: float = 0.5, label: str | None = None) -> str:
    return deploy(force, n, ratio, label)
"""


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("force=False", "reads as the string 'False', but flow.release takes force as a bool: "
                        "write it as JSON, --var force=true or --var force=false"),
        ("force=yes", "takes force as a bool"),
        ("force=1", "reads as JSON (int 1), but flow.release takes force as a bool"),
        ("n=five", "reads as the string 'five', but flow.release takes n as an int"),
        ("n=2.5", "reads as JSON (float 2.5), but flow.release takes n as an int"),
        ("n=true", "takes n as an int"),
        ("ratio=fast", "takes ratio as a float: write it as a JSON number"),
        ("label=1.10", """quote it as a JSON string: --var 'label="1.10"'"""),
    ],
)  # fmt: skip
def test_a_var_of_another_type_than_its_annotation_is_refused_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    typed: str, said: str,
) -> None:  # fmt: skip
    """`--var force=False` for `force: bool` ran the workflow with the
    string 'False', which is true: the step ran with force on."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(TYPED)
    assert main(["run", "flow.py:release", "--var", typed]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()  # nothing ran


def test_a_var_of_its_annotations_type_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(TYPED)
    given = ["force=true", "n=3", "ratio=1", "label=null"]
    assert main(["run", "flow.py:release", *(a for v in given for a in ("--var", v))]) == 0
    assert json.loads(capsys.readouterr().out) == "force=True n=3 ratio=1 label=None"
    assert main(["run", "flow.py:release", "--var", "ratio=1.10", "--var", "label=v2"]) == 0
    assert json.loads(capsys.readouterr().out) == "force=False n=1 ratio=1.1 label='v2'"


def test_a_run_held_from_another_host_says_when_it_can_be_taken_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Machine B, finding the run of machine A (killed with -9) on the shared
    bucket, was told only 'is being executed by pid 30770 on machA ... Wait
    for it to finish': nothing said that a dead holder is taken over, nor
    when (about 23 s after its lease expires), so the run read as running
    forever."""
    url = f"memory://team-{time.monotonic_ns()}"
    monkeypatch.setattr(socket, "gethostname", lambda: "machine-a")
    held = durable.open_store(url).acquire("team", "r", 30)  # machine A's lease
    monkeypatch.undo()
    ran: list[str] = []
    try:
        with pytest.raises(durable.RunLockedError) as err:
            _counted(durable.open_store(url), ran).run()
    finally:
        held.release()
    text = str(err.value)
    assert "on machine-a" in text and ran == []
    assert "If that process is gone (killed, or its machine down), a process on another " \
        "host takes the run over once its lease has expired and stayed unrenewed for 23 s " \
        "more: a wait of" in text  # fmt: skip
    need = int(text.rsplit("a wait of ", 1)[1].split(" s ")[0])
    assert 50 <= need <= 53  # the 30 s left on the lease, and the 23 s watch


def test_a_var_of_an_unannotated_parameter_not_given_back_as_typed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--var version=1.10` for a parameter without an annotation ran with
    the float 1.1, which nobody typed: the rule `--input` follows, as one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(
        "import durable\n\n@durable.workflow\ndef build(version):\n    return repr(version)\n"
    )
    assert main(["run", "flow.py:build", "--var", "version=1.10"]) == 2
    err = capsys.readouterr().err
    assert "--var 'version=\"1.10\"'" in err and "--var version=1.1" in err, err
    assert main(["run", "flow.py:build", "--var", 'version="1.10"']) == 0
    assert json.loads(capsys.readouterr().out) == "'1.10'"
    assert main(["run", "flow.py:build", "--var", "version=2.5"]) == 0
    assert json.loads(capsys.readouterr().out) == "2.5"


UNRESOLVED = """
from __future__ import annotations

from typing import TYPE_CHECKING

import durable

if TYPE_CHECKING:
    import pandas as pd


@durable.step
def deploy(dry_run: bool) -> str:
    with open("ran", "a") as f:
        f.write("x")
    return f"dry_run={dry_run!r}"


@durable.workflow
def release(frame: pd.DataFrame | None = None, dry_run: bool = True) -> str:
    return deploy(dry_run)
"""


def test_a_var_is_checked_when_another_parameters_annotation_does_not_resolve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An annotation naming what only a type checker imports (`pd.DataFrame`
    under `if TYPE_CHECKING:`) does not resolve at run time: that left every
    parameter unchecked, and `--var dry_run=False` ran with the string 'False'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(UNRESOLVED)
    assert main(["run", "flow.py:release", "--var", "dry_run=False"]) == 2
    assert "takes dry_run as a bool" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()  # nothing ran
    assert main(["run", "flow.py:release", "--var", "dry_run=false"]) == 0
    assert json.loads(capsys.readouterr().out) == "dry_run=False"
