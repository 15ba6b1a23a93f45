"""Fingerprint the functions of some modules and print them as JSON.

    python fp_runner.py REPO MODULE_DIR MODULE [MODULE ...]

Run by the fingerprint tests in fresh interpreters, any CPython 3.10+, with
nothing installed: `durable` is a stub package so that only the standard
library and durable._fingerprint.fingerprint are loaded (durable/__init__.py is not run).
A module either has `CASES = {label: (function, options)}` or a function
`target` (and optional `OPTIONS`). Errors are reported, not raised.
"""

import importlib
import json
import sys
import types


def load_fingerprint(repo):
    if "durable" not in sys.modules:
        stub = types.ModuleType("durable")
        stub.__path__ = [repo + "/durable"]
        sys.modules["durable"] = stub
    return importlib.import_module("durable._fingerprint.fingerprint")


def run_case(fp, fn, options):
    try:
        got = fp.fingerprint_function(fn, **options)
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e)}
    return {"value": got.value, "identity": got.identity, "parts": dict(got.parts)}


def main(repo, module_dir, *modules):
    fp = load_fingerprint(repo)
    sys.path.insert(0, module_dir)
    out = {}
    for name in modules:
        mod = importlib.import_module(name)
        cases = getattr(mod, "CASES", None) or {"target": (mod.target, getattr(mod, "OPTIONS", {}))}
        out[name] = {label: run_case(fp, fn, opts) for label, (fn, opts) in cases.items()}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
