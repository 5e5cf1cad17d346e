"""The offline pack's tokenizer as a Hugging Face `tokenizer.json` (models.md §7.2).

The pack's per-code-point normalisation map becomes a SentencePiece precompiled charsmap (a
Darts double-array trie plus a pool of replacement strings) for the `Precompiled` normaliser;
see models/pack.py for why that normaliser was chosen.
"""

from __future__ import annotations

import base64
import json
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groove_cli.models.pack_file import PackFile


def build_charsmap(mapping: dict[int, str]) -> bytes:
    """A SentencePiece precompiled charsmap for a per-code-point map.

    Layout: u32 trie size in bytes, the Darts-clone double-array units (u32 LE), then the
    NUL-terminated replacement strings. Keys are the UTF-8 bytes of each code point; a unit
    holds its label (bits 0–7), a has-leaf flag (bit 8) and the XOR offset to its children
    (bits 10–30); a leaf unit holds the replacement's byte offset with bit 31 set.
    """
    pool = bytearray()
    where: dict[str, int] = {}
    for repl in sorted(set(mapping.values())):
        where[repl] = len(pool)
        pool += repl.encode("utf-8") + b"\0"

    # Byte trie: node = (children, value-or-None), built from sorted keys.
    root: dict[int, Any] = {}
    values: dict[int, int] = {}  # id(node dict) -> value
    for cp in sorted(mapping):
        node_: dict[int, Any] = root
        for byte in chr(cp).encode("utf-8", "surrogatepass"):
            node_ = node_.setdefault(byte, {})
        values[id(node_)] = where[mapping[cp]]

    size = 1 << 12
    units = [0] * size
    used = bytearray(size)
    used[0] = 1
    used_bases: set[int] = set()
    queue: deque[tuple[dict[int, Any], int]] = deque([(root, 0)])
    scan = 1
    while queue:
        node_, pos = queue.popleft()
        labels = sorted(node_)
        has_leaf = id(node_) in values
        slots = ([0] if has_leaf else []) + labels
        while scan < len(used) and used[scan]:
            scan += 1
        p = scan
        while True:
            if p >= size - 256:
                units += [0] * size
                used += bytearray(size)
                size *= 2
            base = p ^ slots[0]
            if (
                not used[p]
                and base not in used_bases
                and all(not used[base ^ s] for s in slots)
                and (pos ^ base) < (1 << 21)
            ):
                break
            p += 1
        used_bases.add(base)
        units[pos] |= ((pos ^ base) << 10) | ((1 << 8) if has_leaf else 0)
        if has_leaf:
            units[base] = values[id(node_)] | (1 << 31)
            used[base] = 1
        for label in labels:
            child = base ^ label
            units[child] = label
            used[child] = 1
            queue.append((node_[label], child))
    while len(units) > 1 and units[-1] == 0 and not used[len(units) - 1]:
        units.pop()
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(pool)


def build_tokenizer_json(pack: PackFile) -> str:
    """The §7.2 tokenizer: Unigram (unk id 3) + charsmap normaliser + Metaspace + `<s> … </s>`."""
    mapping = {cp: "".join(chr(c) for c in repl) for cp, repl in pack.norm_map.items()}
    charsmap = base64.b64encode(build_charsmap(mapping)).decode("ascii")
    special = {pack.bos_id, pack.pad_id, pack.eos_id, pack.unk_id}
    mask_id = len(pack.pieces) - 1 if pack.pieces[-1] == "<mask>" else None
    if mask_id is not None:
        special.add(mask_id)
    bos, eos = pack.pieces[pack.bos_id], pack.pieces[pack.eos_id]
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": {
            "strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None,
            "pad_id": pack.pad_id, "pad_type_id": 0, "pad_token": pack.pieces[pack.pad_id],
        },
        "added_tokens": [
            {
                "id": i, "content": pack.pieces[i], "single_word": False,
                "lstrip": i == mask_id, "rstrip": False, "normalized": False, "special": True,
            }
            for i in sorted(special)
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": charsmap},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            ],
        },
        "pre_tokenizer": {
            "type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True,
        },
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "special_tokens": {
                bos: {"id": bos, "ids": [pack.bos_id], "tokens": [bos]},
                eos: {"id": eos, "ids": [pack.eos_id], "tokens": [eos]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                    "split": True},
        "model": {
            "type": "Unigram",
            "unk_id": pack.unk_id,
            "vocab": [[piece, score] for piece, score in zip(pack.pieces, pack.scores, strict=True)],
            "byte_fallback": False,
        },
    }
    return json.dumps(doc, ensure_ascii=False)
