"""Generated from solutions/12_capstone.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 12_capstone take their references from here."""

# ruff: noqa

import os
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def split_loaders(X, y, val_fraction, seed, split):
    train_idx, val_idx = split(y, val_fraction, torch.Generator().manual_seed(seed))
    train_loader = DataLoader(TensorDataset(X[train_idx], y[train_idx]), batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(seed))
    val_loader = DataLoader(TensorDataset(X[val_idx], y[val_idx]), batch_size=512)
    return train_loader, val_loader


def fit_with_early_stopping(model, train_loader, val_loader, loss_fn, optimizer, pieces,
                            max_epochs, warmup_epochs, patience):
    scheduler = pieces.warmup_cosine(optimizer, warmup_epochs, max_epochs)  # counted in epochs
    stopper = pieces.EarlyStopping(patience)
    history = []
    for _ in range(max_epochs):
        pieces.train_one_epoch(model, train_loader, loss_fn, optimizer)  # at this epoch's learning rate
        val_loss, _ = pieces.evaluate(model, val_loader, loss_fn)  # data it does not train on
        history.append(val_loss)
        scheduler.step()  # once per epoch, after the epoch that used the rate
        if stopper.step(val_loss, model):
            break
    model.load_state_dict(stopper.best_state)  # the stop comes after the best epoch, not at it
    return history


def confusion_matrix(preds, targets, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    cm.index_put_((targets, preds), torch.ones_like(targets), accumulate=True)
    return cm


def resume_training(path, model, optimizer, scheduler, loader, loader_generator, loss_fn, num_epochs, pieces):
    start = 0  # no file yet: a run not started, from the objects it was given
    if os.path.exists(path):
        start = pieces.load_checkpoint(path, model, optimizer, scheduler, loader_generator)  # epochs done
    for epoch in range(start, num_epochs):  # the first epoch still to run is the number done
        pieces.train_one_epoch(model, loader, loss_fn, optimizer)
        scheduler.step()  # the epoch is over once its step is taken, and only then saved
        # every epoch (a power cut costs only the one under way), as the number of epochs done
        pieces.save_checkpoint(path, model, optimizer, scheduler, epoch + 1, loader_generator)


def onnx_parity(onnx_path, model, X):
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    onnx_out = session.run(None, {name: X.numpy()})[0]
    model.eval()
    with torch.inference_mode():
        torch_out = model(X).numpy()
    diff = float(np.abs(onnx_out - torch_out).max())
    # rounding is relative, about 1e-7 of the outputs' size; a bug moves them by a visible fraction
    return diff, diff <= 1e-4 * float(np.abs(torch_out).max())


def train_and_score(model, train_loader, val_loader, loss_fn, optimizer, epochs):
    for _ in range(epochs):
        model.train()
        for X, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(X), y)
            loss.backward()
            optimizer.step()
    model.eval()
    correct, n = 0, 0
    with torch.no_grad():
        for X, y in val_loader:
            correct += (model(X).argmax(dim=1) == y).sum().item()
            n += len(y)
    return correct / n


class DigitClassifier:
    def __init__(self):
        self.model = None

    def fit(self, X, y):
        torch.manual_seed(0)
        self.model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
        )
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
        num_epochs = 10
        optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2,
                                                        total_steps=num_epochs * len(loader))
        loss_fn = nn.CrossEntropyLoss()
        self.model.train()
        for _ in range(num_epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss_fn(self.model(xb), yb).backward()
                optimizer.step()
                scheduler.step()
        return self

    def predict(self, X):
        self.model.eval()
        with torch.inference_mode():
            return self.model(X).argmax(dim=1)
