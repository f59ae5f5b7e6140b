"""Whether an object is still what a deep copy of it was: the side effects a check looks for.

A function may not leave its caller's objects changed unless its task is to change them: tensor
values, shapes, dtypes, ``requires_grad`` and ``.grad``; NumPy arrays; list, tuple and dict
contents; a module's parameters, buffers and train/eval flags; an object's settings (a loss's
``reduction``, an optimizer's ``param_groups``). The runner compares an exercise's inputs with
:func:`differs`; an exercise's own ``run`` does through :mod:`.calls`.
"""

from __future__ import annotations

import types
from typing import Any

import torch


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a.detach(), b.detach())) or bool(
        ((a.detach() == b.detach()) | (a.detach().isnan() & b.detach().isnan())).all()
        if a.is_floating_point() else False
    )


def differs(before: Any, after: Any, depth: int = 0) -> bool:
    """Whether ``after`` is no longer what ``before`` (a deep copy) was: tensor values, shape,
    dtype, ``requires_grad`` and ``.grad`` presence; NumPy arrays; list/tuple/dict contents
    (Python numbers in them too); a module's parameters (a frozen one too), buffers and
    train/eval flags."""
    if depth > 6:
        return False
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or not same(before, after):
            return True
        return before.requires_grad != after.requires_grad or (before.grad is None) != (after.grad is None)
    if isinstance(before, torch.nn.Module):
        if not isinstance(after, torch.nn.Module):
            return True
        if [m.training for m in before.modules()] != [m.training for m in after.modules()]:
            return True
        sb, sa = before.state_dict(keep_vars=True), after.state_dict(keep_vars=True)
        if set(sb) != set(sa) or any(differs(sb[k], sa[k], depth + 1) for k in sb):
            return True
        return any(differs(settings(mb), settings(ma), depth + 1) for mb, ma in zip(before.modules(), after.modules()))
    tname = type(before).__module__
    if tname == "numpy" and hasattr(before, "dtype") and hasattr(before, "shape"):
        import numpy as np

        return not (isinstance(after, np.ndarray) and before.shape == after.shape and before.dtype == after.dtype
                    and bool(np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")))
    if isinstance(before, (list, tuple)):
        return (type(before) is not type(after) or len(before) != len(after)
                or any(differs(b, a, depth + 1) for b, a in zip(before, after)))
    if isinstance(before, dict):
        return (not isinstance(after, dict) or set(before) != set(after)
                or any(differs(before[k], after[k], depth + 1) for k in before))
    if isinstance(before, (int, float, str, bool)) or before is None:
        if type(after) is not type(before):  # a number replaced by an equal tensor is a change too
            return True
        try:
            return bool(before != after) and not (before != before and after != after)  # NaN == NaN here
        except Exception:  # noqa: BLE001
            return True
    if plain_object(before):  # an optimizer's param_groups, a config object's fields
        return type(before) is not type(after) or differs(settings(before), settings(after), depth + 1)
    return False


_SETTING = (int, float, str, bool, type(None), tuple, list, dict, torch.Tensor)


def settings(obj: Any) -> dict[str, Any]:
    """An object's public attributes that hold data (a loss's ``reduction``, a Dropout's ``p``, an
    optimizer's ``param_groups``): what a function may not leave changed on its caller's object."""
    try:
        items = vars(obj).items()
    except TypeError:
        return {}
    return {k: v for k, v in items if not k.startswith("_") and k != "training" and isinstance(v, _SETTING)}


def plain_object(obj: Any) -> bool:
    """An instance of a class of its own (not a type, function, module object or generator), whose
    attributes can be compared."""
    return (hasattr(obj, "__dict__") and not isinstance(obj, (type, types.FunctionType, types.MethodType,
                                                               types.ModuleType, types.GeneratorType))
            and not callable(getattr(obj, "__next__", None)))
