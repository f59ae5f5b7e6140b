"""Rules stated in an exercise's prose ("no Python loops", "by hand"), checked on the answer's
compiled code.

The checks read the bytecode of the learner's function (and of functions, lambdas and
comprehensions defined inside it), not its source text: that works for lambdas, for code
typed in a notebook cell and for answers built with ``exec``. They do not follow calls into
other functions the learner wrote; a rule check may miss a hidden loop, but it never rejects
an answer for code that is not there.
"""

from __future__ import annotations

import dis
import types
from typing import Any, Callable, Iterator


def _codes(fn: Any) -> Iterator[types.CodeType]:
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


_LOOPING_BUILTINS = frozenset({"map", "filter"})
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)  # iteration in Python, like a comprehension


def python_loop(fn: Callable) -> str | None:
    """``"for"`` (a for loop or a comprehension), ``"while"``, or ``"map"``/``"filter"`` (the
    builtins, which loop in Python) when ``fn``'s own code loops, else ``None``."""
    found = None
    for code in _codes(fn):
        for ins in dis.get_instructions(code):
            if ins.opname == "FOR_ITER":
                return "for"
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in _LOOPING_BUILTINS:
                return str(ins.argval)
            # any jump back: JUMP_BACKWARD (3.11+), POP_JUMP_BACKWARD_IF_TRUE/FALSE (3.11's
            # `while cond:`, missed before), JUMP_ABSOLUTE to an earlier offset (3.10)
            if ins.opcode in _JUMPS and isinstance(ins.argval, int) and ins.argval < ins.offset:
                found = "while"
    return found


def _helpers(fn: Any, code: types.CodeType) -> Iterator[Any]:
    """Functions the learner wrote next to ``fn`` (same module, e.g. the notebook) that its
    code calls by global name: a rule must not be dodged by moving code into a helper."""
    fn = getattr(fn, "__func__", fn)
    glb = getattr(fn, "__globals__", {})
    mod = getattr(fn, "__module__", None)
    for name in code.co_names:
        obj = glb.get(name)
        if isinstance(obj, types.FunctionType) and obj.__module__ == mod and obj is not fn:
            yield obj


def names_used(fn: Callable, names: set[str], _seen: set[int] | None = None) -> str | None:
    """The first of ``names`` that ``fn``'s code (or a helper function it calls from the same
    notebook) loads as a global or an attribute (``backward`` in ``y.backward()``, ``grad`` in
    ``torch.autograd.grad``), or ``None``."""
    seen = set() if _seen is None else _seen
    if id(fn) in seen or len(seen) > 50:
        return None
    seen.add(id(fn))
    for code in _codes(fn):
        hit = names.intersection(code.co_names)
        if hit:
            return sorted(hit)[0]
        for helper in _helpers(fn, code):
            found = names_used(helper, names, seen)
            if found:
                return found
    return None
