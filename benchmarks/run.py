#!/usr/bin/env python
"""Measure the course: not a test, a report.

    python benchmarks/run.py                  # everything
    python benchmarks/run.py --only checks    # one section: import, notebooks, checks
    python benchmarks/run.py --lessons 01 02  # restrict notebooks/checks to some lessons
    python benchmarks/run.py --json out.json  # also write the numbers as JSON

Sections:
- import: ``import course_utils`` and ``import course_utils.grading`` in a fresh interpreter.
- notebooks: every solution and learner notebook executed top to bottom in a fresh kernel
  (nbclient), wall time each. Target: <= 60 s on a 2-core CPU.
- checks: every exercise's check with its reference answer, ``--repeat`` times (fresh random
  cases each time): median and max latency. Targets: median <= 0.2 s, max <= 1 s.

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

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_TARGET_S = 60.0
CHECK_MEDIAN_TARGET_S = 0.2
CHECK_MAX_TARGET_S = 1.0


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
            try:
                NotebookClient(nb, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
            except Exception as exc:  # noqa: BLE001 - report and go on
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:120]}"
            took = time.perf_counter() - start
            rows.append({"notebook": f"{folder}/{path.name}", "seconds": round(took, 2), "error": error})
            status = f"ERROR {error}" if error else _flag(took <= NOTEBOOK_TARGET_S)
            print(f"{folder + '/' + path.name:<40} {took:6.1f} s  {status}", flush=True)
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
        ok = med <= CHECK_MEDIAN_TARGET_S and mx <= CHECK_MAX_TARGET_S
        rows.append({"exercise": ex_id, "median_s": round(med, 4), "max_s": round(mx, 4), "status": status})
        print(f"{ex_id:<50} median {med * 1000:7.1f} ms  max {mx * 1000:7.1f} ms  {_flag(ok) if status == 'correct' else status}",
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["import", "notebooks", "checks"], action="append")
    ap.add_argument("--lessons", nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=10, help="checks per exercise (default 10)")
    ap.add_argument("--json", type=Path, help="write all numbers to this file")
    args = ap.parse_args(argv)
    sections = args.only or ["import", "notebooks", "checks"]
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
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
