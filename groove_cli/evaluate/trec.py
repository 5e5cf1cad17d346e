"""TREC run and qrels files: what trec_eval, ir_measures and ranx read and write.

- Run file (`--trec-run FILE`): one line per hit, `qid Q0 docno rank score tag`, whitespace
  separated. Scores are made strictly decreasing within a query (a tie or an out-of-order
  score after MMR is stepped down by 1e-9 below the previous one), because those tools order
  hits by score, not by the rank column; so they see groove's order.
- Qrels file: `qid iteration docno relevance`; relevance ≥ 1 is relevant and is the nDCG gain,
  0 (or negative) is judged not relevant.
- Topics file: `qid<TAB>query` lines (the ir_datasets/MS MARCO layout) or classic TREC topics
  (`<top> <num> Number: 401 <title> …`).

A docno is the note's KB-relative path, plus `#heading` for a chunk with a heading; `%`, `#`,
`~` and whitespace are percent-encoded (UTF-8) so a docno is one token. A repeat of the same
docno in one query (two chunks under one heading) gets `~2`, `~3`, … so that the tools, which
expect unique docnos, judge it not relevant, as groove's one-to-one nDCG does.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from groove_cli.errors import GoldenError
from groove_cli.evaluate.golden import (
    MAX_GOLDEN_BYTES,
    Expected,
    GoldenSet,
    RefusedFile,
    check_queries,
    read_regular_file,
)
from groove_cli.evaluate.metrics import HitRecord
from groove_cli.outfile import write_output

RUN_TAG = "groove"
TIE_STEP = 1e-9
# one token per field, on one line: whitespace, `%#~` and every control character (NUL, ESC,
# the C1 range) are percent-encoded, so a run file never carries them raw (eval.md §12)
_ESCAPE = re.compile(r"[%#~\s\x00-\x1f\x7f-\x9f]")
_REPEAT = re.compile(r"~(\d+)$")


def _escape(text: str) -> str:
    return _ESCAPE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), text)


def _unescape(text: str) -> str:
    return re.sub(r"(?:%[0-9A-Fa-f]{2})+",
                  lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"),
                  text)


def encode_docno(path: str, heading: str | None) -> str:
    """`path` or `path#heading`, escaped into one whitespace-free token."""
    return _escape(path) + ("" if heading is None else "#" + _escape(heading))


def decode_docno(docno: str) -> tuple[str, str | None]:
    """(path, heading) of a docno; a `~n` repeat suffix is dropped."""
    docno = _REPEAT.sub("", docno)
    path, sep, heading = docno.partition("#")
    return _unescape(path), (_unescape(heading) if sep else None)


def encode_qid(query_id: str) -> str:
    return _escape(query_id)


def run_lines(run: Mapping[str, Any], tag: str = RUN_TAG) -> list[str]:
    """The run file's lines for a stored run (its `top_k` hits per query, in rank order)."""
    lines: list[str] = []
    for entry in run["per_query"]:
        qid = encode_qid(str(entry["id"]))
        seen: dict[str, int] = {}
        previous: float | None = None
        for hit in entry["top_k"]:
            docno = encode_docno(hit["path"], hit["heading"])
            seen[docno] = seen.get(docno, 0) + 1
            if seen[docno] > 1:
                docno += f"~{seen[docno]}"
            score = float(hit["score"])
            if previous is not None and score >= previous:
                score = previous - TIE_STEP
            previous = score
            lines.append(f"{qid} Q0 {docno} {hit['rank']} {score!r} {tag}")
    return lines


def write_run(path: Path, run: Mapping[str, Any]) -> None:
    """Write the TREC run file (outfile.py: atomically, or as a stream to a FIFO or `-`)."""
    data = "".join(line + "\n" for line in run_lines(run)).encode("utf-8")
    write_output(path, data, flag="--trec-run", what="TREC run file")


def _read_text(path: Path, what: str) -> str:
    try:
        raw = read_regular_file(path, MAX_GOLDEN_BYTES * 64)
    except FileNotFoundError:
        raise GoldenError(f"no {what} at {path}") from None
    except (RefusedFile, OSError) as exc:
        raise GoldenError(f"cannot read {what} {path}: {exc}") from None
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise GoldenError(f"{what} {path} is not valid UTF-8 ({exc.reason})") from None


