"""Shared by the exercises of 06_losses_optimizers: the rule "without the built-in".

A ``TorchFunctionMode`` sees every torch function the answer calls, however it is reached
(``F.log_softmax``, ``torch.logsumexp``, a tensor method, an ``nn`` module's forward); a match
of the name fails the check naming the rule, even when the learner catches the error we raise.
An exercise that uses :func:`run_forbidding` declares ``rule_id`` with an ``{op}`` field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils.grading import Case, Incorrect

LESSON = "06_losses_optimizers"


class Forbid(TorchFunctionMode):
    """Record (and stop) every torch function whose name matches ``pattern``."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = re.compile(pattern)
        self.hit: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = str(getattr(func, "__name__", "") or "")
        if self.pattern.search(name):
            self.hit = self.hit or name
            raise RuntimeError(f"forbidden call: {name}")
        return func(*args, **(kwargs or {}))


class ForbidDispatch(TorchDispatchMode):
    """The same at the ATen level, which ``torch._C.DisableTorchFunction()`` does not turn off."""

    def __init__(self, pattern: str):
        super().__init__()
        self.pattern = re.compile(pattern)
        self.hit: str | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(getattr(func, "name", lambda: "")()).removeprefix("aten::")
        if self.pattern.search(name):
            self.hit = self.hit or name
            raise RuntimeError(f"forbidden call: {name}")
        return func(*args, **(kwargs or {}))


def call_forbidding(pattern: str, rule_id: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under :class:`Forbid`; raises ``rule_id`` (fact ``op``) on a hit."""
    mode, low = Forbid(pattern), ForbidDispatch(pattern)
    try:
        with mode, low:
            out = fn(*args, **kwargs)
    except Exception:
        if mode.hit or low.hit:
            raise Incorrect(rule_id, op=mode.hit or low.hit) from None
        raise
    if mode.hit or low.hit:  # the learner caught our error and carried on
        raise Incorrect(rule_id, op=mode.hit or low.hit)
    return out


def a_type(x: Any) -> str:
    """``"an `int`"``, ``"a `list`"``: for messages that say what the learner passed or returned."""
    name = type(x).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} `{name}`"


def run_forbidding(pattern: str, rule_id: str) -> Callable[[Any, Case], Any]:
    def run(answer: Any, case: Case) -> Any:
        return call_forbidding(pattern, rule_id, answer, *case.args, **case.kwargs)
    return run


_FUNCTIONAL = ("sgd", "_single_tensor_sgd", "_multi_tensor_sgd", "_fused_sgd")


class WatchTorchSGD:
    """For the run: record any use of ``torch.optim.SGD`` or its functional form (``torch.optim.sgd.sgd``,
    ``torch.optim._functional.sgd``; ``sgd`` looks up its ``_*_sgd`` workers at call time, so an ``sgd``
    imported earlier is seen too)."""

    def __init__(self):
        self.calls: list[str] = []
        import torch.optim._functional as functional
        import torch.optim.sgd as sgd_module
        self.saved = [(torch.optim.SGD, "__init__", torch.optim.SGD.__init__)]
        self.saved += [(m, n, getattr(m, n)) for m in (sgd_module, functional) for n in _FUNCTIONAL if hasattr(m, n)]

    def __enter__(self):
        for owner, name, original in self.saved:
            def recording(*a, _o=original, _n=name, **k):
                self.calls.append(_n)
                return _o(*a, **k)
            setattr(owner, name, recording)
        return self

    def __exit__(self, *exc):
        for owner, name, original in self.saved:
            setattr(owner, name, original)
