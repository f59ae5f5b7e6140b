"""Lesson 13 (images from files): what the generic grader tests cannot see.

- each exercise's red team: wrong answers named by their mistake, right answers written
  differently, cheats;
- the geometric probe of ``make_augment`` on known transforms (flips and large rotations are
  seen, shifts, blur and inversion are not);
- the lesson's data come from ``course_utils.glyphs`` and ImageFolder numbers them as
  ``GlyphFiles`` does.

Needs torchvision (course_utils/extras.py): conftest deselects this file where it does not
import; CI runs it in the vision environment.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torchvision")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader, Dataset, Subset  # noqa: E402
from torchvision import datasets  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms.v2 import functional as TF  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.answers import l13_images_from_files as ref  # noqa: E402
from course_utils.exercises.l13_images_from_files import _kit  # noqa: E402
from course_utils.glyphs import make_image_folder  # noqa: E402

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables  # noqa: E402

LESSON = "13_images_from_files"
GF, SF, TS, MT, MA = (f"{LESSON}.{n}" for n in ("GlyphFiles", "split_by_font", "train_stats", "make_transform",
                                                  "make_augment"))
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat


# --------------------------------------------------------------------------- GlyphFiles
class _Base(Dataset):
    """A right answer written differently: ImageFolder-like, torchvision's decoder."""

    def __init__(self, root, transform=None):
        self.root, self.transform = Path(root), transform
        with open(self.root / "labels.csv", newline="") as f:
            self.items = [row for row in list(csv.reader(f))[1:] if row[1].strip()]
        self.classes = sorted({row[1] for row in self.items})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return len(self.items)

    def load(self, path):
        img = torchvision_decode(path)
        return TF.to_dtype(img, torch.float32, scale=True)

    def __getitem__(self, i):
        file, label, _ = self.items[i]
        x = self.load(self.root / file)
        return (self.transform(x) if self.transform else x), torch.tensor(self.class_to_idx[label])


def torchvision_decode(path):
    from torchvision.io import ImageReadMode, decode_image

    return decode_image(str(path), mode=ImageReadMode.GRAY)


valid(GF)(type("DecodeImage", (_Base,), {}))


@valid(GF)
class ToTensorOfPil(_Base):
    def load(self, path):
        return v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])(Image.open(path).convert("L"))


@valid(GF)
class NumpyLabelsInt(ref.GlyphFiles):
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x, np.int64(y).item()


@valid(GF)
class FirstChannelOfWhatever(_Base):
    """Decodes each file as it is stored, then keeps its first channel: the RGB files hold the grey
    three times, so channel 0 is the grey."""

    def load(self, path):
        with Image.open(path) as im:
            x = TF.pil_to_tensor(im)
        return x[:1].float() / 255


@valid(GF)
class SplitLinesMeanOfChannels(_Base):
    """Reads the CSV by hand, keeps the rows whose label is not empty, and averages the channels of
    whatever the file stores (three equal ones for the RGB files)."""

    def __init__(self, root, transform=None):
        self.root, self.transform = Path(root), transform
        lines = (self.root / "labels.csv").read_text().splitlines()[1:]
        self.items = [line.split(",") for line in lines if line.split(",")[1]]
        self.classes = sorted({row[1] for row in self.items})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def load(self, path):
        with Image.open(path) as im:
            return TF.to_dtype(TF.pil_to_tensor(im), torch.float32, scale=True).mean(0, keepdim=True)


@wrong(GF, "keeps_unlabelled")
class EveryRow(_Base):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        with open(self.root / "labels.csv", newline="") as f:
            self.items = list(csv.reader(f))[1:]
        self.classes = sorted({row[1] for row in self.items})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


@wrong(GF, "unlabelled_class")
class ClassesFromEveryRow(_Base):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        with open(self.root / "labels.csv", newline="") as f:
            self.classes = sorted({row[1] for row in list(csv.reader(f))[1:]})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


