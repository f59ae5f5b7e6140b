"""The judge starts a notebook's executor while the notebook runs (``prepare``), so that the
sandbox, the interpreter and the lesson's imports are not on the grading clock
(:class:`course_utils.instructor.judge._Prepared`; measured in README, "Performance"). These
tests pin the hand-over: the prepared executor serves only the job it was started for, and
one that no job takes is killed."""

from __future__ import annotations

from typing import Any

import pytest

from course_utils.instructor import judge, sandbox


class FakeProc:
    def __init__(self, name: str) -> None:
        self.name, self.alive = name, True
        self.stdin = self.stdout = None

    def poll(self) -> int | None:
        return None if self.alive else -9


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[FakeProc, tuple]]:
    made: list[tuple[FakeProc, tuple]] = []

    def starter(job: dict[str, Any], warm: Any = ()) -> Any:
        def start() -> FakeProc:
            proc = FakeProc(f"{job['lesson']}#{len(made)}")
            made.append((proc, tuple(sorted(warm))))
            return proc
        return start

    def kill(proc: Any) -> None:
        proc.alive = False

    monkeypatch.setattr(judge, "_starter", starter)
    monkeypatch.setattr(sandbox, "kill", kill)
    return made


def job(lesson: str = "05_training_loop", uid: int | None = 60001, **extra: Any) -> dict[str, Any]:
    return {"lesson": lesson, "course": "/staged", "uid": uid, "limits": {"memory": 1}, **extra}


def test_the_job_it_was_prepared_for_gets_the_prepared_executor(spawned):
    prepared = judge._Prepared()
    prepared.start(job())
    start = prepared.starter(job(op="judge", n=3))
    assert start() is spawned[0][0] and len(spawned) == 1
    # a second start (the executor died mid-judging) is a fresh one, never the prepared one again
    assert start() is spawned[1][0] and prepared.proc is None


def test_a_prepared_executor_that_died_is_replaced(spawned):
    prepared = judge._Prepared()
    prepared.start(job())
    spawned[0][0].alive = False
    assert prepared.starter(job())() is spawned[1][0]


@pytest.mark.parametrize("other", [job(lesson="06_losses_optimizers"), job(uid=60002),
                                   job(limits={"memory": 2}), job(no_sandbox=True)])
def test_another_job_never_gets_it_and_it_is_killed(spawned, other):
    prepared = judge._Prepared()
    prepared.start(job())
    got = prepared.starter(other)()
    assert got is not spawned[0][0] and not spawned[0][0].alive


def test_discard_and_the_next_prepare_kill_the_waiting_executor(spawned):
    prepared = judge._Prepared()
    prepared.start(job())
    prepared.start(job(uid=60002))
    assert not spawned[0][0].alive and spawned[1][0].alive
    prepared.discard()
    assert not spawned[1][0].alive and prepared.proc is None


def test_what_an_executor_imported_warms_the_next_one_of_that_lesson_only(spawned):
    prepared = judge._Prepared()
    prepared.warm.setdefault("05_training_loop", set()).add("torch._dynamo")
    prepared.start(job())
    prepared.start(job(lesson="00_start_here"))
    assert spawned[0][1] == ("torch._dynamo",) and spawned[1][1] == ()


def test_an_executor_reports_only_the_modules_the_judge_may_warm(monkeypatch):
    executor = judge.Executor(lambda: None)
    executor.proc = FakeProc("x")
    replies = [({"id": 1, "warm": ["torch._dynamo", "os; rm -rf /", 7]}, b"")]
    monkeypatch.setattr(judge, "write_frame", lambda *a, **k: None)
    monkeypatch.setattr(judge, "read_frame", lambda *a, **k: replies.pop(0))
    executor.request({"op": "call"})
    assert executor.warm == {"torch._dynamo"}
