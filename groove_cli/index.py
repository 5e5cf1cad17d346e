"""`groove index`: scan → diff by hash → chunk → full text per file → vectors for what has none.

index.md §6. Phase 1 writes every changed file's chunks and full-text rows in one transaction per
file, without vectors, so `--mode fts` sees every note as soon as it ends and an interrupted run
leaves each document with either its old or its new rows. Phase 2 embeds the chunks that have no
vector, one transaction per model batch, and resumes where a stopped run left off. The embedding
model is loaded only when some chunk needs a vector: a re-run over an unchanged knowledge base
never loads it. When one does, its session starts loading on a background thread as soon as
that is known (chunks pending from an earlier run, or phase 1's first written file), so it
overlaps phase 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from groove_cli import config, messages
from groove_cli._version import version
from groove_cli.chunk import (
    ChunkDraft,
    ChunkRules,
    ParsedDocument,
    chunker_fingerprint,
    parse_document,
)
from groove_cli.config import Settings
from groove_cli.dbfile import damaged, quarantine, remove_snapshot_leftovers
from groove_cli.dburl import IndexLocation
from groove_cli.errors import GrooveError, IndexMismatch
from groove_cli.index_batches import FileBatches
from groove_cli.index_lock import indexer_lock
from groove_cli.integrity import damage_of, refuse_damaged
from groove_cli.models import ResolvedModel, resolve_model
from groove_cli.runtime_model import RuntimeModel, runtime_model, warn_digest
from groove_cli.scan import (
    SourceBytes,
    SourceDecodeError,
    SourceFile,
    collect_files,
    decode_source,
    read_source,
)
from groove_cli.store import REBUILD_KEY, Store, open_writer, stamp, utc_now
from groove_cli.text import printable
from groove_cli.text.durations import human_duration
from groove_cli.types import (
    ChunkRow,
    DocumentRow,
    NullProgress,
    ProgressSink,
    StoredDocument,
)
from groove_cli.validate import Rules, check_text
from groove_cli.vector_fill import (
    BatchResult,
    CancellableRuns,
    SessionLoad,
    apply_pieces_mode,
    batches,
    count_pending,
    embed_vectors,
    embedding_text,
    piece_estimate,
    write_vectors,
)
from groove_cli.vectors import refresh_snapshot

if TYPE_CHECKING:
    from groove_cli.models import Embedder
    from groove_cli.store.postgres import PgStore

# Phase 2 (vector_fill.py) commits after every model batch; a stop (Ctrl-C, SIGTERM) cancels
# the batch in flight (its chunks stay pending), as phase 1 stops between files.

# Each write transaction adds a segment to both full-text indexes and FTS5's automerge leaves
# several per level, each one probed by every query term. Merging them (FTS5 'optimize')
# makes queries several times faster with identical results
# (bench/results/code-notes.md#fts-optimize). It rewrites the whole full-text index (seconds
# at 100,000 chunks; a no-op when already merged), so a run does it when the index is small or
# the run changed a fair share of it.
OPTIMIZE_ALWAYS_UP_TO_CHUNKS = 20_000
OPTIMIZE_CHANGED_SHARE = 0.01


def worth_optimizing(changed_documents: int, documents: int, chunks: int) -> bool:
    """Whether an uninterrupted run merges the full-text segments (see above)."""
    if chunks <= OPTIMIZE_ALWAYS_UP_TO_CHUNKS:
        return True
    return changed_documents >= OPTIMIZE_CHANGED_SHARE * max(documents, 1)


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """Everything `index` needs, resolved by the CLI from flags and groove.toml."""

    kb: Path
    db: IndexLocation
    model: str | None
    """The model from --model or config; None means the index's recorded model, else default."""
    max_length: int | None
    models_dir: Path
    force: bool = False
    exclude_dirs: tuple[str, ...] = ()
    hidden_dirs: bool = False
    """Also walk folders whose name starts with `.` (index.md §1)."""
    chunk_rules: ChunkRules = field(default_factory=ChunkRules)
    parsers: tuple[str, ...] = ("md",)
    contextual: bool = False
    verbose: bool = False
    quiet: bool = False
    offline: bool = False
    text_only: bool = False
    """Stop after phase 1: full text only, vectors left for a later run (`--text-only`)."""
    vector_pieces: bool = config.DEFAULT_VECTOR_PIECES
    """Embed a long chunk's text past the window as extra pieces (index.md §4)."""
    threads: int | None = None
    """The model's intra-op threads (None: the cores this process may use)."""
    frontmatter: Rules = field(default_factory=Rules)
    """The `[frontmatter]` schema: each note read is checked and warned about (validate.py)."""

    @classmethod
    def from_settings(cls, settings: Settings, kb: Path, db: IndexLocation, *, force: bool = False,
                      verbose: bool = False, quiet: bool = False,
                      text_only: bool = False) -> IndexOptions:
        """The options of resolved settings (flag > file > default)."""
        s = settings
        return cls(
            kb=kb, db=db, model=s.str_("model"), max_length=s.int_("max_length"),
            models_dir=config.models_dir(s), force=force,
            exclude_dirs=tuple(str(d) for d in s.list_("exclude_dirs")),
            hidden_dirs=s.bool_("index_hidden_dirs"),
            chunk_rules=ChunkRules.of(s),
            parsers=tuple(str(p) for p in s.list_("parsers.enabled")),
            contextual=s.bool_("contextual.enabled"), verbose=verbose, quiet=quiet,
            offline=config.offline_mode(), text_only=text_only,
            vector_pieces=s.bool_("vector_pieces"), threads=config.model_threads(s),
            frontmatter=Rules.of(s),
        )


