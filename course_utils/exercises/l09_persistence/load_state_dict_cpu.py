"""load_state_dict_cpu: a diagnosis. A checkpoint from a GPU machine fails to load on a CPU one, into
the plain model: the learner reads the errors and decides what to change. Tensors must land on
the CPU (`map_location`); the keys carry the names under which wrappers stored the model, one per
wrapper: DDP's 'module.', `torch.compile`'s '_orig_mod.', both stacked in either order, or none.

Subtle: only leading wrapper names go, every one of them ('submodule.weight' stays, `lstrip`
removes characters, not a prefix; a single pass in a fixed order leaves the inner wrapper's name
of one of the two stackings), not every key has them, and the file must load safely. The check
writes files that look saved on CUDA, so a missing `map_location` fails on any machine.
"""

from __future__ import annotations

import functools
import os
import tempfile

import torch

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register
from course_utils.lesson_props.l09_persistence import HarmlessPayload, save_as_if_on_cuda

from ._kit import LESSON
from ._kit import EXACT, UNSAFE_MESSAGE, payload_verdict, probe_payload


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from ...answers.l09_persistence import load_state_dict_cpu


# --- cases
_LAYER_NAMES = ["encoder", "head", "blocks.0", "blocks.1", "norm", "classifier", "layers.0", "embedding",
                "module_list.0"]
DDP, COMPILED = "module.", "_orig_mod."
_WRAPPERS = {DDP: "DistributedDataParallel (or DataParallel)", COMPILED: "torch.compile"}
# the names in front of every key, outermost first: DDP(torch.compile(model)) saves 'module._orig_mod.x'
_STACKS = [(), (DDP,), (COMPILED,), (DDP, COMPILED), (COMPILED, DDP)]


def _cases(r: Rand, wrappers: tuple[str, ...] | None = None, mixed: bool | None = None, on_gpu: bool | None = None,
           label: str = "", names: list[str] | None = None) -> Case:
    names = names or ["submodule"] + r.py.sample(_LAYER_NAMES, r.integer(1, 3))
    state = {}
    for name in names:
        rows, cols = r.integer(1, 4), r.integer(1, 4)
        state[f"{name}.weight"] = r.randn(rows, cols)
        if r.integer(0, 1):
            state[f"{name}.bias"] = r.randn(rows)
    return Case((), {
        "state": state,
        "wrappers": r.choice(_STACKS[1:] + [(DDP,), ()]) if wrappers is None else wrappers,
        "mixed": r.choice([False, False, True]) if mixed is None else mixed,
        "on_gpu": r.choice([True, True, False]) if on_gpu is None else on_gpu,
    }, label=label)


_EDGE_CASES = [
    # 'encoder' and 'layers.0' start with letters of 'module.' (`key.lstrip('module.')` damages
    # them); 'module_list.0' starts with 'module' but not with the prefix 'module.'
    _cases(Rand(71), (DDP,), False, True, label="saved on a GPU from a DDP model",
           names=["submodule", "encoder", "head"]),
    _cases(Rand(72), (), False, False, label="saved on a CPU from a plain model",
           names=["submodule", "layers.0", "module_list.0", "norm"]),
    _cases(Rand(73), (DDP,), True, True,
           label="some keys with 'module.', some without (a DDP state_dict merged with extra entries)",
           names=["ema", "head", "encoder", "blocks.0"]),
    _cases(Rand(74), (DDP,), True, False, label="the first key without 'module.', later keys with it",
           names=["step_counter", "head", "norm", "layers.0"]),
    _cases(Rand(75), (COMPILED,), False, True, label="saved on a GPU from a compiled model",
           names=["submodule", "head", "blocks.0"]),
    _cases(Rand(76), (DDP, COMPILED), False, True, label="saved on a GPU from DDP(torch.compile(model))",
           names=["submodule", "classifier", "norm"]),
    _cases(Rand(77), (COMPILED, DDP), False, True, label="saved on a GPU from torch.compile(DDP(model))",
           names=["submodule", "embedding", "module_list.0"]),
]


# --- run and probes
def _saved(kw: dict) -> dict:
    """The file's keys: every key (every other one when "mixed": merged with un-wrapped entries)
    behind the wrappers' names."""
    prefix = "".join(kw["wrappers"])
    return {(prefix + k if not kw["mixed"] or i % 2 == 0 else k): v for i, (k, v) in enumerate(kw["state"].items())}


def _left_wrapper(result, saved: dict, names) -> None:
    """A wrapper's name removed from inside a layer's name ('submodule.weight' became 'subweight'),
    or a key still behind a wrapper's name: kept as saved, or with only the outer of two removed."""
    if not isinstance(result, dict):
        return
    for name in names:
        for wrapper in _WRAPPERS:
            if wrapper in name and name not in result and name.replace(wrapper, "") in result:
                raise Incorrect("replaced_everywhere", name=name, got=name.replace(wrapper, ""))
    for key in saved:
        for outer in _WRAPPERS:
            inner = key[len(outer):] if key.startswith(outer) else ""
            if any(inner.startswith(w) for w in _WRAPPERS) and inner in result:
                raise Incorrect("stacked_wrappers", key=key, got=inner)
    for key in saved:
        wrapper = next((w for w in _WRAPPERS if key.startswith(w)), None)
        if wrapper and key in result:
            raise Incorrect("wrapper_prefix_kept", key=key, prefix=wrapper, wrapper=_WRAPPERS[wrapper])


