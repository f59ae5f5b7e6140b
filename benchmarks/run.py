#!/usr/bin/env python
"""Measure the course: not a test, a report.

    python benchmarks/run.py                  # everything
    python benchmarks/run.py --only checks    # one section: import, notebooks, checks, lessons, grading
    python benchmarks/run.py --lessons 01 02  # restrict notebooks/checks to some lessons
    python benchmarks/run.py --json out.json  # also write the numbers as JSON
    python benchmarks/run.py --only busy --busy-lesson 05   # a lesson idle vs. on a busy machine

Sections:
- import: ``import course_utils`` and ``import course_utils.grading`` in a fresh interpreter.
- notebooks: every solution and learner notebook executed top to bottom in a fresh kernel
  (nbclient), wall time and peak memory each. Peak memory is the largest sum, over the kernel
  and every process it started (DataLoader workers, torchrun and its ranks), of each process's
  proportional set size (PSS: shared pages divided among the processes that share them), sampled
  every 50 ms from /proc. Targets: <= 30 s and <= 1 GB on a 2-core CPU.
- checks: every exercise's check with its reference answer, ``--repeat`` times (fresh random
  cases each time): median and max latency. Targets: median <= 0.2 s, max <= 1 s.
- latency: per lesson, a fresh interpreter imports the grader and calls ``exercises_for`` (warm-up),
  then checks each exercise once (first/cold check) and ``--repeat`` times (warm). Targets: first
  check of a lesson <= 1 s; warm median <= 0.2 s, max <= 1 s (capstone and HEAVY_CHECKS <= 2 s).
- lessons: what a learner faces per lesson, for workshop planning (docs/instructor_guide.md):
  words of prose, code cells, exercises, and an estimate of learner time (reading at
  ``READ_WPM`` words a minute, ``EXAMPLE_MIN`` per example cell, ``EXERCISE_MIN`` per exercise).
- grading: the instructor grader (``python -m course_utils grade``) on ``--grading-notebooks``
  submissions (copies of the selected lessons' solution and learner notebooks) with each of
  ``--grading-workers`` parallel workers: wall time and notebooks graded per minute; then a
  30-learner room summary (``progress summary``) of synthetic logs: table and PNG plot.

- room: the instructor's room view of ``--room-learners`` (300) synthetic learners' logs:
  ``progress summary`` as a command in a fresh interpreter (start-up and imports included), with
  and without ``--plot``, and the ``--watch`` redraw with nothing changed and with 10 logs grown.
  Target: the command <= 1 s, the redraw well under a second.
- busy: one solution notebook (``--busy-lesson``) run with the course's thread policy
  (course_utils/threads.py) on the machine as it is, then again while another process runs a
  2-thread torch job (``--busy-threads``): the ratio must stay <= ``BUSY_RATIO_TARGET``.
  ``--busy-default-threads`` also times it with torch's default thread count (one per core),
  to show what the policy avoids.
- sandbox (only with ``--only sandbox``): the same ``--sandbox-notebooks`` mixed submissions
  (solved and untouched notebooks of ``--sandbox-lessons``, default 00 and 01) run four ways,
  side by side: the notebooks' own run time (nbclient, fresh kernel each, ``--sandbox-workers``
  at a time), ``grade`` sandboxed (the default), ``grade --no-sandbox``, and ``nbgrader
  autograde`` of the same notebooks exported with ``build --nbgrader`` (nbgrader 0.9.6 from a
  separate virtual environment, ``COURSE_NBGRADER_VENV`` or one created in the temp folder).
  Targets: sandboxed within 1.5x the own run time, and faster than nbgrader.

- nbgrader (only with ``--only nbgrader``): per lesson (``--lessons``, default all), ``grade`` and
  ``nbgrader autograde`` of the same ``--nbgrader-notebooks`` submissions (solved and untouched
  alternately, exported with ``build --nbgrader``), one worker and one torch thread each, both as
  commands, interleaved ``--nbgrader-repeat`` times: the ratio ours/nbgrader of the medians per
  lesson. Target <= 1. nbgrader 0.9.6 as in ``sandbox``; its kernels run on this Python (a
  kernelspec on ``JUPYTER_PATH``), and a notebook whose imports failed in nbgrader's kernel is
  reported NOT COMPARABLE (before 2026-11-28 nbgrader's kernel was its own venv's Python, without
  torch: it ran nothing past ``import torch``, and its times were not comparable).

Run it on a quiet machine: other processes inflate every number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The rates of the lesson-time source (course_utils/lesson_times.py), which headers, README and
# guide take their times from: the "lessons" section counts against it.
from course_utils.lesson_times import EXAMPLE_MIN, EXERCISE_MIN, LESSONS, READ_WPM

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_TARGET_S = 30.0
NOTEBOOK_MEMORY_TARGET_MB = 1000.0
CHECK_MEDIAN_TARGET_S = 0.2
CHECK_MAX_TARGET_S = 1.0
BUSY_RATIO_TARGET = 1.5
HEAVY_TARGET_S = 2.0
# Checks that train a model for hundreds of steps, or read a 10 050-event log, for the reference
# and for the answer: like the capstone's, their first, median and max targets are HEAVY_TARGET_S.
HEAVY_CHECKS = frozenset({"07_debugging.overfit_one_batch", "07_debugging.read_scalars"})


def _flag(ok: bool) -> str:
    return "ok" if ok else "OVER TARGET"


def bench_import() -> dict[str, float]:
    out = {}
    for mod in ("course_utils", "course_utils.grading"):
        code = f"import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"
        times = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(3)]
        out[mod] = statistics.median(times)
        print(f"import {mod:<24} {out[mod]:6.2f} s (median of 3, includes torch where imported)")
    return out


def _selected(paths: list[Path], lessons: list[str]) -> list[Path]:
    return [p for p in paths if not lessons or any(p.stem.startswith(x) for x in lessons)]


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _pss_mb(pid: int) -> float:
    """Proportional set size of one process in MB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class TreeMemory:
    """Sample the summed PSS of this process's descendants (a notebook's kernel and everything
    it starts) in a background thread; ``peak_mb`` is the largest sum seen."""

    def __init__(self, interval: float = 0.05):
        import threading

        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, sum(_pss_mb(p) for p in _descendants(me)))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_notebooks(lessons: list[str]) -> list[dict]:
    import nbformat
    from nbclient import NotebookClient

    os.environ["COURSE_PROGRESS_LOG"] = ""
    rows = []
    for folder in ("solutions", "notebooks"):
        for path in _selected(sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")), lessons):
            nb = nbformat.read(path, as_version=4)
            start = time.perf_counter()
            error = None
            with TreeMemory() as memory:
                try:
                    NotebookClient(nb, timeout=600, kernel_name="python3",
                                   resources={"metadata": {"path": str(path.parent)}}).execute()
                except Exception as exc:  # noqa: BLE001 - report and go on
                    error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:120]}"
            took = time.perf_counter() - start
            rows.append({"notebook": f"{folder}/{path.name}", "seconds": round(took, 2),
                         "peak_mb": round(memory.peak_mb), "error": error})
            ok = took <= NOTEBOOK_TARGET_S and memory.peak_mb <= NOTEBOOK_MEMORY_TARGET_MB
            status = f"ERROR {error}" if error else _flag(ok)
            print(f"{folder + '/' + path.name:<40} {took:6.1f} s  {memory.peak_mb:6.0f} MB  {status}",
                  flush=True)
    return rows


