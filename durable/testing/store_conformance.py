"""The store conformance suite: the pytest tests a store must pass for
durable to run on it, for a third-party backend to run against itself (as
fsspec's abstract tests are run by each filesystem). durable's own stores
(memory, local, S3) pass it in durable's test suite.

Subclass `StoreConformance` in a test module, under a name pytest collects,
and override the `opener` fixture: a picklable callable that opens the same,
initially empty place again, as another client or process would:

    import functools, pytest, durable
    from durable.testing.store_conformance import StoreConformance

    def open_mine(path, **options):
        return durable.open_store(MyKeyStore(path), **options)

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def opener(self, tmp_path):
            return functools.partial(open_mine, str(tmp_path / "db"))

The opener takes the store options (`signing_key`, `blob_threshold`,
`lease_ttl`, ...) and passes them to `open_store`. Set
`shared_across_processes = False` on the class for a store that lives in
one process, `leases_expire = False` for one whose lease is an OS lock.
Needs pytest; second processes run with this process's `sys.path`."""

from __future__ import annotations

from ._base import Opener
from ._engine import EngineChecks
from ._leases import LeaseChecks
from ._primitives import PrimitiveChecks
from ._runs import RunChecks

__all__ = ["Opener", "StoreConformance"]


class StoreConformance(PrimitiveChecks, RunChecks, LeaseChecks, EngineChecks):
    """Every check of the suite; see the module docstring."""
