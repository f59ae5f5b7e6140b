"""export_with_dynamic_batch: `torch.export` a model in evaluation mode with its input's batch
dimension (0) dynamic, so the exported program accepts any batch size.

The learner decides which dimension varies (inputs are (N, F) or (N, C, L); the weights fix the
others), the mode (the models arrive in training mode) and what to do with an example of one
sample (export treats a size of 1 as a constant: show it a batch of 2 or more).
Subtle: an export without `dynamic_shapes` works for the example's batch size only; one exported
in training mode bakes dropout and BatchNorm's batch statistics in; a bounded `Dim` refuses real
batches (the tutorials' `max=1024` too). The check runs the program on batches of 1, 64, 1000, 10001
(above any round bound: 1024 ... 8192, 10000) and random sizes.
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
from ...answers.l09_persistence import export_with_dynamic_batch


# --- cases
def _trained(model: nn.Module, r: Rand) -> nn.Module:
    fill(model, r)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.copy_(r.randn(m.num_features))
                m.running_var.copy_(r.rand(m.num_features) + 0.5)
    return model.train()  # as it is right after training


def _features_case(r: Rand, n: int) -> Case:
    """A batch of feature vectors (N, F)."""
    d, h, c = r.integer(2, 6), r.integer(3, 8), r.integer(2, 4)
    model = nn.Sequential(skip_init(nn.Linear, d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.5),
                          skip_init(nn.Linear, h, c))
    return Case((_trained(model, r), r.randn(n, d)), {"other": (r.integer(6, 12), r.integer(2, 3))})


def _signals_case(r: Rand, n: int) -> Case:
    """A batch of 1-D signals (N, C, L) whose flattened features feed a Linear: C and L are fixed."""
    ch, length, h, k, c = r.integer(1, 3), r.integer(5, 9), r.integer(2, 4), 3, r.integer(2, 4)
    model = nn.Sequential(skip_init(nn.Conv1d, ch, h, k), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.5),
                          nn.Flatten(), skip_init(nn.Linear, h * (length - k + 1), c))
    return Case((_trained(model, r), r.randn(n, ch, length)), {"other": (r.integer(6, 12), r.integer(2, 3))})


def _cases(r: Rand) -> Case:
    return r.choice([_features_case, _signals_case])(r, r.integer(1, 5))


_EDGE_CASES = [
    Case(_features_case(Rand(91), 1).args, _features_case(Rand(91), 1).kwargs,
         label="feature vectors (N, F), an example of ONE sample"),
    Case(_signals_case(Rand(92), 3).args, _signals_case(Rand(92), 3).kwargs,
         label="signals (N, C, L), an example of 3 samples"),
]


# --- run and probes
# The reference's outputs are, by definition, the model's outputs in evaluation mode, so the
# check computes those directly instead of exporting the reference too (an export costs ~0.06 s).
# tests/test_l09_persistence.py turns this off and runs the real reference export through the check.
_TRUST_REFERENCE = True


def _export(answer, model, example):
    try:
        program = answer(model, example)
    except Exception as exc:  # noqa: BLE001
        if "specialized it to be a constant (1)" in str(exc) or "0/1 specialized" in str(exc):
            raise Incorrect("example_of_one") from None
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
    # (10001: above every round bound a learner might copy, 1024 in torch.export's tutorials ... 10000)
    sizes = list(case.kwargs["other"]) + [1, 64, 1000, 10001]
    sample = tuple(example.shape[1:])
    with torch.no_grad():
        expected = [reference_model(Rand(n).randn(n, *sample)) for n in sizes]
    if _TRUST_REFERENCE and answer is export_with_dynamic_batch:
        model.eval()  # what the reference does to its argument: the text allows switching to eval mode
        return expected
    module = _export(answer, model, example)
    outputs = []
    refused = []
    for n in sizes:
        X = Rand(n).randn(n, *sample)
        try:
            got = module(X)
        except Exception as exc:  # noqa: BLE001
            if "Guard failed" in str(exc) or "size()[0]" in str(exc):
                refused.append(n)
                continue
            raise
        outputs.append(got)
    accepted = {n for n in sizes if n not in refused}
    if refused and len(accepted) <= 1:  # one size only: a static program
        size = accepted.pop() if accepted else "a single size"
        if size == 1 and example.shape[0] == 1:
            raise Incorrect("example_of_one", refused=", ".join(map(str, refused)))
        raise Incorrect("static_batch", size=size, refused=", ".join(map(str, refused)))
    if refused:
        raise Incorrect("bounded_batch", refused=", ".join(map(str, refused)))
    for n, got in zip(sizes, outputs):
        if not torch.equal(got, module(Rand(n).randn(n, *sample))):
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
    if example_input.shape[0] < 2:
        example_input = torch.cat([example_input, example_input])
    return torch.export.export(model, (example_input,), dynamic_shapes=dynamic_shapes)


def _module_only(model, example_input):
    return export_with_dynamic_batch(model, example_input).module()


def _auto_on_the_example(model, example_input):
    """Dim.AUTO on the batch, the example as given: an example of one sample exports a static program."""
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: torch.export.Dim.AUTO},))


# --- declaration
register(Exercise(
    lesson=LESSON, name="export_with_dynamic_batch", title="Export a model that accepts any batch size",
    reference=export_with_dynamic_batch,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    n_random=1,  # the two fixed cases cover both kinds of model; each case exports once
    timeout=30.0,  # the first export of a session compiles for seconds (15 s seen on a loaded machine)
    run=_run,
    compare=Compare(rtol=1e-5, atol=1e-6),
    # the hint invites building another example from the given one: `torch.randn(n, ...)` is the
    # obvious way, and the exported program does not depend on the values (red team s20)
    uses_global_rng=True,
    mistakes=[
        Mistake("static_batch", "Your exported program only accepts batches of {size}, the size it was exported with; "
                "batches of {refused} were refused. torch.export fixes every dimension of the example that you "
                "do not declare dynamic.", lambda model, example_input:
                _variant(model, example_input, dynamic_shapes=None), match_output=False),
        Mistake("example_of_one", "Your example holds a single sample, and torch.export treats a dimension of "
                "size 0 or 1 as a constant (broadcasting behaves differently there), so it cannot learn from "
                "this example that the batch varies: it either refuses to mark it dynamic or exports a program "
                "for batches of one only. What example could you export with instead?",
                _auto_on_the_example, match_output=False),
        Mistake("exported_in_train_mode", "Your exported model does not compute what the trained model predicts: "
                "it was exported while the model was in training mode, so dropout (and BatchNorm's batch "
                "statistics) are baked into the graph.",
                lambda model, example_input: _variant(model, example_input, eval_mode=False), match_output=False),
        Mistake("not_exported_program", "Return the `ExportedProgram` that `torch.export.export` gives you (you "
                "returned a {got}); it is what `torch.export.save` writes to a .pt2 file.", _module_only,
                match_output=False),
        Mistake("wrong_dynamic_dim", "torch.export refused a dimension you marked dynamic, because the model "
                "needs that size fixed: the weights of a layer are built for it. Which dimension counts the "
                "samples?",
                lambda model, example_input: _variant(model, example_input,
                                                      dynamic_shapes=({1: torch.export.Dim("batch")},)),
                match_output=False),
        Mistake("bounded_batch", "Your exported program refused batches of {refused} but accepts others: the "
                "dynamic batch dimension has bounds too tight for real use (a `min` or `max` on the `Dim`).",
                lambda model, example_input: _variant(model, example_input,
                                                      dynamic_shapes=({0: torch.export.Dim("batch", max=5)},)),
                match_output=False),
    ],
    hints=[
        "Three decisions: the mode the graph should record, which dimension of the input counts the "
        "samples (the same in every model of the check), and whether the example as given can show "
        "torch.export that this dimension varies.",
        "`dynamic_shapes` names, per input, the dimensions that vary, as the sequence-length example above "
        "does for its time dimension. torch.export treats a size of 1 in the example as a constant; the "
        "example is only a sample of the shapes, so you may build another one from it.",
    ],
))
