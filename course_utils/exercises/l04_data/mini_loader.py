"""MiniLoader: a DataLoader without workers, reproduced from the lost old loader's log (an inverse
problem). The notebook shows the labels of each batch the old loader yielded on ten items (in order,
drop_last, a generator without shuffle, two shuffled epochs from a generator seeded 3) and ``len``
before the first epoch, next to torch's DataLoader giving other orders; the learner works out the
rule: batches of ``dataset[i]`` in order or, with ``shuffle=True``, in the order of
``torch.randperm(len(dataset), generator=generator)`` drawn afresh each epoch; ``collate_fn``
(default ``default_collate``) on each list of items; ``drop_last`` and ``len``. Two epochs are
compared with the reference, and with shuffle=False the reference equals torch's DataLoader
(tests/test_l04_data.py holds both against DataLoader, and the notebook's log against the reference).

Subtle: an order drawn once in ``__init__`` (or from a generator cloned or reseeded each epoch)
repeats every epoch; ``len`` and the loop must agree about ``drop_last`` when n divides evenly and
when n < batch_size; a custom ``collate_fn`` gets the list of items, not the items one by one;
``len`` must work before the first epoch; some datasets yield dicts or triples (default_collate).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON, WRONG_TYPE, Pairs, labels_and_sizes, same_batches

# --- reference: the solution notebook's answer (generated from solutions/04_data.py)
from ...answers.l04_data import MiniLoader


from ._mini_loader_wrong import (  # the known-wrong answers, in their own file
    _CollatePerItem, _DropsAFullBatch, _GlobalShuffle, _KeepsLast, _LenAfterEpoch, _LenIgnoresDropLast,
    _NoIter, _NotCollated, _OrderOnce, _PairsOnlyCollate, _ShufflesWhenGivenAGenerator, _ThroughRandomSampler,
)


# --- cases
def _case(n: int, d: int, seed: int, **kw: Any) -> dict:
    return {"n": n, "d": d, "seed": seed, **kw}


def _cases(r: Rand) -> Case:
    n, bs = r.integer(0, 13), r.integer(1, 5)
    shuffle = r.choice([True, True, False])
    kw = _case(n, r.integer(1, 3), r.integer(0, 2**31), batch_size=bs, drop_last=r.choice([True, False]),
               shuffle=shuffle, collate=r.choice([False, False, True]),
               items=r.choice(["pair", "pair", "dict", "triple"]),
               generator=shuffle or r.choice([True, False]))
    return Case((), kw, show_inputs=True)


EDGE_CASES = [
    Case((), _case(10, 2, 1, batch_size=4, drop_last=False, shuffle=False, collate=False),
         label="10 items, batches of 4: the last batch has 2", show_inputs=True),
    Case((), _case(10, 2, 2, batch_size=4, drop_last=True, shuffle=False, collate=False),
         label="10 items, batches of 4, drop_last=True", show_inputs=True),
    Case((), _case(8, 1, 3, batch_size=4, drop_last=True, shuffle=True, collate=False),
         label="8 items, batches of 4 (no remainder), drop_last=True, shuffled", show_inputs=True),
    Case((), _case(3, 2, 4, batch_size=5, drop_last=True, shuffle=False, collate=False),
         label="3 items, batches of 5, drop_last=True: no batch at all", show_inputs=True),
    Case((), _case(7, 3, 5, batch_size=3, drop_last=False, shuffle=True, collate=True),
         label="7 items shuffled, a custom collate_fn", show_inputs=True),
    Case((), _case(5, 1, 6, batch_size=1, drop_last=False, shuffle=True, collate=False),
         label="batch_size=1, shuffled", show_inputs=True),
    Case((), _case(6, 2, 7, batch_size=4, drop_last=False, shuffle=False, collate=False, items="dict"),
         label='items are dicts {"x": tensor, "y": int}, no collate_fn', show_inputs=True),
    Case((), _case(5, 2, 8, batch_size=2, drop_last=False, shuffle=True, collate=False, items="triple"),
         label="items are (tensor, int, int) triples, no collate_fn", show_inputs=True),
    Case((), _case(9, 2, 9, batch_size=4, drop_last=False, shuffle=False, collate=False, generator=True),
         label="shuffle=False with a generator given: the items stay in order", show_inputs=True),
    Case((), _case(0, 2, 10, batch_size=3, drop_last=False, shuffle=True, collate=False),
         label="an empty dataset: no batch at all (as DataLoader)", show_inputs=True),
]


# --- run and probes
def _inputs(case: Case) -> tuple[Dataset, dict[str, Any]]:
    """The case's dataset and the loader's options."""
    kw = case.kwargs
    dataset = Pairs(kw["n"], kw["d"], kw["seed"], kw.get("items", "pair"))
    # a generator comes with every shuffled case and with some unshuffled ones (shuffle decides alone)
    generator = torch.Generator().manual_seed(kw["seed"] % 1000) if kw.get("generator", kw["shuffle"]) else None
    options: dict[str, Any] = {"batch_size": kw["batch_size"], "shuffle": kw["shuffle"], "drop_last": kw["drop_last"]}
    if kw["collate"]:
        options["collate_fn"] = labels_and_sizes
    if generator is not None:
        options["generator"] = generator
    return dataset, options


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): two epochs of its batches."""
    kw = case.kwargs
    items = kw.get("items", "pair")
    dataset, options = _inputs(case)
    if not callable(answer):
        raise Incorrect("wrong_type", given=f"a {type(answer).__name__}", what="class")
    loader = answer(dataset, **options)
    if not hasattr(loader, "__iter__"):
        raise Incorrect("not_iterable", got=type(loader).__name__)
    if not hasattr(type(loader), "__len__"):
        raise Incorrect("no_len")
    # len(loader) is needed before training (a schedule's total_steps, a progress bar)
    try:
        n_before = len(loader)
    except Exception as e:  # noqa: BLE001 - reported as the mistake it is
        raise Incorrect("len_before_iter", error=f"{type(e).__name__}: {e}") from None
    before = torch.get_rng_state()
    try:
        epochs = [list(loader) for _ in range(2)]
    except Exception as e:  # noqa: BLE001
        if items == "pair" or kw["collate"]:
            raise
        # the same loader on (tensor, int) pairs is checked by the other cases
        raise Incorrect("collate_only_pairs", error=f"{type(e).__name__}: {e}",
                        items=_ITEMS[items]) from None
    if kw["shuffle"] and not torch.equal(before, torch.get_rng_state()):
        raise Incorrect("global_rng")
    try:
        n_batches = len(loader)
    except TypeError:
        raise Incorrect("no_len") from None
    if n_before != n_batches:
        raise Incorrect("len_before_iter", error=f"it returned {n_before} then, {n_batches} after an epoch")
    if n_batches != len(epochs[0]):
        raise Incorrect("len_disagrees", got=n_batches, batches=len(epochs[0]))
    return {"epoch 1's batches": epochs[0], "epoch 2's batches": epochs[1]}