@wrong(GF, "mixed_modes")
class AsStored(_Base):
    def load(self, path):
        with Image.open(path) as im:
            return TF.pil_to_tensor(im).float() / 255


@wrong(GF, "labels_not_sorted")
class FirstSeen(_Base):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.classes = list(dict.fromkeys(row[1] for row in self.items))
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


@wrong(GF, "not_scaled")
class RawFloat(_Base):
    def load(self, path):
        return torchvision_decode(path).float()


@wrong(GF, "wrong_dtype")
class RawBytes(_Base):
    def load(self, path):
        return torchvision_decode(path)


@wrong(GF, "no_channel_dim")
class NoChannel(_Base):
    def load(self, path):
        return torch.from_numpy(np.asarray(Image.open(path).convert("L"), dtype=np.float32) / 255)


@wrong(GF, "rgb")
class AsRgb(_Base):
    def load(self, path):
        return TF.to_dtype(TF.to_image(Image.open(path).convert("RGB")), torch.float32, scale=True)


@wrong(GF, "path_not_under_root")
class FromCwd(_Base):
    def __getitem__(self, i):
        file, label, _ = self.items[i]
        return self.load(file), self.class_to_idx[label]


@wrong(GF, "not_lazy")
class Eager(_Base):
    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.cache = [_Base.__getitem__(self, i) for i in range(len(self))]

    def __getitem__(self, i):
        return self.cache[i]


@cheat(GF)
class ImageFolderNumbers(_Base):
    """ImageFolder's order of files (sorted paths), not the CSV's rows."""

    def __init__(self, root, transform=None):
        super().__init__(root, transform)
        self.items.sort()


@cheat(GF)
class NoFiles(_Base):
    def __getitem__(self, i):
        return torch.zeros(1, 12, 12), self.class_to_idx[self.items[i][1]]


# --------------------------------------------------------------------------- split_by_font
def _mask_split(fonts, held_out):
    t = torch.tensor([f in held_out for f in fonts])
    return (~t).nonzero().flatten(), t.nonzero().flatten()


@valid(SF)
def numpy_choice_in_torch(fonts, n_test_fonts, generator):
    names = sorted(set(fonts))
    picked = torch.multinomial(torch.ones(len(names)), n_test_fonts, generator=generator).tolist()
    return _mask_split(fonts, {names[j] for j in picked})


@valid(SF)
def loop_over_items(fonts, n_test_fonts, generator):
    names = sorted(dict.fromkeys(fonts))
    held = [names[j] for j in torch.randperm(len(names), generator=generator)[:n_test_fonts]]
    train, test = [], []
    for i, f in enumerate(fonts):
        (test if f in held else train).append(i)
    return torch.tensor(train, dtype=torch.long), torch.tensor(test, dtype=torch.long)


@valid(SF)
def via_python_random(fonts, n_test_fonts, generator):
    seed = int(torch.randint(0, 2**31, (1,), generator=generator))
    held = set(random.Random(seed).sample(sorted(set(fonts)), n_test_fonts))
    return _mask_split(fonts, held)


@wrong(SF, "mutated_fonts")
def sf_sorts_the_callers_list(fonts, n_test_fonts, generator):
    fonts.sort()  # the indices then point into the sorted list, not the caller's order
    return ref.split_by_font(fonts, n_test_fonts, generator)


@wrong(SF, "font_leak")
def random_items(fonts, n_test_fonts, generator):
    perm = torch.randperm(len(fonts), generator=generator)
    k = len(fonts) * n_test_fonts // len(set(fonts))
    return perm[k:], perm[:k]


@wrong(SF, "depends_on_order")
def first_seen_order(fonts, n_test_fonts, generator):
    names = list(dict.fromkeys(fonts))
    return _mask_split(fonts, {names[j] for j in torch.randperm(len(names), generator=generator)[:n_test_fonts]})


@wrong(SF, "not_shuffled")
def last_fonts(fonts, n_test_fonts, generator):
    return _mask_split(fonts, set(sorted(set(fonts))[-n_test_fonts:]))


