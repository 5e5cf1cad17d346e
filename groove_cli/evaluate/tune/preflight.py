"""Tune's pre-flight (tune.md §3): per-query diagnostics, the effective queries and the notes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from groove_cli import messages
from groove_cli.errors import TuneNotApplicable
from groove_cli.evaluate.tune.grid import SMALL_N_WARN
from groove_cli.retrieve.fuse import fuse_lists

# --------------------------------------------------------------------------- diagnostics (§3)


@dataclass(frozen=True, slots=True)
class QueryDiagnostics:
    """The pre-flight diagnostics of one usable query (§3)."""

    id: str
    fts_candidates: int
    fts_total_matches: int
    vec_fts_overlap: int
    bm25_sensitive: bool
    idf_clamped: bool
    rrf_ties: int
    effective: bool


def diagnostics(query_id: str, vector_ids: Sequence[int], fts_ids: Sequence[int], *,
                probe_heading_heavy: Sequence[int], probe_content_heavy: Sequence[int],
                fts_total_matches: int, chunk_total: int, limit: int) -> QueryDiagnostics:
    """Diagnostics of one query from its lists at the built-in settings.

    Args:
        query_id: the golden query id.
        vector_ids: the vector list (pool P, exclusions dropped).
        fts_ids: the FTS list at the built-in bm25 weights.
        probe_heading_heavy: the FTS list at (h=4, ctx=0.5, c=0.5) (weight set 48).
        probe_content_heavy: the FTS list at (h=0.5, ctx=0.5, c=4) (weight set 3).
        fts_total_matches: rows the FTS expression matches (0 without an expression).
        chunk_total: chunks in the index.
        limit: the tune limit; `rrf_ties` counts adjacent equal scores in the fused top `limit`.
    """
    fused = fuse_lists(vector_ids, [(1.0, fts_ids)], limit=max(limit, 1))
    ties = sum(1 for a, b in itertools.pairwise(fused) if a[1] == b[1])
    return QueryDiagnostics(
        id=query_id,
        fts_candidates=len(fts_ids),
        fts_total_matches=fts_total_matches,
        vec_fts_overlap=len(set(vector_ids) & set(fts_ids)),
        bm25_sensitive=list(probe_heading_heavy) != list(probe_content_heavy),
        idf_clamped=chunk_total > 0 and 2 * fts_total_matches >= chunk_total,
        rrf_ties=ties,
        effective=len(fts_ids) >= 2,
    )


SCOPE_NOTE_STAGES = ("[search.mmr] / [search.parent_retriever] are enabled in groove.toml but tune "
                     "measures the plain fusion stage only.")
SCOPE_NOTE_DEFAULTS = ("[search.fusion] / [search.retrieval] differ from the built-in defaults; "
                       "tune still measures deltas against the BUILT-IN defaults, not your values.")
RRF_SPACE_NOTE = ("the {space} space sweeps weighted RRF (method = \"rrf\") against the built-in "
                  "RRF; the default fusion is score, under which {what}; --space fusion-method "
                  "compares the fusions.")
RRF_SPACE_WHAT = {"fusion": "rrf_k does nothing and the bm25 weights were not measured",
                  "retrieval": "the leg weights only switch legs on and off"}
CONTEXT_NOOP_NOTE = "no chunk has a contextual breadcrumb, so the context weight axis is a no-op"


def effective_note(effective: int, total: int) -> str:
    """`{e} of {n} golden queries are effective`."""
    return f"{effective} of {total} golden queries are effective"


def insensitive_note(query_id: str, fts_candidates: int) -> str:
    """`insensitive: {id} (FTS candidates = {c})`."""
    return f"insensitive: {query_id} (FTS candidates = {fts_candidates})"


def small_n_warning(effective: int) -> str:
    """The warning when fewer than 50 queries are effective."""
    return (f"effective N = {effective} is below the IR convention of {SMALL_N_WARN} topics; "
            "treat the verdict as indicative")


def no_effective_query_error(diags: Sequence[QueryDiagnostics]) -> TuneNotApplicable:
    """The exit-2 error when no usable query has 2 or more FTS candidates (§3)."""
    lines = [
        f"none of the {len(diags)} golden queries is sensitive to the fusion parameters (every "
        "query has fewer than 2 FTS candidates), so the grid was not run.",
        "  Fusion weights and the RRF constant can only reorder results when the full-text leg "
        "returns at",
        "  least two candidates for a query. Add golden queries that share words, names or "
        "identifiers with",
        "  the notes, or check that the index is not empty.",
    ]
    lines += [f"  {d.id}: FTS candidates = {d.fts_candidates}" for d in diags]
    return TuneNotApplicable("\n".join(lines))


def check_preflight(diags: Sequence[QueryDiagnostics], *, context_axis_noop: bool
                    ) -> tuple[int, ...]:
    """Write the §3 stderr notes and return the indices of the effective queries.

    Raises:
        TuneNotApplicable: no query is effective (exit 2, nothing on stdout).
    """
    if context_axis_noop:
        messages.detail(CONTEXT_NOOP_NOTE)
    effective = tuple(i for i, d in enumerate(diags) if d.effective)
    if not effective:
        raise no_effective_query_error(diags)
    # the report's header and diagnostics table say the same: notes only with --verbose
    messages.detail(effective_note(len(effective), len(diags)))
    for d in diags:
        if not d.effective:
            messages.detail(insensitive_note(d.id, d.fts_candidates))
    if len(effective) < SMALL_N_WARN:
        messages.warning(small_n_warning(len(effective)))
    return effective


