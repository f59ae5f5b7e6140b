"""Predict-the-output questions: retrieval practice, checked in place.

Each question is declared once in :data:`QUESTIONS` with the code it asks about; the expected
answer is what that code produces on the installed torch (computed, never typed by hand). In a
notebook::

    quiz = predictions_for("01_tensors")
    quiz.int_div_dtype(
        ### BEGIN PREDICTION
        torch.float32
        ### END PREDICTION
    )

``build`` turns the block between the PREDICTION markers into ``...`` in the learner notebook,
and ``...`` (or an empty string) reads as "not attempted" without revealing anything. After any
attempt, right or wrong, the check shows the answer and the explanation (an answer it cannot
read, such as a typo, only gets told how to write one). A check never raises.
Each prediction made in a notebook is written to the progress log as a ``prediction`` event
(:func:`course_utils.progress.prediction_progress` folds them), so the room view can show which
questions a workshop gets wrong at the first try.
"""

from __future__ import annotations

import ast
import builtins
import math
import warnings
from functools import cache
from typing import Any

from . import predict_questions  # noqa: F401  (declares the questions)
from .feedback import Result
from .question import ALL, Question

# How to write an answer; the examples are deliberately answers to none of the questions.
HOW = {
    "shape": "a shape such as `(5, 7)`, `[5, 7]` or `torch.Size([5, 7])`",
    "dtype": "a dtype such as `torch.int8` or `'int8'`",
    "value": "a value such as `42`, `0.25`, `True`, `None` or `['x', 'y']`",
    "exception": "the name of an exception such as `'KeyError'` (or the class itself)",
}


# ---------------------------------------------------------------------- the answer, computed


class _Raised:
    """What running a question's code raised (the expected answer of an exception question)."""

    def __init__(self, exc: BaseException):
        self.type = type(exc)

    @property
    def names(self) -> set[str]:
        """The class's own name, and the nearest built-in base's (``RuntimeError`` for
        ``torch._C._LinAlgError``), never ``Exception`` or ``BaseException``."""
        out = {self.type.__name__}
        for base in self.type.__mro__:
            if getattr(builtins, base.__name__, None) is base and base not in (Exception, BaseException, object):
                out.add(base.__name__)
                break
        return out

    def __repr__(self) -> str:
        return self.type.__name__


def run_code(code: str) -> Any:
    """Run ``code`` and return the value of its last expression (or a :class:`_Raised`).
    The global RNG, grad mode and default dtype are restored afterwards."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    tree = ast.parse(code)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body.pop()
    env: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "np": np, "__name__": "__predict__"}
    rng, grad, dtype = torch.get_rng_state(), torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(tree, "<predict>", "exec"), env)  # noqa: S102 - the course's own code
                if last is None:
                    return None
                return eval(compile(ast.Expression(last.value), "<predict>", "eval"), env)
            except Exception as exc:  # noqa: BLE001 - the exception IS the answer
                return _Raised(exc)
    finally:
        torch.set_rng_state(rng)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def _plain(value: Any) -> Any:
    """Tensors, sizes, dtypes and containers of them as plain comparable Python values."""
    import torch

    if isinstance(value, torch.Tensor):
        return _plain(value.tolist())
    if isinstance(value, torch.Size):
        return tuple(int(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@cache
def expected(question_id: str) -> Any:
    """The expected answer of a question, computed by running its code: a tuple of ints
    (shape), a ``torch.dtype``, a plain value, or a :class:`_Raised` (exception)."""
    q = QUESTIONS[question_id]
    value = run_code(q.code)
    if q.kind == "exception":
        if not isinstance(value, _Raised):
            raise TypeError(f"{q.id}: the code does not raise (it gives {value!r})")
        return value
    if isinstance(value, _Raised):
        raise TypeError(f"{q.id}: the code raises {value!r}")
    if q.kind == "shape":
        return tuple(int(v) for v in value)
    if q.kind == "dtype":
        return value
    return _plain(value)


def show(question_id: str) -> str:
    """The expected answer as the check writes it."""
    q, value = QUESTIONS[question_id], expected(question_id)
    if q.kind == "shape":
        return f"torch.Size({list(value)})"
    if q.kind == "exception":
        return value.type.__name__
    return repr(value)


# ---------------------------------------------------------------------- reading an attempt


class Unreadable(ValueError):
    pass


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise Unreadable(f"cannot read {text!r} as a Python value") from None


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1].strip()
    return text


def read_shape(answer: Any) -> tuple[int, ...]:
    import torch

    if isinstance(answer, str):
        text = _strip_quotes(answer)
        if text.startswith("torch.Size(") and text.endswith(")"):
            text = text[len("torch.Size("):-1].strip() or "()"
        elif text.startswith("Size(") and text.endswith(")"):
            text = text[len("Size("):-1].strip() or "()"
        answer = _literal(text) if text else ()
    if isinstance(answer, torch.Size):
        return tuple(int(v) for v in answer)
    if isinstance(answer, int) and not isinstance(answer, bool):
        return (answer,)
    if isinstance(answer, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in answer):
        return tuple(answer)
    raise Unreadable(f"a shape is a tuple of whole numbers; got {type(answer).__name__}")


def read_dtype(answer: Any) -> Any:
    import torch

    if isinstance(answer, torch.dtype):
        return answer
    if isinstance(answer, str):
        text = _strip_quotes(answer)
        name = text.removeprefix("torch.")
        value = getattr(torch, name, None) if name.isidentifier() else None
        if isinstance(value, torch.dtype):
            return value
        raise Unreadable(f"{text!r} is not the name of a torch dtype")
    raise Unreadable(f"a dtype is `torch.<name>` or its name as a string; got {type(answer).__name__}")


NO_ERROR = {"none", "no error", "no exception", "nothing", "no", "it works", "works", "fine"}


def read_exception(answer: Any) -> str:
    """The exception's class name, or ``"<no exception>"`` for a prediction that it works."""
    if answer is None or (isinstance(answer, str) and _strip_quotes(answer).lower().rstrip(".!") in NO_ERROR):
        return "<no exception>"
    if isinstance(answer, type) and issubclass(answer, BaseException):
        return answer.__name__
    if isinstance(answer, BaseException):
        return type(answer).__name__
    if isinstance(answer, str):
        text = _strip_quotes(answer)
        text = text.removesuffix("()")
        name = text.rsplit(".", 1)[-1].strip()
        if name.isidentifier():
            return name
        raise Unreadable(f"{text!r} is not the name of an exception")
    raise Unreadable(f"give the exception's name, not a {type(answer).__name__}")


