"""The run core: plans and their drivers, the live run, replay of records, retries, identity of calls and a run's life."""
