"""Exercises of 03_nn_module.

Class exercises (``kind="class"``) get a custom ``run``: it builds the learner's class from the
case's constructor arguments (turning "cannot assign ... before Module.__init__() call" into a
named mistake), checks what the module registered (parameters, buffers, ``state_dict``,
dtypes, initial values), copies weights drawn from the case's seed into both the learner's
module and the reference's (``load_state_dict``), and returns the forward output on a random
input for the usual comparison. Structural problems raise :class:`Incorrect` with a named
mistake before any output is compared.

Everything random comes from a ``torch.Generator`` seeded by the case (never the global RNG);
module constructors that draw their default initialisation from the global RNG run inside the
check, whose RNG state the framework restores.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

LESSON = "03_nn_module"


# Feedback for mistakes a check's own code recognises (not by matching outputs). The runner
# shows a declared Mistake's message for its id, so the checks raise exactly these texts;
# problems whose message names values of the case (counts, shapes) are raised directly.
_MESSAGES: dict[tuple[str, str], str] = {
    ("shared", "missing_super_init"): (
        "Creating your module raised \"cannot assign ... before Module.__init__() call\". "
        "`nn.Module.__init__` sets up the "
        "registries for parameters, buffers and submodules: call `super().__init__()` as "
        "the first line of your `__init__`, before assigning any layer or parameter."),
    ("shared", "mutated_input"): (
        "Your forward changes its input in place (an op ending in `_`, `/=`, `*=`): the "
        "caller's tensor is modified and autograd refuses it on a leaf. Compute new "
        "tensors (`x / rms`, not `x.div_(rms)`)."),
    ("MLP", "unregistered_parameters"): (
        "Your model has no parameters: `model.parameters()` is empty, so an optimizer would "
        "fail with \"optimizer got an empty parameter list\". Layers kept in a plain Python "
        "list are invisible to PyTorch; put them in `nn.Sequential(...)` or `nn.ModuleList(...)`."),
    ("MLP", "softmax_in_forward"): (
        "Your forward returns probabilities (softmax). Return the raw scores (logits): "
        "`nn.CrossEntropyLoss` applies log-softmax itself, and softmax before it squashes "
        "the gradients and slows learning. Apply softmax only when you need probabilities."),
    ("Tower", "unregistered_layers"): (
        "PyTorch does not see your blocks: a plain Python list of layers is not registered, "
        "so their weights are missing from `parameters()` and `state_dict()`, are never "
        "trained, and do not move with `.to(device)`. Use `nn.ModuleList([...])`."),
    ("Tower", "scale_is_buffer"): (
        "You registered `scale` as a buffer. Buffers are saved in the state_dict but not "
        "returned by `parameters()`, so the optimizer never trains them. Make it "
        "`nn.Parameter(torch.ones(width))`."),
    ("Tower", "scale_not_parameter"): (
        "`self.scale` is a plain tensor attribute: it is not in `parameters()` (never trained) "
        "nor in `state_dict()` (never saved). Wrap it: `self.scale = nn.Parameter(torch.ones(width))`."),
    ("Tower", "frozen_parameter"): (
        "Some of your parameters do not require grad (`requires_grad=False`), so the optimizer "
        "would never train them. Leave `requires_grad` at its default."),
    ("Tower", "wrong_init"): (
        "`scale` should start as all ones (`torch.ones(width)`)."),
    ("RMSNorm", "unregistered_parameters"): (
        "Your RMSNorm has no parameters: a tensor stored as a plain attribute is not "
        "registered, so it is never trained or saved. Wrap it: "
        "`self.weight = nn.Parameter(torch.ones(dim))`."),
    ("RMSNorm", "float64_drift"): (
        "Your weight is float64, so `x * weight` turns every float32 activation into float64 "
        "(slower, twice the memory, and a dtype error in the next matmul). NumPy arrays are "
        "float64: create it with `torch.ones(dim)` (float32)."),
    ("RMSNorm", "wrong_init"): (
        "The weight should start as all ones, so a fresh RMSNorm only rescales."),
    ("RMSNorm", "mutated_input"): (
        "Your forward changes its input in place (an op ending in `_`, `/=`, `*=`): the "
        "caller's tensor is modified and autograd refuses it on a leaf. Compute new "
        "tensors (`x / rms`, not `x.div_(rms)`)."),
    ("RMSNorm", "wrong_dim"): (
        "You averaged over a dimension other than the features. RMSNorm normalises "
        "each feature vector, i.e. over the last dimension: "
        "`x.pow(2).mean(dim=-1, keepdim=True)`."),
    ("RMSNorm", "ignored_eps"): (
        "You left out eps: add it inside the square root, "
        "`torch.sqrt(mean_of_squares + self.eps)`."),
    ("RMSNorm", "frozen_weight"): (
        "Your weight does not require grad, so it can never learn. Leave `requires_grad` at its "
        "default: `self.weight = nn.Parameter(torch.ones(dim))`."),
    ("RMSNorm", "weight_outside_graph"): (
        "No gradient (or the wrong one) reaches your weight: the forward uses it outside autograd "
        "(`self.weight.data`, `.detach()`, a copy), so training would never change it. Multiply "
        "by `self.weight` itself."),
    ("RMSNorm", "partial_graph_cut"): (
        "Your values are right but the gradient with respect to `x` is not: part of the forward "
        "(the RMS?) is computed outside the graph (`.detach()`, `.data`, `torch.tensor(...)`), so "
        "autograd misses how it depends on x. Compute everything from `x` itself with tensor "
        "operations."),
    ("RMSNorm", "graph_cut"): (
        "No gradient reaches the input: somewhere your forward leaves the graph "
        "(`.item()`, `.tolist()`, `.numpy()`, `torch.tensor(...)` on an intermediate, or "
        "`.detach()`). Use tensor operations throughout."),
    ("RunningMean", "parameter_not_buffer"): (
        "`running_mean` is an `nn.Parameter`: the optimizer would change it with gradients, "
        "and it is listed in `parameters()`. A statistic you update yourself is a buffer: "
        "`self.register_buffer(\"running_mean\", torch.zeros(num_features))`."),
    ("RunningMean", "unregistered_buffer"): (
        "`running_mean` is not registered as a buffer (a plain tensor attribute, or another "
        "name): it is missing from `state_dict()`, so it is not saved, and `.to(device)` does "
        "not move it. Use `self.register_buffer(\"running_mean\", torch.zeros(num_features))`."),
    ("RunningMean", "not_persistent"): (
        "Your buffer is non-persistent (`persistent=False`), so it is not in the state_dict and "
        "a saved model would forget the statistic. Leave `persistent` at its default."),
    ("RunningMean", "has_parameters"): (
        "RunningMean has nothing to learn: it should have no parameters."),
    ("RunningMean", "wrong_init"): (
        "`running_mean` should start at zeros (`torch.zeros(num_features)`): before the "
        "first batch there is nothing to average."),
    ("RunningMean", "wrong_dim"): (
        "The batch mean has the wrong shape for `running_mean`: average over the "
        "batch, `x.mean(dim=0)`, which leaves one value per feature."),
    ("RunningMean", "buffer_in_graph"): (
        "Your update puts `running_mean` into the autograd graph (it now requires grad), "
        "so every batch's graph stays alive and the next `backward()` fails with \"Trying "
        "to backward through the graph a second time\". Update under `torch.no_grad()` "
        "(or use `x.detach()`)."),
    ("RunningMean", "output_detached"): (
        "Your output is not connected to `x`'s graph, so no gradient reaches the layers before "
        "this one. Only the *update* of `running_mean` belongs under `torch.no_grad()`; return "
        "`x - self.running_mean` outside that block."),
    ("RunningMean", "updates_in_eval"): (
        "Your module also updates `running_mean` in eval mode. Statistics are collected only "
        "while training: check `self.training` before updating (like BatchNorm does)."),
    ("init_weights", "no_isinstance_check"): (
        "`model.apply(init_weights)` calls your function on *every* module (the "
        "Sequential, LayerNorm, ReLU...), and on one of them your code asked for an "
        "attribute it does not have (`weight`, `bias`, `in_features`). Start with "
        "`if isinstance(m, nn.Linear):`."),
    ("init_weights", "bias_none"): (
        "Some Linear layers have no bias (`nn.Linear(..., bias=False)` sets `m.bias = None`), and "
        "your code used it anyway. Guard the bias: `if m.bias is not None: nn.init.zeros_(m.bias)`."),
    ("init_weights", "touched_other_layers"): (
        "Your function also changed the parameters of a layer that is not Linear (a "
        "LayerNorm, an Embedding or a convolution such as `nn.Conv2d`). Only Linear layers "
        "should be initialised; check `isinstance(m, nn.Linear)` alone, rather than "
        "`hasattr(m, \"weight\")` or a tuple of layer types."),
    ("init_weights", "used_fan_out"): (
        "Your weights have std 1/√fan_out. A Linear layer's weight has shape "
        "(out_features, in_features); fan_in is `m.in_features` (= `m.weight.shape[1]`)."),
    ("init_weights", "variance_as_std"): (
        "Your weights have std 1/fan_in: the *variance* should be 1/fan_in, so the "
        "standard deviation is 1/√fan_in."),
    ("init_weights", "uniform_not_normal"): (
        "Your weights are uniformly distributed; the exercise asks for a normal "
        "distribution (`nn.init.normal_`)."),
    ("init_weights", "nonzero_mean"): (
        "Your weights are not centred at 0 (`mean=0.0`)."),
    ("init_weights", "bias_not_zero"): (
        "The biases of your Linear layers are not zero: add "
        "`nn.init.zeros_(m.bias)` (when `m.bias is not None`)."),
    ("freeze_backbone", "set_module_attribute"): (
        "`model.backbone.requires_grad = False` only creates a new Python attribute on the "
        "module; its parameters still require grad. Call the method: "
        "`model.backbone.requires_grad_(False)` (or set `p.requires_grad = False` for each "
        "parameter)."),
    ("freeze_backbone", "backbone_not_frozen"): (
        "Some backbone parameters still require grad. `torch.no_grad()` only pauses tracking "
        "while its block runs; freezing is a property of the parameters: "
        "`model.backbone.requires_grad_(False)`."),
    ("freeze_backbone", "froze_only_some"): (
        "You froze only some of the backbone's parameters (its Linear layers?). Others still "
        "require grad: a LayerNorm's weight and bias, or a bare `nn.Parameter` a submodule "
        "registered. \"Freeze the backbone\" means every parameter it holds, whatever kind of layer "
        "owns it: `model.backbone.requires_grad_(False)` reaches them all."),
    ("freeze_backbone", "froze_head"): (
        "You froze the head too. Only `model.backbone` is frozen; the head is what you want "
        "to train."),
    ("freeze_backbone", "returned_generator"): (
        "You returned a generator (`model.parameters()` or a generator expression). A "
        "generator is used up after one pass: hand it to one thing and it is empty for the next "
        "(an optimizer built from it again gets \"optimizer got an empty parameter list\"). "
        "Return a list: `[p for p in model.parameters() if p.requires_grad]`."),
    ("freeze_backbone", "returned_copies"): (
        "Some items you returned are not the model's own Parameter objects (a copy, "
        "`.detach()`, `.data`?). The optimizer must receive the parameters themselves to "
        "update the model."),
    ("freeze_backbone", "returned_pairs"): (
        "Your list holds (name, parameter) pairs from `named_parameters()`. An optimizer takes the "
        "parameters themselves: `[p for p in model.parameters() if p.requires_grad]`."),
    ("freeze_backbone", "returned_frozen"): (
        "Your list includes frozen parameters. Return only those that still require grad, "
        "so the optimizer (and its memory) only holds what is trained."),
    ("predict_proba", "forgot_eval"): (
        "Your model ran in training mode: Dropout dropped random units and BatchNorm used the "
        "batch's statistics, so predictions are random and depend on the batch. Call "
        "`model.eval()` before predicting (`torch.no_grad()` does not change this)."),
    ("predict_proba", "kept_graph"): (
        "Your probabilities carry an autograd graph: predicting recorded every operation for a "
        "backward pass that never comes (memory and time). Wrap the forward in "
        "`torch.no_grad()` (or `torch.inference_mode()`)."),
    ("predict_proba", "graph_then_detach"): (
        "Your forward ran with autograd recording: the graph was built (memory and time) and only "
        "thrown away afterwards (`.detach()`). Run the forward inside `torch.no_grad()` (or "
        "`torch.inference_mode()`) so that no graph is recorded at all."),
    ("predict_proba", "mode_not_restored"): (
        "Your function left the model in a different mode than it found it (a model in "
        "training mode came back in eval mode, or the other way round). A training loop that "
        "calls it would go on training without dropout. Remember every submodule's mode first, "
        "`modes = [(m, m.training) for m in model.modules()]`, and restore each at the end "
        "(`model.training = ...` alone does not reach the Dropout and BatchNorm inside)."),
}


def _fail(exercise: str, mistake: str) -> Incorrect:
    return Incorrect(mistake, _MESSAGES[exercise, mistake])


# --------------------------------------------------------------------------- shared helpers
def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _build(answer: Any, *args: Any) -> nn.Module:
    """Instantiate the learner's class; name the classic construction mistakes."""
    try:
        module = answer(*args)
    except AttributeError as exc:
        msg = str(exc)
        if "before Module.__init__() call" in msg:
            raise _fail("shared", "missing_super_init") from None
        raise
    if not isinstance(module, nn.Module):
        raise Incorrect(
            "not_a_module",
            f"Your class builds a {type(module).__name__}, not an `nn.Module`. Subclass it: "
            "`class Name(nn.Module):`.")
    return module


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _fill_from(module: nn.Module, gen: torch.Generator, scale: float = 0.5) -> None:
    """Overwrite every parameter and floating buffer with random values from ``gen``."""
    with torch.no_grad():
        for t in list(module.parameters()) + [b for b in module.buffers() if b.is_floating_point()]:
            t.copy_(torch.randn(t.shape, generator=gen, dtype=t.dtype) * scale)