def _finish(data: Any, case: Case) -> Any:
    """The reference's half: a shuffled case's two epochs against the reference's."""
    if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in _EPOCHS):
        raise RuntimeError("the check of your answer sent back something unreadable")
    if case.kwargs["shuffle"]:
        dataset, options = _inputs(case)
        _check_shuffled_epochs([data[k] for k in _EPOCHS], dataset, options, case.kwargs["seed"] % 1000)
    return data


_EPOCHS = ("epoch 1's batches", "epoch 2's batches")


def _check_shuffled_epochs(epochs: list, dataset: Dataset, options: dict, seed: int) -> None:
    """The two shuffled epochs against the reference's, from a generator seeded alike."""
    expected = MiniLoader(dataset, **dict(options, generator=torch.Generator().manual_seed(seed)))
    want = [list(expected) for _ in range(2)]
    if same_batches(epochs[0], epochs[1]) and not same_batches(want[0], want[1]):
        raise Incorrect("same_order_every_epoch")
    # the first epoch right and the second not: the generator moved by more than one randperm
    # per epoch (a RandomSampler draws a second one)
    if same_batches(epochs[0], want[0]) and not same_batches(epochs[1], want[1]):
        raise Incorrect("extra_draws_per_epoch")


_ITEMS = {"dict": 'dicts `{"x": tensor, "y": int}`', "triple": "triples `(tensor, int, int)`"}


