"""groove's public Python API: one door for the command line, the server, bench/ and notebooks.

    import groove_cli

    with groove_cli.open("golden") as kb:
        results = kb.search("how do retry budgets stop retry storms?", limit=3)
        for hit in results.hits:
            print(hit.path, hit.line_start, hit.relevance)

`open` resolves settings from what it is given (a groove.toml, keyword overrides named by
config key or by its last part) over the built-in defaults — `discover=True` as every command
does — and returns an `Index`: the index opened for reading once, models loaded on first need,
safe to share between threads. Each method is one core call; warnings and notes come back on the result
(`Results.messages`), never on stderr, so each caller (or server request) gets its own.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groove_cli import config, exits, messages
from groove_cli.config import SCHEMA, Settings
from groove_cli.dburl import IndexLocation
from groove_cli.errors import GrooveError, UsageError

if TYPE_CHECKING:
    from groove_cli.evaluate.report import EvalReport
    from groove_cli.evaluate.tune.calibrate import CalibrationReport
    from groove_cli.evaluate.tune.grid import Space
    from groove_cli.evaluate.tune.report import TuneReport
    from groove_cli.get import Excerpt
    from groove_cli.index import IndexReport
    from groove_cli.models import ModelStatus, ResolvedModel
    from groove_cli.osservice import ServiceUnit
    from groove_cli.results import Results
    from groove_cli.retrieve.filters import FilterSpec
    from groove_cli.retrieve.graph import Graph
    from groove_cli.retrieve.searcher import Searcher
    from groove_cli.status import DoctorReport, StatusReport
    from groove_cli.types import ProgressSink
    from groove_cli.validate import ValidationReport

PathLike = str | os.PathLike[str]


def setting_key(name: str) -> str:
    """The config key an override names: the key itself (`search.fusion.rrf_k`) or its trailing
    parts joined by `_` when that is unique (`rrf_k`, `mode`, `mmr_lambda`)."""
    keys = [spec.key for spec in SCHEMA]
    if name in keys:
        return name

    def tails(key: str) -> set[str]:
        parts = key.split(".")
        return {"_".join(parts[i:]) for i in range(len(parts))}

    found = [key for key in keys if name in tails(key)]
    if len(found) == 1:
        return found[0]
    if found:
        raise UsageError(f"setting {name!r} is ambiguous", hint=f"name one of {', '.join(found)}")
    raise UsageError(f"unknown setting {name!r}",
                     hint="use a key of `groove config show`, e.g. rrf_k or search.fusion.rrf_k")


def checked_overrides(overrides: Mapping[str, object]) -> dict[str, object]:
    """Keyword overrides as config keys, each range-checked like its command-line flag."""
    flags: dict[str, object] = {}
    for name, value in overrides.items():
        if value is None:
            continue
        key = setting_key(name)
        if isinstance(value, os.PathLike) and config.SPECS[key].kind == "path":
            value = os.fspath(value)  # open(kb, models_dir=Path(...)) as for kb and db
        flags[key] = config.check_flag(name, key, value)
    return flags


@dataclass(frozen=True, slots=True)
class Filters:
    """A search's metadata and quality filters (cli.md §5); the defaults filter nothing but
    notes below the configured quality threshold."""

    path_glob: tuple[str, ...] = ()
    """Globs (`* ** ? [..] {a,b}`); a leading `!` excludes."""
    tag_any: tuple[str, ...] = ()
    tag_all: tuple[str, ...] = ()
    category: str | None = None
    topic: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    min_quality: float | None = None
    include_low_quality: bool = False

    def spec(self, settings: Settings) -> FilterSpec:
        """The engine's FilterSpec (quality: include_low_quality > min_quality > config)."""
        import math

        from groove_cli.retrieve.filters import FilterSpec, split_tags
        from groove_cli.retrieve.params import quality_threshold

        if self.min_quality is not None and not math.isfinite(self.min_quality):
            raise UsageError(f"--min-quality {self.min_quality} must be finite")
        return FilterSpec(
            quality_threshold=quality_threshold(settings, min_quality=self.min_quality,
                                                include_low_quality=self.include_low_quality),
            category=self.category, topic=self.topic, path_globs=tuple(self.path_glob),
            tags_any=split_tags(self.tag_any, flag="--tag-any"),
            tags_all=split_tags(self.tag_all, flag="--tag-all"),
            date_from=self.date_from, date_to=self.date_to)


