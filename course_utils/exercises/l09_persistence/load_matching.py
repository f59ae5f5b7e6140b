"""load_matching: load the entries of a checkpoint that fit a changed model (same key, same
shape) and return the model's keys that were not loaded, sorted.

Subtle: `strict=False` forgives missing and unexpected keys but not shape mismatches; buffers
(BatchNorm's running statistics and counter) are part of the state_dict; a tensor with the right
number of elements in another shape is another layer's weight; the caller's dict stays intact.
"""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.nn.utils import skip_init

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from ._kit import EXACT, fill


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from ...answers.l09_persistence import load_matching


# --- cases
def _bn_mlp(r: Rand, d: int, h: int, c: int, extra: bool = False) -> nn.Sequential:
    layers = [skip_init(nn.Linear, d, h), nn.BatchNorm1d(h), nn.ReLU(), skip_init(nn.Linear, h, c)]
    if extra:
        layers += [nn.ReLU(), skip_init(nn.Linear, c, 2)]
    model = fill(nn.Sequential(*layers), r)
    bn = model[1]
    with torch.no_grad():
        bn.running_mean.copy_(r.randn(h))
        bn.running_var.copy_(r.rand(h) + 0.5)
        bn.num_batches_tracked.fill_(r.integer(1, 50))
    return model


def _cases(r: Rand, variant: str | None = None, label: str = "") -> Case:
    d, h, c = r.integer(2, 6), r.integer(3, 8), r.integer(2, 5)
    variant = variant or r.choice(["new_head", "extra_layer", "wider", "same", "new_head", "model_extra_layer"])
    if variant == "transposed" and h == d:
        h = d + 1
    model = _bn_mlp(r, d, h, c, extra=variant == "model_extra_layer")
    if variant == "new_head":
        source = _bn_mlp(r, d, h, c + r.integer(1, 3))
    elif variant == "extra_layer":
        source = _bn_mlp(r, d, h, c, extra=True)
    elif variant == "wider":
        source = _bn_mlp(r, d, h + r.integer(1, 3), c)
    else:
        source = _bn_mlp(r, d, h, c)
    state_dict = source.state_dict()
    if variant == "transposed":  # as many elements as the model's (h, d) weight, another shape
        state_dict["0.weight"] = r.randn(d, h)
    return Case((model, state_dict), label=label)


_EDGE_CASES = [
    _cases(Rand(81), "new_head", "a checkpoint whose output layer has more classes"),
    _cases(Rand(82), "extra_layer", "a checkpoint with an extra layer at the end"),
    _cases(Rand(83), "model_extra_layer", "a model with a layer the checkpoint does not have"),
    _cases(Rand(84), "wider", "a checkpoint with a wider hidden layer (several keys not loaded)"),
    _cases(Rand(85), "transposed", "a checkpoint whose first weight has the model's number of "
           "elements in another shape ((in, out) instead of (out, in))"),
]


# --- run and probes
def _run(answer, case: Case):
    model, state_dict = case.args
    given = dict(state_dict)
    try:
        skipped = answer(model, state_dict)
        if state_dict.keys() != given.keys() or any(state_dict[k] is not v for k, v in given.items()):
            raise Incorrect("mutated_input")
    except RuntimeError as exc:
        if "size mismatch" in str(exc):
            raise Incorrect("size_mismatch") from None
        if "Missing key(s)" in str(exc):
            raise Incorrect("strict_load") from None
        raise
    # named parts, so that feedback says which one is wrong
    return {"the list you returned": skipped,
            "the model's state_dict after the call": {k: v.detach().clone() for k, v in model.state_dict().items()}}


# --- wrong answers
def _variant(model, state_dict, *, fits=lambda own, v: own.shape == v.shape, skipped=None, strict_false=False):
    """The reference with another test of what fits, or another list of what was skipped."""
    own = model.state_dict()
    if strict_false:  # no filter: let `load_state_dict` sort it out
        return sorted(model.load_state_dict(state_dict, strict=False).missing_keys)
    matching = {k: v.reshape(own[k].shape) for k, v in state_dict.items() if k in own and fits(own[k], v)}
    model.load_state_dict(matching, strict=False)
    if skipped is not None:
        return sorted(skipped(own, state_dict, matching))
    return sorted(k for k in own if k not in matching)


def _strict(model, state_dict):
    """Filters well, then loads strictly: the model's keys that got nothing make loading fail."""
    own = model.state_dict()
    model.load_state_dict({k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape})
    return []


def _unsorted(model, state_dict):
    """The right keys in the model's order (a weight before its bias), not sorted."""
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return [k for k in own if k not in matching]


def _parameters_only(model, state_dict):
    loaded = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in state_dict and state_dict[name].shape == p.shape:
                p.copy_(state_dict[name])
                loaded.append(name)
    return sorted(k for k, _ in model.named_parameters() if k not in loaded)


def _pops_entries(model, state_dict):
    own = model.state_dict()
    for k in [k for k in state_dict if k not in own or own[k].shape != state_dict[k].shape]:
        del state_dict[k]
    return load_matching(model, state_dict)


# --- declaration
register(Exercise(
    lesson=LESSON, name="load_matching", title="Load what fits into a changed model",
    reference=load_matching,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    n_random=5,
    run=_run,
    compare=EXACT,
    mistakes=[
        Mistake("size_mismatch", "`load_state_dict(..., strict=False)` forgives missing and unexpected keys, but "
                "not tensors whose shapes differ. Keep only the entries whose key exists in the model *and* whose "
                "shape matches, then load those.", functools.partial(_variant, strict_false=True),
                match_output=False),
        Mistake("strict_load", "You kept only the entries that fit, then loaded them strictly (the default "
                "`strict=True`): the model's keys that got nothing make `load_state_dict` fail with \"Missing "
                "key(s) in state_dict\". Load the filtered entries with `strict=False`.", _strict,
                match_output=False),
        Mistake("not_sorted", "You returned the right keys in another order: return them sorted "
                "(`sorted(...)`), so the answer does not depend on the order of the model's layers.",
                _unsorted),
        Mistake("parameters_only", "You copied parameters only. A state_dict also holds buffers (BatchNorm's "
                "running mean and variance, its batch counter): load from `model.state_dict()`'s keys.",
                _parameters_only),
        Mistake("same_numel", "You matched tensors by their number of elements. A checkpoint weight of shape "
                "(3, 2) has as many elements as the model's (2, 3) one, but it is another layer's weight: "
                "reshaping it scrambles the values. Compare the shapes themselves: `own[k].shape == v.shape`.",
                functools.partial(_variant, fits=lambda own, v: own.numel() == v.numel())),
        Mistake("checkpoint_keys", "Return the keys of the *model* that were not loaded (they keep their "
                "fresh initialisation and need training), not the checkpoint's leftover keys.",
                functools.partial(_variant, skipped=lambda own, sd, matching: [k for k in sd if k not in matching])),
        Mistake("mutated_input", "Your function changed the `state_dict` it was given: build a new dict of the "
                "matching entries and leave the caller's checkpoint as it was.", _pops_entries,
                match_output=False),
    ],
    hints=[
        "The model's own `state_dict()` tells you which entries it has and what shape each one must be.",
        "Keep only the checkpoint's entries whose name exists in the model with the same shape, and load "
        "them without insisting on a complete match; report (sorted) the model's entries that got "
        "nothing.",
    ],
))
