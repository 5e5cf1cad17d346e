"""`groove search -c a -c b` / `--all`: one query over several KBs, one fused list (search.md
§14).

Each KB is searched on its own through its `api.Index`, with its own settings, model and
calibration, exactly as a single-KB search. The lists are then merged by **relevance**, keeping
each KB's own order: the next hit is always the head of some KB's list, the most relevant head
first. Relevance is the estimated probability that a hit is relevant, the one number on the same
scale in every KB (it is what `--min-relevance` and `low_confidence` read), so a KB with no good
match does not take every other slot as rank interleaving would (a barely relevant hit above
another KB's good one). Taking heads keeps each KB's ranking (reranker, MMR) intact: a KB's best
hit is never shown after its weaker ones, even where its calibration is under-confident. Without
the vector leg there is no relevance, and the lists are fused by reciprocal rank instead
(`weighted_rrf`, every KB one list of weight 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groove_cli import messages
from groove_cli.api import Filters, Index
from groove_cli.config import DEFAULT_RRF_K
from groove_cli.errors import IndexMissing
from groove_cli.results import Results
from groove_cli.retrieve.fuse import weighted_rrf
from groove_cli.retrieve.pipeline import SearchHit


@dataclass(frozen=True, slots=True)
class KbTarget:
    """One KB of a multi-KB search: its name and its index."""

    name: str
    index: Index


@dataclass(frozen=True, slots=True)
class KbHit:
    """A hit of the fused list, attributed to its KB."""

    kb: str
    kb_root: str | None
    kb_rank: int
    """The hit's 1-based rank in its own KB's list."""
    hit: SearchHit


@dataclass(frozen=True, slots=True)
class MultiOutcome:
    fusion: str
    """How the lists were fused: `relevance` (every hit has one) or `rank` (RRF)."""
    hits: tuple[KbHit, ...]
    outcomes: tuple[tuple[str, Results], ...]
    """Each searched KB's own outcome, in the order the KBs were named."""

    @property
    def low_confidence(self) -> bool:
        """No KB has a confident hit."""
        return all(o.result.low_confidence for _, o in self.outcomes)


def fuse_kbs(outcomes: Sequence[tuple[str, Results]], limit: int
             ) -> tuple[str, tuple[KbHit, ...]]:
    """The fusion used (`relevance` or `rank`, module docstring) and the best `limit` hits."""
    lists = [o.result.hits for _, o in outcomes]
    if all(h.relevance is not None for hits in lists for h in hits):
        return "relevance", _by_relevance(outcomes, limit)
    return "rank", _by_rank(outcomes, limit)


def _attributed(outcomes: Sequence[tuple[str, Results]], i: int, rank: int) -> KbHit:
    name, outcome = outcomes[i]
    return KbHit(name, outcome.kb_root, rank + 1, outcome.result.hits[rank])


def _by_relevance(outcomes: Sequence[tuple[str, Results]], limit: int
                  ) -> tuple[KbHit, ...]:
    """Merge the lists by their heads' relevance (ties: the better rank, then KB order)."""
    heads = [0] * len(outcomes)
    merged: list[KbHit] = []
    while len(merged) < limit:
        waiting = [(-(o.result.hits[heads[i]].relevance or 0.0), heads[i], i)
                   for i, (_, o) in enumerate(outcomes) if heads[i] < len(o.result.hits)]
        if not waiting:
            break
        _, rank, i = min(waiting)
        merged.append(_attributed(outcomes, i, rank))
        heads[i] += 1
    return tuple(merged)


def _by_rank(outcomes: Sequence[tuple[str, Results]], limit: int) -> tuple[KbHit, ...]:
    """RRF over the lists; equal ranks in the order the KBs were named (weighted_rrf breaks
    ties by id ascending, so the ids count rank by rank, KB by KB)."""
    slots: list[tuple[int, int]] = []
    lists: list[list[int]] = [[] for _ in outcomes]
    depth = max((len(o.result.hits) for _, o in outcomes), default=0)
    for rank in range(depth):
        for i, (_, o) in enumerate(outcomes):
            if rank < len(o.result.hits):
                lists[i].append(len(slots))
                slots.append((i, rank))
    fused = weighted_rrf([(1.0, ids) for ids in lists], DEFAULT_RRF_K)
    return tuple(_attributed(outcomes, *slots[c.chunk_id]) for c in fused[:limit])


def search_kbs(targets: Sequence[KbTarget], text: str, *, limit: int, filters: Filters,
               skip_unindexed: bool) -> MultiOutcome:
    """Search every KB of `targets` (each with its own settings), then fuse. `skip_unindexed`
    (`--all`): a collection without an index is skipped with a warning instead of failing."""
    outcomes: list[tuple[str, Results]] = []
    for target in targets:
        try:
            with target.index as index:
                outcome = index.search(text, limit=limit, filters=filters)
        except IndexMissing:
            if not skip_unindexed:
                raise
            messages.warning(f"collection {target.name} has no index yet; skipped it "
                             f"(groove index -c {target.name})")
            continue
        outcomes.append((target.name, outcome))
    fusion, hits = fuse_kbs(outcomes, limit)
    return MultiOutcome(fusion, hits, tuple(outcomes))
