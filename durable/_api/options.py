"""A workflow's options (the decorator's, then `with_options`), checked once
when the workflow is made: a bad value is a ConfigurationError before
anything runs, never a TypeError deep in a run or a silent other meaning."""

from __future__ import annotations

import dataclasses
import numbers
import os
from typing import Any

from .._core.run import Options
from .._settings import check
from .._storage.durability import check_level
from .._storage.keycheck import check_key_part
from ..errors import ConfigurationError


def check_options(options: Options) -> Options:
    """`options`, each word in the form the check gives it (`"Batch"` is
    `"batch"`: a level compared later is one of the levels), else a
    ConfigurationError."""
    given = options.run_id  # refused here, at the line that gives it, not at the first call
    if given is not None and not callable(given):
        check_key_part("run id", given)
    if options.store is not None and not callable(getattr(options.store, "get", None)):  # a KeyStore
        check("store", options.store, "store=")  # 5 or "": refused here, not at the first call
    words: dict[str, Any] = {}
    if options.on_change is not None:  # None: configure(), $DURABLE_ON_CHANGE, "refuse"
        words["on_change"] = check("on_change", options.on_change, "on_change")
    keep = options.keep_last
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ConfigurationError(f"keep_last must be a whole number >= 1, not {keep!r}")
    wait = options.wait  # a NaN waited as long as the holder ran, "5" was a bare TypeError
    if wait is not None and not (isinstance(wait, numbers.Real) and wait >= 0):
        raise ConfigurationError(
            f"wait= takes a number of seconds >= 0 (math.inf: as long as the run is held), "
            f"not {wait!r}"
        )
    if options.durability is not None:
        words["durability"] = check_level(options.durability, "durability")
    where = options.progress_file  # 5 failed as a bare TypeError once the run had started
    if where is not None and not isinstance(where, (str, os.PathLike)):
        raise ConfigurationError(f"progress_file= takes a file path, not {where!r}")
    for flag in ("restart", "rebase"):  # restart="no", a truthy str, discarded the records
        if not isinstance(getattr(options, flag), bool):
            raise ConfigurationError(f"{flag}= takes True or False, not {getattr(options, flag)!r}")
    if options.restart and options.rebase:  # restart won, silently: every step ran again
        raise ConfigurationError(
            "restart=True discards the run's records and rebase=True replays them: pass one"
        )
    return dataclasses.replace(options, **words) if words else options
