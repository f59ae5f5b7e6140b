"""Parsing a submission, step 1 of ``grade`` (:mod:`.grade`): which notebooks a PATH names, which
lesson and student each is, which exercises its check cells check (``ex.NAME.check(ANSWER)``;
the cell grammar is course_utils/cells.py).

Nothing here runs a notebook; :mod:`.grade_run` does, in a sandbox."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import nbformat

from .. import cells
from ..cells import check_statement, split_check_cell  # noqa: F401  (the grader's names for them)
from .grade_report import shown

ROOT = Path(__file__).resolve().parents[2]
MAX_NOTEBOOK_BYTES = 50 * 1024**2


def lesson_stems() -> list[str]:
    from course_utils.grading import registry

    return list(registry.lesson_modules())


def identify_lesson(path: Path, nb: nbformat.NotebookNode | None, stems: list[str]) -> str | None:
    """The lesson of a submitted notebook: from its file name, else the lesson build recorded in
    its metadata, else its ``exercises_for`` call (course_utils/cells.py)."""
    return cells.lesson_of(path, nb, stems)


def student_of(path: Path, lesson: str | None, root: Path | None) -> str:
    stem = shown(path.stem)
    rest = stem.replace(lesson, "") if lesson else stem
    rest = rest.strip(" _-.")
    if rest:
        return rest
    if root is not None and root.is_dir():
        try:
            rel = path.resolve().relative_to(root.resolve())
            if len(rel.parts) > 1:
                return shown(rel.parts[0])
        except ValueError:
            pass
    return shown(path.resolve().parent.name or path.stem)


def expected_checks(lesson: str) -> dict[str, str]:
    """Exercise name -> the answer name its check cell passes: ``ex.NAME.check(NAME)`` (the cell
    grammar, course_utils/cells.py; no solution notebook is read at grade time)."""
    from course_utils.grading import registry

    return {ex.name: ex.name for ex in registry.load_lesson(lesson)}


def find_notebooks(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Path | None]]:
    """``(notebook, root)`` for every notebook under ``paths``; ``root`` is the folder given."""
    out: list[tuple[Path, Path | None]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            items: list[tuple[Path, Path | None]] = [(q, p) for q in sorted(p.rglob("*.ipynb"))
                     if ".ipynb_checkpoints" not in q.parts
                     and not any(part.startswith(".") for part in q.relative_to(p).parts)]
        else:
            items = [(p, None)]
        for q, root in items:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                out.append((q, root))
    return out


def read_notebook(path: Path) -> nbformat.NotebookNode:
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES // 1024**2} MB")
    if path.suffix == ".py":
        import jupytext

        return jupytext.read(path)
    nb = nbformat.read(path, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    return nb
