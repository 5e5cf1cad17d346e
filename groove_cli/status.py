"""`groove status` and `groove doctor`: read-only views of an index (cli.md §8, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli.chunk import ChunkRules, parse_document
from groove_cli.config import DEFAULT_VECTOR_PIECES, Settings
from groove_cli.dbfile import DamagedIndex, damage_error
from groove_cli.dburl import IndexLocation
from groove_cli.errors import ConfigError, GrooveError
from groove_cli.integrity import (
    Finding,
    file_findings,
    finding,
    history_findings,
    leftover_findings,
    snapshot_findings,
    unreadable,
)
from groove_cli.models import peek_model
from groove_cli.models.registry import PACK_MODEL
from groove_cli.scan import (
    SourceBytes,
    SourceDecodeError,
    collect_files,
    decode_source,
    read_source,
)
from groove_cli.store import SCHEMA_VERSION, Store, open_reader
from groove_cli.store.pieces import pieces_switch_note

if TYPE_CHECKING:
    from groove_cli.store.postgres import PgStore


@dataclass(frozen=True, slots=True)
class PendingFile:
    """One file `groove index` would change: `change` is new, changed, deleted or renamed
    (then `previous` is the indexed path it moved from)."""

    change: str
    path: str
    previous: str | None = None

    def to_json(self) -> dict[str, str]:
        return {"change": self.change, "path": self.path,
                **({"from": self.previous} if self.previous is not None else {})}


@dataclass(frozen=True, slots=True)
class Pending:
    new: int
    changed: int
    deleted: int
    skipped: int = 0
    """Files `index` leaves out on purpose (empty, frontmatter-only, not UTF-8): not pending."""
    renamed: int = 0
    """Vanished indexed paths whose content reappears under a new path, as `index` pairs them
    (index.md §6.1 step 7): counted here, not as new + deleted."""
    files: tuple[PendingFile, ...] = ()
    """The pending files by name, in path order (`status --verbose`, and the JSON)."""


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
    knowledge_bases: tuple[tuple[str, int, int, str | None], ...] = ()
    """A Postgres store's KBs: (KB id, documents, chunks, last indexed)."""
    pending_vectors: int = 0
    """Chunks written by phase 1 whose vectors phase 2 has not written yet (index.md §6.1)."""
    piece_vectors: int = 0
    """Extra-piece vectors of chunks longer than the model's window (index.md §4)."""
    pieces_switch: str | None = None
    """Set when the settings turn `vector_pieces` on and the index was built with it off."""

    def to_json(self) -> dict[str, Any]:
        """`status --format json`'s document (cli.md §8), also the server's `/status`."""
        pending = None
        if self.pending is not None:
            pending = {"new": self.pending.new, "changed": self.pending.changed,
                       "deleted": self.pending.deleted, "renamed": self.pending.renamed,
                       "skipped": self.pending.skipped,
                       "files": [f.to_json() for f in self.pending.files]}
        quality = None
        if self.quality_threshold > 0:
            quality = {"threshold": self.quality_threshold, "passing": self.quality_passing,
                       "below": self.quality_below}
        return {
            "index": self.index,
            "kb_path": self.kb_path,
            "schema_version": self.schema_version,
            "documents": self.documents,
            "chunks": self.chunks,
            "model": {"name": self.model_name, "dim": self.model_dim,
                      "max_length": self.model_max_length},
            "context_mode": self.context_mode,
            "last_indexed": self.last_indexed,
            "pending": pending,
            "pending_vectors": self.pending_vectors,
            "piece_vectors": self.piece_vectors,
            "pieces_switch": self.pieces_switch,
            "quality_filter": quality,
            **({"knowledge_bases": [
                {"kb": name, "documents": docs, "chunks": chunks, "last_indexed": last}
                for name, docs, chunks, last in self.knowledge_bases]}
               if self.knowledge_bases else {}),
        }


