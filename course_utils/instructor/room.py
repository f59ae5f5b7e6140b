"""The room view: many learners' progress logs merged into one picture for the instructor.

    python -m course_utils progress summary logs/ --plot room.png
    python -m course_utils progress summary /home/*/.pytorch_course/progress.jsonl --watch 30
        [--plot room.png] [--csv room.csv] [--json room.json]
        [--since MINUTES] [--stuck-after N] [--watch SECONDS] [--all]

For every exercise: how many learners attempted it, how many passed (pass rate), the median
number of checks (all attempts, and until the first pass), hints and solution views, the most
common named mistakes, and who is *stuck* (checked it at least ``stuck_after`` times, or viewed
the solution, without passing yet) or *working on it now* (their latest event is on it).

The command (``progress summary``, :func:`main`) merges learners' ``progress.jsonl`` files
(files or folders searched for ``*.jsonl``) into one table: per exercise, learners who tried,
passed, pass rate, median checks, hints, solution views, how many are stuck (checked at least
``--stuck-after`` times or viewed the solution without passing) and how many are working on it
now, and the most common named mistakes; then the exercises where people are stuck, with their
names. ``--watch`` redraws it every few seconds (Ctrl-C stops) for a live signal during a
workshop.

Every reader skips malformed lines (garbage, half-written lines, wrong types, absurd values)
and says how many it skipped; a missing or unreadable log is named, and the exit status is
non-zero (the room view still shows every good event of the logs it could read).

Collecting logs: on a JupyterHub the instructor can read ``/home/*/.pytorch_course/progress.jsonl``
directly; otherwise learners hand in that file (or set ``COURSE_PROGRESS_LOG`` to a shared
folder, one file per learner).

Logs are the learners' ``progress.jsonl`` files (see :mod:`course_utils.progress`); one file
may hold several learners (the ``learner`` field of each event). Reading reuses
:func:`course_utils.progress.read_events` and folds with
:func:`course_utils.progress.exercise_progress`.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from ..progress import (ExerciseProgress, LogError, LogRead, PredictionProgress, exercise_progress,
                        prediction_progress, read_log, skipped_note, valid_event)

STUCK_AFTER = 3


@dataclass
class ExerciseStats:
    exercise: str
    learners: int  # learners in the room
    attempted: int = 0  # learners with at least one check
    correct: int = 0
    stuck: list[str] = field(default_factory=list)  # learner names
    working: list[str] = field(default_factory=list)  # latest event is on this exercise
    median_attempts: float | None = None  # checks per learner who attempted
    median_attempts_to_pass: float | None = None  # checks up to the first pass
    hints: int = 0
    solutions: int = 0
    mistakes: Counter = field(default_factory=Counter)  # mistake id -> checks that made it

    @property
    def pass_rate(self) -> float | None:
        """Share of the learners who attempted it that passed (None when nobody tried)."""
        return self.correct / self.attempted if self.attempted else None

    @property
    def failing(self) -> int:
        return self.attempted - self.correct

    def top_mistakes(self, n: int = 3) -> list[tuple[str, int]]:
        return self.mistakes.most_common(n)


@dataclass
class RoomSummary:
    learners: list[str]
    rows: list[ExerciseStats]
    events: int
    since: float | None = None
    skipped: int = 0  # malformed log lines left out (see progress.event_problem)
    reasons: dict[str, int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # "path: why" for logs that could not be read
    # predict-the-output question -> (learners who predicted, of them right at the first try)
    predictions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """What the view left out, in words (empty when every line of every log was used)."""
        out = [f"could not read {u}" for u in self.unreadable]
        if self.skipped:
            out.append(skipped_note(self.skipped, self.reasons) + "; every good event is counted")
        return out

    # ------------------------------------------------------------------ views
    def stuck_spots(self) -> list[ExerciseStats]:
        """Exercises where learners are stuck, most stuck first."""
        return sorted((r for r in self.rows if r.stuck), key=lambda r: (-len(r.stuck), r.exercise))

    def active_rows(self) -> list[ExerciseStats]:
        """Exercises somebody has touched (checked, asked a hint, viewed the solution)."""
        return [r for r in self.rows if r.attempted or r.hints or r.solutions or r.working]

    def table(self, all_rows: bool = False) -> str:
        rows = self.rows if all_rows else self.active_rows()
        if not rows:
            return "No events yet."
        w = max(8, *(len(r.exercise) for r in rows))
        head = (f"{'exercise':<{w}}  {'tried':>5}  {'passed':>6}  {'pass %':>6}  {'med.chk':>7}  "
                f"{'hints':>5}  {'sol.':>4}  {'stuck':>5}  {'now':>3}  common mistakes")
        lines = [head, "-" * len(head)]
        for r in rows:
            rate = f"{100 * r.pass_rate:5.0f}%" if r.pass_rate is not None else "     -"
            med = f"{r.median_attempts:7.1f}" if r.median_attempts is not None else "      -"
            common = ", ".join(f"{m} ({k})" for m, k in r.top_mistakes(2))
            lines.append(f"{r.exercise:<{w}}  {r.attempted:>5}  {r.correct:>6}  {rate:>6}  {med}  "
                         f"{r.hints:>5}  {r.solutions:>4}  {len(r.stuck):>5}  {len(r.working):>3}  {common}")
        hidden = len(self.rows) - len(rows)
        if hidden:
            lines.append(f"({hidden} exercise{'s' * (hidden != 1)} nobody has touched yet not shown)")
        return "\n".join(lines)

    def text(self, all_rows: bool = False) -> str:
        n = len(self.learners)
        head = f"Room: {n} learner{'s' * (n != 1)}, {self.events} events"
        if self.since is not None:
            head += f" since {time.strftime('%H:%M', time.localtime(self.since))}"
        lines = [head + ".", *(f"Note: {p}." for p in self.problems()), "", self.table(all_rows)]
        spots = self.stuck_spots()
        if spots:
            lines += ["", "Where people are stuck (attempted, not passed; most stuck first):"]
            for r in spots[:10]:
                names = ", ".join(r.stuck[:8]) + (" …" if len(r.stuck) > 8 else "")
                common = r.top_mistakes(1)
                tip = f"; most common mistake: {common[0][0]} ({common[0][1]}×)" if common else ""
                lines.append(f"  {r.exercise}: {len(r.stuck)} stuck ({names}){tip}")
        lines += self.prediction_lines()
        return "\n".join(lines)

    def prediction_lines(self, n: int = 5) -> list[str]:
        """The predict-the-output questions the room got wrong most at the first try."""
        if not self.predictions:
            return []
        made = sum(k for k, _ in self.predictions.values())
        right = sum(r for _, r in self.predictions.values())
        lines = ["", f"Predictions: {made} made, {100 * right / made:.0f}% right at the first try. "
                     "Hardest (worth discussing with the room):"]
        hardest = sorted(self.predictions.items(), key=lambda kv: (kv[1][1] / kv[1][0], -kv[1][0], kv[0]))
        for q, (k, r) in hardest[:n]:
            lines.append(f"  {q}: {r} of {k} right at the first try")
        return lines

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        import html  # lazily: the command line never renders HTML

        body = []
        for r in self.active_rows():
            rate = r.pass_rate
            color = "#ccc" if rate is None else ("#1b7f3b" if rate >= 0.8 else "#8a6d00" if rate >= 0.5 else "#b3261e")
            pct = "–" if rate is None else f"{100 * rate:.0f}%"
            common = ", ".join(f"<code>{html.escape(m)}</code> ({k})" for m, k in r.top_mistakes(2))
            body.append(
                f"<tr><td><code>{html.escape(r.exercise)}</code></td><td>{r.attempted}</td><td>{r.correct}</td>"
                f"<td style='color:{color};font-weight:bold'>{pct}</td>"
                f"<td>{'' if r.median_attempts is None else f'{r.median_attempts:.1f}'}</td>"
                f"<td>{r.hints}</td><td>{r.solutions}</td>"
                f"<td title='{html.escape(', '.join(r.stuck))}'>{len(r.stuck) or ''}</td>"
                f"<td>{len(r.working) or ''}</td><td>{common}</td></tr>")
        notes = "".join(f"<br><small>Note: {html.escape(p)}.</small>" for p in self.problems())
        return (f"<div><b>Room: {len(self.learners)} learners, {self.events} events</b>{notes}"
                "<table><tr><th>exercise</th><th>tried</th><th>passed</th><th>pass rate</th><th>median checks</th>"
                "<th>hints</th><th>solutions</th><th>stuck</th><th>now</th><th>common mistakes</th></tr>"
                + "".join(body) + "</table></div>")

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for r in self.rows:
            d = asdict(r)
            d["mistakes"] = dict(r.mistakes.most_common())
            d["pass_rate"] = r.pass_rate
            rows.append(d)
        return {"learners": self.learners, "events": self.events, "since": self.since,
                "skipped": self.skipped, "skipped_reasons": dict(self.reasons),
                "unreadable": list(self.unreadable), "exercises": rows}

    def write_csv(self, path: str | os.PathLike[str]) -> None:
        import csv

        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["exercise", "learners", "attempted", "correct", "pass_rate", "median_attempts",
                        "median_attempts_to_pass", "hints", "solutions", "stuck", "working_now", "common_mistakes"])
            for r in self.rows:
                w.writerow([r.exercise, r.learners, r.attempted, r.correct,
                            "" if r.pass_rate is None else round(r.pass_rate, 3),
                            "" if r.median_attempts is None else r.median_attempts,
                            "" if r.median_attempts_to_pass is None else r.median_attempts_to_pass,
                            r.hints, r.solutions, len(r.stuck), len(r.working),
                            "; ".join(f"{m}={k}" for m, k in r.top_mistakes(5))])

    def plot(self, path: str | os.PathLike[str] | None = None, ax: Any = None, all_rows: bool = False) -> Any:
        """Horizontal bars per exercise: learners passed / attempted but not passed (stuck in
        red) / not attempted, with the median number of checks. Saves a PNG when ``path``.

        Sized for a projector: the title sits in its own band at the top and the legend in its
        own band at the bottom (fixed in inches, whatever the number of rows), so neither covers
        the other or the bars; the margins are set by hand, not by ``tight_layout`` (which
        draws the whole figure once more: the redraw of ``--watch`` stays quick)."""
        from matplotlib.figure import Figure  # no pyplot: works headless and leaves no open figures

        rows = self.rows if all_rows else self.active_rows()
        own = ax is None
        if own:
            fig = Figure(figsize=(PLOT_WIDTH, PLOT_TOP + PLOT_BOTTOM + PLOT_ROW * max(1, len(rows))))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        names = [r.exercise for r in rows]
        y = list(range(len(rows)))[::-1]
        passed = [r.correct for r in rows]
        stuck = [len(r.stuck) for r in rows]
        trying = [r.failing - len(r.stuck) for r in rows]
        untried = [r.learners - r.attempted for r in rows]
        left = [0] * len(rows)
        for values, color, label in ((passed, "#1b7f3b", "passed"), (trying, "#e0a800", "trying"),
                                     (stuck, "#b3261e", "stuck"), (untried, "#d9d9d9", "not attempted")):
            ax.barh(y, values, left=left, color=color, label=label, height=0.7)
            left = [a + b for a, b in zip(left, values)]
        for yi, r in zip(y, rows):
            if r.median_attempts is not None:
                ax.text(r.learners * 1.01 + 0.2, yi, f"{r.median_attempts:g}", va="center", fontsize=PLOT_FONT - 1,
                        color="#444")
        ax.set_yticks(y)
        ax.set_yticklabels(names, fontsize=PLOT_FONT)
        ax.tick_params(axis="x", labelsize=PLOT_FONT)
        ax.set_xlim(0, max(1, len(self.learners)) * 1.12)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xlabel("learners (number at the end of a bar: median checks of those who tried)", fontsize=PLOT_FONT)
        title = f"Room: {len(self.learners)} learners, {self.events} events"
        if not own:  # someone else's axes: title and legend in the axes' own places
            ax.set_title(title, fontsize=PLOT_FONT + 2)
            ax.legend(loc="lower right", fontsize=PLOT_FONT, framealpha=0.9)
            return fig
        width, height = fig.get_size_inches()
        label_in = 0.3 + 0.0085 * PLOT_FONT * max((len(n) for n in names), default=8)  # ~0.6 em per character
        fig.subplots_adjust(left=min(0.6, label_in / width), right=0.97,
                            top=1 - PLOT_TOP / height, bottom=PLOT_BOTTOM / height)
        fig.suptitle(title, fontsize=PLOT_FONT + 3, y=1 - 0.12 / height, va="top")
        fig.legend(*ax.get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 0.06 / height),
                   ncols=4, fontsize=PLOT_FONT, frameon=False)
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig


# The room plot's geometry, in inches and points (a projector: large type, fixed bands).
PLOT_WIDTH, PLOT_ROW, PLOT_TOP, PLOT_BOTTOM, PLOT_FONT = 11.0, 0.34, 0.75, 1.2, 11


# ---------------------------------------------------------------------- reading and folding


def log_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Log files named directly, plus every ``*.jsonl`` under folders named; a file reached
    twice (named twice, a link, a folder inside another named one) is listed once. One
    ``stat`` per file: the room view lists 300 logs at every ``--watch`` redraw."""
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def add(q: Path, must_be_file: bool) -> None:
        try:
            st = q.stat()
        except OSError:
            return
        if must_be_file and not stat.S_ISREG(st.st_mode):
            return
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            out.append(q)

    for p in map(Path, paths):
        if p.is_dir():
            for q in sorted(p.rglob("*.jsonl")):
                add(q, True)
        else:
            add(p, False)
    return out


