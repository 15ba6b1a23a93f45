"""Which workflow a run id belongs to, for the commands given a run id alone
(`durable show RUN`, `rm`, `cancel`)."""

from __future__ import annotations

from .._errortext import shell_words
from .._storage.base import Store
from .._storage.keycheck import check_key_part
from ..errors import ConfigurationError, RunNotFoundError
from .missing import resembling, unknown_workflow
from .reads import reading_run, run_objects
from .runs import not_found


def find_workflow(
    store: Store, run_id: str, workflow: str | None = None, *, leftovers: bool = False
) -> str:
    """The workflow a run id belongs to; an error when none or several.
    With `leftovers`, a run folder without a manifest counts too, as it
    does for `delete_run`: what a fork or a removal killed half-way left
    (a manifest is a fork's last write), which only `durable rm` clears."""

    def owns(w: str, leftovers: bool = leftovers) -> bool:
        with reading_run(w, run_id):
            if leftovers:
                return bool(run_objects(store, w, run_id))
            return store.load_manifest(w, run_id) is not None

    check_key_part("run id", run_id)
    if workflow is not None:
        check_key_part("workflow name", workflow)
        if not owns(workflow):
            unknown = unknown_workflow(store, workflow)
            if not unknown:  # the run id may be another workflow's: `not_found` names it
                raise not_found(store, workflow, run_id)
            missing = RunNotFoundError(workflow, run_id, store.url)
            # "Check the run id" misled when the name was the typo
            missing.args = (f"no run {run_id!r} of workflow {workflow!r} in store "
                            f"{store.url}: that workflow has no runs there; {unknown}",)  # fmt: skip
            raise missing
        return workflow
    workflows = store.workflows()
    owners = [w for w in workflows if owns(w)]
    if not owners:
        missing = RunNotFoundError("(any)", run_id, store.url)
        missing.args = (f"no run {run_id!r} in store {store.url}; {resembling(store, workflows, run_id)}",)
        if not leftovers and any(owns(w, True) for w in workflows):  # a listing each, when none owns it
            missing.args = (f"{missing.args[0]}. A removal or a fork cut short left objects of a run {run_id!r} "
                            f"there, without a manifest (no call replays them): `durable {shell_words('rm', run_id)}` "
                            "removes them",)  # fmt: skip
        raise missing
    if len(owners) > 1:
        raise SeveralWorkflows(run_id, owners)
    return owners[0]


class SeveralWorkflows(ConfigurationError):
    """A run id that several workflows have: the command line prints the
    command again with each `--workflow` (`durable.cli.common.print_error`)."""

    def __init__(self, run_id: str, workflows: list[str]) -> None:
        self.run_id, self.workflows = run_id, workflows
        super().__init__(f"run id {run_id!r} exists in several workflows ({', '.join(workflows)}); "
                         "name one with --workflow")  # fmt: skip