@wrong(SF, "ignores_generator")
def global_rng(fonts, n_test_fonts, generator):
    names = sorted(set(fonts))
    return _mask_split(fonts, {names[j] for j in torch.randperm(len(names))[:n_test_fonts]})


@wrong(SF, "item_in_both")
def also_in_train(fonts, n_test_fonts, generator):
    tr, te = ref.split_by_font(fonts, n_test_fonts, generator)
    return torch.cat([tr, te[:1]]), te


@wrong(SF, "counted_images")
def n_items(fonts, n_test_fonts, generator):
    perm = torch.randperm(len(fonts), generator=generator)
    return perm[n_test_fonts:], perm[:n_test_fonts]


@cheat(SF)
def everything_in_train(fonts, n_test_fonts, generator):
    return torch.arange(len(fonts)), torch.arange(0)


@cheat(SF)
def one_font_too_many(fonts, n_test_fonts, generator):
    return ref.split_by_font(fonts, n_test_fonts + 1, generator)


# --------------------------------------------------------------------------- train_stats
def _stack(dataset, idx):
    return torch.stack([dataset[i][0] for i in idx.tolist()])


@valid(TS)
def stack_then_reduce(dataset, train_idx):
    X = _stack(dataset, train_idx).transpose(0, 1).flatten(1)
    return X.mean(1), X.std(1)  # sample std: accepted


@valid(TS)
def welford_over_batches(dataset, train_idx):
    n, mean, m2 = 0, None, None
    for xb, _ in DataLoader(Subset(dataset, train_idx), batch_size=7):
        flat = xb.double().transpose(0, 1).flatten(1)
        k, bm = flat.shape[1], flat.mean(1)
        bm2 = ((flat - bm[:, None]) ** 2).sum(1)
        if mean is None:
            n, mean, m2 = k, bm, bm2
        else:
            delta = bm - mean
            mean = mean + delta * k / (n + k)
            m2 = m2 + bm2 + delta**2 * n * k / (n + k)
            n += k
    return mean.float(), (m2 / n).sqrt().float()


@valid(TS)
def float64_results(dataset, train_idx):
    m, s = ref.train_stats(dataset, train_idx)
    return m.double(), s.double()


@wrong(TS, "averaged_stds")
def per_image_stds(dataset, train_idx):
    X = _stack(dataset, train_idx)
    return X.mean(dim=(0, 2, 3)), X.flatten(2).std(2).mean(0)


@wrong(TS, "averaged_stds")
def per_batch_stds(dataset, train_idx):
    stds = [xb.transpose(0, 1).flatten(1).std(1) for xb, _ in DataLoader(Subset(dataset, train_idx), batch_size=16)]
    return ref.train_stats(dataset, train_idx)[0], torch.stack(stds).mean(0)


@wrong(TS, "mutated_input")
def ts_normalises_the_dataset_in_place(dataset, train_idx):
    X = torch.stack([dataset[i][0] for i in train_idx.tolist()])
    mean, std = X.mean((0, 2, 3)), X.std((0, 2, 3))
    for i in range(len(dataset)):
        dataset[i][0].sub_(mean[:, None, None]).div_(std[:, None, None])
    return mean, std


@wrong(TS, "used_all_items")
def whole_dataset(dataset, train_idx):
    return ref.train_stats(dataset, torch.arange(len(dataset)))


@wrong(TS, "not_per_channel")
def one_number(dataset, train_idx):
    X = _stack(dataset, train_idx)
    return X.mean().reshape(1), X.std().reshape(1)


@wrong(TS, "per_pixel")
def per_pixel(dataset, train_idx):
    X = _stack(dataset, train_idx)
    return X.mean(0), X.std(0)


@cheat(TS)
def zeros_and_ones(dataset, train_idx):
    c = dataset[0][0].shape[0]
    return torch.zeros(c), torch.ones(c)


@cheat(TS)
def first_batch_only(dataset, train_idx):
    return ref.train_stats(dataset, train_idx[:16])


