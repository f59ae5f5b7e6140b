"""The learner's progress log: one JSON line per check, hint or solution view.

The log lives at ``~/.pytorch_course/progress.jsonl`` unless ``COURSE_PROGRESS_LOG`` names
another file (set it to an empty string to turn logging off). Writing never raises into a
lesson; reading skips corrupt or half-written lines.

    progress.summary()        # where you stand, per exercise (HTML in notebooks, text elsewhere)
"""

from __future__ import annotations

import getpass
import html
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

ENV_VAR = "COURSE_PROGRESS_LOG"
DEFAULT_PATH = Path.home() / ".pytorch_course" / "progress.jsonl"


def log_path() -> Path | None:
    """Where events are written, or ``None`` when logging is turned off."""
    value = os.environ.get(ENV_VAR)
    if value is None:
        return DEFAULT_PATH
    return Path(value).expanduser() if value.strip() else None


def _learner() -> str:
    name = os.environ.get("COURSE_LEARNER")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database in some containers
        return "learner"


def log_event(event: str, exercise: str, **fields: Any) -> None:
    """Append one event. Failing to write (read-only disk, …) is silent: a lesson must go on."""
    path = log_path()
    if path is None:
        return
    record = {"ts": round(time.time(), 3), "learner": _learner(), "event": event, "exercise": exercise}
    record.update(fields)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
    except OSError:
        pass


def read_events(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """All well-formed events of a log; corrupt lines and a missing file are skipped."""
    p = Path(path) if path is not None else log_path()
    if p is None or not p.exists():
        return []
    return list(_parse_lines(p.read_bytes().decode("utf-8", errors="replace").splitlines()))


def _parse_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("event"), str) and isinstance(rec.get("exercise"), str):
            yield rec


@dataclass
class ExerciseProgress:
    exercise: str
    status: str = "not_attempted"  # correct once any check passed; else last check's status
    attempts: int = 0  # checks of an actual answer (correct or incorrect)
    hints: int = 0
    solution_viewed: bool = False
    last_mistake: str | None = None
    mistakes: dict[str, int] = field(default_factory=dict)


def exercise_progress(events: Iterable[dict[str, Any]]) -> dict[str, ExerciseProgress]:
    """Fold events into one :class:`ExerciseProgress` per exercise."""
    out: dict[str, ExerciseProgress] = {}
    for ev in events:
        p = out.setdefault(ev["exercise"], ExerciseProgress(ev["exercise"]))
        kind = ev["event"]
        if kind == "check":
            status = ev.get("status")
            if status in ("correct", "incorrect"):  # running an untouched stub is no attempt
                p.attempts += 1
            if status == "correct":
                p.status = "correct"
            elif p.status != "correct" and status in ("incorrect", "not_attempted"):
                p.status = status
            mistake = ev.get("mistake")
            if isinstance(mistake, str):
                p.last_mistake = mistake
                p.mistakes[mistake] = p.mistakes.get(mistake, 0) + 1
        elif kind == "hint":
            p.hints += 1
        elif kind == "solution":
            p.solution_viewed = True
    return out


def activity(attempts: int, hints: int, solution_viewed: bool) -> str:
    """``"2 checks, 1 hint, solution viewed"`` (empty when nothing happened)."""
    parts = []
    if attempts:
        parts.append(f"{attempts} check{'s' * (attempts != 1)}")
    if hints:
        parts.append(f"{hints} hint{'s' * (hints != 1)}")
    if solution_viewed:
        parts.append("solution viewed")
    return ", ".join(parts)


@dataclass
class Summary:
    """Where a learner stands: every known exercise with its progress."""

    rows: list[ExerciseProgress]

    @property
    def counts(self) -> dict[str, int]:
        c = {"correct": 0, "incorrect": 0, "not_attempted": 0}
        for r in self.rows:
            c[r.status] = c.get(r.status, 0) + 1
        return c

    def text(self) -> str:
        c = self.counts
        lines = [f"{c['correct']} of {len(self.rows)} exercises correct, {c['incorrect']} still incorrect."]
        for r in self.rows:
            mark = {"correct": "✅", "incorrect": "❌"}.get(r.status, "·")
            lines.append(f"  {mark} {r.exercise:<40} {activity(r.attempts, r.hints, r.solution_viewed)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        c = self.counts
        body = "".join(
            f"<tr><td>{ {'correct': '✅', 'incorrect': '❌'}.get(r.status, '·') }</td>"
            f"<td><code>{html.escape(r.exercise)}</code></td><td>{r.attempts}</td><td>{r.hints}</td>"
            f"<td>{'yes' if r.solution_viewed else ''}</td></tr>"
            for r in self.rows
        )
        return (
            f"<div><b>{c['correct']} of {len(self.rows)} exercises correct</b>"
            "<table><tr><th></th><th>exercise</th><th>checks</th><th>hints</th><th>solution</th></tr>"
            f"{body}</table></div>"
        )


def summary(path: str | os.PathLike[str] | None = None, exercises: Iterable[str] | None = None) -> Summary:
    """Summarise a progress log against the course's exercises (all of them by default)."""
    if exercises is None:
        from .grading import exercises as all_ids

        exercises = all_ids()
    folded = exercise_progress(read_events(path))
    ids = list(exercises)
    rows = [folded.get(i, ExerciseProgress(i)) for i in ids]
    rows += [p for i, p in folded.items() if i not in ids]
    return Summary(rows)