def _copy_parameters_in_order(src: nn.Module, dst: nn.Module) -> None:
    """Load ``src``'s parameter values into ``dst`` in registration order (names may differ),
    after checking the shapes agree one by one."""
    src_params = list(src.parameters())
    dst_named = list(dst.named_parameters())
    got = [tuple(p.shape) for _, p in dst_named]
    want = [tuple(p.shape) for p in src_params]
    if got != want:
        raise Incorrect(
            "wrong_layers",
            f"Your module's parameter shapes, in the order they were registered, are {got}; the "
            f"specification gives {want}. Check the sizes of your layers and create them in the "
            "order the forward pass uses them.")
    state = {name: value.detach().clone() for (name, _), value in zip(dst_named, src_params)}
    dst.load_state_dict(state, strict=False)


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


def _copy_linears_in_call_order(ref: nn.Module, model: nn.Module, in_features: int) -> list:
    """Give the learner's model the reference's weights, layer by layer in the order the
    forward uses them: where the layers are registered (an output layer created first, a
    ModuleList, a dict) does not matter, only the computation. Models without nn.Linear
    submodules (F.linear on own Parameters) are matched in registration order."""
    ref_linears = [m for m in ref.modules() if isinstance(m, nn.Linear)]
    called = _linears_in_call_order(model, torch.zeros(2, in_features))
    if called and len(called) == len(ref_linears) and len(called) == sum(
            isinstance(m, nn.Linear) for m in model.modules()):
        got = [tuple(m.weight.shape) for m in called]
        want = [tuple(m.weight.shape) for m in ref_linears]
        if got != want:
            raise Incorrect(
                "wrong_layers",
                f"Your Linear layers, in the order your forward uses them, have weight shapes {got}; "
                f"the specification gives {want} (a weight is (out_features, in_features)). Check "
                "the sizes of your layers.")
        pairs = []
        with torch.no_grad():
            for k, (src, dst) in enumerate(zip(ref_linears, called)):
                dst.weight.copy_(src.weight)
                pairs.append((f"layer {k + 1}'s weight", dst.weight, src.weight))
                if dst.bias is not None and src.bias is not None:
                    dst.bias.copy_(src.bias)
                    pairs.append((f"layer {k + 1}'s bias", dst.bias, src.bias))
        return pairs
    _copy_parameters_in_order(ref, model)
    return [(n, p, q) for (n, p), q in zip(model.named_parameters(), ref.parameters())]


