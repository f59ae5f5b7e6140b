"""Predict-the-output questions (course_utils/grading/predict.py): the expected answers are what
the code really gives, every accepted spelling passes, wrong answers fail with the explanation,
the learner's placeholder is "not attempted", and every lesson asks at least three questions,
each before the cell that shows its answer."""

from __future__ import annotations

import ast
import builtins

import nbformat
import pytest
import torch

from course_utils import build
from course_utils.grading import predict as P
from course_utils.grading import predictions_for

IDS = list(P.QUESTIONS)
LESSONS = build.solution_stems()


def _rerun(code: str):
    """Run a question's code with a harness of this test's own (not predict.run_code)."""
    import numpy as np
    import torch.nn.functional as F
    from torch import nn

    tree = ast.parse(code)
    last = tree.body.pop()
    env = {"torch": torch, "nn": nn, "F": F, "np": np}
    rng = torch.get_rng_state()
    torch.manual_seed(0)
    try:
        exec(compile(tree, "<test>", "exec"), env)  # noqa: S102 - the course's own question code
        return "value", eval(compile(ast.Expression(last.value), "<test>", "eval"), env)
    except Exception as exc:  # noqa: BLE001
        return "raised", exc
    finally:
        torch.set_rng_state(rng)


@pytest.mark.parametrize("qid", IDS)
def test_expected_answer_is_what_the_code_gives(qid):
    q = P.QUESTIONS[qid]
    how, got = _rerun(q.code)
    want = P.expected(qid)
    if q.kind == "exception":
        assert how == "raised", f"{qid}: the code must raise, it gave {got!r}"
        assert type(got).__name__ in want.names
        return
    assert how == "value", f"{qid}: the code raised {got!r}"
    if q.kind == "shape":
        assert isinstance(got, torch.Size) and tuple(got) == want
    elif q.kind == "dtype":
        assert isinstance(got, torch.dtype) and got == want
    else:
        plain = got.tolist() if isinstance(got, torch.Tensor) else got
        assert P.same_value(P._plain(plain), want) and type(P._plain(plain)) is type(want)


def _spellings(qid):
    q, want = P.QUESTIONS[qid], P.expected(qid)
    if q.kind == "shape":
        return [want, list(want), torch.Size(want), str(want), str(list(want)), str(torch.Size(want)),
                f"'{torch.Size(want)}'"] + ([want[0]] if len(want) == 1 else [])
    if q.kind == "dtype":
        name = str(want).removeprefix("torch.")
        return [want, str(want), name, f"'{want}'", f'"{name}"', f"  {want}  "]
    if q.kind == "exception":
        cls = want.type
        out = [cls, cls.__name__, f"{cls.__module__}.{cls.__name__}", f"{cls.__name__}()", f"'{cls.__name__}'"]
        for name in want.names - {cls.__name__}:  # the nearest built-in base is accepted too
            out += [name, getattr(builtins, name)]
        return out
    out = [want, repr(want)]
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        out += [torch.tensor(want), float(want), str(want)]
    if isinstance(want, bool):
        out += [str(want).lower()]
    if isinstance(want, list):
        out += [tuple(want)]
    return out


@pytest.mark.parametrize("qid", IDS)
def test_every_accepted_spelling_passes(qid):
    for answer in _spellings(qid):
        res = P.check(qid, answer)
        assert res.status == "correct", (qid, answer, res.text())
        assert P.QUESTIONS[qid].explanation in res.details, "the explanation follows a right answer too"


def _wrong(qid):
    q, want = P.QUESTIONS[qid], P.expected(qid)
    if q.kind == "shape":
        return [want + (2,), want[::-1] if len(set(want)) > 1 else want + (1,), ()]
    if q.kind == "dtype":
        return [torch.float64 if want != torch.float64 else torch.float32, "int8", "torch.bool"]
    if q.kind == "exception":
        return ["ZeroDivisionError", KeyError, "no error", None]
    if isinstance(want, bool):
        return [not want, int(want), None]
    if isinstance(want, (int, float)):
        return [want + 1, want * 2 + 1, -want - 1, None, str(want + 1)]
    if isinstance(want, list):
        return [want[::-1] if len(want) > 1 else want + ["x"], want[:-1], []]
    return [None]


@pytest.mark.parametrize("qid", IDS)
def test_wrong_answers_fail_with_the_answer_and_the_explanation(qid):
    for answer in _wrong(qid):
        res = P.check(qid, answer)
        assert res.status == "incorrect", (qid, answer, res.text())
        assert P.show(qid) in res.message and P.QUESTIONS[qid].explanation in res.details


