"""``python -m course_utils lab``: open JupyterLab on the course's first notebook.

Equivalent to ``jupyter lab notebooks/00_start_here.ipynb`` run from the course folder, plus
``--allow-root`` when run as root (containers, some cloud machines), the course's torch thread
policy (course_utils/threads.py) for every kernel, lesson 00 as the default URL (the URLs
JupyterLab prints open it where no browser starts: SSH, WSL, a server) and JupyterLab's news
notification off in the environment's settings (course_utils/jupyter_settings.py). The course
folder is the clone the package is installed from; without a clone (``pip install`` of the
wheel) it is the current folder when it holds ``notebooks/00_start_here.ipynb``, else
``~/pytorch-course`` (``COURSE_HOME``), where the lessons shipped in the package are copied the
first time. Extra arguments go to JupyterLab, e.g. ``python -m course_utils lab --port 8890
--no-browser``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import course_files, jupyter_settings, threads

ROOT = course_files.CLONE
START = course_files.START


# JupyterLab prints its URLs (and redirects `/`) to its default URL, the Launcher at the root
# unless told otherwise: where no browser opens (SSH, WSL, a server) the learner copies a printed
# URL, which must land on lesson 00 too, not only the browser that `jupyter lab FILE` opens
START_URL = "/lab/tree/" + START


def command(extra: list[str], root: Path = ROOT) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", START, f"--ServerApp.root_dir={root}", *extra]
    if not any(".default_url" in arg for arg in extra):
        cmd.append(f"--LabApp.default_url={START_URL}")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")
    return cmd


def course_root() -> Path:
    """The folder to open, preparing the work folder from the wheel's lessons if needed."""
    found = course_files.course_folder()
    if found:
        return found
    folder, copied = course_files.prepare_workspace()
    print(f"No clone of the course here: copied {len(copied)} lessons shipped with course_utils "
          f"to {folder / 'notebooks'} (set COURSE_HOME to use another folder).")
    return folder


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        root = course_root()
    except OSError as exc:
        print(f"cannot prepare the course folder: {exc}", file=sys.stderr)
        return 1
    try:  # no "Jupyter news" pop-up over lesson 00 (the environment's defaults; a learner's own win)
        jupyter_settings.write_overrides(overrides=jupyter_settings.NO_NEWS)
    except (OSError, ValueError) as exc:  # a read-only shared install, a broken overrides.json
        print(f"could not turn JupyterLab's news pop-up off ({exc})", file=sys.stderr)
    n = threads.apply_env()  # kernels inherit it
    print(f"Opening {root / START} (torch uses {n} CPU thread{'s' * (n != 1)} per notebook; "
          f"set {threads.ENV} to change it). If no browser opens (SSH, WSL, a server), open the URL "
          f"below that ends in {START_URL}?token=...", flush=True)
    os.chdir(root)
    cmd = command(args, root)
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover
