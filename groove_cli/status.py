"""`groove status` and `groove doctor`: read-only views of an index (cli.md §8, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli.errors import ConfigError, GrooveError
from groove_cli.models import peek_model
from groove_cli.models.registry import PACK_MODEL
from groove_cli.scan import SourceBytes, collect_files, read_source
from groove_cli.store import SCHEMA_VERSION, Store

if TYPE_CHECKING:
    from groove_cli.config import Settings


@dataclass(frozen=True, slots=True)
class Pending:
    new: int
    changed: int
    deleted: int


@dataclass(frozen=True, slots=True)
class StatusReport:
    index: str
    kb_path: str | None
    schema_version: int
    documents: int
    chunks: int
    model_name: str | None
    model_dim: int | None
    model_max_length: int | None
    context_mode: str
    last_indexed: str | None
    pending: Pending | None
    quality_threshold: float
    quality_passing: int
    quality_below: int


def pending_changes(store: Store, kb: Path, exclude_dirs: tuple[str, ...],
                    parsers: tuple[str, ...]) -> Pending:
    """Compare the KB with the index by hash, without embedding (no rename detection)."""
    indexed = store.path_hashes()
    scan = collect_files(kb, exclude_dirs=exclude_dirs, extensions=parsers)
    new = changed = 0
    seen: set[str] = set()
    for file in scan.files:
        result = read_source(file)
        if not isinstance(result, SourceBytes):
            if result.keeps_rows:
                seen.add(file.rel)
            continue
        seen.add(file.rel)
        if file.rel not in indexed:
            new += 1
        elif indexed[file.rel] != result.sha256:
            changed += 1
    deleted = sum(1 for path in indexed if path not in seen)
    return Pending(new, changed, deleted)


def index_status(db: Path, kb: Path | None, *, quality_threshold: float,
                 exclude_dirs: tuple[str, ...], parsers: tuple[str, ...]) -> StatusReport:
    store = Store.open_readonly(db, str(kb) if kb else "<path>")
    try:
        meta = store.meta()
        passing, below = store.quality_counts(quality_threshold)
        pending = pending_changes(store, kb, exclude_dirs, parsers) if kb is not None else None
        dim = meta.get("embedding_dim")
        max_length = meta.get("embedding_max_length")
        return StatusReport(
            index=str(db),
            kb_path=meta.get("kb_path"),
            schema_version=SCHEMA_VERSION,
            documents=store.document_count(),
            chunks=store.chunk_count(),
            model_name=meta.get("embedding_model"),
            model_dim=int(dim) if dim else None,
            model_max_length=int(max_length) if max_length else None,
            context_mode=meta.get("context_mode", "off"),
            last_indexed=meta.get("last_indexed"),
            pending=pending,
            quality_threshold=quality_threshold,
            quality_passing=passing,
            quality_below=below,
        )
    finally:
        store.close()


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: str
    summary: str
    count: int
    samples: tuple[str, ...]
    remedy: str


@dataclass(frozen=True, slots=True)
class DoctorReport:
    documents: int
    chunks: int
    findings: tuple[Finding, ...]


def _finding(check: str, summary: str, items: list[int] | list[str], remedy: str,
             severity: str = "error") -> Finding:
    return Finding(check, severity, summary, len(items), tuple(str(i) for i in items[:5]), remedy)


def model_available(name: str, models_dir: Path, kind: str = "embedder") -> bool:
    """Usable without a download: cached, a local directory, or the installed offline pack."""
    try:
        identity = peek_model(name, models_dir, kind)
    except GrooveError:
        return False
    if identity.sha256 is not None:
        return True
    from groove_cli.models.pack import find_pack

    return identity.name == PACK_MODEL and find_pack() is not None


def configured_model_errors(model: str | None, reranker: str | None,
                            models_dir: Path) -> list[str]:
    """The configured models that can never load (neither a registry name of the right kind
    nor a model directory), as `key = "value": reason` lines; downloads are not tried."""
    problems: list[str] = []
    for key, value, kind in (("model", model, "embedder"), ("reranker", reranker, "reranker")):
        if not value or value == "none":
            continue
        try:
            peek_model(value, models_dir, kind)
        except GrooveError as exc:
            problems.append(f'{key} = "{value}": {exc.message}')
    return problems


def check_config_models(settings: Settings) -> Settings:
    """`config check`: a configured model that can never load fails every search, so the
    config is not valid; `settings` is returned unchanged when every model can load.

    Raises:
        ConfigError: naming the config file, the key and why the model cannot load.
    """
    from groove_cli import config

    problems = configured_model_errors(settings.str_("model"), settings.str_("reranker"),
                                       config.models_dir(settings))
    if problems:
        where = settings.config.path if settings.config else "groove.toml"
        raise ConfigError(f"{where}: {problems[0]}")
    return settings


def run_doctor(db: Path, kb: Path | None, models_dir: Path,
               reranker: str | None = None) -> DoctorReport:
    """Integrity checks of index.md's invariants plus model availability (the index's
    embedding model and the configured reranker, which search loads)."""
    store = Store.open_readonly(db, str(kb) if kb else "<path>")
    try:
        report = store.integrity()
        meta = store.meta()
        documents, chunks = store.document_count(), store.chunk_count()
    finally:
        store.close()
    force = "groove index --force"
    findings: list[Finding] = []
    if report.vector_table_missing:
        findings.append(Finding("vector-table-missing", "error",
                                "the vec_chunks table does not exist", 1, (), force))
    pairs: list[tuple[str, str, list[int] | list[str], str]] = [
        ("missing-embedding", "chunk(s) have no embedding", report.missing_embedding, force),
        ("orphan-embedding", "embedding(s) belong to no chunk", report.orphan_embedding, force),
        ("missing-fts-row", "chunk(s) have no full-text row", report.missing_fts_row,
         "groove index (a plain run backfills)"),
        ("orphan-fts-row", "full-text row(s) belong to no chunk", report.orphan_fts_row, force),
        ("chunk-without-document", "chunk(s) belong to no document",
         report.chunk_without_document, force),
        ("document-without-chunks", "document(s) have no chunks",
         report.document_without_chunks, force),
    ]
    for check, summary, items, remedy in pairs:
        if items:
            findings.append(_finding(check, f"{len(items)} {summary}", items, remedy))
    name = meta.get("embedding_model")
    if name and not model_available(name, models_dir):
        findings.append(Finding("model-unavailable", "warning",
                                f"the index's model {name} is not available locally", 1, (name,),
                                f"groove models resolve {name}"))
    if reranker and reranker != "none" and not model_available(reranker, models_dir, "reranker"):
        broken = configured_model_errors(None, reranker, models_dir)
        findings.append(Finding(
            "reranker-unavailable", "warning",
            broken[0] if broken else f"the configured reranker {reranker} is not available locally",
            1, (reranker,),
            "fix reranker in groove.toml" if broken else f"groove models resolve {reranker}"))
    return DoctorReport(documents, chunks, tuple(findings))
