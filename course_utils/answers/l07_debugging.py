"""Generated from solutions/07_debugging.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 07_debugging take their references from here."""

# ruff: noqa

import math
import torch
import torch.nn.functional as F
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def first_nonfinite(model, x):
    found = []

    def make_hook(name):
        def hook(module, inputs, output):
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            bad = any(isinstance(o, torch.Tensor) and o.is_floating_point() and not bool(torch.isfinite(o).all())
                      for o in outputs)
            if bad and not found:
                found.append(name)
        return hook

    handles = [m.register_forward_hook(make_hook(name)) for name, m in model.named_modules()]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return found[0] if found else None


def overfit_one_batch(model, X, y, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # once: Adam keeps state between steps
    was_training = model.training
    model.train()
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(X), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.train(was_training)
    return losses


def grad_norms(model):
    norms = {}
    for name, module in model.named_modules():
        grads = [p.grad for p in module.parameters(recurse=False) if p.grad is not None]
        if grads:
            norms[name] = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))
    return norms


def read_scalars(logdir, tag):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})  # 0: keep every event
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return {}
    return {e.step: e.value for e in acc.Scalars(tag)}  # events in the order written: the last wins


def diagnose(train_losses, val_losses):
    train = torch.tensor(train_losses, dtype=torch.float64)
    val = torch.tensor(val_losses, dtype=torch.float64)
    if not bool(torch.isfinite(train).all()) or train[-1] > train[0]:
        return "diverging"  # first: every comparison with nan is False
    if train[-1] > 0.9 * train[0]:
        return "not_learning"
    if val.min() > 0.9 * val[0]:
        return "data_bug"  # the model learns, but nothing it learns helps on new data
    if val[-1] > 1.2 * val.min():
        return "overfitting"  # it did generalise for a while: val went down, then up
    return "healthy"  # a gap between train and val alone is not overfitting
