"""A fast-loading stand-in for a big Unigram tokenizer when only a few texts need encoding.

Why: building the 250k-piece XLM-R `tokenizer.json` holds the GIL for most of a cold
`groove search` that has to embed its query (models.md §9;
bench/results/code-notes.md#tokenizer-load). Unigram's
Viterbi search only ever considers vocabulary pieces that are substrings of a pre-tokenised
word, so a tokenizer whose vocabulary is just those pieces — same scores, same normaliser,
pre-tokeniser and post-processor, plus the special tokens and the lowest-scoring piece (the
unknown-character penalty is derived from the minimum score) — segments those texts exactly
like the full one. Its ids are then mapped back to the full vocabulary's.

The piece table is derived once from a loaded full tokenizer and stored next to it:
`tokenizer.pieces-keys.npy` (UTF-8 pieces, sorted, fixed width: looked up with
`np.searchsorted` on a memory map), `tokenizer.pieces-values.npy` (id and score per key) and
`tokenizer.pieces.json` (the tokenizer without its vocabulary, plus what the table was built
from; written last, so it marks a complete table). It is written only when a self-check over
sample texts in several scripts shows identical ids from both paths; anything the table
cannot reproduce (a text containing a special token's literal text, a non-Unigram model, an
unfamiliar post-processor) falls back to the full tokenizer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groove_cli import messages
from groove_cli.npyfiles import save_stamped

PIECES_FORMAT = 1

# Texts the self-check encodes both ways before a table is trusted: scripts with and without
# spaces, full-width forms the normaliser folds, combining marks, emoji, characters no piece
# covers (the unknown-token path), whitespace runs and a piece that looks like a special token.
SELF_CHECK_TEXTS = (
    "query: how do I rotate the API keys?",
    "passage: The quick brown fox jumps over the lazy dog.",
    "query: 春が終わりに差し掛かるにつれて、南シナ海付近にある勢力を増し北上してくる気団は?",
    "ＦＵＬＬ－ｗｉｄｔｈ　ｔｅｘｔ and ｶﾀｶﾅ",
    "Cafe\u0301 naïve coöperate — “quotes” …",
    "emoji 🚀🧪 and symbols ∑∫√ ≠ ≈",
    "unknown \u0378\u0379 ⟁⟂ \U0001d11e characters",
    "  leading   and   repeated   spaces\tand\ttabs\nnew lines  ",
    "Ελληνικά, Русский текст, العربية, हिन्दी, 한국어 문장",
    "mask-like ＜ｍａｓｋ＞ and <s-like> text",
    "x" * 40 + " " + "ー" * 30,
    "",
)


@dataclass(frozen=True, slots=True)
class PiecePaths:
    """The three files of a piece table, next to their tokenizer.json."""

    meta: Path
    keys: Path
    values: Path

    @classmethod
    def of(cls, tokenizer_path: Path) -> PiecePaths:
        stem = tokenizer_path.stem + ".pieces"
        return cls(tokenizer_path.with_name(stem + ".json"),
                   tokenizer_path.with_name(stem + "-keys.npy"),
                   tokenizer_path.with_name(stem + "-values.npy"))


def source_stamp(tokenizer_path: Path) -> dict[str, Any]:
    """What a table was built from: the tokenizer file's size and mtime, the library version."""
    import tokenizers

    st = tokenizer_path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "tokenizers": tokenizers.__version__}


