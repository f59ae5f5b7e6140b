"""RunningMean: repair a layer whose running mean is lost on saving, drifts in eval and breaks backward.

A diagnosis: the notebook shows a first attempt (a plain tensor attribute, updated on every call
and inside the graph) and its three symptoms; the learner decides what kind of state the statistic
is, when it may change and what autograd should see. Subtle: the registration (buffer, persistent,
no parameters, zeros) is checked before any output; the module is then run over several training
batches, one training batch under ``no_grad`` (the module's mode decides, not grad mode), one eval
batch and a copy loaded from its state_dict; the buffer must stay out of the graph while the
output stays in it, and it must not move in eval mode.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._kit import LESSON, MISSING_SUPER_INIT, BUILDS_MODULE, build, gen

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import RunningMean


# --- cases
def _cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    return Case((n, round(r.uniform(0.05, 0.5), 3)),
                {"seed": r.integer(0, 2**31), "batches": r.integer(2, 4),
                 "batch_size": r.choice([b for b in range(2, 9) if b != n])},
                show_inputs=True)


EDGE_CASES = [
    Case((3,), {"seed": 21, "batches": 3, "batch_size": 4},
         label="RunningMean(3) with its default momentum, 3 batches", show_inputs=True),
    Case((2, 0.5), {"seed": 22, "batches": 2, "batch_size": 1}, label="batches of one sample", show_inputs=True),
    # N = num_features: a mean over dim 1 has the right shape
    Case((4, 0.25), {"seed": 23, "batches": 2, "batch_size": 4}, label="4 features, batches of 4", show_inputs=True),
]


# --- run and probes
def _check_buffer(model: nn.Module, n: int) -> None:
    """``running_mean``: a persistent buffer of n zeros, and no parameters."""
    running = getattr(model, "running_mean", None)
    if isinstance(running, nn.Parameter) or "running_mean" in dict(model.named_parameters()):
        raise Incorrect("parameter_not_buffer")
    if "running_mean" not in dict(model.named_buffers()):
        raise Incorrect("unregistered_buffer")
    if "running_mean" not in model.state_dict():
        raise Incorrect("not_persistent")
    if list(model.parameters()):
        raise Incorrect("has_parameters")
    if tuple(model.running_mean.shape) != (n,):
        raise Incorrect("wrong_shape", got=tuple(model.running_mean.shape), n=n)
    if not torch.equal(model.running_mean, torch.zeros(n)):
        raise Incorrect("wrong_init")


def _run(answer: Any, case: Case) -> Any:
    n = case.args[0]  # `RunningMean(n)` alone uses the default momentum 0.1
    g = gen(case.kwargs["seed"])
    model = build(answer, *case.args)
    _check_buffer(model, n)
    outs = []
    model.train()
    for _ in range(case.kwargs["batches"]):
        x = (torch.randn(case.kwargs["batch_size"], n, generator=g) + 1.5).requires_grad_(True)
        try:
            with answer_grad_mode():
                out = model(x)
        except RuntimeError as exc:
            if "must match the size" in str(exc):
                raise Incorrect("wrong_dim") from None
            raise
        if model.running_mean.requires_grad:
            raise Incorrect("buffer_in_graph")
        if isinstance(out, torch.Tensor) and not out.requires_grad:
            raise Incorrect("output_detached")
        outs.append(out.detach() if isinstance(out, torch.Tensor) else out)
    before = model.running_mean.detach().clone()
    with torch.no_grad():  # training mode under no_grad (a frozen model, a calibration pass) still collects
        outs.append(model(torch.randn(case.kwargs["batch_size"], n, generator=g) + 1.5))
    if torch.equal(model.running_mean, before):
        raise Incorrect("grad_mode_gate")
    after_training = model.running_mean.detach().clone()
    model.eval()
    x = torch.randn(case.kwargs["batch_size"], n, generator=g)
    out = model(x)
    if not torch.equal(model.running_mean, after_training):
        raise Incorrect("updates_in_eval")
    copy = build(answer, *case.args)
    copy.load_state_dict(model.state_dict())
    copy.eval()
    # named parts, so that feedback says which one is wrong
    named = {f"the output of training batch {k + 1}": o for k, o in enumerate(outs)}
    named["the output in eval mode"] = out
    named["the output of a copy loaded from its state_dict"] = copy(x)
    named["running_mean after the training batches"] = after_training
    return named


# --- wrong answers
class _NotAModule:  # no `(nn.Module)`
    def __init__(self, num_features, momentum=0.1):
        self.args = (num_features,)


class _NoSuper(RunningMean):
    def __init__(self, num_features, momentum=0.1):  # no super().__init__()
        self.register_buffer("running_mean", torch.zeros(num_features))


class _Parameter(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.running_mean = nn.Parameter(self._buffers.pop("running_mean"), requires_grad=False)


class _PlainTensor(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.running_mean = self._buffers.pop("running_mean")


class _NotPersistent(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.register_buffer("running_mean", self._buffers.pop("running_mean"), persistent=False)


class _WithParameter(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.momentum = nn.Parameter(torch.tensor(momentum))


class _RowBuffer(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.running_mean = torch.zeros(1, num_features)


class _OnesInit(RunningMean):
    def __init__(self, num_features, momentum=0.1):
        super().__init__(num_features, momentum)
        self.running_mean = torch.ones(num_features)


class _AlwaysUpdates(RunningMean):
    def forward(self, x):
        with torch.no_grad():
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
        return x - self.running_mean


class _InGraph(RunningMean):
    def forward(self, x):
        if self.training:
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * x.mean(dim=0)
        return x - self.running_mean


class _AllNoGrad(RunningMean):
    def forward(self, x):
        with torch.no_grad():
            return super().forward(x)


class _OverDim1(RunningMean):
    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=1))
        return x - self.running_mean


class _GradModeGate(RunningMean):
    def forward(self, x):
        if torch.is_grad_enabled():  # "eval is no_grad": the wrong switch
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
        return x - self.running_mean


class _StaleMean(RunningMean):
    def forward(self, x):
        out = x - self.running_mean.clone()
        super().forward(x)
        return out


class _EvalIdentity(RunningMean):
    def forward(self, x):
        return super().forward(x) if self.training else x


class _Swapped(RunningMean):
    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.mul_(self.momentum).add_((1 - self.momentum) * x.mean(dim=0))
        return x - self.running_mean


# --- declaration
register(Exercise(
    lesson=LESSON, name="RunningMean", title="Repair a running mean: saved, frozen in eval, out of the graph",
    reference=RunningMean, kind="class",
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("parameter_not_buffer",
                "`running_mean` is an `nn.Parameter`: it is listed in `parameters()`, counted as a weight, given "
                "to the optimizer, and trained as soon as someone unfreezes the model. A statistic that only your "
                "update rule changes is the other kind of module state (section 5).",
                _Parameter, match_output=False),
        Mistake("unregistered_buffer",
                "`running_mean` is a plain tensor attribute (or another name), so the module does not know it: "
                "it is missing from `state_dict()` (the reloaded layer centres nothing) and `.to(device)` leaves "
                "it behind. Register it as module state that is saved but not trained.",
                _PlainTensor, match_output=False),
        Mistake("updates_in_eval",
                "Your module also updates `running_mean` in eval mode, so evaluating the same batch twice gives "
                "two answers. The statistic is collected only while the module is training; in eval it is "
                "used, never changed (like BatchNorm).",
                _AlwaysUpdates, match_output=False),
        Mistake("grad_mode_gate",
                "Your module decides whether to update from autograd's grad mode, not from its own mode: in "
                "training mode under `torch.no_grad()` (a frozen model, a calibration pass) it collected "
                "nothing, and in eval mode with gradients on it would collect. `train()`/`eval()` set a flag "
                "of the module; that flag is the switch.",
                _GradModeGate, match_output=False),
        Mistake("buffer_in_graph",
                "Your update is recorded by autograd (`running_mean` now requires grad), so each batch's "
                "statistic hangs on the previous batch's graph and the next `backward()` fails with \"Trying to "
                "backward through the graph a second time\" (`retain_graph=True` would only keep every graph "
                "alive). The update is bookkeeping: autograd should not see it.",
                _InGraph, match_output=False),
        Mistake("output_detached",
                "Your output is not connected to `x`'s graph, so no gradient reaches the layers before this one. "
                "Only the *update* of the statistic is hidden from autograd; the output must stay in the graph.",
                _AllNoGrad, match_output=False),
        Mistake("stale_mean",
                "Your output subtracts the running mean from *before* this batch's update; the layer you are "
                "repairing updates first, then centres with the new value.",
                _StaleMean),
        Mistake("eval_identity",
                "In eval mode your module returns `x` unchanged. Leaving the statistic alone in eval does not "
                "mean skipping the centring: eval is when the collected mean is used.",
                _EvalIdentity),
        Mistake("wrong_dim",
                "The batch mean has the wrong shape for `running_mean`: the mean runs over the samples of the "
                "batch, leaving one value per feature.",
                _OverDim1, match_output=False),
        Mistake("momentum_swapped",
                "Your running mean moves almost all the way to each new batch: you changed the update rule, "
                "where the momentum weights the *new* batch mean.",
                _Swapped),
        Mistake("not_persistent",
                "Your buffer is non-persistent, so it is not in the state_dict and a saved model forgets the "
                "statistic: the first symptom is still there.",
                _NotPersistent, match_output=False),
        Mistake("has_parameters", "RunningMean has nothing to learn: it should have no parameters.",
                _WithParameter, match_output=False),
        # match_output stays True: `wrong_shape` is also the runner's generic id, and a generic
        # shape failure (of an output) keeps its own words
        Mistake("wrong_shape", "`running_mean` has shape {got}; it should be ({n},), one value per feature.",
                _RowBuffer),
        Mistake("wrong_init",
                "`running_mean` should start at zeros, as in the first attempt: before the first batch there is "
                "nothing to average.",
                _OnesInit, match_output=False),
        Mistake("missing_super_init", MISSING_SUPER_INIT, _NoSuper, match_output=False),
        BUILDS_MODULE.mistake(_NotAModule),
    ],
    hints=[
        "Take the symptoms one at a time. The reloaded layer's statistic is zeros: which of its attributes "
        "does a module save, and how does it know about them?",
        "Of the three kinds of state a module can hold (parameters, buffers, plain attributes), which one is "
        "saved and moved with the module but never trained (section 5)?",
        "When may the statistic change? Training and eval mode are a flag of the module; autograd's grad mode "
        "is another switch, and a model can run in training mode with gradients off.",
        "The error names a graph that the previous backward pass freed, and the new statistic was computed "
        "from it. Which part of the forward pass should autograd record, and which part is bookkeeping?",
    ],
))
