"""What to say when a run or a workflow is not where it was looked for: a
local store's folder that is not there, a run id that resembles others or
names a workflow, a workflow name that resembles one with runs."""

from __future__ import annotations

import itertools
import os

from .._errortext import and_list, near, near_name, shell_words
from .._settings import from_environment
from .._storage.base import Store
from .._storage.files import normalise
from .._storage.keystore import BackendStore
from ..errors import RunNotFoundError


def no_folder(store: Store) -> str | None:
    """What to say when a local store's folder is not there (a typo in
    --store, or a relative $DURABLE_STORE read from another working folder:
    `runs` in ~/a and in ~/b are two stores); None when it is."""
    path = os.path.expanduser(store.url)  # as the store reads it: `~/runs` quoted is $HOME/runs
    if "://" in store.url or os.path.isdir(path):
        return None
    where = f" ({path})" if path != store.url else "" if os.path.isabs(path) else (
        f" ({os.path.abspath(path)}: a relative path is read from the working folder)"
    )
    given = "--store, store=, $DURABLE_STORE"
    here = next((top for top in _folders(".", 20) if _holds_runs(top)), None)
    there = f"; {here} here holds runs: `durable {shell_words('--store', here, 'runs')}` lists them" if here else ""
    return f"there is no such folder{where}; check the store's path ({given}){there}"


def _holds_runs(folder: str) -> bool:
    """Whether folder is a local store (a script's `configure(store=
    "team-runs")`, which no command reads): a run's manifest two levels
    down, among a few folders of each level, so that a big tree is no walk."""
    return any(os.path.isfile(os.path.join(run, "run")) for w in _folders(folder, 20) for run in _folders(w, 5))


def _folders(path: str, most: int) -> list[str]:
    try:
        with os.scandir(path) as entries:
            found = (e.path for e in entries if e.is_dir(follow_symlinks=False))
            return [os.path.relpath(p) if path == "." else p for p in itertools.islice(found, most)]
    except OSError:
        return []


def resembling(store: Store, workflows: list[str], run_id: str) -> str:
    """What to do about a missing run id: the ids of the store it resembles
    (misspelt), or the workflow it names (`durable show release_notes`)."""
    missing = no_folder(store)
    if missing:
        return missing
    named = [w for w in workflows if run_id in (w, w.rpartition(".")[2])]
    if named:
        return f"{run_id} is a workflow, not a run id: `durable {shell_words('runs', named[0])}` lists its runs"
    below = "" if workflows else store_below(store) or store_beside(store)
    if below:
        return below
    near = near_ids(run_id, {r for w in workflows for r in store.runs(w)})
    mean = f"did you mean {' or '.join(near)}? " if near else ""
    return f"{mean}`durable runs` lists its runs"


def near_ids(run_id: str, ids: set[str]) -> list[str]:
    """The run ids `run_id` may be a misspelling of: in another case first
    (a short id, `R1` for `r1`, is never close enough for difflib), then
    the ids it is part of (`0c91c8232941` of `flow.job-0c91c8232941`, as a
    commit's hash is typed in part; four characters at least: `r` is part
    of most ids), else close."""
    import difflib  # a name not found only: every command that read runs loaded it

    near = sorted(i for i in ids if i.casefold() == run_id.casefold())
    part = [] if len(run_id) < 4 else sorted(i for i in ids if run_id.casefold() in i.casefold())
    return near or part[:3] or difflib.get_close_matches(run_id, ids, n=3, cutoff=0.8)


def near_runs(store: Store, workflow: str, run_id: str, said: str) -> str:
    """`said`, a RunNotFoundError's text, with the ids `run_id` may be meant
    for among the runs of the workflow and of the same function named the
    other way (`ca.job` as a script, `job` imported: a resume continues
    either's), and the listing named as one that shows them."""
    kin = [w for w in store.workflows() if w == workflow or w.endswith(f".{workflow}") or workflow.endswith(f".{w}")]
    if kin and workflow not in kin:  # `durable runs job` lists none of `ca.job`'s
        said = said.replace(f"`durable {shell_words('runs', workflow)}`", f"`durable {shell_words('runs', kin[0])}`")
    near = near_ids(run_id, {r for w in kin for r in store.runs(w)})
    return f"{said} Did you mean {and_list(map(repr, near), 'or')}?" if near else said


