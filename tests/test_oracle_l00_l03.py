"""Each reference of lessons 00-03 against an independent oracle (a NumPy/torch built-in or a
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


# =========================================================================== 03 nn.Module
def _numpy_mlp(model, x):
    """The reference MLP's weights evaluated with NumPy: relu between layers, none at the end."""
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    h = x.double().numpy()
    for k, lin in enumerate(linears):
        h = h @ lin.weight.detach().double().numpy().T + lin.bias.detach().double().numpy()
        if k < len(linears) - 1:
            h = np.maximum(h, 0)
    return h


def test_mlp_reference_agrees_with_numpy_forward():
    MLP = grading.reference("03_nn_module.MLP")
    for where, case in _cases("03_nn_module.MLP", 60):
        i, h, c = case.args
        torch.manual_seed(case.kwargs["seed"] % 1000)
        model = MLP(i, list(h), c)
        assert sum(p.numel() for p in model.parameters()) == sum(a * b + b for a, b in zip([i, *h], [*h, c])), where
        x = torch.randn(5, i)
        _close(model(x), _numpy_mlp(model, x), rtol=1e-5, atol=1e-5, where=where)


def test_tower_reference_agrees_with_numpy_forward():
    Tower = grading.reference("03_nn_module.Tower")
    for where, case in _cases("03_nn_module.Tower", 60):
        width, depth = case.args
        model = Tower(width, depth)
        with torch.no_grad():
            model.scale.copy_(torch.randn(width))
        x = torch.randn(4, width)
        h = x.double().numpy()
        for b in model.blocks:
            h = np.maximum(h @ b.weight.detach().double().numpy().T + b.bias.detach().double().numpy(), 0)
        _close(model(x), h * model.scale.detach().double().numpy(), rtol=1e-5, atol=1e-5, where=where)
        assert sorted(model.state_dict()) == sorted([f"blocks.{k}.{p}" for k in range(depth) for p in ("weight", "bias")]
                                                    + ["scale"])


def test_rmsnorm_reference_agrees_with_torch_rms_norm():
    RMSNorm = grading.reference("03_nn_module.RMSNorm")
    for where, case in _cases("03_nn_module.RMSNorm", 60):
        dim = case.args[0]
        eps = case.args[1] if len(case.args) > 1 else 1e-6
        model = RMSNorm(*case.args)
        assert model.eps == eps and model.weight.dtype == torch.float32, where
        with torch.no_grad():
            model.weight.copy_(torch.randn(dim))
        x = torch.randn(*case.kwargs["shape"]) * case.kwargs.get("scale", 2.0)
        want = torch.nn.functional.rms_norm(x.double(), (dim,), model.weight.detach().double(), eps)
        _close(model(x), want.numpy(), rtol=1e-5, atol=1e-6, where=where)


def test_running_mean_reference_agrees_with_batchnorm_running_mean():
    RunningMean = grading.reference("03_nn_module.RunningMean")
    for where, case in _cases("03_nn_module.RunningMean", 60):
        n = case.args[0]
        momentum = case.args[1] if len(case.args) > 1 else 0.1
        rm = RunningMean(*case.args)
        bn = torch.nn.BatchNorm1d(n, momentum=momentum, affine=False)
        for _ in range(case.kwargs["batches"]):
            x = torch.randn(max(case.kwargs["batch_size"], 2), n)
            out = rm(x)
            bn(x)
            _close(out, (x - rm.running_mean).numpy(), where=where)
        _close(rm.running_mean, bn.running_mean.numpy(), rtol=1e-5, atol=1e-6, where=where)
        rm.eval()
        before = rm.running_mean.clone()
        rm(torch.randn(3, n))
        assert torch.equal(before, rm.running_mean), where


def test_init_weights_reference_matches_lecun_normal_statistics():
    init = grading.reference("03_nn_module.init_weights")
    for where, case in _cases("03_nn_module.init_weights", 8):
        (model,) = case.args
        others = {n: p.detach().clone() for n, p in model.named_parameters()
                  if not isinstance(model.get_submodule(n.rsplit(".", 1)[0]), torch.nn.Linear)}
        torch.manual_seed(0)
        model.apply(init)
        for name, m in model.named_modules():
            if isinstance(m, torch.nn.Linear):
                w = m.weight.detach().double().numpy().ravel()
                assert abs(w.std() * np.sqrt(m.in_features) - 1) < 0.03, where
                assert m.bias is None or not m.bias.any(), where
        for n, before in others.items():
            assert torch.equal(dict(model.named_parameters())[n].detach(), before), (where, n)


def test_freeze_backbone_reference_returns_exactly_the_trainable_parameters():
    freeze = grading.reference("03_nn_module.freeze_backbone")
    for where, case in _cases("03_nn_module.freeze_backbone", 30):
        (model,) = case.args
        head_flags = [p.requires_grad for p in model.head.parameters()]
        out = freeze(model)
        assert isinstance(out, list), where
        assert not any(p.requires_grad for p in model.backbone.parameters()), where
        assert [p.requires_grad for p in model.head.parameters()] == head_flags, where
        assert {id(p) for p in out} == {id(p) for p, f in zip(model.head.parameters(), head_flags) if f}, where


def test_predict_proba_reference_agrees_with_an_eval_copy():
    import copy
    proba = grading.reference("03_nn_module.predict_proba")
    for where, case in _cases("03_nn_module.predict_proba", 60):
        model, X = case.args
        modes = [m.training for m in model.modules()]
        twin = copy.deepcopy(model).eval()
        with torch.no_grad():
            want = torch.softmax(twin(X).double(), dim=1)
        got = proba(model, X)
        assert not got.requires_grad, where
        _close(got, want.numpy(), rtol=1e-5, atol=1e-6, where=where)
        assert [m.training for m in model.modules()] == modes, where
