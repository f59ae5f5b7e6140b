"""Helpers for the course's own tests of its graders (not used by learners).

:func:`assert_mistake_specific` checks that the mistake names of one exercise are earned:
every declared example is rejected under its own name on several seeds, and each extra wrong
answer given by the caller is rejected under the name the caller expects (``None``: any
generic, unnamed failure, i.e. not one of the declared mistakes).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from . import registry
from .runner import run_check
from .spec import FIELD  # {name}, {name!r}, {name:spec}: the fields fill() fills

GENERIC = frozenset({
    "exception", "wrong_values", "wrong_shape", "wrong_dtype", "wrong_type", "wrong_device",
    "wrong_length", "wrong_keys", "returned_none", "graph_cut", "nan", "timeout", "mutated_input",
    "shares_storage", "wrong_grad",
})


def assert_mistake_specific(
    exercise_id: str,
    others: Mapping[str, tuple[Any, str | None]] | Iterable[tuple[str, Any, str | None]] = (),
    seeds: Iterable[int] = (1, 2, 3),
) -> None:
    """Raise ``AssertionError`` unless mistake names of ``exercise_id`` are specific.

    ``others``: plausible wrong answers, as ``{label: (answer, expected_mistake)}`` or
    ``[(label, answer, expected_mistake)]``; ``expected_mistake=None`` means "rejected, and not
    under the name of any declared mistake" (the grader must say what differs instead).
    """
    ex = registry.get(exercise_id)
    seeds = list(seeds)
    declared = {m.id for m in ex.mistakes}
    for m in ex.mistakes:
        if m.example is None:
            continue
        for seed in seeds:
            res = run_check(ex, m.example, seed=seed)
            assert res.status == "incorrect", f"{exercise_id}: example of {m.id} passed (seed {seed})"
            assert res.mistake == m.id, (
                f"{exercise_id}: example of {m.id} was named {res.mistake!r} (seed {seed}): {res.message}")
    items = list(others.items()) if isinstance(others, Mapping) else [(lbl, (a, e)) for lbl, a, e in others]
    for label, (answer, expected) in items:
        for seed in seeds:
            res = run_check(ex, answer, seed=seed)
            assert res.status == "incorrect", f"{exercise_id}: wrong answer {label!r} passed (seed {seed})"
            if expected is None:
                assert res.mistake not in declared, (
                    f"{exercise_id}: {label!r} was named {res.mistake!r} without evidence (seed {seed}): "
                    f"{res.message}")
            else:
                assert res.mistake == expected, (
                    f"{exercise_id}: {label!r} named {res.mistake!r}, expected {expected!r} (seed {seed})")


def shows_declared(template: str, shown: str) -> bool:
    """Whether ``shown`` is ``template`` with its ``{fields}`` filled in (and, for a mistake
    recognised by the error it raises, PyTorch's words appended)."""
    literal = FIELD.sub("\0", template).split("\0")
    pattern = "(.+?)".join(re.escape(part) for part in literal) + r"( \(PyTorch said: .*\))?"
    return re.fullmatch(pattern, shown, flags=re.DOTALL) is not None


def assert_declared_messages(exercise_id: str, seed: int = 1) -> None:
    """Raise ``AssertionError`` unless each declared mistake's example is rejected under its id
    with its declared message: the words in the exercise file (and the instructor guide) are the
    words a learner reads."""
    ex = registry.get(exercise_id)
    for m in ex.mistakes:
        if m.example is None:
            continue
        res = run_check(ex, m.example, seed=seed)
        assert res.mistake == m.id, f"{exercise_id}: example of {m.id} was named {res.mistake!r}: {res.message}"
        assert shows_declared(m.message, res.message), (
            f"{exercise_id}.{m.id}: the learner reads\n  {res.message}\nbut the exercise declares\n  {m.message}")
