"""Length-prefixed frames: how a sandbox talks to the host (and the judge to its executor).

A frame is ``MAGIC``, a 4-byte header length, a JSON header, an 8-byte payload length and the
payload bytes. :func:`read_frame` never trusts the other side: sizes are capped, a malformed
frame raises :class:`FrameError`, and the header must be a JSON object.
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

MAGIC = b"CGF1"
MAX_HEADER = 1 << 20


class FrameError(Exception):
    pass


def write_frame(fh: BinaryIO, header: dict[str, Any], payload: bytes = b"") -> None:
    head = json.dumps(header, ensure_ascii=True).encode()
    fh.write(MAGIC + struct.pack(">I", len(head)) + head + struct.pack(">Q", len(payload)) + payload)
    fh.flush()


def _read(fh: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        b = fh.read(left)
        if not b:
            raise EOFError("the other side closed the stream")
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def read_frame(fh: BinaryIO, max_payload: int) -> tuple[dict[str, Any], bytes]:
    if _read(fh, 4) != MAGIC:
        raise FrameError("not a frame")
    (n,) = struct.unpack(">I", _read(fh, 4))
    if n > MAX_HEADER:
        raise FrameError("frame header too large")
    try:
        header = json.loads(_read(fh, n))
    except ValueError as exc:
        raise FrameError("frame header is not JSON") from exc
    if not isinstance(header, dict):
        raise FrameError("frame header is not an object")
    (m,) = struct.unpack(">Q", _read(fh, 8))
    if m > max_payload:
        raise FrameError(f"frame payload of {m} bytes is over the limit of {max_payload}")
    return header, _read(fh, m)
