"""Lesson 07 (persistence): the helpers (a GPU-style checkpoint, a harmless payload), the real
export path of the reference, correct answers written differently from the reference, and the
diagnoses the generic tests cannot see."""

from __future__ import annotations

import os
import pickle

import pytest
import torch
import torch.serialization
from torch import nn

from course_utils import grading
from course_utils.exercises import l07_persistence as L
from course_utils.grading import Rand
from course_utils.lesson_props.l07_persistence import (
    HarmlessPayload, payload_runs, reset_payload_runs, save_as_if_on_cuda)

LESSON = "07_persistence"


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


# --------------------------------------------------------------------------- the export reference really exports
def test_export_reference_passes_through_the_real_export(monkeypatch):
    monkeypatch.setattr(L, "_TRUST_REFERENCE", False)
    res = check("export_with_dynamic_batch", L.export_with_dynamic_batch, n_random=3)
    assert res.passed, res.text()


def test_export_with_other_dynamic_dims_passes():
    def auto(model, example_input):
        model.eval()
        return torch.export.export(model, (example_input,), dynamic_shapes=({0: torch.export.Dim.DYNAMIC},))

    def named_with_bounds(model, example_input):
        model.eval()
        batch = torch.export.Dim("batch", min=1, max=1024)
        return torch.export.export(model, (example_input,), dynamic_shapes={"input": {0: batch}})

    assert check("export_with_dynamic_batch", auto).passed
    assert check("export_with_dynamic_batch", named_with_bounds).passed


# --------------------------------------------------------------------------- resume graders
@pytest.mark.parametrize("role", ["save", "load"])
def test_resume_grader_runs_really_resume_bit_identically(role):
    # the reference round trip passes the grader's own bit-identity test on several cases
    for seed in (1, 2, 3):
        resumed = L._run_resume(L.save_checkpoint if role == "save" else L.load_checkpoint,
                                L._resume_case(Rand(seed)), role)
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
        L.load_checkpoint(path, model, optimizer, scheduler, loader_generator)
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
    assert check("save_checkpoint", L.save_checkpoint).passed
    assert check("load_state_dict_cpu", L.load_state_dict_cpu).passed
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- other loaders
def test_load_state_dict_cpu_with_pytorch_helper_passes():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    def load(path):
        state = torch.load(path, map_location=torch.device("cpu"))
        consume_prefix_in_state_dict_if_present(state, "module.")
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
