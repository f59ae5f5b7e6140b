"""Generated from solutions/09_persistence.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 09_persistence take their references from here."""

# ruff: noqa

import torch


def load_matching(model, state_dict):
    own = model.state_dict()
    matching = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matching, strict=False)
    return sorted(k for k in own if k not in matching)


def load_state_dict_cpu(path):
    state_dict = torch.load(path, map_location="cpu", weights_only=True)  # tensors land in CPU memory
    wrappers = ("module.", "_orig_mod.")  # DDP's attribute, torch.compile's: one name per wrapper

    def unwrapped(key):
        while key.startswith(wrappers):  # wrappers stack, in either order; only the front is theirs
            key = key.split(".", 1)[1]
        return key

    return {unwrapped(key): value for key, value in state_dict.items()}


def save_checkpoint(path, model, optimizer, scheduler, epoch, loader_generator):
    torch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": epoch,
        "rng_state": torch.get_rng_state(),
        "loader_generator": loader_generator.get_state(),
    }, path)


def load_checkpoint(path, model, optimizer, scheduler, loader_generator):
    checkpoint = torch.load(path, weights_only=True)  # a file from anyone: no code may run
    model.load_state_dict(checkpoint["model"])  # and leave its mode to the training loop
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])  # its whole state, not only the counter
    torch.set_rng_state(checkpoint["rng_state"])  # continue the stream; a seed would restart it
    loader_generator.set_state(checkpoint["loader_generator"])
    return checkpoint["epoch"]  # epochs done: the first one still to run


def export_with_dynamic_batch(model, example_input):
    model.eval()  # dropout off, BatchNorm's running statistics: the graph records the mode
    if example_input.shape[0] < 2:  # export treats a size of 1 as a constant: show it a batch of 2
        example_input = example_input.expand(2, *example_input.shape[1:])
    batch = torch.export.Dim("batch")  # only the batch varies: the weights fix C, L and F
    return torch.export.export(model, (example_input,), dynamic_shapes=({0: batch},))
