"""ShardedRange: an ``IterableDataset`` over ``range(start, end)`` whose DataLoader workers each
yield only their share.

Subtle: every worker iterates its own copy, so without sharding each item arrives once per worker;
the shares must cover an uneven range, be fair, repeat in the next epoch (persistent workers
iterate the same object again), and ``get_worker_info()`` is None without workers. Workers are
simulated in this process (``_kit.as_worker``); where the start method is fork a probe also runs a
real ``DataLoader`` with 1 and 2 worker processes.
"""

from __future__ import annotations

import collections
import copy
import itertools
import math
import multiprocessing

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from ...answers.l04_data import ShardedRange
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from . import _kit

# --- reference: the solution notebook's answer, generated (imported above). The lesson's later
# cells use it through lesson_props, which re-exports this same object: a submitted prop is the
# course's own object to the instructor's judge (reference_answer), and the sandbox keeps it.


# --- cases
def _cases(r: Rand) -> Case:
    start = r.integer(-5, 20)
    return Case((start, start + r.integer(0, 23)))


EDGE_CASES = [Case((0, 7), label="range(0, 7): odd, not divisible by 2 or 3 workers"),
              Case((3, 3), label="an empty range")]


# --- run and probes
def _as_int(v) -> int:
    if isinstance(v, bool):
        raise TypeError
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, torch.Tensor) and v.numel() == 1 and not v.is_floating_point():
        return int(v)
    raise TypeError


def _items(iterable, cap: int, label: str) -> list[int]:
    got = list(itertools.islice(iter(iterable), cap + 1))
    if len(got) > cap:
        raise Incorrect("too_many_items", how=label, cap=cap)
    try:
        return [_as_int(v) for v in got]
    except TypeError:
        raise Incorrect("wrong_item_type") from None


def _judge_stream(got: list[int], start: int, end: int, num_workers: int, how: str) -> None:
    want = collections.Counter(range(start, end))
    have = collections.Counter(got)
    if have == want:
        return
    if set(have) - set(want):
        raise Incorrect("wrong_items", how=how)
    if num_workers > 1 and all(have[v] == num_workers for v in want):
        raise Incorrect("no_sharding", how=how, num_workers=num_workers)
    missing = sum(1 for v in want if have[v] == 0)
    dup = sum(1 for v in want if have[v] > 1)
    if missing and not dup:
        raise Incorrect("missing_items", how=how, missing=missing, size=end - start)
    raise Incorrect("duplicated_items", how=how, dup=dup, missing=missing)


def _same_next_epoch(first: list[int], second: list[int]) -> None:
    if sorted(first) != sorted(second):
        raise Incorrect("not_repeatable")


def _simulated_workers(ds, start: int, end: int, cap: int) -> None:
    for n in (1, 2, 3):
        epochs = []
        for k in range(n):
            worker_copy = copy.deepcopy(ds)
            with _kit.as_worker(k, n, 1234, worker_copy):
                epochs.append((_items(worker_copy, cap, f"In worker {k} of {n}"),
                               _items(worker_copy, cap, f"In worker {k} of {n}, second epoch")))
        _judge_stream([v for first, _ in epochs for v in first], start, end, n, f"With num_workers={n}")
        # a fair split: equal chunks rounded up, or rounded down with the remainder to one worker
        size = max(end - start, 0)
        fair = max(math.ceil(size / n), size // n + size % n)
        if any(len(first) > fair for first, _ in epochs):
            raise Incorrect("unbalanced_shards", n=n, got=max(len(first) for first, _ in epochs),
                            size=end - start, fair=fair)
        for first, second in epochs:
            _same_next_epoch(first, second)


def _run(answer, case: Case):
    _kit.clear_stale_worker_info()
    start, end = case.args
    ds = _kit.construct(answer, start, end)
    if not isinstance(ds, IterableDataset):
        raise Incorrect("not_iterable_dataset")
    cap = max(end - start, 0) + 1
    main_copy = copy.deepcopy(ds)
    try:
        got = _items(main_copy, cap, "Without workers")
    except (AttributeError, TypeError) as exc:
        if "NoneType" in str(exc):
            raise Incorrect("no_main_process_path") from None
        raise
    _judge_stream(got, start, end, 1, "Without workers")
    # a second epoch iterates the same object again (num_workers=0, or persistent workers)
    _same_next_epoch(got, _items(main_copy, cap, "In a second epoch without workers"))
    if _kit._CAN_SIMULATE:
        _simulated_workers(ds, start, end, cap)
    return True


PROBE_SEED = 4_000  # the probe's range: fixed, so the judge knows it without the executor's word


def _probe_range() -> tuple[str, int, int]:
    method = multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
    r = Rand(PROBE_SEED)
    start = r.integer(0, 10)
    return method, start, start + r.integer(5, 13)


def _real_workers_probe(answer, r: Rand) -> dict:
    """Iterate through a real DataLoader with 1 and 2 worker processes (fork start method only:
    under spawn/forkserver a notebook-defined class cannot reach the workers); the items each
    produced go to ``_real_workers_verdict`` (in the instructor's grader this runs next to the
    answer, which can rewrite it)."""
    method, start, end = _probe_range()
    if method != "fork":
        return {}
    streams = []
    for n in (1, 2):
        loader = DataLoader(answer(start, end), batch_size=None, num_workers=n, timeout=5)
        streams.append(_items(loader, (end - start) * n + 1, f"Through a DataLoader with {n} worker processes"))
    return {"streams": streams}


def _real_workers_verdict(j: int, ran) -> None:
    method, start, end = _probe_range()
    if method != "fork":
        return
    streams = ran.get("streams") if isinstance(ran, dict) else None
    if not isinstance(streams, list) or len(streams) != 2:
        streams = [[], []]  # (only a rewritten probe sends nothing: no item arrived)
    for n, got in zip((1, 2), streams):
        if not isinstance(got, list) or not all(type(v) is int for v in got):
            got = []
        _judge_stream(got, start, end, n, f"Through a real DataLoader with num_workers={n}")


# --- wrong answers
class _NoSharding(ShardedRange):
    def __iter__(self):
        return iter(range(self.start, self.end))


class _DropsRemainder(ShardedRange):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = (self.end - self.start) // info.num_workers
        lo = self.start + info.id * per_worker
        return iter(range(lo, lo + per_worker))


class _NoMainProcessPath(ShardedRange):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        return iter(range(self.start + info.id, self.end, info.num_workers))


class _Endless(ShardedRange):
    def __iter__(self):
        return itertools.count(self.start)


class _YieldsFloats(ShardedRange):
    def __iter__(self):
        return (float(v) for v in super().__iter__())


class _OffByOne(ShardedRange):
    def __iter__(self):
        return (v + 1 for v in super().__iter__())


class _Overlapping(ShardedRange):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end))  # later workers start later, but all overlap


