"""`durable.configure()` and the `DURABLE_*` variables: one resolver, the
order explicit option > configure() > environment > built-in default, checked
values, and a refusal that says how to set on_change."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._settings import setting

from .clikit import REPO


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("DURABLE_STORE", "DURABLE_ON_CHANGE", "DURABLE_DURABILITY", "DURABLE_LOG"):
        monkeypatch.delenv(name, raising=False)
    yield
    durable.configure(store=None, on_change=None, durability=None, log=None)


def counted_flow(
    store: durable.Store | str | None, calls: list[int], on_change: str | None = None
) -> durable.Workflow[[int], int]:
    @durable.step
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    @durable.workflow(store=store, run_id="fixed", on_change=on_change)
    def flow(x: int) -> int:
        return double(x)

    return flow


def test_on_change_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    flow = counted_flow(str(tmp_path / "s"), calls)
    assert flow(1) == 2 and calls == [1]
    # built-in default: refuse, and nothing runs
    with pytest.raises(durable.DefinitionChangedError):
        flow(2)
    assert calls == [1]
    # environment: rerun
    monkeypatch.setenv("DURABLE_ON_CHANGE", "rerun")
    assert flow(2) == 4 and calls == [1, 2]
    # configure() beats the environment
    durable.configure(on_change="refuse")
    with pytest.raises(durable.DefinitionChangedError):
        flow(3)
    assert calls == [1, 2]
    # the decorator's option beats configure(), and with_options beats the decorator
    rerun = counted_flow(str(tmp_path / "s"), calls, on_change="rerun")
    assert rerun(3) == 6 and calls == [1, 2, 3]
    with pytest.raises(durable.DefinitionChangedError):
        rerun.with_options(on_change="refuse")(4)
    assert calls == [1, 2, 3]
    # None forgets configure()'s value: the environment applies again
    durable.configure(on_change=None)
    assert flow(4) == 8 and calls == [1, 2, 3, 4]


def test_configure_after_decoration_applies(tmp_path: Path) -> None:
    calls: list[int] = []
    flow = counted_flow(None, calls)  # no store: resolved when it runs
    durable.configure(store=str(tmp_path / "configured"))
    assert flow(5) == 10 and calls == [5]
    store = durable.open_store(tmp_path / "configured")
    assert store.load_manifest(flow.name, "fixed") is not None
    assert [r.run_id for r in flow.runs()] == ["fixed"]
    assert durable.open_store().url == store.url


def test_store_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "env"))
    counted_flow(None, calls)(1)
    durable.configure(store=tmp_path / "conf")  # a PathLike is accepted
    counted_flow(None, calls)(1)
    counted_flow(str(tmp_path / "own"), calls)(1)
    for where in ("env", "conf", "own"):
        store = durable.open_store(tmp_path / where)
        assert store.load_manifest(runs_of(store), "fixed") is not None, where
    assert calls == [1, 1, 1]  # three stores, three runs


def test_a_store_object_can_be_configured(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "obj")
    durable.configure(store=store)
    assert durable.open_store() is store
    calls: list[int] = []
    counted_flow(None, calls)(3)
    assert store.load_manifest(runs_of(store), "fixed") is not None
    with pytest.raises(durable.ConfigurationError, match="pass its URL"):
        durable.open_store(allow_pickle=False)


def runs_of(store: durable.Store) -> str:
    names = store.workflows()
    assert len(names) == 1, names
    return names[0]


@pytest.mark.parametrize(
    ("name", "bad", "allowed"),
    [
        ("on_change", "sometimes", "'refuse', 'rerun'"),
        ("durability", "always", "'fsync', 'batch', 'none'"),
        ("log", "loud", "'off', 'error', 'warning', 'info', 'debug'"),
    ],
)
def test_bad_values_name_the_allowed_ones(
    name: str, bad: str, allowed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(durable.ConfigurationError, match=f"{name} must be one of {allowed}"):
        durable.configure(**{name: bad})
    assert setting(name) == {"on_change": "refuse", "durability": "fsync", "log": "off"}[name]
    env = f"DURABLE_{name.upper()}"
    monkeypatch.setenv(env, bad)
    with pytest.raises(durable.ConfigurationError, match=f"{env} must be one of {allowed}"):
        setting(name)


def test_a_bad_value_changes_nothing() -> None:
    durable.configure(log="info")
    with pytest.raises(durable.ConfigurationError):
        durable.configure(log="debug", on_change="never")
    assert (setting("log"), setting("on_change")) == ("info", "refuse")


def test_resolver_order_for_other_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert setting("durability") == "fsync"
    monkeypatch.setenv("DURABLE_DURABILITY", " Batch ")  # case and spaces forgiven
    assert setting("durability") == "batch"
    durable.configure(durability="none")
    assert setting("durability") == "none"
    assert setting("durability", "fsync") == "fsync"  # an explicit option wins
    with pytest.raises(durable.ConfigurationError, match="durability must be one of"):
        setting("durability", "sometimes")
    with pytest.raises(durable.ConfigurationError):
        durable.workflow(on_change="never")(lambda: 0)


def test_refusal_says_how_to_set_on_change(tmp_path: Path) -> None:
    calls: list[int] = []
    flow = counted_flow(str(tmp_path / "s"), calls)
    flow(1)
    with pytest.raises(durable.DefinitionChangedError) as refused:
        flow(2)
    text = str(refused.value)
    for way in (
        "@durable.workflow(on_change='rerun')",
        "durable.configure(on_change='rerun')",
        "DURABLE_ON_CHANGE=rerun",
        "--on-change rerun",
    ):
        assert way in text, way


SCRIPT = """
import os, durable

