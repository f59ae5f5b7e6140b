"""What a sandbox sees of the course: no reference, and no wrong answer that is one with a switch.

The hostile review of 2026-11-29 handed in the course's own wrong answers, imported from the
staged course (``_loop()``, ``_variant``, ``_split_with``...): many are the reference with one
knob, and with their default arguments *are* the reference, so 32 exercises scored ``correct``
without computing anything. The judge names mistakes with them; the sandbox never needs them
(``course_utils/instructor/judge_side.py``). The batch that grades such forgeries end to end is
``tests/test_forgery.py``; this file reads the staged code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from course_utils.instructor import sandbox

# (module, name): the forgers of the review that a sandbox could import
FORGERS = [
    ("l02_autograd.gradient_descent", "_loop"), ("l04_data.balanced_sampler", "_sampler_with"),
    ("l04_data.stratified_split", "_split_with"), ("l05_training_loop.accumulated_step", "_acc_with"),
    ("l05_training_loop.evaluate", "_eval_with"), ("l05_training_loop.train_one_epoch", "_epoch"),
    ("l06_losses_optimizers.cross_entropy_by_hand", "_variant"), ("l06_losses_optimizers.pos_weight_for", "_ratio"),
    ("l07_debugging.diagnose", "_rules"), ("l07_debugging.overfit_one_batch", "_train"),
    ("l08_convolutions.conv2d_by_hand", "_conv_variant"), ("l08_convolutions.max_pool_by_hand", "_pool_variant"),
    ("l08_convolutions.receptive_field", "_rf_wrong"), ("l09_persistence.export_with_dynamic_batch", "_variant"),
    ("l09_persistence.load_matching", "_variant"), ("l09_persistence.load_state_dict_cpu", "_loaded_renamed"),
    ("l09_persistence.save_checkpoint", "_saved_with"), ("l10_performance.amp_policy", "_policy"),
    ("l10_performance.amp_train_step", "_variant"), ("l10_performance.median_time", "_variant"),
    ("l10_performance._checkpointed_forward_wrong", "_variant"), ("l11_distributed.accumulate_grads", "_variant"),
    ("l11_distributed.shard_indices", "_variant"), ("l12_capstone.confusion_matrix", "_counts"),
    ("l12_capstone.fit_with_early_stopping", "_loop"), ("l12_capstone.resume_training", "_loop"),
    ("l12_capstone.train_and_score", "_with_bugs"), ("l14_transfer_learning.global_avg_pool", "_flatten"),
    ("l16_capstone_files.export_model", "_variant"),
    # kept once by naming itself (its recursion): the shaking counted a definition's own reads
    ("l10_performance.to_device", "_variant"),
]


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    return sandbox.stage_course(tmp_path_factory.mktemp("staged"), "05_training_loop", executor=True) / "course_utils"


def _top_level(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


@pytest.mark.parametrize("module, name", FORGERS)
def test_the_reviews_forgers_are_not_in_the_staged_course(staged, module, name):
    path = staged.joinpath("exercises", *module.split(".")).with_suffix(".py")
    assert path.exists(), path
    assert name not in _top_level(path)
    assert name in _top_level(sandbox.PACKAGE.joinpath("exercises", *module.split(".")).with_suffix(".py"))


def test_the_module_export_model_exports_is_no_deployable():
    """export_model's check builds the module it hands the answer in the sandbox, so that class
    stays staged; it is built from the case, not as ``Deployable(model, mean, std)`` is (it was a
    working Deployable a submission could import, tests/test_forgery.py)."""
    import inspect

    from course_utils.exercises.l16_capstone_files import export_model

    assert list(inspect.signature(export_model.Wrapped).parameters) == ["seed", "k", "mean", "std"]


def test_no_mistake_keeps_its_example_and_no_judge_half_is_staged(staged):
    for path in sorted((staged / "exercises").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name == "Mistake":
                example = node.args[2] if len(node.args) >= 3 else next(
                    (k.value for k in node.keywords if k.arg == "example"), ast.Constant(None))
                assert isinstance(example, ast.Constant) and example.value is None, f"{path.name}:{node.lineno}"
            elif name == "Exercise":
                for k in node.keywords:
                    if k.arg in ("finish", "finish_probe", "supply"):
                        assert isinstance(k.value, ast.Constant) and k.value.value is None, f"{path.name}:{k.arg}"


def test_the_executor_has_none_of_the_lessons_own_answers(tmp_path):
    """Lesson 05's demos train with ``lab.train_one_epoch``, the course's answer, so the course its
    notebook runs in keeps it; the executor, where answers run and no demo does, has it cut: a
    learner's function that only calls it scores nothing."""
    def body(course: Path) -> str:
        text = (course / "course_utils" / "answers" / "l05_training_loop.py").read_text(encoding="utf-8")
        node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == "train_one_epoch")
        return ast.unparse(node.body[0])

    assert not body(sandbox.stage_course(tmp_path / "notebook", "05_training_loop")).startswith("raise RuntimeError(")
    assert body(sandbox.stage_course(tmp_path / "executor", "05_training_loop", executor=True)).startswith(
        "raise RuntimeError(")


def _files(course: Path) -> dict[str, bytes]:
    return {str(p.relative_to(course)): p.read_bytes() for p in sorted(course.rglob("*")) if p.is_file()}


def test_a_run_cuts_the_exercises_once_and_a_kept_cut_is_a_fresh_one(tmp_path, monkeypatch):
    """The judge-side cut reads only ``exercises/`` and what the rest of the package reads of it,
    the same for every lesson and both copies of a run: it is made once (about 5 s of a
    lesson's 6) and kept by a digest of its inputs. A kept cut must be byte for byte what a
    fresh one writes, and a changed input must not find it."""
    from course_utils.instructor import judge_side

    made: list[int] = []
    real_cut = judge_side._cut
    monkeypatch.setattr(judge_side, "_cut", lambda *a: made.append(1) or real_cut(*a))
    monkeypatch.setattr(judge_side, "_CUTS", {})
    monkeypatch.setattr(judge_side, "_FACTS", {})
    sandbox.stage_course(tmp_path / "first", "05_training_loop", executor=True)
    kept = sandbox.stage_course(tmp_path / "kept", "03_nn_module")
    assert len(made) == 1, "the second lesson's copy cut the exercises again"
    judge_side._CUTS.clear()
    judge_side._FACTS.clear()
    fresh = sandbox.stage_course(tmp_path / "fresh", "03_nn_module")
    assert len(made) == 2
    assert _files(kept) == _files(fresh)

    exercise = next(iter(sorted((fresh / "course_utils" / "exercises").rglob("*.py"))))
    texts = [(exercise, exercise.read_text(encoding="utf-8"))]
    fixed: tuple[set[str], dict[Path, set[str]]] = (set(), {})
    package = fresh / "course_utils"
    assert (judge_side._inputs_digest(package, texts, fixed)
            != judge_side._inputs_digest(package, [(exercise, texts[0][1] + "#")], fixed))
    assert (judge_side._inputs_digest(package, texts, fixed)
            != judge_side._inputs_digest(package, texts, ({"_x"}, {})))
