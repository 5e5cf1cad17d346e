"""Several vectors per long chunk (index.md §4): no chunk's text is left out of every vector.

The tiny model of `test_index.py` (word-level tokenizer, no passage prefix, [CLS] and [SEP],
max_length 64, a vector = the unit mean of its tokens' table rows) makes every piece and every
score hand-computable. With max_length 64 a piece holds 64 − 2 special − 2 × 2 seam tokens =
58 content tokens, consecutive pieces overlap by 58 // 8 = 7 (step 51), and the first piece
surely covers 58 + 2 = 60 content tokens, so the first extra piece starts at token 60 − 7 = 53.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from groove_cli.models import Embedder
from groove_cli.retrieve.legs import cosines
from groove_cli.store import Store
from groove_cli.vectors import VectorSnapshot
from tests.onnx_builders import CLS_ID, SEP_ID, VOCAB
from tests.test_index import (
    DIM,
    Groove,
    chunk_ids,
    expected_vector,
    groove,
    make_groove,
    rows,
    tiny_model,
    write,
)
from tests.test_index_interrupt import kill_9, start_index, wait_until

__all__ = ["groove", "tiny_model"]  # the fixtures of test_index.py, shared

FILLER = ("the", "cat", "dog", "sat", "on", "mat", "a", "red", "blue", "green", "tree", "house",
          "bird", "flies")
TAIL = ["fish", "swims"] * 15
PIECES_ON = "vector_pieces = true\n"
"""groove.toml: pieces on (the default, docs/design/index.md §4, spelled out where a test
switches back and forth)."""


def filler(n: int, seed: int = 3) -> list[str]:
    """`n` words drawn from FILLER (no 'fish', 'swims', 'sea'): no 50-word run repeats."""
    rng = np.random.default_rng(seed)
    return [FILLER[i] for i in rng.integers(0, len(FILLER), n)]


def pieces_of(n: int) -> list[tuple[int, int]]:
    """The extra pieces of an n-token content, by the module doc's arithmetic."""
    out, start = [], 53
    while True:
        stop = min(start + 58, n)
        out.append((start, stop))
        if stop == n:
            return out
        start += 51


def test_piece_arithmetic_for_3000_tokens() -> None:
    found = pieces_of(3000)
    # starts 53, 104, …, 53 + 51 × 57 = 2960, which ends at 3000: 58 extra pieces
    assert len(found) == 58
    assert found[0] == (53, 111) and found[-1] == (2960, 3000)


