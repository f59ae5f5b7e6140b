"""One voice per mistake: the words a learner reads are the words the exercise declares.

A probe or a custom ``run`` raises ``Incorrect(mistake_id, **facts)``; the runner shows the
declared ``Mistake.message`` with the facts filled in. These tests keep it that way:

* every declared mistake's example is rejected under its id with its declared message, so the
  instructor guide (generated from the declarations) quotes what learners see;
* no ``Incorrect(...)`` in the exercise files carries its own text, and every id raised is
  declared by an exercise of the same lesson.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import course_utils.exercises  # noqa: F401 - registers every exercise
from course_utils.grading import registry
from course_utils.grading.testing import assert_declared_messages, shows_declared

EXERCISES = Path(course_utils.exercises.__file__).parent

# Lessons whose exercise files are still being moved to one voice (issue 12); each lesson is
# removed from this tuple when its files raise ids only. The last test fails while it is not empty.
PENDING_LESSONS: tuple[str, ...] = ()


def _lesson_key(path: Path) -> str:
    return path.relative_to(EXERCISES).parts[0][:3]


def _files() -> list[Path]:
    return sorted(p for p in EXERCISES.rglob("*.py") if p.relative_to(EXERCISES).parts[0].startswith("l"))


def _incorrect_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == "Incorrect" or getattr(n.func, "attr", None) == "Incorrect")]


def _declared_ids(lesson: str) -> set[str]:
    ids = set()
    for path in _files():
        if _lesson_key(path) != lesson:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mistake" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                ids.add(node.args[0].value)
    return ids


@pytest.mark.parametrize("exercise_id", [ex.id for ex in registry.all_exercises()])
def test_each_declared_message_is_the_one_shown(exercise_id):
    lesson = "l" + exercise_id[:2]
    if lesson in PENDING_LESSONS:
        pytest.skip(f"{lesson} not yet moved to one voice")
    assert_declared_messages(exercise_id)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(EXERCISES)))
def test_incorrect_raises_a_declared_id_without_its_own_text(path):
    lesson = _lesson_key(path)
    if lesson in PENDING_LESSONS:
        pytest.skip(f"{lesson} not yet moved to one voice")
    declared = _declared_ids(lesson)
    for call in _incorrect_calls(path):
        where = f"{path.name}:{call.lineno}"
        assert len(call.args) == 1 and not any(k.arg == "message" for k in call.keywords), (
            f"{where}: Incorrect(...) carries its own text; declare it as a Mistake and raise the id with facts")
        first = call.args[0]
        if isinstance(first, ast.Constant):
            assert first.value in declared, f"{where}: Incorrect({first.value!r}) is not declared in {lesson}"


def test_fill_and_match():
    from course_utils.grading.spec import fill
    template = "You counted {got} items; `{x: 1}` stays."
    shown = fill(template, {"got": 3})
    assert shown == "You counted 3 items; `{x: 1}` stays."
    assert shows_declared(template, shown)
    assert shows_declared("Oops.", "Oops. (PyTorch said: RuntimeError: boom)")
    assert not shows_declared(template, "You counted 3 things.")


def test_every_lesson_speaks_with_one_voice():
    assert PENDING_LESSONS == (), f"still to move to one voice: {PENDING_LESSONS}"


def test_the_instructors_judge_carries_ids_and_facts():
    # in the sandboxed grader an Incorrect raised by checking code crosses a pipe as plain data;
    # the judge rebuilds it so that the runner fills in the exercise's declared message
    from course_utils.grading import Incorrect
    from course_utils.instructor import judge

    info = judge._exc_info(Incorrect("too_long", got=7, name="WindowDataset"))
    rebuilt = judge._rebuild(info)
    assert isinstance(rebuilt, Incorrect)
    assert (rebuilt.mistake, rebuilt.message) == ("too_long", None)
    assert rebuilt.facts == {"got": "7", "name": "WindowDataset"}
    framework = judge._rebuild(judge._exc_info(Incorrect("timeout", "Your code did not finish.")))
    assert framework.message == "Your code did not finish."


def test_shows_declared_knows_conversions_and_specs():
    assert shows_declared("For {device!r} your function {what}.", "For 'tpu' your function raised KeyError.")
    assert shows_declared("loss {loss:.3f}", "loss 0.123")
    assert not shows_declared("For {device!r} your function {what}.", "For tpu it raised.")
