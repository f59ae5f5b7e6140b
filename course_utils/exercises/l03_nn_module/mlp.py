"""MLP: an nn.Module to a spec (Linear + ReLU per hidden size, logits out).

Subtle: learners register layers in other orders, containers and names (a ModuleList, a dict,
the output layer first, `F.linear` on their own Parameters), so the check gives both models
the same weights layer by layer in the order the forward *uses* them; it then compares outputs
and the gradient every parameter gets (a forward partly under `no_grad` has right values).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import (
    LESSON, MISSING_SUPER_INIT, NOT_A_MODULE, PARAMETER_NOT_TRAINED, batch_size, build, check_reference_grads, count,
    fill_from, gen, param_grads, ran,
)

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import MLP


# --- cases
def _cases(r: Rand) -> Case:
    hidden = [r.integer(2, 12) for _ in range(r.integer(1, 3))]
    return Case((r.integer(2, 10), hidden, r.integer(2, 6)), {"seed": r.integer(0, 2**31)}, show_inputs=True)


# "for each size in hidden_sizes": an empty list is a plain linear classifier; code that starts
# from hidden_sizes[0] or ends with hidden_sizes[-1] fails on it
EDGE_CASES = [
    Case((5, [], 3), {"seed": 12345}, label="no hidden layers", show_inputs=True),
    # one hidden layer, and sizes that repeat (in = hidden = out: transposed weights fit)
    Case((4, [7], 2), {"seed": 2024}, label="one hidden layer", show_inputs=True),
    Case((3, [3, 3], 3), {"seed": 77}, label="every size 3", show_inputs=True),
    Case((6, [8, 5, 4], 2), {"seed": 5}, label="three hidden layers", show_inputs=True),
]


# --- run and probes
def _values(g: torch.Generator, sizes: list[int]) -> list[torch.Tensor]:
    """The spec's parameters, Linear by Linear (weight (out, in), then bias (out,)), with values
    drawn from ``g`` in that order: the reference's registration order (``fill_from``)."""
    values = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        values.append(torch.randn((n_out, n_in), generator=g) * 0.5)
        values.append(torch.randn((n_out,), generator=g) * 0.5)
    return values


def _copy_parameters_in_order(src: list[torch.Tensor], dst: nn.Module) -> list:
    """Load the values ``src`` (the spec's parameters in the reference's registration order)
    into ``dst`` in registration order (names may differ), after checking the shapes agree one by
    one. A model that registers all its weights, then all its biases (two ParameterLists) is
    paired kind by kind: weights with weights, biases with biases, each in registration order.
    Returns ``(name, dst's parameter, index in src)``."""
    dst_named = list(dst.named_parameters())
    got = [tuple(p.shape) for _, p in dst_named]
    want = [tuple(p.shape) for p in src]
    if got == want:
        pairs = [(name, i) for i, (name, _) in enumerate(dst_named)]
    else:
        pairs = [(n, i) for d in (2, 1) for n, i in zip([n for n, p in dst_named if p.dim() == d],
                                                        [i for i, v in enumerate(src) if v.dim() == d])]
        by_kind = all([x for x in got if len(x) == d] == [x for x in want if len(x) == d] for d in (2, 1))
        if not (by_kind and len(pairs) == len(src) == len(dst_named)):
            raise Incorrect("wrong_layers", what="parameter shapes", order="they were registered", got=got,
                            want=want)
    dst.load_state_dict({name: src[i].detach().clone() for name, i in pairs}, strict=False)
    own = dict(dst.named_parameters())
    return [(name, own[name], i) for name, i in pairs]


