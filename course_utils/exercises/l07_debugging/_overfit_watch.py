"""The optimizer-step watch of ``overfit_one_batch``: a global step pre-hook that sees every
``optimizer.step()`` on the model's parameters while the answer runs, and what the step was given:
the gradients (are they this step's?), the optimizer object (the same one every step?) and the
model's mode (training?)."""

from __future__ import annotations

import math
import random
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from course_utils.grading import Expect, Incorrect

from ._kit import global_hooks, remove_leftover_hooks



RETURNS_LIST = Expect("not_a_list", "a list of Python floats, one per step", (list, tuple))

def _has_state(optimizer: Any, ids: set[int]) -> bool:
    """Whether ``optimizer`` keeps per-parameter state for the model (Adam's moments, SGD's momentum
    buffer): building a new one each step throws it away. Plain SGD keeps none."""
    state = getattr(optimizer, "state", {})
    return any(id(p) in ids and bool(s) for p, s in list(state.items()))


def model_state(model: nn.Module) -> tuple:
    """The modes and ``requires_grad`` flags an answer must leave as it found them."""
    return ([m.training for m in model.modules()], [p.requires_grad for p in model.parameters()])


SMOOTHING = (0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)  # label_smoothing values an answer may use


def close(a: float, b: float) -> bool:
    """Two losses equal up to float32 rounding."""
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)


