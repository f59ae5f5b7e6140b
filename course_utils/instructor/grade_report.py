"""The grader's results, step 3 of ``grade`` (:mod:`.grade`): one :class:`Row` per exercise of a
notebook, a :class:`NotebookReport` per notebook, and the readable summary printed at the end.

The rows are stored by :mod:`.gradebook` (SQLite, and the CSV/JSON/wide-CSV exports made from it).
Parsing a submission is :mod:`.grade_parse`; running and judging it is :mod:`.grade_run`."""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("correct", "incorrect", "not_attempted", "error")
COLUMNS = ("student", "notebook", "exercise", "status", "mistake", "points", "max_points")


def shown(path: str | os.PathLike[str]) -> str:
    """A file name as text on one line: undecodable bytes and control characters (a newline in a
    name; the bidirectional controls that show ``alice\\u202e`` followed by text reversed, in a
    terminal or a spreadsheet) escaped (``\\xe9``, ``\\n``, ``\\u202e``), never an exception."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return "".join(ch.encode("unicode_escape").decode("ascii") if _invisible(ch) else ch for ch in text)


def _invisible(ch: str) -> bool:
    """A control or an invisible format character (Unicode Cc and Cf: a newline, the
    bidirectional controls, a zero-width space that makes ``cos\u200bm00`` look like ``cosm00``)."""
    return unicodedata.category(ch) in ("Cc", "Cf")


def clean(text: Any, n: int = 600) -> str:
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", str(text))[:n]


@dataclass
class Row:
    student: str
    notebook: str
    exercise: str
    status: str
    mistake: str = ""
    detail: str = ""
    points: float = 0.0
    max_points: float = 0.0


@dataclass
class NotebookReport:
    path: str
    student: str
    lesson: str | None
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None  # why the notebook could not be graded completely
    shown: str = ""
    resumed: bool = False

    def __post_init__(self) -> None:
        self.shown = self.shown or shown(self.path)


def exercise_rows(report: NotebookReport, lesson: str, checked: set[str], verdicts: dict[str, dict],
                   error: str | None, mistake: str | None) -> None:
    """The rows of one notebook: one per exercise of ``lesson``, from the judge's ``verdicts``
    (``checked``: the exercises with a check cell; ``error``: why the run stopped early)."""
    from ..exercise_index import EXERCISES  # the host never imports the graders (nor torch)

    report.error = error
    for ex in (e for e in EXERCISES if e.lesson == lesson):
        points = ex.points
        v = verdicts.get(ex.id)
        if v is not None:
            status = str(v["status"]) if v.get("status") in STATUSES else "error"
            row = Row(report.student, report.shown, ex.id, status, clean(v.get("mistake") or "", 60),
                      clean(v.get("message") or ""))
        elif ex.id in checked and not error:
            row = Row(report.student, report.shown, ex.id, "error", "export_missing",
                      "the notebook reached its end but handed out no answer for this check cell")
        elif error:
            row = Row(report.student, report.shown, ex.id, "error", mistake or "", error)
        else:
            row = Row(report.student, report.shown, ex.id, "not_attempted", "no_check_cell",
                      f"no `ex.{ex.name}.check(...)` cell checking the exercise's answer was found")
        row.max_points = points
        row.points = points if row.status == "correct" else 0.0
        report.rows.append(row)


def rows_of(reports: Iterable[NotebookReport]) -> list[Row]:
    return [r for rep in reports for r in rep.rows]


REFUSED = {"not_regular_file": "not a regular file", "names_another_student": "names another student"}
"""Mistakes of a submission that is refused unread or uncredited: it counts for no one."""


def refused(rep: NotebookReport) -> bool:
    return bool(rep.rows) and all(r.mistake in REFUSED for r in rep.rows)


def duplicates(reports: list[NotebookReport]) -> dict[tuple[str, str], list[str]]:
    """``(student, lesson) -> notebook paths`` where one student handed in a lesson twice
    (refused notebooks are no hand-in)."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rep in reports:
        if rep.lesson and not refused(rep):
            seen[(rep.student, rep.lesson)].append(rep.path)
    return {k: v for k, v in seen.items() if len(v) > 1}


def summary_text(reports: list[NotebookReport], seconds: float | None = None, workers: int | None = None) -> str:
    """What ``grade`` prints at the end: one line per notebook, then per exercise, the cell
    problems and the duplicates (each section only when it has something to say)."""
    n = len(reports)
    head = f"Graded {n} notebook{'s' * (n != 1)}"
    if seconds is not None:
        head += f" in {seconds:.1f} s"
    if workers is not None:
        head += f" ({workers} in parallel)"
    if not reports:
        return head + "."
    lines = [head + ".", ""]
    lines += _notebook_lines(reports) + _exercise_lines(reports) + _problem_lines(reports) + _refused_lines(reports)
    lines += _duplicate_lines(reports)
    lines += _graded_alone_lines(reports)
    return "\n".join(lines)


def _notebook_lines(reports: list[NotebookReport]) -> list[str]:
    w_student = max(7, *(len(r.student) for r in reports))
    w_nb = max(8, *(len(r.lesson or Path(r.shown).name) for r in reports))
    lines = [f"{'student':<{w_student}}  {'notebook':<{w_nb}}  {'correct':>9}  {'incorrect':>9}  {'not att.':>8}  "
             f"{'points':>9}  note"]
    for rep in sorted(reports, key=lambda r: (r.student, r.lesson or "", r.path)):
        c = Counter(r.status for r in rep.rows)
        total = sum(1 for r in rep.rows if r.exercise)
        pts = f"{sum(r.points for r in rep.rows):g}/{sum(r.max_points for r in rep.rows):g}"
        lines.append(f"{rep.student:<{w_student}}  {(rep.lesson or Path(rep.shown).name):<{w_nb}}  "
                     f"{c['correct']:>4} / {total:<2}  {c['incorrect']:>9}  {c['not_attempted']:>8}  {pts:>9}  "
                     f"{_note(rep)}")
    return lines


