"""WindowDataset: a sliding-window ``Dataset`` over a 1-D series (item ``i`` is ``(x, y)``).

Subtle: the target is ``horizon`` steps after the window's *last* value (off-by-one), the length
counts only windows whose target still fits, and it is 0 (never negative) for a short series.
Horizon-1 cases are built without the argument, so a wrong default is caught too.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import WRONG_TYPE, construct


# --- reference: the notebook's answer (generated from solutions/04_data.py)
from ...answers.l04_data import WindowDataset


# --- cases
def _cases(r: Rand) -> Case:
    window, horizon = r.integer(1, 6), r.integer(1, 3)
    return Case((r.randn(r.integer(window + horizon + 1, 40)), window, horizon))


EDGE_CASES = [
    Case((torch.arange(8.0), 3, 1), label="series 0..7, window 3, horizon 1", show_inputs=True),
    Case((torch.arange(10.0), 2, 3), label="series 0..9, window 2, horizon 3", show_inputs=True),
    Case((torch.arange(5.0), 4, 1), label="only one window fits"),
    # "the number of windows whose target still lies inside the series" is 0 here, not -2
    Case((torch.arange(3.0), 4, 1), label="a series of 3 values, window 4: no window fits"),
]


# --- run and probes
def _length(ds, series, window: int, horizon: int) -> int:
    facts = dict(length=len(series), window=window, horizon=horizon)
    try:
        n = len(ds)
    except ValueError as exc:  # Python refuses a negative __len__
        if "should return >= 0" not in str(exc):
            raise
        raise Incorrect("negative_len", **facts) from None
    want = max(0, len(series) - window - horizon + 1)
    if n == want + 1:
        raise Incorrect("len_too_long", n=n, **facts)
    if n == want - 1:
        raise Incorrect("len_too_short", n=n, **facts)
    if n != want:
        raise Incorrect("wrong_len", n=n, **facts)
    return n


_DATASET = Expect("not_a_dataset", "a `torch.utils.data.Dataset`", Dataset, said="Calling your class gave",
                  advice="Keep the base class `WindowDataset(Dataset)`, and compute items in `__getitem__`.")


def _run(answer, case: Case):
    series, window, horizon = case.args
    # horizon 1 is the default: build those cases without it, so a wrong default is caught too
    ds = construct(answer, series, window) if horizon == 1 else construct(answer, series, window, horizon)
    if horizon == 1 and getattr(ds, "horizon", 1) != 1:
        raise Incorrect("wrong_default_horizon")
    _DATASET.check(ds)
    if not (hasattr(ds, "__len__") and hasattr(ds, "__getitem__")):
        raise Incorrect("no_len", got=type(ds).__name__)
    xs, ys = [], []
    for i in range(_length(ds, series, window, horizon)):
        item = ds[i]
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise Incorrect("item_not_pair", i=i, got=type(item).__name__)
        x, y = item
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            raise Incorrect("item_not_tensor", i=i)
        if x.shape != (window,) or y.shape != ():
            raise Incorrect("item_shape", i=i, window=window, x_shape=tuple(x.shape), y_shape=tuple(y.shape))
        xs.append(x)
        ys.append(y)
    if not xs:
        return series.new_zeros((0, window)), series.new_zeros((0,))
    return torch.stack(xs), torch.stack(ys)


# --- wrong answers
class _TargetIsLastInput(WindowDataset):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window + self.horizon - 2]


class _IgnoresHorizon(WindowDataset):
    def __getitem__(self, i):
        return self.series[i : i + self.window], self.series[i + self.window]


class _LenTooLong(WindowDataset):
    def __len__(self):
        return super().__len__() + 1


class _LenTooShort(WindowDataset):
    def __len__(self):
        return len(self.series) - self.window - self.horizon


class _NegativeLen(WindowDataset):
    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1


class _WrongLen(WindowDataset):
    def __len__(self):
        return len(self.series)


class _HorizonDefaultTwo(WindowDataset):
    def __init__(self, series, window, horizon=2):
        super().__init__(series, window, horizon)


class _NoLen(Dataset):
    def __init__(self, series, window, horizon=1):
        self.ref = WindowDataset(series, window, horizon)

    def __getitem__(self, i):
        return self.ref[i]


class _ItemIsTensor(WindowDataset):
    def __getitem__(self, i):
        return self.series[i : i + self.window + self.horizon]


class _ItemIsList(WindowDataset):
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x.tolist(), y.item()


class _TargetKeepsDim(WindowDataset):
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x, y.reshape(1)


# an instance, made without running the reference's `__init__`: importing this file must not run
# the reference (the instructor's sandbox stages the course with every reference cut out)
_AN_INSTANCE = object.__new__(WindowDataset)


def _window_list(series, window, horizon=1):
    return list(WindowDataset(series, window, horizon))


# --- declaration
_WHERE = "For a series of {length} values, window={window} and horizon={horizon}"

register(Exercise(
    lesson=LESSON, name="WindowDataset", title="A sliding-window Dataset over a time series",
    reference=WindowDataset, kind="any", run=_run, cases=_cases, edge_cases=EDGE_CASES,
    mistakes=[
        Mistake("target_is_last_input", "Your target is the last value *inside* the window (the classic "
                "off-by-one): the model would learn to copy its input. The target is "
                "`series[i + window + horizon - 1]`, the first value after the window when horizon is 1.",
                _TargetIsLastInput),
        Mistake("ignores_horizon", "Your target is always the value right after the window; with "
                "`horizon=h` it must be `h` steps after the window's last value: "
                "`series[i + window + horizon - 1]`.", _IgnoresHorizon),
        Mistake("len_too_long", _WHERE + " your dataset has {n} items: one too many. The last window must "
                "still have a target `horizon` steps after it, so the last valid start is "
                "`len(series) - window - horizon`.", _LenTooLong, match_output=False),
        Mistake("len_too_short", _WHERE + " your dataset has {n} items: one too few, so the last window is "
                "never used. Count the valid start positions 0, 1, ..., `len(series) - window - horizon`.",
                _LenTooShort, match_output=False),
        Mistake("negative_len", _WHERE + " no window fits, so the dataset has 0 items, but your `__len__` "
                "returned a negative number (Python's `len()` refuses it). Return "
                "`max(0, len(series) - window - horizon + 1)`.", _NegativeLen, match_output=False),
        Mistake("wrong_len", _WHERE + " your dataset has {n} items. Count the start positions whose window "
                "and target both fit inside the series.", _WrongLen, match_output=False),
        Mistake("wrong_default_horizon", "`WindowDataset(series, window)` must mean horizon 1 (the value right "
                "after the window): keep the default `horizon=1` in `__init__`.", _HorizonDefaultTwo,
                match_output=False),
        Mistake("wrong_type", WRONG_TYPE, _AN_INSTANCE, match_output=False),
        _DATASET.mistake(_window_list),
        Mistake("no_len", "Calling your class did not give an object with `__len__` and `__getitem__` (got "
                "{got}). Subclass `Dataset` and define both.", _NoLen, match_output=False),
        Mistake("item_not_pair", "`dataset[{i}]` should be a pair `(x, y)`, not {got}.", _ItemIsTensor,
                match_output=False),
        Mistake("item_not_tensor", "`dataset[{i}]` should hold two tensors; slice and index the series "
                "tensor itself.", _ItemIsList, match_output=False),
        Mistake("item_shape", "`x` should have shape ({window},) and `y` shape () (a 0-dim tensor), but "
                "`dataset[{i}]` gives {x_shape} and {y_shape}.", _TargetKeepsDim, match_output=False),
    ],
    hints=[
        "Draw a series of 8 values, window 3, horizon 1 on paper: which indices go into x for item 0, "
        "which one is y, and which is the last item?",
        "Item i's window starts at i; the target is `horizon` steps after the window's last value. The "
        "number of items is how many start positions leave room for both, and never negative.",
    ],
))
