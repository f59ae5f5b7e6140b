"""SmallVGG: a small VGG-style CNN to a spec (conv-BN-ReLU-pool blocks, Flatten, Linear).

Subtle: the flattened size (MaxPool2d(2) rounds down); conv without bias (BatchNorm cancels it);
the order in a block; outputs in training mode (batch statistics) and eval mode (running ones)
with the same weights; a channels-last batch (`.view` fails); a gradient for every parameter."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/08_convolutions.py)
from ...answers.l08_convolutions import SmallVGG


from ._small_vgg_wrong import (  # the known-wrong answers, in their own file
    _ConvBias, _DetachedFeatures, _ExtraParameter, _FlattenNoPool, _Kernel5, _NoBatchNorm, _NoRunningStats,
    _NoSuper, _NotAModule, _PlainLists, _PoolBeforeBN, _ReluBeforeBN, _Softmax, _View,
)


# --- cases
def _cases(r: Rand) -> Case:
    widths = [r.integer(2, 8) for _ in range(r.integer(1, 3))]
    m = 2 ** len(widths)
    h = r.integer(m, 3 * m + 1)
    w = r.choice([v for v in range(m, 3 * m + 2) if v != h])
    return Case((r.integer(1, 3), r.integer(2, 6), widths, (h, w)), {"seed": r.integer(0, 2**31)}, show_inputs=True)


def _edge(label, in_channels, num_classes, widths, size, seed, batch, channels_last=False):
    return Case((in_channels, num_classes, widths, size),
                {"seed": seed, "batch": batch, "channels_last": channels_last}, label=label, show_inputs=True)


EDGE_CASES = [
    _edge("the digits: one channel, 8x8, two blocks", 1, 10, [8, 16], (8, 8), 11, 4),
    _edge("odd, non-square images (pooling rounds down)", 3, 4, [4, 6], (9, 7), 12, 3),
    _edge("one block, a batch of one image", 2, 3, [5], (6, 10), 13, 1),
    _edge("three blocks down to a 1x1 map", 1, 5, [3, 4, 6], (8, 9), 14, 2),
    _edge("a batch in channels-last memory (non-contiguous)", 3, 4, [4, 4], (9, 10), 15, 3, channels_last=True),
]


# --- run and probes
_MODULE = Expect("not_a_module", "an `nn.Module`", nn.Module, said="Your class builds",
                 advice="What does `SmallVGG` inherit from?")


def _build(answer: Any, args: tuple) -> nn.Module:
    try:
        model = answer(*args)
    except AttributeError as exc:
        if "before Module.__init__() call" in str(exc):
            raise Incorrect("missing_super_init") from None
        raise
    return _MODULE.check(model)


KINDS = (nn.Conv2d, nn.BatchNorm2d, nn.Linear)


def _groups(model: nn.Module) -> list[list[nn.Module]]:
    """The model's layers kind by kind: ``[convs, bns, linears]``, each in module order."""
    return [[m for m in model.modules() if isinstance(m, k)] for k in KINDS]


def _flat_size(widths: list, h: int, w: int) -> tuple[int, int, int]:
    fh, fw = h, w
    for _ in widths:
        fh, fw = fh // 2, fw // 2
    return widths[-1] * fh * fw, fh, fw


def _spec_shapes(in_channels: int, num_classes: int, widths: list, h: int, w: int) -> list:
    """The spec's parameter shapes kind by kind, layer by layer (as ``parameters(recurse=False)``
    lists them): 3x3 convs without bias, BatchNorm weight and bias, the Linear's weight and bias."""
    flat = _flat_size(widths, h, w)[0]
    return [[[(wd, c, 3, 3)] for c, wd in zip([in_channels, *widths[:-1]], widths)],
            [[(wd,), (wd,)] for wd in widths],
            [[(num_classes, flat), (num_classes,)]]]


def _check_layers(model: nn.Module, want_groups: list, widths: list, h: int, w: int) -> list:
    """The learner's layers against the spec's shapes, kind by kind; returns its ``[convs, bns, linears]``."""
    if not list(model.parameters()):
        raise Incorrect("unregistered_layers")
    got_groups = _groups(model)
    convs, bns, linears = got_groups
    if not bns:
        raise Incorrect("missing_batchnorm")
    if any(b.running_mean is None or b.running_var is None for b in bns):
        raise Incorrect("no_running_stats")
    if any(c.bias is not None for c in convs):
        raise Incorrect("conv_bias")
    # the flattened size: the one number learners most often get wrong
    flat, fh, fw = _flat_size(widths, h, w)
    if len(linears) == 1 and linears[0].in_features != flat:
        raise Incorrect("wrong_flatten_size", got=linears[0].in_features, image_size=(h, w), widths=list(widths),
                        c=widths[-1], h=fh, w=fw, flat=flat)
    for kind, want_shapes, got in zip(KINDS, want_groups, got_groups):
        got_shapes = [[tuple(p.shape) for p in m.parameters(recurse=False)] for m in got]
        if want_shapes != got_shapes:
            raise Incorrect("wrong_layers", name=kind.__name__, got=got_shapes, want=want_shapes)
    n_got = sum(p.numel() for p in model.parameters())
    n_ref = sum(math.prod(s) for kind in want_groups for m in kind for s in m)
    if n_got != n_ref:
        raise Incorrect("wrong_parameter_count", got=n_got, want=n_ref)
    return got_groups