@dataclass
class RoomLogs:
    """Events grouped by learner, and what reading left out."""

    per_learner: dict[str, list[dict[str, Any]]]
    skipped: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)  # learner -> the log their events came from


# A log file's identity between two reads: (mtime_ns, size).
Signature = tuple[int, int]


def _signature(path: Path) -> Signature | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class LogCache:
    """The logs read so far, each with the signature it had: ``--watch`` re-reads only the logs
    that changed since the last redraw (a room of 300 mostly idle learners redraws quickly)."""

    def __init__(self) -> None:
        self._reads: dict[Path, tuple[Signature, LogRead]] = {}
        self._folds: dict[tuple[Path, str, float | None], tuple[tuple[Signature, int], LearnerFold]] = {}

    def read(self, path: Path) -> LogRead:
        sig = _signature(path)
        hit = self._reads.get(path)
        if sig is not None and hit is not None and hit[0] == sig:
            return hit[1]
        log = read_log(path)  # raises LogError (not cached: it is retried at the next redraw)
        if sig is not None:
            self._reads[path] = (sig, log)
        return log

    def fold(self, path: Path, learner: str, events: list[dict[str, Any]], since: float | None) -> LearnerFold:
        """``events`` (a learner's, read from ``path``) folded, again only when that log changed."""
        hit = self._reads.get(path)
        key = (path, learner, since)
        kept = self._folds.get(key)
        if hit is not None and kept is not None and kept[0] == (hit[0], len(events)):
            return kept[1]
        fold = fold_learner(events, validated=True)  # events of read_log: validated there
        if hit is not None:
            self._folds[key] = ((hit[0], len(events)), fold)
        return fold