@pytest.mark.parametrize("qid", IDS)
def test_placeholder_is_not_attempted_and_reveals_nothing(qid):
    for answer in (..., "", "   ", "..."):
        res = P.check(qid, answer)
        assert res.status == "not_attempted", (qid, answer)
        assert P.show(qid) not in res.text() and P.QUESTIONS[qid].explanation not in res.text()
        assert not res.details


class _Hostile:
    def __eq__(self, other):
        raise RuntimeError("eq")

    def __repr__(self):
        raise RuntimeError("repr")

    def __iter__(self):
        raise RuntimeError("iter")


@pytest.mark.parametrize("answer", [object(), _Hostile(), "(" * 500, "x" * 100_000, [[1, [2]]], {"a": 1},
                                    float("nan"), 10**400, b"float32", "torch.nonexistent", "1 +", type])
def test_bad_input_is_feedback_never_a_crash(answer):
    from course_utils import extras

    usable = extras.torchvision_problem() is None  # the torchvision lessons' code needs it to run
    for qid in [q for q in IDS if usable or P.QUESTIONS[q].lesson not in extras.TORCHVISION_LESSONS]:
        res = P.check(qid, answer)
        assert res.status in ("correct", "incorrect"), (qid, answer)
        if res.mistake == "unreadable":  # a typo is not an attempt: nothing revealed
            assert P.show(qid) not in res.text() and not res.details


def test_unknown_question_and_learner_handles():
    assert P.check("01_tensors.nope", 1).status == "incorrect"
    assert P.check(None, 1).status == "incorrect"  # type: ignore[arg-type]
    quiz = predictions_for("01_tensors")
    assert quiz.broadcast_shape((3, 4)).passed and quiz.broadcast_shape().status == "not_attempted"
    assert "broadcast_shape" in dir(quiz) and "col + row" in repr(quiz.broadcast_shape)
    with pytest.raises(AttributeError, match="no predict question"):
        quiz.nope  # noqa: B018
    with pytest.raises(AttributeError):
        quiz.broadcast_shape = None


def test_checking_restores_rng_grad_mode_and_default_dtype():
    P.expected.cache_clear()
    torch.manual_seed(123)
    state, grad, dtype = torch.get_rng_state(), torch.is_grad_enabled(), torch.get_default_dtype()
    with torch.no_grad():
        for qid in IDS:
            P.check(qid, ...)
            P.check(qid, "0")
        assert not torch.is_grad_enabled()
    assert torch.equal(torch.get_rng_state(), state) and torch.is_grad_enabled() == grad
    assert torch.get_default_dtype() == dtype


# ---------------------------------------------------------------------- in the notebooks


