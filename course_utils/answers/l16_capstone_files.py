"""Generated from solutions/16_capstone_files.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 16_capstone_files take their references from here."""

# ruff: noqa

import math
from pathlib import Path
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
try:  # an extra (course_utils/extras.py): needed only when these answers run
    import torchvision
    from torchvision.transforms import v2
except ImportError:
    pass


def load_folder(root):
    """Every image of an ImageFolder as one uint8 batch (N, 1, H, W), the labels, the class
    names in label order, and each image's group (the part of its file name before the last '-')."""
    folder = torchvision.datasets.ImageFolder(
        root, loader=lambda path: v2.functional.pil_to_tensor(Image.open(path).convert("L")))
    X = torch.stack([folder[i][0] for i in range(len(folder))])
    groups = [Path(path).stem.rsplit("-", 1)[0] for path, _ in folder.samples]
    names = list(folder.class_to_idx)  # the class names in label order (`folder.classes` is the same list)
    return X, torch.tensor(folder.targets), names, groups


def make_transforms(mean, std):
    to_input = [v2.ToDtype(torch.float32, scale=True), v2.Normalize([mean], [std])]
    train = v2.Compose([v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.9, 1.1)), *to_input])
    return train, v2.Compose(to_input)


def should_stop(val_losses, patience):
    if len(val_losses) <= patience:
        return False
    return min(val_losses[-patience:]) >= min(val_losses[:-patience])


def pick_checkpoint(history):
    measured = [h for h in history if not (math.isnan(h["val_accuracy"]) or math.isnan(h["val_loss"]))]
    best = max(measured, key=lambda h: (h["val_accuracy"], -h["val_loss"]))
    return best["epoch"]


class Deployable(nn.Module):
    def __init__(self, model, mean, std):
        super().__init__()
        self.model = model
        self.mean, self.std = float(mean), float(std)

    def forward(self, images):
        return self.model((images.float() / 255.0 - self.mean) / self.std)


def export_model(deployable, path):
    deployable.eval()
    example = torch.zeros(2, 1, 28, 28, dtype=torch.uint8)
    program = torch.export.export(deployable, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, path)


def build_classifier(folder, path, pretrained, recipe):
    X, y, names, _ = load_folder(folder)
    model = pretrained
    model.fc = nn.Linear(model.fc.in_features, len(names))
    # few images, a related task: extract features, train the head only
    model.requires_grad_(False)
    model.eval()
    with torch.no_grad():
        features = model.features((X.float() / 255.0 - recipe["mean"]) / recipe["std"])
    model.fc.requires_grad_(True)
    optimizer = torch.optim.AdamW(model.fc.parameters(), lr=1e-2)
    for _ in range(200):
        loss = F.cross_entropy(model.fc(features), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    export_model(Deployable(model, recipe["mean"], recipe["std"]), path)
    return list(names)
