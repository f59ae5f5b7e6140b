"""init_weights: an init for ``model.apply`` that keeps a deep ReLU stack's signal at any widths.

A decision: a first attempt (one std, tuned at width 256) vanishes at width 64 and explodes at 1024; the
learner works out each layer's spread (He normal, √(2/fan_in)). Subtle: the check tests statistics (std vs
LeCun's, fan_out, variance as std, one std for all; kurtosis; mean) on 16k+ weights where fan_in != fan_out;
other modules come out untouched, and a bias-free Linear must not crash it.
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
    # not Linear, yet with a weight of dim() > 1: "leave every other kind of module untouched"
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
    """Two 64x64 Linear layers (sample std within ~3%): reseeding inside init_weights makes them equal."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 64, bias=False),
                              nn.Embedding(6, 4), nn.Conv1d(2, 3, 3), nn.Conv2d(2, 3, 3))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.rand(p.shape) + 0.5)
    return Case((model,), label="two Linear layers of the same shape (64 x 64)")


# --- run and probes
def _fits(m: nn.Linear) -> set[str]:
    """The confusions a layer's std fits (named only when every layer fits: 2/32 = √(2/512))."""
    std, fan_in, fan_out = float(m.weight.detach().std()), m.in_features, m.out_features
    return {k for k, v in (("lecun_for_relu", std * math.sqrt(fan_in)), ("used_fan_out", std * math.sqrt(fan_out / 2)),
                           ("variance_as_std", std * fan_in / 2)) if abs(v - 1) < 0.05}


def _check_linear(name: str, module: nn.Linear, before: torch.Tensor, fits: set[str]) -> None:
    """One Linear layer's new weight and bias: changed, He normal statistics, zero bias."""
    w = module.weight.detach()
    if torch.equal(w, before):
        raise Incorrect("weights_unchanged", name=name)
    std, target = float(w.std()), math.sqrt(2 / module.in_features)
    if not abs(std / target - 1) < 0.05:
        if fits:  # lecun_for_relu, used_fan_out or variance_as_std, on every layer
            raise Incorrect(min(fits))
        raise Incorrect("wrong_std", name=name, fan_in=module.in_features, std=f"{std:.3g}",
                        factor=f"{(std / target) ** 2:.2g}")
    centred = w - w.mean()
    if float((centred**4).mean() / centred.pow(2).mean() ** 2) - 3 < -0.6:  # kurtosis: uniform is -1.2
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
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    stds = [float(m.weight.detach().std()) for _, m in linears]
    if (len({m.in_features for _, m in linears}) > 1 and 0 < min(stds) and max(stds) < 1.05 * min(stds)
            and all(not torch.equal(m.weight.detach(), before[f"{name}.weight"]) for name, m in linears)):
        raise Incorrect("width_independent")  # one spread for every width: the first attempt's
    fits = set.intersection(*(_fits(m) for _, m in linears))
    for name, module in linears:
        _check_linear(name, module, before[f"{name}.weight"], fits)
    ws = [m.weight.detach() for _, m in linears]
    if any(a.shape == b.shape and torch.equal(a, b) for i, a in enumerate(ws) for b in ws[i + 1:]):
        raise Incorrect("same_draws")
    # the same as the reference's: each Linear weight's shape (random values), every other value exactly
    summary: dict[str, Any] = {}
    for name, p in model.named_parameters():
        owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        is_linear_weight = isinstance(owner, nn.Linear) and name.endswith("weight")
        summary[name] = tuple(p.shape) if is_linear_weight else p.detach().clone()
    return summary


# --- wrong answers
def _linear_only(init, zero_bias=True):
    """``init(m)`` on Linear layers (weights by ``init``, bias zero when there is one)."""
    def apply(m):
        if isinstance(m, nn.Linear):
            init(m)
            if zero_bias and m.bias is not None:
                nn.init.zeros_(m.bias)
    return apply


_lecun = _linear_only(lambda m: nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features)))  # right for tanh
_fixed_std = _linear_only(lambda m: nn.init.normal_(m.weight, std=0.088))  # the first attempt
_fan_out = _linear_only(lambda m: nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu"))
_variance = _linear_only(lambda m: nn.init.normal_(m.weight, std=2 / m.in_features))
_halved = _linear_only(lambda m: nn.init.normal_(m.weight, std=1 / math.sqrt(2 * m.in_features)))  # ÷2, not ×2
_offset = _linear_only(lambda m: nn.init.normal_(m.weight, mean=0.1, std=math.sqrt(2 / m.in_features)))
_uniform = _linear_only(lambda m: nn.init.kaiming_uniform_(m.weight, nonlinearity="relu"))

_keeps_bias = _linear_only(lambda m: nn.init.normal_(m.weight, std=math.sqrt(2 / m.in_features)), zero_bias=False)


def _bias_only(m):
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)


def _hasattr(m):
    if hasattr(m, "weight"):
        nn.init.normal_(m.weight, std=math.sqrt(2 / m.weight.shape[-1]))
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)


def _unguarded_bias(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=math.sqrt(2 / m.in_features))
        nn.init.zeros_(m.bias)


