"""Lesson 15 (a small GPT): the shipped text corpus, and the course's own pieces the lesson's
model is built from.

- :func:`load_corpus`: the docstrings of a fixed list of standard-library modules
  (``data/stdlib_docstrings.txt``, made by ``tools/make_corpus.py``, PSF licence), without its
  header of ``# `` lines; :func:`corpus_header` is that header (the licence note).
The lesson's model and its generation call the course's answers through
``grading.reference(...)``, never a learner's stub, so *Run All* works before the exercises are
done; where an instructor grades, that gives the notebook's own answer. No answer is re-exported
here: a prop that re-exports answers keeps them in the course a submission runs against.
"""

from __future__ import annotations

from pathlib import Path

CORPUS_PATH = Path(__file__).resolve().parent / "data" / "stdlib_docstrings.txt"

__all__ = ["CORPUS_PATH", "corpus_header", "load_corpus"]


def _lines() -> list[str]:
    return CORPUS_PATH.read_text(encoding="ascii").splitlines(keepends=True)


def corpus_header() -> str:
    """The corpus's first lines (``# ...``): where the text comes from and its licence."""
    lines = _lines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("# "))
    return "".join(lines[:n])


def load_corpus() -> str:
    """The corpus text, without its header."""
    lines = _lines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("# "))
    return "".join(lines[n:]).lstrip("\n")
