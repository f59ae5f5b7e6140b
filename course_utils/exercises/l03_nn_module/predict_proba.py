"""predict_proba: eval mode, no graph, softmax over the classes, the model's modes restored.
The notebook shows a teammate's ``softmax(model(X))`` in a progress report called mid-training, with
three symptoms (two calls disagree, BatchNorm's running statistics moved, a ``grad_fn``), and states
the goal as behaviour (the same probabilities every call, nothing kept for a backward, the loop goes
on as if the call had not happened, every layer as it was); the learner decides on ``eval()``,
``no_grad()`` and restoring each submodule's mode.

Subtle: "the mode you found it in" is per submodule (a model in training mode whose Dropout is
in eval mode), so `model.train(was)` is wrong on one fixed case; a hook sees the mode and the
grad mode at the moment of the forward (a graph built and then detached has right outputs).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/03_nn_module.py)
from ...answers.l03_nn_module import predict_proba


# --- cases
def _cases(r: Rand, training: bool | None = None) -> Case:
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


def _fixed(seed: int, training: bool) -> Case:
    # the layers' default initialisation draws from the global RNG: keep the importer's intact
    with torch.random.fork_rng(devices=[]):
        case = _cases(Rand(seed), training)
    case.label = f"a model in {'training' if training else 'eval'} mode"
    return case


def _mixed(seed: int) -> Case:
    """Training mode, but the Dropout already in eval mode (as after fine-tuning without
    dropout): "the mode you found it in" is per submodule."""
    case = _fixed(seed, True)
    case.args[0][3].eval()
    case.label = "a model in training mode whose Dropout is in eval mode"
    return case


# both modes every time: "model.train() at the end" and "never restored" each fail one of them
EDGE_CASES = [_fixed(101, True), _fixed(202, False), _mixed(303)]


# --- run and probes
def _run(answer: Any, case: Case) -> Any:
    model, X = case.args
    modes_before = [m.training for m in model.modules()]
    flags_before = [p.requires_grad for p in model.parameters()]
    seen: list[tuple[bool, bool, bool]] = []

    def record(m: nn.Module, args: Any) -> None:  # every submodule: `model.training = False` is not eval()
        seen.append((any(sub.training for sub in m.modules()), torch.is_grad_enabled(),
                     any(p.requires_grad for p in m.parameters())))

    handle = model.register_forward_pre_hook(record)
    try:
        with answer_grad_mode():
            out = answer(model, X)
    finally:
        handle.remove()
    if any(training for training, _, _ in seen):
        raise Incorrect("forgot_eval")
    # no graph because the parameters were switched off (for good, or put back on afterwards)
    if ([p.requires_grad for p in model.parameters()] != flags_before
            or any(grad_enabled and not wanted_grad for _, grad_enabled, wanted_grad in seen) and any(flags_before)):
        raise Incorrect("touched_requires_grad")
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise Incorrect("kept_graph")
    if any(grad_enabled for _, grad_enabled, _ in seen):
        raise Incorrect("graph_then_detach")
    modes_after = [m.training for m in model.modules()]
    if modes_after != modes_before:
        if (modes_after[0] == modes_before[0] and len(set(modes_before)) > 1
                and all(t == modes_before[0] for t in modes_after)):
            raise Incorrect("mixed_modes_not_restored")
        raise Incorrect("mode_not_restored", **_mode_change(model, modes_before, modes_after))
    return out


def _mode(training: bool) -> str:
    return "training mode" if training else "eval mode"


_WHY = {
    False: "A training loop that calls it would go on training without dropout, and BatchNorm would stop "
           "updating its running statistics.",
    True: "Code that evaluates or serves the model after calling it would get random, batch-dependent "
          "predictions: Dropout is on again and BatchNorm uses (and updates) each batch's statistics.",
}


def _mode_change(model: nn.Module, before: list[bool], after: list[bool]) -> dict[str, str]:
    """Which way the modes changed, said exactly: the model's own mode flipped (training -> eval,
    or eval -> training), or its flag is back while layers inside stayed switched."""
    if before[0] != after[0]:
        what = f"came in {_mode(before[0])} and you left it in {_mode(after[0])}"
        if after[0]:
            what += " (a `model.train()` at the end?)"
        return {"what": what + ".", "why": _WHY[after[0]]}
    changed = [(m, a) for m, b, a in zip(model.modules(), before, after) if a != b]
    # name the layers whose forward depends on the mode (Dropout, BatchNorm) when there are any
    moody = [(m, a) for m, a in changed
             if isinstance(m, (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase))]
    layers = ", ".join(dict.fromkeys(type(m).__name__ for m, _ in moody or changed))
    directions = {a for _, a in changed}
    if len(directions) == 1:
        (now,) = directions
        where, why = f"stayed in {_mode(now)}", _WHY[now]
    else:
        where, why = "changed mode", ""
    what = (f"has its own flag back in {_mode(after[0])}, but inside it {layers} {where}: "
            "`model.training = ...` sets that one flag and does not reach the layers inside.")
    return {"what": what, "why": why}


# --- wrong answers
def _top_level_mode(model, X):
    """Restores `model.train(was)`: right unless the submodules were in mixed modes."""
    was = model.training
    probs = _stays_eval(model, X)
    model.train(was)
    return probs


def _stays_eval(model, X):
    model.eval()
    with torch.no_grad():
        return torch.softmax(model(X), dim=1)


def _no_eval(model, X):
    with torch.no_grad():
        return torch.softmax(model(X), dim=1)


def _over_dim0(model, X):
    was = model.training
    model.eval()
    with torch.no_grad():
        out = torch.softmax(model(X), dim=0)
    model.train(was)
    return out


def _keeps_graph(model, X):
    was = model.training
    model.eval()
    out = torch.softmax(model(X), dim=1)
    model.train(was)
    return out


def _detached(model, X):
    return _keeps_graph(model, X).detach()


def _freezes(model, X):
    """No graph because nothing requires grad any more: the caller's model stays frozen."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    model.requires_grad_(False)
    with torch.no_grad():
        probs = torch.softmax(model(X), dim=1)
    for m, t in modes:
        m.training = t
    return probs