def _run(answer, case: Case):
    kw = case.kwargs
    saved = _saved(kw)
    with tempfile.TemporaryDirectory(prefix="course-grader-") as tmp:
        path = os.path.join(tmp, "model.pt")
        (save_as_if_on_cuda if kw["on_gpu"] else torch.save)(saved, path)
        try:
            result = answer(path)
        except RuntimeError as exc:
            if "CUDA" in str(exc) and "map_location" in str(exc):
                raise Incorrect("no_map_location") from None
            raise
    if isinstance(result, dict) and any(isinstance(v, torch.Tensor) and v.device.type != "cpu"
                                        for v in result.values()):
        raise Incorrect("no_map_location")
    _left_wrapper(result, saved, kw["state"])
    return result


def _probe_unsafe(answer, r: Rand) -> dict:
    state = {"module.weight": r.randn(2, 2), "module.bias": HarmlessPayload("(payload ran)")}
    return probe_payload(lambda path: torch.save(state, path), answer)


# --- wrong answers
def _strip_leading(key, prefixes=(DDP, COMPILED)):
    while key.startswith(prefixes):
        key = key[len(next(p for p in prefixes if key.startswith(p))):]
    return key


def _loaded_renamed(path, rename=_strip_leading, **load_kwargs):
    """The reference with another renaming of the keys, or other arguments to `torch.load`."""
    state_dict = torch.load(path, **{"map_location": "cpu", "weights_only": True, **load_kwargs})
    return {rename(k): v for k, v in state_dict.items()}


def _one_pass(key, order=(COMPILED, DDP)):
    """Each wrapper's name removed once, in a fixed order: one of the two stackings keeps a name."""
    for prefix in order:
        key = key.removeprefix(prefix)
    return key


# --- declaration
register(Exercise(
    lesson=LESSON, name="load_state_dict_cpu", title="Load a checkpoint from a GPU machine's wrapped model",
    reference=load_state_dict_cpu,
    cases=_cases,
    edge_cases=_EDGE_CASES,
    n_random=4,
    run=_run,
    compare=EXACT,
    probes=[_probe_unsafe], finish_probe=payload_verdict,
    mistakes=[
        Mistake("no_map_location", "This checkpoint was saved on a GPU, and loading it as it is puts "
                                   "its tensors back on CUDA (on a machine without one, loading "
                                   "fails). Where do the tensors of a file go while it loads?",
                functools.partial(_loaded_renamed, map_location=None), match_output=False),
        Mistake("wrapper_prefix_kept", "Your state_dict still has the key {key!r}: '{prefix}' is the name "
                                       "under which {wrapper} stored the model, and the plain model has no "
                                       "such attribute, so strict loading rejects it.",
                functools.partial(_loaded_renamed, rename=functools.partial(_strip_leading, prefixes=(DDP,))),
                match_output=False),
        Mistake("stacked_wrappers", "The file's key {key!r} became {got!r}: it came from a model wrapped "
                                    "twice, and one wrapper's name is still in front. Wrappers stack, in "
                                    "either order, each adding its own name.",
                functools.partial(_loaded_renamed, rename=_one_pass), match_output=False),
        Mistake("replaced_everywhere", "Your renaming also changed a layer's own name that merely contains "
                                       "a wrapper's: {name!r} became {got!r}. A wrapper puts its name in "
                                       "one place only: which?",
                functools.partial(_loaded_renamed, rename=lambda k: k.replace(DDP, "").replace(COMPILED, "")),
                match_output=False),
        Mistake("stripped_unconditionally", "Not every checkpoint comes from a DDP model: you cut the"
                                            " first 7 characters of keys that did not start with "
                                            "'module.'.",
                functools.partial(_loaded_renamed, rename=lambda k: k[len(DDP):])),
        Mistake("lstrip_characters", "`key.lstrip('module.')` removes any of the characters m, o, d, "
                                     "u, l, e and '.' from the start ('encoder.weight' becomes "
                                     "'ncoder.weight'), not the prefix.",
                functools.partial(_loaded_renamed, rename=lambda k: k.lstrip(DDP))),
        Mistake("unsafe_load", UNSAFE_MESSAGE, functools.partial(_loaded_renamed, weights_only=False),
                match_output=False),
    ],
    hints=[
        "Read each unexpected key of the errors above next to the missing key it should have been: what "
        "is extra, and where in the key is it?",
        "A wrapper keeps your model as one attribute, so it puts that attribute's name in front of every "
        "key, once per wrapper. Which names can stand in front, in what order, how many times? And which "
        "parts of a key must stay, even when they look like a wrapper's name?",
    ],
))
