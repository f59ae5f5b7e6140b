"""The learner's progress dashboard, for any notebook of the course::

    from course_utils.dashboard import dashboard
    dashboard()

Every lesson and exercise with its status (✅ correct / ❌ incorrect / ✏️ not attempted),
number of checks, hints used and whether the solution was viewed, read from the progress log
(:mod:`course_utils.progress`). It refreshes by itself after every cell you run that changed
the log (a check, a hint, a solution), without restarting the kernel; the ⟳ button refreshes
by hand. The filter shows everything, what is left to do, or what is still incorrect.

The logic is plain functions (:func:`collect`, :func:`filter_lessons`, :func:`render_html`,
:func:`headline`) so it can be tested without a browser; :class:`Dashboard` only wires them
to ipywidgets.
"""

from __future__ import annotations

import html
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from . import progress

ICONS = {"correct": "✅", "incorrect": "❌", "not_attempted": "✏️"}
LABELS = {"correct": "correct", "incorrect": "incorrect", "not_attempted": "not attempted"}
FILTERS = {"all": "all", "to do": "todo", "incorrect": "incorrect"}


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


def _course_exercises() -> list[tuple[str, str, str, str]]:
    from .grading import registry

    return [(e.id, e.lesson, e.name, e.title) for e in registry.all_exercises()]


def collect(events: Iterable[dict[str, Any]],
            exercises: Iterable[tuple[str, str, str, str]] | None = None) -> list[LessonRow]:
    """Every lesson with every exercise's progress, in course order.

    ``exercises`` are ``(id, lesson, name, title)`` tuples (default: the whole course).
    Events of exercises the course does not know (renamed, another version) are listed at
    the end of their lesson."""
    known = list(exercises) if exercises is not None else _course_exercises()
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


def log_signature(path: Path | None) -> tuple[int, int] | None:
    """What changes when the log changes: ``(mtime_ns, size)``, ``None`` when there is none."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


# ---------------------------------------------------------------------- widgets

_LIVE: weakref.WeakSet[Dashboard] = weakref.WeakSet()
_HOOKED: list[Any] = []  # the IPython shell our post_run_cell hook is registered with


def _after_cell(*_: Any) -> None:
    for dash in list(_LIVE):
        try:
            dash.refresh()
        except Exception:  # noqa: BLE001 - a dashboard must never break a learner's cell
            pass


def _hook(shell: Any) -> bool:
    """Register one ``post_run_cell`` callback with ``shell`` (once)."""
    if shell is None or any(s is shell for s in _HOOKED):
        return shell is not None
    shell.events.register("post_run_cell", _after_cell)
    _HOOKED.append(shell)
    return True


class Dashboard:
    """ipywidgets view of :func:`collect`; ``refresh()`` re-reads the log when it changed."""

    def __init__(self, log: str | os.PathLike[str] | None = None, auto_refresh: bool = True,
                 exercises: Iterable[tuple[str, str, str, str]] | None = None, shell: Any = None):
        import ipywidgets as w

        self._log = Path(log) if log is not None else None
        self._exercises = list(exercises) if exercises is not None else None
        self._signature: Any = object()
        self.note = ""  # what reading the log left out (malformed lines, an unreadable file)
        self.lessons: list[LessonRow] = []
        self.refreshes = 0
        self.header = w.HTML()
        self.bar = w.IntProgress(min=0, max=1, value=0, bar_style="success",
                                 layout=w.Layout(width="220px"))
        self.show = w.ToggleButtons(options=list(FILTERS.items()), value="all", description="Show",
                                    style={"button_width": "78px"})
        self.lesson = w.Dropdown(options=[("all lessons", "")], value="", description="Lesson",
                                 layout=w.Layout(width="260px"))
        self.button = w.Button(description="⟳ refresh", tooltip="Re-read the progress log",
                               layout=w.Layout(width="100px"))
        self.body = w.HTML(layout=w.Layout(max_height="440px", overflow="auto"))
        self.status = w.HTML()
        self.show.observe(self._redraw, names="value")
        self.lesson.observe(self._redraw, names="value")
        self.button.on_click(lambda _b: self.refresh(force=True))
        self.widget = w.VBox([
            w.HBox([self.header, self.bar]),
            w.HBox([self.show, self.lesson, self.button]),
            self.body, self.status,
        ], layout=w.Layout(border="1px solid #bbb", padding="6px"))
        self.widget.add_class("course-dashboard")
        self.auto_refresh = False
        if auto_refresh:
            if shell is None:
                try:
                    from IPython import get_ipython

                    shell = get_ipython()
                except ImportError:  # pragma: no cover
                    shell = None
            self.auto_refresh = _hook(shell)
            _LIVE.add(self)
        self.refresh(force=True)

    @property
    def log(self) -> Path | None:
        return self._log if self._log is not None else progress.log_path()

    def refresh(self, force: bool = False) -> bool:
        """Re-read the log if it changed (or ``force``); returns whether the view was rebuilt."""
        sig = log_signature(self.log)
        if not force and sig == self._signature:
            return False
        self._signature = sig
        path = self.log
        self.note = ""
        try:
            log = progress.read_log(path, missing_ok=True) if path is not None else progress.LogRead(None)
        except progress.LogError as exc:  # unreadable: say so, show an empty course
            log, self.note = progress.LogRead(path), str(exc)
        if log.skipped:
            self.note = log.skipped_note()
        self.lessons = collect(log.events, self._exercises)
        options = [("all lessons", "")] + [(les.title, les.lesson) for les in self.lessons]
        if list(self.lesson.options) != options:
            current = self.lesson.value
            self.lesson.options = options
            self.lesson.value = current if any(v == current for _, v in options) else ""
        self.refreshes += 1
        self._redraw()
        return True

    def _redraw(self, *_: Any) -> None:
        t = totals(self.lessons)
        self.header.value = f"<b>Your progress</b>: {html.escape(headline(self.lessons))}"
        self.bar.max = max(1, t["total"])
        self.bar.value = t["correct"]
        shown = filter_lessons(self.lessons, self.show.value, self.lesson.value or None)
        self.body.value = render_html(shown, self.lessons)
        where = self.log
        note = f" · <b>{html.escape(self.note)}</b>" if self.note else ""
        self.status.value = (f"<small style='opacity:.7'>log: <code>{html.escape(str(where))}</code>"
                             f"{' · refreshes after every cell' if self.auto_refresh else ''}{note}</small>"
                             if where is not None else
                             "<small>Progress logging is turned off (COURSE_PROGRESS_LOG is empty).</small>")

    def close(self) -> None:
        _LIVE.discard(self)
        self.widget.close()

    def text(self) -> str:
        return render_text(self.lessons) + (f"\n({self.note})" if self.note else "")

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def dashboard(log: str | os.PathLike[str] | None = None, auto_refresh: bool = True) -> Dashboard:
    """Open the progress dashboard (display it by leaving it as a cell's last expression)."""
    return Dashboard(log, auto_refresh=auto_refresh)
