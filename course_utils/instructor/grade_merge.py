"""``python -m course_utils grade merge A.sqlite B.sqlite ... --out class.sqlite``: join the
gradebooks of a class graded in shards (``grade --shard K/N``, one per machine, pod or array
task) into one, and write the exports from it as one ``grade`` run would have.

    python -m course_utils grade merge results/shard-*.sqlite --out class.sqlite \\
        --csv grades.csv --json grades.json --wide-csv lms.csv

Every graded notebook ends up in ``class.sqlite`` once with exactly its rows
(:func:`.gradebook.merge`); a notebook found in two shards (say a shard rerun by hand) is kept
once, as graded last. The exports hold, per notebook path, its most recently graded version, in
path order: for the folder of submissions a single run was given, the same files as that run's.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path

from . import gradebook
from .grade_report import NotebookReport, duplicates, shown, summary_text


def reports(path: str | os.PathLike[str]) -> list[NotebookReport]:
    """Every notebook of a gradebook (the latest grading of each path), in path order."""
    book = gradebook.Gradebook(path)
    try:
        with book.lock:
            found = book.db.execute("SELECT path_bytes, sha256, graded_at FROM notebooks ORDER BY rowid").fetchall()
        latest: dict[bytes, tuple[str, str]] = {}
        for key, sha, graded_at in found:
            if key not in latest or (graded_at or "") >= latest[key][1]:
                latest[key] = (sha, graded_at or "")
        ordered = sorted(latest, key=lambda k: Path(os.fsdecode(k)))
        return [book.load(Path(os.fsdecode(k)), latest[k][0]) for k in ordered]
    finally:
        book.close()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m course_utils grade merge", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="+", metavar="GRADEBOOK", help="the shards' SQLite gradebooks")
    ap.add_argument("--out", required=True, metavar="FILE", help="the merged gradebook (created, or added to)")
    ap.add_argument("--csv", metavar="FILE", help="write the merged gradebook as CSV (one row per exercise)")
    ap.add_argument("--json", metavar="FILE", help="write it as JSON")
    ap.add_argument("--wide-csv", metavar="FILE", help="one row per student, points per lesson and total (LMS import)")
    ap.add_argument("--roster", metavar="FILE", help="CSV with the columns student,id: the wide CSV's rows and IDs")
    ap.add_argument("--lms", choices=gradebook.LMS_FORMATS, default="plain",
                    help="column conventions of the wide CSV (default plain)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no summary table")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        roster = gradebook.read_roster(args.roster) if args.roster else {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        print(f"cannot read the roster: {shown(str(exc))}", file=sys.stderr)
        return 2
    try:
        counts = gradebook.merge(args.sources, args.out)
    except (OSError, ValueError, sqlite3.DatabaseError) as exc:
        print(f"grade merge: {exc}", file=sys.stderr)
        return 2
    merged = reports(args.out)
    print(f"Merged {len(args.sources)} gradebook(s) into {shown(args.out)}: {counts['added']} notebook(s) added, "
          f"{counts['replaced']} replaced by a later grading, {counts['kept']} already there; "
          f"{len(merged)} in all.")
    if not args.quiet:
        print()
        print(summary_text(merged))
    if args.csv:
        gradebook.write_csv(merged, args.csv)
        print(f"wrote {shown(args.csv)}")
    if args.json:
        gradebook.write_json(merged, args.json, duplicates(merged))
        print(f"wrote {shown(args.json)}")
    if args.wide_csv:
        from .grade_parse import lesson_stems

        gradebook.write_wide_csv(merged, args.wide_csv, lesson_stems(), roster, args.lms)
        print(f"wrote {shown(args.wide_csv)}")
    return 0
