"""What a predict-the-output question is (:class:`Question`) and :func:`_q`, which declares one.

Below both :mod:`.predict` (which checks predictions) and :mod:`.predict_questions` (which
declares the questions), so neither imports the other's way back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["shape", "dtype", "value", "exception"]


@dataclass(frozen=True)
class Question:
    """One predict-the-output question. ``code`` is run (``torch``, ``nn``, ``F`` and ``np``
    imported, torch seeded with 0) and its last line is the expression asked about; for
    ``kind="exception"`` the code must raise, and the answer is the exception's class name."""

    id: str  # "<lesson stem>.<name>"
    kind: Kind
    prompt: str
    code: str
    explanation: str
    shows: str = ""  # text of the notebook code cell, after the question, that shows the answer

    @property
    def lesson(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split(".", 1)[1]

    @property
    def shown_by(self) -> str:
        return self.shows or self.code.strip().splitlines()[-1].strip()


ALL: list[Question] = []  # in declaration order; predict.QUESTIONS indexes them by id


def _q(id: str, kind: Kind, prompt: str, code: str, explanation: str, shows: str = "") -> None:
    ALL.append(Question(id, kind, prompt, code.strip(), explanation, shows))
