"""median_time: time one call honestly on an asynchronous device: warm up untimed, synchronize
before every clock reading, report the median of the timed calls.

Subtle: the check replaces the clocks (``time.perf_counter`` and friends) with a simulated
device's clock. A call only queues its work; ``synchronize()`` runs the queue. Any clock reading
taken while work is still queued is a lie (it would miss or misplace that work), so it fails.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import time
import timeit

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON


# --- reference: the solution notebook's answer, generated from solutions/10_performance.py
from ...answers.l10_performance import median_time


# --- cases
def _cases(r: Rand) -> Case:
    warmup, repeats = r.integer(1, 3), r.choice([3, 4, 5, 6, 7])
    # the warm-up calls are slow (allocation, kernel selection); the timed ones vary
    work = [r.uniform(0.05, 0.2) for _ in range(warmup)] + [r.uniform(0.001, 0.01) for _ in range(repeats + 2)]
    return Case((warmup, repeats), {"work": work}, show_inputs=True)


def _case(work: list[float], warmup: int, repeats: int, label: str) -> Case:
    return Case((warmup, repeats), {"work": work}, label=label, show_inputs=True)


_EDGE = [_case([0.5, 0.3, 0.004, 0.002, 0.009, 0.003, 0.007], 2, 5, "2 slow warm-up calls, then 5 timed"),
         _case([0.2, 0.01], 1, 1, "1 warm-up call, 1 timed call"),
         _case([0.4, 0.006, 0.002, 0.009, 0.003, 0.1], 1, 4, "1 warm-up call, then 4 timed (an even number)"),
         _case([0.004, 0.008, 0.002, 0.1], 0, 3, "no warm-up, 3 timed calls")]


# --- run and probes
class _Device:
    """A simulated asynchronous device with its own clock (seconds)."""

    LAUNCH = 1e-6  # what queueing one call costs the caller

    def __init__(self, work: list[float]) -> None:
        self.work, self.now, self.queued, self.calls, self.unsynced_reads = work, 0.0, 0.0, 0, 0

    def fn(self) -> None:
        self.now += self.LAUNCH
        self.queued += self.work[min(self.calls, len(self.work) - 1)]
        self.calls += 1

    def synchronize(self) -> None:
        self.now += self.queued
        self.queued = 0.0

    def clock(self) -> float:
        if self.queued:
            self.unsynced_reads += 1
        return self.now


_CLOCKS = ("perf_counter", "monotonic", "time")


@contextlib.contextmanager
def _clocks(device: _Device, answer):
    """The simulated clock in place of time's wall clocks, timeit's timer, and any of them the
    answer's module bound to a name of its own (``from time import perf_counter``)."""
    fake_ns = lambda: round(device.clock() * 1e9)  # noqa: E731
    fakes = {getattr(time, n): device.clock for n in _CLOCKS}
    fakes.update({getattr(time, n + "_ns"): fake_ns for n in _CLOCKS})
    saved = {n: getattr(time, n) for n in _CLOCKS + tuple(n + "_ns" for n in _CLOCKS)}
    saved_timer = timeit.default_timer
    module = getattr(answer, "__globals__", None)
    bound = {k: v for k, v in module.items() if _is_clock(v, fakes)} if isinstance(module, dict) else {}
    try:
        for n, f in saved.items():
            setattr(time, n, fakes[f])
        timeit.default_timer = device.clock
        for k, v in bound.items():
            module[k] = fakes[v]  # type: ignore[index]
        yield
    finally:
        for n, f in saved.items():
            setattr(time, n, f)
        timeit.default_timer = saved_timer
        for k, v in bound.items():
            module[k] = v  # type: ignore[index]


def _is_clock(value, fakes: dict) -> bool:
    try:
        return value in fakes
    except Exception:  # noqa: BLE001 - unhashable, or a __hash__/__eq__ that raises
        return False


