"""``python -m course_utils grade PATH...``: grade submitted learner notebooks headlessly.

Every submission is untrusted code, and no code in a submission can change any verdict: its
own, a peer's, or the instructor's files.

1. **Run, sandboxed.** Each notebook runs top to bottom in its own bubblewrap sandbox
   (:mod:`.sandbox`: no network, read-only system and course code with the reference
   solutions cut out, empty private ``$HOME`` and ``/tmp``, its own PID namespace and user,
   limits on memory, processes, CPU, time and output), in a fresh Jupyter kernel with a
   per-cell timeout (:mod:`.nbrun`). Cells that raise do not stop the run. At each check cell
   ``ex.NAME.check(ANSWER)`` the learner's ``ANSWER`` *as it is at that point* is exported
   (pickled), not judged; the sandbox is then killed with everything it started.
2. **Judge, out of reach.** :mod:`.judge` runs the course's own checks in a process that never
   runs learner code and owns the references; each call of the answer is forwarded to a fresh
   executor sandbox that only runs the answer on a case and sends back plain tensors/values.
3. **Record.** The host stores each notebook's rows in an SQLite gradebook (one transaction
   per notebook) as soon as it is judged; rerunning the same command grades only what is not
   in it yet; CSV/JSON/wide-CSV exports are written from it.

The notebook's printed output is never read, so ``print("✅ Correct")`` scores nothing; an
exercise whose check cell was deleted, or edited to check something else, is scored
``not_attempted`` (mistake ``no_check_cell``). When an exercise is checked more than once, the
last check counts. The learner's own in-notebook ``check()`` is feedback, never a grade.

Usage::

    python -m course_utils grade submissions/ --csv grades.csv --wide-csv canvas.csv
    python -m course_utils grade alice/01_tensors.ipynb bob/01_tensors.ipynb --workers 2 --timeout 60

PATH is a notebook or a folder (searched recursively for ``*.ipynb``). The lesson is taken from
the file name (``01_tensors.ipynb``, ``alice_01_tensors.ipynb``) or, failing that, from the
notebook's ``exercises_for("...")`` call. The student is the part of the file name that is not
the lesson, else the first folder below the PATH given (``submissions/alice/01_tensors.ipynb``),
else the notebook's folder. Two notebooks of one student for one lesson are reported as
duplicates (the wide CSV counts the better one).

Output: a readable summary on stdout; ``--csv FILE``: one row per (student, notebook,
exercise) with the columns student, notebook, exercise, status, mistake, points, max_points;
``--json FILE``: the same rows as a JSON list (plus ``detail`` and ``duplicate``);
``--wide-csv FILE``: one row per student, one column of points per lesson and a total (for a
Canvas or Moodle gradebook import); ``--gradebook FILE``: the SQLite gradebook (default: next
to the CSV/JSON, else ``gradebook.sqlite``). Statuses: ``correct``, ``incorrect``,
``not_attempted``, ``error`` (the notebook could not be graded up to that exercise, for
example ``memory limit 2 GB`` or a timeout). Exit status: 0 when every notebook was processed
(even if some were broken), 2 on a usage error or when no sandbox is available, 130/143 when
interrupted (SIGINT/SIGTERM: sandboxes are killed, finished notebooks are kept; rerun to go
on).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, cast
from collections.abc import Iterable

import nbformat

from .. import cells
from ..cells import check_statement, split_check_cell  # noqa: F401  (the grader's names for them)
from . import sandbox
from .frames import FrameError, read_frame, write_frame
from .gradebook import Gradebook, digest, shown

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 120.0
DEFAULT_NOTEBOOK_TIMEOUT = 1200.0
STATUSES = ("correct", "incorrect", "not_attempted", "error")
COLUMNS = ("student", "notebook", "exercise", "status", "mistake", "points", "max_points")
MAX_NOTEBOOK_BYTES = 50 * 1024**2
MAX_OUTPUT = 256 * 1024**2       # bytes a notebook's sandbox may send back (answers)
NO_SANDBOX_WARNING = ("WARNING: --no-sandbox: learner code runs unconfined, as you, with your files and "
                      "network. Use it only for notebooks you trust.")


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


# --------------------------------------------------------------------------- parsing


def lesson_stems() -> list[str]:
    from course_utils.grading import registry

    return list(registry.lesson_modules())


def identify_lesson(path: Path, nb: nbformat.NotebookNode | None, stems: list[str]) -> str | None:
    """The lesson of a submitted notebook: from its file name, else the lesson build recorded in
    its metadata, else its ``exercises_for`` call (course_utils/cells.py)."""
    return cells.lesson_of(path, nb, stems)


def student_of(path: Path, lesson: str | None, root: Path | None) -> str:
    stem = shown(path.stem)
    rest = stem.replace(lesson, "") if lesson else stem
    rest = rest.strip(" _-.")
    if rest:
        return rest
    if root is not None and root.is_dir():
        try:
            rel = path.resolve().relative_to(root.resolve())
            if len(rel.parts) > 1:
                return shown(rel.parts[0])
        except ValueError:
            pass
    return shown(path.resolve().parent.name or path.stem)


def expected_checks(lesson: str) -> dict[str, str]:
    """Exercise name -> the answer name its check cell passes: ``ex.NAME.check(NAME)`` (the cell
    grammar, course_utils/cells.py; no solution notebook is read at grade time)."""
    from course_utils.grading import registry

    return {ex.name: ex.name for ex in registry.load_lesson(lesson)}


def find_notebooks(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Path | None]]:
    """``(notebook, root)`` for every notebook under ``paths``; ``root`` is the folder given."""
    out: list[tuple[Path, Path | None]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            items: list[tuple[Path, Path | None]] = [(q, p) for q in sorted(p.rglob("*.ipynb"))
                     if ".ipynb_checkpoints" not in q.parts
                     and not any(part.startswith(".") for part in q.relative_to(p).parts)]
        else:
            items = [(p, None)]
        for q, root in items:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                out.append((q, root))
    return out


def read_notebook(path: Path) -> nbformat.NotebookNode:
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES // 1024**2} MB")
    if path.suffix == ".py":
        import jupytext

        return jupytext.read(path)
    nb = nbformat.read(path, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    return nb


# --------------------------------------------------------------------------- running


def _pipe(stream: IO[Any] | None) -> BinaryIO:
    """A child's stdin/stdout (opened with PIPE, so never None in practice)."""
    if stream is None:
        raise OSError("the child process has no pipe")
    return cast(BinaryIO, stream)