def recording(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Every model input row the embedder runs, from now on."""
    seen: list[list[int]] = []
    real = Embedder._run

    def run(self: Embedder, batch: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        seen.extend([list(r) for r in batch])
        return real(self, batch)

    monkeypatch.setattr(Embedder, "_run", run)
    return seen


def test_every_token_of_a_3000_token_section_is_in_some_piece(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    words = filler(3000)
    write(groove.kb, "long.md", "## Long\n\n" + " ".join(words) + "\n")
    # sections are kept whole (the chunker would cut this one to the window): the pieces
    # are what a chunk longer than the window still gets (another model's window, say)
    groove.configure("[chunk]\nmax_tokens = 8192\n")
    seen = recording(monkeypatch)
    result = groove.index_ok()
    assert ("groove: note: 1 chunk(s) exceed max_length 64 tokens; their text past the window "
            "went into 58 more vector(s)") in result.stderr.splitlines()
    ids = [VOCAB[w] for w in words]
    first = [CLS_ID, *ids[:62], SEP_ID]  # the ordinary input, cut at 64 (today's vector)
    extra = [[CLS_ID, *ids[a:b], SEP_ID] for a, b in pieces_of(3000)]
    long_rows = [r for r in seen if len(r) > 40]  # the sample notes' inputs are shorter
    assert sorted(long_rows) == sorted([first, *extra])
    covered = set(range(62)).union(*(range(a, b) for a, b in pieces_of(3000)))
    assert covered == set(range(3000))  # every token is inside some piece's input

    (cid,) = chunk_ids(groove.db, "long.md")
    assert rows(groove.db, "SELECT token_count, pieces FROM chunks WHERE id = ?",
                (cid,)) == [(3000, 59)]
    stored = rows(groove.db, "SELECT piece, embedding FROM chunk_pieces WHERE chunk_id = ? "
                             "ORDER BY piece", (cid,))
    assert [p for p, _ in stored] == list(range(1, 59))
    for (_, blob), (a, b) in zip(stored, pieces_of(3000), strict=True):
        assert isinstance(blob, bytes)
        got = np.frombuffer(blob, dtype="<f4")
        assert np.allclose(got, expected_vector(" ".join(words[a:b])), atol=1e-5)
    status = json.loads(groove.run("status", "--format", "json").stdout)
    assert (status["pending_vectors"], status["piece_vectors"]) == (0, 58)
    assert "Extra piece vectors: 58 (the text of long chunks past the model's window)" in \
        groove.run("status").stdout.splitlines()


def test_a_query_matching_only_the_tail_finds_the_chunk_by_vector_mode(groove: Groove) -> None:
    shutil.rmtree(groove.kb)
    words = filler(300) + TAIL
    write(groove.kb, "long.md", "## Long\n\n" + " ".join(words) + "\n")
    write(groove.kb, "other.md", "the red fish swims\nthe red fish swims\n")
    groove.configure(PIECES_ON)
    groove.index_ok()
    found = groove.run("search", "fish swims", "--mode", "vector", "--format", "json",
                       "--explain")
    assert found.exit_code == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert [Path(h["path"]).name for h in hits] == ["long.md", "other.md"]
    query = expected_vector("fish swims")
    first = float(np.dot(expected_vector(" ".join(words[:62])), query))
    extra = [float(np.dot(expected_vector(" ".join(words[a:b])), query))
             for a, b in pieces_of(len(words))]
    best = max(extra)
    assert best > first and len(extra) == 6
    # the best of 7 pieces, less σ (the query's cosines over every extra piece: only these 6)
    # times e(7), the expected maximum of 7 standard normals (search.md §4)
    corrected = best - float(np.std(extra)) * 1.3521783756
    other = float(np.dot(expected_vector("the red fish swims the red fish swims"), query))
    assert first < other < corrected  # the correction keeps the tail's chunk first here
    assert hits[0]["explain"]["vec_rank"] == 1
    # the vector leg's score (fusion, relevance) is that corrected cosine, read from the
    # store or from the snapshot alike
    (cid,) = chunk_ids(groove.db, "long.md")
    store = Store.open_readonly(groove.db)
    try:
        assert cosines(store, [cid], query, DIM) == {cid: pytest.approx(corrected, abs=1e-6)}
        snapshot = VectorSnapshot.from_store(store, DIM)
        assert cosines(store, [cid], query, DIM, snapshot) == {
            cid: pytest.approx(corrected, abs=1e-6)}
        assert snapshot.knn(query, 1) == [(cid, pytest.approx(1 - corrected, abs=1e-5))]
        assert VectorSnapshot.from_store(store, DIM, pieces=False).knn(query, 5)[0][0] != cid
    finally:
        store.close()

    groove.configure("vector_pieces = false\n")  # search by first pieces only: today's ranking
    off = json.loads(groove.run("search", "fish swims", "--mode", "vector", "--format",
                                "json").stdout)["results"]
    assert [Path(h["path"]).name for h in off] == ["other.md", "long.md"]

    # without the snapshot (vec0 and the extra pieces' scan, merged) the same rankings
    for leftover in groove.db.parent.glob(f"{groove.db.name}.vectors*"):
        leftover.unlink()
    for config, order in ((PIECES_ON, ["long.md", "other.md"]),
                          ("vector_pieces = false\n", ["other.md", "long.md"])):
        groove.configure(config)
        found = groove.run("search", "fish swims", "--mode", "vector", "--format", "json")
        assert [Path(h["path"]).name for h in json.loads(found.stdout)["results"]] == order

    # eval measures the same: long.md at rank 1 with pieces (RR 1), rank 2 without (RR 1/2)
    (groove.work / "golden.yml").write_text(
        "queries:\n  - query: fish swims\n    expected:\n      - path: long.md\n",
        encoding="utf-8")
    for config, rr in ((PIECES_ON, 1.0), ("vector_pieces = false\n", 0.5)):
        groove.configure(config)
        report = groove.run("eval", "--kb-path", str(groove.kb), "--golden", "golden.yml",
                            "--mode", "vector", "--no-history", "--format", "json")
        assert report.exit_code == 0, report.stderr
        assert json.loads(report.stdout)["aggregate"]["mrr"] == pytest.approx(rr)


def test_vector_pieces_off_truncates_and_switching_on_embeds_only_the_extra_pieces(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    words = filler(300)
    write(groove.kb, "long.md", " ".join(words) + "\n")
    groove.configure("vector_pieces = false\n")
    off = groove.index_ok()
    assert ("groove: note: 1 chunk(s) exceed max_length 64 tokens and were truncated for "
            "embedding") in off.stderr.splitlines()
    assert rows(groove.db, "SELECT count(*) FROM chunk_pieces") == [(0,)]
    (cid,) = chunk_ids(groove.db, "long.md")
    first = rows(groove.db, "SELECT embedding FROM vec_chunks WHERE chunk_id = ?", (cid,))

    # switched on (the default) before the next index: status, search and eval say the tails
    # have no vectors yet, and the index is searched as it is
    groove.configure()
    switch = ("the text of long chunks past the model's window has no vectors yet (this index "
              "was built with vector_pieces off); `groove index` embeds it")
    assert f"Vector pieces: {switch}" in groove.run("status").stdout.splitlines()
    assert json.loads(groove.run("status", "--format", "json").stdout)["pieces_switch"] == switch
    found = groove.run("search", words[0], "--format", "json")
    assert found.exit_code == 0 and f"groove: note: {switch}" in found.stderr.splitlines()
    assert json.loads(found.stdout)["notes"] == [switch]
    assert f"groove: note: {switch}" not in groove.run("search", words[0], "--mode",
                                                       "fts").stderr.splitlines()
    (groove.work / "golden.yml").write_text(
        "queries:\n  - query: " + words[0] + "\n    expected:\n      - path: long.md\n",
        encoding="utf-8")
    measured = groove.run("eval", "--kb-path", str(groove.kb), "--golden", "golden.yml",
                          "--no-history")
    assert measured.exit_code == 0, measured.stderr
    assert f"groove: warning: eval measures the index as it is: {switch}" in \
        measured.stderr.splitlines()

    seen = recording(monkeypatch)
    on = groove.index_ok()
    lines = on.stderr.splitlines()
    assert "Embedding 1 chunks..." in lines  # only the long chunk waited for its pieces
    assert json.loads(groove.run("status", "--format", "json").stdout)["pieces_switch"] is None
    assert f"groove: note: {switch}" not in groove.run("search", words[0]).stderr.splitlines()
    # 300 tokens: pieces from 53 in steps of 51 until one ends at 300: 53, 104, 155, 206, 257
    assert pieces_of(300) == [(53, 111), (104, 162), (155, 213), (206, 264), (257, 300)]
    ids = [VOCAB[w] for w in words]
    assert sorted(seen) == sorted([CLS_ID, *ids[a:b], SEP_ID] for a, b in pieces_of(300))
    assert rows(groove.db, "SELECT embedding FROM vec_chunks WHERE chunk_id = ?", (cid,)) == first
    assert rows(groove.db, "SELECT pieces FROM chunks WHERE id = ?", (cid,)) == [(6,)]


def schema_4(db: Path) -> None:
    """Make the index what a groove before pieces left: schema 4, no pieces."""
    import apsw

    from groove_cli.store.runtime import load_vec
    con = apsw.Connection(str(db))
    load_vec(con)
    con.execute("DROP TABLE chunk_pieces; ALTER TABLE chunks DROP COLUMN pieces; "
                "DELETE FROM index_meta WHERE key = 'vector_pieces'; PRAGMA user_version = 4")
    con.close()


@pytest.mark.parametrize("pieces", [True, False])
def test_an_index_from_before_pieces_embeds_only_its_long_chunks_extra_pieces(
        groove: Groove, monkeypatch: pytest.MonkeyPatch, pieces: bool) -> None:
    words = filler(300)
    write(groove.kb, "long.md", " ".join(words) + "\n")
    groove.configure("vector_pieces = false\n")
    groove.index_ok()
    schema_4(groove.db)
    groove.configure(f"vector_pieces = {str(pieces).lower()}\n")
    seen = recording(monkeypatch)
    result = groove.index_ok()
    if not pieces:  # the long chunk is complete as it is: nothing to embed, no model loaded
        assert seen == [] and "Loading embedding model" not in result.stderr
        assert rows(groove.db, "SELECT pieces, count(*) FROM chunks GROUP BY pieces") == [
            (1, 5)]
        return
    # the migration marks complete every chunk with content tokens + 32 <= 64; the long
    # one (300 tokens) waits for its extra pieces, and only those are embedded
    assert "Embedding 1 chunks..." in result.stderr.splitlines()
    assert len(seen) == len(pieces_of(300))
    assert rows(groove.db, "SELECT pieces, count(*) FROM chunks GROUP BY pieces") == [
        (1, 4), (6, 1)]


# --------------------------------------------------------------------------- a hard kill

NOTES = 300


@pytest.fixture
def long_kb(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    """300 notes of one 300-token chunk each: 6 vectors a chunk, one chunk a model batch."""
    made = make_groove(workdir, tmp_path, tiny_model)
    made.configure(PIECES_ON)
    for i in range(NOTES):
        write(made.kb, f"d{i % 10}/n-{i:04d}.md", " ".join(filler(300, seed=i)) + "\n")
    return made


def piece_blobs(db: Path) -> dict[tuple[int, int], bytes]:
    try:
        return {(int(str(c)), int(str(p))): bytes(b)  # type: ignore[call-overload]
                for c, p, b in rows(db, "SELECT chunk_id, piece, embedding FROM chunk_pieces")}
    except Exception:  # the table does not exist yet
        return {}


def test_kill_during_the_fill_keeps_committed_pieces_and_the_rerun_embeds_only_the_rest(
        long_kb: Groove) -> None:
    proc = start_index(long_kb)
    # twenty chunks have all their pieces
    wait_until(proc, lambda: len(piece_blobs(long_kb.db)) >= 5 * 20, "pieces")
    kill_9(proc)
    committed = piece_blobs(long_kb.db)
    complete = {c for c, in rows(long_kb.db, "SELECT id FROM chunks WHERE pieces = 6")}
    assert 20 <= len(complete) < NOTES, "the kill landed after the fill"
    assert {c for c, _ in committed} == complete  # a chunk's pieces commit together
    status = json.loads(long_kb.run("status", "--format", "json").stdout)
    assert status["pending_vectors"] == NOTES - len(complete)

    rerun = long_kb.index()
    assert rerun.exit_code == 0, rerun.stderr
    left = NOTES - len(complete)
    lines = rerun.stderr.splitlines()
    assert f"Embedding {left} chunks..." in lines
    assert (f"groove: note: {left} chunk(s) exceed max_length 64 tokens; their text past the "
            f"window went into {5 * left} more vector(s)") in lines  # none embedded twice
    after = piece_blobs(long_kb.db)
    assert len(after) == 5 * NOTES
    assert {key: after[key] for key in committed} == committed
