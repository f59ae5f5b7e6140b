"""The notebook cell grammar of this course, in one place.

A lesson notebook is ``NN_name.ipynb`` (its solution ``solutions/NN_name.py``) and has these
cells besides prose and demos:

- an **answer cell** holds the code a learner writes: in the solution, between
  ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines (``build`` turns the block into a stub
  raising ``NotImplementedError`` in the learner notebook);
- a **check cell** holds ``ex.NAME.check(NAME)`` as a top-level statement; the answer cells
  since the previous check cell belong to exercise ``NAME``;
- a **prediction cell** holds ``quiz.NAME(...)`` with the answer between
  ``### BEGIN PREDICTION`` and ``### END PREDICTION`` (``...`` in the learner notebook);
- a cell tagged ``solution-only`` is dropped from the learner notebook, and one tagged
  ``raises-exception`` may raise (Run All and nbval go on).

``build`` writes each cell's identity into its tags, in the solution (``.py`` and ``.ipynb``:
tags are the one cell metadata jupytext keeps in the text file, so the pair still agrees) and
in the learner notebook: ``answer:NAME``, ``check:NAME``, ``predict:NAME``
(:func:`tag_notebook`). ``build``, ``reset``, the instructor's grader and the test plugin
(conftest.py) read cells through this module and nothing else.

Tags say where an exercise's cells are; they are never trusted for what a cell does: the
grader still parses a check cell's statement (:func:`split_check_cell`), since a learner can
edit tags as freely as code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
PREDICT_BEGIN = "### BEGIN PREDICTION"
PREDICT_END = "### END PREDICTION"
STUB = 'raise NotImplementedError("Replace this line with your code")'
PREDICT_STUB = "...  # your prediction: replace ... with it, then run the cell"
SOLUTION_ONLY = "solution-only"
RAISES = "raises-exception"
ANSWER, CHECK, PREDICT = "answer", "check", "predict"
ROLES = (ANSWER, CHECK, PREDICT)
_CHECK_LINE = re.compile(r"^ex\.(\w+)\.check\(", re.M)  # a cell that does not parse (a learner's)
_EXERCISES_FOR = re.compile(r"""exercises_for\(\s*["'](\w+)["']\s*\)""")


# ------------------------------------------------------------------------- one cell's text


def source(cell: Mapping[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


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


def split_check_cell(text: str, expected: Mapping[str, str]) -> tuple[str, str, str, str] | None:
    """Find a valid check statement in a cell (the grader's strict reading).

    Returns ``(before, name, answer, after)``: the code before the check statement, the
    exercise name, the answer name, and the code after it, or ``None`` when the cell has no
    top-level ``ex.NAME.check(ANSWER)`` whose answer name is the one ``expected`` gives."""
    tree = _parse(text)
    if tree is None:
        return None
    lines = text.splitlines()
    for stmt in tree.body:
        found = check_statement(stmt)
        if found and expected.get(found[0]) == found[1]:
            before = "\n".join(lines[: stmt.lineno - 1])
            after = "\n".join(lines[stmt.end_lineno:])  # type: ignore[misc]
            return before, found[0], found[1], after
    return None


def checked_name(text: str) -> str | None:
    """The exercise a cell checks: its first top-level ``ex.NAME.check(...)`` statement, or, in
    a cell that does not parse (a learner's half-written one), a line starting so."""
    tree = _parse(text)
    if tree is None:
        m = _CHECK_LINE.search(text)
        return m.group(1) if m else None
    for stmt in tree.body:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(f := stmt.value.func, ast.Attribute) and f.attr == "check"
                and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name)
                and f.value.value.id == "ex"):
            return f.value.attr
    return None


def predicted_name(text: str) -> str | None:
    """The predict-the-output question a cell answers: a top-level ``quiz.NAME(...)``."""
    tree = _parse(text)
    for stmt in tree.body if tree is not None else []:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(f := stmt.value.func, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == "quiz"):
            return f.attr
    return None


def is_answer(text: str) -> bool:
    """Does the cell hold an answer block (solution markers, or the learner's stub)?"""
    return any(line.strip() in (BEGIN, STUB) for line in text.splitlines())


# ------------------------------------------------------------------------- identity in tags


def tags(cell: Mapping[str, Any]) -> list[str]:
    found = (cell.get("metadata") or {}).get("tags") or []
    return [t for t in found if isinstance(t, str)]


def role_tags(cell: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``[(role, NAME), ...]`` from a cell's tags (``answer:f`` -> ``("answer", "f")``)."""
    out = []
    for t in tags(cell):
        role, sep, name = t.partition(":")
        if sep and role in ROLES and name:
            out.append((role, name))
    return out


def roles(cells: list[Mapping[str, Any]]) -> list[list[str]]:
    """The identity tags each cell should carry, from the grammar: ``check:NAME`` on a check
    cell, ``answer:NAME`` on each answer cell since the previous check cell (an answer cell
    with no check cell after it gets none), ``predict:NAME`` on a prediction cell."""
    out: list[list[str]] = [[] for _ in cells]
    pending: list[int] = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        text = source(cell)
        if is_answer(text):
            pending.append(i)
        asked = predicted_name(text)
        if asked:
            out[i].append(f"{PREDICT}:{asked}")
        name = checked_name(text)
        if name:
            for k in pending:
                out[k].insert(0, f"{ANSWER}:{name}")
            pending = []
            out[i].append(f"{CHECK}:{name}")
    return out


def tag_notebook(nb: Any) -> bool:
    """Set every cell's identity tags from the grammar (other tags kept, in their order; stale
    identity tags removed). Returns whether anything changed."""
    changed = False
    for cell, wanted in zip(nb.cells, roles(nb.cells)):
        have = tags(cell)
        kept = [t for t in have if t.partition(":")[0] not in ROLES or ":" not in t]
        new = kept + wanted
        if new != have:
            changed = True
            if new:
                cell.setdefault("metadata", {})["tags"] = new
            else:
                cell.get("metadata", {}).pop("tags", None)
    return changed


def cells_of(nb: Any, role: str, name: str) -> list[int]:
    """Indexes of the cells tagged ``role:name``."""
    return [i for i, c in enumerate(nb.cells) if (role, name) in role_tags(c)]


def names(nb: Any, role: str = CHECK) -> list[str]:
    """The names tagged with ``role`` in notebook order (each once)."""
    out: list[str] = []
    for cell in nb.cells:
        for r, name in role_tags(cell):
            if r == role and name not in out:
                out.append(name)
    return out


# ------------------------------------------------------------------------- which lesson


def lesson_of(path: Path, nb: Any | None, stems: Iterable[str]) -> str | None:
    """The lesson a notebook belongs to: the longest lesson stem in its file name
    (``alice_01_tensors.ipynb``), else the lesson build recorded in its metadata, else its
    ``exercises_for("...")`` call; ``None`` when nothing says."""
    stems = sorted(stems, key=len, reverse=True)
    for stem in stems:
        if stem in path.stem:
            return stem
    if nb is None:
        return None
    meta = (nb.get("metadata") or {}).get("course")
    if isinstance(meta, dict) and meta.get("lesson") in stems:
        return str(meta["lesson"])
    for cell in nb.get("cells") or []:
        if cell.get("cell_type") == "code":
            m = _EXERCISES_FOR.search(source(cell))
            if m and m.group(1) in stems:
                return m.group(1)
    return None
