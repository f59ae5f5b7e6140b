"""How long each lesson takes: ONE source for the lesson headers, the README and the guide.

Per lesson, :data:`LESSONS` holds the measured *Run All* time of its solution notebook (the
README's Performance section: ``build --execute``, one torch thread, 2-core CPU) and the
estimated working minutes of a learner alone: reading the prose (``READ_WPM`` words a minute),
running and looking at the example cells (``EXAMPLE_MIN`` each), the predict-the-output
questions, and each checked exercise (7 minutes is the median, a failed check or a hint
included; harder ones more). The reading and example minutes were counted from the notebooks
(``python benchmarks/run.py --only lessons``); learners who planned with the old headers
("about 60 minutes") under-budgeted by about 40 %, which these estimates correct.

``python -m course_utils build`` writes the total into three places, and ``build --check``
fails when any of them disagrees with this file:

- the ``**Time: ...`` line of each lesson's header cell (``solutions/NN_*.py`` and its
  ``.ipynb``, hence the learner notebook);
- the *time* column of the README's syllabus table (between the ``lesson-times`` markers);
- the lesson table of ``docs/instructor_guide.md`` (between the ``lesson-table`` markers).

The guide's agendas take each block's minutes from :meth:`Lesson.block_minutes`
(``course_utils/lesson_plan.py`` declares them, with the rest of what the docs say per lesson).

Change a time here, never in those files.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "instructor_guide.md"

READ_WPM = 120  # technical prose, read attentively
EXAMPLE_MIN = 0.75  # run an example cell and look at its output
EXERCISE_MIN = 7  # the median exercise, including a failed check or a hint
ROUND_TO = 5  # totals are rounded to this many minutes


@dataclass(frozen=True)
class Lesson:
    title: str
    run_all_s: float  # measured: the solution notebook, top to bottom, fresh kernel, 2-core CPU
    reading: float  # minutes: words of prose / READ_WPM
    examples: float  # minutes: example cells * EXAMPLE_MIN
    predictions: float  # minutes: predict-the-output questions, about one minute each
    exercises: dict[str, float] = field(default_factory=dict)  # checked exercise -> minutes

    @property
    def exercise_minutes(self) -> float:
        return sum(self.exercises.values())

    @property
    def minutes(self) -> int:
        """The learner's total, alone, rounded to ``ROUND_TO`` minutes."""
        return self.block_minutes(self.exercises)

    def block_minutes(self, exercises: Iterable[str]) -> int:
        """The lesson with only ``exercises`` done (an agenda's block; the others are homework):
        its reading, examples and predictions, plus those exercises, rounded to ``ROUND_TO``."""
        unknown = [e for e in exercises if e not in self.exercises]
        if unknown:
            raise KeyError(f"{self.title}: no exercise {', '.join(unknown)} in course_utils/lesson_times.py")
        raw = self.reading + self.examples + self.predictions + sum(self.exercises[e] for e in exercises)
        return max(ROUND_TO, int(ROUND_TO * round(raw / ROUND_TO)))


