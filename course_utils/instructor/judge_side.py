"""Cut what only the judge needs out of the staged exercise code a sandbox sees.

The executor runs an answer with ``Exercise.run``, the cases and the probes. It never needs a
mistake's example (the wrong answers the tests and the judge's mistake naming call), nor
``finish``, ``finish_probe`` or ``supply`` (the judge's halves, next to the reference). Those
are the dangerous parts: many wrong answers are the reference with a switch (``_variant(**bug)``,
``_loop(...)``) and with their default arguments *are* the reference, so a submission that
imports one scores ``correct`` without computing anything (the hostile review of 2026-11-29
forged 32 exercises that way). In the staged copy:

1. every ``Mistake(id, message, example)`` keeps its id and message, its example becomes ``None``;
   every ``EXPECT.mistake(example)`` loses its example;
2. ``finish=``, ``finish_probe=`` and ``supply=`` of every ``Exercise(...)`` become ``None``;
3. then every private top-level definition (``_name``: function, class or assignment) that no
   remaining code of the staged package reaches is removed, and so are the imports of names
   that are gone, until nothing changes: the wrong answers' modules (``_*_wrong.py``) end up
   holding only what a ``run`` or a probe uses. Reached means named by code that stays (a
   statement that is no private definition, another module's import, an attribute anywhere)
   or by a private definition so reached: a definition that only names itself (the recursion
   of lesson 10's ``to_device._variant``) or one that only dead ones name is not.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

JUDGE_ONLY = ("finish", "finish_probe", "supply")


class _StripExamples(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name == "Mistake":
            if len(node.args) >= 3:
                node.args[2] = ast.Constant(None)
            for kw in node.keywords:
                if kw.arg == "example":
                    kw.value = ast.Constant(None)
        elif name == "mistake" and isinstance(func, ast.Attribute) and node.args and not (
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            node.args = []  # Expect.mistake(example); Exercise.mistake("id") looks a mistake up
        elif name == "Exercise":
            for kw in node.keywords:
                if kw.arg in JUDGE_ONLY:
                    kw.value = ast.Constant(None)
        return node


def _defined(stmt: ast.stmt) -> list[str]:
    """The private names a top-level statement defines (nothing for other statements)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names = [stmt.name]
    elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        names = [stmt.target.id]
    else:
        return []
    return names if all(n.startswith("_") and not n.startswith("__") for n in names) else []


def _reads(stmt: ast.stmt) -> set[str]:
    """The names a statement reads (none for an import), and single-word strings
    (``getattr(module, "_name")``)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return set()
    return _memo("reads", stmt, functools.partial(_stmt_reads, stmt))


def _stmt_reads(stmt: ast.stmt) -> set[str]:
    used: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            used.add(node.value)
    return used


def _live(tree: ast.Module, wanted: set[str]) -> set[str]:
    """The names a module's code that stays reads: every statement but the private definitions,
    then (transitively) the private definitions whose names that code or ``wanted`` reads. A
    definition's reads of its own name (recursion) keep nothing alive."""
    defs = [(names, stmt) for stmt in tree.body if (names := _defined(stmt))]
    live = set(wanted)
    for stmt in tree.body:
        if not _defined(stmt):
            live |= _reads(stmt)
    pending = defs
    while True:
        reached = [(names, stmt) for names, stmt in pending if any(n in live for n in names)]
        if not reached:
            return live
        pending = [d for d in pending if d not in reached]
        for _, stmt in reached:
            live |= _reads(stmt)


def _attributes(trees: dict[Path, ast.Module]) -> set[str]:
    """Private names read as an attribute anywhere (``module._name``): kept wherever defined."""
    return {attr for tree in trees.values() for stmt in tree.body for attr in _stmt_attributes(stmt)}


_MEMO: dict[tuple[str, int], tuple[ast.AST, set[str]]] = {}