class PieceTokenizer:
    """Encodes a few texts like the full tokenizer, from the pieces they can contain."""

    def __init__(self, meta: dict[str, Any], keys: npt.NDArray[np.bytes_],
                 values: npt.NDArray[np.float64]) -> None:
        from tokenizers import Tokenizer

        self._meta = meta
        self._keys = keys
        self._values = values
        self._fixed: list[tuple[int, str, float]] = [tuple(e) for e in meta["fixed"]]
        self._max_chars = int(meta["max_piece_chars"])
        self._width = keys.dtype.itemsize
        self._specials = tuple(meta["special_texts"])
        # vocabulary-less skeleton: its normaliser and pre-tokeniser give the words to scan
        self._skeleton = Tokenizer.from_str(json.dumps(self._document(self._fixed)))
        self.pad_id = int(meta["pad_id"])
        self.num_special = int(self._skeleton.num_special_tokens_to_add(False))

    @classmethod
    def open(cls, tokenizer_path: Path) -> PieceTokenizer | None:
        """The table stored next to `tokenizer_path`, or None when missing, stale or unreadable."""
        paths = PiecePaths.of(tokenizer_path)
        try:
            meta = json.loads(paths.meta.read_text(encoding="utf-8"))
            if (meta.get("format") != PIECES_FORMAT
                    or meta.get("source") != source_stamp(tokenizer_path)):
                return None
            keys = np.load(paths.keys, mmap_mode="r", allow_pickle=False)
            values = np.load(paths.values, mmap_mode="r", allow_pickle=False)
            if keys.dtype.kind != "S" or values.shape != (len(keys), 2):
                return None
            return cls(meta, keys, values)
        except Exception as exc:  # a cache: anything unreadable means "use the full tokenizer"
            messages.debug(f"not using the piece table of {tokenizer_path}: {exc}")
            return None

    def _document(self, entries: Sequence[tuple[int, str, float]]) -> dict[str, Any]:
        """The tokenizer JSON over `entries` (full id, piece, score), ids remapped to positions."""
        doc: dict[str, Any] = json.loads(json.dumps(self._meta["skeleton"]))
        new_id = {full: i for i, (full, _, _) in enumerate(entries)}
        doc["model"]["vocab"] = [[piece, score] for _, piece, score in entries]
        doc["model"]["unk_id"] = new_id[int(self._meta["unk_id"])]
        for token in doc.get("added_tokens") or []:
            token["id"] = new_id[int(token["id"])]
        post = doc.get("post_processor")
        if post is not None:
            for special in post["special_tokens"].values():
                special["ids"] = [new_id[int(i)] for i in special["ids"]]
        return doc

    def covers(self, texts: Sequence[str]) -> bool:
        """False when a text contains a special token's literal text (the full tokenizer splits
        those out before normalising, which the table does not reproduce)."""
        return not any(s in t for t in texts for s in self._specials)

    def _candidates(self, texts: Sequence[str]) -> list[bytes]:
        """Every substring (up to the longest piece) of every pre-tokenised word, as UTF-8."""
        norm = self._skeleton.normalizer
        pre = self._skeleton.pre_tokenizer
        found: set[str] = set()
        for text in texts:
            normalised = norm.normalize_str(text) if norm is not None else text
            words = pre.pre_tokenize_str(normalised) if pre is not None else [(normalised, None)]
            for word, _ in words:
                n = len(word)
                for i in range(n):
                    for j in range(i + 1, min(n, i + self._max_chars) + 1):
                        found.add(word[i:j])
        encoded = (s.encode("utf-8") for s in found)
        # no piece is longer than the key width or holds NUL (NumPy byte strings drop
        # trailing NULs, so such a candidate could falsely equal a shorter key)
        return sorted(b for b in encoded if len(b) <= self._width and b"\0" not in b)

    def tokenizer_for(self, texts: Sequence[str]) -> tuple[Any, npt.NDArray[np.int64]]:
        """A tokenizer over just the pieces `texts` can use, and its id → full id map."""
        entries = list(self._fixed)
        seen = {full for full, _, _ in entries}
        candidates = self._candidates(texts)
        if candidates:
            wanted = np.array(candidates, dtype=self._keys.dtype)
            at = np.searchsorted(self._keys, wanted)
            inside = at < len(self._keys)
            hit = np.zeros(len(wanted), dtype=bool)
            hit[inside] = self._keys[at[inside]] == wanted[inside]
            for idx in np.flatnonzero(hit):
                full_id, score = self._values[at[idx]]
                if int(full_id) not in seen:
                    seen.add(int(full_id))
                    entries.append((int(full_id), candidates[idx].decode("utf-8"), float(score)))
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(json.dumps(self._document(entries)))
        return tok, np.array([full for full, _, _ in entries], dtype=np.int64)

    def encode_rows(self, texts: Sequence[str], cap: int) -> list[list[int]]:
        """Full-vocabulary ids of each text: untruncated content cut to `cap`, then the special
        tokens (what the embedder feeds the model)."""
        tok, full_ids = self.tokenizer_for(texts)
        rows: list[list[int]] = []
        for enc in tok.encode_batch(list(texts), add_special_tokens=False):
            if len(enc.ids) > cap:
                enc.truncate(cap)
            rows.append(full_ids[tok.post_process(enc).ids].tolist())
        return rows


def _skeleton(document: dict[str, Any]) -> dict[str, Any] | None:
    """The tokenizer JSON minus its vocabulary, or None when the table cannot stand in for it."""
    model = document.get("model") or {}
    if model.get("type") != "Unigram" or model.get("byte_fallback") or model.get("unk_id") is None:
        return None
    post = document.get("post_processor")
    if post is not None and post.get("type") != "TemplateProcessing":
        return None
    skeleton = {k: v for k, v in document.items() if k != "model"}
    skeleton["model"] = {k: v for k, v in model.items() if k != "vocab"}
    skeleton["truncation"] = None
    skeleton["padding"] = None
    return skeleton


