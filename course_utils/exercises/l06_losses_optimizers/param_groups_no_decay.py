"""param_groups_no_decay: AdamW parameter groups with no weight decay on biases and norm weights.

Subtle: every trainable parameter exactly once (a tied weight is one tensor; walking the layers
finds it twice), frozen ones left out, norm layers told apart from weights that multiply (a name
such as ``1.weight`` says nothing), and a group that does not say its ``weight_decay`` gets
AdamW's default 0.01. The check builds ``torch.optim.AdamW(groups, lr=1e-3)`` and reads the decay
each parameter ends up with.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, describe, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/06_losses_optimizers.py)
from ...answers.l06_losses_optimizers import param_groups_no_decay

NORMS = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm, nn.RMSNorm)


class TiedLM(nn.Module):
    """Embedding, a norm and an output layer that shares the embedding's weight."""

    def __init__(self, vocab: int, dim: int, head_bias: bool = True):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=head_bias)
        self.head.weight = self.embed.weight


def _block(r: Rand, width: int) -> list[nn.Module]:
    kind = r.integer(0, 4)
    if kind == 0:
        return [nn.Linear(width, width, bias=bool(r.integer(0, 1))), nn.LayerNorm(width, bias=bool(r.integer(0, 1)))]
    if kind == 1:
        return [nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU()]
    if kind == 2:
        return [nn.Conv1d(width, width, 3, padding=1, bias=False), nn.GroupNorm(1, width)]
    if kind == 3:
        return [nn.Linear(width, width, bias=False), nn.RMSNorm(width)]
    return [nn.Linear(width, width)]


def _cases(r: Rand) -> Case:
    with torch.random.fork_rng():  # layer initialisation draws from the global RNG
        torch.manual_seed(r.seed)
        width = r.integer(2, 5)
        if r.integer(0, 3) == 0:
            model: nn.Module = TiedLM(r.integer(5, 9), width, head_bias=bool(r.integer(0, 1)))
        else:
            layers: list[nn.Module] = []
            for _ in range(r.integer(1, 4)):
                layers += _block(r, width)
            model = nn.Sequential(*layers)
        params = list(model.parameters())
        for i in range(len(params)):
            if r.integer(0, 4) == 0:
                params[i].requires_grad_(False)
        if all(not p.requires_grad for p in params):
            params[0].requires_grad_(True)
    return Case((model, r.choice([0.05, 0.1, 0.2, 0.5])))


def _edge(label, build, wd=0.1):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return Case((build(), wd), label=label)


def _frozen_first():
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    model[0].requires_grad_(False)
    return model


EDGE_CASES = [
    _edge("Linear, LayerNorm, ReLU, Linear", lambda: nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(),
                                                                  nn.Linear(8, 2))),
    _edge("Conv2d without bias, BatchNorm2d, Linear",
          lambda: nn.Sequential(nn.Conv2d(1, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                                nn.Linear(4 * 6 * 6, 3)), wd=0.05),
    _edge("an embedding tied to the output layer", lambda: TiedLM(10, 4)),
    _edge("the first Linear frozen, BatchNorm1d", _frozen_first, wd=0.2),
    _edge("GroupNorm, RMSNorm, LayerNorm without bias", lambda: nn.Sequential(
        nn.Conv1d(3, 4, 3), nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(8, 4, bias=False), nn.RMSNorm(4),
        nn.LayerNorm(4, bias=False)), wd=0.5),
]


# --- run
def _kinds(model: nn.Module) -> dict[int, str]:
    """What each parameter is: "bias", "norm" (a norm layer's weight) or "weight"."""
    out: dict[int, str] = {}
    for module in model.modules():
        for attr, p in module.named_parameters(recurse=False):
            if attr == "bias":
                out[id(p)] = "bias"
            elif isinstance(module, NORMS):
                out[id(p)] = "norm"
            else:
                out.setdefault(id(p), "weight")
    return out


