"""Red team of the graders of lessons 00-02 (lesson 03: tests/test_l03_nn_module.py), kept as regression tests.

For every exercise: at least five wrong answers a learner would plausibly write (real learner
code, not mutants of the reference), three valid but unusual answers, and two cheats. Wrong
answers and cheats must be rejected by the FIXED cases alone (``n_random=0``): a verdict never
depends on the seed a learner happens to get. They are also rejected, and valid answers
accepted, with random cases under several seeds. Where the mistake has a name, the name is
asserted; ``None`` means any rejection (the wrong answer has no specific name, and the test
asserts at least that it is not misnamed as something it is not, see ``NOT_NAMED``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_utils import grading

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)

WRONG: list[tuple[str, str, object, str | None]] = []  # (exercise, label, answer, mistake or None)
VALID: list[tuple[str, str, object]] = []
CHEATS: list[tuple[str, str, object]] = []


def wrong(ex: str, label: str, mistake: str | None = None):
    def deco(fn):
        WRONG.append((ex, label, fn, mistake))
        return fn
    return deco


def valid(ex: str, label: str):
    def deco(fn):
        VALID.append((ex, label, fn))
        return fn
    return deco


CHEAT_NAMES: dict[str, str] = {}


def cheat(ex: str, label: str, mistake: str | None = None):
    def deco(fn):
        CHEATS.append((ex, label, fn))
        if mistake:
            CHEAT_NAMES[f"{ex}:{label}"] = mistake
        return fn
    return deco


# =========================================================================== 02 autograd
DF = "02_autograd.dfdx"
wrong(DF, "multiplied the derivatives", "forgot_product_rule")(lambda x: 2 * x * torch.cos(x))
wrong(DF, "one term", "missing_term")(lambda x: 2 * x * torch.sin(x))
wrong(DF, "sign of cos", "sign_error")(lambda x: 2 * x * torch.sin(x) - x**2 * torch.cos(x))
wrong(DF, "derivative of x² as x")(lambda x: x * torch.sin(x) + x**2 * torch.cos(x))
wrong(DF, "math.sin per element")(lambda x: torch.tensor([2 * v * math.sin(v) + v * v * math.cos(v) for v in x.tolist()]))
wrong(DF, "numpy float64 result")(lambda x: torch.from_numpy(2 * x.double().numpy() * np.sin(x.double().numpy())
                                                              + x.double().numpy() ** 2 * np.cos(x.double().numpy())))
wrong(DF, "float32 always")(lambda x: (2 * x * torch.sin(x) + x**2 * torch.cos(x)).float())


@wrong(DF, "backward inside enable_grad", "used_autograd")
def _df_enable_grad(x):
    with torch.enable_grad():
        x = x.detach().requires_grad_()
        (x**2 * torch.sin(x)).sum().backward()
    return x.grad


@wrong(DF, "autograd hidden in a helper", "used_autograd")
def _df_helper_user(x):
    return _df_helper(x)


def _df_helper(x):
    with torch.set_grad_enabled(True):
        t = x.detach().requires_grad_()
        return torch.autograd.grad((t**2 * t.sin()).sum(), t)[0]


wrong(DF, "autograd.functional.vjp (redteam)", "used_autograd")(
    lambda x: torch.autograd.functional.vjp(lambda t: t**2 * torch.sin(t), x, torch.ones_like(x))[1])
valid(DF, "method calls")(lambda x: 2 * x * x.sin() + x.pow(2) * x.cos())


@valid(DF, "the formula with grad mode switched off (red team 2)")
def _df_grad_off(x):
    with torch.set_grad_enabled(False):
        return 2 * x * torch.sin(x) + x**2 * torch.cos(x)


valid(DF, "factored")(lambda x: x * (2 * torch.sin(x) + x * torch.cos(x)))
valid(DF, "numpy via as_tensor")(lambda x: torch.as_tensor(x.numpy() * (2 * np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy()))))
cheat(DF, "torch.func.grad under vmap", "used_autograd")(
    lambda x: torch.vmap(torch.func.grad(lambda t: t**2 * torch.sin(t)))(x.reshape(-1)).reshape(x.shape))
cheat(DF, "calls the course's reference", "used_autograd")(lambda x: grading.reference("02_autograd.dfdx")(x))

VJ = "02_autograd.vjp"
wrong(VJ, "gradient of the sum", "ignored_v")(lambda fn, x, v: torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x)[0])
wrong(VJ, "whole jacobian", "returned_jacobian")(lambda fn, x, v: torch.autograd.functional.jacobian(fn, x))
wrong(VJ, "J @ v")(lambda fn, x, v: torch.autograd.functional.jacobian(fn, x) @ v)


@wrong(VJ, "backward on the caller's x", "accumulated_grad")
def _vj_caller(fn, x, v):
    x.requires_grad_()
    fn(x).backward(v)
    return x.grad


@wrong(VJ, "create_graph keeps a graph", "result_has_graph")
def _vj_graph(fn, x, v):
    x = x.detach().requires_grad_()
    return torch.autograd.grad(fn(x), x, v, create_graph=True)[0]


@wrong(VJ, "v times the output")
def _vj_wrong(fn, x, v):
    x = x.detach().requires_grad_()
    (fn(x) * v).sum().backward()
    return x.grad * v.sum()


@wrong(VJ, "v normalised in place", "mutated_input")
def _vj_norm(fn, x, v):
    v /= v.norm()
    x = x.detach().requires_grad_()
    fn(x).backward(v * v.norm())
    return x.grad


valid(VJ, "weighted sum")(lambda fn, x, v: torch.autograd.grad((fn(x := x.detach().requires_grad_()) * v).sum(), x)[0])
valid(VJ, "jacobian transposed")(lambda fn, x, v: torch.autograd.functional.jacobian(fn, x).T @ v)
valid(VJ, "functional vjp")(lambda fn, x, v: torch.autograd.functional.vjp(fn, x, v)[1])
cheat(VJ, "zeros like x")(lambda fn, x, v: torch.zeros_like(x))
cheat(VJ, "finite differences instead of autograd")(lambda fn, x, v: torch.stack(
    [((fn(x + 1e-2 * e) - fn(x - 1e-2 * e)) / 2e-2 * v).sum() for e in torch.eye(len(x), dtype=x.dtype)]))

HU = "02_autograd.huber"
wrong(HU, "no half", "missing_half")(lambda x, d: torch.where(x.abs() <= d, x**2, d * (x.abs() - 0.5 * d)))
wrong(HU, "no offset", "missing_offset")(lambda x, d: torch.where(x.abs() <= d, 0.5 * x**2, d * x.abs()))
wrong(HU, "numpy mask (redteam)")(lambda x, d: torch.where(
    torch.from_numpy(np.abs(x.detach().numpy()) <= d), 0.5 * x**2, d * (x.abs() - 0.5 * d)))


@wrong(HU, "item() and if per element, stacked (redteam)", "rule_broken")
def _hu_item_loop(x, delta):
    out = []
    for v in x.flatten():
        if abs(v.item()) <= delta:
            out.append(0.5 * v**2)
        else:
            out.append(delta * (v.abs() - 0.5 * delta))
    return torch.stack(out).reshape(x.shape) if out else 0.5 * x**2


wrong(HU, "no abs in the condition")(lambda x, d: torch.where(x <= d, 0.5 * x**2, d * (x.abs() - 0.5 * d)))
wrong(HU, "smooth_l1 without the delta factor")(lambda x, d: F.smooth_l1_loss(x, torch.zeros_like(x), beta=d, reduction="none"))
wrong(HU, "item() in a loop", "graph_cut")(lambda x, d: torch.tensor(
    [0.5 * v * v if abs(v) <= d else d * (abs(v) - 0.5 * d) for v in x.flatten().tolist()]).reshape(x.shape))
wrong(HU, "python if per element, stacked", "rule_broken")(lambda x, d: torch.stack(
    [0.5 * xi**2 if xi.abs() <= d else d * (xi.abs() - 0.5 * d) for xi in x.flatten()]).reshape(x.shape)
    if x.numel() else 0.5 * x**2)
wrong(HU, "in-place abs on x", "in_place_on_input")(lambda x, d: torch.where(x.abs_() <= d, 0.5 * x**2, d * (x - 0.5 * d)))
wrong(HU, "strict < at the boundary is fine but linear piece uses x")(
    lambda x, d: torch.where(x.abs() < d, 0.5 * x**2, d * (x - 0.5 * d)))
valid(HU, "huber_loss")(lambda x, d: F.huber_loss(x, torch.zeros_like(x), delta=d, reduction="none"))
valid(HU, "clamp formula")(lambda x, d: 0.5 * x.clamp(-d, d) ** 2 + d * (x.abs() - x.clamp(-d, d).abs()))
valid(HU, "mask arithmetic")(lambda x, d: (m := (x.abs() <= d).to(x.dtype)) * 0.5 * x**2 + (1 - m) * d * (x.abs() - d / 2))


@valid(HU, "assignment into a clone")
def _hu_clone(x, d):
    out = d * (x.abs() - 0.5 * d)
    inside = x.abs() <= d
    out = out.clone()
    out[inside] = 0.5 * x[inside] ** 2
    return out


cheat(HU, "all values detached", "graph_cut")(lambda x, d: F.huber_loss(x, torch.zeros_like(x), delta=d, reduction="none").detach())
cheat(HU, "numpy detour with detach")(lambda x, d: torch.from_numpy(
    np.where(np.abs(x.detach().numpy()) <= d, 0.5 * x.detach().numpy() ** 2,
             d * (np.abs(x.detach().numpy()) - 0.5 * d))))

SD = "02_autograd.second_derivative"
wrong(SD, "first derivative only", "first_derivative")(
    lambda fn, x: torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x)[0])
wrong(SD, "no create_graph", "forgot_create_graph")(
    lambda fn, x: torch.autograd.grad(torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x)[0].sum(), x)[0])
wrong(SD, "two backward calls accumulate", "accumulated_grad")(
    lambda fn, x: (fn(x := x.detach().requires_grad_()).sum().backward(create_graph=True), x.grad.sum().backward(), x.grad)[2])
wrong(SD, "hessian diagonal of the sum, flattened")(
    lambda fn, x: torch.autograd.functional.hessian(lambda t: fn(t).sum(), x).reshape(x.numel(), -1).diagonal())


@wrong(SD, "requires_grad_ on the caller's x", "changed_caller_tensor")
def _sd_caller(fn, x):
    x.requires_grad_()
    (d1,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    return torch.autograd.grad(d1.sum(), x)[0]


@wrong(SD, "create_graph twice, graph returned", "result_has_graph")
def _sd_graph(fn, x):
    x = x.detach().requires_grad_()
    (d1,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    return torch.autograd.grad(d1.sum(), x, create_graph=True)[0]


wrong(SD, "finite differences in float32")(lambda fn, x: (fn(x + 1e-2) - 2 * fn(x) + fn(x - 1e-2)) / 1e-4)
valid(SD, "grad_outputs of ones")(lambda fn, x: torch.autograd.grad(
    d1 := torch.autograd.grad(y := fn(x := x.detach().requires_grad_()), x, torch.ones_like(y), create_graph=True)[0],
    x, torch.ones_like(d1))[0])


@valid(SD, "backward on a fresh leaf after autograd.grad")
def _sd_backward(fn, x):
    x = x.detach().requires_grad_()
    (d1,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    d1.sum().backward()
    return x.grad


valid(SD, "detached result of create_graph twice")(lambda fn, x: _sd_graph(fn, x).detach())
cheat(SD, "zeros")(lambda fn, x: torch.zeros_like(x))
cheat(SD, "fn itself")(lambda fn, x: fn(x))

FD = "02_autograd.finite_difference_grad"


def _fd(kind):
    def answer(fn, x, eps):
        grad = torch.zeros_like(x)
        for i in range(x.numel()):
            step = torch.zeros_like(x)
            step.view(-1)[i] = eps
            if kind == "forward":
                grad.view(-1)[i] = (fn(x + step) - fn(x)) / eps
            elif kind == "half":
                grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / eps
            elif kind == "tiny_eps":
                step.view(-1)[i] = 1e-6
                grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / 2e-6
            elif kind == "float32":
                grad = grad.float()
                grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
            elif kind == "off_by_one":
                if i < x.numel() - 1:
                    grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
        return grad
    return answer


wrong(FD, "forward difference", "forward_difference")(_fd("forward"))
wrong(FD, "divides by eps", "wrong_denominator")(_fd("half"))
wrong(FD, "ignores eps")(_fd("tiny_eps"))
wrong(FD, "float32 result", "wrong_dtype")(_fd("float32"))
wrong(FD, "skips the last element")(_fd("off_by_one"))
wrong(FD, "five-point stencil is not named used_autograd (redteam)")(
    lambda fn, x, eps: torch.stack([(-fn(x + 2 * s) + 8 * fn(x + s) - 8 * fn(x - s) + fn(x - 2 * s)) / (12 * eps)
                                    for s in (torch.eye(x.numel(), dtype=x.dtype) * eps).reshape(-1, *x.shape)]
                                   ).reshape(x.shape))
wrong(FD, "all at once", "nudged_all_at_once")(lambda fn, x, eps: torch.full_like(x, float((fn(x + eps) - fn(x - eps)) / (2 * eps))))


@wrong(FD, "nudges x in place", "mutated_input")
def _fd_in_place(fn, x, eps):
    grad = torch.zeros_like(x)
    flat = x.view(-1)
    for i in range(x.numel()):
        flat[i] += eps
        up = fn(x)
        flat[i] -= 2 * eps
        down = fn(x)
        grad.view(-1)[i] = (up - down) / (2 * eps)
    return grad


@valid(FD, "eye rows")
def _fd_eye(fn, x, eps):
    e = torch.eye(x.numel(), dtype=x.dtype) * eps
    return torch.stack([(fn(x + d.reshape(x.shape)) - fn(x - d.reshape(x.shape))) / (2 * eps) for d in e]).reshape(x.shape)


@valid(FD, "clones of x")
def _fd_clone(fn, x, eps):
    out = torch.empty_like(x)
    for i in range(x.numel()):
        up, down = x.clone(), x.clone()
        up.view(-1)[i] += eps
        down.view(-1)[i] -= eps
        out.view(-1)[i] = (fn(up) - fn(down)) / (2 * eps)
    return out


@valid(FD, "np.ndindex")
def _fd_ndindex(fn, x, eps):
    g = torch.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        s = torch.zeros_like(x)
        s[idx] = eps
        g[idx] = (fn(x + s) - fn(x - s)) / (2 * eps)
    return g


cheat(FD, "autograd instead", "used_autograd")(lambda fn, x, eps: torch.autograd.grad(fn(x := x.detach().requires_grad_()), x)[0])
cheat(FD, "zeros")(lambda fn, x, eps: torch.zeros_like(x))

GD = "02_autograd.gradient_descent"


def _gd_answer(update="no_grad", clear=True, sign=-1, extra_steps=0, start="clone", finish="detach"):
    def answer(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_() if start == "clone" else x0.requires_grad_()
        for _ in range(num_steps + extra_steps):
            fn(x).backward()
            if update == "no_grad":
                with torch.no_grad():
                    x += sign * lr * x.grad
            else:
                x.data += sign * lr * x.grad
            if clear:
                x.grad = None
        return x.detach() if finish == "detach" else x
    return answer


wrong(GD, "uphill", "wrong_sign")(_gd_answer(sign=1))
wrong(GD, "never clears .grad", "grad_not_cleared")(_gd_answer(clear=False))
wrong(GD, "one step too many")(_gd_answer(extra_steps=1))
wrong(GD, "returns the leaf", "returned_requires_grad")(_gd_answer(finish="leaf"))
wrong(GD, "works on x0", "mutated_input")(_gd_answer(start="x0"))


@wrong(GD, "update recorded in the graph", "update_tracked")
def _gd_tracked(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_()
    for _ in range(num_steps):
        x.retain_grad()
        fn(x).backward()
        x = x - lr * x.grad
    return x.detach()


@wrong(GD, "autograd.grad instead of backward()", "no_backward")
def _gd_autograd_grad(fn, x0, lr, num_steps):
    x = x0.clone()
    for _ in range(num_steps):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(fn(x), x)
        x = (x - lr * g).detach()
    return x


@wrong(GD, "do-while: one step even for num_steps = 0")
def _gd_do_while(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_()
    k = 0
    while True:
        fn(x).backward()
        with torch.no_grad():
            x -= lr * x.grad
        x.grad = None
        k += 1
        if k >= num_steps:
            break
    return x.detach()


valid(GD, "x.data update")(_gd_answer(update="data"))


@valid(GD, "optim.SGD")
def _gd_sgd(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_()
    opt = torch.optim.SGD([x], lr=lr)
    for _ in range(num_steps):
        opt.zero_grad()
        fn(x).backward()
        opt.step()
    return x.detach()


@valid(GD, "new leaf each step")
def _gd_new_leaf(fn, x0, lr, num_steps):
    x = x0.detach().clone()
    for _ in range(num_steps):
        x.requires_grad_()
        fn(x).backward()
        x = (x - lr * x.grad).detach()
    return x


@cheat(GD, "derivative of the fixed quadratic hard-coded")
def _gd_hard(fn, x0, lr, num_steps):
    x = x0.clone()
    for _ in range(num_steps):
        x = x - lr * 2 * x
    return x


cheat(GD, "returns x0")(lambda fn, x0, lr, num_steps: x0.clone())

SI = "02_autograd.MySiLU"


def _silu(forward, backward, save="xs"):
    class Answer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s = torch.sigmoid(x)
            ctx.save_for_backward(x, s)
            return forward(x, s)

        @staticmethod
        def backward(ctx, grad_output):
            x, s = ctx.saved_tensors
            return backward(grad_output, x, s)

    return Answer


wrong(SI, "ignores grad_output", "ignored_grad_output")(_silu(lambda x, s: x * s, lambda g, x, s: s * (1 + x * (1 - s))))
wrong(SI, "sigmoid derivative only", "sigmoid_derivative_only")(_silu(lambda x, s: x * s, lambda g, x, s: g * s * (1 - s)))
wrong(SI, "sign error in backward", "wrong_backward")(_silu(lambda x, s: x * s, lambda g, x, s: g * (s - x * s * (1 - s))))
wrong(SI, "forgot the product rule's first term", "wrong_backward")(_silu(lambda x, s: x * s, lambda g, x, s: g * x * s * (1 - s)))
wrong(SI, "forward is sigmoid", "wrong_forward")(_silu(lambda x, s: s, lambda g, x, s: g * s * (1 - s)))
wrong(SI, "forward in place", "mutated_input")(_silu(lambda x, s: x.mul_(s), lambda g, x, s: g * s))
valid(SI, "returns a tuple with an extra None (autograd allows it)")(_silu(lambda x, s: x * s, lambda g, x, s: (g * s * (1 + x * (1 - s)), None)))
wrong(SI, "float32 forward (redteam: was misnamed failed_gradcheck)", "imprecise_forward")(
    _silu(lambda x, s: (x.float() * torch.sigmoid(x.float())).to(x.dtype), lambda g, x, s: g * s * (1 + x * (1 - s))))
valid(SI, "saves the output")(_silu(lambda x, s: x * s, lambda g, x, s: g * (s + x * s * (1 - s))))


class _SiLUCtxAttr(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + torch.exp(-x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = 1 / (1 + torch.exp(-x))
        return grad_output * (s * (1 + x * (1 - s)))


class _SiLUSetupContext(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * (s + y * (1 - s))


class _SiLUAutogradBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            t = x.detach().requires_grad_()
            return torch.autograd.grad(F.silu(t), t, g)[0]


class _SiLUFromReference(grading.reference("02_autograd.MySiLU")):
    pass


valid(SI, "exp form")(_SiLUCtxAttr)
valid(SI, "setup_context style")(_SiLUSetupContext)
CHEATS.append((SI, "backward by autograd of F.silu", _SiLUAutogradBackward))
CHEATS.append((SI, "subclass of the reference", _SiLUFromReference))


# =========================================================================== findings of the read-only red team
wrong(SD, "float64 central second difference (redteam)", "no_autograd")(
    lambda fn, x: ((fn(x.double() + 1e-3) - 2 * fn(x.double()) + fn(x.double() - 1e-3)) / 1e-6).to(x.dtype))
wrong(SI, "backward multiplies grad_output in place (redteam)", "mutated_grad_output")(
    _silu(lambda x, s: x * s, lambda g, x, s: g.mul_(s * (1 + x * (1 - s)))))


def test_finite_difference_reference_accepts_a_transposed_x():
    """(redteam) the reference works on a non-contiguous x (the check does not draw one: see the report)."""
    fd = grading.reference(FD)
    x = torch.randn(3, 2, dtype=torch.float64).T
    g = fd(lambda t: (t**2).sum(), x, 1e-3)
    assert torch.allclose(g, 2 * x)


# =========================================================================== the tests
def _ids(rows):
    return [f"{r[0].split('.')[-1]}: {r[1]}" for r in rows]


# names that earlier versions gave to wrong answers that did not make that mistake: an unnamed
# wrong answer of these exercises must never get them
NEVER_NAMED = {"02_autograd.finite_difference_grad": "used_autograd",
               "02_autograd.MySiLU": "failed_gradcheck"}


@pytest.mark.parametrize("exercise_id,label,answer,mistake", WRONG, ids=_ids(WRONG))
def test_wrong_answer_is_rejected_by_the_fixed_cases(exercise_id, label, answer, mistake):
    for n_random, seeds in ((0, (1,)), (None, (1, 77, 4242))):  # fixed cases alone, then with random ones
        res = rejected(exercise_id, answer, mistake, n_random=n_random, seeds=seeds)
        if mistake is None and exercise_id in NEVER_NAMED:
            assert res.mistake != NEVER_NAMED[exercise_id], res.text()


@pytest.mark.parametrize("exercise_id,label,answer", VALID, ids=_ids(VALID))
def test_valid_unusual_answer_passes(exercise_id, label, answer):
    accepted(exercise_id, answer, n_random=20)


@pytest.mark.parametrize("exercise_id,label,answer", CHEATS, ids=_ids(CHEATS))
def test_cheat_is_rejected(exercise_id, label, answer):
    mistake = CHEAT_NAMES.get(f"{exercise_id}:{label}")
    rejected(exercise_id, answer, mistake, n_random=0, seeds=(1,))
    rejected(exercise_id, answer, mistake)


def test_every_exercise_has_five_wrong_three_valid_two_cheats():
    ids = [e for e in grading.exercises() if e[:2] in DONE]
    for ex in ids:
        assert sum(w[0] == ex for w in WRONG) >= 5, ex
        assert sum(v[0] == ex for v in VALID) >= 3, ex
        assert sum(c[0] == ex for c in CHEATS) >= 2, ex


DONE = ("02",)
