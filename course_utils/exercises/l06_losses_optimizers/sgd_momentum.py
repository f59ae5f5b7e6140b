"""SGDMomentum: SGD with momentum and weight decay as a ``torch.optim.Optimizer`` subclass.

The notebook gives no update rule: three published conventions and a log of ``torch.optim.SGD``
(lr halved mid-run, weight decay) from which the learner picks the one torch runs (the lesson's
tests hold that the log tells each named convention apart). Subtle: settings read from each group
at every step, the buffer in ``self.state[p]`` (all that ``state_dict`` saves), the decay added
before the momentum, ``lr`` outside the buffer, parameters without a gradient skipped, ``step``
under ``no_grad`` returning the closure's loss."""

from __future__ import annotations

import copy
import inspect

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/06_losses_optimizers.py)
from ...answers.l06_losses_optimizers import SGDMomentum


# --- cases
def _cases(r: Rand) -> Case:
    n_params, n_steps = r.integer(1, 4), r.integer(4, 7)
    shapes = [tuple(r.integer(1, 3) for _ in range(r.integer(1, 2))) for _ in range(n_params)]
    grads = [[None if (t > 0 and r.integer(0, 5) == 0) else r.randn(*s) for s in shapes] for t in range(n_steps)]
    split = r.integer(0, n_params - 1)  # params[:split] form a second group with its own settings
    override = {k: v for k, v in [("lr", round(r.uniform(0.01, 0.3), 3)), ("weight_decay", r.choice([0.0, 0.1, 0.5])),
                                  ("momentum", r.choice([0.0, 0.5, 0.9]))] if r.integer(0, 1)}
    return Case(kwargs=dict(
        init=[r.randn(*s) for s in shapes], grads=grads, split=split, override=override,
        lr=round(r.uniform(0.01, 0.3), 3), momentum=r.choice([0.5, 0.8, 0.9, 0.99]),
        weight_decay=r.choice([0.0, 0.0, 0.01, 0.3]), gamma=r.choice([None, 0.5, 0.1]),
        resume_at=r.integer(1, n_steps - 2), closure_at=r.integer(0, n_steps - 1),
        in_place=bool(r.integer(0, 1))))


