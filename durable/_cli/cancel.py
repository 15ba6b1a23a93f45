"""`durable cancel RUN`: mark a run cancelled (run management only: the
engine and the workflow's code are never loaded)."""

from __future__ import annotations

import argparse
import json
import sys

from .._errortext import id_word
from .._manage.cancel import cancel_run
from .._manage.owners import find_workflow
from .._storage.base import Store
from .format import iso, local


def cmd_cancel(args: argparse.Namespace, store: Store) -> int:
    workflow = find_workflow(store, args.run_id, args.workflow)
    done = cancel_run(store, workflow, args.run_id)
    if args.json:
        # `since`: when an earlier cancel did it (this one changed nothing), else null.
        doc = {"workflow": workflow, "runId": args.run_id, "status": done.status, "since": iso(done.since)}
        print(json.dumps(doc | ({"holder": done.holder} if done.holder else {}), indent=2))
    elif done.since is not None:  # a second cancel: the first did it
        print(f"run {id_word(args.run_id)} of {workflow} was already cancelled (at {local(done.since)}); "
              "nothing changed", file=sys.stderr)  # fmt: skip
    elif done.status == "cancelled":
        print(f"run {id_word(args.run_id)} of {workflow} cancelled", file=sys.stderr)
    else:
        print(
            f"run {id_word(args.run_id)} of {workflow}: cancel requested; its holder ({done.holder}) "
            f"looks for the mark at each step boundary (at most every {store.cancel_poll:g} s "
            "on this store, unless it runs with DURABLE_CANCEL_POLL set), in a durable sleep "
            "or retry delay, and at the run's end, and ends it `cancelled` there (a step "
            "it starts before its next look still runs; a run already past its end completes)",
            file=sys.stderr,
        )
    return 0
