"""The learner's progress dashboard, for any notebook of the course::

    from course_utils.dashboard import dashboard
    dashboard()

Every lesson and exercise with its status (✅ correct / ❌ incorrect / ✏️ not attempted),
number of checks, hints used and whether the solution was viewed, read from the progress log
(:mod:`course_utils.progress`). It refreshes by itself after every cell you run that changed
the log (a check, a hint, a solution), without restarting the kernel; the ⟳ button refreshes
by hand. The filter shows everything, what is left to do, or what is still incorrect.

What is shown, and how, is :mod:`course_utils.progress_view` (the one rendering of a learner's
progress, also used by ``python -m course_utils progress show``); :class:`Dashboard` only wires
it to ipywidgets and refreshes it.
"""

from __future__ import annotations

import html
import os
import weakref
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from . import progress
from .progress_view import LearnerProgress, LessonRow, filter_lessons, headline, read, render_html, totals

FILTERS = {"all": "all", "to do": "todo", "incorrect": "incorrect"}


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
        found = read(self.log, self._exercises)
        self.lessons, self.note = found.lessons, found.note
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
        return LearnerProgress(self.lessons, self.note, self.log).text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def dashboard(log: str | os.PathLike[str] | None = None, auto_refresh: bool = True) -> Dashboard:
    """Open the progress dashboard (display it by leaving it as a cell's last expression)."""
    return Dashboard(log, auto_refresh=auto_refresh)
