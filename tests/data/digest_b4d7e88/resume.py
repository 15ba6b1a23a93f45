"""Run `flow.py` on `store/` (the test copies both first): it prints
"suspended", and FLOW_COUNTS names the steps that ran again."""

import sys

from flow import flow

import durable

try:
    # The workflow's definition covers durable's own code, which changed
    # since: "rerun" replays each step whose fingerprint and argument
    # digest match the record's and runs the first that does not, and
    # every one after it.
    flow.with_options(store=sys.argv[1], on_change="rerun")()
except durable.Suspended:
    print("suspended")
