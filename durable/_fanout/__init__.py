"""Fan-out: how a `loop_over` block runs its items (in process, on executors, on Dask) and records them."""