LESSONS: dict[str, Lesson] = {
    "00_start_here": Lesson("start here", 4.8, reading=9.4, examples=9.0, predictions=3, exercises={
        "celsius_to_fahrenheit": 4}),
    "01_tensors": Lesson("tensors", 4.4, reading=13.3, examples=21.8, predictions=4, exercises={
        "image_to_tensor": 8, "batch_flatten": 5, "normalize_rows": 6, "pairwise_distances": 9,
        "masked_mean": 7, "pick_scores": 7, "count_correct": 5, "attention": 10}),
    "02_autograd": Lesson("autograd", 7.4, reading=21.0, examples=27.0, predictions=4, exercises={
        "dfdx": 7, "jacobian": 9, "huber": 9, "hvp": 9, "gradient_is_wrong": 9,
        "MySiLU": 10, "gradient_descent": 9}),
    "03_nn_module": Lesson("nn.Module", 7.9, reading=19.6, examples=21.8, predictions=4, exercises={
        "Tower": 7, "MLP": 9, "RMSNorm": 10, "Linear": 12, "RunningMean": 10, "freeze_backbone": 9,
        "init_weights": 9, "predict_proba": 7}),
    "04_data": Lesson("data", 6.9, reading=21.4, examples=18.0, predictions=4, exercises={
        "WindowDataset": 8, "stratified_split": 9, "balanced_sampler": 9, "pad_collate": 8,
        "MiniLoader": 14, "ShardedRange": 9, "reseed_worker": 8}),
    "05_training_loop": Lesson("the training loop", 14.0, reading=24.0, examples=19.6, predictions=4, exercises={
        "train_one_epoch": 10, "evaluate": 8, "EarlyStopping": 9, "warmup_cosine": 9,
        "clip_grad_norm": 9, "accumulated_step": 9}),
    "06_losses_optimizers": Lesson("losses and optimizers", 8.3, reading=26.5, examples=18.8, predictions=4, exercises={
        "stable_log_softmax": 7, "cross_entropy_by_hand": 9, "pos_weight_for": 7, "param_groups_no_decay": 8,
        "SGDMomentum": 10}),
    "07_debugging": Lesson("debugging and observability", 11.3, reading=23.8, examples=13.5, predictions=4, exercises={
        "first_nonfinite": 8, "overfit_one_batch": 10, "grad_norms": 7, "read_scalars": 7, "diagnose": 9}),
    "08_convolutions": Lesson("convolutions", 6.9, reading=19.8, examples=16.5, predictions=4, exercises={
        "conv_output_size": 5, "conv2d_by_hand": 9, "conv_param_count": 9, "max_pool_by_hand": 8,
        "receptive_field": 8, "SmallVGG": 9}),
    "09_persistence": Lesson("saving and exporting", 10.7, reading=23.4, examples=33.0, predictions=4, exercises={
        "load_matching": 8, "load_state_dict_cpu": 8, "save_checkpoint": 8, "load_checkpoint": 10,
        "export_with_dynamic_batch": 8}),
    "10_performance": Lesson("performance on one device", 12.0, reading=24.0, examples=20.0, predictions=5, exercises={
        "to_device": 6, "median_time": 7, "amp_policy": 5, "amp_train_step": 9, "checkpointed_forward": 8}),
    "11_distributed": Lesson("distributed training", 9.6, reading=20.0, examples=16.0, predictions=3, exercises={
        "shard_indices": 7, "data_parallel_grads": 9, "rank_loss_scale": 7, "accumulate_grads": 8,
        "merge_batch_stats": 8}),
    "12_capstone": Lesson("capstone", 16.0, reading=20.5, examples=15.0, predictions=4, exercises={
        "split_loaders": 10, "fit_with_early_stopping": 12, "confusion_matrix": 8, "resume_training": 12,
        "onnx_parity": 10, "train_and_score": 10, "DigitClassifier": 45}),
    "13_images_from_files": Lesson("images from files", 28.2, reading=22.0, examples=15.0, predictions=4, exercises={
        "GlyphFiles": 13, "split_by_font": 8, "train_stats": 8, "make_transform": 6, "make_augment": 7}),
    "14_transfer_learning": Lesson("residual networks and transfer learning", 24.1, reading=18.0, examples=15.0,
                                   predictions=3, exercises={
        "ResidualBlock": 10, "global_avg_pool": 6, "preprocess": 8, "replace_head": 9, "freeze_all_but_fc": 9,
        "finetune_param_groups": 8}),
    "15_small_gpt": Lesson("sequences and a small GPT", 24.2, reading=20.3, examples=19.5, predictions=4, exercises={
        "next_token_batch": 7, "causal_mask": 6, "causal_attention": 8, "pre_norm_block": 7, "tie_weights": 7,
        "sample_next": 9}),
    "16_capstone_files": Lesson("the capstone on real files", 26.2, reading=16.0, examples=13.5, predictions=3,
                                exercises={
        "make_transforms": 8, "should_stop": 8, "pick_checkpoint": 7, "Deployable": 7, "export_model": 8,
        "build_classifier": 25}),
}

_NUMBERS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve"]


def _count(n: int) -> str:
    return _NUMBERS[n] if n < len(_NUMBERS) else str(n)


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s".replace(".0 s", " s")


# ------------------------------------------------------------------------- the lesson header

TIME_LINE = re.compile(r"^\*\*Time: .*$", re.MULTILINE)  # in a markdown cell
PY_TIME_LINE = re.compile(r"^# (\*\*Time: .*)$", re.MULTILINE)  # the same line in the percent-format .py


