"""``python -m course_utils progress``: a learner's progress, or a room's.

    python -m course_utils progress                      # your own progress (the default log)
    python -m course_utils progress show [LOG]           # the same, for any log file
    python -m course_utils progress summary FILES...     # instructors: the room view
        [--plot room.png] [--csv room.csv] [--json room.json]
        [--since MINUTES] [--stuck-after N] [--watch SECONDS]

``summary`` merges learners' ``progress.jsonl`` files (files or folders searched for
``*.jsonl``) into one table: per exercise, learners who tried, passed, pass rate, median checks,
hints, solution views, how many are stuck (checked at least ``--stuck-after`` times or viewed
the solution without passing) and how many are working on it now, and the most common named
mistakes; then the exercises where people are stuck, with their names. ``--watch`` redraws it
every few seconds (Ctrl-C stops) for a live signal during a workshop.

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
import time

from .room import STUCK_AFTER, log_files, room_summary


def _show(args: argparse.Namespace) -> int:
    from course_utils import progress, progress_view

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
    print(progress_view.read(path).text())
    return 0


def _summary(args: argparse.Namespace) -> int:
    files = log_files(args.files)
    if not files:
        print("no progress logs found in " + ", ".join(args.files), file=sys.stderr)
        return 2
    since = time.time() - 60 * args.since if args.since else None
    while True:
        room = room_summary(args.files, stuck_after=args.stuck_after, since=since)
        if args.watch:
            print("\x1b[2J\x1b[H", end="")
            print(time.strftime("%H:%M:%S"), "(refreshing every", args.watch, "s; Ctrl-C stops)\n")
        print(room.text(args.all))
        if args.plot:
            room.plot(args.plot, all_rows=args.all)
            print(f"\nwrote {args.plot}")
        if args.csv:
            room.write_csv(args.csv)
            print(f"wrote {args.csv}")
        if args.json:
            import json

            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(room.to_dict(), fh, indent=1)
            print(f"wrote {args.json}")
        if not args.watch:
            if room.unreadable:
                print("progress summary: could not read " + "; ".join(room.unreadable), file=sys.stderr)
            return 1 if room.unreadable else 0
        try:
            time.sleep(args.watch)
        except KeyboardInterrupt:
            return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils progress", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command")
    show = sub.add_parser("show", help="one learner's progress (default: your own log)")
    show.add_argument("log", nargs="?", help="a progress.jsonl (default: COURSE_PROGRESS_LOG or ~/.pytorch_course)")
    summ = sub.add_parser("summary", help="the room view of many learners' logs")
    summ.add_argument("files", nargs="+", metavar="FILE", help="progress logs, or folders of *.jsonl logs")
    summ.add_argument("--plot", metavar="PNG", help="also save a bar chart per exercise")
    summ.add_argument("--csv", metavar="FILE", help="write the per-exercise table as CSV")
    summ.add_argument("--json", metavar="FILE", help="write the room view as JSON")
    summ.add_argument("--since", type=float, metavar="MINUTES", help="only events of the last MINUTES")
    summ.add_argument("--stuck-after", type=int, default=STUCK_AFTER,
                      help=f"checks without a pass that count as stuck (default {STUCK_AFTER})")
    summ.add_argument("--all", action="store_true", help="also list exercises nobody has touched yet")
    summ.add_argument("--watch", type=float, metavar="SECONDS", help="redraw every SECONDS until Ctrl-C")
    args = ap.parse_args(argv)
    if args.command == "summary":
        return _summary(args)
    if args.command is None:
        args.log = None
    return _show(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
