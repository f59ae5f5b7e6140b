"""``grade --shard K/N``: which submissions are shard K's (0 <= K < N) when N graders share a
class (a Kubernetes Indexed Job, a Slurm job array; docs/instructor_guide.md).

A notebook's shard is a hash of its path *relative to the folder given* (the file as given, for
a notebook named directly): the same on every machine, whatever the order files are listed in
or where the submissions are mounted, so N shards split the class exactly: every notebook in
one shard, none in two. ``grade merge`` joins the shards' gradebooks (:func:`.gradebook.merge`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class ShardError(ValueError):
    pass


def parse(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)``; K counts from 0 (``JOB_COMPLETION_INDEX``, ``SLURM_ARRAY_TASK_ID``
    of an array ``0-(N-1)``)."""
    k, sep, n = text.partition("/")
    try:
        shard, count = int(k), int(n)
    except ValueError:
        raise ShardError(f"--shard takes K/N (shard K of N, K from 0 to N-1), not {text!r}") from None
    if not sep or count < 1 or not 0 <= shard < count:
        raise ShardError(f"--shard {text}: K must be 0 to N-1 and N at least 1")
    return shard, count


def key(path: Path, root: Path | None) -> bytes:
    """What a notebook's shard is computed from: its path below ``root`` (the folder given)."""
    if root is not None:
        try:
            return os.fsencode(path.relative_to(root).as_posix())
        except ValueError:
            pass
    return os.fsencode(path.as_posix())


def shard_of(path: Path, root: Path | None, count: int) -> int:
    digest = hashlib.sha256(key(path, root)).digest()
    return int.from_bytes(digest[:8], "big") % count


def select(items: list[tuple[Path, Path | None]], shard: int, count: int) -> list[tuple[Path, Path | None]]:
    """The notebooks of shard ``shard`` of ``count``, in their original order."""
    return [(p, root) for p, root in items if shard_of(p, root, count) == shard]