def _edge(label, seed, shapes, n_steps, **kw):
    g = torch.Generator().manual_seed(seed)
    grads = [[torch.randn(*s, generator=g) for s in shapes] for _ in range(n_steps)]
    for t, i in kw.pop("no_grad_at", []):
        grads[t][i] = None
    base = dict(init=[torch.randn(*s, generator=g) for s in shapes], grads=grads, split=0, override={}, lr=0.1,
                momentum=0.9, weight_decay=0.0, gamma=None, resume_at=n_steps // 2, closure_at=0, in_place=False)
    case = {**base, **kw}
    if kw.get("dtype") is not None:
        case["init"] = [x.to(kw["dtype"]) for x in case["init"]]
        case["grads"] = [[None if x is None else x.to(kw["dtype"]) for x in gs] for gs in grads]
    return Case(kwargs=case, label=label)


EDGE_CASES = [
    _edge("one parameter, momentum 0.9", 1, [(3,)], 4),
    _edge("weight_decay 0.1", 2, [(2, 2)], 4, weight_decay=0.1),
    _edge("two groups: the second has lr 0.01 and weight_decay 0.5", 3, [(3,), (2,)], 5, split=1,
          override={"lr": 0.01, "weight_decay": 0.5}),
    _edge("StepLR halves lr every 2 steps", 4, [(4,)], 6, gamma=0.5),
    _edge("a parameter without gradient at step 2", 5, [(2,), (3,)], 5, no_grad_at=[(2, 1)]),
    _edge("state_dict saved after step 1, loaded into a fresh optimizer", 6, [(2,)], 5, resume_at=1, momentum=0.8),
    _edge("gradients written into p.grad in place (`zero_grad(set_to_none=False)`, then backward)", 7, [(3,)], 5,
          in_place=True, closure_at=2),
    _edge("only lr given: the defaults momentum=0.9, weight_decay=0.0", 8, [(2, 2)], 4, defaults=True),
    _edge("float64 parameters, weight_decay 0.1, gradients written in place", 9, [(3,), (2,)], 4,
          dtype=torch.float64, weight_decay=0.1, in_place=True),
]


# --- run
def _groups(params, split, override):
    if 0 < split < len(params):
        return [{"params": params[:split], **override}, {"params": params[split:]}]
    return [{"params": params}]


_CLASS = Expect("not_a_class", "your class `SGDMomentum` itself (not an instance of it)",
                lambda a: callable(a) and not isinstance(a, torch.optim.Optimizer), said="You passed")
_OPTIMIZER = Expect("not_an_optimizer", "a `torch.optim.Optimizer`", torch.optim.Optimizer,
                    said="Calling your class gave",
                    advice="What does `SGDMomentum` inherit from? (schedulers and `state_dict` need the base class)")


def _make(answer, params, k, settings):
    opt = answer(_groups(params, k["split"], k["override"]), **settings)
    if isinstance(opt, torch.optim.SGD):
        raise Incorrect("used_torch_sgd")
    return _OPTIMIZER.check(opt)


def _set_grads(params, grads, in_place):
    """Each parameter's gradient: a new tensor, or written into ``p.grad`` (``in_place``, as backward does)."""
    for p, g in zip(params, grads):
        if g is None:
            p.grad = None
        elif in_place and p.grad is not None:
            p.grad.zero_().add_(g)
        else:
            p.grad = g.clone()


def _closure(params, grads, in_place, loss_value, seen):
    """A closure as in real use (it sets the gradients); records the grad mode and whether p had moved."""
    def closure():
        seen["grad_mode"] = torch.is_grad_enabled()
        seen["moved"] = any(not torch.equal(p.detach(), x) for p, x in zip(params, seen["before"]))
        _set_grads(params, grads, in_place)
        seen["loss"] = torch.tensor(loss_value, requires_grad=seen["grad_mode"])
        return seen["loss"]
    return closure


def _check_grads_kept(opt, params, grads):
    for p, g in zip(params, grads):
        if p.grad is None or g is None:
            continue
        buffers = [v for v in opt.state.get(p, {}).values() if isinstance(v, torch.Tensor)]
        if any(v.untyped_storage().data_ptr() == p.grad.untyped_storage().data_ptr() for v in buffers):
            raise Incorrect("buffer_aliases_grad")
        if any(v.shape == p.shape and (v.dtype, v.device) != (p.dtype, p.device) for v in buffers):
            raise Incorrect("buffer_wrong_dtype", dtype=p.dtype)
        if not torch.equal(p.grad, g):
            raise Incorrect("grad_modified")


def _run(answer, case: Case):
    k = case.kwargs
    _CLASS.check(answer)
    params = [nn.Parameter(x.clone()) for x in k["init"]]
    settings = dict(lr=k["lr"]) if k.get("defaults") else dict(lr=k["lr"], momentum=k["momentum"],
                                                               weight_decay=k["weight_decay"])
    in_place = k.get("in_place", False)
    try:
        opt = _make(answer, params, k, settings)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=k["gamma"]) if k["gamma"] else None
        trajectory = []
        for t, grads in enumerate(k["grads"]):
            if t == k["closure_at"]:
                # stale gradients: the closure computes this step's own
                _set_grads(params, [None if g is None else -g for g in grads], in_place)
                seen = {"before": [p.detach().clone() for p in params]}
                got = opt.step(_closure(params, grads, in_place, float(t) + 0.5, seen))
                if "loss" not in seen or got is not seen["loss"]:
                    raise Incorrect("closure_loss_not_returned")
                if not seen["grad_mode"]:
                    raise Incorrect("closure_without_grad")
                if seen["moved"]:
                    raise Incorrect("closure_after_update")
            else:
                _set_grads(params, grads, in_place)
                opt.step()
            _check_grads_kept(opt, params, grads)
            trajectory.append(torch.cat([p.detach().reshape(-1) for p in params]).clone())
            if sched is not None:
                sched.step()
            if t == k["resume_at"]:  # a checkpoint: a fresh optimizer (and scheduler) from the saved states
                saved = copy.deepcopy(opt.state_dict())
                opt = _make(answer, params, k, settings)
                opt.load_state_dict(saved)
                if sched is not None:
                    state = sched.state_dict()
                    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=k["gamma"])
                    sched.load_state_dict(state)
    except Exception as exc:
        if isinstance(exc, RuntimeError) and "leaf Variable that requires grad" in str(exc):
            raise Incorrect("no_grad_missing") from None
        if isinstance(exc, (TypeError, AttributeError)) and "NoneType" in str(exc) and any(
                g is None for gs in k["grads"] for g in gs):
            raise Incorrect("none_grad_not_skipped") from None
        raise
    # named parts, so that feedback says which step first differs
    return {f"parameters after step {t + 1}" + (" (the first after the state_dict was loaded)"
                                                  if t == k["resume_at"] + 1 else ""): v
            for t, v in enumerate(trajectory)}


