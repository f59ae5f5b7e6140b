"""A rule stated in an exercise's prose that is about the code itself ("no Python loops"),
checked on the answer's compiled code. (Rules about what the code calls, "by hand", "without the
built-in", are ``Exercise.forbid``, watched while the answer runs.)

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
