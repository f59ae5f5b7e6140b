"""to_device: move every tensor of a nested batch (tuples, lists, dicts, namedtuples) to a device.

Subtle: the structure must come back exactly (a tuple stays a tuple, a namedtuple is rebuilt from
its fields, non-tensor entries unchanged), nothing may be converted (labels stay int64), and the
caller's batch must not be modified. The check moves to ``meta``, which every machine has.
"""

from __future__ import annotations

import copy
import functools
from typing import NamedTuple

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import META


# --- reference: the solution notebook's answer, generated from solutions/10_performance.py
from ...answers.l10_performance import to_device


# --- cases
class Batch(NamedTuple):
    """A namedtuple batch, as many datasets return (``batch.x``, ``batch.y``)."""

    x: torch.Tensor
    y: torch.Tensor
    name: str = "batch"


def _random_leaf(r: Rand):
    kind = r.choice(["float", "float", "long", "bool", "str", "int", "double", "namedtuple"])
    n = r.integer(1, 4)
    if kind == "float":
        return r.randn(n, r.integer(1, 3))
    if kind == "double":
        return r.randn(n, dtype=torch.float64)
    if kind == "namedtuple":
        return Batch(r.randn(n, 2), r.randint(0, 3, (n,)))
    if kind == "long":
        return r.randint(0, 10, (n,))
    if kind == "bool":
        return r.rand(n) > 0.5
    if kind == "str":
        return r.choice(["img_001.png", "cat", "a sentence"])
    return r.integer(0, 99)


def _random_batch(r: Rand, depth: int = 0):
    if depth >= 2 or r.uniform(0, 1) < 0.3:
        return _random_leaf(r)
    kind = r.choice(["tuple", "list", "dict"])
    items = [_random_batch(r, depth + 1) for _ in range(r.integer(1, 3))]
    if kind == "dict":
        keys = ["inputs", "labels", "mask", "meta", "ids"]
        return {keys[i]: v for i, v in enumerate(items)}
    return tuple(items) if kind == "tuple" else items


def _cases(r: Rand) -> Case:
    X, y = r.randn(r.integer(1, 5), r.integer(2, 6)), r.randint(0, 3, (r.integer(1, 5),))
    # always some nesting, plus a random extra part
    batch = r.choice([
        lambda: (X, y),
        lambda: {"inputs": X, "targets": {"labels": y, "extra": _random_batch(r)}},
        lambda: [(X, y), {"ids": y, "names": "batch"}],
        lambda: (X, [y, _random_batch(r)], {"meta": _random_batch(r)}),
    ])()
    return Case((batch,))


_X3 = torch.arange(6.0).reshape(3, 2)
_Y3 = torch.tensor([0, 2, 1])
_EDGE_CASES = [
    Case(((_X3, _Y3),), label="a tuple (X, y)"),
    Case(([{"inputs": _X3, "targets": {"labels": _Y3}}, "file_7.png", 3],),
         label="a list holding a nested dict, a name and a number"),
    Case(({"pair": (_X3, [_Y3]), "id": 17},), label="a dict holding a tuple holding a list"),
    Case((Batch(_X3, _Y3),), label="a namedtuple Batch(x, y, name)"),
    Case(([Batch(_X3.double(), _Y3), {"half": _X3.half(), "bf16": _X3.bfloat16(), "mask": _Y3 > 0}],),
         label="float64, float16, bfloat16 and bool tensors, one inside a namedtuple"),
    Case((((), [], {}, (torch.tensor(3.5),), {0: _Y3, ("a", 1): None}),),
         label="empty containers, a 0-dim tensor, non-string dict keys and None"),
]


