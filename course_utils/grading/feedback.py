"""Results of a check and how they look: HTML in JupyterLab, plain text in a terminal."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["correct", "incorrect", "not_attempted"]

_ICON = {"correct": "✅", "incorrect": "❌", "not_attempted": "✏️"}
_HEAD = {"correct": "Correct", "incorrect": "Incorrect", "not_attempted": "Not attempted yet"}
_COLOR = {"correct": "#1b7f3b", "incorrect": "#b3261e", "not_attempted": "#8a6d00"}
_BG = {"correct": "#e9f6ee", "incorrect": "#fdecea", "not_attempted": "#fff8e1"}


@dataclass
class Result:
    """Outcome of one check. Never raised: always returned.

    ``status`` is ``"correct"``, ``"incorrect"`` or ``"not_attempted"``; ``mistake`` names the
    mistake that was recognised (``None`` when correct or not attempted); ``message`` is the
    feedback sentence; ``details`` are extra lines (the case that failed, how to reproduce it).
    """

    exercise: str
    status: Status
    message: str
    mistake: str | None = None
    details: list[str] = field(default_factory=list)
    seed: int | None = None
    cases_run: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def __bool__(self) -> bool:  # `assert ex.q.check(f)` reads naturally
        return self.passed

    def text(self) -> str:
        lines = [f"{_ICON[self.status]} {_HEAD[self.status]}: {self.exercise}", self.message]
        lines += self.details
        return "\n".join(line for line in lines if line)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        details = "".join(f"<div style='margin-top:4px'>{_inline_code(d)}</div>" for d in self.details)
        return (
            f"<div style='border-left:5px solid {_COLOR[self.status]};background:{_BG[self.status]};"
            "color:#111;padding:8px 12px;border-radius:4px;font-family:var(--jp-ui-font-family,sans-serif)'>"
            f"<b style='color:{_COLOR[self.status]}'>{_ICON[self.status]} {_HEAD[self.status]}</b>"
            f" <span style='opacity:.7'>{html.escape(self.exercise)}</span>"
            f"<div style='margin-top:4px'>{_inline_code(self.message)}</div>{details}</div>"
        )


def _inline_code(text: str) -> str:
    """Escape text and turn `backticks` into <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)).replace("\n", "<br>")


@dataclass
class Note:
    """A hint or a solution: rendered as HTML in notebooks, text elsewhere."""

    title: str
    body: str
    code: bool = False

    def text(self) -> str:
        return f"{self.title}\n{self.body}"

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        if self.code:
            try:
                from pygments import highlight
                from pygments.formatters import HtmlFormatter
                from pygments.lexers import PythonLexer

                body = highlight(self.body, PythonLexer(), HtmlFormatter(noclasses=True, nowrap=False))
            except ImportError:  # pragma: no cover - pygments ships with JupyterLab
                body = f"<pre>{html.escape(self.body)}</pre>"
        else:
            body = f"<div>{_inline_code(self.body)}</div>"
        return (
            "<div style='border-left:5px solid #3558a8;background:#eef2fb;color:#111;"
            "padding:8px 12px;border-radius:4px'>"
            f"<b>{html.escape(self.title)}</b>{body}</div>"
        )
