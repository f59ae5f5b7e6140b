"""Lesson 09 (persistence), every test of its own in one file: the helpers (a GPU-style
checkpoint, a harmless payload), the real export path of the reference, correct answers written
differently from the reference, the diagnoses the generic tests cannot see; then the adversarial
review, the red team (wrong answers, valid unusual answers, cheats) and the oracles (issue 11).
The contract tests shared by every exercise are in tests/test_exercises.py."""

from __future__ import annotations

import collections
import copy
import os
import pickle
import re

import pytest
import torch
import torch.serialization
from torch import nn

from lesson_kit import define, notebook_source

from course_utils import grading
from course_utils.exercises.l09_persistence import _resume as K, _resume_checks as KC
from course_utils.exercises.l09_persistence import export_with_dynamic_batch as M_EX
from course_utils.exercises.l09_persistence import load_checkpoint as M_LC
from course_utils.exercises.l09_persistence import load_state_dict_cpu as M_CPU
from course_utils.exercises.l09_persistence import save_checkpoint as M_SC
from course_utils.grading import Rand
from course_utils.lesson_props.l09_persistence import (
    HarmlessPayload, payload_runs, reset_payload_runs, save_as_if_on_cuda)

from grading_asserts import accepted, rejected  # noqa: E402 (tests/ is on sys.path)
from lesson_kit import Tables, fixed_and_random_cases  # noqa: E402
from grading_asserts import check as check_id  # noqa: E402

LESSON = "09_persistence"


def check(name, answer, seed=7, n_random=None):
    return grading.check(f"{LESSON}.{name}", answer, seed=seed, n_random=n_random)


# --------------------------------------------------------------------------- helpers
@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU machine the file simply loads onto CUDA")
def test_gpu_style_checkpoint_needs_map_location(tmp_path):
    state = nn.Linear(3, 2).state_dict()
    path = tmp_path / "gpu.pt"
    save_as_if_on_cuda(state, path)
    with pytest.raises(RuntimeError, match="map_location"):
        torch.load(path)
    loaded = torch.load(path, map_location="cpu")
    assert all(torch.equal(loaded[k], v) for k, v in state.items())


def test_save_as_if_on_cuda_restores_location_tag_even_on_error(tmp_path):
    original = torch.serialization.location_tag
    with pytest.raises(RuntimeError, match="does not exist"):
        save_as_if_on_cuda({"x": torch.ones(1)}, tmp_path / "missing_dir" / "f.pt")
    assert torch.serialization.location_tag is original
    save_as_if_on_cuda({"x": torch.ones(1)}, tmp_path / "f.pt")
    assert torch.serialization.location_tag is original
    torch.save({"x": torch.ones(1)}, tmp_path / "plain.pt")
    assert torch.load(tmp_path / "plain.pt")["x"].device.type == "cpu"


def test_harmless_payload_runs_only_without_weights_only(tmp_path, capsys):
    path = tmp_path / "payload.pt"
    torch.save({"w": torch.ones(2), "x": HarmlessPayload("ran")}, path)
    reset_payload_runs()
    with pytest.raises(pickle.UnpicklingError, match="weights_only|Weights only"):
        torch.load(path)
    assert payload_runs() == 0
    torch.load(path, weights_only=False)
    assert payload_runs() == 1
    assert "ran" in capsys.readouterr().out
    reset_payload_runs()
    assert payload_runs() == 0


def _two(x):
    """The example with at least two samples (torch.export treats a batch of one as a constant)."""
    return x if x.shape[0] > 1 else torch.cat([x, x])


# --------------------------------------------------------------------------- the export reference really exports
def test_export_reference_passes_through_the_real_export(monkeypatch):
    monkeypatch.setattr(M_EX, "_TRUST_REFERENCE", False)
    res = check("export_with_dynamic_batch", M_EX.export_with_dynamic_batch, n_random=3)
    assert res.passed, res.text()


def test_export_with_other_dynamic_dims_passes():
    def auto(model, example_input):
        model.eval()
        return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))

    def named_with_bounds(model, example_input):
        model.eval()
        batch = torch.export.Dim("batch", min=1)
        return torch.export.export(model, (_two(example_input),), dynamic_shapes={"input": {0: batch}})

    assert check("export_with_dynamic_batch", auto).passed
    assert check("export_with_dynamic_batch", named_with_bounds).passed


# --------------------------------------------------------------------------- resume graders
@pytest.mark.parametrize("role", ["save", "load"])
def test_resume_grader_runs_really_resume_bit_identically(role):
    # the reference round trip passes the grader's own bit-identity test on several cases
    for seed in (1, 2, 3):
        resumed = KC._run_resume(M_SC.save_checkpoint if role == "save" else M_LC.load_checkpoint,
                                K.resume_case(Rand(seed)), role)
        assert all(p.dtype == torch.float32 for p in resumed)


def test_save_checkpoint_with_extra_entries_passes():
    def save(path, model, optimizer, scheduler, epoch, loader_generator):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch, "rng_state": torch.get_rng_state(),
                    "loader_generator": loader_generator.get_state(), "note": "extra", "scaler": None}, path)

    assert check("save_checkpoint", save).passed


