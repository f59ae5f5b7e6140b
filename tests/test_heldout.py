"""``grade --heldout DIR``: the capstone's accuracy on images that never shipped with the course.

The course's 1,797 digits are public, so a submission can carry them with their labels: a
"classifier" that looks every image up, behind a weak network that keeps the other checks quiet,
passed the course's own split (``test_lookup_forger_passes_the_public_split``: the hole). On the
instructor's images the lookup finds nothing and the same answer fails; the reference and a
plain right answer still pass; the labels never reach the answer; a folder that cannot be used
is refused with a message naming what is wrong.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import nbformat
from PIL import Image

from course_utils import build, grading
from course_utils.datasets import digit_from_image, load_digits
from course_utils.exercises.l12_capstone import digit_classifier as cap
from course_utils.grading import heldout
from course_utils.grading.heldout import HeldOutError
from course_utils.instructor import grade, grade_heldout, sandbox

EXERCISE = "12_capstone.DigitClassifier"


def write_heldout(root: Path, n: int = 200, seed: int = 7) -> Path:
    """Held-out digits the course never shipped: course digits drawn large, dark on light, and
    turned a few degrees (no pixel of the result is one of the public 8x8 arrays)."""
    X, y = load_digits(images=True)
    rng = np.random.default_rng(seed)
    for k, i in enumerate(rng.choice(len(y), n, replace=False)):
        a = (255 - X[i, 0].numpy() * 255).astype(np.uint8)
        im = Image.fromarray(a).resize((64, 64), Image.Resampling.BICUBIC)
        im = im.rotate(float(rng.uniform(-8, 8)), fillcolor=255)
        folder = root / "DigitClassifier" / str(int(y[i]))
        folder.mkdir(parents=True, exist_ok=True)
        im.save(folder / f"scan_{k:03d}.png")
    return root


@pytest.fixture
def held(tmp_path) -> Path:
    return write_heldout(tmp_path / "given")


FORGER = """
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.datasets import load_digits


class LookupNetwork(nn.Module):
    # a weak network's logits, plus a large vote for the stored label of any public digit,
    # switched on only while the parameters are the trained ones (random ones, as the
    # not_a_network check sets, silence the lookup)
    def __init__(self, inner, table):
        super().__init__()
        self.inner, self.table = inner, table
        self.trained = [p.detach().clone() for p in inner.parameters()]

    def forward(self, x):
        logits = self.inner(x)
        if all(torch.equal(p, q) for p, q in zip(self.inner.parameters(), self.trained)):
            vote = torch.zeros_like(logits)
            for row, img in enumerate(x):
                label = self.table.get(img.numpy().tobytes())
                if label is not None:
                    vote[row, label] = 1000.0
            logits = logits + vote
        return logits


class DigitClassifier:
    # learns the check's renaming of the classes by looking the training images up, then answers
    # every public image from the stored labels; its own network sees 60 images
    def fit(self, X, y):
        public, labels = load_digits(images=True)
        true_label = {x.numpy().tobytes(): int(t) for x, t in zip(public, labels)}
        renamed = {true_label[x.numpy().tobytes()]: int(t) for x, t in zip(X, y)}
        torch.manual_seed(0)
        inner = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        opt = torch.optim.Adam(inner.parameters(), lr=1e-2)
        for _ in range(30):
            opt.zero_grad()
            F.cross_entropy(inner(X[:60]), y[:60]).backward()
            opt.step()
        table = {x.numpy().tobytes(): renamed.get(int(t), 0) for x, t in zip(public, labels)}
        self.model = LookupNetwork(inner, table)
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)
"""
_ns: dict = {}
exec(compile(FORGER, "<forger>", "exec"), _ns)  # noqa: S102 - the forger, as a notebook would define it
LookupForger = _ns["DigitClassifier"]


def _given(held: Path) -> heldout.Given:
    setup, _ = grade_heldout.prepare(held)
    found = grade_heldout.given_for(grading.exercise(EXERCISE), setup)
    assert found is not None
    return found


@pytest.mark.slow
def test_lookup_forger_passes_the_public_split():
    """The hole --heldout closes: on the course's own split the lookup scores."""
    res = grading.check(EXERCISE, LookupForger, seed=3)
    assert res.passed, res.text()


