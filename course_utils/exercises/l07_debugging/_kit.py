"""Shared by the exercises of 07_debugging: the lesson id, and hooks left behind.

A hook a learner registers and does not remove keeps running on every later forward or
backward. :func:`remove_leftover_hooks` finds what an answer left on a model (module forward,
pre-forward and backward hooks, its parameters' tensor hooks) and in torch's global module
hooks, removes it, and says how many there were, so the check can fail naming the mistake and
the learner's session is left clean either way.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.nn.modules import module as _module

LESSON = "07_debugging"

_MODULE_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks")


def global_hooks() -> dict[str, set]:
    """The keys of torch's global module hooks now (compare after the answer ran)."""
    return {name: set(getattr(_module, name, {})) for name in _GLOBAL_DICTS}


def _clear(d: Any, keep: set | None = None) -> int:
    if not isinstance(d, dict):
        return 0
    extra = [k for k in list(d) if keep is None or k not in keep]
    for k in extra:
        d.pop(k, None)
    return len(extra)


def remove_leftover_hooks(model: nn.Module, before: dict[str, set]) -> int:
    """Remove every hook on ``model`` (its modules and parameters) and every global module hook
    not in ``before``; return how many there were."""
    n = 0
    for m in model.modules():
        for name in _MODULE_DICTS:
            n += _clear(getattr(m, name, None))
    for p in model.parameters():
        n += _clear(getattr(p, "_backward_hooks", None))
        n += _clear(getattr(p, "_post_accumulate_grad_hooks", None))
    for name in _GLOBAL_DICTS:
        n += _clear(getattr(_module, name, None), before.get(name, set()))
    return n