def _same_weights(want_groups: list, groups: list, gen: torch.Generator) -> None:
    """Weights and running statistics drawn from the case's seed, layer by layer in the spec's
    order, loaded into ``groups`` (the learner's layers, or the reference's: the same values)."""
    with torch.no_grad():
        for shapes, mods in zip(want_groups, groups):
            for m_shapes, m in zip(shapes, mods):
                for shape, p in zip(m_shapes, m.parameters(recurse=False)):
                    p.copy_(torch.randn(shape, generator=gen) * 0.5)
        for bn in groups[1]:
            bn.running_mean.copy_(torch.randn(bn.running_mean.shape, generator=gen) * 0.2)
            bn.running_var.copy_(torch.rand(bn.running_var.shape, generator=gen) + 0.5)
            bn.num_batches_tracked.zero_()


def _inputs(case: Case, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    in_channels, _, _, (h, w) = case.args
    n = case.kwargs.get("batch") or int(torch.randint(1, 6, (1,), generator=gen))
    # channels-last: the same values in another memory order (as after a permute)
    fmt = torch.channels_last if case.kwargs.get("channels_last") else torch.contiguous_format
    x_train = torch.randn(n, in_channels, h, w, generator=gen).contiguous(memory_format=fmt)
    x_eval = torch.randn(n, in_channels, h, w, generator=gen).contiguous(memory_format=fmt)
    return x_train, x_eval


_MODES = ("training mode (batch statistics)", "eval mode (running statistics)")


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): its layers against the spec, its
    outputs in both modes with the spec's weights drawn from the seed, and the parameters the
    training output does not reach."""
    in_channels, num_classes, widths, (h, w) = case.args
    gen = torch.Generator().manual_seed(case.kwargs["seed"])
    want_groups = _spec_shapes(in_channels, num_classes, list(widths), h, w)
    model = _build(answer, (in_channels, num_classes, list(widths), (h, w)))
    if any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()):
        model.eval()  # lazy modules (nn.LazyLinear) learn their sizes from a first forward
        with torch.no_grad():
            model(torch.zeros(1, in_channels, h, w))
    _same_weights(want_groups, _check_layers(model, want_groups, widths, h, w), gen)
    x_train, x_eval = _inputs(case, gen)
    try:
        model.train()
        with torch.enable_grad():
            out_train = model(x_train)  # batch statistics; updates the running statistics
        model.eval()
        with torch.no_grad():
            out_eval = model(x_eval)  # running statistics
    except RuntimeError as exc:
        if "view size is not compatible" in str(exc):
            raise Incorrect("view_not_reshape") from None
        raise
    for out in (out_train, out_eval):
        if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1:
            o = out.detach()
            if bool((o >= 0).all()) and bool(torch.allclose(o.sum(1), torch.ones(len(o)), atol=1e-4)):
                raise Incorrect("softmax_in_forward")
    missing = None
    if isinstance(out_train, torch.Tensor):
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        grads = (torch.autograd.grad(out_train.sum(), [p for _, p in named], allow_unused=True, retain_graph=True)
                 if out_train.requires_grad else [None] * len(named))
        missing = [n for (n, _), g in zip(named, grads) if g is None]
    # a dict, so that feedback names the mode: "Your result['training mode (batch statistics)']"
    return {"out": {_MODES[0]: out_train, _MODES[1]: out_eval}, "missing": missing}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: right training outputs from a forward partly outside autograd
    (`torch.no_grad()`, `.detach()`, `.data`) give a model that never learns: every parameter
    must get a gradient from the training output."""
    if not isinstance(data, dict) or not isinstance(data.get("out"), dict) or any(k not in data["out"] for k in _MODES):
        raise RuntimeError("the check of your answer sent back something unreadable")
    out, missing = data["out"][_MODES[0]], data.get("missing")
    if isinstance(out, torch.Tensor) and isinstance(missing, list) and missing:
        in_channels, num_classes, widths, (h, w) = case.args
        gen = torch.Generator().manual_seed(case.kwargs["seed"])
        ref = SmallVGG(in_channels, num_classes, list(widths), (h, w))
        _same_weights(_spec_shapes(in_channels, num_classes, list(widths), h, w), _groups(ref), gen)
        x_train, _ = _inputs(case, gen)
        ref.train()
        with torch.no_grad():
            want = ref(x_train)
        if want.shape == out.shape and want.dtype == out.dtype and torch.allclose(
                out.detach(), want, rtol=1e-4, atol=1e-5):
            shown = ", ".join(f"`{n}`" for n in missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4
                                                                 else "")
            raise Incorrect("parameter_not_trained", names=shown, them="it" if len(missing) == 1 else "them")
    return data["out"]