@pytest.mark.slow
def test_on_the_instructors_images_the_forger_fails_and_right_answers_pass(held):
    given = _given(held)
    assert given.labels is not None and len(given.labels) == 200
    with heldout.giving(given):
        forged = grading.check(EXERCISE, LookupForger, seed=3)
        right = grading.check(EXERCISE, cap.DigitClassifier, seed=3)
    assert not forged.passed and forged.mistake == "below_bar", forged.text()
    assert f"below {given.bar:.1%}" in forged.text()
    assert right.passed, right.text()


class _Spy(cap.DigitClassifier):
    predicted: list = []

    def predict(self, X):
        _Spy.predicted.append(X.clone())
        return super().predict(X)


@pytest.mark.slow
def test_the_answer_predicts_the_instructors_images_and_never_sees_their_labels(held):
    given = _given(held)
    probe = grading.exercise(EXERCISE).probes[0]
    _Spy.predicted = []
    with heldout.giving(heldout.Given(given.images, None, 0.0)):  # what the sandbox is given
        ran = probe(_Spy, grading.Rand(0))
    assert any(torch.equal(X, given.images) for X in _Spy.predicted)
    assert isinstance(ran, dict) and set(ran) == {"preds", "seconds"}  # predictions out, nothing else
    with pytest.raises(RuntimeError, match="without their labels"):  # a verdict needs the judge's labels
        with heldout.giving(heldout.Given(given.images, None, 0.0)):
            grading.exercise(EXERCISE).finish_probe(0, ran)


def test_digit_from_image_matches_the_course_format(tmp_path):
    X, _ = load_digits(images=True)
    a = (X[5, 0].numpy() * 255).astype(np.uint8)  # light ink on dark: the other way round also works
    Image.fromarray(a).resize((40, 40), Image.Resampling.NEAREST).save(tmp_path / "five.png")
    Image.fromarray(255 - a).resize((40, 40), Image.Resampling.NEAREST).save(tmp_path / "five_dark.png")
    light, dark = digit_from_image(tmp_path / "five.png"), digit_from_image(tmp_path / "five_dark.png")
    assert light.shape == (1, 8, 8) and light.dtype == torch.float32
    assert torch.equal(light, dark)
    assert 0 <= float(light.min()) and float(light.max()) <= 1
    assert (light * 16 == (light * 16).round()).all()  # counts of ink pixels in 4x4 blocks
    Image.new("L", (20, 20), 255).save(tmp_path / "blank.png")
    with pytest.raises(ValueError, match="no ink"):
        digit_from_image(tmp_path / "blank.png")


def _copy(held: Path, tmp_path: Path) -> Path:
    root = tmp_path / "held"
    shutil.copytree(held, root)
    return root


@pytest.mark.parametrize("damage, message", [
    (lambda r: (r / "DigitClassifier" / "11").mkdir(), "'11' is not a class"),
    (lambda r: (r / "digitclassifier").mkdir(), "names no exercise"),
    (lambda r: (r / "DigitClassifier" / "3" / "notes.txt").write_text("x"), "not an image file"),
    (lambda r: (r / "DigitClassifier" / "3" / "bad.png").write_bytes(b"not a png"), "cannot read it as an image"),
    (lambda r: os.symlink("/etc/passwd", r / "DigitClassifier" / "3" / "x.png"), "not a regular file"),
    (lambda r: os.mkfifo(r / "DigitClassifier" / "3" / "pipe.png"), "not a regular file"),
    (lambda r: shutil.rmtree(r / "DigitClassifier"), "no exercise folders"),
    # an image bomb: 81 M pixels in 10 kB, refused from its header (before: decoded, gigabytes at 13000x13000)
    (lambda r: Image.new("1", (9000, 9000), 1).save(r / "DigitClassifier" / "3" / "big.png"), "9000x9000 pixels"),
])
def test_a_folder_that_cannot_be_used_is_refused_with_its_reason(held, tmp_path, damage, message):
    root = _copy(held, tmp_path)
    damage(root)
    with pytest.raises(HeldOutError, match=message):
        grade_heldout.prepare(root)