# --- wrong answers
class _NoNoGrad(SGDMomentum):  # the decorator forgotten
    def step(self, closure=None):
        return inspect.unwrap(SGDMomentum.step)(self, closure)  # under torch's wrappers, without no_grad


class _LrFromInit(SGDMomentum):
    def __init__(self, params, lr, momentum=0.9, weight_decay=0.0):
        super().__init__(params, lr, momentum, weight_decay)
        self.lr = lr

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            group["_lr"], group["lr"] = group["lr"], self.lr
        loss = super().step(closure)
        for group in self.param_groups:
            group["lr"] = group.pop("_lr")
        return loss


def _variant(kind):
    class Variant(SGDMomentum):
        @torch.no_grad()
        def step(self, closure=None):
            if kind == "closure_after":
                self.__dict__["_closure"], closure = closure, None
            with torch.set_grad_enabled(kind != "closure_without_grad"):
                loss = closure() if closure is not None and kind != "no_closure" else None
            for group in self.param_groups:
                lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
                for p in group["params"]:
                    if p.grad is None and kind != "none_grad":
                        continue
                    g = p.grad if kind == "decay_after" else p.grad + wd * p
                    store = self.__dict__.setdefault("buffers", {}) if kind == "own_dict" else self.state[p]
                    key = p if kind == "own_dict" else "momentum_buffer"
                    if kind == "alias":  # the buffer is p.grad itself (no copy) when there is no decay
                        g = p.grad if not wd else g
                        if key in store:
                            store[key].mul_(mu).add_(g)
                        else:
                            store[key] = g
                    elif kind == "decay_in_place" and key not in store:
                        store[key] = p.grad.add_(p, alpha=wd).clone()
                    elif key not in store:  # ("zeros32": float32 zeros on the CPU, whatever p is)
                        store[key] = {"ema": (1 - mu) * g, "zeros32": torch.zeros(p.shape).add_(g),
                                      "lr_inside": lr * g}.get(kind, g.clone())
                    else:
                        store[key] = mu * store[key] + {"ema": (1 - mu) * g, "lr_inside": lr * g}.get(kind, g)
                    step = store[key] + (wd * p if kind == "decay_after" else 0)
                    p.sub_(step if kind == "lr_inside" else lr * step)
            if kind == "closure_after" and self.__dict__["_closure"] is not None:
                with torch.enable_grad():
                    loss = self.__dict__["_closure"]()
            return loss
    return Variant


