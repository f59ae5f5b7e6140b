"""Forged verdicts: answers that compute nothing and ask the grader for the reference.

Issue 23, item 1: the grader once told the course's frames from the learner's by file name, and
gave the real reference back to the process that runs answers when a stub "of the course" asked
for it (the executor's ``guard`` op, now gone). An answer whose code is compiled under a file name
inside the staged course passed as course code there, and simply called the reference. No
reference is in that process any more: an exercise whose check needs one does that part in the
judge, on the plain data the answer's half returned (``Exercise.finish``). Every forgery below
gets the grade of an answer that computes nothing: the hidden reference's error. The list has one
forgery of each exercise whose check used to build its reference next to the answer.

One batch is graded once (sandbox on, as an instructor grades); each notebook is the learner's
notebook with some answer cells replaced by forgeries (one student, one lesson).
"""

from __future__ import annotations

import re

import nbformat
import pytest

from course_utils import build
from course_utils.grading import registry
from course_utils.instructor import grade, sandbox

pytestmark = [pytest.mark.slow,  # grades real notebooks in the sandbox
              pytest.mark.skipif(sandbox.works() is not None, reason=f"no bubblewrap sandbox here: {sandbox.works()}")]

# a file name inside the course package as the sandbox sees it
COURSE_FILE = sandbox.COURSE_IN_SANDBOX + "/course_utils/exercises/_forged.py"


def _reference_path(exercise_id: str) -> tuple[str, str]:
    ref = registry.get(exercise_id).reference
    return ref.__module__, ref.__name__


def _compiled_as(source: str, name: str, file: str = COURSE_FILE) -> str:
    """Notebook code binding ``name`` to an object whose unpickling (in the process that runs
    answers) compiles ``source`` under the file name ``file`` and returns what it defines as
    ``name``: the pickle is the learner's, so is every code object's file name in it."""
    expr = (f"(lambda ns: (exec(compile({source!r}, {file!r}, 'exec'), ns), ns[{name!r}])[1])"
            "({'__name__': 'course_forgery'})")
    return ("class _Forge:\n"
            "    def __reduce__(self):\n"
            f"        return (eval, ({expr!r},))\n"
            f"{name} = _Forge()\n")


def forged_function(exercise_id: str) -> str:
    module, name = _reference_path(exercise_id)
    src = (f"def {name}(*args, **kwargs):\n"
           "    import importlib\n"
           f"    return getattr(importlib.import_module({module!r}), {name!r})(*args, **kwargs)\n")
    return _compiled_as(src, name)


def forged_class(exercise_id: str) -> str:
    """A module whose every use is forwarded to an instance of the reference class."""
    module, name = _reference_path(exercise_id)
    src = ("import importlib\n"
           "import torch\n"
           f"class {name}(torch.nn.Module):\n"
           "    def __init__(self, *args, **kwargs):\n"
           "        super().__init__()\n"
           f"        ref = getattr(importlib.import_module({module!r}), {name!r})(*args, **kwargs)\n"
           "        self._parameters = ref._parameters\n"
           "        self._buffers = ref._buffers\n"
           "        self._modules = ref._modules\n"
           "        self.__dict__['_ref'] = ref\n"
           "    def forward(self, *args, **kwargs):\n"
           "        return type(self._ref).forward(self, *args, **kwargs)\n"
           "    def __getattr__(self, key):\n"
           "        try:\n"
           "            return super().__getattr__(key)\n"
           "        except AttributeError:\n"
           "            return getattr(self.__dict__['_ref'], key)\n")
    return _compiled_as(src, name)


def closure_thief(exercise_id: str) -> str:
    """No course file name: a first call raises the hidden-reference message from code "of a
    library" (a site-packages file name, no learner frame in the traceback), so the grader hands
    the executor the reference; a later call takes it out of the guard's closure."""
    module, name = _reference_path(exercise_id)
    hidden = f"{sandbox.HIDDEN_MESSAGE} ({module}.{name})"
    src = (f"def {name}(*args, **kwargs):\n"
           "    import sys\n"
           "    for g in getattr(sys.modules['__main__'], '_GUARDS', []):\n"
           "        for cell in getattr(g, '__closure__', None) or ():\n"
           "            obj = cell.cell_contents\n"
           f"            if callable(obj) and getattr(obj, '__name__', '') == {name!r}:\n"
           "                return obj(*args, **kwargs)\n"
           f"    raise RuntimeError({hidden!r})\n")
    return _compiled_as(src, name, "/usr/lib/python3/site-packages/numbers_extra.py")


