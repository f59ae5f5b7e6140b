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
import json
import os
import sqlite3
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from .grade_report import COLUMNS, NotebookReport, Row, duplicates, refused, shown

SCHEMA = """
CREATE TABLE IF NOT EXISTS notebooks (
    path_bytes BLOB NOT NULL, sha256 TEXT NOT NULL, path TEXT, student TEXT, lesson TEXT,
    error TEXT, problems TEXT, seconds REAL, graded_at TEXT, sandboxed INTEGER,
    PRIMARY KEY (path_bytes, sha256));
CREATE TABLE IF NOT EXISTS grades (
    path_bytes BLOB NOT NULL, sha256 TEXT NOT NULL, exercise TEXT NOT NULL, status TEXT, mistake TEXT,
    detail TEXT, points REAL, max_points REAL, PRIMARY KEY (path_bytes, sha256, exercise));
"""


def key(path: str | os.PathLike[str]) -> bytes:
    """A notebook's key in the gradebook: its resolved path (however it was typed), the file
    itself unresolved (a symlink is refused, never followed)."""
    p = Path(path)
    return os.fsencode(p.parent.resolve() / p.name)


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
                                  (key(path), sha)).fetchone()
        return row is not None

    def record(self, report: Any, sha: str, sandboxed: bool) -> None:
        """Store one graded notebook and its rows in one transaction."""
        k = key(report.path)
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("DELETE FROM grades WHERE path_bytes=? AND sha256=?", (k, sha))
                self.db.execute(
                    "INSERT OR REPLACE INTO notebooks VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (k, sha, shown(report.path), report.student, report.lesson, report.error,
                     json.dumps(report.problems, ensure_ascii=False), report.seconds,
                     time.strftime("%Y-%m-%dT%H:%M:%S"), int(sandboxed)))
                for r in report.rows:
                    self.db.execute("INSERT OR REPLACE INTO grades VALUES (?,?,?,?,?,?,?,?)",
                                    (k, sha, r.exercise, r.status, r.mistake, r.detail, r.points, r.max_points))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def load(self, path: Path, sha: str) -> Any:
        """A stored report (for notebooks skipped on resume)."""
        k = key(path)
        with self.lock:
            nb = self.db.execute("SELECT path, student, lesson, error, problems, seconds FROM notebooks "
                                 "WHERE path_bytes=? AND sha256=?", (k, sha)).fetchone()
            rows = self.db.execute("SELECT exercise, status, mistake, detail, points, max_points FROM grades "
                                   "WHERE path_bytes=? AND sha256=? ORDER BY rowid", (k, sha)).fetchall()
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


def safe(cell: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting with ``= + - @``, a tab or a CR
    (a formula to Excel, LibreOffice, Sheets) gets a leading ``'`` (OWASP, "CSV Injection")."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def _writer(fh: Any) -> Any:
    w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL)
    return lambda row: w.writerow([safe(str(c)) for c in row])


def write_csv(reports: list, path: str | os.PathLike[str]) -> None:
    def write(fh: Any) -> None:
        row = _writer(fh)
        row(COLUMNS)
        for rep in reports:
            for r in rep.rows:
                row([r.student, r.notebook, r.exercise, r.status, r.mistake, _num(r.points), _num(r.max_points)])
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


def total(rep: Any) -> float:
    return sum(r.points for r in rep.rows)


def read_roster(path: str | os.PathLike[str]) -> dict[str, str]:
    """``student -> id`` from a roster CSV with the columns ``student`` and ``id`` (any case,
    any other columns ignored), in the roster's order."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        cols = {c.strip().casefold(): c for c in reader.fieldnames or []}
        if "student" not in cols or "id" not in cols:
            raise ValueError(f"{shown(path)}: a roster needs the columns student and id "
                             f"(it has {', '.join(reader.fieldnames or []) or 'none'})")
        return {row[cols["student"]].strip(): (row[cols["id"]] or "").strip()
                for row in reader if (row[cols["student"]] or "").strip()}


LMS_FORMATS = ("plain", "canvas", "moodle")
"""``--lms`` conventions of the wide CSV. plain: Student, ID, one column per lesson with its
points in the header, Total. canvas (a Canvas gradebook import: Grades > Import): Student, ID,
SIS User ID, SIS Login ID, Section, one column per lesson, Final Points (read-only to Canvas), a
Points Possible row; the roster's id is the SIS User ID. moodle (Grades > Import > CSV file):
Student, ID number (map it to "ID number"), one column per lesson, Course total."""


def lms_table(reports: list, lessons: Iterable[str], roster: dict[str, str] | None = None,
              fmt: str = "plain") -> list[list[str]]:
    """The wide CSV's rows: one per student (the roster's first, in its order), one cell of
    points per lesson and their total. A cell is blank when the lesson was not handed in, or
    handed in twice (:func:`.grade_report.duplicates`: the instructor decides which counts);
    refused notebooks count for no one."""
    roster = roster or {}
    dups = duplicates(reports)
    counted = {(rep.student, rep.lesson): rep for rep in reports if rep.lesson and not refused(rep)}
    for k in dups:
        counted.pop(k, None)
    handed = {rep.lesson for rep in reports if rep.lesson and not refused(rep)}
    lessons = [lesson for lesson in lessons if lesson in handed]
    maxima: dict[str, float] = defaultdict(float)
    for rep in reports:
        if rep.lesson in handed and not refused(rep):
            maxima[rep.lesson] = max(maxima[rep.lesson], sum(r.max_points for r in rep.rows))
    graded = {rep.student for rep in reports if rep.lesson and not refused(rep)}
    students = list(roster) + sorted(graded - set(roster))
    top = sum(maxima[lesson] for lesson in lessons)
    if fmt == "canvas":
        head = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
        table = [head + lessons + ["Final Points"],
                 ["Points Possible", "", "", "", ""] + [_num(maxima[le]) for le in lessons] + [_num(top)]]
    elif fmt == "moodle":
        table = [["Student", "ID number"] + lessons + ["Course total"]]
    else:
        table = [["Student", "ID"] + [f"{le} ({_num(maxima[le])} pts)" for le in lessons]
                 + [f"Total ({_num(top)} pts)"]]
    for s in students:
        points = [total(counted[(s, le)]) if (s, le) in counted else None for le in lessons]
        cells = ["" if p is None else _num(p) for p in points]
        ids = ["", roster.get(s, ""), "", ""] if fmt == "canvas" else [roster.get(s, "")]
        done = [p for p in points if p is not None]
        table.append([s] + ids + cells + [_num(sum(done)) if done else ""])
    return table


def write_wide_csv(reports: list, path: str | os.PathLike[str], lessons: Iterable[str],
                   roster: dict[str, str] | None = None, fmt: str = "plain") -> None:
    """The wide CSV for an LMS import (:func:`lms_table`), every text cell spreadsheet-safe."""
    def write(fh: Any) -> None:
        row = _writer(fh)
        for r in lms_table(reports, lessons, roster, fmt):
            row(r)
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
