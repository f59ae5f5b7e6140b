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
import pytest
import torch
import torch.nn.functional as F

from course_utils import grading
from course_utils.grading.compare import compare

from grading_asserts import check, rejected  # noqa: E402 (tests/ is on sys.path)
from grading_asserts import accepted as _accepted  # noqa: E402


def accepted(exercise_id: str, answer, n_random: int = 20) -> None:
    _accepted(exercise_id, answer, n_random=n_random)


# =========================================================================== 00 start here
C2F = "00_start_here.celsius_to_fahrenheit"


def test_c2f_float64_flattened_and_floor_division_are_rejected():
    rejected(C2F, lambda c: c.double() * 9 / 5 + 32, "wrong_dtype")
    rejected(C2F, lambda c: (c * 9 / 5 + 32).reshape(-1), "wrong_shape")
    rejected(C2F, lambda c: c * 9 // 5 + 32)


def test_c2f_in_place_then_returned_is_rejected():
    def in_place(c):
        c *= 1.8
        c += 32
        return c

    rejected(C2F, in_place, "mutated_input")


def test_c2f_hard_coded_fixed_case_is_rejected():
    rejected(C2F, lambda c: torch.tensor([32.0, 212.0, -40.0]))


def test_c2f_alternatives_pass():
    accepted(C2F, lambda c: (c * 9 + 160) / 5)
    accepted(C2F, lambda c: c.clone().mul_(1.8).add_(32))


# =========================================================================== 01 tensors
T = "01_tensors."


def test_count_correct_float_count_is_rejected():
    # compare() accepts a float equal to an expected int; the exercise's run catches it
    res = rejected(T + "count_correct", lambda z, y: (z.argmax(1) == y).float().sum().item(), "float_not_int")
    assert "int" in res.message


def test_count_correct_accuracy_still_named_and_int_alternatives_pass():
    rejected(T + "count_correct", lambda z, y: (z.argmax(1) == y).float().mean().item(), "accuracy_not_count")
    accepted(T + "count_correct", lambda z, y: sum(int(p == t) for p, t in zip(z.argmax(1), y)))
    accepted(T + "count_correct", lambda z, y: int(np.sum(z.numpy().argmax(1) == y.numpy())))


def test_framework_compare_rejects_float_for_int():
    assert compare(3.0, 3) is not None


def test_batch_flatten_squeeze_is_rejected_by_the_fixed_cases():
    # x.squeeze() also drops a batch dimension of 1; random cases have N = 1 only sometimes
    res = rejected(T + "batch_flatten", lambda x: x.squeeze().flatten(1), "wrong_shape", n_random=0)
    assert "a batch of one" in " ".join(res.details)


def test_batch_flatten_channels_last_order_is_rejected():
    rejected(T + "batch_flatten", lambda x: x.permute(0, 2, 3, 1).reshape(len(x), -1))


def test_batch_flatten_alternatives_pass():
    accepted(T + "batch_flatten", lambda x: x.flatten(1))
    accepted(T + "batch_flatten", lambda x: x.contiguous().view(len(x), x.shape[1] * x.shape[2] * x.shape[3]))
    # the text's batches include an empty one, where `-1` cannot be inferred
    rejected(T + "batch_flatten", lambda x: x.contiguous().view(len(x), -1), "reshape_minus_one_empty", n_random=0)


@pytest.mark.parametrize("answer", [
    lambda a: ((t := torch.from_numpy(a).float()) - t.min()).div(t.max() - t.min()).unsqueeze(0),  # min-max
    lambda a: (torch.from_numpy(a).float() / a.max()).unsqueeze(0),  # divided by the image's max
    lambda a: torch.from_numpy(a).float().div(256).unsqueeze(0),  # off by one
    lambda a: torch.from_numpy(a).float().div(255).unsqueeze(-1),  # channel last
], ids=["min_max", "image_max", "div256", "channel_last"])
def test_image_to_tensor_wrong_scalings_are_rejected(answer):
    rejected(T + "image_to_tensor", answer)


def test_image_to_tensor_alternatives_pass():
    accepted(T + "image_to_tensor", lambda a: torch.tensor(a, dtype=torch.float32)[None] / 255)
    accepted(T + "image_to_tensor", lambda a: torch.from_numpy(a / 255).float().unsqueeze(0))


def test_normalize_rows_in_place_and_wrong_dim_are_rejected():
    def in_place(x):
        x /= x.sum(dim=1, keepdim=True)
        return x

    rejected(T + "normalize_rows", in_place, "mutated_input")
    rejected(T + "normalize_rows", lambda x: x / x.sum(dim=-2, keepdim=True), "wrong_dim")


def test_normalize_rows_alternatives_pass():
    accepted(T + "normalize_rows", lambda x: F.normalize(x, p=1, dim=1))
    accepted(T + "normalize_rows", lambda x: x / x.sum(-1)[:, None])


def test_pairwise_distances_swapped_arguments_rejected_and_alternatives_pass():
    rejected(T + "pairwise_distances", lambda a, b: torch.cdist(b, a), "transposed")
    accepted(T + "pairwise_distances", lambda a, b: torch.cdist(a, b))
    accepted(T + "pairwise_distances", lambda a, b: torch.cdist(b, a).T)
    accepted(T + "pairwise_distances",
             lambda a, b: ((a**2).sum(1)[:, None] + (b**2).sum(1)[None] - 2 * a @ b.T).clamp_min(0).sqrt())


def test_masked_mean_count_plus_one_is_not_named_divided_by_all():
    # on the old 3-column fixed case, count + 1 == 3 == the row length: misleading name
    res = rejected(T + "masked_mean", lambda x, m: (x * m).sum(1) / (m.sum(1) + 1))
    assert res.mistake != "divided_by_all", res.text()


def test_masked_mean_alternatives_pass():
    accepted(T + "masked_mean", lambda x, m: (x * m).sum(1) / m.sum(1).clamp(min=1))
    accepted(T + "masked_mean", lambda x, m: torch.nanmean(x.masked_fill(~m, float("nan")), dim=1).nan_to_num(0.0))
    accepted(T + "masked_mean", lambda x, m: torch.stack(
        [x[i][m[i]].mean() if m[i].any() else x.new_zeros(()) for i in range(len(x))]))


def test_pick_scores_wrong_gather_rejected_and_alternatives_pass():
    rejected(T + "pick_scores", lambda s, y: s.gather(1, y[None]).squeeze())
    accepted(T + "pick_scores", lambda s, y: s[torch.arange(len(y)), y])
    accepted(T + "pick_scores", lambda s, y: s[:, y].diagonal())
    accepted(T + "pick_scores", lambda s, y: torch.take_along_dim(s, y[:, None], 1).squeeze(1))


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