def room_signature(files: Iterable[Path]) -> tuple[tuple[Path, Signature | None], ...]:
    """What changes when any log changes (or one is added or removed)."""
    return tuple((f, _signature(f)) for f in files)


def read_room(files: Iterable[Path], since: float | None = None, cache: LogCache | None = None) -> RoomLogs:
    """Read every log (validated by :func:`course_utils.progress.read_log`; malformed lines are
    counted, unreadable files named) and group events by learner. The learner is each event's
    ``learner`` field; the same name in two different files (everyone is ``jovyan`` on Binder)
    counts as two learners. With a ``cache``, a log unchanged since its last read is not read again."""
    raw: dict[tuple[str, Path], list[dict[str, Any]]] = {}
    res = RoomLogs({})
    for f in files:
        try:
            log = cache.read(f) if cache is not None else read_log(f)
        except LogError as exc:
            res.unreadable.append(str(exc))
            continue
        res.skipped += log.skipped
        for why, n in log.reasons.items():
            res.reasons[why] = res.reasons.get(why, 0) + n
        stem = f.stem
        mine: dict[str, list[dict[str, Any]]] = {}  # this file's events by learner (hashing a str, not a Path)
        for ev in log.events:
            if since is not None and float(ev.get("ts", 0) or 0) < since:
                continue
            who = str(ev.get("learner") or stem)
            evs = mine.get(who)
            if evs is None:
                evs = mine[who] = []
            evs.append(ev)
        for who, evs in mine.items():
            raw.setdefault((who, f), []).extend(evs)
    names = Counter(who for who, _ in raw)
    out: dict[str, list[dict[str, Any]]] = {}
    for (who, f), evs in raw.items():
        key = who if names[who] == 1 else f"{who} ({f.parent.name + '/' if f.parent.name else ''}{f.name})"
        evs.sort(key=lambda e: float(e.get("ts", 0) or 0))
        out.setdefault(key, []).extend(evs)
        res.sources[key] = f
    res.per_learner = dict(sorted(out.items()))
    return res


