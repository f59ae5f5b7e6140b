"""Compare a learner's output with the reference output, one property at a time.

Order for tensors: type -> device -> dtype -> shape -> autograd graph -> NaN -> values
(``torch.testing.assert_close``'s tolerance rule). The first difference is reported as a
:class:`Problem` with a generic mistake id; the expected *values* of a case are never put in
a message (shapes, dtypes and devices are).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import torch

from .spec import Compare


@dataclass
class Problem:
    mistake: str
    message: str


def describe(obj: Any) -> str:
    """A short, value-free description of an object, e.g. ``tensor(3, 4) float32``."""
    if isinstance(obj, torch.Tensor):
        shape = tuple(obj.shape)
        dev = "" if obj.device.type == "cpu" else f" on {obj.device}"
        return f"tensor of shape {shape}, {str(obj.dtype).replace('torch.', '')}{dev}"
    if obj is None:
        return "None"
    if isinstance(obj, (list, tuple)):
        return f"{type(obj).__name__} of length {len(obj)}"
    return type(obj).__name__


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _not_a_tensor(got: Any, path: str) -> Problem | None:
    """Why ``got`` is not the tensor asked for (``None`` when it is one)."""
    if isinstance(got, torch.Tensor):
        return None
    if got is None:
        return Problem("returned_none", f"{path} is None. Did you forget a `return` statement?")
    if (type(got).__module__ + ".").startswith("numpy."):
        return Problem(
            "wrong_type",
            f"{path} is a NumPy array; return a torch.Tensor (stay in torch, or convert with "
            "`torch.from_numpy`).",
        )
    if isinstance(got, (list, tuple)):
        return Problem(
            "wrong_type",
            f"{path} is a Python {type(got).__name__}; return a single torch.Tensor "
            "(`torch.stack`/`torch.tensor` build one).",
        )
    if isinstance(got, (int, float, bool)):
        return Problem(
            "wrong_type",
            f"{path} is a Python {type(got).__name__}; return a torch.Tensor (did you call "
            "`.item()`?).",
        )
    return Problem("wrong_type", f"{path} should be a torch.Tensor, not {describe(got)}.")


def _not_a_bool(got: Any, expected: bool, path: str) -> Problem | None:
    if isinstance(got, bool) or (isinstance(got, torch.Tensor) and got.numel() == 1 and got.dtype == torch.bool):
        return None
    return Problem("wrong_type", f"{path} should be a bool, not {describe(got)}.")


def _not_an_int(got: Any, expected: int, path: str) -> Problem | None:
    if isinstance(got, torch.Tensor):
        return Problem(
            "wrong_type",
            f"{path} is a tensor; return a Python int (`int(t)` or `t.item()` turns a one-element "
            "integer tensor into one).",
        )
    if not isinstance(got, int) or isinstance(got, bool):
        return Problem("wrong_type", f"{path} should be a Python int, not {describe(got)}.")
    return None


def _not_a_number(got: Any, expected: float, path: str) -> Problem | None:
    if isinstance(got, torch.Tensor):
        return Problem(
            "wrong_type",
            f"{path} is a tensor; return a Python number (`.item()` turns a one-element "
            "tensor into one).",
        )
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return Problem("wrong_type", f"{path} should be a number, not {describe(got)}.")
    return None


def _not_a_sequence(got: Any, expected: tuple | list, path: str) -> Problem | None:
    if not isinstance(got, (tuple, list)):
        return Problem(
            "wrong_type",
            f"{path} should be a {type(expected).__name__} of {len(expected)} items, "
            f"not {describe(got)}.",
        )
    if len(got) != len(expected):
        return Problem("wrong_length", f"{path} has {len(got)} items; it should have {len(expected)}.")
    return None


def _not_a_dict(got: Any, expected: dict, path: str) -> Problem | None:
    if not isinstance(got, dict):
        return Problem("wrong_type", f"{path} should be a dict, not {describe(got)}.")
    if set(got) == set(expected):
        return None
    missing = sorted(map(str, set(expected) - set(got)))
    extra = sorted(map(str, set(got) - set(expected)))
    parts = []
    if missing:
        parts.append(f"missing keys {missing}")
    if extra:
        parts.append(f"unexpected keys {extra}")
    return Problem("wrong_keys", f"{path} has " + " and ".join(parts) + ".")


# the container a result must have, by the expected value's type: the first that matches decides
# (bool before int: True is an int)
_SHAPE_RULES: tuple[tuple[type | tuple[type, ...], Callable[[Any, Any, str], Problem | None]], ...] = (
    (bool, _not_a_bool), (int, _not_an_int), (float, _not_a_number),
    ((tuple, list), _not_a_sequence), (dict, _not_a_dict),
)


def _type_problem(got: Any, expected: Any, path: str) -> Problem | None:
    if isinstance(expected, torch.Tensor):
        return _not_a_tensor(got, path)
    if got is None and expected is not None:
        return Problem("returned_none", f"{path} is None. Did you forget a `return` statement?")
    for kind, rule in _SHAPE_RULES:
        if isinstance(expected, kind):
            return rule(got, expected, path)
    return None


def _tensor_problem(got: torch.Tensor, expected: torch.Tensor, cmp: Compare, path: str) -> Problem | None:
    if got.device != expected.device:
        return Problem(
            "wrong_device",
            f"{path} is on device `{got.device}` but should be on `{expected.device}`. Create new "
            "tensors with `device=x.device` (or `torch.zeros_like(x)`), or move them with `.to(x.device)`.",
        )
    if cmp.dtype and got.dtype != expected.dtype:
        extra = ""
        if got.dtype == torch.float64 and expected.dtype == torch.float32:
            extra = (
                " float64 usually comes from NumPy (its default) or from `torch.tensor(..., "
                "dtype=torch.double)`; keep float32, e.g. with `.float()` or `dtype=x.dtype`."
            )
        elif got.dtype.is_floating_point and expected.dtype == torch.int64:
            extra = " Indices and class labels are integers: use `.long()` or an integer op."
        elif got.dtype.is_floating_point and not expected.dtype.is_floating_point:
            extra = " Keep the input's integer dtype: did a conversion or a division turn it into floats?"
        return Problem(
            "wrong_dtype",
            f"{path} has dtype {str(got.dtype).replace('torch.', '')} but should be "
            f"{str(expected.dtype).replace('torch.', '')}.{extra}",
        )
    if got.shape != expected.shape:
        hint = ""
        if got.dim() == expected.dim() + 1 or got.dim() + 1 == expected.dim():
            hint = " An extra or missing dimension of size 1 often means `keepdim` or `squeeze`/`unsqueeze`."
        elif got.numel() == expected.numel():
            hint = " Same number of elements: check the order of dimensions (transpose?) or a reshape."
        elif got.dim() == 2 and expected.dim() == 2 and got.shape[0] == got.shape[1] == expected.shape[0]:
            hint = " An (N, N) result often comes from broadcasting an (N, 1) tensor against an (N,) one."
        return Problem(
            "wrong_shape",
            f"{path} has shape {_shape(got)} but should have shape {_shape(expected)}.{hint}",
        )
    if cmp.graph and expected.requires_grad and not got.requires_grad:
        return Problem(
            "graph_cut",
            f"{path} is not connected to the autograd graph of the inputs, so no gradient can flow "
            "back. `.item()`, `.numpy()`, `.detach()`, `torch.tensor(...)` and `torch.no_grad()` "
            "all cut the graph; use tensor operations throughout.",
        )
    g = got.detach()
    e = expected.detach()
    if g.is_floating_point() or g.is_complex():
        g_nan = torch.isnan(g)
        e_nan = torch.isnan(e) if (e.is_floating_point() or e.is_complex()) else torch.zeros_like(g_nan)
        if bool((g_nan & ~e_nan).any()):
            n = int((g_nan & ~e_nan).sum())
            return Problem(
                "nan",
                f"{path} contains NaN in {n} of {g.numel()} elements where there should be numbers "
                "(a division by zero, `log` of a non-positive number, or `sqrt` of a negative one?).",
            )
    if not _values_close(g, e, cmp):
        return Problem("wrong_values", f"{path} has the right shape and dtype, but {_mismatch_summary(g, e, cmp)}")
    return None


def _values_close(got: torch.Tensor, expected: torch.Tensor, cmp: Compare) -> bool:
    """``torch.testing.assert_close``'s rule (|got - expected| <= atol + rtol * |expected|, with
    its per-dtype default tolerances) computed with ``torch.isclose``: the same verdict without
    assert_close's first-call import of sympy (about 0.5 s in a fresh kernel). NaN matches NaN
    only at the same positions (NaN where a number is expected was reported before this).
    With ``Compare(dtype=False)`` both sides are compared in their promoted dtype, so an
    integer result never passes against truncated float values."""
    common = torch.promote_types(got.dtype, expected.dtype)
    got, e = got.to(common), expected.to(common)
    if not (got.is_floating_point() or got.is_complex()):
        return bool(torch.equal(got, e))
    rtol, atol = _tolerances(e, cmp)
    return bool(torch.isclose(got, e, rtol=rtol, atol=atol, equal_nan=True).all())


def _tolerances(expected: torch.Tensor, cmp: Compare) -> tuple[float, float]:
    """``(rtol, atol)`` for one comparison. On top of the per-element rule, ``atol`` grows with
    the magnitude of the expected values (``cmp.scale`` times ``max|expected|``; default four
    machine epsilons of the dtype): a valid different order of floating-point operations (a
    reduction summed in another order, ``x - mean`` computed another way) errs relative to the
    size of the values involved, not of the one element, so a near-zero element next to large
    ones must not fail a right answer."""
    default_rtol, default_atol = _default_tol(expected.dtype)
    rtol = cmp.rtol if cmp.rtol is not None else default_rtol
    atol = cmp.atol if cmp.atol is not None else default_atol
    scale = cmp.scale if cmp.scale is not None else (
        4 * torch.finfo(expected.dtype).eps if expected.is_floating_point() and (rtol or atol) else 0.0)
    if scale and expected.numel():
        finite = expected[torch.isfinite(expected)]
        if finite.numel():
            atol += scale * float(finite.abs().max())
    return rtol, atol


def _mismatch_summary(got: torch.Tensor, expected: torch.Tensor, cmp: Compare) -> str:
    """Describe how values differ without printing the expected values."""
    common = torch.promote_types(got.dtype, expected.dtype)
    got, expected = got.to(common), expected.to(common)
    if got.dtype == torch.bool or not (got.is_floating_point() or got.is_complex()):
        differ = got != expected.to(got.dtype)
        n = int(differ.sum())
        idx = tuple(int(i) for i in differ.nonzero()[0]) if n else ()
        return f"{n} of {got.numel()} elements differ (the first at index {idx})."
    e = expected.to(got.dtype)
    diff = (got - e).abs()
    diff = torch.where(torch.isnan(diff), torch.zeros_like(diff), diff)
    rtol, atol = _tolerances(e, cmp) if e.is_floating_point() else (0.0, 0.0)
    # the comparison's own rule (an infinite expected value is matched only by the same infinity;
    # `diff > atol + rtol * |e|` would count a finite value where -inf is expected as matching)
    bad = ~torch.isclose(got, e, rtol=rtol, atol=atol, equal_nan=True)
    n = int(bad.sum())
    idx = tuple(int(i) for i in bad.nonzero()[0]) if n else ()
    largest = float(diff.max()) if diff.numel() else 0.0
    share = 100.0 * n / max(got.numel(), 1)
    return (
        f"{n} of {got.numel()} elements ({share:.0f}%) differ beyond tolerance; the largest "
        f"absolute difference is {largest:.3g}, the first mismatch at index {idx}."
    )


def _default_tol(dtype: torch.dtype) -> tuple[float, float]:
    return {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
    }.get(dtype, (1.3e-6, 1e-5))


def _number_problem(got: Any, expected: Any, cmp: Compare, path: str) -> Problem | None:
    if isinstance(expected, bool):
        if bool(got) != expected:
            return Problem("wrong_values", f"{path} is {bool(got)} but should be {expected}.")
        return None
    if isinstance(expected, int) and isinstance(got, int):
        # counts, sizes, indices: exact (as integer tensors are); float(2**53 + 1) == float(2**53)
        value = int.__int__(got)  # the int's own value: a subclass's __eq__ or __int__ may lie
        if value != expected:
            return Problem("wrong_values", f"{path} ({value!r}) is not the expected number.")
        return None
    rtol = cmp.rtol if cmp.rtol is not None else 1e-5
    atol = cmp.atol if cmp.atol is not None else 1e-8
    if isinstance(got, float) and math.isnan(got):
        if isinstance(expected, float) and math.isnan(expected):
            return None  # NaN matches NaN, as for tensors
        return Problem("nan", f"{path} is NaN.")
    if not math.isclose(float(got), float(expected), rel_tol=rtol, abs_tol=atol):
        return Problem("wrong_values", f"{path} ({got!r}) is not the expected number.")
    return None


def _items_problem(got: Any, expected: Any, cmp: Compare, path: str) -> Problem | None:
    if isinstance(expected, dict):
        pairs = [(f"{path}[{k!r}]", got[k], expected[k]) for k in expected]
    else:
        pairs = [(f"{path}[{i}]", g, e) for i, (g, e) in enumerate(zip(got, expected, strict=True))]
    for where, g, e in pairs:
        p = compare(g, e, cmp, where)
        if p:
            return p
    return None


def compare(got: Any, expected: Any, cmp: Compare | None = None, path: str = "Your result") -> Problem | None:
    """Return the first difference between ``got`` and ``expected``, or ``None``."""
    cmp = cmp or Compare()
    problem = _type_problem(got, expected, path)
    if problem:
        return problem
    if isinstance(expected, torch.Tensor):
        return _tensor_problem(got, expected, cmp, path)
    if isinstance(expected, (int, float)):
        return _number_problem(got, expected, cmp, path)
    if isinstance(expected, (tuple, list, dict)):
        return _items_problem(got, expected, cmp, path)
    try:
        equal = bool(got == expected)
    except Exception:  # noqa: BLE001 - exotic objects: report rather than crash
        equal = False
    if not equal:
        return Problem("wrong_values", f"{path} is not the expected value.")
    return None