def _check_param_grads(model: nn.Module, out: Any, ref: nn.Module, x: torch.Tensor, pairs: list[tuple[str, nn.Parameter, nn.Parameter]],
                       gen: torch.Generator) -> None:
    """Backward a random upstream gradient through both models; every parameter the reference
    trains must get the same gradient in the learner's (a forward run partly under
    ``no_grad``, or with ``.detach()``/``.data``, gives right values and a model that never
    learns). ``pairs`` is ``(name, learner_param, reference_param)``."""
    if not (isinstance(out, torch.Tensor) and out.requires_grad):
        return  # values or the generic graph check report it
    want = ref(x.detach())
    if want.shape != out.shape or want.dtype != out.dtype or not torch.allclose(
            out.detach(), want.detach(), rtol=1e-5, atol=1e-6):
        return  # wrong values: the output comparison reports (and names) them
    upstream = torch.randn(out.shape, generator=gen)
    names = [n for n, _, _ in pairs]
    got_g = torch.autograd.grad(out, [p for _, p, _ in pairs], upstream, allow_unused=True, retain_graph=True)
    want_g = torch.autograd.grad(want, [p for _, _, p in pairs], upstream, allow_unused=True)
    for name, g, w in zip(names, got_g, want_g):
        if w is None:
            continue
        if g is None or not torch.allclose(g, w, rtol=1e-4, atol=1e-5):
            raise Incorrect(
                "parameter_not_trained",
                f"Your outputs are right, but the gradient reaching `{name}` is "
                f"{'missing' if g is None else 'wrong'}: part of your forward runs outside autograd "
                "(`torch.no_grad()`, `.detach()`, `.data`), so training would never update it. Use the "
                "parameters and layers directly in forward.")


def _forward_errors(module: nn.Module, x: torch.Tensor) -> Any:
    try:
        with answer_grad_mode():
            return module(x)
    except RuntimeError as exc:
        if "leaf Variable that requires grad is being used in an in-place operation" in str(exc):
            raise _fail("shared", "mutated_input") from None
        raise