def test_the_bar_keeps_the_courses_ratio_of_target_to_reference():
    spec = grading.exercise(EXERCISE).heldout
    assert spec is not None
    assert heldout.calibrated_bar(spec, 0.995, 0.99) == spec.target  # not harder: the target
    assert heldout.calibrated_bar(spec, 0.99, 0.99) == spec.target
    assert heldout.calibrated_bar(spec, 0.853, 0.99) == pytest.approx(spec.target * 0.853 / 0.99)
    assert heldout.bar(0.97) == 0.97  # no held-out data given: the exercise's own target


ORDER_CHEAT = """
import torch
from torch import nn

from course_utils.datasets import load_digits


class OrderNet(nn.Module):
    # a nearest-centroid guess, smoothed into the best non-decreasing sequence of classes: right
    # for every image when the images arrive sorted by class folder (found by a review)
    def __init__(self, centroids, rename):
        super().__init__()
        self.lin = nn.Linear(64, 10)
        self.alpha = nn.Parameter(torch.ones(10))
        self.register_buffer("centroids", centroids)
        self.register_buffer("rename", rename)

    def forward(self, x):
        x = x.flatten(1)
        weak = torch.cdist(x, self.centroids).argmin(1)
        n = len(x)
        cost, back = torch.zeros(n + 1, 10), torch.zeros(n, 10, dtype=torch.long)
        for i in range(n):
            best, arg = torch.cummax(-cost[i], 0)
            cost[i + 1] = -best + (weak[i] != torch.arange(10)).float()
            back[i] = arg
        c, seq = int(cost[n].argmin()), []
        for i in range(n - 1, -1, -1):
            seq.append(c)
            c = int(back[i][c])
        pos = torch.tensor(seq[::-1])
        bonus = torch.zeros(n, 10)
        bonus[torch.arange(n), self.rename[pos]] = 100.0
        return self.lin(x) + bonus * self.alpha[self.rename[pos]].view(-1, 1)


class DigitClassifier:
    def fit(self, X, y):
        Xd, yd = load_digits(images=True)
        Xf, Xdf = X.flatten(1), Xd.flatten(1)
        rename = torch.arange(10)
        for xi, yi in zip(Xf, y):
            j = (Xdf == xi).all(1).nonzero()
            if len(j):
                rename[int(yd[j[0, 0]])] = int(yi)
        self.model = OrderNet(torch.stack([Xdf[yd == k].mean(0) for k in range(10)]), rename)
        opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        for _ in range(3):
            loss = nn.functional.cross_entropy(self.model.lin(Xf), y) + self.model.alpha.sum() * 0.01
            opt.zero_grad()
            loss.backward()
            opt.step()

    def predict(self, X):
        self.model.eval()
        with torch.no_grad():
            return self.model(X).argmax(1)
"""


def test_the_images_go_out_in_a_new_secret_order_for_each_submission(held):
    setup = {EXERCISE: {"folder": str((held / "DigitClassifier").resolve()), "bar": 0.97}}
    ex = grading.exercise(EXERCISE)
    a, b = grade_heldout.given_for(ex, setup), grade_heldout.given_for(ex, setup)
    assert a is not None and b is not None and a.labels is not None and b.labels is not None
    assert not torch.equal(a.labels, b.labels)  # 200 images: the same order twice has odds 1/200!
    assert not torch.equal(a.labels, a.labels.sort().values)  # not in class-folder order
    order = {x.numpy().tobytes(): int(t) for x, t in zip(a.images, a.labels)}
    assert all(order[x.numpy().tobytes()] == int(t) for x, t in zip(b.images, b.labels))  # pairs kept


@pytest.mark.slow
def test_an_answer_that_reads_the_labels_off_the_order_fails(held):
    ns: dict = {}
    exec(compile(ORDER_CHEAT, "<order cheat>", "exec"), ns)  # noqa: S102
    setup = {EXERCISE: {"folder": str((held / "DigitClassifier").resolve()), "bar": 0.955}}
    with heldout.giving(grade_heldout.given_for(grading.exercise(EXERCISE), setup)):
        res = grading.check(EXERCISE, ns["DigitClassifier"], seed=3)
    assert not res.passed and res.mistake in ("below_bar", "at_chance"), res.text()


