"""The public API: `workflow`, `step`, `loop_over`, `sleep`, `suspend`, child runs and graceful stop; `durable/__init__` re-exports it."""