# --------------------------------------------------------------------------- 1. MLP
class MLP(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        layers = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def _mlp_cases(r: Rand) -> Case:
    hidden = [r.integer(2, 12) for _ in range(r.integer(1, 3))]
    return Case((r.integer(2, 10), hidden, r.integer(2, 6)), {"seed": r.integer(0, 2**31)}, show_inputs=True)


def _mlp_run(answer: Any, case: Case) -> Any:
    in_features, hidden, num_classes = case.args
    gen = _gen(case.kwargs["seed"])
    ref = MLP(in_features, list(hidden), num_classes)
    _fill_from(ref, gen)
    hidden_arg = list(hidden)
    model = _build(answer, in_features, hidden_arg, num_classes)
    if hidden_arg != list(hidden):
        raise Incorrect("mutated_input", f"Your constructor changed the caller's `hidden_sizes` list (it is "
                        f"now {hidden_arg}, it was {list(hidden)}): building a second model from the same "
                        "list would give another network. Make a new list: `sizes = [in_features, *hidden_sizes, "
                        "num_classes]`.")
    n_got, n_ref = _count(model), _count(ref)
    if n_got == 0:
        raise _fail("MLP", "unregistered_parameters")
    if n_got != n_ref:
        raise Incorrect(
            "wrong_parameter_count",
            f"Your model has {n_got} parameters; an MLP with in_features={in_features}, "
            f"hidden_sizes={list(hidden)}, num_classes={num_classes} has {n_ref} (Linear layers "
            "with biases). A layer in a plain list is not counted; check the sizes too.")
    pairs = _copy_linears_in_call_order(ref, model, in_features)
    x = torch.randn(r_batch(gen), in_features, generator=gen)
    out = model(x)
    if pairs:
        _check_param_grads(model, out, ref, x, pairs, gen)
    if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1:
        o = out.detach()
        if bool((o >= 0).all()) and bool(torch.allclose(o.sum(1), torch.ones(len(o)), atol=1e-4)):
            raise _fail("MLP", "softmax_in_forward")
    return out


def r_batch(gen: torch.Generator) -> int:
    """A batch size from ``gen`` (between 3 and 8)."""
    return int(torch.randint(3, 9, (1,), generator=gen))


class _MLPNoSuper(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        layers = []
        width = in_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class _MLPPlainList(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        sizes = [in_features, *hidden_sizes, num_classes]
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


class _MLPSoftmax(MLP):
    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class _MLPNoActivation(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        sizes = [in_features, *hidden_sizes, num_classes]
        self.net = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])

    def forward(self, x):
        return self.net(x)


class _MLPReluOnOutput(MLP):
    def forward(self, x):
        return torch.relu(self.net(x))


register(Exercise(
    lesson=LESSON, name="MLP", title="An MLP to a given spec (logits out)",
    reference=MLP, kind="class",
    cases=_mlp_cases,
    # "for each size in hidden_sizes": an empty list is a plain linear classifier; code that
    # starts from hidden_sizes[0] or ends with hidden_sizes[-1] fails on it
    edge_cases=[Case((5, [], 3), {"seed": 12345}, label="no hidden layers", show_inputs=True),
                # one hidden layer, and sizes that repeat (in = hidden = out: transposed weights fit)
                Case((4, [7], 2), {"seed": 2024}, label="one hidden layer", show_inputs=True),
                Case((3, [3, 3], 3), {"seed": 77}, label="every size 3", show_inputs=True),
                Case((6, [8, 5, 4], 2), {"seed": 5}, label="three hidden layers", show_inputs=True)],
    run=_mlp_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("missing_super_init", _MESSAGES["shared", "missing_super_init"], _MLPNoSuper, match_output=False),
        Mistake("unregistered_parameters", _MESSAGES["MLP", "unregistered_parameters"], _MLPPlainList, match_output=False),
        Mistake("softmax_in_forward", _MESSAGES["MLP", "softmax_in_forward"], _MLPSoftmax, match_output=False),
        Mistake("missing_activation",
                "Your layers are stacked without a ReLU between them. A stack of Linear layers with "
                "nothing in between is just one linear map; put `nn.ReLU()` after every hidden layer.",
                _MLPNoActivation),
        Mistake("activation_on_output",
                "Your last layer is followed by a ReLU, which clips negative logits to 0. The "
                "output layer returns raw scores: no activation after the last Linear.",
                _MLPReluOnOutput),
    ],
    hints=[
        "Build a list: for each hidden size append `nn.Linear(width, hidden)` and `nn.ReLU()`, "
        "then a final `nn.Linear(width, num_classes)`; wrap it as `self.net = nn.Sequential(*layers)`.",
        "Call `super().__init__()` first. `forward(self, x)` returns `self.net(x)`: logits, with "
        "no softmax (the loss does that).",
    ],
))


# --------------------------------------------------------------------------- 2. Tower (fix)
class Tower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


def _tower_cases(r: Rand) -> Case:
    return Case((r.integer(2, 8), r.integer(1, 4)), {"seed": r.integer(0, 2**31)}, show_inputs=True)


def _tower_run(answer: Any, case: Case) -> Any:
    width, depth = case.args
    gen = _gen(case.kwargs["seed"])
    ref = Tower(width, depth)
    _fill_from(ref, gen)
    with torch.no_grad():
        # mixed signs, every time: relu(block(x) * scale) differs from relu(block(x)) * scale
        # only where scale < 0 (with 1 + 0.5·randn that was ~2% of entries, seed-dependent)
        ref.scale.copy_(torch.randn(width, generator=gen) + 0.5)
        ref.scale[0] = -1.0 - ref.scale[0].abs()
        ref.scale[-1] = 1.0 + ref.scale[-1].abs() if width > 1 else ref.scale[-1]
    model = _build(answer, width, depth)
    n_got = _count(model)
    layers = depth * (width * width + width)
    names = [n for n, _ in model.named_parameters()]
    if n_got in (0, width) and not any(n.startswith("blocks.") for n in names):
        raise _fail("Tower", "unregistered_layers")
    scale = getattr(model, "scale", None)
    if isinstance(scale, torch.Tensor) and not isinstance(scale, nn.Parameter):
        if "scale" in dict(model.named_buffers()):
            raise _fail("Tower", "scale_is_buffer")
        raise _fail("Tower", "scale_not_parameter")
    blocks = getattr(model, "blocks", None)
    listed = list(blocks._modules.values()) if isinstance(blocks, nn.Module) else []  # children() dedupes
    if len(listed) == depth > len({id(b) for b in listed}):
        raise Incorrect("shared_layer", "Your blocks are one and the same layer: `[nn.Linear(width, width)] * depth` "
                        "repeats one object, so the model has a single block's weights used `depth` times. Build a "
                        "new layer per block: `[nn.Linear(width, width) for _ in range(depth)]`.")
    expected_keys = sorted(ref.state_dict())
    got_keys = sorted(model.state_dict())
    if got_keys != expected_keys or n_got != layers + width:
        raise Incorrect(
            "wrong_structure",
            f"Your state_dict has keys {got_keys}; the fixed Tower keeps the attribute names of the "
            f"broken one, which gives {expected_keys}.")
    if not all(p.requires_grad for p in model.parameters()):
        raise _fail("Tower", "frozen_parameter")
    if tuple(model.scale.shape) != (width,):
        raise Incorrect("wrong_shape", f"`scale` has shape {tuple(model.scale.shape)}; it should be ({width},), "
                        "one factor per feature: `torch.ones(width)`.")
    if not torch.equal(model.scale.detach(), torch.ones(width)):
        raise _fail("Tower", "wrong_init")
    model.load_state_dict(ref.state_dict())
    x = torch.randn(r_batch(gen), width, generator=gen)
    out = model(x)
    ref_params = dict(ref.named_parameters())
    _check_param_grads(model, out, ref, x, [(n, p, ref_params[n]) for n, p in model.named_parameters()], gen)
    return out


class _TowerPlainList(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


class _TowerTensorScale(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.scale = torch.ones(width)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


class _TowerBufferScale(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.register_buffer("scale", torch.ones(width))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale


class _TowerFrozenScale(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.scale = nn.Parameter(torch.ones(width), requires_grad=False)


class _TowerSequentialNoRelu(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return self.blocks(x) * self.scale


register(Exercise(
    lesson=LESSON, name="Tower", title="Fix a module whose layers and scale are not registered",
    reference=Tower, kind="class",
    cases=_tower_cases,
    # the deeper cases first: with width 1 a ReLU after the scale can give the same output as
    # no ReLU at all, which would name the wrong mistake
    edge_cases=[Case((4, 3), {"seed": 8}, label="width 4, depth 3", show_inputs=True),
                Case((6, 2), {"seed": 99}, label="width 6, depth 2", show_inputs=True),
                Case((1, 1), {"seed": 31}, label="width 1, depth 1", show_inputs=True)],
    run=_tower_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("unregistered_layers", _MESSAGES["Tower", "unregistered_layers"], _TowerPlainList, match_output=False),
        Mistake("scale_not_parameter", _MESSAGES["Tower", "scale_not_parameter"], _TowerTensorScale, match_output=False),
        Mistake("scale_is_buffer", _MESSAGES["Tower", "scale_is_buffer"], _TowerBufferScale, match_output=False),
        Mistake("lost_activation",
                "Your blocks run without the ReLU between them. `nn.Sequential` of Linear layers "
                "only chains the layers; keep the `forward` of the broken Tower, its loop with "
                "`torch.relu` (a `ModuleList` is iterated like a list).",
                _TowerSequentialNoRelu),
        Mistake("missing_super_init", _MESSAGES["shared", "missing_super_init"], match_output=False),
        Mistake("wrong_init", _MESSAGES["Tower", "wrong_init"], match_output=False),
        Mistake("frozen_parameter", _MESSAGES["Tower", "frozen_parameter"], _TowerFrozenScale, match_output=False),
    ],
    hints=[
        "Two attributes are invisible to PyTorch: a Python list of layers and a plain tensor. "
        "`model.parameters()` only finds submodules and `nn.Parameter`s assigned as attributes.",
        "`self.blocks = nn.ModuleList([...])` registers every layer (names `blocks.0.weight`...); "
        "`self.scale = nn.Parameter(torch.ones(width))` registers the scale. forward stays as it was.",
    ],
))


# --------------------------------------------------------------------------- 3. RMSNorm
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


def _rms_cases(r: Rand) -> Case:
    dim = r.integer(2, 9)
    batch = r.choice([b for b in range(2, 10) if b != dim])
    shape = [batch, dim] if r.integer(0, 1) else [batch, r.choice([t for t in range(2, 6) if t not in (dim, batch)]), dim]
    return Case((dim, round(r.uniform(0.1, 1.0), 3)), {"seed": r.integer(0, 2**31), "shape": shape},
                show_inputs=True)


def _rms_reference_over(x: torch.Tensor, weight: torch.Tensor, eps: float, dim: int) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(dim=dim, keepdim=True) + eps) * weight


def _rms_run(answer: Any, case: Case) -> Any:
    dim = case.args[0]
    eps = case.args[1] if len(case.args) > 1 else 1e-6  # `RMSNorm(dim)`: the default eps
    gen = _gen(case.kwargs["seed"])
    model = _build(answer, *case.args)
    params = list(model.named_parameters())
    if not params:
        raise _fail("RMSNorm", "unregistered_parameters")
    if len(params) != 1 or tuple(params[0][1].shape) != (dim,):
        shapes = [(n, tuple(p.shape)) for n, p in params]
        raise Incorrect(
            "wrong_parameters",
            f"RMSNorm(dim={dim}) should have exactly one parameter of shape ({dim},); yours are {shapes}.")
    if params[0][0].rsplit(".", 1)[-1] != "weight":  # (a wrapped nn.RMSNorm's `norm.weight` is fine)
        raise Incorrect("weight_name", f"The text asks for one `nn.Parameter` named `weight`; yours is "
                        f"`{params[0][0]}`. The name is the state_dict key: a standard RMSNorm checkpoint "
                        "(key `weight`) would not load into yours. `self.weight = nn.Parameter(torch.ones(dim))`.")
    weight = params[0][1]
    if weight.dtype == torch.float64:
        raise _fail("RMSNorm", "float64_drift")
    if not torch.equal(weight.detach(), torch.ones(dim, dtype=weight.dtype)):
        raise _fail("RMSNorm", "wrong_init")
    if not weight.requires_grad:
        raise _fail("RMSNorm", "frozen_weight")
    new_weight = torch.randn(dim, generator=gen) * 0.5 + 1.0
    model.load_state_dict({params[0][0]: new_weight}, strict=False)
    x = torch.randn(*case.kwargs["shape"], generator=gen).mul_(case.kwargs.get("scale", 2.0)).requires_grad_(True)
    before = x.detach().clone()
    out = _forward_errors(model, x)
    if not torch.equal(x.detach(), before):
        raise _fail("RMSNorm", "mutated_input")
    if (isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype
            and out.requires_grad):
        expected = _rms_reference_over(before, new_weight, eps, -1)
        if not torch.allclose(out.detach(), expected, rtol=1e-4, atol=1e-5):
            for d in range(x.dim() - 1):
                if torch.allclose(out.detach(), _rms_reference_over(before, new_weight, eps, d), rtol=1e-4, atol=1e-5):
                    raise _fail("RMSNorm", "wrong_dim")
            if torch.allclose(out.detach(), _rms_reference_over(before, new_weight, 0.0, -1), rtol=1e-4, atol=1e-5):
                raise _fail("RMSNorm", "ignored_eps")
            return out  # other wrong values: the output comparison reports them
        # right values: the gradients must be right too (a `.detach()`ed RMS or `weight.data`
        # give the same values and wrong gradients)
        upstream = torch.randn(out.shape, generator=gen)
        gx, gw = torch.autograd.grad(out, [x, weight], upstream, allow_unused=True, retain_graph=True)
        if gx is None:
            raise _fail("RMSNorm", "graph_cut")
        xr = before.clone().requires_grad_(True)
        wr = new_weight.clone().requires_grad_(True)
        want_gx, want_gw = torch.autograd.grad(_rms_reference_over(xr, wr, eps, -1), [xr, wr], upstream)
        if not torch.allclose(gx, want_gx, rtol=1e-4, atol=1e-5):
            raise _fail("RMSNorm", "partial_graph_cut")
        if gw is None or not torch.allclose(gw, want_gw, rtol=1e-4, atol=1e-5):
            raise _fail("RMSNorm", "weight_outside_graph")
    return out


def _rmsnorm_variant(init=None, forward=None, tensor_weight=False):
    class Variant(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            w = init(dim) if init else torch.ones(dim)
            self.weight = w if tensor_weight else nn.Parameter(w)

        def forward(self, x):
            return forward(self, x)

    return Variant


def _rms_dim0(self, x):
    return x / torch.sqrt(x.pow(2).mean(dim=0, keepdim=True) + self.eps) * self.weight


def _rms_ok(self, x):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _rms_in_place(self, x):
    return x.div_(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)) * self.weight


def _rms_detached(self, x):
    rms = torch.tensor(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps).tolist())
    return x.detach() / rms * self.weight


def _rms_detached_rms(self, x):
    return x / torch.sqrt(x.detach().pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _rms_weight_data(self, x):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight.data


class _RMSFrozenWeight(RMSNorm):
    def __init__(self, dim, eps=1e-6):
        super().__init__(dim, eps)
        self.weight.requires_grad_(False)


def _ones_from_numpy(dim):
    import numpy as np

    return torch.from_numpy(np.ones(dim))


register(Exercise(
    lesson=LESSON, name="RMSNorm", title="A custom layer with its own nn.Parameter: RMSNorm",
    reference=RMSNorm, kind="class",
    cases=_rms_cases,
    edge_cases=[
        # the default eps (1e-6) only shows on tiny activations: mean(x²) ≈ 1e-6 here
        Case((5,), {"seed": 11, "shape": [3, 5], "scale": 1e-3}, label="RMSNorm(5) with its default eps, tiny x"),
        Case((4, 0.5), {"seed": 12, "shape": [1, 4]}, label="RMSNorm(4, eps=0.5) on one sample", show_inputs=True),
        Case((3, 1e-6), {"seed": 13, "shape": [2, 6, 3]}, label="RMSNorm(3) on a (2, 6, 3) batch of sequences"),
        Case((1, 0.1), {"seed": 14, "shape": [4, 1]}, label="RMSNorm(1, eps=0.1): one feature"),
        # N = dim: a mean over dim 0 has the right shape
        Case((4, 0.2), {"seed": 15, "shape": [4, 4]}, label="RMSNorm(4, eps=0.2) on a (4, 4) x"),
    ],
    run=_rms_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("unregistered_parameters", _MESSAGES["RMSNorm", "unregistered_parameters"],
                _rmsnorm_variant(forward=_rms_ok, tensor_weight=True), match_output=False),
        Mistake("wrong_dim", _MESSAGES["RMSNorm", "wrong_dim"], _rmsnorm_variant(forward=_rms_dim0), match_output=False),
        Mistake("float64_drift", _MESSAGES["RMSNorm", "float64_drift"],
                _rmsnorm_variant(init=_ones_from_numpy, forward=_rms_ok), match_output=False),
        Mistake("mutated_input", _MESSAGES["RMSNorm", "mutated_input"],
                _rmsnorm_variant(forward=_rms_in_place), match_output=False),
        Mistake("graph_cut", _MESSAGES["RMSNorm", "graph_cut"], _rmsnorm_variant(forward=_rms_detached), match_output=False),
        Mistake("ignored_eps", _MESSAGES["RMSNorm", "ignored_eps"],
                _rmsnorm_variant(forward=lambda self, x: x / x.pow(2).mean(-1, keepdim=True).sqrt() * self.weight),
                match_output=False),
        Mistake("partial_graph_cut", _MESSAGES["RMSNorm", "partial_graph_cut"],
                _rmsnorm_variant(forward=_rms_detached_rms), match_output=False),
        Mistake("weight_outside_graph", _MESSAGES["RMSNorm", "weight_outside_graph"],
                _rmsnorm_variant(forward=_rms_weight_data), match_output=False),
        Mistake("frozen_weight", _MESSAGES["RMSNorm", "frozen_weight"], _RMSFrozenWeight, match_output=False),
        Mistake("wrong_init", _MESSAGES["RMSNorm", "wrong_init"], match_output=False),
        Mistake("missing_super_init", _MESSAGES["shared", "missing_super_init"], match_output=False),
    ],
    hints=[
        "In `__init__`: `super().__init__()`, keep `self.eps = eps`, and register "
        "`self.weight = nn.Parameter(torch.ones(dim))`.",
        "In `forward`: `rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)`, return "
        "`x / rms * self.weight`. `keepdim=True` keeps a size-1 last dimension so the division "
        "broadcasts over the features.",
    ],
))


# --------------------------------------------------------------------------- 4. RunningMean
class RunningMean(nn.Module):
    def __init__(self, num_features, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_mean", torch.zeros(num_features))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                batch_mean = x.mean(dim=0)
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * batch_mean)
        return x - self.running_mean


def _rm_cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    return Case((n, round(r.uniform(0.05, 0.5), 3)),
                {"seed": r.integer(0, 2**31), "batches": r.integer(2, 4),
                 "batch_size": r.choice([b for b in range(2, 9) if b != n])},
                show_inputs=True)


def _rm_run(answer: Any, case: Case) -> Any:
    n = case.args[0]  # `RunningMean(n)` alone uses the default momentum 0.1
    gen = _gen(case.kwargs["seed"])
    model = _build(answer, *case.args)
    running = getattr(model, "running_mean", None)
    if isinstance(running, nn.Parameter) or "running_mean" in dict(model.named_parameters()):
        raise _fail("RunningMean", "parameter_not_buffer")
    if "running_mean" not in dict(model.named_buffers()):
        raise _fail("RunningMean", "unregistered_buffer")
    if "running_mean" not in model.state_dict():
        raise _fail("RunningMean", "not_persistent")
    if list(model.parameters()):
        raise _fail("RunningMean", "has_parameters")
    if tuple(model.running_mean.shape) != (n,):
        raise Incorrect("wrong_shape", f"`running_mean` has shape {tuple(model.running_mean.shape)}; it should be "
                        f"({n},), one value per feature: `torch.zeros(num_features)`.")
    if not torch.equal(model.running_mean, torch.zeros(n)):
        raise _fail("RunningMean", "wrong_init")
    outs = []
    model.train()
    for _ in range(case.kwargs["batches"]):
        x = (torch.randn(case.kwargs["batch_size"], n, generator=gen) + 1.5).requires_grad_(True)
        try:
            with answer_grad_mode():
                out = model(x)
        except RuntimeError as exc:
            if "must match the size" in str(exc):
                raise _fail("RunningMean", "wrong_dim") from None
            raise
        if model.running_mean.requires_grad:
            raise _fail("RunningMean", "buffer_in_graph")
        if isinstance(out, torch.Tensor) and not out.requires_grad:
            raise _fail("RunningMean", "output_detached")
        outs.append(out.detach() if isinstance(out, torch.Tensor) else out)
    after_training = model.running_mean.detach().clone()
    model.eval()
    x = torch.randn(case.kwargs["batch_size"], n, generator=gen)
    out = model(x)
    if not torch.equal(model.running_mean, after_training):
        raise _fail("RunningMean", "updates_in_eval")
    outs.append(out)
    outs.append(after_training)
    return tuple(outs)


class _RMParameter(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        nn.Module.__init__(self)
        self.momentum = momentum
        self.running_mean = nn.Parameter(torch.zeros(num_features), requires_grad=False)


class _RMPlainTensor(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        nn.Module.__init__(self)
        self.momentum = momentum
        self.running_mean = torch.zeros(num_features)


class _RMAlwaysUpdates(RunningMean):
    def forward(self, x):
        with torch.no_grad():
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
        return x - self.running_mean


class _RMInGraph(RunningMean):
    def forward(self, x):
        if self.training:
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * x.mean(dim=0)
        return x - self.running_mean


class _RMAllNoGrad(RunningMean):
    def forward(self, x):
        with torch.no_grad():
            if self.training:
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
            return x - self.running_mean


class _RMWrongDim(RunningMean):
    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=1))
        return x - self.running_mean


class _RMSwapped(RunningMean):
    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.mul_(self.momentum).add_((1 - self.momentum) * x.mean(dim=0))
        return x - self.running_mean


register(Exercise(
    lesson=LESSON, name="RunningMean", title="A buffer that tracks a running mean in training mode",
    reference=RunningMean, kind="class",
    cases=_rm_cases,
    edge_cases=[Case((3,), {"seed": 21, "batches": 3, "batch_size": 4},
                     label="RunningMean(3) with its default momentum, 3 batches", show_inputs=True),
                Case((2, 0.5), {"seed": 22, "batches": 2, "batch_size": 1},
                     label="batches of one sample", show_inputs=True),
                # N = num_features: a mean over dim 1 has the right shape
                Case((4, 0.25), {"seed": 23, "batches": 2, "batch_size": 4},
                     label="4 features, batches of 4", show_inputs=True)],
    run=_rm_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("parameter_not_buffer", _MESSAGES["RunningMean", "parameter_not_buffer"], _RMParameter, match_output=False),
        Mistake("unregistered_buffer", _MESSAGES["RunningMean", "unregistered_buffer"], _RMPlainTensor, match_output=False),
        Mistake("updates_in_eval", _MESSAGES["RunningMean", "updates_in_eval"], _RMAlwaysUpdates, match_output=False),
        Mistake("buffer_in_graph", _MESSAGES["RunningMean", "buffer_in_graph"], _RMInGraph, match_output=False),
        Mistake("wrong_dim", _MESSAGES["RunningMean", "wrong_dim"], _RMWrongDim, match_output=False),
        Mistake("output_detached", _MESSAGES["RunningMean", "output_detached"], _RMAllNoGrad, match_output=False),
        Mistake("momentum_swapped",
                "Your running mean moves almost all the way to each new batch: the momentum weights "
                "the *new* value. `running = (1 - momentum) * running + momentum * batch_mean`.",
                _RMSwapped),
        Mistake("not_persistent", _MESSAGES["RunningMean", "not_persistent"], match_output=False),
        Mistake("has_parameters", _MESSAGES["RunningMean", "has_parameters"], match_output=False),
        Mistake("wrong_init", _MESSAGES["RunningMean", "wrong_init"], match_output=False),
        Mistake("missing_super_init", _MESSAGES["shared", "missing_super_init"], match_output=False),
    ],
    hints=[
        "`self.register_buffer(\"running_mean\", torch.zeros(num_features))` in `__init__`. In "
        "`forward`, update it only `if self.training:`.",
        "Update in place without tracking: `with torch.no_grad(): "
        "self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))`; then "
        "return `x - self.running_mean`.",
    ],
))


# --------------------------------------------------------------------------- 5. init_weights
def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=1 / math.sqrt(m.in_features))
        if m.bias is not None:
            nn.init.zeros_(m.bias)


# chains of layer widths: every weight matrix has >= 16k entries, so the sample std is within
# 1% of the true one, and fan_in != fan_out, so confusing them is visible
_WIDTH_CHAINS = [(64, 256, 64), (32, 512, 32), (128, 192, 96), (256, 64, 256)]


def _init_cases(r: Rand) -> Case:
    widths = r.choice(_WIDTH_CHAINS)
    layers: list[nn.Module] = []
    no_bias = r.integer(0, 1)  # every case has a Linear with a bias and one without
    for k, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(a, b, bias=k != no_bias))
        layers.append(nn.LayerNorm(b))
        layers.append(nn.ReLU())
    # modules that are not Linear but have a weight with dim() > 1: "leave every other kind of
    # module untouched" (`hasattr(m, "weight") and m.weight.dim() > 1` re-initialises them)
    layers += [nn.Embedding(6, 4), nn.Conv1d(2, 3, 3), nn.Conv2d(2, 3, 3)]
    model = nn.Sequential(nn.Sequential(*layers[:3]), *layers[3:])
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.rand(p.shape, generator=r.torch) + 0.5)
    return Case((model,))


