"""A lesson shows what its exercises need before it asks for them.

The proxy measured here: every keyword argument (``keepdim=``, ``dim=``, ...) that a reference
answer passes appears, as ``name=``, in a cell that is not an answer (prose, a demo, a
prediction) earlier in the course: this lesson's cells above the exercise, or an earlier
lesson's. Lesson 01's row normalisation, pairwise distances and masked mean were asked for
three sections before ``keepdim=True`` was taught (issue 26).

``KNOWN`` lists the keyword arguments that a reference answer passes by its own choice (the
exercise does not need that spelling) or that wait for their lesson's author; a new gap fails
here until it is taught above the exercise or listed with a reason.
"""

from __future__ import annotations

import ast
import re

from course_utils import build, cells

KNOWN: dict[tuple[str, str], str] = {
    ("01_tensors", "min"): "clamp(min=1) in masked_mean: torch.where, taught in section 7, does it",
    ("03_nn_module", "mean"): "nn.init.normal_(mean=): the exercise names the distribution",
    ("03_nn_module", "std"): "nn.init.normal_(std=): the exercise names the distribution",
    ("04_data", "num_samples"): "WeightedRandomSampler's argument: the exercise names the sampler",
    ("04_data", "batch_first"): "pad_sequence's argument: the exercise names the function",
    ("04_data", "padding_value"): "pad_sequence's argument: the exercise names the function",
    ("06_losses_optimizers", "alpha"): "a spelling of the reference (add_(..., alpha=))",
    ("07_debugging", "recurse"): "parameters(recurse=False): one way among several",
    ("12_capstone", "accumulate"): "the capstone is open: the reference's own choice",
    ("13_images_from_files", "encoding"): "open(csv, encoding=) in GlyphFiles: plain Python, one way among several",
    ("13_images_from_files", "num_output_channels"): "v2.Grayscale's argument: the lesson names the transform",
    ("13_images_from_files", "degrees"): "RandomAffine's argument: the exercise lists the transforms to choose from",
    ("13_images_from_files", "translate"): "RandomAffine's argument: the exercise lists the transforms to choose from",
    ("15_small_gpt", "num_samples"): "torch.multinomial's argument: the exercise names the function",
}


def keyword_arguments(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {k.arg for node in ast.walk(tree) if isinstance(node, ast.Call)
            for k in node.keywords if k.arg}


def untaught(stems: list[str]) -> list[tuple[str, str, str]]:
    """``(lesson, exercise cell's first line, keyword)`` for each keyword argument a reference
    answer passes before any non-answer cell of the course has shown ``keyword=``."""
    shown = ""
    gaps = []
    for stem in stems:
        nb = build.read_py(build.SOLUTIONS / f"{stem}.py")
        for cell in nb.cells:
            text = cells.source(cell)
            if cell.cell_type == "code" and cells.is_answer(text):
                first = text.strip().splitlines()[0]
                gaps += [(stem, first, k) for k in sorted(keyword_arguments(text))
                         if not re.search(rf"\b{re.escape(k)}\s*=", shown)]
            else:
                shown += text + "\n"
    return gaps


def test_keepdim_is_taught_before_lesson_01_needs_it():
    nb = build.read_py(build.SOLUTIONS / "01_tensors.py")
    first_keepdim_answer = next(i for i, c in enumerate(nb.cells)
                                if c.cell_type == "code" and cells.is_answer(cells.source(c))
                                and "keepdim" in cells.source(c))
    taught = [i for i, c in enumerate(nb.cells)
              if not cells.is_answer(cells.source(c)) and "keepdim=True" in cells.source(c)
              and cells.predicted_name(cells.source(c)) is None]
    assert taught and taught[0] < first_keepdim_answer, (
        "lesson 01 asks for sum(dim=..., keepdim=True) before a demo or its prose shows it")


def test_every_keyword_an_answer_passes_is_shown_before_it():
    gaps = [(stem, first, k) for stem, first, k in untaught(build.solution_stems())
            if (stem, k) not in KNOWN]
    assert not gaps, "\n".join(f"{stem}: {first!r} passes {k}= before the course shows it"
                               for stem, first, k in gaps)


def test_the_check_catches_an_answer_ahead_of_its_lesson(tmp_path, monkeypatch):
    sol = tmp_path / "solutions"
    sol.mkdir()
    (sol / "99_probe.py").write_text(
        "# %% [markdown]\n# Exercise\n\n"
        "# %%\ndef f(x):\n    ### BEGIN SOLUTION\n    return x.sum(dim=1, keepdim=True)\n"
        "    ### END SOLUTION\n\n"
        "# %% [markdown]\n# `x.sum(dim=1, keepdim=True)` keeps the dimension\n")
    monkeypatch.setattr(build, "SOLUTIONS", sol)
    assert {k for _, _, k in untaught(["99_probe"])} == {"dim", "keepdim"}
