"""The gradebook: one SQLite file written by the host as each submission finishes.

Only the instructor's ``grade`` process writes it (sandboxes never see it), one transaction
per notebook, so a ``grade`` killed at any moment loses at most the notebooks in flight, and
rerunning the same command grades only what is not in it yet (same path, same content).
Exports (long CSV, JSON, wide CSV for Canvas/Moodle) are made from it.

File names are kept as bytes (any name a file system allows) and shown with undecodable bytes
escaped (``\\xff``), so every export is valid UTF-8.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from .grade_report import COLUMNS, NotebookReport, Row, shown

SCHEMA = """
CREATE TABLE IF NOT EXISTS notebooks (
    path_bytes BLOB NOT NULL, sha256 TEXT NOT NULL, path TEXT, student TEXT, lesson TEXT,
    error TEXT, problems TEXT, seconds REAL, graded_at TEXT, sandboxed INTEGER,
    PRIMARY KEY (path_bytes, sha256));
CREATE TABLE IF NOT EXISTS grades (
    path_bytes BLOB NOT NULL, sha256 TEXT NOT NULL, exercise TEXT NOT NULL, status TEXT, mistake TEXT,
    detail TEXT, points REAL, max_points REAL, PRIMARY KEY (path_bytes, sha256, exercise));
