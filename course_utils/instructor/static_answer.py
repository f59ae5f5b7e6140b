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
rule reports that instead of a verdict. So has a name that a later statement binds in a way not
followed here (a ``def`` under ``if True:``, a ``for`` or ``with`` target, an import), and every
name of a notebook whose code can bind names unseen (``exec``, ``eval``, ``globals()``, ``vars()``,
``global``, ``import *``, ``sys.modules``, ``import __main__``, the kernel's ``user_ns``, ``%run``):
the text shown would not be the function that ran.
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
                for bound in _bound_names(node.value):  # a `:=` inside the value
                    found[bound] = node
                for target in node.targets:
                    same = isinstance(node.value, ast.Name) and node.value.id == getattr(target, "id", None)
                    if isinstance(target, ast.Name) and not same:  # `f = f` binds what was there
                        found[target.id] = node
                    elif not isinstance(target, ast.Name):
                        for bound in _bound_names(target):  # `a, f = ...`: bound, not to what the text shows
                            found[bound] = node
            else:  # `if True: def f...`, `for`, `with`, `try`, `import`: bound in a way not followed here
                for bound in _bound_names(node):
                    found[bound] = node
    return found


def _bound_names(node: ast.AST) -> set[str]:
    """The module-level names a statement binds, looking inside compound statements but not into
    the bodies of functions, lambdas, classes or comprehensions (their names are theirs, except a
    ``:=`` in a comprehension, which binds outside it)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return {node.id}
    if isinstance(node, ast.Lambda):
        return set()
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)
                and isinstance(n.target, ast.Name)}
    names = {n for n in (getattr(node, "name", None), getattr(node, "rest", None)) if isinstance(n, str)}
    for child in ast.iter_child_nodes(node):  # `except E as f`, `case f:` carry their names as text
        names |= _bound_names(child)
    return names


DYNAMIC = frozenset({"exec", "eval", "globals", "__import__"})
# IPython's ways into the kernel's namespace (`get_ipython().user_ns[...] = ...`, `push`, `run_cell`)
NAMESPACE_ATTRS = frozenset({"user_ns", "user_global_ns", "push", "run_cell", "run_code"})


def _main_module(node: ast.AST) -> bool:
    """``sys.modules[...]``, ``sys.modules.get(...)``, or anything indexed or called with
    ``"__main__"``: the notebook's own module, whose names can be set from there."""
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.value, ast.Attribute):
        inner = node.value
        if inner.attr == "modules" and isinstance(inner.value, ast.Name) and inner.value.id == "sys":
            return True
    args = node.args if isinstance(node, ast.Call) else [node.slice] if isinstance(node, ast.Subscript) else []
    return any(isinstance(a, ast.Constant) and a.value == "__main__" for a in args)


def _dynamic(node: ast.AST) -> bool:
    """Whether ``node`` can bind a top-level name where the text does not show it."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in DYNAMIC or (node.func.id == "vars" and not node.args):  # `vars(x)` is x's
            return True
    if isinstance(node, ast.Attribute) and node.attr in NAMESPACE_ATTRS:
        return True
    if isinstance(node, (ast.Import, ast.ImportFrom)):  # `import __main__`, `from m import *`
        return any(a.name == "*" or a.name.split(".")[0] == "__main__" for a in node.names) or (
            isinstance(node, ast.ImportFrom) and node.module == "__main__")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_line_magic":
        if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "run":
            return True
    return isinstance(node, ast.Global) or _main_module(node)


def _rebinds_dynamically(cells: list[str]) -> bool:
    """Whether any code cell can bind a top-level name in a way the text does not show: a call of
    ``exec``, ``eval``, ``globals``, ``vars()`` or ``__import__``, a ``global`` statement, an
    ``import *``, the main module (``import __main__``, ``sys.modules``), the kernel's namespace
    (``get_ipython().user_ns``, ``push``, ``run_cell``) or ``%run``, anywhere (a function may run
    later)."""
    for cell in cells:
        tree = _python(cell)
        if tree is not None and any(_dynamic(node) for node in ast.walk(tree)):
            return True
    return False


def static_function(cells: list[str], name: str) -> types.FunctionType | None:
    """``name`` as a function object built from the notebook's text, never called; ``None``
    when the text does not define it as a plain function."""
    if _rebinds_dynamically(cells):
        return None
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


def _byte_strings(payload: bytes, limit: int = 1 << 20) -> set[bytes]:
    """The byte strings a pickle holds (a pickled function's ``co_code`` among them), read with
    :mod:`pickletools`, which decodes the stream and runs nothing; at most ``limit`` operations."""
    import pickletools

    found: set[bytes] = set()
    try:
        for n, (_, arg, _) in enumerate(pickletools.genops(payload)):
            if isinstance(arg, bytes):
                found.add(arg)
            if n >= limit:
                break
    except Exception:  # noqa: BLE001 - a stream cut short still showed what it held so far
        pass
    return found


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def exported_as_written(fn: types.FunctionType, payload: bytes) -> bool:
    """Whether the answer the check cell exported (``payload``: cloudpickle's bytes, the
    function's code pickled by value) runs the bytecode of ``fn``, the function the notebook's
    text defines, and of each function in it: a hostile review exported a looping function while
    the text's last ``def`` was clean (a ``%%capture`` cell, a ``def`` after the check cell, an
    assignment to ``__code__``)."""
    held = _byte_strings(payload)
    return all(code.co_code in held for code in _codes(fn.__code__))


def cells_until_check(cells: list[str], name: str) -> list[str]:
    """The code cells up to the last that checks ``name`` (``ex.NAME.check(...)``): the answer
    exported is the one bound there, whatever later cells define."""
    marker = f".{name}.check("
    last = max((i for i, cell in enumerate(cells) if marker in cell), default=len(cells) - 1)
    return cells[:last + 1]
