"""init_weights: a function for ``model.apply`` (LeCun normal weights, zero biases, Linear only).

Subtle: the weights are random, so the check tests statistics (std against 1/√fan_in and the
usual confusions, kurtosis for a uniform draw, the mean) on matrices of 16k+ entries where
fan_in != fan_out; every other module (LayerNorm, Embedding, convolutions) must come out
untouched, and a bias-free Linear must not crash the function.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import init_weights


# --- cases
# chains of layer widths: every weight matrix has >= 16k entries, so the sample std is within
# 1% of the true one, and fan_in != fan_out, so confusing them is visible
_WIDTH_CHAINS = [(64, 256, 64), (32, 512, 32), (128, 192, 96), (256, 64, 256)]


def _cases(r: Rand) -> Case:
    widths = r.choice(_WIDTH_CHAINS)
    layers: list[nn.Module] = []
    no_bias = r.integer(0, 1)  # every case has a Linear with a bias and one without
    for k, (a, b) in enumerate(zip(widths, widths[1:])):
        layers += [nn.Linear(a, b, bias=k != no_bias), nn.LayerNorm(b), nn.ReLU()]
    # modules that are not Linear but have a weight with dim() > 1: "leave every other kind of
    # module untouched" (`hasattr(m, "weight") and m.weight.dim() > 1` re-initialises them)
    layers += [nn.Embedding(6, 4), nn.Conv1d(2, 3, 3), nn.Conv2d(2, 3, 3)]
    model = nn.Sequential(nn.Sequential(*layers[:3]), *layers[3:])
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.rand(p.shape, generator=r.torch) + 0.5)
    return Case((model,))


def _fixed(no_bias: int) -> Case:
    def draws(s: int) -> int:  # the draws _cases makes before building
        r = Rand(s)
        r.choice(_WIDTH_CHAINS)
        return r.integer(0, 1)

    seed = next(s for s in range(100) if draws(s) == no_bias)
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        case = _cases(Rand(seed))
    case.label = f"a model whose Linear layer {no_bias + 1} has no bias"
    return case


def _twin_layers() -> Case:
    """Two Linear layers of the same shape (64x64: 4096 weights, sample std within ~3%):
    reseeding inside init_weights gives them identical weights."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 64, bias=False),
                              nn.Embedding(6, 4), nn.Conv1d(2, 3, 3), nn.Conv2d(2, 3, 3))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.rand(p.shape) + 0.5)
    return Case((model,), label="two Linear layers of the same shape (64 x 64)")


# --- run and probes
def _check_linear(name: str, module: nn.Linear, before: torch.Tensor) -> None:
    """One Linear layer's new weight and bias: changed, LeCun normal statistics, zero bias."""
    w = module.weight.detach()
    if torch.equal(w, before):
        raise Incorrect("weights_unchanged", name=name)
    fan_in, fan_out = module.in_features, module.out_features
    std = float(w.std())
    target = 1 / math.sqrt(fan_in)
    if not abs(std / target - 1) < 0.05:
        if abs(std * math.sqrt(fan_out) - 1) < 0.05:
            raise Incorrect("used_fan_out")
        if abs(std * fan_in - 1) < 0.05:
            raise Incorrect("variance_as_std")
        raise Incorrect("wrong_std", name=name, fan_in=fan_in, std=f"{std:.3g}", target=f"{target:.3g}")
    centred = w - w.mean()
    kurtosis = float((centred**4).mean() / centred.pow(2).mean() ** 2) - 3
    if kurtosis < -0.6:
        raise Incorrect("uniform_not_normal")
    if abs(float(w.mean())) > 6 * target / math.sqrt(w.numel()):
        raise Incorrect("nonzero_mean")
    if module.bias is not None and not torch.equal(module.bias.detach(), torch.zeros_like(module.bias)):
        raise Incorrect("bias_not_zero")


def _check_same_parameters(model: nn.Module, objects: dict) -> None:
    """Every parameter is still the object it was, of its dtype, and still requires grad."""
    for name, p in model.named_parameters():
        if name not in objects:
            continue
        was, dtype, requires_grad = objects[name]
        if p.dtype != dtype:
            now = str(p.dtype).replace("torch.", "") + ("" if p is was else ", a new object")
            raise Incorrect("replaced_parameter", name=name, now=now)
        if p is not was:
            raise Incorrect("new_parameter_object", name=name)
        if p.requires_grad != requires_grad:
            raise Incorrect("froze_parameter", name=name)


