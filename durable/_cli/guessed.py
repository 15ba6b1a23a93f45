"""A command a newcomer guesses from the API's words (`durable resume r1`,
`durable ls`): the command line answers with the line that does it, for
the run typed after it in the store the command line names."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from .._errortext import program, shell_words, to_fill, waited_input
from .._manage import owners, runs
from .._storage.factory import open_store
from ..errors import RunNotFoundError
from .howto import in_session, killed_ways, restart_command, run_line, target, was_killed

# A command a newcomer guesses from the API's words: what `durable run` does
# it (a run's own line), else the command that does.
_RUNS = frozenset({"resume", "continue", "answer", "restart"})
_OTHERS = {"ls": "runs", "list": "runs", "ps": "runs", "status": "show", "history": "show",
           "inspect": "show", "log": "show", "logs": "show", "delete": "rm", "remove": "rm", "del": "rm"}  # fmt: skip
GUESSES = _RUNS | frozenset(_OTHERS)
_VALUED = frozenset({"--store", "--workflow", "-w"})  # options followed by their value


def guessed(word: str, typed: Sequence[str]) -> str:
    """What does what `durable WORD ...` meant (a word of `GUESSES`), for the
    run id typed after it, in the store the command line names."""
    words = list(typed)
    url, workflow = _given(words, "--store"), _given(words, "--workflow") or _given(words, "-w")
    durable = program() if url is None else f"{program()} {shell_words('--store', url)}"
    after = words[words.index(word) + 1 :] if word in words else []
    run_id = next((w for i, w in enumerate(after) if w[:1] != "-" and (i == 0 or after[i - 1] not in _VALUED)), None)
    listed = f"`{durable} runs` lists the runs"
    meant = _OTHERS.get(word)
    if meant == "runs":
        return f"{durable} runs"
    if run_id is None:
        return f"{durable} {meant} with a run's id; {listed}" if meant else (
            f"`{durable} show` of a run prints the line that continues it; {listed}")  # fmt: skip
    if meant:
        return f"{durable} {shell_words(meant, run_id)}"
    try:
        store = open_store(url)
        info = runs.run_info(store, owners.find_workflow(store, run_id, workflow), run_id)
    except RunNotFoundError:
        return f"`{durable} run` of a run, but there is no run {shlex.quote(run_id)} in {store.url}; {listed}"
    except Exception as e:  # a damaged manifest, an unreachable store: said, never a traceback here
        return f"`{durable} run` of the run's script and function, but {(str(e).splitlines() or [repr(e)])[0]}"
    if word == "restart" or info.status == "cancelled":
        return restart_command(durable, store, info.workflow, run_id)
    if was_killed(info):  # a --resume is refused again
        return "\n".join(killed_ways(durable, store, info.workflow, run_id)).lstrip()
    name = waited_input(info.reason)
    found = target(store, info.workflow, run_id)
    if found == "":
        return in_session(info.workflow, run_id, f", inputs={{{name!r}: VALUE}}" if name else "")
    flags = "--resume" + (f" {to_fill('--input', [name])}" if name else "")
    return run_line(durable, found, info.workflow, run_id, flags)


def _given(words: list[str], option: str) -> str | None:
    """The value typed for an option (`--store s` or `--store=s`), else None."""
    value = next((w.split("=", 1)[1] for w in words if w.startswith(f"{option}=")), None)
    return words[words.index(option) + 1] if option in words[:-1] else value
