"""RMSNorm: repair a first attempt that mixes padding into real tokens, gives NaN gradients and won't load.

A diagnosis: the first attempt (``dim=1``, eps after the root, one shared scale) and its symptoms are
shown; the learner decides which dimension is a vector's features at any rank, where eps goes and
where the scale lives. Subtle: an ``nn.RMSNorm`` checkpoint is loaded strictly first; right values
are followed by a gradient check (an RMS outside the graph, ``weight.data``) and a padding vector
(eps after the root: NaN gradients).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._kit import LESSON, MISSING_SUPER_INIT, BUILDS_MODULE, build, gen

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
    if len(params) == 1 and params[0][1].numel() == 1 and dim > 1:
        raise Incorrect("shared_scale")
    if len(params) != 1 or tuple(params[0][1].shape) != (dim,):
        raise Incorrect("wrong_parameters", dim=dim, got=[(n, tuple(p.shape)) for n, p in params])
    name, weight = params[0]
    if name != "weight":  # the checkpoint's key
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
    except IndexError as exc:  # `dim=2` for `dim=1`: right for one rank only
        if "Dimension out of range" in str(exc):
            raise Incorrect("rank_specific_dim", shape=tuple(x.shape)) from None
        raise


def _load_checkpoint(model: nn.Module, weight: torch.Tensor) -> None:
    """What `nn.RMSNorm(dim).state_dict()` holds, loaded strictly."""
    try:
        model.load_state_dict({"weight": weight.clone()})
    except RuntimeError as exc:
        raise Incorrect("checkpoint_mismatch", error=str(exc).strip().splitlines()[-1].strip()) from None


def _wrong_values(out: torch.Tensor, before: torch.Tensor, w: torch.Tensor, eps: float) -> None:
    """Name a wrong output: another dimension (or all of them), eps after the root."""
    def close(want: torch.Tensor) -> bool:
        return torch.allclose(out.detach(), want, rtol=1e-4, atol=1e-5)

    whole = before / torch.sqrt(before.pow(2).mean() + eps) * w
    if any(close(_over(before, w, eps, d)) for d in range(before.dim() - 1)) or close(whole):
        raise Incorrect("wrong_dim")
    if close(before / (before.pow(2).mean(dim=-1, keepdim=True).sqrt() + eps) * w):
        raise Incorrect("eps_outside_sqrt")


def _padding_probe(model: nn.Module, shape: list, g: torch.Generator) -> None:
    """A batch with one all-zero vector (padding): finite outputs and finite gradients."""
    x = torch.randn(*shape, generator=g)
    x.view(-1, shape[-1])[int(torch.randint(0, x.numel() // shape[-1], (1,), generator=g))] = 0.0
    x.requires_grad_(True)
    out = _forward(model, x)
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        return
    if not out.isfinite().all():
        raise Incorrect("ignored_eps")
    (gx,) = torch.autograd.grad(out, [x], torch.randn(out.shape, generator=g), allow_unused=True)
    if gx is not None and not gx.isfinite().all():
        raise Incorrect("nan_grad_at_zero")


def _run(answer: Any, case: Case) -> Any:
    dim = case.args[0]
    eps = case.args[1] if len(case.args) > 1 else 1e-6  # `RMSNorm(dim)`: the default eps
    g = gen(case.kwargs["seed"])
    model = build(answer, *case.args)
    name, weight = _weight(model, dim)
    new_weight = torch.randn(dim, generator=g) * 0.5 + 1.0
    _load_checkpoint(model, new_weight)
    x = torch.randn(*case.kwargs["shape"], generator=g).mul_(case.kwargs.get("scale", 2.0)).requires_grad_(True)
    before = x.detach().clone()
    out = _forward(model, x)
    if not torch.equal(x.detach(), before):
        raise Incorrect("mutated_input")
    if not (isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype and out.requires_grad):
        return out
    if not torch.allclose(out.detach(), _over(before, new_weight, eps, -1), rtol=1e-4, atol=1e-5):
        _wrong_values(out, before, new_weight, eps)
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
    _padding_probe(model, case.kwargs["shape"], g)
    return out


# --- wrong answers: small overrides of the reference
def _forward_is(f: Any) -> type:
    return type("Answer", (RMSNorm,), {"forward": lambda self, x: f(self, x)})


def _weight_is(make: Any, name: str = "weight") -> type:
    def __init__(self: Any, dim: int, eps: float = 1e-6) -> None:
        RMSNorm.__init__(self, dim, eps)
        del self.weight
        setattr(self, name, make(dim))
    return type("Answer", (RMSNorm,), {"__init__": __init__, "forward": lambda self, x: _over(
        x, getattr(self, name), self.eps, -1)})


_NotAModule = type("NotAModule", (), {"__init__": lambda self, dim, eps=1e-6: None})  # no `(nn.Module)`
_NoSuper = type("Answer", (RMSNorm,), {  # no super().__init__()
    "__init__": lambda self, dim, eps=1e-6: setattr(self, "weight", nn.Parameter(torch.ones(dim)))})
# the argument dropped: self.eps is 1e-6 whatever was asked
_DefaultEpsAlways = type("Answer", (RMSNorm,), {"__init__": lambda self, dim, eps=1e-6: RMSNorm.__init__(self, dim)})


class _EpsBuffer(RMSNorm):  # eps saved with the module: the torch checkpoint lacks it
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim)
        del self.eps
        self.register_buffer("eps", torch.tensor(eps))


_TensorWeight = _weight_is(lambda d: torch.ones(d))
_SharedScale = _weight_is(lambda d: nn.Parameter(torch.ones(1)))  # the first attempt's scale
_NamedGamma = _weight_is(lambda d: nn.Parameter(torch.ones(d)), name="gamma")
_FrozenWeight = _weight_is(lambda d: nn.Parameter(torch.ones(d), requires_grad=False))
_ZeroWeight = _weight_is(lambda d: nn.Parameter(torch.zeros(d)))
_NumpyOnes = _weight_is(lambda d: nn.Parameter(torch.from_numpy(__import__("numpy").ones(d))))
_InPlace = _forward_is(lambda s, x: x.div_(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + s.eps)) * s.weight)
_OverDim1 = _forward_is(lambda s, x: _over(x, s.weight, s.eps, 1))  # the first attempt's dim: right on (N, dim)
_LastOfThree = _forward_is(lambda s, x: _over(x, s.weight, s.eps, 2))  # "fixed" for sentences only
_EpsOutside = _forward_is(lambda s, x: x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + s.eps) * s.weight)
_RootOfRoot = _forward_is(lambda s, x: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True).sqrt() ** 2 + s.eps) * s.weight)
_NoEps = _forward_is(lambda s, x: _over(x, s.weight, 0.0, -1))
_ThroughPython = _forward_is(lambda s, x: x.detach() / torch.tensor(
    torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + s.eps).tolist()) * s.weight)
_DetachedRms = _forward_is(lambda s, x: x / torch.sqrt(x.detach().pow(2).mean(dim=-1, keepdim=True) + s.eps) * s.weight)
_WeightData = _forward_is(lambda s, x: _over(x, s.weight.data, s.eps, -1))

# --- declaration
register(Exercise(
    lesson=LESSON, name="RMSNorm", title="Repair an RMSNorm: each vector's features, eps's place, the scale's shape",
    reference=RMSNorm, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    forbid=("torch.nn.RMSNorm", "torch.nn.functional.rms_norm", "torch.rms_norm", "aten._fused_rms_norm*"),
    rule_text="write it yourself: no `nn.RMSNorm` or `F.rms_norm` inside",
    mistakes=[
        Mistake("shared_scale",
                "Your layer learns one scale shared by all features, like the first attempt: the checkpoint "
                "holds one per feature, so it cannot load, and a shared scale cannot weight the features "
                "differently. Where does the learned scale live?", _SharedScale, match_output=False),
        Mistake("unregistered_parameters",
                "Your RMSNorm has no parameters: a tensor stored as a plain attribute is not registered, so it "
                "is never trained, saved or loaded (section 2).", _TensorWeight, match_output=False),
        Mistake("wrong_parameters", "RMSNorm(dim={dim}) should have exactly one parameter of shape ({dim},); "
                "yours are {got}.", match_output=False),
        Mistake("weight_name",
                "Your scale is registered as `{got}`; the name is the state_dict key, and the checkpoint's is "
                "`weight` (as in the first attempt), so it would not load.", _NamedGamma, match_output=False),
        Mistake("checkpoint_mismatch",
                "A checkpoint of `nn.RMSNorm` does not load into yours: \"{error}\". Everything your layer "
                "saves must be in that checkpoint, and nothing more.", _EpsBuffer, match_output=False),
        Mistake("wrong_dim",
                "Your layer averages over more than each vector's own features (the first attempt's symptom: "
                "padding, or the rest of the batch, changes a token's output). Which dimension holds one "
                "vector's features, whatever the input's rank?", _OverDim1, match_output=False),
        Mistake("rank_specific_dim",
                "Your layer fails on an input of shape {shape} with \"Dimension out of range\": it names the "
                "feature dimension by a position that only inputs of one rank have.", _LastOfThree,
                match_output=False),
        Mistake("eps_outside_sqrt",
                "Your eps is added after the square root, as in the first attempt: the output of an all-zero "
                "vector is finite, but its gradient is NaN (the root's slope at 0 is infinite, and autograd "
                "multiplies it by 0). eps is there to keep the root away from 0.", _EpsOutside,
                match_output=False),
        Mistake("nan_grad_at_zero",
                "Your outputs are right, but a batch with an all-zero (padding) vector gives NaN gradients: "
                "somewhere your forward takes a root (or a norm) of exactly 0, where its slope is infinite. "
                "What is eps for?", _RootOfRoot, match_output=False),
        Mistake("ignored_eps",
                "Your layer divides by the root mean square without eps: an all-zero (padding) vector gives "
                "0 / 0, NaN.", _NoEps, match_output=False),
        Mistake("eps_argument_ignored",
                "Your module used eps = 1e-6 although it was made with `RMSNorm(dim, eps={eps})`: the "
                "checkpoint's layer uses the eps it was given.", _DefaultEpsAlways, match_output=False),
        Mistake("float64_drift",
                "Your weight is float64, so `x * weight` turns every float32 activation into float64 (slower, "
                "twice the memory, and a dtype error in the next matmul). NumPy arrays are float64 (section 4).",
                _NumpyOnes, match_output=False),
        Mistake("mutated_input",
                "Your forward changes its input in place (an op ending in `_`, `/=`, `*=`): the caller's tensor "
                "is modified and autograd refuses it on a leaf. Compute new tensors.", _InPlace,
                match_output=False),
        Mistake("graph_cut",
                "No gradient reaches the input: somewhere your forward leaves the graph (`.item()`, "
                "`.tolist()`, `.numpy()`, `torch.tensor(...)` on an intermediate, or `.detach()`).",
                _ThroughPython, match_output=False),
        Mistake("partial_graph_cut",
                "Your values are right but the gradient with respect to `x` is not: part of the forward (the "
                "RMS?) is computed outside the graph (`.detach()`, `.data`, `torch.tensor(...)`), so autograd "
                "misses how it depends on x.", _DetachedRms, match_output=False),
        Mistake("weight_outside_graph",
                "No gradient (or the wrong one) reaches your weight: the forward uses it outside autograd "
                "(`.data`, `.detach()`, a copy), so training would never change it.", _WeightData,
                match_output=False),
        Mistake("frozen_weight", "Your weight does not require grad, so it can never learn.", _FrozenWeight,
                match_output=False),
        Mistake("wrong_init", "The scale should start as all ones, so a fresh RMSNorm only normalises.",
                _ZeroWeight, match_output=False),
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        BUILDS_MODULE.mistake(_NotAModule),
    ],
    hints=[
        "Take the symptoms one at a time. Padding changed the real tokens: which numbers does each "
        "token's mean run over in the first attempt, on a batch of vectors and on a batch of sentences?",
        "The features of one vector are the last dimension at every rank. Can you name that dimension "
        "without counting from the front?",
        "The output of a padding row was finite and its gradient was not. What is the slope of a square "
        "root at 0, and what should eps keep away from 0: the root's input or its output?",
        "The load error compares two shapes. What does the checkpoint learn per feature that the first "
        "attempt learns once?",
    ],
))
