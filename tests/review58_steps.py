"""The steps of tests/test_review58_names.py, in a module of their own (a
step looking modules up by name counts its own module whole): a tool's
module named by a configuration object that is no dict and no plain
object of the user's (argparse's and `types`' namespaces, a dataclass
with slots, a read-only or chained mapping)."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib
import types
from importlib.metadata import entry_points
from typing import Any

import durable

CALLS: dict[str, int] = {}


@dataclasses.dataclass(slots=True, frozen=True)
class SlotConfig:
    tool: str


def config(kind: str, module: str) -> Any:
    """The configuration object of `kind` naming `module` as its tool."""
    if kind == "argparse":
        return argparse.Namespace(tool=module)  # `args = parser.parse_args()`
    if kind == "simple_namespace":
        return types.SimpleNamespace(tool=module)
    if kind == "slots":
        return SlotConfig(module)
    if kind == "mapping_proxy":
        return types.MappingProxyType({"tool": module})
    return collections.ChainMap({"tool": module}, {"tool": "json"})  # overrides over defaults


def _tool(cfg: Any) -> str:
    return str(cfg["tool"] if isinstance(cfg, collections.abc.Mapping) else cfg.tool)


@durable.step
def by_config(cfg: Any, q: str) -> str:
    CALLS["by_config"] += 1
    return str(importlib.import_module(_tool(cfg)).search(q))


@durable.workflow
def agent(kind: str, module: str, q: str) -> str:
    return by_config(config(kind, module), q)


@durable.step
def by_entry_point(name: str, q: str) -> str:  # a plugin system's `entry_points(group=...)`
    CALLS["by_entry_point"] += 1
    (found,) = entry_points(group="review58.tools", name=name)
    return str(found.load()(q))


@durable.workflow
def plugin(name: str, q: str) -> str:
    return by_entry_point(name, q)
