"""Helpers shared by the class exercises of 03_nn_module (MLP, Tower, RMSNorm, RunningMean).

Every exercise that uses :func:`build` declares ``missing_super_init`` (with the message below) and
``BUILDS_MODULE.mistake(...)``; every one that uses :func:`check_reference_grads` declares ``parameter_not_trained``.

Linear, MLP and Tower are checked in two halves (``Exercise.run`` and ``Exercise.finish``): the
first builds and runs the learner's module with no reference in reach and returns plain data
(:func:`param_grads`, ``x``, the output); the second builds the reference with the same values,
drawn from the case's seed, and compares (:func:`check_reference_grads`). In the instructor's
grader the first runs in the sandbox with the answer, the second in the judge (issue 23).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Expect, Incorrect

LESSON = "03_nn_module"

MISSING_SUPER_INIT = (
    "Creating your module raised \"cannot assign ... before Module.__init__() call\". "
    "`nn.Module.__init__` sets up the registries for parameters, buffers and submodules: call "
    "`super().__init__()` as the first line of your `__init__`, before assigning any layer or parameter.")
BUILDS_MODULE = Expect("not_a_module", "an `nn.Module`", nn.Module, said="Your class builds",
                       advice="Subclass it: `class {name}(nn.Module):`.")
PARAMETER_NOT_TRAINED = (
    "Your outputs are right, but the gradient reaching `{name}` is {how}: part of your forward runs "
    "outside autograd (`torch.no_grad()`, `.detach()`, `.data`), so training would never update it. "
    "Use the parameters and layers directly in forward.")


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def batch_size(g: torch.Generator) -> int:
    """A batch size from ``g`` (between 3 and 8)."""
    return int(torch.randint(3, 9, (1,), generator=g))


def build(answer: Any, *args: Any) -> nn.Module:
    """Instantiate the learner's class; name the classic construction mistakes."""
    try:
        module = answer(*args)
    except AttributeError as exc:
        if "before Module.__init__() call" in str(exc):
            raise Incorrect("missing_super_init") from None
        raise
    return BUILDS_MODULE.check(module, name=getattr(answer, "__name__", "Name"))


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def fill_from(module: nn.Module, g: torch.Generator, scale: float = 0.5) -> None:
    """Overwrite every parameter and floating buffer with random values from ``g``."""
    with torch.no_grad():
        for t in list(module.parameters()) + [b for b in module.buffers() if b.is_floating_point()]:
            t.copy_(torch.randn(t.shape, generator=g, dtype=t.dtype) * scale)


def param_grads(out: Any, named: list[tuple[str, torch.Tensor]], g: torch.Generator) -> list | None:
    """The answer's half of :func:`check_reference_grads`: backward an upstream gradient drawn
    from ``g`` through ``out`` and return ``[[name, gradient or None], ...]`` for ``named`` (plain
    data); ``None`` when ``out`` is not a tensor that requires grad (values or the generic graph
    check report it)."""
    if not (isinstance(out, torch.Tensor) and out.requires_grad):
        return None
    upstream = torch.randn(out.shape, generator=g)
    got = torch.autograd.grad(out, [p for _, p in named], upstream, allow_unused=True, retain_graph=True)
    return [[name, None if gr is None else gr.detach().clone()] for (name, _), gr in zip(named, got)]


def ran(data: Any, *keys: str) -> dict:
    """What a ``run`` half returned, checked to be the dict ``finish`` expects (in the grader it
    came from the process that ran the answer, as plain data)."""
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise RuntimeError("the check of your answer sent back something unreadable")
    return data


def check_reference_grads(out: Any, ref: nn.Module, x: torch.Tensor, grads: Any,
                          ref_params: dict[str, nn.Parameter], g: torch.Generator) -> None:
    """Backward the same upstream gradient through the reference: every parameter the
    reference trains must get the same gradient in the learner's (a forward run partly under
    ``no_grad``, or with ``.detach()``/``.data``, gives right values and a model that never
    learns). ``grads`` is what :func:`param_grads`
    returned for the learner's module, ``ref_params`` maps each of its names to the reference
    parameter it was given the values of; ``g`` is at the same point of its stream as the
    answer's half was when it drew the upstream gradient."""
    if not (isinstance(out, torch.Tensor) and out.requires_grad) or not isinstance(grads, list):
        return
    want = ref(x.detach())
    if want.shape != out.shape or want.dtype != out.dtype or not torch.allclose(
            out.detach(), want.detach(), rtol=1e-5, atol=1e-6):
        return  # wrong values: the output comparison reports (and names) them
    upstream = torch.randn(out.shape, generator=g)
    pairs = [(item[0], item[1], ref_params[item[0]]) for item in grads
             if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
             and item[0] in ref_params]
    if not pairs:
        return
    want_g = torch.autograd.grad(want, [p for _, _, p in pairs], upstream, allow_unused=True)
    for (name, got, _), w in zip(pairs, want_g):
        if w is None:
            continue
        if not isinstance(got, torch.Tensor) or got.shape != w.shape or not torch.allclose(got, w, rtol=1e-4,
                                                                                             atol=1e-5):
            raise Incorrect("parameter_not_trained", name=name, how="missing" if got is None else "wrong")
