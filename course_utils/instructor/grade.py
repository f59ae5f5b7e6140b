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

The code follows these steps: :mod:`.grade_parse` (which notebooks, lessons, students and check
cells), :mod:`.grade_run` (sandboxes and the judge), :mod:`.grade_report` (rows and the summary)
and :mod:`.gradebook` (storage and exports); this module is the command line.

The notebook's printed output is never read, so ``print("✅ Correct")`` scores nothing; an
exercise whose check cell was deleted, or edited to check something else, is scored
``not_attempted`` (mistake ``no_check_cell``). When an exercise is checked more than once, the
last check counts. The learner's own in-notebook ``check()`` is feedback, never a grade.

Usage::

    python -m course_utils grade submissions/ --csv grades.csv --wide-csv canvas.csv
    python -m course_utils grade alice/01_tensors.ipynb bob/01_tensors.ipynb --workers 2 --timeout 60
    python -m course_utils grade submissions/ --shard 3/8 --gradebook results/shard-3.sqlite   # machine 3 of 8
    python -m course_utils grade merge results/shard-*.sqlite --out class.sqlite --csv grades.csv

``--shard K/N`` grades shard K (0 to N-1) of N: a fixed share of the notebooks, by a hash of
each one's path below the folder given (:mod:`.grade_shard`), so N machines given the same
command split a class exactly; ``grade merge`` (:mod:`.grade_merge`) joins their gradebooks and
writes the exports. ``--heldout DIR`` scores the capstones' held-out accuracy on the
instructor's own images instead of the course's public ones, which a submission could carry
with their labels (:mod:`.grade_heldout`: ``DIR/DigitClassifier/<digit>/<image>``).
``--workers`` defaults to every CPU this process may use (a container's
quota counts), no more than the memory holds at ``--memory`` each (:mod:`.capacity`).

PATH is a notebook or a folder (searched recursively for ``*.ipynb``; notebooks in hidden
folders, ``.name/``, are listed as skipped). Only regular files are read: a symlink, FIFO,
device or socket is refused unopened (``not_regular_file``). The lesson is taken from the file
name (``01_tensors.ipynb``, ``alice_01_tensors.ipynb``) or, failing that, from the notebook's
``exercises_for("...")`` call. The student is the first folder below the PATH given
(``submissions/alice/01_tensors.ipynb``); outside such a folder, the part of the file name that
is not the lesson, else the notebook's folder. A file in one student's folder whose name names
another student (``mallory/alice_01_tensors.ipynb``) is refused (``names_another_student``) and
credited to no one. Two notebooks of one student for one lesson are reported as duplicates, and
that lesson's cell in the wide CSV is left blank until one is removed.

