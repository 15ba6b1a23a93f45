"""Why a cached step ran without its cache, told once per step and process.

A call whose key cannot be established (`cachekey.call_key` gives none: a
secret among its arguments, an argument without a reproducible digest, a
captured value of either kind) just runs, and is neither served nor
stored. That is the safe outcome, but a silent one: a cached LLM call given
its API key as an argument ran on every call, and nothing said so. The
reason is looked for only then, by the same digest rule the key uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errortext import warn
from .cachekey import cache_digest, holds_secret

if TYPE_CHECKING:
    from .spec import StepSpec

# (id of a spec, which warning) already told (held with the spec: a spec
# lives as long as its step, and a redefined step is told again, which is
# right). By warning: the first told silenced the other, and a step once
# called with a lock then ran uncached on a cluster without a word.
_told: dict[tuple[int, str], StepSpec] = {}


def tell_uncached(spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Warn, the first time for this step, that a call of it ran without
    its cache, naming the argument that kept it out where one did."""
    if _first(spec, "call"):
        warn(
            f"step {spec.name} ran without its cache (its output is neither served nor kept): "
            f"{_reason(spec, args, kwargs)}",
        )


def tell_written(spec: StepSpec, names: tuple[str, ...]) -> None:
    """Warn, the first time for this step, that it runs without its cache
    because it writes module-level values another step reads (`cachestate.state_writes`)."""
    if _first(spec, "written"):
        shown = ", ".join(names)
        warn(
            f"step {spec.name} writes {shown}, which another step or workflow of its module "
            "reads: it runs without its cache (its output is neither served nor kept), since "
            "a cache hit returns the output but cannot redo that write. Return the new state "
            "from the step and pass it on instead, to cache it",
        )


def tell_elsewhere(spec: StepSpec | None, executor: object) -> None:
    """Warn, the first time for this cached step, that `loop_over` sends its
    items to workers in other processes (any executor but a thread pool),
    which run its body without the cache: a silent `cache=True` on a Dask
    cluster computed every item every time."""
    import concurrent.futures as cf  # here: a fan-out has it loaded, a plain run need not

    if spec is None or spec.cache is None or isinstance(executor, cf.ThreadPoolExecutor):
        return
    where = "a " + (type(executor).__name__ if isinstance(executor, cf.Executor) else "Dask cluster")
    if _first(spec, "elsewhere"):
        warn(
            f"step {spec.name} runs without its cache in this loop_over (its outputs are "
            f"neither served nor kept): the items go to {where}, whose workers do not have "
            "the run's store (its signing key, allow_pickle). Give loop_over a "
            "ThreadPoolExecutor, or no executor, to use the cache",
        )


def _first(spec: StepSpec, which: str) -> bool:
    if _told.get((id(spec), which)) is spec:
        return False
    if len(_told) >= 1024:  # steps made again and again (a notebook, a factory)
        _told.clear()
    _told[id(spec), which] = spec
    return True


def _reason(spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    signature, option = spec.signature, spec.cache
    # Digested only without a key function, and not when left out of the key.
    skipped = option.ignored if option is not None and option.key is None else None
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            bound = None
        for name, value in bound.arguments.items() if bound is not None else ():
            if holds_secret(value):
                return (
                    f"argument {name!r} holds a durable.redact() value, which never enters the "
                    "cache (the output may be made of it). Read the secret inside the step "
                    "(os.environ, a secrets manager) instead of passing it"
                )
            if skipped is None or name in skipped:
                continue
            if cache_digest(None, (value,), {}, spec.name) is None:
                return (
                    f"argument {name!r} ({type(value).__qualname__}) has no reproducible digest "
                    "(an open file, a lock, a socket, nesting too deep). Pass what identifies "
                    "it instead (a path, a name), or leave it out of the key with "
                    "Cache(ignore=...) or Cache(key=...)"
                )
    return (
        "a value its closure captured, or what its key function was given, holds a "
        "durable.redact() value or has no reproducible digest"
    )
