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
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}\n{__doc__}", file=sys.stderr)
        return 2
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
