"""load_checkpoint: a repair. The notebook shows a teammate's first loader, which runs without an
error but resumes a different run (and would run code hidden in a file): it reseeds instead of
restoring the random state, sets the scheduler's counter instead of its state, switches the model
to evaluation mode and returns the next epoch. The learner decides, line by line, what each got
wrong: restore every piece (safely) and return the epoch to resume from.

Subtle: the check restarts from a "new process" (other weights, another random state), loads the
reference's file and trains on; the run must end bit-identical to the uninterrupted one. The
file must be loaded with `weights_only=True`: a harmless payload in a second file shows whether
the loader would run code hidden in a checkpoint.
"""

from __future__ import annotations

import torch

from course_utils.grading import Exercise, Mistake, Rand, register
from course_utils.lesson_props.l09_persistence import HarmlessPayload

from ._kit import LESSON
from ._kit import EXACT, UNSAFE_MESSAGE, payload_verdict, probe_payload
from ._resume import CHANGED_MODE, NOT_BIT_IDENTICAL, NOT_RESTORED, RESUME_EDGES, not_restored_id, resume_case, setup
from ._resume_checks import finish_load, run_load, supply_load


# --- reference: the solution notebook's answer, generated from solutions/09_persistence.py
from ...answers.l09_persistence import load_checkpoint


# --- cases
# (the training runs of `_kit.resume_case` and `_kit.RESUME_EDGES`, shared with save_checkpoint)


# --- run and probes
def _probe_unsafe_load(answer, r: Rand) -> dict:
    """Give the loader a checkpoint with a harmless payload: it must not run."""
    model, optimizer, scheduler, _, generator = setup(resume_case(r).kwargs, "original")

    def save(path):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": HarmlessPayload("(payload ran)"),
                    "rng_state": torch.get_rng_state(), "loader_generator": generator.get_state()}, path)

    return probe_payload(save, lambda path: answer(path, model, optimizer, scheduler, generator))


# --- wrong answers
def _loaded_without(step: str, *, epoch_shift: int = 0, weights_only: bool = True):
    """The reference with one restoring step left out (or the epoch shifted, or unsafe loading)."""
    def load(path, model, optimizer, scheduler, loader_generator):
        checkpoint = torch.load(path, weights_only=weights_only)
        restore = {
            "model": lambda: model.load_state_dict(checkpoint["model"]),
            "optimizer": lambda: optimizer.load_state_dict(checkpoint["optimizer"]),
            "scheduler": lambda: scheduler.load_state_dict(checkpoint["scheduler"]),
            "rng_state": lambda: torch.set_rng_state(checkpoint["rng_state"]),
            "loader_generator": lambda: loader_generator.set_state(checkpoint["loader_generator"]),
        }
        for key, step_of in restore.items():
            if key != step:
                step_of()
        return checkpoint["epoch"] + epoch_shift
    return load


def _load_then_eval(path, model, optimizer, scheduler, loader_generator):
    epoch = load_checkpoint(path, model, optimizer, scheduler, loader_generator)
    model.eval()
    return epoch


def _load_assigning(path, model, optimizer, scheduler, loader_generator):
    epoch = load_checkpoint(path, model, optimizer, scheduler, loader_generator)
    # assign=True swaps in new Parameters: the optimizer still updates the old ones
    model.load_state_dict(torch.load(path, weights_only=True)["model"], assign=True)
    return epoch


# --- declaration
register(Exercise(
    lesson=LESSON, name="load_checkpoint", title="Restore everything and resume where training stopped",
    reference=load_checkpoint,
    cases=resume_case,
    edge_cases=RESUME_EDGES,
    n_random=1,
    timeout=10.0,
    supply=supply_load,
    run=run_load,
    finish=finish_load,
    compare=EXACT,
    probes=[_probe_unsafe_load], finish_probe=payload_verdict,
    mistakes=[
        *[Mistake(not_restored_id(key), f"After your `load_checkpoint`, {what} is not where the interrupted run "
                  f"left it, so the resumed run differs from the uninterrupted one: the file holds that state "
                  f"under {key!r}, for the object to take back whole.",
                  _loaded_without(key), match_output=False) for key, what in NOT_RESTORED.items()],
        Mistake("wrong_start_epoch", "`load_checkpoint` returned {got} ({type}), but the checkpoint was written "
                "after {epoch} completed epoch(s), and the caller's loop counts from the value you return: which "
                "epoch has not run yet?", _loaded_without("", epoch_shift=1), match_output=False),
        Mistake("unsafe_load", UNSAFE_MESSAGE, _loaded_without("", weights_only=False), match_output=False),
        Mistake("changed_mode", CHANGED_MODE.format(fn="load_checkpoint"), _load_then_eval, match_output=False),
        Mistake("not_bit_identical", NOT_BIT_IDENTICAL, _load_assigning, match_output=False),
    ],
    hints=[
        "Go through the first attempt line by line: what does the next training step read that this line "
        "sets, or leaves as a fresh process has it? And who else could have written the file it opens?",
        "A seed starts a random stream from its beginning; a saved state continues it where it was. A "
        "counter is only part of a schedule's state. A loader resumes training, so it must not choose the "
        "model's mode. The saved epoch counts the epochs already done.",
    ],
))
