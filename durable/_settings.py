"""Project-level defaults: `durable.configure(...)` and the `DURABLE_*`
environment variables, resolved in one place (`setting`).

The order, first found wins: the explicit option (decorator, `with_options`,
a call or command-line flag) > `configure()` > the environment variable >
the built-in default. Values are read when a run needs them, not when a
function is decorated, so `configure()` in a notebook's first cell applies
to workflows defined before it. This module imports only `errors`, so
every layer may ask it."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from ._calls import TRACEBACKS, keywords
from ._errortext import warn
from .errors import ConfigurationError

# Allowed values of the settings that take a word; `store` takes any URL or folder.
CHOICES: dict[str, tuple[str, ...]] = {
    "on_change": ("refuse", "rerun"),
    "durability": ("fsync", "batch", "none"),
    "log": ("off", "error", "warning", "info", "debug"),
}
ENV = {
    "store": "DURABLE_STORE",
    "on_change": "DURABLE_ON_CHANGE",
    "durability": "DURABLE_DURABILITY",
    "log": "DURABLE_LOG",
}
DEFAULTS: dict[str, Any] = {
    "store": ".durable",
    "on_change": "refuse",
    "durability": "fsync",
    "log": "off",
}

# Every DURABLE_* variable durable reads (docs/configuration.md has the table).
KNOWN_VARIABLES = (
    *ENV.values(),
    "DURABLE_SIGNING_KEY",
    "DURABLE_ALLOW_PICKLE",
    "DURABLE_PROGRESS",
    "DURABLE_PROGRESS_FILE",
    "DURABLE_CANCEL_POLL",
    "DURABLE_MAX_RECOVERY_ATTEMPTS",
    "DURABLE_TRACEBACK",
)

# Where a setting's words are explained, for its refusal.
_SEE = {"durability": " (see docs/storage.md, durability levels)"}

_UNSET: Any = object()
_configured: dict[str, Any] = {}
_watchers: list[Callable[[str], None]] = []


@keywords("configure")
def configure(
    *,
    store: Any = _UNSET,
    on_change: str | None = _UNSET,
    durability: str | None = _UNSET,
    log: str | None = _UNSET,
) -> None:
    """Set process-wide defaults for every workflow that does not set its
    own: `store` (a folder, an fsspec URL or a `Store`), `on_change`
    ("refuse" or "rerun"), `durability` ("fsync", "batch" or "none") and
    `log` ("off", "error", "warning", "info" or "debug"). They win over the
    `DURABLE_*` environment variables; an option given on the decorator,
    `with_options` or the command line wins over them. `None` forgets a
    default (the environment variable, else the built-in default, applies
    again); an argument not passed is left as it was."""
    given = {"store": store, "on_change": on_change, "durability": durability, "log": log}
    changes = {k: v for k, v in given.items() if v is not _UNSET}
    checked = {k: v if v is None else check(k, v, k) for k, v in changes.items()}
    for name, value in checked.items():  # all checked first: a bad one changes nothing
        if value is None:
            _configured.pop(name, None)
        else:
            _configured[name] = value
    for name in checked:
        for watcher in list(_watchers):
            watcher(name)


def setting(name: str, explicit: Any = None) -> Any:
    """The value of one setting: `explicit` when given (an option set on
    the decorator, `with_options`, a call or a flag), else `configure()`'s,
    else the environment variable's, else the built-in default. Every
    value is checked; a bad one raises `ConfigurationError`."""
    if not _told[0]:  # at the first read: the warning then points at the user's call
        look_at_environment()
    if explicit is not None:
        return check(name, explicit, name)
    if name in _configured:
        return _configured[name]
    return from_environment(name)


def from_environment(name: str) -> Any:
    """A setting as a process that runs no `configure()` reads it (the
    `durable` command): the environment variable's, else the default."""
    raw = os.environ.get(ENV[name])
    text = (raw or "").strip()
    if text:
        return check(name, text, ENV[name])
    if raw is not None and name == "store":  # `DURABLE_STORE=$RUNS`, RUNS unset: refused as --store "" is
        return check(name, raw, ENV[name])
    return DEFAULTS[name]