def _linears_in_call_order(model: nn.Module, x: torch.Tensor) -> list[nn.Linear] | None:
    """The model's Linear layers in the order its forward calls them (``None`` when a dry run
    fails: the real forward will report that error)."""
    called: list[nn.Linear] = []
    hooks = [m.register_forward_pre_hook(lambda mod, args: called.append(mod) if mod not in called else None)
             for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            model(x)
    except Exception:  # noqa: BLE001
        return None
    finally:
        for h in hooks:
            h.remove()
    return called


def _copy_linears_in_call_order(src: list[torch.Tensor], model: nn.Module, in_features: int) -> list:
    """Give the learner's model the spec's weights (``src``: weight, bias, weight, ...), layer by
    layer in the order the forward uses them: where the layers are registered (an output layer
    created first, a ModuleList, a dict) does not matter, only the computation. Models without
    nn.Linear submodules (F.linear on own Parameters) are matched in registration order.
    Returns ``(name, the learner's parameter, index in src)``."""
    called = _linears_in_call_order(model, torch.zeros(2, in_features))
    n_linears = len(src) // 2
    if called and len(called) == n_linears == sum(isinstance(m, nn.Linear) for m in model.modules()):
        got = [tuple(m.weight.shape) for m in called]
        want = [tuple(src[2 * k].shape) for k in range(n_linears)]
        if got != want:
            raise Incorrect("wrong_layers", what="Linear layers' weight shapes", order="your forward uses them",
                            got=got, want=want)
        pairs = []
        with torch.no_grad():
            for k, dst in enumerate(called):
                dst.weight.copy_(src[2 * k])
                pairs.append((f"layer {k + 1}'s weight", dst.weight, 2 * k))
                if dst.bias is not None:
                    dst.bias.copy_(src[2 * k + 1])
                    pairs.append((f"layer {k + 1}'s bias", dst.bias, 2 * k + 1))
        return pairs
    return _copy_parameters_in_order(src, model)


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): its parameters, then its forward
    with the spec's weights and the gradients they get."""
    in_features, hidden, num_classes = case.args
    g = gen(case.kwargs["seed"])
    src = _values(g, [in_features, *hidden, num_classes])
    hidden_arg = list(hidden)
    model = build(answer, in_features, hidden_arg, num_classes)
    if hidden_arg != list(hidden):
        raise Incorrect("mutated_input", now=hidden_arg, was=list(hidden))
    n_got, n_ref = count(model), sum(v.numel() for v in src)
    if n_got == 0:
        raise Incorrect("unregistered_parameters")
    if n_got != n_ref:
        raise Incorrect("wrong_parameter_count", got=n_got, want=n_ref, in_features=in_features,
                        hidden_sizes=list(hidden), num_classes=num_classes)
    pairs = _copy_linears_in_call_order(src, model, in_features)
    x = torch.randn(batch_size(g), in_features, generator=g)
    out = model(x)
    return {"out": out, "grads": param_grads(out, [(name, p) for name, p, _ in pairs], g),
            "index": {name: i for name, _, i in pairs}}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: the spec's model with the same weights, on the same input."""
    data = ran(data, "out", "grads", "index")
    out, index = data["out"], data["index"]
    in_features, hidden, num_classes = case.args
    g = gen(case.kwargs["seed"])
    ref = MLP(in_features, list(hidden), num_classes)
    fill_from(ref, g)
    x = torch.randn(batch_size(g), in_features, generator=g)
    params = list(ref.parameters())
    ref_params = {name: params[i] for name, i in (index.items() if isinstance(index, dict) else ())
                  if isinstance(name, str) and isinstance(i, int) and 0 <= i < len(params)}
    check_reference_grads(out, ref, x, data["grads"], ref_params, g)
    if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1:
        o = out.detach()
        if bool((o >= 0).all()) and bool(torch.allclose(o.sum(1), torch.ones(len(o)), atol=1e-4)):
            raise Incorrect("softmax_in_forward")
    return out


# --- wrong answers
class _NotAModule:
    def __init__(self, in_features, hidden_sizes, num_classes):
        self.sizes = [in_features, *hidden_sizes, num_classes]


class _NoSuper(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):  # no super().__init__()
        self.net = nn.Linear(in_features, num_classes)


