"""Pretrain lesson 14's backbone on letters, reproducibly, and write the weights the course ships.

    python tools/pretrain_glyph_backbone.py            # writes course_utils/lesson_props/data/glyph_resnet_letters.*
    python tools/pretrain_glyph_backbone.py --out DIR  # elsewhere (tests/test_l14_transfer_learning.py retrains)

The letters A-Z, rendered offline from 16 of matplotlib's fonts (``course_utils.glyphs``), train a
``GlyphResNet`` (``course_utils/lesson_props/l14_transfer_learning.py``) with a fixed seed, one
thread and deterministic algorithms, in well under a minute on a CPU. The six fonts in
``HELD_OUT_FONTS`` are never used: the letter accuracy on them is recorded in the JSON next to the
weights (``test_accuracy``), with the recipe, the seed and the normalisation statistics (mean and
std of the training pixels) that a model fine-tuned from these weights must keep using.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils.lesson_props import l14_transfer_learning as tl  # noqa: E402

RECIPE = {
    "letters": tl.PRETRAIN_LETTERS, "widths": list(tl.WIDTHS), "seed": 0, "data_seed": 0,
    "per_font": 8, "test_per_font": 2, "image_size": 28,
    "optimizer": "AdamW", "lr": 0.01, "weight_decay": 0.0005, "schedule": "OneCycleLR",
    "epochs": 10, "batch_size": 64,
    "train_fonts": list(tl.PRETRAIN_FONTS), "test_fonts": list(tl.HELD_OUT_FONTS),
}


def pretrain(recipe: dict = RECIPE) -> tuple[dict, dict]:
    """Train from the recipe; returns (state_dict, the recipe with the statistics and results added)."""
    torch.manual_seed(recipe["seed"])
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    start = time.perf_counter()
    X, y, _ = tl.render_tensors(recipe["letters"], recipe["train_fonts"], recipe["per_font"], recipe["data_seed"])
    X_test, y_test, _ = tl.render_tensors(recipe["letters"], recipe["test_fonts"], recipe["test_per_font"],
                                          recipe["data_seed"] + 1)
    pixels = X.float() / 255.0
    mean, std = round(float(pixels.mean()), 4), round(float(pixels.std()), 4)
    X, X_test = tl.normalise(X, mean, std), tl.normalise(X_test, mean, std)
    model = tl.GlyphResNet(num_classes=len(recipe["letters"]), widths=tuple(recipe["widths"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weight_decay"])
    steps = -(-len(X) // recipe["batch_size"])
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=recipe["lr"], epochs=recipe["epochs"],
                                                    steps_per_epoch=steps)
    gen = torch.Generator().manual_seed(recipe["seed"])
    for _ in range(recipe["epochs"]):
        model.train()
        order = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), recipe["batch_size"]):
            idx = order[i:i + recipe["batch_size"]]
            # a random shift of up to 2 pixels: cheap augmentation
            dx, dy = (int(v) for v in torch.randint(-2, 3, (2,), generator=gen))
            loss = F.cross_entropy(model(torch.roll(X[idx], (dy, dx), (2, 3))), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
    model.eval()
    out = dict(recipe, mean=mean, std=std, train_images=len(X), test_images=len(X_test),
               train_accuracy=round(tl.accuracy(model, X, y), 4),
               test_accuracy=round(tl.accuracy(model, X_test, y_test), 4),
               seconds=round(time.perf_counter() - start, 1), torch=torch.__version__)
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, out


def main(argv: list[str] | None = None) -> None:
    from safetensors.torch import save_file

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=tl.DATA)
    args = parser.parse_args(argv)
    state, recipe = pretrain()
    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / tl.WEIGHTS.name
    save_file(state, str(weights))
    recipe["sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    recipe["bytes"] = weights.stat().st_size
    (args.out / tl.RECIPE.name).write_text(json.dumps(recipe, indent=1) + "\n", encoding="utf-8")
    print(f"letters on unseen fonts: {recipe['test_accuracy']:.3f} (train {recipe['train_accuracy']:.3f}), "
          f"{recipe['bytes']} bytes, {recipe['seconds']} s -> {weights}")


if __name__ == "__main__":
    main()
