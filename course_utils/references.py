"""The reference answers, extracted from the solution notebooks: one source for each.

``python -m course_utils build`` writes ``course_utils/answers/lNN_name.py``
from ``solutions/NN_name.py``: every top-level ``def``/``class`` of each answer cell (a code
cell holding ``### BEGIN SOLUTION``), exactly as written in the notebook but for the marker
lines, plus the notebook-level definitions and imports those need (a dependency closure over
the notebook's top-level names). Demo statements, prints, training runs and file writes are
never copied: a needed name that only a statement other than an import, ``def``, ``class`` or
a constant assignment (one name = an expression that calls nothing: literals, names,
attributes, arithmetic) defines is a build error, so that importing a generated module stays
fast and does nothing.

The exercise files import their references from there
(``from ...answers.l03_nn_module import MLP as reference``), so ``solution()`` shows the
notebook's code, and ``build --check`` fails when a generated module is stale.
"""

from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass
from pathlib import Path

from .cells import BEGIN, END  # the cell grammar's answer markers

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
PACKAGE = ROOT / "course_utils" / "answers"
INIT_TEXT = ('"""Reference answers generated from the solution notebooks by `python -m course_utils build`;\n'
             'do not edit (edit solutions/NN_name.py and run the build). One module per lesson:\n'
             '``lNN_name.py`` from ``solutions/NN_name.py``."""\n')
_BUILTINS = set(dir(builtins)) | {"__name__", "__file__", "__doc__"}


class ExtractError(ValueError):
    """A solution notebook whose answers cannot be extracted (named in the message)."""


@dataclass
class _Stmt:
    node: ast.stmt
    text: str  # the statement's source as written (marker lines dropped)
    cell: int
    answer: bool  # a top-level def/class of an answer cell
    binds: tuple[str, ...]


def module_name(stem: str) -> str:
    """``"03_nn_module"`` -> ``"l03_nn_module"``."""
    return f"l{stem}"


def module_path(stem: str, package: Path | None = None) -> Path:
    return (package or PACKAGE) / f"{module_name(stem)}.py"