class Index:
    """A KB's index, opened for reading on first use; see the module doc.

    Build one with `groove_cli.open`; the command line builds it from the settings it
    resolved. `close()` (or a `with` block) releases the connections.
    """

    def __init__(self, settings: Settings, kb: Path | None, location: IndexLocation,
                 file_values: Mapping[str, object] | None = None, *,
                 state_folder: bool = False, defer_cache: bool = False) -> None:
        self.settings = settings
        self.kb = kb
        self.location = location
        self._file_values = file_values
        self._state_folder = state_folder
        """The index is the KB's own (no `db`, no db_path): `index` makes its state folder."""
        self._defer_cache = defer_cache
        """A long-lived Index (the server): new query vectors reach the query cache from a
        background thread, in batches, not on each search's path (SQLite indexes)."""
        self._searcher: Searcher | None = None
        self._index_model: Any = None
        self._lock = threading.Lock()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Index(kb={str(self.kb) if self.kb else None!r}, location={self.location!s})"

    def close(self) -> None:
        """Close the read connections (a later search opens them again)."""
        with self._lock:
            searcher, self._searcher = self._searcher, None
        if searcher is not None:
            searcher.close()

    # ------------------------------------------------------------------ settings

    def with_settings(self, **overrides: object) -> Settings:
        """These settings with per-call overrides on top (flag layer), range-checked."""
        flags = checked_overrides(overrides)
        if not flags:
            return self.settings
        file_values = self._file_values
        if file_values is None:
            found = self.settings.config
            file_values = config.load_config_file(found.path) if found else {}
        merged = {key: self.settings[key] for key in self.settings.flags}
        merged.update(flags)
        return config.resolve(file_values, merged, config=self.settings.config)

    def _searcher_for(self, settings: Settings, reranker: str | None, embeds: bool) -> Searcher:
        """The shared Searcher, opened on first use; a search whose model, length or reranker
        differs from it gets its own, closed by the caller."""
        from groove_cli.retrieve.searcher import Searcher

        with self._lock:
            current = self._searcher
            if current is None:
                current = Searcher.from_settings(settings, self.location, self.kb,
                                                 reranker=reranker, embeds=embeds)
                if self._defer_cache and isinstance(self.location, Path):
                    from groove_cli.store.cache import DeferredCache

                    current.deferred = DeferredCache(self.location)
                self._searcher = current
                return current
        same = (settings.str_("model") == self.settings.str_("model")
                and settings.int_("max_length") == self.settings.int_("max_length")
                and settings.bool_("vector_pieces") == current.vector_pieces
                and (reranker or None) == current.reranker_name)
        if same:
            return current
        return Searcher.from_settings(settings, self.location, self.kb, reranker=reranker,
                                      embeds=embeds)

    # ------------------------------------------------------------------ calls

    def search(self, query: str, *, limit: int = 5, mode: str | None = None,
               fusion: str | None = None, filters: Filters | None = None, files: bool = False,
               **overrides: object) -> Results:
        """One query through the hybrid pipeline (search.md); `mode` is hybrid, vector or
        fts, `fusion` rrf or score (search.md §5), `overrides` any search setting (`rrf_k=40`,
        `score_alpha=0.5`, `min_relevance=0.5`). With `files`,
        hits are fetched until `limit` distinct files are found (`search --format files`)."""
        from groove_cli.config import MAX_LIMIT
        from groove_cli.results import STALE_NOTE, Results, stale_paths
        from groove_cli.retrieve.filters import compile_filters, filter_applied
        from groove_cli.retrieve.legs import legs_to_run
        from groove_cli.retrieve.params import (
            build_params,
            clamp_limit,
            query_warnings,
            search_reranker,
            settings_warnings,
        )
        from groove_cli.retrieve.query import compile_query
        from groove_cli.retrieve.searcher import (
            NOTHING_TO_SEARCH,
            fill_files,
            vector_coverage_note,
        )
        from groove_cli.store.pieces import pieces_switch_note

        if limit < 1:
            raise UsageError(f"limit {limit} must be >= 1", hint=f"use 1 to {MAX_LIMIT}")
        if mode is not None:
            overrides = {"search.retrieval.mode": mode, **overrides}
        if fusion is not None:
            overrides = {"search.fusion.method": fusion, **overrides}
        with messages.capture() as given:
            settings = self.with_settings(**overrides)
            compiled = compile_query(query)
            spec = (filters or Filters()).spec(settings)
            compile_filters(spec)  # malformed globs are usage errors before any work
            reranker = search_reranker(settings)
            params = build_params(settings, limit=clamp_limit(limit), rerank=reranker is not None,
                                  filters=spec)
            settings_warnings(settings, params)
            query_warnings([compiled])
            ratio_key = "search.min_confidence_ratio"  # echoed only when the caller set it
            applied = filter_applied(spec, explicit_min_confidence_ratio=(
                settings.float_(ratio_key) if settings.source(ratio_key) == "flag" else None))
            legs = legs_to_run(compiled, params)
            searcher = self._searcher_for(settings, reranker, legs.vector)
            try:
                if not legs.any:
                    messages.note(NOTHING_TO_SEARCH)
                coverage = None
                if legs.vector:  # a pooled connection: the Searcher's own may be in use by a
                    with searcher.reader() as store:  # concurrent search (the server)
                        coverage = vector_coverage_note(store)
                if coverage is not None:  # index's phase 2 has not embedded every chunk yet
                    messages.note(coverage)
                switched = pieces_switch_note(searcher.meta, searcher.vector_pieces)
                if legs.vector and switched is not None:
                    messages.note(switched)
                short = None
                if files:
                    result, short = fill_files(searcher, compiled, params, legs)
                else:
                    result = searcher.search(compiled, params, legs)
                kb_root = searcher.meta.get("kb_path") or (str(self.kb.resolve()) if self.kb
                                                           else None)
            finally:
                if searcher is not self._searcher:
                    searcher.close()
            stale = stale_paths(kb_root, result.hits)
            if stale:
                messages.note(STALE_NOTE.format(count=sum(
                    hit.chunk.path in stale for hit in result.hits)))
        return Results(query, result, params, applied, kb_root, tuple(given), short, stale)

    def get(self, location: str) -> Excerpt:
        """A note's lines: `PATH`, `PATH:LINE` (the chunk there) or `PATH:LINE:COUNT`."""
        from groove_cli.chunk import ChunkRules
        from groove_cli.get import read_excerpt

        return read_excerpt(location, self.kb,
                            ChunkRules.of(self.settings))

    def status(self) -> StatusReport:
        """Counts, model and (with a KB folder) pending changes (cli.md `status`)."""
        from groove_cli.status import settings_status

        return settings_status(self.settings, self.location, self.kb)

    def doctor(self) -> DoctorReport:
        """Integrity checks of the index file and rows (cli.md `doctor`)."""
        from groove_cli.status import run_doctor

        return run_doctor(self.location, self.kb, config.models_dir(self.settings),
                          reranker=self.settings.str_("reranker"))

    def graph(self, start: str, *, depth: int = 2, fan_out: int = 5,
              min_similarity: float = 0.5, dedup_by_path: bool = True,
              exclude_paths: Sequence[str] = (), seed: str = "all", max_nodes: int = 50
              ) -> Graph:
        """The semantic neighbourhood of the note `start` (KB-relative): a breadth-first
        search over vector similarity, `depth` levels of at most `fan_out` neighbours at
        `min_similarity` or more, one node per note (`dedup_by_path`) or per chunk, notes
        matching `exclude_paths` (globs) left out, seeded by every chunk or their centroid
        (`seed`), at most `max_nodes` nodes (`truncated` says when more were found). From
        the index's vectors alone: no model is loaded (retrieve/graph.py)."""
        from groove_cli.retrieve.graph import GraphRequest, connection_graph
        from groove_cli.vectors import VectorSnapshot

        if isinstance(exclude_paths, str):
            exclude_paths = (exclude_paths,)
        request = GraphRequest(self._relative(start), depth, fan_out, min_similarity,
                               dedup_by_path, tuple(exclude_paths), seed, max_nodes)
        request.check()
        with messages.capture() as given:
            searcher = self._searcher_for(self.settings, None, embeds=False)
            try:
                with searcher.reader() as store:
                    searcher.knn(batch=True, store=store)  # loads (or builds) the snapshot
                    loaded = searcher.vector_rows(store)
                    snapshot = (loaded if isinstance(loaded, VectorSnapshot) else  # Postgres
                                VectorSnapshot.from_store(store, searcher.dim,  # HNSW: none
                                                          pieces=searcher.vector_pieces))
                    graph = connection_graph(snapshot, store, request)
            finally:
                if searcher is not self._searcher:
                    searcher.close()
        return dataclasses.replace(graph, messages=tuple(given))

    def _relative(self, start: str) -> str:
        """A note path as the index records it: a path to a file inside the KB (from the
        working folder) becomes KB-relative; anything else is taken as KB-relative."""
        if self.kb is not None and isinstance(start, str) and start.strip():
            given = Path(start.strip())
            try:
                if given.is_file():
                    return given.resolve().relative_to(self.kb.resolve()).as_posix()
            except (ValueError, OSError):
                pass
        return start

    def validate(self) -> ValidationReport:
        """Every note's frontmatter against the `[frontmatter]` schema (cli.md `validate`)."""
        from groove_cli.validate import validate_kb

        return validate_kb(self.settings, self._kb_for("validate"))

    def topics(self) -> dict[str, Any]:
        """The indexed notes counted by folder, category and topic (the MCP `list_topics`)."""
        from collections import Counter

        from groove_cli.store import open_reader

        store = open_reader(self.location, str(self.kb) if self.kb else "<path>")
        try:
            rows = store.document_facets()
        finally:
            store.close()
        folders: Counter[str] = Counter()
        facets: dict[str, Counter[str]] = {}
        for path, category, topic in rows:
            parts = path.split("/")[:-1]
            folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            facets.setdefault(category or "(none)", Counter())[topic or "(none)"] += 1
        return {"notes": len(rows),
                "folders": [{"prefix": p, "notes": n} for p, n in sorted(folders.items())],
                "categories": [{"category": c, "notes": sum(t.values()),
                                "topics": [{"topic": k, "notes": n}
                                           for k, n in sorted(t.items())]}
                               for c, t in sorted(facets.items())]}

    def index(self, *, force: bool = False, progress: ProgressSink | None = None,
              stop: Callable[[], bool] | None = None, verbose: bool = False,
              quiet: bool = True, text_only: bool = False, keep_model: bool = False
              ) -> IndexReport:
        """Index (or incrementally update) the KB folder: full text first, then the vectors
        (`text_only` stops after the full text); `stop` is polled between files and batches
        (Ctrl-C leaves a valid index). Open searches see the new state on their next call.
        `keep_model` keeps the embedding model loaded for this Index's next `index` call (a
        watcher re-indexes a few notes at a time and must not reload it each time)."""
        from groove_cli.index import Indexer, IndexOptions

        if self.kb is None:
            raise UsageError("indexing needs the KB folder",
                             hint="open it with groove_cli.open(KB_FOLDER)")
        if not self.kb.is_dir():  # never recreate a deleted or moved KB with an empty index
            raise GrooveError(f"the KB folder {self.kb} does not exist (deleted or moved?)",
                              hint="index it where it is now: groove index --kb-path NEW_PLACE")
        if self._state_folder and isinstance(self.location, Path):
            from groove_cli import state_migration

            self.location = state_migration.prepare_for_index(
                self.kb, self.settings.str_("store.location"), force=force)
        options = IndexOptions.from_settings(self.settings, self.kb, self.location, force=force,
                                             verbose=verbose, quiet=quiet, text_only=text_only)
        self.close()  # the vector snapshot and model identity may change
        indexer = Indexer(options, progress, stop)
        if keep_model and not force:  # without --force the index's recorded model is used
            indexer.embedder = self._index_model
        report = indexer.run()
        runtime = indexer.runtime
        if keep_model and runtime is not None:
            loaded = indexer.embedder
            if loaded is None or loaded.model.name != runtime.name:
                indexer.embedder = None
                loaded = indexer.load_embedder()
            self._index_model = loaded
        else:  # kept until the `groove` command ends (exits.py); through the API a no-op
            exits.park(indexer.embedder)
        return report

    def evaluate(self, golden: PathLike | None = None, *, k: Sequence[int] | str | None = None,
                 limit: int | None = None, history: bool = True, no_diff: bool = False,
                 fail_on_regression: bool = False, baseline: PathLike | None = None,
                 save_baseline: PathLike | None = None, max_drop: float = 0.01,
                 gate_metric: str | None = None, topics: PathLike | None = None,
                 trec_run: PathLike | None = None) -> EvalReport:
        """Score retrieval against the golden file (eval.md): `k` the cut-offs (default
        `[eval].k_values`), `history` read and append the KB's eval history, `baseline` /
        `save_baseline` a baseline file, `fail_on_regression` with `max_drop` and
        `gate_metric` the CI gate (its verdict is `regression_error`), `topics` a TREC topics
        file (the golden file is then qrels), `trec_run` also write the run in TREC format."""
        from groove_cli.evaluate.runner import run_eval

        request = self._eval_request(
            golden, k=k, limit=limit, history=history, no_diff=no_diff,
            fail_on_regression=fail_on_regression, baseline=baseline,
            save_baseline=save_baseline, max_drop=max_drop, gate_metric=gate_metric,
            topics=topics, trec_run=trec_run)
        with messages.capture() as given:
            report = run_eval(request)
        return dataclasses.replace(report, messages=tuple(given))

    def ablate(self, golden: PathLike | None = None, *, k: Sequence[int] | str | None = None,
               limit: int | None = None, topics: PathLike | None = None) -> dict[str, Any]:
        """`eval --ablate`: the golden set scored with each leg and stage switched off in
        turn, inside one read state (eval.md); the JSON-ready report."""
        from groove_cli.evaluate.ablate import run_ablation

        return run_ablation(self._eval_request(golden, k=k, limit=limit, history=False,
                                               topics=topics))

    def compare(self, a: str, b: str, *, gate_metric: str | None = None) -> dict[str, Any]:
        """`eval compare A B`: two runs (a baseline file, or a history run by number or
        timestamp prefix) compared metric by metric, the gate metric judged by the gate's
        rule (eval.md); the JSON-ready report."""
        from groove_cli.evaluate.compare import compare_refs
        from groove_cli.evaluate.history import history_path
        from groove_cli.evaluate.paired import check_metric

        gate = None
        if gate_metric is not None:
            try:
                gate = check_metric(gate_metric)
            except ValueError as exc:
                raise UsageError(f"--gate-metric: {exc}") from None
        kb = self._kb_for("eval compare")
        return compare_refs(a, b, lambda: history_path(kb, self.settings.str_("store.location")),
                            gate)

    def history(self) -> list[dict[str, Any]]:
        """The KB's stored eval runs, newest first (eval.md §7; [] before the first eval):
        what `eval --report` draws."""
        from groove_cli.evaluate.history import history_path, load_history

        kb = self._kb_for("the eval history")
        return load_history(history_path(kb, self.settings.str_("store.location")))

    def history_pictures(self) -> dict[str, Any]:
        """The stored eval runs as pictures (eval.md §15.1; the web view's history page):
        `{runs, meta, plots: [{id, title, caption, notes, svg}]}`, each plot an SVG element —
        the metrics over the runs, the newest run's per-query deltas. No stored run: no plots.
        Drawing needs matplotlib (the `pictures` extra), loaded by the first call only."""
        history = self.history()
        if not history:
            return {"runs": 0, "meta": [], "plots": []}
        from groove_cli.pictures.eval_plots import history_document

        return history_document(history)

    def baseline(self, path: PathLike) -> dict[str, Any]:
        """The run a baseline file (`eval --save-baseline`) holds, checked as `--baseline`
        reads it."""
        from groove_cli.evaluate.baseline import load_baseline

        return load_baseline(Path(path))

    def tune(self, golden: PathLike | None = None, *, space: Space | None = None,
             k: str | None = None, limit: int | None = None, write: bool = False,
             force: bool = False, progress: ProgressSink | None = None,
             config_flag: PathLike | None = None, new_config_folder: PathLike | None = None
             ) -> TuneReport:
        """Sweep `space`'s grid with nested cross-validation (tune.md); `write` applies an
        adopted recommendation to the loaded groove.toml (or creates one in
        `new_config_folder`), `force` even a keep-defaults one. `config_flag`: the command
        line's `--config`, which decides whether the user's own file may be written. Without
        `space`, the knobs of the fusion in use: `fusion-method` under score fusion, `fusion`
        under weighted RRF (tune.md §4)."""
        from groove_cli.evaluate.tune.run import TuneRequest, run_tune, tune_k_values

        if space is None:
            space = ("fusion-method" if self.settings.str_("search.fusion.method") == "score"
                     else "fusion")

        request = TuneRequest(
            settings=self.settings, db=self.location, kb=self._kb_for("tune"),
            golden=Path(golden) if golden is not None else None,
            k_values=tune_k_values(self.settings, k), limit=limit, space=space, write=write,
            force=force, config_flag=Path(config_flag) if config_flag is not None else None,
            new_config_folder=(Path(new_config_folder) if new_config_folder is not None
                               else None))
        return run_tune(request, progress=progress)

    def calibrate(self, golden: PathLike | None = None, *, write: bool = False,
                  force: bool = False, new_config_folder: PathLike | None = None
                  ) -> CalibrationReport:
        """`tune --space calibration`: refit the relevance model on the golden set; `write`
        stores a refit that beats the calibration in use on held-out hits (`force`: any)."""
        from groove_cli.evaluate.tune.calibrate import calibrate, write_calibration
        from groove_cli.evaluate.tune.write import write_target
        from groove_cli.retrieve.params import (
            configured_calibration,
            configured_rerank_calibration,
        )
        from groove_cli.retrieve.relevance import default_calibration

        s = self.settings
        current = configured_calibration(s) or default_calibration(s.str_("model"))
        report = calibrate(s, self.location, self._kb_for("tune"),
                           Path(golden) if golden is not None else None, current,
                           configured_rerank_calibration(s))
        if write and not (report.better or force):
            messages.warning("--write refused: the refit is not better calibrated on held-out "
                             "hits than the calibration in use (use --force to write it anyway)")
        elif write:
            loaded = s.config.path if s.config else None
            folder = Path(new_config_folder) if new_config_folder is not None else None
            target = write_calibration(write_target(loaded, folder), report.fitted, report.key)
            report = dataclasses.replace(report, written=target)
        return report

    def _kb_for(self, what: str) -> Path:
        if self.kb is None:
            raise UsageError(f"{what} needs the KB folder",
                             hint="open it with groove_cli.open(KB_FOLDER)")
        return self.kb

    def _eval_request(self, golden: PathLike | None, *, k: Sequence[int] | str | None,
                      limit: int | None, history: bool, no_diff: bool = False,
                      fail_on_regression: bool = False, baseline: PathLike | None = None,
                      save_baseline: PathLike | None = None, max_drop: float = 0.01,
                      gate_metric: str | None = None, topics: PathLike | None = None,
                      trec_run: PathLike | None = None) -> Any:
        """The `EvalRequest` `evaluate` and `ablate` run."""
        from groove_cli.evaluate.golden import effective_limit, k_values_from
        from groove_cli.evaluate.runner import EvalRequest, gate_metric_from
        from groove_cli.retrieve.params import eval_reranker

        def path(value: PathLike | None) -> Path | None:
            return Path(value) if value is not None else None

        kb = self._kb_for("eval")
        k_text = k if isinstance(k, str) or k is None else ",".join(str(v) for v in k)
        k_values = k_values_from(self.settings, k_text)
        return EvalRequest(
            settings=self.settings, db=self.location, kb=kb, golden=path(golden),
            k_values=k_values, limit=effective_limit(limit, k_values),
            reranker=eval_reranker(self.settings), no_history=not history, no_diff=no_diff,
            fail_on_regression=fail_on_regression, baseline=path(baseline),
            save_baseline=path(save_baseline), max_drop=max_drop,
            gate_metric=gate_metric_from(gate_metric, k_values), topics=path(topics),
            trec_run=path(trec_run))


