"""Resume `flow.py`'s run on `store/` (the test copies both first) once per
argument given (the `shift` of each call), and print the steps each call
ran again (FLOW_COUNTS), one line a call."""

import os
import sys

from flow import flow

import durable

counts = os.environ["FLOW_COUNTS"]
for shift in sys.argv[2:]:
    try:
        # The definition covers durable's own code, which changed since: "rerun"
        # replays each step whose fingerprint and arguments match its record and
        # runs the first that does not, and every one after it.
        flow.with_options(store=sys.argv[1], on_change="rerun")(shift=int(shift))
    except durable.Suspended:
        pass
    ran = open(counts).read().split() if os.path.exists(counts) else []
    print(" ".join(ran) or "-")
    if os.path.exists(counts):
        os.remove(counts)