def pending_changes(store: Store | PgStore, kb: Path, exclude_dirs: tuple[str, ...],
                    parsers: tuple[str, ...], rules: ChunkRules = ChunkRules(), *,
                    hidden_dirs: bool = False) -> Pending:
    """Compare the KB with the index by hash, without embedding; renames are paired as `index`
    pairs them (a vanished path's hash under a new path).

    A new or changed file `index` would skip (nothing to embed, or not UTF-8) is counted as
    skipped, not pending: indexing again would not change it.
    """
    indexed = store.path_hashes()
    scan = collect_files(kb, exclude_dirs=exclude_dirs, extensions=parsers,
                         hidden_dirs=hidden_dirs)
    seen: set[str] = set()
    skipped = 0
    found: list[PendingFile] = []
    arrivals: list[tuple[str, str]] = []  # (new path, hash): rename candidates
    for file in scan.files:
        result = read_source(file)
        if not isinstance(result, SourceBytes):
            if result.keeps_rows:
                seen.add(file.rel)
            continue
        seen.add(file.rel)
        if indexed.get(file.rel) == result.sha256:
            continue
        if _skipped_by_index(result, rules, indexed=file.rel in indexed):
            skipped += 1
        elif file.rel not in indexed:
            arrivals.append((file.rel, result.sha256))
        else:
            found.append(PendingFile("changed", file.rel))
    orphans = sorted(path for path in indexed if path not in seen)
    moves = _renames(orphans, arrivals, indexed)
    moved_to = {new: old for old, new in moves}
    moved_from = set(moved_to.values())
    found += [PendingFile("renamed", new, old) for old, new in moves]
    found += [PendingFile("new", rel) for rel, _ in arrivals if rel not in moved_to]
    found += [PendingFile("deleted", rel) for rel in orphans if rel not in moved_from]
    found.sort(key=lambda f: f.path)

    def count(change: str) -> int:
        return sum(f.change == change for f in found)

    return Pending(count("new"), count("changed"), count("deleted"), skipped, count("renamed"),
                   tuple(found))


def _renames(orphans: list[str], arrivals: list[tuple[str, str]],
             indexed: dict[str, str]) -> list[tuple[str, str]]:
    """The (vanished path, new path) pairs of identical content (each new path used once, in
    path order: index.py's `_renames` rule)."""
    free = sorted(arrivals)
    pairs: list[tuple[str, str]] = []
    for old in orphans:
        match = next((i for i, (_, sha) in enumerate(free) if sha == indexed[old]), None)
        if match is not None:
            pairs.append((old, free.pop(match)[0]))
    return pairs


def _skipped_by_index(source: SourceBytes, rules: ChunkRules, *,
                      indexed: bool) -> bool:
    """Whether `index` would skip this file: not UTF-8, or (when new) no embeddable chunk —
    an indexed file that lost its chunks is a change (index deletes its rows)."""
    try:
        text = decode_source(source.raw)
    except SourceDecodeError:
        return True
    if indexed:
        return False
    return not parse_document(text, source.rel, rules).chunks


def settings_status(settings: Settings, db: IndexLocation, kb: Path | None) -> StatusReport:
    """`index_status` with the quality threshold, folders, parsers and excluded headings of
    resolved settings (the same ones `index` uses, so pending and skipped agree with it)."""
    from groove_cli.retrieve.params import quality_threshold

    return index_status(
        db, kb, quality_threshold=quality_threshold(settings, min_quality=None,
                                                    include_low_quality=False),
        exclude_dirs=tuple(str(d) for d in settings.list_("exclude_dirs")),
        parsers=tuple(str(p) for p in settings.list_("parsers.enabled")),
        rules=ChunkRules.of(settings),
        hidden_dirs=settings.bool_("index_hidden_dirs"),
        vector_pieces=settings.bool_("vector_pieces"))


