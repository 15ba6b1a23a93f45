"""Release notes with a human in the loop.

    python examples/release_notes.py            # runs until it needs a reviewer
    python examples/release_notes.py approved   # resumes with the decision
    python examples/release_notes.py            # once published: prints the notes again

`loop_over` summarises every commit and records the whole list once;
`durable.suspend` stops the run as `suspended` until a reviewer decides.
"""

from __future__ import annotations

import sys

import durable


@durable.step
def fetch_commits(repo: str) -> list[str]:
    print(f"  fetching commits of {repo}")
    return ["fix: retry S3 uploads", "feat: durable sleep", "docs: quick start"]


@durable.step(retries=3, retry_delay=0.5)
def summarize(commit: str) -> str:
    print(f"  summarising {commit!r}")
    kind, _, text = commit.partition(": ")
    return f"- {text} ({kind})"


@durable.step
def publish(notes: list[str], decision: str) -> str:
    print("  publishing")
    return "\n".join([f"Release notes ({decision})", *notes])


@durable.workflow(run_id="release-1.0")
def release_notes(repo: str, reviewer_decision: str | None = None) -> str:
    commits = fetch_commits(repo)
    notes = durable.loop_over(summarize, commits)
    if reviewer_decision is None:
        durable.suspend("waiting for reviewer_decision")
    return publish(notes, reviewer_decision)


def main(argv: list[str]) -> int:
    done = next((r for r in release_notes.runs() if r.run_id == "release-1.0"), None)
    if done is not None and done.status == "completed":
        # Called again it would be a call with other arguments than the ones
        # the run completed with (refused): read what it published instead.
        decided = done.arguments["reviewer_decision"]
        if len(argv) > 1 and argv[1] != decided:
            print(f"release-1.0 was already published as {decided!r}; `durable rm "
                  "release-1.0` to decide again", file=sys.stderr)  # fmt: skip
            return 2
        print(release_notes.resume("release-1.0").value)
        return 0
    if len(argv) > 1:
        run = release_notes.resume("release-1.0", reviewer_decision=argv[1])
        if run.resumed_from_step is not None:
            print(f"Resumed from step {run.resumed_from_step + 1}")
        print(run.value)
        return 0
    try:
        print(release_notes("org/repo"))
    except durable.Suspended as s:
        print(f"Suspended: {s.reason}. Run again with a decision, e.g. `approved`.")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
