"""What to say of a `--word` a command does not have: the option meant
(`--run_id`, `--vars`), or the word it takes instead (`durable show
--run-id r1` for `durable show r1`), or its options. argparse said only
"unrecognized arguments", and the line about run ids that start with `-`
took `--to` for one."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from .._errortext import near, program, shell_words

# An option a newcomer gives for a word the command takes as a positional.
_AS_WORD = {"run-id": "RUN", "run": "RUN", "id": "RUN", "workflow": "WORKFLOW", "step": "STEP",
            "target": "TARGET"}  # fmt: skip
_WHAT = {"RUN": "run id", "WORKFLOW": "workflow", "STEP": "step", "TARGET": "target"}
_COMMON = frozenset({"--help", "--store", "--debug", "--no-pickle"})


def unknown_option(message: str, typed: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """"; ..." to add to argparse's message when `typed` holds a `--word`
    the command has no option for; "" when it holds none."""
    if not re.search(r"unrecognized arguments|required: ", message):
        return ""
    typed = list(typed)
    command = command_parser(parser, typed)
    options = command._option_string_actions
    for i, word in enumerate(typed):
        if word == "--":
            break
        name, eq, value = word.partition("=")
        after = options.get(typed[i - 1]) if i else None
        if name[:2] != "--" or name in options or (after is not None and after.nargs != 0):
            continue  # an option it has, or the value of one (`--var --x=1`)
        return _advice(command, typed, i, name, value if eq else None)
    return ""


def command_parser(parser: argparse.ArgumentParser, typed: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the command typed, down to `cache ls`."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        word = next((w for w in typed if sub is not None and w in sub.choices), None)
        if sub is None or word is None:
            return parser
        parser, typed = sub.choices[word], typed[list(typed).index(word) + 1 :]


def _advice(
    command: argparse.ArgumentParser, typed: list[str], i: int, name: str, value: str | None
) -> str:
    words = [a.metavar for a in command._actions if not a.option_strings]
    meant = _AS_WORD.get(name[2:].replace("_", "-").lower())
    if meant is not None and meant in words:
        rest = typed[:i] + ([value] if value is not None else []) + typed[i + 1 :]
        return f"; {command.prog} takes the {_WHAT[meant]} as a word, not {name}: " \
            f"{program()} {shell_words(*rest)}"  # fmt: skip
    own = [o for a in command._actions for o in a.option_strings if o[:2] == "--" and o not in _COMMON]
    close = near(name.replace("_", "-"), own, cutoff=0.8)
    if close:
        return f"; {command.prog} has no option {name}; did you mean {close[0]}?"
    listed = f"its options: {', '.join(own)}" if own else "it takes no option"
    return f"; {command.prog} has no option {name}; {listed} (`{command.prog} --help` says more)"


def near_command(word: str, parser: argparse.ArgumentParser, typed: Sequence[str]) -> str:
    """"; did you mean show? (durable show r1)" for a command mistyped
    (`shwo`), as an option mistyped is told the one meant; "" for none near."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    meant = near(word, sub.choices if sub else [])
    if not meant:
        return ""
    if word not in typed:
        return f"; did you mean {meant[0]}?"
    typed = list(typed)
    typed[typed.index(word)] = meant[0]
    return f"; did you mean {meant[0]}? ({program()} {shell_words(*typed)})"


def left_out(message: str, parser: argparse.ArgumentParser) -> str:
    """"; choose one of: ..." when the command (`durable` alone) or the
    action (`durable cache`) was left out, which argparse names none of."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None or not re.search(r"required: (COMMAND|ACTION)$", message.split(";")[0]):
        return ""
    return f"; choose one of: {', '.join(sub.choices)} (`{parser.prog} --help` says what each does)"


def one_run(message: str, typed: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """"; durable cancel takes one run id, a command each: ..." for the
    run ids a command taking one was given after it (`durable cancel r1 r2`)."""
    stray = re.search(r"unrecognized arguments: (.*)$", message)
    command = command_parser(parser, typed)
    takes = any(a.metavar == "RUN" and not a.option_strings and a.nargs is None for a in command._actions)
    extra = stray[1].split() if stray is not None else []
    if not takes or not extra or any(w[:1] == "-" for w in extra) or command.prog.split()[-1] not in typed:
        return ""
    words = [w for w in typed if w not in extra]
    at = words.index(command.prog.split()[-1]) + 1  # the run id: the first word after the command
    valued = {o for a in command._actions if a.nargs != 0 for o in a.option_strings}
    while at < len(words) and (words[at][:1] == "-" or words[at - 1] in valued):
        at += 1
    if at == len(words):
        return ""
    each = [shell_words(*words[:at], run, *words[at + 1 :]) for run in (words[at], *extra)]
    return f"; {command.prog} takes one run id, a command each: " + "; ".join(f"{program()} {w}" for w in each)


def no_value(message: str, typed: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """"; ..." for an option given without its value: the line with one
    (`durable show r1 --html FILE`), or, when the word after it starts
    with `-`, the line that gives that word as its value. argparse said
    only "expected one argument"."""
    needs = re.search(r"argument (--[\w-]+)(?:/-\w)?: expected one argument", message)
    if not needs:
        return ""
    typed = list(typed)
    given = typed.index(needs[1]) if needs[1] in typed else len(typed)
    if given + 1 < len(typed):
        value = typed[given + 1]
        return f"; if {value} is its value: {program()} {shell_words(*typed)}" if value[:1] == "-" else ""
    action = parser._option_string_actions.get(needs[1])
    what = (action.metavar if action is not None and isinstance(action.metavar, str) else None) or "VALUE"
    line = [*typed[: given + 1], what, *typed[given + 1 :]]
    # Its help, when a phrase: a placeholder alone said nothing of what to pass.
    about = action.help if action is not None and isinstance(action.help, str) else ""
    what += f" ({about})" if about and len(about) <= 80 and "(" not in about else ""
    return f"; {needs[1]} takes {what}: {program()} {shell_words(*line)}"