class _MutatesSizes(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        hidden_sizes.append(num_classes)  # the caller's list
        super().__init__(in_features, hidden_sizes[:-1], num_classes)


class _PlainList(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        self.layers = list(self._modules.pop("net"))  # a Python list: PyTorch does not see it

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class _NoBias(MLP):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        for layer in self.net[::2]:
            layer.bias = None


class _TransposedWeights(MLP):
    """Its own (in, out) weights, `x @ w + b`, instead of nn.Linear's (out, in)."""

    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__(in_features, hidden_sizes, num_classes)
        linears = list(self._modules.pop("net"))[::2]
        self.weights = nn.ParameterList(nn.Parameter(m.weight.detach().T.clone()) for m in linears)
        self.biases = nn.ParameterList(m.bias for m in linears)

    def forward(self, x):
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = x @ w + b if k == len(self.weights) - 1 else torch.relu(x @ w + b)
        return x


class _HiddenNoGrad(MLP):
    def forward(self, x):
        with torch.no_grad():
            features = self.net[:-1](x)
        return self.net[-1](features)


class _Softmax(MLP):
    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class _NoActivation(MLP):
    def forward(self, x):
        for layer in self.net[::2]:
            x = layer(x)
        return x


class _ReluOnOutput(MLP):
    def forward(self, x):
        return torch.relu(self.net(x))


# --- declaration
register(Exercise(
    lesson=LESSON, name="MLP", title="An MLP to a given spec (logits out)",
    reference=MLP, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    finish=_finish,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        Mistake("not_a_module", NOT_A_MODULE, _NotAModule, match_output=False),
        # match_output stays True: `mutated_input` is also the runner's generic id, whose own words
        # must not be replaced by this template
        Mistake("mutated_input",
                "Your constructor changed the caller's `hidden_sizes` list (it is now {now}, it was {was}): "
                "building a second model from the same list would give another network. Make a new list: "
                "`sizes = [in_features, *hidden_sizes, num_classes]`.",
                _MutatesSizes),
        Mistake("unregistered_parameters",
                "Your model has no parameters: `model.parameters()` is empty, so an optimizer would fail with "
                "\"optimizer got an empty parameter list\". Layers kept in a plain Python list are invisible to "
                "PyTorch; put them in `nn.Sequential(...)` or `nn.ModuleList(...)`.",
                _PlainList, match_output=False),
        Mistake("wrong_parameter_count",
                "Your model has {got} parameters; an MLP with in_features={in_features}, "
                "hidden_sizes={hidden_sizes}, num_classes={num_classes} has {want} (Linear layers with biases). "
                "A layer in a plain list is not counted; check the sizes too.",
                _NoBias, match_output=False),
        Mistake("wrong_layers",
                "Your module's {what}, in the order {order}, are {got}; the specification gives {want} "
                "(a Linear weight is (out_features, in_features)). Check the sizes of your layers and create them "
                "in the order the forward pass uses them.",
                _TransposedWeights, match_output=False),
        Mistake("parameter_not_trained", PARAMETER_NOT_TRAINED, _HiddenNoGrad, match_output=False),
        Mistake("softmax_in_forward",
                "Your forward returns probabilities (softmax). Return the raw scores (logits): "
                "`nn.CrossEntropyLoss` applies log-softmax itself, and softmax before it squashes the gradients "
                "and slows learning. Apply softmax only when you need probabilities.",
                _Softmax, match_output=False),
        Mistake("missing_activation",
                "Your layers are stacked without a ReLU between them. A stack of Linear layers with "
                "nothing in between is just one linear map; put `nn.ReLU()` after every hidden layer.",
                _NoActivation),
        Mistake("activation_on_output",
                "Your last layer is followed by a ReLU, which clips negative logits to 0. The "
                "output layer returns raw scores: no activation after the last Linear.",
                _ReluOnOutput),
    ],
    hints=[
        "The number of hidden layers comes from the spec, so build the layers in a loop and keep track of"
        " the width going into each one.",
        "Each hidden layer is a linear map followed by the activation; the last layer maps to the classes"
        " with no activation after it (the loss applies softmax itself). A container that runs modules in"
        " order saves writing the loop again in `forward`. Initialise the parent class before assigning "
        "any layer.",
    ],
))
