"""Running a submission, step 2 of ``grade`` (:mod:`.grade`): :class:`Grader` runs each notebook in
its own sandbox (:mod:`.sandbox`, :mod:`.nbrun`), collects the answers its check cells hand out,
and has them judged out of the learner's reach (:mod:`.judge`); the rows go to :mod:`.grade_report`
and, one transaction per notebook, to the :mod:`.gradebook`."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

import nbformat

from . import sandbox
from .frames import FrameError, read_frame, write_frame
from .grade_parse import ROOT, NotRegularFile, expected_checks, find_notebooks, identify_lesson, identity, \
    known_students, lesson_exercises, lesson_stems, parse_notebook, read_bytes, split_check_cell
from .grade_report import NotebookReport, Row, clean, exercise_rows
from .gradebook import Gradebook
from .static_answer import MAX_CODE, code_cells

DEFAULT_TIMEOUT = 120.0
DEFAULT_NOTEBOOK_TIMEOUT = 1200.0
MAX_OUTPUT = 256 * 1024**2       # bytes a notebook's sandbox may send back (answers)


def _pipe(stream: IO[Any] | None) -> BinaryIO:
    """A child's stdin/stdout (opened with PIPE, so never None in practice)."""
    if stream is None:
        raise OSError("the child process has no pipe")
    return cast(BinaryIO, stream)


