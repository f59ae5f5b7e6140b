"""Parsing a submission, step 1 of ``grade`` (:mod:`.grade`): which notebooks a PATH names, which
lesson and student each is, which exercises its check cells check (``ex.NAME.check(ANSWER)``).

Nothing here runs a notebook; :mod:`.grade_run` does, in a sandbox."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from pathlib import Path

import nbformat

from .grade_report import shown

ROOT = Path(__file__).resolve().parents[2]
MAX_NOTEBOOK_BYTES = 50 * 1024**2


def check_statement(stmt: ast.stmt) -> tuple[str, str] | None:
    """``(NAME, ANSWER)`` when ``stmt`` is exactly ``ex.NAME.check(ANSWER)``."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return None
    call = stmt.value
    f = call.func
    if (isinstance(f, ast.Attribute) and f.attr == "check" and isinstance(f.value, ast.Attribute)
            and isinstance(f.value.value, ast.Name) and f.value.value.id == "ex"
            and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Name)):
        return f.value.attr, call.args[0].id
    return None


def split_check_cell(source: str, expected: dict[str, str]) -> tuple[str, str, str, str] | None:
    """Find a valid check statement in a cell.

    Returns ``(before, name, answer, after)``: the code before the check statement, the
    exercise name, the answer name, and the code after it, or ``None`` when the cell has no
    top-level ``ex.NAME.check(ANSWER)`` whose answer name is the one the lesson uses."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.splitlines()
    for stmt in tree.body:
        found = check_statement(stmt)
        if found and expected.get(found[0]) == found[1]:
            before = "\n".join(lines[: stmt.lineno - 1])
            after = "\n".join(lines[stmt.end_lineno:])  # type: ignore[misc]
            return before, found[0], found[1], after
    return None


def lesson_stems() -> list[str]:
    from course_utils.grading import registry

    return list(registry.lesson_modules())


_EXERCISES_FOR = re.compile(r"""exercises_for\(\s*["'](\w+)["']\s*\)""")


def identify_lesson(path: Path, nb: nbformat.NotebookNode | None, stems: list[str]) -> str | None:
    """The lesson of a submitted notebook: from its file name, else its ``exercises_for``."""
    name = path.stem
    for stem in sorted(stems, key=len, reverse=True):
        if stem in name:
            return stem
    if nb is not None:
        for cell in nb.cells:
            if cell.cell_type == "code":
                m = _EXERCISES_FOR.search(cell.source)
                if m and m.group(1) in stems:
                    return m.group(1)
    return None


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
    """Exercise name -> answer name, as the lesson's check cells have them (from the solution
    notebook; an exercise not found there is checked as ``ex.NAME.check(NAME)``)."""
    from course_utils.grading import registry

    names = [ex.name for ex in registry.load_lesson(lesson)]
    found: dict[str, str] = {}
    for folder in ("solutions", "notebooks"):
        path = ROOT / folder / f"{lesson}.ipynb"
        if not path.exists():
            continue
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001
            continue
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            for stmt in tree.body:
                hit = check_statement(stmt)
                if hit and hit[0] in names:
                    found.setdefault(hit[0], hit[1])
        if found:
            break
    return {n: found.get(n, n) for n in names}


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
