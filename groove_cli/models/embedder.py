"""ONNX text embedder (models.md §5): prefix, tokenise, run, pool, normalise.

Inputs are batched by length (sorted) so padding stays small; results come back in input
order. Padded keys are masked inside the graph and padded positions are excluded from mean
pooling, so a text's vector does not depend on its batch beyond rounding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groove_cli.errors import ConfigError, ModelError
from groove_cli.models.directory import ResolvedModel
from groove_cli.models.pieces import PieceTokenizer, ensure_pieces
from groove_cli.models.registry import ModelSettings
from groove_cli.models.runtime import (
    Runtime,
    length_batches,
    load_runtime,
    load_tokenizer,
    output_shape,
    pad_batch,
)

MIN_MAX_LENGTH = 16
WINDOW_CHARS = 32_768
"""Longer texts are tokenized a window at a time: one 30 MB chunk tokenized whole took
gigabytes of encodings and minutes (issue 15 item 11)."""


EXACT_COUNT_CHARS = 1_048_576
"""Token counts are exact up to this many characters and extrapolated beyond: a chunk that
long is far past every token threshold, and counting 30 MB exactly takes over a minute."""


def windows(text: str, size: int = WINDOW_CHARS) -> Iterator[str]:
    """`text` in consecutive pieces of at most `size` characters, each cut just before a
    whitespace character when one lies in the piece's second half (so the pieces tokenize as
    the whole text does); text without whitespace is cut at `size`."""
    start, end_of_text = 0, len(text)
    while start < end_of_text:
        end = min(start + size, end_of_text)
        if end < end_of_text:
            cut = max(text.rfind(" ", start + size // 2, end), text.rfind("\n", start + size // 2, end))
            if cut > start:
                end = cut
        yield text[start:end]
        start = end


PIECE_OVERLAP = 8
"""An extra piece overlaps the one before it by 1/8 of its window (index.md §4)."""
PIECE_BOUNDARY = 2
"""Tokens a piece gives up at each end: a text tokenized after the prefix can differ from the
same text tokenized alone by a token at the seam, and the overlap covers what this hides."""
MAX_PIECES = 256
"""Vectors per chunk at most (the first included): a chunk longer than this many windows
keeps its remaining tail for the full-text legs only, like a truncated chunk."""


def check_max_length(max_length: int, own: int) -> None:
    """`max_length` must lie in [16, the model's own]; ConfigError naming the key otherwise."""
    if not MIN_MAX_LENGTH <= max_length <= own:
        raise ConfigError(
            f"max_length = {max_length} is out of range [{MIN_MAX_LENGTH}, {own}]",
            f"the model's own max_length is {own}",
        )


# Above this many characters a batch is tokenised by the full tokenizer even when the piece
# table could do it: candidate pieces grow with characters × longest piece, and past a few
# thousand characters building the full tokenizer once is the cheaper way.
PIECE_TABLE_MAX_CHARS = 4_000


def fits_piece_table(texts: Sequence[str]) -> bool:
    """Whether a batch is small enough for the piece table (prefixes not counted)."""
    return sum(map(len, texts)) <= PIECE_TABLE_MAX_CHARS


class Embedder:
    """A loaded embedding model. Create with `Embedder.load`."""

    def __init__(
        self, model: ResolvedModel, runtime: Runtime, max_length: int, dim: int,
        pieces: PieceTokenizer | None = None,
    ) -> None:
        self.model = model
        self.settings: ModelSettings = model.settings
        self.max_length = max_length
        self.dim = dim
        self.runtime = runtime
        self._tok: Any = runtime.tokenizer
        self._pieces = pieces
        self._pad_id = runtime.pad_id if pieces is None else pieces.pad_id
        self._n_special = (pieces.num_special if pieces is not None
                           else int(self._tok.num_special_tokens_to_add(False)))
        self._feed_types = "token_type_ids" in runtime.input_names

    @classmethod
    def load(cls, model: ResolvedModel, max_length: int | None = None, *,
             few_queries: bool = False, threads: int | None = None,
             session: Any = None) -> Embedder:
        """Load `model`; `max_length` may lower the model's own cap (never raise it).

        `few_queries`: the caller embeds only a handful of queries (a search), so when the
        model's piece table is stored (`pieces.py`) the full tokenizer is not built at all.
        Otherwise the full tokenizer loads, and its piece table is derived once if missing.
        `threads` caps onnxruntime's intra-op threads (default: every core). `session`: an
        onnxruntime session already created for `model` (`runtime.create_session`).
        """
        if model.settings.kind != "embedder":
            raise ModelError(f"{model.name} is a {model.settings.kind}, not an embedder")
        own = model.settings.max_length
        effective = own if max_length is None else max_length
        check_max_length(effective, own)
        pieces = PieceTokenizer.open(model.tokenizer_path) if few_queries else None
        runtime = load_runtime(model, tokenizer=pieces is None, threads=threads,
                               session=session)
        dim = _check_output(model, runtime)
        if pieces is None:
            ensure_pieces(model.tokenizer_path, runtime.tokenizer, runtime.pad_id)
        return cls(model, runtime, effective, dim, pieces)

    # ------------------------------------------------------------------ tokens

    def _full_tokenizer(self) -> Any:
        """The full tokenizer, loaded on first use when the piece table stood in so far."""
        if self._tok is None:
            self._tok, _ = load_tokenizer(self.model.tokenizer_path)
        return self._tok

    def _content_lengths(self, texts: Sequence[str], prefix: str, *,
                         stop_above: int | None = None) -> list[int]:
        """Token counts of prefix + text, without special tokens and untruncated.

        Texts up to WINDOW_CHARS are encoded in one batch; longer ones a window at a time, so
        memory stays bounded and time linear for a huge note; past EXACT_COUNT_CHARS the count
        is extrapolated. With `stop_above`, counting a
        long text stops once its count exceeds that (the result is then only a lower bound).
        """
        tok = self._full_tokenizer()
        prefixed = [prefix + t for t in texts]
        counts = [0] * len(prefixed)
        short = [i for i, text in enumerate(prefixed) if len(text) <= WINDOW_CHARS]
        encoded = tok.encode_batch([prefixed[i] for i in short], add_special_tokens=False)
        for i, enc in zip(short, encoded, strict=True):
            counts[i] = len(enc.ids)
        for i, text in enumerate(prefixed):
            if len(text) <= WINDOW_CHARS:
                continue
            seen = 0
            for window in windows(text):
                counts[i] += len(tok.encode(window, add_special_tokens=False).ids)
                seen += len(window)
                if stop_above is not None and counts[i] > stop_above:
                    break
                if seen >= EXACT_COUNT_CHARS:  # the rest at the same tokens per character
                    counts[i] = round(counts[i] * len(text) / seen)
                    break
        return counts

    def _head_encoding(self, text: str, cap: int) -> Any:
        """The encoding of the start of a long `text` holding at least `cap` tokens (or all of
        it): windows cut at whitespace tokenize exactly as the whole text does."""
        from tokenizers import Encoding

        tok = self._full_tokenizer()
        parts: list[Any] = []
        total = 0
        for window in windows(text):
            enc = tok.encode(window, add_special_tokens=False)
            parts.append(enc)
            total += len(enc.ids)
            if total >= cap:
                break
        return parts[0] if len(parts) == 1 else Encoding.merge(parts, growing_offsets=True)

    def _prefix(self, kind: str) -> str:
        if kind == "query":
            return self.settings.query_prefix
        if kind == "passage":
            return self.settings.passage_prefix
        raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each bare text: no prefix, no special tokens, no truncation (index.md §4)."""
        return self._content_lengths(texts, "")

    def input_lengths(self, texts: Sequence[str], kind: str) -> list[int]:
        """Model input length of each text: prefixed, with special tokens, untruncated.

        A value above `max_length` means that input is truncated when embedded; for a text
        longer than WINDOW_CHARS such a value may be a lower bound (counting stops there).
        """
        lengths = self._content_lengths(texts, self._prefix(kind), stop_above=self.max_length)
        return [n + self._n_special for n in lengths]

    def _rows(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        """Model input ids of prefix + text: content cut to fit `max_length`, special tokens
        added — from the piece table for a small batch it covers, else the full tokenizer."""
        cap = max(self.max_length - self._n_special, 0)
        prefixed = [prefix + t for t in texts]
        if self._pieces is not None and fits_piece_table(texts) and self._pieces.covers(prefixed):
            return self._pieces.encode_rows(prefixed, cap)
        tok = self._full_tokenizer()
        rows: list[list[int]] = [[] for _ in prefixed]
        short = [i for i, text in enumerate(prefixed) if len(text) <= WINDOW_CHARS]
        encoded = tok.encode_batch([prefixed[i] for i in short], add_special_tokens=False)
        heads = dict(zip(short, encoded, strict=True))
        for i, text in enumerate(prefixed):
            enc = heads[i] if i in heads else self._head_encoding(text, cap)
            if len(enc.ids) > cap:
                enc.truncate(cap)
            rows[i] = tok.post_process(enc).ids
        return rows

    def _specials(self) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer puts before and after one text's tokens."""
        tok = self._full_tokenizer()
        enc = tok.encode("a", add_special_tokens=False)
        full = list(tok.post_process(enc).ids)
        at = full.index(enc.ids[-1])
        return full[:at - len(enc.ids) + 1], full[at + 1:]

    def piece_rows(self, lead: str, content: str) -> tuple[list[list[int]], bool]:
        """Model input ids of a long chunk's extra pieces (index.md §4), and whether they
        reach the content's end (False past MAX_PIECES vectors).

        The first piece is the chunk's ordinary input (`lead` + `content`, cut at
        `max_length`). The content's tokens after what it covers are cut into window-sized
        pieces overlapping by 1/8, each run with the special tokens and `lead` (the passage
        prefix, and the breadcrumb in static context mode) in front, as the first piece has
        them. No pieces for a content that fits the first piece."""
        tok = self._full_tokenizer()
        head, tail = self._specials()
        lead_ids = list(tok.encode(lead, add_special_tokens=False).ids) if lead else []
        span = self.max_length - len(head) - len(tail) - len(lead_ids) - 2 * PIECE_BOUNDARY
        overlap = max(span // PIECE_OVERLAP, 2 * PIECE_BOUNDARY)
        step = span - overlap
        if step <= 0:
            return [], False
        first = span + PIECE_BOUNDARY  # the content tokens the first piece surely holds
        limit = first + MAX_PIECES * step + overlap
        if len(content) <= WINDOW_CHARS:
            ids = list(tok.encode(content, add_special_tokens=False).ids)
        else:
            ids = list(self._head_encoding(content, limit).ids)
        if len(ids) <= first:
            return [], True
        rows: list[list[int]] = []
        start = first - overlap
        while len(rows) < MAX_PIECES - 1:
            stop = min(start + span, len(ids))
            rows.append(head + lead_ids + ids[start:stop] + tail)
            if stop == len(ids):
                return rows, True
            start += step
        return rows, False

    # ------------------------------------------------------------------ embedding

    def embed_rows(self, rows: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """Vectors of ready model inputs (`piece_rows`), float32 [n, dim], in input order."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        for batch in length_batches([len(r) for r in rows], self.settings.batch_size):
            out[batch] = self._run([rows[i] for i in batch])
        return out

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Query vectors, float32 [n, dim]."""
        return self._embed(texts, self.settings.query_prefix)

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passage vectors, float32 [n, dim]."""
        return self._embed(texts, self.settings.passage_prefix)

    def _embed(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.embed_rows(self._rows(texts, prefix))

    def _run(self, rows: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        ids, mask = pad_batch(rows, self._pad_id)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._feed_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self.runtime.run([self.settings.output], feeds)
        hidden = np.asarray(hidden, dtype=np.float32)
        if hidden.ndim != 3 or hidden.shape[-1] != self.dim:
            raise ModelError(
                f"{self.model.name}: output {self.settings.output!r} has shape "
                f"{list(hidden.shape)}, expected [batch, seq, {self.dim}]"
            )
        pooled = pool(hidden, mask, self.settings.pooling or "mean")
        if self.settings.normalise:
            pooled = l2_normalise(pooled)
        return pooled


def pool(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], pooling: str
) -> npt.NDArray[np.float32]:
    """CLS (token 0) or attention-mask-weighted mean over tokens (special tokens included)."""
    if pooling == "cls":
        first: npt.NDArray[np.float32] = np.ascontiguousarray(hidden[:, 0, :], dtype=np.float32)
        return first
    weights = mask.astype(np.float32)
    summed = np.einsum("bsh,bs->bh", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1.0)
    mean: npt.NDArray[np.float32] = (summed / counts).astype(np.float32)
    return mean


def l2_normalise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit L2 norm (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


def _check_output(model: ResolvedModel, runtime: Runtime) -> int:
    """The embedding size the graph declares for `output`; refuses a wrong rank or size."""
    name = model.settings.output
    shape = output_shape(model, runtime)
    expected = model.settings.dim
    if len(shape) != 3:
        raise ModelError(
            f"{model.onnx_path}: output {name!r} has shape {shape}, expected [batch, seq, hidden]"
        )
    last = shape[-1]
    if isinstance(last, int) and expected is not None and last != expected:
        raise ModelError(
            f"{model.onnx_path}: output {name!r} has dimension {last}, but {model.name} "
            f"expects {expected}"
        )
    if expected is not None:
        return expected
    if isinstance(last, int):
        return last
    raise ModelError(f"{model.onnx_path}: cannot tell the embedding size of output {name!r}")
