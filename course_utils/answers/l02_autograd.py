"""Generated from solutions/02_autograd.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 02_autograd take their references from here."""

# ruff: noqa

import torch


def dfdx(x):
    # eˣ / (1 + eˣ) is the same number, but e¹⁰⁰ overflows float32: inf / inf is nan
    return 1 / (1 + torch.exp(-x))


def jacobian(fn, x):
    m = fn(x.detach()).numel()
    rows = []
    for i in range(m):
        leaf = x.detach().requires_grad_(True)  # a fresh leaf each pass: its .grad starts empty
        y = fn(leaf)  # and a fresh graph to go back through
        v = torch.zeros_like(y)
        v[i] = 1.0  # vᵀJ with v = eᵢ is row i of J: ∂yᵢ/∂x
        y.backward(gradient=v)
        rows.append(leaf.grad)
    return torch.stack(rows)  # one row per output: m x n


def huber(x, delta):
    return torch.where(x.abs() <= delta, 0.5 * x**2, delta * (x.abs() - 0.5 * delta))


def hvp(loss_fn, w, v):
    w = w.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(w), w, create_graph=True)
    # the slope along v is a scalar function of w; its gradient is H v (v is held fixed)
    (Hv,) = torch.autograd.grad((grad * v).sum(), w)
    return Hv


def gradient_is_wrong(fn, x):
    # float64: float32 keeps ~7 digits, and a difference of two nearly equal losses loses about
    # half of them, which hides a 1e-4 bug; in float64 a central difference is good to ~1e-10
    x = x.detach().to(torch.float64)
    with torch.enable_grad():
        leaf = x.clone().requires_grad_()
        by_autograd = torch.autograd.grad(fn(leaf), leaf)[0].reshape(-1)
    eps = 1e-6  # truncation (~eps²) and rounding (~1e-16 / eps) both far below the bugs
    flat = x.reshape(-1)  # reshape, not view: x may be non-contiguous
    numeric = torch.empty_like(flat)
    for i in range(flat.numel()):
        step = torch.zeros_like(flat)
        step[i] = eps
        numeric[i] = (fn((flat + step).reshape(x.shape)) - fn((flat - step).reshape(x.shape))) / (2 * eps)
    # relative to the gradient's size: a gradient of 1e6 and one of 1e-8 get the same verdicts
    return bool((by_autograd - numeric).norm() > 1e-6 * numeric.norm())


class MySiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * s * (1 + x * (1 - s))


def gradient_descent(predict, weights, target, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        loss = ((predict(x, weights) - target) ** 2).sum()
        # backward() would add to the weights' .grad too: ask for x's gradient alone
        (grad,) = torch.autograd.grad(loss, x)
        with torch.no_grad():
            x -= lr * grad
    return x.detach()