def learners_events(files: Iterable[Path], since: float | None = None) -> dict[str, list[dict[str, Any]]]:
    """Events grouped by learner (see :func:`read_room`)."""
    return read_room(files, since).per_learner


def _attempts_to_pass(events: list[dict[str, Any]]) -> dict[str, int]:
    """Exercise -> the checks of an answer up to (and with) the first pass, in one walk of a
    learner's events (exercises never passed are left out)."""
    counts: dict[str, int] = {}
    passed: dict[str, int] = {}
    for ev in events:
        ex = ev["exercise"]
        if ev["event"] == "check" and ev.get("status") in ("correct", "incorrect") and ex not in passed:
            counts[ex] = counts.get(ex, 0) + 1
            if ev.get("status") == "correct":
                passed[ex] = counts[ex]
    return passed


@dataclass
class LearnerFold:
    """One learner's events folded once: what :func:`summarize` aggregates per exercise."""

    progress: dict[str, ExerciseProgress]
    predictions: dict[str, PredictionProgress]
    to_pass: dict[str, int]  # exercise -> checks up to the first pass
    latest: str | None  # the exercise of the latest event (not a prediction)
    events: int


def fold_learner(events: list[dict[str, Any]], validated: bool = False) -> LearnerFold:
    """One learner's events folded (``validated``: they came from
    :func:`course_utils.progress.read_log`, which validated every one; others are validated
    here, once, and the invalid ones left out)."""
    if not validated:
        events = [e for e in events if valid_event(e)]
    latest = next((e["exercise"] for e in reversed(events) if e["event"] != "prediction"), None)
    return LearnerFold(exercise_progress(events, validated=True), prediction_progress(events, validated=True),
                       _attempts_to_pass(events), latest, len(events))