def test_load_checkpoint_with_map_location_and_strict_passes():
    def load(path, model, optimizer, scheduler, loader_generator):
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(ckpt["model"], strict=True)
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        loader_generator.set_state(ckpt["loader_generator"])
        torch.random.set_rng_state(ckpt["rng_state"])
        return int(ckpt["epoch"])

    assert check("load_checkpoint", load).passed


def test_load_checkpoint_returning_a_tensor_epoch_is_named():
    def load(path, model, optimizer, scheduler, loader_generator):
        M_LC.load_checkpoint(path, model, optimizer, scheduler, loader_generator)
        return torch.tensor(torch.load(path)["epoch"])

    res = check("load_checkpoint", load)
    assert res.status == "incorrect" and res.mistake == "wrong_start_epoch", res.text()


def test_save_checkpoint_writing_nothing_is_named():
    res = check("save_checkpoint", lambda *args: None)
    assert res.status == "incorrect" and res.mistake == "no_file", res.text()


def test_save_checkpoint_with_wrong_generator_value_is_reported():
    def save(path, model, optimizer, scheduler, epoch, loader_generator):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch, "rng_state": torch.get_rng_state(),
                    "loader_generator": loader_generator.initial_seed()}, path)

    res = check("save_checkpoint", save)
    assert res.status == "incorrect" and res.mistake == "unloadable_checkpoint", res.text()


def test_resume_graders_leave_no_files_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(KC, "_RECALLED", {})  # the reference's own run too, not a recalled one
    assert check("save_checkpoint", M_SC.save_checkpoint).passed
    assert check("load_state_dict_cpu", M_CPU.load_state_dict_cpu).passed
    # torch's own compile cache (made on first use of the exporter when this test runs alone) is not the grader's
    assert [name for name in os.listdir(tmp_path) if not name.startswith("torchinductor_")] == []


# --------------------------------------------------------------------------- other loaders
def test_load_state_dict_cpu_with_pytorch_helper_passes():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    def load(path):
        state = torch.load(path, map_location=torch.device("cpu"))
        for _ in range(2):  # at most two wrappers, stacked in either order
            for prefix in ("module.", "_orig_mod."):
                consume_prefix_in_state_dict_if_present(state, prefix)
        return state

    assert check("load_state_dict_cpu", load, n_random=10).passed


def test_load_matching_by_copying_passes():
    def load(model, state_dict):
        skipped = []
        with torch.no_grad():
            for name, tensor in model.state_dict().items():
                source = state_dict.get(name)
                if source is not None and source.shape == tensor.shape:
                    tensor.copy_(source)
                else:
                    skipped.append(name)
        return sorted(skipped)

    assert check("load_matching", load, n_random=15).passed


# --------------------------------------------------------------------------- the instructor's sandbox
# ########################################################################### adversarial review
# Each test feeds the grader an answer that violates the exercise text and asserts it is rejected
# (naming the mistake where a name fits), or a correct answer written differently from the
# reference and asserts it is accepted.
# =========================================================================== 07 save_checkpoint
P = "09_persistence."


def _saver(**changes):
    def save(path, model, optimizer, scheduler, epoch, loader_generator):
        full = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch, "rng_state": torch.get_rng_state(),
                "loader_generator": loader_generator.get_state()}
        for key, value in changes.items():
            full[key] = value(full, epoch) if callable(value) else value
            if full[key] is None:
                del full[key]
        torch.save(full, path)
    return save


def test_save_checkpoint_with_a_shifted_or_tensor_epoch_is_rejected_as_a_save_mistake():
    res = rejected(P + "save_checkpoint", _saver(epoch=lambda full, e: e + 1), "wrong_epoch")
    assert "load_checkpoint` returned" not in res.message
    rejected(P + "save_checkpoint", _saver(epoch=lambda full, e: torch.tensor(e)), "wrong_epoch")
    rejected(P + "save_checkpoint", _saver(epoch=lambda full, e: float(e)), "wrong_epoch")


def test_save_checkpoint_without_scheduler_or_model_is_rejected():
    rejected(P + "save_checkpoint", _saver(scheduler=lambda full, e: None), "missing_scheduler")
    rejected(P + "save_checkpoint", _saver(model=lambda full, e: None), "missing_model")


def test_save_checkpoint_drawing_random_numbers_is_rejected():
    def draws(path, model, optimizer, scheduler, epoch, loader_generator):
        torch.rand(1)  # "a random run id": it moves the training's random stream
        M_SC.save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator)

    rejected(P + "save_checkpoint", draws)


def test_save_checkpoint_of_the_weights_only_is_rejected():
    def weights_only(path, model, optimizer, scheduler, epoch, loader_generator):
        torch.save(model.state_dict(), path)

    rejected(P + "save_checkpoint", weights_only)


# =========================================================================== 07 load_checkpoint
def test_load_checkpoint_falling_back_to_unsafe_loading_is_rejected():
    def fallback(path, model, optimizer, scheduler, loader_generator):
        try:
            checkpoint = torch.load(path, weights_only=True)
        except Exception:  # noqa: BLE001
            checkpoint = torch.load(path, weights_only=False)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        torch.set_rng_state(checkpoint["rng_state"])
        loader_generator.set_state(checkpoint["loader_generator"])
        return checkpoint["epoch"]

    rejected(P + "load_checkpoint", fallback, "unsafe_load")


