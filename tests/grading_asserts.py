"""Assertions shared by the adversarial grader tests (tests/test_adversarial_*.py)."""

from __future__ import annotations

from course_utils import grading

SEEDS = (1, 77, 4242)


def check(exercise_id: str, answer, seed: int = 7, n_random: int | None = None) -> grading.Result:
    return grading.check(exercise_id, answer, seed=seed, n_random=n_random)


def rejected(exercise_id: str, answer, mistake: str | None = None, n_random: int | None = None,
             seeds=SEEDS) -> grading.Result:
    """Rejected on every seed (with ``mistake`` as the named mistake when given)."""
    for seed in seeds:
        res = check(exercise_id, answer, seed=seed, n_random=n_random)
        assert res.status == "incorrect", f"false pass with seed {seed}: {exercise_id}"
        if mistake is not None:
            assert res.mistake == mistake, f"seed {seed}: expected {mistake}, got {res.mistake}: {res.message}"
        assert "Checking stopped unexpectedly" not in res.message, res.text()
        assert_no_placeholder(res)
    return res


def assert_no_placeholder(res: grading.Result) -> None:
    """The learner never reads a template: every ``{field}`` of the message was filled."""
    from course_utils.grading.spec import FIELD

    left = FIELD.search(res.message or "")
    assert left is None, f"unfilled placeholder {left.group(0)} in the message of {res.mistake}: {res.message}"


def accepted(exercise_id: str, answer, n_random: int | None = None, seeds=SEEDS) -> None:
    """Passes on every seed: a correct answer written differently from the reference."""
    for seed in seeds:
        res = check(exercise_id, answer, seed=seed, n_random=n_random)
        assert res.passed, f"seed {seed}: {res.text()}"