class _ChunksUnfairly(ShardedRange):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None and info.id > 0:
            return iter(())  # worker 0 does all the work
        return iter(range(self.start, self.end))


class _ConsumesItself(ShardedRange):
    def __iter__(self):
        items, self.end = range(self.start, self.end), self.start
        return iter(items)


class _NotIterable(torch.utils.data.Dataset):
    def __init__(self, start, end):
        self.items = list(range(start, end))

    def __getitem__(self, i):
        return self.items[i]


# --- declaration
_STRIDE = "(a stride `range(start + id, end, num_workers)`"

register(Exercise(
    lesson=LESSON, name="ShardedRange", title="An IterableDataset that shards its items across workers",
    reference=ShardedRange, kind="any", run=_run, cases=_cases, n_random=6, edge_cases=EDGE_CASES,
    timeout=10.0,  # the probe starts real worker processes: seconds on a busy machine
    probes=[_real_workers_probe], finish_probe=_real_workers_verdict,
    mistakes=[
        Mistake("no_sharding", "{how} every item arrived {num_workers} times: each worker iterates its own "
                "copy of the dataset, so `__iter__` must yield only this worker's share (use "
                "`torch.utils.data.get_worker_info()`: `.id` and `.num_workers`).", _NoSharding,
                match_output=False),
        Mistake("missing_items", "{how} {missing} of the {size} items never arrived. When the range does not "
                f"divide evenly between workers, the shares must still cover all of it {_STRIDE} always does).",
                _DropsRemainder, match_output=False),
        Mistake("no_main_process_path", "With `num_workers=0` (or iterating the dataset directly) "
                "`get_worker_info()` returns None: handle that case by yielding the whole range.",
                _NoMainProcessPath, match_output=False),
        Mistake("duplicated_items", "{how} {dup} items arrived more than once and {missing} never: the workers' "
                "shares must not overlap and must cover the range.", _Overlapping, match_output=False),
        Mistake("unbalanced_shards", "With num_workers={n} one worker yielded {got} of the {size} items, more "
                "than its share (at most {fair}): \"let each copy yield only its share\", so the workers split "
                f"the work {_STRIDE} does).", _ChunksUnfairly, match_output=False),
        Mistake("not_repeatable", "Iterating the same dataset object a second time (the next epoch: with "
                "`num_workers=0`, or with `persistent_workers=True`) gave other items. Compute this worker's "
                "share inside `__iter__` from `self.start`, `self.end` and `get_worker_info()` without changing "
                "`self`, and return a fresh iterator every time.", _ConsumesItself, match_output=False),
        Mistake("too_many_items", "{how} your dataset yielded more than {cap} items, more than the whole "
                "range: does `__iter__` stop?", _Endless, match_output=False),
        Mistake("wrong_item_type", "Yield the integers themselves (Python ints), one at a time.",
                _YieldsFloats, match_output=False),
        Mistake("wrong_items", "{how} your dataset yielded values outside `range(start, end)`.", _OffByOne,
                match_output=False),
        Mistake("not_iterable_dataset", "Subclass `torch.utils.data.IterableDataset`: a DataLoader only "
                "treats those as streams (anything else is indexed with `dataset[i]`).", _NotIterable,
                match_output=False),
        Mistake("wrong_type", _kit.WRONG_TYPE, object.__new__(ShardedRange),  # an instance, built without
                match_output=False),  # calling the reference (cut where lesson 04 is graded)
    ],
    hints=[
        "Inside `__iter__`, `torch.utils.data.get_worker_info()` says whether the code runs in a worker "
        "process and, if so, which one and out of how many.",
        "In the main process yield every item; in a worker, yield a share of the items such that the "
        "workers' shares are disjoint and together cover the range (every k-th item, starting at a "
        "worker's own offset).",
    ],
))
