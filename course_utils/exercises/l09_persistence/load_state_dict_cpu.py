"""load_state_dict_cpu: load a state_dict saved on a GPU from a DDP model onto a CPU, without the
'module.' prefix DDP adds to every key.

Subtle: only a leading 'module.' goes ('submodule.weight' stays, `lstrip` removes characters, not
a prefix), not every key has it, the file needs `map_location`, and it must load safely. The
check writes files that look saved on CUDA, so a missing `map_location` fails on any machine.
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


def _cases(r: Rand, prefixed: bool | str | None = None, on_gpu: bool | None = None, label: str = "",
           names: list[str] | None = None) -> Case:
    names = names or ["submodule"] + r.py.sample(_LAYER_NAMES, r.integer(1, 3))
    state = {}
    for name in names:
        rows, cols = r.integer(1, 4), r.integer(1, 4)
        state[f"{name}.weight"] = r.randn(rows, cols)
        if r.integer(0, 1):
            state[f"{name}.bias"] = r.randn(rows)
    return Case((), {
        "state": state,
        "prefixed": r.choice([True, True, False]) if prefixed is None else prefixed,
        "on_gpu": r.choice([True, True, False]) if on_gpu is None else on_gpu,
    }, label=label)


_EDGE_CASES = [
    # 'encoder' and 'layers.0' start with letters of 'module.' (`key.lstrip('module.')` damages
    # them); 'module_list.0' starts with 'module' but not with the prefix 'module.'
    _cases(Rand(71), prefixed=True, on_gpu=True, label="saved on a GPU from a DDP model",
           names=["submodule", "encoder", "head"]),
    _cases(Rand(72), prefixed=False, on_gpu=False, label="saved on a CPU from a plain model",
           names=["submodule", "layers.0", "module_list.0", "norm"]),
    _cases(Rand(73), prefixed="mixed", on_gpu=True,
           label="some keys with 'module.', some without (a DDP state_dict merged with extra entries)",
           names=["ema", "head", "encoder", "blocks.0"]),
    _cases(Rand(74), prefixed="mixed", on_gpu=False, label="the first key without 'module.', later keys with it",
           names=["step_counter", "head", "norm", "layers.0"]),
]


# --- run and probes
def _run(answer, case: Case):
    kw = case.kwargs
    # "mixed": a DDP state_dict merged with un-prefixed entries (every other key prefixed)
    saved = {("module." + k if kw["prefixed"] is True or (kw["prefixed"] == "mixed" and i % 2 == 0) else k): v
             for i, (k, v) in enumerate(kw["state"].items())}
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
    return result


def _probe_unsafe(answer, r: Rand) -> dict:
    state = {"module.weight": r.randn(2, 2), "module.bias": HarmlessPayload("(payload ran)")}
    return probe_payload(lambda path: torch.save(state, path), answer)


# --- wrong answers
def _loaded_renamed(path, rename=lambda key: key[len("module."):] if key.startswith("module.") else key,
                    **load_kwargs):
    """The reference with another renaming of the keys, or other arguments to `torch.load`."""
    state_dict = torch.load(path, **{"map_location": "cpu", "weights_only": True, **load_kwargs})
    return {rename(k): v for k, v in state_dict.items()}


# --- declaration
register(Exercise(
    lesson=LESSON, name="load_state_dict_cpu", title="Load a GPU/DDP checkpoint on a CPU",
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
                                   "fails). `torch.load` can move every storage to another device "
                                   "while loading.",
                functools.partial(_loaded_renamed, map_location=None), match_output=False),
        Mistake("replaced_everywhere", "`key.replace('module.', '')` also changes keys that merely "
                                       "contain 'module.', like 'submodule.weight' (it becomes "
                                       "'subweight'). Remove the prefix only at the start of the key.",
                functools.partial(_loaded_renamed, rename=lambda k: k.replace("module.", ""))),
        Mistake("stripped_unconditionally", "Not every checkpoint comes from a DDP model: you cut the"
                                            " first 7 characters of keys that did not start with "
                                            "'module.'.",
                functools.partial(_loaded_renamed, rename=lambda k: k[len("module."):])),
        Mistake("lstrip_characters", "`key.lstrip('module.')` removes any of the characters m, o, d, "
                                     "u, l, e and '.' from the start ('encoder.weight' becomes "
                                     "'ncoder.weight'), not the prefix.",
                functools.partial(_loaded_renamed, rename=lambda k: k.lstrip("module."))),
        Mistake("unsafe_load", UNSAFE_MESSAGE, functools.partial(_loaded_renamed, weights_only=False),
                match_output=False),
    ],
    hints=[
        "Two problems: tensors saved on a GPU must land in CPU memory, and DDP prefixed every key.",
        "`torch.load` can remap storage locations while loading (and must load safely). Then build a new "
        "dict whose keys lose the prefix where they have it, and only there.",
    ],
))
