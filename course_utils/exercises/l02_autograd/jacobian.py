"""jacobian: the whole m x n Jacobian of fn at x, assembled from vector-Jacobian products.

The learner decides how to get a matrix out of ``backward(gradient=v)``, which only ever gives
vᵀJ: which vectors v (one-hot, one per *output*), how many passes (m, not n), and which way the
results stack (each pass is a row; stacking them as columns gives Jᵀ, which m ≠ n makes a wrong
shape). Subtle: passes on one leaf accumulate in ``.grad`` (row i comes out as rows 0..i added
up); a second ``backward`` through one graph fails once it is freed; an answer that turns on
``requires_grad`` on the caller's ``x`` shows itself on a second call. The library's own
Jacobians (and vjp/jvp helpers) are forbidden: this exercise builds what they do.
"""

from __future__ import annotations

from typing import Any

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ...answers.l02_autograd import jacobian
from ._kit import LESSON
from ._kit import close


# --- reference: imported above from course_utils/answers/l02_autograd.py, which `python -m course_utils build`
# generates from the solution notebook's answer cell


# --- cases: m ≠ n, so J and Jᵀ differ in shape
def _cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    m = r.choice([k for k in range(2, 7) if k != n])
    W = r.randn(m, n)
    b = r.randn(m)
    kind = r.integer(0, 2)
    if kind == 0:
        def fn(x):
            return torch.tanh(W.to(x.dtype) @ x + b.to(x.dtype))
    elif kind == 1:
        def fn(x):
            return W.to(x.dtype) @ (x**2) + b.to(x.dtype) * x.sum()
    else:
        def fn(x):
            return torch.sin(W.to(x.dtype) @ x) * x.sum()
    return Case((fn, r.randn(n)))


_W32 = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])


def _fixed_linear(x):
    return _W32.to(x.dtype) @ x


def _fixed_nonlinear(x):
    return torch.stack([x[0] * x[1], torch.sin(x[1]) + x[0] ** 2, torch.exp(x[0])])


_EDGE_CASES = [
    # J = W exactly (2x3): Jᵀ is 3x2, and the all-ones vector gives the column sums (1, 1, -0.5)
    Case((_fixed_linear, torch.tensor([1.0, 2.0, 3.0])), label="fn(x) = W x with W 2x3"),
    # n = 2 < m = 3, nonlinear: rows that differ from each other
    Case((_fixed_nonlinear, torch.tensor([0.5, -1.5])), label="fn(x) = (x0·x1, sin x1 + x0², exp x0)"),
    # the caller's x is itself a leaf that requires grad (a parameter): it must keep no .grad
    Case((_fixed_linear, torch.tensor([0.5, -0.5, 2.0], requires_grad=True)), label="x that already requires grad"),
    Case((_fixed_nonlinear, torch.tensor([1.0, 0.25], dtype=torch.float64)), label="float64 x"),
]


# --- run and probes
# The library's Jacobians and products (Exercise.forbid: seen however they are reached)
_LIBRARY = ("torch.autograd.functional.jacobian", "torch.autograd.functional.hessian",
            "torch.autograd.functional.vjp", "torch.autograd.functional.jvp",
            "torch.autograd.functional.hvp", "torch.autograd.functional.vhp",
            "torch.func.jacrev", "torch.func.jacfwd", "torch.func.vjp", "torch.func.jvp",
            "torch.func.hessian", "torch.func.linearize")
_RULE = {n.rpartition(".")[2]: "library_jacobian" for n in _LIBRARY}
_FREED = "Trying to backward through the graph a second time"


def _run(answer: Any, case: Case) -> Any:
    fn, x = case.args
    had_grad, required = x.grad, x.requires_grad  # a caller's x may be a leaf that requires grad
    x_before = x.detach().clone()
    graphs = []  # whether each call of fn built a graph to go backward through

    def watched(*args: Any, **kwargs: Any) -> Any:
        y = fn(*args, **kwargs)
        graphs.append(isinstance(y, torch.Tensor) and y.requires_grad)
        return y

    with answer_grad_mode():
        try:
            out = answer(watched, x)
        except RuntimeError as exc:
            if _FREED in str(exc):
                raise Incorrect("graph_freed") from None
            raise
        first = out.detach().clone() if isinstance(out, torch.Tensor) else out
        if not torch.equal(x.detach(), x_before):
            raise Incorrect("mutated_input")
        if not any(graphs):  # finite differences, forward-mode dual numbers: no backward pass possible
            raise Incorrect("not_by_backward")
        if x.grad is not had_grad or x.requires_grad != required:
            # the answer worked on the caller's tensor: call again to see what a second call gives
            again = answer(watched, x)
            if isinstance(first, torch.Tensor) and isinstance(again, torch.Tensor) and not close(again, first):
                raise Incorrect("accumulated_grad")
            raise Incorrect("changed_caller_tensor")
    return {"out": first, "graph": isinstance(out, torch.Tensor) and out.requires_grad}


