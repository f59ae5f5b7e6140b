"""export_with_dynamic_batch: `torch.export` a model in evaluation mode with dimension 0 of its
input dynamic, so the exported program accepts any batch size.

Subtle: an export without `dynamic_shapes` works for the example's batch size only; one exported
in training mode bakes dropout and BatchNorm's batch statistics in; a bounded `Dim` refuses real
batches. The check runs the program on batches of 1, 64, 1000 and random sizes.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn.utils import skip_init

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import fill


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from .._references.l09_persistence import export_with_dynamic_batch


# --- cases
def _cases(r: Rand) -> Case:
    d, h, c = r.integer(2, 6), r.integer(3, 8), r.integer(2, 4)
    model = nn.Sequential(skip_init(nn.Linear, d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.5),
                          skip_init(nn.Linear, h, c))
    fill(model, r)
    with torch.no_grad():
        model[1].running_mean.copy_(r.randn(h))
        model[1].running_var.copy_(r.rand(h) + 0.5)
    model.train()  # as it is right after training
    return Case((model, r.randn(r.integer(2, 5), d)), {"other": (r.integer(6, 12), r.integer(2, 3))})


# --- run and probes
# The reference's outputs are, by definition, the model's outputs in evaluation mode, so the
# check computes those directly instead of exporting the reference too (an export costs ~0.06 s).
# tests/test_l09_persistence.py turns this off and runs the real reference export through the check.
_TRUST_REFERENCE = True


def _export(answer, model, example):
    try:
        program = answer(model, example)
    except Exception as exc:  # noqa: BLE001
        if "specialized it to be a constant" in str(exc):
            raise Incorrect("wrong_dynamic_dim") from None
        raise
    if not isinstance(program, torch.export.ExportedProgram):
        raise Incorrect("not_exported_program", got=type(program).__name__)
    return program.module()


def _run(answer, case: Case):
    model, example = case.args
    reference_model = copy.deepcopy(model).eval()
    # fixed sizes on top of the random ones, so no seed can skip a batch of one or a large batch
    sizes = list(case.kwargs["other"]) + [1, 64, 1000]
    with torch.no_grad():
        expected = [reference_model(Rand(n).randn(n, example.shape[1])) for n in sizes]
    if _TRUST_REFERENCE and answer is export_with_dynamic_batch:
        model.eval()  # what the reference does to its argument: the text allows switching to eval mode
        return expected
    module = _export(answer, model, example)
    outputs = []
    refused = []
    for n in sizes:
        X = Rand(n).randn(n, example.shape[1])
        try:
            got = module(X)
        except Exception as exc:  # noqa: BLE001
            if "Guard failed" in str(exc) or "size()[0]" in str(exc):
                refused.append(n)
                continue
            raise
        outputs.append(got)
    if refused and len(refused) == len(sizes) - sizes.count(example.shape[0]):
        raise Incorrect("static_batch", size=example.shape[0], refused=", ".join(map(str, refused)))
    if refused:
        raise Incorrect("bounded_batch", refused=", ".join(map(str, refused)))
    for n, got in zip(sizes, outputs):
        if not torch.equal(got, module(Rand(n).randn(n, example.shape[1]))):
            raise Incorrect("exported_in_train_mode")  # dropout: two calls, two outputs
    if not all(torch.allclose(g, e, rtol=1e-5, atol=1e-6) for g, e in zip(outputs, expected)):
        raise Incorrect("exported_in_train_mode")
    return [got.detach() for got in outputs]


# --- wrong answers
_DYNAMIC_BATCH = ({0: torch.export.Dim("batch")},)


def _variant(model, example_input, *, eval_mode=True, dynamic_shapes=_DYNAMIC_BATCH):
    """The reference with another mode or other dynamic shapes."""
    if eval_mode:
        model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=dynamic_shapes)


def _module_only(model, example_input):
    return export_with_dynamic_batch(model, example_input).module()


# --- declaration
register(Exercise(
    lesson=LESSON, name="export_with_dynamic_batch", title="Export a model that accepts any batch size",
    reference=export_with_dynamic_batch,
    cases=_cases,
    n_random=2,
    timeout=15.0,
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("static_batch", "Your exported program only accepts batches of {size}, the example's size; "
                "batches of {refused} were refused. Mark dimension 0 as dynamic: "
                "`dynamic_shapes=({0: torch.export.Dim('batch')},)`.", lambda model, example_input:
                _variant(model, example_input, dynamic_shapes=None), match_output=False),
        Mistake("exported_in_train_mode", "Your exported model does not compute what the model computes in "
                "evaluation mode: it was exported in training mode, so dropout (and BatchNorm's batch "
                "statistics) are baked in. Call `model.eval()` before exporting.",
                lambda model, example_input: _variant(model, example_input, eval_mode=False), match_output=False),
        Mistake("not_exported_program", "Return the `ExportedProgram` that `torch.export.export` gives you (you "
                "returned a {got}); it is what `torch.export.save` writes to a .pt2 file.", _module_only,
                match_output=False),
        Mistake("wrong_dynamic_dim", "torch.export refused your dynamic dimension because the model needs that "
                "size to be fixed. The batch is dimension 0 of the input: `dynamic_shapes=({0: batch},)`.",
                lambda model, example_input: _variant(model, example_input,
                                                      dynamic_shapes=({1: torch.export.Dim("batch")},)),
                match_output=False),
        Mistake("bounded_batch", "Your exported program refused batches of {refused} but accepts others: the "
                "dynamic batch dimension has bounds too tight for real use (`Dim('batch', min=..., max=...)`). "
                "Mark the batch dynamic without such limits: `torch.export.Dim('batch')`.",
                lambda model, example_input: _variant(model, example_input,
                                                      dynamic_shapes=({0: torch.export.Dim("batch", max=5)},)),
                match_output=False),
    ],
    hints=[
        "Put the model in evaluation mode first: `model.eval()`.",
        "`batch = torch.export.Dim('batch')` names a dynamic size; `dynamic_shapes=({0: batch},)` says "
        "that dimension 0 of the first input may vary.",
        "`return torch.export.export(model, (example_input,), dynamic_shapes=({0: batch},))`.",
    ],
))