@dataclass(frozen=True, slots=True)
class IndexReport:
    """Counts of one run (cli.md §4 `Done` line)."""

    documents: int
    chunks: int
    updated: int
    renamed: int
    deleted: int
    skipped: int
    elapsed_ms: int
    processed: int
    total: int
    interrupted: bool
    embedded: int = 0
    """Chunks this run embedded (phase 2)."""
    to_embed: int = 0
    """Chunks without a vector when phase 2 started (0 when it did not run)."""
    pending_vectors: int = 0
    """Chunks still without all their vectors when the run ended (`--text-only`, an
    interrupt)."""
    pieces: int = 0
    """Extra-piece vectors this run embedded (long chunks, index.md §4)."""
    text_ready_ms: int | None = None
    """When phase 1 ended: from then on `--mode fts` sees every note."""


def kb_mismatch_text(db: IndexLocation, recorded: str, kb: Path) -> str:
    return (
        f"the index at {db} was built from {recorded}, not {kb}.\n"
        f"  If the knowledge base moved, run `groove index --kb-path {kb} --force` to rebuild the "
        "index for\n  the new location. Otherwise pass the --db of this knowledge base's own index."
    )


def embedding_input(chunk: ChunkDraft, static: bool) -> str:
    """`embedding_text` of a parsed chunk."""
    return embedding_text(chunk.heading, chunk.context_text, chunk.content, static)


def _same_chunks(stored: Sequence[ChunkRow], parsed: Sequence[ChunkDraft], static: bool) -> bool:
    if len(stored) != len(parsed):
        return False
    for old, new in zip(stored, parsed, strict=True):
        if (old.heading, old.level, old.ancestry, old.content) != (
            new.heading, new.level, new.ancestry, new.content):
            return False
        if static and old.context_text != new.context_text:
            return False
    return True