def _clean(text: Any, n: int = 600) -> str:
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", str(text))[:n]


def _exercise_rows(report: NotebookReport, lesson: str, checked: set[str], verdicts: dict[str, dict],
                   error: str | None, mistake: str | None) -> None:
    from course_utils.grading import registry

    report.error = error
    for ex in registry.load_lesson(lesson):
        points = float(getattr(ex, "points", 1.0))
        v = verdicts.get(ex.id)
        if v is not None:
            status = str(v["status"]) if v.get("status") in STATUSES else "error"
            row = Row(report.student, report.shown, ex.id, status, _clean(v.get("mistake") or "", 60),
                      _clean(v.get("message") or ""))
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


class _Stopped(Exception):
    pass


class Grader:
    """Grades notebooks, ``workers`` at a time, each in its own sandboxes."""

    def __init__(self, workers: int = 2, timeout: float = DEFAULT_TIMEOUT,
                 notebook_timeout: float = DEFAULT_NOTEBOOK_TIMEOUT, limits: sandbox.Limits | None = None,
                 sandboxed: bool = True, gradebook: Gradebook | None = None, regrade: bool = False,
                 progress: Any = None, max_output: int = MAX_OUTPUT):
        self.workers = max(1, workers)
        self.timeout, self.notebook_timeout = timeout, notebook_timeout
        self.limits = limits or sandbox.Limits()
        self.limits.cpu_seconds = int(max(self.limits.cpu_seconds, notebook_timeout + 60))
        self.sandboxed = sandboxed
        self.gradebook, self.regrade, self.progress = gradebook, regrade, progress
        self.max_output = max_output
        from course_utils import threads as thread_policy  # one policy, with its measured reason

        self.threads = thread_policy.kernel_threads()  # per grading kernel (course_utils/threads.py)
        self.stopping = threading.Event()
        self.active: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.local = threading.local()
        self.judges: list[subprocess.Popen] = []
        self.uids = sandbox.UidPool(2 * self.workers) if sandboxed else sandbox.UidPool(0)
        self.tmp = Path(tempfile.mkdtemp(prefix="course-grade-"))
        self.tmp.chmod(0o711)
        self.course = sandbox.stage_course(self.tmp / "course")
        self.stems = lesson_stems()
        self._expected: dict[str, dict[str, str]] = {}
        self.graded = 0

    # ------------------------------------------------------------------ processes

    def _track(self, proc: subprocess.Popen) -> subprocess.Popen:
        with self.lock:
            self.active.add(proc)
        if self.stopping.is_set():
            sandbox.kill(proc)
        return proc

    def _untrack(self, proc: subprocess.Popen | None) -> None:
        if proc is None:
            return
        sandbox.kill(proc)
        with self.lock:
            self.active.discard(proc)

    def stop(self) -> None:
        """Kill every sandbox and judge now (from a signal handler)."""
        self.stopping.set()
        with self.lock:
            procs = list(self.active) + list(self.judges)
        for p in procs:
            sandbox.kill(p)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _notebook_proc(self, inputs: Path, job: dict, uid: int | None) -> subprocess.Popen:
        argv = [sys.executable, "-m", "course_utils.instructor.nbrun", json.dumps(job)]
        if self.sandboxed:
            return sandbox.popen(argv, course=self.course, inputs=inputs, limits=self.limits, uid=uid,
                                 threads=self.threads)
        work = Path(tempfile.mkdtemp(dir=self.tmp))
        env = dict(os.environ, PYTHONPATH=str(self.course), COURSE_PROGRESS_LOG="", MPLBACKEND="Agg",
                   OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads))
        job_local = dict(job, notebook=str(inputs / "notebook.ipynb"))
        argv[-1] = json.dumps(job_local)
        return subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def _judge(self) -> subprocess.Popen:
        proc = getattr(self.local, "judge", None)
        if proc is not None and proc.poll() is None:
            return proc
        env = dict(os.environ, COURSE_PROGRESS_LOG="", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(
                       [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        proc = subprocess.Popen([sys.executable, "-m", "course_utils.instructor.judge", "worker"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        with self.lock:
            self.judges.append(proc)
        if self.stopping.is_set():
            sandbox.kill(proc)
        head, _ = read_frame(_pipe(proc.stdout), 1 << 20)
        if head.get("op") != "ready":
            raise RuntimeError("the judge did not start")
        self.local.judge = proc
        return proc

    # ------------------------------------------------------------------ one notebook

    def expected(self, lesson: str) -> dict[str, str]:
        if lesson not in self._expected:
            self._expected[lesson] = expected_checks(lesson)
        return self._expected[lesson]

    def grade_one(self, path: Path, root: Path | None) -> NotebookReport | None:
        if self.stopping.is_set():
            return None
        start = time.perf_counter()
        sha = digest(path)
        if self.gradebook is not None and not self.regrade and self.gradebook.done(path, sha):
            return self.gradebook.load(path, sha)
        nb, read_error = None, None
        try:
            nb = read_notebook(path)
        except Exception as exc:  # noqa: BLE001 - corrupt JSON, not a notebook, unreadable file
            read_error = f"could not read the notebook ({type(exc).__name__}: {_clean(exc, 160)})"
        lesson = identify_lesson(path, nb, self.stems)
        report = NotebookReport(str(path), student_of(path, lesson, root), lesson)
        if lesson is None:
            report.error = read_error or (
                "unknown lesson: the file name names no lesson and it has no exercises_for(...)")
            report.rows.append(Row(report.student, report.shown, "", "error",
                                   "corrupt_notebook" if read_error else "unknown_lesson", report.error))
        elif read_error or nb is None:
            _exercise_rows(report, lesson, set(), {}, read_error or "could not read the notebook", "corrupt_notebook")
        else:
            self._run_and_judge(report, nb, lesson)
        if self.stopping.is_set():
            return None
        report.seconds = time.perf_counter() - start
        if self.gradebook is not None:
            self.gradebook.record(report, sha, self.sandboxed)
        self.graded += 1
        return report

    def _run_and_judge(self, report: NotebookReport, nb: nbformat.NotebookNode, lesson: str) -> None:
        expected = self.expected(lesson)
        checked: set[str] = set()
        for cell in nb.cells:
            if cell.get("cell_type") == "code":
                src = cell.get("source", "")
                found = split_check_cell("".join(src) if isinstance(src, list) else src, expected)
                if found:
                    checked.add(f"{lesson}.{found[1]}")
        inputs = Path(tempfile.mkdtemp(dir=self.tmp))
        inputs.chmod(0o755)
        nbformat.write(nb, inputs / "notebook.ipynb")
        (inputs / "notebook.ipynb").chmod(0o644)
        job = {"notebook": f"{sandbox.WORK_IN_SANDBOX}/notebook.ipynb", "lesson": lesson, "expected": expected,
               "timeout": self.timeout, "notebook_timeout": self.notebook_timeout,
               "memory": self.limits.describe_memory()}
        answers, done, error, mistake = self._run_notebook(inputs, job)
        shutil.rmtree(inputs, ignore_errors=True)
        if self.stopping.is_set():
            return
        if done is not None:
            report.problems += [_clean(p, 300) for p in (done.get("problems") or [])[:200] if isinstance(p, str)]
            if isinstance(done.get("error"), str):
                error, mistake = _clean(done["error"], 300), _clean(done.get("mistake") or "", 60)
        answers = {k: v for k, v in answers.items() if k in checked}
        verdicts = self._verdicts(lesson, answers) if answers else {}
        if error:
            report.problems.append(error)
        _exercise_rows(report, lesson, checked, verdicts, error, mistake)

    def _run_notebook(self, inputs: Path, job: dict) -> tuple[dict, dict | None, str | None, str | None]:
        uid = self.uids.take()
        proc = None
        answers: dict[str, tuple[bytes | None, str | None]] = {}
        done: dict | None = None
        error = mistake = None
        timed_out = threading.Event()

        def on_deadline() -> None:
            timed_out.set()
            sandbox.kill(proc)

        timer = threading.Timer(self.notebook_timeout + 30, on_deadline)
        try:
            proc = self._track(self._notebook_proc(inputs, job, uid))
            timer.start()
            budget = self.max_output
            while True:
                head, data = read_frame(_pipe(proc.stdout), budget)
                budget -= len(data) + 64
                if budget < 0:
                    raise FrameError("over the output limit")
                if head.get("type") == "answer" and isinstance(head.get("exercise"), str):
                    err = head.get("error")
                    answers[head["exercise"]] = (None if err else data, _clean(err, 200) if err else None)
                elif head.get("type") == "done":
                    done = head
                    break
        except FrameError as exc:
            if "limit" in str(exc):
                error, mistake = (f"output limit: the notebook sent more than {self.max_output // 1024**2} MB "
                                  "back"), "output_limit"
            else:
                error, mistake = "the notebook's sandbox sent garbage", "sandbox_protocol"
        except EOFError:
            if timed_out.is_set():
                error, mistake = f"the notebook did not finish within {self.notebook_timeout:g} s", "notebook_timeout"
            else:
                code = proc.poll() if proc else None
                error = (f"the notebook runner stopped before the end (exit code {code}: memory limit "
                         f"{self.limits.describe_memory()}, the process limit, or a killed process)")
                mistake = "runner_died"
        except OSError as exc:
            error, mistake = f"the sandbox could not start ({exc})", "sandbox_failed"
        finally:
            timer.cancel()
            self._untrack(proc)
            self.uids.give(uid)
        return answers, done, error, mistake

    def _verdicts(self, lesson: str, answers: dict[str, tuple[bytes | None, str | None]]) -> dict[str, dict]:
        from course_utils.grading import registry

        exercises = [ex for ex in registry.load_lesson(lesson) if ex.id in answers]
        uid = self.uids.take()
        deadline = 120 + sum(3 * float(ex.timeout) + 20 for ex in exercises)
        proc = None
        timer = None
        try:
            proc = self._judge()
            timer = threading.Timer(deadline, lambda: sandbox.kill(proc))
            timer.start()
            write_frame(_pipe(proc.stdin), {"op": "judge", "lesson": lesson, "n": len(answers), "uid": uid,
                                     "course": str(self.course), "limits": asdict(self.limits),
                                     "no_sandbox": not self.sandboxed})
            for ex_id, (data, err) in answers.items():
                write_frame(_pipe(proc.stdin), {"exercise": ex_id, "error": err}, data or b"")
            head, _ = read_frame(_pipe(proc.stdout), 1 << 20)
            got = head.get("verdicts")
            verdicts: dict[str, Any] = got if isinstance(got, dict) else {}
        except (EOFError, FrameError, OSError, RuntimeError) as exc:
            self._untrack(proc)
            self.local.judge = None
            why = "timed out" if timer is not None and not timer.is_alive() else f"stopped ({type(exc).__name__})"
            verdicts = {ex.id: {"status": "error", "mistake": "judge_failed", "message": f"judging {why}"}
                        for ex in exercises}
        finally:
            if timer is not None:
                timer.cancel()
            self.uids.give(uid)
        return {k: v for k, v in verdicts.items() if isinstance(v, dict) and k in answers}

    # ------------------------------------------------------------------ batch

    def run(self, items: list[tuple[Path, Path | None]]) -> list[NotebookReport]:
        results: dict[int, NotebookReport] = {}
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            futures = {pool.submit(self.grade_one, p, r): i for i, (p, r) in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = concurrent.futures.wait(pending, timeout=0.2)
                for fut in finished:
                    rep = fut.result()
                    if rep is not None:
                        results[futures[fut]] = rep
                        if self.progress:
                            self.progress(rep)
                if self.stopping.is_set():
                    for fut in pending:
                        fut.cancel()
        return [results[i] for i in sorted(results)]


def grade(paths: Iterable[str | os.PathLike[str]], workers: int = 2, timeout: float = DEFAULT_TIMEOUT,
          notebook_timeout: float = DEFAULT_NOTEBOOK_TIMEOUT, progress: Any = None, sandboxed: bool = True,
          memory: int | None = None, gradebook: str | os.PathLike[str] | None = None) -> list[NotebookReport]:
    """Grade notebooks (files or folders); returns one report per notebook, in input order."""
    items = find_notebooks(paths)
    limits = sandbox.Limits() if memory is None else sandbox.Limits(memory=memory)
    book = Gradebook(gradebook) if gradebook else None
    grader = Grader(workers, timeout, notebook_timeout, limits, sandboxed, book, progress=progress)
    try:
        return grader.run(items)
    finally:
        grader.close()
        if book is not None:
            book.close()


# --------------------------------------------------------------------------- output


def rows_of(reports: Iterable[NotebookReport]) -> list[Row]:
    return [r for rep in reports for r in rep.rows]


def duplicates(reports: list[NotebookReport]) -> dict[tuple[str, str], list[str]]:
    """``(student, lesson) -> notebook paths`` where one student handed in a lesson twice."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rep in reports:
        if rep.lesson:
            seen[(rep.student, rep.lesson)].append(rep.path)
    return {k: v for k, v in seen.items() if len(v) > 1}


def write_csv(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    from .gradebook import write_csv as _write

    _write(reports, path)


def write_json(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    from .gradebook import write_json as _write

    _write(reports, path, duplicates(reports))


# C901: one report section after another; goes with the split of grade.py (issue 12 item 5)
def summary_text(reports: list[NotebookReport], seconds: float | None = None, workers: int | None = None) -> str:  # noqa: C901
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
    w_nb = max(8, *(len(r.lesson or Path(r.shown).name) for r in reports))
    lines.append("")
    lines.append(f"{'student':<{w_student}}  {'notebook':<{w_nb}}  {'correct':>9}  {'incorrect':>9}  {'not att.':>8}  "
                 f"{'points':>9}  note")
    for rep in sorted(reports, key=lambda r: (r.student, r.lesson or "", r.path)):
        c = Counter(r.status for r in rep.rows)
        total = sum(1 for r in rep.rows if r.exercise)
        wrong = [f"{r.exercise.split('.', 1)[-1]}: {r.mistake}" for r in rep.rows if r.status == "incorrect"]
        note = "; ".join(wrong[:3]) + (f" (+{len(wrong) - 3})" if len(wrong) > 3 else "")
        if rep.problems and not rep.error:
            note = (note + "; " if note else "") + f"{len(rep.problems)} cell problem(s)"
        if rep.error:
            note = "BROKEN: " + rep.error
        if rep.resumed:
            note = "(from the gradebook) " + note
        pts = f"{sum(r.points for r in rep.rows):g}/{sum(r.max_points for r in rep.rows):g}"
        lines.append(f"{rep.student:<{w_student}}  {(rep.lesson or Path(rep.shown).name):<{w_nb}}  "
                     f"{c['correct']:>4} / {total:<2}  {c['incorrect']:>9}  {c['not_attempted']:>8}  {pts:>9}  {note}")
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
            lines.append(f"  {ex_id:<{w}}  {c['correct']:>3}/{total} correct"
                         + (f"   mistakes: {common}" if common else ""))
    problems = [(rep, p) for rep in reports for p in rep.problems]
    if problems:
        lines += ["", "Problems:"]
        for rep, p in problems:
            lines.append(f"  {rep.shown}: {p}")
    dups = duplicates(reports)
    if dups:
        lines += ["", "DUPLICATES (one student, one lesson, several notebooks; the wide CSV counts the best):"]
        for (student, lesson), paths in sorted(dups.items()):
            lines.append(f"  {student} / {lesson}: " + ", ".join(shown(p) for p in paths))
    return "\n".join(lines)


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*([\d.]+)\s*([kmgt]?)i?b?\s*", text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (say 2GB, 512MB)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils grade", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH", help="notebooks or folders of notebooks")
    ap.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV (one row per exercise)")
    ap.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    ap.add_argument("--wide-csv", metavar="FILE", help="one row per student, points per lesson and total (LMS import)")
    ap.add_argument("--gradebook", metavar="FILE", help="the SQLite gradebook (default: next to --csv/--json, "
                                                         "else ./gradebook.sqlite)")
    ap.add_argument("--resume", action="store_true", help="skip notebooks already in the gradebook (the default)")
    ap.add_argument("--regrade", action="store_true", help="grade every notebook again, even if already graded")
    ap.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 2),
                    help="notebooks graded at once (default: CPU count, at most 4)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds a cell may run before it is interrupted (default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("--notebook-timeout", type=float, default=DEFAULT_NOTEBOOK_TIMEOUT,
                    help=f"seconds a whole notebook may take (default {DEFAULT_NOTEBOOK_TIMEOUT:g})")
    ap.add_argument("--memory", type=_size, default=sandbox.Limits.memory,
                    help="address space per sandboxed process (default 2GB)")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run learner code unconfined (trusted notebooks only; prints a warning)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no line per notebook while grading")
    args = ap.parse_args(argv)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"not found: {', '.join(map(shown, missing))}", file=sys.stderr)
        return 2
    items = find_notebooks(args.paths)
    if not items:
        print("no notebooks (*.ipynb) found under " + ", ".join(map(shown, args.paths)), file=sys.stderr)
        return 2
    if args.workers < 1 or args.timeout <= 0 or args.notebook_timeout <= 0:
        print("--workers must be >= 1, --timeout and --notebook-timeout > 0", file=sys.stderr)
        return 2
    if args.no_sandbox:
        print(NO_SANDBOX_WARNING, file=sys.stderr, flush=True)
    else:
        why = sandbox.works()
        if why is not None:
            print(f"cannot grade: no sandbox ({why}).\n\n{sandbox.INSTALL_HINT}", file=sys.stderr)
            return 2
    book_path = args.gradebook or (str(Path(args.csv or args.json).with_suffix(".sqlite"))
                                   if (args.csv or args.json) else "gradebook.sqlite")
    book = Gradebook(book_path)

    def progress(rep: NotebookReport) -> None:
        if not args.quiet:
            c = Counter(r.status for r in rep.rows)
            state = f"BROKEN ({rep.error})" if rep.error else f"{c['correct']}/{len(rep.rows)} correct"
            how = "from the gradebook" if rep.resumed else f"in {rep.seconds:.1f} s"
            print(f"  graded {rep.shown} [{rep.student}] {how}: {state}", flush=True)

    limits = sandbox.Limits(memory=args.memory)
    mode = "UNSANDBOXED" if args.no_sandbox else f"sandboxed, {limits.describe_memory()} per process"
    print(f"Grading {len(items)} notebook(s), {args.workers} at a time, {args.timeout:g} s per cell ({mode})...",
          flush=True)
    start = time.perf_counter()
    grader = Grader(args.workers, args.timeout, args.notebook_timeout, limits, not args.no_sandbox, book,
                    regrade=args.regrade, progress=progress)
    received: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        received.append(signum)
        grader.stop()

    main_thread = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    try:
        reports = grader.run(items)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        grader.close()
        book.close()
    took = time.perf_counter() - start
    print()
    print(summary_text(reports, took, args.workers))
    from .gradebook import write_wide_csv

    for flag, write in ((args.csv, write_csv), (args.json, write_json),
                        (args.wide_csv, lambda r, p: write_wide_csv(r, p, grader.stems))):
        if flag:
            write(reports, flag)
            print(f"wrote {shown(flag)}")
    print(f"gradebook: {shown(book_path)}")
    if received:
        name = "SIGINT" if received[0] == signal.SIGINT else "SIGTERM"
        print(f"\nINTERRUPTED ({name}): {len(reports)} of {len(items)} notebooks graded and saved; "
              "rerun the same command to grade the rest.", file=sys.stderr)
        return 128 + int(received[0])
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