def _init_fixed(no_bias: int) -> Case:
    def draws(s: int) -> int:  # the draws _init_cases makes before building
        r = Rand(s)
        r.choice(_WIDTH_CHAINS)
        return r.integer(0, 1)

    seed = next(s for s in range(100) if draws(s) == no_bias)
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        case = _init_cases(Rand(seed))
    case.label = f"a model whose Linear layer {no_bias + 1} has no bias"
    return case


def _init_twin_layers() -> Case:
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


def _init_run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    objects = {n: (p, p.dtype) for n, p in model.named_parameters()}
    try:
        model.apply(answer)
    except AttributeError as exc:
        msg = str(exc)
        if msg.startswith("'NoneType' object has no attribute"):
            raise _fail("init_weights", "bias_none") from None
        if "object has no attribute" in msg and not msg.startswith("'Linear' object"):
            raise _fail("init_weights", "no_isinstance_check") from None
        raise  # e.g. a typo on a Linear (`m.in_feature`): the learner sees the real error
    for name, p in model.named_parameters():
        if name in objects and (p.dtype != objects[name][1] or p is not objects[name][0]):
            raise Incorrect("replaced_parameter", f"`{name}` is no longer the model's float32 Parameter (it is now "
                            f"{str(p.dtype).replace('torch.', '')}{'' if p is objects[name][0] else ', a new object'}): "
                            "a NumPy-drawn array is float64, and the model would fail on float32 input. Fill the "
                            "existing weight in place: `nn.init.normal_(m.weight, 0.0, std)`.")
    for name, module in model.named_modules():
        for pname, p in module.named_parameters(recurse=False):
            full = f"{name}.{pname}" if name else pname
            if not isinstance(module, nn.Linear) and not torch.equal(p.detach(), before[full]):
                raise _fail("init_weights", "touched_other_layers")
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        w = module.weight.detach()
        if torch.equal(module.weight.detach(), before[f"{name}.weight"]):
            raise Incorrect("weights_unchanged", f"The weight of Linear layer `{name}` was not changed.")
        fan_in, fan_out = module.in_features, module.out_features
        std = float(w.std())
        target = 1 / math.sqrt(fan_in)
        if not abs(std / target - 1) < 0.05:
            if abs(std * math.sqrt(fan_out) - 1) < 0.05:
                raise _fail("init_weights", "used_fan_out")
            if abs(std * fan_in - 1) < 0.05:
                raise _fail("init_weights", "variance_as_std")
            raise Incorrect(
                "wrong_std",
                f"The weights of `{name}` (in_features={fan_in}) have standard deviation {std:.3g}; "
                f"LeCun normal asks for 1/√{fan_in} ≈ {target:.3g}.")
        centred = w - w.mean()
        kurtosis = float((centred**4).mean() / centred.pow(2).mean() ** 2) - 3
        if kurtosis < -0.6:
            raise _fail("init_weights", "uniform_not_normal")
        if abs(float(w.mean())) > 6 * target / math.sqrt(w.numel()):
            raise _fail("init_weights", "nonzero_mean")
        if module.bias is not None and not torch.equal(module.bias.detach(), torch.zeros_like(module.bias)):
            raise _fail("init_weights", "bias_not_zero")
    linear_weights = [m.weight.detach() for m in model.modules() if isinstance(m, nn.Linear)]
    for a_i, a in enumerate(linear_weights):
        for b in linear_weights[a_i + 1:]:
            if a.shape == b.shape and torch.equal(a, b):
                raise Incorrect("same_draws", "Two of your Linear layers of the same shape got identical weights: "
                                "did you call `torch.manual_seed(...)` inside `init_weights`? That replays the same "
                                "random numbers for every layer (and resets the caller's random stream). Seed once, "
                                "outside, if at all.")
    # what must come out the same as the reference's: every Linear weight's shape (its values
    # are random), and the exact values of every other parameter (zero biases, untouched norms)
    summary: dict[str, Any] = {}
    for name, p in model.named_parameters():
        owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        is_linear_weight = isinstance(owner, nn.Linear) and name.endswith("weight")
        summary[name] = tuple(p.shape) if is_linear_weight else p.detach().clone()
    return summary


