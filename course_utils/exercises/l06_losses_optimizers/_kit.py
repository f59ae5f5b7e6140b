"""Shared by the exercises of 06_losses_optimizers: how a message names a type, and the watch on
``torch.optim.SGD`` for ``SGDMomentum``. (The rule "without the built-in" of ``stable_log_softmax``
and ``cross_entropy_by_hand`` is their ``Exercise.forbid``: a ``re:`` pattern, seen by the
framework at the torch-function and the ATen level.)
"""

from __future__ import annotations

from typing import Any

import torch


LESSON = "06_losses_optimizers"


def a_type(x: Any) -> str:
    """``"an `int`"``, ``"a `list`"``: for messages that say what the learner passed or returned."""
    name = type(x).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} `{name}`"


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
