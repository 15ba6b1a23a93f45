"""The checks of a store's options of its own (`open_store(...)`), made
when it is opened: a wrong type failed at the first write, far from the
option, or quietly weakened a safety switch."""

from __future__ import annotations

import math
import os

from .._errortext import warn
from .._settings import env_flag
from ..errors import ConfigurationError


def signing_key_of(given: object) -> bytes | None:
    """The key records are signed with: `given`, else $DURABLE_SIGNING_KEY
    (empty there means unset, as for every variable), else None."""
    if given is None:
        key = os.environ.get("DURABLE_SIGNING_KEY")
        if key == "":  # `export DURABLE_SIGNING_KEY=$(cat missing-secret)`: said, not silent
            warn("DURABLE_SIGNING_KEY is set but empty: records are written and read unsigned, "
                 "as if it were unset (did the secret fail to load?); give the key, or unset it")  # fmt: skip
        return (key or "").encode() or None
    if not isinstance(given, (str, bytes)):
        raise ConfigurationError(
            f"signing_key= takes a str or bytes key, not {given!r} ({type(given).__name__})"
        )
    if not given:  # an unset secret (`os.environ.get("KEY", "")`): unsigned, said nowhere
        raise ConfigurationError(
            "signing_key= is empty: give the key, or leave the option out (None) for "
            "unsigned records"
        )
    return given.encode() if isinstance(given, str) else given


def check_store_options(allow_pickle: object, blob_threshold: object, lease_ttl: object) -> None:
    if not isinstance(allow_pickle, bool):  # "no", a truthy string, loaded pickles
        raise ConfigurationError(
            f"allow_pickle= takes True or False, not {allow_pickle!r} "
            f"({type(allow_pickle).__name__})"
        )
    if not isinstance(blob_threshold, int) or isinstance(blob_threshold, bool) or (
        blob_threshold < 0
    ):
        raise ConfigurationError(
            f"blob_threshold= takes a whole number of bytes >= 0, not {blob_threshold!r}"
        )
    if lease_ttl is not None:
        seconds("lease_ttl", lease_ttl)


def seconds(option: str, value: object) -> float:
    """A store option's number of seconds, else a ConfigurationError. NaN
    and infinity are none: a lease that expires at NaN failed the message
    of another process's RunLockedError (a ValueError), and the timers of
    `"batch"` are kept in a heap, which one NaN disorders."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < math.inf:
        raise ConfigurationError(f"{option} must be a positive, finite number of seconds, not {value!r}")
    return float(value)


def pickles_allowed_by_env() -> bool:
    return env_flag("DURABLE_ALLOW_PICKLE", True)
