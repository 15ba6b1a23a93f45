"""Which fingerprint rules made a run's fingerprints: a digest of the source
of durable's modules that take them, noted in each attempt's manifest. A
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
    """The digest of this durable's fingerprint rules; "" when its source
    cannot be read (installed without it), which claims nothing. Read once
    a process (~2 ms), by the first attempt it starts or refuses."""
    try:
        files = [os.path.join(_FOLDER, n) for n in sorted(os.listdir(_FOLDER)) if n.endswith(".py")]
        files += [os.path.join(_HERE, n) for n in _DIGESTS]
        digest = hashlib.blake2b(digest_size=6)
        for path in files:
            with open(path, "rb") as f:
                digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    except OSError:
        return ""
    return digest.hexdigest()


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
