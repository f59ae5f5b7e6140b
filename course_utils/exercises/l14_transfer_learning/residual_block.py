"""ResidualBlock: torchvision's BasicBlock, ReLU(bn2(conv2(ReLU(bn1(conv1(x))))) + shortcut(x)).

Subtle: where the ReLUs go (the second one after the addition), BatchNorm before the addition,
a projection (1x1 conv with the block's stride, then BatchNorm) exactly where the input cannot be
added as it is (stride or channels change), the stride on the first convolution, and the
shortcut applied to the block's input (not its output). The check builds the block, loads the
same weights and running statistics (drawn from the case's seed, by torchvision's names) into
it, and compares its outputs in training mode (batch statistics) and eval mode. ``downsample``
may be ``None``, ``nn.Identity()`` or an empty ``nn.Sequential()`` where no projection is due.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, kept, register

from course_utils.lesson_props.l14_transfer_learning import BasicBlock

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/14_transfer_learning.py)
from ...answers.l14_transfer_learning import ResidualBlock


# --- cases
def _case(in_c: int, out_c: int, stride: int, seed: int, size: tuple[int, int], label: str | None = None) -> Case:
    return Case((in_c, out_c, stride), {"seed": seed, "size": size}, label=label, show_inputs=True)


def _cases(r: Rand) -> Case:
    in_c = r.integer(1, 6)
    kind = r.integer(0, 2)  # identity, channels change, stride 2
    out_c = in_c if kind == 0 else r.choice([c for c in range(1, 8) if c != in_c])
    stride = 2 if kind == 2 else 1
    return _case(in_c, out_c, stride, r.integer(0, 2**31), (r.integer(4, 9), r.integer(4, 9)))


EDGE_CASES = [
    _case(4, 4, 1, 11, (6, 7), "same shape in and out: the input is added as it is"),
    _case(3, 6, 2, 12, (8, 6), "stride 2 and more channels: a projection shortcut"),
    _case(5, 3, 1, 13, (5, 5), "fewer channels, stride 1: a projection all the same"),
    _case(4, 4, 2, 14, (7, 9), "stride 2, same channels (odd sizes): a projection, for the size"),
]


# --- run
def _spec(in_c: int, out_c: int, stride: int) -> dict[str, tuple[int, ...]]:
    """The state_dict of the spec, key -> shape (torchvision's BasicBlock names)."""
    def bn(prefix: str) -> dict[str, tuple[int, ...]]:
        return {f"{prefix}.{k}": (out_c,) for k in ("weight", "bias", "running_mean", "running_var")} | {
            f"{prefix}.num_batches_tracked": ()}
    spec = {"conv1.weight": (out_c, in_c, 3, 3), **bn("bn1"), "conv2.weight": (out_c, out_c, 3, 3), **bn("bn2")}
    if stride != 1 or in_c != out_c:
        spec |= {"downsample.0.weight": (out_c, in_c, 1, 1), **bn("downsample.1")}
    return spec


def _weights(spec: dict[str, tuple[int, ...]], gen: torch.Generator) -> dict[str, torch.Tensor]:
    out = {}
    for key, shape in spec.items():
        if key.endswith("num_batches_tracked"):
            out[key] = torch.tensor(10)
        elif key.endswith("running_var"):
            out[key] = torch.rand(shape, generator=gen) + 0.5
        elif key.endswith(("running_mean", "bias")):
            out[key] = torch.randn(shape, generator=gen) * 0.3
        elif key.endswith("weight") and len(shape) == 1:  # a BatchNorm's scale
            out[key] = torch.rand(shape, generator=gen) + 0.5
        else:
            out[key] = torch.randn(shape, generator=gen) * 0.4
    return out


def _check_keys(got: dict[str, tuple[int, ...]], spec: dict[str, tuple[int, ...]], args: tuple) -> None:
    if got == spec:
        return
    if any(k in got for k in ("conv1.bias", "conv2.bias", "downsample.0.bias")):
        raise Incorrect("conv_bias")
    needs = "downsample.0.weight" in spec
    projects = any(k.startswith("downsample.") for k in got)
    if needs and not projects:
        raise Incorrect("no_projection", in_c=args[0], out_c=args[1], stride=args[2])
    if not needs and projects:
        raise Incorrect("needless_projection")
    if needs and "downsample.0.weight" in got and not any(k.startswith("downsample.1.") for k in got):
        raise Incorrect("projection_without_bn")
    missing, extra = sorted(set(spec) - set(got)), sorted(set(got) - set(spec))
    wrong = sorted(k for k in set(spec) & set(got) if spec[k] != got[k])
    raise Incorrect("wrong_layers", missing=missing or "none", unexpected=extra or "none",
                    shapes={k: got[k] for k in wrong} or "none")


_MODULE = Expect("not_a_module", "an `nn.Module`", nn.Module, said="Your class builds",
                 advice="What does `ResidualBlock` inherit from?")


@contextlib.contextmanager
def _prop_watch():
    """Counts the runs of the lesson prop's ``BasicBlock.forward`` (GlyphResNet's block, a working
    answer the sandbox must keep: the other exercises' models are built of it) while it is open."""
    seen: list[int] = []
    code, before = BasicBlock.forward.__code__, sys.getprofile()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is code:
            seen.append(1)
        if before is not None:
            before(frame, event, arg)
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(before)


def _run(answer: Any, case: Case) -> Any:
    in_c, out_c, stride = case.args
    gen = torch.Generator().manual_seed(case.kwargs["seed"])
    block = _MODULE.check(answer(in_c, out_c, stride))
    if any(isinstance(m, BasicBlock) for m in block.modules()):
        raise Incorrect("course_block")
    spec = _spec(in_c, out_c, stride)
    _check_keys({k: tuple(v.shape) for k, v in block.state_dict().items()}, spec, case.args)
    block.load_state_dict(_weights(spec, gen))
    h, w = case.kwargs["size"]
    x_train, x_eval = torch.randn(3, in_c, h, w, generator=gen), torch.randn(2, in_c, h, w, generator=gen)
    with _prop_watch() as prop_ran, kept(unchanged={"x": x_train}):
        block.train()
        with torch.enable_grad():
            out_train = block(x_train)
        block.eval()
        with torch.no_grad():
            out_eval = block(x_eval)
    if prop_ran:
        raise Incorrect("course_block")
    return {"training mode": out_train, "eval mode": out_eval}


# --- wrong answers
class _NoReluAfterAdd(ResidualBlock):
    def forward(self, x):
        return self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + self.downsample(x)


class _ReluBeforeAdd(ResidualBlock):
    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))) + self.downsample(x)


