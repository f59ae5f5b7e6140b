"""The learner-facing side: ``ex = exercises_for("01_tensors")``, then
``ex.normalize_rows.check(normalize_rows)``, ``ex.normalize_rows.hint()`` and
``ex.normalize_rows.solution()``; ``quiz = predictions_for("01_tensors")``, then
``quiz.int_div_dtype(answer)``.

These handles are the only part of the grading core that writes the progress log: every call
is logged here, after the checker (:mod:`.runner`, :mod:`.predict`), which never imports
:mod:`course_utils.progress`, has given its verdict."""

from __future__ import annotations

import inspect
import textwrap
import types
from collections.abc import Mapping
from typing import Any

from .. import progress
from . import predict, registry
from .feedback import Note, Result
from .runner import run_check, warm_up
from .spec import Exercise


class ExerciseHandle:
    """One exercise as a learner sees it. It holds only the exercise's id and reads the
    (frozen) definition from the registry on every call, so nothing a notebook assigns to the
    handle changes what the grader compares with."""

    __slots__ = ("_id", "_hints_shown")

    def __init__(self, exercise: Exercise):
        object.__setattr__(self, "_id", exercise.id)
        object.__setattr__(self, "_hints_shown", 0)

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_hints_shown":
            raise AttributeError(f"exercise handles are read-only (cannot set {name!r})")
        object.__setattr__(self, name, value)

    @property
    def _ex(self) -> Exercise:
        return registry.get(self._id)

    @property
    def id(self) -> str:
        return self._ex.id

    def check(self, answer: Any, *, seed: int | None = None) -> Result:
        """Check your answer on fixed and fresh random cases. Pass the function (or class)
        itself: ``check(my_function)``. ``seed`` repeats a failing check exactly."""
        result = run_check(self._ex, answer, seed=seed)
        progress.log_event("check", self._ex.id, status=result.status, mistake=result.mistake)
        return result

    def hint(self, level: int | None = None) -> Note:
        """Show the next hint (or hint number ``level``, counting from 1)."""
        hints = list(self._ex.hints) or ["No hints for this one: re-read the exercise text."]
        if level is None:
            self._hints_shown = min(self._hints_shown + 1, len(hints))
            level = self._hints_shown
        level = max(1, min(int(level), len(hints)))
        progress.log_event("hint", self._ex.id, level=level)
        more = " Call `hint()` again for a more specific one." if level < len(hints) else ""
        return Note(f"Hint {level}/{len(hints)} for {self._ex.name}", hints[level - 1] + more)

    def solution(self) -> Note:
        """Show the reference solution (viewing it is recorded in your progress)."""
        progress.log_event("solution", self._ex.id)
        return Note(f"Solution for {self._ex.name}", solution_source(self._ex), code=True)

    def __repr__(self) -> str:
        return f"<exercise {self._ex.id}: {self._ex.title}. Use .check(answer), .hint(), .solution()>"


def solution_source(ex: Exercise) -> str:
    if ex.solution is not None:
        return textwrap.dedent(ex.solution).strip()
    try:
        return textwrap.dedent(inspect.getsource(ex.reference)).strip()
    except (OSError, TypeError):
        return repr(ex.reference)


class LessonExercises:
    """All exercises of one lesson, as attributes: ``ex.normalize_rows``."""

    def __init__(self, lesson: str):
        exercises = registry.load_lesson(lesson)
        for e in exercises:  # slow first imports happen now, at lesson start, not in a check
            warm_up(e)
        object.__setattr__(self, "_lesson", lesson)
        object.__setattr__(self, "_handles", types.MappingProxyType({e.name: ExerciseHandle(e) for e in exercises}))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the exercises of a lesson are read-only (cannot set {name!r})")

    def __getattr__(self, name: str) -> ExerciseHandle:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._handles[name]
        except KeyError:
            raise AttributeError(
                f"Lesson {self._lesson} has no exercise {name!r}; it has: {', '.join(self._handles)}"
            ) from None

    def __dir__(self) -> list[str]:
        return list(self._handles)

    def __repr__(self) -> str:
        names = "\n".join(f"  ex.{n}: {h._ex.title}" for n, h in self._handles.items())
        return f"Exercises of {self._lesson}:\n{names}"


def exercises_for(lesson: str) -> LessonExercises:
    """The exercises of ``lesson`` (a notebook stem such as ``"01_tensors"``)."""
    return LessonExercises(lesson)


# ---------------------------------------------------------------------- predict-the-output


class PredictHandle:
    """``quiz.<name>(answer)`` checks; ``quiz.<name>`` shows the question."""

    __slots__ = ("_id",)
    _id: str

    def __init__(self, question_id: str):
        object.__setattr__(self, "_id", question_id)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("predict questions are read-only")

    def __call__(self, answer: Any = ...) -> Result:
        result = predict.check(self._id, answer)
        progress.log_event("prediction", self._id, status=result.status, mistake=result.mistake)
        return result

    def __repr__(self) -> str:
        q = predict.QUESTIONS[self._id]
        return f"<predict {q.id}: {q.prompt} Answer with {predict.HOW[q.kind]}.>"


class LessonPredictions:
    """The predict questions of one lesson, as attributes: ``quiz.int_div_dtype(...)``."""

    _lesson: str
    _handles: Mapping[str, PredictHandle]

    def __init__(self, lesson: str):
        names = {q.name: PredictHandle(q.id) for q in predict.QUESTIONS.values() if q.lesson == lesson}
        object.__setattr__(self, "_lesson", lesson)
        object.__setattr__(self, "_handles", types.MappingProxyType(names))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("predict questions are read-only")

    def __getattr__(self, name: str) -> PredictHandle:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._handles[name]
        except KeyError:
            raise AttributeError(f"Lesson {self._lesson} has no predict question {name!r}; "
                                 f"it has: {', '.join(self._handles)}") from None

    def __dir__(self) -> list[str]:
        return list(self._handles)

    def __repr__(self) -> str:
        return f"Predict questions of {self._lesson}: " + ", ".join(self._handles)


def predictions_for(lesson: str) -> LessonPredictions:
    """The predict-the-output questions of ``lesson`` (a notebook stem such as ``"01_tensors"``)."""
    return LessonPredictions(lesson)
