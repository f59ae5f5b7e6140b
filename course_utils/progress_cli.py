"""``python -m course_utils progress``: your own progress, or (instructors) a room's.

    python -m course_utils progress                      # your own progress (the default log)
    python -m course_utils progress show [LOG]           # the same, for any log file
    python -m course_utils progress summary FILES...     # instructors: the room view
        [--plot room.png] [--csv room.csv] [--json room.json]
        [--since MINUTES] [--stuck-after N] [--watch SECONDS]

``show`` prints what the dashboard shows (:mod:`course_utils.progress_view`, the one rendering of
a learner's progress): every lesson and exercise with its status, checks, hints and solution views.
``summary`` is the instructor's room view, :mod:`course_utils.instructor.room` (its ``--help``
says more).

Every reader skips malformed lines (garbage, half-written lines, wrong types, absurd values)
and says how many it skipped; a missing or unreadable log is named, and the exit status is
non-zero (the room view still shows every good event of the logs it could read).

Collecting logs: on a JupyterHub the instructor can read ``/home/*/.pytorch_course/progress.jsonl``
directly; otherwise learners hand in that file (or set ``COURSE_PROGRESS_LOG`` to a shared
folder, one file per learner).
"""

from __future__ import annotations

import argparse
import sys

from . import progress


def _show(args: argparse.Namespace) -> int:
    path = args.log if args.log is not None else progress.log_path()
    if path is None:
        print(f"Progress logging is turned off ({progress.ENV_VAR} is empty), so there is nothing to show.",
              file=sys.stderr)
        return 2
    try:
        progress.read_log(path)
    except progress.LogError as exc:
        hint = ("" if args.log is not None else
                f" (nothing has been checked with this log yet; {progress.ENV_VAR} names another file)")
        print(f"progress show: {exc}{hint}", file=sys.stderr)
        return 2
    from . import progress_view  # lazily: `progress summary` (the room view) does not show one learner

    print(progress_view.read(path).text())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["summary"]:  # the instructor's room view has its own options
        from .instructor import room

        return room.main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m course_utils progress", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command")
    show = sub.add_parser("show", help="one learner's progress (default: your own log)")
    show.add_argument("log", nargs="?", help="a progress.jsonl (default: COURSE_PROGRESS_LOG or ~/.pytorch_course)")
    sub.add_parser("summary", help="instructors: the room view of many learners' logs "
                                   "(`progress summary --help` lists its options)")
    args = ap.parse_args(argv)
    if args.command is None:
        args.log = None
    return _show(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