def test_load_checkpoint_reseeding_instead_of_restoring_is_rejected():
    def reseed(path, model, optimizer, scheduler, loader_generator):
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        torch.manual_seed(checkpoint["epoch"])
        loader_generator.set_state(checkpoint["loader_generator"])
        return checkpoint["epoch"]

    rejected(P + "load_checkpoint", reseed, "rng_not_restored")


def test_load_checkpoint_setting_last_epoch_instead_of_loading_the_scheduler_is_rejected():
    def last_epoch(path, model, optimizer, scheduler, loader_generator):
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.last_epoch = checkpoint["epoch"]
        torch.set_rng_state(checkpoint["rng_state"])
        loader_generator.set_state(checkpoint["loader_generator"])
        return checkpoint["epoch"]

    rejected(P + "load_checkpoint", last_epoch, "scheduler_not_restored")


# =========================================================================== 07 load_state_dict_cpu
def _loader(rename, **load_kwargs):
    def load(path):
        state = torch.load(path, map_location="cpu", **load_kwargs)
        return {rename(k): v for k, v in state.items()}
    return load


@pytest.mark.parametrize("rename,mistake", [
    (lambda k: k.lstrip("module."), "lstrip_characters"),
    (lambda k: re.sub(r"module\.", "", k), "replaced_everywhere"),
    (lambda k: k.split("module.")[-1], None),
    (lambda k: k[7:] if "module." in k else k, None),
    (lambda k: k.partition(".")[2] if k.startswith("module") else k, None),
    (lambda k: k[7:] if k.startswith("module") else k, None),
])
def test_load_state_dict_cpu_with_wrong_prefix_removal_is_rejected(rename, mistake):
    rejected(P + "load_state_dict_cpu", _loader(rename), mistake)


def test_load_state_dict_cpu_lstrip_is_caught_on_every_seed():
    # it used to depend on an 'encoder' key being drawn: 30 of 200 seeds passed
    for seed in range(1, 41):
        res = check_id(P + "load_state_dict_cpu", _loader(lambda k: k.lstrip("module.")), seed=seed)
        assert res.status == "incorrect"


def test_load_state_dict_cpu_alternatives_pass():
    accepted(P + "load_state_dict_cpu",
             _loader(lambda k: k.removeprefix("module.").removeprefix("_orig_mod.").removeprefix("module.")),
             n_random=10)
    accepted(P + "load_state_dict_cpu", _loader(lambda k: re.sub(r"^((module|_orig_mod)\.)*", "", k)), n_random=10)

    def storage_lambda(path):
        state = torch.load(path, map_location=lambda storage, location: storage, weights_only=True)
        out = {}
        for k, v in state.items():
            parts = k.split(".")
            while parts[0] in ("module", "_orig_mod"):
                parts.pop(0)
            out[".".join(parts)] = v
        return out

    accepted(P + "load_state_dict_cpu", storage_lambda, n_random=10)


# =========================================================================== 07 load_matching
def test_load_matching_listing_only_mismatched_keys_is_rejected():
    def mismatched(model, state_dict):
        own = model.state_dict()
        matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
        model.load_state_dict(matching, strict=False)
        return sorted(k for k, v in state_dict.items() if k in own and own[k].shape != v.shape)

    # (unnamed: on the only inputs where it differs, other mistakes give the same list)
    rejected(P + "load_matching", mismatched)


def test_load_matching_unsorted_or_by_name_only_is_rejected():
    def unsorted(model, state_dict):
        own = model.state_dict()
        matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
        return model.load_state_dict(matching, strict=False).missing_keys

    def by_name(model, state_dict):
        own = model.state_dict()
        matching = {k: v for k, v in state_dict.items() if k in own}
        model.load_state_dict(matching, strict=False)
        return sorted(k for k in own if k not in matching)

    rejected(P + "load_matching", unsorted)
    rejected(P + "load_matching", by_name, "size_mismatch")


def test_load_matching_from_missing_keys_passes():
    def from_result(model, state_dict):
        own = model.state_dict()
        result = model.load_state_dict(
            {k: v for k, v in state_dict.items() if k in own and v.shape == own[k].shape}, strict=False)
        return sorted(result.missing_keys)

    accepted(P + "load_matching", from_result, n_random=15)


# =========================================================================== 07 export_with_dynamic_batch
def test_export_with_a_too_small_batch_bound_is_rejected():
    def bounded(model, example_input):
        model.eval()
        return torch.export.export(model, (_two(example_input),),
                                   dynamic_shapes=({0: torch.export.Dim("batch", max=5)},))

    rejected(P + "export_with_dynamic_batch", bounded, "bounded_batch", seeds=(1,))


def test_export_with_torchscript_is_rejected():
    def traced(model, example_input):
        return torch.jit.trace(model.eval(), example_input)

    rejected(P + "export_with_dynamic_batch", traced, "not_exported_program", seeds=(1,))


