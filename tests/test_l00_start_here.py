"""Lesson 00_start_here: its grader (celsius_to_fahrenheit) against wrong answers, valid answers
written differently, cheats, and an independent oracle.

Wrong answers and cheats must be rejected by the FIXED cases alone (``n_random=0``) as well as
with random cases under several seeds; where the mistake has a name, the name is asserted.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils import grading

from grading_asserts import accepted as _accepted  # noqa: E402 (tests/ is on sys.path)
from grading_asserts import rejected  # noqa: E402
from lesson_kit import RedTeam, assert_close_np, define, ids, notebook_source, oracle_cases  # noqa: E402

team = RedTeam()
wrong, valid, cheat = team.wrong, team.valid, team.cheat
_cases, _close = oracle_cases, assert_close_np


def accepted(exercise_id: str, answer, n_random: int = 20) -> None:
    _accepted(exercise_id, answer, n_random=n_random)


# =========================================================================== adversarial
C2F = "00_start_here.celsius_to_fahrenheit"


def test_c2f_float64_flattened_and_floor_division_are_rejected():
    rejected(C2F, lambda c: c.double() * 9 / 5 + 32, "wrong_dtype")
    rejected(C2F, lambda c: (c * 9 / 5 + 32).reshape(-1), "wrong_shape")
    rejected(C2F, lambda c: c * 9 // 5 + 32)


def test_c2f_in_place_then_returned_is_rejected():
    def in_place(c):
        c *= 1.8
        c += 32
        return c

    rejected(C2F, in_place, "mutated_input")


def _augmented(c):
    c *= 1.8
    c += 32
    return c


@pytest.mark.parametrize("answer, wrote", [
    (_augmented, "`c *= 9 / 5` and `c += 32`"),
    (lambda c: c.mul_(1.8).add_(32), "methods ending in `_`"),
], ids=["augmented assignment", "underscore methods"])
def test_c2f_in_place_message_is_true_of_what_the_learner_wrote(answer, wrote):
    """An answer written with `*=` and `+=` was told that "arithmetic operators return new
    tensors": on a tensor, augmented assignment is in place, like the `_` methods."""
    res = rejected(C2F, answer, "mutated_input")
    assert wrote in res.message and "write into `c` itself" in res.message
    assert "arithmetic operators return new tensors" not in res.message


def test_c2f_hard_coded_fixed_case_is_rejected():
    rejected(C2F, lambda c: torch.tensor([32.0, 212.0, -40.0]))


def test_c2f_alternatives_pass():
    accepted(C2F, lambda c: (c * 9 + 160) / 5)
    accepted(C2F, lambda c: c.clone().mul_(1.8).add_(32))


# The warm-up is a gentle repair (issue "Every exercise a decision"): the notebook runs a
# colleague's `celsius * (9 // 5) + 32`, right at 0 °C and 80 degrees short at 100 °C.
def test_the_colleagues_conversion_fails_as_the_notebook_shows_and_is_named():
    colleague = define(notebook_source("00_start_here", "colleagues_celsius_to_fahrenheit"),
                       "colleagues_celsius_to_fahrenheit", {"torch": torch})
    assert colleague(torch.tensor([0.0, 100.0])).tolist() == [32.0, 132.0]
    res = rejected(C2F, colleague, "integer_division")
    assert "`9 // 5`" in res.message and "?" in res.message
    rejected(C2F, colleague, "integer_division", n_random=0)  # the fixed cases alone
    fixed = define(notebook_source("00_start_here", "colleagues_celsius_to_fahrenheit").replace("9 // 5", "9 / 5"),
                   "colleagues_celsius_to_fahrenheit", {"torch": torch})
    accepted(C2F, fixed)  # the one bug is the whole repair


def test_c2f_hints_hold_no_code_and_the_spec_no_formula():
    import re

    from course_utils import build

    hints = grading.exercise(C2F).hints
    assert hints[0].rstrip().endswith("?")
    for hint in hints:
        assert not re.search(r"`|\w\(|//|\* ?9|9 ?/ ?5", hint), hint
    src = (build.SOLUTIONS / "00_start_here.py").read_text()
    spec = src[src.index("## 3. Warm-up exercise"):src.index('tags=["answer:celsius_to_fahrenheit"]')]
    prose = "\n".join(line for line in spec.splitlines() if line.startswith("# "))
    assert "colleagues_celsius_to_fahrenheit" in spec and "212 °F" in prose
    for recipe in ("9/5", "9 / 5", "tfrac", "one line", "//"):
        assert recipe not in prose, recipe