def _code(source: str) -> str:
    """A cell's source as Python: IPython magics and shell lines become blank lines."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _drop_markers(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip() not in (BEGIN, END))


def _binds(node: ast.stmt) -> tuple[str, ...]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, ast.Import):
        return tuple(a.asname or a.name.split(".")[0] for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return tuple(a.asname or a.name for a in node.names if a.name != "*")
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return tuple(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return tuple(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


def _is_constant(node: ast.stmt) -> bool:
    """An assignment of one name to an expression without calls (a literal, arithmetic of
    constants and names): safe and quick to run at import time."""
    if isinstance(node, ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return False
        value = node.value
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        value = node.value
    else:
        return False
    return not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda))
                   for n in ast.walk(value))


def _globals_used(text: str) -> set[str]:
    """The global names a top-level statement reads (definition-time and call-time)."""
    top = symtable.symtable(text, "<cell>", "exec")
    used = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    stack = list(top.get_children())
    while stack:
        table = stack.pop()
        stack.extend(table.get_children())
        for sym in table.get_symbols():
            if sym.is_referenced() and (sym.is_global() or sym.is_declared_global()):
                used.add(sym.get_name())
    return used - _BUILTINS


def _statements(cells: list[tuple[str, str]], where: str) -> list[_Stmt]:
    out: list[_Stmt] = []
    for i, (cell_type, source) in enumerate(cells):
        if cell_type != "code":
            continue
        code = _code(source)
        is_answer = any(line.strip() == BEGIN for line in code.splitlines())
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            if is_answer:
                raise ExtractError(f"{where} cell {i}: an answer cell that does not parse: {exc}") from exc
            continue
        lines = code.splitlines()
        for node in tree.body:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = _drop_markers("\n".join(lines[start - 1: node.end_lineno]))
            answer = is_answer and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            out.append(_Stmt(node, text, i, answer, _binds(node)))
    return out


def _definition(stmts: list[_Stmt], name: str, before: int) -> _Stmt | None:
    """The statement that binds ``name`` for code at position ``before``: the last one before
    it, or else the first one after it (a helper defined further down the notebook)."""
    binding = [k for k, s in enumerate(stmts) if name in s.binds]
    earlier = [k for k in binding if k < before]
    if earlier:
        return stmts[earlier[-1]]
    return stmts[binding[0]] if binding else None


def _importable(s: _Stmt) -> bool:
    return isinstance(s.node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
        or _is_constant(s.node)


def _import_text(node: ast.Import | ast.ImportFrom, names: set[str]) -> str:
    """The import statement, keeping only the names the module needs."""
    kept = [a for a in node.names if (a.asname or (a.name if isinstance(node, ast.ImportFrom)
                                                     else a.name.split(".")[0])) in names]
    clone = ast.ImportFrom(node.module, kept, node.level) if isinstance(node, ast.ImportFrom) else ast.Import(kept)
    return ast.unparse(clone)


def extract(cells: list[tuple[str, str]], where: str) -> str | None:
    """The generated module's body for a notebook's ``(cell_type, source)`` cells, or ``None``
    when the notebook has no answer cells."""
    stmts = _statements(cells, where)
    answers = [k for k, s in enumerate(stmts) if s.answer]
    if not answers:
        return None
    chosen: set[int] = set(answers)
    needed_names: dict[int, set[str]] = {}  # import statement -> names used from it
    todo = list(answers)
    while todo:
        k = todo.pop()
        s = stmts[k]
        if isinstance(s.node, (ast.Import, ast.ImportFrom)):
            continue
        for name in sorted(_globals_used(s.text) - set(s.binds)):
            dep = _definition(stmts, name, k)
            if dep is None:
                raise ExtractError(f"{where}: answer code (cell {s.cell}) uses `{name}`, which the notebook "
                                      "never defines at the top level")
            if not _importable(dep):
                raise ExtractError(
                    f"{where}: answer code (cell {s.cell}) uses `{name}`, which cell {dep.cell} defines by a "
                    f"statement that is not an import, def, class or constant (`{dep.text.splitlines()[0][:60]}`); "
                    "define it with one of those so the reference module can import it without running the demo")
            d = stmts.index(dep)
            if isinstance(dep.node, (ast.Import, ast.ImportFrom)):
                needed_names.setdefault(d, set()).add(name)
            if d not in chosen:
                chosen.add(d)
                todo.append(d)
    imports: list[str] = []
    extras: list[str] = []
    for k in sorted(needed_names):
        text = _import_text(stmts[k].node, needed_names[k])  # type: ignore[arg-type]
        into = extras if _root(stmts[k].node) in EXTRA_MODULES else imports
        if text not in into:
            into.append(text)
    if extras:  # the module imports without them; an answer that needs one raises NameError when it runs
        imports.append("try:  # an extra (course_utils/extras.py): needed only when these answers run\n"
                       + "".join(f"    {line}\n" for line in extras) + "except ImportError:\n    pass")
    body = [stmts[k].text for k in sorted(chosen) if k not in needed_names]
    return "\n\n\n".join((["\n".join(imports)] if imports else []) + body) + "\n"


# Packages a lesson may need beyond requirements.txt (course_utils/extras.py): the generated module
# must still import without them, because the exercise index, the room view and `build` load every
# lesson's declarations in an environment that may not have them.
EXTRA_MODULES = frozenset({"torchvision"})


def _root(node: ast.AST) -> str:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] if node.level == 0 else ""
    if isinstance(node, ast.Import):
        return node.names[0].name.split(".")[0]
    return ""


def header(stem: str) -> str:
    return (f'"""Generated from solutions/{stem}.py by `python -m course_utils build`; do not edit.\n\n'
            f"The answer definitions of the lesson's solution notebook (marker lines dropped) and the\n"
            f'notebook-level names they use; the exercises of {stem} take their references from here."""\n\n'
            "# ruff: noqa\n")


def notebook_cells(stem: str, solutions: Path | None = None) -> list[tuple[str, str]]:
    """The ``(cell_type, source)`` cells of ``solutions/<stem>.py`` (the source an author edits)."""
    import jupytext

    nb = jupytext.read((solutions or SOLUTIONS) / f"{stem}.py")
    return [(c.cell_type, c.source) for c in nb.cells]


def module_text(stem: str, solutions: Path | None = None) -> str | None:
    """What ``course_utils/answers/lNN_name.py`` should hold for lesson ``stem`` (``None``: no answers)."""
    body = extract(notebook_cells(stem, solutions), f"solutions/{stem}.py")
    return None if body is None else header(stem) + "\n" + body


def expected_files(stems: list[str], solutions: Path | None = None, package: Path | None = None) -> dict[Path, str]:
    """Every generated reference file for ``stems`` with the text it should have (plus the
    package's ``__init__.py``)."""
    package = package or PACKAGE
    files = {package / "__init__.py": INIT_TEXT}
    for stem in stems:
        text = module_text(stem, solutions)
        if text is not None:
            files[module_path(stem, package)] = text
    return files


def stale_modules(stems: list[str], package: Path | None = None) -> list[Path]:
    """Generated modules with no solution notebook (a lesson renamed or removed)."""
    package = package or PACKAGE
    wanted = {module_path(s, package) for s in stems}
    return sorted(p for p in package.glob("l[0-9][0-9]_*.py")
                  if p not in wanted and p.read_text().startswith('"""Generated from solutions/'))