def list_models(settings: Settings, *, offline: bool = False) -> list[ModelStatus]:
    """`models list`: every registry model and whether it is cached, convertible from the
    offline pack or downloadable (`offline`: never downloadable)."""
    from groove_cli.models import list_models as listed

    return listed(config.models_dir(settings), offline=offline)


def prepare_model(name: str, settings: Settings, *, offline: bool = False) -> ResolvedModel:
    """`models resolve`: make a registry model (or a model folder) ready — converted from the
    offline pack or downloaded (never with `offline`) — and return where it is."""
    from groove_cli.models import registry_names, resolve_model

    kind = "reranker" if name in registry_names("reranker") else "embedder"
    return resolve_model(name, config.models_dir(settings), kind=kind, offline=offline)


def service_unit(kbs: Sequence[PathLike], *, name: str | None = None,
                 platform: str | None = None, port: int | None = None,
                 home: PathLike | None = None) -> ServiceUnit:
    """`service install --dry-run`: the systemd user unit (Linux) or launchd agent (macOS)
    that runs `groove serve --watch KBS`, not written (osservice.py)."""
    from groove_cli import osservice

    return osservice.unit_for([Path(k) for k in kbs], name=name,
                              platform=osservice.current_platform(platform), port=port,
                              home=Path(home) if home is not None else Path.home())


