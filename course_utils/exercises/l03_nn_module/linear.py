"""Linear: a drop-in ``nn.Linear`` from ``nn.Parameter``, its behaviour found out by measuring it.
The notebook states the goal (checkpoints both ways, code written for ``nn.Linear`` runs unchanged,
a fresh layer starts where ``nn.Linear`` starts) and shows measurements of fresh ``nn.Linear``
layers of four shapes (largest |weight| and |bias|, std, an 8-bin histogram); the learner decides
the rule from them (uniform, +-1/sqrt(in_features), bias alike, from the global RNG) and finds
the state_dict (``weight`` (out, in), ``bias`` (out,) or no entry and ``layer.bias is None``) and
the accepted inputs (any number of leading dimensions) by asking ``nn.Linear``.

Subtle: a weight stored (in, out) computes right with ``x @ W`` but will not load an nn.Linear checkpoint;
``bias=False`` answered with a zero Parameter adds a key; ``kaiming_uniform_`` without ``a=sqrt(5)`` is
sqrt(6) times too wide, a bound from ``out_features`` is another layer's; ``x.mm``/``addmm`` work on 2-D inputs
only. The initial distribution is checked on a large layer (a probe), and that it follows the global RNG (same
seed, same layer; another seed, another; a private generator seeded with a constant fails); the forward runs
with weights loaded from an nn.Linear-shaped state_dict.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._linear_checks import (PROBE_IN, PROBE_OUT, check_init as _check_init, check_parameters as _check_parameters,
                             distribution_verdict)
from ._kit import (LESSON, MISSING_SUPER_INIT, BUILDS_MODULE, PARAMETER_NOT_TRAINED, build, check_reference_grads,
                   gen, param_grads, ran)

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import Linear


# --- cases
def _cases(r: Rand) -> Case:
    n_in, n_out = r.integer(2, 9), r.integer(2, 9)
    n_out = n_out if n_out != n_in else n_out + 1
    lead = r.choice([(), (r.integer(1, 6),), (r.integer(1, 3), r.integer(2, 4)), (2, 2, r.integer(1, 3))])
    return Case((n_in, n_out), {"bias": r.choice([True, True, False]), "lead": lead,
                                "seed": r.integer(0, 2**31)}, show_inputs=True)


EDGE_CASES = [
    # first: the shapes of a forward without the transpose fit only here, so it is named here
    Case((3, 3), {"bias": True, "lead": (2,), "seed": 2}, label="Linear(3, 3): as many inputs as outputs"),
    Case((4, 3), {"bias": True, "lead": (5,), "seed": 1}, label="Linear(4, 3) on a batch of 5"),
    Case((5, 2), {"bias": False, "lead": (2, 7), "seed": 3}, label="Linear(5, 2, bias=False) on (2, 7, 5)"),
    Case((6, 4), {"bias": True, "lead": (), "seed": 4}, label="Linear(6, 4) on one sample of shape (6,)"),
    Case((1, 1), {"bias": True, "lead": (3, 1), "seed": 5}, label="Linear(1, 1) on (3, 1, 1)"),
]


# --- run and probes
def _make(answer: Any, case: Case) -> nn.Module:
    n_in, n_out = case.args
    bias = case.kwargs["bias"]
    return build(answer, n_in, n_out) if bias else build(answer, n_in, n_out, False)


def _values(g: torch.Generator, n_in: int, n_out: int, bias: bool) -> dict[str, torch.Tensor]:
    """An nn.Linear-shaped state_dict drawn from ``g`` (weight (out, in), then bias (out,))."""
    state = {"weight": torch.randn((n_out, n_in), generator=g) * 0.5}
    if bias:
        state["bias"] = torch.randn((n_out,), generator=g) * 0.5
    return state


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): its structure and initial values,
    then its forward with nn.Linear-shaped weights and the gradients its parameters get."""
    n_in, n_out = case.args
    bias = case.kwargs["bias"]
    model = _make(answer, case)
    _check_parameters(model, n_in, n_out, bias)
    if n_in == n_out:  # a square layer hides a weight stored (in, out): look at a rectangular one too
        with torch.random.fork_rng(devices=[]):
            _check_parameters(build(answer, n_in, n_out + 1, bias), n_in, n_out + 1, bias)
    _check_init(model, n_in, n_out)
    g = gen(case.kwargs["seed"])
    model.load_state_dict(_values(g, n_in, n_out, bias))  # an nn.Linear checkpoint loads into yours
    x = torch.randn(*case.kwargs["lead"], n_in, generator=g).requires_grad_(True)
    with answer_grad_mode():
        out = model(x)
    return {"out": out, "grads": param_grads(out, list(model.named_parameters()), g)}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: the lesson's own layer with the same weights, on the same input."""
    data = ran(data, "out", "grads")
    out = data["out"]
    n_in, n_out = case.args
    bias = case.kwargs["bias"]
    g = gen(case.kwargs["seed"])
    with torch.random.fork_rng(devices=[]):
        reference = Linear(n_in, n_out, bias)
    with torch.no_grad():
        for (name, value) in _values(g, n_in, n_out, bias).items():
            getattr(reference, name).copy_(value)
    x = torch.randn(*case.kwargs["lead"], n_in, generator=g).requires_grad_(True)
    if isinstance(out, torch.Tensor) and out.shape == x.shape[:-1] + (n_out,) and n_in == n_out:
        w = reference.weight.detach()
        b = reference.bias.detach() if bias else torch.zeros(n_out)
        if torch.allclose(out.detach(), x.detach() @ w + b, atol=1e-5) and not torch.allclose(
                out.detach(), x.detach() @ w.T + b, atol=1e-5):
            raise Incorrect("forward_transposed")
    check_reference_grads(out, reference, x, data["grads"], dict(reference.named_parameters()), g)
    return out


