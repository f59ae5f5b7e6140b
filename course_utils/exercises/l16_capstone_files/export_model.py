"""export_model: export a Deployable (raw uint8 pixels in, logits out) with ``torch.export``, in
eval mode, with a dynamic batch, and save it to a ``.pt2`` file.

The decisions: the mode (the module arrives in training mode; a program exported so bakes
dropout and BatchNorm's batch statistics in), the example's dtype (uint8: the program checks it),
the example's batch (two or more: export treats a size of 1 as a constant) and the dynamic
batch dimension, and the file format (``torch.export.save``: ``torch.save`` of the module needs
the user's copy of our classes). The check loads the file with ``torch.export.load`` and runs it on
batches of 1, 3 and 17 raw images, against the module's eval-mode outputs.
"""

from __future__ import annotations

import copy
import os

import torch

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON, private_folder, small_classifier, uint8_images

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from ...answers.l16_capstone_files import export_model

SIZES = (1, 3, 17)
_TRUST_REFERENCE = True
"""The reference's outputs are, by definition, the module's eval-mode outputs: the check computes
those instead of exporting the reference too (tests/test_l16_capstone_files.py turns this off)."""
_calls = [0]


# --- cases
def _cases(r: Rand) -> Case:
    return Case((r.integer(0, 2**31), r.integer(2, 5), round(0.1 + 0.4 * float(r.rand(1)), 3), 0.3))


EDGE_CASES = [Case((11, 10, 0.2113, 0.2987), label="ten classes, the course's statistics")]


# --- run
class Small(torch.nn.Module):
    """(N, 1, 28, 28) floats, pooled to 8x8, into the small classifier."""

    def __init__(self, seed: int, k: int):
        super().__init__()
        self.pool = torch.nn.AdaptiveAvgPool2d(8)
        self.net = small_classifier(Rand(seed), k)

    def forward(self, x):
        return self.net(self.pool(x))


class Wrapped(torch.nn.Module):
    """Raw uint8 pixels in, as exercise 4's Deployable, but no Deployable: built from the case (not
    from a model, a mean and a std), and standardising with a scale and a shift. ``run`` runs in the
    instructor's sandbox, next to the answer, so a working ``Deployable(model, mean, std)`` here would
    be one a submission could import and hand in (tests/test_forgery.py)."""

    def __init__(self, seed: int, k: int, mean: float, std: float):
        super().__init__()
        self.model = Small(seed, k)
        self.scale, self.shift = 1 / (255.0 * std), mean / std

    def forward(self, images):
        return self.model(images.float() * self.scale - self.shift)


def _module(case: Case) -> torch.nn.Module:
    return Wrapped(*case.args).train()  # as it is right after training


def _run(answer, case: Case):
    module = _module(case)
    reference = copy.deepcopy(module).eval()
    batches = [uint8_images(Rand(n), n, 28) for n in SIZES]
    with torch.no_grad():
        expected = [reference(X) for X in batches]
    if _TRUST_REFERENCE and answer is export_model:
        module.eval()
        return expected
    _calls[0] += 1
    path = os.path.join(private_folder(), f"export-{os.getpid()}-{_calls[0]}.pt2")
    try:
        answer(module, path)
    except Exception as exc:  # noqa: BLE001
        if "specialized it to be a constant" in str(exc) or "0/1 specialized" in str(exc):
            raise Incorrect("example_of_one") from None
        raise
    if not os.path.exists(path):
        raise Incorrect("not_saved")
    try:
        program = torch.export.load(path)
    except Exception:  # noqa: BLE001
        raise Incorrect("not_a_program") from None
    finally:
        os.remove(path)
    run = program.module()
    outputs, refused = [], []
    for X in batches:
        try:
            with torch.no_grad():
                outputs.append(run(X))
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, RuntimeError) and "dtype mismatch" in str(exc):
                raise Incorrect("float_example") from None
            if "'Byte'" in str(exc) or "unsigned char" in str(exc):  # float-only ops met raw pixels
                raise Incorrect("exported_the_model") from None
            if not isinstance(exc, RuntimeError) and ("Guard failed" in str(exc) or "size()[0]" in str(exc)):
                refused.append(len(X))
                continue
            raise
    if refused:
        raise Incorrect("static_batch", refused=", ".join(map(str, refused)))
    if not all(torch.allclose(g, e, rtol=1e-4, atol=1e-5) for g, e in zip(outputs, expected)):
        raise Incorrect("exported_in_train_mode")
    return outputs