# --- run and probes
def _check_tensor(got, original: torch.Tensor, path: str, device_type: str) -> None:
    if not isinstance(got, torch.Tensor):
        raise Incorrect("changed_structure", path=path, expected="a tensor", got=f"a {type(got).__name__}")
    if got.device.type != device_type:
        raise Incorrect("not_moved", path=path, got=got.device, device=device_type)
    if type(got) is not type(original):
        raise Incorrect("changed_structure", path=path, expected=f"a plain {type(original).__name__}",
                        got=f"a {type(got).__name__}")
    if got.requires_grad != original.requires_grad:
        raise Incorrect("changed_flags", path=path, got=got.requires_grad, expected=original.requires_grad)
    if got.dtype != original.dtype:
        raise Incorrect("changed_dtype", path=path, expected=str(original.dtype).replace("torch.", ""),
                        got=str(got.dtype).replace("torch.", ""))
    if got.shape != original.shape:
        raise Incorrect("changed_structure", path=path, expected=f"of shape {tuple(original.shape)}",
                        got=f"of shape {tuple(got.shape)}")


def _check_moved(got, original, path: str, device_type: str = META.type) -> None:
    if isinstance(original, torch.Tensor):
        _check_tensor(got, original, path, device_type)
    elif isinstance(original, dict):
        if not isinstance(got, dict):
            raise Incorrect("changed_container_type", path=path, expected="dict", got=type(got).__name__)
        if set(got) != set(original):
            raise Incorrect("dropped_entries", path=path, got=f"the keys {sorted(map(str, got))}",
                            expected=f"the keys {sorted(map(str, original))}")
        for key in original:
            _check_moved(got[key], original[key], f"{path}[{key!r}]", device_type)
    elif isinstance(original, (list, tuple)):
        if type(got) is not type(original):
            raise Incorrect("changed_container_type", path=path, expected=type(original).__name__,
                            got=type(got).__name__)
        if len(got) != len(original):
            raise Incorrect("dropped_entries", path=path, got=f"{len(got)} items", expected=f"{len(original)} items")
        for i, (g, o) in enumerate(zip(got, original)):
            _check_moved(g, o, f"{path}[{i}]", device_type)
    elif type(got) is not type(original) or got != original:
        raise Incorrect("changed_non_tensor", path=path, got=repr(got))


def _contains_tensor_on(obj, device_type: str) -> bool:
    if isinstance(obj, torch.Tensor):
        return obj.device.type == device_type
    if isinstance(obj, dict):
        return any(_contains_tensor_on(v, device_type) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_contains_tensor_on(v, device_type) for v in obj)
    return False


def _run(answer, case: Case):
    batch = case.args[0]
    given = copy.deepcopy(batch)
    moved = answer(given, META)
    if moved is None:
        raise Incorrect("returned_none")
    if _contains_tensor_on(given, META.type):
        raise Incorrect("mutated_batch")
    _check_moved(moved, batch, "result")
    on_cpu = answer(batch, torch.device("cpu"))
    _check_moved(on_cpu, batch, "result", "cpu")  # the same structure for every device
    return on_cpu


# --- wrong answers
# The reference's recursion with one knob turned: how a leaf is moved, whether containers are
# recursed into, which entries are kept, how a container is rebuilt from its moved entries.
def _leaf(value, device):
    return value.to(device) if isinstance(value, torch.Tensor) else value


def _rebuild(batch, moved: dict):
    if isinstance(batch, dict):
        return moved
    if hasattr(batch, "_fields"):
        return type(batch)(*moved.values())
    return type(batch)(moved.values())


def _variant(batch, device, *, leaf=_leaf, deep=True, keep=lambda v: True, rebuild=_rebuild):
    if not isinstance(batch, (dict, list, tuple)):
        return leaf(batch, device)
    again = functools.partial(_variant, leaf=leaf, deep=deep, keep=keep, rebuild=rebuild) if deep else leaf
    pairs = batch.items() if isinstance(batch, dict) else enumerate(batch)
    return rebuild(batch, {k: again(v, device) for k, v in pairs if keep(v)})


def _assign_in_place(batch, moved: dict):
    if isinstance(batch, tuple):
        return _rebuild(batch, moved)
    for k, v in moved.items():
        batch[k] = v
    return batch


