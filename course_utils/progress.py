"""The learner's progress log: one JSON line per check, hint, solution view or prediction.

The log lives at ``~/.pytorch_course/progress.jsonl`` unless ``COURSE_PROGRESS_LOG`` names
another file (set it to an empty string to turn logging off). Writing never raises into a
lesson. Reading validates every line against one schema (:func:`event_problem`) and skips,
and counts, whatever does not fit: garbage, half-written lines, wrong types, absurd values.

This module is state, not a view: it writes, reads, validates and folds events, and imports
nothing else of the course (it does not know which exercises exist). The notebook-facing
handles (:mod:`course_utils.grading.notebook`) write it; :mod:`course_utils.progress_view`
shows one learner's progress (``progress_view.show()``), :mod:`course_utils.instructor.room`
a room's.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable

ENV_VAR = "COURSE_PROGRESS_LOG"
DEFAULT_PATH = Path.home() / ".pytorch_course" / "progress.jsonl"


def log_path() -> Path | None:
    """Where events are written, or ``None`` when logging is turned off."""
    value = os.environ.get(ENV_VAR)
    if value is None:
        return DEFAULT_PATH
    return Path(value).expanduser() if value.strip() else None


def _learner() -> str:
    name = os.environ.get("COURSE_LEARNER") or os.environ.get("JUPYTERHUB_USER")  # a hub sets the latter
    if name:
        return name
    try:
        import getpass  # lazily: readers (the room view) never ask who is writing

        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database in some containers
        return "learner"


def log_event(event: str, exercise: str, **fields: Any) -> None:
    """Append one event. Failing to write (read-only disk, …) is silent: a lesson must go on."""
    path = log_path()
    if path is None:
        return
    who = "".join(ch if ch.isprintable() else "?" for ch in _learner())[:MAX_NAME] or "learner"
    record = {"ts": round(time.time(), 3), "learner": who, "event": event, "exercise": exercise}
    record.update(fields)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(_open_log(path), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
    except OSError:
        pass


def _open_log(path: Path) -> int:
    """The log opened for appending. In a shared class folder (docs/instructor_guide.md,
    JupyterHub: setgid, so every log gets the instructors' group; sticky, so nobody removes
    another's file) a new log is made readable by that group and by nobody else, whatever the
    learner's umask, and a link planted under the learner's name is not followed."""
    shared = os.stat(path.parent).st_mode
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    if shared & stat.S_ISVTX:
        flags |= os.O_NOFOLLOW
    if not shared & stat.S_ISGID:
        return os.open(path, flags, 0o666)
    try:
        fd = os.open(path, flags | os.O_EXCL, 0o640)
    except FileExistsError:
        return os.open(path, flags, 0o640)
    os.fchmod(fd, 0o640)  # new: the instructors' group reads it, other learners do not
    return fd


# ---------------------------------------------------------------------- reading, validated

EVENTS = ("check", "hint", "solution", "prediction")
STATUSES = ("correct", "incorrect", "not_attempted")
MAX_NAME = 200  # longest exercise id, learner name or mistake id accepted
MAX_LINE = 4096  # a longer line is not an event this course wrote
TS_MAX = 32503680000.0  # the year 3000: a later (or negative, NaN, infinite) timestamp is absurd
_ID = re.compile(r"[\w.\-]+")  # exercise and mistake ids: letters, digits, _ . -


class LogError(OSError):
    """A progress log that is missing or cannot be read (the message says which and why)."""


def _name(value: Any, pattern: re.Pattern[str] | None = _ID) -> bool:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME:
        return False
    if pattern is not None:
        return pattern.fullmatch(value) is not None
    return value.isprintable()


def event_problem(rec: Any) -> str | None:
    """Why ``rec`` (one decoded log line) is not a usable event, or ``None`` when it is.

    The one schema every reader applies (:func:`read_log`, :func:`exercise_progress`, the room
    view, the dashboard): ``event`` is ``check``/``hint``/``solution``/``prediction`` (a
    predict-the-output question; its ``exercise`` is the question's id); ``exercise`` an id of
    letters, digits, ``_ . -`` (at most 200); a check has a ``status`` of ``correct``/
    ``incorrect``/``not_attempted`` and a ``mistake`` that is null or a printable name; ``ts`` (seconds since
    1970, optional) a finite number between 0 and the year 3000; ``learner`` (optional) a
    printable name of at most 200 characters; a hint's ``level`` (optional) an integer 0-1000."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if rec.get("event") not in EVENTS:
        return "unknown or missing event"
    if not _name(rec.get("exercise")):
        return "bad or missing exercise id"
    if "ts" in rec:
        ts = rec["ts"]
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not (0 <= ts <= TS_MAX):
            return "bad timestamp"
    if "learner" in rec and rec["learner"] is not None and not _name(rec["learner"], None):
        return "bad learner name"
    if rec["event"] in ("check", "prediction"):
        if rec.get("status") not in STATUSES:
            return "bad or missing check status"
        if rec.get("mistake") is not None and not _name(rec.get("mistake"), None):
            return "bad mistake id"
    if rec["event"] == "hint" and "level" in rec:
        level = rec["level"]
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 1000:
            return "bad hint level"
    return None


def valid_event(rec: Any) -> bool:
    return event_problem(rec) is None


@dataclass
class LogRead:
    """What :func:`read_log` found: the good events, and how many lines it skipped (and why)."""

    path: Path | None
    events: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def skipped_note(self) -> str:
        """``"2 malformed lines skipped (bad timestamp: 1, not JSON: 1)"``, or ``""``."""
        return skipped_note(self.skipped, self.reasons)


def skipped_note(skipped: int, reasons: dict[str, int] | None = None) -> str:
    if not skipped:
        return ""
    why = ", ".join(f"{r}: {n}" for r, n in sorted((reasons or {}).items(), key=lambda kv: -kv[1]))
    return f"{skipped} malformed line{'s' * (skipped != 1)} skipped" + (f" ({why})" if why else "")


# Lessons the course renumbered or split. A learner's log written before the change keeps the
# old ids; reading maps them to today's, so no attempt is lost from ``progress show`` or the
# room view. Whole lessons in RENAMED_LESSONS; single exercises (a split lesson) in
# RENAMED_EXERCISES, which wins.
RENAMED_LESSONS: dict[str, str] = {
    "06_gpu_amp_ddp": "10_gpu_amp_ddp",
    "07_persistence": "09_persistence",
    "09_capstone": "12_capstone",
    "10_gpu_amp_ddp": "10_performance",  # split: its DDP exercises moved to 11_distributed (below)
}
RENAMED_EXERCISES: dict[str, str] = {
    "10_gpu_amp_ddp.shard_indices": "11_distributed.shard_indices",
    "10_gpu_amp_ddp.data_parallel_grads": "11_distributed.data_parallel_grads",
}


_CURRENT: dict[str, str] = {}  # ids already mapped by current_id (bounded: cleared when full)


def current_id(exercise: str) -> str:
    """Today's id of an exercise or prediction id that may predate a renumbering."""
    new = _CURRENT.get(exercise)
    if new is None:
        new = _current_id(exercise)
        if len(_CURRENT) >= 4096:
            _CURRENT.clear()
        _CURRENT[exercise] = new
    return new


def _current_id(exercise: str) -> str:
    for _ in range(8):  # renames may chain (06 -> 10 -> 11); a cycle stops here
        new = RENAMED_EXERCISES.get(exercise)
        if new is None:
            lesson, dot, rest = exercise.partition(".")
            if lesson in RENAMED_LESSONS:
                new = RENAMED_LESSONS[lesson] + dot + rest
        if new is None or new == exercise:
            return exercise
        exercise = new
    return exercise


_DECODER = json.JSONDecoder()
_NOT_JSON = "not JSON (garbage or a half-written line)"


def read_log(path: str | os.PathLike[str] | None = None, missing_ok: bool = False) -> LogRead:
    """Read a log, validating every line with :func:`event_problem`.

    A missing or unreadable file raises :class:`LogError` with a message a person can act on
    (``missing_ok``: a missing file reads as empty, the learner's own log before the first check)."""
    p = Path(path) if path is not None else log_path()
    if p is None:
        return LogRead(None)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return LogRead(p)
        raise LogError(f"no progress log at {p}") from None
    except IsADirectoryError:
        raise LogError(f"{p} is a folder, not a progress log") from None
    except OSError as exc:
        raise LogError(f"cannot read the progress log {p}: {exc.strerror or exc}") from None
    out = LogRead(p)
    decode = _DECODER.raw_decode  # json.loads without its whitespace handling: the line is stripped
    for line in data.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        problem = None
        if len(line) > MAX_LINE:
            problem = "line too long"
        else:
            try:
                rec, end = decode(line)
            except (ValueError, RecursionError):
                problem = _NOT_JSON
            else:
                problem = event_problem(rec) if end == len(line) else _NOT_JSON
        if problem is None:
            rec["exercise"] = current_id(rec["exercise"])
            out.events.append(rec)
        else:
            out.skipped += 1
            out.reasons[problem] = out.reasons.get(problem, 0) + 1
    return out


def read_events(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """All well-formed events of a log; malformed lines and a missing file are skipped
    (use :func:`read_log` to know how many, or to be told the file is missing)."""
    try:
        return read_log(path, missing_ok=True).events
    except LogError:
        return []


@dataclass
class ExerciseProgress:
    exercise: str
    status: str = "not_attempted"  # correct once any check passed; else last check's status
    attempts: int = 0  # checks of an actual answer (correct or incorrect)
    hints: int = 0
    solution_viewed: bool = False
    last_mistake: str | None = None
    mistakes: dict[str, int] = field(default_factory=dict)


def exercise_progress(events: Iterable[dict[str, Any]], validated: bool = False) -> dict[str, ExerciseProgress]:
    """Fold events into one :class:`ExerciseProgress` per exercise (``validated``: the events
    came from :func:`read_log`, which kept only valid ones; they are not validated again)."""
    out: dict[str, ExerciseProgress] = {}
    for ev in events:
        if not validated and not valid_event(ev):  # callers may pass events that did not come through read_log
            continue
        kind = ev["event"]
        if kind == "prediction":  # a predict-the-output question, not an exercise
            continue
        p = out.setdefault(ev["exercise"], ExerciseProgress(ev["exercise"]))
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


@dataclass
class PredictionProgress:
    """One learner's attempts at one predict-the-output question."""

    question: str
    attempts: int = 0  # predictions actually made (right or wrong)
    first_right: bool | None = None  # was the first prediction right? None: none made yet
    right: bool = False  # right at some attempt


def prediction_progress(events: Iterable[dict[str, Any]], validated: bool = False) -> dict[str, PredictionProgress]:
    """Fold ``prediction`` events into one :class:`PredictionProgress` per question. The
    first attempt counts most: after it the check shows the answer. (``validated``: as for
    :func:`exercise_progress`.)"""
    out: dict[str, PredictionProgress] = {}
    for ev in events:
        if not (validated or valid_event(ev)) or ev["event"] != "prediction":
            continue
        status = ev.get("status")
        if status not in ("correct", "incorrect"):  # `...`: not attempted
            continue
        p = out.setdefault(ev["exercise"], PredictionProgress(ev["exercise"]))
        p.attempts += 1
        if p.first_right is None:
            p.first_right = status == "correct"
        p.right = p.right or status == "correct"
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