def initial_losses(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """The first loss an answer may report, and the wrong ones with a name (summed, softmax first)."""
    with torch.no_grad():
        logits = model(X)
        return {"mean": F.cross_entropy(logits, y).item(), "sum": F.cross_entropy(logits, y, reduction="sum").item(),
                "softmax": F.cross_entropy(logits.softmax(-1), y).item(),
                **{f"smoothed {e}": F.cross_entropy(logits, y, label_smoothing=e).item() for e in SMOOTHING}}


def first_loss_mistake(first: float, initial: dict[str, float], n: int) -> str:
    """The mistake a first loss other than the model's mean cross-entropy is."""
    if close(first, initial["sum"]) and n > 1:
        return "sum_not_mean"
    if close(first, initial["softmax"]):
        return "softmax_before_loss"
    if any(close(first, initial[f"smoothed {e}"]) for e in SMOOTHING):
        return "not_plain_cross_entropy"
    return "first_loss_not_initial"


class StepWatch:
    """A global step pre-hook: counts the optimizer steps on this model's parameters and compares the
    gradients a step uses with the mean cross-entropy's gradient now. Clipping (smaller, same
    direction) is fine; gradients kept from earlier steps (no ``zero_grad()``) are not. It also
    counts the steps taken with the model (or one of its modules) in eval mode, and the times a
    new optimizer object took over from one that had built up state (``recreated``)."""

    def __init__(self, model: nn.Module, X: torch.Tensor, y: torch.Tensor, seed: int = 0) -> None:
        self.model, self.X, self.y = model, X, y
        self.ids = {id(p) for p in model.parameters()}
        self.steps = 0
        self.stale: tuple[float, float] | None = None  # (cosine, norm ratio) of the first bad step
        self.eval_steps = 0
        self.eval_forwards = 0  # forwards with grad enabled in eval mode (trained on, then train() before step?)
        self._inside = False  # the watch's own forwards
        self.recreated = 0
        self.losses: list[float] = []  # the model's loss on the batch as each step began
        self._last: Any = None  # the optimizer of the last step (held only while the answer runs)
        self._had_state = False  # whether it kept state after its last step
        self._sample = random.Random(seed)  # which steps get the gradient comparison: not guessable
        self._after: list[torch.Tensor] | None = None  # the parameters as the last step left them
        self.extra_updates = 0  # times they changed between a step's end and the next step (or the return)

    def __call__(self, optimizer: Any, args: Any, kwargs: Any) -> tuple | None:
        params = [p for g in optimizer.param_groups for p in g["params"] if id(p) in self.ids]
        if not params:
            return None
        self.check_unchanged()
        self.steps += 1
        with torch.no_grad():
            self.losses.append(F.cross_entropy(self.model(self.X), self.y).item())
        if any(not m.training for m in self.model.modules()):
            self.eval_steps += 1
        if self._last is not None and not _has_state(optimizer, self.ids) and (
                (optimizer is not self._last and _has_state(self._last, self.ids))  # a new one (unless loaded)
                or (optimizer is self._last and self._had_state)):  # or its state cleared (state.clear(), __init__)
            self.recreated += 1
        self._last = optimizer
        # the first steps and one in five at random (keeps the check fast)
        if self.stale is not None or (self.steps > 5 and self._sample.random() > 0.2):
            return None
        # torch passes step's own arguments, the optimizer first: step(closure) or step(closure=...)
        rest = [a for a in args if a is not optimizer]
        closure = (kwargs or {}).get("closure", rest[0] if rest else None)
        if closure is None:
            self._compare(params)
            return None
        calls = []

        def watched_closure() -> Any:  # the gradients its first call leaves are what the step uses
            out = closure()
            if not calls:
                calls.append(1)
                self._compare(params)
            return out
        if "closure" in (kwargs or {}):
            return args, {**kwargs, "closure": watched_closure}
        return tuple(watched_closure if a is closure else a for a in args), kwargs

    def _compare(self, params: list) -> None:
        """Whether the gradients now are the mean cross-entropy's gradient at the parameters now."""
        if any(p.grad is None for p in params):
            return
        self._inside = True
        try:
            with torch.enable_grad():
                fresh = torch.autograd.grad(F.cross_entropy(self.model(self.X), self.y), params, allow_unused=True)
        finally:
            self._inside = False
        got = torch.cat([p.grad.detach().flatten().double() for p in params])
        want = torch.cat([(torch.zeros_like(p) if g is None else g).flatten().double() for p, g in zip(params, fresh)])
        gn, wn = float(got.norm()), float(want.norm())
        if wn < 1e-6:
            return
        cos = float(got @ want) / max(gn * wn, 1e-30)
        if cos < 0.99 or gn > 1.01 * wn:
            self.stale = (cos, gn / wn)

    def before_forward(self, module: nn.Module, args: Any) -> None:
        """A global module forward pre-hook: counts the model's forwards that build a graph (a loss to
        train on) while the model or one of its layers is in eval mode."""
        if module is self.model and not self._inside and torch.is_grad_enabled() and any(
                not m.training for m in self.model.modules()):
            self.eval_forwards += 1

    def after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """The step post-hook: whether the optimizer now keeps state for the model, and the
        parameters as the step left them."""
        if optimizer is self._last:
            self._had_state = _has_state(optimizer, self.ids)
            self._after = [p.detach().clone() for p in self.model.parameters()]

    def check_unchanged(self) -> None:
        """Count a change of the parameters since the last step ended (an update by hand)."""
        if self._after is not None and not all(  # (NaN equal to NaN: a run that blew up changed nothing)
                bool(((a == p) | (a.isnan() & p.isnan())).all()) for a, p in zip(self._after, self.model.parameters())):
            self.extra_updates += 1
        self._after = None

    def forget(self) -> None:
        """Drop the reference to the learner's last optimizer once the answer has returned."""
        self._last = None


def watched_call(answer: Any, model: nn.Module, X: torch.Tensor, y: torch.Tensor, steps: int) -> tuple:
    """Run the answer under the step watch; restore the model's modes, requires_grad and hooks."""
    seed = hash(tuple(X.flatten()[:4].tolist()))  # which steps get the gradient comparison
    watch = StepWatch(model, X, y, seed)
    handles = (register_optimizer_step_pre_hook(watch), register_optimizer_step_post_hook(watch.after_step),
               register_module_forward_pre_hook(watch.before_forward))
    state, hooks = model_state(model), global_hooks()
    try:
        losses = answer(model, X, y, steps)
    finally:
        for handle in handles:
            handle.remove()
        left, changed = remove_leftover_hooks(model, hooks), model_state(model) != state
        for m, t in zip(model.modules(), state[0]):
            m.training = t
        for p, r in zip(model.parameters(), state[1]):
            p.requires_grad_(r)
    watch.forget()
    watch.check_unchanged()  # an update after the last step
    if left:
        raise Incorrect("hooks_left_behind", n=left)
    if watch.eval_steps or watch.eval_forwards:
        raise Incorrect("trained_in_eval_mode", what=f"{watch.eval_steps} of your optimizer steps" if watch.eval_steps
                        else f"{watch.eval_forwards} forward pass(es) you trained on")
    if changed:
        raise Incorrect("model_state_changed")
    RETURNS_LIST.check(losses)  # a tensor of all the losses (`torch.tensor(losses)`) is not a list
    if any(isinstance(v, torch.Tensor) for v in losses):
        raise Incorrect("tensor_losses")
    odd = [type(v) for v in losses if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if odd:
        raise Incorrect("not_floats", got=f"{odd[0].__module__}.{odd[0].__qualname__}".removeprefix("builtins."))
    return losses, watch
