"""Golden fingerprints: the corpus in fp_corpus.py (and fp_corpus_312.py for
3.12+ syntax) must give the values in fp_golden.json on every CPython
3.10-3.13 this machine has. An interpreter that is absent is skipped.

Regenerate on purpose only (a changed value strands users' runs):
    python tests/test_fingerprint_golden.py --update
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
GOLDEN = TESTS / "fp_golden.json"
VERSIONS = ("3.10", "3.11", "3.12", "3.13")


def modules_for(version: str) -> list[str]:
    return ["fp_corpus", "fp_corpus_312"] if version >= "3.12" else ["fp_corpus"]


def find_interpreter(version: str) -> str | None:
    """A CPython of that minor version: this one, pyenv's, or on PATH."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    candidates = [*_pyenv_pythons(version), shutil.which(f"python{version}")]
    for path in candidates:
        if path and _reports(path, version):
            return path
    return None


def _pyenv_pythons(version: str) -> list[str]:
    roots = {"/root/.pyenv", os.path.expanduser("~/.pyenv"), os.environ.get("PYENV_ROOT", "")}
    pyenv = shutil.which("pyenv")
    if pyenv:
        done = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
        roots.add(done.stdout.strip())
    found: list[str] = []
    for root in sorted(r for r in roots if r):
        found += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python"))
    return found


def _reports(path: str, version: str) -> bool:
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        done = subprocess.run([path, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def compute(python: str, modules: list[str]) -> dict[str, dict[str, dict[str, object]]]:
    # -I: no PYTHONPATH, no user site, no current directory: nothing but the
    # standard library and the files named here can be imported.
    done = subprocess.run(
        [python, "-I", "-B", str(TESTS / "fp_runner.py"), str(REPO), str(TESTS), *modules],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, dict[str, object]]] = json.loads(done.stdout)
    return result


def summarise(result: dict[str, dict[str, dict[str, object]]]) -> dict[str, dict[str, str]]:
    """value per case, or `error:<type>` (messages name paths, which vary)."""
    return {
        mod: {case: str(r.get("value") or f"error:{r['error']}") for case, r in cases.items()}
        for mod, cases in result.items()
    }


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(GOLDEN.read_text())
    return data


@pytest.mark.parametrize("version", VERSIONS)
def test_golden_fingerprints(version: str, golden: dict[str, dict[str, str]]) -> None:
    python = find_interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} on this machine")
    result = compute(python, modules_for(version))
    got = summarise(result)
    for mod in modules_for(version):
        wrong = {c: (golden[mod].get(c), v) for c, v in got[mod].items() if golden[mod].get(c) != v}
        missing = sorted(set(golden[mod]) - set(got[mod]))
        details = {c: result[mod][c].get("parts") for c in wrong}
        assert not wrong and not missing, f"{version} {mod}: {wrong} missing={missing} {details}"


def test_corpus_cases_are_told_apart(golden: dict[str, dict[str, str]]) -> None:
    """Distinct functions give distinct fingerprints; the only equalities are
    the ones that must hold (quote style and PEP 701 never count)."""
    corpus = golden["fp_corpus"]
    values = [v for v in corpus.values() if not v.startswith("error:")]
    assert len(values) > 50
    seen: dict[str, list[str]] = {}
    for case, v in corpus.items():
        seen.setdefault(v, []).append(case)
    dupes = sorted(sorted(cases) for v, cases in seen.items() if len(cases) > 1)
    # The refusal of two lambdas on a line; a bound method is its function
    # (the instance it is bound to is state, not code).
    assert dupes == [["Widget.method", "bound_method"], ["pair_one", "pair_two"]], dupes
    assert corpus["pair_one"] == "error:ConfigurationError"
    assert golden["fp_corpus_312"]["quotes"] == corpus["quotes_compat"]
    assert corpus["scale_two"] != corpus["scale_three"]


def update() -> None:
    """Write the golden file from every interpreter present; refuse if they
    disagree (that is exactly the bug this file guards against)."""
    results = {}
    for version in VERSIONS:
        python = find_interpreter(version)
        if python is not None:
            results[version] = summarise(compute(python, modules_for(version)))
    merged: dict[str, dict[str, str]] = {}
    for version, got in results.items():
        for mod, cases in got.items():
            if mod in merged and merged[mod] != cases:
                raise SystemExit(f"{version} disagrees on {mod}; not writing")
            merged[mod] = cases
    GOLDEN.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} from {sorted(results)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update()
    else:
        raise SystemExit(__doc__)