def install_service(kbs: Sequence[PathLike], *, name: str | None = None,
                    platform: str | None = None, port: int | None = None,
                    home: PathLike | None = None) -> ServiceUnit:
    """`service install`: write `service_unit`'s file (it is started by the command its
    `start` names; groove runs no service manager itself)."""
    from groove_cli import osservice

    where = Path(home) if home is not None else Path.home()
    unit = service_unit(kbs, name=name, platform=platform, port=port, home=where)
    return osservice.install(unit, where)


def uninstall_service(name: str, *, platform: str | None = None,
                      home: PathLike | None = None) -> ServiceUnit:
    """`service uninstall`: remove the named service's file and what `install` made."""
    from groove_cli import osservice

    return osservice.uninstall(name, osservice.current_platform(platform),
                               Path(home) if home is not None else Path.home())


def services(*, platform: str | None = None, home: PathLike | None = None
             ) -> list[ServiceUnit]:
    """`service status`: the groove services installed for this user."""
    from groove_cli import osservice

    return osservice.installed(osservice.current_platform(platform),
                               Path(home) if home is not None else Path.home())


def settings_at(flags: Mapping[str, object], *, config_file: PathLike | None = None,
                cwd: Path | None = None, db: PathLike | None = None, discover: bool = False
                ) -> tuple[Settings, Mapping[str, object]]:
    """Settings from the flags, `config_file` and the built-in defaults; also the config
    file's values. With `discover` (the command line), as every command resolves them
    (cli.md §1): without `config_file`, the groove.toml of the working folder `cwd`, its git
    root or the user's, and the KB `cwd` is in when neither a flag nor a project groove.toml
    names one and no `db` is given (as git finds `.git`). Without it nothing of the process's
    surroundings is read."""
    from groove_cli import kbs

    where = cwd or Path.cwd()
    explicit = Path(config_file) if config_file is not None else None
    if discover:
        found = config.discover_config(explicit, where)
    else:
        found = config.discover_config(explicit, where) if explicit is not None else None
    file_values = config.load_config_file(found.path) if found else {}
    settings = config.resolve(file_values, flags, config=found)
    project = (settings.source("kb_path") == "file" and settings.config is not None
               and settings.config.origin != "user")
    if discover and settings.source("kb_path") != "flag" and not project and db is None:
        kb = kbs.find_kb(where)
        if kb is not None:
            settings = config.with_found_kb(settings, kb)
    return settings, file_values


