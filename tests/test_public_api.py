import durable

EXPECTED = {
    "ArtifactMissingError",
    "AsyncWorkflow",
    "Cache",
    "CacheInfo",
    "ConfigurationError",
    "CorruptRecordError",
    "DefinitionChangedError",
    "DurableError",
    "IntegrityError",
    "LeaseLostError",
    "NondeterminismError",
    "Progress",
    "Redacted",
    "Run",
    "RunContext",
    "RunInfo",
    "RunLockedError",
    "RunNotFoundError",
    "SerializationError",
    "Step",
    "StepInfo",
    "StorageError",
    "Store",
    "Suspended",
    "Workflow",
    "artifact",
    "asleep",
    "cache_info",
    "current_run",
    "gc",
    "loop_over",
    "open_store",
    "redact",
    "sleep",
    "step",
    "stop_on_signals",
    "suspend",
    "workflow",
}


def test_all_is_sorted_and_exactly_the_public_api() -> None:
    assert durable.__all__ == sorted(durable.__all__)
    assert set(durable.__all__) == EXPECTED
    public = {n for n in vars(durable) if not n.startswith("_")} - {"testing"}
    assert public == EXPECTED


def test_errors_share_one_base() -> None:
    for name in durable.__all__:
        obj = getattr(durable, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, durable.DurableError), name
