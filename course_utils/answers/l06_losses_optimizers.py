"""Generated from solutions/06_losses_optimizers.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 06_losses_optimizers take their references from here."""

# ruff: noqa

import torch


def stable_log_softmax(logits):
    m = logits.amax(dim=-1, keepdim=True)  # one maximum per row, kept for broadcasting
    return logits - m - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))


def cross_entropy_by_hand(logits, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    n_classes = logits.shape[1]
    if weight is None:
        weight = torch.ones(n_classes, dtype=logits.dtype)
    keep = target != ignore_index
    logp = torch.log_softmax(logits[keep], dim=1)  # (kept, C)
    t = target[keep]
    w_t = weight[t]  # each kept sample's class weight
    nll = -logp.gather(1, t[:, None]).squeeze(1)  # -log p of the true class
    smooth = -(logp * weight).sum(dim=1)  # every class, weighted by its own weight
    per_sample = (1 - label_smoothing) * w_t * nll + label_smoothing / n_classes * smooth
    return per_sample.sum() / w_t.sum()


def pos_weight_for(labels):
    labels = labels.float()
    pos = labels.sum(dim=0)
    neg = labels.shape[0] - pos
    weight = neg / pos.clamp(min=1)
    return torch.where((pos == 0) | (neg == 0), torch.ones_like(weight), weight)


def param_groups_no_decay(model, weight_decay):
    decay, no_decay = [], []
    for p in model.parameters():  # each tensor once, tied ones included
        if not p.requires_grad:
            continue
        # weights that multiply inputs are matrices or kernels; biases and norm scales are vectors
        (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


class SGDMomentum(torch.optim.Optimizer):
    def __init__(self, params, lr, momentum=0.9, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.add(p, alpha=group["weight_decay"]) if group["weight_decay"] else p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = g.clone()  # a copy: p.grad is reused by the next backward
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(g)
                p.sub_(group["lr"] * state["momentum_buffer"])
        return loss
