"""The embedding model a command runs with, and its identity checks against the index.

Kept apart from the indexer so reading commands (search, eval, tune) can check identity
without importing the chunker, the scanner or numpy (index.md §5, cli.md §1).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from groove_cli import messages
from groove_cli.errors import GrooveError, IndexMismatch
from groove_cli.models import peek_model, resolve_model


def rebuild_command(kb: str | None, *extra: str) -> str:
    """`groove index --kb-path KB --force …` with the KB folder the index records (shell-quoted),
    a command that runs as printed; without a recorded KB, `--kb-path` is left out."""
    words = ["groove", "index", *(["--kb-path", kb] if kb else []), "--force", *extra]
    return " ".join(shlex.quote(word) for word in words)


def model_mismatch_text(db_model: str, db_dim: int, model: str, dim: int,
                        kb: str | None = None) -> str:
    return (
        "embedding model mismatch.\n"
        f"  DB was indexed with: {db_model} ({db_dim} dim)\n"
        f"  Current runtime:     {model} ({dim} dim)\n\n"
        f"Run `{rebuild_command(kb, '--model', model)}` to rebuild the index, "
        "or switch back to the previous model."
    )


def max_length_mismatch_text(recorded: int, runtime: int, kb: str | None = None) -> str:
    return (
        "embedding max_length mismatch.\n"
        f"  DB was indexed with max_length {recorded}; current runtime uses {runtime}.\n\n"
        f"Run `{rebuild_command(kb)}` to rebuild the index, "
        f"or set max_length back to {recorded}."
    )


@dataclass(frozen=True, slots=True)
class RuntimeModel:
    """The embedding model a command runs with, known without loading it."""

    name: str
    dim: int
    max_length: int
    sha256: str | None
    query_prefix: str


def recorded_model(meta: dict[str, str], declared_dim: int | None) -> RuntimeModel:
    """The model the index records, taken on trust: enough for a search that embeds nothing
    (a full-text-only search must not need the model's files)."""
    dim = meta.get("embedding_dim")
    return RuntimeModel(meta.get("embedding_model", ""), int(dim) if dim else declared_dim or 0,
                        int(meta.get("embedding_max_length", "0")),
                        meta.get("embedding_model_sha256") or None, "")


def runtime_model(meta: dict[str, str], model: str | None, max_length: int | None,
                  models_dir: Path, *, force: bool = False) -> RuntimeModel:
    """Resolve name, dim and max_length per cli.md §1 and check them against the index (§5).

    Raises IndexMismatch before anything is loaded or downloaded.
    """
    recorded = meta.get("embedding_model")
    name = model or recorded or "multilingual-e5-small"
    identity = peek_model(name, models_dir)
    if max_length is not None:
        effective = max_length
    elif recorded == identity.name and "embedding_max_length" in meta and not force:
        effective = int(meta["embedding_max_length"])
    else:
        effective = identity.max_length
    if max_length is not None and max_length > identity.max_length:
        raise GrooveError(
            f"max_length = {max_length} is out of range [16, {identity.max_length}] for "
            f"{identity.name}"
        )
    dim = identity.dim
    if dim is None:  # a local directory whose output shape does not fix the dimension
        dim = resolve_model(name, models_dir).settings.dim or 0
    runtime = RuntimeModel(identity.name, dim, effective, identity.sha256, identity.query_prefix)
    if recorded and not force:
        check_identity(meta, runtime)
    return runtime


def check_identity(meta: dict[str, str], runtime: RuntimeModel) -> None:
    """Model name/dim and max_length must match what the index recorded (index.md §5)."""
    db_model = meta["embedding_model"]
    db_dim = int(meta.get("embedding_dim", "0"))
    if db_model != runtime.name or db_dim != runtime.dim:
        raise IndexMismatch(model_mismatch_text(db_model, db_dim, runtime.name, runtime.dim,
                                                meta.get("kb_path")))
    recorded_len = int(meta.get("embedding_max_length", runtime.max_length))
    if recorded_len != runtime.max_length:
        raise IndexMismatch(max_length_mismatch_text(recorded_len, runtime.max_length,
                                                     meta.get("kb_path")))


def warn_digest(meta: dict[str, str], name: str, sha256: str | None) -> None:
    recorded = meta.get("embedding_model_sha256")
    if recorded and sha256 and recorded != sha256:
        messages.warning(
            f"the model files for {name} differ from those this index was built with; rankings "
            "may shift slightly. Run `groove index --force` to rebuild."
        )
