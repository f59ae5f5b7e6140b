"""huber: the Huber function, element by element, differentiable end to end.

An inverse problem: the notebook states the slope (x inside [-delta, delta], ±delta beyond), h(0) = 0
and no jump, and gives no formula; the learner integrates and fixes the two constants
(``missing_offset``: slopes right, the pieces do not meet; ``not_zero_at_zero``: both shifted;
``returned_the_slope``: the clamp itself).

Subtle: a Python ``if`` on a tensor, ``.item()`` or NumPy may give the right numbers on small
inputs but are what the text forbids; the probe hands the answer a tensor that refuses to
become a Python bool, number or NumPy array. Known autograd errors become named mistakes.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ...answers.l02_autograd import huber
from ._kit import LESSON
from ._kit import small_shape

_RULE = "No Python `if` on the tensor, no `.item()`, no NumPy, no in-place changes to `x`."


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.randn(*small_shape(r)).mul_(2).requires_grad_(), round(r.uniform(0.5, 2.0), 3)))


_EDGE_CASES = [
    Case((torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0], requires_grad=True), 1.0),
         label="x from -3 to 3 with delta = 1"),
    Case((torch.tensor([[-2.0, 0.3, 1.5], [0.8, -0.1, 4.0]], requires_grad=True), 1.2),
         label="a 2x3 x with delta = 1.2"),
    # exactly at ±delta (both pieces meet), a 0-d x, float64 and large |x|
    Case((torch.tensor([-0.75, 0.75, 0.7, -0.8], requires_grad=True), 0.75),
         label="x at and next to ±delta = 0.75", show_inputs=True),
    Case((torch.tensor(-2.5, requires_grad=True), 0.5), label="a 0-d x = -2.5 with delta = 0.5"),
    Case((torch.tensor([[1e3, -0.2], [-1e4, 0.05]], dtype=torch.float64, requires_grad=True), 2.0),
         label="a float64 x with large values, delta = 2"),
    Case((torch.zeros(0, requires_grad=True), 1.0), label="an empty x"),
]


# --- run and probes
def _run(answer: Any, case: Case) -> Any:
    """Call the answer with grad mode on; turn autograd errors we know into named mistakes."""
    try:
        with answer_grad_mode():
            return answer(*case.args)
    except RuntimeError as exc:
        msg = str(exc)
        if "Boolean value of Tensor with more than one" in msg:
            raise Incorrect("python_if_on_tensor") from None
        if "leaf Variable that requires grad is being used in an in-place operation" in msg:
            raise Incorrect("in_place_on_input") from None
        if "Can't call numpy() on Tensor that requires grad" in msg:
            raise Incorrect("numpy_detour") from None
        raise


class _RuleBroken(Exception):
    pass


class _Guarded(torch.Tensor):
    """A tensor that refuses to become a Python bool, number, list or NumPy array: what the
    huber text forbids (a Python `if` on the tensor, `.item()`, NumPy). Results of torch ops on
    it are _Guarded too, so an `if` on `x.abs() <= delta` or on one element is seen."""

    def __bool__(self):
        raise _RuleBroken("if")

    def item(self):
        raise _RuleBroken("item")

    def tolist(self):
        raise _RuleBroken("item")

    def __float__(self):
        raise _RuleBroken("item")

    def numpy(self, *args, **kwargs):
        raise _RuleBroken("numpy")

    def __array__(self, *args, **kwargs):
        raise _RuleBroken("numpy")


_WHAT = {
    "if": "a Python `if` (or `and`/`or`/`bool()`) decides on a tensor value",
    "item": "it turns tensor values into Python numbers (`.item()`, `float()`, `.tolist()`)",
    "numpy": "it goes through NumPy",
}


def _rules_probe(answer: Any, r: Rand) -> None:
    x = (r.randn(3, 4) * 2).requires_grad_(True)
    guarded = x.as_subclass(_Guarded)
    try:
        with answer_grad_mode():
            answer(guarded, 1.0)
    except _RuleBroken as broken:
        raise Incorrect("rule_broken", what=_WHAT[str(broken)]) from None
    except Exception:  # noqa: BLE001 - errors of the answer itself were reported by the cases
        return


# --- wrong answers
def _item_per_element(x, delta):
    pieces = [0.5 * v**2 if abs(v.item()) <= delta else delta * (v.abs() - 0.5 * delta) for v in x.flatten()]
    return torch.stack(pieces).reshape(x.shape) if pieces else huber(x, delta)


def _through_python_numbers(x, delta):
    values = [0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta) for v in x.flatten().tolist()]
    return torch.tensor(values).reshape(x.shape)


# --- declaration
register(Exercise(
    lesson=LESSON, name="huber", title="Find the loss whose slope is x, capped at ±delta, and write it differentiably",
    reference=huber, cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    probes=[_rules_probe],
    # the pieces are one or two float ops: a different but valid order of operations (a
    # clamp-based formula, F.huber_loss) differs by a few ulp; assert_close's float defaults
    compare=Compare(grad=True),
    mistakes=[
        Mistake("python_if_on_tensor",
                "A Python `if` on a tensor with many elements raised \"Boolean value of Tensor with "
                "more than one value is ambiguous\": `if` picks one branch for the whole tensor. "
                "Choose element by element with `torch.where(condition, a, b)`.",
                lambda x, delta: (0.5 * x**2) if x.abs() <= delta else delta * (x.abs() - 0.5 * delta),
                match_output=False),
        Mistake("graph_cut",
                "Your result has the right values but is not connected to `x`'s graph, so no "
                "gradient can flow back. Building it from Python numbers (`.item()`, `.tolist()`, "
                "then `torch.tensor(...)`) or through NumPy makes a brand-new tensor with no "
                "history. Stay in torch: `torch.where(x.abs() <= delta, ..., ...)`.",
                _through_python_numbers, match_output=False),
        Mistake("numpy_detour",
                "You called `.numpy()` on a tensor that requires grad. NumPy has no autograd, so "
                "a detour through it cuts the graph (`.detach().numpy()` only hides the error). "
                "Use torch operations throughout: `torch.where`, `x.abs()`, `x**2`.",
                lambda x, delta: torch.from_numpy(abs(x.numpy())), match_output=False),
        Mistake("in_place_on_input",
                "Your code changed the input in place (an op ending in `_`, `+=`, or an indexed "
                "assignment), which autograd forbids on a leaf that requires grad. Compute new "
                "tensors instead (`x.abs()`, not `x.abs_()`).",
                lambda x, delta: torch.where(x.abs_() <= delta, 0.5 * x**2, delta * (x - 0.5 * delta)),
                match_output=False),
        Mistake("missing_offset",
                "Your slopes are right, but the outer piece starts higher than the inner one ends: at "
                "|x| = delta your loss jumps by delta²/2. Which constant makes the two pieces meet?",
                lambda x, delta: torch.where(x.abs() <= delta, 0.5 * x**2, delta * x.abs())),
        Mistake("missing_half",
                "Inside [-delta, delta] the slope of your loss is 2x, not x (the slope of x² is 2x): "
                "which function has slope x?",
                lambda x, delta: torch.where(x.abs() <= delta, x**2, delta * (x.abs() - 0.5 * delta))),
        Mistake("not_zero_at_zero",
                "Your slopes are right and the pieces meet, but your loss is not 0 at x = 0: both "
                "pieces are shifted by the same constant. The inner piece is fixed by h(0) = 0.",
                lambda x, delta: torch.where(x.abs() <= delta, 0.5 * x**2 - 0.5 * delta**2,
                                             delta * (x.abs() - delta))),
        Mistake("returned_the_slope",
                "You returned the slope (x clipped to [-delta, delta]), not the loss whose slope it is.",
                lambda x, delta: x.clamp(-delta, delta)),
        Mistake("rule_broken",
                f"The exercise says: “{_RULE}” Your code gives right numbers, but {{what}}: on a GPU or "
                "inside a compiled model that is slow or impossible (and Python numbers or NumPy cut the "
                "graph). Choose per element with `torch.where(x.abs() <= delta, inside, outside)`.",
                _item_per_element, match_output=False),
    ],
    hints=[
        "Which function has slope x? And which has the constant slope delta for x above delta, and -delta "
        "below -delta?",
        "Each piece is fixed only up to a constant: a loss of 0 at x = 0 fixes the inner one, and no jump at "
        "|x| = delta fixes the outer one (match the two values there). Then choose a piece per element by "
        "whether |x| is at most delta, in torch: a Python if, the item method or in-place ops break either "
        "batching or the graph.",
        "Look up torch.where: it picks per element between two tensors computed for every element.",
    ],
))
