"""``python -m course_utils grade PATH...``: grade submitted learner notebooks headlessly.

Each notebook runs top to bottom in its own fresh Jupyter kernel (nbclient), in a temporary
working directory, with a per-cell timeout; several notebooks run in parallel. Cells that
raise do not stop the run (a learner's broken cell is reported, the rest is still graded).

Every exercise is scored by the course's own grader inside the executed kernel, at the
position of its check cell: when the run reaches a cell holding ``ex.NAME.check(ANSWER)``
(with the answer name the lesson uses), the grader checks the learner's ``ANSWER`` as it is
at that point. The notebook's printed output is never read, so ``print("✅ Correct")`` scores
nothing; an exercise whose check cell was deleted, or edited to check something else, is
scored ``not_attempted`` (mistake ``no_check_cell``). When an exercise is checked more than
once, the last check counts.

A notebook that cannot be graded completely (corrupt JSON, unknown lesson, the kernel died,
an endless loop the kernel would not give up) is reported, its remaining exercises get the
status ``error``, and the batch goes on.

Usage::

    python -m course_utils grade submissions/ --csv grades.csv
    python -m course_utils grade alice/01_tensors.ipynb bob/01_tensors.ipynb --workers 2 --timeout 60

PATH is a notebook or a folder (searched recursively for ``*.ipynb``). The lesson is taken from
the file name (``01_tensors.ipynb``, ``alice_01_tensors.ipynb``) or, failing that, from the
notebook's ``exercises_for("...")`` call. The student is the part of the file name that is not
the lesson, else the first folder below the PATH given (``submissions/alice/01_tensors.ipynb``),
else the notebook's folder.

Output: a readable summary on stdout; ``--csv FILE``: one row per (student, notebook,
exercise) with the columns student, notebook, exercise, status, mistake; ``--json FILE``: the
same rows as a JSON list (plus a ``detail`` sentence each). Statuses: ``correct``,
``incorrect``, ``not_attempted``, ``error`` (the notebook could not be graded up to that
exercise). The exit status is 0 when every notebook was processed (even if some were broken),
2 on a usage error.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import copy
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import nbformat

from .kernel import MIME

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 120.0
DEFAULT_NOTEBOOK_TIMEOUT = 1200.0
PROBE_TIMEOUT = 15.0
STATUSES = ("correct", "incorrect", "not_attempted", "error")
COLUMNS = ("student", "notebook", "exercise", "status", "mistake")


@dataclass
class Row:
    student: str
    notebook: str
    exercise: str
    status: str
    mistake: str = ""
    detail: str = ""


@dataclass
class NotebookReport:
    path: str
    student: str
    lesson: str | None
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None  # why the notebook could not be graded completely


# --------------------------------------------------------------------------- parsing


def check_statement(stmt: ast.stmt) -> tuple[str, str] | None:
    """``(NAME, ANSWER)`` when ``stmt`` is exactly ``ex.NAME.check(ANSWER)``."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return None
    call = stmt.value
    f = call.func
    if (isinstance(f, ast.Attribute) and f.attr == "check" and isinstance(f.value, ast.Attribute)
            and isinstance(f.value.value, ast.Name) and f.value.value.id == "ex"
            and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Name)):
        return f.value.attr, call.args[0].id
    return None