def _no_isinstance(m):
    nn.init.normal_(m.weight, std=math.sqrt(2 / m.in_features))
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
        m.weight.normal_(0.0, math.sqrt(2 / m.in_features))
        if m.bias is not None:
            m.bias.requires_grad = False
            m.bias.zero_()


def _reseeds(m):
    torch.manual_seed(0)
    init_weights(m)


# --- declaration
register(Exercise(
    lesson=LESSON, name="init_weights", title="An init for model.apply that keeps a deep ReLU signal at any width",
    reference=init_weights,
    cases=_cases,
    # fixed models too: every verdict must hold without random cases (one model with the
    # bias-free Linear first, one with it second)
    edge_cases=[_fixed(0), _fixed(1), _twin_layers()],
    n_random=4,  # each case holds ~40k weights: a few cases are plenty for statistics
    run=_run,
    mistakes=[
        Mistake("width_independent",
                "Every Linear layer got the same spread whatever its number of inputs, like the first attempt: "
                "each output sums over the layer's inputs, so the signal grows through wide layers and fades "
                "through narrow ones. The spread has to depend on the layer.", _fixed_std, match_output=False),
        Mistake("lecun_for_relu",
                "Your weights have standard deviation 1/√fan_in (LeCun's, right for tanh): the sum keeps the "
                "mean square, then ReLU sets the negative half to 0 and the mean square halves at every layer "
                "(1/4096 after 12). What does ReLU take away, and how can the weights make up for it?",
                _lecun, match_output=False),
        Mistake("used_fan_out", "Your weights' spread follows each layer's number of *outputs*. In the forward "
                "pass each output sums over the layer's inputs, so on a layer with more inputs than outputs the "
                "signal grows, and with fewer it fades.", _fan_out, match_output=False),
        Mistake("variance_as_std", "Your standard deviation is 2/fan_in: that is the *variance* that keeps "
                "the signal's scale; a standard deviation is its square root.", _variance, match_output=False),
        Mistake("wrong_std", "The weights of `{name}` (in_features={fan_in}) have standard deviation {std}: "
                "through them and a ReLU the mean square of the signal is multiplied by about {factor} at every "
                "layer, instead of staying the same.", _halved, match_output=False),
        Mistake("bias_not_zero", "The biases of your Linear layers are not zero: the exercise starts them at "
                "zero, so that the weights alone set the scale.", _keeps_bias, match_output=False),
        Mistake("touched_other_layers",
                "Your function also changed the parameters of a layer that is not Linear (a LayerNorm, an "
                "Embedding or a convolution such as `nn.Conv2d`). Only Linear layers get this rule: having a "
                "`weight` does not make a module a Linear layer.", _hasattr, match_output=False),
        Mistake("no_isinstance_check",
                "`model.apply(init_weights)` calls your function on *every* module (the Sequential, LayerNorm, "
                "ReLU...), and on one of them your code asked for an attribute it does not have (`weight`, "
                "`bias`, `in_features`). Your function must first decide which modules it touches.",
                _no_isinstance, match_output=False),
        Mistake("bias_none",
                "Some Linear layers have no bias (`nn.Linear(..., bias=False)` sets `m.bias = None`), and your "
                "code used it anyway: there is nothing to set to zero there.", _unguarded_bias, match_output=False),
        Mistake("uniform_not_normal", "Your weights are uniformly distributed; the exercise asks for a normal "
                "distribution.", _uniform, match_output=False),
        Mistake("nonzero_mean", "Your weights are not centred at 0: an offset shifts every output.", _offset,
                match_output=False),
        Mistake("weights_unchanged", "The weight of Linear layer `{name}` was not changed.", _bias_only,
                match_output=False),
        Mistake("replaced_parameter",
                "`{name}` is no longer the model's float32 Parameter (it is now {now}): a NumPy-drawn array is "
                "float64, and the model would fail on float32 input. Fill the existing weight in place.",
                _float64, match_output=False),
        Mistake("new_parameter_object",
                "`{name}` is a new Parameter object, not the one the model had: an optimizer created before "
                "`model.apply(init_weights)` still holds the old one and would never update the new one. Fill "
                "the existing tensor in place.", _new_bias, match_output=False),
        Mistake("froze_parameter",
                "`{name}` no longer requires grad after your function: the model would never train it. "
                "Initialise in place without switching autograd off on the parameter (the `nn.init` functions "
                "work under `torch.no_grad()`).", _freezes, match_output=False),
        Mistake("same_draws",
                "Two of your Linear layers of the same shape got identical weights: did you seed the random "
                "stream inside `init_weights`? That replays the same random numbers for every layer (and "
                "resets the caller's random stream). Seed once, outside, if at all.",
                _reseeds, match_output=False),
    ],
    hints=[
        "The first attempt held steady at one width only. Going forward, each output of a Linear layer is a "
        "sum of how many terms? How does the mean square of a sum of independent terms grow with their number?",
        "What does ReLU do to the mean square of a signal centred at 0? The weights have to make up for it "
        "at every layer.",
        "The widget above lets you try gains on a ReLU network: which gain keeps the histograms alike from "
        "the first layer to the last?",
    ],
))
