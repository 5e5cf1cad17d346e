"""Cross-encoder reranker (models.md §6): score (query, document) pairs with one logit each.

The query is cut alone to max_length // 2 tokens first, so a long query can never make pair
truncation fail; only the document is truncated to fit the pair into max_length. When the
graph declares `token_type_ids`, the pair template's own segment ids are fed (0 for the
query part, 1 for the document part on BERT cross-encoders), not zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groove_cli.errors import ModelError
from groove_cli.models.directory import ResolvedModel
from groove_cli.models.registry import ModelSettings
from groove_cli.models.runtime import (
    Runtime,
    length_batches,
    load_runtime,
    output_shape,
    pad_batch,
)


class CrossEncoder:
    """A loaded cross-encoder. Create with `CrossEncoder.load`."""

    def __init__(self, model: ResolvedModel, runtime: Runtime) -> None:
        self.model = model
        self.settings: ModelSettings = model.settings
        self.max_length = model.settings.max_length
        self._rt = runtime
        self._tok = runtime.tokenizer
        self._n_special_pair = int(self._tok.num_special_tokens_to_add(True))
        self._feed_types = "token_type_ids" in runtime.input_names

    @classmethod
    def load(cls, model: ResolvedModel) -> CrossEncoder:
        """Load `model`; refuses a logits output that is not [batch, 1] or [batch]."""
        if model.settings.kind != "reranker":
            raise ModelError(f"{model.name} is an {model.settings.kind}, not a reranker")
        runtime = load_runtime(model)
        _check_logits(model, runtime)
        return cls(model, runtime)

    def pair_encodings(self, query: str, documents: Sequence[str]) -> list[Any]:
        """The tokenizer's pair encodings (query, document), truncated as §6 describes."""
        q = self._tok.encode(query, add_special_tokens=False)
        if len(q.ids) > self.max_length // 2:
            q.truncate(self.max_length // 2)
        budget = max(self.max_length - len(q.ids) - self._n_special_pair, 0)
        pairs = []
        for doc in self._tok.encode_batch(list(documents), add_special_tokens=False):
            if len(doc.ids) > budget:
                doc.truncate(budget)
            pairs.append(self._tok.post_process(q, doc))
        return pairs

    def score(self, query: str, documents: Sequence[str]) -> npt.NDArray[np.float32]:
        """Raw logits (no sigmoid), one per document, in input order."""
        scores = np.zeros(len(documents), dtype=np.float32)
        if not documents:
            return scores
        pairs = self.pair_encodings(query, documents)
        for batch in length_batches([len(p.ids) for p in pairs], self.settings.batch_size):
            scores[batch] = self._run([pairs[i] for i in batch])
        return scores

    def _run(self, pairs: Sequence[Any]) -> npt.NDArray[np.float32]:
        ids, mask = pad_batch([p.ids for p in pairs], self._rt.pad_id)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._feed_types:
            types, _ = pad_batch([p.type_ids for p in pairs], 0)
            feeds["token_type_ids"] = types
        (logits,) = self._rt.run([self.settings.output], feeds)
        logits = np.asarray(logits, dtype=np.float32)
        if logits.ndim == 2 and logits.shape[1] == 1:
            logits = logits[:, 0]
        if logits.shape != (len(pairs),):
            raise ModelError(
                f"{self.model.name}: output {self.settings.output!r} has shape "
                f"{list(logits.shape)}, expected [batch, 1] or [batch]"
            )
        return logits


def _check_logits(model: ResolvedModel, runtime: Runtime) -> None:
    name = model.settings.output
    shape = output_shape(model, runtime)
    if not logits_shape_ok(shape):
        raise ModelError(
            f"{model.onnx_path}: reranker output {name!r} has shape {shape}; "
            "expected [batch, 1] or [batch]"
        )


def logits_shape_ok(shape: list[int | str | None]) -> bool:
    """[batch] or [batch, 1]; a symbolic second dimension is checked when the model runs."""
    if len(shape) == 1:
        return True
    return len(shape) == 2 and not (isinstance(shape[1], int) and shape[1] != 1)
