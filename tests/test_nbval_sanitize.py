"""tests/nbval_sanitize.cfg: its torch-version rules make the wordings of torch 2.13, 2.14 and
2.15 compare equal, and nothing else.

nbval applies every rule, in file order, to each string of a stored and of a fresh output
(``ename`` and ``evalue`` of an error included) and compares the results. The texts below are
what each version printed (README, "Tested versions").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

ROOT = Path(__file__).resolve().parent.parent
RULES = get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text())


def sanitize(s: str) -> str:
    for regex, replace in RULES:  # as nbval's IPyNbFile.sanitize
        s = re.sub(regex, replace, s)
    return s


JIT = "`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`.\n"


@pytest.mark.parametrize("reference, newer", [
    # lesson 09, torch 2.13 -> 2.14 and 2.15
    ("DeprecationWarning: " + JIT, "FutureWarning: " + JIT),
    # lesson 01 and lesson 08, torch 2.13 and 2.14 -> 2.15
    ("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
     "mm: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)"),
    ("mat1 and mat2 shapes cannot be multiplied (4x128 and 512x10)",
     "addmm: mat1 and mat2 shapes cannot be multiplied (4x128 and 512x10)"),
    # lesson 01: the class of an integer mean()'s error, 2.13 and 2.14 -> 2.15
    ("RuntimeError", "NotImplementedError"),
])
def test_the_wordings_of_the_tested_versions_compare_equal(reference, newer):
    assert reference != newer
    assert sanitize(reference) == sanitize(newer)


@pytest.mark.parametrize("reference, other", [
    # the numbers in a shape error are still compared
    ("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
     "mm: mat1 and mat2 shapes cannot be multiplied (3x4 and 4x4)"),
    # another prefix, or another message, is not a known rewording
    ("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)",
     "bmm: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)"),
    ("mm: expected m1 and m2 to have the same dtype", "expected m1 and m2 to have the same dtype"),
    # only the TorchScript warning's category varies; other warnings keep theirs
    ("DeprecationWarning: `torch.jit.trace` is deprecated.", "FutureWarning: `torch.jit.trace` is deprecated."),
    ("DeprecationWarning: " + JIT, "UserWarning: " + JIT),
    # the class name is normalised only as a whole string (nbval's ename), not inside a text,
    # and only NotImplementedError -> RuntimeError
    ("RuntimeError: oops", "NotImplementedError: oops"),
    ("RuntimeError", "ValueError"),
    ("NotImplementedError", "ValueError"),
])
def test_other_differences_still_fail(reference, other):
    assert sanitize(reference) != sanitize(other)


def test_no_stored_output_is_a_not_implemented_error():
    """The ename rule may only ever let a RuntimeError's subclass stand in for it: a stored
    NotImplementedError would make it accept a plain RuntimeError in its place."""
    assert issubclass(NotImplementedError, RuntimeError)
    for nb in sorted((ROOT / "solutions").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for out in cell.get("outputs", []):
                assert out.get("ename") != "NotImplementedError", f"{nb.name}: {out.get('evalue')}"
