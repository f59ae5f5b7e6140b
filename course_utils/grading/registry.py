"""Where exercises live: one package per lesson in :mod:`course_utils.exercises`.

A lesson ``NN_name`` has its exercises in ``course_utils/exercises/lNN_name/``, one file each,
which call :func:`register` for their :class:`Exercise`. Lessons are imported lazily, so opening
one lesson does not import the others.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import types
from typing import Callable, Mapping

import torch

from .spec import Exercise


def _make_store() -> tuple[Callable[[Exercise], None], Mapping[str, Exercise]]:
    store: dict[str, Exercise] = {}  # reachable only through this closure

    def add(ex: Exercise) -> None:
        if not isinstance(ex, Exercise):
            raise TypeError(f"register() takes Exercise values, not {type(ex).__name__}")
        store[ex.id] = ex

    return add, types.MappingProxyType(store)


# A read-only view: `_REGISTRY[id] = ...` from a notebook raises TypeError, and the Exercise
# values themselves are frozen.
_add, _REGISTRY = _make_store()


def register(*exercises: Exercise) -> None:
    """Add exercises to the registry (called by lesson modules at import time)."""
    for ex in exercises:
        _add(ex)


# The package whose ``lNN_name`` subpackages declare the exercises (loaded by name, lazily).
LESSON_PACKAGE = "course_utils.exercises"


def lesson_modules() -> dict[str, str]:
    """Map lesson stem (``"01_tensors"``) to its exercise module name."""
    # Found by name, as plugins are: the core never imports the declarations it runs (the lesson
    # packages import grading to declare; an import back would be a circle).
    spec = importlib.util.find_spec(LESSON_PACKAGE)
    found = {}
    for info in pkgutil.iter_modules(spec.submodule_search_locations if spec else []):
        if info.name.startswith("l") and info.name[1:3].isdigit():
            found[info.name[1:]] = f"{LESSON_PACKAGE}.{info.name}"
    return dict(sorted(found.items()))


def load_lesson(lesson: str) -> list[Exercise]:
    """Import a lesson's exercise module and return its exercises in definition order."""
    modules = lesson_modules()
    if lesson not in modules:
        raise KeyError(f"No exercises for lesson {lesson!r}. Known lessons: {', '.join(modules)}")
    # in float32, whatever default the learner set: some exercises build their fixed cases
    # (tensors, models) when they are declared, and the checks compare in float32
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        importlib.import_module(modules[lesson])
    finally:
        torch.set_default_dtype(saved)
    return [ex for ex in _REGISTRY.values() if ex.lesson == lesson]


def all_exercises() -> list[Exercise]:
    for lesson in lesson_modules():
        load_lesson(lesson)
    return list(_REGISTRY.values())


def get(exercise_id: str) -> Exercise:
    if exercise_id not in _REGISTRY:
        lesson = exercise_id.split(".", 1)[0]
        try:
            load_lesson(lesson)
        except KeyError:
            pass
    if exercise_id not in _REGISTRY:
        raise KeyError(f"Unknown exercise {exercise_id!r}")
    return _REGISTRY[exercise_id]