def _run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    objects = {n: (p, p.dtype, p.requires_grad) for n, p in model.named_parameters()}
    try:
        model.apply(answer)
    except AttributeError as exc:
        msg = str(exc)
        if msg.startswith("'NoneType' object has no attribute"):
            raise Incorrect("bias_none") from None
        if "object has no attribute" in msg and not msg.startswith("'Linear' object"):
            raise Incorrect("no_isinstance_check") from None
        raise  # e.g. a typo on a Linear (`m.in_feature`): the learner sees the real error
    _check_same_parameters(model, objects)
    for name, module in model.named_modules():
        for pname, p in module.named_parameters(recurse=False):
            full = f"{name}.{pname}" if name else pname
            if not isinstance(module, nn.Linear) and not torch.equal(p.detach(), before[full]):
                raise Incorrect("touched_other_layers")
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            _check_linear(name, module, before[f"{name}.weight"])
    linear_weights = [m.weight.detach() for m in model.modules() if isinstance(m, nn.Linear)]
    for a_i, a in enumerate(linear_weights):
        for b in linear_weights[a_i + 1:]:
            if a.shape == b.shape and torch.equal(a, b):
                raise Incorrect("same_draws")
    # what must come out the same as the reference's: every Linear weight's shape (its values
    # are random), and the exact values of every other parameter (zero biases, untouched norms)
    summary: dict[str, Any] = {}
    for name, p in model.named_parameters():
        owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        is_linear_weight = isinstance(owner, nn.Linear) and name.endswith("weight")
        summary[name] = tuple(p.shape) if is_linear_weight else p.detach().clone()
    return summary


# --- wrong answers
def _linear_only(init):
    """``init(m)`` on Linear layers (weights by ``init``, bias zero when there is one)."""
    def apply(m):
        if isinstance(m, nn.Linear):
            init(m)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return apply


_fan_out = _linear_only(lambda m: nn.init.normal_(m.weight, std=1 / math.sqrt(m.out_features)))
_variance = _linear_only(lambda m: nn.init.normal_(m.weight, std=1 / m.in_features))
_he = _linear_only(lambda m: nn.init.kaiming_normal_(m.weight, nonlinearity="relu"))
_off_centre = _linear_only(lambda m: nn.init.normal_(m.weight, mean=0.1, std=1 / math.sqrt(m.in_features)))
_uniform = _linear_only(lambda m: nn.init.uniform_(m.weight, -math.sqrt(3 / m.in_features),
                                                   math.sqrt(3 / m.in_features)))


def _keeps_bias(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))


def _bias_only(m):
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)


def _hasattr(m):
    if hasattr(m, "weight"):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.weight.shape[-1]))
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)


def _unguarded_bias(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))
        nn.init.zeros_(m.bias)


def _no_isinstance(m):
    nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))
    if m.bias is not None:
        nn.init.zeros_(m.bias)


def _float64(m):
    init_weights(m)
    if isinstance(m, nn.Linear):
        m.weight.data = m.weight.data.double()


def _new_bias(m):
    init_weights(m)
    if isinstance(m, nn.Linear) and m.bias is not None:
        m.bias = nn.Parameter(torch.zeros(m.out_features))


def _freezes(m):
    """Switches requires_grad off to get past "a leaf Variable that requires grad ... in-place", for good."""
    if isinstance(m, nn.Linear):
        m.weight.requires_grad = False
        m.weight.normal_(0.0, 1 / math.sqrt(m.in_features))
        if m.bias is not None:
            m.bias.requires_grad = False
            m.bias.zero_()


def _reseeds(m):
    torch.manual_seed(0)
    init_weights(m)