"""


def digest(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"
    return h.hexdigest()


class Gradebook:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.lock = threading.Lock()
        self.db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=60, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def done(self, path: Path, sha: str) -> bool:
        with self.lock:
            row = self.db.execute("SELECT 1 FROM notebooks WHERE path_bytes=? AND sha256=?",
                                  (os.fsencode(path), sha)).fetchone()
        return row is not None

    def record(self, report: Any, sha: str, sandboxed: bool) -> None:
        """Store one graded notebook and its rows in one transaction."""
        key = os.fsencode(report.path)
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("DELETE FROM grades WHERE path_bytes=? AND sha256=?", (key, sha))
                self.db.execute(
                    "INSERT OR REPLACE INTO notebooks VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (key, sha, shown(report.path), report.student, report.lesson, report.error,
                     json.dumps(report.problems, ensure_ascii=False), report.seconds,
                     time.strftime("%Y-%m-%dT%H:%M:%S"), int(sandboxed)))
                for r in report.rows:
                    self.db.execute("INSERT OR REPLACE INTO grades VALUES (?,?,?,?,?,?,?,?)",
                                    (key, sha, r.exercise, r.status, r.mistake, r.detail, r.points, r.max_points))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def load(self, path: Path, sha: str) -> Any:
        """A stored report (for notebooks skipped on resume)."""
        key = os.fsencode(path)
        with self.lock:
            nb = self.db.execute("SELECT path, student, lesson, error, problems, seconds FROM notebooks "
                                 "WHERE path_bytes=? AND sha256=?", (key, sha)).fetchone()
            rows = self.db.execute("SELECT exercise, status, mistake, detail, points, max_points FROM grades "
                                   "WHERE path_bytes=? AND sha256=? ORDER BY rowid", (key, sha)).fetchall()
        rep = NotebookReport(str(path), nb[1], nb[2], problems=json.loads(nb[4] or "[]"), seconds=nb[5] or 0.0,
                             error=nb[3])
        rep.shown = nb[0]
        rep.resumed = True
        for ex, status, mistake, detail, points, max_points in rows:
            rep.rows.append(Row(nb[1], nb[0], ex, status, mistake or "", detail or "", points or 0.0,
                                max_points or 0.0))
        return rep

    def close(self) -> None:
        with self.lock:
            self.db.close()


# ----------------------------------------------------------------------------- exports


def _atomic_write(path: str | os.PathLike[str], write: Any) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        write(fh)
    os.replace(tmp, path)


def _num(x: float) -> str:
    return f"{x:g}"


def write_csv(reports: list, path: str | os.PathLike[str]) -> None:
    def write(fh: Any) -> None:
        w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL)
        w.writerow(COLUMNS)
        for rep in reports:
            for r in rep.rows:
                w.writerow([r.student, r.notebook, r.exercise, r.status, r.mistake, _num(r.points), _num(r.max_points)])
    _atomic_write(path, write)


def write_json(reports: list, path: str | os.PathLike[str], duplicates: dict | None = None) -> None:
    dup_paths = {p for paths in (duplicates or {}).values() for p in paths}
    rows = []
    for rep in reports:
        for r in rep.rows:
            d = {c: getattr(r, c) for c in COLUMNS}
            d["detail"] = r.detail
            d["duplicate"] = rep.path in dup_paths
            rows.append(d)
    _atomic_write(path, lambda fh: fh.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n"))


def best_per_student(reports: list) -> dict[tuple[str, str], Any]:
    """``(student, lesson) -> report``: with duplicates, the one with the most points."""
    best: dict[tuple[str, str], Any] = {}
    for rep in reports:
        if not rep.lesson:
            continue
        key = (rep.student, rep.lesson)
        if key not in best or total(rep) > total(best[key]):
            best[key] = rep
    return best


def total(rep: Any) -> float:
    return sum(r.points for r in rep.rows)


def write_wide_csv(reports: list, path: str | os.PathLike[str], lessons: Iterable[str]) -> None:
    """One row per student, one column of points per lesson, and the total: the shape Canvas
    and Moodle gradebook imports take (a header row, one student per row, numbers only)."""
    best = best_per_student(reports)
    lessons = [lesson for lesson in lessons if any(k[1] == lesson for k in best)]
    maxima: dict[str, float] = defaultdict(float)
    for (_student, lesson), rep in best.items():
        maxima[lesson] = max(maxima[lesson], sum(r.max_points for r in rep.rows))
    students = sorted({k[0] for k in best})

    def write(fh: Any) -> None:
        w = csv.writer(fh)
        w.writerow(["Student"] + [f"{lesson} ({_num(maxima[lesson])} pts)" for lesson in lessons]
                   + [f"Total ({_num(sum(maxima.values()))} pts)"])
        for s in students:
            cells = [total(best[(s, lesson)]) if (s, lesson) in best else 0.0 for lesson in lessons]
            w.writerow([s] + [_num(c) for c in cells] + [_num(sum(cells))])
    _atomic_write(path, write)


# ----------------------------------------------------------------------------- merging shards


def merge(sources: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str]) -> dict[str, int]:
    """Join gradebooks (the shards of ``grade --shard K/N``) into ``out``, one transaction each:
    every graded notebook once, with exactly the rows it was stored with. A notebook (same path,
    same content) found in two gradebooks is kept once: the more recently graded copy, its rows
    replacing the other's, never mixed. Returns how many notebooks were ``added``, ``replaced``
    (a later grading won) and ``kept`` (``out`` had them already, as recent)."""
    counts = {"added": 0, "replaced": 0, "kept": 0}
    book = Gradebook(out)
    try:
        for source in sources:
            if Path(source).resolve() == book.path.resolve():
                raise ValueError(f"{shown(source)} is the gradebook being written (--out)")
            if not Path(source).is_file():
                raise FileNotFoundError(f"no gradebook at {shown(source)}")
            src = sqlite3.connect(f"file:{Path(source).resolve().as_posix()}?mode=ro", uri=True)
            try:
                notebooks = src.execute("SELECT * FROM notebooks ORDER BY rowid").fetchall()
                grades = src.execute("SELECT * FROM grades ORDER BY rowid").fetchall()
            except sqlite3.DatabaseError as exc:
                raise ValueError(f"{shown(source)} is not a gradebook ({exc})") from None
            finally:
                src.close()
            rows_of: dict[tuple[bytes, str], list[tuple]] = defaultdict(list)
            for g in grades:
                rows_of[(g[0], g[1])].append(g)
            with book.lock:
                book.db.execute("BEGIN IMMEDIATE")
                try:
                    for nb in notebooks:
                        key, graded_at = (nb[0], nb[1]), nb[8] or ""
                        have = book.db.execute("SELECT graded_at FROM notebooks WHERE path_bytes=? AND sha256=?",
                                               key).fetchone()
                        if have is not None and (have[0] or "") >= graded_at:
                            counts["kept"] += 1
                            continue
                        counts["replaced" if have is not None else "added"] += 1
                        book.db.execute("DELETE FROM grades WHERE path_bytes=? AND sha256=?", key)
                        book.db.execute("INSERT OR REPLACE INTO notebooks VALUES (?,?,?,?,?,?,?,?,?,?)", nb)
                        book.db.executemany("INSERT INTO grades VALUES (?,?,?,?,?,?,?,?)", rows_of[key])
                    book.db.execute("COMMIT")
                except BaseException:
                    book.db.execute("ROLLBACK")
                    raise
    finally:
        book.close()
    return counts
