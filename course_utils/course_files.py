"""Where the course's lesson files are: a clone of the repository, or the copy in the wheel.

A clone (``pip install -e .``, the README's setup) has ``notebooks/`` next to the package. A
non-editable install (``pip install course_utils-*.whl``, a JupyterHub image) has no clone
next to it, so the wheel ships the learner notebooks as ``course_utils/lessons/`` and
``python -m course_utils lab`` copies them into a work folder (``~/pytorch-course`` or
``COURSE_HOME``) the first time: files already there are never overwritten.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CLONE = PACKAGE.parent
START = "notebooks/00_start_here.ipynb"
LESSON_GLOB = "[0-9][0-9]_*.ipynb"


def clone() -> Path | None:
    """The repository the package is imported from, when it is imported from a clone."""
    return CLONE if (CLONE / START).exists() else None


def has_course(folder: Path) -> bool:
    return (Path(folder) / START).exists()


def packaged_lessons() -> list[Path]:
    """The learner notebooks shipped in the wheel (empty in a clone: they are in notebooks/)."""
    return sorted((PACKAGE / "lessons").glob(LESSON_GLOB))


def default_workspace() -> Path:
    return Path(os.environ.get("COURSE_HOME") or Path.home() / "pytorch-course").expanduser()


def prepare_workspace(folder: Path | None = None) -> tuple[Path, list[Path]]:
    """Copy the packaged lessons into ``folder/notebooks`` where they are missing.

    Returns ``(folder, files copied)``; a lesson already in the folder (your work) is kept."""
    folder = Path(folder or default_workspace())
    lessons = packaged_lessons()
    if not lessons:
        raise FileNotFoundError(f"no lessons shipped in {PACKAGE / 'lessons'}: reinstall the course package")
    (folder / "notebooks").mkdir(parents=True, exist_ok=True)
    copied = []
    for src in lessons:
        dst = folder / "notebooks" / src.name
        if not dst.exists():
            shutil.copyfile(src, dst)
            copied.append(dst)
    return folder, copied


def course_folder(cwd: Path | None = None) -> Path | None:
    """Where the lessons are without copying anything: a clone, else the current folder when
    it holds the course (an nbgitpuller checkout, a previous work folder), else None."""
    found = clone()
    if found:
        return found
    cwd = Path(cwd or Path.cwd())
    if has_course(cwd):
        return cwd
    if has_course(default_workspace()):
        return default_workspace()
    return None