class Indexer:
    """One `groove index` run."""

    def __init__(self, options: IndexOptions, progress: ProgressSink | None = None,
                 should_stop: Callable[[], bool] | None = None) -> None:
        self.opt = options
        self.progress = progress or NullProgress()
        self.should_stop = should_stop or (lambda: False)
        self.embedder: Embedder | None = None
        self.loading: SessionLoad | None = None
        """The model's session loading in the background, once phase 2 is known to have work."""
        self.model: ResolvedModel | None = None
        self.runtime: RuntimeModel | None = None
        self.updated = self.renamed = self.deleted = self.skipped = 0
        self.truncated = self.long = self.pieces = 0
        self.done = 0
        self.total = 0
        self.interrupted = False
        self.embedded = self.to_embed = self.pending_left = 0
        self.text_ready_ms: int | None = None
        self.started = time.monotonic()
        self.written: set[str] = set()
        """Paths whose rows this run wrote (a degenerate embedding undoes the count)."""

    # ------------------------------------------------------------------ helpers

    def _line(self, text: str) -> None:
        if not self.opt.quiet:  # one line each: a file name may hold a newline
            messages.progress(printable(text, keep_newlines=False))

    def _note(self, text: str) -> None:
        """A `groove: note:` line (cli.md §2); --quiet keeps only Indexing, Found and Done."""
        if not self.opt.quiet:
            messages.note(text)

    def _verbose(self, text: str) -> None:
        if self.opt.verbose:  # one line per file, even for a path holding a newline
            messages.progress(printable(text, keep_newlines=False))

    def load_embedder(self) -> Embedder:
        """The embedding model, loaded on first need (once the run knows which), with the
        session the background load made when it has it (`start_loading`)."""
        if self.embedder is None:
            from groove_cli.models import Embedder

            assert self.runtime is not None
            model = self._resolved()
            self._line(f"Loading embedding model: {self.runtime.name} ({self.runtime.dim} dim)...")
            self.progress.start(None, "Loading model", "")
            try:
                session = self.loading.session(model) if self.loading is not None else None
                self.embedder = Embedder.load(model, max_length=self.runtime.max_length,
                                              session=session, threads=self.opt.threads)
            finally:
                self.progress.finish()
        return self.embedder

    def start_loading(self) -> None:
        """Start loading the model's session in the background, once phase 2 is known to have
        chunks to embed (never with `--text-only`, nor when the embedder is loaded)."""
        if self.loading is None and self.embedder is None and not self.opt.text_only:
            assert self.runtime is not None
            self.loading = SessionLoad(self.model, self.runtime.name, self.opt.models_dir,
                                       self.opt.threads)

    def _resolved(self) -> ResolvedModel:
        if self.model is None:
            assert self.runtime is not None
            self.model = resolve_model(self.runtime.name, self.opt.models_dir, offline=self.opt.offline)
        return self.model

    # ------------------------------------------------------------------ run

    def run(self) -> IndexReport:
        started = self.started = time.monotonic()
        opt = self.opt
        with indexer_lock(opt.db, force=opt.force):
            if isinstance(opt.db, Path):
                if remove_snapshot_leftovers(opt.db):
                    self._verbose("  removed the temporary files of an interrupted snapshot write")
                if opt.force:
                    self._set_aside_if_damaged()
                else:
                    refuse_damaged(opt.db)
            store = open_writer(opt.db)
            try:
                self._run(store)
            finally:
                documents, chunks = store.document_count(), store.chunk_count()
                store.close()
        elapsed = int((time.monotonic() - started) * 1000)
        return IndexReport(documents, chunks, self.updated, self.renamed, self.deleted,
                           self.skipped, elapsed, self.done, self.total, self.interrupted,
                           self.embedded, self.to_embed, self.pending_left, self.pieces,
                           self.text_ready_ms)

    def _set_aside_if_damaged(self) -> None:
        """`--force` on a damaged file: keep it as `.corrupt-<time>` and start a new one."""
        assert isinstance(self.opt.db, Path)
        reason = damage_of(self.opt.db)
        if reason is not None:
            aside = quarantine(self.opt.db)
            messages.warning(f"the index at {self.opt.db} is damaged ({reason}); moved it aside "
                             f"to {aside} and rebuilding the index from scratch")

    def _run(self, store: Store | PgStore) -> None:
        opt = self.opt
        kb_abs = str(opt.kb.resolve())
        cut_short = store.length_problems()  # O(1); doctor and --force run the full check
        if cut_short:
            raise damaged(cut_short[0])
        meta = store.meta()
        recorded_kb = meta.get("kb_path")
        if recorded_kb and recorded_kb != kb_abs and not opt.force:
            raise GrooveError(kb_mismatch_text(opt.db, recorded_kb, Path(kb_abs)))
        self.runtime = runtime_model(meta, opt.model, opt.max_length, opt.models_dir,
                                     force=opt.force)
        fresh = opt.force or "embedding_model" not in meta
        if fresh:
            model = self._resolved()
            self.runtime = RuntimeModel(model.name, self.runtime.dim, self.runtime.max_length,
                                        model.sha256, self.runtime.query_prefix)
        else:
            warn_digest(meta, self.runtime.name, self.runtime.sha256)
            declared = store.vec_dim()
            if declared is not None and declared != self.runtime.dim:
                raise IndexMismatch(
                    f"vec_chunks declared float[{declared}] but runtime dim is {self.runtime.dim}. "
                    "Run index with --force to rebuild."
                )
        messages.progress(f"Indexing {opt.kb}...")
        desired = "static" if opt.contextual else "off"
        with store.transaction():
            if fresh:
                store.reset(self.runtime.dim)
                store.set_meta({
                    "embedding_model": self.runtime.name,
                    "embedding_dim": str(self.runtime.dim),
                    "embedding_max_length": str(self.runtime.max_length),
                    "embedding_model_sha256": self.runtime.sha256 or "",
                    "kb_path": kb_abs,
                    "context_mode": desired,
                    "groove_version": version(),
                    REBUILD_KEY: utc_now(),
                })
                mode = desired
            else:
                mode = self._context_mode(store, meta, desired)
            apply_pieces_mode(store, meta if not fresh else {}, opt.vector_pieces,
                              self.runtime.max_length, mode == "static")
        static = mode == "static"
        fingerprint = chunker_fingerprint(opt.chunk_rules)
        rechunk = store.chunk_count() > 0 and meta.get("chunker_fingerprint") != fingerprint
        if rechunk and not fresh:
            self._note("chunking settings changed since the last run; every file is re-read")
        with store.transaction():
            backfilled = store.backfill_fts()
        if backfilled:
            self._line(f"Backfilled {backfilled} chunks into FTS index")
        if not opt.text_only and not fresh and store.pending_vectors():
            self.start_loading()

        scan = collect_files(opt.kb, exclude_dirs=opt.exclude_dirs, extensions=opt.parsers,
                             hidden_dirs=opt.hidden_dirs)
        for warning in scan.warnings:
            messages.warning(warning)
        if scan.ignore_patterns is not None:
            plural = "pattern" if scan.ignore_patterns == 1 else "patterns"
            self._line(f"Applying .grooveignore from {opt.kb} ({scan.ignore_patterns} {plural})")
        extensions = ", ".join(opt.parsers)
        messages.progress(f"Found {len(scan.files)} source files (extensions: {extensions})")
        for rel, reason in scan.refused:
            self._line(f"Skipping {rel}: {reason}")

        self.total = len(scan.files)
        self.progress.start(self.total, "Reading notes", "files")
        try:
            self._process(store, scan.files, static, fresh, rechunk)
        finally:
            self.progress.finish()
        if not self.interrupted:
            with store.transaction():
                if worth_optimizing(self.updated + self.renamed + self.deleted,
                                    store.document_count(), store.chunk_count()):
                    store.optimize_fts()
                store.set_meta({"chunker_fingerprint": fingerprint, REBUILD_KEY: ""})
        self.text_ready_ms = int((time.monotonic() - self.started) * 1000)
        pending = store.pending_vectors()
        if not self.interrupted and pending:
            self._line(f"Full text ready in {human_duration(self.text_ready_ms / 1000)}: "
                       "searches with --mode fts see every note")
        if not self.interrupted and pending and not opt.text_only:
            self._embed_pending(store, pending, static)
        self.pending_left = len(store.pending_vectors()) if pending else 0
        if self.pending_left and not self.interrupted:
            self._note(f"{self.pending_left:,} of {store.chunk_count():,} chunks have no vector "
                       "yet; run `groove index` without --text-only to embed them")
        assert self.runtime is not None
        if self.long and self.opt.vector_pieces:
            self._note(f"{self.long} chunk(s) exceed max_length {self.runtime.max_length} "
                       f"tokens; their text past the window went into {self.pieces} more "
                       "vector(s)")
        if self.truncated:
            self._note(f"{self.truncated} chunk(s) exceed max_length {self.runtime.max_length} "
                       "tokens and were truncated for embedding")
        if not self.interrupted:
            with store.transaction():
                store.set_meta({"last_indexed": utc_now(), "groove_version": version()})
        if isinstance(store, Store) and isinstance(opt.db, Path):
            refresh_snapshot(store, opt.db)
        elif not isinstance(store, Store) and not self.interrupted and not self.pending_left:
            store.build_vector_index()  # Postgres: a new KB's HNSW index, built once at the end

    def _context_mode(self, store: Store | PgStore, meta: dict[str, str], desired: str) -> str:
        recorded = meta.get("context_mode", "off")
        if recorded == desired:
            return recorded
        if store.chunk_count() == 0:
            self._note(f"index is empty; adopting '{desired}' for empty index (was '{recorded}').")
            store.set_meta({"context_mode": desired})
            return desired
        messages.warning(
            f"[contextual] config expects '{desired}' mode but this index was built with "
            f"'{recorded}'. Run `groove index --force` to migrate; continuing in '{recorded}' mode."
        )
        return recorded

    def _process(self, store: Store | PgStore, files: Sequence[SourceFile], static: bool, fresh: bool,
                 rechunk: bool) -> None:
        indexed = store.documents()
        read: list[SourceBytes] = []
        seen: set[str] = set()
        kept: set[str] = set()
        for file in files:
            result = read_source(file)
            if isinstance(result, SourceBytes):
                read.append(result)
                seen.add(file.rel)
            elif result.keeps_rows:
                kept.add(file.rel)
                self.skipped += 1
                self._line(f"Skipping {file.rel}: {result.reason}")
            else:
                self._line(f"Skipping {file.rel}: {result.reason}")
        renamed_to = {} if fresh else self._renames(store, indexed, read, seen, kept)
        indexed = store.documents()

        confirmed: list[int] = []  # unchanged files touched since their row was written
        with FileBatches(store.transaction) as writes:
            for source in read:
                if self.should_stop():
                    self.interrupted = True
                    break
                existing = indexed.get(source.rel)
                force_rewrite = rechunk or (static and source.rel in renamed_to)
                if (existing is not None and existing.content_hash == source.sha256
                        and not fresh and not force_rewrite):
                    if stamp(source.mtime_ns) > existing.last_indexed:
                        confirmed.append(existing.id)
                    self._advance(0)
                    continue
                self._read_one(store, writes, source, existing, static, fresh, force_rewrite)
        if confirmed:
            with store.transaction():
                store.confirm_documents(confirmed, utc_now())
        if self.interrupted:
            return
        gone = [doc for path, doc in store.documents().items() if path not in seen and path not in kept]
        if gone:
            with store.transaction():
                for doc in gone:
                    store.delete_document(doc.id)
            for doc in gone:
                self.deleted += 1
                self._verbose(f"  deleted: {doc.path}")

    def _advance(self, chunks: int) -> None:
        self.done += 1
        self.progress.advance(self.done, chunks)

    def _renames(self, store: Store | PgStore, indexed: dict[str, StoredDocument],
                 read: Sequence[SourceBytes], seen: set[str], kept: set[str]) -> dict[str, str]:
        """Pair vanished paths with new paths of identical content (index.md §6.1 step 7)."""
        from groove_cli.chunk import category_topic

        orphans = sorted(p for p in indexed if p not in seen and p not in kept)
        new = sorted((s for s in read if s.rel not in indexed), key=lambda s: s.rel)
        pairs: dict[str, str] = {}
        used: set[str] = set()
        for old in orphans:
            for candidate in new:
                if candidate.rel not in used and candidate.sha256 == indexed[old].content_hash:
                    pairs[candidate.rel] = old
                    used.add(candidate.rel)
                    break
        if not pairs:
            return {}
        with store.transaction():
            for new_path, old in pairs.items():
                source = next(s for s in read if s.rel == new_path)
                category, path_topic = category_topic(new_path)
                topic = path_topic
                try:
                    parsed = parse_document(decode_source(source.raw), new_path,
                                            self.opt.chunk_rules)
                    topic = parsed.topic
                except SourceDecodeError:
                    pass
                store.rename_document(indexed[old].id, new_path, category, topic)
        for new_path, old in pairs.items():
            self.renamed += 1
            self._verbose(f"  renamed: {old} -> {new_path}")
        return pairs

    def _document_row(self, source: SourceBytes, parsed: ParsedDocument) -> DocumentRow:
        return DocumentRow(source.rel, parsed.title, parsed.topic, parsed.category, parsed.depth,
                           parsed.tags, parsed.date, source.sha256, source.size, utc_now())

    def _read_one(self, store: Store | PgStore, writes: FileBatches, source: SourceBytes,
                  existing: StoredDocument | None, static: bool, fresh: bool,
                  rechunk: bool) -> None:
        """Phase 1 for one changed file: parse it and write its document, chunks and full-text
        rows within one transaction (`writes`), without vectors (emptied files and the
        frontmatter-only fast path as index.md §6.1 step 8 says)."""
        try:
            text = decode_source(source.raw)
        except SourceDecodeError as exc:
            self.skipped += 1
            self._line(f"Skipping {source.rel}: {exc}")
            self._advance(0)
            return
        parsed = parse_document(text, source.rel, self.opt.chunk_rules)
        for warning in parsed.warnings:
            messages.warning(warning)
        for finding in check_text(text, source.rel, self.opt.frontmatter):  # `groove validate`
            messages.warning(f"frontmatter: {finding.line_text()}")
        if not parsed.chunks:
            if existing is not None:
                with writes.file():
                    store.delete_document(existing.id)
                self.deleted += 1
                self._verbose(f"  emptied: {source.rel}")
            else:
                self.skipped += 1
                self._line(f"Skipping {source.rel}: no embeddable chunks")
            self._advance(0)
            return
        if existing is not None and not fresh:
            stored = store.chunk_rows(existing.id)
            if _same_chunks(stored, parsed.chunks, static):
                scores = [c.quality_score for c in parsed.chunks] if rechunk else None
                lines = [(c.line_start, c.line_end) for c in parsed.chunks]
                moved = lines != [(c.line_start, c.line_end) for c in stored]
                with writes.file():
                    store.update_document_row(existing.id, self._document_row(source, parsed),
                                              scores, lines if moved else None)
                if existing.content_hash != source.sha256:
                    self.updated += 1
                    self._verbose(f"  indexed: {source.rel} ({len(parsed.chunks)} chunks)")
                self._advance(len(parsed.chunks))
                return
        rows = [
            ChunkRow(c.chunk_index, c.heading, c.level, c.ancestry, c.content,
                     c.context_text if static else None, None, c.quality_score, c.line_start,
                     c.line_end)
            for c in parsed.chunks
        ]
        self.start_loading()  # these chunks wait for vectors: phase 2 will need the model
        with writes.file():
            store.write_document(self._document_row(source, parsed), rows, None,
                                 existing.id if existing else None)
        self.updated += 1
        self.written.add(source.rel)
        self._verbose(f"  indexed: {source.rel} ({len(rows)} chunks)")
        self._advance(len(rows))

    def _count(self, done: BatchResult) -> None:
        self.embedded += done.embedded
        self.pieces += done.pieces
        self.long += done.long
        self.truncated += done.truncated
        for path in done.dropped:
            self.skipped += 1
            if path in self.written:
                self.updated -= 1
            self._line(f"Skipping {path}: degenerate embedding")

    def _embed_pending(self, store: Store | PgStore, pending: list[int],
                       static: bool) -> None:
        """Phase 2: embed every chunk that lacks vectors, narrowest first, one model batch (cut
        as the model's own batching cuts: `batches`; a long chunk's pieces together) per
        transaction, so an interrupt or a kill keeps every batch already written. Progress
        counts the model's tokens (`PendingCounts.model_tokens`), once they are counted."""
        embedder = self.load_embedder()
        self.to_embed = len(pending)
        self._line(f"Embedding {len(pending):,} chunks...")
        self.progress.start(None, "Counting tokens", "")
        try:
            pending_counts = count_pending(store, embedder, pending, static, self.should_stop)
            if pending_counts is None:
                self.interrupted = True
                return
            counts, widths = pending_counts.tokens, pending_counts.widths
            order = sorted(counts, key=lambda cid: (widths[cid], counts[cid], cid))
            size = max(1, embedder.settings.batch_size)
            window = embedder.max_length if self.opt.vector_pieces else 1 << 62
            estimate = {cid: piece_estimate(n, window) for cid, n in counts.items()}
            work = pending_counts.model_tokens(estimate, embedder.max_length)
            self.progress.start(sum(work.values()), "Embedding", "tokens")
            finished = 0
            with CancellableRuns(embedder, self.should_stop) as runs:
                for ids in batches(order, estimate, widths, size):
                    if self.should_stop():
                        self.interrupted = True
                        return
                    batch = store.embedding_rows(ids)
                    if batch:
                        tokens = [counts[row.chunk_id] for row in batch]
                        vectors = runs.run(partial(embed_vectors, embedder, batch, tokens,
                                                   static, self.opt.vector_pieces))
                        if vectors is None:  # stopped: the batch in flight stays pending
                            self.interrupted = True
                            return
                        self._count(write_vectors(store, vectors))
                    finished += sum(work[cid] for cid in ids)
                    self.progress.advance(finished, len(batch))
        finally:
            self.progress.finish()


def index_kb(options: IndexOptions, progress: ProgressSink | None = None,
             should_stop: Callable[[], bool] | None = None) -> IndexReport:
    """Run `groove index` once (the CLI's single core call)."""
    return Indexer(options, progress, should_stop).run()
