"""Pieces shared by the one-test-file-per-lesson grader tests (tests/test_lNN_*.py).

* :class:`RedTeam`: rows of plausible wrong answers, valid but unusual answers and cheats, each
  registered with a decorator (``@team.wrong(EX, "label", "mistake")``); the lesson's test file
  parametrizes its tests over the rows (see tests/test_l01_tensors.py).
* :func:`oracle_cases`, :func:`assert_close_np`: every fixed case and many random cases of an
  exercise, and a NumPy comparison, for the tests that hold each reference against an
  independent oracle.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
import torch

from course_utils import grading
from course_utils.grading import Rand

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)

N_SEEDS = 150


class RedTeam:
    """Wrong answers, valid unusual answers and cheats of one lesson's exercises."""

    def __init__(self) -> None:
        self.WRONG: list[tuple[str, str, object, str | None]] = []  # (exercise, label, answer, mistake or None)
        self.VALID: list[tuple[str, str, object]] = []
        self.CHEATS: list[tuple[str, str, object]] = []
        self.CHEAT_NAMES: dict[str, str] = {}

    def wrong(self, ex: str, label: str, mistake: str | None = None):
        def deco(fn):
            self.WRONG.append((ex, label, fn, mistake))
            return fn
        return deco

    def valid(self, ex: str, label: str):
        def deco(fn):
            self.VALID.append((ex, label, fn))
            return fn
        return deco

    def cheat(self, ex: str, label: str, mistake: str | None = None):
        def deco(fn):
            self.CHEATS.append((ex, label, fn))
            if mistake:
                self.CHEAT_NAMES[f"{ex}:{label}"] = mistake
            return fn
        return deco

    def assert_cheat_rejected(self, exercise_id: str, label: str, answer) -> None:
        mistake = self.CHEAT_NAMES.get(f"{exercise_id}:{label}")
        rejected(exercise_id, answer, mistake, n_random=0, seeds=(1,))
        rejected(exercise_id, answer, mistake)

    def assert_five_wrong_three_valid_two_cheats(self, lesson: str) -> None:
        for ex in [e for e in grading.exercises() if e.startswith(lesson + ".")]:
            assert sum(w[0] == ex for w in self.WRONG) >= 5, ex
            assert sum(v[0] == ex for v in self.VALID) >= 3, ex
            assert sum(c[0] == ex for c in self.CHEATS) >= 2, ex


SOLUTIONS = __import__("pathlib").Path(__file__).resolve().parent.parent / "solutions"


def notebook_source(lesson: str, name: str) -> str:
    """The source of the top-level function ``name`` in lesson ``lesson``'s solution notebook, as the
    learner sees it (for tests that hold a notebook's puzzle and its grader together)."""
    import ast

    path = SOLUTIONS / f"{lesson}.py"
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise AssertionError(f"no function {name} in {path.name}")


def define(source: str, name: str, namespace: dict) -> object:
    """The function ``name`` that ``source`` defines, run with the names in ``namespace``."""
    namespace = dict(namespace)
    exec(compile(source, f"<notebook {name}>", "exec"), namespace)
    return namespace[name]


def ids(rows) -> list[str]:
    return [f"{r[0].split('.')[-1]}: {r[1]}" for r in rows]


def oracle_cases(exercise_id: str, n_seeds: int = N_SEEDS):
    """(where, case) for every fixed case and ``n_seeds`` random cases of the exercise."""
    ex = grading.exercise(exercise_id)
    # copies: an oracle test that freezes or re-initialises a fixed case's model must not change
    # the registered case for the checks that run after it
    out = [(c.label or "fixed", copy.deepcopy(c)) for c in ex.edge_cases]
    if ex.cases is not None:
        out += [(f"seed {s}", ex.cases(Rand(s))) for s in range(n_seeds)]
    return out


def as_numpy(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def assert_close_np(ref, oracle, rtol=1e-5, atol=1e-6, where=""):
    ref_np = as_numpy(ref)
    assert ref_np.shape == np.shape(oracle), f"{where}: shape {ref_np.shape} vs oracle {np.shape(oracle)}"
    np.testing.assert_allclose(ref_np.astype(np.float64), np.asarray(oracle, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=where)


class RedTeamTests(NamedTuple):
    wrong_is_rejected: Callable
    valid_is_accepted: Callable
    cheat_is_rejected: Callable
    every_exercise_has_its_red_team: Callable


class Tables:
    """Red-team rows as ``pytest.param`` values grouped per exercise (lessons 04-07 and 09-12): ``@wrong(EX,
    "mistake")``, ``@valid(EX)``, ``@cheat(EX)`` on a plain answer function, whose name is the row's
    id (``EX-function``); the lesson's file parametrizes its tests over :meth:`all` of each table."""

    def __init__(self) -> None:
        self.WRONG: dict[str, list] = collections.defaultdict(list)
        self.VALID: dict[str, list] = collections.defaultdict(list)
        self.CHEATS: dict[str, list] = collections.defaultdict(list)

    def wrong(self, exercise: str, mistake: str | None = None):
        def deco(fn):
            self.WRONG[exercise].append(pytest.param(fn, mistake, id=f"{exercise}-{fn.__name__}"))
            return fn
        return deco

    def valid(self, exercise: str):
        def deco(fn):
            self.VALID[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
            return fn
        return deco

    def cheat(self, exercise: str):
        def deco(fn):
            self.CHEATS[exercise].append(pytest.param(fn, id=f"{exercise}-{fn.__name__}"))
            return fn
        return deco

    @staticmethod
    def all(table: dict[str, list]) -> list:
        return [p for ps in table.values() for p in ps]

    def red_team_tests(self, lesson: str) -> RedTeamTests:
        """The red team's four tests over these tables, for the lesson's test file to take as its own
        (pytest collects what the module's names hold)::

            (test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
             test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)

        A row's exercise is the part of its id before the first ``-`` (``EX-function``)."""

        def exercise_of(request) -> str:
            return request.node.callspec.id.split("-")[0]

        @pytest.mark.parametrize("answer,mistake", self.all(self.WRONG))
        def test_wrong_answer_is_rejected(request, answer, mistake):
            rejected(exercise_of(request), answer, mistake)

        @pytest.mark.parametrize("answer", self.all(self.VALID))
        def test_valid_answer_is_accepted(request, answer):
            accepted(exercise_of(request), answer)

        @pytest.mark.parametrize("answer", self.all(self.CHEATS))
        def test_cheat_is_rejected(request, answer):
            rejected(exercise_of(request), answer)

        def test_every_exercise_has_its_red_team():
            self.assert_counts(lesson)

        return RedTeamTests(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
                            test_every_exercise_has_its_red_team)

    def assert_counts(self, lesson: str) -> None:
        """Every exercise of ``lesson``: at least five wrong answers, three valid, two cheats."""
        for eid in [e for e in grading.exercises() if e.split(".")[0] == lesson]:
            assert len(self.WRONG[eid]) >= 5, eid
            assert len(self.VALID[eid]) >= 3, eid
            assert len(self.CHEATS[eid]) >= 2, eid


def fixed_and_random_cases(exercise_id: str, seeds) -> list:
    """Every fixed case of the exercise, then one random case per seed (the plain cases)."""
    ex = grading.exercise(exercise_id)
    out = list(ex.edge_cases)
    if ex.cases is not None:
        out += [ex.cases(Rand(s)) for s in seeds]
    return out