def _logits(model, X):
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(X)
    model.train(was)
    return out


# --- declaration
register(Exercise(
    lesson=LESSON, name="predict_proba",
    title="Probabilities for a progress report: what the helper must switch, and put back",
    reference=predict_proba,
    cases=_cases,
    edge_cases=EDGE_CASES,
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("forgot_eval",
                "Your model ran in training mode: Dropout dropped random units and BatchNorm used the batch's "
                "statistics, so predictions are random and depend on the batch. Call `model.eval()` before "
                "predicting (`torch.no_grad()` does not change this).",
                _no_eval, match_output=False),
        Mistake("wrong_dim",
                "Your probabilities sum to 1 down each column (over the batch), not along each row. "
                "Softmax over the classes: `dim=1` for an (N, C) tensor of logits.",
                _over_dim0),
        Mistake("kept_graph",
                "Your probabilities carry an autograd graph: predicting recorded every operation for a backward "
                "pass that never comes (memory and time). Wrap the forward in `torch.no_grad()` (or "
                "`torch.inference_mode()`).",
                _keeps_graph, match_output=False),
        Mistake("mode_not_restored",
                "Your function changed the model's mode and did not put it back. The model {what} {why} Remember every "
                "submodule's mode first, `modes = [(m, m.training) for m in model.modules()]`, and restore "
                "each at the end.",
                _stays_eval, match_output=False),
        Mistake("mixed_modes_not_restored",
                "The model came with its submodules in different modes (training, but its Dropout in eval), and "
                "you gave every submodule the top-level mode back: `model.train(was_training)` sets them all. "
                "Remember each module's own mode, `modes = [(m, m.training) for m in model.modules()]`, and "
                "restore them one by one: `for m, t in modes: m.training = t`.",
                _top_level_mode, match_output=False),
        Mistake("graph_then_detach",
                "Your forward ran with autograd recording: the graph was built (memory and time) and only thrown "
                "away afterwards (`.detach()`). Run the forward inside `torch.no_grad()` (or "
                "`torch.inference_mode()`) so that no graph is recorded at all.",
                _detached, match_output=False),
        Mistake("touched_requires_grad",
                "Your forward recorded no graph because you switched `requires_grad` off on the model's "
                "parameters. That changes the caller's model: left off, nothing trains any more; switched on "
                "again for all, parameters the caller had frozen start training. `torch.no_grad()` around the "
                "forward records no graph and leaves the parameters as they were.",
                _freezes, match_output=False),
        Mistake("returned_logits",
                "You returned the logits (raw scores). Turn them into probabilities with "
                "`torch.softmax(logits, dim=1)`.",
                _logits),
    ],
    hints=[
        "Which two layers of the model make the two calls disagree and move the statistics, and what does "
        "the third line say is recorded on every report?",
        "Predicting switches those layers to their prediction behaviour and stops the recording; the two are "
        "separate switches, and stopping the recording changes no layer. A helper called inside someone's "
        "loop puts back what it switched, layer by layer, since the caller may have set them one by one. "
        "The probabilities run over the classes: each row sums to one.",
        "The names to look up: `Module.eval`, `torch.no_grad`, `Module.modules`, the `training` attribute "
        "of a module, `torch.softmax`.",
    ],
))