def read_value(answer: Any, want: Any) -> Any:
    if isinstance(answer, str) and not isinstance(want, str):
        text = _strip_quotes(answer)
        if text in ("true", "false"):
            text = text.title()
        answer = _literal(text)
    return _plain(answer)


def same_value(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and got == want
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, int) or float(want).is_integer():  # counts and exact results: exactly
            return got == want
        return math.isclose(got, want, rel_tol=1e-6) or (math.isnan(got) and math.isnan(want))
    if isinstance(want, list) and isinstance(got, (list, tuple)):
        return len(got) == len(want) and all(same_value(g, w) for g, w in zip(got, want))
    if isinstance(want, dict) and isinstance(got, dict):
        return list(got) == list(want) and all(same_value(got[k], want[k]) for k in want)
    return type(got) is type(want) and got == want


def not_attempted(answer: Any) -> bool:
    return answer is ... or (isinstance(answer, str) and not answer.strip()) or (
        isinstance(answer, str) and answer.strip() == "...")


def check(question_id: str, answer: Any) -> Result:
    """Check a prediction; never raises. ``...`` or an empty string is "not attempted"."""
    q = QUESTIONS.get(question_id) if isinstance(question_id, str) else None
    if q is None:
        return Result(str(question_id), "incorrect", f"No predict question {question_id!r}.", "unknown_question")
    if not_attempted(answer):
        return Result(q.id, "not_attempted",
                      f"Replace `...` with your prediction ({HOW[q.kind]}), then run the cell.")
    try:
        want = expected(q.id)
        if q.kind == "shape":
            ok = read_shape(answer) == want
        elif q.kind == "dtype":
            ok = read_dtype(answer) == want
        elif q.kind == "exception":
            ok = read_exception(answer) in want.names
        else:
            ok = same_value(read_value(answer, want), want)
    except Unreadable as exc:  # a typo is not a prediction: say how to write one, reveal nothing
        return Result(q.id, "incorrect", f"Could not read your prediction: {exc}. Answer with {HOW[q.kind]}.",
                      "unreadable")
    except Exception as exc:  # noqa: BLE001 - a check never crashes a lesson
        return Result(q.id, "incorrect", f"Could not read your prediction ({type(exc).__name__}: {exc}). "
                      f"Answer with {HOW[q.kind]}.", "unreadable")
    if ok:
        return Result(q.id, "correct", f"Right: `{show(q.id)}`.", details=[q.explanation])
    try:
        mine = repr(answer)[:200]
    except Exception:  # noqa: BLE001
        mine = f"a {type(answer).__name__}"
    return Result(q.id, "incorrect", f"You predicted `{mine}`; the code gives `{show(q.id)}`.", "wrong_prediction",
                  details=[q.explanation])


# ---------------------------------------------------------------------- the questions

QUESTIONS: dict[str, Question] = {}


def _register() -> None:
    for q in ALL:
        if q.id in QUESTIONS:
            raise ValueError(f"duplicate predict question {q.id}")
        QUESTIONS[q.id] = q


_register()
