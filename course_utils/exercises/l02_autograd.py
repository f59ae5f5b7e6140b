"""Exercises of 02_autograd.

Several checks diagnose *behaviour*, not just outputs: the gradient-descent check watches every
point the learner's loop evaluates ``f`` at and recognises the step rule it used (wrong sign,
gradients never cleared, updates recorded in the graph); the VJP check calls the answer twice
on the same tensor to catch gradients accumulating in the caller's ``.grad``; the custom
``Function`` check compares its backward with the analytic derivative under a random upstream
gradient and then runs ``gradcheck``. Known error messages a learner's code raises
(``Boolean value of Tensor ... is ambiguous``, the in-place-on-a-leaf error, ``does not
require grad``) are turned into named mistakes with targeted advice.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, answer_grad_mode, register

from ._source_rules import names_used, python_loop

LESSON = "02_autograd"


# Feedback for mistakes found by a check's own code (not by matching outputs). The runner shows
# a declared Mistake's message for its id, so the check raises exactly these texts.
_MESSAGES: dict[tuple[str, str], str] = {
    ("dfdx", "used_autograd"): (
        "The exercise says: “computed with a formula (no autograd)”, but your function uses "
        "autograd (`backward()`, `torch.autograd.grad`, `torch.func`...). Apply the product rule "
        "and write the derivative with `torch.sin` and `torch.cos`."),
    ("vjp", "accumulated_grad"): (
        "Calling your function twice on the same tensor gives a different answer the "
        "second time: you turned on `requires_grad` on the caller's `x` and read "
        "`x.grad`, which accumulates across calls. Work on a fresh leaf, "
        "`x = x.detach().requires_grad_()`, or use `torch.autograd.grad(y, x, v)`."),
    ("vjp", "changed_caller_tensor"): (
        "Your function changed the caller's tensor `x`: afterwards it requires grad or "
        "holds a `.grad`. Work on a fresh leaf, `x = x.detach().requires_grad_()`."),
    ("huber", "python_if_on_tensor"): (
        "A Python `if` on a tensor with many elements raised \"Boolean value of Tensor with "
        "more than one value is ambiguous\": `if` picks one branch for the whole tensor. "
        "Choose element by element with `torch.where(condition, a, b)`."),
    ("huber", "in_place_on_input"): (
        "Your code changed the input in place (an op ending in `_`, `+=`, or an indexed "
        "assignment), which autograd forbids on a leaf that requires grad. Compute new "
        "tensors instead (`x.abs()`, not `x.abs_()`)."),
    ("huber", "numpy_detour"): (
        "You called `.numpy()` on a tensor that requires grad. NumPy has no autograd, so "
        "a detour through it cuts the graph (`.detach().numpy()` only hides the error). "
        "Use torch operations throughout: `torch.where`, `x.abs()`, `x**2`."),
    ("second_derivative", "forgot_create_graph"): (
        "The first derivative has no graph of its own, so it cannot be differentiated "
        "again (\"element 0 of tensors does not require grad\"). Ask for one: "
        "`torch.autograd.grad(..., create_graph=True)` for the first derivative."),
    ("second_derivative", "non_scalar_grad"): (
        "`torch.autograd.grad` of a non-scalar raised \"grad can be implicitly created only "
        "for scalar outputs\". Because f works element by element, differentiating the "
        "*sum* of the first derivative gives every element's second derivative "
        "(or pass `grad_outputs=torch.ones_like(...)`)."),
    ("finite_difference_grad", "mutated_input"): (
        "Your function left `x` changed: after nudging an element you did not put it back "
        "exactly. Build the nudged inputs as new tensors (`x + step`, `x - step` with a "
        "`step` that is eps at one position and 0 elsewhere) and leave `x` alone."),
    ("gradient_descent", "wrong_sign"): (
        "Your steps go uphill: you added `lr * grad`. The gradient points towards "
        "increasing f; gradient *descent* subtracts it: `x -= lr * x.grad`."),
    ("gradient_descent", "grad_not_cleared"): (
        "Each of your steps uses the sum of all gradients so far: `.grad` accumulates "
        "across `backward()` calls and your loop never clears it. After the update, "
        "`x.grad.zero_()` (or `x.grad = None`)."),
    ("gradient_descent", "mutated_input"): (
        "Your loop changed the caller's `x0`: you called `requires_grad_()` on it, or updated it "
        "in place (`x0.detach()` shares `x0`'s memory, so updating that changes `x0` too). Start "
        "from a copy: `x = x0.clone().requires_grad_()`."),
    ("gradient_descent", "returned_requires_grad"): (
        "You returned `x` itself, a leaf that still requires grad (and holds a `.grad`): everything "
        "computed from it afterwards is recorded by autograd. Return the final point without a "
        "graph: `x.detach()`."),
    ("gradient_descent", "update_tracked"): (
        "Your update is recorded in the autograd graph: `x = x - lr * x.grad` makes a new "
        "non-leaf tensor whose history grows with every step (memory and time grow, and "
        "gradients would flow through the updates). Update the leaf in place without "
        "tracking: `with torch.no_grad(): x -= lr * x.grad`."),
    ("MySiLU", "not_a_function"): (
        "`MySiLU` must be a subclass of `torch.autograd.Function` with a hand-written `backward`: "
        "`class MySiLU(torch.autograd.Function):` with `forward` and `backward` staticmethods."),
    ("MySiLU", "mutated_input"): (
        "Your forward changed its input in place (`x.mul_(...)`, `x *= ...`). The caller's "
        "tensor is modified and autograd's bookkeeping breaks. Return a new tensor: `x * s`."),
    ("MySiLU", "backward_returned_none"): (
        "Your backward returned None, so no gradient reaches x. Return "
        "`grad_output * (derivative of x·sigmoid(x))`."),
    ("MySiLU", "ignored_grad_output"): (
        "Your backward returns the local derivative but ignores `grad_output`. Autograd "
        "hands backward the gradient of the final result with respect to your output; "
        "multiply by it (chain rule): `return grad_output * local_derivative`."),
    ("MySiLU", "sigmoid_derivative_only"): (
        "Your backward uses the sigmoid's derivative s·(1−s), but the output is x·s: by the "
        "product rule its derivative is s + x·s·(1−s)."),
    ("MySiLU", "wrong_backward"): (
        "Your backward does not return the gradient of x·sigmoid(x) times `grad_output`. "
        "Check it by hand against `torch.autograd.gradcheck(MySiLU.apply, (x,))` with a "
        "float64 `x` that requires grad."),
    ("MySiLU", "failed_gradcheck"): (
        "`torch.autograd.gradcheck` rejects your Function: its backward disagrees with finite "
        "differences of its forward."),
}


def _fail(exercise: str, mistake: str) -> Incorrect:
    return Incorrect(mistake, _MESSAGES[exercise, mistake])


def _close(a: Any, b: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a.detach().to(b.dtype), b.detach(), rtol=rtol, atol=atol)))


def _shape(r: Rand) -> tuple[int, ...]:
    """A random small shape (1-D or 2-D) with at least two elements."""
    if r.integer(0, 2) == 0:
        return (r.integer(2, 4), r.integer(2, 4))
    return (r.integer(2, 12),)


# --------------------------------------------------------------------------- 1. dfdx
def f(x: torch.Tensor) -> torch.Tensor:
    """The function of exercise 1: f(x) = x² · sin(x), element by element."""
    return x**2 * torch.sin(x)


def dfdx_by_autograd(x: torch.Tensor) -> torch.Tensor:
    """What the learner's formula is checked against: autograd's derivative of f."""
    with torch.enable_grad():
        x = x.detach().clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(f(x).sum(), x)
    return grad


_DFDX_SOLUTION = '''
def dfdx(x):
    # product rule: (x²)' · sin(x) + x² · (sin x)'
    return 2 * x * torch.sin(x) + x**2 * torch.cos(x)
'''


# Names that compute a derivative. Not `enable_grad`/`set_grad_enabled`: switching grad mode on
# or off computes nothing (a formula under `set_grad_enabled(False)` is right), and an answer that
# switches it on to differentiate still needs `backward`, `grad` or `autograd`.
_AUTOGRAD_NAMES = {"backward", "grad", "autograd", "func", "requires_grad_",
                   "jacobian", "vjp", "jvp", "hessian", "dfdx_by_autograd", "reference", "vmap"}


def _dfdx_run(answer: Any, case: Case) -> Any:
    """The answer runs under ``torch.no_grad()``: a formula does not care, autograd fails. An
    answer that turns grad mode back on, or uses ``torch.func`` (which ignores an outer
    ``no_grad``), is caught by the names its code uses."""
    if answer is not dfdx_by_autograd:
        if names_used(answer, _AUTOGRAD_NAMES) is not None:
            raise _fail("dfdx", "used_autograd")
    try:
        with torch.no_grad():
            return answer(*case.args, **case.kwargs)
    except RuntimeError as exc:
        if "does not require grad and does not have a grad_fn" in str(exc):
            raise _fail("dfdx", "used_autograd") from None
        raise


def _dfdx_with_backward(x):
    x = x.detach().requires_grad_()
    (x**2 * torch.sin(x)).sum().backward()
    return x.grad


register(Exercise(
    lesson=LESSON, name="dfdx", title="Differentiate f(x) = x² sin(x) by hand, checked against autograd",
    reference=dfdx_by_autograd,
    solution=_DFDX_SOLUTION,
    cases=lambda r: Case((r.randn(*_shape(r)) * 3,)),
    edge_cases=[Case((torch.tensor([0.0, 1.5707964, 3.1415927, -2.0]),), label="0, π/2, π and -2",
                     show_inputs=True),
                Case((torch.tensor([[0.5, -1.0, 2.0], [3.0, -2.5, 1.0]]),), label="a 2x3 x"),
                # "a tensor x of any shape": a 0-d one (math.sin works on it, returning a float),
                # an empty one, a 3-D one, float64, and large values
                Case((torch.tensor(1.25),), label="a 0-d x (a single number)", show_inputs=True),
                Case((torch.zeros(0),), label="an empty x"),
                Case((torch.linspace(-4.0, 4.0, 12).reshape(2, 3, 2),), label="a 2x3x2 x"),
                Case((torch.tensor([0.3, -1.7, 2.9], dtype=torch.float64),), label="a float64 x", show_inputs=True),
                Case((torch.tensor([-40.0, 25.0, 60.5]),), label="large values", show_inputs=True)],
    run=_dfdx_run,
    # float32: the formula and autograd's (2x·sin x + x²·cos x, summed in another order) differ
    # by a few ulp of the largest term (x² ≈ 3600 at x = 60: ulp 2.4e-4 → rtol 1e-5 of |f'|
    # ≈ 3600 is 3.6e-2, far above); every mistake is off by at least one whole term
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("forgot_product_rule",
                "You multiplied the two derivatives (2x · cos x). For a product u·v the derivative "
                "is u'·v + u·v' (the product rule).",
                lambda x: 2 * x * torch.cos(x)),
        Mistake("missing_term",
                "You have only one of the two product-rule terms. f = u·v with u = x², v = sin x "
                "gives f' = u'·v + u·v': add the term with cos(x).",
                lambda x: 2 * x * torch.sin(x)),
        Mistake("sign_error",
                "Check the sign: the derivative of sin(x) is +cos(x) (it is the derivative of "
                "cos(x) that is −sin(x)).",
                lambda x: 2 * x * torch.sin(x) - x**2 * torch.cos(x)),
        Mistake("used_autograd", _MESSAGES["dfdx", "used_autograd"], _dfdx_with_backward, match_output=False),
    ],
    hints=[
        "f(x) = x² · sin(x) is a product: use the product rule (u·v)' = u'·v + u·v'.",
        "u = x², u' = 2x; v = sin(x), v' = cos(x). Write the result with torch.sin and torch.cos; "
        "it works element by element on any shape.",
    ],
))


# --------------------------------------------------------------------------- 2. vjp
def vjp(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_(True)
    y = fn(x)
    y.backward(gradient=v)
    return x.grad


def _vjp_cases(r: Rand) -> Case:
    n = r.integer(2, 6)
    m = r.choice([k for k in range(2, 7) if k != n])
    W = r.randn(m, n)
    b = r.randn(m)
    kind = r.integer(0, 2)
    if kind == 0:
        def fn(x):
            return torch.tanh(W @ x + b)
    elif kind == 1:
        def fn(x):
            return W @ (x**2) + b * x.sum()
    else:
        def fn(x):
            return torch.sin(W @ x) * x.sum()
    return Case((fn, r.randn(n), r.randn(m)))


def _vjp_run(answer: Any, case: Case) -> Any:
    fn, x, v = case.args
    had_grad, required = x.grad, x.requires_grad  # a caller's x may be a leaf that requires grad
    v_before = v.detach().clone()
    with answer_grad_mode():
        out = answer(fn, x, v)
        first = out.detach().clone() if isinstance(out, torch.Tensor) else out
        if not torch.equal(v.detach(), v_before):
            raise Incorrect("mutated_input", "Your code changed `v` in place. Leave the caller's tensors as "
                            "they were: `y.backward(gradient=v)` reads v without changing it.")
        if isinstance(out, torch.Tensor) and out.requires_grad and _close(out, vjp(fn, x, v), 1e-5, 1e-5):
            raise Incorrect("result_has_graph", "Your result still requires grad: it carries an autograd "
                            "graph (did you pass `create_graph=True`, or return something computed from "
                            "`x`?). vᵀJ is a plain tensor: `x.grad`, or `torch.autograd.grad(y, x, v)[0]`.")
        if x.grad is not had_grad or x.requires_grad != required:
            # the answer worked on the caller's tensor: call again to see what a second call gives
            again = answer(fn, x, v)
            if isinstance(first, torch.Tensor) and isinstance(again, torch.Tensor) and not _close(again, first):
                raise _fail("vjp", "accumulated_grad")
            raise _fail("vjp", "changed_caller_tensor")
    return first


def _grad_of_sum(fn, x, v):
    x = x.detach().requires_grad_()
    fn(x).sum().backward()
    return x.grad


def _vjp_on_caller(fn, x, v):
    x.requires_grad_()
    fn(x).backward(v)
    return x.grad


_W32 = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])


def _vjp_fixed_linear(x):
    return _W32.to(x.dtype) @ x


def _vjp_fixed_nonlinear(x):
    return torch.stack([x[0] * x[1], torch.sin(x[1]) + x[0] ** 2, torch.exp(x[0])])


register(Exercise(
    lesson=LESSON, name="vjp", title="A vector-Jacobian product with backward(gradient=v)",
    reference=vjp,
    cases=_vjp_cases,
    edge_cases=[
        # v not all ones (ignoring v must show), m = 2 < n = 3 (J @ v, J vs Jᵀ cannot broadcast)
        Case((_vjp_fixed_linear, torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, -1.0])),
             label="fn(x) = W x with W 2x3, v = (2, -1)"),
        # n = 2 < m = 3, nonlinear
        Case((_vjp_fixed_nonlinear, torch.tensor([0.5, -1.5]), torch.tensor([0.25, 3.0, -1.0])),
             label="fn(x) = (x0·x1, sin x1 + x0², exp x0), v = (0.25, 3, -1)"),
        # the caller's x is itself a leaf that requires grad (a parameter): it must keep no .grad
        Case((_vjp_fixed_linear, torch.tensor([0.5, -0.5, 2.0], requires_grad=True), torch.tensor([1.0, 4.0])),
             label="x that already requires grad"),
        Case((_vjp_fixed_linear, torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64),
              torch.tensor([-3.0, 0.0], dtype=torch.float64)), label="float64 x and v with a zero in v"),
    ],
    run=_vjp_run,
    compare=Compare(rtol=1e-5, atol=1e-5),
    mistakes=[
        Mistake("ignored_v",
                "Your result is the gradient of `y.sum()`, i.e. vᵀJ with v = all ones. Weight the "
                "outputs by v: `y.backward(gradient=v)` (or `torch.autograd.grad(y, x, v)`).",
                _grad_of_sum),
        Mistake("returned_jacobian",
                "You returned the whole Jacobian J (one row per output). The exercise asks for "
                "vᵀJ: one number per input element, shaped like x. Multiply `v @ J`, or better, let "
                "backward compute it without building J.",
                lambda fn, x, v: torch.autograd.functional.jacobian(fn, x)),
        Mistake("accumulated_grad", _MESSAGES["vjp", "accumulated_grad"],
                _vjp_on_caller, match_output=False),
        Mistake("changed_caller_tensor", _MESSAGES["vjp", "changed_caller_tensor"], match_output=False),
    ],
    hints=[
        "`y = fn(x)` is a vector, so `y.backward()` alone raises \"grad can be implicitly created "
        "only for scalar outputs\". Pass the vector v: `y.backward(gradient=v)`.",
        "Start from a leaf that requires grad: `x = x.detach().requires_grad_()`; after "
        "`y.backward(gradient=v)` the answer is in `x.grad`.",
    ],
))



# --------------------------------------------------------------------------- 3. huber
def huber(x: torch.Tensor, delta: float) -> torch.Tensor:
    return torch.where(x.abs() <= delta, 0.5 * x**2, delta * (x.abs() - 0.5 * delta))


def _autograd_errors(answer: Any, *args: Any) -> Any:
    """Call the answer with grad mode on; turn autograd errors we know into named mistakes."""
    try:
        with answer_grad_mode():
            return answer(*args)
    except RuntimeError as exc:
        msg = str(exc)
        if "Boolean value of Tensor with more than one" in msg:
            raise _fail("huber", "python_if_on_tensor") from None
        if "leaf Variable that requires grad is being used in an in-place operation" in msg:
            raise _fail("huber", "in_place_on_input") from None
        if "Can't call numpy() on Tensor that requires grad" in msg:
            raise _fail("huber", "numpy_detour") from None
        raise


class _RuleBroken(Exception):
    pass


class _Guarded(torch.Tensor):
    """A tensor that refuses to become a Python bool, number, list or NumPy array: what the
    huber text forbids (a Python `if` on the tensor, `.item()`, NumPy). Results of torch ops on
    it are _Guarded too, so an `if` on `x.abs() <= delta` or on one element is seen."""

    def __bool__(self):
        raise _RuleBroken("if")

    def item(self):
        raise _RuleBroken("item")

    def tolist(self):
        raise _RuleBroken("item")

    def __float__(self):
        raise _RuleBroken("item")

    def numpy(self, *args, **kwargs):
        raise _RuleBroken("numpy")

    def __array__(self, *args, **kwargs):
        raise _RuleBroken("numpy")


_HUBER_RULE = "No Python `if` on the tensor, no `.item()`, no NumPy, no in-place changes to `x`."
_HUBER_WHAT = {
    "if": "a Python `if` (or `and`/`or`/`bool()`) decides on a tensor value",
    "item": "it turns tensor values into Python numbers (`.item()`, `float()`, `.tolist()`)",
    "numpy": "it goes through NumPy",
}


def _huber_rules_probe(answer: Any, r: Rand) -> None:
    x = (r.randn(3, 4) * 2).requires_grad_(True)
    guarded = x.as_subclass(_Guarded)
    try:
        with answer_grad_mode():
            answer(guarded, 1.0)
    except _RuleBroken as broken:
        raise Incorrect("rule_broken", f"The exercise says: “{_HUBER_RULE}” Your code gives right numbers, "
                        f"but {_HUBER_WHAT[str(broken)]}: on a GPU or inside a compiled model that is slow "
                        "or impossible (and Python numbers or NumPy cut the graph). Choose per element with "
                        "`torch.where(x.abs() <= delta, inside, outside)`.") from None
    except Exception:  # noqa: BLE001 - errors of the answer itself were reported by the cases
        return


register(Exercise(
    lesson=LESSON, name="huber", title="The Huber function, differentiable end to end",
    reference=huber,
    cases=lambda r: Case((r.randn(*_shape(r)).mul_(2).requires_grad_(), round(r.uniform(0.5, 2.0), 3))),
    edge_cases=[Case((torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0], requires_grad=True), 1.0),
                     label="x from -3 to 3 with delta = 1"),
                Case((torch.tensor([[-2.0, 0.3, 1.5], [0.8, -0.1, 4.0]], requires_grad=True), 1.2),
                     label="a 2x3 x with delta = 1.2"),
                # exactly at ±delta (both pieces meet), a 0-d x, float64 and large |x|
                Case((torch.tensor([-0.75, 0.75, 0.7, -0.8], requires_grad=True), 0.75),
                     label="x at and next to ±delta = 0.75", show_inputs=True),
                Case((torch.tensor(-2.5, requires_grad=True), 0.5), label="a 0-d x = -2.5 with delta = 0.5"),
                Case((torch.tensor([[1e3, -0.2], [-1e4, 0.05]], dtype=torch.float64, requires_grad=True), 2.0),
                     label="a float64 x with large values, delta = 2"),
                Case((torch.zeros(0, requires_grad=True), 1.0), label="an empty x")],
    run=lambda answer, case: _autograd_errors(answer, *case.args),
    probes=[_huber_rules_probe],
    # the pieces are one or two float ops: a different but valid order of operations (a
    # clamp-based formula, F.huber_loss) differs by a few ulp; assert_close's float defaults
    compare=Compare(grad=True),
    mistakes=[
        Mistake("python_if_on_tensor", _MESSAGES["huber", "python_if_on_tensor"],
                lambda x, delta: (0.5 * x**2) if x.abs() <= delta else delta * (x.abs() - 0.5 * delta),
                match_output=False),
        Mistake("graph_cut",
                "Your result has the right values but is not connected to `x`'s graph, so no "
                "gradient can flow back. Building it from Python numbers (`.item()`, `.tolist()`, "
                "then `torch.tensor(...)`) or through NumPy makes a brand-new tensor with no "
                "history. Stay in torch: `torch.where(x.abs() <= delta, ..., ...)`.",
                lambda x, delta: torch.tensor(
                    [0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta) for v in x.flatten().tolist()]
                ).reshape(x.shape),
                match_output=False),
        Mistake("numpy_detour", _MESSAGES["huber", "numpy_detour"],
                lambda x, delta: torch.from_numpy(abs(x.numpy())), match_output=False),
        Mistake("in_place_on_input", _MESSAGES["huber", "in_place_on_input"],
                lambda x, delta: torch.where(x.abs_() <= delta, 0.5 * x**2, delta * (x - 0.5 * delta)),
                match_output=False),
        Mistake("missing_offset",
                "Outside [-delta, delta] the Huber function is delta·(|x| − delta/2): you left out "
                "the − delta/2, so the two pieces do not meet at |x| = delta.",
                lambda x, delta: torch.where(x.abs() <= delta, 0.5 * x**2, delta * x.abs())),
        Mistake("missing_half",
                "Inside [-delta, delta] the Huber function is x²/2, not x²: you dropped the 1/2.",
                lambda x, delta: torch.where(x.abs() <= delta, x**2, delta * (x.abs() - 0.5 * delta))),
    ],
    hints=[
        "Compute both pieces for every element and pick one per element with "
        "`torch.where(x.abs() <= delta, inside, outside)`.",
        "inside = `0.5 * x**2`, outside = `delta * (x.abs() - 0.5 * delta)`. No `if`, no `.item()`, "
        "no in-place ops: all of them break either the code or the graph.",
    ],
))


# --------------------------------------------------------------------------- 4. second derivative
def second_derivative(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_(True)
    (dfdx,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (d2fdx2,) = torch.autograd.grad(dfdx.sum(), x)
    return d2fdx2


def _elementwise_fn(r: Rand) -> Callable[[torch.Tensor], torch.Tensor]:
    a = round(r.uniform(0.5, 1.5), 3)
    kind = r.integer(0, 4)
    if kind == 0:
        return lambda x: a * x**3 - 2 * x
    if kind == 1:
        return lambda x: torch.sin(a * x) * x
    if kind == 2:
        return lambda x: torch.exp(-a * x**2)
    if kind == 3:
        return lambda x: torch.tanh(a * x)
    return lambda x: x**2 * torch.cos(a * x)


def _second_run(answer: Any, case: Case) -> Any:
    fn, x = case.args
    try:
        with answer_grad_mode():
            out = answer(*case.args)
        if x.requires_grad or x.grad is not None:
            raise Incorrect("changed_caller_tensor", "Your function changed the caller's `x`: afterwards it "
                            "requires grad (or holds a `.grad`). The text says x arrives without "
                            "`requires_grad`; work on a fresh leaf: `x = x.detach().requires_grad_()`.")
        if answer is not second_derivative and names_used(answer, {"grad", "backward", "hessian", "jacobian", "func",
                                                                   "vmap", "jvp", "vjp", "hvp"}) is None:
            raise Incorrect("no_autograd", "This exercise is “Second derivatives with torch.autograd.grad”: your "
                            "function never calls autograd (a finite difference or a formula instead?). Use "
                            "`torch.autograd.grad(..., create_graph=True)` twice.")
        if isinstance(out, torch.Tensor) and out.requires_grad and _close(out, second_derivative(fn, x), 1e-4, 1e-5):
            raise Incorrect("result_has_graph", "Your result still requires grad: it carries an autograd "
                            "graph. Only the *first* `torch.autograd.grad` needs `create_graph=True`; "
                            "the second one returns a plain tensor (or return `.detach()`).")
        return out
    except RuntimeError as exc:
        msg = str(exc)
        if "does not require grad and does not have a grad_fn" in msg:
            raise _fail("second_derivative", "forgot_create_graph") from None
        if "grad can be implicitly created only for scalar outputs" in msg:
            raise _fail("second_derivative", "non_scalar_grad") from None
        raise


def _accumulating_second(fn, x):
    x = x.detach().requires_grad_(True)
    fn(x).sum().backward(create_graph=True)
    x.grad.sum().backward()
    return x.grad


register(Exercise(
    lesson=LESSON, name="second_derivative", title="Second derivatives with torch.autograd.grad",
    reference=second_derivative,
    cases=lambda r: Case((_elementwise_fn(r), r.randn(*_shape(r)) * 1.5)),
    edge_cases=[Case((lambda x: x**3, torch.tensor([-2.0, 0.0, 1.0, 3.0])), label="f(x) = x³ at -2, 0, 1, 3"),
                Case((lambda x: x * torch.sin(x), torch.tensor([[0.5, -1.0, 2.0], [3.0, -2.5, 1.0]])),
                     label="f(x) = x·sin(x) on a 2x3 x"),
                Case((torch.tanh, torch.tensor(0.7)), label="f = tanh on a 0-d x = 0.7"),
                Case((lambda x: torch.exp(-x**2), torch.linspace(-2.0, 2.0, 8).reshape(2, 2, 2)),
                     label="f(x) = exp(-x²) on a 2x2x2 x"),
                Case((lambda x: x**4 / 12, torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64).T),
                     label="f(x) = x⁴/12 on a transposed (non-contiguous) float64 x")],
    run=_second_run,
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("forgot_create_graph", _MESSAGES["second_derivative", "forgot_create_graph"],
                lambda fn, x: torch.autograd.grad(
                    torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x)[0].sum(), x)[0],
                match_output=False),
        Mistake("non_scalar_grad", _MESSAGES["second_derivative", "non_scalar_grad"],
                lambda fn, x: torch.autograd.grad(
                    torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x, create_graph=True)[0], x)[0],
                match_output=False),
        Mistake("first_derivative",
                "You returned the first derivative. Differentiate it once more: the first "
                "`torch.autograd.grad(..., create_graph=True)` result is itself a function of x.",
                lambda fn, x: torch.autograd.grad(fn(x := x.detach().requires_grad_()).sum(), x)[0]),
        Mistake("accumulated_grad",
                "Your result is f' + f'': the second `backward()` added its gradient to the first "
                "one in `x.grad` (gradients accumulate). Use `torch.autograd.grad`, which returns "
                "gradients instead of adding them to `.grad`.",
                _accumulating_second),
    ],
    hints=[
        "`torch.autograd.grad(outputs, inputs)` returns a tuple of gradients. With "
        "`create_graph=True` the returned gradient has a graph, so you can differentiate it again.",
        "`x = x.detach().requires_grad_()`; `(d1,) = torch.autograd.grad(fn(x).sum(), x, "
        "create_graph=True)`; then `(d2,) = torch.autograd.grad(d1.sum(), x)`.",
    ],
))


# --------------------------------------------------------------------------- 5. finite differences
def finite_difference_grad(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, eps: float) -> torch.Tensor:
    # torch.zeros(x.shape), not zeros_like(x): zeros_like copies a transposed x's strides, and
    # .view(-1) of a non-contiguous tensor raises
    grad = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    for i in range(x.numel()):
        step = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
    return grad





def _scalar_fn(r: Rand, shape: tuple[int, ...]) -> Callable[[torch.Tensor], torch.Tensor]:
    w = r.randn(*shape, dtype=torch.float64)
    kind = r.integer(0, 2)
    if kind == 0:
        return lambda x: (w * torch.sin(x)).sum() + (x**3).sum() / 3
    if kind == 1:
        return lambda x: torch.logsumexp((w * x).reshape(-1), dim=0) + (x**3).sum() / 6
    return lambda x: (x**2).sum() * torch.tanh((w * x).sum()) + torch.exp(0.5 * x).sum()


def _fd_cases(r: Rand) -> Case:
    shape = _shape(r)
    if len(shape) == 1:
        shape = (min(shape[0], 8),)
    return Case((_scalar_fn(r, shape), r.randn(*shape, dtype=torch.float64), r.choice([1e-2, 5e-3])))


def _fd_fixed_fn(x: torch.Tensor) -> torch.Tensor:
    w = torch.arange(1.0, x.numel() + 1, dtype=x.dtype).reshape(x.shape)
    return (x**3).sum() / 3 + (torch.sin(x) * w).sum()


def _fd_run(answer: Any, case: Case) -> Any:
    fn, x, eps = case.args
    before = x.clone()
    out = answer(fn, x, eps)
    if not torch.equal(x, before):
        raise _fail("finite_difference_grad", "mutated_input")
    if answer is not finite_difference_grad and isinstance(out, torch.Tensor) and out.shape == x.shape:
        # the exact gradient to float64 precision (1e-12) is evidence of autograd; a five-point
        # stencil or a tiny step is only close to it (1e-8..1e-10) and is reported as wrong values
        exact = _with_autograd(fn, before, eps)
        if _close(out, exact, 1e-12, 1e-13) and not _close(out, finite_difference_grad(fn, before, eps), 1e-7, 1e-9):
            raise Incorrect("used_autograd", _FD_AUTOGRAD)
    return out


def _forward_difference(fn, x, eps):
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (fn(x + step) - fn(x)) / eps
    return grad


def _half_denominator(fn, x, eps):
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (fn(x + step) - fn(x - step)) / eps
    return grad


def _nudge_in_place(fn, x, eps):
    grad = torch.zeros_like(x)
    flat = x.view(-1)
    for i in range(x.numel()):
        flat[i] += eps
        up = fn(x)
        flat[i] -= 2 * eps
        down = fn(x)
        grad.view(-1)[i] = (up - down) / (2 * eps)
    return grad


def _with_autograd(fn, x, eps):
    with torch.enable_grad():
        x = x.detach().requires_grad_()
        return torch.autograd.grad(fn(x), x)[0]


_FD_AUTOGRAD = ("Your result is the exact gradient (to float64 precision), not the central "
                "difference with the given `eps`: you used autograd, and this exercise builds the "
                "numerical check that autograd is tested against. Compute "
                "(fn(x + step) − fn(x − step)) / (2·eps) with the `eps` you are given.")


register(Exercise(
    lesson=LESSON, name="finite_difference_grad", title="A finite-difference gradient checker",
    reference=finite_difference_grad,
    cases=_fd_cases,
    edge_cases=[Case((_fd_fixed_fn, torch.tensor([[0.5, -1.0, 2.0], [1.5, -0.5, 0.25]], dtype=torch.float64), 1e-2),
                     label="fn(x) = sum(x³)/3 + sum(sin(x)·[1..6]) on a 2x3 x, eps = 0.01"),
                # "1-D or 2-D": also one element, and a transposed (non-contiguous) 2-D x
                Case((_fd_fixed_fn, torch.tensor([0.7], dtype=torch.float64), 5e-3),
                     label="a 1-D x with one element, eps = 0.005"),
                # (no transposed x: this exercise is about central differences; memory layout is
                # lesson 01's, and the hint's `.view(-1)` on `zeros_like(x)` would refuse one)
                ],
    run=_fd_run,
    # central differences agree with each other to ~1e-13 in float64; forward differences and
    # the exact (autograd) gradient differ from them by ~1e-4 and ~1e-5
    compare=Compare(rtol=1e-7, atol=1e-9),
    timeout=5.0,
    mistakes=[
        Mistake("forward_difference",
                "You used the one-sided difference (f(x+eps) − f(x)) / eps. Its error shrinks only "
                "like eps; use the central difference (f(x+eps) − f(x−eps)) / (2·eps), whose error "
                "shrinks like eps².",
                _forward_difference),
        Mistake("wrong_denominator",
                "Your values are twice too large: the two nudged points are 2·eps apart, so divide "
                "by 2·eps.",
                _half_denominator),
        Mistake("nudged_all_at_once",
                "You nudged every element at once, which measures the slope along the all-ones "
                "direction (one number), not each partial derivative. Nudge one element at a time.",
                lambda fn, x, eps: torch.full_like(x, float((fn(x + eps) - fn(x - eps)) / (2 * eps)))),
        Mistake("mutated_input", _MESSAGES["finite_difference_grad", "mutated_input"], _nudge_in_place, match_output=False),
        Mistake("used_autograd", _FD_AUTOGRAD, _with_autograd, match_output=False),
    ],
    hints=[
        "For each position i: make `step = torch.zeros_like(x)`, set the i-th element of "
        "`step.view(-1)` to eps, and evaluate `(fn(x + step) - fn(x - step)) / (2 * eps)`.",
        "Store the results in `grad = torch.zeros_like(x)` through `grad.view(-1)[i] = ...`, so a "
        "2-D `x` gets a 2-D gradient. `x.numel()` is the number of positions.",
    ],
))


# --------------------------------------------------------------------------- 6. gradient descent
def gradient_descent(fn: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, lr: float,
                     num_steps: int) -> torch.Tensor:
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        loss = fn(x)
        loss.backward()
        with torch.no_grad():
            x -= lr * x.grad
        x.grad.zero_()
    return x.detach()


def _gd_cases(r: Rand) -> Case:
    d = r.integer(1, 4)
    a = r.rand(d) * 1.5 + 0.5
    c = r.randn(d)
    b = round(r.uniform(0.0, 0.5), 3)

    def fn(x):
        return (a * (x - c) ** 2).sum() + b * torch.sin(3 * x).sum()

    return Case((fn, r.randn(d) * 2, round(r.uniform(0.02, 0.2), 3), r.integer(3, 15)))


def _quadratic(x):
    return (x**2).sum()


def _gd_fixed_fn(x):
    return ((x - 1) ** 2).sum() + 0.3 * torch.sin(3 * x).sum()


def _grad_at(fn, point: torch.Tensor) -> torch.Tensor | None:
    try:
        with torch.enable_grad():
            p = point.detach().clone().requires_grad_(True)
            (g,) = torch.autograd.grad(fn(p), p)
        return g
    except Exception:  # noqa: BLE001 - a point we cannot differentiate at says nothing
        return None


def _diagnose_steps(fn, points: list[torch.Tensor], lr: float) -> None:
    """Recognise the update rule from consecutive points the learner evaluated fn at."""
    pts: list[torch.Tensor] = []
    for p in points:
        if not pts or not (p.shape == pts[-1].shape and torch.equal(p, pts[-1])):
            pts.append(p)
    total = None
    for k in range(min(len(pts) - 1, 5)):  # the rules differ from the first or second step on
        g = _grad_at(fn, pts[k])
        if g is None or pts[k + 1].shape != g.shape:
            return
        total = g if total is None else total + g
        step = pts[k + 1] - pts[k]
        if _close(step, -lr * g, 1e-3, 1e-5):
            continue
        if _close(step, lr * g, 1e-3, 1e-5):
            raise _fail("gradient_descent", "wrong_sign")
        if k >= 1 and _close(step, -lr * total, 1e-3, 1e-5):
            raise _fail("gradient_descent", "grad_not_cleared")
        return  # some other rule: the comparison of the final x reports it


_GD_RULE = "take `num_steps` steps x ← x − lr · ∇fn(x) using `backward()`"


def _gd_run(answer: Any, case: Case) -> Any:
    fn, x0, lr, num_steps = case.args
    seen: list[tuple[torch.Tensor, bool]] = []

    def watched(x):
        if isinstance(x, torch.Tensor):
            seen.append((x.detach().clone(), x.grad_fn is not None))
        return fn(x)

    with answer_grad_mode():
        out = answer(watched, x0, lr, num_steps)
    if x0.requires_grad or x0.grad is not None:
        raise _fail("gradient_descent", "mutated_input")
    if any(tracked for _, tracked in seen) or (isinstance(out, torch.Tensor) and out.grad_fn is not None):
        raise _fail("gradient_descent", "update_tracked")
    _diagnose_steps(fn, [p for p, _ in seen], lr)
    if isinstance(out, torch.Tensor) and out.requires_grad:
        raise _fail("gradient_descent", "returned_requires_grad")
    if answer is not gradient_descent and num_steps > 0 and names_used(answer, {"backward", "step"}) is None:
        raise Incorrect("no_backward", f"The exercise says: “{_GD_RULE}”. Your loop never calls "
                        "`backward()` (with `torch.autograd.grad`, `torch.func` or a derivative worked "
                        "out by hand it skips what this exercise practises): `fn(x).backward()`, then "
                        "read `x.grad`.")
    return out


def _gd_tracked(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        x.retain_grad()
        fn(x).backward()
        x = x - lr * x.grad
    return x


def _gd_never_cleared(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        fn(x).backward()
        with torch.no_grad():
            x -= lr * x.grad
    return x.detach()


def _gd_uphill(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        fn(x).backward()
        with torch.no_grad():
            x += lr * x.grad
        x.grad = None
    return x.detach()


def _gd_not_detached(fn, x0, lr, num_steps):
    x = x0.clone().requires_grad_(True)
    for _ in range(num_steps):
        fn(x).backward()
        with torch.no_grad():
            x -= lr * x.grad
        x.grad.zero_()
    return x


def _gd_on_x0(fn, x0, lr, num_steps):
    x = x0.requires_grad_(True)
    for _ in range(num_steps):
        fn(x).backward()
        with torch.no_grad():
            x -= lr * x.grad
        x.grad = None
    return x.detach().clone()


register(Exercise(
    lesson=LESSON, name="gradient_descent", title="Gradient descent by hand: backward, no_grad update, clear",
    reference=gradient_descent,
    cases=_gd_cases,
    edge_cases=[Case((_quadratic, torch.tensor([3.0, -2.0]), 0.25, 4), label="f(x) = sum(x²) from (3, -2), lr 0.25, 4 steps"),
                # one step exactly: an off-by-one loop shows; the sin term makes the steps differ
                Case((_gd_fixed_fn, torch.tensor([1.5]), 0.1, 1), label="a 1-D x0 with one element, 1 step"),
                Case((_gd_fixed_fn, torch.tensor([0.5, -1.0, 2.0]), 0.05, 7),
                     label="f(x) = sum((x-1)² + 0.3·sin 3x) from (0.5, -1, 2), lr 0.05, 7 steps"),
                # no step at all: the result is (a copy of) x0, without a graph
                Case((_gd_fixed_fn, torch.tensor([2.0, -3.0]), 0.1, 0), label="num_steps = 0")],
    run=_gd_run,
    # `torch.optim.SGD(...)` (a valid answer) imports torch._dynamo on first construction:
    # seconds on a busy machine, which must not count against the learner's time limit
    preload=("torch._dynamo",),
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("update_tracked", _MESSAGES["gradient_descent", "update_tracked"], _gd_tracked, match_output=False),
        Mistake("grad_not_cleared", _MESSAGES["gradient_descent", "grad_not_cleared"], _gd_never_cleared, match_output=False),
        Mistake("wrong_sign", _MESSAGES["gradient_descent", "wrong_sign"], _gd_uphill, match_output=False),
        Mistake("mutated_input", _MESSAGES["gradient_descent", "mutated_input"], _gd_on_x0, match_output=False),
        Mistake("returned_requires_grad", _MESSAGES["gradient_descent", "returned_requires_grad"],
                _gd_not_detached, match_output=False),
    ],
    hints=[
        "Start from a copy that requires grad: `x = x0.clone().requires_grad_()`. Each step: "
        "`loss = fn(x)`, `loss.backward()`, update, clear.",
        "Update without recording it in the graph: `with torch.no_grad(): x -= lr * x.grad`, then "
        "`x.grad.zero_()`. Return `x.detach()`.",
    ],
))


# --------------------------------------------------------------------------- 7. custom Function
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



def _silu_cases(r: Rand) -> Case:
    shape = _shape(r)
    x = (r.randn(*shape, dtype=torch.float64) * 2).requires_grad_(True)
    return Case((x,), {"upstream": r.randn(*shape, dtype=torch.float64)})


def _silu_run(answer: Any, case: Case) -> Any:
    (x,) = case.args
    upstream = case.kwargs["upstream"]
    if not (isinstance(answer, type) and issubclass(answer, torch.autograd.Function)):
        raise _fail("MySiLU", "not_a_function")

    before = x.detach().clone()
    with answer_grad_mode():
        y = answer.apply(x)
        if not torch.equal(x.detach(), before):
            raise _fail("MySiLU", "mutated_input")
        xd = before
        s = torch.sigmoid(xd)
        if not (isinstance(y, torch.Tensor) and _close(y, xd * s, 1e-7, 1e-9)):
            return y  # a wrong forward: the output comparison reports it
        if y.dtype == xd.dtype and not _close(y, xd * s, 1e-12, 1e-15):
            # right to float32 precision only: gradcheck would fail and blame the backward
            raise Incorrect("imprecise_forward", "Your forward is only about float32-accurate on a float64 "
                            "input (a `.float()` somewhere?), so finite differences of it, as gradcheck "
                            "takes them, are wrong. Compute in the input's dtype: `x * torch.sigmoid(x)`.")
        if y.grad_fn is None:
            return y
        upstream_before = upstream.clone()
        (gx,) = torch.autograd.grad(y, x, upstream, retain_graph=True, allow_unused=True)
        if not torch.equal(upstream, upstream_before):
            raise Incorrect("mutated_grad_output", "Your backward changed `grad_output` in place (`g.mul_(...)`, "
                            "`g *= ...`): that tensor belongs to autograd (or to the caller who passed "
                            "`grad_outputs`). Return a new tensor: `grad_output * local_derivative`.")
    local = s * (1 + xd * (1 - s))
    if gx is None:
        raise _fail("MySiLU", "backward_returned_none")
    if not _close(gx, upstream * local, 1e-7, 1e-9):
        if _close(gx, local, 1e-7, 1e-9):
            raise _fail("MySiLU", "ignored_grad_output")
        if _close(gx, upstream * s * (1 - s), 1e-7, 1e-9):
            raise _fail("MySiLU", "sigmoid_derivative_only")
        raise _fail("MySiLU", "wrong_backward")
    probe = before.clone().requires_grad_(True)
    if not torch.autograd.gradcheck(answer.apply, (probe,), raise_exception=False):
        raise _fail("MySiLU", "failed_gradcheck")
    if answer is not MySiLU:
        if issubclass(answer, MySiLU):
            raise Incorrect("used_reference", "Your class inherits from the course's reference `MySiLU`; "
                            "write your own `forward` and `backward`.")
        used = names_used(answer.backward, {"autograd", "silu", "silu_backward", "enable_grad", "vjp", "func",
                                            "set_grad_enabled"})
        if used is not None:
            raise Incorrect("backward_not_by_hand", "The exercise says: a `torch.autograd.Function` “whose "
                            "`backward` returns the correct gradient”, written by hand. Your backward uses "
                            f"`{used}`, so autograd does the work. Use the product rule: "
                            "`grad_output * (s + x * s * (1 - s))` with `s = torch.sigmoid(x)`.")
    return y


class _SiLUIgnoresUpstream(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return s * (1 + x * (1 - s))


class _SiLUSigmoidGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * s * (1 - s)


class _SiLUInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return x.mul_(s)

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * s


class _SigmoidNotSiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, grad_output):
        (s,) = ctx.saved_tensors
        return grad_output * s * (1 - s)


class _SiLUModuleNotFunction:
    """Not a Function: autograd differentiates ``F.silu`` itself, no backward is written."""

    apply = staticmethod(torch.nn.functional.silu)


register(Exercise(
    lesson=LESSON, name="MySiLU", title="A custom autograd.Function for SiLU that passes gradcheck",
    reference=MySiLU, kind="class", arg_names=["x"],  # a Function's signature is (*args, **kwargs)
    cases=_silu_cases,
    edge_cases=[Case((torch.tensor([-30.0, -1.0, 0.0, 1.0, 30.0], dtype=torch.float64, requires_grad=True),),
                     {"upstream": torch.tensor([0.5, -1.0, 2.0, 1.5, -0.5], dtype=torch.float64)},
                     label="x = -30, -1, 0, 1, 30"),
                Case((torch.tensor(0.75, dtype=torch.float64, requires_grad=True),),
                     {"upstream": torch.tensor(-2.0, dtype=torch.float64)}, label="a 0-d x = 0.75"),
                Case((torch.tensor([[1e-3, -4.0], [8.0, -1e-3]], dtype=torch.float64, requires_grad=True),),
                     {"upstream": torch.tensor([[1.0, 0.0], [-3.0, 2.5]], dtype=torch.float64)},
                     label="a 2x2 x, an upstream gradient with a zero")],
    run=_silu_run,
    timeout=6.0,  # gradcheck on every case; 3 s was too tight on a busy 2-core machine
    compare=Compare(grad=True, rtol=1e-7, atol=1e-9),
    mistakes=[
        Mistake("ignored_grad_output", _MESSAGES["MySiLU", "ignored_grad_output"], _SiLUIgnoresUpstream, match_output=False),
        Mistake("sigmoid_derivative_only", _MESSAGES["MySiLU", "sigmoid_derivative_only"], _SiLUSigmoidGrad, match_output=False),
        Mistake("mutated_input", _MESSAGES["MySiLU", "mutated_input"], _SiLUInPlace, match_output=False),
        Mistake("wrong_forward",
                "Your forward returns sigmoid(x). SiLU is x · sigmoid(x).",
                _SigmoidNotSiLU),
        Mistake("wrong_backward", _MESSAGES["MySiLU", "wrong_backward"], match_output=False),
        Mistake("not_a_function", _MESSAGES["MySiLU", "not_a_function"], _SiLUModuleNotFunction, match_output=False),
        Mistake("backward_returned_none", _MESSAGES["MySiLU", "backward_returned_none"], match_output=False),
        Mistake("failed_gradcheck", _MESSAGES["MySiLU", "failed_gradcheck"], match_output=False),
    ],
    hints=[
        "forward: `s = torch.sigmoid(x)`, `ctx.save_for_backward(x, s)`, return `x * s`. "
        "backward gets `grad_output` and reads `x, s = ctx.saved_tensors`.",
        "d/dx [x·s(x)] = s + x·s·(1−s) (product rule, with s' = s·(1−s)). backward returns "
        "`grad_output * (s + x * s * (1 - s))`.",
    ],
))
