"""The `durable` command line: list, show, remove, gc and fork runs (run management only) and run workflows (the API)."""

from .main import main

__all__ = ["main"]