class Grader:
    """Grades notebooks, ``workers`` at a time, each in its own sandboxes."""

    def __init__(self, workers: int = 2, timeout: float = DEFAULT_TIMEOUT,
                 notebook_timeout: float = DEFAULT_NOTEBOOK_TIMEOUT, limits: sandbox.Limits | None = None,
                 sandboxed: bool = True, gradebook: Gradebook | None = None, regrade: bool = False,
                 progress: Any = None, max_output: int = MAX_OUTPUT, roster: Iterable[str] = (),
                 heldout: dict[str, Any] | None = None):
        self.workers = max(1, workers)
        self.timeout, self.notebook_timeout = timeout, notebook_timeout
        self.limits = limits or sandbox.Limits()
        self.limits.cpu_seconds = int(max(self.limits.cpu_seconds, notebook_timeout + 60))
        self.sandboxed = sandboxed
        if sandboxed:  # torch's libraries measured (or read from the cache) while the rest starts; sent
            # to the judge with the limits, whose first use waits for it (sandbox.library_overhead)
            threading.Thread(target=self.limits.address_space, daemon=True).start()
        self.gradebook, self.regrade, self.progress = gradebook, regrade, progress
        self.max_output = max_output
        self.heldout = heldout  # the instructor's held-out images (grade_heldout.prepare), sent with each job
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
        # TMPDIR of the judges and of unsandboxed runs: they end killed, so the folders the checks
        # make with mkdtemp and remove at exit (lesson 7's logs, 13's and 16's files) would stay
        # in the system's temp folder, one set per run; here they go with self.tmp at close
        self.scratch = self.tmp / "tmp"
        self.scratch.mkdir(mode=0o700)
        self._courses: dict[str, Path] = {}  # lesson -> the staged course its submissions run against
        self._courses_lock = threading.Lock()  # not self.lock: stop() takes that one from a signal handler
        self.stems = lesson_stems()
        self.known: set[str] = set(roster)  # every student name: a file name naming one is refused elsewhere
        self._expected: dict[str, dict[str, str]] = {}
        self.graded = 0

    def course(self, lesson: str, executor: bool = False) -> Path:
        """The staged course for ``lesson`` (made once per lesson and run): every reference cut,
        and of the answers later lessons share, the lesson's own too (for the ``executor``, which
        runs answers and no demo, even those the lesson's demos use)."""
        key = f"{lesson}/executor" if executor else lesson
        with self._courses_lock:
            if key not in self._courses:
                self._courses[key] = sandbox.stage_course(
                    self.tmp / f"{'executor' if executor else 'course'}-{lesson}", lesson, executor)
            return self._courses[key]

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
            return sandbox.popen(argv, course=self.course(job["lesson"]), inputs=inputs, limits=self.limits, uid=uid,
                                 threads=self.threads)
        work = Path(tempfile.mkdtemp(dir=self.tmp))
        env = dict(os.environ, PYTHONPATH=str(self.course(job["lesson"])), COURSE_PROGRESS_LOG="", MPLBACKEND="Agg",
                   OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads), TMPDIR=str(self.scratch))
        job_local = dict(job, notebook=str(inputs / "notebook.ipynb"))
        argv[-1] = json.dumps(job_local)
        return subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def _judge(self) -> subprocess.Popen:
        proc = getattr(self.local, "judge", None)
        if proc is not None and proc.poll() is None:
            return proc
        env = dict(os.environ, COURSE_PROGRESS_LOG="", OMP_NUM_THREADS="1", TMPDIR=str(self.scratch),
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
        """One notebook's report (stored in the gradebook); ``None`` when stopping. Nothing a
        submission holds stops the batch: a failure of the grader on it is an error row."""
        if self.stopping.is_set():
            return None
        start = time.perf_counter()
        try:
            report, sha = self._grade(path, root)
        except Exception as exc:  # noqa: BLE001 - one notebook, never the batch
            report, sha = self._error_report(path, root, identify_lesson(path, None, self.stems),
                                             f"the grader failed on this notebook ({type(exc).__name__}: "
                                             f"{_one_line(exc)})", "grader_error"), "grader-error"
        if self.stopping.is_set():
            return None
        if report.resumed:
            return report
        report.seconds = time.perf_counter() - start
        if self.gradebook is not None:
            self.gradebook.record(report, sha, self.sandboxed)
        self.graded += 1
        return report

    def _error_report(self, path: Path, root: Path | None, lesson: str | None, error: str,
                      mistake: str) -> NotebookReport:
        report = NotebookReport(str(path), identity(path, lesson, root, self.known)[0], lesson)
        if lesson is None:
            report.error = error
            report.rows.append(Row(report.student, report.shown, "", "error", mistake, error))
        else:
            exercise_rows(report, lesson, set(), {}, error, mistake)
        return report

    def _grade(self, path: Path, root: Path | None) -> tuple[NotebookReport, str]:
        named = identify_lesson(path, None, self.stems)  # the lesson its file name says
        refusal = identity(path, named, root, self.known)[1]
        if refusal is not None:  # decided by its name alone: the file is not read
            return self._error_report(path, root, named, refusal, "names_another_student"), "names-another-student"
        try:
            data = read_bytes(path)
        except NotRegularFile as exc:
            return self._error_report(path, root, named, str(exc), "not_regular_file"), "not-a-regular-file"
        except (OSError, ValueError) as exc:
            return self._error_report(path, root, named, f"could not read the notebook ({_one_line(exc)})",
                                      "corrupt_notebook"), f"unreadable:{type(exc).__name__}"
        sha = hashlib.sha256(data).hexdigest()
        if self.gradebook is not None and not self.regrade and self.gradebook.done(path, sha):
            return self.gradebook.load(path, sha), sha
        try:
            nb = parse_notebook(path, data)
        except Exception as exc:  # noqa: BLE001 - bad encoding, not JSON, not a notebook, wrong types
            why = f"could not read the notebook ({type(exc).__name__}: {_one_line(exc)})"
            return self._error_report(path, root, named, why, "corrupt_notebook"), sha
        lesson = identify_lesson(path, nb, self.stems)
        if lesson is None:
            why = "unknown lesson: the file name names no lesson and it has no exercises_for(...)"
            return self._error_report(path, root, None, why, "unknown_lesson"), sha
        report = NotebookReport(str(path), identity(path, lesson, root, self.known)[0], lesson)
        self._run_and_judge(report, nb, lesson)
        return report, sha

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
        judge_uid = self.uids.take()  # the executor's, started while the notebook runs (judge._Prepared)
        try:
            answers, done, error, mistake = self._run_notebook(
                inputs, job, started=lambda: self._send_to_judge(self._judge_job(lesson, judge_uid, op="prepare")))
            shutil.rmtree(inputs, ignore_errors=True)
            if self.stopping.is_set():
                return
            if done is not None:
                report.problems += [clean(p, 300) for p in (done.get("problems") or [])[:200] if isinstance(p, str)]
                if isinstance(done.get("error"), str):
                    error, mistake = clean(done["error"], 300), clean(done.get("mistake") or "", 60)
            answers = {k: v for k, v in answers.items() if k in checked}
            if answers:
                verdicts = self._verdicts(lesson, answers, code_cells(nb.cells), judge_uid)
            else:
                verdicts = {}
                self._send_to_judge({"op": "discard"})
        finally:
            self.uids.give(judge_uid)
        if error:
            report.problems.append(error)
        exercise_rows(report, lesson, checked, verdicts, error, mistake)

    def _judge_job(self, lesson: str, uid: int | None, **extra: Any) -> dict[str, Any]:
        return {"lesson": lesson, "uid": uid, "course": str(self.course(lesson, executor=True)),
                "limits": asdict(self.limits), "no_sandbox": not self.sandboxed, "heldout": self.heldout, **extra}

    def _send_to_judge(self, frame: dict[str, Any]) -> None:
        """A frame the judge answers nothing to (``prepare``, ``discard``): best effort, as the
        judging that follows starts its own executor when this one is missing."""
        if self.stopping.is_set():
            return
        try:
            write_frame(_pipe(self._judge().stdin), frame)
        except (EOFError, FrameError, OSError, RuntimeError):
            self.local.judge = None

    def _run_notebook(self, inputs: Path, job: dict, started: Any = None
                      ) -> tuple[dict, dict | None, str | None, str | None]:
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
            if started is not None:
                started()
            budget = self.max_output
            while True:
                head, data = read_frame(_pipe(proc.stdout), budget)
                budget -= len(data) + 64
                if budget < 0:
                    raise FrameError("over the output limit")
                if head.get("type") == "answer" and isinstance(head.get("exercise"), str):
                    err = head.get("error")
                    answers[head["exercise"]] = (None if err else data, clean(err, 200) if err else None)
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

    def _verdicts(self, lesson: str, answers: dict[str, tuple[bytes | None, str | None]],
                  code: list[str] | None = None, uid: int | None = None) -> dict[str, dict]:
        exercises = [ex for ex in lesson_exercises(lesson) if ex.id in answers]
        deadline = 120 + sum(3 * float(ex.timeout) + 20 for ex in exercises)
        proc = None
        timer = None
        try:
            proc = self._judge()
            timer = threading.Timer(deadline, lambda: sandbox.kill(proc))
            timer.start()
            write_frame(_pipe(proc.stdin), self._judge_job(
                lesson, uid, op="judge", n=len(answers),
                # the notebook's text, for rules on the answer's code (static_answer.py)
                code=code if code is not None and sum(map(len, code)) <= MAX_CODE else None))
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
        return {k: v for k, v in verdicts.items() if isinstance(v, dict) and k in answers}

    # ------------------------------------------------------------------ batch

    def run(self, items: list[tuple[Path, Path | None]]) -> list[NotebookReport]:
        self.known |= known_students(items, self.stems)
        results: dict[int, NotebookReport] = {}
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            futures = {pool.submit(self.grade_one, p, r): i for i, (p, r) in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = concurrent.futures.wait(pending, timeout=0.2)
                for fut in finished:
                    try:
                        rep = fut.result()
                    except Exception as exc:  # noqa: BLE001 - grade_one's own guard failed: still a row
                        path, root = items[futures[fut]]
                        rep = self._error_report(path, root, None, f"the grader failed on this notebook "
                                                 f"({type(exc).__name__}: {_one_line(exc)})", "grader_error")
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
          memory: int | None = None, gradebook: str | os.PathLike[str] | None = None,
          heldout: dict[str, Any] | None = None) -> list[NotebookReport]:
    """Grade notebooks (files or folders); returns one report per notebook, in input order.
    ``heldout``: the instructor's held-out images (:func:`.grade_heldout.prepare`'s setup)."""
    items = find_notebooks(paths)
    limits = sandbox.Limits() if memory is None else sandbox.Limits(memory=memory)
    book = Gradebook(gradebook) if gradebook else None
    grader = Grader(workers, timeout, notebook_timeout, limits, sandboxed, book, progress=progress, heldout=heldout)
    try:
        return grader.run(items)
    finally:
        grader.close()
        if book is not None:
            book.close()


def _one_line(exc: BaseException, n: int = 160) -> str:
    """An exception's text on one line (a validation error spans several)."""
    return clean(" ".join(str(exc).split()), n)
