"""split_by_font: hold out every item of ``n_test_fonts`` randomly chosen fonts.

Subtle: the unit of the split is the font, not the item (a font on both sides leaks); the
choice uses only the generator and must not depend on the order the items come in (the check
shuffles the items and asks again with the same seed); every item lands on one side once.
Which fonts a seed picks is the learner's business: the split is judged by its properties.
"""

from __future__ import annotations

import math

import torch

from course_utils.glyphs import FONTS
from course_utils.grading import Case, Exercise, Expect, Incorrect, Mistake, Rand, pair_of, register

from ._kit import LESSON

# --- reference: the notebook's answer (generated from solutions/13_images_from_files.py)
from ...answers.l13_images_from_files import split_by_font


# --- cases
def _cases(r: Rand) -> Case:
    k = r.integer(5, 12)
    names = [FONTS[j] for j in torch.randperm(len(FONTS), generator=r.torch)[:k].tolist()]
    fonts = [f for f in names for _ in range(r.integer(2, 4))]
    fonts = [fonts[j] for j in torch.randperm(len(fonts), generator=r.torch).tolist()]
    return Case((fonts, r.integer(1, k - 2)), dict(seed=r.integer(0, 2**31)))


EDGE_CASES = [
    Case((["cmr10", "cmr10", "DejaVuSans", "cmr10", "STIXGeneral", "DejaVuSans", "cmb10", "cmb10",
           "cmss10", "cmtt10", "STIXGeneral", "cmss10", "cmtt10"], 2), dict(seed=3), label="6 fonts, 2 held out"),
    Case(([f for f in FONTS for _ in range(3)], 5), dict(seed=0), label="the lesson's 22 fonts x 3, 5 held out"),
]


# --- run and probes
_PAIR = Expect("not_a_pair", "a pair `(train_idx, test_idx)`", pair_of())


