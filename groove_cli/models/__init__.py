"""The model layer: registry, resolution, ONNX embedder and cross-encoder (models.md).

Importing this package is cheap: onnxruntime and tokenizers are imported only when a model
is loaded (`Embedder.load`, `CrossEncoder.load`), onnx only when the offline pack is
converted, huggingface_hub only when downloading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groove_cli.models.directory import ResolvedModel
from groove_cli.models.registry import DEFAULT_EMBEDDER, REGISTRY, ModelSettings, registry_names
from groove_cli.models.resolve import (
    ModelIdentity,
    ModelStatus,
    cached_model,
    default_models_dir,
    list_models,
    peek_model,
    resolve_model,
)

if TYPE_CHECKING:
    from groove_cli.models.embedder import Embedder
    from groove_cli.models.reranker import CrossEncoder

__all__ = [
    "DEFAULT_EMBEDDER",
    "REGISTRY",
    "CrossEncoder",
    "Embedder",
    "ModelIdentity",
    "ModelSettings",
    "ModelStatus",
    "ResolvedModel",
    "cached_model",
    "default_models_dir",
    "list_models",
    "peek_model",
    "registry_names",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    """`Embedder` and `CrossEncoder` are imported on first access (they pull in numpy)."""
    if name == "Embedder":
        from groove_cli.models.embedder import Embedder

        return Embedder
    if name == "CrossEncoder":
        from groove_cli.models.reranker import CrossEncoder

        return CrossEncoder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
