"""save_checkpoint: write everything a resumed run needs (model, optimizer, scheduler, epoch, the
global RNG state, the DataLoader generator's state) so that resuming is bit-identical.

Subtle: a missing piece shows up only as a resumed run that drifts, so the check trains, saves,
trains on; then loads the file (with the reference loader) into a fresh process and compares the
final weights bit for bit, naming the first piece of state that did not come back.
"""

from __future__ import annotations

import torch

from course_utils.grading import Exercise, Mistake, register

from ._kit import LESSON
from ._kit import (CHANGED_MODE, EXACT, KEYS, NOT_BIT_IDENTICAL, NOT_RESTORED, RESUME_EDGES, not_restored_id,
                   resume_case, run_resume)


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from .._references.l09_persistence import save_checkpoint


# --- cases
# (the training runs of `_kit.resume_case` and `_kit.RESUME_EDGES`, shared with load_checkpoint)


# --- run and probes
def _run(answer, case):
    return run_resume(answer, case, "save")


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
_MISSING = ("Your checkpoint has no {key!r} entry. A checkpoint for resuming needs all of "
            + ", ".join(repr(k) for k in KEYS) + "; without {key!r} the resumed run cannot continue exactly "
            "where the original stopped.")


# --- declaration
register(Exercise(
    lesson=LESSON, name="save_checkpoint", title="Save everything a resumed run needs",
    reference=save_checkpoint,
    cases=resume_case,
    edge_cases=RESUME_EDGES,
    n_random=1,
    timeout=10.0,
    run=_run,
    compare=EXACT,
    mistakes=[
        *[Mistake(f"missing_{key}", _MISSING.format(key=key), _saved_with(**{key: lambda v, m: None}),
                  match_output=False) for key in KEYS],
        Mistake("missing_entry", "Your checkpoint has no {key} entry where loading it needs one. Save each piece "
                "as the exercise describes: `model.state_dict()`, `optimizer.state_dict()`, "
                "`scheduler.state_dict()`.", _saved_with(optimizer=lambda sd, m: {"state": sd["state"]}),
                match_output=False),
        Mistake("wrong_epoch", "Your checkpoint's 'epoch' is {got} ({type}), but `save_checkpoint` was called "
                "with epoch={epoch}, the number of completed epochs. Save that int unchanged: the loader returns "
                "it, and training resumes with `range(epoch, num_epochs)`.",
                _saved_with(epoch=lambda epoch, m: epoch + 1), match_output=False),
        Mistake("pickled_objects", "Your checkpoint cannot be loaded with `torch.load(path, weights_only=True)`: "
                "it contains pickled Python objects (a model or optimizer object itself?). Save "
                "`model.state_dict()`, `optimizer.state_dict()` and `scheduler.state_dict()`, which hold only "
                "tensors and plain Python values.", _saved_with(model=lambda sd, model: model),
                match_output=False),
        Mistake("unloadable_checkpoint", "Loading your checkpoint failed ({error}). Check that each entry holds "
                "what the exercise describes (e.g. `torch.get_rng_state()` and `loader_generator.get_state()`, "
                "which are tensors).", _saved_with(loader_generator=lambda state, m: 7), match_output=False),
        Mistake("no_file", "`save_checkpoint` wrote no file at `path`. Call `torch.save(checkpoint_dict, path)`.",
                lambda *args: None, match_output=False),
        Mistake("changed_mode", CHANGED_MODE.format(fn="save_checkpoint"), _save_then_eval, match_output=False),
        *[Mistake(not_restored_id(key), f"After loading your checkpoint, {what} is not what it was when you "
                  f"saved: save `{key}` as the exercise describes, at the moment `save_checkpoint` is called.",
                  _saved_with(**{key: _OTHER_STATE[key]}), match_output=False) for key, what in NOT_RESTORED.items()],
        Mistake("not_bit_identical", NOT_BIT_IDENTICAL, match_output=False),
    ],
    hints=[
        "Build one dict with the six keys and `torch.save` it to `path`.",
        "Objects have `state_dict()`: the model, the optimizer and the scheduler. The random states are "
        "tensors: `torch.get_rng_state()` and `loader_generator.get_state()`. `epoch` is the int you are given.",
    ],
))