_shallow = functools.partial(_variant, deep=False)
_all_lists = functools.partial(_variant, rebuild=lambda b, m: m if isinstance(b, dict) else list(m.values()))
_to_float = functools.partial(_variant, leaf=lambda v, d: v.to(d, torch.float32) if torch.is_tensor(v) else v)
_in_place = functools.partial(_variant, rebuild=_assign_in_place)
_drop_others = functools.partial(_variant, keep=lambda v: isinstance(v, (torch.Tensor, dict, list, tuple)))
_from_generator = functools.partial(  # `type(batch)(generator)`: right for tuples and lists, not namedtuples
    _variant, rebuild=lambda b, m: m if isinstance(b, dict) else type(b)(iter(m.values())))
_flattened = functools.partial(_variant, leaf=lambda v, d: v.to(d).flatten() if torch.is_tensor(v) else v)
_needs_grad = functools.partial(
    _variant, leaf=lambda v, d: v.to(d).requires_grad_(v.is_floating_point()) if torch.is_tensor(v) else v)
_numbers_as_tensors = functools.partial(
    _variant, leaf=lambda v, d: torch.tensor(v, device=d) if isinstance(v, int) else _leaf(v, d))


# --- declaration
_REBUILD = "`type(batch)(to_device(item, device) for item in batch)`"

register(Exercise(
    lesson=LESSON, name="to_device", title="Move a nested batch to a device, keeping its structure",
    reference=to_device,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    run=_run,
    mistakes=[
        Mistake("not_moved", "`{path}` is on `{got}` after moving the batch to `{device}`. Tensors inside nested "
                "tuples, lists and dicts must be moved too: call `to_device` again on every element of a "
                "container (recursion).", _shallow, match_output=False),
        Mistake("changed_container_type", "`{path}` was a {expected} and came back as a {got}. Rebuild each "
                f"container with its own type: a dict for a dict, and {_REBUILD} keeps a tuple a tuple and a "
                "list a list.", _all_lists, match_output=False),
        Mistake("changed_dtype", "`{path}` changed dtype from {expected} to {got}. Moving must not convert: class "
                "labels must stay int64 for cross-entropy. Use `.to(device)` alone.", _to_float, match_output=False),
        Mistake("mutated_batch", "Your function changed the batch it was given (it now holds moved tensors). "
                "Build and return a new container instead of assigning into the old one: the caller may still "
                "need the original.", _in_place, match_output=False),
        Mistake("dropped_entries", "`{path}` came back with {got}, but the batch had {expected}. Entries that are "
                "not tensors (names, ids, numbers) must come back unchanged, not be left out.", _drop_others,
                match_output=False),
        Mistake("namedtuple_from_generator", "A namedtuple cannot be built from one generator: "
                "`Batch(gen)` fills only the first field. For a namedtuple (`hasattr(batch, '_fields')`) pass "
                "the moved items as separate arguments: `type(batch)(*(to_device(item, device) for item in "
                "batch))`.", _from_generator),
        Mistake("changed_structure", "`{path}` should be {expected}, but it is {got}. Moving a batch changes only "
                "the device its tensors are on: `.to(device)` alone.", _flattened, match_output=False),
        Mistake("changed_flags", "`{path}` has requires_grad={got}, but the tensor in the batch had "
                "requires_grad={expected}. Moving changes only the device: `.to(device)` alone.", _needs_grad,
                match_output=False),
        Mistake("changed_non_tensor", "`{path}` should be returned unchanged (it is not a tensor), but it is "
                "{got}.", _numbers_as_tensors, match_output=False),
        Mistake("returned_none", "`to_device` returned None. Did you forget a `return` statement?",
                lambda batch, device: None, match_output=False),
    ],
    hints=[
        "What kinds of things can a batch be? For each kind decide: move it, rebuild it from moved parts, or hand "
        "it back as it is.",
        "A container's elements can be containers themselves: let the function handle each element by calling "
        "itself, and any depth works.",
        "Rebuild every container as the type it came in. A namedtuple is a tuple too, but it is built from its "
        "fields as separate arguments, not from one iterable; its `_fields` attribute gives it away.",
    ],
))
