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


def finite_difference_grad(fn, x, eps):
    # torch.zeros(x.shape), not zeros_like(x): zeros_like copies a transposed x's strides, and
    # .view(-1) of a non-contiguous tensor raises
    grad = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    for i in range(x.numel()):
        step = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
    return grad


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