def _quiz_call(source: str) -> tuple[str, ast.expr] | None:
    """``(name, argument)`` of a cell that is one call ``quiz.<name>(<argument>)``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "quiz" and len(call.args) == 1):
        return call.func.attr, call.args[0]
    return None


def _solution(stem):
    return nbformat.read(build.SOLUTIONS / f"{stem}.ipynb", as_version=4)


@pytest.mark.parametrize("stem", LESSONS)
def test_lesson_asks_three_to_five_questions_before_their_answers(stem):
    nb = _solution(stem)
    asked = {}
    for i, cell in enumerate(nb.cells):
        found = _quiz_call(cell.source) if cell.cell_type == "code" else None
        if found:
            name, arg = found
            assert build.PREDICT_BEGIN in cell.source, f"{stem} cell {i}: answer outside the PREDICTION markers"
            assert name not in asked, f"{stem}: {name} asked twice"
            asked[name] = i
            qid = f"{stem}.{name}"
            assert qid in P.QUESTIONS, qid
            answer = eval(compile(ast.Expression(arg), "<cell>", "eval"), {"torch": torch})
            assert P.check(qid, answer).passed, f"{qid}: the solution's answer {answer!r} does not pass"
    declared = {q.name for q in P.QUESTIONS.values() if q.lesson == stem}
    assert set(asked) == declared, f"{stem}: declared but not asked: {declared - set(asked)}"
    assert 3 <= len(asked) <= 5, f"{stem} asks {len(asked)} questions"
    for name, i in asked.items():
        q = P.QUESTIONS[f"{stem}.{name}"]
        shows = [j for j, c in enumerate(nb.cells) if c.cell_type == "code" and q.shown_by in c.source]
        assert shows, f"{q.id}: no code cell shows the answer ({q.shown_by!r})"
        assert shows[0] > i, f"{q.id}: cell {shows[0]} shows the answer before the question (cell {i})"


@pytest.mark.parametrize("stem", LESSONS)
def test_learner_notebook_has_placeholders_that_are_not_attempted(stem):
    learner = build.learner_notebook(_solution(stem), stem)
    calls = [(c, _quiz_call(c.source)) for c in learner.cells if c.cell_type == "code"]
    calls = [(c, found) for c, found in calls if found]
    assert len(calls) >= 3
    for cell, (name, arg) in calls:
        assert "PREDICTION" not in cell.source and build.RAISES not in cell.metadata.get("tags", [])
        assert isinstance(arg, ast.Constant) and arg.value is ..., cell.source
        assert P.check(f"{stem}.{name}", ...).status == "not_attempted"
    generated = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert [c.source for c in generated.cells if _quiz_call(c.source)] == [c.source for c, _ in calls]


def test_prediction_stub_grammar():
    src = "quiz.a(\n    ### BEGIN PREDICTION\n    (3, 4)\n    ### END PREDICTION\n)"
    out = build.prediction_stub(src)
    assert out == f"quiz.a(\n    {build.PREDICT_STUB}\n)" and "(3, 4)" not in out
    assert _quiz_call(out)[1].value is ...
    assert build.prediction_stub("x = 1") == "x = 1"
    for bad in ("### BEGIN PREDICTION\n1", "### END PREDICTION", "### BEGIN PREDICTION\n### BEGIN PREDICTION\n"):
        with pytest.raises(build.BuildError):
            build.prediction_stub(bad)


def test_nbgrader_release_holds_no_prediction_answers():
    from course_utils.instructor.nbgrader_export import nbgrader_notebook

    nb = nbgrader_notebook("01_tensors")
    calls = [c for c in nb.cells if c.cell_type == "code" and _quiz_call(c.source)]
    assert len(calls) >= 3 and all(_quiz_call(c.source)[1].value is ... for c in calls)
    assert not any("PREDICTION" in c.source for c in nb.cells)


def test_predictions_are_logged_and_folded_apart_from_exercises(tmp_path, monkeypatch):
    """Each prediction is a `prediction` event in the progress log; the fold counts the first
    attempt (after it the answer is shown) and exercise progress ignores predictions."""
    from course_utils import progress

    log = tmp_path / "progress.jsonl"
    monkeypatch.setenv(progress.ENV_VAR, str(log))
    quiz = predictions_for("01_tensors")
    quiz.broadcast_shape(...)          # not attempted: logged, but no attempt
    quiz.broadcast_shape((4, 3))       # wrong first
    quiz.broadcast_shape((3, 4))       # then right
    quiz.int_div_dtype("float32")      # right at once
    events = progress.read_events(log)
    assert [e["event"] for e in events] == ["prediction"] * 4
    assert [e["status"] for e in events] == ["not_attempted", "incorrect", "correct", "correct"]
    folded = progress.prediction_progress(events)
    shape, dtype = folded["01_tensors.broadcast_shape"], folded["01_tensors.int_div_dtype"]
    assert (shape.attempts, shape.first_right, shape.right) == (2, False, True)
    assert (dtype.attempts, dtype.first_right, dtype.right) == (1, True, True)
    assert progress.exercise_progress(events) == {}


def test_exception_questions_ask_what_fixes_it_rather_than_the_class():
    """Issue 26: 10 of 14 exception questions had the answer `RuntimeError`, a guess that is
    right most of the time and teaches nothing ("Exception questions ask what the message names
    or what fixes it, not the class"). All 14 now ask which of four changes works, and no
    question asks for an exception's class."""
    for qid in ("01_tensors.broadcast_error", "08_convolutions.channels_last_error", "02_autograd.second_backward",
                "05_training_loop.int32_targets", "05_training_loop.column_targets",
                "06_losses_optimizers.float_index_targets", "09_persistence.strict_missing_keys",
                "00_start_here.item_of_two", "03_nn_module.empty_optimizer", "03_nn_module.batchnorm_one_example",
                "04_data.ragged_collate", "06_losses_optimizers.bce_shape_mismatch",
                "09_persistence.weights_only_refuses", "09_persistence.shape_mismatch_not_strict"):
        q = P.QUESTIONS[qid]
        assert q.kind == "value" and "which" in q.prompt.lower(), qid
        assert isinstance(P.expected(qid), list) and 0 < len(P.expected(qid)) < 4, qid  # some, never all
        for guess in ("RuntimeError", "ValueError", "UnpicklingError"):
            assert P.check(qid, guess).status == "incorrect"
    assert [q.id for q in P.QUESTIONS.values() if q.kind == "exception"] == []