def build_pieces(tokenizer_path: Path, full: Any, pad_id: int) -> bool:
    """Derive and store the piece table of `tokenizer_path` (its loaded tokenizer is `full`).

    Returns True when a verified table was written. Never raises for I/O: a read-only model
    directory just keeps using the full tokenizer.
    """
    paths = PiecePaths.of(tokenizer_path)
    try:
        stamp = source_stamp(tokenizer_path)
        document = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        messages.debug(f"no piece table for {tokenizer_path}: {exc}")
        return False
    skeleton = _skeleton(document)
    if skeleton is None:
        return False
    vocab: list[list[Any]] = document["model"]["vocab"]
    pieces = [str(p) for p, _ in vocab]
    encoded = [p.encode("utf-8") for p in pieces]
    if len(set(encoded)) != len(encoded) or any(b"\0" in b or not b for b in encoded):
        return False  # fixed-width byte keys need distinct, non-empty pieces without NUL
    scores = np.array([float(s) for _, s in vocab], dtype=np.float64)
    special_ids: list[int] = []
    for token in document.get("added_tokens") or []:
        tid = int(token["id"])
        if tid >= len(pieces) or pieces[tid] != token["content"]:
            return False  # an added token outside the vocabulary: not reproducible here
        special_ids.append(tid)
    unk_id = int(document["model"]["unk_id"])
    specials = {str(t["content"]) for t in document.get("added_tokens") or []}
    fixed_ids = list(dict.fromkeys([*special_ids, unk_id, int(np.argmin(scores))]))
    keys = np.array(encoded)
    order = np.argsort(keys, kind="stable")
    values = np.column_stack([order.astype(np.float64), scores[order]])
    meta = {
        "format": PIECES_FORMAT,
        "source": stamp,
        "unk_id": unk_id,
        "pad_id": pad_id,
        "max_piece_chars": max(len(p) for p in pieces),
        "fixed": [[i, pieces[i], float(scores[i])] for i in fixed_ids],
        "special_texts": sorted(specials),
        "skeleton": skeleton,
    }
    table = PieceTokenizer(meta, keys[order], values)
    own = _vocabulary_texts([p for p in pieces if p not in specials])
    if not _agrees(table, full, [*SELF_CHECK_TEXTS, *own]):
        messages.debug(f"piece table of {tokenizer_path} disagrees with the tokenizer; not kept")
        return False
    return _write(paths, meta, keys[order], values)


def _vocabulary_texts(pieces: Sequence[str], count: int = 240) -> list[str]:
    """Self-check texts made of the model's own pieces (an even sample across the vocabulary),
    run together and spaced out, so the check exercises this vocabulary whatever its scripts."""
    step = max(len(pieces) // count, 1)
    sample = [p.replace("\u2581", " ") for p in pieces[::step]]
    groups = [sample[i : i + 12] for i in range(0, len(sample), 12)]
    return [text for g in groups for text in ("".join(g), " ".join(g))]


def _agrees(table: PieceTokenizer, full: Any, texts: Sequence[str]) -> bool:
    """Both paths give the same ids for every check text, one at a time and as a batch."""
    texts = [t for t in texts if table.covers([t])]
    cap = 1 << 30

    def reference(batch: Sequence[str]) -> list[list[int]]:
        return [list(full.post_process(e).ids)
                for e in full.encode_batch(list(batch), add_special_tokens=False)]

    if table.encode_rows(texts, cap) != reference(texts):
        return False
    return all(table.encode_rows([t], cap) == reference([t]) for t in texts)


def _write(paths: PiecePaths, meta: dict[str, Any], keys: npt.NDArray[np.bytes_],
           values: npt.NDArray[np.float64]) -> bool:
    """Store the table (the meta file last: its presence marks a complete table)."""
    try:
        save_stamped(((paths.keys, keys), (paths.values, values)), paths.meta, meta)
        return True
    except OSError as exc:
        messages.debug(f"cannot write the piece table {paths.meta}: {exc}")
        return False


def ensure_pieces(tokenizer_path: Path, full: Any, pad_id: int) -> None:
    """Derive the piece table of a loaded Unigram tokenizer once, when missing or stale."""
    if type(full.model).__name__ != "Unigram" or not os.access(tokenizer_path.parent, os.W_OK):
        return
    try:
        meta = json.loads(PiecePaths.of(tokenizer_path).meta.read_text(encoding="utf-8"))
        if meta.get("format") == PIECES_FORMAT and meta.get("source") == source_stamp(
                tokenizer_path):
            return
    except (OSError, ValueError, AttributeError):
        pass
    build_pieces(tokenizer_path, full, pad_id)
