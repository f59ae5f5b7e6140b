"""``python -m course_utils lab``: open JupyterLab on the course's first notebook.

Equivalent to ``jupyter lab notebooks/00_start_here.ipynb`` run from the repository root,
plus ``--allow-root`` when run as root (containers, some cloud machines). Extra arguments go
to JupyterLab, e.g. ``python -m course_utils lab --port 8890 --no-browser``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = "notebooks/00_start_here.ipynb"


def command(extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", START, f"--ServerApp.root_dir={ROOT}", *extra]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")
    return cmd


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if not (ROOT / START).exists():
        print(f"{ROOT / START} not found: is course_utils installed from a clone of the course "
              "(`pip install -e .`)?", file=sys.stderr)
        return 1
    os.chdir(ROOT)
    cmd = command(args)
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover
