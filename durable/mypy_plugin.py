"""A mypy plugin: `@durable.workflow` on a generic `def` is a `Workflow`.

The decorator's overloads try `Callable[P, Coroutine[Any, Any, R]]` (an
`async def`, giving an `AsyncWorkflow`) first. mypy solves a generic
function's own type variable to fit it: `def echo(x: T) -> T` matched with
`T = Coroutine[Any, Any, R]`, so `echo(1) + 1` was an error and `await echo(1)`
was not. Pyright does not do this, and no ordering of the overloads tells the
two apart for mypy. The plugin decides as the decorator does at run time
(`inspect.iscoroutinefunction`): a function written with `def` never takes the
async overload. Enabled by `plugins = ["durable.mypy_plugin"]` in [tool.mypy].
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.checker import TypeChecker
from mypy.nodes import ARG_POS, FuncItem, TempNode
from mypy.plugin import FunctionContext, MethodContext, Plugin
from mypy.types import CallableType, Instance, Overloaded, Type, get_proper_type

# The decorator without options, and the one `workflow(name=...)` returns.
DECORATOR = "durable._api.decorate.workflow"
WITH_OPTIONS = "durable._api.decorate._WorkflowDecorator.__call__"
WORKFLOW = "durable._api.workflow.Workflow"
ASYNC_WORKFLOW = "durable._api.workflow.AsyncWorkflow"


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


class DurablePlugin(Plugin):
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return as_def if fullname == DECORATOR else None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return as_def if fullname == WITH_OPTIONS else None


def plugin(version: str) -> type[Plugin]:
    return DurablePlugin