def test_export_of_an_eval_copy_passes_and_restoring_train_mode_is_fine():
    def on_copy(model, example_input):
        frozen = copy.deepcopy(model).eval()
        return torch.export.export(frozen, (_two(example_input),), dynamic_shapes=({0: torch.export.Dim("batch")},))

    def restore_mode(model, example_input):
        model.eval()
        program = torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: torch.export.Dim("n")},))
        model.train()
        return program

    accepted(P + "export_with_dynamic_batch", on_copy, seeds=(1,))
    accepted(P + "export_with_dynamic_batch", restore_mode, seeds=(1,))


# ########################################################################### red team (issue 11)
# For every exercise: at least five wrong answers a learner would plausibly write (real learner
# code, not mutants of the reference), three valid but unusual answers, and two cheats (answers
# that special-case what the grader shows, or objects that lie to duck-typed checks). Every
# verdict must hold for several seeds (``rejected``/``accepted`` try each of them). Grouped per
# exercise in ``WRONG[exercise] = [(answer, mistake or None)]``, ``VALID`` and ``CHEATS``.
_tables = Tables()  # tests/lesson_kit.py
WRONG, VALID, CHEATS = _tables.WRONG, _tables.VALID, _tables.CHEATS
wrong, valid, cheat = _tables.wrong, _tables.valid, _tables.cheat


# =========================================================================== 07 save_checkpoint / load_checkpoint
SC, LC = "09_persistence.save_checkpoint", "09_persistence.load_checkpoint"


def _ckpt(model, optimizer, scheduler, epoch, g, **changes):
    d = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
         "epoch": epoch, "rng_state": torch.get_rng_state(), "loader_generator": g.get_state()}
    d.update(changes)
    return {k: v for k, v in d.items() if v is not None}


@wrong(SC)
def save_model_only(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)


@wrong(SC, "rng_not_torch")
def save_python_random_state(path, model, optimizer, scheduler, epoch, loader_generator):
    import random
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, rng_state=random.getstate()), path)


@wrong(SC, "rng_not_restored")
def save_loader_state_as_rng(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, rng_state=loader_generator.get_state()),
               path)


@wrong(SC, "missing_rng_state")
def save_arguments_only(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, rng_state=None), path)


@wrong(SC, "rng_not_torch")
def save_seed_not_state(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, rng_state=torch.initial_seed()), path)


@wrong(SC)
def save_generator_seed(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator,
                     loader_generator=torch.tensor(loader_generator.initial_seed())), path)


@wrong(SC)
def save_next_epoch(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch + 1, loader_generator), path)


@wrong(SC, "grad_left_off")
def save_with_grad_left_off(path, model, optimizer, scheduler, epoch, loader_generator):
    """redteam_10_12: grad mode switched off "to save memory" and never back; was "Your code raised"."""
    torch.set_grad_enabled(False)
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator), path)


@wrong(SC, "changed_mode")
def save_then_eval(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator), path)
    model.eval()


@wrong(SC)
def save_lr_instead_of_scheduler(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, scheduler={"lr": scheduler.get_last_lr()}),
               path)


@valid(SC)
def save_with_extras(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator, version=2, note="halfway"), path)


@valid(SC)
def save_to_file_object(path, model, optimizer, scheduler, epoch, loader_generator):
    with open(path, "wb") as f:
        torch.save(copy.deepcopy(_ckpt(model, optimizer, scheduler, int(epoch), loader_generator)), f)


@valid(SC)
def save_rng_of_cpu_generator_via_default(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator,
                     rng_state=torch.random.default_generator.get_state()), path)


@valid(SC)
def save_ordered_dict(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(collections.OrderedDict(_ckpt(model, optimizer, scheduler, epoch, loader_generator)), str(path))


@cheat(SC)
def save_always_epoch_one(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, 1, loader_generator), path)


