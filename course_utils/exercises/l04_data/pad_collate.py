"""pad_collate: a ``collate_fn`` that pads ragged ``(tokens, label)`` pairs into one batch.

Subtle: pad only to the longest sequence *of this batch*, batch first, with the course's ``PAD``;
return the lengths (int64) and the labels stacked into one tensor; leave the ``batch`` list alone.
"""

from __future__ import annotations

import torch

from course_utils.datasets import PAD
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the notebook's answer (generated from solutions/04_data.py)
from ...answers.l04_data import pad_collate


# --- cases
def _cases(r: Rand) -> Case:
    b = r.integer(1, 6)
    batch = [(torch.randint(1, 20, (r.integer(1, 9),), generator=r.torch),
              torch.tensor(r.integer(0, 1))) for _ in range(b)]
    return Case((batch,))


EDGE_CASES = [
    Case(([(torch.tensor([5, 6, 7]), torch.tensor(1)), (torch.tensor([8]), torch.tensor(0))],),
         label="lengths 3 and 1", show_inputs=True),
    Case(([(torch.tensor([4, 4]), torch.tensor(0))],), label="a batch of one"),
]


# --- run and probes
def _run(answer, case: Case):
    (batch,) = case.args
    given = list(batch)
    out = answer(given)
    if len(given) != len(batch) or any(a is not b for a, b in zip(given, batch)):
        raise Incorrect("mutated_input")
    return out


# --- wrong answers
def _not_batch_first(batch):
    padded, lengths, labels = pad_collate(batch)
    return padded.T, lengths, labels


def _fixed_length(batch, max_len=12):
    padded, lengths, labels = pad_collate(batch)
    return torch.nn.functional.pad(padded, (0, max_len - padded.shape[1]), value=PAD), lengths, labels


def _no_lengths(batch):
    padded, _, labels = pad_collate(batch)
    return padded, labels


def _labels_list(batch):
    padded, lengths, _ = pad_collate(batch)
    return padded, lengths, [label for _, label in batch]


def _pops_the_batch(batch):
    out = pad_collate(batch)
    batch.pop()
    return out


# --- declaration
register(Exercise(
    lesson=LESSON, name="pad_collate", title="A collate_fn that pads ragged sequences",
    reference=pad_collate, cases=_cases, run=_run, arg_names=["batch"], edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("not_batch_first", "Your padded tensor is (longest, batch): `pad_sequence` puts time first "
                "unless you pass `batch_first=True`.", _not_batch_first),
        Mistake("fixed_length", "You pad to a fixed length; pad only to the longest sequence *in this "
                "batch*, which saves work on batches of short sequences.", _fixed_length),
        Mistake("no_lengths", "Return three things: the padded tokens, the lengths (int64 tensor) and the "
                "labels. Without the lengths a model cannot tell padding from tokens.", _no_lengths),
        Mistake("labels_not_stacked", "The labels must be one tensor of shape (batch,): `torch.stack` the "
                "0-dim label tensors.", _labels_list),
        # raised by `_run` for the list; with match_output left True the runner keeps its own generic
        # message for tensors of the batch changed in place (an example that raises Incorrect is
        # never matched by output)
        Mistake("mutated_input", "Your function changed the list `batch` it was given (`pop`, `del`, "
                "`sort`, assigning items): read it without modifying it, the DataLoader may still use it.",
                _pops_the_batch),
    ],
    hints=[
        "`batch` is a list of `(tokens, label)` pairs: separate the sequences from the labels first.",
        "Pad the sequences to the longest one with the padding value, batch dimension first "
        "(`torch.nn.utils.rnn` has a helper); record each sequence's length before padding; stack the "
        "labels.",
    ],
))