def _read_groups(groups, model: nn.Module) -> dict[int, tuple[float, bool]]:
    """id(parameter) -> (the weight decay AdamW gives it, whether its group said so)."""
    if not isinstance(groups, (list, tuple)) or not groups or not all(
            isinstance(g, dict) and "params" in g for g in groups):
        raise Incorrect("not_groups", got=describe(groups))
    if any(isinstance(g["params"], (set, frozenset)) for g in groups):  # torch.optim refuses them (TypeError)
        raise Incorrect("params_in_a_set")
    groups = [dict(g, params=[g["params"]] if isinstance(g["params"], torch.Tensor) else list(g["params"]))
              for g in groups]  # generators are read once (AdamW itself lists any other iterable)
    said = ["weight_decay" in g for g in groups]  # before AdamW fills in its defaults
    if not any(g["params"] for g in groups):
        raise Incorrect("missing", name=next((n for n, p in model.named_parameters() if p.requires_grad), "?"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = torch.optim.AdamW(groups, lr=1e-3)
    except ValueError as exc:
        if "more than one parameter group" in str(exc):
            raise Incorrect("listed_twice") from None
        raise
    seen: dict[int, tuple[float, bool]] = {}
    for group, given in zip(opt.param_groups, said):
        for p in group["params"]:
            if id(p) in seen:
                raise Incorrect("listed_twice")
            seen[id(p)] = (float(group["weight_decay"]), given)
    return seen


_FUNCTION = Expect("not_a_function", "your function `param_groups_no_decay` itself (not what it returned)",
                   callable, said="You passed")


def _run(answer, case: Case):
    model, wd = case.args
    _FUNCTION.check(answer)
    seen = _read_groups(answer(model, wd), model)
    names = {id(p): n for n, p in model.named_parameters()}
    if any(i not in names for i in seen):
        raise Incorrect("not_the_models")
    for n, p in model.named_parameters():
        if not p.requires_grad and id(p) in seen:
            raise Incorrect("frozen_included", name=n)
        if p.requires_grad and id(p) not in seen:
            raise Incorrect("missing", name=n)
    kinds = _kinds(model)
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        got, said = seen[id(p)]
        want = wd if kinds[id(p)] == "weight" else 0.0
        if got != want:
            if not said:
                raise Incorrect("default_decay", name=n, got=got)
            raise Incorrect({"bias": "decayed_bias", "norm": "decayed_norm", "weight": "not_decayed"}[kinds[id(p)]],
                            name=n, got=got)
    return {n: seen[id(p)][0] for n, p in model.named_parameters() if p.requires_grad}


# --- wrong answers
def _by_rule(decays, frozen=True, key=True):
    def groups(model, weight_decay):
        decay, no_decay = [], []
        for n, p in model.named_parameters():
            if frozen and not p.requires_grad:
                continue
            (decay if decays(n, p) else no_decay).append(p)
        no = {"params": no_decay, "weight_decay": 0.0} if key else {"params": no_decay}
        return [{"params": decay, "weight_decay": weight_decay}, no]
    return groups


def _per_layer(model, weight_decay):
    decay, no_decay = [], []
    for module in model.modules():
        for attr, p in module.named_parameters(recurse=False):
            if p.requires_grad:
                (no_decay if attr == "bias" or isinstance(module, NORMS) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _in_sets(model, weight_decay):
    return [dict(g, params=set(g["params"])) for g in param_groups_no_decay(model, weight_decay)]


# --- declaration
register(Exercise(
    lesson=LESSON, name="param_groups_no_decay",
    title="AdamW parameter groups: no weight decay on biases and normalisation weights",
    reference=param_groups_no_decay, kind="any", run=_run, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("decayed_norm", "`{name}` is the weight of a normalisation layer and got weight_decay {got}. A "
                "parameter's name (`1.weight`) does not say which layer it belongs to: look at the module "
                "(`isinstance`), or at the tensor's shape (norm weights and biases are vectors, 1-D).",
                _by_rule(lambda n, p: not n.endswith("bias"))),
        Mistake("decayed_bias", "`{name}` is a bias and got weight_decay {got}: biases get 0.0.",
                _by_rule(lambda n, p: "norm" not in n)),
        Mistake("default_decay", "`{name}` got weight_decay {got}: its group does not say its `weight_decay`, so "
                "AdamW used its default (0.01). Give each group its own `\"weight_decay\"`.",
                _by_rule(lambda n, p: p.ndim >= 2, key=False)),
        Mistake("frozen_included", "`{name}` is frozen (`requires_grad=False`) and the task leaves frozen "
                "parameters out: skip them.", _by_rule(lambda n, p: p.ndim >= 2, frozen=False)),
        Mistake("listed_twice", "A tensor appears twice in your groups (AdamW: \"some parameters appear in more "
                "than one parameter group\"), typically a tied weight shared by two layers: walking the layers "
                "finds it once per layer. `model.parameters()` lists each tensor once.", _per_layer,
                match_output=False),
        Mistake("not_decayed", "`{name}` multiplies its input (a `Linear`, `Conv` or `Embedding` weight) and got "
                "weight_decay {got}: it should get `weight_decay`.", _by_rule(lambda n, p: False)),
        Mistake("missing", "`{name}` requires grad but is in none of your groups: every trainable parameter "
                "appears exactly once.", lambda model, wd: [{"params": [], "weight_decay": wd}],
                match_output=False),
        Mistake("params_in_a_set", "A group's \"params\" is a set: `torch.optim.AdamW(groups)` refuses it "
                "(TypeError: a set's order changes between runs, so a saved optimizer state would load into the "
                "wrong tensors). Collect the parameters in lists.", _in_sets, match_output=False),
        _FUNCTION.mistake(),
        Mistake("not_groups", "Return a list of dicts, each with a \"params\" list (and its \"weight_decay\"); "
                "you returned {got}.", lambda model, wd: list(model.parameters()), match_output=False),
        Mistake("not_the_models", "Your groups hold tensors that are not the model's parameters (copies?): the "
                "optimizer must get `model`'s own parameters.", match_output=False),
    ],
    hints=[
        "Go through `model.parameters()` (or `named_parameters()`) once and put each tensor in one of two lists.",
        "What do a bias and a LayerNorm/BatchNorm weight have in common that a Linear, Conv or Embedding weight "
        "has not? Look at `p.ndim`. And which parameters should an optimizer not get at all?",
        "Each group should say its own weight decay: a group that does not gets AdamW's default. And the "
        "optimizer needs nothing it will never update.",
    ],
))