def _finish(ran: Any, case: Case) -> Any:
    """A result that still carries a graph is named only if it is otherwise right (judged here,
    with the reference, outside the process that ran the answer)."""
    if not isinstance(ran, dict) or set(ran) != {"out", "graph"}:
        return ran  # (only a rewritten run sends anything else: compared as it is, and fails)
    out = ran["out"]
    if ran["graph"] is True and isinstance(out, torch.Tensor) and close(out, jacobian(*case.args), 1e-5, 1e-5):
        raise Incorrect("result_has_graph")
    return out


# --- wrong answers
def _rows(fn, x, vectors, *, create_graph=False):
    """One backward pass per vector, each on a fresh leaf: the vᵀJ for each v, stacked."""
    out = []
    for v in vectors(fn(x.detach())):
        leaf = x.detach().requires_grad_()
        out.append(torch.autograd.grad(fn(leaf), leaf, v, create_graph=create_graph)[0])
    return torch.stack(out)


def _one_hot(y):
    return list(torch.eye(y.numel(), dtype=y.dtype))


def _all_ones(y):
    return [torch.ones_like(y)] * y.numel()


def _one_leaf(fn, x, *, clear):
    leaf = x.detach().requires_grad_()
    y = fn(leaf)
    rows = []
    for v in _one_hot(y):
        y.backward(v, retain_graph=True)
        rows.append(leaf.grad.clone())
        if clear:
            leaf.grad = None
    return torch.stack(rows)


def _one_graph(fn, x):
    leaf = x.detach().requires_grad_()
    y = fn(leaf)
    rows = []
    for v in _one_hot(y):
        leaf.grad = None
        y.backward(v)  # no retain_graph: the second pass finds the graph freed
        rows.append(leaf.grad)
    return torch.stack(rows)


def _central_differences(fn, x, eps=1e-6):
    x = x.detach()
    cols = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in torch.eye(x.numel(), dtype=x.dtype)]
    return torch.stack(cols, dim=1)


# --- declaration
register(Exercise(
    lesson=LESSON, name="jacobian", title="The whole Jacobian, one vector-Jacobian product at a time",
    reference=jacobian, cases=_cases, edge_cases=_EDGE_CASES, run=_run, finish=_finish,
    forbid=_LIBRARY, rule_mistake=_RULE,
    preload=("torch._dynamo",),  # torch.func's first use imports it: not on the clock
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("transposed",
                "Your result is Jᵀ (n x m): one backward pass with a one-hot v gives one *row* of J "
                "(∂yᵢ/∂x for one output i, shaped like x), and you placed each as a column. "
                "J has one row per output.",
                lambda fn, x: _rows(fn, x, _one_hot).T),
        Mistake("ones_vector",
                "Every row of your result is the same: the gradient of y.sum(), i.e. vᵀJ with v = all "
                "ones, which adds J's rows together. Which v makes vᵀJ a single row of J?",
                lambda fn, x: _rows(fn, x, _all_ones)),
        Mistake("accumulated_grad",
                "Your row i is rows 0..i of J added up: the passes share one leaf and `.grad` "
                "accumulates (gradients add up, they are not overwritten). Each row must start from an "
                "empty `.grad`.",
                lambda fn, x: _one_leaf(fn, x, clear=False)),
        Mistake("graph_freed",
                "The second backward pass went through a graph the first one had already freed "
                "(\"Trying to backward through the graph a second time\"). Each pass needs a graph "
                "to go through: build a fresh one (run fn again).",
                _one_graph, match_output=False),
        Mistake("changed_caller_tensor",
                "Your function changed the caller's tensor `x`: afterwards it requires grad or holds "
                "a `.grad`. Work on a fresh leaf that shares x's values.",
                lambda fn, x: _rows(fn, x.requires_grad_(), _one_hot), match_output=False),
        Mistake("result_has_graph",
                "Your result still requires grad: it carries an autograd graph (did you pass "
                "`create_graph=True`, or build it from something that requires grad?). J is a plain "
                "tensor of numbers.",
                lambda fn, x: _rows(fn, x, _one_hot, create_graph=True), match_output=False),
        Mistake("mutated_input",
                "Your code changed `x` in place. Leave the caller's tensor as it was: a fresh leaf "
                "`x.detach()` shares x's memory, so do not change it in place either.",
                lambda fn, x: _rows(fn, x.mul_(1.5), _one_hot), match_output=False),
        Mistake("not_by_backward",
                "Your function never ran `fn` on a tensor that requires grad, so no backward pass can have "
                "built the Jacobian (finite differences? forward-mode dual numbers?). Assemble it from "
                "backward passes, each with its own `gradient=` vector.", _central_differences,
                match_output=False),
        Mistake("library_jacobian",
                "Your function calls the library's Jacobian (or its vjp/jvp): this exercise builds "
                "what it does, from backward passes with a `gradient=` vector.",
                lambda fn, x: torch.autograd.functional.jacobian(fn, x), match_output=False),
    ],
    hints=[
        "One backward pass with gradient=v gives vᵀJ: one number per input, a weighted sum of J's "
        "rows. Which v would make that sum a single row of J, and how many passes do you need?",
        "A v that is 1 at output i and 0 elsewhere picks out row i. One pass per output; each pass "
        "needs its own graph and a .grad that starts empty, and the rows stack into an m x n matrix.",
    ],
))
