"""MySiLU: a custom ``torch.autograd.Function`` for SiLU, x · sigmoid(x), with a hand-written backward.

Subtle: the check compares the backward with the analytic derivative under a random upstream
gradient (ignoring ``grad_output`` or using only the sigmoid's derivative is named), then runs
``gradcheck`` in float64 (a float32-accurate forward would fail it and blame the backward).
The backward must not hand the work back to autograd, and must not change ``grad_output``.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, answer_grad_mode, register
from course_utils.grading.runner import outside_the_rule

from ...answers.l02_autograd import MySiLU
from ._kit import LESSON
from ._kit import close, small_shape


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases
def _cases(r: Rand) -> Case:
    shape = small_shape(r)
    x = (r.randn(*shape, dtype=torch.float64) * 2).requires_grad_(True)
    return Case((x,), {"upstream": r.randn(*shape, dtype=torch.float64)})


_EDGE_CASES = [
    Case((torch.tensor([-30.0, -1.0, 0.0, 1.0, 30.0], dtype=torch.float64, requires_grad=True),),
         {"upstream": torch.tensor([0.5, -1.0, 2.0, 1.5, -0.5], dtype=torch.float64)}, label="x = -30, -1, 0, 1, 30"),
    Case((torch.tensor(0.75, dtype=torch.float64, requires_grad=True),),
         {"upstream": torch.tensor(-2.0, dtype=torch.float64)}, label="a 0-d x = 0.75"),
    Case((torch.tensor([[1e-3, -4.0], [8.0, -1e-3]], dtype=torch.float64, requires_grad=True),),
         {"upstream": torch.tensor([[1.0, 0.0], [-3.0, 2.5]], dtype=torch.float64)},
         label="a 2x2 x, an upstream gradient with a zero"),
]


# --- run and probes
# "backward by hand" (Exercise.forbid within the answer's backward only: the check itself runs it
# through torch.autograd.grad): autograd asked to differentiate, however reached
_BY_AUTOGRAD = ("torch.autograd.grad", "torch.autograd.backward", "Tensor.backward", "torch.enable_grad",
                "torch.set_grad_enabled", "torch.nn.functional.silu", "aten.silu", "aten.silu_backward",
                "torch.func.vjp", "torch.func.grad", "torch.func.jacrev", "torch.autograd.functional.vjp",
                "torch.autograd.functional.jacobian")


_FUNCTION = Expect("not_a_function", "a subclass of `torch.autograd.Function`",
                   lambda a: isinstance(a, type) and issubclass(a, torch.autograd.Function), said="You passed",
                   advice="`MySiLU` needs `forward` and a hand-written `backward`, both staticmethods.")


def _forward(answer: Any, x: torch.Tensor, upstream: torch.Tensor) -> tuple[Any, torch.Tensor | None]:
    """``answer.apply(x)`` and the gradient it sends back for ``upstream`` (None: not reached)."""
    before = x.detach().clone()
    with answer_grad_mode():
        y = answer.apply(x)
        if not torch.equal(x.detach(), before):
            raise Incorrect("mutated_input")
        s = torch.sigmoid(before)
        if not (isinstance(y, torch.Tensor) and close(y, before * s, 1e-7, 1e-9)):
            return y, None  # a wrong forward: the output comparison reports it
        if y.dtype == before.dtype and not close(y, before * s, 1e-12, 1e-15):
            # right to float32 precision only: gradcheck would fail and blame the backward
            raise Incorrect("imprecise_forward")
        if y.grad_fn is None:
            return y, None
        upstream_before = upstream.clone()
        (gx,) = torch.autograd.grad(y, x, upstream, retain_graph=True, allow_unused=True)
        if not torch.equal(upstream, upstream_before):
            raise Incorrect("mutated_grad_output")
    if gx is None:
        raise Incorrect("backward_returned_none")
    return y, gx


def _run(answer: Any, case: Case) -> Any:
    (x,) = case.args
    upstream = case.kwargs["upstream"]
    _FUNCTION.check(answer)
    before = x.detach().clone()
    y, gx = _forward(answer, x, upstream)
    if gx is None:
        return y
    s = torch.sigmoid(before)
    local = s * (1 + before * (1 - s))
    if not close(gx, upstream * local, 1e-7, 1e-9):
        if close(gx, local, 1e-7, 1e-9):
            raise Incorrect("ignored_grad_output")
        if close(gx, upstream * s * (1 - s), 1e-7, 1e-9):
            raise Incorrect("sigmoid_derivative_only")
        raise Incorrect("wrong_backward")
    with outside_the_rule():  # (the backward was watched above; gradcheck calls it many times more)
        if not torch.autograd.gradcheck(answer.apply, (before.clone().requires_grad_(True),), raise_exception=False):
            raise Incorrect("failed_gradcheck")
    if answer is not MySiLU and issubclass(answer, MySiLU):
        raise Incorrect("used_reference")
    return y


# --- wrong answers
class _IgnoresUpstream(MySiLU):
    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return s * (1 + x * (1 - s))


class _SigmoidGrad(MySiLU):
    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s * (1 - s)


class _SignError(MySiLU):
    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * (s - x * s * (1 - s))


class _ReturnsNone(MySiLU):
    @staticmethod
    def backward(ctx, grad_output):
        return None


class _InPlace(MySiLU):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x.mul_(s)


class _Float32Forward(MySiLU):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, torch.sigmoid(x))
        return (x.float() * torch.sigmoid(x.float())).to(x.dtype)


class _ScalesGradOutputInPlace(MySiLU):
    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output.mul_(s * (1 + x * (1 - s)))


class _FromReference(MySiLU):
    pass


class _BackwardByAutograd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            t = x.detach().requires_grad_()
            return torch.autograd.grad(torch.nn.functional.silu(t), t, grad_output)[0]


class _SigmoidNotSiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * s * (1 - s)


class _ModuleNotFunction:
    """Not a Function: autograd differentiates ``F.silu`` itself, no backward is written."""

    apply = staticmethod(torch.nn.functional.silu)


# --- declaration
register(Exercise(
    lesson=LESSON, name="MySiLU", title="A custom autograd.Function for SiLU that passes gradcheck",
    reference=MySiLU, kind="class", arg_names=["x"],  # a Function's signature is (*args, **kwargs)
    cases=_cases, edge_cases=_EDGE_CASES, run=_run,
    forbid=_BY_AUTOGRAD, forbid_within="backward", rule_mistake="backward_not_by_hand",
    timeout=6.0,  # gradcheck on every case; 3 s was too tight on a busy 2-core machine
    compare=Compare(grad=True, rtol=1e-7, atol=1e-9),
    mistakes=[
        Mistake("ignored_grad_output",
                "Your backward returns the local derivative but ignores `grad_output`. Autograd "
                "hands backward the gradient of the final result with respect to your output; "
                "multiply by it (chain rule): `return grad_output * local_derivative`.",
                _IgnoresUpstream, match_output=False),
        Mistake("sigmoid_derivative_only",
                "Your backward uses the sigmoid's derivative s·(1−s), but the output is x·s: by the "
                "product rule its derivative is s + x·s·(1−s).",
                _SigmoidGrad, match_output=False),
        Mistake("mutated_input",
                "Your forward changed its input in place (`x.mul_(...)`, `x *= ...`). The caller's "
                "tensor is modified and autograd's bookkeeping breaks. Return a new tensor: `x * s`.",
                _InPlace, match_output=False),
        Mistake("wrong_forward", "Your forward returns sigmoid(x). SiLU is x · sigmoid(x).", _SigmoidNotSiLU),
        Mistake("wrong_backward",
                "Your backward does not return the gradient of x·sigmoid(x) times `grad_output`. "
                "Check it by hand against `torch.autograd.gradcheck(MySiLU.apply, (x,))` with a "
                "float64 `x` that requires grad.",
                _SignError, match_output=False),
        _FUNCTION.mistake(_ModuleNotFunction),
        Mistake("backward_returned_none",
                "Your backward returned None, so no gradient reaches x. Return "
                "`grad_output * (derivative of x·sigmoid(x))`.",
                _ReturnsNone, match_output=False),
        Mistake("failed_gradcheck",
                "`torch.autograd.gradcheck` rejects your Function: its backward disagrees with finite "
                "differences of its forward.",
                match_output=False),
        Mistake("imprecise_forward",
                "Your forward is only about float32-accurate on a float64 input (a `.float()` somewhere?), "
                "so finite differences of it, as gradcheck takes them, are wrong. Compute in the input's "
                "dtype: `x * torch.sigmoid(x)`.",
                _Float32Forward, match_output=False),
        Mistake("mutated_grad_output",
                "Your backward changed `grad_output` in place (`g.mul_(...)`, `g *= ...`): that tensor "
                "belongs to autograd (or to the caller who passed `grad_outputs`). Return a new tensor: "
                "`grad_output * local_derivative`.",
                _ScalesGradOutputInPlace, match_output=False),
        Mistake("used_reference",
                "Your class inherits from the course's reference `MySiLU`; write your own `forward` and "
                "`backward`.",
                _FromReference, match_output=False),
        Mistake("backward_not_by_hand",
                "The exercise says: a `torch.autograd.Function` “whose `backward` returns the correct "
                "gradient”, written by hand. Your backward uses `{op}`, so autograd does the work. Use "
                "the product rule: `grad_output * (s + x * s * (1 - s))` with `s = torch.sigmoid(x)`.",
                _BackwardByAutograd, match_output=False),
    ],
    hints=[
        "forward computes x·sigmoid(x) and must save, on ctx, whatever backward will need; backward "
        "receives grad_output and reads back what was saved (read about save_for_backward and "
        "saved_tensors).",
        "d/dx [x·s(x)] = s + x·s·(1−s) (product rule, with s' = s·(1−s)). backward returns grad_output "
        "times that derivative, by the chain rule.",
    ],
))