def _probe_distribution(answer: Any, r: Rand) -> dict:
    """The initial values of a large layer, and of three small ones built after `manual_seed`
    (the same seed twice, then another): plain data judged by ``distribution_verdict``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(r.integer(0, 2**31))
        large = {k: p.detach().clone() for k, p in build(answer, PROBE_IN, PROBE_OUT).named_parameters()}
    seed, layers = r.integer(0, 2**31), []
    for s in (seed, seed, seed + 1):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            layers.append({k: v.detach().clone() for k, v in build(answer, 7, 5).state_dict().items()})
    return {"large": large, "layers": layers}


# --- wrong answers
class _NotAModule:
    def __init__(self, in_features, out_features, bias=True):
        self.args = (in_features, out_features)


class _NoSuper(Linear):
    def __init__(self, in_features, out_features, bias=True):  # no super().__init__()
        self.weight = nn.Parameter(torch.zeros(out_features, in_features))


class _TensorWeight(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        w = self.weight.detach()
        del self.weight
        self.weight = w


class _Transposed(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        return x @ self.weight + (0 if self.bias is None else self.bias)


class _ZeroBiasParameter(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, True)
        if not bias:
            with torch.no_grad():
                self.bias.zero_()


class _NoBiasAttribute(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        if not bias:
            del self.bias


class _KaimingDefault(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        nn.init.kaiming_uniform_(self.weight)  # a=0: sqrt(6) times too wide


class _FanOut(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        bound = out_features ** -0.5
        with torch.no_grad():
            for p in self.parameters():
                p.uniform_(-bound, bound)


class _ZeroBias(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class _Normal(Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        with torch.no_grad():
            for p in self.parameters():
                p.normal_(0.0, in_features ** -0.5 / 3 ** 0.5).clamp_(-(in_features ** -0.5), in_features ** -0.5)


class _OwnGenerator(nn.Module):
    """Weights from a private generator seeded with a constant: every layer of a shape starts alike."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        g, bound = torch.Generator().manual_seed(0), in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound, generator=g))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound, generator=g)) if bias else None

    def forward(self, x):
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias


class _TwoDOnly(Linear):
    def forward(self, x):
        out = x.mm(self.weight.t())
        return out if self.bias is None else out + self.bias


class _NoTranspose(Linear):
    def forward(self, x):  # the weight is (out, in): right only if it were stored (in, out)
        return x @ self.weight + (0 if self.bias is None else self.bias)


class _DetachedBias(Linear):
    def forward(self, x):
        out = x @ self.weight.T
        return out if self.bias is None else out + self.bias.detach()


