"""The grader's half that runs *inside* a grading kernel (never in the instructor's process).

:mod:`course_utils.instructor.grade` executes a learner's notebook cell by cell in a fresh
kernel. Before the first cell it runs :func:`start`, which imports the lesson's exercises and
takes a snapshot of the grading code; at every valid check cell it runs :func:`grade` instead
of the learner's ``ex.NAME.check(ANSWER)``. Both are sent with ``store_history=False`` (they
never appear in the learner's ``In``/``_ih`` history).

:func:`grade` looks the answer up in the learner's namespace at that point of the notebook,
checks it with the exercise's own :func:`~course_utils.grading.runner.run_check` (captured at
start, so rebinding ``ex``, ``check`` or module attributes has no effect), and reports the
result as a display output with a private MIME type. Printed text (``print("✅ Correct")``)
is never read. The grader takes the last such output of its own cell.

What this defends against: forged output, deleted or edited check cells (scored by the
grader process), a learner passing the course's reference object, and naive monkeypatching of
the grading package or of ``torch.testing.assert_close`` (a changed function is reported as
``grader_tampered``). It is not a sandbox: code written to subvert the grader from inside the
same Python process can always do so; formal assessment should read the notebooks too.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from typing import Any, Callable

MIME = "application/vnd.pytorch-course.grade+json"

_state: dict[str, Any] = {}

_TORCH_ATTRS = ("testing.assert_close", "allclose", "equal", "isnan", "isclose")


def _modules(lesson_module: str) -> list[types.ModuleType]:
    return [m for name, m in sorted(sys.modules.items())
            if m is not None and (name.startswith("course_utils.grading") or name == lesson_module
                                  or name == __name__)]


def _unwrap(value: Any) -> Any:
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    return value


def _code(obj: Any) -> Any:
    return getattr(obj, "__code__", None)


def _attr_getter(owner: Any, key: str) -> Callable[[], tuple[Any, Any]]:
    def get() -> tuple[Any, Any]:
        obj = _unwrap(vars(owner).get(key))
        return obj, _code(obj)
    return get


def _exercise_getter(ex: Any) -> Callable[[], tuple[Any, Any]]:
    def get() -> tuple[Any, Any]:
        return ex, tuple((f.name, getattr(ex, f.name)) for f in dataclasses.fields(ex))
    return get


def _compare_getter(ex: Any) -> Callable[[], tuple[Any, Any]]:
    def get() -> tuple[Any, Any]:
        return ex.compare, dict(vars(ex.compare))
    return get


def _torch_getter(path: str) -> Callable[[], tuple[Any, Any]]:
    def get() -> tuple[Any, Any]:
        import torch

        obj: Any = torch
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj, _code(obj)
    return get


def _snapshot(lesson_module: str, exercises: list[Any]) -> dict[str, tuple[Callable[[], tuple[Any, Any]], Any, Any]]:
    """``name -> (getter, object, fingerprint)`` for everything whose change could alter a
    score; ``getter()`` looks the entry up again the way the grading code would."""
    getters: dict[str, Callable[[], tuple[Any, Any]]] = {}
    for mod in _modules(lesson_module):
        for key, value in list(vars(mod).items()):
            if isinstance(value, types.FunctionType):
                getters[f"{mod.__name__}.{key}"] = _attr_getter(mod, key)
            elif isinstance(value, type) and value.__module__ == mod.__name__:
                for meth, fn in list(vars(value).items()):
                    if isinstance(_unwrap(fn), types.FunctionType):
                        getters[f"{mod.__name__}.{key}.{meth}"] = _attr_getter(value, meth)
    for path in _TORCH_ATTRS:
        getters[f"torch.{path}"] = _torch_getter(path)
    for ex in exercises:
        getters[f"exercise {ex.id}"] = _exercise_getter(ex)
        getters[f"exercise {ex.id}.compare"] = _compare_getter(ex)
    return {name: (get, *get()) for name, get in getters.items()}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x[0] == y[0] and x[1] is y[1] for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a == b
    return a is b


def tampered() -> list[str]:
    """Names of grading functions, exercise definitions or torch comparison functions that
    are no longer what they were when grading started."""
    changed = []
    for name, (get, obj, fingerprint) in _state["snapshot"].items():
        try:
            now_obj, now_fp = get()
        except Exception:  # noqa: BLE001 - deleted or replaced beyond recognition
            changed.append(name)
            continue
        if now_obj is not obj or not _same(now_fp, fingerprint):
            changed.append(name)
    return changed


def start(lesson: str) -> None:
    """Import the lesson's exercises and remember the genuine grading code."""
    from course_utils.grading import registry, runner

    exercises = registry.load_lesson(lesson)
    lesson_module = registry.lesson_modules()[lesson]
    _state.clear()
    _state.update(
        lesson=lesson,
        lesson_module=lesson_module,
        run_check=runner.run_check,
        exercises={ex.id: ex for ex in exercises},
    )
    _state["snapshot"] = _snapshot(lesson_module, exercises)


def _record(exercise_id: str, answer_name: str) -> dict[str, Any]:
    ex = _state["exercises"][exercise_id]
    changed = tampered()
    if changed:
        return {"status": "incorrect", "mistake": "grader_tampered",
                "message": f"The notebook changed the grading code before this check ({', '.join(changed[:3])})."}
    from IPython import get_ipython

    shell = get_ipython()
    namespace = shell.user_ns if shell is not None else vars(sys.modules["__main__"])
    if answer_name not in namespace:
        return {"status": "incorrect", "mistake": "answer_not_defined",
                "message": f"`{answer_name}` is not defined when its check cell runs (did the cell that "
                           "defines it raise an error, e.g. a SyntaxError?)."}
    answer = namespace[answer_name]
    if answer is ex.reference and (inspect.isfunction(answer) or inspect.isclass(answer)):
        return {"status": "incorrect", "mistake": "reference_answer",
                "message": "The answer is the course's own reference solution object, not the learner's code."}
    result = _state["run_check"](ex, answer)
    changed = tampered()
    if changed:
        return {"status": "incorrect", "mistake": "grader_tampered",
                "message": f"The answer changed the grading code while it was checked ({', '.join(changed[:3])})."}
    return {"status": result.status, "mistake": result.mistake, "message": result.message}


def grade(exercise_id: str, answer_name: str) -> None:
    """Check the learner's ``answer_name`` for ``exercise_id`` and display the result."""
    from IPython.display import display

    try:
        record = _record(exercise_id, answer_name)
    except BaseException as exc:  # noqa: BLE001 - a grade is always reported
        record = {"status": "incorrect", "mistake": "checker_error",
                  "message": f"Grading stopped unexpectedly ({type(exc).__name__}: {exc})."}
    record["exercise"] = exercise_id
    display({MIME: record}, raw=True)