# --- declaration
register(Exercise(
    lesson=LESSON, name="SGDMomentum", title="SGD with momentum and weight decay as a torch.optim.Optimizer subclass",
    reference=SGDMomentum, kind="any", run=_run, cases=_cases, edge_cases=EDGE_CASES, n_random=8,
    compare=Compare(rtol=1e-5, atol=1e-6), timeout=5.0,
    # torch's SGD however reached (its functional form, its workers): the rule comes first, whatever else
    forbid=("torch.optim.SGD", "torch.optim.sgd.sgd", "torch.optim.sgd._single_tensor_sgd",
            "torch.optim.sgd._multi_tensor_sgd", "torch.optim.sgd._fused_sgd"),
    rule_mistake="used_torch_sgd",
    mistakes=[
        Mistake("no_grad_missing", "\"a leaf Variable that requires grad is being used in an in-place operation\": "
                "`step` runs with autograd recording. Decorate it with `@torch.no_grad()`.", _NoNoGrad,
                match_output=False),
        Mistake("lr_from_init", "Read `lr` (and the other settings) from `group` at every step: each group may have "
                "its own, and a scheduler changes `group[\"lr\"]` during training.", _LrFromInit),
        Mistake("decay_after_momentum", "Add `weight_decay * p` to the gradient *before* the momentum buffer, as "
                "torch's SGD does: `g = grad + weight_decay * p`, then the buffer, then `p -= lr * buffer`.",
                _variant("decay_after")),
        Mistake("lr_in_velocity", "Your velocity holds the learning rate (`v = momentum * v + lr * g`, `p -= v`): "
                "torch's only while lr is constant. When a scheduler changes lr, torch's whole step changes at "
                "once: its buffer sums gradients alone, and lr multiplies it when `p` moves.", _variant("lr_inside")),
        Mistake("ema_momentum", "That is an average (`(1 - momentum) * g`), Adam's style. SGD's buffer is a sum: "
                "`buffer = momentum * buffer + g`, and `g` alone on the first step.", _variant("ema")),
        Mistake("state_not_in_self_state", "After `state_dict()` was loaded into a fresh optimizer, your momentum "
                "restarted: keep the buffer in `self.state[p]`, the only per-parameter store that `state_dict()` "
                "saves.", _variant("own_dict")),
        Mistake("none_grad_not_skipped", "A parameter that took no part in the loss has `p.grad is None`: skip it.",
                _variant("none_grad"), match_output=False),
        Mistake("closure_loss_not_returned", "`step(closure)` must call the closure (with grad enabled) and "
                "return what it returned.", _variant("no_closure"), match_output=False),
        Mistake("closure_without_grad", "Your `step` called the closure with grad off (inside its `@torch.no_grad()`): "
                "a real closure runs `loss.backward()`, which then fails. Call it inside `with torch.enable_grad():`.",
                _variant("closure_without_grad"), match_output=False),
        Mistake("closure_after_update", "Your `step` moved the parameters before it called the closure: the closure "
                "computes this step's gradients, so call it first, then update from `p.grad`.",
                _variant("closure_after"), match_output=False),
        Mistake("buffer_aliases_grad", "Your momentum buffer is `p.grad` itself, not a copy: the next "
                "`zero_grad(set_to_none=False)` and `backward` write into `p.grad` in place and wipe the momentum. "
                "Start the buffer with `g.clone()` (or `torch.zeros_like(p)`).", _variant("alias"),
                match_output=False),
        Mistake("buffer_wrong_dtype", "Your momentum buffer's dtype or device differs from its parameter's "
                "({dtype}): build it from the parameter or gradient, `g.clone()` or `torch.zeros_like(p)`, not "
                "`torch.zeros(p.shape)`.", _variant("zeros32"), match_output=False),
        Mistake("grad_modified", "Your `step` changed `p.grad` (e.g. `p.grad.add_(p, alpha=weight_decay)`): torch's "
                "optimizers leave the gradients as backward wrote them (logging, clipping and accumulation read "
                "them). Build the decayed gradient out of place: `g = p.grad.add(p, alpha=weight_decay)`.",
                _variant("decay_in_place"), match_output=False),
        Mistake("used_torch_sgd", "The task is to write the update yourself: without `torch.optim.SGD` or its "
                "functional form `torch.optim.sgd.sgd`.",
                type("WrapsSGD", (torch.optim.SGD,), {}), match_output=False),
        _CLASS.mistake(),
        _OPTIMIZER.mistake(),
    ],
    hints=[
        "What does each of the three rules give for p after the log's first step, by hand? Which rules still "
        "agree with the log up to step 3, and what changes at step 4?",
        "The buffer is a plain sum of gradients, decayed by the momentum (no average), with the decay already "
        "in the gradient; the learning rate scales it only when p moves, so a new rate rescales the whole "
        "step. Settings come from the group at every step; the buffer lives where the checkpoint saves it.",
        "Names: the base class's defaults, self.param_groups, self.state (per parameter), torch.no_grad "
        "around the step, torch.enable_grad around the closure, and a copy of the first gradient.",
    ],
))
