"""gradient_is_wrong: a teammate's hand-written backwards, checked against finite differences.

Each case is the teammate's six losses (a custom ``autograd.Function`` inside each), some with a
wrong backward: a sign, a missing factor, a transposed matrix, wrong only where x < 0, or an
approximation (tanh GELU) off by 3e-5 to 8e-3 relative. x comes in float32. Right verdicts need
float64 (float32's central difference is ~1e-3 off at its best eps), an eps between ~1e-4
(truncation: a wave with third derivative 12³) and ~1e-8 (rounding: the losses carry an
offset), and a tolerance relative to the gradient's size (scales 1e-8 to 1e6). The check records
every input the answer feeds a loss, and names a wrong verdict by what it saw there.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ...answers.l02_autograd import gradient_is_wrong
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases: the teammate's losses, loss(x) = scale · (offset + Σ w · op(x))
class _ByHand(torch.autograd.Function):
    """y = f(x) elementwise, with the teammate's derivative ``df`` as its backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, f: Any, df: Any) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.df = df
        return f(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (x,) = ctx.saved_tensors
        return grad * ctx.df(x), None, None


class _Mix(torch.autograd.Function):
    """y = x @ M, with the teammate's backward (M where M.T belongs when ``transposed``)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, m: torch.Tensor, transposed: bool) -> torch.Tensor:
        ctx.save_for_backward(m)
        ctx.transposed = transposed
        return x @ m

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (m,) = ctx.saved_tensors
        return grad @ (m if ctx.transposed else m.T), None, None


def _cdf(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * (1 + torch.erf(x / math.sqrt(2)))


def _gelu_tanh_slope(x: torch.Tensor) -> torch.Tensor:
    """The derivative of the tanh approximation of GELU (a real bug: the forward uses erf)."""
    c = math.sqrt(2 / math.pi)
    t = torch.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


_WAVE = 12.0
# name: (forward, right derivative, the teammate's wrong one or None: always right)
_OPS: dict[str, tuple[Any, Any, Any]] = {
    "softplus": (F.softplus, torch.sigmoid, lambda x: -torch.sigmoid(x)),  # sign
    "tanh2x": (lambda x: torch.tanh(2 * x), lambda x: 2 / torch.cosh(2 * x) ** 2,
               lambda x: 1 / torch.cosh(2 * x) ** 2),  # the chain rule's factor 2 forgotten
    "elu": (lambda x: torch.where(x > 0, x, torch.expm1(x)), lambda x: torch.where(x > 0, 1.0, torch.exp(x)),
            lambda x: torch.where(x > 0, 1.0, torch.expm1(x))),  # wrong only where x < 0
    "gelu": (lambda x: x * _cdf(x), lambda x: _cdf(x) + x * torch.exp(-x * x / 2) / math.sqrt(2 * math.pi),
             _gelu_tanh_slope),  # ~1e-4 relative: float32 cannot see it
    "wave": (lambda x: torch.sin(_WAVE * x) / _WAVE, lambda x: torch.cos(_WAVE * x), None),  # eps too large: flagged
}
NAMES = (*_OPS, "mix")
SUBTLE = "gelu"


class TeammateLoss:
    """One of the teammate's losses: ``loss(x)`` is a scalar tensor in ``x``'s dtype."""

    def __init__(self, op: str, wrong: bool, w: torch.Tensor, m: torch.Tensor, offset: float, scale: float):
        f, right, bad = _OPS.get(op, (None, False, True))
        self.op, self._f, self._df, self._w, self._m = op, f, bad if wrong else right, w, m
        self._offset, self._scale = offset, scale

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        w = self._w.to(x.dtype)
        if self.op == "mix":
            y = _Mix.apply(x, self._m.to(x.dtype), self._df)
        else:
            y = _ByHand.apply(x, self._f, self._df)
        return self._scale * (self._offset + (w * y).sum())


def _teammate(r: Rand, op: str, wrong: bool, scale: float, transposed: bool) -> tuple[TeammateLoss, torch.Tensor]:
    shape = (r.integer(2, 3), r.integer(2, 3)) if r.integer(0, 1) else (r.integer(2, 6),)
    x = r.randn(*shape, dtype=torch.float64)
    flat = x.view(-1)
    flat[0], flat[-1] = flat[0].abs() + 0.2, -flat[-1].abs() - 0.2  # x < 0 somewhere, not at [0]
    if op == SUBTLE:
        flat[1] = r.uniform(1.2, 2.5) * r.choice([-1.0, 1.0])  # where erf and tanh GELU differ most
    x = x.float()
    if transposed and x.dim() == 2:
        x = x.T.contiguous().T  # the same values, non-contiguous
    n = x.shape[-1]
    w = r.randn(*x.shape, dtype=torch.float64) + 0.5
    m = r.randn(n, n, dtype=torch.float64) + torch.eye(n, dtype=torch.float64)
    return TeammateLoss(op, wrong, w, m, r.uniform(5.0, 20.0), scale), x


def _case(r: Rand, wrong: set[str], scales: dict[str, float], transposed: bool | None = None, label: str = "") -> Case:
    """The six losses, their x, and (never shown to the answer) the truth: which backwards are wrong."""
    pairs = [_teammate(r, op, op in wrong, scales.get(op, 1.0),
                       r.integer(0, 1) == 1 if transposed is None else transposed) for op in NAMES]
    return Case((pairs,), {"truth": {op: (op in wrong, scales.get(op, 1.0)) for op in NAMES}}, label=label)


def _cases(r: Rand) -> Case:
    wrong = {op for op in NAMES if op != "wave" and r.integer(0, 1) == 1}
    return _case(r, wrong, {op: r.choice([1e-8, 1.0, 1e6]) for op in NAMES})


_EDGE_CASES = [
    # (Rand(106): gelu's backward is off by 2.4e-4, below float32's ~1e-3 and gradcheck's rtol)
    _case(Rand(106), {"elu", "gelu"}, {}, True, "the teammate's six losses, x in float32, every gradient of size ~1"),
    _case(Rand(12), {"softplus", "mix"}, {"wave": 1e6, "tanh2x": 1e6, "softplus": 1e-8, "mix": 1e-8}, True,
          "the six losses scaled: gradients of size 1e-8 to 1e6"),
]


# --- run and probes: every input the answer feeds a loss is recorded (what it nudged, by how much)
def _watched(loss: TeammateLoss, fed: list[torch.Tensor]) -> Any:
    def watched(t: torch.Tensor) -> torch.Tensor:
        fed.append(t.detach().clone())  # read after the answer returns (the hot path stays cheap)
        return loss(t)
    return watched


def _evidence(x: torch.Tensor, fed: list[torch.Tensor]) -> dict[str, Any]:
    """What the answer fed one loss: its dtypes, and its nudges (size, sign, which elements)."""
    same = [t for t in fed if isinstance(t, torch.Tensor) and t.shape == x.shape]
    d = (torch.stack(same).double() - x.double()).reshape(len(same), -1) if same else torch.zeros(0, x.numel())
    moved = d != 0
    d = d[moved.any(1)]
    size = d.abs().amax(1) if d.numel() else d.new_zeros(0)
    return {"dtypes": sorted({str(t.dtype).replace("torch.", "") for t in fed if isinstance(t, torch.Tensor)}),
            "steps": size.tolist(), "signs": sorted({1 if v > 0 else -1 for v in d.sum(1).tolist()}),
            "nudged": int(moved.any(0).sum()), "numel": x.numel()}


_VERDICT = Expect("not_a_verdict", "`True` or `False`", bool)


def _run(answer: Any, case: Case) -> dict[str, Any]:
    (losses,) = case.args
    verdicts, evidence = {}, {}
    for loss, x in losses:
        fed: list[torch.Tensor] = []
        before = x.clone()
        out = answer(_watched(loss, fed), x)
        if not (x.dtype == before.dtype and torch.equal(x.detach(), before) and not x.requires_grad):
            raise Incorrect("mutated_input")
        if isinstance(out, torch.Tensor) and out.numel() == 1 and out.dtype == torch.bool:
            out = bool(out)
        _VERDICT.check(out)
        verdicts[loss.op], evidence[loss.op] = out, _evidence(before, fed)
    return {"verdicts": verdicts, "evidence": evidence}


def _finish(ran: dict[str, Any], case: Case) -> dict[str, bool]:
    """The verdicts; a wrong one is named by what the answer fed the loss it misjudged."""
    verdicts, evidence, truth = ran["verdicts"], ran["evidence"], case.kwargs["truth"]
    for op, (wrong, scale) in truth.items():
        evidence[op].update(wrong=wrong, scale=scale)
    missed = [op for op, v in verdicts.items() if v != truth[op][0]]
    if not missed:
        return verdicts
    seen = [evidence[op] for op in missed]
    steps = [s for e in seen for s in e["steps"]]
    if steps and all("float64" not in e["dtypes"] for e in seen):
        raise Incorrect("float32_check", loss=missed[0])
    if steps and all(e["signs"] == [1] for e in seen):
        raise Incorrect("forward_difference", loss=missed[0])
    if steps and max(steps) >= 5e-4:
        raise Incorrect("eps_too_large", eps=max(steps), loss=missed[0])
    if steps and min(steps) < 1e-9:
        raise Incorrect("eps_too_small", eps=min(steps), loss=missed[0])
    if steps and any(0 < e["nudged"] < e["numel"] for e in seen):
        one = next(e for e in seen if 0 < e["nudged"] < e["numel"])
        raise Incorrect("checked_one_element", nudged=one["nudged"], numel=one["numel"], loss=missed[0])
    if steps and missed == [SUBTLE] and truth[SUBTLE][0]:
        raise Incorrect("loose_tolerance", loss=SUBTLE)
    if steps and all((e["scale"] > 1 and not e["wrong"]) or (e["scale"] < 1 and e["wrong"]) for e in seen):
        raise Incorrect("absolute_tolerance", loss=missed[0])
    return verdicts


# --- wrong answers: the reference's steps with one decision changed
def _checker(dtype=torch.float64, eps=1e-6, forward=False, rtol=1e-6, atol=0.0, first_only=False, in_place=False):
    def answer(fn, x):
        if in_place:
            x.requires_grad_()  # the caller's x: it leaves requiring grad
        x = x.detach().to(dtype)
        with torch.enable_grad():
            xg = x.clone().requires_grad_()
            exact = torch.autograd.grad(fn(xg), xg)[0].reshape(-1)
        flat, n = x.reshape(-1), (1 if first_only else x.numel())
        numeric = torch.zeros_like(exact)
        for i in range(n):
            step = torch.zeros_like(flat)
            step[i] = eps
            down = fn(x) if forward else fn((flat - step).reshape(x.shape))
            numeric[i] = (fn((flat + step).reshape(x.shape)) - down) / (eps if forward else 2 * eps)
        diff, size = (exact[:n] - numeric[:n]).abs(), numeric[:n].abs()
        return bool((diff > atol + rtol * size.max()).any()) if atol else bool(diff.norm() > rtol * size.norm())
    return answer


# --- declaration
_WHICH = "(the teammate's `{loss}` loss, for one)"
register(Exercise(
    lesson=LESSON, name="gradient_is_wrong", title="Catch the teammate's wrong backwards",
    reference=gradient_is_wrong, cases=_cases, edge_cases=_EDGE_CASES, run=_run, finish=_finish,
    compare=Compare(), timeout=10.0, n_random=4, arg_names=("losses",),
    forbid=("torch.autograd.gradcheck", "torch.autograd.gradgradcheck", "torch.autograd.gradcheck.gradcheck",
            "torch.autograd.gradcheck.gradgradcheck", "torch.autograd.gradcheck.get_numerical_jacobian",
            "torch.autograd.gradcheck.get_analytical_jacobian"),
    rule_mistake="used_gradcheck",
    mistakes=[
        Mistake("float32_check",
                "A wrong verdict " + _WHICH + ", and every input you gave that loss was float32. How many "
                "digits does float32 keep, and how many does a difference of two nearly equal losses "
                "lose? Could a right backward and one off by 1e-4 look the same at that precision?",
                _checker(dtype=torch.float32, eps=1e-3, rtol=1e-3), match_output=False),
        Mistake("forward_difference",
                "A wrong verdict " + _WHICH + ", and you only ever nudged x upwards. How fast does a "
                "one-sided difference's error shrink with eps, compared with one that nudges both ways?",
                _checker(forward=True), match_output=False),
        Mistake("eps_too_large",
                "A wrong verdict " + _WHICH + ", and you nudged x by {eps:.0e}. What does the "
                "truncation error of your difference do when the loss curves fast (a large third "
                "derivative)? Section 11's plot shows where the error is smallest in float64.",
                _checker(eps=1e-2), match_output=False),
        Mistake("eps_too_small",
                "A wrong verdict " + _WHICH + ", and you nudged x by {eps:.0e}. Two losses that close "
                "differ in how many of float64's digits? What does rounding do to their difference "
                "divided by eps? Section 11's plot shows where the error is smallest.",
                _checker(eps=1e-12), match_output=False),
        Mistake("checked_one_element",
                "A wrong verdict " + _WHICH + ", and you nudged {nudged} of x's {numel} elements. Can "
                "a backward be right at the elements you checked and wrong at the others (where x < 0, "
                "say)?",
                _checker(first_only=True), match_output=False),
        Mistake("absolute_tolerance",
                "Your wrong verdicts are all about losses whose gradients are very large or very small "
                "(the teammate's `{loss}` loss, for one). Is an error of 1e-6 a lot for a gradient of "
                "size 1e6? For one of size 1e-8? What should your tolerance be measured against?",
                _checker(rtol=0.0, atol=1e-6), match_output=False),
        Mistake("loose_tolerance",
                "The only wrong verdict is that you passed the teammate's `{loss}`, whose backward is off "
                "by only a little (as little as 1e-4 of the gradient's size). How close to autograd does "
                "a float64 central difference get at a good eps? Could your tolerance be tighter than that bug?",
                _checker(rtol=1e-3), match_output=False),
        Mistake("mutated_input",
                "Your function left the caller's `x` changed (its values, dtype or `requires_grad`). "
                "Which operations give you a tensor of your own to nudge and to differentiate?",
                _checker(in_place=True), match_output=False),
        _VERDICT.mistake(lambda fn, x: None),
        Mistake("used_gradcheck",
                "Your function called `{op}`: this exercise builds the check it runs. Compare autograd's "
                "gradient with your own difference quotients.",
                lambda fn, x: not torch.autograd.gradcheck(fn, (x.double().requires_grad_(),), raise_exception=False),
                match_output=False),
    ],
    hints=[
        "What do you compare with what? Autograd's gradient at x is one side; what estimate of the "
        "gradient needs no backward at all?",
        "Three choices decide the verdicts: the dtype you compute in, the size of the nudge, and what "
        "you call 'too far apart'. Section 11's plot answers the first two.",
        "A gradient of size 1e6 and one of size 1e-8 cannot share one absolute threshold: compare the "
        "difference with the size of the gradient itself.",
    ],
))
