"""The store conformance suite, part 4: the engine end to end on the store.
A workflow of five counted steps runs and replays; interrupted in this
process, killed with a real `kill -9` in another, or cut off by a failing
write, it resumes at the step that did not finish, and no finished step
ever runs again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ..errors import StorageError
from . import _flows
from ._base import Opener, SuiteBase, posix_only
from ._procs import children
from ._runs import pipeline

ONCE_EACH = Counter(range(_flows.STEPS))
GATED_TWICE = ONCE_EACH + Counter([_flows.GATED])


class EngineChecks(SuiteBase):
    def test_a_run_replays_without_executing_again(self, opener: Opener, tmp_path: Path) -> None:
        log, gate = tmp_path / "log", tmp_path / "gate"
        flow = _flows.flow.with_options(run_id="e2e")
        first = flow.with_options(store=opener()).run(str(log), str(gate))
        assert first.value == _flows.EXPECTED and first.steps_executed == _flows.STEPS
        again = flow.with_options(store=opener()).run(str(log), str(gate))
        assert again.value == first.value and again.steps_executed == 0
        assert _flows.executions(log) == ONCE_EACH

    def test_an_interrupted_run_resumes_at_its_step(self, opener: Opener, tmp_path: Path) -> None:
        log, gate = tmp_path / "log", tmp_path / "gate"
        gate.write_text("interrupt", encoding="utf-8")
        flow = _flows.flow.with_options(run_id="interrupted")
        with pytest.raises(KeyboardInterrupt):
            flow.with_options(store=opener())(str(log), str(gate))
        assert _flows.executions(log) == Counter(range(_flows.GATED + 1))
        gate.unlink()
        run = flow.with_options(store=opener()).run(str(log), str(gate))
        assert run.value == _flows.EXPECTED
        assert (run.steps_replayed, run.resumed_from_step) == (_flows.GATED, _flows.GATED)
        assert _flows.executions(log) == GATED_TWICE

    def test_a_killed_run_resumes_at_its_step(self, opener: Opener, tmp_path: Path) -> None:
        self.needs_processes()
        posix_only()
        log, gate = tmp_path / "log", tmp_path / "gate"
        gate.write_text("block", encoding="utf-8")
        with children(opener, tmp_path, 1) as (child,):
            child.send("flow", run="killed", log=str(log), gate=str(gate))
            assert child.read() == {"blocked": True}  # inside the gated step
            child.kill()
        assert _flows.executions(log) == Counter(range(_flows.GATED + 1))
        gate.unlink()
        # The lease of a holder killed on this host is taken over at once.
        flow = _flows.flow.with_options(run_id="killed", store=opener())
        run = flow.run(str(log), str(gate))
        assert run.value == _flows.EXPECTED
        assert (run.steps_replayed, run.resumed_from_step) == (_flows.GATED, _flows.GATED)
        assert flow.with_options(store=opener()).run(str(log), str(gate)).steps_executed == 0
        assert _flows.executions(log) == GATED_TWICE

    def test_a_run_resumed_in_another_process_replays(
        self, opener: Opener, tmp_path: Path
    ) -> None:
        self.needs_processes()
        log, gate = tmp_path / "log", tmp_path / "gate"
        _flows.flow.with_options(run_id="moved", store=opener())(str(log), str(gate))
        with children(opener, tmp_path, 1) as (child,):
            assert child.call("flow", run="moved", log=str(log), gate=str(gate)) == {
                "ok": _flows.EXPECTED
            }
        assert _flows.executions(log) == ONCE_EACH

    def test_a_failed_write_keeps_earlier_records_and_resumes(self, opener: Opener) -> None:
        counts: Counter[str] = Counter()
        flaky = opener()
        real = flaky.save_record
        failed: list[str] = []

        def fail_once_at_2(workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
            if name == "steps/00000002" and not failed:
                failed.append(name)
                raise StorageError(flaky.url, "injected: the store went away")
            return real(workflow, run_id, name, data)

        flaky.save_record = fail_once_at_2  # type: ignore[method-assign]
        with pytest.raises(StorageError, match="injected"):
            pipeline(flaky, counts)()
        assert sorted(opener().load_records("conf", "r1")) == ["steps/00000000", "steps/00000001"]
        run = pipeline(opener(), counts).run()
        assert run.value == [{"i": i, "sq": i * i} for i in range(4)]
        assert run.steps_replayed == 2 and run.resumed_from_step == 2
        # Step 2 ran twice (its record never landed); no finished step ran again.
        assert counts == {"work0": 1, "work1": 1, "work2": 2, "work3": 1}