def _note(rep: NotebookReport) -> str:
    wrong = [f"{r.exercise.split('.', 1)[-1]}: {r.mistake}" for r in rep.rows if r.status == "incorrect"]
    note = "; ".join(wrong[:3]) + (f" (+{len(wrong) - 3})" if len(wrong) > 3 else "")
    if rep.problems and not rep.error:
        condensed = condensed_problems(rep.problems)
        failed = next((p.split(":", 1)[0] for p in condensed if "the import failed" in p), None)
        note = (note + "; " if note else "") + (f"import failed ({failed}); " if failed else "") + \
            f"{len(condensed)} cell problem(s)"
    if rep.error:
        note = "BROKEN: " + rep.error
    if rep.resumed:
        note = "(from the gradebook) " + note
    return note


def _exercise_lines(reports: list[NotebookReport]) -> list[str]:
    per_ex: dict[str, Counter] = {}
    mistakes: dict[str, Counter] = {}
    for r in rows_of(reports):
        if not r.exercise:
            continue
        per_ex.setdefault(r.exercise, Counter())[r.status] += 1
        if r.status == "incorrect" and r.mistake:
            mistakes.setdefault(r.exercise, Counter())[r.mistake] += 1
    if not per_ex:
        return []
    lines = ["", "Per exercise:"]
    w = max(len(k) for k in per_ex)
    for ex_id, c in per_ex.items():
        total = sum(c.values())
        common = ", ".join(f"{m} ×{k}" for m, k in mistakes.get(ex_id, Counter()).most_common(3))
        lines.append(f"  {ex_id:<{w}}  {c['correct']:>3}/{total} correct"
                     + (f"   mistakes: {common}" if common else ""))
    return lines


_CELL_ERROR = re.compile(r"cell (\d+): (\w+)(?:: (.*))?$")
_IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")
_UNDEFINED = re.compile(r"name '(\w+)' is not defined")


def condensed_problems(problems: list[str]) -> list[str]:
    """A notebook's cell problems as the summary shows them: a failed import cell in one line,
    and the ``NameError`` s of the cells after it (names it would have defined, most likely) in
    one more, instead of one line each."""
    out: list[str] = []
    failed_at: int | None = None  # the first cell whose import failed
    line_at = 0  # where its line is in ``out``
    knock_on: list[tuple[int, str]] = []  # (cell, undefined name) after it
    for problem in problems:
        m = _CELL_ERROR.match(problem)
        if m is None:
            out.append(problem)
            continue
        cell, ename, message = int(m.group(1)), m.group(2), m.group(3) or ""
        if ename in _IMPORT_ERRORS and failed_at is None:
            failed_at, line_at = cell, len(out)
            out.append(f"cell {cell}: the import failed ({ename}: {message}); later cells that need it fail too")
        elif ename == "NameError" and failed_at is not None and cell > failed_at:
            name = _UNDEFINED.search(message)
            knock_on.append((cell, name.group(1) if name else "?"))
        else:
            out.append(problem)
    if knock_on:
        cells = sorted({c for c, _ in knock_on})
        names = list(dict.fromkeys(n for _, n in knock_on))
        shown_names = ", ".join(names[:6]) + (f", … (+{len(names) - 6})" if len(names) > 6 else "")
        where = f"cell {cells[0]}" if len(cells) == 1 else f"cells {cells[0]}–{cells[-1]}"
        n = len(knock_on)
        line = (f"{where}: {n} knock-on NameError{'s' * (n != 1)} after the failed import in cell {failed_at} "
                f"(undefined: {shown_names})")
        out.insert(line_at + 1, line)
    return out


def _problem_lines(reports: list[NotebookReport]) -> list[str]:
    problems = [(rep, p) for rep in reports for p in condensed_problems(rep.problems)]
    if not problems:
        return []
    return ["", "Problems:"] + [f"  {rep.shown}: {p}" for rep, p in problems]


def _refused_lines(reports: list[NotebookReport]) -> list[str]:
    bad = [rep for rep in reports if refused(rep)]
    if not bad:
        return []
    return ["", "REFUSED (credited to no one, in no export's points):"] + [
        f"  {rep.shown}: {rep.error}" for rep in sorted(bad, key=lambda r: r.path)]


def _duplicate_lines(reports: list[NotebookReport]) -> list[str]:
    dups = duplicates(reports)
    if not dups:
        return []
    lines = ["", "DUPLICATES (one student, one lesson, several notebooks; blank in the wide CSV until only one "
                 "is left):"]
    for (student, lesson), paths in sorted(dups.items()):
        lines.append(f"  {student} / {lesson}: " + ", ".join(shown(p) for p in paths))
    return lines


GRADED_ALONE = {
    "12_capstone": "graded on its own, as every submission is: the learner's notebooks of lessons 04, 05 and 09 "
                   "are not in the sandbox, so its pipeline ran on the course's pieces (its table says so in "
                   "the notebook). The seven parts are graded with the course's pieces in any case: this "
                   "changes no grade.",
}
"""Lessons whose notebook brings in the learner's other notebooks, and what grading one alone
means (``exercises.l12_capstone.yours``)."""


def _graded_alone_lines(reports: list[NotebookReport]) -> list[str]:
    lessons = sorted({rep.lesson for rep in reports if rep.lesson in GRADED_ALONE})
    if not lessons:
        return []
    return ["", "Notes:"] + [f"  {lesson}: {GRADED_ALONE[lesson]}" for lesson in lessons]
