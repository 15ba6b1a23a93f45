"""Fingerprints: what code a step or workflow runs, told from its source and the objects it reaches (pure stdlib)."""
