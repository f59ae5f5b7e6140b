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
import hashlib
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


_CUTS: dict[str, dict[str, str]] = {}  # digest of a cut's inputs -> {file under the package: its cut text}


def cut_judge_side(package: Path) -> None:
    """Rewrite the staged package's ``exercises/`` in place (see the module's docstring); what
    the rest of the package imports from there stays.

    The cut reads only the ``exercises/`` files and what the rest of the package reads of them
    (its private attributes and imports). Those were the same for every lesson and both copies
    of a grading run when measured (only ``answers/`` differs between them): the cut texts are
    kept by a digest of those inputs, so a run pays for the cut once (~5 s) instead of twice per
    lesson, and a course that changes its inputs gets a cut of its own."""
    texts = {p: p.read_text(encoding="utf-8") for p in sorted(package.rglob("*.py"))}
    exercises = package / "exercises"
    cut = [p for p in texts if p.is_relative_to(exercises)]
    try:
        fixed = _outside_facts(package, {p: t for p, t in texts.items() if not p.is_relative_to(exercises)})
        key = _inputs_digest(package, [(p, texts[p]) for p in cut], fixed)
        done = _CUTS.get(key)
        if done is None:
            done = _cut(package, {p: texts[p] for p in cut}, fixed)
            if len(_CUTS) >= 4:  # one course version a run; a bound all the same
                _CUTS.clear()
            _CUTS[key] = done
    finally:
        _MEMO.clear()  # it holds the trees
    for rel, text in done.items():
        (package / rel).write_text(text, encoding="utf-8")


_FACTS: dict[tuple[str, str], tuple[frozenset[str], dict[str, frozenset[str]]]] = {}


def _outside_facts(package: Path, texts: dict[Path, str]) -> tuple[set[str], dict[Path, set[str]]]:
    """What the files outside ``exercises/`` read of it, which no round of the cut changes: the
    private attributes they read anywhere and what they import from each staged file. Kept per
    file by its text: between the copies of a run only the ``answers/`` files differ."""
    attributes: set[str] = set()
    imports: dict[Path, set[str]] = {}
    for path, text in texts.items():
        key = (str(path.relative_to(package)), hashlib.sha256(text.encode("utf-8")).hexdigest())
        facts = _FACTS.get(key)
        if facts is None:
            tree = {path: ast.parse(text)}
            imported = _imports(tree, package)
            facts = (frozenset(_attributes(tree)),
                     {str(src.relative_to(package)): frozenset(names) for src, names in imported.items()})
            if len(_FACTS) >= 4096:
                _FACTS.clear()
            _FACTS[key] = facts
        attributes |= facts[0]
        for src, names in facts[1].items():
            imports.setdefault(package / src, set()).update(names)
    return attributes, imports


def _inputs_digest(package: Path, cut: list[tuple[Path, str]], fixed: tuple[set[str], dict[Path, set[str]]]) -> str:
    attributes, imports = fixed
    digest = hashlib.sha256()
    for part in ([repr(sorted(attributes))]
                 + [f"{p.relative_to(package)}:{sorted(names)}" for p, names in sorted(imports.items())]
                 + [f"{p.relative_to(package)}\0{text}" for p, text in cut]):
        digest.update(part.encode("utf-8"))
        digest.update(b"\1")
    return digest.hexdigest()


def _cut(package: Path, texts: dict[Path, str], fixed: tuple[set[str], dict[Path, set[str]]]) -> dict[str, str]:
    """The cut ``exercises/`` files' texts, by their path under ``package``."""
    trees = {p: _StripExamples().visit(ast.parse(text)) for p, text in texts.items()}
    while _shake(trees, package, set(trees), fixed):
        pass
    return {str(p.relative_to(package)): ast.unparse(ast.fix_missing_locations(trees[p])) + "\n" for p in sorted(trees)}


def forget_cuts() -> None:
    """Drop the kept cuts (a benchmark that measures a cold run calls it first)."""
    _CUTS.clear()
    _FACTS.clear()