@cheat(SC)
def save_fresh_generator_state(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save(_ckpt(model, optimizer, scheduler, epoch, loader_generator,
                     rng_state=torch.Generator().get_state()), path)


def _restore(path, model, optimizer, scheduler, g, skip=(), **load_kwargs):
    ck = torch.load(path, weights_only=True, **load_kwargs)
    model.load_state_dict(ck["model"])
    if "optimizer" not in skip:
        optimizer.load_state_dict(ck["optimizer"])
    if "scheduler" not in skip:
        scheduler.load_state_dict(ck["scheduler"])
    if "rng" not in skip:
        torch.set_rng_state(ck["rng_state"])
    if "gen" not in skip:
        g.set_state(ck["loader_generator"])
    return ck["epoch"]


@wrong(LC, "rng_not_restored")
def load_reseeds_from_epoch(path, model, optimizer, scheduler, loader_generator):
    epoch = _restore(path, model, optimizer, scheduler, loader_generator, skip=("rng",))
    torch.manual_seed(epoch)
    return epoch


@wrong(LC)
def load_next_epoch(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator) + 1


@wrong(LC)
def load_model_only(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path, weights_only=True)
    model.load_state_dict(ck["model"])
    return ck["epoch"]


@wrong(LC, "changed_mode")
def load_then_train_mode(path, model, optimizer, scheduler, loader_generator):
    epoch = _restore(path, model, optimizer, scheduler, loader_generator)
    model.train()
    return epoch


@wrong(LC)
def load_optimizer_into_fresh_lr(path, model, optimizer, scheduler, loader_generator):
    """Loads the optimizer but then resets the learning rate to the initial one."""
    epoch = _restore(path, model, optimizer, scheduler, loader_generator)
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"]
    return epoch


@wrong(LC, "unsafe_load")
def load_unsafe(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator, weights_only=False) \
        if False else _restore_unsafe(path, model, optimizer, scheduler, loader_generator)


def _restore_unsafe(path, model, optimizer, scheduler, g):
    ck = torch.load(path, weights_only=False)
    model.load_state_dict(ck["model"])
    optimizer.load_state_dict(ck["optimizer"])
    scheduler.load_state_dict(ck["scheduler"])
    torch.set_rng_state(ck["rng_state"])
    g.set_state(ck["loader_generator"])
    return ck["epoch"]


@valid(LC)
def load_map_location_cpu(path, model, optimizer, scheduler, loader_generator):
    return _restore(path, model, optimizer, scheduler, loader_generator, map_location="cpu")


@valid(LC)
def load_random_module_and_int(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path)  # weights_only=True is the default
    for obj, key in ((model, "model"), (optimizer, "optimizer"), (scheduler, "scheduler")):
        obj.load_state_dict(ck[key])
    torch.random.set_rng_state(ck["rng_state"])
    loader_generator.set_state(ck["loader_generator"])
    return int(ck["epoch"])


@valid(LC)
def load_restores_rng_last(path, model, optimizer, scheduler, loader_generator):
    ck = torch.load(path, weights_only=True, mmap=False)
    loader_generator.set_state(ck["loader_generator"])
    torch.set_rng_state(ck["rng_state"])
    scheduler.load_state_dict(ck["scheduler"])
    optimizer.load_state_dict(ck["optimizer"])
    model.load_state_dict(ck["model"], strict=True)
    return ck["epoch"]


@cheat(LC)
def load_returns_fixed_epoch(path, model, optimizer, scheduler, loader_generator):
    _restore(path, model, optimizer, scheduler, loader_generator)
    return 1


@cheat(LC)
def load_epoch_only(path, model, optimizer, scheduler, loader_generator):
    return torch.load(path, weights_only=True)["epoch"]


# =========================================================================== 07 load_state_dict_cpu
CPU = "09_persistence.load_state_dict_cpu"


def _cpu_load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


@wrong(CPU)
def cpu_decides_from_first_key(path):
    sd = _cpu_load(path)
    if next(iter(sd)).startswith("module."):
        return {k[7:]: v for k, v in sd.items()}
    return dict(sd)


@wrong(CPU)
def cpu_only_if_all_prefixed(path):
    sd = _cpu_load(path)
    if all(k.startswith("module.") for k in sd):
        return {k[7:]: v for k, v in sd.items()}
    return dict(sd)


@wrong(CPU, "replaced_everywhere")
def cpu_replace(path):
    return {k.replace("module.", ""): v for k, v in _cpu_load(path).items()}


@wrong(CPU)
def cpu_split_first_dot(path):
    return {(k.split(".", 1)[1] if k.startswith("module") else k): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "no_map_location")
def cpu_no_map_location(path):
    sd = torch.load(path, weights_only=True)
    return {re.sub(r"^((module|_orig_mod)\.)+", "", k): v for k, v in sd.items()}


@wrong(CPU, "unsafe_load")
def cpu_unsafe(path):
    sd = torch.load(path, map_location="cpu", weights_only=False)
    return {re.sub(r"^((module|_orig_mod)\.)+", "", k): v for k, v in sd.items()}


@wrong(CPU, "wrapper_prefix_kept")
def cpu_removeprefix_ddp_only(path):
    """The DDP prefix alone: a compiled model's '_orig_mod.' stays."""
    return {k.removeprefix("module."): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "wrapper_prefix_kept")
def cpu_consume_prefix_helper_ddp_only(path):
    sd = _cpu_load(path)
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
    return sd


@wrong(CPU, "wrapper_prefix_kept")
def cpu_compiled_only(path):
    return {k.removeprefix("_orig_mod."): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "stacked_wrappers")
def cpu_one_pass_ddp_first(path):
    """Right for DDP(torch.compile(model)), one name left for torch.compile(DDP(model))."""
    return {k.removeprefix("module.").removeprefix("_orig_mod."): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "stacked_wrappers")
def cpu_one_pass_compiled_first(path):
    return {k.removeprefix("_orig_mod.").removeprefix("module."): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "stacked_wrappers")
def cpu_helper_once_each(path):
    sd = _cpu_load(path)
    for prefix in ("module.", "_orig_mod."):
        torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, prefix)
    return sd


@wrong(CPU, "replaced_everywhere")
def cpu_replace_both_everywhere(path):
    return {k.replace("_orig_mod.", "").replace("module.", ""): v for k, v in _cpu_load(path).items()}


@wrong(CPU, "lstrip_characters")
def cpu_lstrip_both(path):
    return {k.lstrip("_orig_mod.").lstrip("module."): v for k, v in _cpu_load(path).items()}  # noqa: B005 - the mistake itself


