"""MLP: rebuild a teammate's MLP from its checkpoint (state_dict keys and shapes), any spec.

The notebook shows only the ``state_dict`` listing of ``MLP(8, [32, 16], 4)`` and its parameter
count: the learner decides the layout (one ``nn.Sequential`` ``net`` whose ReLUs are modules at
the odd positions, weights (out, in), what each argument gives). The run half compares the
answer's keys and shapes with the layout the spec implies, loads the spec's values by key, and
returns outputs and the gradient every parameter gets (a forward partly under ``no_grad``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register
from course_utils.lesson_props.l03_checkpoint import TEAMMATE_SPEC

from ._mlp_wrong import (
    _Hardcoded, _HiddenNoGrad, _ModuleList, _MutatesSizes, _NoActivation, _NoBias, _NoSuper, _NotAModule, _PlainList,
    _LogSoftmax, _ReluOnOutput, _ReluOutsideSequential, _ReversedHidden, _Softmax,
)
from ._kit import (
    BUILDS_MODULE, LESSON, MISSING_SUPER_INIT, PARAMETER_NOT_TRAINED, batch_size, build, check_reference_grads, count,
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
    Case((TEAMMATE_SPEC[0], list(TEAMMATE_SPEC[1]), TEAMMATE_SPEC[2]), {"seed": 2026}, label="the teammate's spec",
         show_inputs=True),
]


# --- run and probes
def _layout(sizes: list[int]) -> dict[str, tuple[int, ...]]:
    """The spec's ``state_dict``: the k-th Linear at ``net.{2k}`` (ReLUs at the odd positions)."""
    keys: dict[str, tuple[int, ...]] = {}
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        keys[f"net.{2 * k}.weight"] = (n_out, n_in)
        keys[f"net.{2 * k}.bias"] = (n_out,)
    return keys


def _values(g: torch.Generator, sizes: list[int]) -> list[torch.Tensor]:
    """The spec's parameters in ``_layout``'s order, drawn from ``g`` as ``fill_from`` fills the reference."""
    values = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        values.append(torch.randn((n_out, n_in), generator=g) * 0.5)
        values.append(torch.randn((n_out,), generator=g) * 0.5)
    return values


def _check_layout(model: nn.Module, sizes: list[int]) -> None:
    """The answer's ``state_dict`` against the spec's layout: shapes under the right keys, then the
    parameter count (a plain list, no biases, a buffer), then the keys themselves."""
    want = _layout(sizes)
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    teammate = _layout([TEAMMATE_SPEC[0], *TEAMMATE_SPEC[1], TEAMMATE_SPEC[2]])
    if got != want and got == teammate:
        raise Incorrect("hardcoded_spec", spec=sizes)
    n_got, n_ref = count(model), sum(a * b + b for a, b in zip(sizes, sizes[1:]))
    extra = [k for k in got if k.split(".")[0] not in {w.split(".")[0] for w in want}]
    if set(got) > set(want) and extra:  # an unused layer or a buffer beside the container: name its keys
        raise Incorrect("wrong_state_dict_keys", got=extra[:4], lacks="")
    if set(got) == set(want) and got != want:
        keys = [k for k in want if got[k] != want[k]]
        raise Incorrect("wrong_layers", got=[got[k] for k in keys], want=[want[k] for k in keys], keys=keys)
    if n_got != n_ref:  # also a saved tensor that is a buffer, not a parameter: never trained
        raise Incorrect("wrong_parameter_count", got=n_got, want=n_ref, in_features=sizes[0],
                        hidden_sizes=sizes[1:-1], num_classes=sizes[-1], why=" A layer in a plain list is not "
                        "counted; check the sizes too." if n_got < n_ref else " Check the sizes.")
    if set(got) == set(want):
        return
    n_linears = len(sizes) - 1
    if set(got) == {f"net.{k}.{p}" for k in range(n_linears) for p in ("weight", "bias")}:
        raise Incorrect("relu_not_in_sequential", got=sorted({k.rsplit(".", 1)[0] for k in got}),
                        want=sorted({k.rsplit(".", 1)[0] for k in want}))
    raise Incorrect("wrong_state_dict_keys", got=[k for k in got if k not in want][:4],
                    lacks=f" and lacks some it has (such as {[k for k in want if k not in got][:4]})")