def bench_checks(lessons: list[str], repeat: int) -> list[dict]:
    os.environ["COURSE_PROGRESS_LOG"] = ""
    from course_utils import grading

    rows = []
    for ex_id in grading.exercises():
        if lessons and not any(ex_id.startswith(x) for x in lessons):
            continue
        ref = grading.reference(ex_id)
        times = []
        status = "correct"
        for _ in range(repeat):
            t = time.perf_counter()
            res = grading.check(ex_id, ref)
            times.append(time.perf_counter() - t)
            if not res.passed:
                status = f"FAILED: {res.message[:80]}"
        med, mx = statistics.median(times), max(times)
        heavy = ex_id.startswith("12_capstone") or ex_id in HEAVY_CHECKS
        ok = mx <= HEAVY_TARGET_S if heavy else med <= CHECK_MEDIAN_TARGET_S and mx <= CHECK_MAX_TARGET_S
        rows.append({"exercise": ex_id, "median_s": round(med, 4), "max_s": round(mx, 4), "status": status})
        verdict = _flag(ok) if status == "correct" else status
        print(f"{ex_id:<50} median {med * 1000:7.1f} ms  max {mx * 1000:7.1f} ms  {verdict}", flush=True)
    return rows


_COLD_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from course_utils import grading
from course_utils.grading import registry
t_import = time.perf_counter() - t0
lesson = sys.argv[1]
t = time.perf_counter()
ex = grading.exercises_for(lesson)
t_setup = time.perf_counter() - t
rows = []
for i, e in enumerate(registry.load_lesson(lesson)):
    ref = grading.reference(e.id)
    t = time.perf_counter()
    res = getattr(ex, e.name).check(ref)
    first = time.perf_counter() - t
    warm = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter()
        res2 = getattr(ex, e.name).check(ref)
        warm.append(time.perf_counter() - t)
    rows.append(dict(exercise=e.id, first_s=first, warm=warm, lesson_first=(i == 0),
                     passed=bool(res.passed and res2.passed)))