@durable.step
def scale(x):
    with open(os.environ["COUNTS"], "a") as f:
        f.write("scale\\n")
    return x * FACTOR

@durable.workflow(run_id="r")
def flow(x):
    return scale(x)

print(flow(2))
"""


def test_environment_in_a_subprocess(tmp_path: Path) -> None:
    script, counts = tmp_path / "job.py", tmp_path / "counts.txt"
    env = {"PYTHONPATH": str(REPO), "COUNTS": str(counts), "DURABLE_STORE": str(tmp_path / "s")}

    def run(factor: int, **extra: str) -> subprocess.CompletedProcess[str]:
        script.write_text(SCRIPT.replace("FACTOR", str(factor)))
        return subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env={**env, **extra},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    first = run(3)
    assert first.returncode == 0 and first.stdout.strip() == "6", first.stderr
    refused = run(5)  # the step's code changed: refused by default
    assert refused.returncode == 1 and "DefinitionChangedError" in refused.stderr
    assert "DURABLE_ON_CHANGE=rerun" in refused.stderr
    rerun = run(5, DURABLE_ON_CHANGE="rerun")
    assert rerun.returncode == 0 and rerun.stdout.strip() == "10", rerun.stderr
    bad = run(5, DURABLE_ON_CHANGE="maybe")
    assert bad.returncode == 1 and "DURABLE_ON_CHANGE must be one of" in bad.stderr
    assert counts.read_text().split() == ["scale", "scale"]  # first run and the rerun only


def test_watchers_hear_of_each_change() -> None:
    from durable._settings import when_configured

    heard: list[str] = []
    stop = when_configured(heard.append)  # how the log handler follows configure(log=)
    durable.configure(log="debug")
    durable.configure(on_change="rerun", log=None)
    stop()
    durable.configure(log="info")
    assert heard == ["log", "on_change", "log"]


@pytest.mark.parametrize("url", ["s3:/bucket/runs", "gs:/team", "memory:/x"])
def test_a_url_with_a_slash_missing_is_refused_not_made_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    # Before: `s3:/bucket` was a folder `s3:` in the working directory, so
    # the team's runs stayed on one machine, silently.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", url)
    calls: list[int] = []
    with pytest.raises(durable.ConfigurationError, match="a slash missing"):
        counted_flow(None, calls)(1)
    assert calls == [] and list(tmp_path.iterdir()) == []
    assert counted_flow(f"./{url}", calls)(1) == 2  # a folder by that name, said so
    assert calls == [1] and (tmp_path / (url.split(":")[0] + ":")).is_dir()


def test_a_misspelt_variable_is_named_with_the_one_meant(tmp_path: Path) -> None:
    # Before: DURABLE_SIGNINGKEY left every record unsigned, and
    # DURABLE_STOER the runs in ./.durable, without a word.
    script = tmp_path / "flow.py"
    script.write_text(
        "import durable\n\n"
        "@durable.workflow(run_id='r')\n"
        "def flow() -> int:\n"
        "    return 1\n\n"
        "print('VALUE', flow())\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env.update(PYTHONPATH=str(REPO), DURABLE_SIGNINGKEY="k", DURABLE_STOER="team", DURABLE_MINE="x")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.split() == ["VALUE", "1"]
    assert "DURABLE_SIGNINGKEY is set, but durable reads no such variable: did you mean " \
        "DURABLE_SIGNING_KEY?" in done.stderr
    assert "did you mean DURABLE_STORE?" in done.stderr
    assert "DURABLE_MINE" not in done.stderr  # not close to one of ours: someone else's


def test_a_variable_no_typo_away_from_ours_is_passed_over_without_difflib(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: DURABLE_TEST_SHARD and DURABLE_TEST_PYTHONS (the suite's own,
    # set for every child it starts) loaded difflib in each process, ~3M
    # instructions, to find them close to nothing.
    from durable._settings import warn_of_misspelt_variables

    monkeypatch.delitem(sys.modules, "difflib", raising=False)
    for name, value in (("DURABLE_TEST_SHARD", "1/3"), ("DURABLE_TEST_PYTHONS", "3.11 3.12"),
                        ("DURABLE_MINE", "x"), ("DURABLE_STORAGE_OPTIONS", "{}")):  # fmt: skip
        monkeypatch.setenv(name, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_of_misspelt_variables()
    assert "difflib" not in sys.modules
    monkeypatch.setenv("DURABLE_STOER", "team")  # the check itself is as it was
    with pytest.warns(UserWarning, match="DURABLE_STOER is set, .* did you mean DURABLE_STORE"):
        warn_of_misspelt_variables()
