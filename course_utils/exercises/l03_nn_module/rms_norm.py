"""RMSNorm: a custom layer with its own ``nn.Parameter`` (``weight``, ones) and an ``eps``.

Subtle: several mistakes give the right values with the wrong gradients (an RMS computed
outside the graph, ``self.weight.data``), so right values are followed by a gradient check of
both the input and the weight; wrong values are tested against the usual slips (another
dimension, no eps) to name them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._kit import LESSON, MISSING_SUPER_INIT, NOT_A_MODULE, build, gen

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import RMSNorm


# --- cases
def _cases(r: Rand) -> Case:
    dim = r.integer(2, 9)
    batch = r.choice([b for b in range(2, 10) if b != dim])
    if r.integer(0, 1):
        shape = [batch, dim]
    else:
        shape = [batch, r.choice([t for t in range(2, 6) if t not in (dim, batch)]), dim]
    return Case((dim, round(r.uniform(0.1, 1.0), 3)), {"seed": r.integer(0, 2**31), "shape": shape},
                show_inputs=True)


EDGE_CASES = [
    # the default eps (1e-6) only shows on tiny activations: mean(x²) ≈ 1e-6 here
    Case((5,), {"seed": 11, "shape": [3, 5], "scale": 1e-3}, label="RMSNorm(5) with its default eps, tiny x"),
    Case((4, 0.5), {"seed": 12, "shape": [1, 4]}, label="RMSNorm(4, eps=0.5) on one sample", show_inputs=True),
    Case((3, 1e-6), {"seed": 13, "shape": [2, 6, 3]}, label="RMSNorm(3) on a (2, 6, 3) batch of sequences"),
    Case((1, 0.1), {"seed": 14, "shape": [4, 1]}, label="RMSNorm(1, eps=0.1): one feature"),
    # N = dim: a mean over dim 0 has the right shape
    Case((4, 0.2), {"seed": 15, "shape": [4, 4]}, label="RMSNorm(4, eps=0.2) on a (4, 4) x"),
]


# --- run and probes
def _over(x: torch.Tensor, weight: torch.Tensor, eps: float, dim: int) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(dim=dim, keepdim=True) + eps) * weight


def _weight(model: nn.Module, dim: int) -> tuple[str, nn.Parameter]:
    """The one registered parameter, checked: its shape, name, dtype, start and grad flag."""
    params = list(model.named_parameters())
    if not params:
        raise Incorrect("unregistered_parameters")
    if len(params) != 1 or tuple(params[0][1].shape) != (dim,):
        raise Incorrect("wrong_parameters", dim=dim, got=[(n, tuple(p.shape)) for n, p in params])
    name, weight = params[0]
    if name.rsplit(".", 1)[-1] != "weight":  # (a wrapped nn.RMSNorm's `norm.weight` is fine)
        raise Incorrect("weight_name", got=name)
    if weight.dtype == torch.float64:
        raise Incorrect("float64_drift")
    if not torch.equal(weight.detach(), torch.ones(dim, dtype=weight.dtype)):
        raise Incorrect("wrong_init")
    if not weight.requires_grad:
        raise Incorrect("frozen_weight")
    return name, weight


def _forward(module: nn.Module, x: torch.Tensor) -> Any:
    try:
        with answer_grad_mode():
            return module(x)
    except RuntimeError as exc:
        if "leaf Variable that requires grad is being used in an in-place operation" in str(exc):
            raise Incorrect("mutated_input") from None
        raise


def _run(answer: Any, case: Case) -> Any:
    dim = case.args[0]
    eps = case.args[1] if len(case.args) > 1 else 1e-6  # `RMSNorm(dim)`: the default eps
    g = gen(case.kwargs["seed"])
    model = build(answer, *case.args)
    name, weight = _weight(model, dim)
    new_weight = torch.randn(dim, generator=g) * 0.5 + 1.0
    model.load_state_dict({name: new_weight}, strict=False)
    x = torch.randn(*case.kwargs["shape"], generator=g).mul_(case.kwargs.get("scale", 2.0)).requires_grad_(True)
    before = x.detach().clone()
    out = _forward(model, x)
    if not torch.equal(x.detach(), before):
        raise Incorrect("mutated_input")
    if not (isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype and out.requires_grad):
        return out
    if not torch.allclose(out.detach(), _over(before, new_weight, eps, -1), rtol=1e-4, atol=1e-5):
        for d in range(x.dim() - 1):
            if torch.allclose(out.detach(), _over(before, new_weight, eps, d), rtol=1e-4, atol=1e-5):
                raise Incorrect("wrong_dim")
        if eps != 1e-6 and torch.allclose(out.detach(), _over(before, new_weight, 1e-6, -1), rtol=1e-4, atol=1e-5):
            # the default 1e-6 whatever was asked, or no eps at all? Tiny inputs tell them apart
            tiny = before * 1e-3
            with torch.no_grad():
                probe = _forward(model, tiny.clone())
            if isinstance(probe, torch.Tensor) and probe.shape == tiny.shape and torch.allclose(
                    probe.detach(), _over(tiny, new_weight, 1e-6, -1), rtol=1e-4, atol=1e-5):
                raise Incorrect("eps_argument_ignored", eps=eps)
        if torch.allclose(out.detach(), _over(before, new_weight, 0.0, -1), rtol=1e-4, atol=1e-5):
            raise Incorrect("ignored_eps")
        return out  # other wrong values: the output comparison reports them
    # right values: the gradients must be right too (a `.detach()`ed RMS or `weight.data` give
    # the same values and wrong gradients)
    upstream = torch.randn(out.shape, generator=g)
    gx, gw = torch.autograd.grad(out, [x, weight], upstream, allow_unused=True, retain_graph=True)
    if gx is None:
        raise Incorrect("graph_cut")
    xr = before.clone().requires_grad_(True)
    wr = new_weight.clone().requires_grad_(True)
    want_gx, want_gw = torch.autograd.grad(_over(xr, wr, eps, -1), [xr, wr], upstream)
    if not torch.allclose(gx, want_gx, rtol=1e-4, atol=1e-5):
        raise Incorrect("partial_graph_cut")
    if gw is None or not torch.allclose(gw, want_gw, rtol=1e-4, atol=1e-5):
        raise Incorrect("weight_outside_graph")
    return out


# --- wrong answers
class _NotAModule:  # no `(nn.Module)`
    def __init__(self, dim, eps=1e-6):
        self.args = (dim,)


class _NoSuper(RMSNorm):
    def __init__(self, dim, eps=1e-6):  # no super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))


class _TensorWeight(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        del self.weight
        self.weight = torch.ones(dim)


class _ScalarWeight(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        self.weight = nn.Parameter(torch.ones(1))


class _NamedGamma(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        self.gamma = self._parameters.pop("weight")

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.gamma


class _NumpyOnes(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        import numpy as np

        super().__init__(dim, eps)
        self.weight = nn.Parameter(torch.from_numpy(np.ones(dim)))


class _ZeroWeight(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        self.weight = nn.Parameter(torch.zeros(dim))


class _FrozenWeight(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        self.weight.requires_grad_(False)


class _InPlace(RMSNorm):
    def forward(self, x):
        return x.div_(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)) * self.weight


class _OverDim0(RMSNorm):
    def forward(self, x):
        return _over(x, self.weight, self.eps, 0)


class _NoEps(RMSNorm):
    def forward(self, x):
        return _over(x, self.weight, 0.0, -1)


class _DefaultEpsAlways(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim)  # the argument is dropped: self.eps is 1e-6 whatever was asked


class _ThroughPython(RMSNorm):
    def forward(self, x):
        rms = torch.tensor(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps).tolist())
        return x.detach() / rms * self.weight


class _DetachedRms(RMSNorm):
    def forward(self, x):
        return x / torch.sqrt(x.detach().pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class _WeightData(RMSNorm):
    def forward(self, x):
        return _over(x, self.weight.data, self.eps, -1)


# --- declaration
register(Exercise(
    lesson=LESSON, name="RMSNorm", title="A custom layer with its own nn.Parameter: RMSNorm",
    reference=RMSNorm, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("unregistered_parameters",
                "Your RMSNorm has no parameters: a tensor stored as a plain attribute is not registered, so it "
                "is never trained or saved. Wrap it: `self.weight = nn.Parameter(torch.ones(dim))`.",
                _TensorWeight, match_output=False),
        Mistake("wrong_parameters", "RMSNorm(dim={dim}) should have exactly one parameter of shape ({dim},); "
                "yours are {got}.", _ScalarWeight, match_output=False),
        Mistake("weight_name",
                "The text asks for one `nn.Parameter` named `weight`; yours is `{got}`. The name is the "
                "state_dict key: a standard RMSNorm checkpoint (key `weight`) would not load into yours. "
                "`self.weight = nn.Parameter(torch.ones(dim))`.",
                _NamedGamma, match_output=False),
        Mistake("wrong_dim",
                "You averaged over a dimension other than the features. RMSNorm normalises each feature "
                "vector, i.e. over the last dimension: `x.pow(2).mean(dim=-1, keepdim=True)`.",
                _OverDim0, match_output=False),
        Mistake("float64_drift",
                "Your weight is float64, so `x * weight` turns every float32 activation into float64 (slower, "
                "twice the memory, and a dtype error in the next matmul). NumPy arrays are float64: create it "
                "with `torch.ones(dim)` (float32).",
                _NumpyOnes, match_output=False),
        Mistake("mutated_input",
                "Your forward changes its input in place (an op ending in `_`, `/=`, `*=`): the caller's tensor "
                "is modified and autograd refuses it on a leaf. Compute new tensors (`x / rms`, not "
                "`x.div_(rms)`).",
                _InPlace, match_output=False),
        Mistake("graph_cut",
                "No gradient reaches the input: somewhere your forward leaves the graph (`.item()`, "
                "`.tolist()`, `.numpy()`, `torch.tensor(...)` on an intermediate, or `.detach()`). Use tensor "
                "operations throughout.",
                _ThroughPython, match_output=False),
        Mistake("eps_argument_ignored",
                "Your module used eps = 1e-6 although it was made with `RMSNorm(dim, eps={eps})`: store the "
                "argument (`self.eps = eps`) and use that.", _DefaultEpsAlways, match_output=False),
        Mistake("ignored_eps",
                "You left out eps: add it inside the square root, `torch.sqrt(mean_of_squares + self.eps)`.",
                _NoEps, match_output=False),
        Mistake("partial_graph_cut",
                "Your values are right but the gradient with respect to `x` is not: part of the forward (the "
                "RMS?) is computed outside the graph (`.detach()`, `.data`, `torch.tensor(...)`), so autograd "
                "misses how it depends on x. Compute everything from `x` itself with tensor operations.",
                _DetachedRms, match_output=False),
        Mistake("weight_outside_graph",
                "No gradient (or the wrong one) reaches your weight: the forward uses it outside autograd "
                "(`self.weight.data`, `.detach()`, a copy), so training would never change it. Multiply by "
                "`self.weight` itself.",
                _WeightData, match_output=False),
        Mistake("frozen_weight",
                "Your weight does not require grad, so it can never learn. Leave `requires_grad` at its "
                "default: `self.weight = nn.Parameter(torch.ones(dim))`.",
                _FrozenWeight, match_output=False),
        Mistake("wrong_init", "The weight should start as all ones, so a fresh RMSNorm only rescales.",
                _ZeroWeight, match_output=False),
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        Mistake("not_a_module", NOT_A_MODULE, _NotAModule, match_output=False),
    ],
    hints=[
        "Two parts: in `__init__`, a learnable per-feature gain registered as a parameter (starting at "
        "ones) and `eps`; in `forward`, the formula over the last dimension.",
        "The root mean square is taken over the features of each vector (the last dimension) and must "
        "keep a size-1 dimension so the division broadcasts; `eps` goes inside the square root.",
    ],
))