def header_line(stem: str) -> str:
    """The generated sentence of a lesson's header cell (one markdown line)."""
    lesson = LESSONS[stem]
    n = len(lesson.exercises)
    ex = f"{_count(n)} checked exercise{'s' if n != 1 else ''}"
    return (f"**Time: about {lesson.minutes} minutes** on your own, the {ex} included (about "
            f"{round(lesson.exercise_minutes)} of those minutes). *Run All* alone takes about "
            f"{_seconds(lesson.run_all_s)} on a 2-core CPU.")


def _header_problem(stem: str, source: str, where: str) -> str | None:
    found = TIME_LINE.findall(source)
    want = header_line(stem)
    if found == [want]:
        return None
    if not found:
        return (f"{where}: the header cell has no `**Time: ...` line. Add a line `**Time: about 0 minutes**` "
                "to the first markdown cell of the lesson; `python -m course_utils build` fills it in from "
                "course_utils/lesson_times.py.")
    if len(found) > 1:
        return f"{where}: the header cell has {len(found)} `**Time: ...` lines; keep one."
    return (f"{where}: the header says {found[0]!r} but course_utils/lesson_times.py gives {want!r}. "
            "Change times in course_utils/lesson_times.py, then run `python -m course_utils build`.")


def _py_header(text: str) -> tuple[int, int]:
    """Start and end offsets of the first markdown cell of a percent-format file."""
    start = text.index("# %% [markdown]")
    nxt = text.find("\n# %%", start + 1)
    return start, len(text) if nxt < 0 else nxt


def _sync_source(stem: str, source: str) -> str:
    if not TIME_LINE.search(source):
        raise ValueError(f"{stem}: no `**Time: ...` line in the header cell to write the time into")
    return TIME_LINE.sub(lambda m: header_line(stem), source, count=1)


# ------------------------------------------------------------------------- README and guide

README_BEGIN = "<!-- lesson-times: generated by `python -m course_utils build` from course_utils/lesson_times.py -->"
README_END = "<!-- /lesson-times -->"
GUIDE_BEGIN = "<!-- lesson-table:begin (generated by `python -m course_utils build` from course_utils/lesson_times.py; do not edit) -->"
GUIDE_END = "<!-- lesson-table:end -->"


def _block(text: str, begin: str, end: str) -> tuple[str, str, str] | None:
    if begin not in text or end not in text:
        return None
    head, rest = text.split(begin, 1)
    body, tail = rest.split(end, 1)
    return head, body, tail


def readme_time(stem: str) -> str:
    return f"~{LESSONS[stem].minutes} min"


def _sync_readme_table(body: str) -> str:
    """The syllabus table with its last column (time) set from :data:`LESSONS`."""
    by_number = {stem[:2]: stem for stem in LESSONS}
    out = []
    for line in body.split("\n"):
        cells = line.split("|")
        if line.startswith("|") and len(cells) >= 4:
            number = cells[1].strip()
            if number in by_number:
                cells[-2] = f" {readme_time(by_number[number])} "
                line = "|".join(cells)
        out.append(line)
    return "\n".join(out)


def render_readme(text: str) -> str:
    parts = _block(text, README_BEGIN, README_END)
    if parts is None:
        raise ValueError(f"README.md has no syllabus block ({README_BEGIN} ... {README_END})")
    head, body, tail = parts
    return f"{head}{README_BEGIN}{_sync_readme_table(body)}{README_END}{tail}"


