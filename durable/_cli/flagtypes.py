"""The types of the `durable` command's flag values: each turns what was
typed into the value, or says what is wrong as argparse's usage error."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from .._settings import check
from ..errors import ConfigurationError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def word_of(name: str, flag: str) -> Callable[[str], str]:
    """The type of a flag that takes one of a setting's words (`--durability`,
    `--on-change`): the library's check, so `--durability Batch` is batch
    as `durability="Batch"` and `DURABLE_DURABILITY=Batch` are."""

    def word(text: str) -> str:
        try:
            return str(check(name, text, flag))
        except ConfigurationError:  # argparse names the flag and the choices
            return text  # not among the choices: argparse refuses it

    word.__name__ = name  # argparse's "invalid <name> value" if ever said
    return word


def store_url(text: str) -> str:
    # The library's rule (an empty store is refused), said as a usage error.
    try:
        return str(check("store", text, "the store URL"))
    except ConfigurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def count(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0")
    return value


def age(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw]?)", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age like 90s, 30m, 12h, 7d or 2w")
    number, unit = match.groups()
    if not unit:  # `--older-than 7` meant as a week would remove what is 7 seconds old
        raise argparse.ArgumentTypeError(
            f"{text!r} has no unit: say {number}d for days, or {number}w, {number}h, "
            f"{number}m, {number}s"
        )
    return float(number) * _UNITS[unit]
