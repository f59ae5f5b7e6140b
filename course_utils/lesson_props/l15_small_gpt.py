"""Lesson 15 (a small GPT): the shipped text corpus, and the course's own pieces the lesson's
model is built from.

- :func:`load_corpus`: the docstrings of a fixed list of standard-library modules
  (``data/stdlib_docstrings.txt``, made by ``tools/make_corpus.py``, PSF licence), without its
  header of ``# `` lines; :func:`corpus_header` is that header (the licence note).
- ``causal_mask``, ``causal_attention``, ``pre_norm_block``, ``tie_weights``, ``sample_next``:
  the notebook's answers, generated into ``exercises/_references/`` (one source). The lesson's
  model and its generation use these, never a learner's stub, so *Run All* works before the
  exercises are done (the learner's answers are checked in their check cells).
"""

from __future__ import annotations

from pathlib import Path

from ..exercises._references.l15_small_gpt import (  # noqa: F401 (re-exported for the notebook)
    causal_attention,
    causal_mask,
    next_token_batch,
    pre_norm_block,
    sample_next,
    tie_weights,
)

CORPUS_PATH = Path(__file__).resolve().parent / "data" / "stdlib_docstrings.txt"

__all__ = ["CORPUS_PATH", "causal_attention", "causal_mask", "corpus_header", "load_corpus", "next_token_batch",
           "pre_norm_block", "sample_next", "tie_weights"]


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