# --------------------------------------------------------------------------- make_transform
@valid(MT)
def grayscale_after_scaling(mean, std):
    return v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Grayscale(1), v2.Normalize(mean, std)])


@valid(MT)
def lambda_first_channel(mean, std):
    return v2.Compose([v2.ToImage(), v2.Lambda(lambda t: t[:1]), v2.ToDtype(torch.float32, scale=True),
                       v2.Normalize(mean, std)])


@valid(MT)
def by_hand(mean, std):
    def transform(img):
        x = torch.from_numpy(np.asarray(img.convert("L"), dtype=np.float32) / 255)[None]
        return (x - mean[0]) / std[0]
    return transform


@valid(MT)
def mt_grayscale_last_after_normalising_rgb(mean, std):
    """Grey of three equal normalised channels is that channel: Grayscale may come last."""
    return v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean * 3, std * 3),
                       v2.Grayscale(1)])


@wrong(MT, "normalize_before_scale")
def normalize_first(mean, std):
    return v2.Compose([v2.ToImage(), v2.Grayscale(1), v2.Normalize(mean, std), v2.ToDtype(torch.float32, scale=True)])


@wrong(MT, "not_scaled")
def to_dtype_without_scale(mean, std):
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32), v2.Normalize(mean, std)])


@wrong(MT, "ignored_stats")
def imagenet(mean, std):
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                       v2.Normalize([0.485], [0.229])])


@wrong(MT, "kept_rgb")
def no_grayscale(mean, std):
    return v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean * 3, std * 3)])


@wrong(MT, "not_normalised")
def no_normalize(mean, std):
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


@cheat(MT)
def normalised_twice(mean, std):
    n = v2.Normalize(mean, std)
    return v2.Compose([v2.Grayscale(1), v2.ToImage(), v2.ToDtype(torch.float32, scale=True), n, n])


@cheat(MT)
def swapped_mean_and_std(mean, std):
    return ref.make_transform(std, mean)


# --------------------------------------------------------------------------- make_augment
@valid(MA)
def small_rotation():
    return v2.RandomRotation(15)


@valid(MA)
def perspective_and_blur():
    return v2.Compose([v2.RandomPerspective(0.2, p=1.0), v2.GaussianBlur(3, sigma=(0.1, 1.0))])


@valid(MA)
def invert_sometimes():
    return v2.RandomInvert(p=0.5)  # the data has dark-on-light glyphs too


@valid(MA)
def elastic():
    return v2.ElasticTransform(alpha=20.0)


@wrong(MA, "in_place")
def ma_brightness_in_place():
    def augment(x):
        return x.mul_(0.8 + 0.4 * torch.rand(1).item()).clamp_(0, 1)
    return augment


@wrong(MA, "horizontal_flip")
def hflip():
    return v2.RandomHorizontalFlip(p=0.5)


@wrong(MA, "vertical_flip")
def vflip():
    return v2.Compose([v2.RandomVerticalFlip(p=0.5), v2.RandomAffine(degrees=5)])


@wrong(MA, "rotates_too_far")
def rotation_90():
    return v2.RandomChoice([v2.RandomRotation((90, 90)), v2.RandomRotation((-90, -90))])


@wrong(MA, "rotates_too_far")
def rotation_60():
    return v2.RandomRotation(60)


@wrong(MA, "not_random")
def fixed_rotation():
    return v2.RandomRotation((10, 10))


@wrong(MA, "normalised")
def normalises_again():
    return v2.Compose([v2.RandomAffine(10, translate=(0.1, 0.1)), v2.Normalize([0.5], [0.5])])


@wrong(MA, "no_change")
def identity():
    return v2.Identity()


@cheat(MA)
def flip_one_time_in_four():
    return v2.Compose([v2.RandomHorizontalFlip(p=0.25), v2.RandomRotation(5)])


@cheat(MA)
def flip_then_rotate_back():
    return v2.Compose([v2.RandomRotation((180, 180)), v2.RandomAffine(degrees=5)])


