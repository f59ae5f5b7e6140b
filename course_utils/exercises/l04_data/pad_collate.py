"""pad_collate: a ``collate_fn`` that pads ragged ``(tokens, label)`` pairs into one batch.

An inverse problem, not a transcription: the notebook prints two batches in the target format (no
recipe), and the learner reads off the decisions: batch first, as wide as the longest sequence *of
this batch*, tokens first and then ``PAD``, the true lengths (int64, which a model needs to ignore
the padding) and the labels stacked into one tensor, rows in the items' order; the ``batch`` list
is left alone. Each wrong reading is named from the answer's own output and the batch (no
reference needed): padding on the left, another fill value, rows reordered, lengths of the padded
rows.
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
def _diagnose(batch: list, out) -> None:
    """Name a wrong reading of the format from the output and the batch alone; silent otherwise
    (then the comparison with the reference reports what differs)."""
    if not (isinstance(out, (tuple, list)) and len(out) == 3 and all(isinstance(t, torch.Tensor) for t in out)):
        return
    padded, lengths, _ = out
    seqs = [tokens for tokens, _ in batch]
    true_lengths = [len(t) for t in seqs]
    width = max(true_lengths)
    if padded.dim() != 2 or tuple(padded.shape) != (len(seqs), width):
        return
    if lengths.dim() == 2 and tuple(lengths.shape) == tuple(padded.shape):
        raise Incorrect("mask_not_lengths")  # (its dtype, bool, would otherwise be named first)
    if len(set(true_lengths)) > 1 and lengths.tolist() == [width] * len(seqs):
        raise Incorrect("lengths_of_padded")
    rows = [tuple(row.tolist()) for row in padded]
    expected = [tuple(t.tolist()) + (PAD,) * (width - len(t)) for t in seqs]
    if rows == expected:
        return
    if all(row[: len(t)] == tuple(t.tolist()) for row, t in zip(rows, seqs)):
        raise Incorrect("pad_value", got=next(v for row, t in zip(rows, seqs) for v in row[len(t):] if v != PAD))
    if all(row[width - len(t):] == tuple(t.tolist()) for row, t in zip(rows, seqs)):
        raise Incorrect("left_padded")
    if sorted(rows) == sorted(expected):
        raise Incorrect("sorted_rows")


def _run(answer, case: Case):
    (batch,) = case.args
    given = list(batch)
    out = answer(given)
    if len(given) != len(batch) or any(a is not b for a, b in zip(given, batch)):
        raise Incorrect("mutated_input")
    _diagnose(batch, out)
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


def _left_padded(batch):
    padded, lengths, labels = pad_collate([(t.flip(0), y) for t, y in batch])
    return padded.flip(1), lengths, labels


def _pads_with_minus_one(batch):
    padded, lengths, labels = pad_collate(batch)
    return padded.masked_fill(torch.arange(padded.shape[1]) >= lengths[:, None], -1), lengths, labels


def _longest_first(batch):
    return pad_collate(sorted(batch, key=lambda item: len(item[0]), reverse=True))


def _lengths_after_padding(batch):
    padded, _, labels = pad_collate(batch)
    return padded, torch.tensor([len(row) for row in padded]), labels


def _mask_not_lengths(batch):
    padded, lengths, labels = pad_collate(batch)
    return padded, torch.arange(padded.shape[1]) < lengths[:, None], labels


def _pops_the_batch(batch):
    out = pad_collate(batch)
    batch.pop()
    return out


# --- declaration
register(Exercise(
    lesson=LESSON, name="pad_collate", title="A collate_fn that pads ragged sequences",
    reference=pad_collate, cases=_cases, run=_run, arg_names=["batch"], edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("not_batch_first", "Your padded tensor is (longest, batch): one *column* per sequence. The "
                "target has one row per sequence; the padding helper puts time first unless told otherwise.",
                _not_batch_first),
        Mistake("fixed_length", "Your batches are always as wide as the longest sequence there can be. Look "
                "at the two target batches again: how wide is each, and why?", _fixed_length),
        Mistake("left_padded", "Your padding comes before the tokens. In the target each row starts with its "
                "tokens and the padding fills the end.", _left_padded, match_output=False),
        Mistake("pad_value", "You fill the gaps with {got}. The target fills them with the padding token, "
                "which a model (its embedding, its mask) recognises as padding.", _pads_with_minus_one,
                match_output=False),
        Mistake("sorted_rows", "Your rows are the right sequences in another order. Row i of a batch must be "
                "item i, as the default collate keeps it (the labels, the lengths and anything that maps "
                "predictions back to items rely on it).", _longest_first, match_output=False),
        Mistake("lengths_of_padded", "Every length you return is the width of the padded batch: you measured "
                "the rows after padding. The lengths say where each sequence's own tokens end.",
                _lengths_after_padding, match_output=False),
        Mistake("mask_not_lengths", "Your second part is a mask, one entry per position of the padded batch. "
                "In the target it holds one number per sequence: count the entries of the second part in the two "
                "target batches, and compare them with each row's tokens.", _mask_not_lengths, match_output=False),
        Mistake("no_lengths", "Your batch has two parts; the target has three. What is the second one, and "
                "how could a model tell padding from tokens without it?", _no_lengths),
        Mistake("labels_not_stacked", "The labels must be one tensor of shape (batch,), not a list of "
                "0-dim tensors.", _labels_list),
        # raised by `_run` for the list; with match_output left True the runner keeps its own generic
        # message for tensors of the batch changed in place (an example that raises Incorrect is
        # never matched by output)
        Mistake("mutated_input", "Your function changed the list `batch` it was given (`pop`, `del`, "
                "`sort`, assigning items): read it without modifying it, the DataLoader may still use it.",
                _pops_the_batch),
    ],
    hints=[
        "Compare the two target batches with each other and with items 4 and 10: what sets a batch's width, "
        "which end of a row holds the tokens, and what are the numbers of the second part?",
        "Each row is one item, in order, its tokens first and the padding token after them, up to the longest "
        "sequence of this batch. The second part counts each sequence's own tokens, measured before "
        "padding; the third gathers the labels into one tensor.",
    ],
))
