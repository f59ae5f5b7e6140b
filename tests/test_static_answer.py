"""The answer as the notebook's text defines it (``instructor/static_answer.py``): what the
grader's judge runs a code-reading rule on, so that an answer cannot rewrite the rule next to it."""

from __future__ import annotations

import pytest

from course_utils.exercises._source_rules import python_loop
from course_utils.instructor.static_answer import code_cells, static_function

LOOPS = "def f(a, b):\n    out = []\n    for x in a:\n        out.append(x)\n    return out\n"
CLEAN = "def f(a, b):\n    return (a[:, None] - b[None]).norm(dim=-1)\n"


def test_the_last_plain_definition_in_cell_order_is_the_answer():
    assert python_loop(static_function([LOOPS], "f")) == "for"
    assert python_loop(static_function([CLEAN], "f")) is None
    assert python_loop(static_function([CLEAN, LOOPS], "f")) == "for"  # redefined below: the loop counts
    assert python_loop(static_function([LOOPS, CLEAN], "f")) is None


@pytest.mark.parametrize("cells, kind", [
    (["f = lambda a, b: [x for x in a]"], "for"),
    (["def g(a, b):\n    while a:\n        a = a[1:]\n    return a\n", "f = g"], "while"),
    (["%time 1 + 1\n" + LOOPS], "for"),                                # a magic line, as the kernel reads it
    (["def broken(:\n", LOOPS], "for"),                                # a cell that does not parse is skipped
    (["import torch\n" + CLEAN.replace("def f", "def helper") + "def f(a, b):\n    return helper(a, b)\n"], None),
])
def test_lambdas_aliases_and_magics(cells, kind):
    fn = static_function(cells, "f")
    assert fn is not None
    assert python_loop(fn) == kind


@pytest.mark.parametrize("cells", [
    [],
    ["x = 1"],
    ["exec('def f(a, b):\\n    return a')"],                          # bound by exec
    ["globals()['f'] = lambda a, b: a"],
    ["import functools\n@functools.lru_cache\n" + CLEAN],                # a decorator may return another function
    ["class f:\n    pass\n"],
    [CLEAN, "f = make_f()"],                                            # rebound by a call after the def
])
def test_a_name_bound_any_other_way_has_no_definition(cells):
    assert static_function(cells, "f") is None


def test_nothing_is_run():
    cells = ["import os\nos.environ['STATIC_ANSWER_RAN'] = '1'\n" + CLEAN, "f = f"]
    import os

    assert static_function(cells, "f") is not None
    assert "STATIC_ANSWER_RAN" not in os.environ


def test_code_cells_reads_both_source_forms_and_skips_markdown():
    cells = [{"cell_type": "code", "source": ["a = 1\n", "b = 2\n"]},
             {"cell_type": "markdown", "source": "def f(): ..."},
             {"cell_type": "code", "source": "c = 3"}, {"cell_type": "code", "source": 42}]
    assert code_cells(cells) == ["a = 1\nb = 2\n", "c = 3"]


@pytest.mark.parametrize("cells", [
    [CLEAN, "if True:\n" + "    " + LOOPS.replace("\n    ", "\n        ")],   # a second def under `if`
    [CLEAN, "for f in [lambda a, b: [x for x in a]]:\n    pass\n"],           # bound by a `for`
    [CLEAN, "try:\n    raise ValueError\nexcept ValueError as f:\n    pass\n"],   # bound by `except ... as`
    [CLEAN, "with open(__file__) as f:\n    pass\n"],
    [CLEAN, "from os import path as f"],
    [CLEAN, "g, f = 1, 2"],
    [CLEAN, "(f := lambda a, b: [x for x in a])"],
    [CLEAN, "f: object = 1"],
    [CLEAN, "exec('f = g')"],                                                 # the text shows the clean def last
    [CLEAN, "def make():\n    global f\n    f = g\n", "make()"],
    [CLEAN, "globals().update(f=1)"],
    [CLEAN, "from loops import *"],
    [CLEAN, "import sys\nsys.modules['__main__'].f = lambda a, b: [x for x in a]"],
    [CLEAN, "import __main__\n__main__.f = g"],
    [CLEAN, "import sys\nsetattr(sys.modules.get('__main__'), 'f', g)"],
    [CLEAN, "import importlib\nimportlib.import_module('__main__').f = g"],
    [CLEAN, "vars()['f'] = g"],
    [CLEAN, "get_ipython().user_ns['f'] = g"],
    [CLEAN, "%run loops.py"],
])
def test_a_later_binding_the_text_does_not_follow_leaves_no_definition(cells):
    """Issue 23 (F4): the rule read only top-level ``def``s, so a second binding under ``if True:``
    (or any compound statement, or a dynamic one) replaced the live answer unseen."""
    assert static_function(cells, "f") is None


def test_names_local_to_a_comprehension_do_not_rebind_the_answer():
    assert python_loop(static_function([CLEAN, "ys = [f for f in range(3)]"], "f")) is None
    assert static_function([CLEAN, "ys = [(f := k) for k in range(3)]"], "f") is None  # `:=` binds outside


def test_reading_another_objects_namespace_is_not_a_rebinding():
    """``vars(obj)`` is ``obj``'s namespace (the forgery tests' own probe rewriter uses it on the
    course's modules), and a magic other than ``%run`` runs no code into the notebook's names."""
    cells = [CLEAN, "import types\nns = vars(types.SimpleNamespace(a=1))", "%time 1 + 1",
             "import sys\nif 'google.colab' in sys.modules:\n    pass", "n = len(list(model.modules()))",
             "if __name__ == '__main__':\n    pass"]
    assert python_loop(static_function(cells, "f")) is None


# ----------------------------------------------------------------------------- the text is the export
def _kernel_function(src: str, name: str):
    namespace: dict = {}
    exec(compile(src, "<ipython-input-1>", "exec"), namespace)  # noqa: S102 - the test's own text
    return namespace[name]


CLEAN = "def f(x):\n    return (x[:, None] - x[None]).norm(dim=-1)\n"
LOOPS = "def f(x):\n    return [[(a - b).norm() for b in x] for a in x]\n"


def test_the_exported_answer_must_run_the_texts_bytecode():
    """A hostile review (2026-11-29) handed in a looping function while the text's last ``def``
    was clean: a ``%%capture`` cell, a ``def`` after the check cell, ``f.__code__ = ...``."""
    import cloudpickle

    from course_utils.instructor.static_answer import exported_as_written

    text = static_function([CLEAN], "f")
    assert exported_as_written(text, cloudpickle.dumps(_kernel_function(CLEAN, "f")))
    assert not exported_as_written(text, cloudpickle.dumps(_kernel_function(LOOPS, "f")))
    swapped = _kernel_function(CLEAN, "f")
    swapped.__code__ = _kernel_function(LOOPS, "f").__code__
    assert not exported_as_written(text, cloudpickle.dumps(swapped))
    nested = "def f(x):\n    g = lambda y: y * 2\n    return g(x)\n"
    other = "def f(x):\n    g = lambda y: [v for v in y]\n    return g(x)\n"
    assert not exported_as_written(static_function([nested], "f"), cloudpickle.dumps(_kernel_function(other, "f")))
    assert not exported_as_written(text, b"not a pickle")


def test_the_text_read_ends_at_the_last_check_cell():
    from course_utils.instructor.static_answer import cells_until_check

    cells = [LOOPS, "ex.f.check(f)", CLEAN, "ex.f.check(f)", "def f(x):\n    pass\n", "print(1)"]
    assert cells_until_check(cells, "f") == cells[:4]
    assert cells_until_check(["x = 1"], "f") == ["x = 1"]
