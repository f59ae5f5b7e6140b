"""An answer as the notebook's text defines it: compiled, never run.

A rule that an exercise's prose states about the answer's *code* ("no Python loops") is checked
by a behaviour test that reads the function's bytecode (``course_utils/exercises/_source_rules.py``)
and never calls it (``grading.reads_code_only``). In the learner's own notebook that test reads the
live function. In the instructor's grader the live function is in the sandboxed executor, next to
learner code that can rewrite the test before it runs (issue 23: a looping answer scored correct
that way). So the judge, which never runs learner code, rebuilds the function here from the
notebook's code cells, read on the host, and runs the test on that.

What counts as the definition is what a reader of the notebook sees: the last top-level
``def NAME``, ``NAME = lambda ...`` or ``NAME = other_name`` (followed to ``other_name``'s own
definition) in cell order. Functions defined at the top level next to it are its globals, so a
rule follows calls into helpers as it does in the notebook. A name bound any other way (``exec``,
``globals()[...]``, a decorator that returns another function) has no definition here, and the
rule reports that instead of a verdict.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable

MAX_CODE = 512 * 1024  # characters of code cells sent to the judge (a notebook's code is ~10-50 KB)


def code_cells(cells: Iterable[dict]) -> list[str]:
    """The source of every code cell, in order (``source`` as a string or a list of lines)."""
    out = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if isinstance(src, str):
            out.append(src)
    return out


def _python(cell: str) -> ast.Module | None:
    """A cell as Python (IPython's ``%magic`` and ``!shell`` lines turned into calls, as the kernel
    does), or ``None`` where it does not parse."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        cell = TransformerManager().transform_cell(cell)
    except Exception:  # noqa: BLE001 - no IPython, or a cell it cannot transform: parse it as it is
        pass
    try:
        return ast.parse(cell)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _code_of(node: ast.stmt, name: str) -> types.CodeType | None:
    """The code object of the function ``node`` defines (a ``def`` or an assigned ``lambda``)."""
    try:
        module = compile(ast.Module(body=[node], type_ignores=[]), "<notebook>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    want = name if isinstance(node, ast.FunctionDef) else "<lambda>"
    return next((c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == want), None)


def _bindings(cells: list[str]) -> dict[str, ast.stmt]:
    """Each top-level name's last simple binding: a ``def``, or an assignment of a lambda or a name."""
    found: dict[str, ast.stmt] = {}
    for cell in cells:
        tree = _python(cell)
        for node in tree.body if tree is not None else []:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = node
            elif isinstance(node, (ast.AsyncFunctionDef, ast.ClassDef)):
                found[node.name] = node  # bound, but not to a plain function
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    same = isinstance(node.value, ast.Name) and node.value.id == getattr(target, "id", None)
                    if isinstance(target, ast.Name) and not same:  # `f = f` binds what was there
                        found[target.id] = node
    return found


def static_function(cells: list[str], name: str) -> types.FunctionType | None:
    """``name`` as a function object built from the notebook's text, never called; ``None``
    when the text does not define it as a plain function."""
    bindings = _bindings(cells)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for other, bound in bindings.items():  # the helpers a rule may follow
        if isinstance(bound, ast.FunctionDef):
            code = _code_of(bound, other)
            if code is not None:
                namespace[other] = types.FunctionType(code, namespace, other)
    seen = set()
    while name not in seen:
        seen.add(name)
        node = bindings.get(name)
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            fn = namespace.get(name)
            return fn if isinstance(fn, types.FunctionType) else None
        if not isinstance(node, ast.Assign):
            return None
        if isinstance(node.value, ast.Lambda):
            code = _code_of(node, name)
            return types.FunctionType(code, namespace, name) if code is not None else None
        if not isinstance(node.value, ast.Name):
            return None
        name = node.value.id  # an alias: follow it
    return None
