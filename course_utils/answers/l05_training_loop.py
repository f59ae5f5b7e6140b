"""Generated from solutions/05_training_loop.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 05_training_loop take their references from here."""

# ruff: noqa

import copy
import torch
import math


def train_one_epoch(model, loader, loss_fn, optimizer):
    model.train()
    total_loss, n = 0.0, 0
    for X, y in loader:
        optimizer.zero_grad()      # 1. forget the previous batch's gradients
        logits = model(X)          # 2. forward
        loss = loss_fn(logits, y)  # 3. loss
        loss.backward()            # 4. gradients of the loss
        optimizer.step()           # 5. update the parameters
        total_loss += loss.item() * len(y)
        n += len(y)
    return total_loss / n


def evaluate(model, loader, loss_fn):
    model.eval()
    total_loss, correct, n = 0.0, 0, 0
    with torch.inference_mode():
        for X, y in loader:
            logits = model(X)
            total_loss += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            n += len(y)
    return total_loss / n, correct / n


class EarlyStopping:
    def __init__(self, patience=3):
        self.patience = patience
        self.best_loss = float("inf")
        self.best_state = None
        self.bad_epochs = 0

    def step(self, val_loss, model):
        if val_loss < self.best_loss:
            self.best_loss = val_loss
            self.best_state = copy.deepcopy(model.state_dict())
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def warmup_cosine(optimizer, warmup_steps, total_steps):
    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    total_norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if total_norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (total_norm + 1e-6))
    return total_norm.item()


def accumulated_step(model, loss_fn, optimizer, micro_batches):
    n_total = sum(len(y) for _, y in micro_batches)
    optimizer.zero_grad()
    for X, y in micro_batches:
        loss = loss_fn(model(X), y) * len(y) / n_total
        loss.backward()
    optimizer.step()
