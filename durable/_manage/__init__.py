"""Run management over a store alone: listing, history, deleting, gc and forking, without loading the engine."""