# --- declaration
register(Exercise(
    lesson=LESSON, name="Linear", title="A drop-in nn.Linear: checkpoint, inputs and init found out by measuring it",
    reference=Linear, kind="class", cases=_cases, edge_cases=EDGE_CASES, run=_run, finish=_finish,
    probes=[_probe_distribution], finish_probe=distribution_verdict, uses_global_rng=True,
    forbid=("torch.nn.functional.linear", "torch.nn.Linear", "torch.nn.LazyLinear"),
    rule_text="Do not use `nn.Linear` or `F.linear` inside it",
    mistakes=[
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        BUILDS_MODULE.mistake(_NotAModule),
        Mistake("unregistered", "Your layer's `state_dict()` lacks a weight or a bias: a plain tensor attribute "
                "is not registered, so it is never trained, saved or moved with `.to()`.", _TensorWeight,
                match_output=False),
        Mistake("weight_transposed", "Your weight has shape (in_features, out_features). Yours computes, but an "
                "`nn.Linear` checkpoint (weight of shape (out_features, in_features)) will not load into it, "
                "nor yours into an `nn.Linear`.", _Transposed, match_output=False),
        Mistake("bias_not_optional", "With `bias=False` your layer still has a bias entry in its `state_dict` "
                "(a bias of zeros is still a parameter the optimizer updates); an `nn.Linear(..., bias=False)` "
                "checkpoint has none.", _ZeroBiasParameter, match_output=False),
        Mistake("no_bias_attribute", "With `bias=False` your layer has no `bias` attribute at all. `nn.Linear` "
                "has one that is `None`, and code such as `if m.bias is not None:` (the init of this lesson) "
                "relies on it; an attribute can be registered as an absent parameter.", _NoBiasAttribute,
                match_output=False),
        Mistake("wrong_parameters", "Your layer's parameters are not those of `nn.Linear` (float32, requiring "
                "grad, in the state_dict as {got} against `weight` (out, in) and `bias` (out,)).",
                match_output=False),
        Mistake("init_scale", "Some initial values lie outside ±1/√in_features, the range `nn.Linear` draws "
                "from (`kaiming_uniform_` with its default `a=0` is √6 times wider; `nn.Linear` passes "
                "`a=√5`).", _KaimingDefault, match_output=False),
        Mistake("init_fan_out", "Your initial values are spread by `out_features`; the range depends on the "
                "number of *inputs* each output sums over.", _FanOut, match_output=False),
        Mistake("bias_init_zero", "Your bias starts at zero; `nn.Linear` draws it from the same range as the "
                "weight.", _ZeroBias, match_output=False),
        Mistake("init_not_uniform", "Your initial {name} stays in the range but is not spread like a uniform "
                "draw over all of it (its standard deviation or mean is off).", _Normal, match_output=False),
        Mistake("init_not_global_rng", "Your initial values do not follow the global random stream: {what}. "
                "`nn.Linear` draws from it, so `torch.manual_seed(s)` before building makes the init "
                "reproducible, and layers built one after another start differently; a generator of your own "
                "seeded with a constant gives every layer of a shape the same weights.", _OwnGenerator,
                match_output=False),
        Mistake("two_d_only", "Your forward only works for a 2-D input (N, in_features): `mm`/`addmm` take "
                "matrices. `nn.Linear` accepts one sample or any number of leading dimensions.", _TwoDOnly),
        Mistake("forward_transposed", "Your forward multiplies by the weight as stored, (out, in), instead of "
                "its transpose: with as many inputs as outputs the shapes fit and the numbers are wrong.",
                _NoTranspose, match_output=False),
        Mistake("parameter_not_trained", PARAMETER_NOT_TRAINED, _DetachedBias, match_output=False),
    ],
    hints=[
        "Which of the four measured shapes share their largest weight, and what happens to it when "
        "in_features is multiplied by 4? Are the eight bins of the histogram filled evenly, or more in "
        "the middle?",
        "The width of the range follows one of the two sizes, as one over its square root; evenly filled "
        "bins mean a uniform draw, and the bias comes from the same range. Without a bias, the layer has "
        "no entry for it but still answers None when asked, and it treats every dimension but the last "
        "as a batch.",
        "The names to look up: `nn.Parameter`, `Tensor.uniform_`, `Module.register_parameter`, and the "
        "matrix product `torch.matmul` (which broadcasts, unlike `Tensor.mm`).",
    ],
))