# --- declaration
register(Exercise(
    lesson=LESSON, name="SmallVGG", title="A small VGG-style CNN to a spec (conv-BN-ReLU-pool blocks, Flatten, Linear)",
    reference=SmallVGG, kind="class", cases=_cases, run=_run, finish=_finish, n_random=6, edge_cases=EDGE_CASES,
    compare=Compare(rtol=1e-4, atol=1e-5), timeout=10.0,
    mistakes=[
        Mistake("missing_super_init", "Creating your module raised \"cannot assign ... before Module.__init__() "
                "call\": call `super().__init__()` as the first line of `__init__`.", _NoSuper, match_output=False),
        Mistake("conv_bias", "Your convolutions have biases. The spec says `bias=False`: the BatchNorm2d right after "
                "each convolution subtracts the channel mean, which cancels any bias, and adds its own learned shift "
                "(`beta`), so a conv bias is a parameter that can never matter.", _ConvBias, match_output=False),
        Mistake("wrong_flatten_size",
                "Your Linear layer expects {got} features, but for image_size={image_size} and widths={widths} the "
                "last block outputs a ({c}, {h}, {w}) feature map, {flat} numbers per image once flattened. Each "
                "MaxPool2d(2) halves the height and the width, rounding down; a 3x3 convolution with padding=1 "
                "keeps them.", _FlattenNoPool, match_output=False),
        Mistake("missing_batchnorm", "Your network has no `nn.BatchNorm2d`: each block is Conv2d -> BatchNorm2d -> "
                "ReLU -> MaxPool2d.", _NoBatchNorm, match_output=False),
        Mistake("no_running_stats", "Your BatchNorm2d layers keep no running statistics "
                "(`track_running_stats=False`), so in eval mode they still normalise each batch with its own "
                "mean and variance, and a prediction depends on the other images in its batch. Use the default "
                "`nn.BatchNorm2d(width)`.", _NoRunningStats, match_output=False),
        Mistake("softmax_in_forward", "Your forward returns probabilities (softmax). Return logits: "
                "`nn.CrossEntropyLoss` applies log-softmax itself.", _Softmax, match_output=False),
        Mistake("view_not_reshape",
                "Your forward flattens with `.view`, which fails on an input whose memory is not in the default "
                "order (here a channels-last batch: \"view size is not compatible with input tensor's size and "
                "stride\"). Use `nn.Flatten()`, `torch.flatten(x, 1)` or `x.reshape(len(x), -1)`.",
                _View, match_output=False),
        Mistake("relu_before_batchnorm", "Each block is Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d: "
                "normalise the convolution's output, then apply the ReLU.", _ReluBeforeBN),
        Mistake("pool_before_batchnorm", "Pool last in each block: Conv2d -> BatchNorm2d -> ReLU -> "
                "MaxPool2d.", _PoolBeforeBN),
        _MODULE.mistake(_NotAModule),
        Mistake("unregistered_layers", "PyTorch does not see some of your layers (a plain Python list?): their "
                "parameters are missing from `parameters()`. Use `nn.Sequential` or `nn.ModuleList`.",
                _PlainLists, match_output=False),
        Mistake("wrong_layers", "Your {name} layers have parameter shapes {got}; the spec gives {want}. Check the "
                "channel counts block by block (and that every layer is registered).", _Kernel5, match_output=False),
        Mistake("wrong_parameter_count", "Your model has {got} parameters; the spec gives {want}. Use only the "
                "layers the spec lists.", _ExtraParameter, match_output=False),
        Mistake("parameter_not_trained",
                "Your outputs are right, but no gradient reaches {names}: part of your forward runs outside "
                "autograd (`torch.no_grad()`, `.detach()`, `.data`), so training would never update {them}. Use "
                "the layers directly in forward.", _DetachedFeatures, match_output=False),
    ],
    hints=[
        "Keep track of the channels and the size while you build: each block maps the current channels "
        "to its width (3x3, padding 1 keeps the size) and MaxPool2d(2) halves height and width (rounding "
        "down).",
        "Each block is convolution (no bias, since BatchNorm2d follows), BatchNorm2d, ReLU, MaxPool2d; "
        "then Flatten and a Linear from channels × height × width to num_classes.",
        "forward returns logits: no softmax.",
    ],
))