def _run(answer: Any, case: Case) -> Any:
    """The answer's half (no reference here): its layout, then its forward with the spec's weights."""
    in_features, hidden, num_classes = case.args
    g = gen(case.kwargs["seed"])
    src = _values(g, [in_features, *hidden, num_classes])
    hidden_arg = list(hidden)
    model = build(answer, in_features, hidden_arg, num_classes)
    if hidden_arg != list(hidden):
        raise Incorrect("mutated_input", now=hidden_arg, was=list(hidden))
    if count(model) == 0:
        raise Incorrect("unregistered_parameters")
    sizes = [in_features, *hidden, num_classes]
    _check_layout(model, sizes)
    keys = list(_layout(sizes))  # in the order of src: weight, bias, weight, ...
    model.load_state_dict({k: v.detach().clone() for k, v in zip(keys, src)})
    own = dict(model.named_parameters())
    pairs = [(k, own[k], i) for i, k in enumerate(keys) if k in own]
    x = torch.randn(batch_size(g), in_features, generator=g)
    out = model(x)
    with torch.no_grad():  # and a batch of one, with large inputs (an activation that clips at 6 shows)
        one = model(x[:1] * 20)
    return {"out": out, "grads": param_grads(out, [(name, p) for name, p, _ in pairs], g),
            "index": {name: i for name, _, i in pairs}, "one": one}


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
        if bool((o <= 0).all()) and bool(torch.allclose(o.logsumexp(1), torch.zeros(len(o)), atol=1e-4)):
            raise Incorrect("log_softmax_in_forward")
    ref_out = ref(x).detach()
    if isinstance(out, torch.Tensor) and (out.shape, out.dtype) == (ref_out.shape, ref_out.dtype) and \
            torch.allclose(out.detach(), ref_out, 1e-4, 1e-5):
        _check_one(data.get("one"), ref(x[:1] * 20).detach())  # right on the batch: a batch of one, large inputs
    return out


def _check_one(one: Any, want: torch.Tensor) -> None:
    if not isinstance(one, torch.Tensor) or one.shape != want.shape:
        raise Incorrect("batch_of_one", got=tuple(one.shape) if isinstance(one, torch.Tensor) else type(one).__name__,
                        want=tuple(want.shape))
    if not torch.allclose(one.detach().to(want.dtype), want, rtol=1e-4, atol=1e-4):
        raise Incorrect("not_relu")


# --- wrong answers: in _mlp_wrong.py


# --- declaration
register(Exercise(
    lesson=LESSON, name="MLP", title="An MLP rebuilt from its checkpoint's state_dict",
    reference=MLP, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    finish=_finish,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        BUILDS_MODULE.mistake(_NotAModule),
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
                "hidden_sizes={hidden_sizes}, num_classes={num_classes} has {want} (Linear layers with "
                "biases).{why}",
                _NoBias, match_output=False),
        Mistake("wrong_layers",
                "Your `state_dict` has the checkpoint's keys, but {keys} have the shapes {got}, where this spec "
                "gives {want}, so the teammate's weights would not load. A Linear's weight is "
                "(out_features, in_features): check which argument gives each layer's sizes, and in which order.",
                _ReversedHidden, match_output=False),
        Mistake("hardcoded_spec",
                "For the spec {spec} your model has the teammate's shapes: the sizes are typed in. Read them "
                "from the arguments, so that every spec gets its own layers.",
                _Hardcoded, match_output=False),
        Mistake("relu_not_in_sequential",
                "Your Linear layers are saved as {got}; the checkpoint names them {want}. The positions in between "
                "belong to modules without parameters (they save nothing, but they take a number): the ReLUs "
                "are modules inside the `nn.Sequential`, between the Linear layers.",
                _ReluOutsideSequential, match_output=False),
        Mistake("wrong_state_dict_keys",
                "Your `state_dict` has keys the checkpoint does not (such as {got}){lacks}, so `load_state_dict` "
                "fails. A key is the attribute's name, then the position in the "
                "container, then the parameter: keep the layers in one container assigned to the attribute the "
                "keys start with.",
                _ModuleList, match_output=False),
        Mistake("parameter_not_trained", PARAMETER_NOT_TRAINED, _HiddenNoGrad, match_output=False),
        Mistake("softmax_in_forward",
                "Your forward returns probabilities (softmax). Return the raw scores (logits): "
                "`nn.CrossEntropyLoss` applies log-softmax itself, and softmax before it squashes the gradients "
                "and slows learning. Apply softmax only when you need probabilities.",
                _Softmax, match_output=False),
        Mistake("log_softmax_in_forward",
                "Your forward returns log-probabilities (each row's `logsumexp` is 0). Which loss is this model "
                "trained with, and what does it do to its input first? The checkpoint's model returns raw scores.",
                _LogSoftmax, match_output=False),
        Mistake("missing_activation",
                "Your layers are stacked without a ReLU between them. A stack of Linear layers with "
                "nothing in between is just one linear map; put `nn.ReLU()` after every hidden layer.",
                _NoActivation),
        Mistake("batch_of_one", "For a batch of one input your model returned {got}, not {want}: keep the "
                "batch dimension (a `.squeeze()` drops it).", match_output=False),
        Mistake("not_relu", "On large inputs your outputs differ from the teammate's model: the activation is "
                "not a plain ReLU (`ReLU6` or `Hardtanh` clip large values).", match_output=False),
        Mistake("activation_on_output",
                "Your last layer is followed by a ReLU, which clips negative logits to 0. The "
                "output layer returns raw scores: no activation after the last Linear.",
                _ReluOnOutput),
    ],
    hints=[
        "What in your class decides the name `net.2.weight`: which attribute, which position, which "
        "parameter? Try `list(model.state_dict())` on a small model of yours and compare.",
        "A container numbers everything it holds, parameters or not; a `state_dict` lists only tensors. "
        "Which part of an MLP has no parameters, and where must it sit for the Linears to land on 0, 2, 4?",
        "Read each weight's shape as (out, in) and name the argument each size comes from; then let the "
        "number of hidden layers follow from `hidden_sizes` (an empty list is a valid spec).",
    ],
))
