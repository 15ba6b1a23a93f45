"""Which fingerprint rules made a run's fingerprints: a digest of durable's
modules that take them, noted in each attempt's manifest. A
refusal of a run recorded under other rules (durable upgraded between two
attempts: a rule that counts one more global, a value digested otherwise)
names steps as changed though the user's code may not be; it says so, and
what to do. Words only: the refusal itself is the fingerprints' (fail closed)."""

from __future__ import annotations

import functools
import hashlib
import os

from .._errortext import shell_words

KEY = "rules"  # in the manifest's `extra`; `fork` copies it (run management never imports this)

_HERE = os.path.dirname(os.path.abspath(__file__))
# The code fingerprint and the argument digests: the package that takes the
# one, the modules of the engine that take the other.
_FOLDER = os.path.join(os.path.dirname(_HERE), "_fingerprint")
_DIGESTS = ("identity.py", "content.py", "arrays.py", "ownstate.py", "code.py")


@functools.cache
def rules() -> str:
    """The digest of this durable's fingerprint rules: of the names and
    sizes of the files that make them (an edit that keeps every size is
    missed: the words are left out, never a refusal made or kept); "" when
    they cannot be listed, which claims nothing. A stat per file, once a
    process (~0.4 ms; their text read and hashed took 2 ms, paid by each
    process that starts a run)."""
    try:
        with os.scandir(_FOLDER) as found:
            sizes = [f"{e.name}:{e.stat().st_size}" for e in found if e.name.endswith(".py")]
        sizes += [f"_core/{n}:{os.stat(os.path.join(_HERE, n)).st_size}" for n in _DIGESTS]
    except OSError:
        return ""
    return hashlib.blake2b("\0".join(sorted(sizes)).encode(), digest_size=6).hexdigest()


def rules_note(recorded: object, run_id: str) -> str:
    """What a refusal of run `run_id` adds when the rules `recorded` in its
    manifest are not this durable's (None: a durable before they were
    noted): the change it names may be durable's, and what to do then."""
    now = rules()
    if not now or recorded == now:
        return ""
    if recorded is None:
        who = (
            "This run was recorded by an older durable (one that did not note its fingerprint rules); "
            "if durable was upgraded since and you did not change that code, the difference is "
            "durable's fingerprint rules, not your code"
        )
    else:
        who = (
            f"This run was recorded by another version of durable, whose fingerprint rules differ "
            f"from this one's ({recorded} then, {now} now): if you did not change that code, the "
            "difference is durable's, not your code"
        )
    return (
        f"{who}. Then start fresh (restart=True / --restart), or re-run from the first step that "
        "differs (on_change='rerun' / --on-change rerun: the steps before it are kept); to keep "
        f"run {run_id!r} as it is, do that on a copy: `durable {shell_words('fork', run_id)} --at POS`."
    )
