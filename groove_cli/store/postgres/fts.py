"""The full-text legs on Postgres: the compiler's FTS5 expressions as SQL, ranked by FTS5's bm25.

groove's query compiler (retrieve/query.py, words.py) emits a small subset of FTS5: quoted
phrases OR-ed together, optionally `(…) NOT (…)`. `parse` reads exactly that subset (anything
else is a bug, not user input). Each phrase becomes one SQL branch that yields the rows it
occurs in with its frequency per column:

- words/CJK, one token: the postings table (`groove_postings`, an index lookup);
- words/CJK, several tokens: chunks holding every token (postings), then the phrase's
  occurrences in the stored token stream;
- trigram: a `LIKE '%phrase%'` over the folded text (pg_trgm's GIN index finds candidates),
  then its occurrences.

The ranking is FTS5's bm25 computed in SQL from the same statistics: for each phrase
idf = ln((N − n + 0.5) / (n + 0.5)) (1e-6 when ≤ 0), f = Σ column weight × occurrences,
score = Σ idf · f · (k1 + 1) / (f + k1 · (1 − b + b · len / avgdl)), k1 = 1.2, b = 0.75,
with N the KB's chunk count, n the rows holding the phrase, len the row's token count in that
table and avgdl the table's tokens / N. Ties go to the lower chunk id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groove_cli.store.fts_tables import FtsTable
from groove_cli.store.postgres.tokens import Needle, needle

K1 = 1.2
B = 0.75
# Column names come from the table's declaration (fixed identifiers; never built from input).


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed MATCH expression: the positive phrases (in order, repeats kept) and the
    excluded ones."""

    positives: tuple[str, ...]
    negatives: tuple[str, ...]


def _phrases(text: str) -> list[str]:
    """`"a" OR "b" OR …` → [a, b, …] (a `""` inside a phrase is one `"`)."""
    out: list[str] = []
    i = 0
    expect_phrase = True
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        if expect_phrase:
            if text[i] != '"':
                raise ValueError(f"unsupported FTS5 expression near {text[i:i + 20]!r}")
            j = i + 1
            parts: list[str] = []
            while True:
                k = text.index('"', j)
                parts.append(text[j:k])
                if text.startswith('"', k + 1):
                    parts.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            out.append("".join(parts))
            expect_phrase = False
        elif text.startswith("OR ", i):
            i += 3
            expect_phrase = True
        else:
            raise ValueError(f"unsupported FTS5 expression near {text[i:i + 20]!r}")
    if expect_phrase:
        raise ValueError("an FTS5 expression ends without a phrase")
    return out


def parse(expr: str) -> Expression:
    """Read the compiler's expression: `P OR …` or `(P OR …) NOT (N OR …)`."""
    text = expr.strip()
    if text.startswith("("):
        head, sep, tail = text.partition(") NOT (")
        if not sep or not tail.endswith(")"):
            raise ValueError(f"unsupported FTS5 expression: {expr!r}")
        return Expression(tuple(_phrases(head[1:])), tuple(_phrases(tail[:-1])))
    return Expression(tuple(_phrases(text)), ())


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Query:
    """SQL text and its parameters, built branch by branch (values only ever as `%s`)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: list[Any] = []

    def add(self, sql: str, *params: Any) -> None:
        self.parts.append(sql)
        self.params.extend(params)

    @property
    def sql(self) -> str:
        return "".join(self.parts)


def _match_branch(q: Query, table: FtsTable, kb: int, n: Needle) -> None:
    """Ids of the KB's chunks holding the phrase `n` (no counts)."""
    h, c, b = table.pg_columns
    if table.substrings:
        pattern = _like(n.text)
        q.add(f"SELECT id FROM groove_chunks WHERE kb = %s AND ({h} LIKE %s OR {c} LIKE %s "
              f"OR {b} LIKE %s)", kb, pattern, pattern, pattern)
    elif len(n.tokens) == 1:
        q.add("SELECT chunk_id FROM groove_postings WHERE kb = %s AND tbl = %s AND term = %s",
              kb, table.postings_code, n.tokens[0])
    else:
        q.add(f"SELECT id FROM groove_chunks WHERE kb = %s AND id IN ({_all_tokens_sql()}) "
              f"AND (strpos({h}, %s) > 0 OR strpos({c}, %s) > 0 OR strpos({b}, %s) > 0)",
              kb, kb, table.postings_code, list(set(n.tokens)), len(set(n.tokens)),
              n.text, n.text, n.text)


def _all_tokens_sql() -> str:
    return ("SELECT chunk_id FROM groove_postings WHERE kb = %s AND tbl = %s "
            "AND term = ANY(%s) GROUP BY chunk_id HAVING count(*) = %s")