def _run(answer, case: Case):
    warmup, repeats = case.args
    work = case.kwargs["work"]
    device = _Device(list(work))
    with _clocks(device, answer):
        got = answer(device.fn, device.synchronize, warmup=warmup, repeats=repeats)
    if device.unsynced_reads:
        raise Incorrect("clock_not_synchronized", reads=device.unsynced_reads)
    if warmup and device.calls == repeats:
        raise Incorrect("no_warmup", warmup=warmup)
    if device.calls != warmup + repeats:
        raise Incorrect("call_count", calls=device.calls, warmup=warmup, repeats=repeats)
    if repeats % 2 == 0 and _one_of_the_middle_two(got, work[warmup:warmup + repeats]):
        raise Incorrect("even_median", repeats=repeats)
    return got


def _one_of_the_middle_two(got, work: list[float]) -> bool:
    """Whether ``got`` is one of the two middle durations instead of their mean."""
    try:
        value = float(got)
    except Exception:  # noqa: BLE001 - not a number: the comparison reports it
        return False
    durations = sorted(_Device.LAUNCH + w for w in work)
    middle = durations[len(durations) // 2 - 1:len(durations) // 2 + 1]
    return any(math.isclose(value, m, rel_tol=1e-6) for m in middle)


# --- wrong answers
def _variant(fn, synchronize, warmup=2, repeats=5, *, sync_before=True, sync_after=True, warm=True,
             reduce=statistics.median):
    for _ in range(warmup if warm else 0):
        fn()
    times = []
    for _ in range(repeats):
        if sync_before:
            synchronize()
        start = time.perf_counter()
        fn()
        if sync_after:
            synchronize()
        times.append(time.perf_counter() - start)
    return reduce(times)


def _total(fn, synchronize, warmup=2, repeats=5):
    for _ in range(warmup):
        fn()
    synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    synchronize()
    return time.perf_counter() - start  # all calls together, not one


def _twice(fn, synchronize, warmup=2, repeats=5):
    return _variant(lambda: (fn(), fn()), synchronize, warmup, repeats) / 2


# --- declaration
register(Exercise(
    lesson=LESSON, name="median_time", title="Time a call honestly: warm up, synchronize, median",
    reference=median_time,
    cases=_cases,
    edge_cases=_EDGE,
    n_random=6,
    run=_run,
    arg_names=["warmup", "repeats"],
    compare=Compare(rtol=1e-6, atol=1e-9),
    mistakes=[
        Mistake("clock_not_synchronized", "{reads} of your clock readings were taken while the device still had "
                "queued work: a reading then misses work that has not run yet, or counts work of an earlier call "
                "later. Every clock reading must come after everything queued before it has finished.",
                functools.partial(_variant, sync_before=False), match_output=False),
        Mistake("no_warmup", "Your function timed the very first calls, which pay one-time costs (here they are "
                "{warmup} slow calls). Run the untimed warm-up calls first.",
                functools.partial(_variant, warm=False), match_output=False),
        Mistake("call_count", "`fn` was called {calls} times; with warmup={warmup} and repeats={repeats} it "
                "should run warmup + repeats times, each timed call on its own.", _twice, match_output=False),
        Mistake("mean_not_median", "You returned the mean of the timed calls. The task asks for the median, "
                "which one slow call (another program, a garbage collection) cannot drag up.",
                functools.partial(_variant, reduce=statistics.fmean)),
        Mistake("even_median", "With {repeats} timed calls (an even number) there is no single middle value: the "
                "median is the mean of the two middle ones, and you returned one of them (`sorted(times)[n // 2]`, "
                "or `torch.median`, which returns the lower one).",
                functools.partial(_variant, reduce=lambda t: sorted(t)[len(t) // 2]), match_output=False),
        Mistake("total_time", "You returned the time of all timed calls together. Return the median time of ONE "
                "call.", _total),
        Mistake("min_not_median", "You returned the fastest timed call. The task asks for the median (a typical "
                "call), not the best case.", functools.partial(_variant, reduce=min)),
    ],
    hints=[
        "A clock reading is only honest if the device has nothing left to do at that moment. When is that true, "
        "and what makes it true?",
        "Two readings per timed call, and each needs the queue to be empty: the one at the start (the warm-up "
        "calls may still be running) and the one at the end (the timed call may still be running).",
        "Collect the timed durations in a list and take its middle value; the warm-up calls are not in the list.",
    ],
))