Output: a readable summary on stdout; ``--csv FILE``: one row per (student, notebook,
exercise) with the columns student, notebook, exercise, status, mistake, points, max_points;
``--json FILE``: the same rows as a JSON list (plus ``detail`` and ``duplicate``);
``--wide-csv FILE``: one row per student (the ``--roster`` CSV's first, with its ``id``), one
column of points per lesson (blank: not handed in) and a total, in the column conventions of
``--lms plain|canvas|moodle`` (:data:`.gradebook.LMS_FORMATS`); every CSV cell starting with
``= + - @``, a tab or a CR gets a leading ``'``; ``--gradebook FILE``: the SQLite gradebook
(default: next to the CSV/JSON, else ``gradebook.sqlite``). Statuses: ``correct``, ``incorrect``,
``not_attempted``, ``error`` (the notebook could not be graded up to that exercise, for
example ``memory limit 2 GB``, a timeout, or a malformed notebook: no notebook stops the batch).
Exit status: 0 when every notebook was processed (even if some were broken), 2 on a usage
error or when no sandbox is available, 130/143 when interrupted (SIGINT/SIGTERM: sandboxes are
killed, finished notebooks are kept; rerun to go on).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import capacity, grade_shard, gradebook, sandbox
# The pipeline, one module per step; the names tests and benchmarks use as `grade.X` stay here.
from .grade_parse import (  # noqa: F401  (1. parse: re-exported as grade.X)
    ROOT, expected_checks, find_notebooks, identify_lesson, known_students, lesson_stems, split_check_cell, student_of)
from .grade_report import COLUMNS, NotebookReport, duplicates, shown, summary_text  # noqa: F401  (3. report)
from .grade_run import DEFAULT_NOTEBOOK_TIMEOUT, DEFAULT_TIMEOUT, Grader, grade  # noqa: F401  (2. run and judge)
from .gradebook import Gradebook

NO_SANDBOX_WARNING = ("WARNING: --no-sandbox: learner code runs unconfined, as you, with your files and "
                      "network. Use it only for notebooks you trust.")


def write_csv(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    gradebook.write_csv(reports, path)


def write_json(reports: list[NotebookReport], path: str | os.PathLike[str]) -> None:
    gradebook.write_json(reports, path, duplicates(reports))


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*([\d.]+)\s*([kmgt]?)i?b?\s*", text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (say 2GB, 512MB)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m course_utils grade", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH", help="notebooks or folders of notebooks")
    ap.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV (one row per exercise)")
    ap.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    ap.add_argument("--wide-csv", metavar="FILE", help="one row per student, points per lesson and total (LMS import)")
    ap.add_argument("--roster", metavar="FILE", help="CSV with the columns student,id: the wide CSV's rows and IDs")
    ap.add_argument("--lms", choices=gradebook.LMS_FORMATS, default="plain",
                    help="column conventions of the wide CSV (default plain)")
    ap.add_argument("--gradebook", metavar="FILE", help="the SQLite gradebook (default: next to --csv/--json, "
                                                         "else ./gradebook.sqlite)")
    ap.add_argument("--resume", action="store_true", help="skip notebooks already in the gradebook (the default)")
    ap.add_argument("--regrade", action="store_true", help="grade every notebook again, even if already graded")
    ap.add_argument("--workers", type=int, default=None,
                    help="notebooks graded at once (default: the CPUs this process may use, no more than "
                         "the available memory holds at --memory each)")
    ap.add_argument("--shard", metavar="K/N", help="grade only shard K (0 to N-1) of N: a fixed share of the "
                                                     "notebooks; `grade merge` joins the shards' gradebooks")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds a cell may run before it is interrupted (default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("--notebook-timeout", type=float, default=DEFAULT_NOTEBOOK_TIMEOUT,
                    help=f"seconds a whole notebook may take (default {DEFAULT_NOTEBOOK_TIMEOUT:g})")
    ap.add_argument("--memory", type=_size, default=sandbox.Limits.memory,
                    help="address space per sandboxed process (default 2GB)")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run learner code unconfined (trusted notebooks only; prints a warning)")
    ap.add_argument("--heldout", metavar="DIR",
                    help="score the capstones on your own held-out images: DIR/<exercise>/<class>/<image>, "
                         "e.g. DIR/DigitClassifier/7/scan_01.png (labels never reach a submission)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no line per notebook while grading")
    return ap


def _inputs(args: argparse.Namespace) -> tuple[dict[str, str], list[tuple[Path, Path | None]], set[str]] | None:
    """The roster, the notebooks to grade (this shard's, with ``--shard``) and every student the
    whole batch names (a shard refuses a file naming a student of another shard, as one run
    would), or ``None`` after saying why not (a usage error)."""
    try:
        shard = grade_shard.parse(args.shard) if args.shard else None
    except grade_shard.ShardError as exc:
        print(exc, file=sys.stderr)
        return None
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"not found: {', '.join(map(shown, missing))}", file=sys.stderr)
        return None
    roster: dict[str, str] = {}
    if args.roster:
        try:
            roster = gradebook.read_roster(args.roster)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            print(f"cannot read the roster: {shown(str(exc))}", file=sys.stderr)
            return None
    hidden: list[Path] = []
    items = find_notebooks(args.paths, hidden)
    for p in hidden:
        print(f"skipped (in a hidden folder; rename the folder to grade it): {shown(p)}", flush=True)
    if not items:
        print("no notebooks (*.ipynb) found under " + ", ".join(map(shown, args.paths)), file=sys.stderr)
        return None
    everyone = set(roster) | known_students(items, lesson_stems())
    if shard is not None:
        found = len(items)
        items = grade_shard.select(items, *shard)
        print(f"Shard {shard[0]}/{shard[1]}: {len(items)} of {found} notebook(s).", flush=True)
    return roster, items, everyone


def _can_run(args: argparse.Namespace) -> bool:
    """Fill in ``--workers``; ``False`` after saying why the options or the machine cannot grade."""
    if args.workers is None:
        args.workers = capacity.default_workers(args.memory, sandbox.MAX_WORKERS)
    if args.workers < 1 or args.timeout <= 0 or args.notebook_timeout <= 0:
        print("--workers must be >= 1, --timeout and --notebook-timeout > 0", file=sys.stderr)
        return False
    if args.no_sandbox:
        print(NO_SANDBOX_WARNING, file=sys.stderr, flush=True)
        return True
    why = sandbox.works()
    if why is not None:
        print(f"cannot grade: no sandbox ({why}).\n\n{sandbox.INSTALL_HINT}", file=sys.stderr)
        return False
    return True


def _heldout(folder: str, regrade: bool) -> dict[str, Any]:
    """``--heldout``'s setup for the judges, after printing what it found; ``{}`` after saying
    why the folder cannot be used (a usage error)."""
    from course_utils.grading.heldout import HeldOutError

    from . import grade_heldout

    try:
        setup, lines = grade_heldout.prepare(folder)
    except HeldOutError as exc:
        print(f"cannot use the held-out images: {shown(str(exc))}", file=sys.stderr)
        return {}
    for line in lines:
        print(shown(line), flush=True)
    if not regrade:
        print("(notebooks already in the gradebook keep their grades: add --regrade to score them on these "
              "images too)", flush=True)
    return setup


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:  # `grade merge A.sqlite B.sqlite --out class.sqlite` (./merge for a folder)
        from . import grade_merge

        return grade_merge.main(argv[1:])
    args = _parser().parse_args(argv)
    found = _inputs(args)
    if found is None:
        return 2
    roster, items, everyone = found
    if not _can_run(args):
        return 2
    heldout_setup = _heldout(args.heldout, args.regrade) if args.heldout else None
    if heldout_setup == {}:
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
    mode = ("UNSANDBOXED" if args.no_sandbox
            else f"sandboxed, {limits.describe_memory()} per process, {limits.describe_tmp()} of temp files")
    print(f"Grading {len(items)} notebook(s), {args.workers} at a time, {args.timeout:g} s per cell ({mode})...",
          flush=True)
    start = time.perf_counter()
    grader = Grader(args.workers, args.timeout, args.notebook_timeout, limits, not args.no_sandbox, book,
                    regrade=args.regrade, progress=progress, roster=everyone, heldout=heldout_setup)
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
    for flag, write in ((args.csv, write_csv), (args.json, write_json),
                        (args.wide_csv, lambda r, p: gradebook.write_wide_csv(r, p, grader.stems, roster, args.lms))):
        if flag:
            write(reports, flag)
            print(f"wrote {shown(flag)}")
    print(f"gradebook: {shown(book_path)}")
    strangers = sorted({rep.student for rep in reports} - set(roster)) if roster else []
    if strangers:
        print("not in the roster (no ID in the wide CSV): " + ", ".join(strangers))
    if received:
        name = "SIGINT" if received[0] == signal.SIGINT else "SIGTERM"
        print(f"\nINTERRUPTED ({name}): {len(reports)} of {len(items)} notebooks graded and saved; "
              "rerun the same command to grade the rest.", file=sys.stderr)
        return 128 + int(received[0])
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