def summarize(per_learner: dict[str, list[dict[str, Any]]], exercises: Iterable[str] | None = None,
              stuck_after: int = STUCK_AFTER, since: float | None = None,
              folds: dict[str, LearnerFold] | None = None, validated: bool = False) -> RoomSummary:
    """Fold each learner's events with :func:`exercise_progress` and aggregate per exercise
    (``folds``: the learners' events already folded, e.g. kept by a :class:`LogCache`;
    ``validated``: the events came from :func:`read_room`, not validated again)."""
    fold_of = folds if folds is not None else {who: fold_learner(evs, validated)
                                               for who, evs in per_learner.items()}
    ids = list(exercises) if exercises is not None else _course_ids()
    seen = {ex for f in fold_of.values() for ex in f.progress}
    ids += sorted(seen - set(ids))
    learners = list(per_learner)
    # one walk over what each learner touched (not every exercise times every learner), in
    # learner order: the stuck and working lists, and the mistakes' ties, keep that order
    stats = {ex: ExerciseStats(ex, learners=len(learners)) for ex in ids}
    attempts: dict[str, list[int]] = {ex: [] for ex in ids}
    to_pass: dict[str, list[int]] = {ex: [] for ex in ids}
    for who in learners:
        fold = fold_of[who]
        for ex, p in fold.progress.items():
            st = stats[ex]
            st.hints += p.hints
            st.solutions += int(p.solution_viewed)
            if fold.latest == ex:
                st.working.append(who)
            if p.attempts == 0:
                continue
            st.attempted += 1
            attempts[ex].append(p.attempts)
            st.mistakes.update(p.mistakes)
            if p.status == "correct":
                st.correct += 1
                k = fold.to_pass.get(ex)
                if k is not None:
                    to_pass[ex].append(k)
            elif p.attempts >= stuck_after or p.solution_viewed:
                st.stuck.append(who)
    rows = []
    for ex in ids:
        st = stats[ex]
        st.median_attempts = _median(attempts[ex]) if attempts[ex] else None
        st.median_attempts_to_pass = _median(to_pass[ex]) if to_pass[ex] else None
        rows.append(st)
    n_events = sum(fold_of[who].events for who in learners)
    predictions: dict[str, tuple[int, int]] = {}
    for who in learners:
        for q, pred in fold_of[who].predictions.items():
            k, r = predictions.get(q, (0, 0))
            predictions[q] = (k + 1, r + int(bool(pred.first_right)))
    return RoomSummary(learners, rows, n_events, since, predictions=predictions)