# --- declaration
register(Exercise(
    lesson=LESSON, name="init_weights", title="An init function for model.apply (LeCun normal, zero bias)",
    reference=init_weights,
    cases=_cases,
    # fixed models too: every verdict must hold without random cases (one model with the
    # bias-free Linear first, one with it second)
    edge_cases=[_fixed(0), _fixed(1), _twin_layers()],
    n_random=4,  # each case holds ~40k weights: a few cases are plenty for statistics
    run=_run,
    mistakes=[
        Mistake("used_fan_out", "Your weights have std 1/√fan_out. A Linear layer's weight has shape "
                "(out_features, in_features); fan_in is `m.in_features` (= `m.weight.shape[1]`).",
                _fan_out, match_output=False),
        Mistake("variance_as_std", "Your weights have std 1/fan_in: the *variance* should be 1/fan_in, so the "
                "standard deviation is 1/√fan_in.", _variance, match_output=False),
        Mistake("bias_not_zero", "The biases of your Linear layers are not zero: add `nn.init.zeros_(m.bias)` "
                "(when `m.bias is not None`).", _keeps_bias, match_output=False),
        Mistake("touched_other_layers",
                "Your function also changed the parameters of a layer that is not Linear (a LayerNorm, an "
                "Embedding or a convolution such as `nn.Conv2d`). Only Linear layers should be initialised; check "
                "`isinstance(m, nn.Linear)` alone, rather than `hasattr(m, \"weight\")` or a tuple of layer types.",
                _hasattr, match_output=False),
        Mistake("no_isinstance_check",
                "`model.apply(init_weights)` calls your function on *every* module (the Sequential, LayerNorm, "
                "ReLU...), and on one of them your code asked for an attribute it does not have (`weight`, "
                "`bias`, `in_features`). Start with `if isinstance(m, nn.Linear):`.",
                _no_isinstance, match_output=False),
        Mistake("bias_none",
                "Some Linear layers have no bias (`nn.Linear(..., bias=False)` sets `m.bias = None`), and your "
                "code used it anyway. Guard the bias: `if m.bias is not None: nn.init.zeros_(m.bias)`.",
                _unguarded_bias, match_output=False),
        Mistake("uniform_not_normal", "Your weights are uniformly distributed; the exercise asks for a normal "
                "distribution (`nn.init.normal_`).", _uniform, match_output=False),
        Mistake("nonzero_mean", "Your weights are not centred at 0 (`mean=0.0`).", _off_centre, match_output=False),
        Mistake("wrong_std", "The weights of `{name}` (in_features={fan_in}) have standard deviation {std}; "
                "LeCun normal asks for 1/√{fan_in} ≈ {target}.", _he, match_output=False),
        Mistake("weights_unchanged", "The weight of Linear layer `{name}` was not changed.", _bias_only,
                match_output=False),
        Mistake("replaced_parameter",
                "`{name}` is no longer the model's float32 Parameter (it is now {now}): a NumPy-drawn array is "
                "float64, and the model would fail on float32 input. Fill the existing weight in place: "
                "`nn.init.normal_(m.weight, 0.0, std)`.",
                _float64, match_output=False),
        Mistake("new_parameter_object",
                "`{name}` is a new Parameter object, not the one the model had: an optimizer created before "
                "`model.apply(init_weights)` still holds the old one and would never update the new one. Fill "
                "the existing tensor in place (`nn.init.zeros_(m.bias)`, `nn.init.normal_(m.weight, 0.0, std)`).",
                _new_bias, match_output=False),
        Mistake("froze_parameter",
                "`{name}` no longer requires grad after your function: the model would never train it. "
                "Initialise in place without switching autograd off on the parameter: the `nn.init` functions "
                "do (they work under `torch.no_grad()`), or write your own fill inside `with torch.no_grad():`.",
                _freezes, match_output=False),
        Mistake("same_draws",
                "Two of your Linear layers of the same shape got identical weights: did you call "
                "`torch.manual_seed(...)` inside `init_weights`? That replays the same random numbers for every "
                "layer (and resets the caller's random stream). Seed once, outside, if at all.",
                _reseeds, match_output=False),
    ],
    hints=[
        "`model.apply(fn)` calls `fn(m)` once for every module, containers and activations included, so "
        "the function must decide which modules it touches.",
        "`torch.nn.init` has in-place initialisers for a normal distribution and for zeros; LeCun "
        "normal's standard deviation is one over the square root of the layer's number of inputs. Some "
        "layers have no bias.",
    ],
))