@valid(CPU)
def cpu_removeprefix_loop(path):
    out = {}
    for k, v in _cpu_load(path).items():
        while k.startswith(("module.", "_orig_mod.")):
            k = k.removeprefix("module.").removeprefix("_orig_mod.")
        out[k] = v
    return out


@valid(CPU)
def cpu_consume_prefix_helper_until_stable(path):
    sd = _cpu_load(path)
    while any(k.startswith(("module.", "_orig_mod.")) for k in sd):
        for prefix in ("module.", "_orig_mod."):
            torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, prefix)
    return sd


@valid(CPU)
def cpu_regex_device_object(path):
    import re
    sd = torch.load(path, map_location=torch.device("cpu"), weights_only=True)
    return collections.OrderedDict((re.sub(r"^(?:(?:module|_orig_mod)\.)+", "", k), v) for k, v in sd.items())


@valid(CPU)
def cpu_recursive_strip(path):
    def strip(key):
        head, _, rest = key.partition(".")
        return strip(rest) if head in ("module", "_orig_mod") and rest else key

    return {strip(k): v for k, v in torch.load(path, map_location="cpu").items()}


@cheat(CPU)
def cpu_known_names_only(path):
    """Strips only the names the shown cases use."""
    sd = _cpu_load(path)
    return {(k[7:] if k.startswith(("module.submodule", "module.encoder", "module.head")) else k): v
            for k, v in sd.items()}


@cheat(CPU)
def cpu_lying_dict(path):
    class Agreeable(dict):
        def __eq__(self, other):
            return True

    return Agreeable(_cpu_load(path))


@cheat(CPU)
def cpu_keys_of_the_shown_stackings(path):
    """Hard-codes the two stackings the lesson shows, by their whole prefix."""
    sd = _cpu_load(path)
    return {k.removeprefix("_orig_mod.module.").removeprefix("module._orig_mod.").removeprefix("module."): v
            for k, v in sd.items()}


# =========================================================================== 07 load_matching
LM = "09_persistence.load_matching"


@wrong(LM)
def matching_ignores_shape(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own}
    try:
        model.load_state_dict(ok, strict=False)
    except RuntimeError:
        pass
    return sorted(k for k in own if k not in ok)


@wrong(LM)
def matching_returns_loaded(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return sorted(ok)


@wrong(LM)
def matching_unsorted(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return [k for k in reversed(list(own)) if k not in ok]


@wrong(LM)
def matching_named_parameters_only(model, state_dict):
    own = dict(model.named_parameters())
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    with torch.no_grad():
        for k, v in ok.items():
            own[k].copy_(v)
    return sorted(k for k in model.state_dict() if k not in ok)


@wrong(LM)
def matching_returns_state_dict_leftovers(model, state_dict):
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(ok, strict=False)
    return sorted(k for k in state_dict if k not in ok)


@wrong(LM)
def matching_mutates_state_dict(model, state_dict):
    own = model.state_dict()
    for k in list(state_dict):
        if k not in own or own[k].shape != state_dict[k].shape:
            del state_dict[k]
    model.load_state_dict(state_dict, strict=False)
    return sorted(k for k in own if k not in state_dict)


@wrong(LM, "same_numel")
def matching_by_numel_reshaped(model, state_dict):
    """(redteam) matches by number of elements: a (in, out) weight is reshaped into the (out, in) one."""
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].numel() == v.numel()}
    model.load_state_dict({k: v.reshape(own[k].shape) for k, v in ok.items()}, strict=False)
    return sorted(k for k in own if k not in ok)


@wrong(LM, "size_mismatch")
def matching_by_numel(model, state_dict):
    """(redteam) matches by number of elements, no reshape: loading the (in, out) weight fails."""
    own = model.state_dict()
    ok = {k: v for k, v in state_dict.items() if k in own and own[k].numel() == v.numel()}
    model.load_state_dict(ok, strict=False)
    return sorted(k for k in own if k not in ok)


@valid(LM)
def matching_copy_under_no_grad(model, state_dict):
    own = model.state_dict()
    missed = []
    with torch.no_grad():
        for k, t in own.items():
            v = state_dict.get(k)
            if v is not None and v.shape == t.shape:
                t.copy_(v)
            else:
                missed.append(k)
    return sorted(missed)


@valid(LM)
def matching_full_strict_load(model, state_dict):
    merged = {k: (state_dict[k] if k in state_dict and state_dict[k].shape == v.shape else v)
              for k, v in model.state_dict().items()}
    model.load_state_dict(merged)
    return sorted(k for k, v in model.state_dict().items() if k not in state_dict or state_dict[k].shape != v.shape)


@valid(LM)
def matching_set_difference(model, state_dict):
    own = model.state_dict()
    ok = {k: v.clone() for k, v in state_dict.items() if k in own and tuple(own[k].shape) == tuple(v.shape)}
    result = model.load_state_dict(ok, strict=False)
    return sorted(set(result.missing_keys))


@cheat(LM)
def matching_head_is_always_new(model, state_dict):
    """Assumes the last Linear is the only change (true for the 'new head' case)."""
    own = model.state_dict()
    last = sorted(k for k in own if k.endswith("weight"))[-1].rsplit(".", 1)[0]
    ok = {k: v for k, v in state_dict.items() if k in own and not k.startswith(last + ".")}
    model.load_state_dict({k: v for k, v in ok.items() if own[k].shape == v.shape}, strict=False)
    return sorted(k for k in own if k.startswith(last + "."))