def _median(values: list[int]) -> float:
    """``statistics.median`` of a non-empty list, as a float (without importing statistics,
    which imports random, decimal and fractions: the room view's start-up counts)."""
    v = sorted(values)
    mid = len(v) // 2
    return float(v[mid]) if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def _course_ids() -> list[str]:
    """The course's exercises in course order, from the generated index (no grader imported)."""
    from ..exercise_index import EXERCISES

    return [e.id for e in EXERCISES]


def room_summary(paths: Iterable[str | os.PathLike[str]], exercises: Iterable[str] | None = None,
                 stuck_after: int = STUCK_AFTER, since: float | None = None,
                 cache: LogCache | None = None, files: list[Path] | None = None) -> RoomSummary:
    """Read logs (files or folders) and summarise the room; malformed lines are skipped and
    counted, unreadable files named (:meth:`RoomSummary.problems`), never fatal. ``cache`` keeps
    the logs read between calls (``--watch``); ``files``: the logs ``paths`` hold, when known."""
    paths = list(paths)
    files = log_files(paths) if files is None else files
    logs = read_room(files, since, cache)
    logs.unreadable += [f"{p}: no such file or folder" for p in map(Path, paths) if not p.exists()]
    folds = None if cache is None else {who: cache.fold(logs.sources[who], who, evs, since)
                                        for who, evs in logs.per_learner.items()}
    summary = summarize(logs.per_learner, exercises, stuck_after, since, folds, validated=True)
    summary.skipped, summary.reasons, summary.unreadable = logs.skipped, logs.reasons, logs.unreadable
    return summary


# ---------------------------------------------------------------------- synthetic rooms