def unknown_workflow(store: Store, workflow: str) -> str | None:
    """None when `workflow` has runs in the store; else what to say of the
    name (a typo, or the function's bare name for `flow.pipeline`): the one
    it resembles, and the names that have runs."""
    names = store.workflows()
    if workflow in names:
        return None
    near = near_name(workflow, names)
    mean = f"did you mean {near[0]}? " if near else ""
    return f"{mean}workflows with runs: {', '.join(names) or 'none'}"


def no_runs_of(store: Store, workflow: str) -> RunNotFoundError | None:
    """The error of a look at the runs of a workflow name no run has (a typo,
    the function's bare name): one for `gc(workflow=)` and `durable gc`,
    which returned [] (exit 0) as for a workflow with nothing to remove."""
    unknown = unknown_workflow(store, workflow)
    if unknown is None:
        return None
    missing = RunNotFoundError(workflow, "(any)", store.url)
    missing.args = (f"no runs of workflow {workflow!r} in {store.url}; {no_folder(store) or unknown}",)
    return missing


def store_below(store: Store) -> str:
    """What to say when the store holds no run while a folder right under
    its root does (`--store .` for `./.durable`, `s3://team` for
    `s3://team/durable`): that folder and the listing of it; "" otherwise."""
    by_top: dict[str, list[str]] = {}
    for key in store.list(""):
        top, sep, rest = key.partition("/")
        if sep:
            by_top.setdefault(top, []).append(rest)
    below = [top for top, keys in sorted(by_top.items()) if store.manifest_keys(keys)]
    if not below:
        return ""
    url = f"{store.url.rstrip('/')}/{below[0]}"
    return f"{url} holds runs: `{shell_words('durable', '--store', url, 'runs')}` lists them"


def store_beside(store: Store) -> str:
    """What to say when an object store's prefix holds nothing while one
    beside it of a near name holds something (`s3://team/durabl` for
    `s3://team/durable`: a typo in --store, as a local folder that is not
    there is, `no_folder`): that one and the listing of it; "" otherwise."""
    fs, url = getattr(store, "fs", None), store.url.rstrip("/")
    head, _, name = url.rpartition("/")
    if fs is None or "://" not in url or head.endswith(":/") or store.list(""):
        return ""  # not an object store, a bucket's root (named by the bucket alone), or not empty
    try:  # one listing, of the folder above: what is beside it
        beside = [str(p).rstrip("/").rpartition("/")[2] for p in fs.ls(head.partition("://")[2], detail=False)]
    except (OSError, ValueError):
        return ""
    meant = near(name, [b for b in beside if b != name])
    there = f"{head}/{meant[0]}" if meant else ""
    return f"nothing is stored under {url}; did you mean {there}? (`{shell_words('durable', '--store', there, 'runs')}` lists its runs)" if meant else ""


def renamed_script(workflow: str, others: list[str]) -> str:
    """What a run of the same function in another script says: the script
    renamed since (flow.py to flow2.py), whose function is another workflow."""
    module, _, fn = workflow.rpartition(".")
    old = next((w.rpartition(".")[0] for w in others if w.rpartition(".")[2] == fn and module), "")
    if not old:
        return ""
    was, now = f"{old.rpartition('.')[2]}.py", f"{module.rpartition('.')[2]}.py"
    return "" if was == now else f" If {was} was renamed {now}, its {fn} is another workflow: rename it back to go on with this run."


def not_the_commands(store: Store) -> bool:
    """Whether the store of the script's workflow is another than the one
    the other commands read without --store ($DURABLE_STORE, ./.durable)."""
    if isinstance(store, BackendStore):  # the script's own object: no URL to give
        return False
    return normalise(store.url) != normalise(str(from_environment("store")))  # `file://` too
