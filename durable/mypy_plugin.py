"""A mypy plugin: `@durable.workflow` on a generic `def` is a `Workflow`,
and a generic method reached through an instance keeps its parameters.

The decorator's overloads try `Callable[P, Coroutine[Any, Any, R]]` (an
`async def`, giving an `AsyncWorkflow`) first. mypy solves a generic
function's own type variable to fit it: `def echo(x: T) -> T` matched with
`T = Coroutine[Any, Any, R]`, so `echo(1) + 1` was an error and `await echo(1)`
was not. Pyright does not do this, and no ordering of the overloads tells the
two apart for mypy. The plugin decides as the decorator does at run time
(`inspect.iscoroutinefunction`): a function written with `def` never takes the
async overload. The second: `bound_generic`. Enabled by `plugins = ["durable.mypy_plugin"]` in [tool.mypy].
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.checker import TypeChecker
from mypy.nodes import ARG_POS, FuncItem, TempNode
from mypy.plugin import FunctionContext, MethodContext, Plugin
from mypy.types import (
    CallableType,
    Instance,
    Overloaded,
    Parameters,
    Type,
    UninhabitedType,
    get_proper_type,
)

# The decorator without options, and the one `workflow(name=...)` returns.
DECORATOR = "durable._api.decorate.workflow"
WITH_OPTIONS = "durable._api.decorate._WorkflowDecorator.__call__"
WORKFLOW = "durable._api.workflow.Workflow"
ASYNC_WORKFLOW = "durable._api.asyncworkflow.AsyncWorkflow"
# What reaching a step or workflow through an instance binds (its `__get__`).
DESCRIPTORS = {f"{cls}.__get__" for cls in ("durable._api.step.Step", WORKFLOW, ASYNC_WORKFLOW)}


def gives(sig: CallableType, fullname: str) -> bool:
    ret = get_proper_type(sig.ret_type)
    return isinstance(ret, Instance) and ret.type.fullname == fullname


def written_with_def(arg_types: list[list[Type]]) -> CallableType | None:
    """The one function decorated, when it is a `def` (not an `async def`).
    None when mypy cannot tell (a callable object, a partial): the overloads
    decide then."""
    if len(arg_types) != 1 or len(arg_types[0]) != 1:
        return None
    fn = get_proper_type(arg_types[0][0])
    if not isinstance(fn, CallableType) or not isinstance(fn.definition, FuncItem):
        return None
    return None if fn.definition.is_coroutine else fn


def as_def(ctx: FunctionContext | MethodContext) -> Type:
    """An AsyncWorkflow mypy chose for a `def`: what the decorator's overload
    for a `def` gives instead, checked by mypy as the call it stands for."""
    chosen = get_proper_type(ctx.default_return_type)
    fn = written_with_def(ctx.arg_types)
    is_async = isinstance(chosen, Instance) and chosen.type.fullname == ASYNC_WORKFLOW
    if not is_async or fn is None or not isinstance(ctx.api, TypeChecker):
        return ctx.default_return_type
    module, name = DECORATOR.rsplit(".", 1)
    overloads = get_proper_type(ctx.api.modules[module].names[name].type)
    assert isinstance(overloads, Overloaded), "durable.workflow lost its overloads"
    sync = next(sig for sig in overloads.items if gives(sig, WORKFLOW))
    arg = TempNode(fn, context=ctx.context)
    result, _ = ctx.api.expr_checker.check_call(sync, [arg], [ARG_POS], ctx.context)
    return result


def bound_generic(ctx: MethodContext) -> Type:
    """A generic method (`def same(self, x: T) -> T`) reached through an
    instance: mypy bound it to `[Never]` parameters (its T, free in the
    step's type, could not be matched with the first parameter taken off),
    so every call was an error. The same type with the first parameter
    taken off, T kept generic, as for a non-generic method."""
    bound, owner = get_proper_type(ctx.default_return_type), get_proper_type(ctx.type)
    if not (isinstance(bound, Instance) and isinstance(owner, Instance)) or len(bound.args) != 2:
        return ctx.default_return_type
    params = get_proper_type(owner.args[0]) if owner.args else None
    never = isinstance(get_proper_type(bound.args[0]), UninhabitedType)
    if not never or not isinstance(params, Parameters) or not params.arg_kinds:
        return ctx.default_return_type
    if not params.arg_kinds[0].is_positional():  # no first parameter to bind
        return ctx.default_return_type
    rest = params.copy_modified(
        arg_types=params.arg_types[1:],
        arg_kinds=params.arg_kinds[1:],
        arg_names=params.arg_names[1:],
    )
    return bound.copy_modified(args=[rest, owner.args[1]])


class DurablePlugin(Plugin):
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return as_def if fullname == DECORATOR else None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        if fullname in DESCRIPTORS:
            return bound_generic
        return as_def if fullname == WITH_OPTIONS else None


def plugin(version: str) -> type[Plugin]:
    return DurablePlugin