@cheat(LM)
def matching_loads_nothing(model, state_dict):
    return sorted(model.state_dict())


# =========================================================================== 07 export_with_dynamic_batch
EX = "09_persistence.export_with_dynamic_batch"
Dim = torch.export.Dim


@wrong(EX, "example_of_one")
def export_batch_dim_from_one_sample(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim("batch")},))


@wrong(EX, "example_of_one")
def export_auto_from_one_sample(model, example_input):
    model.eval()
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: Dim.AUTO},))


@wrong(EX, "wrong_dynamic_dim")
def export_last_dim_dynamic(model, example_input):
    model.eval()
    return torch.export.export(model, (_two(example_input),),
                               dynamic_shapes=({example_input.dim() - 1: Dim("batch")},))


@wrong(EX, "wrong_dynamic_dim")
def export_every_dim_dynamic(model, example_input):
    model.eval()
    return torch.export.export(model, (_two(example_input),),
                               dynamic_shapes=({d: Dim(f"d{d}") for d in range(example_input.dim())},))


@valid(EX)
def export_auto_everywhere_on_a_repeated_example(model, example_input):
    model.eval()
    x = example_input.repeat(2, *[1] * (example_input.dim() - 1))
    return torch.export.export(model, (x,), dynamic_shapes=({d: Dim.AUTO for d in range(x.dim())},))


@valid(EX)
def export_on_a_fresh_random_batch(model, example_input):
    model.eval()
    x = torch.randn(8, *example_input.shape[1:], generator=torch.Generator().manual_seed(0))
    return torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch")},))


@valid(EX)
def export_on_a_batch_from_the_global_random_stream(model, example_input):
    """Red team s20: was rejected as global_rng; the exported program does not depend on the values."""
    m = copy.deepcopy(model).eval()
    x = torch.randn(3, *example_input.shape[1:])
    return torch.export.export(m, (x,), dynamic_shapes={"input": {0: Dim("n", min=1)}})


@wrong(EX, "bounded_batch")
def export_capped_at_8(model, example_input):
    model.eval()
    return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: Dim("batch", max=8)},))


@wrong(EX, "bounded_batch")
def export_capped_at_64(model, example_input):
    model.eval()
    return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: Dim("batch", max=64)},))


@wrong(EX, "bounded_batch")
def export_capped_at_1024_like_the_tutorials(model, example_input):
    """redteam_10_12: the bound in torch.export's own tutorials; the largest batch tried was 1000."""
    model.eval()
    return torch.export.export(model, (_two(example_input),),
                               dynamic_shapes=({0: Dim("batch", min=1, max=1024)},))


@wrong(EX, "static_batch")
def export_no_dynamic_shapes(model, example_input):
    return torch.export.export(model.eval(), (_two(example_input),))


@wrong(EX)
def export_jit_trace(model, example_input):
    return torch.jit.trace(model.eval(), example_input)


@wrong(EX, "exported_in_train_mode")
def export_train_mode(model, example_input):
    return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: Dim("batch")},))


@wrong(EX)
def export_module_returned(model, example_input):
    model.eval()
    return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: Dim("batch")},)).module()


@valid(EX)
def export_dim_dynamic_named(model, example_input):
    model.eval()
    return torch.export.export(model, args=(_two(example_input),), dynamic_shapes={"input": {0: Dim.DYNAMIC}})


@valid(EX)
def export_eval_copy(model, example_input):
    return torch.export.export(copy.deepcopy(model).eval(), (_two(example_input).clone(),),
                               dynamic_shapes=[{0: Dim("n")}])


@valid(EX)
def export_restores_train_mode(model, example_input):
    was = model.training
    model.train(False)
    try:
        return torch.export.export(model, (_two(example_input),), dynamic_shapes=({0: Dim("batch", min=2)},))
    finally:
        model.train(was)


@cheat(EX)
def export_a_lookup_of_the_example(model, example_input):
    """Exports a module that ignores its input and repeats the example's outputs."""
    class Replay(nn.Module):
        def __init__(self, out):
            super().__init__()
            self.register_buffer("out", out)

        def forward(self, x):
            return self.out[:1].expand(x.shape[0], -1) + 0 * x[:, :1]

    with torch.no_grad():
        out = copy.deepcopy(model).eval()(example_input)
    return torch.export.export(Replay(out), (example_input,), dynamic_shapes=({0: Dim("batch")},))


@cheat(EX)
def export_of_a_frozen_random_model(model, example_input):
    """Exports a fresh model of the same shape (outputs of the right shape, wrong values)."""
    other = copy.deepcopy(model).eval()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(0.5)
    return torch.export.export(other, (example_input,), dynamic_shapes=({0: Dim("batch")},))


# --------------------------------------------------------------------------- the red team's tests
(test_wrong_answer_is_rejected, test_valid_answer_is_accepted, test_cheat_is_rejected,
 test_every_exercise_has_its_red_team) = _tables.red_team_tests(LESSON)  # tests/lesson_kit.py


