"""What the README and the instructor guide say about each lesson: ONE source, next to
:mod:`course_utils.lesson_times`.

Declared here, keyed by lesson stem (never by number, so a renumbering cannot leave a stale
line behind):

- :data:`SUMMARY`: the *what you learn* column of the README's syllabus;
- :data:`LIVE_CODE`: what an instructor types in front of the room, per lesson; a
  ``{mistake:EXERCISE.ID}`` in a note is replaced by that named mistake's message, as the
  exercise declares it (``course_utils/exercises/``);
- :data:`AGENDAS`: the guide's agendas, as lessons and the exercises done in class. Each
  block's minutes come from :mod:`lesson_times` (:meth:`Lesson.block_minutes`), so an agenda's
  clock, its total and its homework follow the time estimates.

``python -m course_utils build`` writes, between markers, the README's syllabus table and the
guide's agendas, live-code notes and stumbling points (every named mistake with its message);
``build --check`` fails when one of them differs from what this module generates, and when
README.md, CONTRIBUTING.md, ARCHITECTURE.md or a file in docs/ names a lesson by a wrong number
or title outside those blocks (:func:`stale_references`), or links to a README section or a
heading of its own that does not exist.

The mistake messages come from the graders, which only ``build`` (layer 5) may import: the
functions that need them take the exercises as an argument (:func:`exercise_docs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import lesson_times
from .lesson_times import LESSONS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "instructor_guide.md"
DOCS = ROOT / "docs"

# ------------------------------------------------------------------------- the declarations

SUMMARY: dict[str, str] = {
    "00_start_here": "how the notebooks, checks, hints, solutions and progress work",
    "01_tensors": "creation, dtypes and promotion, shapes and views, broadcasting, indexing, reductions, the NumPy bridge",
    "02_autograd": "graphs, `backward`, accumulation, `no_grad`, custom Functions, `gradcheck`",
    "03_nn_module": "parameters, buffers, containers, initialisation, `train()`/`eval()`, hooks",
    "04_data": "`Dataset`, `DataLoader`, collate functions, samplers, workers",
    "05_training_loop": "the five steps, evaluation, schedulers, clipping, early stopping, debugging",
    "06_losses_optimizers": "logits and log-sum-exp, cross-entropy's `weight`/`ignore_index`/`label_smoothing`, BCE with "
    "`pos_weight`, MSE/L1/Huber, SGD with momentum, Adam vs AdamW, parameter groups, `ReduceLROnPlateau`, your own `Optimizer`",
    "07_debugging": "NaN/inf hunting, `detect_anomaly`, overfitting one batch, gradient norms with hooks, `torch.profiler`, "
    "TensorBoard read back offline, diagnosing loss curves",
    "08_convolutions": "`Conv2d`, output sizes, pooling, batch norm, a small CNN",
    "09_persistence": "`state_dict`, resumable checkpoints, `weights_only`, safetensors, `torch.export`, ONNX",
    "10_performance": "devices, timing asynchronous work, mixed precision (autocast, `GradScaler`), activation "
    "checkpointing, `torch.compile` (graph breaks, recompiles, `dynamic=`)",
    "11_distributed": "DataParallel and why not, DDP with `torchrun`, `DistributedSampler`, `no_sync` with accumulation, "
    "`SyncBatchNorm`, FSDP2, multi-node launch",
    "12_capstone": "your own pieces from {04_data}, {05_training_loop} and {09_persistence} assembled into one pipeline: "
    "split, train with early stopping, resume bit for bit, export and check parity with onnxruntime, find three bugs, "
    "and a digit classifier graded on data you never see",
    "13_images_from_files": "a folder of PNG files read by a lazy `Dataset` and by `ImageFolder` with `transforms.v2`, "
    "a split by font measured against a random split, normalisation statistics from the training split, "
    "and an augmentation that keeps letters letters",
    "14_transfer_learning": "residual blocks and global average pooling, a small ResNet pretrained on letters "
    "(shipped, reproducible), the pretrained model's preprocessing, replacing the head wherever a model keeps "
    "it, freezing with BatchNorm, parameter groups; feature extraction vs fine-tuning vs from scratch on digits with five labels per class",
    "15_small_gpt": "a character tokenizer, `nn.Embedding` and learned positions, next-token targets, a bigram baseline, "
    "causal self-attention (checked against `F.scaled_dot_product_attention`), pre-norm blocks, weight tying, "
    "a tiny GPT trained on a CPU, sampling with temperature and top-k",
    "16_capstone_files": "your own pipeline from a folder of images to a fine-tuned, exported model: a split by font, "
    "training and evaluation transforms, early stopping and the checkpoint to keep, the preprocessing baked into "
    "the model, a `torch.export` program with a dynamic batch, and a classifier graded on fonts you never see",
}

LIVE_CODE: dict[str, str] = {
    "00_start_here": "run the warm-up's check before answering (✏️ not attempted), then on the colleague's "
    "version ({mistake:celsius_to_fahrenheit.integer_division}), answer it wrong on purpose "
    "(multiply by 5/9: {mistake:celsius_to_fahrenheit.inverted_ratio}), then right; open "
    "`from course_utils.dashboard import dashboard; dashboard()` so everyone knows where their progress is.",
    "01_tensors": "the dtype of `torch.tensor([1, 2]) / 2`; `view` failing after `t()` and `reshape` working; "
    "the `(N, 1)` against `(N,)` broadcast that silently gives `(N, N)`; `sum(dim=0)` versus `sum(dim=1)` on a "
    "2×3 tensor, asking the room which is which first, then `keepdim=True` "
    "({mistake:normalize_rows.missing_keepdim}).",
    "02_autograd": "`backward()` twice (accumulation), the error of a second `backward()` on a freed graph, a "
    "graph cut by `.item()` or `torch.tensor(...)`, an in-place op that breaks `backward()`, gradient descent "
    "in five lines.",
    "03_nn_module": "layers in a plain Python list ({mistake:Tower.unregistered_layers}), then `nn.ModuleList`; "
    "a tensor attribute against `nn.Parameter` and `register_buffer`; `model.eval()` changing Dropout.",
    "04_data": "a 10-line `Dataset`, what `DataLoader` does with `batch_size`/`shuffle`/`drop_last`, and the "
    "`stack expects each tensor to be equal size` error that `collate_fn` fixes; `num_workers` making a small "
    "dataset slower.",
    "05_training_loop": "the five steps with numbered comments, then the debugging clinic: remove `zero_grad()` "
    "and watch the loss ({mistake:train_one_epoch.forgot_zero_grad}), put softmax before `CrossEntropyLoss`.",
    "06_losses_optimizers": "`torch.exp` of a logit of 1000 (`inf`) against `logsumexp`; the target errors of "
    "`CrossEntropyLoss` (float targets, a `(N, 1)` target), then a log-softmax written naively "
    "({mistake:stable_log_softmax.overflow}); Adam against AdamW on the same model; which parameters get no "
    "weight decay.",
    "07_debugging": "a forward hook on every module that names the first one to produce NaN or inf; "
    "overfitting one batch as the first sanity check; per-layer gradient norms; a loss curve read aloud: "
    "what does this shape say?",
    "08_convolutions": "one output pixel of a `Conv2d` computed by hand; the output-size formula on the board, "
    "then `stride=2, padding=1` checked in code; the parameter count of a convolution against a `Linear` on "
    "the same image.",
    "09_persistence": "saving a `state_dict`; loading a pickled whole model with `weights_only=True` and reading "
    "the error; a checkpoint that resumes exactly (the optimizer's state and the RNG included); "
    "`torch.export` with a dynamic batch.",
    "10_performance": "moving a model and a batch to a device; timing with and without `torch.cuda.synchronize()` "
    "when a GPU is there (on a CPU: the same timer, and why it is honest there); "
    "`torch.autocast(\"cpu\", dtype=torch.bfloat16)` and the dtypes inside (slower on a CPU without bf16 "
    "instructions, so show it and move on); a `torch.compile` graph break.",
    "11_distributed": "what `DistributedSampler` gives each rank; launching the lesson's DDP script with "
    "`torchrun --nproc_per_node=2` from a cell (gloo on the CPU; it starts two extra processes, so on a shared "
    "machine run it once for the room); `no_sync` with gradient accumulation.",
    "12_capstone": "nothing new: show how the parts reuse {04_data}, {05_training_loop} and {09_persistence}, run "
    "one part's check, then let the room work; walk round during *Find the three bugs*.",
    "13_images_from_files": "train the CNN on a random split and on the font split side by side and ask the room "
    "which number they would report; show the horizontally flipped F, G and J; run `make_augment`'s check with "
    "a `RandomHorizontalFlip`.",
    "14_transfer_learning": "`main_path(x) + x` failing when a block halves the size, then the 1x1 projection; "
    "the frozen backbone whose `bn1.running_mean` still moves in training mode "
    "({mistake:freeze_all_but_fc.bn_stats_updated}); the three runs of section 8, asking the room to predict the "
    "order first.",
    "15_small_gpt": "`x` and `y` of one window decoded side by side (the shift); the causal mask printed, then its "
    "softmax row by row, and the diagonal masked by mistake ({mistake:causal_mask.diagonal_masked}); attention "
    "checked against `F.scaled_dot_product_attention(..., is_causal=True)`; the parameter count before and after "
    "tying; the same prompt sampled at temperatures 0.5 and 1.5.",
    "16_capstone_files": "the training loop's printout, asking the room which epoch to keep before running "
    "`pick_checkpoint`; the float batch that the exported `uint8` program refuses; then let the room work on "
    "`build_classifier`.",
}


@dataclass(frozen=True)
class Block:
    """A lesson in an agenda: its teaching (reading, examples, predictions) and the exercises
    done in class (``None``: all of them); the others are homework."""

    stem: str
    exercises: tuple[str, ...] | None = None

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(LESSONS[self.stem].exercises) if self.exercises is None else self.exercises

    @property
    def minutes(self) -> int:
        return LESSONS[self.stem].block_minutes(self.kept)

    @property
    def homework(self) -> tuple[str, ...]:
        return tuple(e for e in LESSONS[self.stem].exercises if e not in self.kept)


@dataclass(frozen=True)
class Pause:
    label: str  # "break", "lunch"
    minutes: int


@dataclass(frozen=True)
class Agenda:
    slug: str  # the heading, and its anchor
    goal: str
    sessions: tuple[tuple[Block | Pause, ...], ...]  # one session for a workshop of one day

    @property
    def blocks(self) -> list[Block]:
        return [b for s in self.sessions for b in s if isinstance(b, Block)]

    @property
    def teaching_minutes(self) -> int:
        return sum(b.minutes for b in self.blocks)

    @property
    def minutes(self) -> int:
        """Everything on the clock, pauses included."""
        return sum(item.minutes for s in self.sessions for item in s)

    @property
    def homework(self) -> list[tuple[str, tuple[str, ...]]]:
        """(stem, exercises) left for after the workshop: dropped exercises, then whole lessons."""
        listed = {b.stem for b in self.blocks}
        out = [(b.stem, b.homework) for b in self.blocks if b.homework]
        return out + [(stem, tuple(lesson.exercises)) for stem, lesson in LESSONS.items() if stem not in listed]

    @property
    def homework_minutes(self) -> int:
        listed = {b.stem for b in self.blocks}
        dropped = sum(LESSONS[b.stem].exercises[e] for b in self.blocks for e in b.homework)
        whole = sum(lesson.minutes for stem, lesson in LESSONS.items() if stem not in listed)
        return int(lesson_times.ROUND_TO * round((dropped + whole) / lesson_times.ROUND_TO))


BREAK = Pause("break", 15)
WRAP_UP = Pause("wrap-up: the room summary on screen, the homework", 10)
AGENDAS: tuple[Agenda, ...] = (
    Agenda("Half day", "the pieces of every model: tensors, gradients and modules. Learners leave able to "
           "read and write the code that the training loop of {05_training_loop} puts together.", ((
               Block("00_start_here"),
               Block("01_tensors", ("batch_flatten", "normalize_rows", "count_correct")),
               BREAK,
               Block("02_autograd", ("dfdx", "gradient_descent")),
               Block("03_nn_module", ("Tower",)),
               WRAP_UP,
           ),)),
    Agenda("Full day", "from tensors to a model trained, evaluated and stopped early. Learners leave able to "
           "write and debug a training loop on data of their own.", ((
               Block("00_start_here"),
               Block("01_tensors", ("image_to_tensor", "batch_flatten", "normalize_rows", "masked_mean", "count_correct")),
               BREAK,
               Block("02_autograd", ("dfdx", "jacobian", "gradient_descent")),
               Pause("lunch", 45),
               Block("03_nn_module", ("Tower", "MLP", "freeze_backbone", "predict_proba")),
               Block("04_data", ("WindowDataset", "pad_collate")),
               BREAK,
               Block("05_training_loop", ("train_one_epoch", "evaluate", "EarlyStopping")),
               WRAP_UP,
           ),)),
    Agenda("A course in sessions", "the whole course, every exercise done in class, in evening or weekly "
           "sessions of at most three hours, a 10-minute break between two lessons.", (
               (Block("00_start_here"), Block("01_tensors")),
               (Block("02_autograd"),),
               (Block("03_nn_module"),),
               (Block("04_data"),),
               (Block("05_training_loop"),),
               (Block("06_losses_optimizers"), Pause("break", 10), Block("07_debugging")),
               (Block("08_convolutions"),),
               (Block("09_persistence"),),
               (Block("10_performance"), Pause("break", 10), Block("11_distributed")),
               (Block("12_capstone"),),
               (Block("13_images_from_files"),),
               (Block("14_transfer_learning"),),
               (Block("15_small_gpt"),),
               (Block("16_capstone_files"),),
           )),
)

# ------------------------------------------------------------------------- rendering


def lesson_name(stem: str) -> str:
    """How the docs name a lesson: its number and title ("05 the training loop")."""
    return f"{stem[:2]} {LESSONS[stem].title}"


def _lessons(text: str) -> str:
    """``{NN_stem}`` in a declaration -> "lesson NN (title)"."""
    return re.sub(r"\{(\d\d_\w+)\}", lambda m: f"lesson {m.group(1)[:2]} ({LESSONS[m.group(1)].title})", text)


def _hm(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def _list(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def readme_syllabus() -> str:
    rows = ["| # | lesson | what you learn | time |", "|---|---|---|---:|"]
    for stem, lesson in LESSONS.items():
        rows.append(f"| {stem[:2]} | [{lesson.title}](notebooks/{stem}.ipynb) | {_lessons(SUMMARY[stem])} | "
                    f"{lesson_times.readme_time(stem)} |")
    return "\n".join(rows)


def _pauses(agenda: Agenda) -> list[tuple[str, int]]:
    pauses = [p for s in agenda.sessions for p in s if isinstance(p, Pause)]
    wrap = sum(p.minutes for p in pauses if p.label.startswith("wrap-up"))
    return [("breaks", sum(p.minutes for p in pauses) - wrap), ("wrap-up", wrap)]


def agenda_markdown(agenda: Agenda) -> str:
    several = len(agenda.sessions) > 1
    out = [f"### {agenda.slug}", "",
           f"**{_hm(agenda.minutes)}** on the clock"
           + (f" over {len(agenda.sessions)} sessions" if several else "")
           + f" ({_hm(agenda.teaching_minutes)} of lessons"
           + "".join(f", {_hm(m)} of {kind}" for kind, m in _pauses(agenda) if m)
           + f"). Goal: {_lessons(agenda.goal)}", ""]
    head = "| session | time | block | minutes | learners do in class |" if several else \
        "| time | block | minutes | learners do in class |"
    out += [head, "|---" * (head.count("|") - 1) + "|"]
    for i, session in enumerate(agenda.sessions, 1):
        t = 0
        for item in session:
            span = f"{_clock(t)}–{_clock(t + item.minutes)}"
            if isinstance(item, Block):
                every = item.exercises is None
                doing = f"all {len(item.kept)}: " if every and len(item.kept) > 1 else ""
                row = f"| {span} | **{lesson_name(item.stem)}** | {item.minutes} | {doing}{_list(item.kept)} |"
            else:
                row = f"| {span} | {item.label} | {item.minutes} | |"
            out.append((f"| {i} " if several else "") + row)
            t += item.minutes
    if agenda.homework:
        parts = []
        for stem, names in agenda.homework:
            listed = any(b.stem == stem for b in agenda.blocks)
            parts.append(f"{stem[:2]}'s {_list(names)}" if listed else f"all of {lesson_name(stem)}")
        out += ["", f"Homework, about {_hm(agenda.homework_minutes)} by the same estimates: " + "; ".join(parts) + "."]
    return "\n".join(out)


def guide_agendas() -> str:
    return "\n\n".join(agenda_markdown(a) for a in AGENDAS) + "\n"


@dataclass(frozen=True)
class ExerciseDoc:
    lesson: str
    name: str
    title: str
    mistakes: tuple[tuple[str, str], ...]  # (id, message)


def exercise_docs(exercises: Iterable[Any]) -> list[ExerciseDoc]:
    """The registry's exercises (objects with ``lesson``, ``name``, ``title`` and ``mistakes``,
    each with ``id`` and ``message``) as plain data, in lesson order."""
    docs = [ExerciseDoc(e.lesson, e.name, e.title, tuple((m.id, m.message) for m in e.mistakes)) for e in exercises]
    order = {stem: i for i, stem in enumerate(sorted({d.lesson for d in docs}))}
    return sorted(docs, key=lambda d: order[d.lesson])  # stable: each lesson keeps its declaration order


def _sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(?=\s+[A-Z`(\"']|$)", text)  # not at "i.e. the" or "e.g. a"
    first = m.group(1) if m else text
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _mistakes(exercises: list[ExerciseDoc], stem: str, text: str) -> str:
    def quote(m: re.Match[str]) -> str:
        name, mistake = m.group(1), m.group(2)
        for ex in exercises:
            if ex.lesson == stem and ex.name == name:
                for mid, message in ex.mistakes:
                    if mid == mistake:
                        return f"`{mid}`: “{_sentence(message, limit=1000)}”"
                raise ValueError(f"lesson_plan.LIVE_CODE[{stem!r}] quotes mistake {mistake!r} of `{name}`, "
                                 "which that exercise does not declare")
        raise ValueError(f"lesson_plan.LIVE_CODE[{stem!r}] quotes `{name}`, which is no exercise of {stem}")

    return re.sub(r"\{mistake:(\w+)\.(\w+)\}", quote, text)


def guide_live_code(exercises: list[ExerciseDoc]) -> str:
    return "\n".join(f"- **{lesson_name(stem)}**: {_mistakes(exercises, stem, _lessons(LIVE_CODE[stem]))}"
                     for stem in LESSONS) + "\n"


def stumbling_points(exercises: list[ExerciseDoc]) -> str:
    """Markdown: per lesson, per exercise, the named mistakes and what the grader tells learners."""
    lines: list[str] = []
    for stem in dict.fromkeys(e.lesson for e in exercises):
        lines += [f"#### {stem}", ""]
        for ex in (e for e in exercises if e.lesson == stem):
            lines.append(f"- **`{ex.name}`**: {ex.title}")
            lines += [f"  - `{mid}`: {_sentence(message)}" for mid, message in ex.mistakes]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------------- the generated blocks


def _markers(name: str) -> tuple[str, str]:
    return (f"<!-- {name}:begin (generated by `python -m course_utils build` from course_utils/lesson_plan.py; "
            "do not edit) -->", f"<!-- {name}:end -->")


AGENDAS_MARK = _markers("agendas")
LIVE_CODE_MARK = _markers("live-code")
STUMBLING_MARK = _markers("stumbling-points")


def _replace(text: str, marks: tuple[str, str], body: str, where: str) -> str:
    begin, end = marks
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{where} needs one generated block {begin} ... {end}")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def render_readme(text: str) -> str:
    return _replace(text, (lesson_times.README_BEGIN, lesson_times.README_END), readme_syllabus() + "\n", "README.md")


def render_guide(text: str, exercises: list[ExerciseDoc] | None) -> str:
    """The guide with its agendas and live-code notes regenerated, and its stumbling points
    when ``exercises`` is given (``None``: left as they are)."""
    where = "docs/instructor_guide.md"
    text = _replace(text, AGENDAS_MARK, guide_agendas(), where)
    text = _replace(text, LIVE_CODE_MARK, guide_live_code(exercises or []) if exercises is not None
                    else _block_body(text, LIVE_CODE_MARK), where)
    if exercises is not None:
        text = _replace(text, STUMBLING_MARK, stumbling_points(exercises), where)
    return text


def _block_body(text: str, marks: tuple[str, str]) -> str:
    return text.split(marks[0], 1)[1].split(marks[1], 1)[0].removeprefix("\n")


# ------------------------------------------------------------------------- the scan

GENERATED = re.compile(r"<!-- ([\w-]+):begin.*?<!-- \1:end -->|"
                       + re.escape(lesson_times.README_BEGIN) + ".*?" + re.escape(lesson_times.README_END), re.S)
_STEM = re.compile(r"\b(\d\d)_([a-z][a-z0-9_]*[a-z0-9])")
_BOLD = re.compile(r"\*\*(\d\d) ([^*\n]+)\*\*")
_PAREN = re.compile(r"\b(\d\d) \(([^)\n]+)\)")
_AFTER_LESSON = re.compile(r"\b[Ll]essons? (\d\d(?:(?:, | and | or |–|-|\+| to )\d\d)*)(?: ([^\s,.;:)]+(?: [^\s,.;:)]+){0,3}))?")
_README_LINK = re.compile(r"\]\((?:\.\./)*README\.md#([\w-]+)\)")
_README_NAMED = re.compile(r"README(?:'s|,) \[?[*\"]([^*\"\n]+)[*\"]")  # the README's *Quick start*


def _first_word(s: str) -> str:
    return s.strip("`*( ").split(" ")[0].lower()


def _own_title(number: str, words: str) -> bool:
    stem = next((s for s in LESSONS if s[:2] == number), None)
    return stem is not None and words.strip("`* ").lower().startswith(LESSONS[stem].title.lower())


def _other_lesson(number: str, words: str) -> str | None:
    """The lesson whose title ``words`` starts with, when it is not lesson ``number``."""
    w = words.strip("`* ").lower()
    for stem, lesson in LESSONS.items():
        if stem[:2] != number and w.startswith(lesson.title.lower()) and not _own_title(number, words):
            return stem
    return None


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def stale_references(text: str, where: str) -> list[str]:
    """Lesson references in ``text`` (outside generated blocks) that name a lesson by a number
    that does not exist, a stem that does not exist, or a number with another lesson's title."""
    numbers = {s[:2]: s for s in LESSONS}
    body = GENERATED.sub("", text)
    out: list[str] = []

    def bad(match: str, why: str) -> None:
        out.append(f"{where}: {match!r} {why}. Name lessons as course_utils/lesson_times.py does, or "
                   "generate the text (course_utils/lesson_plan.py).")

    for m in _STEM.finditer(body):
        token = m.group(0)
        if token not in LESSONS and not any(s.startswith(token + "_") for s in LESSONS):
            bad(token, "is not a lesson (the lessons are " + ", ".join(LESSONS) + ")")
    for m in _BOLD.finditer(body):
        number, words = m.groups()
        if number in numbers and not _own_title(number, words):
            bad(m.group(0), f"is lesson {number}, whose title is {LESSONS[numbers[number]].title!r}")
    for m in _PAREN.finditer(body):
        number, words = m.groups()
        other = _other_lesson(number, words)
        if number in numbers and other:
            bad(m.group(0), f"gives lesson {number} the title of {other}")
    for m in _AFTER_LESSON.finditer(body):
        for number in re.findall(r"\d\d", m.group(1)):
            if number not in numbers:
                bad(m.group(0), f"names lesson {number}, which does not exist")
        words = m.group(2) or ""
        last = re.findall(r"\d\d", m.group(1))[-1]
        other = _other_lesson(last, words)
        if other:
            bad(m.group(0), f"gives lesson {last} the title of {other}")
    return out


