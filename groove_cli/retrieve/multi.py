"""`groove search -c a -c b` / `--all`: one query over several KBs, one fused list (search.md
§14).

Each KB is searched on its own, with its own settings, model and calibration, exactly as a
single-KB search; the ranked lists are then fused by reciprocal rank (`weighted_rrf`, every KB
one list of weight 1). Ranks are used rather than the relevance estimates because relevance is
calibrated per model and per language and can be under-confident for some (issue 28 item 7), so
sorting on it would let one KB's calibration bury another KB's best hits; each KB's
`--min-relevance` and quality filter still drop its weak hits before fusion. Hits of the same
rank are ordered by relevance (higher first), then by the order the KBs were named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from groove_cli import messages
from groove_cli.config import DEFAULT_RRF_K, Settings
from groove_cli.dburl import IndexLocation
from groove_cli.errors import IndexMissing
from groove_cli.retrieve.filters import FilterSpec
from groove_cli.retrieve.fuse import weighted_rrf
from groove_cli.retrieve.pipeline import SearchHit
from groove_cli.retrieve.searcher import SearchOutcome, run_search


@dataclass(frozen=True, slots=True)
class KbTarget:
    """One KB of a multi-KB search: its name, settings and where its index is."""

    name: str
    settings: Settings
    db: IndexLocation
    kb: Path


@dataclass(frozen=True, slots=True)
class KbHit:
    """A hit of the fused list, attributed to its KB."""

    kb: str
    kb_root: str | None
    kb_rank: int
    """The hit's 1-based rank in its own KB's list."""
    fused_score: float
    """The RRF score over the KBs' lists, normalised so a first hit of every KB would be 1."""
    hit: SearchHit


@dataclass(frozen=True, slots=True)
class MultiOutcome:
    hits: tuple[KbHit, ...]
    outcomes: tuple[tuple[str, SearchOutcome], ...]
    """Each searched KB's own outcome, in the order the KBs were named."""

    @property
    def low_confidence(self) -> bool:
        """No KB has a confident hit."""
        return all(o.result.low_confidence for _, o in self.outcomes)


def fuse_kbs(outcomes: Sequence[tuple[str, SearchOutcome]], limit: int, rrf_k: float
             ) -> tuple[KbHit, ...]:
    """Fuse the KBs' ranked lists by RRF (module docstring); the best `limit` hits."""
    # weighted_rrf breaks ties by id ascending: number the hits rank by rank, and within a
    # rank by relevance (higher first) then KB order, so its tie order is ours.
    slots: dict[int, tuple[int, int]] = {}
    lists: list[list[int]] = [[] for _ in outcomes]
    depth = max((len(o.result.hits) for _, o in outcomes), default=0)
    for rank in range(depth):
        here = [(i, o.result.hits[rank]) for i, (_, o) in enumerate(outcomes)
                if rank < len(o.result.hits)]
        here.sort(key=lambda pair: (-(pair[1].relevance if pair[1].relevance is not None
                                      else -1.0), pair[0]))
        for i, _ in here:
            ident = len(slots)
            slots[ident] = (i, rank)
            lists[i].append(ident)
    fused = weighted_rrf([(1.0, ids) for ids in lists], rrf_k)
    hits: list[KbHit] = []
    for candidate in fused[:limit]:
        i, rank = slots[candidate.chunk_id]
        name, outcome = outcomes[i]
        hits.append(KbHit(name, outcome.kb_root, rank + 1, candidate.score,
                          outcome.result.hits[rank]))
    return tuple(hits)


def search_kbs(targets: Sequence[KbTarget], text: str, *, limit: int,
               filters: Callable[[Settings], FilterSpec], explicit_ratio: float | None,
               skip_unindexed: bool) -> MultiOutcome:
    """Search every KB of `targets` (each with its own settings), then fuse. `skip_unindexed`
    (`--all`): a collection without an index is skipped with a warning instead of failing."""
    outcomes: list[tuple[str, SearchOutcome]] = []
    for target in targets:
        try:
            outcome = run_search(target.settings, target.db, target.kb, text, limit=limit,
                                 filters=filters(target.settings), explicit_ratio=explicit_ratio)
        except IndexMissing:
            if not skip_unindexed:
                raise
            messages.warning(f"collection {target.name} has no index yet; skipped it "
                             f"(groove index -c {target.name})")
            continue
        outcomes.append((target.name, outcome))
    return MultiOutcome(fuse_kbs(outcomes, limit, DEFAULT_RRF_K), tuple(outcomes))
