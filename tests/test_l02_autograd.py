"""Lesson 02 (autograd): the graph-drawing and gradient-descent helpers, and what the generic
grader tests cannot see: correct answers written differently from the reference pass, the
behavioural diagnoses (descent step rules, repeated VJP calls, custom backward) name the
right mistake, and every message a check raises is the one its Mistake declares."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props.l02_autograd_graph import draw_graph, graph_nodes  # noqa: E402
from course_utils.lesson_props.l02_descent import FUNCTIONS, classify_path, descent_path, descent_widget, plot_descent  # noqa: E402

LESSON = "02_autograd"


def check(name, answer, seed=7, n_random=None):
    return grading.check(f"{LESSON}.{name}", answer, seed=seed, n_random=n_random)


# --------------------------------------------------------------------------- autograd_graph
def test_graph_nodes_of_a_small_expression():
    x = torch.tensor(1.5, requires_grad=True)
    w = torch.tensor(-0.5, requires_grad=True)
    b = torch.tensor(0.1, requires_grad=True)
    z = torch.sigmoid(w * x + b)
    nodes = graph_nodes(z, names={"x": x, "w": w, "b": b, "z": z})
    labels = [n.label for n in nodes]
    assert labels[0] == "z = SigmoidBackward0" and nodes[0].kind == "output"
    assert sorted(labels[1:]) == ["AddBackward0", "MulBackward0", "b (leaf)", "w (leaf)", "x (leaf)"]
    by_label = {n.label: n for n in nodes}
    add = by_label["AddBackward0"]
    assert sorted(nodes[i].label for i in add.inputs) == ["MulBackward0", "b (leaf)"]
    assert sorted(nodes[i].label for i in by_label["MulBackward0"].inputs) == ["w (leaf)", "x (leaf)"]
    # every edge goes one column or more to the left of the node it feeds
    for n in nodes:
        for i in n.inputs:
            assert nodes[i].depth > n.depth
    assert {n.kind for n in nodes if "leaf" in n.label} == {"leaf"}


def test_graph_nodes_repeated_input_and_unnamed_leaf():
    x = torch.ones(2, 3, requires_grad=True)
    nodes = graph_nodes((x * x).sum())
    mul = next(n for n in nodes if n.label == "MulBackward0")
    assert len(mul.inputs) == 2 and mul.inputs[0] == mul.inputs[1]
    assert any(n.label == "leaf 2×3" for n in nodes)


def test_graph_nodes_without_graph():
    assert graph_nodes(torch.ones(3))[0].label.startswith("no graph")
    leaf = torch.ones(3, requires_grad=True)
    assert graph_nodes(leaf, {"p": leaf})[0].label == "p (leaf)"


def test_draw_graph_draws_every_node_and_edge():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = (x * torch.sin(x) + x).sum()
    nodes = graph_nodes(out, {"x": x})
    fig = draw_graph(out, {"x": x}, title="t")
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if isinstance(t, matplotlib.text.Annotation)]
    boxes = [t.get_text() for t in ax.texts if not isinstance(t, matplotlib.text.Annotation)]
    assert sorted(boxes) == sorted(n.label for n in nodes)
    assert len(arrows) == sum(len(n.inputs) for n in nodes) == 6
    plt.close(fig)


# --------------------------------------------------------------------------- descent
@pytest.mark.parametrize("lr", [0.05, 0.3, 0.7])
def test_descent_path_matches_closed_form_on_quadratic(lr):
    path = descent_path("quadratic", x0=2.0, lr=lr, num_steps=10)
    assert len(path) == 11
    for k, p in enumerate(path):
        assert p == pytest.approx(2.0 * (1 - 2 * lr) ** k, rel=1e-12, abs=1e-15)


def test_descent_path_stops_when_it_diverges():
    path = descent_path("quadratic", x0=3.0, lr=5.0, num_steps=1000)
    assert len(path) < 20 and abs(path[-1]) > 1e6


@pytest.mark.parametrize("lr,verdict", [(0.001, "too slow"), (0.2, "converges"), (0.85, "oscillates"),
                                        (1.0, "oscillates"), (1.05, "diverges"), (3.0, "diverges")])
def test_classify_path_on_quadratic(lr, verdict):
    assert classify_path("quadratic", descent_path("quadratic", 3.0, lr, 30)) == verdict


def test_classify_path_on_double_well_and_custom_function():
    assert classify_path("double well", descent_path("double well", 2.0, 0.05, 200)) == "converges"
    assert classify_path("double well", descent_path("double well", 2.0, 1.5, 50)) == "diverges"
    f = lambda x: (x - 1) ** 2  # noqa: E731
    assert classify_path(f, descent_path(f, 5.0, 0.1, 100)) == "converges"
    # the minimiser the table names is a stationary point, and the lower of the two valleys
    fn = FUNCTIONS["double well"][0]
    xm = torch.tensor(FUNCTIONS["double well"][3], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(fn(xm), xm)
    assert abs(float(g)) < 1e-3
    assert float(fn(xm.detach())) < float(fn(torch.tensor(1.3322, dtype=torch.float64)))


def test_plot_descent_and_widget():
    fig = plot_descent("quadratic", descent_path("quadratic", 3.0, 0.3, 10), title="x")
    assert len(fig.axes) == 2
    plt.close(fig)
    w = descent_widget()
    sliders = {c.description: c for c in w.children if hasattr(c, "description")}
    assert w.result == classify_path("quadratic", descent_path("quadratic", 3.0, sliders["lr"].value, 20))
    sliders["lr"].value = 1.2
    assert w.result == "diverges"
    sliders["lr"].value = 0.1
    sliders["steps"].value = 100
    assert w.result == "converges"
    plt.close("all")


# --------------------------------------------------------------------------- messages
@pytest.mark.parametrize("exercise_id", [e for e in grading.exercises() if e.startswith(LESSON)])
def test_declared_messages_are_real_text(exercise_id):
    for m in grading.exercise(exercise_id).mistakes:
        assert "message set by" not in m.message and len(m.message) > 40, (exercise_id, m.id)


@pytest.mark.parametrize("exercise_id", [e for e in grading.exercises() if e.startswith(LESSON)])
def test_named_mistakes_show_their_declared_message(exercise_id):
    ex = grading.exercise(exercise_id)
    for m in ex.mistakes:
        if m.example is None:
            continue
        res = grading.check(exercise_id, m.example, seed=3)
        assert res.mistake == m.id
        assert res.message == m.message
        assert "expected" not in res.message.lower()


# --------------------------------------------------------------------------- exercise 1-3
def test_dfdx_formula_variants_pass_and_small_errors_fail():
    assert check("dfdx", lambda x: x * (2 * torch.sin(x) + x * torch.cos(x)), n_random=20).passed
    assert not check("dfdx", lambda x: 2 * x * torch.sin(x) + x**2 * torch.cos(x) + 1e-3).passed


def test_vjp_alternatives_pass():
    def with_grad(fn, x, v):
        x = x.detach().requires_grad_()
        return torch.autograd.grad(fn(x), x, v)[0]

    def with_func(fn, x, v):
        _, pullback = torch.func.vjp(fn, x)
        return pullback(v)[0]

    assert check("vjp", with_grad, n_random=20).passed
    assert check("vjp", with_func, n_random=20).passed


def test_vjp_changing_callers_tensor_is_named_even_without_accumulation():
    def clears_first(fn, x, v):
        x.requires_grad_()
        x.grad = None
        fn(x).backward(v)
        return x.grad.clone()

    res = check("vjp", clears_first)
    assert res.mistake == "changed_caller_tensor", res.text()


def test_huber_alternatives_pass_and_rewrap_is_a_graph_cut():
    assert check("huber", lambda x, d: F.huber_loss(x, torch.zeros_like(x), reduction="none", delta=d),
                 n_random=20).passed
    assert check("huber", lambda x, d: torch.where(x.abs() < d, x * x / 2, d * x.abs() - d * d / 2)).passed

    def item_loop(x, delta):
        vals = [0.5 * v.item() ** 2 if abs(v.item()) <= delta else delta * (abs(v.item()) - 0.5 * delta)
                for v in x.flatten()]
        return torch.tensor(vals).reshape(x.shape)

    res = check("huber", item_loop)
    assert res.mistake == "graph_cut" and "torch.tensor" in res.message


# --------------------------------------------------------------------------- exercise 4-5
def test_second_derivative_with_torch_func_passes():
    def with_func(fn, x):
        from torch.func import grad, vmap

        flat = x.reshape(-1)
        return vmap(grad(grad(lambda t: fn(t))))(flat).reshape(x.shape)

    assert check("second_derivative", with_func, n_random=20).passed


def test_finite_difference_variants():
    def with_clones(fn, x, eps):
        out = torch.empty_like(x)
        for idx in range(x.numel()):
            up, down = x.clone(), x.clone()
            up.view(-1)[idx] += eps
            down.view(-1)[idx] -= eps
            out.view(-1)[idx] = (fn(up) - fn(down)) / (2 * eps)
        return out

    assert check("finite_difference_grad", with_clones, n_random=20).passed

    def restores_exactly(fn, x, eps):
        grad = torch.zeros_like(x)
        flat = x.view(-1)
        for i in range(x.numel()):
            old = flat[i].item()
            flat[i] = old + eps
            up = fn(x)
            flat[i] = old - eps
            down = fn(x)
            flat[i] = old
            grad.view(-1)[i] = (up - down) / (2 * eps)
        return grad

    assert check("finite_difference_grad", restores_exactly, n_random=20).passed


# --------------------------------------------------------------------------- exercise 7 (descent)
def _sgd_answer(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_()
    opt = torch.optim.SGD([x], lr=lr)
    for _ in range(num_steps):
        opt.zero_grad()
        fn(x).backward()
        opt.step()
    return x.detach()


def test_gradient_descent_alternatives_pass():
    assert check("gradient_descent", _sgd_answer, n_random=20).passed

    def logs_every_step(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_()
        history = []
        for _ in range(num_steps):
            loss = fn(x)
            loss.backward()
            with torch.no_grad():
                x.sub_(lr * x.grad)
                history.append(fn(x).item())  # an extra evaluation for logging
            x.grad = None
        return x.detach()

    assert check("gradient_descent", logs_every_step, n_random=20).passed


def test_gradient_descent_diagnoses_step_rules():
    def no_clear_via_autograd_grad_sum(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_()
        total = torch.zeros_like(x)
        for _ in range(num_steps):
            (g,) = torch.autograd.grad(fn(x), x)
            total += g
            with torch.no_grad():
                x -= lr * total
        return x.detach()

    assert check("gradient_descent", no_clear_via_autograd_grad_sum).mistake == "grad_not_cleared"

    def functional_uphill(fn, x0, lr, num_steps):
        x = x0.clone()
        for _ in range(num_steps):
            x = x + lr * torch.func.grad(fn)(x)
        return x

    assert check("gradient_descent", functional_uphill).mistake == "wrong_sign"

    def returns_with_graph(fn, x0, lr, num_steps):
        x = x0.clone().requires_grad_()
        for _ in range(num_steps):
            fn(x).backward()
            with torch.no_grad():
                x -= lr * x.grad
            x.grad = None
        return x * 1.0  # a result with a graph

    assert check("gradient_descent", returns_with_graph).mistake == "update_tracked"

    def half_lr(fn, x0, lr, num_steps):
        return _sgd_answer(fn, x0, lr / 2, num_steps)

    res = check("gradient_descent", half_lr)
    assert not res.passed and res.mistake == "wrong_values"


def test_gradient_descent_check_leaves_x0_and_grad_mode_alone():
    x0 = torch.tensor([1.0, 2.0])
    with torch.no_grad():
        res = check("gradient_descent", grading.reference(f"{LESSON}.gradient_descent"))
        assert not torch.is_grad_enabled()
    assert res.passed, res.text()  # the check turns grad mode on for the learner's loop
    assert torch.equal(x0, torch.tensor([1.0, 2.0]))


# --------------------------------------------------------------------------- exercise 6 (MySiLU)
class _SiLURecompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / (1 + torch.exp(-x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_output * (s + x * s * (1 - s))


class _SiLUWrongBackward(_SiLURecompute):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_output * (s + x * s)


class _SiLUNoneBackward(_SiLURecompute):
    @staticmethod
    def backward(ctx, grad_output):
        return None


def test_silu_alternative_passes_and_backward_bugs_are_named():
    assert check("MySiLU", _SiLURecompute, n_random=20).passed
    assert check("MySiLU", _SiLUWrongBackward).mistake == "wrong_backward"
    assert check("MySiLU", _SiLUNoneBackward).mistake == "backward_returned_none"


def test_silu_forward_called_on_instance_or_plain_function_gives_feedback():
    res = check("MySiLU", lambda x: x * torch.sigmoid(x))
    assert res.status == "incorrect" and res.mistake == "wrong_type"
    with pytest.warns(DeprecationWarning):  # instantiating a Function is deprecated
        instance = _SiLURecompute()
    res = check("MySiLU", instance)
    assert res.status == "incorrect"


def test_check_latency_budget_on_reference():
    """A loose ceiling (the benchmark measures the real numbers on a quiet machine)."""
    import time

    for exercise_id in [e for e in grading.exercises() if e.startswith(LESSON)]:
        grading.check(exercise_id, grading.reference(exercise_id))  # warm up lazy imports
        start = time.perf_counter()
        grading.check(exercise_id, grading.reference(exercise_id))
        assert time.perf_counter() - start < 3.0, exercise_id