# --------------------------------------------------------------------------- the tables
@pytest.mark.parametrize("answer,mistake", Tables.all(WRONG))
def test_wrong_answer_is_rejected(request, answer, mistake):
    rejected(request.node.callspec.id.split("-")[0], answer, mistake)


@pytest.mark.parametrize("answer", Tables.all(VALID))
def test_valid_answer_is_accepted(request, answer):
    accepted(request.node.callspec.id.split("-")[0], answer)


@pytest.mark.parametrize("answer", Tables.all(CHEATS))
def test_cheat_is_rejected(request, answer):
    rejected(request.node.callspec.id.split("-")[0], answer)


def test_every_exercise_has_its_red_team():
    _tables.assert_counts(LESSON)


# --------------------------------------------------------------------------- the probe and the data
@pytest.mark.parametrize("how,expected", [
    (lambda x: x, "kept"),
    (lambda x: TF.affine(x, angle=10.0, translate=[3, -2], scale=1.1, shear=[0.0]), "kept"),
    (lambda x: TF.horizontal_flip(x), "hflip"),
    (lambda x: TF.vertical_flip(x), "vflip"),
    (lambda x: TF.rotate(x, 90.0), "rotated"),
    (lambda x: TF.rotate(x, 180.0), "rotated"),
], ids=["identity", "small_affine", "hflip", "vflip", "rot90", "rot180"])
def test_the_probe_names_what_a_transform_did(how, expected):
    glyphs = _kit.probe_glyphs()
    seen = [_kit.what_it_did(how(x), k) for k, x in enumerate(glyphs)]
    assert seen.count(expected) >= len(seen) - 1, seen


def test_the_probe_glyphs_are_light_on_dark():
    g = _kit.probe_glyphs()
    assert g.shape == (12, 1, 28, 28) and g.dtype == torch.float32
    assert bool((g.flatten(1).median(1).values < 0.5).all())


def test_image_folder_numbers_the_classes_as_glyph_files_does(tmp_path):
    root = make_image_folder(tmp_path, chars="JA7", per_font=1, fonts=("DejaVuSans", "cmr10"), size=10)
    folder = datasets.ImageFolder(root, transform=v2.Compose([v2.Grayscale(1), v2.ToImage(),
                                                              v2.ToDtype(torch.float32, scale=True)]))
    ours = ref.GlyphFiles(root)
    assert folder.class_to_idx == ours.class_to_idx == {"7": 0, "A": 1, "J": 2}
    by_file = {Path(p).relative_to(root).as_posix(): i for i, (p, _) in enumerate(folder.samples)}
    for k, (file, _) in enumerate(ours.rows):
        x, y = ours[k]
        fx, fy = folder[by_file[file]]
        assert y == fy and torch.allclose(x, fx, atol=1e-6)


def test_checks_leave_the_global_rng_alone():
    state = torch.get_rng_state()
    for name in ("GlyphFiles", "split_by_font", "train_stats", "make_transform", "make_augment"):
        grading.check(f"{LESSON}.{name}", getattr(ref, name), seed=3)
    assert torch.equal(state, torch.get_rng_state())


# --------------------------------------------------------------------------- issue 27: one grey level
def test_grayscale_of_the_uint8_tensor_is_one_grey_level_down_and_accepted():
    """Review answer mtf1 failed as bare wrong_values (0.0078): torchvision's Grayscale of a uint8 tensor
    truncates 0.9999 p to p - 1, a right pipeline one grey level down."""
    def grey_on_bytes(mean, std):
        return v2.Compose([v2.PILToTensor(), v2.Grayscale(1), v2.ToDtype(torch.float32, scale=True),
                           v2.Normalize(mean, std)])
    accepted(MT, grey_on_bytes)


def test_a_mean_two_grey_levels_off_is_still_rejected():
    def mean_off(mean, std):
        return ref.make_transform([mean[0] + 2 / 255], std)
    rejected(MT, mean_off)
