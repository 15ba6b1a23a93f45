"""perf51 streamlined the argument digest's fast path
(`identity._all_scalar_positional`): a digest is still the bytes the code
before it computed, so a run recorded by that code (b4d7e88,
`tests/data/digest_b4d7e88`) resumes with no step run again, and each
argument shape's digest equals the one that code printed."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from durable._core.identity import call_digest

OLD = Path(__file__).parent / "data" / "digest_b4d7e88"


def f1(i: Any) -> None: ...
def f2(a: Any, b: Any = 3) -> None: ...
def f3(s: Any, x: Any = 1.5, flag: Any = None) -> None: ...
def f0(k: Any = 5, name: Any = "k") -> None: ...


# (function, args, kwargs, the digest b4d7e88's `call_digest` gave)
CASES: list[tuple[Callable[..., None], tuple[Any, ...], dict[str, Any], str]] = [
    (f1, (0,), {}, "4d4247f32f4fc4770cd78814b8d75abe"),
    (f1, (-7,), {}, "0ec48634db6d0c0295a07dd2ee5e8e42"),
    (f1, (10**30,), {}, "7da220ac190e0b9098ab7586404ac039"),
    (f1, (3 * 10**4400,), {}, "02fae1a3168497d7a76844adbd4c6da9"),  # past `%d`'s digits
    (f1, (True,), {}, "3cdf01aab1613700cdc6aa86d5da85ea"),
    (f1, ("text",), {}, "6f82e475866d87da14b11f0a19ebf006"),
    (f1, (), {"i": 4}, "27b5dc730ee050abfd4145eee847ffeb"),
    (f2, (1,), {}, "82fc19c2ec23b0212ef99f0a07307516"),
    (f2, (1, 2), {}, "26471b94994f15a44877a33061aa763e"),
    (f2, (-1,), {"b": 2}, "0f1ded48c40b2f3abe5be7a12f1c9f2a"),
    (f3, ("é",), {}, "6a85b004b4b82b85a2c50dc2d383d7b9"),
    (f3, ("s", 2.5), {}, "0e9662eb383d838ff6d4e2ec3746fc12"),
    (f3, (b"raw", None, True), {}, "87be7ca9574f4a8ac1dd0337cbc3f98b"),
    (f0, (), {}, "37293846aafa5699464d9ef23b4a111a"),
    (f0, (6,), {}, "eadcd97f6b2eaa04c784f24705038b57"),
    (f0, (6, "j"), {}, "650cb675d23baed061dff9291de3c8f5"),
]


@pytest.mark.parametrize("fn, args, kwargs, digest", CASES, ids=range(len(CASES)))
def test_each_argument_shape_digests_as_before(
    fn: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any], digest: str
) -> None:
    sig = inspect.signature(fn)
    assert call_digest(sig, args, kwargs, fn.__name__) == digest
    assert call_digest(sig, args, kwargs, fn.__name__) == digest  # its shape now cached


@pytest.mark.slow  # one child: the fixture's module is `flow`, as it was recorded
def test_a_run_recorded_before_resumes_without_running_a_step(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    where = tmp_path / "old"
    shutil.copytree(OLD, where)
    counts = where / "counts"
    child = subprocess.run(
        [sys.executable, "resume.py", "store"],
        cwd=where,
        env=dict(child_env, FLOW_COUNTS=str(counts)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0 and child.stdout.strip() == "suspended", child.stderr
    assert not counts.exists(), counts.read_text()  # 18 steps recorded, none ran again
