"""Declared checks on what an answer gives back: its type, said once, in one voice.

An exercise that must know what kind of value the learner's code produced before it can compare
it (a pair to unpack, a module to call, a list to walk) declares it::

    PAIR = Expect("not_a_pair", "a pair `(mean, std)`", accept=pair_of(torch.Tensor))
    ...
    mean, std = PAIR.check(answer(images))     # in ``run``
    ...
    mistakes=[PAIR.mistake(example=lambda x: None), ...]

The learner reads one sentence built here for every exercise: "Your function returned a
`list` of 3 items, not a pair `(mean, std)`.", with ``said`` naming where the value came from
("Calling your class gave", "`forward` returned") and an optional ``advice``. ``describe`` is the
one way a message names a value's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .spec import Incorrect, Mistake

Accept = type | tuple[type, ...] | Callable[[Any], bool]


def describe(value: Any) -> str:
    """How a message names what the learner gave: ``None``, ``a `list` of 3 items``,
    ``a `Tensor` of shape (2, 3)``, ``an `int```."""
    if value is None:
        return "`None`"
    name = type(value).__name__
    text = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} `{name}`"
    try:  # the learner's object may be hostile: its own len() or shape is only a detail
        if isinstance(value, (list, tuple, dict, set)):
            n = len(value)
            return text + f" of {n} item{'s' * (n != 1)}"
        if isinstance(value, torch.Tensor):
            return text + f" of shape {tuple(value.shape)}"
    except Exception:  # noqa: BLE001
        pass
    return text


def pair_of(*kinds: type) -> Callable[[Any], bool]:
    """Accepts a tuple or list of two items (each an instance of ``kinds``, when given)."""
    def accept(value: Any) -> bool:
        return (isinstance(value, (tuple, list)) and len(value) == 2
                and (not kinds or all(isinstance(v, kinds) for v in value)))
    return accept


@dataclass(frozen=True)
class Expect:
    """What a value the answer gives must be, and the mistake that says so when it is not.

    ``id`` names the mistake (``"not_a_pair"``); ``want`` says what is expected, as the learner
    reads it (``"an `nn.Module`"``); ``accept`` is a type, a tuple of types or a predicate;
    ``said`` is where the value came from; ``advice`` an optional last sentence (a question that
    leads to the cause, or the one thing the text asks for).
    """

    id: str
    want: str
    accept: Accept
    said: str = "Your function returned"
    advice: str = ""

    def ok(self, value: Any) -> bool:
        if isinstance(self.accept, (type, tuple)):
            return isinstance(value, self.accept)
        return bool(self.accept(value))

    def check(self, value: Any, **facts: Any) -> Any:
        """``value`` itself when it is what is expected; otherwise the declared mistake, its
        message's other ``{fields}`` (in ``said``, ``want`` or ``advice``) filled from ``facts``."""
        if not self.ok(value):
            raise Incorrect(self.id, got=describe(value), **facts)
        return value

    @property
    def message(self) -> str:
        return f"{self.said} {{got}}, not {self.want}." + (f" {self.advice}" if self.advice else "")

    def mistake(self, example: Any = None) -> Mistake:
        """The :class:`Mistake` to list in ``Exercise.mistakes``: ``example`` gives such a value."""
        return Mistake(self.id, self.message, example, match_output=False)
