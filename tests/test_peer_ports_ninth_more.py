"""The ninth round of the peers' own test cases, continued (see
tests/test_peer_ports_ninth.py): joblib (joblib/test/test_hashing.py: dicts
of arrays, dtypes, memory layout, hashes that stay the same across
sessions) and LangGraph (libs/langgraph/tests/test_pregel.py: tasks before
an interrupt, an interrupt in a task, a cached task before an interrupt,
nested tasks). Executions are counted by the step bodies themselves."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable

np = pytest.importorskip("numpy")

# -- joblib: joblib/test/test_hashing.py ----------------------------------------


def test_joblib_hash_numpy_dict_of_arrays_and_dtypes(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_hash_numpy_dict_of_arrays, test_numpy_dtype_pickling: dicts whose
    arrays are equal by content hit ({1: arr1, 2: arr2} and {1: arr2, 2:
    arr1} with arr2 a copy of arr1), another array computes; a dtype, simple
    or structured, hits after a pickle round trip, alone or in a list."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def total(d: dict[int, Any]) -> float:
        ran.append("total")
        return float(sum(a.sum() for a in d.values()))

    @durable.step(cache=True)
    def itemsize(dtypes: Any) -> int:
        ran.append("itemsize")
        return sum(np.dtype(dt).itemsize for dt in dtypes)

    arr1 = np.random.RandomState(0).random_sample((10, 10))
    arr2, arr3 = arr1.copy(), arr1 + 1
    assert total({1: arr1, 2: arr2}) == total({1: arr2, 2: arr1}) and ran == ["total"]
    assert total({1: arr2, 2: arr3}) == float(arr1.sum() + arr3.sum()) and len(ran) == 2
    complex_dt = np.dtype([("name", np.str_, 16), ("grades", np.float64, (2,))])
    for dt in (np.dtype("f4"), complex_dt):
        back = pickle.loads(pickle.dumps(dt))
        assert back is not dt or dt.isbuiltin
        assert itemsize([dt, dt]) == itemsize([back, back]) == itemsize([dt, back])
    assert ran.count("itemsize") == 2


def test_joblib_hash_numpy_noncontiguous(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_hash_numpy_noncontiguous, test_hashes_are_different_between_c_
    and_fortran_contiguous_arrays: a strided slice of a Fortran array, its
    C-contiguous copy and its Fortran copy are three keys (the memory layout
    counts, as in joblib); each returns its own answer, none another's."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def layout(a: Any) -> tuple[bool, bool, float]:
        ran.append("layout")
        return bool(a.flags.c_contiguous), bool(a.flags.f_contiguous), float(a.sum())

    a = np.asarray(np.arange(6000).reshape((1000, 2, 3)), order="F")[:, :1, :]
    b, c = np.ascontiguousarray(a), np.asfortranarray(a)
    for x in (a, b, c, a.copy(order="K"), b.copy(), c.copy(order="F")):
        assert layout(x) == (x.flags.c_contiguous, x.flags.f_contiguous, float(a.sum()))
    assert len(ran) == 3  # the copies are of b's and c's layouts: hits


_SEED_SCRIPT = """
import collections, decimal, sys
import durable

@durable.step(cache=True)
def describe(tags, index):
    with open(sys.argv[1], "a") as log:
        log.write("ran\\n")
    return len(tags), sorted(index), sorted(len(v) for v in index.values())

tags = {"alpha", "beta", "gamma", frozenset({"x", "y"}), ("t", 1), decimal.Decimal("1.5")}
index = {"k" + str(i): {"v" + str(i), "w" + str(i)} for i in range(20)}
print(describe(tags, collections.OrderedDict(sorted(index.items()))))
"""


@pytest.mark.slow
def test_joblib_hashes_stay_the_same(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_hashes_stay_the_same: a hash must not change between sessions,
    or a cache is recomputed from scratch. Three processes with different
    string hash seeds (which reorder sets) call a cached step over sets and
    a mapping of sets: the first computes, the other two hit."""
    script, log = tmp_path / "seeded.py", tmp_path / "log"
    script.write_text(_SEED_SCRIPT)
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**child_env, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, str(script), str(log)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert len(set(outputs)) == 1 and log.read_text().split() == ["ran"]