# =========================================================================== red team
CF = "00_start_here.celsius_to_fahrenheit"
wrong(CF, "5/9", "inverted_ratio")(lambda c: c * 5 / 9 + 32)
wrong(CF, "offset first", "offset_first")(lambda c: (c + 32) * 9 / 5)
wrong(CF, "no offset", "forgot_offset")(lambda c: c * 9 / 5)
wrong(CF, "the reverse conversion", "reversed_conversion")(lambda c: (c - 32) * 5 / 9)
wrong(CF, "rule of thumb 2C + 30")(lambda c: c * 2 + 30)
wrong(CF, "floor division", "floor_division")(lambda c: c * 9 // 5 + 32)
wrong(CF, "the colleague's 9 // 5", "integer_division")(lambda c: c * (9 // 5) + 32)
wrong(CF, "list comprehension over tolist()")(lambda c: torch.tensor([v * 9 / 5 + 32 for v in c.tolist()]))
wrong(CF, "float32 always")(lambda c: c.float() * 1.8 + 32)
wrong(CF, "item()")(lambda c: torch.tensor(c.item() * 1.8 + 32))


@wrong(CF, "in place", "mutated_input")
def _cf_in_place(c):
    c *= 1.8
    c += 32
    return c


valid(CF, "1.8 first")(lambda c: 32 + 1.8 * c)
valid(CF, "method chain")(lambda c: c.mul(9).div(5).add(32))
valid(CF, "torch.add with alpha")(lambda c: torch.add(torch.full_like(c, 32.0), c, alpha=1.8))
valid(CF, "clone then in place")(lambda c: c.clone().mul_(9 / 5).add_(32))
cheat(CF, "hard-coded first case")(lambda c: torch.tensor([32.0, 212.0, -40.0]))
cheat(CF, "always 32")(lambda c: torch.full_like(c, 32.0))

wrong(CF, "result requires grad (redteam)", "requires_grad")(lambda c: (c * 9 / 5 + 32).requires_grad_())


# =========================================================================== oracle
def test_celsius_reference_agrees_with_numpy():
    ref = grading.reference("00_start_here.celsius_to_fahrenheit")
    for where, case in _cases("00_start_here.celsius_to_fahrenheit"):
        (c,) = case.args
        got = ref(c)
        assert got.dtype == c.dtype and got.shape == c.shape, where
        _close(got, np.asarray(c.double().numpy() * 1.8 + 32.0), rtol=1e-6, atol=1e-4, where=where)


# =========================================================================== red-team rows
@pytest.mark.parametrize("exercise_id,label,answer,mistake", team.WRONG, ids=ids(team.WRONG))
def test_wrong_answer_is_rejected_by_the_fixed_cases(exercise_id, label, answer, mistake):
    for n_random, seeds in ((0, (1,)), (None, (1, 77, 4242))):  # fixed cases alone, then with random ones
        rejected(exercise_id, answer, mistake, n_random=n_random, seeds=seeds)


@pytest.mark.parametrize("exercise_id,label,answer", team.VALID, ids=ids(team.VALID))
def test_valid_unusual_answer_passes(exercise_id, label, answer):
    accepted(exercise_id, answer, n_random=20)


@pytest.mark.parametrize("exercise_id,label,answer", team.CHEATS, ids=ids(team.CHEATS))
def test_cheat_is_rejected(exercise_id, label, answer):
    team.assert_cheat_rejected(exercise_id, label, answer)


def test_every_exercise_has_five_wrong_three_valid_two_cheats():
    team.assert_five_wrong_three_valid_two_cheats("00_start_here")


# =========================================================================== the lesson's own claims
def _markdown_of_lesson_00() -> list[str]:
    from course_utils import build, cells

    nb = build.read_py(build.SOLUTIONS / "00_start_here.py")
    return [" ".join(cells.source(c).split()) for c in nb.cells if c.cell_type == "markdown"]


def test_lesson_00_says_predictions_are_recorded_as_they_are(tmp_path, monkeypatch):
    """Lesson 00 once told learners predictions "are not recorded in your progress"; they are
    logged (and the instructor's room view counts them per question): the text says so."""
    from course_utils import progress
    from course_utils.grading import predictions_for

    log = tmp_path / "progress.jsonl"
    monkeypatch.setenv(progress.ENV_VAR, str(log))
    predictions_for("00_start_here").sum_dim0_shape((3,))
    assert [e["event"] for e in progress.read_events(log)] == ["prediction"]

    text = [t for t in _markdown_of_lesson_00() if t.startswith("### Predict the output")]
    assert len(text) == 1
    assert "not recorded" not in text[0]
    assert "they are recorded" in text[0] and "progress file" in text[0] and "instructor" in text[0]
