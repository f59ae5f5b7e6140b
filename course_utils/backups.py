"""Timestamped backups: every course command that replaces a learner's file copies it here
first and names the copy in its output (``build --force``, ``reset``, ``update``).

The folder is ``~/.pytorch_course/backups/`` (next to the progress log; it follows
``COURSE_PROGRESS_LOG``), outside the repository, so neither git nor JupyterLab's file browser
sees it and no ``git clean`` or re-clone removes it.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from collections.abc import Iterable

from . import progress


def backup_dir() -> Path:
    base = progress.log_path() or progress.DEFAULT_PATH
    return base.parent / "backups"


def backup_files(paths: Iterable[Path], folder: Path | None = None, stem: str | None = None) -> list[Path]:
    """Copy the existing ``paths`` (files of one notebook: ``x.ipynb``, ``x.py``) to ``folder``
    as ``<stem>.<YYYYmmdd-HHMMSS>[-n]<ext>``, one timestamp for all of them; returns the copies."""
    paths = [Path(p) for p in paths]
    folder = Path(folder) if folder is not None else backup_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tag, n = stamp, 1

    def name(p: Path) -> Path:
        return folder / f"{stem or p.stem}.{tag}{p.suffix}"

    while any(name(p).exists() for p in paths):
        n += 1
        tag = f"{stamp}-{n}"
    out = []
    for src in paths:
        if src.exists():
            dst = name(src)
            shutil.copy2(src, dst)
            out.append(dst)
    return out
