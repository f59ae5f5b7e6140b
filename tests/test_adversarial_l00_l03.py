"""Adversarial review of the graders of lessons 00-03.

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
from torch import nn

from course_utils import grading
from course_utils.exercises import l03_nn_module as l03

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


# =========================================================================== 03 nn.Module
M = "03_nn_module."


class _MLPFromFirstHidden(nn.Module):
    """Correct for non-empty hidden_sizes only (indexes hidden_sizes[0] and [-1])."""

    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        layers = [nn.Linear(in_features, hidden_sizes[0]), nn.ReLU()]
        for a, b in zip(hidden_sizes, hidden_sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(hidden_sizes[-1], num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class _MLPLogSoftmax(l03.MLP):
    def forward(self, x):
        return F.log_softmax(self.net(x), dim=1)


class _MLPDropout(l03.MLP):
    def forward(self, x):
        return self.net(F.dropout(x, 0.5, self.training))


class _MLPModuleList(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        sizes = [in_features, *hidden_sizes, num_classes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


def test_mlp_that_needs_a_hidden_layer_is_rejected_by_the_fixed_case():
    res = rejected(M + "MLP", _MLPFromFirstHidden, "exception", n_random=0)
    assert "no hidden layers" in " ".join(res.details)


def test_mlp_log_softmax_and_dropout_are_rejected():
    rejected(M + "MLP", _MLPLogSoftmax)
    rejected(M + "MLP", _MLPDropout)


def test_mlp_module_list_passes():
    accepted(M + "MLP", _MLPModuleList)


class _TowerFrozenScale(l03.Tower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.scale = nn.Parameter(torch.ones(width), requires_grad=False)


def test_tower_with_a_frozen_parameter_is_rejected():
    rejected(M + "Tower", _TowerFrozenScale, "frozen_parameter")


def _rms(forward, eps_default=1e-6):
    class Variant(nn.Module):
        def __init__(self, dim, eps=eps_default):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return forward(self, x)

    return Variant


def test_rmsnorm_detached_rms_is_a_wrong_gradient():
    # right values, gradients flow to x, but not through the RMS
    rejected(M + "RMSNorm", _rms(lambda s, x: x / torch.sqrt(x.detach().pow(2).mean(-1, keepdim=True) + s.eps)
                                 * s.weight), "partial_graph_cut")
    rejected(M + "RMSNorm", _rms(lambda s, x: x / torch.sqrt(x.data.pow(2).mean(-1, keepdim=True) + s.eps)
                                 * s.weight), "partial_graph_cut")


def test_rmsnorm_weight_outside_the_graph_is_rejected():
    rejected(M + "RMSNorm", _rms(lambda s, x: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + s.eps)
                                 * s.weight.data), "weight_outside_graph")
    rejected(M + "RMSNorm", _rms(lambda s, x: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + s.eps)
                                 * s.weight.detach()), "weight_outside_graph")


def test_rmsnorm_frozen_weight_is_rejected():
    class Frozen(l03.RMSNorm):
        def __init__(self, dim, eps=1e-6):
            super().__init__(dim, eps)
            self.weight.requires_grad_(False)

    rejected(M + "RMSNorm", Frozen, "frozen_weight")


def test_rmsnorm_float64_forward_is_feedback_not_a_checker_crash():
    res = rejected(M + "RMSNorm", _rms(lambda s, x: (x.double() / torch.sqrt(
        x.double().pow(2).mean(-1, keepdim=True) + s.eps)) * s.weight), "wrong_dtype")
    assert "did not match" not in res.message


def test_rmsnorm_alternatives_pass():
    accepted(M + "RMSNorm", _rms(lambda s, x: s.weight * (x * torch.rsqrt(x.square().mean(-1, keepdim=True) + s.eps))))
    accepted(M + "RMSNorm", _rms(lambda s, x: F.rms_norm(x, (x.shape[-1],), s.weight, s.eps)))


class _RMEverythingNoGrad(l03.RunningMean):
    def forward(self, x):
        with torch.no_grad():
            if self.training:
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
            return x - self.running_mean


class _RMReassigned(l03.RunningMean):
    def forward(self, x):
        if self.training:
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * x.detach().mean(0)
        return x - self.running_mean


def test_running_mean_output_cut_from_the_graph_is_rejected():
    rejected(M + "RunningMean", _RMEverythingNoGrad, "output_detached")


def test_running_mean_reassigned_buffer_passes():
    accepted(M + "RunningMean", _RMReassigned)


def _init(weight_init, bias=True):
    def init(m):
        if isinstance(m, nn.Linear):
            weight_init(m)
            if bias is True and m.bias is not None:
                nn.init.zeros_(m.bias)
            elif bias == "unguarded":
                nn.init.zeros_(m.bias)

    return init


def test_init_weights_unguarded_bias_is_named_and_never_passes():
    # some layers have bias=False; before the fix every case sometimes had biases everywhere
    rejected(M + "init_weights",
             _init(lambda m: nn.init.normal_(m.weight, std=m.in_features ** -0.5), bias="unguarded"),
             "bias_none", seeds=range(1, 9))


def test_init_weights_typo_shows_the_real_error():
    res = rejected(M + "init_weights", _init(lambda m: nn.init.normal_(m.weight, std=m.in_feature ** -0.5)),
                   "exception")
    assert "in_feature" in res.message


def test_init_weights_xavier_is_rejected():
    rejected(M + "init_weights", _init(nn.init.xavier_normal_))


def test_init_weights_alternatives_pass():
    accepted(M + "init_weights", _init(lambda m: nn.init.kaiming_normal_(m.weight, nonlinearity="linear")), 4)
    accepted(M + "init_weights", _init(lambda m: nn.init.trunc_normal_(m.weight, std=m.in_features ** -0.5)), 4)


def test_freeze_backbone_named_pairs_are_named():
    def pairs(model):
        model.backbone.requires_grad_(False)
        return [(n, p) for n, p in model.named_parameters() if p.requires_grad]

    rejected(M + "freeze_backbone", pairs, "returned_pairs")


def test_freeze_backbone_tuple_passes():
    def as_tuple(model):
        for p in model.backbone.parameters():
            p.requires_grad = False
        return tuple(p for p in model.head.parameters() if p.requires_grad)

    accepted(M + "freeze_backbone", as_tuple)


def _proba(before, forward, after):
    def answer(model, X):
        was = model.training
        before(model)
        out = forward(model, X)
        after(model, was)
        return out

    return answer


def _no_grad_softmax(model, X):
    with torch.no_grad():
        return torch.softmax(model(X), dim=1)


def test_predict_proba_always_train_at_the_end_is_caught_by_the_fixed_cases():
    answer = _proba(lambda m: m.eval(), _no_grad_softmax, lambda m, was: m.train())
    rejected(M + "predict_proba", answer, "mode_not_restored", n_random=0)


def test_predict_proba_never_restoring_is_caught_by_the_fixed_cases():
    answer = _proba(lambda m: m.eval(), _no_grad_softmax, lambda m, was: None)
    rejected(M + "predict_proba", answer, "mode_not_restored", n_random=0)


def test_predict_proba_restoring_only_the_attribute_is_rejected():
    def attr(m, was):
        m.training = was  # the Dropout and BatchNorm inside stay in eval mode

    rejected(M + "predict_proba", _proba(lambda m: m.eval(), _no_grad_softmax, attr), "mode_not_restored")


def test_predict_proba_eval_by_attribute_is_named_forgot_eval():
    def attr_eval(m):
        m.training = False

    rejected(M + "predict_proba", _proba(attr_eval, _no_grad_softmax, lambda m, was: m.train(was)), "forgot_eval")


def test_predict_proba_graph_built_then_detached_is_rejected():
    answer = _proba(lambda m: m.eval(), lambda m, X: torch.softmax(m(X), dim=1).detach(),
                    lambda m, was: m.train(was))
    rejected(M + "predict_proba", answer, "graph_then_detach")


def test_predict_proba_decorated_with_no_grad_passes():
    @torch.no_grad()
    def decorated(model, X):
        was = [(m, m.training) for m in model.modules()]  # per submodule: modes may be mixed
        model.eval()
        try:
            return F.softmax(model(X), dim=-1)
        finally:
            for m, t in was:
                m.training = t

    accepted(M + "predict_proba", decorated)


# =========================================================================== framework-level
def test_checks_leave_the_callers_rng_and_grad_mode_alone_with_new_fixed_cases():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    with torch.no_grad():
        for exercise_id in (M + "predict_proba", A + "dfdx", A + "gradient_descent", M + "RMSNorm"):
            assert check(exercise_id, grading.reference(exercise_id)).passed
        assert not torch.is_grad_enabled()
    assert torch.equal(torch.get_rng_state(), state)