def split_check_cell(source: str, expected: dict[str, str]) -> tuple[str, str, str, str] | None:
    """Find a valid check statement in a cell.

    Returns ``(before, name, answer, after)``: the code before the check statement, the
    exercise name, the answer name, and the code after it, or ``None`` when the cell has no
    top-level ``ex.NAME.check(ANSWER)`` whose answer name is the one the lesson uses."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.splitlines()
    for stmt in tree.body:
        found = check_statement(stmt)
        if found and expected.get(found[0]) == found[1]:
            before = "\n".join(lines[: stmt.lineno - 1])
            after = "\n".join(lines[stmt.end_lineno:])  # type: ignore[misc]
            return before, found[0], found[1], after
    return None


def lesson_stems() -> list[str]:
    from course_utils.grading import registry

    return list(registry.lesson_modules())


_EXERCISES_FOR = re.compile(r"""exercises_for\(\s*["'](\w+)["']\s*\)""")


def identify_lesson(path: Path, nb: nbformat.NotebookNode | None, stems: list[str]) -> str | None:
    """The lesson of a submitted notebook: from its file name, else its ``exercises_for``."""
    name = path.stem
    for stem in sorted(stems, key=len, reverse=True):
        if stem in name:
            return stem
    if nb is not None:
        for cell in nb.cells:
            if cell.cell_type == "code":
                m = _EXERCISES_FOR.search(cell.source)
                if m and m.group(1) in stems:
                    return m.group(1)
    return None


def student_of(path: Path, lesson: str | None, root: Path | None) -> str:
    rest = path.stem.replace(lesson, "") if lesson else path.stem
    rest = rest.strip(" _-.")
    if rest:
        return rest
    if root is not None and root.is_dir():
        try:
            rel = path.resolve().relative_to(root.resolve())
            if len(rel.parts) > 1:
                return rel.parts[0]
        except ValueError:
            pass
    return path.resolve().parent.name or path.stem


def expected_checks(lesson: str) -> dict[str, str]:
    """Exercise name -> answer name, as the lesson's check cells have them (from the solution
    notebook; an exercise not found there is checked as ``ex.NAME.check(NAME)``)."""
    from course_utils.grading import registry

    names = [ex.name for ex in registry.load_lesson(lesson)]
    found: dict[str, str] = {}
    for folder in ("solutions", "notebooks"):
        path = ROOT / folder / f"{lesson}.ipynb"
        if not path.exists():
            continue
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001
            continue
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            for stmt in tree.body:
                hit = check_statement(stmt)
                if hit and hit[0] in names:
                    found.setdefault(hit[0], hit[1])
        if found:
            break
    return {n: found.get(n, n) for n in names}


def find_notebooks(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Path | None]]:
    """``(notebook, root)`` for every notebook under ``paths``; ``root`` is the folder given."""
    out: list[tuple[Path, Path | None]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            items = [(q, p) for q in sorted(p.rglob("*.ipynb"))
                     if ".ipynb_checkpoints" not in q.parts and not any(part.startswith(".") for part in q.relative_to(p).parts)]
        else:
            items = [(p, None)]
        for q, root in items:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                out.append((q, root))
    return out


def read_notebook(path: Path) -> nbformat.NotebookNode:
    if path.suffix == ".py":
        import jupytext

        return jupytext.read(path)
    nb = nbformat.read(path, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    return nb


# --------------------------------------------------------------------------- running


def _first_line(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()
    return text.splitlines()[-1][:200] if text else ""


def _error_of(cell: nbformat.NotebookNode) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename', 'Error')}: {_first_line(out.get('evalue', ''))}".rstrip(": ")
    return None


def _grade_record(cell: nbformat.NotebookNode, exercise_id: str) -> dict[str, Any] | None:
    found = None
    for out in cell.get("outputs", []):
        data = out.get("data", {}) if out.get("output_type") in ("display_data", "execute_result") else {}
        rec = data.get(MIME)
        if isinstance(rec, dict) and rec.get("exercise") == exercise_id:
            found = rec
    return found


def _whole_seconds(seconds: float) -> int:
    """nbclient takes whole seconds, and 0 would mean no limit at all."""
    return max(1, math.ceil(seconds))


class _Run:
    """One notebook graded in one kernel."""

    def __init__(self, path: Path, nb: nbformat.NotebookNode, lesson: str, report: NotebookReport,
                 timeout: float, threads: int):
        from nbclient import NotebookClient

        self.path, self.nb, self.lesson, self.report = path, nb, lesson, report
        self.timeout = timeout
        self.threads = threads
        self.workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        # Every piece of code runs as its own cell of this working notebook, so nbclient's
        # bookkeeping (``update_display`` finds earlier outputs by cell index) stays valid.
        self.executed = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.get("metadata", {})))
        self.client = NotebookClient(
            self.executed, timeout=_whole_seconds(timeout), kernel_name="python3", allow_errors=True, record_timing=False,
            interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeout", "evalue": "cell timed out", "traceback": []},
            resources={"metadata": {"path": str(self.workdir)}},
        )
        self.expected = expected_checks(lesson)
        self.results: dict[str, Row] = {}
        self.cell_no = 0
        self._timed_out = False
        self.client.on_cell_error = self._on_error

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["COURSE_PROGRESS_LOG"] = ""  # grading is not the learner's or instructor's progress
        n = str(self.threads)
        env.update(OMP_NUM_THREADS=n, MKL_NUM_THREADS=n, MPLBACKEND="Agg")  # headless plots
        return env

    async def _exec(self, source: str, timeout: float | None = None, history: bool = False,
                    metadata: dict | None = None) -> tuple[nbformat.NotebookNode, bool]:
        """Run code in the kernel; returns the executed cell and whether it timed out."""
        cell = nbformat.v4.new_code_cell(source, metadata=copy.deepcopy(dict(metadata or {})))
        self.executed.cells.append(cell)
        self._timed_out = False
        self.client.timeout = _whole_seconds(timeout or self.timeout)
        try:
            await self.client.async_execute_cell(cell, len(self.executed.cells) - 1, store_history=history)
        finally:
            self.client.timeout = _whole_seconds(self.timeout)
        return cell, self._timed_out

    def _on_error(self, cell: Any = None, cell_index: Any = None, execute_reply: Any = None, **_: Any) -> None:
        content = (execute_reply or {}).get("content", {})
        if content.get("ename") == "CellTimeout":
            self._timed_out = True

    async def _responsive(self) -> bool:
        _, timed_out = await self._exec("pass", timeout=min(PROBE_TIMEOUT, max(5.0, self.timeout)))
        return not timed_out

    async def _grade(self, name: str, answer: str) -> None:
        ex_id = f"{self.lesson}.{name}"
        code = (f"__import__('course_utils.instructor.kernel', fromlist=['grade']).grade({ex_id!r}, {answer!r})")
        cell, timed_out = await self._exec(code)
        rec = _grade_record(cell, ex_id)
        if timed_out:
            row = Row(self.report.student, self.report.path, ex_id, "incorrect", "timeout",
                      f"checking `{answer}` did not finish within {self.timeout:g} s")
            self.report.problems.append(f"{ex_id}: the check timed out after {self.timeout:g} s")
        elif rec is None:
            err = _error_of(cell) or "no result"
            row = Row(self.report.student, self.report.path, ex_id, "incorrect", "checker_error",
                      f"the grader reported nothing ({err})")
        else:
            status = rec.get("status") if rec.get("status") in STATUSES else "incorrect"
            row = Row(self.report.student, self.report.path, ex_id, status, rec.get("mistake") or "",
                      str(rec.get("message") or ""))
        self.results[ex_id] = row
        if timed_out and not await self._responsive():
            raise _Stuck(f"the kernel did not recover after the check of {ex_id} timed out")

    async def _learner_cell(self, index: int, cell: nbformat.NotebookNode, source: str) -> None:
        if not source.strip():
            return
        run, timed_out = await self._exec(source, history=True, metadata=cell.get("metadata", {}))
        tags = cell.get("metadata", {}).get("tags", [])
        if timed_out:
            self.report.problems.append(f"cell {index}: timed out after {self.timeout:g} s and was interrupted")
            if not await self._responsive():
                raise _Stuck(f"the kernel did not recover after cell {index} timed out")
            return
        err = _error_of(run)
        if err and "raises-exception" not in tags and not err.startswith("NotImplementedError"):
            self.report.problems.append(f"cell {index}: {err}")

    async def run(self) -> None:
        # The kernel's own stdout/stderr (not the cells' output, which comes over the kernel
        # protocol) would only add jupyter_client's transport warnings to the summary.
        async with self.client.async_setup_kernel(env=self._env(), cwd=str(self.workdir),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            cell, timed_out = await self._exec(
                f"__import__('course_utils.instructor.kernel', fromlist=['start']).start({self.lesson!r})",
                timeout=max(self.timeout, 60))
            err = _error_of(cell)
            if err or timed_out:
                raise _Stuck(f"the grader could not start in the kernel ({err or 'timed out'})")
            for index, cell in enumerate(self.nb.cells):
                if cell.get("cell_type") != "code":
                    continue
                self.cell_no = index
                source = cell.get("source", "")
                if isinstance(source, list):
                    source = "".join(source)
                found = split_check_cell(source, self.expected)
                if found is None:
                    await self._learner_cell(index, cell, source)
                    continue
                before, name, answer, after = found
                await self._learner_cell(index, cell, before)
                await self._grade(name, answer)
                await self._learner_cell(index, cell, after)

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


class _Stuck(Exception):
    pass


def _finish(report: NotebookReport, lesson: str, results: dict[str, Row], error: str | None, mistake: str) -> None:
    from course_utils.grading import registry

    report.error = error
    for ex in registry.load_lesson(lesson):
        row = results.get(ex.id)
        if row is None:
            if error:
                row = Row(report.student, report.path, ex.id, "error", mistake, error)
            else:
                row = Row(report.student, report.path, ex.id, "not_attempted", "no_check_cell",
                          f"no `ex.{ex.name}.check(...)` cell checking the exercise's answer was found")
        report.rows.append(row)


async def grade_notebook(path: Path, root: Path | None, stems: list[str], timeout: float,
                         notebook_timeout: float, threads: int) -> NotebookReport:
    start = time.perf_counter()
    shown = str(path)
    nb = None
    read_error = None
    try:
        nb = read_notebook(path)
    except Exception as exc:  # noqa: BLE001 - corrupt JSON, not a notebook, unreadable file
        read_error = f"could not read the notebook ({type(exc).__name__}: {_first_line(str(exc))[:160]})"
    lesson = identify_lesson(path, nb, stems)
    report = NotebookReport(shown, student_of(path, lesson, root), lesson)
    if lesson is None:
        report.error = read_error or "unknown lesson: the file name names no lesson and it has no exercises_for(...)"
        report.rows.append(Row(report.student, shown, "", "error", "corrupt_notebook" if read_error else "unknown_lesson",
                               report.error))
        report.seconds = time.perf_counter() - start
        return report
    if read_error:
        _finish(report, lesson, {}, read_error, "corrupt_notebook")
        report.seconds = time.perf_counter() - start
        return report
    run = _Run(path, nb, lesson, report, timeout, threads)
    error, mistake = None, ""
    try:
        await asyncio.wait_for(run.run(), notebook_timeout)
    except asyncio.TimeoutError:
        error, mistake = f"the notebook did not finish within {notebook_timeout:g} s", "notebook_timeout"
    except _Stuck as exc:
        error, mistake = str(exc), "kernel_unresponsive"
    except Exception as exc:  # noqa: BLE001 - DeadKernelError, kernel start failures...
        name = type(exc).__name__
        if name == "DeadKernelError":
            error, mistake = f"the kernel died (at cell {run.cell_no})", "kernel_died"
        else:
            error, mistake = f"grading failed at cell {run.cell_no} ({name}: {_first_line(str(exc))})", "grading_failed"
    finally:
        run.cleanup()
    if error:
        report.problems.append(error)
    _finish(report, lesson, run.results, error, mistake)
    report.seconds = time.perf_counter() - start
    return report


async def grade_all(items: list[tuple[Path, Path | None]], workers: int, timeout: float,
                    notebook_timeout: float, progress: Any = None) -> list[NotebookReport]:
    stems = lesson_stems()
    loop = asyncio.get_running_loop()

    def quiet(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        # nbclient's background "is the kernel alive?" poll can fail after a notebook's kernel
        # died or was shut down; that notebook is already reported, the noise is not useful.
        fut = context.get("future") or context.get("task")
        coro = getattr(fut, "get_coro", lambda: None)()
        if "NotebookClient._async_poll" in getattr(coro, "__qualname__", ""):
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(quiet)
    sem = asyncio.Semaphore(max(1, workers))
    from course_utils import threads as thread_policy

    threads = thread_policy.kernel_threads()  # one per grading kernel: course_utils/threads.py

    async def one(path: Path, root: Path | None) -> NotebookReport:
        async with sem:
            rep = await grade_notebook(path, root, stems, timeout, notebook_timeout, threads)
            if progress:
                progress(rep)
            return rep

    return list(await asyncio.gather(*(one(p, r) for p, r in items)))


def grade(paths: Iterable[str | os.PathLike[str]], workers: int = 2, timeout: float = DEFAULT_TIMEOUT,
          notebook_timeout: float = DEFAULT_NOTEBOOK_TIMEOUT, progress: Any = None) -> list[NotebookReport]:
    """Grade notebooks (files or folders); returns one report per notebook, in input order."""
    items = find_notebooks(paths)
    return asyncio.run(grade_all(items, workers, timeout, notebook_timeout, progress))


# --------------------------------------------------------------------------- output


def rows_of(reports: Iterable[NotebookReport]) -> list[Row]:
    return [r for rep in reports for r in rep.rows]


def write_csv(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for r in rows_of(reports):
            w.writerow([getattr(r, c) for c in COLUMNS])


def write_json(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps([asdict(r) for r in rows_of(reports)], indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def summary_text(reports: list[NotebookReport], seconds: float | None = None, workers: int | None = None) -> str:
    lines = []
    n = len(reports)
    head = f"Graded {n} notebook{'s' * (n != 1)}"
    if seconds is not None:
        head += f" in {seconds:.1f} s"
    if workers is not None:
        head += f" ({workers} in parallel)"
    lines.append(head + ".")
    if not reports:
        return lines[0]
    w_student = max(7, *(len(r.student) for r in reports))
    w_nb = max(8, *(len(r.lesson or Path(r.path).name) for r in reports))
    lines.append("")
    lines.append(f"{'student':<{w_student}}  {'notebook':<{w_nb}}  {'correct':>9}  {'incorrect':>9}  {'not att.':>8}  note")
    for rep in sorted(reports, key=lambda r: (r.student, r.lesson or "", r.path)):
        c = Counter(r.status for r in rep.rows)
        total = sum(1 for r in rep.rows if r.exercise)
        wrong = [f"{r.exercise.split('.', 1)[-1]}: {r.mistake}" for r in rep.rows if r.status == "incorrect"]
        note = "; ".join(wrong[:3]) + (f" (+{len(wrong) - 3})" if len(wrong) > 3 else "")
        if rep.problems and not rep.error:
            note = (note + "; " if note else "") + f"{len(rep.problems)} cell problem(s)"
        if rep.error:
            note = "BROKEN: " + rep.error
        lines.append(f"{rep.student:<{w_student}}  {(rep.lesson or Path(rep.path).name):<{w_nb}}  "
                     f"{c['correct']:>4} / {total:<2}  {c['incorrect']:>9}  {c['not_attempted']:>8}  {note}")
    per_ex: dict[str, Counter] = {}
    mistakes: dict[str, Counter] = {}
    for r in rows_of(reports):
        if not r.exercise:
            continue
        per_ex.setdefault(r.exercise, Counter())[r.status] += 1
        if r.status == "incorrect" and r.mistake:
            mistakes.setdefault(r.exercise, Counter())[r.mistake] += 1
    if per_ex:
        lines += ["", "Per exercise:"]
        w = max(len(k) for k in per_ex)
        for ex_id, c in per_ex.items():
            total = sum(c.values())
            common = ", ".join(f"{m} ×{k}" for m, k in mistakes.get(ex_id, Counter()).most_common(3))
            lines.append(f"  {ex_id:<{w}}  {c['correct']:>3}/{total} correct" + (f"   mistakes: {common}" if common else ""))
    problems = [(rep, p) for rep in reports for p in rep.problems]
    if problems:
        lines += ["", "Problems:"]
        for rep, p in problems:
            lines.append(f"  {rep.path}: {p}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils grade", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH", help="notebooks or folders of notebooks")
    ap.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV")
    ap.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    ap.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 2),
                    help="notebooks graded at once (default: CPU count, at most 4)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds a cell may run before it is interrupted (default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("--notebook-timeout", type=float, default=DEFAULT_NOTEBOOK_TIMEOUT,
                    help=f"seconds a whole notebook may take (default {DEFAULT_NOTEBOOK_TIMEOUT:g})")
    ap.add_argument("-q", "--quiet", action="store_true", help="no line per notebook while grading")
    args = ap.parse_args(argv)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    items = find_notebooks(args.paths)
    if not items:
        print("no notebooks (*.ipynb) found under " + ", ".join(args.paths), file=sys.stderr)
        return 2
    if args.workers < 1 or args.timeout <= 0:
        print("--workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2

    def progress(rep: NotebookReport) -> None:
        if not args.quiet:
            c = Counter(r.status for r in rep.rows)
            state = f"BROKEN ({rep.error})" if rep.error else f"{c['correct']}/{len(rep.rows)} correct"
            print(f"  graded {rep.path} [{rep.student}] in {rep.seconds:.1f} s: {state}", flush=True)

    print(f"Grading {len(items)} notebook(s), {args.workers} at a time, {args.timeout:g} s per cell...", flush=True)
    start = time.perf_counter()
    reports = asyncio.run(grade_all(items, args.workers, args.timeout, args.notebook_timeout, progress))
    took = time.perf_counter() - start
    print()
    print(summary_text(reports, took, args.workers))
    if args.csv:
        write_csv(reports, args.csv)
        print(f"\nwrote {args.csv}")
    if args.json:
        write_json(reports, args.json)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