# (student, exercise id, answer cell code); rows of one student are cells of one notebook
def course_variant(dotted: str, call: str = ""):
    """A wrong answer of the course's own that is the reference with a switch (``_loop()``,
    ``_variant``), imported from the staged course and handed in: the review of 2026-11-29 forged
    32 exercises so. The staged course has none of them (``instructor/judge_side.py``)."""
    module, _, attr = dotted.rpartition(".")

    def make(exercise_id: str) -> str:
        return f"from {module} import {attr} as _course\n{exercise_id.split('.')[1]} = _course{call}\n"
    return make


def prop_wrapper(module: str, params: str):
    """A function of the learner's own around the lesson prop that re-exports the course's answer
    (lesson 05's demos train with ``lab.train_one_epoch``): the notebook's course keeps it for the
    demos, the executor's (where the answer runs) has it cut."""
    def make(exercise_id: str) -> str:
        name = exercise_id.split(".")[1]
        return (f"def {name}({params}):\n    from {module} import {name} as course\n"
                f"    return course({params})\n")
    return make


FORGERIES = [
    ("l02_variant", "02_autograd.gradient_descent",
     course_variant("course_utils.exercises.l02_autograd.gradient_descent._loop", "()")),
    ("l05_prop", "05_training_loop.train_one_epoch",
     prop_wrapper("course_utils.lesson_props.l05_training_lab", "model, loader, loss_fn, optimizer")),
    ("l05_prop", "05_training_loop.evaluate", prop_wrapper("course_utils.lesson_props.l05_training_lab",
                                                           "model, loader, loss_fn")),
    ("l05_variant", "05_training_loop.accumulated_step",
     course_variant("course_utils.exercises.l05_training_loop.accumulated_step._acc_with")),
    ("l09_variant", "09_persistence.load_matching",
     course_variant("course_utils.exercises.l09_persistence.load_matching._variant")),
    ("l12_variant", "12_capstone.confusion_matrix",
     course_variant("course_utils.exercises.l12_capstone.confusion_matrix._counts")),
    ("l00_course_file", "00_start_here.celsius_to_fahrenheit", forged_function),
    ("l00_closure", "00_start_here.celsius_to_fahrenheit", closure_thief),
    ("l01_course_file", "01_tensors.normalize_rows", forged_function),
    ("l01_course_file", "01_tensors.masked_mean", forged_function),
    ("l03_course_file", "03_nn_module.predict_proba", forged_function),
    ("l03_course_file", "03_nn_module.Linear", forged_class),
    ("l03_course_file", "03_nn_module.MLP", forged_class),
    ("l03_course_file", "03_nn_module.Tower", forged_class),
    ("l03_closure", "03_nn_module.Linear", closure_thief),
    ("l04_course_file", "04_data.MiniLoader", forged_function),
    ("l07_course_file", "07_debugging.first_nonfinite", forged_function),
    ("l07_course_file", "07_debugging.diagnose", forged_function),
    ("l08_course_file", "08_convolutions.SmallVGG", forged_class),
    ("l09_course_file", "09_persistence.save_checkpoint", forged_function),
    ("l09_course_file", "09_persistence.load_checkpoint", forged_function),
    ("l10_course_file", "10_performance.checkpointed_forward", forged_function),
]