# The words of a yes/no variable (`DURABLE_ALLOW_PICKLE`, `DURABLE_PROGRESS`).
NO, YES = ("0", "false", "no", "off"), ("1", "true", "yes", "on")


def env_flag(variable: str, default: bool) -> bool:
    """A yes/no environment variable: `default` when unset or empty. Any
    other word is a `ConfigurationError`: a typo (`DURABLE_ALLOW_PICKLE=flase`)
    must not quietly leave a safety switch at its default."""
    text = os.environ.get(variable, "").strip().lower()
    if not text:
        return default
    if text in NO + YES:
        return text in YES
    raise ConfigurationError(
        f"{variable} must be one of {', '.join(NO)} (no) or {', '.join(YES)} (yes), "
        f"not {text!r}; fix or unset it"
    )


def env_number(variable: str, *, whole: bool, meaning: str = "") -> float | None:
    """A number >= 0 from `variable` (`whole`: a whole number), None when
    unset or empty (as every variable); any other text is a ConfigurationError."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    try:
        value = float(text) if not whole else int(text) if text.isdigit() else -1
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        kind = "a whole number" if whole else "a number of seconds"
        raise ConfigurationError(f"{variable} must be {kind} >= 0{meaning}, not {text!r}; fix or unset it")
    return value


def env_word(variable: str, words: tuple[str, ...]) -> str | None:
    """One of `words` (in any case) from `variable`, None when unset or empty;
    any other text is a ConfigurationError (`DURABLE_TRACEBACK=ful` was as
    silent as `short`)."""
    text = os.environ.get(variable, "").strip()
    if text and text.lower() not in words:
        raise ConfigurationError(f"{variable} must be {' or '.join(words)}, not {text!r}; fix or unset it")
    return text.lower() or None


# What each variable's value must be, read as durable reads it (the rest
# take any text). Printed only: a bad one warns and durable keeps going.
_READERS: dict[str, Callable[[], object]] = {
    **{variable: functools.partial(from_environment, name) for name, variable in ENV.items()},
    "DURABLE_ALLOW_PICKLE": lambda: env_flag("DURABLE_ALLOW_PICKLE", True),
    "DURABLE_PROGRESS": lambda: env_flag("DURABLE_PROGRESS", True),
    "DURABLE_CANCEL_POLL": lambda: env_number("DURABLE_CANCEL_POLL", whole=False),
    "DURABLE_MAX_RECOVERY_ATTEMPTS": lambda: env_number(
        "DURABLE_MAX_RECOVERY_ATTEMPTS", whole=True, meaning=" (0: no limit)"
    ),
    "DURABLE_TRACEBACK": lambda: env_word("DURABLE_TRACEBACK", TRACEBACKS),
}
PRINTED = ("DURABLE_LOG", "DURABLE_PROGRESS")


def bad_variables() -> dict[str, str]:
    """Each DURABLE_* variable set to a value durable refuses, with the
    refusal (naming the variable and the values it takes): what the
    `durable` command warns of (a command that only reads) or refuses
    (one that writes) before it starts."""
    bad: dict[str, str] = {}
    for variable, read in _READERS.items():
        try:
            read()
        except ConfigurationError as e:
            bad[variable] = str(e)
    return bad


def check(name: str, value: Any, source: str) -> Any:
    """`value` if `name` accepts it (a word in lower case: "Batch" and
    " BATCH " are "batch", from a variable, configure(), an option or a
    flag alike), else a ConfigurationError naming where it came from
    (`on_change`, `DURABLE_ON_CHANGE`, `--on-change`) and the allowed values.
    THE check of each setting's words: `durability.check_level` is this one."""
    if name not in ENV:
        raise ConfigurationError(f"unknown setting {name!r}; known: {', '.join(ENV)}")
    allowed = CHOICES.get(name)
    if allowed is not None:
        # Any case: a word means one level whoever types it (DURABLE_LOG=INFO,
        # as logging spells it); refusing it in code only was two rules.
        word = value.strip().lower() if isinstance(value, str) else value
        if word not in allowed:
            words = ", ".join(repr(a) for a in allowed)
            raise ConfigurationError(f"{source} must be one of {words}, not {value!r}{_SEE.get(name, '')}")
        return word
    if name == "store" and isinstance(value, str) and not value.strip():
        # "" would open the working folder itself as the store: refused, not guessed
        default = (
            f"unset it (unset {source}) for the default, ./.durable"
            if source == ENV[name]
            else "leave it out for the default ($DURABLE_STORE, else ./.durable)"
        )
        set_but = " is set but empty" if source == ENV[name] else " is empty"
        raise ConfigurationError(
            f"{source}{set_but}: give a folder (./runs) or a store URL "
            f"(s3://bucket/runs), or {default}; nothing was read or written"
        )
    if name == "store" and not isinstance(value, (str, os.PathLike)) and not _is_store(value):
        raise ConfigurationError(
            f"{source} must be a folder, an fsspec URL or a durable.Store, not {value!r}"
        )
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _is_store(value: Any) -> bool:
    # Duck-typed: the Store class lives in `_storage`, above this module.
    return hasattr(value, "load_manifest") and hasattr(value, "url")