def _hit_branch(q: Query, table: FtsTable, kb: int, n: Needle, number: int) -> None:
    """(phrase number, id, occurrences in heading, context, content, row length) of every
    chunk holding the phrase `n`."""
    h, c, b = table.pg_columns
    length = table.pg_length
    if len(n.tokens) == 1:
        q.add("SELECT %s::integer, chunk_id, tf_heading, tf_context, tf_content, len "
              "FROM groove_postings WHERE kb = %s AND tbl = %s AND term = %s",
              number, kb, table.postings_code, n.tokens[0])
        return
    counts = ", ".join(f"groove_occurrences({col}, %s, %s)" for col in (h, c, b))
    q.add(f"SELECT * FROM (SELECT %s::integer AS t, id, {counts}, {length} FROM groove_chunks "
          "WHERE kb = %s AND ", number, n.text, n.overlaps, n.text, n.overlaps, n.text,
          n.overlaps, kb)
    if table.substrings:
        pattern = _like(n.text)
        q.add(f"({h} LIKE %s OR {c} LIKE %s OR {b} LIKE %s)", pattern, pattern, pattern)
    else:
        q.add(f"id IN ({_all_tokens_sql()})", kb, table.postings_code, list(set(n.tokens)),
              len(set(n.tokens)))
    q.add(") AS x(t, id, fh, fc, fb, len) WHERE fh + fc + fb > 0")


def needles(table: FtsTable, phrases: tuple[str, ...]) -> list[Needle]:
    """The searchable phrases (a phrase without a token matches nothing, as in FTS5)."""
    return [n for n in (needle(table, p) for p in phrases) if n is not None]


def match_query(table: FtsTable, kb: int, expr: Expression) -> Query | None:
    """SQL of the ids matching `expr`; None when nothing can match."""
    positives = needles(table, expr.positives)
    if not positives:
        return None
    q = Query()
    q.add("(")
    for i, n in enumerate(dict.fromkeys(positives)):
        q.add(" UNION " if i else "")
        _match_branch(q, table, kb, n)
    q.add(")")
    negatives = needles(table, expr.negatives)
    for n in dict.fromkeys(negatives):
        q.add(" EXCEPT ")
        _match_branch(q, table, kb, n)
    return q


def search_query(table: FtsTable, kb: int, expr: Expression, weights: tuple[float, float, float],
                 rows: int, avgdl: float, limit: int, *, scored: bool = False) -> Query | None:
    """SQL of up to `limit` ids matching `expr`, best bm25 first, ties by id (`scored`: each
    with its score)."""
    positives = needles(table, expr.positives)
    if not positives or rows == 0 or avgdl <= 0:
        return None
    distinct = list(dict.fromkeys(positives))
    number = {n: i for i, n in enumerate(distinct)}
    q = Query()
    q.add("WITH hits(t, id, fh, fc, fb, len) AS MATERIALIZED (")
    for i, n in enumerate(distinct):
        q.add(" UNION ALL " if i else "")
        _hit_branch(q, table, kb, n, i)
    q.add("), df AS (SELECT t, count(*)::float8 AS n FROM hits GROUP BY t), "
          "idf AS (SELECT t, CASE WHEN ln((%s - n + 0.5) / (n + 0.5)) <= 0 THEN 1e-6 "
          "ELSE ln((%s - n + 0.5) / (n + 0.5)) END AS v FROM df), "
          "q AS (SELECT unnest(%s::integer[]) AS t), "
          "excluded AS (", float(rows), float(rows), [number[n] for n in positives])
    negatives = needles(table, expr.negatives)
    if negatives:
        for i, n in enumerate(dict.fromkeys(negatives)):
            q.add(" UNION " if i else "")
            _match_branch(q, table, kb, n)
    else:
        q.add("SELECT NULL::bigint WHERE false")
    w_heading, w_context, w_content = (float(w) for w in weights)
    q.add(f") SELECT id{', score' if scored else ''} FROM (SELECT h.id, sum(idf.v * x.f * %s / "
          "(x.f + %s * (%s + %s * h.len / %s))) AS score "
          "FROM q JOIN hits h USING (t) JOIN idf USING (t), "
          "LATERAL (SELECT h.fh * %s + h.fc * %s + h.fb * %s AS f) x "
          "WHERE h.id NOT IN (SELECT * FROM excluded) GROUP BY h.id) s "
          "ORDER BY score DESC, id LIMIT %s",
          K1 + 1.0, K1, 1.0 - B, B, float(avgdl), w_heading, w_context, w_content, limit)
    return q