def _notebook(lesson: str, forged: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.read(build.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    for name, code in forged:
        found = [c for c in nb.cells if c.cell_type == "code" and re.search(rf"^(def|class) {name}\b", c.source, re.M)]
        assert len(found) == 1, (lesson, name, len(found))
        found[0].source = code
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("forgery")
    notebooks: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for student, exercise_id, make in FORGERIES:
        lesson, name = exercise_id.split(".")
        notebooks.setdefault((student, lesson), []).append((name, make(exercise_id)))
    for (student, lesson), forged in notebooks.items():
        (subs / student).mkdir()
        nbformat.write(_notebook(lesson, forged), subs / student / f"{lesson}.ipynb")
    reports = grade.grade([subs], workers=2, timeout=120)
    return {(rep.student, row.exercise): row for rep in reports for row in rep.rows}


@pytest.mark.parametrize("student, exercise_id", [(s, e) for s, e, _ in FORGERIES])
def test_a_forgery_that_calls_the_reference_is_never_correct(graded, student, exercise_id):
    row = graded[(student, exercise_id)]
    assert row.status != "correct", (student, exercise_id, row)
    assert row.status in ("incorrect", "error"), row


def test_the_executor_holds_no_reference_and_trusts_no_file_name():
    """What used to decide, by file name, who may call the reference next to the answer is gone."""
    from course_utils.instructor import judge

    for name in ("RUN_NEEDS_REFERENCE", "_install_guard", "_from_course", "_GUARDS", "_reference_source"):
        assert not hasattr(judge, name), name


# ----------------------------------------------------------------------------- the course's own objects
# What the executor's staged course still holds is importable there: an answer that *is* one of its
# objects, handed in as the notebook's kernel exports it (``from course_utils... import X as answer``
# pickles X by reference, and the executor imports it from its staged course), computes nothing of
# the learner's. Each row below was graded ``correct`` (issue 23): to_device's ``_variant`` stayed
# staged because it names itself (recursion), export_model's module was a working Deployable, and
# lesson 14's ``BasicBlock`` prop is a working ResidualBlock. Graded one by one through the judge and
# the sandboxed executor (no notebook: the export is what the kernel sends).
COURSE_OBJECTS = [
    ("10_performance.to_device", "course_utils.exercises.l10_performance.to_device", "_variant", False),
    ("16_capstone_files.Deployable", "course_utils.exercises.l16_capstone_files.export_model", "Wrapped", False),
    ("14_transfer_learning.ResidualBlock", "course_utils.lesson_props.l14_transfer_learning", "BasicBlock", False),
    # a thin wrapper of the learner's own around the prop, as a learner would write it
    ("14_transfer_learning.ResidualBlock", "course_utils.lesson_props.l14_transfer_learning", "BasicBlock", True),
]
NEEDS_TORCHVISION = ("13_", "14_", "16_")


@pytest.mark.parametrize("exercise_id, module, name, subclass", COURSE_OBJECTS)
def test_an_object_of_the_staged_course_handed_in_is_not_correct(tmp_path, exercise_id, module, name, subclass):
    import importlib
    from dataclasses import asdict

    import cloudpickle

    from course_utils.instructor import judge

    lesson = exercise_id.split(".")[0]
    if lesson.startswith(NEEDS_TORCHVISION):
        pytest.importorskip("torchvision")
    answer = getattr(importlib.import_module(module), name)
    if subclass:  # defined in the notebook: pickled by value, its base by reference
        answer = type(exercise_id.split(".")[1], (answer,), {"__module__": "__main__"})
    tmp_path.chmod(0o755)
    course = sandbox.stage_course(tmp_path / "course", lesson, executor=True)
    job = {"lesson": lesson, "uid": sandbox.UID_BASE + sandbox.UID_RANGE - 1, "course": str(course),
           "limits": asdict(sandbox.Limits()), "no_sandbox": False}
    payload = b"PICKLE" + cloudpickle.dumps(answer)
    verdict = judge.judge_submission(lesson, {exercise_id: (payload, None)}, judge._starter(job))[exercise_id]
    assert verdict["status"] in ("incorrect", "error"), verdict


# ----------------------------------------------------------------------------- rewritten probes
# A probe ``probe(answer, rand)`` needs the answer, so the grader runs it in the executor, in the
# answer's process, and takes its "passed" on the executor's word: an answer can rewrite it there
# (``probe.__code__ = ...``) before it runs. Where a probe adds a rule on top of cases whose values
# the judge compared with the hidden reference's, that bypasses the rule; where the probe *is* the
# check (the capstone's held-out accuracy), a stub that trains nothing was scored correct (hostile
# review). The held-out accuracy is now judged in the judge (``Exercise.finish_probe``), on the
# predictions the probe returns.

REWRITE_PROBES = '''
PROBES = ("_no_loops", "_heldout_probe", "_probe_gradient", "_probe_unknown_device", "_probe_distribution",
          "_real_workers_probe", "_probe_unsafe", "_probe_unsafe_load")
def _rewrite_probes():
    import sys
    for name, m in list(sys.modules.items()):
        if name.startswith("course_utils.exercises.") and m is not None:
            for f in list(vars(m).values()):
                if callable(f) and getattr(f, "__name__", "") in PROBES:
                    f.__code__ = (lambda answer, r: None).__code__
'''

PROBE_ATTACKS = {
    # a stub that trains nothing and predicts class 0 for every image
    "capstone_stub": ("12_capstone", "DigitClassifier", REWRITE_PROBES + '''
import torch
class DigitClassifier:
    def __init__(self):
        self.model = None
    def fit(self, X, y):
        _rewrite_probes()
        self.model = torch.nn.Linear(64, 10)
        return self
    def predict(self, X):
        return torch.zeros(len(X), dtype=torch.int64)
'''),
    # right values, computed with the Python loops the exercise forbids
    "loops": ("01_tensors", "pairwise_distances", REWRITE_PROBES + '''
import torch
def pairwise_distances(a, b):
    _rewrite_probes()
    out = torch.zeros(len(a), len(b), dtype=a.dtype)
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = torch.sqrt(((a[i] - b[j]) ** 2).sum())
    return out
'''),
    # the looping answer bound where no reader of the notebook sees a definition
    "exec_loops": ("01_tensors", "pairwise_distances", '''
import torch
exec("def pairwise_distances(a, b):\\n    return torch.stack([torch.stack([(p - q).norm() for q in b]) for p in a])")
'''),
    # a clean definition for the reader, then the looping one that the kernel keeps (F4: only
    # top-level `def`s were read, so the clean one was judged)
    "shadowed_loops": ("01_tensors", "pairwise_distances", '''
import torch
def pairwise_distances(a, b):
    return torch.cdist(a, b)
if True:
    def pairwise_distances(a, b):
        return torch.stack([torch.stack([(p - q).norm() for q in b]) for p in a])
'''),
    # wrong answers that only a probe catches, each of which rewrites that probe: the probe's
    # verdict is the judge's (finish_probe), on what the probe returned (nothing, here)
    "amp_unknown": ("10_performance", "amp_policy", REWRITE_PROBES + '''
import torch
def amp_policy(device_type, bf16_supported):
    _rewrite_probes()
    if device_type in ("cpu", "cuda") and bf16_supported:
        return torch.bfloat16, False
    if device_type == "cuda":
        return torch.float16, True
    return (torch.float32, False) if device_type == "cpu" else (torch.bfloat16, False)
'''),
    "linear_own_generator": ("03_nn_module", "Linear", REWRITE_PROBES + '''
import torch
from torch import nn
class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        _rewrite_probes()
        g, bound = torch.Generator().manual_seed(0), in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound, generator=g))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound, generator=g))
        else:
            self.register_parameter("bias", None)
    def forward(self, x):
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias
'''),
    "unsafe_loader": ("09_persistence", "load_state_dict_cpu", REWRITE_PROBES + '''
import torch
def load_state_dict_cpu(path):
    _rewrite_probes()
    state_dict = torch.load(path, map_location="cpu", weights_only=False)
    def unwrapped(k):
        while k.startswith(("module.", "_orig_mod.")):
            k = k.split(".", 1)[1]
        return k
    return {unwrapped(k): v for k, v in state_dict.items()}
'''),
    # right values, with a rewritten probe: what the judge is sent (nothing) is judged, not "passed"
    "rank_rewrites": ("11_distributed", "rank_loss_scale", REWRITE_PROBES + '''
def rank_loss_scale(shard_sizes):
    _rewrite_probes()
    return [len(shard_sizes) * n / sum(shard_sizes) for n in shard_sizes]
'''),
    "sharded_rewrites": ("04_data", "ShardedRange", REWRITE_PROBES + '''
from torch.utils.data import IterableDataset, get_worker_info
class ShardedRange(IterableDataset):
    def __init__(self, start, end):
        _rewrite_probes()
        self.start, self.end = start, end
    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))
'''),
    # right values through the built-in the exercise forbids (Exercise.forbid): the rule is watched
    # where the answer runs, in the executor; it used to be watched only in the judge, which saw no
    # call of the answer's, so both were scored correct
    "rule_sdpa": ("01_tensors", "attention", '''
import torch.nn.functional as F
def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
'''),
    "rule_linear": ("03_nn_module", "Linear", '''
import torch
from torch import nn
class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        bound = in_features ** -0.5
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)
    def forward(self, x):
        return nn.functional.linear(x, self.weight, self.bias)
'''),
    # a re: pattern of the exercise's rule (every convolution kernel), reached through torch.ops
    "rule_conv": ("08_convolutions", "conv2d_by_hand", '''
import torch
def conv2d_by_hand(x, weight, bias=None, stride=1, padding=0, dilation=1):
    pair = lambda v: [v, v] if isinstance(v, int) else list(v)
    if isinstance(padding, int) or len(padding) == 2:
        return torch.ops.aten.convolution(x, weight, bias, pair(stride), pair(padding), pair(dilation),
                                          False, [0, 0], 1)
    left, right, top, bottom = padding
    x = torch.nn.functional.pad(x, (left, right, top, bottom))
    return torch.ops.aten.convolution(x, weight, bias, pair(stride), [0, 0], pair(dilation), False, [0, 0], 1)
'''),
    # the runner's after-call checks read the judge's own process, where the answer never runs:
    # both were scored correct (a hostile review, 2026-11-29); the executor now reports them
    "draws_global_rng": ("00_start_here", "celsius_to_fahrenheit", '''
import torch
def celsius_to_fahrenheit(celsius):
    torch.rand(1)
    return celsius * 9 / 5 + 32
'''),
    "leaves_grad_off": ("00_start_here", "celsius_to_fahrenheit", '''
import torch
def celsius_to_fahrenheit(celsius):
    torch.set_grad_enabled(False)
    return celsius * 9 / 5 + 32
'''),
    # a looping function exported under the clean def's name: the text's def is not what ran
    "swapped_code": ("01_tensors", "pairwise_distances", '''
def pairwise_distances(a, b):
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(-1).sqrt()
def _looping(a, b):
    import torch
    return torch.stack([torch.stack([(u - v).pow(2).sum().sqrt() for v in b]) for u in a])
pairwise_distances.__code__ = _looping.__code__
'''),
}

# (student, exercise name, the mistake the judge names)
JUDGED_PROBES = [("draws_global_rng", "celsius_to_fahrenheit", "global_rng"),
                 ("leaves_grad_off", "celsius_to_fahrenheit", "grad_left_off"),
                 ("swapped_code", "pairwise_distances", "rule_unverifiable"),
                 ("amp_unknown", "amp_policy", "unknown_device"),
                 ("linear_own_generator", "Linear", "init_not_global_rng"),
                 ("unsafe_loader", "load_state_dict_cpu", "unsafe_load"),
                 ("rank_rewrites", "rank_loss_scale", "not_the_big_batch"),
                 ("sharded_rewrites", "ShardedRange", "missing_items")]


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    subs = tmp_path_factory.mktemp("probes")
    for student, (lesson, name, source) in PROBE_ATTACKS.items():
        (subs / student).mkdir()
        nbformat.write(_notebook(lesson, [(name, source)]), subs / student / f"{lesson}.ipynb")
    reports = grade.grade([subs], workers=2, timeout=120)
    return {(rep.student, row.exercise.split(".")[1]): row for rep in reports for row in rep.rows}


def test_a_stub_that_rewrites_the_capstones_held_out_probe_is_not_correct(rewritten):
    row = rewritten[("capstone_stub", "DigitClassifier")]
    # the rewritten probe returns nothing for the judge to score (one that returned its stub's
    # predictions would be at_chance): incorrect either way
    assert (row.status, row.mistake) == ("incorrect", "returned_none"), row


def test_an_answer_that_rewrites_a_rule_probe_is_not_correct(rewritten):
    """A probe that only reads the answer's code (no Python loops, 01 pairwise_distances) runs in
    the judge, on the function compiled from the notebook's text (grading.reads_code_only): the
    answer's rewrite of the executor's copy changes nothing. It was an open hole (xfail) before.
    Its text walks ``sys.modules``, from where it could as well rebind the answer itself, so the
    judge does not take the notebook's ``def`` for the function that ran (static_answer.py)."""
    row = rewritten[("loops", "pairwise_distances")]
    assert (row.status, row.mistake) == ("incorrect", "rule_unverifiable"), row


def test_a_rule_on_code_the_notebook_does_not_show_is_not_taken_on_trust(rewritten):
    row = rewritten[("exec_loops", "pairwise_distances")]
    assert (row.status, row.mistake) == ("incorrect", "rule_unverifiable"), row
    assert "def pairwise_distances(...)" in row.detail


def test_a_definition_shadowed_under_a_compound_statement_is_not_judged_by_the_one_above(rewritten):
    row = rewritten[("shadowed_loops", "pairwise_distances")]
    assert (row.status, row.mistake) == ("incorrect", "rule_unverifiable"), row


@pytest.mark.parametrize("student, name, mistake", JUDGED_PROBES)
def test_a_rewritten_probe_whose_verdict_is_the_judges_still_names_the_mistake(rewritten, student, name, mistake):
    """Before, the executor's "passed" was taken: each of these answers was scored correct."""
    row = rewritten[(student, name)]
    assert (row.status, row.mistake) == ("incorrect", mistake), row


@pytest.mark.parametrize("student, name, mistake, used", [
    ("rule_sdpa", "attention", "broke_rule", "Your code used `torch.nn.functional.scaled_dot_product_attention`"),
    ("rule_linear", "Linear", "broke_rule", "Your code used `torch.nn.functional.linear`"),
    ("rule_conv", "conv2d_by_hand", "used_builtin_conv", "(`convolution")])
def test_a_forbidden_built_in_is_seen_where_the_answer_runs(rewritten, student, name, mistake, used):
    row = rewritten[(student, name)]
    assert (row.status, row.mistake) == ("incorrect", mistake), row
    assert used in row.detail, row
