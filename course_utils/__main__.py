"""``python -m course_utils COMMAND``: the course's command line.

Commands (each lives in its own module and has ``--help``):

  lab        open JupyterLab on notebooks/00_start_here.ipynb
  build      authors: generate learner notebooks from solutions (``--check``, ``--execute``)
  doctor     check this environment, with a fix for every problem
  grade      grade submitted learner notebooks headlessly (instructors)
  progress   show a learner's progress, or summarise a room's logs (instructors)
  reset      restore an exercise or a whole learner notebook (keeps a backup)
  update     bring in course updates around your edits (a git clone; keeps backups)
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "lab": "course_utils.launch",
    "build": "course_utils.build",
    "doctor": "course_utils.doctor",
    "grade": "course_utils.instructor.grade",
    "progress": "course_utils.progress_cli",
    "reset": "course_utils.reset",
    "update": "course_utils.update",
    "nbgrader-export": "course_utils.instructor.nbgrader_export",
}


def _nbgrader_args(rest: list[str]) -> list[str]:
    """``--nbgrader OUTDIR LESSON...`` (or ``--nbgrader=OUTDIR``) as nbgrader_export's
    ``OUTDIR LESSON...``."""
    out, lessons, i = None, [], 0
    while i < len(rest):
        a = rest[i]
        if a.startswith("--nbgrader="):
            out = a.split("=", 1)[1]
        elif a == "--nbgrader" and i + 1 < len(rest):
            out, i = rest[i + 1], i + 1
        else:
            lessons.append(a)
        i += 1
    return [out or "", *lessons] if out else ["--help"]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    name, rest = argv[0], argv[1:]
    if name == "build" and any(a == "--nbgrader" or a.startswith("--nbgrader=") for a in rest):
        # an instructor's export, routed here so that build (an author's command) never imports
        # instructor/ (which uses build): `build --nbgrader OUTDIR [LESSON...]`
        name, rest = "nbgrader-export", _nbgrader_args(rest)
    if name not in COMMANDS:
        print(f"unknown command {name!r}\n{__doc__}", file=sys.stderr)
        return 2
    # Every command runs in a process of its own: skip the IRI parser nbformat's jsonschema would
    # build and never use (1-2 s of each start; instructor/nbrun.py says why it is safe).
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    try:
        module = importlib.import_module(COMMANDS[name])
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("course_utils"):
            print(f"`{name}` is not available in this version of the course.", file=sys.stderr)
            return 2
        raise
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