def index_status(db: IndexLocation, kb: Path | None, *, quality_threshold: float,
                 exclude_dirs: tuple[str, ...], parsers: tuple[str, ...],
                 rules: ChunkRules = ChunkRules(), hidden_dirs: bool = False,
                 vector_pieces: bool = DEFAULT_VECTOR_PIECES) -> StatusReport:
    store = open_reader(db, str(kb) if kb else "<path>")
    try:
        meta = store.meta()
        passing, below = store.quality_counts(quality_threshold)
        kbs: tuple[tuple[str, int, int, str | None], ...] = ()
        if not isinstance(store, Store):
            from groove_cli.store.postgres import kb_list

            kbs = tuple(kb_list(store.con))
        pending = (pending_changes(store, kb, exclude_dirs, parsers, rules,
                                   hidden_dirs=hidden_dirs)
                   if kb is not None else None)
        dim = meta.get("embedding_dim")
        max_length = meta.get("embedding_max_length")
        return StatusReport(
            index=str(store.path),
            kb_path=meta.get("kb_path"),
            schema_version=SCHEMA_VERSION if isinstance(store, Store) else store.schema_version,
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
            knowledge_bases=kbs,
            pending_vectors=pending_vectors(store),
            piece_vectors=store.piece_count(),
            pieces_switch=pieces_switch_note(meta, vector_pieces),
        )
    finally:
        store.close()


def pending_vectors(store: Store | PgStore) -> int:
    """Chunks still waiting for their vector (phase 2 running, interrupted or `--text-only`)."""
    return max(store.chunk_count() - store.vector_count(), 0)


@dataclass(frozen=True, slots=True)
class DoctorReport:
    documents: int
    chunks: int
    findings: tuple[Finding, ...]
    server: tuple[str, ...] = ()
    """A Postgres store's server version and extensions."""
    pending_vectors: int = 0
    """Chunks waiting for phase 2: not damage, `groove index` embeds them."""


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
    """`config check`: a configured model that can never load fails every search, and a
    malformed `[frontmatter]` entry fails `validate` and `index`'s warnings, so either makes
    the config invalid; `settings` is returned unchanged when both are sound.

    Raises:
        ConfigError: naming the config file, the key and what is wrong.
    """
    from groove_cli import config
    from groove_cli.validate import Rules

    problems = configured_model_errors(settings.str_("model"), settings.str_("reranker"),
                                       config.models_dir(settings))
    if problems:
        where = settings.config.path if settings.config else "groove.toml"
        raise ConfigError(f"{where}: {problems[0]}")
    Rules.of(settings)
    return settings


def run_doctor(db: IndexLocation, kb: Path | None, models_dir: Path,
               reranker: str | None = None) -> DoctorReport:
    """Integrity checks of index.md's invariants plus model availability (the index's
    embedding model and the configured reranker, which search loads)."""
    findings: list[Finding] = []
    server: tuple[str, ...] = ()
    try:
        store = open_reader(db, str(kb) if kb else "<path>")
        try:
            findings += file_findings(store)
            report = store.integrity()
            meta = store.meta()
            documents, chunks = store.document_count(), store.chunk_count()
            waiting = len(report.missing_embedding)
            # the snapshot copies the rows: compared only once they are consistent
            snapshot = (snapshot_findings(store, db) if report.consistent
                        and isinstance(store, Store) and isinstance(db, Path) else [])
            if not isinstance(store, Store):
                server = tuple(store.server_facts())
        finally:
            store.close()
    except Exception as exc:  # a damaged file fails wherever SQLite meets the damage
        damaged = exc if isinstance(exc, DamagedIndex) else damage_error(exc)
        if damaged is None:
            raise
        return DoctorReport(0, 0, tuple(findings) or (unreadable(damaged),))
    force = "groove index --force"
    if report.vector_table_missing:
        findings.append(Finding("vector-table-missing", "error",
                                "the vec_chunks table does not exist", 1, (), force))
    pairs: list[tuple[str, str, list[int] | list[str], str]] = [
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
            findings.append(finding(check, f"{len(items)} {summary}", items, remedy))
    findings += snapshot + (leftover_findings(db) if isinstance(db, Path) else [])
    if kb is not None:
        findings += history_findings(kb)
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
    return DoctorReport(documents, chunks, tuple(findings), server, waiting)