@pytest.mark.parametrize("mode", ["RGBA", "LA", "I;16", "RGB", "P"])
def test_digit_from_image_reads_transparent_and_deep_images(tmp_path, mode):
    """Black ink on a transparent page (a paint program's export) and 16-bit scans: once read as
    blank or garbled (a review found both)."""
    X, _ = load_digits(images=True)
    ink = np.kron(X[5, 0].numpy(), np.ones((6, 6)))  # 48x48, 1 where the digit is
    if mode in ("RGBA", "LA"):
        a = np.zeros((48, 48, 4), dtype=np.uint8)
        a[..., 3] = np.rint(ink * 255).astype(np.uint8)  # black ink, alpha = the ink, no paper
        im = Image.fromarray(a, "RGBA").convert(mode)
    elif mode == "I;16":
        im = Image.fromarray(np.rint((1 - ink) * 65535).astype(np.uint16))
        assert im.mode.startswith("I;16")
    else:
        im = Image.fromarray(np.rint((1 - ink) * 255).astype(np.uint8)).convert(mode)
    im.save(tmp_path / "d.png")
    Image.fromarray(np.rint((1 - ink) * 255).astype(np.uint8)).save(tmp_path / "plain.png")
    assert torch.equal(digit_from_image(tmp_path / "d.png"), digit_from_image(tmp_path / "plain.png"))


@pytest.mark.slow
@pytest.mark.skipif(sandbox.works() is not None, reason=f"no bubblewrap sandbox here: {sandbox.works()}")
def test_the_sandboxed_grader_scores_a_forger_on_the_instructors_images(held, tmp_path):
    """End to end, as an instructor runs it: the same submission is correct without --heldout (the
    hole) and below the bar with it; the reference's measured bar is what the learner reads."""
    nb = nbformat.read(build.NOTEBOOKS / "12_capstone.ipynb", as_version=4)
    [cell] = [c for c in nb.cells if c.cell_type == "code" and re.search(r"^class DigitClassifier\b", c.source, re.M)]
    cell.source = FORGER
    (tmp_path / "subs" / "mallory").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "subs" / "mallory" / "12_capstone.ipynb")
    setup, _ = grade_heldout.prepare(held)

    def verdict(**kw):
        [rep] = grade.grade([tmp_path / "subs"], workers=1, timeout=120, **kw)
        [row] = [r for r in rep.rows if r.exercise == EXERCISE]
        return row

    public, own = verdict(), verdict(heldout=setup)
    assert public.status == "correct", public
    assert (own.status, own.mistake) == ("incorrect", "below_bar"), own
    assert f"below {setup[EXERCISE]['bar']:.1%}" in own.detail, own


def test_a_folder_every_sandbox_can_read_is_refused(held, tmp_path, monkeypatch):
    """The system folders and the Python environment are bound into every submission's sandbox:
    held-out images there would show their labels (the folder names) to the code being graded."""
    from course_utils.instructor import sandbox

    assert sandbox.readable_inside("/usr/share") == "/usr"
    assert sandbox.readable_inside(sys.prefix + "/lib") == os.path.realpath(sys.prefix)
    assert sandbox.readable_inside(tmp_path) is None  # /tmp is the sandbox's own, empty
    root = _copy(held, tmp_path)
    monkeypatch.setattr(sandbox, "_python_dirs", lambda: [str(tmp_path)])
    with pytest.raises(HeldOutError, match="every submission's sandbox can read"):
        grade_heldout.prepare(root)


@pytest.mark.slow
def test_images_the_reference_cannot_classify_are_refused(held):
    """Labels shuffled between the folders: the reference scores near chance, and a bar just under
    it would pass nearly anything, so the grader refuses the folder, saying why."""
    for f in sorted((held / "DigitClassifier").iterdir()):  # every class renamed to the next one
        f.rename(f.with_name(f.name + "_"))
    for f in sorted((held / "DigitClassifier").iterdir()):
        f.rename(f.with_name(str((int(f.name[:-1]) + 1) % 10)))
    with pytest.raises(HeldOutError, match="scores only"):
        grade_heldout.prepare(held)