# --- wrong answers
_BATCH = ({0: torch.export.Dim("batch")},)


def _variant(deployable, path, *, eval_mode=True, example=None, dynamic_shapes=_BATCH, save=True):
    if eval_mode:
        deployable.eval()
    example = torch.zeros(2, 1, 28, 28, dtype=torch.uint8) if example is None else example
    program = torch.export.export(deployable, (example,), dynamic_shapes=dynamic_shapes)
    if save:
        torch.export.save(program, path)


def _inner_model(deployable, path):
    deployable.eval()
    program = torch.export.export(deployable.model, (torch.zeros(2, 1, 28, 28),), dynamic_shapes=_BATCH)
    torch.export.save(program, path)


def _torch_save(deployable, path):
    torch.save(deployable.eval(), path)


# --- declaration
register(Exercise(
    lesson=LESSON, name="export_model", title="Export in eval mode, uint8 in, any batch size, to a .pt2 file",
    reference=export_model, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run, n_random=1,
    arg_names=("model_seed", "classes", "mean", "std"),
    # an example drawn with torch.randint is a natural choice, and the program does not depend on its values
    uses_global_rng=True,
    timeout=30.0,  # the first export of a session compiles for seconds
    compare=Compare(rtol=1e-4, atol=1e-5),
    mistakes=[
        Mistake("exported_in_train_mode", "Your exported program does not compute what the model predicts in eval "
                "mode: it was exported in training mode, so dropout and BatchNorm's batch statistics are in the "
                "graph. Call `.eval()` before exporting.",
                lambda d, path: _variant(d, path, eval_mode=False), match_output=False),
        Mistake("static_batch", "Your program refused batches of {refused}: torch.export fixes every size of the "
                "example you do not declare dynamic. Declare dimension 0 dynamic (`dynamic_shapes=`).",
                lambda d, path: _variant(d, path, dynamic_shapes=None), match_output=False),
        Mistake("example_of_one", "Your example holds one image, and torch.export treats a size of 1 as a "
                "constant, so the batch cannot be dynamic. Export with an example of two or more images.",
                lambda d, path: _variant(d, path, example=torch.zeros(1, 1, 28, 28, dtype=torch.uint8)),
                match_output=False),
        Mistake("float_example", "Your program refuses uint8 images: it was exported with a float example, and an "
                "exported program checks its input's dtype. The module takes raw pixels: export with a "
                "`torch.uint8` example.",
                lambda d, path: _variant(d, path, example=torch.zeros(2, 1, 28, 28)), match_output=False),
        Mistake("exported_the_model", "Your program fails on uint8 pixels: you exported the model inside "
                "(`deployable.model`), which expects standardised floats. Export `deployable` itself, whose "
                "forward casts and standardises, with a `torch.uint8` example.", _inner_model, match_output=False),
        Mistake("not_a_program", "`torch.export.load` cannot read your file: save the `ExportedProgram` with "
                "`torch.export.save(program, path)` (`torch.save` of the module needs our classes to load).",
                _torch_save, match_output=False),
        Mistake("not_saved", "Nothing was written at `path`: save the program there with `torch.export.save`.",
                lambda d, path: _variant(d, path, save=False), match_output=False),
    ],
    hints=[
        "Four decisions: which mode to export in, what the example input looks like (its dtype, how many images), and "
        "which of its dimensions may change from one call to the next. What does a user of the file send?",
        "Export in eval mode, with an example like the raw pixels users send (uint8, 1x28x28 images, at least two of "
        "them: a size of 1 is taken as a constant), and declare the batch dimension, and only that one, dynamic. Save "
        "the exported program itself, so that loading it needs no class of ours.",
        "Look up `torch.export.export` (its `dynamic_shapes` argument), `torch.export.Dim`, `torch.export.save` and "
        "`nn.Module.eval`.",
    ],
))
