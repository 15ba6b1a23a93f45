"""A `DURABLE_*` variable set to a value durable refuses, as the `durable`
command meets it: a command that only reads (`runs`, `show`, `cache ls`,
`gc --dry-run`) warns and still reads, since looking at the runs is how one
finds out what went wrong; one that writes refuses before writing anything,
as the library refuses the run."""

from __future__ import annotations

import argparse

from .._errortext import and_list, warn
from .._settings import PRINTED, bad_variables, look_at_environment
from ..errors import ConfigurationError
from .common import command

# What the command opens its store with instead of a bad variable's value:
# nothing is written, and a pickle is never loaded on a word that may have
# meant "false" (fail closed).
_INSTEAD = {"DURABLE_DURABILITY": ("durability", "fsync"), "DURABLE_ALLOW_PICKLE": ("allow_pickle", False)}


def reads_only(args: argparse.Namespace) -> bool:
    if args.command == "gc":
        return bool(args.dry_run)
    return args.command in ("runs", "show") or getattr(args, "cache_command", None) == "ls"


def checked_environment(args: argparse.Namespace, runs_code: bool) -> dict[str, object]:
    """The store options this command opens its store with instead of a bad
    variable's (none when every variable is good); a ConfigurationError
    naming each bad one when the command writes. `runs_code`: it loads the
    engine, which warns of a bad DURABLE_LOG or DURABLE_PROGRESS itself."""
    bad = {v: m.removesuffix("; fix or unset it") for v, m in bad_variables().items()}
    # Where the runs are, not how to write them: every command's store says
    # it (unless --store is given), reading or writing.
    bad.pop("DURABLE_STORE", None)
    bad.pop("DURABLE_TRACEBACK", None)  # how an error is shown: said as the library says it, once
    look_at_environment()
    printed = [bad.pop(v) for v in PRINTED if v in bad]  # what is printed never stops a command
    action = getattr(args, "cache_command", None)  # `cache ls`, `cache clear`
    name = f"`{command(args)} {args.command}{f' {action}' if action else ''}`"
    if bad and not reads_only(args):
        raise ConfigurationError(
            f"{'; '.join(bad.values())}. {name} writes to the store: refused before anything was "
            f"written; fix or unset {and_list(bad)} (`durable runs` and `durable show` only read, "
            "and still work)"
        )
    for variable, text in bad.items():
        instead = ", and loads no pickled value" if variable == "DURABLE_ALLOW_PICKLE" else ""
        warn(f"{text}; ignored by {name}, which only reads{instead}; fix or unset it")
    for text in [] if runs_code else printed:
        warn(f"{text}; it is ignored: fix or unset it")
    return dict(_INSTEAD[v] for v in bad if v in _INSTEAD)