def resolve(kb: PathLike | None = None, *, db: PathLike | None = None,
            config_file: PathLike | None = None, kb_required: bool = False,
            flags: Mapping[str, object] | None = None, cwd: Path | None = None,
            writing: bool = False, force: bool = False, discover: bool = False
            ) -> tuple[Settings, Path | None, IndexLocation, Mapping[str, object]]:
    """Settings, KB folder and index location: flags > groove.toml > defaults (`settings_at`),
    `db` > GROOVE_DB_URL (with `discover`, as every command resolves them, cli.md §1) >
    `[store] url` > the KB's state folder. `writing` (index): the state folder is made and an
    old-layout index moved into it first (statedir.py; `force`: a damaged one is set aside
    instead)."""
    from groove_cli.dbfile import refuse_linked_index

    merged = dict(flags or {})
    if kb is not None:
        merged["kb_path"] = str(kb)
    db_text = os.fspath(db) if db is not None else None
    settings, file_values = settings_at(merged, config_file=config_file, cwd=cwd, db=db_text,
                                        discover=discover)
    kb_dir = config.kb_path(settings, required=kb_required and db_text is None)
    if kb_required and kb_dir is None:
        kb_dir = config.kb_path(settings, required=True)
    location = config.index_location(settings, db_text, kb_dir, environment=discover)
    if isinstance(location, Path):
        from groove_cli.store import check_runtime

        check_runtime()
        if writing and kb_dir is not None and db_text is None and settings.path("db_path") is None:
            from groove_cli import state_migration

            location = state_migration.prepare_for_index(kb_dir, settings.str_("store.location"),
                                                  force=force)
        refuse_linked_index(location, explicit=db_text is not None)
    return settings, kb_dir, location, file_values


