"""The steps of tests/test_peer_ports_twentysecond.py, in a module of their
own: a step looking modules up by name counts its own module whole, and
the test module's is large (its fingerprint was most of the tests' CPU)."""

from __future__ import annotations

import importlib
import pkgutil
import pydoc
from typing import Any

import durable

CALLS: dict[str, int] = {}


@durable.step
def by_import(module: str, q: str) -> str:  # PraisonAI's load_from_module(module_path)
    CALLS["by_import"] += 1
    return str(importlib.import_module(module).search(q))


@durable.step
def by_entrypoint(entrypoint: str, q: str) -> str:  # "tools:search", as Prefect's entrypoints
    CALLS["by_entrypoint"] += 1
    return str(pkgutil.resolve_name(entrypoint)(q))


@durable.step
def by_target(cfg: dict[str, Any], q: str) -> str:  # Hydra's `_target_`, located
    CALLS["by_target"] += 1
    return str(pydoc.locate(cfg["_target_"])(q))  # type: ignore[misc]


@durable.step
def by_node(package: str, node: str, q: str) -> str:  # a graph's node built from its name
    CALLS["by_node"] += 1
    return str(importlib.import_module(f"{package}.{node}").search(q))


@durable.workflow
def specialist(module: str, q: str) -> str:  # the agent a handoff goes to: a child run
    return by_import(module, q)


@durable.step(cache=True)
def cached_tool(module: str, q: str) -> str:
    CALLS["cached_tool"] += 1
    return str(importlib.import_module(module).search(q))


@durable.step
def send(entrypoint: str) -> str:  # one node of a fan-out, by its target's name
    CALLS["send"] += 1
    return str(pkgutil.resolve_name(entrypoint)("x"))


class Agent:
    """PraisonAI's `Agent(name=..., tools=...)`: its tools' module by name."""

    def __init__(self, name: str, tools_module: str) -> None:
        self.name, self.tools_module = name, tools_module

    @durable.step
    def act(self, q: str) -> str:
        CALLS["act"] += 1
        return str(importlib.import_module(self.tools_module).search(q))