def synthetic_logs(folder: str | os.PathLike[str], n_learners: int = 30, seed: int = 0,
                   exercises: list[str] | None = None, start: float | None = None) -> list[Path]:
    """Write ``n_learners`` plausible progress logs (one file each) for demos, tests and the
    benchmark: learners of varied speed work through the exercises in order, fail with the
    exercises' own named mistakes, take hints, sometimes view solutions."""
    import random  # lazily: only demos, tests and the benchmark make logs up

    rng = random.Random(seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids = exercises if exercises is not None else _course_ids()
    mistakes = _mistake_ids(ids)
    t0 = time.time() - 3 * 3600 if start is None else start
    paths = []
    for i in range(n_learners):
        who = f"learner{i + 1:02d}"
        skill = rng.uniform(0.35, 0.9)
        reach = max(1, int(len(ids) * min(1.0, rng.uniform(0.3, 1.2))))
        t = t0 + rng.uniform(0, 300)
        lines = []

        def ev(kind: str, ex: str, **kw: Any) -> None:
            nonlocal t
            t += rng.uniform(20, 240)
            # (B023: called only within this learner's iteration)
            lines.append(json.dumps({"ts": round(t, 3), "learner": who, "event": kind, "exercise": ex, **kw}))  # noqa: B023

        for ex in ids[:reach]:
            for attempt in range(rng.randint(1, 7)):
                if rng.random() < 0.15:
                    ev("hint", ex, level=attempt + 1)
                if rng.random() < skill:
                    ev("check", ex, status="correct", mistake=None)
                    break
                if rng.random() < 0.1:
                    ev("check", ex, status="not_attempted", mistake=None)
                    continue
                options = mistakes.get(ex) or ["wrong_shape", "wrong_values", "exception"]
                ev("check", ex, status="incorrect", mistake=rng.choice(options + ["wrong_values"]))
            else:
                if rng.random() < 0.3:
                    ev("solution", ex)
        path = folder / f"{who}.jsonl"
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        paths.append(path)
    return paths


def _mistake_ids(ids: list[str]) -> dict[str, list[str]]:
    from ..exercise_index import EXERCISES

    wanted = set(ids)
    return {e.id: list(e.mistakes) for e in EXERCISES if e.id in wanted}


# ---------------------------------------------------------------------- the command


def _write_outputs(room: RoomSummary, args: argparse.Namespace) -> None:
    if args.plot:
        room.plot(args.plot, all_rows=args.all)
        print(f"\nwrote {args.plot}")
    if args.csv:
        room.write_csv(args.csv)
        print(f"wrote {args.csv}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(room.to_dict(), fh, indent=1)
        print(f"wrote {args.json}")


def _run(args: argparse.Namespace) -> int:
    files = log_files(args.files)
    if not files:
        print("no progress logs found in " + ", ".join(args.files), file=sys.stderr)
        return 2
    since = time.time() - 60 * args.since if args.since else None
    cache = LogCache()
    last: tuple[Any, RoomSummary] | None = None
    while True:
        files = log_files(args.files) if last is not None else files
        sig = room_signature(files)
        changed = last is None or last[0] != sig
        room = room_summary(args.files, stuck_after=args.stuck_after, since=since, cache=cache, files=files) \
            if changed or last is None else last[1]
        last = (sig, room)
        if args.watch:
            print("\x1b[2J\x1b[H", end="")
            print(time.strftime("%H:%M:%S"), "(refreshing every", args.watch, "s; Ctrl-C stops)\n")
        print(room.text(args.all))
        if changed:  # the plot, CSV and JSON are redrawn only when a log changed
            _write_outputs(room, args)
        if not args.watch:
            if room.unreadable:
                print("progress summary: could not read " + "; ".join(room.unreadable), file=sys.stderr)
            return 1 if room.unreadable else 0
        try:
            time.sleep(args.watch)
        except KeyboardInterrupt:
            return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m course_utils progress summary FILES...`` (dispatched by :mod:`course_utils.progress_cli`)."""
    ap = argparse.ArgumentParser(prog="python -m course_utils progress summary", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="FILE", help="progress logs, or folders of *.jsonl logs")
    ap.add_argument("--plot", metavar="PNG", help="also save a bar chart per exercise")
    ap.add_argument("--csv", metavar="FILE", help="write the per-exercise table as CSV")
    ap.add_argument("--json", metavar="FILE", help="write the room view as JSON")
    ap.add_argument("--since", type=float, metavar="MINUTES", help="only events of the last MINUTES")
    ap.add_argument("--stuck-after", type=int, default=STUCK_AFTER,
                    help=f"checks without a pass that count as stuck (default {STUCK_AFTER})")
    ap.add_argument("--all", action="store_true", help="also list exercises nobody has touched yet")
    ap.add_argument("--watch", type=float, metavar="SECONDS", help="redraw every SECONDS until Ctrl-C")
    return _run(ap.parse_args(argv))