def when_configured(callback: Callable[[str], None]) -> Callable[[], None]:
    """Call `callback(name)` after `configure()` changes a setting (the log
    handler follows `log=` this way); returns the way to stop."""
    _watchers.append(callback)
    return lambda: _watchers.remove(callback) if callback in _watchers else None


def warn_of_misspelt_variables() -> None:
    """A warning for each `DURABLE_*` variable that durable does not read but
    that is one typo away from one it does: `DURABLE_SIGNINGKEY` would leave
    records unsigned, `DURABLE_STOER` the runs in `./.durable`, silently.
    Other names are left alone (they may be someone else's)."""
    unknown = [n for n in os.environ if n.startswith("DURABLE_") and n not in KNOWN_VARIABLES]
    unknown = [n for n in unknown if any(_may_be_close(n, k) for k in KNOWN_VARIABLES)]
    if not unknown:
        return
    import difflib  # here, where a name may be a typo: 2% of each process's start

    for name in unknown:
        close = difflib.get_close_matches(name, KNOWN_VARIABLES, n=1, cutoff=_CUTOFF)
        if close:
            warn(
                f"{name} is set, but durable reads no such variable: did you mean "
                f"{close[0]}? It is ignored."
            )


def look_at_environment() -> None:
    """Warn, once per process (its first run, or the `durable` command's
    start), of a misspelt variable and of a word DURABLE_TRACEBACK does not
    take (shown as `short`)."""
    if _told[0]:
        return
    _told[0] = True
    warn_of_misspelt_variables()
    try:
        env_word("DURABLE_TRACEBACK", TRACEBACKS)
    except ConfigurationError as e:
        warn(f"{str(e).removesuffix('; fix or unset it')}; it is ignored (durable's own frames "
             "are left out of tracebacks): fix or unset it")  # fmt: skip


_CUTOFF = 0.85


def _may_be_close(name: str, known: str) -> bool:
    """difflib's `quick_ratio` (the characters the two share, in any order),
    which bounds the ratio `get_close_matches` keeps from above: a name
    below the cutoff for every variable (the test suite's own
    `DURABLE_TEST_SHARD`, set in each of its processes) is no typo of one,
    and difflib is not loaded to find that out."""
    shared = sum(min(name.count(c), known.count(c)) for c in set(name))
    return 2.0 * shared / (len(name) + len(known)) >= _CUTOFF


_told = [False]  # whether the variables were looked at (`setting`)