# --- declaration
register(Exercise(
    lesson=LESSON, name="MiniLoader",
    title="A lost loader reproduced from its log: batches, shuffle per epoch, drop_last",
    reference=MiniLoader, kind="class", cases=_cases, edge_cases=EDGE_CASES, run=_run, finish=_finish,
    n_random=12,
    preload=("torch.utils.data",),
    forbid=("torch.utils.data.DataLoader", "torch.utils.data.BatchSampler"),
    rule_text="Do not use `DataLoader` or `BatchSampler` inside it",
    mistakes=[
        Mistake("wrong_type", WRONG_TYPE, match_output=False),
        Mistake("kept_last", "With `drop_last=True` the last, incomplete batch must be left out.", _KeepsLast),
        Mistake("dropped_full_batch", "You dropped a complete batch: `drop_last` only leaves out a batch that "
                "has fewer than `batch_size` items (when the items divide evenly there is none).",
                _DropsAFullBatch),
        Mistake("same_order_every_epoch", "Your two epochs came out in the same order. A shuffling loader draws "
                "a new order each time an epoch starts, from the generator as it is then (so a seeded "
                "generator still gives a reproducible *sequence* of epochs).", _OrderOnce,
                match_output=False),
        Mistake("global_rng", "Your loader shuffled with the global random stream instead of the `generator` it "
                "was given, so the order cannot be reproduced from that generator (and it disturbs everybody "
                "else's random numbers).", _GlobalShuffle, match_output=False),
        Mistake("shuffled_unasked", "With `shuffle=False` the items come out in order, even when a "
                "`generator` is given: only `shuffle` asks for a random order (DataLoader behaves the same).",
                _ShufflesWhenGivenAGenerator),
        Mistake("extra_draws_per_epoch", "Your first epoch is right and your second is not: each epoch draws "
                "exactly one `torch.randperm(len(dataset), generator=generator)`. Something drew more from the "
                "generator (a `RandomSampler` does: it draws a second permutation each epoch), so the next "
                "epoch's order moved on.", _ThroughRandomSampler, match_output=False),
        Mistake("not_collated", "Your batches are lists of items; each list goes through the collate function "
                "(without one, `default_collate`), which turns it into batched tensors.", _NotCollated),
        Mistake("collated_per_item", "You collated the items one at a time; the collate function receives "
                "the whole list of a batch's items.", _CollatePerItem),
        Mistake("len_disagrees", "`len(loader)` is {got}, but an epoch yielded {batches} batches. The length "
                "is the number of batches, so it follows `drop_last` too.", _LenIgnoresDropLast,
                match_output=False),
        Mistake("not_iterable", "Your {got} object cannot be iterated: `for batch in loader` calls the "
                "loader's `__iter__`, once per epoch.", _NoIter, match_output=False),
        Mistake("no_len", "`len(loader)` failed: define `__len__` (the number of batches of an epoch).",
                match_output=False),
        Mistake("len_before_iter", "`len(loader)` right after the loader was made, before any epoch, failed "
                "or was wrong ({error}). The length is needed before training starts (a progress bar, a "
                "schedule's `total_steps=epochs * len(loader)`): compute it from `len(dataset)`, `batch_size` "
                "and `drop_last`, not from an epoch that ran.", _LenAfterEpoch, match_output=False),
        Mistake("collate_only_pairs", "Your loader failed on a dataset whose items are {items} ({error}). "
                "Without a `collate_fn` use `default_collate`: it batches any structure of items (pairs, "
                "triples, dicts, plain tensors); a stand-in written for `(tensor, int)` pairs does not.",
                _PairsOnlyCollate, match_output=False),
    ],
    hints=[
        "In the log, is the second shuffled epoch in the same order as the first? What do two random "
        "permutations of ten, drawn one after the other from a generator seeded 3, look like?",
        "Each epoch draws one new order from the generator it was given, when the epoch starts, and only "
        "when shuffling is asked for. The order is cut into batches of the batch size, the last one shorter "
        "unless drop_last leaves it out; the number of batches follows from the sizes alone, before any "
        "epoch. Without a collate function, batches are made the way DataLoader makes them.",
        "The names to look up: `torch.randperm` and its generator argument, the methods `__iter__` and "
        "`__len__`, `torch.utils.data.default_collate`.",
    ],
))