print(json.dumps(dict(import_s=t_import, setup_s=t_setup, rows=rows)))
"""
COLD_FIRST_TARGET_S = 1.0


def bench_latency(lessons: list[str], repeat: int) -> list[dict]:
    """Cold and warm check latency as a learner meets it: per lesson a fresh interpreter runs
    ``import course_utils.grading`` and ``exercises_for(lesson)`` (which preloads slow modules
    and warms each exercise), then checks each exercise's reference once (first check) and
    ``repeat`` more times (warm). Targets: the first check of a lesson <= 1 s; warm checks
    median <= 0.2 s and max <= 1 s (capstone and HEAVY_CHECKS <= 2 s)."""
    from course_utils.grading import registry

    env = dict(os.environ, COURSE_PROGRESS_LOG="", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    for lesson in registry.lesson_modules():
        if lessons and not any(lesson.startswith(x) for x in lessons):
            continue
        out = subprocess.run([sys.executable, "-c", _COLD_SCRIPT, lesson, str(repeat)], env=env,
                             capture_output=True, text=True, timeout=900)
        if out.returncode:
            print(f"{lesson}: FAILED {out.stderr.strip().splitlines()[-1:]}")
            continue
        data = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{lesson}: import {data['import_s']:.2f} s, exercises_for {data['setup_s']:.2f} s (untimed "
              "warm-up, before any check)")
        for r in data["rows"]:
            med = statistics.median(r["warm"]) if r["warm"] else float("nan")
            mx = max(r["warm"]) if r["warm"] else float("nan")
            heavy = "capstone" in lesson or r["exercise"] in HEAVY_CHECKS
            max_target = HEAVY_TARGET_S if heavy else CHECK_MAX_TARGET_S
            ok = (r["first_s"] <= (COLD_FIRST_TARGET_S if r["lesson_first"] else max_target)
                  and med <= (max_target if heavy else CHECK_MEDIAN_TARGET_S)
                  and mx <= max_target and r["passed"])
            print(f"  {r['exercise']:<48} first {r['first_s'] * 1000:7.1f} ms  warm median {med * 1000:7.1f} ms"
                  f"  max {mx * 1000:7.1f} ms  {_flag(ok)}", flush=True)
            rows.append(dict(lesson=lesson, import_s=round(data["import_s"], 3), setup_s=round(data["setup_s"], 3),
                             exercise=r["exercise"], first_s=round(r["first_s"], 4),
                             warm_median_s=round(med, 4), warm_max_s=round(mx, 4), ok=ok))
    return rows


def bench_lessons(lessons: list[str]) -> list[dict]:
    import re

    import nbformat

    rows = []
    for path in _selected(sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), lessons):
        nb = nbformat.read(path, as_version=4)
        words = sum(len(re.findall(r"[A-Za-z0-9']+", c.source)) for c in nb.cells if c.cell_type == "markdown")
        code = [c for c in nb.cells if c.cell_type == "code"]
        checks = [c for c in code if re.search(r"^ex\.\w+\.check\(\w+\)\s*$", c.source, re.M)]
        stubs = sum(1 for c in code if "raise NotImplementedError(" in c.source)
        examples = len(code) - len(checks) - stubs
        minutes = words / READ_WPM + examples * EXAMPLE_MIN + len(checks) * EXERCISE_MIN
        source = LESSONS[path.stem].minutes if path.stem in LESSONS else None
        rows.append({"lesson": path.stem, "words": words, "code_cells": len(code), "exercises": len(checks),
                     "estimated_minutes": round(minutes), "lesson_times_minutes": source})
        print(f"{path.stem:<24} {words:6d} words  {len(code):3d} code cells  {len(checks):2d} exercises  "
              f"~{minutes:4.0f} min counted, {source} min in course_utils/lesson_times.py", flush=True)
    return rows


def bench_grading(lessons: list[str], n_notebooks: int, workers: list[int], timeout: float) -> dict:
    import shutil
    import tempfile

    from course_utils.instructor import grade, judge_side, room

    os.environ["COURSE_PROGRESS_LOG"] = ""
    sources = []
    for folder in ("solutions", "notebooks"):
        sources += _selected(sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")), lessons)
    if not sources:
        print("no notebooks selected")
        return {}
    out: dict = {"notebooks": n_notebooks, "lessons": sorted({p.stem for p in sources}), "runs": []}
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        for i in range(n_notebooks):
            src = sources[i % len(sources)]
            student = tmp / "submissions" / f"student{i:02d}"
            student.mkdir(parents=True)
            shutil.copy(src, student / src.name)
        for n in workers:
            judge_side.forget_cuts()  # each run as a fresh `grade` command pays for its cut
            start = time.perf_counter()
            reports = grade.grade([tmp / "submissions"], workers=n, timeout=timeout)
            took = time.perf_counter() - start
            broken = sum(1 for r in reports if r.error)
            per_min = 60.0 * len(reports) / took
            out["runs"].append({"workers": n, "seconds": round(took, 1), "per_minute": round(per_min, 1),
                                "broken": broken})
            print(f"grade {len(reports)} notebooks with {n} worker(s): {took:6.1f} s  "
                  f"= {per_min:5.1f} notebooks/min{'  (' + str(broken) + ' BROKEN)' if broken else ''}", flush=True)
        logs = tmp / "room"
        room.synthetic_logs(logs, 30, seed=0)
        start = time.perf_counter()
        summary = room.room_summary([logs])
        summary.text()
        summary.plot(tmp / "room.png")
        took = time.perf_counter() - start
        cli = [sys.executable, "-m", "course_utils", "progress", "summary", str(logs), "--plot", str(tmp / "room2.png")]
        start = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True)
        cli_took = time.perf_counter() - start
        out["room_summary_30"] = {"seconds": round(took, 3), "cli_seconds": round(cli_took, 2),
                                  "events": summary.events}
        print(f"room summary of 30 learners ({summary.events} events): {took:.2f} s in-process (table + PNG), "
              f"{cli_took:.1f} s as a command (imports included)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


ROOM_TARGET_S = 1.0


def bench_room(n_learners: int, repeat: int) -> dict:
    """The room view of ``n_learners`` synthetic learners (``room.synthetic_logs``): the
    ``progress summary`` command cold, in a fresh interpreter each time (start-up and imports
    included; wall and CPU time), with and without ``--plot``; then ``--watch``'s redraw in one
    process: nothing changed (the logs' signatures only), and 10 learners' logs grown by one
    event each (only those re-read and refolded)."""
    import json as _json
    import resource
    import shutil
    import tempfile

    from course_utils.instructor import room

    tmp = Path(tempfile.mkdtemp(prefix="bench-room-"))
    out: dict = {"learners": n_learners, "target_s": ROOM_TARGET_S}
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    try:
        files = room.synthetic_logs(tmp / "logs", n_learners, seed=0)
        out["events"] = sum(len(f.read_text().splitlines()) for f in files)
        out["megabytes"] = round(sum(f.stat().st_size for f in files) / 1e6, 1)
        for label, extra in (("summary", []), ("summary_plot", ["--plot", str(tmp / "room.png")])):
            walls, cpus = [], []
            for _ in range(repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "course_utils", "progress", "summary", str(tmp / "logs"), *extra],
                               cwd=ROOT, env=env, check=True, capture_output=True)
                walls.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            out[label] = {"wall_median_s": round(statistics.median(walls), 3), "wall_min_s": round(min(walls), 3),
                          "cpu_median_s": round(statistics.median(cpus), 3)}
            ok = statistics.median(walls) <= ROOM_TARGET_S if label == "summary" else True
            print(f"progress summary{' --plot' if extra else ''} ({n_learners} learners, {out['events']} events, "
                  f"{out['megabytes']} MB), fresh interpreter, {repeat} runs: median {statistics.median(walls):.2f} s "
                  f"wall (min {min(walls):.2f}), {statistics.median(cpus):.2f} s CPU"
                  + (f"  {_flag(ok)} (target <= {ROOM_TARGET_S:g} s)" if label == "summary" else ""), flush=True)
        probe = ("import sys, time; t = time.process_time(); import course_utils.__main__, course_utils.progress_cli, "
                 "course_utils.instructor.room; print(time.process_time() - t)")
        imports = [float(subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, check=True,
                                        capture_output=True, text=True).stdout) for _ in range(repeat)]
        out["imports_cpu_median_s"] = round(statistics.median(imports), 3)
        print(f"  of which the summary path's imports: median {statistics.median(imports) * 1000:.0f} ms CPU",
              flush=True)
        cache = room.LogCache()
        room.room_summary([tmp / "logs"], cache=cache).text()
        idle, grown = [], []
        for i in range(repeat):
            start = time.perf_counter()
            listed = room.log_files([tmp / "logs"])
            room.room_signature(listed)  # what --watch compares before it redraws anything
            idle.append(time.perf_counter() - start)
            for f in files[i * 10 % len(files):][:10]:
                with open(f, "a", encoding="utf-8") as fh:
                    fh.write(_json.dumps({"ts": time.time(), "learner": f.stem, "event": "hint",
                                          "exercise": "01_tensors.attention", "level": 1}) + "\n")
            start = time.perf_counter()
            listed = room.log_files([tmp / "logs"])
            room.room_signature(listed)
            room.room_summary([tmp / "logs"], cache=cache, files=listed).text()
            grown.append(time.perf_counter() - start)
        out["watch_unchanged_s"] = round(statistics.median(idle), 4)
        out["watch_10_changed_s"] = round(statistics.median(grown), 3)
        print(f"--watch redraw: nothing changed {statistics.median(idle) * 1000:.0f} ms, 10 logs grown "
              f"{statistics.median(grown) * 1000:.0f} ms (medians of {repeat}; in one process)  "
              f"{_flag(statistics.median(grown) <= ROOM_TARGET_S / 2)} (target well under a second)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


BUSY_JOB = """
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a = torch.randn(384, 384)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    a = torch.tanh(a @ a)
"""


def _run_notebook(path: Path, env: dict[str, str | None]) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        start = time.perf_counter()
        NotebookClient(nb, timeout=1200, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        return time.perf_counter() - start
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def bench_busy(lesson: str, job_threads: int, default_threads: bool, repeat: int = 2) -> dict:
    """A lesson with the thread policy, on the machine as it is and next to a ``job_threads``-
    thread torch job, alternating ``repeat`` times (medians: other load comes and goes)."""
    from course_utils import threads

    os.environ["COURSE_PROGRESS_LOG"] = ""
    path = _selected(sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")), [lesson])[0]
    policy = threads.kernel_env()
    out: dict = {"notebook": f"solutions/{path.name}", "policy_threads": int(policy["OMP_NUM_THREADS"]),
                 "job_threads": job_threads, "cpus": os.cpu_count(), "loadavg_before": os.getloadavg()[0],
                 "idle_runs": [], "busy_runs": []}

    def busy(env: dict[str, str | None]) -> float:
        job = subprocess.Popen([sys.executable, "-c", BUSY_JOB, str(job_threads), "3600"],
                               env={**os.environ, "OMP_NUM_THREADS": str(job_threads)})
        try:
            time.sleep(2)  # let the job reach its loop
            return _run_notebook(path, env)
        finally:
            job.terminate()
            job.wait()

    for i in range(repeat):
        out["idle_runs"].append(round(_run_notebook(path, policy), 1))
        out["busy_runs"].append(round(busy(policy), 1))
        print(f"{path.name} run {i + 1}: {out['idle_runs'][-1]:6.1f} s as is, {out['busy_runs'][-1]:6.1f} s next to a "
              f"{job_threads}-thread job ({out['policy_threads']} thread(s) per kernel)", flush=True)
    out["idle_s"] = statistics.median(out["idle_runs"])
    out["busy_s"] = statistics.median(out["busy_runs"])
    if default_threads:
        out["busy_default_threads_s"] = round(busy({k: None for k in policy}), 1)
        print(f"{path.name}: {out['busy_default_threads_s']:6.1f} s with torch's default threads next to the job",
              flush=True)
    out["ratio"] = round(out["busy_s"] / out["idle_s"], 2)
    out["loadavg_after"] = os.getloadavg()[0]
    print(f"busy / idle = {out['ratio']:.2f} (medians)  {_flag(out['ratio'] <= BUSY_RATIO_TARGET)} "
          f"(target <= {BUSY_RATIO_TARGET}; load average {out['loadavg_before']:.1f} before, "
          f"{out['loadavg_after']:.1f} after)", flush=True)
    return out


def _nbgrader_exe() -> Path | None:
    import tempfile

    venv = Path(os.environ.get("COURSE_NBGRADER_VENV") or Path(tempfile.gettempdir()) / "course-nbgrader-0.9.6")
    exe = venv / "bin" / "nbgrader"
    if not exe.exists():
        print(f"creating {venv} with nbgrader==0.9.6 (not a course dependency)...", flush=True)
        r1 = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], capture_output=True)
        r2 = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "nbgrader==0.9.6"], capture_output=True,
                            text=True) if r1.returncode == 0 else r1
        if r2.returncode != 0:
            print(f"nbgrader could not be installed: {str(r2.stderr)[-300:]}")
            return None
    return exe


def _nbgrader_env(exe: Path, tmp: Path, **extra: str) -> dict[str, str]:
    """The environment nbgrader runs in, with its kernels on this Python, the course's, which has
    torch. nbgrader lives in a venv of its own, whose default ``python3`` kernel is that venv's
    interpreter: without this, every notebook it grades stops at ``import torch``
    (``ModuleNotFoundError``) and it seems fast for running nothing."""
    spec = tmp / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (the course's)", "language": "python"}))
    return dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_PATH=str(tmp / "jupyter"),
                PATH=f"{exe.parent}{os.pathsep}{os.environ['PATH']}", **extra)


def _nbgrader_failures(course: Path, stem: str) -> list[str]:
    """What stops a notebook nbgrader autograded from being a fair comparison: an import that
    failed in its kernel (the notebook ran nothing after it)."""
    import nbformat

    bad = []
    for path in sorted((course / "autograded").glob(f"*/{stem}/{stem}.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for o in cell.get("outputs", []):
                if o.get("output_type") == "error" and o.get("ename") in ("ModuleNotFoundError", "ImportError"):
                    bad.append(f"{path.parent.parent.name}: {o.get('ename')}: {o.get('evalue')}")
    return bad


def bench_sandbox(lessons: list[str], n_notebooks: int, workers: int, timeout: float) -> dict:
    """Sandboxed grading vs unsandboxed vs nbgrader autograde vs the notebooks' own run time."""
    import concurrent.futures
    import shutil
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    from course_utils.instructor import grade, nbgrader_export

    os.environ["COURSE_PROGRESS_LOG"] = ""
    stems = sorted({p.stem for p in _selected(sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")), lessons)})
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    out: dict = {"notebooks": n_notebooks, "workers": workers, "lessons": stems}
    try:
        plan = [(f"student{i:02d}", stems[i % len(stems)], (i // len(stems)) % 2 == 0) for i in range(n_notebooks)]
        subs = tmp / "submissions"
        for student, stem, solved in plan:
            (subs / student).mkdir(parents=True)
            src = ROOT / ("solutions" if solved else "notebooks") / f"{stem}.ipynb"
            shutil.copy(src, subs / student / f"{stem}.ipynb")
        print(f"{n_notebooks} submissions of {', '.join(stems)} (half solved), {workers} at a time", flush=True)

        def own(path: Path) -> None:
            nb = nbformat.read(path, as_version=4)
            work = Path(tempfile.mkdtemp(dir=tmp))
            NotebookClient(nb, timeout=int(timeout), kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(work)}}).execute()

        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(own, sorted(subs.rglob("*.ipynb"))))
        out["own_run_s"] = round(time.perf_counter() - start, 1)
        print(f"  notebooks' own run time (nbclient):   {out['own_run_s']:7.1f} s", flush=True)
        for label, sandboxed in (("sandboxed_s", True), ("no_sandbox_s", False)):
            start = time.perf_counter()
            reports = grade.grade([subs], workers=workers, timeout=timeout, sandboxed=sandboxed)
            out[label] = round(time.perf_counter() - start, 1)
            out[label.replace("_s", "_broken")] = sum(1 for r in reports if r.error)
            out[label.replace("_s", "_correct")] = sum(1 for r in reports for row in r.rows if row.status == "correct")
            print(f"  grade {'(sandboxed)   ' if sandboxed else '--no-sandbox  '}:           {out[label]:7.1f} s  "
                  f"({out[label.replace('_s', '_correct')]} exercises correct)", flush=True)
        exe = _nbgrader_exe()
        if exe is not None:
            course = tmp / "nbgrader"
            nbgrader_export.export(course, stems)
            env = _nbgrader_env(exe, tmp)
            for stem in stems:
                subprocess.run([str(exe), "generate_assignment", stem, "--force"], cwd=course, env=env, check=True,
                               capture_output=True)
            for student, stem, solved in plan:
                src = course / ("source" if solved else "release") / stem / f"{stem}.ipynb"
                (course / "submitted" / student / stem).mkdir(parents=True)
                shutil.copy(src, course / "submitted" / student / stem / f"{stem}.ipynb")
            start = time.perf_counter()
            for stem in stems:
                r = subprocess.run([str(exe), "autograde", stem, "--force"], cwd=course, env=env, capture_output=True,
                                   text=True)
                if r.returncode != 0:
                    print(f"  nbgrader autograde {stem} failed: {r.stderr[-300:]}")
                for why in _nbgrader_failures(course, stem)[:3]:
                    print(f"  NOT COMPARABLE: nbgrader's kernel could not import ({why})")
            out["nbgrader_s"] = round(time.perf_counter() - start, 1)
            print(f"  nbgrader autograde (sequential):      {out['nbgrader_s']:7.1f} s", flush=True)
        ratio = out["sandboxed_s"] / out["own_run_s"]
        out["sandboxed_over_own"] = round(ratio, 2)
        print(f"  sandboxed / own run time = {ratio:.2f} (target <= 1.5: {_flag(ratio <= 1.5)})"
              + (f"; sandboxed / nbgrader = {out['sandboxed_s'] / out['nbgrader_s']:.2f} "
                 f"(target < 1: {_flag(out['sandboxed_s'] < out['nbgrader_s'])})" if "nbgrader_s" in out else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def bench_vs_nbgrader(lessons: list[str], n_notebooks: int, repeat: int, timeout: float) -> dict:
    """``grade`` and ``nbgrader autograde`` side by side, per lesson, on the same submissions
    (``n_notebooks`` per lesson: solved and untouched learner notebooks alternately), one worker
    each, one torch thread each, both as commands in fresh processes, interleaved (ours, theirs;
    then theirs, ours, ...) ``repeat`` times. The ratio ours/nbgrader per lesson is of the
    medians; target <= 1. nbgrader 0.9.6 is not a course dependency: it comes from its own
    virtual environment (``COURSE_NBGRADER_VENV``, or one made in the temp folder)."""
    import shutil
    import tempfile

    import cpu_meter  # benchmarks/: counts the sandboxes grade kills, which rusage misses

    from course_utils.instructor import nbgrader_export

    exe = _nbgrader_exe()
    stems = sorted({p.stem for p in _selected(sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")), lessons)})
    out: dict = {"notebooks_per_lesson": n_notebooks, "repeat": repeat, "lessons": {}}
    if exe is None or not stems:
        print("nbgrader is not available: nothing compared" if exe is None else "no lesson selected")
        out["skipped"] = "nbgrader not installable" if exe is None else "no lesson"
        return out
    tmp = Path(tempfile.mkdtemp(prefix="bench-vs-nbgrader-"))
    env = _nbgrader_env(exe, tmp, OMP_NUM_THREADS="1", COURSE_PROGRESS_LOG="")
    try:
        course = tmp / "nbgrader"
        nbgrader_export.export(course, stems)
        for stem in stems:
            subprocess.run([str(exe), "generate_assignment", stem, "--force"], cwd=course, env=env, check=True,
                           capture_output=True)
            for i in range(n_notebooks):
                student, solved = f"student{i:02d}", i % 2 == 0
                ours = tmp / "ours" / stem / student
                ours.mkdir(parents=True)
                shutil.copy(ROOT / ("solutions" if solved else "notebooks") / f"{stem}.ipynb", ours / f"{stem}.ipynb")
                theirs = course / "submitted" / student / stem
                theirs.mkdir(parents=True)
                src = course / ("source" if solved else "release") / stem / f"{stem}.ipynb"
                shutil.copy(src, theirs / f"{stem}.ipynb")

        def ours(stem: str, k: int) -> float:
            start = time.perf_counter()
            r, cpu, how = cpu_meter.run([sys.executable, "-m", "course_utils", "grade", str(tmp / "ours" / stem),
                                         "--workers", "1", "--quiet", "--regrade", "--timeout", str(timeout),
                                         "--gradebook", str(tmp / f"ours-{stem}-{k}.sqlite")],
                                        cwd=ROOT, env=env, capture_output=True, text=True)
            took = time.perf_counter() - start
            cpus["ours"].append(cpu)
            out["cpu_counted_by"] = how
            if r.returncode not in (0, 1):  # 1: some exercise failed (the untouched notebooks)
                print(f"  grade {stem} failed ({r.returncode}): {r.stderr[-300:]}")
            return took

        def theirs(stem: str, k: int) -> float:
            start = time.perf_counter()
            r, cpu, _ = cpu_meter.run([str(exe), "autograde", stem, "--force"], cwd=course, env=env,
                                      capture_output=True, text=True)
            took = time.perf_counter() - start
            cpus["nbgrader"].append(cpu)
            if r.returncode != 0:
                print(f"  nbgrader autograde {stem} failed: {r.stderr[-300:]}")
            failures = _nbgrader_failures(course, stem)
            if failures:
                out.setdefault("not_comparable", {})[stem] = failures[:3]
                print(f"  NOT COMPARABLE: nbgrader's kernel could not import ({failures[0]})")
            return took

        cpus: dict[str, list[float]] = {}
        for stem in stems:
            times: dict[str, list[float]] = {"ours": [], "nbgrader": []}
            cpus.update(ours=[], nbgrader=[])
            for k in range(repeat):
                order = [("ours", ours), ("nbgrader", theirs)]
                for label, run in order if k % 2 == 0 else order[::-1]:
                    times[label].append(run(stem, k))
            a, b = statistics.median(times["ours"]), statistics.median(times["nbgrader"])
            ca, cb = statistics.median(cpus["ours"]), statistics.median(cpus["nbgrader"])
            out["lessons"][stem] = {"ours_s": [round(t, 1) for t in times["ours"]],
                                    "nbgrader_s": [round(t, 1) for t in times["nbgrader"]], "ratio": round(a / b, 2),
                                    "ours_cpu_s": round(ca, 1), "nbgrader_cpu_s": round(cb, 1),
                                    "cpu_ratio": round(ca / cb, 2)}
            print(f"{stem:<24} ours {a:6.1f} s  nbgrader {b:6.1f} s  ours/nbgrader = {a / b:4.2f}  "
                  f"{_flag(a <= b)} (target <= 1; medians of {repeat}, {n_notebooks} notebooks); CPU {ca:.1f} s vs "
                  f"{cb:.1f} s = {ca / cb:.2f}", flush=True)
        out["loadavg"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["import", "notebooks", "checks", "latency", "lessons", "grading",
                                       "room", "busy", "sandbox", "nbgrader"], action="append")
    ap.add_argument("--nbgrader-notebooks", type=int, default=4, help="submissions per lesson for --only nbgrader")
    ap.add_argument("--nbgrader-repeat", type=int, default=3, help="interleaved runs per lesson for --only nbgrader")
    ap.add_argument("--room-learners", type=int, default=300, help="synthetic learners for the room view (300)")
    ap.add_argument("--room-repeat", type=int, default=5, help="runs of each room-view timing (default 5)")
    ap.add_argument("--sandbox-notebooks", type=int, default=30, help="submissions for --only sandbox (default 30)")
    ap.add_argument("--sandbox-lessons", nargs="*", default=["00", "01"], help="lessons for --only sandbox")
    ap.add_argument("--sandbox-workers", type=int, default=2, help="parallel workers for --only sandbox")
    ap.add_argument("--lessons", nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=10, help="checks per exercise (default 10)")
    ap.add_argument("--grading-notebooks", type=int, default=8, help="submissions to grade (default 8)")
    ap.add_argument("--grading-workers", type=int, nargs="+", default=[1, 2],
                    help="parallel workers to time the grader with (default: 1 2)")
    ap.add_argument("--grading-timeout", type=float, default=120, help="per-cell timeout while grading")
    ap.add_argument("--busy-lesson", default="05", help="lesson for the busy-machine run (default 05)")
    ap.add_argument("--busy-threads", type=int, default=2, help="threads of the competing job (default 2)")
    ap.add_argument("--busy-repeat", type=int, default=2, help="alternating idle/busy runs (default 2)")
    ap.add_argument("--busy-default-threads", action="store_true",
                    help="also time the lesson with torch's default thread count next to the job (slow)")
    ap.add_argument("--json", type=Path, help="write all numbers to this file")
    args = ap.parse_args(argv)
    sections = args.only or ["import", "notebooks", "checks", "latency", "lessons", "grading", "room", "busy"]
    report: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                "platform": platform.platform()}}
    import torch

    report["machine"]["torch"] = torch.__version__
    report["machine"]["torch_threads"] = torch.get_num_threads()
    print(f"machine: {report['machine']}")
    if "import" in sections:
        print("\n## import")
        report["import"] = bench_import()
    if "notebooks" in sections:
        print("\n## notebooks (fresh kernel each)")
        report["notebooks"] = bench_notebooks(args.lessons)
    if "checks" in sections:
        print(f"\n## checks (reference answer, {args.repeat} runs each)")
        report["checks"] = bench_checks(args.lessons, args.repeat)
    if "latency" in sections:
        print(f"\n## latency (fresh interpreter per lesson: first check, then {args.repeat} warm checks)")
        report["latency"] = bench_latency(args.lessons, args.repeat)
    if "lessons" in sections:
        print(f"\n## lessons (learner time: {READ_WPM} words/min, {EXAMPLE_MIN:g} min per example cell, "
              f"{EXERCISE_MIN:g} min per exercise)")
        report["lessons"] = bench_lessons(args.lessons)
    if "grading" in sections:
        print(f"\n## grading ({args.grading_notebooks} submissions; room summary of 30 synthetic learners)")
        report["grading"] = bench_grading(args.lessons, args.grading_notebooks, args.grading_workers,
                                          args.grading_timeout)
    if "room" in sections:
        print(f"\n## room view ({args.room_learners} synthetic learners)")
        report["room"] = bench_room(args.room_learners, args.room_repeat)
    if "busy" in sections:
        print(f"\n## busy machine (lesson {args.busy_lesson}, next to a {args.busy_threads}-thread job)")
        report["busy"] = bench_busy(args.busy_lesson, args.busy_threads, args.busy_default_threads,
                                     args.busy_repeat)
    if "sandbox" in (args.only or []):
        print(f"\n## sandboxed grading vs unsandboxed vs nbgrader ({args.sandbox_notebooks} submissions)")
        report["sandbox"] = bench_sandbox(args.sandbox_lessons, args.sandbox_notebooks, args.sandbox_workers,
                                          args.grading_timeout)
    if "nbgrader" in (args.only or []):
        print(f"\n## ours vs nbgrader per lesson ({args.nbgrader_notebooks} submissions each, one worker each, "
              "interleaved)")
        report["nbgrader"] = bench_vs_nbgrader(args.lessons, args.nbgrader_notebooks, args.nbgrader_repeat,
                                               args.grading_timeout)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
