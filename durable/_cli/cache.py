"""`durable cache ls|clear|prune`: the step cache from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from .._errortext import near_name
from .._manage import cache
from .._manage.cache import EntryInfo
from .._storage.base import Store
from . import format
from .common import not_there, note, nothing_there


def add_commands(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
    age: Callable[[str], float],
    typed: Sequence[str] = (),
) -> None:
    """`typed`: the command line, which the parsers' errors read (`main._Parser`)."""
    text = "look at and clean the step cache (steps with cache=True)"
    cache = sub.add_parser("cache", parents=[common], help=text, description=text)
    cache.typed = typed
    verbs = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")

    def verb(name: str, handler: Callable[..., int], help: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = verbs.add_parser(
            name, parents=[common], help=help, description=help
        )
        p.set_defaults(handler=handler)
        p.typed = typed  # type: ignore[attr-defined]
        return p

    p = verb("ls", cmd_ls, "list cache entries (of one step), most recently used first")
    p.add_argument("step", nargs="?", metavar="STEP", help="only this step's entries")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = verb("clear", cmd_clear, "remove every cache entry (of one step)")
    p.add_argument("step", nargs="?", metavar="STEP", help="only this step's entries")
    p = verb(
        "prune", cmd_prune,
        "remove entries not used for --older-than AGE, then the least recently used ones "
        "until the rest fit in --max-size; blobs that a run still refers to stay",
    )  # fmt: skip
    p.add_argument("--older-than", metavar="AGE", type=age,
                   help="remove entries last used longer ago: 90s, 30m, 12h, 7d, 2w")  # fmt: skip
    p.add_argument("--max-size", metavar="SIZE", type=_size,
                   help="keep at most this much: 500MB, 10GB, 2GiB")  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")


def _size(text: str) -> int:
    try:
        size = cache.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    # `--max-size 100` meant as 100 MB kept 100 bytes: the prune emptied the
    # cache. A bare number is refused, as a bare age is (0 is 0 in any unit).
    number = text.strip()
    if size and number.replace(".", "", 1).isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} has no unit: say {number}MB or {number}GB, or {number}B for bytes"
        )
    return size


def cmd_ls(args: argparse.Namespace, store: Store) -> int:
    infos = cache.list_entries(store, args.step)
    if args.json:
        print(json.dumps([_doc(i) for i in infos], indent=2))
    elif infos:
        print(_table(infos))
        total = cache.human_size(sum(i.size for i in infos))
        print(f"{_entries(len(infos))}, {total}", file=sys.stderr)
    elif not args.step:
        note(f"no cache entries for any step{not_there(store) or f' in {store.url}'}")
    if args.step and not infos:
        return _no_entries(store, args.step)
    _note_unverified([i for i in infos if not i.verified], "`durable cache clear` removes them")
    return 0 if infos else nothing_there(store)


def cmd_clear(args: argparse.Namespace, store: Store) -> int:
    gone, blobs = cache.clear(store, args.step)
    if args.step and not gone:
        return _no_entries(store, args.step)
    _removed("removed", gone, blobs, store)
    return 0 if gone else nothing_there(store)


def _no_entries(store: Store, step: str) -> int:
    """A step name that has no entries (a typo, a `name=` of its own) matches
    nothing: exit 2, as a run id that matches nothing does (`durable show`),
    naming the steps that have some."""
    steps = sorted({i.step for i in cache.list_entries(store)})
    near = near_name(step, steps)
    mean = f"did you mean {near[0]}? " if near else ""
    print(f"durable: no cache entries for step {step}{not_there(store) or f' in {store.url}'}; {mean}steps with entries: "
          f"{', '.join(steps) or 'none'}", file=sys.stderr)  # fmt: skip
    return 2


def cmd_prune(args: argparse.Namespace, store: Store) -> int:
    gone, blobs, skipped = cache.prune(
        store, older_than=args.older_than, max_size=args.max_size, dry_run=args.dry_run
    )
    if gone:
        print(_table(gone))
    _removed("would remove" if args.dry_run else "removed", gone, blobs, store)
    _note_unverified(skipped, "not pruned; `durable cache clear` removes them")
    return 0 if gone or skipped else nothing_there(store)


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _removed(verb: str, gone: Sequence[EntryInfo], blobs: int, store: Store) -> None:
    size = cache.human_size(sum(i.size for i in gone))
    unverified = sum(not i.verified for i in gone)
    failing = f", {unverified} failing the signature check" if unverified else ""
    swept = "" if verb.startswith("would") else f"; {blobs} blob{'s' if blobs != 1 else ''} deleted"
    if where := "" if gone else not_there(store):  # no store there: a typo in --store, not a report
        note(f"{verb} {_entries(0)}{where}")
    else:
        print(f"{verb} {_entries(len(gone))} ({size}{failing}){swept}", file=sys.stderr)


def _note_unverified(infos: Sequence[EntryInfo], what: str) -> None:
    if infos:
        note(
            f"{_entries(len(infos))} fail{'s' if len(infos) == 1 else ''} the signature check "
            "under this store's key (signed with another key, or not by durable): never "
            f"served; {what}"
        )


_UNVERIFIED = "unverified: fails the signature check"


def _table(infos: Sequence[EntryInfo]) -> str:
    note = any(not i.verified for i in infos)
    rows = [
        [
            i.step,
            i.fingerprint,
            i.digest[:12],
            cache.human_size(i.size) if i.verified else "?",
            format.local(i.created),
            format.local(i.used),
            *([("" if i.verified else _UNVERIFIED)] if note else []),
        ]
        for i in infos
    ]
    headers = ["STEP", "FINGERPRINT", "ARGUMENTS", "SIZE", "CREATED", "LAST USED"]
    return format.table([*headers, *(["NOTE"] if note else [])], rows)


def _doc(i: EntryInfo) -> dict[str, object]:
    return {
        "step": i.step,
        "fingerprint": i.fingerprint,
        "argumentDigest": i.digest,
        "size": i.size if i.verified else None,
        "created": format.iso(i.created) if i.verified else None,
        "lastUsed": format.iso(i.used) if i.verified else None,
        "key": i.key,
        "verified": i.verified,
    }