def open(kb: PathLike | None = None, *, db: PathLike | None = None,
         config: PathLike | None = None, discover: bool = False, **overrides: object) -> Index:
    """Open a KB's index: `kb` is the notes folder (its index is `<kb>/.groove/index.db` unless
    `config` or `db` says otherwise); `db` a SQLite file or a postgresql:// URL; `config` a
    groove.toml; `overrides` settings by config key or its last part
    (`groove_cli.open("notes", rrf_k=40, model="…")`).

    Only what is given counts, over the built-in defaults: no groove.toml is looked for and
    neither the working folder nor GROOVE_DB_URL is read, so a call gives the same results
    from any folder. `discover=True` resolves as the command line does (cli.md §1: the
    working folder's, git root's or user's groove.toml, the KB the working folder is in,
    GROOVE_DB_URL)."""
    if kb is None and db is None and config is None and not discover:
        from groove_cli.errors import UsageError

        raise UsageError("groove_cli.open() needs the KB folder, db= or config=",
                         hint="or discover=True to find them as the command line does")
    settings, kb_dir, location, file_values = resolve(
        kb, db=db, config_file=config, flags=checked_overrides(overrides), discover=discover)
    return Index(settings, kb_dir, location, file_values,
                 state_folder=db is None and settings.path("db_path") is None)