# ########################################################################### oracles (issue 11)
# Each reference compared with a torch built-in that computes the same thing another way, across
# the exercise's whole case generator (many seeds) and its fixed edge cases.
def _cases(exercise_id, seeds):
    return fixed_and_random_cases(exercise_id, seeds)


def test_load_state_dict_cpu_matches_torch_consume_prefix_helper(tmp_path):
    from course_utils.exercises.l09_persistence.load_state_dict_cpu import _run as _run_cpu

    ref = grading.reference("09_persistence.load_state_dict_cpu")

    def oracle(path):
        sd = torch.load(path, map_location="cpu", weights_only=True)
        for _ in range(2):  # at most two wrappers, in either order
            for prefix in ("module.", "_orig_mod."):
                torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, prefix)
        return sd

    for case in _cases("09_persistence.load_state_dict_cpu", range(40)):
        mine, theirs = _run_cpu(ref, case), _run_cpu(oracle, case)
        assert sorted(mine) == sorted(k for k in theirs if k != "_metadata")  # the helper reorders keys
        assert all(torch.equal(mine[k], theirs[k]) and mine[k].device.type == "cpu" for k in mine)


def test_load_matching_agrees_with_what_load_state_dict_reports_missing():
    from course_utils.exercises.l09_persistence.load_matching import _run as _run_matching

    ref = grading.reference("09_persistence.load_matching")
    for case in _cases("09_persistence.load_matching", range(40)):
        model, state_dict = case.args
        own = {k: v.shape for k, v in model.state_dict().items()}
        skipped, after = _run_matching(ref, copy.deepcopy(case)).values()
        # oracle: torch's own bookkeeping of a non-strict load of the shape-matching entries
        twin = copy.deepcopy(model)
        result = twin.load_state_dict({k: v for k, v in state_dict.items() if k in own and v.shape == own[k]},
                                      strict=False)
        assert skipped == sorted(result.missing_keys)
        assert all(torch.equal(after[k], v) for k, v in twin.state_dict().items())


# ########################################################################### decisions, not transcription (issue 26)
def _spec_prose(answer_tag: str, heading: str) -> str:
    import pathlib
    src = (pathlib.Path(__file__).parents[1] / "solutions" / "09_persistence.py").read_text()
    spec = src[src.index(heading):src.index(f'tags=["answer:{answer_tag}"]')]
    return "\n".join(line for line in spec.splitlines() if line.startswith("# "))


@pytest.mark.parametrize("name", ["load_state_dict_cpu", "load_checkpoint"])
def test_hints_hold_no_code(name):
    for hint in grading.exercise(f"{LESSON}.{name}").hints:
        assert not re.search(r"`|\w\(|\.\w+\(|removeprefix|startswith|set_rng_state|load_state_dict", hint), hint


def test_load_state_dict_cpu_spec_shows_the_errors_not_the_recipe():
    prose = _spec_prose("load_state_dict_cpu", "### Exercise 2")
    for recipe in ("removeprefix", "startswith", "lstrip", "split", "consume_prefix", "only at the start"):
        assert recipe not in prose, recipe
    import pathlib
    src = (pathlib.Path(__file__).parents[1] / "solutions" / "09_persistence.py").read_text()
    spec = src[src.index("### Exercise 2"):src.index('tags=["answer:load_state_dict_cpu"]')]
    assert "torch.compile(DDP(" in spec and "load_state_dict(" in spec  # the real errors, made in the notebook


def test_load_checkpoint_spec_shows_a_first_attempt_not_the_recipe():
    prose = _spec_prose("load_checkpoint", "### Exercise 4")
    for recipe in ("set_rng_state", "set_state", "load_state_dict", "weights_only=True", "last_epoch", "eval"):
        assert recipe not in prose, recipe


# the teammate's loader, as the notebook shows it (one source: read from the solution)
first_attempt_load = define(notebook_source("09_persistence", "first_attempt_load"), "first_attempt_load",
                            {"torch": torch})


def test_load_checkpoint_first_attempt_is_the_notebooks_and_is_rejected():
    rejected(P + "load_checkpoint", first_attempt_load)
    for fixed_all_but in ("unsafe", "eval", "scheduler", "seed", "epoch"):
        def attempt(path, model, optimizer, scheduler, loader_generator, bug=fixed_all_but):
            checkpoint = torch.load(path, weights_only=bug != "unsafe")
            model.load_state_dict(checkpoint["model"])
            if bug == "eval":
                model.eval()
            optimizer.load_state_dict(checkpoint["optimizer"])
            if bug == "scheduler":
                scheduler.last_epoch = checkpoint["epoch"]
            else:
                scheduler.load_state_dict(checkpoint["scheduler"])
            if bug == "seed":
                torch.manual_seed(checkpoint["epoch"])
            else:
                torch.set_rng_state(checkpoint["rng_state"])
            loader_generator.set_state(checkpoint["loader_generator"])
            return checkpoint["epoch"] + (bug == "epoch")

        mistake = {"unsafe": "unsafe_load", "eval": "changed_mode", "scheduler": "scheduler_not_restored",
                   "seed": "rng_not_restored", "epoch": "wrong_start_epoch"}[fixed_all_but]
        rejected(P + "load_checkpoint", attempt, mistake)
