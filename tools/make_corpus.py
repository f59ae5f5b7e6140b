"""Write the text corpus of lesson 15 (a small GPT): the docstrings of a fixed list of Python
standard-library modules, read from their source files with ``ast`` (never imported, so C
accelerators and the running interpreter's state cannot change the text).

    python tools/make_corpus.py            # rewrite course_utils/lesson_props/data/stdlib_docstrings.txt
    python tools/make_corpus.py --check    # exit 1 if the shipped file differs from what this Python makes

The docstrings are part of CPython, under the Python Software Foundation License (PSF-2.0), as
the header of the file says. The text depends on the Python version that reads the sources
(docstrings change between releases), so the header records it: the shipped file is the one the
lesson reads on every version, and ``--check`` compares only on the recorded version.
Deterministic: a fixed module list, definitions in source order, ASCII only, whitespace normalised.
"""

from __future__ import annotations

import argparse
import ast
import sys
import sysconfig
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "course_utils" / "lesson_props" / "data" / "stdlib_docstrings.txt"

MODULES = ("textwrap", "string", "json.encoder", "json.decoder", "csv", "collections", "functools",
           "heapq", "bisect", "fractions", "statistics", "random", "calendar", "shlex", "argparse",
           "pathlib", "tempfile", "shutil", "queue", "contextlib", "dataclasses", "enum", "fnmatch",
           "glob", "gzip", "zipfile", "tarfile", "configparser", "pprint", "datetime", "locale",
           "gettext", "copy", "abc", "numbers", "operator", "ast", "tokenize", "traceback", "sched",
           "selectors", "socketserver", "smtplib", "http.client", "urllib.parse", "base64", "hashlib",
           "hmac", "secrets", "uuid", "weakref", "warnings", "zipapp")
"""Fixed, in this order. Changing it changes the corpus: rerun the tool and commit the file."""

HEADER = ("# The docstrings of {n} Python standard-library modules (CPython {version}), read with ast\n"
          "# by tools/make_corpus.py. Copyright (c) Python Software Foundation; licensed under the\n"
          "# Python Software Foundation License Version 2 (PSF-2.0): https://docs.python.org/3/license.html\n"
          "# Modules: {modules}\n")


def _docstrings(tree: ast.AST) -> list[str]:
    """Every docstring of a module, its classes and functions, in source order."""
    found = []
    for node in _in_order(tree):
        doc = ast.get_docstring(node, clean=True)  # type: ignore[arg-type]
        if doc and len(doc) >= 40:
            found.append(doc)
    return found


def _in_order(node: ast.AST):
    """The module, then each class and function depth-first in source order."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _in_order(child)


def _ascii(text: str) -> str:
    return text.encode("ascii", "ignore").decode("ascii").replace("\t", "    ")


def _source(name: str) -> Path:
    """The source file of a standard-library module (from the library folder: some modules,
    such as ``abc``, are frozen into the interpreter and have no file as their origin)."""
    base = Path(sysconfig.get_path("stdlib")) / name.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise SystemExit(f"{name}: no Python source in {base.parent}")


def corpus() -> str:
    parts = [HEADER.format(n=len(MODULES), version=".".join(map(str, sys.version_info[:2])),
                           modules=", ".join(MODULES))]
    for name in MODULES:
        tree = ast.parse(_source(name).read_text(encoding="utf-8"))
        for doc in _docstrings(tree):
            lines = [line.rstrip() for line in _ascii(doc).splitlines()]
            parts.append(textwrap.dedent("\n".join(lines)).strip() + "\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = parser.parse_args(argv)
    text = corpus()
    if args.check:
        same = OUT.read_text(encoding="ascii") == text
        print(f"{OUT.name}: {'up to date' if same else 'differs from what this Python makes'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="ascii", newline="\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(text):,} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