def readme_link_problems(text: str, where: str, readme: str) -> list[str]:
    """Links to a README section, and sections named in words ("the README's *Quick start*"),
    that README.md does not have."""
    headings = re.findall(r"^#+ (.+)$", readme, re.M)
    anchors = {slug(h) for h in headings}
    out = [f"{where}: links to README.md#{a}, a section README.md does not have"
           for a in _README_LINK.findall(text) if a not in anchors]
    out += [f"{where}: names the README's section {name!r}, which README.md does not have"
            for name in _README_NAMED.findall(text)
            if not any(h.lower().startswith(name.strip().lower()) for h in headings)]
    return out


def anchor_problems(text: str, where: str) -> list[str]:
    """Links to ``#anchor`` in the same file that match no heading."""
    anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    return [f"{where}: links to #{a}, which is no heading of this file"
            for a in re.findall(r"\]\(#([\w-]+)\)", text) if a not in anchors]


# ------------------------------------------------------------------------- check and write


def _docs() -> list[Path]:
    """The documents the scan reads: README.md, CONTRIBUTING.md, ARCHITECTURE.md and docs/."""
    top = [README, ROOT / "CONTRIBUTING.md", ROOT / "ARCHITECTURE.md"]
    return top + (sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else [])


def problems(exercises: list[ExerciseDoc] | None = None) -> list[str]:
    """Every generated block that differs from what this module generates, every stale lesson
    reference and every broken README or heading link in the documents of :func:`_docs`
    (empty when all agree).
    Without ``exercises`` the blocks that quote the graders (live-code notes, stumbling points)
    are not compared."""
    out: list[str] = []
    readme = README.read_text(encoding="utf-8") if README.exists() else ""
    for path, render in ((README, render_readme), (GUIDE, lambda t: render_guide(t, exercises))):
        rel = path.relative_to(ROOT).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
            if render(text) != text:
                out.append(f"{rel}: a generated block (syllabus, agendas, live-code notes or stumbling points) "
                           "differs from course_utils/lesson_plan.py, lesson_times.py or the exercises' mistakes. "
                           "Run `python -m course_utils build`; never edit between the markers.")
        except (OSError, ValueError) as exc:
            out.append(f"{rel}: {exc}")
    for path in _docs():
        if not path.exists():
            continue
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        out += stale_references(text, rel)
        out += anchor_problems(text, rel)
        if path != README:
            out += readme_link_problems(text, rel, readme)
    return out


def write(exercises: list[ExerciseDoc] | None = None) -> list[Path]:
    """Regenerate the blocks of README.md and the guide; returns the files changed."""
    return lesson_times.rewrite(((README, render_readme), (GUIDE, lambda t: render_guide(t, exercises))))