class _BnAfterAdd(ResidualBlock):
    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))) + self.downsample(x)))


class _ShortcutOnOutput(ResidualBlock):
    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + self.downsample(out))


class _StrideOnSecond(ResidualBlock):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__(in_channels, out_channels, stride)
        self.conv1.stride, self.conv2.stride = (1, 1), (stride, stride)


class _NeverProject(ResidualBlock):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__(in_channels, out_channels, stride)
        self.downsample = nn.Identity()


class _AlwaysProject(ResidualBlock):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__(in_channels, out_channels, stride)
        self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                        nn.BatchNorm2d(out_channels))


class _ProjectionWithoutBn(ResidualBlock):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__(in_channels, out_channels, stride)
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False))


class _ConvBias(ResidualBlock):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__(in_channels, out_channels, stride)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1)


class _CourseBlock(BasicBlock):
    """The lesson prop's block under the exercise's name (a thin wrapper would call its forward)."""


# --- declaration
register(Exercise(
    lesson=LESSON, name="ResidualBlock", title="A residual block, with a projection shortcut where the shape changes",
    reference=ResidualBlock, kind="class", cases=_cases, run=_run, n_random=6, edge_cases=EDGE_CASES,
    compare=Compare(rtol=1e-4, atol=1e-5), timeout=10.0,
    mistakes=[
        Mistake("no_relu_after_add", "Your block returns `F(x) + shortcut(x)` with no ReLU after the addition. "
                "In a BasicBlock the last ReLU comes after the sum: `relu(bn2(conv2(...)) + shortcut(x))`.",
                _NoReluAfterAdd),
        Mistake("relu_before_add", "You apply the second ReLU before the addition (`relu(F(x)) + x`): the sum "
                "can then only grow, and the block's output is not rectified. Add first, then ReLU.",
                _ReluBeforeAdd),
        Mistake("bn_after_add", "You normalise after the addition (`bn2(conv2(...) + shortcut(x))`): the "
                "shortcut's values then go through `bn2` too, and the block can no longer pass `x` through "
                "unchanged. BatchNorm belongs on the residual path, before the `+`.", _BnAfterAdd),
        Mistake("shortcut_on_output", "Your shortcut adds the block's own output (`out + shortcut(out)`), not its "
                "input: the skip connection must carry `x`, from before `conv1`, around the two convolutions.",
                _ShortcutOnOutput),
        Mistake("stride_on_second_conv", "Your block strides in `conv2`; the spec (and torchvision) strides in "
                "`conv1`, so the second convolution already works on the smaller map.", _StrideOnSecond),
        Mistake("no_projection", "This block changes the shape (stride {stride} or channels {in_c} -> {out_c}) but "
                "has no projection shortcut (`downsample`): `x` cannot be added to a tensor of another shape. Use "
                "a 1x1 convolution with the block's stride (no bias), then BatchNorm2d.", _NeverProject,
                match_output=False),
        Mistake("needless_projection", "Your block projects the shortcut although the input can be added as it "
                "is (same channels, stride 1). The identity shortcut is what lets a block start as the identity, "
                "and costs no parameters: project only when stride or channels change.", _AlwaysProject,
                match_output=False),
        Mistake("projection_without_bn", "Your projection shortcut is a 1x1 convolution without BatchNorm: the "
                "residual path is normalised, so its shortcut is too (`nn.Sequential(conv1x1, BatchNorm2d)`).",
                _ProjectionWithoutBn, match_output=False),
        Mistake("conv_bias", "Your convolutions have biases: each one is followed by BatchNorm, which subtracts "
                "the channel mean and cancels them. Use `bias=False`.", _ConvBias, match_output=False),
        Mistake("wrong_layers", "Your block's state_dict does not have the spec's layers: missing {missing}, "
                "unexpected {unexpected}, wrong shapes {shapes}. Use the names conv1, bn1, conv2, bn2 and "
                "downsample (a Sequential of the 1x1 conv and the BatchNorm).", match_output=False),
        Mistake("course_block", "Your block is the course's `BasicBlock` (the block of the lesson's GlyphResNet, "
                "in `course_utils.lesson_props`), or runs its `forward`: that is the block this exercise asks "
                "you to write. Build the layers and write `forward` yourself.", _CourseBlock, match_output=False),
        _MODULE.mistake(),
    ],
    hints=[
        "When can `x` be added to the residual path's output as it is, and what must happen to it when it cannot? And "
        "where does each ReLU sit relative to that addition?",
        "`x` can be added unchanged only when the block keeps both the spatial size (stride 1) and the channel count; "
        "otherwise a projection brings it to the new shape, and it is normalised like the path it joins. BatchNorm "
        "stays on the residual path, before the sum; the stride belongs to the first convolution; the last ReLU "
        "rectifies the sum, not the path before it.",
        "Look up `nn.Identity` (a shortcut that passes `x` through) and `nn.Sequential` (a projection of two layers); "
        "every convolution followed by BatchNorm needs no `bias`.",
    ],
))