def _memo(kind: str, stmt: ast.AST, compute: Callable[[], set[str]]) -> set[str]:
    """``compute()`` once per statement object (a statement of the trees being cut is never
    changed but for an import's names, which neither reader looks at); keyed by identity, and
    the object kept, so a new statement at a freed address is never taken for an old one."""
    hit = _MEMO.get((kind, id(stmt)))
    if hit is not None and hit[0] is stmt:
        return hit[1]
    value = compute()
    _MEMO[(kind, id(stmt))] = (stmt, value)
    return value


def _stmt_attributes(stmt: ast.stmt) -> set[str]:
    return _memo("attributes", stmt, lambda: {node.attr for node in ast.walk(stmt)
                                              if isinstance(node, ast.Attribute) and node.attr.startswith("_")})


def _source(path: Path, stmt: ast.ImportFrom, package: Path) -> Path | None:
    """The staged file a ``from ... import`` inside the course reads from, if it is one."""
    if stmt.level > 0:
        base = path.parent
        for _ in range(stmt.level - 1):
            base = base.parent
    elif (stmt.module or "").startswith("course_utils."):
        base = package.parent
    else:
        return None
    parts = [p for p in (stmt.module or "").split(".") if p]
    target = base.joinpath(*parts)
    return target.with_suffix(".py") if target.with_suffix(".py").exists() else target / "__init__.py"


def _imports(trees: dict[Path, ast.Module], package: Path) -> dict[Path, set[str]]:
    """What the modules ``trees`` import from each staged file (``from .x import name``)."""
    imported: dict[Path, set[str]] = {}
    for path, tree in trees.items():
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and (source := _source(path, stmt, package)) is not None:
                imported.setdefault(source, set()).update(a.name for a in stmt.names)
    return imported


def _shake(trees: dict[Path, ast.Module], package: Path, cut: set[Path],
           fixed: tuple[set[str], dict[Path, set[str]]]) -> bool:
    """One round of removing unused private definitions and the imports of names no longer
    read, in the files ``cut`` (what the rest of the package reads counts too: ``fixed``, the
    private attributes the other files read and what they import, which no round changes);
    whether anything went."""
    outside_attributes, outside_imports = fixed
    cut_trees = {path: trees[path] for path in cut}
    attributes = outside_attributes | _attributes(cut_trees)
    imported = _imports(cut_trees, package)
    needed = {path: _live(tree, imported.get(path, set()) | outside_imports.get(path, set()) | attributes)
              for path, tree in cut_trees.items()}
    changed = False
    for path, tree in cut_trees.items():
        for stmt in tree.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            kept = [a for a in stmt.names if not a.name.startswith("_") or (a.asname or a.name) in needed[path]]
            if len(kept) != len(stmt.names):
                changed = True
                stmt.names = kept
    for path, tree in cut_trees.items():
        body = [stmt for stmt in tree.body
                if not (isinstance(stmt, ast.ImportFrom) and not stmt.names)
                and not ((names := _defined(stmt)) and not any(n in needed[path] for n in names))]
        changed = changed or len(body) != len(tree.body)
        tree.body = body or [ast.Pass()]
    return changed


def cut_judge_side(package: Path) -> None:
    """Rewrite the staged package's ``exercises/`` in place (see the module's docstring); what
    the rest of the package imports from there stays."""
    cut = set((package / "exercises").rglob("*.py"))
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(package.rglob("*.py"))}
    for p in cut:
        trees[p] = _StripExamples().visit(trees[p])
    outside = {p: t for p, t in trees.items() if p not in cut}  # no round changes these
    fixed = (_attributes(outside), _imports(outside, package))
    try:
        while _shake(trees, package, cut, fixed):
            pass
    finally:
        _MEMO.clear()  # it holds the trees
    for path in sorted(cut):
        path.write_text(ast.unparse(ast.fix_missing_locations(trees[path])) + "\n", encoding="utf-8")