def _init_fan_out(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.out_features))
        nn.init.zeros_(m.bias) if m.bias is not None else None


def _init_variance(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / m.in_features)
        nn.init.zeros_(m.bias) if m.bias is not None else None


def _init_keeps_bias(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))


def _init_hasattr(m):
    if hasattr(m, "weight"):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.weight.shape[-1]))
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)


def _init_unguarded_bias(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))
        nn.init.zeros_(m.bias)


def _init_no_isinstance(m):
    nn.init.normal_(m.weight, std=1 / math.sqrt(m.in_features))
    if m.bias is not None:
        nn.init.zeros_(m.bias)


register(Exercise(
    lesson=LESSON, name="init_weights", title="An init function for model.apply (LeCun normal, zero bias)",
    reference=init_weights,
    cases=_init_cases,
    # fixed models too: every verdict must hold without random cases (one model with the
    # bias-free Linear first, one with it second)
    edge_cases=[_init_fixed(0), _init_fixed(1), _init_twin_layers()],
    n_random=4,  # each case holds ~40k weights: a few cases are plenty for statistics
    run=_init_run,
    mistakes=[
        Mistake("used_fan_out", _MESSAGES["init_weights", "used_fan_out"], _init_fan_out, match_output=False),
        Mistake("variance_as_std", _MESSAGES["init_weights", "variance_as_std"], _init_variance, match_output=False),
        Mistake("bias_not_zero", _MESSAGES["init_weights", "bias_not_zero"], _init_keeps_bias, match_output=False),
        Mistake("touched_other_layers", _MESSAGES["init_weights", "touched_other_layers"], _init_hasattr, match_output=False),
        Mistake("no_isinstance_check", _MESSAGES["init_weights", "no_isinstance_check"], _init_no_isinstance, match_output=False),
        Mistake("bias_none", _MESSAGES["init_weights", "bias_none"], _init_unguarded_bias, match_output=False),
        Mistake("uniform_not_normal", _MESSAGES["init_weights", "uniform_not_normal"],
                lambda m: (nn.init.uniform_(m.weight, -math.sqrt(3 / m.in_features), math.sqrt(3 / m.in_features)),
                           m.bias is not None and nn.init.zeros_(m.bias)) if isinstance(m, nn.Linear) else None,
                match_output=False),
        Mistake("nonzero_mean", _MESSAGES["init_weights", "nonzero_mean"], match_output=False),
    ],
    hints=[
        "`model.apply(fn)` calls `fn(m)` once for every module, containers and activations "
        "included, so begin with `if isinstance(m, nn.Linear):`.",
        "`nn.init.normal_(m.weight, mean=0.0, std=1 / math.sqrt(m.in_features))`, and "
        "`nn.init.zeros_(m.bias)` when `m.bias is not None`.",
    ],
))


