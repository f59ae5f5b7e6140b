"""Each reference of lessons 00-02 (lesson 03: tests/test_l03_nn_module.py) against an independent oracle (a NumPy/torch built-in or a
plain NumPy loop), over the generator's whole domain (many seeds) and every fixed edge case.

A reference that disagrees with its own text on an input the cases draw is a grader that
rejects right answers; these tests are where that shows.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from course_utils import grading
from course_utils.grading import Rand

N_SEEDS = 150


def _cases(exercise_id: str, n_seeds: int = N_SEEDS):
    ex = grading.exercise(exercise_id)
    # copies: an oracle test that freezes or re-initialises a fixed case's model must not change
    # the registered case for the checks that run after it
    out = [(c.label or "fixed", copy.deepcopy(c)) for c in ex.edge_cases]
    if ex.cases is not None:
        out += [(f"seed {s}", ex.cases(Rand(s))) for s in range(n_seeds)]
    return out


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _close(ref, oracle, rtol=1e-5, atol=1e-6, where=""):
    ref_np = _np(ref)
    assert ref_np.shape == np.shape(oracle), f"{where}: shape {ref_np.shape} vs oracle {np.shape(oracle)}"
    np.testing.assert_allclose(ref_np.astype(np.float64), np.asarray(oracle, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=where)


# =========================================================================== 02 autograd
def test_dfdx_reference_agrees_with_the_numpy_formula():
    ref = grading.reference("02_autograd.dfdx")
    for where, case in _cases("02_autograd.dfdx"):
        (x,) = case.args
        a = x.double().numpy()
        _close(ref(x), 2 * a * np.sin(a) + a**2 * np.cos(a), rtol=1e-5, atol=1e-5, where=where)


def test_vjp_reference_agrees_with_the_full_jacobian():
    ref = grading.reference("02_autograd.vjp")
    for where, case in _cases("02_autograd.vjp"):
        fn, x, v = case.args
        J = torch.autograd.functional.jacobian(fn, x.detach())
        _close(ref(fn, x, v), (v.double() @ J.double()).numpy(), rtol=1e-5, atol=1e-5, where=where)


def test_huber_reference_agrees_with_f_huber_loss_values_and_gradients():
    ref = grading.reference("02_autograd.huber")
    for where, case in _cases("02_autograd.huber"):
        x, delta = case.args
        a = x.detach().clone().requires_grad_()
        b = x.detach().clone().requires_grad_()
        want = torch.nn.functional.huber_loss(a, torch.zeros_like(a), delta=delta, reduction="none")
        got = ref(b, delta)
        _close(got, want.detach().numpy(), rtol=1e-6, atol=1e-6, where=where)
        if x.numel():
            want.sum().backward()
            got.sum().backward()
            _close(b.grad, a.grad.numpy(), rtol=1e-6, atol=1e-6, where=where)


def test_second_derivative_reference_agrees_with_torch_func():
    ref = grading.reference("02_autograd.second_derivative")
    for where, case in _cases("02_autograd.second_derivative", 60):
        fn, x = case.args
        d2 = torch.vmap(torch.func.grad(torch.func.grad(lambda t: fn(t))))(x.reshape(-1)).reshape(x.shape)
        _close(ref(fn, x), d2.detach().numpy(), rtol=1e-4, atol=1e-5, where=where)


def test_finite_difference_reference_agrees_with_a_numpy_loop():
    ref = grading.reference("02_autograd.finite_difference_grad")
    for where, case in _cases("02_autograd.finite_difference_grad", 60):
        fn, x, eps = case.args
        flat = x.reshape(-1).numpy().copy()
        want = np.empty_like(flat)
        for i in range(flat.size):
            up, down = flat.copy(), flat.copy()
            up[i] += eps
            down[i] -= eps
            want[i] = (float(fn(torch.from_numpy(up).reshape(x.shape)))
                       - float(fn(torch.from_numpy(down).reshape(x.shape)))) / (2 * eps)
        got = ref(fn, x, eps)
        assert got.dtype == torch.float64
        _close(got, want.reshape(x.shape), rtol=1e-9, atol=1e-11, where=where)


def test_gradient_descent_reference_agrees_with_a_torch_func_loop():
    ref = grading.reference("02_autograd.gradient_descent")
    for where, case in _cases("02_autograd.gradient_descent", 60):
        fn, x0, lr, n = case.args
        x = x0.clone()
        for _ in range(n):
            x = x - lr * torch.func.grad(fn)(x)
        got = ref(fn, x0, lr, n)
        assert not got.requires_grad
        _close(got, x.numpy(), rtol=1e-4, atol=1e-5, where=where)


def test_silu_reference_agrees_with_f_silu_and_its_gradient():
    ref = grading.reference("02_autograd.MySiLU")
    for where, case in _cases("02_autograd.MySiLU"):
        (x,) = case.args
        up = case.kwargs["upstream"]
        a = x.detach().clone().requires_grad_()
        b = x.detach().clone().requires_grad_()
        want = torch.nn.functional.silu(a)
        got = ref.apply(b)
        _close(got, want.detach().numpy(), rtol=1e-12, atol=1e-14, where=where)
        (ga,) = torch.autograd.grad(want, a, up)
        (gb,) = torch.autograd.grad(got, b, up)
        _close(gb, ga.numpy(), rtol=1e-12, atol=1e-14, where=where)