def _indices(t, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int64 or t.dim() != 1:
        raise Incorrect("not_indices", name=name)
    return t


def _call(answer, fonts, n, seed):
    given = list(fonts)
    out = answer(given, n, torch.Generator().manual_seed(seed))
    if given != list(fonts):
        raise Incorrect("mutated_fonts")
    _PAIR.check(out)
    return _indices(out[0], "train_idx"), _indices(out[1], "test_idx")


def _check_split(fonts, n, tr, te) -> set[str]:
    both = torch.cat([tr, te]).tolist()
    if any(i < 0 or i >= len(fonts) for i in both):
        raise Incorrect("out_of_range", last=len(fonts) - 1)
    if set(tr.tolist()) & set(te.tolist()):
        raise Incorrect("item_in_both")
    if len(both) != len(set(both)) or len(both) != len(fonts):
        raise Incorrect("lost_images", got=len(set(both)), n=len(fonts))
    train_fonts, test_fonts = {fonts[i] for i in tr.tolist()}, {fonts[i] for i in te.tolist()}
    if len(te) == n and (len(test_fonts) != n or train_fonts & test_fonts):
        raise Incorrect("counted_images", n=n)
    if train_fonts & test_fonts:
        raise Incorrect("font_leak", font=sorted(train_fonts & test_fonts)[0])
    if len(test_fonts) != n:
        if len(te) == n:
            raise Incorrect("counted_images", n=n)
        raise Incorrect("wrong_font_count", got=len(test_fonts), n=n)
    return test_fonts


def _run(answer, case: Case):
    (fonts, n), seed = case.args, case.kwargs["seed"]
    chosen = _check_split(fonts, n, *_call(answer, fonts, n, seed))
    if {fonts[i] for i in _call(answer, fonts, n, seed)[1].tolist()} != chosen:
        raise Incorrect("ignores_generator")
    shuffled = fonts[::-1]
    if {shuffled[i] for i in _call(answer, shuffled, n, seed)[1].tolist()} != chosen:
        raise Incorrect("depends_on_order")
    others = [{fonts[i] for i in _call(answer, fonts, n, seed + j)[1].tolist()} for j in (1, 2, 3)]
    if math.comb(len(set(fonts)), n) >= 20 and all(o == chosen for o in others):
        raise Incorrect("not_shuffled")
    return True


# --- wrong answers
def _random_items(fonts, n_test_fonts, generator):
    perm = torch.randperm(len(fonts), generator=generator)
    n_test = round(len(fonts) * n_test_fonts / len(set(fonts)))
    return perm[n_test:], perm[:n_test]


def _also_in_train(fonts, n_test_fonts, generator):
    _, test = split_by_font(fonts, n_test_fonts, generator)
    return torch.arange(len(fonts)), test


def _drops_one(fonts, n_test_fonts, generator):
    train, test = split_by_font(fonts, n_test_fonts, generator)
    return train[1:], test


def _first_fonts(fonts, n_test_fonts, generator):
    held_out = set(sorted(set(fonts))[:n_test_fonts])
    in_test = torch.tensor([f in held_out for f in fonts])
    return (~in_test).nonzero().flatten(), in_test.nonzero().flatten()


def _global_rng(fonts, n_test_fonts, generator):
    return split_by_font(fonts, n_test_fonts, None)


def _first_seen(fonts, n_test_fonts, generator):
    names = list(dict.fromkeys(fonts))
    held_out = {names[j] for j in torch.randperm(len(names), generator=generator)[:n_test_fonts].tolist()}
    in_test = torch.tensor([f in held_out for f in fonts])
    return (~in_test).nonzero().flatten(), in_test.nonzero().flatten()


def _n_items(fonts, n_test_fonts, generator):
    perm = torch.randperm(len(fonts), generator=generator)
    return perm[n_test_fonts:], perm[:n_test_fonts]


def _sorts_the_list(fonts, n_test_fonts, generator):
    fonts.sort()  # the caller's list, reordered
    return split_by_font(fonts, n_test_fonts, generator)


# --- declaration
register(Exercise(
    lesson=LESSON, name="split_by_font", title="Hold out whole fonts, chosen reproducibly",
    reference=split_by_font, kind="function", run=_run, cases=_cases, edge_cases=EDGE_CASES, n_random=6,
    mistakes=[
        Mistake("font_leak", "The font {font} has items on both sides: you split the items, not the fonts. "
                "Choose `n_test_fonts` font *names*, then send every item of those fonts to test.",
                _random_items, match_output=False),
        Mistake("item_in_both", "Some items are in both train and test: every item goes to exactly one side.",
                _also_in_train, match_output=False),
        Mistake("lost_images", "Your split covers {got} of the {n} items: every item must go to train or to "
                "test, none twice.", _drops_one, match_output=False),
        Mistake("not_shuffled", "Different generator seeds hold out the same fonts: draw the fonts at random "
                "with the generator (`torch.randperm(len(names), generator=generator)`).", _first_fonts,
                match_output=False),
        Mistake("ignores_generator", "The same generator seed held out different fonts: use the `generator` "
                "you are given, not the global random state.", _global_rng, match_output=False),
        Mistake("depends_on_order", "With the same seed, the items in another order gave other test fonts: "
                "you numbered the fonts in the order they first appear. Sort the distinct names first "
                "(`sorted(set(fonts))`), so the split depends on the seed only.", _first_seen,
                match_output=False),
        Mistake("counted_images", "Your test set has {n} items: `n_test_fonts` counts fonts, not items; hold "
                "out every item of {n} fonts.", _n_items, match_output=False),
        Mistake("wrong_font_count", "Your test set holds the items of {got} fonts; it should hold those of {n}.",
                None, match_output=False),
        Mistake("mutated_fonts", "Your function reordered or changed the caller's `fonts` list (`fonts.sort()`?): "
                "the indices you return then point into a list the caller no longer has as it was. Sort a copy, "
                "`sorted(set(fonts))`.", _sorts_the_list, match_output=False),
        _PAIR.mistake(),
        Mistake("not_indices", "`{name}` should be a 1-D int64 tensor of item positions "
                "(`mask.nonzero().flatten()`).", None, match_output=False),
        Mistake("out_of_range", "Your indices must lie in 0 .. {last} (positions in `fonts`).", None,
                match_output=False),
    ],
    hints=[
        "What must the generator choose among, if every item of a font has to land on the same side? And how can the "
        "choice depend on the seed only, not on the order in which the items come?",
        "Draw fonts, not items: list the distinct font names in a fixed order (sorted into a new list: the caller's "
        "list stays as it was), let the generator shuffle them and hold out the first `n_test_fonts`. Each item then "
        "goes to test if its font is held out, to train otherwise, and each side's positions become a 1-D int64 "
        "tensor.",
        "Look up `sorted`, `set`, `torch.randperm` (it takes a `generator`) and `torch.Tensor.nonzero`, which turns a "
        "boolean mask into positions.",
    ],
))