def _records(path: Path, what: str, layout: str, *, ints: tuple[int, ...] = (),
             floats: tuple[int, ...] = ()) -> Iterator[list[str]]:
    """The whitespace-separated fields of each non-blank line, checked against `layout` (its
    word count) and the integer/float columns; a bad line is an error naming it."""
    columns = len(layout.split())
    for number, line in enumerate(_read_text(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != columns:
                raise ValueError
            for i in ints:
                int(parts[i])
            for i in floats:
                float(parts[i])
        except ValueError:
            raise GoldenError(f"{what} {path}, line {number}: expected `{layout}`, got "
                              f"{line.strip()!r}") from None
        yield parts


def read_run(path: Path) -> dict[str, list[HitRecord]]:
    """A TREC run file as each query's hits in rank order (by score, descending; ties by rank).

    Query ids are decoded; the rank column only breaks score ties.
    """
    rows: dict[str, list[tuple[float, int, str]]] = {}
    for parts in _records(path, "TREC run file", "qid Q0 docno rank score tag", ints=(3,),
                          floats=(4,)):
        rows.setdefault(_unescape(parts[0]), []).append((float(parts[4]), int(parts[3]), parts[2]))
    hits: dict[str, list[HitRecord]] = {}
    for qid, entries in rows.items():
        entries.sort(key=lambda e: (-e[0], e[1]))
        hits[qid] = [HitRecord(rank=r, path=decode_docno(docno)[0],
                               heading=decode_docno(docno)[1], score=score)
                     for r, (score, _, docno) in enumerate(entries, start=1)]
    return hits


def read_qrels(path: Path) -> dict[str, list[Expected]]:
    """`qid iteration docno relevance` lines as each query's graded expected entries."""
    judged: dict[str, list[Expected]] = {}
    for parts in _records(path, "qrels file", "qid iteration docno relevance", ints=(3,)):
        grade = max(0, int(parts[3]))
        doc_path, heading = decode_docno(parts[2])
        judged.setdefault(_unescape(parts[0]), []).append(Expected(doc_path, heading, grade))
    return judged


_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_NUM = re.compile(r"<num>\s*(?:Number:)?\s*(\S+)", re.I)
_TITLE = re.compile(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<[a-z/]|$)", re.S | re.I)


def read_topics(path: Path) -> list[tuple[str, str]]:
    """(qid, query) pairs in file order, from `qid<TAB>query` lines or `<top>` blocks."""
    text = _read_text(path, "topics file")
    if "<top>" in text.lower():
        topics = []
        for block in _TOP.findall(text):
            num, title = _NUM.search(block), _TITLE.search(block)
            if num is None or title is None:
                raise GoldenError(f"topics file {path}: a <top> block lacks <num> or <title>")
            topics.append((num.group(1), " ".join(title.group(1).split())))
        return topics
    topics = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        if not tab or not qid.strip():
            raise GoldenError(f"topics file {path}, line {number}: expected `qid<TAB>query`, "
                              f"got {line.strip()!r}")
        topics.append((qid.strip(), query.strip()))
    return topics


def load_trec_golden(qrels: Path, topics: Path, *,
                     check_query: Callable[[str], None]) -> GoldenSet:
    """A golden set from a qrels file and a topics file: the topics in file order, each with
    its judged documents (none: unjudged, shown as a miss). `golden_hash` covers both files.

    Raises:
        GoldenError: unreadable files, malformed lines, duplicate topic ids, or qrels naming
            a topic the topics file lacks.
    """
    judged = read_qrels(qrels)
    pairs = read_topics(topics)
    known = {qid for qid, _ in pairs}
    unknown = sorted(set(judged) - known)
    if unknown:
        raise GoldenError(f"qrels file {qrels} judges topics that {topics} does not define: "
                          f"{', '.join(unknown[:5])}" + (" …" if len(unknown) > 5 else ""))
    digest = hashlib.sha256()
    for part in (qrels, topics):
        digest.update(_read_text(part, "golden").encode("utf-8"))
        digest.update(b"\0")
    parsed: list[tuple[str | None, str, list[Expected]]] = [
        (qid, query, judged.get(qid, [])) for qid, query in pairs]
    queries = check_queries(topics, parsed, check_query)
    return GoldenSet(path=qrels, queries=queries, golden_hash=digest.hexdigest(),
                     has_defaults=False)
