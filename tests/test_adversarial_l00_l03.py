"""Adversarial review of the graders of lessons 00-02 (lesson 03: tests/test_l03_nn_module.py).

Each test either feeds the grader an answer that violates the exercise text and asserts it is
rejected (naming the mistake where a name fits), or feeds it a correct answer written
differently from the reference and asserts it is accepted. Answers that a check could only
catch by luck (a random case of the right shape) are checked with ``n_random=0``: the fixed
cases alone must catch them, every time.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils import grading

from grading_asserts import check, rejected  # noqa: E402 (tests/ is on sys.path)
from grading_asserts import accepted as _accepted  # noqa: E402


def accepted(exercise_id: str, answer, n_random: int = 20) -> None:
    _accepted(exercise_id, answer, n_random=n_random)


# =========================================================================== 02 autograd
A = "02_autograd."
TWO_BY_THREE = "a 2x3 x"


def _dfdx_backward(x):
    x = x.detach().requires_grad_()
    (x**2 * torch.sin(x)).sum().backward()
    return x.grad


def _dfdx_autograd_grad(x):
    x = x.detach().requires_grad_()
    return torch.autograd.grad((x**2 * torch.sin(x)).sum(), x)[0]


def test_dfdx_with_autograd_is_rejected():
    # "computed with a formula (no autograd)": the check runs the answer under no_grad
    rejected(A + "dfdx", _dfdx_backward, "used_autograd")
    rejected(A + "dfdx", _dfdx_autograd_grad, "used_autograd")


def test_dfdx_1d_only_answer_is_rejected_by_the_fixed_cases():
    def per_element(x):
        return torch.tensor([2 * v * math.sin(v) + v * v * math.cos(v) for v in x.tolist()])

    res = rejected(A + "dfdx", per_element, n_random=0)
    assert TWO_BY_THREE in " ".join(res.details)


def test_dfdx_formula_alternatives_pass():
    accepted(A + "dfdx", lambda x: 2 * x * x.sin() + x.pow(2) * x.cos())
    # as_tensor, not from_numpy: on a 0-d x ("any shape"), NumPy returns a scalar, not an array
    accepted(A + "dfdx", lambda x: torch.as_tensor(
        2 * x.numpy() * np.sin(x.numpy()) + x.numpy() ** 2 * np.cos(x.numpy())))


def test_vjp_alternatives_pass():
    accepted(A + "vjp", lambda fn, x, v: torch.autograd.functional.jacobian(fn, x).T @ v)
    accepted(A + "vjp", lambda fn, x, v: torch.autograd.functional.vjp(fn, x, v)[1])


def test_huber_1d_only_loop_is_rejected_by_the_fixed_cases():
    def loop(x, delta):  # a Python `if` per element of a 1-D tensor: fails on 2-D inputs
        return torch.stack([0.5 * xi**2 if abs(xi) <= delta else delta * (abs(xi) - 0.5 * delta) for xi in x])

    rejected(A + "huber", loop, "python_if_on_tensor", n_random=0)


def test_huber_detached_branch_is_a_wrong_gradient():
    rejected(A + "huber", lambda x, d: torch.where(x.abs() <= d, 0.5 * x**2, (d * (x.abs() - 0.5 * d)).detach()),
             "wrong_grad")


def test_huber_alternatives_pass():
    accepted(A + "huber", lambda x, d: F.smooth_l1_loss(x, torch.zeros_like(x), beta=d, reduction="none") * d)

    def clamped(x, d):
        c = x.clamp(-d, d)
        return 0.5 * c**2 + d * (x.abs() - c.abs())

    accepted(A + "huber", clamped)


def test_second_derivative_hessian_diagonal_is_rejected_by_the_fixed_cases():
    def hessian_diagonal(fn, x):  # right for 1-D x only
        return torch.autograd.functional.hessian(lambda t: fn(t).sum(), x).diagonal()

    rejected(A + "second_derivative", hessian_diagonal, "wrong_shape", n_random=0)


def test_second_derivative_with_grad_outputs_passes():
    def with_ones(fn, x):
        x = x.detach().requires_grad_()
        y = fn(x)
        (g,) = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)
        return torch.autograd.grad(g, x, torch.ones_like(g))[0]

    accepted(A + "second_derivative", with_ones)


def test_finite_difference_row_nudge_is_rejected_by_the_fixed_cases():
    def by_len(fn, x, eps):  # x[i] is a whole row of a 2-D x
        g = torch.zeros_like(x)
        for i in range(len(x)):
            step = torch.zeros_like(x)
            step[i] = eps
            g[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
        return g

    rejected(A + "finite_difference_grad", by_len, n_random=0)


def test_finite_difference_float32_result_is_rejected():
    def float32(fn, x, eps):
        g = torch.zeros(x.shape)
        for i in range(x.numel()):
            step = torch.zeros_like(x)
            step.view(-1)[i] = eps
            g.view(-1)[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
        return g

    rejected(A + "finite_difference_grad", float32, "wrong_dtype")


def test_finite_difference_flat_alternative_passes():
    def flat(fn, x, eps):
        f = x.reshape(-1)
        g = torch.empty_like(f)
        for i in range(f.numel()):
            e = torch.zeros_like(f)
            e[i] = eps
            g[i] = (fn((f + e).reshape(x.shape)) - fn((f - e).reshape(x.shape))) / (2 * eps)
        return g.reshape(x.shape)

    accepted(A + "finite_difference_grad", flat)


def _gd(start, finish, steps_offset=0):
    def answer(fn, x0, lr, num_steps):
        x = start(x0)
        for _ in range(num_steps + steps_offset):
            fn(x).backward()
            with torch.no_grad():
                x -= lr * x.grad
            x.grad = None
        return finish(x)

    return answer


def test_gradient_descent_result_still_requiring_grad_is_rejected():
    rejected(A + "gradient_descent", _gd(lambda x0: x0.clone().requires_grad_(), lambda x: x),
             "returned_requires_grad")


def test_gradient_descent_changing_x0_is_rejected():
    def flag_only(fn, x0, lr, num_steps):  # values of x0 untouched, but it now requires grad
        x = x0.requires_grad_()
        for _ in range(num_steps):
            fn(x).backward()
            with torch.no_grad():
                x = x - lr * x.grad
            x.requires_grad_()
        return x.detach()

    rejected(A + "gradient_descent", flag_only, "mutated_input")
    res = rejected(A + "gradient_descent", _gd(lambda x0: x0.detach().requires_grad_(), lambda x: x.detach()),
                   "mutated_input")
    assert "detach()" in res.message  # x0.detach() shares memory: the message says so


def test_gradient_descent_off_by_one_is_rejected():
    start = lambda x0: x0.clone().requires_grad_()  # noqa: E731
    rejected(A + "gradient_descent", _gd(start, lambda x: x.detach(), steps_offset=1))
    rejected(A + "gradient_descent", _gd(start, lambda x: x.detach(), steps_offset=-1))


def test_gradient_descent_alternatives_pass():
    def new_leaf(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_()
        for _ in range(num_steps):
            fn(x).backward()
            x = (x - lr * x.grad).detach().requires_grad_()
        return x.detach()

    def with_data(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_()
        for _ in range(num_steps):
            x.grad = None
            fn(x).backward()
            x.data -= lr * x.grad
        return x.data

    accepted(A + "gradient_descent", new_leaf)
    accepted(A + "gradient_descent", with_data)


class _NotAFunction:
    """autograd differentiates F.silu itself: no hand-written backward."""

    apply = staticmethod(F.silu)


class _SiLUSavesOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * torch.sigmoid(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_output * (s + y * (1 - s))


def test_silu_without_autograd_function_is_rejected():
    rejected(A + "MySiLU", _NotAFunction, "not_a_function")


def test_silu_saving_the_output_passes():
    accepted(A + "MySiLU", _SiLUSavesOutput)


M = "03_nn_module."  # (lesson 03's own tests: tests/test_l03_nn_module.py)


# =========================================================================== framework-level
def test_checks_leave_the_callers_rng_and_grad_mode_alone_with_new_fixed_cases():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    with torch.no_grad():
        for exercise_id in (M + "predict_proba", A + "dfdx", A + "gradient_descent", M + "RMSNorm"):
            assert check(exercise_id, grading.reference(exercise_id)).passed
        assert not torch.is_grad_enabled()
    assert torch.equal(torch.get_rng_state(), state)
