"""reseed_worker: a ``worker_init_fn`` that gives every DataLoader worker its own NumPy generator.

A diagnosis, not a transcription: the notebook shows the symptom (two workers, identical noise) and a
colleague's well-known fix that reseeds NumPy's *global* generator and changes nothing; the learner
works out that the dataset's ``rng`` is copied into every worker, so each draws the same numbers
until every worker's copy (``get_worker_info().dataset``) gets a generator of its own; that the seed
must differ per worker *and* per epoch and be reproducible (``get_worker_info().seed``); and that
torch's and Python's global generators, already seeded per worker, must be left alone. Workers are
simulated (``_kit.as_worker``).
"""

from __future__ import annotations

import random

import numpy as np
import torch

from course_utils.lesson_props.l04_data_workers import NoisyItems

from ...answers.l04_data import reseed_worker
from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON
from . import _kit

# --- reference: the solution notebook's answer, generated (imported above). The lesson's later
# cells use it through lesson_props, which re-exports this same object: a submitted prop is the
# course's own object to the instructor's judge (reference_answer), and the sandbox keeps it.


# --- cases
def _cases(r: Rand) -> Case:
    # the dataset's own seed is never a small constant a learner might reseed with (0, 42, a worker id)
    return Case(kwargs=dict(base_seeds=(r.integer(0, 2**62), r.integer(0, 2**62)), data_seed=r.integer(10**4, 10**6)))


# --- run and probes
def _np_state_key() -> bytes:
    state = np.random.get_state()
    return state[1].tobytes() + bytes([state[2] % 256])


def _call_in_worker(answer, k: int) -> bool:
    """Call the answer as worker ``k``'s init function; whether it touched NumPy's global RNG."""
    before = _np_state_key()
    seed_before, py_before = torch.initial_seed(), random.getstate()
    answer(k)
    py_after = random.getstate()
    # reseeding `random` leaves the Mersenne Twister at position 624 (a fresh state);
    # drawing from it (valid: torch seeded it per worker) moves the position
    py_reseeded = py_after != py_before and py_after[1][-1] == 624
    if torch.initial_seed() != seed_before or py_reseeded:
        raise Incorrect("reseeded_torch_or_random")
    return _np_state_key() != before


def _run(answer, case: Case):
    _kit.clear_stale_worker_info()
    (base1, base2), data_seed = case.kwargs["base_seeds"], case.kwargs["data_seed"]
    touched_global = False

    def streams(base):
        nonlocal touched_global
        out = []
        for k in range(2):
            ds = NoisyItems(n=4, seed=data_seed)  # this worker's copy of the dataset
            with _kit.as_worker(k, 2, base, ds):
                touched_global = _call_in_worker(answer, k) or touched_global
            rng = getattr(ds, "rng", None)
            if not isinstance(rng, np.random.Generator):
                raise Incorrect("not_a_generator")
            out.append(tuple(rng.random(3).tolist()))
        return out

    untouched = tuple(NoisyItems(n=4, seed=data_seed).rng.random(3).tolist())
    first = streams(base1)
    if first[0] == untouched and first[1] == untouched:
        raise Incorrect("seeded_global_rng" if touched_global else "not_reseeded")
    if untouched in first:
        raise Incorrect("kept_original", k=first.index(untouched))
    if first[0] == first[1]:
        raise Incorrect("same_in_every_worker")
    if streams(base1) != first:
        raise Incorrect("not_reproducible")
    second = streams(base2)
    if second[0] == first[0] or second[1] == first[1]:
        raise Incorrect("same_every_epoch")
    return True


# --- wrong answers
def _reseed_dataset(seed_of):
    """A worker_init_fn that sets the dataset's generator from ``seed_of(worker_id, info)``."""

    def init(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(seed_of(worker_id, info))

    return init


def _reseed_global_numpy(worker_id):
    np.random.seed(torch.utils.data.get_worker_info().seed % 2**32)


def _reseed_torch_too(worker_id):
    torch.manual_seed(worker_id)
    reseed_worker(worker_id)


def _first_keeps_its_own(worker_id):
    if worker_id > 0:
        reseed_worker(worker_id)


def _rng_to_list(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = list(np.random.default_rng(info.seed).random(3))


# --- declaration

register(Exercise(
    lesson=LESSON, name="reseed_worker", title="A worker_init_fn that gives every worker its own NumPy generator",
    reference=reseed_worker, kind="function", run=_run, cases=_cases, n_random=4, timeout=6.0,
    mistakes=[
        Mistake("not_reseeded", "Every worker still draws the same numbers: the dataset's `rng` is the copy "
                "made in `__init__`, identical in every worker. Each worker's copy of the dataset needs a "
                "generator of its own.",
                lambda worker_id: None, match_output=False),
        Mistake("same_every_epoch", "A worker draws the same numbers every epoch: a seed built from "
                                    "`worker_id` alone never changes. The worker information carries "
                                    "a seed that differs per worker *and* per epoch.",
                _reseed_dataset(lambda worker_id, info: worker_id), match_output=False),
        Mistake("seeded_global_rng", "You reseeded NumPy's *global* RNG (torch already does that in "
                                     "every worker); the dataset draws from its own `rng`, which is "
                                     "still the identical copy in every worker.",
                _reseed_global_numpy, match_output=False),
        Mistake("not_reproducible", "The same torch seed gave different numbers: your new generator's"
                                    " seed came from the operating system. Seed it from what torch "
                                    "chose for this worker, which is reproducible.",
                _reseed_dataset(lambda worker_id, info: None), match_output=False),
        Mistake("same_in_every_worker", "Both workers got generators with the same seed: the seed "
                                        "must differ from worker to worker.",
                _reseed_dataset(lambda worker_id, info: 0), match_output=False),
        Mistake("reseeded_torch_or_random", "Your function reseeded torch's or Python's `random` "
                                            "global generator in the worker. The DataLoader already "
                                            "seeds both with a per-worker, per-epoch seed; reseeding "
                                            "them (e.g. from `worker_id`) makes torch/`random` "
                                            "augmentations repeat every epoch. Only the dataset's own"
                                            " generator needs replacing.", _reseed_torch_too, match_output=False),
        Mistake("kept_original", "Worker {k} still draws from the generator the dataset was built with. "
                "Its noise is then the same in every epoch (each epoch's workers start from fresh copies of "
                "the dataset), and the same as that of a loader without workers.",
                _first_keeps_its_own, match_output=False),
        Mistake("not_a_generator", "After your function, `dataset.rng` must still be a NumPy "
                                   "`Generator`.", _rng_to_list, match_output=False),
    ],
    hints=[
        "The colleague's fix gives every worker a different seed for one random stream. Which stream does "
        "the noisy dataset actually draw from, and where does that stream live?",
        "Each worker holds its own copy of the dataset, generator included, and all copies start in the "
        "same state. What does a worker know about itself that differs per worker and per epoch, and "
        "repeats when the loader's generator is seeded the same?",
        "Give every worker's copy of the dataset a generator of its own, built from what the worker knows "
        "about itself (section 7 lists it), and leave the streams the DataLoader seeded alone.",
    ],
))
