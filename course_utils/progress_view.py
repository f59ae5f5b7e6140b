"""The one rendering of a learner's progress: every lesson and exercise with its status
(✅ correct / ❌ incorrect / ✏️ not attempted), checks, hints and whether the solution was viewed.

Used by all three places a learner's progress is shown: the dashboard widget
(:mod:`course_utils.dashboard`), ``python -m course_utils progress show``
(:mod:`course_utils.progress_cli`) and :func:`show` in a notebook. The log is read and folded by
:mod:`course_utils.progress` (which knows nothing of the course's exercises); this view joins the
folded log with the exercise list the course declares (:func:`course_exercises`, read from the
index `build` generates, or a list a caller passes in), so an exercise nobody has touched is listed too.

    from course_utils import progress_view
    progress_view.show()          # HTML in a notebook, text elsewhere
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import progress

ICONS = {"correct": "✅", "incorrect": "❌", "not_attempted": "✏️"}
LABELS = {"correct": "correct", "incorrect": "incorrect", "not_attempted": "not attempted"}


@dataclass
class ExerciseRow:
    id: str
    lesson: str
    name: str
    title: str
    status: str = "not_attempted"
    attempts: int = 0
    hints: int = 0
    solution_viewed: bool = False
    last_mistake: str | None = None


@dataclass
class LessonRow:
    lesson: str
    exercises: list[ExerciseRow] = field(default_factory=list)

    @property
    def correct(self) -> int:
        return sum(e.status == "correct" for e in self.exercises)

    @property
    def total(self) -> int:
        return len(self.exercises)

    @property
    def title(self) -> str:
        num, _, rest = self.lesson.partition("_")
        return f"{num} · {rest.replace('_', ' ')}" if rest else self.lesson


def course_exercises() -> list[tuple[str, str, str, str]]:
    """``(id, lesson, name, title)`` of every exercise of the course, in course order, from the
    index ``build`` generates (:mod:`course_utils.exercise_index`): no grader (nor torch) is
    imported to list them."""
    from .exercise_index import EXERCISES

    return [(e.id, e.lesson, e.name, e.title) for e in EXERCISES]


def collect(events: Iterable[dict[str, Any]],
            exercises: Iterable[tuple[str, str, str, str]] | None = None) -> list[LessonRow]:
    """Every lesson with every exercise's progress, in course order.

    ``exercises`` are ``(id, lesson, name, title)`` tuples (default: the whole course).
    Events of exercises the course does not know (renamed, another version) are listed at
    the end of their lesson."""
    known = list(exercises) if exercises is not None else course_exercises()
    folded = progress.exercise_progress(events)
    lessons: dict[str, LessonRow] = {}
    for ex_id, lesson, name, title in known:
        p = folded.get(ex_id)
        row = ExerciseRow(ex_id, lesson, name, title)
        if p is not None:
            row.status, row.attempts, row.hints = p.status, p.attempts, p.hints
            row.solution_viewed, row.last_mistake = p.solution_viewed, p.last_mistake
        lessons.setdefault(lesson, LessonRow(lesson)).exercises.append(row)
    ids = {k[0] for k in known}
    for ex_id, p in folded.items():
        if ex_id in ids:
            continue
        lesson, _, name = ex_id.partition(".")
        lessons.setdefault(lesson, LessonRow(lesson)).exercises.append(
            ExerciseRow(ex_id, lesson, name or ex_id, "(not in this version of the course)", p.status,
                        p.attempts, p.hints, p.solution_viewed, p.last_mistake))
    return [lessons[k] for k in sorted(lessons)]


def filter_lessons(lessons: list[LessonRow], show: str = "all", lesson: str | None = None) -> list[LessonRow]:
    """``show``: ``"all"``, ``"todo"`` (not correct yet) or ``"incorrect"``; ``lesson``: one
    lesson stem, or ``None`` for all. Lessons left without exercises are dropped."""
    if show not in ("all", "todo", "incorrect"):
        raise ValueError(f"show must be 'all', 'todo' or 'incorrect', not {show!r}")
    keep = {"all": lambda e: True, "todo": lambda e: e.status != "correct",
            "incorrect": lambda e: e.status == "incorrect"}[show]
    out = []
    for les in lessons:
        if lesson and les.lesson != lesson:
            continue
        rows = [e for e in les.exercises if keep(e)]
        if rows:
            out.append(LessonRow(les.lesson, rows))
    return out


def totals(lessons: list[LessonRow]) -> dict[str, int]:
    c = {"correct": 0, "incorrect": 0, "not_attempted": 0, "total": 0, "hints": 0, "solutions": 0}
    for les in lessons:
        for e in les.exercises:
            c[e.status] = c.get(e.status, 0) + 1
            c["total"] += 1
            c["hints"] += e.hints
            c["solutions"] += int(e.solution_viewed)
    return c


def headline(lessons: list[LessonRow]) -> str:
    t = totals(lessons)
    return (f"{t['correct']} of {t['total']} exercises correct · {t['incorrect']} incorrect · "
            f"{t['not_attempted']} not attempted · {t['hints']} hints · {t['solutions']} solutions viewed")


def render_html(lessons: list[LessonRow], all_lessons: list[LessonRow] | None = None) -> str:
    """The table: one block per lesson (with its own ``correct/total``), one row per exercise.
    ``all_lessons`` gives the per-lesson totals when ``lessons`` is filtered."""
    if not lessons:
        return "<p style='padding:6px'>Nothing to show with this filter. 🎉</p>"
    totals_of = {les.lesson: les for les in (all_lessons or lessons)}
    parts = ["<table class='course-dashboard-table' style='border-collapse:collapse;width:100%;font-size:13px'>",
             "<tr style='text-align:left;border-bottom:1px solid #999'><th></th><th>exercise</th><th>status</th>"
             "<th style='text-align:right'>checks</th><th style='text-align:right'>hints</th><th>solution</th></tr>"]
    for les in lessons:
        full = totals_of.get(les.lesson, les)
        pct = 100 * full.correct / full.total if full.total else 0
        parts.append(
            f"<tr class='lesson' data-lesson='{html.escape(les.lesson)}' style='background:rgba(127,127,127,.12)'>"
            f"<td colspan='6' style='padding:4px 6px'><b>{html.escape(les.title)}</b> "
            f"<span style='margin-left:8px'>{full.correct}/{full.total} correct</span>"
            f"<span style='display:inline-block;vertical-align:middle;margin-left:8px;width:120px;height:8px;"
            f"background:#ddd;border-radius:4px'><span style='display:block;height:8px;width:{pct:.0f}%;"
            f"background:#1b7f3b;border-radius:4px'></span></span></td></tr>")
        for e in les.exercises:
            shown = e.status == "incorrect" and e.last_mistake
            mistake = f" <small>({html.escape(e.last_mistake)})</small>" if shown else ""
            parts.append(
                f"<tr class='exercise' data-exercise='{html.escape(e.id)}' data-status='{e.status}'>"
                f"<td style='padding:2px 6px'>{ICONS.get(e.status, '·')}</td>"
                f"<td style='padding:2px 6px'><code>{html.escape(e.name)}</code> "
                f"<span style='opacity:.75'>{html.escape(e.title)}</span></td>"
                f"<td style='padding:2px 6px;white-space:nowrap'>{LABELS.get(e.status, e.status)}{mistake}</td>"
                f"<td style='padding:2px 6px;text-align:right'>{e.attempts or ''}</td>"
                f"<td style='padding:2px 6px;text-align:right'>{e.hints or ''}</td>"
                f"<td style='padding:2px 6px'>{'viewed' if e.solution_viewed else ''}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


def render_text(lessons: list[LessonRow]) -> str:
    lines = [headline(lessons)]
    for les in lessons:
        lines.append(f"{les.title}: {les.correct}/{les.total} correct")
        for e in les.exercises:
            extra = progress.activity(e.attempts, e.hints, e.solution_viewed)
            lines.append(f"  {ICONS.get(e.status, '·')} {e.name:<28} {LABELS.get(e.status, e.status):<14} {extra}")
    return "\n".join(lines)


@dataclass
class LearnerProgress:
    """One learner's progress as :func:`read` found it: the lessons, and what reading left out."""

    lessons: list[LessonRow]
    note: str = ""  # malformed lines skipped, or why the log could not be read
    log: Path | None = None

    def text(self) -> str:
        return render_text(self.lessons) + (f"\n({self.note})" if self.note else "")

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        note = f"<br><small>{html.escape(self.note)}</small>" if self.note else ""
        return (f"<div><b>Your progress</b>: {html.escape(headline(self.lessons))}"
                f"{render_html(self.lessons)}{note}</div>")


def read(log: str | os.PathLike[str] | None = None,
         exercises: Iterable[tuple[str, str, str, str]] | None = None) -> LearnerProgress:
    """Read a progress log (default: this learner's, :func:`course_utils.progress.log_path`) and
    :func:`collect` it against the course's exercises (or ``exercises``). Never raises for a bad
    log: a missing file is an empty log, an unreadable one is said in ``note``."""
    path = Path(log) if log is not None else progress.log_path()
    note = ""
    try:
        read_log = progress.read_log(path, missing_ok=True) if path is not None else progress.LogRead(None)
    except progress.LogError as exc:  # unreadable: say so, show an empty course
        read_log, note = progress.LogRead(path), str(exc)
    if read_log.skipped:
        note = read_log.skipped_note()
    return LearnerProgress(collect(read_log.events, exercises), note, path)


def show(log: str | os.PathLike[str] | None = None) -> LearnerProgress:
    """Where you stand, per lesson and exercise (displayed when it is a cell's last expression)."""
    return read(log)
