"""should_stop: repair a teammate's early stopping, which stops on the first bump of a noisy curve.

The notebook runs a teammate's rule (stop when the last loss is above the one before) on the
validation losses its own fine-tuning printed: it stops after epoch 5, on a bump, and ships
epoch 4's weights instead of epoch 8's. The prose states the goal (train through that bump, stop
after epoch 11 with ``patience=3``, an equal loss is no progress) and leaves the decision: what
"progress" compares with. The answer: the BEST loss so far, not the epoch before; stop after
``patience`` epochs without a new best (not one more, not one fewer), a tie is no new best. The
answer is called as the prose says, after each epoch: each case is one history of one epoch or
more (each fixed curve gives a case per epoch, so feedback shows the very list the answer got; the
empty history is never passed); each wrong rule differs somewhere, and the losses repeat values on
purpose so ties occur. Two fixed curves name the family of rules that compare each loss with the epoch before
(the teammate's ``>``, ``>=``, rises in a row): they never stop on a curve that falls slowly after
a jump, but do stop on one that rises.
"""

from __future__ import annotations

import numbers

from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/16_capstone_files.py)
from ...answers.l16_capstone_files import should_stop


# --- cases
def _cases(r: Rand) -> Case:
    n, loss = r.integer(6, 14), 1.0
    losses = []
    for _ in range(n):
        loss = round(max(0.05, loss + r.choice([-0.2, -0.1, -0.1, 0.0, 0.05, 0.1])), 2)
        losses.append(loss)
    return Case((losses[:r.integer(2, n)], r.integer(1, 4)), show_inputs=True)


# after its best, a curve that jumps up and then falls every epoch without getting back to the best:
# the right rule stops; a rule that compares each loss with the epoch before it never does (and it
# does stop on a curve that rises every epoch, where never stopping would not)
FALLS_AFTER_A_JUMP = [0.5, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65]
RISES = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]

CURVES = [
    (FALLS_AFTER_A_JUMP, 2, "after the best, a jump up, then a small fall every epoch that never gets back to the "
     "best"),
    ([1.377, 1.343, 0.717, 0.456, 0.494, 0.221, 0.188, 0.163, 0.239, 0.197, 0.247], 3,
     "the notebook's run: a bump at epoch 5, the best at epoch 8"),
    ([0.9, 0.8, 0.7, 0.72, 0.71, 0.75, 0.6, 0.61, 0.6, 0.6], 3, "the prediction's curve, then a tie"),
    ([0.5, 0.4, 0.45, 0.3, 0.35], 1, "patience 1"),
    ([1.0, 0.8, 0.9, 0.7, 0.95, 0.9, 0.85], 3, "a new best inside the last `patience`, then worse"),
]
# one case per epoch, as the training loop calls it (the whole first curve first: it names vs_previous)
EDGE_CASES = [Case((list(FALLS_AFTER_A_JUMP), 2), label=f"{CURVES[0][2]}, after epoch {len(FALLS_AFTER_A_JUMP)}",
                   show_inputs=True)]
EDGE_CASES += [Case((losses[:t], patience), label=f"{label}, after epoch {t}", show_inputs=True)
               for losses, patience, label in CURVES for t in range(1, len(losses) + 1)
               if (losses, t) != (FALLS_AFTER_A_JUMP, len(FALLS_AFTER_A_JUMP))]


def _decision(answer, losses: list, patience: int) -> bool:
    given = list(losses)
    got = answer(given, patience)
    if given != losses:
        raise Incorrect("mutated_input")
    if hasattr(got, "item") and getattr(got, "numel", lambda: 1)() == 1:
        got = got.item()
    return bool(_BOOL.check(got))


# --- run
_BOOL = Expect("not_bool", "`True` or `False`", lambda got: isinstance(got, (bool, numbers.Integral)) and got in (0, 1))


def _run(answer, case: Case):
    losses, patience = case.args
    decision = _decision(answer, losses, patience)
    if losses == FALLS_AFTER_A_JUMP and not decision and _decision(answer, RISES, patience):
        raise Incorrect("vs_previous")
    return decision


# --- wrong answers
def _vs_previous(val_losses, patience):
    return len(val_losses) > 1 and val_losses[-1] > val_losses[-2]


def _last_only(val_losses, patience):
    return len(val_losses) > patience and val_losses[-1] >= min(val_losses[:-patience])


def _never_resets(val_losses, patience):
    return sum(loss >= min(val_losses[:i]) for i, loss in enumerate(val_losses) if i) >= patience


def _one_more(val_losses, patience):
    return should_stop(val_losses, patience + 1)


def _one_fewer(val_losses, patience):
    return patience > 1 and should_stop(val_losses, patience - 1)


def _ties_improve(val_losses, patience):
    return len(val_losses) > patience and min(val_losses[-patience:]) > min(val_losses[:-patience])


def _ignores_patience(val_losses, patience):
    return len(val_losses) > 1 and val_losses[-1] >= min(val_losses[:-1])


def _sorts(val_losses, patience):
    val_losses.sort()
    return should_stop(val_losses, patience)


# --- declaration
register(Exercise(
    lesson=LESSON, name="should_stop", title="Repair an early stopping that stops on the first bump of a noisy curve",
    reference=should_stop, kind="function", cases=_cases, edge_cases=EDGE_CASES, run=_run, n_random=30,
    mistakes=[
        Mistake("vs_previous", "Your rule compares recent losses with one earlier epoch's loss (the epoch "
                "before, say), not with the best so far: on this curve, which after its best jumps up and then "
                "falls a little every epoch without getting back to the best, it never stops, though it stops on "
                "a curve that rises every epoch. Compare with the BEST loss before the last `patience` epochs.",
                _vs_previous, match_output=False),
        Mistake("last_only", "You compare only the LAST loss with the best before the last `patience` epochs; a "
                "new best earlier in those epochs must keep training going. Compare the best of the last "
                "`patience` losses.", _last_only),
        Mistake("never_resets", "Your count of epochs without a new best never goes back to 0 when a new best "
                "comes: count only the epochs since the best one.", _never_resets),
        Mistake("ignores_patience", "You stop as soon as one epoch brings no new best: `patience` says how many "
                "epochs in a row may bring none before stopping.", _ignores_patience),
        Mistake("one_epoch_late", "You wait one epoch more than `patience`: stop when the last `patience` "
                "epochs brought no new best.", _one_more),
        Mistake("one_epoch_early", "You stop one epoch before `patience` epochs without a new best have passed.",
                _one_fewer),
        Mistake("ties_improve", "A loss EQUAL to the best so far counts as an improvement in your rule; it is not "
                "a new best (strictly lower), so it should not reset the patience.", _ties_improve),
        Mistake("mutated_input", "Your function changed the list of losses it was given (e.g. `sort()`): the "
                "training loop keeps appending to it. Work on a copy, or use `min`.", _sorts, match_output=False),
        _BOOL.mistake(),
    ],
    hints=[
        "The teammate's rule stops after epoch 5, yet epoch 6 beats every epoch before it. What does the rule "
        "compare the newest loss with, and what would the recent epochs have to beat for training to be worth "
        "going on?",
        "Which loss of the history is the one to beat: the epoch just before, or another one? After a bump the "
        "curve recovers from, how soon does that loss fall again, and on a plateau? What should an equal loss count "
        "as, and what can be decided while the history is still short?",
        "Look up `min` and slicing from the end of a list (a negative start); neither changes the list the training "
        "loop keeps appending to.",
    ],
))