# --------------------------------------------------------------------------- 6. freeze_backbone
class Backboned(nn.Module):
    """A model with a ``backbone`` (feature extractor) and a ``head`` (classifier)."""

    def __init__(self, in_features: int, hidden: int, num_classes: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def freeze_backbone(model):
    model.backbone.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def _frozen_head_bias() -> Backboned:
    """"The parameters that are still trainable": not simply the head's."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(0)
        model = Backboned(4, 5, 3)
    model.head.bias.requires_grad_(False)
    return model


class _Gain(nn.Module):
    """A layer whose only parameter is a bare ``nn.Parameter`` (no Linear, no LayerNorm)."""

    def __init__(self, features: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return x * self.gain


def _mixed_backbone() -> Backboned:
    """A backbone that holds more than Linear layers: a LayerNorm and a bare Parameter on a
    submodule (freezing only the `nn.Linear` layers leaves them trainable)."""
    with torch.random.fork_rng(devices=[]):  # default init draws from the global RNG
        torch.manual_seed(1)
        model = Backboned(3, 4, 2)
        model.backbone = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.ReLU(), _Gain(4), nn.Linear(4, 4), nn.ReLU())
    return model


def _freeze_cases(r: Rand) -> Case:
    return Case((Backboned(r.integer(2, 6), r.integer(3, 8), r.integer(2, 5)),))


def _freeze_run(answer: Any, case: Case) -> Any:
    (model,) = case.args
    head_before = [p.requires_grad for p in model.head.parameters()]
    out = answer(model)
    if getattr(model.backbone, "requires_grad", None) is False and "requires_grad" in vars(model.backbone):
        raise _fail("freeze_backbone", "set_module_attribute")
    still = [p.requires_grad for p in model.backbone.parameters()]
    if any(still):
        raise _fail("freeze_backbone", "froze_only_some" if not all(still) else "backbone_not_frozen")
    if any(was and not p.requires_grad for was, p in zip(head_before, model.head.parameters())):
        raise _fail("freeze_backbone", "froze_head")
    if out is not None and not isinstance(out, (list, tuple)) and hasattr(out, "__next__"):
        raise _fail("freeze_backbone", "returned_generator")
    if isinstance(out, (list, tuple)):
        if any(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in out):
            raise _fail("freeze_backbone", "returned_pairs")
        names = {id(p): n for n, p in model.named_parameters()}
        if any(id(p) not in names for p in out):
            raise _fail("freeze_backbone", "returned_copies")
        picked = [names[id(p)] for p in out]
        if any(not p.requires_grad for p in out):
            raise _fail("freeze_backbone", "returned_frozen")
        out = sorted(picked)
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    return flags, out


def _freeze_attribute(model):
    model.backbone.requires_grad = False
    return list(model.head.parameters())


def _freeze_no_grad(model):
    with torch.no_grad():
        params = list(model.head.parameters())
    return params


def _freeze_everything(model):
    model.requires_grad_(False)
    return list(model.head.parameters())


def _freeze_only_linear(model):
    for m in model.backbone.modules():
        if isinstance(m, nn.Linear):
            m.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def _freeze_returns_all(model):
    model.backbone.requires_grad_(False)
    return list(model.parameters())


def _freeze_named(model):
    model.backbone.requires_grad_(False)
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _freeze_generator(model):
    model.backbone.requires_grad_(False)
    return (p for p in model.parameters() if p.requires_grad)


register(Exercise(
    lesson=LESSON, name="freeze_backbone", title="Freeze a sub-network and hand the rest to the optimizer",
    reference=freeze_backbone,
    cases=_freeze_cases,
    edge_cases=[Case((_frozen_head_bias(),), label="a model whose head bias was already frozen"),
                Case((Backboned(1, 1, 1),), label="a model with one feature, one hidden unit, one output"),
                Case((_mixed_backbone(),), label="a backbone with a LayerNorm and a bare nn.Parameter on a submodule")],
    run=_freeze_run,
    mistakes=[
        Mistake("set_module_attribute", _MESSAGES["freeze_backbone", "set_module_attribute"], _freeze_attribute, match_output=False),
        Mistake("backbone_not_frozen", _MESSAGES["freeze_backbone", "backbone_not_frozen"], _freeze_no_grad, match_output=False),
        Mistake("froze_only_some", _MESSAGES["freeze_backbone", "froze_only_some"], _freeze_only_linear, match_output=False),
        Mistake("froze_head", _MESSAGES["freeze_backbone", "froze_head"], _freeze_everything, match_output=False),
        Mistake("returned_frozen", _MESSAGES["freeze_backbone", "returned_frozen"], _freeze_returns_all, match_output=False),
        Mistake("returned_generator", _MESSAGES["freeze_backbone", "returned_generator"], _freeze_generator, match_output=False),
        Mistake("returned_copies", _MESSAGES["freeze_backbone", "returned_copies"], match_output=False),
        Mistake("returned_pairs", _MESSAGES["freeze_backbone", "returned_pairs"], _freeze_named, match_output=False),
    ],
    hints=[
        "`module.requires_grad_(False)` (a method, with the underscore) sets `requires_grad` on "
        "every parameter of the module and its children.",
        "Then return `[p for p in model.parameters() if p.requires_grad]`: a list, so it can be "
        "reused, with only the head's parameters in it.",
    ],
))


# --------------------------------------------------------------------------- 7. predict_proba
def predict_proba(model, X):
    # every submodule's own mode: model.train(was_training) would put a Dropout that was in
    # eval mode back into training mode
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(X), dim=1)
    for m, training in modes:
        m.training = training
    return probs


def _predict_proba_top_level_mode(model, X):
    """Restores `model.train(was)`: right unless the submodules were in mixed modes."""
    was = model.training
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(X), dim=1)
    model.train(was)
    return probs


def _proba_cases(r: Rand, training: bool | None = None) -> Case:
    n_in, hidden = r.integer(2, 6), r.integer(4, 10)
    n_cls = r.integer(2, 5)
    model = nn.Sequential(nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(hidden, n_cls))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=r.torch))
        model[1].running_mean.copy_(torch.randn(hidden, generator=r.torch))
        model[1].running_var.copy_(torch.rand(hidden, generator=r.torch) + 0.5)
    random_mode = r.integer(0, 3) > 0  # usually in training mode, as inside a training loop
    model.train(random_mode if training is None else training)
    batch = r.choice([b for b in range(3, 9) if b != n_cls])
    return Case((model, r.randn(batch, n_in)))


def _proba_fixed_case(seed: int, training: bool) -> Case:
    # the layers' default initialisation draws from the global RNG: keep the importer's intact
    with torch.random.fork_rng(devices=[]):
        case = _proba_cases(Rand(seed), training)
    case.label = f"a model in {'training' if training else 'eval'} mode"
    return case


def _proba_mixed_case(seed: int) -> Case:
    """Training mode, but the Dropout already in eval mode (as after fine-tuning without
    dropout): "the mode you found it in" is per submodule."""
    case = _proba_fixed_case(seed, True)
    case.args[0][3].eval()
    case.label = "a model in training mode whose Dropout is in eval mode"
    return case


def _proba_run(answer: Any, case: Case) -> Any:
    model, X = case.args
    modes_before = [m.training for m in model.modules()]
    seen: list[tuple[bool, bool]] = []

    def record(m: nn.Module, args: Any) -> None:  # every submodule: `model.training = False` is not eval()
        seen.append((any(sub.training for sub in m.modules()), torch.is_grad_enabled()))

    handle = model.register_forward_pre_hook(record)
    try:
        with answer_grad_mode():
            out = answer(model, X)
    finally:
        handle.remove()
    if any(training for training, _ in seen):
        raise _fail("predict_proba", "forgot_eval")
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise _fail("predict_proba", "kept_graph")
    if any(grad_enabled for _, grad_enabled in seen):
        raise _fail("predict_proba", "graph_then_detach")
    modes_after = [m.training for m in model.modules()]
    if modes_after != modes_before:
        if (modes_after[0] == modes_before[0] and len(set(modes_before)) > 1
                and all(t == modes_before[0] for t in modes_after)):
            raise Incorrect("mixed_modes_not_restored", _MIXED_MODES)
        raise _fail("predict_proba", "mode_not_restored")
    return out


_MIXED_MODES = (
    "The model came with its submodules in different modes (training, but its Dropout in eval), "
    "and you gave every submodule the top-level mode back: `model.train(was_training)` sets "
    "them all. Remember each module's own mode, `modes = [(m, m.training) for m in "
    "model.modules()]`, and restore them one by one: `for m, t in modes: m.training = t`.")


def _proba_no_eval(model, X):
    with torch.no_grad():
        return torch.softmax(model(X), dim=1)


def _proba_dim0(model, X):
    was = model.training
    model.eval()
    with torch.no_grad():
        out = torch.softmax(model(X), dim=0)
    model.train(was)
    return out


def _proba_keeps_graph(model, X):
    was = model.training
    model.eval()
    out = torch.softmax(model(X), dim=1)
    model.train(was)
    return out


def _proba_stays_eval(model, X):
    model.eval()
    with torch.no_grad():
        return torch.softmax(model(X), dim=1)


def _proba_detached(model, X):
    was = model.training
    model.eval()
    out = torch.softmax(model(X), dim=1).detach()
    model.train(was)
    return out


def _proba_logits(model, X):
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(X)
    model.train(was)
    return out


register(Exercise(
    lesson=LESSON, name="predict_proba", title="Predict probabilities: eval mode, no graph, softmax over classes",
    reference=predict_proba,
    cases=_proba_cases,
    # both modes every time: "model.train() at the end" and "never restored" each fail one of them
    edge_cases=[_proba_fixed_case(101, True), _proba_fixed_case(202, False), _proba_mixed_case(303)],
    run=_proba_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("forgot_eval", _MESSAGES["predict_proba", "forgot_eval"], _proba_no_eval, match_output=False),
        Mistake("wrong_dim",
                "Your probabilities sum to 1 down each column (over the batch), not along each row. "
                "Softmax over the classes: `dim=1` for an (N, C) tensor of logits.",
                _proba_dim0),
        Mistake("kept_graph", _MESSAGES["predict_proba", "kept_graph"], _proba_keeps_graph, match_output=False),
        Mistake("mode_not_restored", _MESSAGES["predict_proba", "mode_not_restored"], _proba_stays_eval, match_output=False),
        Mistake("mixed_modes_not_restored", _MIXED_MODES, _predict_proba_top_level_mode, match_output=False),
        Mistake("graph_then_detach", _MESSAGES["predict_proba", "graph_then_detach"], _proba_detached, match_output=False),
        Mistake("returned_logits",
                "You returned the logits (raw scores). Turn them into probabilities with "
                "`torch.softmax(logits, dim=1)`.",
                _proba_logits),
    ],
    hints=[
        "Three things: `model.eval()` (Dropout off, BatchNorm uses running statistics), "
        "`with torch.no_grad():` around the forward, `torch.softmax(logits, dim=1)`.",
        "Save every submodule's mode first, `modes = [(m, m.training) for m in model.modules()]`, "
        "and restore them at the end (`for m, t in modes: m.training = t`): `model.train(was)` "
        "would overwrite a Dropout that was deliberately in eval mode.",
    ],
))
