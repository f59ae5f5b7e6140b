"""Tower (a fix): a module whose layers sit in a plain list and whose scale is a plain tensor.

Subtle: the broken class computes the right values, so the check looks at what PyTorch sees
(parameters, state_dict keys, buffers, one shared layer) before any output; and its random
scale always has mixed signs, so a ReLU moved after the scale changes the output every time.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import (
    LESSON, MISSING_SUPER_INIT, BUILDS_MODULE, PARAMETER_NOT_TRAINED, batch_size, build, check_reference_grads, count,
    gen, param_grads, ran,
)

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import Tower


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.integer(2, 8), r.integer(1, 4)), {"seed": r.integer(0, 2**31)}, show_inputs=True)


# the deeper cases first: with width 1 a ReLU after the scale can give the same output as no
# ReLU at all, which would name the wrong mistake
EDGE_CASES = [
    Case((4, 3), {"seed": 8}, label="width 4, depth 3", show_inputs=True),
    Case((6, 2), {"seed": 99}, label="width 6, depth 2", show_inputs=True),
    Case((1, 1), {"seed": 31}, label="width 1, depth 1", show_inputs=True),
]


# --- run and probes
def _values(g: torch.Generator, width: int, depth: int) -> dict[str, torch.Tensor]:
    """The spec's state_dict (``blocks.i.weight`` (width, width), ``blocks.i.bias`` (width,), then
    ``scale`` (width,)), drawn from ``g`` in the reference's registration order (``fill_from``),
    then a scale of mixed signs."""
    state = {}
    for i in range(depth):
        state[f"blocks.{i}.weight"] = torch.randn((width, width), generator=g) * 0.5
        state[f"blocks.{i}.bias"] = torch.randn((width,), generator=g) * 0.5
    torch.randn((width,), generator=g)  # fill_from's draw for the scale, overwritten below
    # mixed signs, every time: relu(block(x) * scale) differs from relu(block(x)) * scale
    # only where scale < 0 (with 1 + 0.5·randn that was ~2% of entries, seed-dependent)
    scale = torch.randn(width, generator=g) + 0.5
    scale[0] = -1.0 - scale[0].abs()
    scale[-1] = 1.0 + scale[-1].abs() if width > 1 else scale[-1]
    state["scale"] = scale
    return state


def _check_structure(model: nn.Module, expected_keys: list[str], width: int, depth: int) -> None:
    """What PyTorch sees of the learner's module: registered layers and scale, names, shapes."""
    n_got = count(model)
    names = [n for n, _ in model.named_parameters()]
    if n_got in (0, width) and not any(n.startswith("blocks.") for n in names):
        raise Incorrect("unregistered_layers")
    scale = getattr(model, "scale", None)
    if isinstance(scale, torch.Tensor) and not isinstance(scale, nn.Parameter):
        raise Incorrect("scale_is_buffer" if "scale" in dict(model.named_buffers()) else "scale_not_parameter")
    blocks = getattr(model, "blocks", None)
    listed = list(blocks._modules.values()) if isinstance(blocks, nn.Module) else []  # children() dedupes
    if len(listed) == depth > len({id(b) for b in listed}):
        raise Incorrect("shared_layer")
    got_keys = sorted(model.state_dict())
    if got_keys != expected_keys or n_got != depth * (width * width + width) + width:
        raise Incorrect("wrong_structure", got=got_keys, want=expected_keys)
    if not all(p.requires_grad for p in model.parameters()):
        raise Incorrect("frozen_parameter")
    if tuple(model.scale.shape) != (width,):
        raise Incorrect("wrong_shape", got=tuple(model.scale.shape), width=width)
    if not torch.equal(model.scale.detach(), torch.ones(width)):
        raise Incorrect("wrong_init")


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): what PyTorch sees of it, then its
    forward with the spec's values and the gradients its parameters get."""
    width, depth = case.args
    g = gen(case.kwargs["seed"])
    state = _values(g, width, depth)
    model = build(answer, width, depth)
    _check_structure(model, sorted(state), width, depth)
    model.load_state_dict(state)
    x = torch.randn(batch_size(g), width, generator=g)
    out = model(x)
    return {"out": out, "grads": param_grads(out, list(model.named_parameters()), g)}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: the fixed Tower with the same values, on the same input."""
    data = ran(data, "out", "grads")
    width, depth = case.args
    g = gen(case.kwargs["seed"])
    ref = Tower(width, depth)
    ref.load_state_dict(_values(g, width, depth))
    x = torch.randn(batch_size(g), width, generator=g)
    check_reference_grads(data["out"], ref, x, data["grads"], dict(ref.named_parameters()), g)
    return data["out"]


# --- wrong answers
class _NotAModule:  # no `(nn.Module)`
    def __init__(self, width, depth):
        self.args = (width,)


class _NoSuper(Tower):
    def __init__(self, width, depth):  # no super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])


class _PlainList(Tower):  # the broken Tower's list, left as it was
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.blocks = list(self._modules.pop("blocks"))


class _TensorScale(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        del self.scale
        self.scale = torch.ones(width)


class _BufferScale(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        del self.scale
        self.register_buffer("scale", torch.ones(width))


class _SharedLayer(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.blocks = nn.ModuleList([self.blocks[0]] * depth)


class _ExtraParameter(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.offset = nn.Parameter(torch.zeros(width))


class _FrozenScale(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.scale.requires_grad_(False)


class _ScaleRow(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.scale = nn.Parameter(torch.ones(1, width))


class _ZeroScale(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.scale = nn.Parameter(torch.zeros(width))


class _DetachedScale(Tower):
    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x * self.scale.detach()


class _SequentialNoRelu(Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.blocks = nn.Sequential(*self.blocks)

    def forward(self, x):
        return self.blocks(x) * self.scale


# --- declaration
register(Exercise(
    lesson=LESSON, name="Tower", title="Fix a module whose layers and scale are not registered",
    reference=Tower, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    finish=_finish,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("unregistered_layers",
                "PyTorch does not see your blocks: a plain Python list of layers is not registered, so their "
                "weights are missing from `parameters()` and `state_dict()`, are never trained, and do not move "
                "with `.to(device)`. Use `nn.ModuleList([...])`.",
                _PlainList, match_output=False),
        Mistake("scale_not_parameter",
                "`self.scale` is a plain tensor attribute: it is not in `parameters()` (never trained) nor in "
                "`state_dict()` (never saved). Wrap it: `self.scale = nn.Parameter(torch.ones(width))`.",
                _TensorScale, match_output=False),
        Mistake("scale_is_buffer",
                "You registered `scale` as a buffer. Buffers are saved in the state_dict but not returned by "
                "`parameters()`, so the optimizer never trains them. Make it `nn.Parameter(torch.ones(width))`.",
                _BufferScale, match_output=False),
        Mistake("lost_activation",
                "Your blocks run without the ReLU between them. `nn.Sequential` of Linear layers "
                "only chains the layers; keep the `forward` of the broken Tower, its loop with "
                "`torch.relu` (a `ModuleList` is iterated like a list).",
                _SequentialNoRelu),
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        BUILDS_MODULE.mistake(_NotAModule),
        Mistake("shared_layer",
                "Your blocks are one and the same layer: `[nn.Linear(width, width)] * depth` repeats one object, "
                "so the model has a single block's weights used `depth` times. Build a new layer per block: "
                "`[nn.Linear(width, width) for _ in range(depth)]`.",
                _SharedLayer, match_output=False),
        Mistake("wrong_structure",
                "Your state_dict has keys {got}; the fixed Tower keeps the attribute names of the broken one, "
                "which gives {want}.",
                _ExtraParameter, match_output=False),
        # match_output stays True: `wrong_shape` is also the runner's generic id, and a generic
        # shape failure (of the output) keeps its own words
        Mistake("wrong_shape",
                "`scale` has shape {got}; it should be ({width},), one factor per feature: `torch.ones(width)`.",
                _ScaleRow),
        Mistake("wrong_init", "`scale` should start as all ones (`torch.ones(width)`).", _ZeroScale,
                match_output=False),
        Mistake("frozen_parameter",
                "Some of your parameters do not require grad (`requires_grad=False`), so the optimizer would "
                "never train them. Leave `requires_grad` at its default.",
                _FrozenScale, match_output=False),
        Mistake("parameter_not_trained", PARAMETER_NOT_TRAINED, _DetachedScale, match_output=False),
    ],
    hints=[
        "Two attributes are invisible to PyTorch: a Python list of layers and a plain tensor. "
        "`model.parameters()` only finds submodules and parameters registered as attributes.",
        "PyTorch has a list-like container that registers the modules it holds, and a tensor subclass "
        "that registers itself as a learnable parameter when assigned to a module. `forward` stays as it "
        "was.",
    ],
))
