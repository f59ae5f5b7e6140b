"""save_checkpoint: write everything a resumed run needs (model, optimizer, scheduler, epoch, the
global RNG state, the DataLoader generator's state) so that resuming is bit-identical.

The learner decides what each entry holds (an object's state, not the object) and which state
none of the arguments holds ("rng_state": torch's global generator, which dropout draws from,
not Python's or NumPy's, not the loader's).

Subtle: a missing piece shows up only as a resumed run that drifts, so the check trains, saves,
trains on; then loads the file (with the reference loader) into a fresh process and compares the
final weights bit for bit, naming the first piece of state that did not come back.
"""

from __future__ import annotations

import torch

from course_utils.grading import Exercise, Mistake, register

from ._kit import LESSON
from ._kit import EXACT, KEYS
from ._resume import (CHANGED_MODE, NOT_BIT_IDENTICAL, NOT_RESTORED, RESUME_EDGES, RNG_NOT_TORCH, not_restored_id,
                      resume_case)
from ._resume_checks import finish_save, recalled_run_save


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from ...answers.l09_persistence import save_checkpoint


# --- cases
# (the training runs of `_kit.resume_case` and `_kit.RESUME_EDGES`, shared with load_checkpoint)


# --- run and probes
# --- wrong answers
def _saved_with(**changes):
    """The reference with some entries replaced (``None``: left out); a change is a function of
    the full entry and the objects saved."""
    def save(path, model, optimizer, scheduler, epoch, loader_generator):
        full = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch, "rng_state": torch.get_rng_state(),
                "loader_generator": loader_generator.get_state()}
        for key, change in changes.items():
            full[key] = change(full[key], model)
            if full[key] is None:
                del full[key]
        torch.save(full, path)
    return save


def _save_then_eval(path, model, optimizer, scheduler, epoch, loader_generator):
    save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator)
    model.eval()


_OTHER_STATE = {  # the wrong value of each entry: saved, it loads, but the state differs
    "model": lambda sd, model: {k: v + 1 for k, v in sd.items()},
    "optimizer": lambda sd, model: dict(sd, state={}),  # a fresh optimizer's: no momentum
    "scheduler": lambda sd, model: dict(sd, last_epoch=0),
    "rng_state": lambda state, model: torch.Generator().manual_seed(0).get_state(),
    "loader_generator": lambda state, model: torch.Generator().get_state(),
}
_MISSING = ("Your checkpoint has no {key!r} entry, which the loader needs: without it the resumed run cannot "
            "continue exactly where the original stopped.")
_MISSING_RNG = ("Your checkpoint has no 'rng_state' entry, which the loader needs. It holds the one piece of "
                "state none of the arguments holds: what else in the training run draws random numbers, "
                "besides the DataLoader's shuffle?")


def _rng_of_python(state, model):
    import random
    return random.getstate()


# --- declaration
register(Exercise(
    lesson=LESSON, name="save_checkpoint", title="Save everything a resumed run needs",
    reference=save_checkpoint,
    cases=resume_case,
    edge_cases=RESUME_EDGES,
    n_random=1,
    timeout=10.0,
    run=recalled_run_save,
    finish=finish_save,
    compare=EXACT,
    mistakes=[
        *[Mistake(f"missing_{key}", _MISSING_RNG if key == "rng_state" else _MISSING.format(key=key),
                  _saved_with(**{key: lambda v, m: None}), match_output=False) for key in KEYS],
        Mistake("missing_entry", "Your checkpoint has no {key} entry where loading it needs one: an entry holds "
                "only part of an object's state. Save the whole state the object hands over, which is what "
                "its loading method expects back.", _saved_with(optimizer=lambda sd, m: {"state": sd["state"]}),
                match_output=False),
        Mistake("rng_not_torch", RNG_NOT_TORCH, _saved_with(rng_state=_rng_of_python), match_output=False),
        Mistake("wrong_epoch", "Your checkpoint's 'epoch' is {got} ({type}), but `save_checkpoint` was called "
                "with epoch={epoch}, the number of completed epochs. Save that int unchanged: the loader returns "
                "it, and training resumes with `range(epoch, num_epochs)`.",
                _saved_with(epoch=lambda epoch, m: epoch + 1), match_output=False),
        Mistake("pickled_objects", "Your checkpoint cannot be loaded with `torch.load(path, weights_only=True)`: "
                "it contains pickled Python objects (a model or optimizer object itself?). Save each object's "
                "state instead, which every one of them hands over as tensors and plain Python values.",
                _saved_with(model=lambda sd, model: model), match_output=False),
        Mistake("unloadable_checkpoint", "Loading your checkpoint failed ({error}). Check that each entry holds "
                "what restores its object: the state that object hands over, in the form its own restoring "
                "method takes back.", _saved_with(loader_generator=lambda state, m: 7), match_output=False),
        Mistake("no_file", "`save_checkpoint` wrote no file at `path`. Call `torch.save(checkpoint_dict, path)`.",
                lambda *args: None, match_output=False),
        Mistake("changed_mode", CHANGED_MODE.format(fn="save_checkpoint"), _save_then_eval, match_output=False),
        *[Mistake(not_restored_id(key), f"After loading your checkpoint, {what} is not what it was when you "
                  f"saved: save `{key}` as the exercise describes, at the moment `save_checkpoint` is called.",
                  _saved_with(**{key: _OTHER_STATE[key]}), match_output=False) for key, what in NOT_RESTORED.items()],
        Mistake("not_bit_identical", NOT_BIT_IDENTICAL, match_output=False),
    ],
    hints=[
        "Go through the arguments one by one: does the next training step read anything inside it that a "
        "freshly built one would not have? Then ask what else in the process changes as training runs.",
        "Every stateful object of the run hands over its state as tensors and plain values (modules, "
        "optimizers and schedulers in one way, generators in another; the cell above shows both). Dropout "
        "draws its masks from a random stream that is not the DataLoader's: which one?",
    ],
))
