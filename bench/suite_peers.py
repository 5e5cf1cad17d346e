"""The suite's BM25 peers: bm25s (Lucene BM25, k1 1.5, b 0.75) with the best tokeniser for the
collection's language, over whole documents, scored per query by groove's own metric code.

English: bm25s's English stopwords + Snowball stemmer (PyStemmer). Japanese: character bigrams
(the JSQuAD README's baseline), groove's CJK unigrams + bigrams, and a morphological analyser's
lemmas + character bigrams (fugashi with unidic-lite: MeCab and the UniDic lexicon, both wheels
from PyPI; `pip install -e '.[bench]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from fts_variants import char_bigrams

from groove_cli.engine import Expected, HitRecord, cjk, score_query

Tokeniser = Callable[[str], list[str]]
DEPTH = 10


@cache
def _tagger() -> Any:
    import fugashi
    import unidic_lite

    return fugashi.Tagger(f"-d {unidic_lite.DICDIR}")


def lemmas(text: str) -> list[str]:
    """Each word's UniDic lemma (its surface form when the lexicon has none), lowercased;
    punctuation and symbols dropped."""
    out = []
    for word in _tagger()(text):
        pos = word.feature.pos1
        if pos in ("補助記号", "空白"):
            continue
        lemma = getattr(word.feature, "lemma", None) or word.surface
        out.append(str(lemma).lower())
    return out


def lemmas_bigrams(text: str) -> list[str]:
    """Lemmas plus groove's character bigrams (words and numbers included once)."""
    return lemmas(text) + [t for t in char_bigrams(text) if len(t) == 2 and cjk.is_cjk(t[0])]


JA_PEERS: dict[str, Tokeniser] = {
    "bm25s, character bigrams": char_bigrams,
    "bm25s, unigrams + bigrams": cjk.tokens,
    "bm25s, MeCab (UniDic) lemmas + bigrams": lemmas_bigrams,
}
EN_PEERS: dict[str, Tokeniser | None] = {"bm25s, stopwords + Snowball stemmer": None}


def peers_for(language: str) -> dict[str, Tokeniser | None]:
    return dict(JA_PEERS) if language == "ja" else dict(EN_PEERS)


def expected_of(query: dict[str, Any]) -> tuple[Expected, ...]:
    """A suite query's judgments as eval entries: `<doc id>.md` with its grade."""
    return tuple(Expected(f"{doc}.md", None, int(grade)) for doc, grade in query["grades"].items())


def run_peer(docs: Path, queries: Sequence[dict[str, Any]], tokeniser: Tokeniser | None,
             k1: float = 1.5, b: float = 0.75) -> dict[str, float]:
    """nDCG@10 per query id of bm25s over `docs` (one unit per file)."""
    import bm25s
    import Stemmer

    files = sorted(docs.glob("*.md"))
    paths = [f.name for f in files]
    stemmer = Stemmer.Stemmer("english")

    def tokenise(texts: list[str]) -> Any:
        if tokeniser is not None:
            return [tokeniser(text) for text in texts]
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(tokenise([f.read_text(encoding="utf-8") for f in files]), show_progress=False)
    out = {}
    for q in queries:
        tokens = tokenise([q["query"]])
        if tokeniser is not None and not tokens[0]:
            out[q["id"]] = 0.0
            continue
        found, scores = retriever.retrieve(tokens, k=min(DEPTH, len(paths)), show_progress=False)
        hits = [HitRecord(rank=i + 1, path=paths[int(d)], heading=None, score=float(s))
                for i, (d, s) in enumerate(zip(found[0], scores[0], strict=True)) if s > 0]
        out[q["id"]] = score_query(expected_of(q), hits, (DEPTH,)).at_k["ndcg"][DEPTH]
    return out