def guide_table() -> str:
    rows = ["| lesson | reading | examples | predictions | exercises | learner time, alone | Run All (2-core CPU) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for stem, lesson in LESSONS.items():
        rows.append(f"| {stem[:2]} {lesson.title} | {lesson.reading:.0f} min | {lesson.examples:.0f} min | "
                    f"{lesson.predictions:.0f} min | {len(lesson.exercises)}: {lesson.exercise_minutes:.0f} min | "
                    f"**~{lesson.minutes} min** | {_seconds(lesson.run_all_s)} |")
    longest = max((m, name, stem) for stem, lesson in LESSONS.items() for name, m in lesson.exercises.items())
    total = sum(lesson.minutes for lesson in LESSONS.values())
    return "\n".join(rows + [
        "",
        textwrap.fill(f"The whole course: about {total // 60} h {total % 60:02d} min for a learner alone. Each exercise's "
        f"estimate is in `course_utils/lesson_times.py` ({EXERCISE_MIN} minutes is the median; the longest is "
        f"`{longest[1]}` of {longest[2][:2]}, {longest[0]:.0f} minutes). *Run All* is the solution notebook "
        "top to bottom in a fresh kernel with one torch thread (`python -m course_utils build --execute`), "
        "the figures of the README's Performance section.", width=95),
    ])


def render_guide(text: str) -> str:
    parts = _block(text, GUIDE_BEGIN, GUIDE_END)
    if parts is None:
        raise ValueError(f"docs/instructor_guide.md has no lesson table block ({GUIDE_BEGIN} ... {GUIDE_END})")
    head, _, tail = parts
    return f"{head}{GUIDE_BEGIN}\n{guide_table()}\n{GUIDE_END}{tail}"


# ------------------------------------------------------------------------- check and write


def problems(stems: list[str] | None = None) -> list[str]:
    """Every place whose lesson time disagrees with :data:`LESSONS` (empty when all agree)."""
    out: list[str] = []
    stems = sorted(LESSONS) if stems is None else stems
    on_disk = sorted(p.stem for p in SOLUTIONS.glob("[0-9][0-9]_*.py"))
    for stem in on_disk:
        if stem not in LESSONS:
            out.append(f"solutions/{stem}.py has no entry in course_utils/lesson_times.py.")
    for stem in stems:
        if stem not in LESSONS:
            continue
        py = SOLUTIONS / f"{stem}.py"
        if py.exists():
            text = py.read_text(encoding="utf-8")
            start, end = _py_header(text)
            text = "\n".join(PY_TIME_LINE.findall(text[start:end]))
            p = _header_problem(stem, text, f"solutions/{stem}.py")
            if p:
                out.append(p)
        nb = SOLUTIONS / f"{stem}.ipynb"
        if nb.exists():
            cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
            first = next((c for c in cells if c.get("cell_type") == "markdown"), {"source": ""})
            src = first["source"] if isinstance(first["source"], str) else "".join(first["source"])
            p = _header_problem(stem, src, f"solutions/{stem}.ipynb")
            if p:
                out.append(p)
    for path, render in ((README, render_readme), (GUIDE, render_guide)):
        rel = path.relative_to(ROOT)
        try:
            text = path.read_text(encoding="utf-8")
            if render(text) != text:
                out.append(f"{rel}: its lesson times disagree with course_utils/lesson_times.py. "
                           "Run `python -m course_utils build`.")
        except (OSError, ValueError) as exc:
            out.append(f"{rel}: {exc}")
    return out


def write(stems: list[str] | None = None) -> list[Path]:
    """Write the times into the solution headers (.py and .ipynb), README and guide; returns the
    files changed. Only the ``**Time: ...`` line and the generated blocks change."""
    import nbformat

    changed: list[Path] = []
    stems = sorted(LESSONS) if stems is None else [s for s in stems if s in LESSONS]
    for stem in stems:
        py = SOLUTIONS / f"{stem}.py"
        if py.exists():
            text = py.read_text(encoding="utf-8")
            start, end = _py_header(text)
            new = text[:start] + PY_TIME_LINE.sub("# " + header_line(stem).replace("\\", "\\\\"), text[start:end], count=1) + text[end:]
            if new != text:
                py.write_text(new, encoding="utf-8")
                changed.append(py)
        path = SOLUTIONS / f"{stem}.ipynb"
        if path.exists():
            nb = nbformat.read(path, as_version=4)
            first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
            if first is not None and TIME_LINE.search(first.source):
                new_src = _sync_source(stem, first.source)
                if new_src != first.source:
                    first.source = new_src
                    nbformat.write(nb, path)
                    changed.append(path)
    return changed + rewrite(((README, render_readme), (GUIDE, render_guide)))


def rewrite(renders: Iterable[tuple[Path, Callable[[str], str]]]) -> list[Path]:
    """Pass each file's text through its render function; write and return those that changed."""
    changed = []
    for path, render in renders:
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
