"""`groove index` end to end (index.md §1, §4-7; cli.md §4) on a tiny local embedding model.

The model is an 8-dimensional embedding-table lookup with masked mean pooling, so every stored
vector can be computed by hand, and it loads in milliseconds. `[CLS]`, `[SEP]`, `[PAD]` and the
word "sky" have zero rows: a chunk made only of "sky" embeds to the zero vector (a degenerate
embedding, index.md §4). The tokenizer splits on whitespace, so `token_count` is the number of
words. The helpers here are shared with `test_status_doctor.py` and `test_index_interrupt.py`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import apsw
import numpy as np
import numpy.typing as npt
import pytest
import sqlite_vec
from onnx import TensorProto, helper, numpy_helper
from typer.testing import CliRunner, Result

from groove_cli import __version__, index_batches
from groove_cli.chunk import CHUNKER_VERSION, ChunkRules, chunker_fingerprint
from groove_cli.cli import app
from groove_cli.index import IndexOptions, index_kb
from tests.onnx_builders import VOCAB, model_dir

runner = CliRunner()

DIM = 8
MAX_LENGTH = 64
ZERO_WORD = "sky"
TINY_MODEL_TOML = f"""kind = "embedder"
pooling = "mean"
normalise = true
query_prefix = ""
passage_prefix = ""
max_length = {MAX_LENGTH}
dim = {DIM}
batch_size = 4
"""


def _table() -> npt.NDArray[np.float32]:
    table = np.random.default_rng(7).normal(size=(len(VOCAB), DIM)).astype(np.float32)
    for token in ("[PAD]", "[CLS]", "[SEP]", ZERO_WORD):
        table[VOCAB[token]] = 0.0
    return table


TABLE = _table()


def tiny_embedder_onnx(table: npt.NDArray[np.float32] = TABLE) -> bytes:
    """`last_hidden_state[b, s] = table[input_ids[b, s]]`; the mask is declared, as in exports."""
    dim = int(table.shape[1])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny-index-embedder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", dim])],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def expected_vector(text: str) -> npt.NDArray[np.float32]:
    """Hand computation of the tiny model: mean of the rows of [CLS] + words + [SEP], unit norm."""
    ids = [VOCAB["[CLS]"], *(VOCAB.get(w, VOCAB["[UNK]"]) for w in text.split()), VOCAB["[SEP]"]]
    mean = TABLE[ids].sum(axis=0) / len(ids)
    return np.asarray(mean / np.linalg.norm(mean), dtype=np.float32)


# --------------------------------------------------------------------------- the sample KB

CATS = ("the cat sat on the mat and the red cat sat on the blue mat "
        "by the green tree near the house")
DOGS = "the dog sat on the mat by the house near the blue sea"
BETA = ("a bird flies over the sea and a fish swims in the sea\n"
        "the tree by the house is green")
GAMMA = "the fish swims"
ALPHA_MD = f"---\ntitle: Alpha\ntags: [one, two]\n---\n## Cats\n\n{CATS}\n\n## Dogs\n\n{DOGS}\n"
KB_FILES = {
    "alpha.md": ALPHA_MD,
    "eng/search/beta.md": BETA + "\n",
    "ops/gamma.md": GAMMA + "\n",
}
# Quality (index.md §4): CATS is one line of >= 80 code points -> 1.0; DOGS one line of 30-79
# (and >= 50, so it is not merged into Cats) -> 1 - 0.3; BETA has a newline -> 1.0; GAMMA is one
# line under 30 -> 1 - 0.6 - 0.3.
# a heading counts as the first line of its chunk: the one-line Dogs section is not a stub
QUALITY = {"Cats": 1.0, "Dogs": 1.0, "beta": 1.0, "gamma": 1.0 - 0.6 - 0.3}
KB_DOCS, KB_CHUNKS = 3, 4


def write(kb: Path, rel: str, text: str) -> Path:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_kb(kb: Path, files: dict[str, str] = KB_FILES) -> None:
    for rel, text in files.items():
        write(kb, rel, text)


# --------------------------------------------------------------------------- reading the index


def connect(db: Path) -> apsw.Connection:
    """A read-only connection with sqlite-vec loaded, independent of groove's Store."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    return con


def rows(db: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    con = connect(db)
    try:
        return [tuple(row) for row in con.execute(sql, args)]
    finally:
        con.close()


def meta(db: Path) -> dict[str, str]:
    return {str(k): str(v) for k, v in rows(db, "SELECT key, value FROM index_meta")}


def document(db: Path, path: str) -> dict[str, object] | None:
    found = rows(db, "SELECT id, title, topic, category, depth, tags, date, content_hash, "
                     "size_bytes, last_indexed FROM documents WHERE path = ?", (path,))
    if not found:
        return None
    keys = ("id", "title", "topic", "category", "depth", "tags", "date", "content_hash",
            "size_bytes", "last_indexed")
    return dict(zip(keys, found[0], strict=True))


def chunk_ids(db: Path, path: str) -> list[int]:
    return [int(r[0]) for r in rows(  # type: ignore[call-overload]
        db, "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.path = ? ORDER BY c.chunk_index", (path,))]


def vector(db: Path, chunk_id: int) -> npt.NDArray[np.float32]:
    blob = rows(db, "SELECT embedding FROM vec_chunks WHERE chunk_id = ?", (chunk_id,))[0][0]
    assert isinstance(blob, bytes)
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def table_dump(db: Path) -> tuple[list[tuple[object, ...]], ...]:
    """Every indexed row (documents, chunks, vectors), to show that a run wrote nothing."""
    return (rows(db, "SELECT * FROM documents ORDER BY id"),
            rows(db, "SELECT * FROM chunks ORDER BY id"),
            rows(db, "SELECT chunk_id, embedding FROM vec_chunks ORDER BY chunk_id"))


def assert_consistent(db: Path, pending: Sequence[int] = ()) -> None:
    """Every chunk has exactly one row in each FTS table (trigram and word-level) and one
    vector (except the `pending` ones, still waiting for phase 2), and every document has
    chunks."""
    chunks = {r[0] for r in rows(db, "SELECT id FROM chunks")}
    assert {r[0] for r in rows(db, "SELECT rowid FROM fts_chunks")} == chunks
    assert {r[0] for r in rows(db, "SELECT rowid FROM fts_words")} == chunks
    assert {r[0] for r in rows(db, "SELECT chunk_id FROM vec_chunks")} == chunks - set(pending)
    assert rows(db, "SELECT path FROM documents d WHERE NOT EXISTS "
                    "(SELECT 1 FROM chunks c WHERE c.document_id = d.id)") == []


# --------------------------------------------------------------------------- running groove


class Counts(NamedTuple):
    """The numbers of the `Done` line (cli.md §4)."""

    docs: int
    updated: int
    renamed: int
    deleted: int
    skipped: int
    chunks: int


DURATION = r"(?:\d+ ms|\d\.\d s|\d+ s|\d+ min(?: \d+ s)?|\d+ h(?: \d+ min)?)"
"""A duration as the index lines write it (tests/test_durations.py)."""
DONE = re.compile(rf"Done in {DURATION}: (\d+) docs \((\d+) updated, (\d+) renamed, (\d+) deleted, "
                  r"(\d+) skipped\), (\d+) chunks")


def done(result: Result) -> Counts:
    """The counts of the run's `Done` line, which must be its last stderr line."""
    last = result.stderr.splitlines()[-1]
    match = DONE.fullmatch(last)
    assert match is not None, result.stderr
    return Counts(*(int(g) for g in match.groups()))


LOADING = "Loading embedding model: "


@dataclass(frozen=True)
class Groove:
    """A working directory with a groove.toml naming the tiny model, a KB and an index path."""

    work: Path
    kb: Path
    db: Path
    model: Path
    models_dir: Path

    def configure(self, extra: str = "") -> None:
        """Write groove.toml: the model and models cache, then `extra` (top-level keys first)."""
        text = (f"model = {json.dumps(str(self.model))}\n"
                f"models_dir = {json.dumps(str(self.models_dir))}\n{extra}")
        (self.work / "groove.toml").write_text(text, encoding="utf-8")

    def run(self, *args: str, db: Path | None = None) -> Result:
        return runner.invoke(app, ["--db", str(db or self.db), *args])

    def index(self, *args: str, kb: Path | None = None, db: Path | None = None) -> Result:
        return self.run("index", "--kb-path", str(kb or self.kb), *args, db=db)

    def index_ok(self, *args: str) -> Result:
        result = self.index(*args)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == ""
        return result

    def options(self, **changes: object) -> IndexOptions:
        values: dict[str, object] = {
            "kb": self.kb, "db": self.db, "model": str(self.model),
            "max_length": None, "models_dir": self.models_dir, "quiet": True}
        values.update(changes)
        return IndexOptions(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny embedder as a local model directory (models.md §3), built once."""
    folder = tmp_path_factory.mktemp("tiny-model") / "embedder"
    return model_dir(folder, tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()


def make_groove(work: Path, root: Path, model: Path) -> Groove:
    kb = root / "kb"
    kb.mkdir()
    groove = Groove(work, kb, root / "index.db", model, root / "models")
    groove.configure()
    return groove


@pytest.fixture
def groove(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    """The sample KB (3 documents, 4 chunks), not indexed yet."""
    made = make_groove(workdir, tmp_path, tiny_model)
    write_kb(made.kb)
    return made


@pytest.fixture
def indexed(groove: Groove) -> Groove:
    """The sample KB indexed once."""
    groove.index_ok()
    return groove


def in_order(lines: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether `expected` occurs in `lines` as a subsequence (same order, gaps allowed)."""
    it = iter(lines)
    return all(any(line == want for line in it) for want in expected)


# =========================================================================== first run


def test_sample_texts_fall_in_the_intended_quality_classes() -> None:
    assert len(CATS) >= 80 and "\n" not in CATS
    assert 50 <= len(DOGS) < 80 and "\n" not in DOGS
    assert "\n" in BETA and len(BETA) >= 30
    assert len(GAMMA) < 30


def test_first_run_lines_rows_and_meta(groove: Groove) -> None:
    result = groove.index_ok("--verbose")
    lines = result.stderr.splitlines()
    kb = groove.kb
    spec_order = [
        f"groove: note: loaded config: {groove.work / 'groove.toml'}",
        f"Indexing {kb}...",
        "Found 3 source files (extensions: md)",
        "  indexed: alpha.md (2 chunks)",
        "  indexed: eng/search/beta.md (1 chunks)",
        "  indexed: ops/gamma.md (1 chunks)",
        # phase 1 ends: full text first, then the model is loaded and the vectors fill in
        "Full text ready in <ms>ms: searches with --mode fts see every note",
        f"{LOADING}{groove.model} ({DIM} dim)...",
        "Embedding 4 chunks...",
    ]
    shown = [re.sub(rf"ready in {DURATION}:", "ready in <ms>ms:", line) for line in lines[:-1]]
    assert shown == spec_order
    assert done(result) == Counts(docs=3, updated=3, renamed=0, deleted=0, skipped=0, chunks=4)

    db = groove.db
    raw = ALPHA_MD.encode("utf-8")
    alpha = document(db, "alpha.md")
    assert alpha is not None
    assert {k: alpha[k] for k in ("title", "topic", "category", "depth", "tags", "date")} == {
        "title": "Alpha", "topic": None, "category": None, "depth": None,
        "tags": '["one", "two"]', "date": None}
    assert alpha["content_hash"] == hashlib.sha256(raw).hexdigest()
    assert alpha["size_bytes"] == len(raw)
    beta, gamma = document(db, "eng/search/beta.md"), document(db, "ops/gamma.md")
    assert beta is not None and gamma is not None
    assert (beta["title"], beta["category"], beta["topic"], beta["tags"]) == (
        "beta", "eng", "search", "[]")  # no frontmatter title, no heading: the file name
    assert (gamma["category"], gamma["topic"]) == ("ops", None)

    chunks = rows(db, "SELECT d.path, c.chunk_index, c.heading, c.level, c.ancestry, c.content, "
                      "c.context_text, c.token_count, c.quality_score FROM chunks c "
                      "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index")
    assert chunks == [
        ("alpha.md", 0, "Cats", 2, "[]", CATS, None, len(CATS.split()), QUALITY["Cats"]),
        ("alpha.md", 1, "Dogs", 2, "[]", DOGS, None, len(DOGS.split()), QUALITY["Dogs"]),
        ("eng/search/beta.md", 0, None, None, "[]", BETA, None, len(BETA.split()),
         QUALITY["beta"]),
        ("ops/gamma.md", 0, None, None, "[]", GAMMA, None, len(GAMMA.split()),
         pytest.approx(QUALITY["gamma"])),
    ]
    for path, text in (("alpha.md", CATS), ("eng/search/beta.md", BETA), ("ops/gamma.md", GAMMA)):
        got = vector(db, chunk_ids(db, path)[0])
        assert np.allclose(got, expected_vector(text), atol=1e-5)
    assert_consistent(db)

    recorded = meta(db)
    assert recorded["embedding_model"] == str(groove.model)
    assert (recorded["embedding_dim"], recorded["embedding_max_length"]) == (str(DIM),
                                                                              str(MAX_LENGTH))
    onnx = (groove.model / "model.onnx").read_bytes()
    assert recorded["embedding_model_sha256"] == hashlib.sha256(onnx).hexdigest()
    assert recorded["kb_path"] == str(kb.resolve())
    assert recorded["context_mode"] == "off"
    assert recorded["chunker_fingerprint"] == chunker_fingerprint(ChunkRules())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", recorded["last_indexed"])
    assert recorded["groove_version"] == __version__
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]


def test_empty_kb_indexes_nothing(groove: Groove, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = groove.index(kb=empty)
    assert result.exit_code == 0, result.stderr
    assert "Found 0 source files (extensions: md)" in result.stderr.splitlines()
    assert done(result) == Counts(0, 0, 0, 0, 0, 0)
    assert LOADING not in result.stderr


# =========================================================================== incremental runs


def test_unchanged_rerun_writes_nothing_and_does_not_load_the_model(indexed: Groove) -> None:
    before = table_dump(indexed.db)
    version = meta(indexed.db)["vectors_version"]
    result = indexed.index_ok("--verbose")
    assert done(result) == Counts(docs=3, updated=0, renamed=0, deleted=0, skipped=0, chunks=4)
    assert LOADING not in result.stderr
    assert not any(line.startswith("  ") for line in result.stderr.splitlines())
    assert table_dump(indexed.db) == before
    assert meta(indexed.db)["vectors_version"] == version


def test_changed_file_is_reembedded_and_others_keep_their_chunks(indexed: Groove) -> None:
    db = indexed.db
    alpha, gamma = chunk_ids(db, "alpha.md"), chunk_ids(db, "ops/gamma.md")
    beta = chunk_ids(db, "eng/search/beta.md")
    beta_doc = document(db, "eng/search/beta.md")
    new_text = "the red bird flies over the green tree and the blue house by the sea"
    raw = write(indexed.kb, "eng/search/beta.md", new_text + "\n").read_bytes()

    result = indexed.index_ok("--verbose")
    assert "  indexed: eng/search/beta.md (1 chunks)" in result.stderr.splitlines()
    assert done(result) == Counts(docs=3, updated=1, renamed=0, deleted=0, skipped=0, chunks=4)
    assert chunk_ids(db, "alpha.md") == alpha
    assert chunk_ids(db, "ops/gamma.md") == gamma
    new_beta = chunk_ids(db, "eng/search/beta.md")
    assert len(new_beta) == 1 and not set(new_beta) & set(beta)
    changed = document(db, "eng/search/beta.md")
    assert changed is not None and beta_doc is not None
    assert changed["id"] == beta_doc["id"]
    assert changed["content_hash"] == hashlib.sha256(raw).hexdigest()
    assert changed["size_bytes"] == len(raw)
    assert np.allclose(vector(db, new_beta[0]), expected_vector(new_text), atol=1e-5)
    assert rows(db, "SELECT content FROM chunks WHERE id = ?", (new_beta[0],)) == [(new_text,)]
    assert_consistent(db)


def test_renamed_file_reuses_its_rows_with_the_new_path_category_and_topic(
        indexed: Groove) -> None:
    db = indexed.db
    before = document(db, "eng/search/beta.md")
    ids = chunk_ids(db, "eng/search/beta.md")
    vec = vector(db, ids[0])
    (indexed.kb / "team" / "infra").mkdir(parents=True)
    (indexed.kb / "eng/search/beta.md").rename(indexed.kb / "team/infra/beta-moved.md")

    result = indexed.index_ok("--verbose")
    assert "  renamed: eng/search/beta.md -> team/infra/beta-moved.md" in result.stderr
    assert LOADING not in result.stderr
    assert done(result) == Counts(docs=3, updated=0, renamed=1, deleted=0, skipped=0, chunks=4)
    assert document(db, "eng/search/beta.md") is None
    after = document(db, "team/infra/beta-moved.md")
    assert after is not None and before is not None
    assert (after["id"], after["category"], after["topic"]) == (before["id"], "team", "infra")
    assert chunk_ids(db, "team/infra/beta-moved.md") == ids
    assert np.array_equal(vector(db, ids[0]), vec)
    assert_consistent(db)


def test_rename_keeps_a_frontmatter_topic_and_pairs_identical_files_in_order(
        groove: Groove) -> None:
    same = f"---\ntopic: pinned\n---\n{BETA}\n"
    write(groove.kb, "a/b/dup1.md", same)
    write(groove.kb, "a/b/dup2.md", same)
    groove.index_ok()
    db = groove.db
    first, second = document(db, "a/b/dup1.md"), document(db, "a/b/dup2.md")
    assert first is not None and second is not None
    assert first["topic"] == "pinned"
    # Orphans and new paths are both sorted; each orphan takes the first unpaired match.
    (groove.kb / "a/b/dup1.md").rename(groove.kb / "x1.md")
    (groove.kb / "a/b/dup2.md").rename(groove.kb / "x2.md")
    result = groove.index_ok()
    assert done(result) == Counts(docs=5, updated=0, renamed=2, deleted=0, skipped=0, chunks=6)
    x1, x2 = document(db, "x1.md"), document(db, "x2.md")
    assert x1 is not None and x2 is not None
    assert (x1["id"], x1["category"], x1["topic"]) == (first["id"], None, "pinned")
    assert (x2["id"], x2["category"], x2["topic"]) == (second["id"], None, "pinned")


def test_deleted_file_is_removed_with_its_fts_rows_and_vectors(indexed: Groove) -> None:
    db = indexed.db
    gone = chunk_ids(db, "ops/gamma.md")
    (indexed.kb / "ops/gamma.md").unlink()
    result = indexed.index_ok("--verbose")
    assert "  deleted: ops/gamma.md" in result.stderr.splitlines()
    assert done(result) == Counts(docs=2, updated=0, renamed=0, deleted=1, skipped=0, chunks=3)
    assert document(db, "ops/gamma.md") is None
    marks = ",".join("?" * len(gone))
    assert rows(db, f"SELECT id FROM chunks WHERE id IN ({marks})", tuple(gone)) == []
    for table in ("fts_chunks", "fts_words"):
        assert rows(db, f"SELECT rowid FROM {table} WHERE rowid IN ({marks})", tuple(gone)) == []
    assert rows(db, f"SELECT chunk_id FROM vec_chunks WHERE chunk_id IN ({marks})",
                tuple(gone)) == []
    assert_consistent(db)


def test_emptied_file_is_deleted_and_a_new_empty_file_is_skipped(indexed: Groove) -> None:
    write(indexed.kb, "alpha.md", "---\ntitle: Alpha\n---\n")
    write(indexed.kb, "blank.md", "\n\n")
    result = indexed.index_ok("--verbose")
    lines = result.stderr.splitlines()
    assert "  emptied: alpha.md" in lines
    assert "Skipping blank.md: no embeddable chunks" in lines
    assert done(result) == Counts(docs=2, updated=0, renamed=0, deleted=1, skipped=1, chunks=2)
    assert document(indexed.db, "alpha.md") is None
    assert document(indexed.db, "blank.md") is None
    assert_consistent(indexed.db)


def test_newly_ignored_file_is_deleted(indexed: Groove) -> None:
    write(indexed.kb, ".grooveignore", "# operations notes are private\nops/\n")
    result = indexed.index_ok("--verbose")
    lines = result.stderr.splitlines()
    assert f"Applying .grooveignore from {indexed.kb} (1 pattern)" in lines
    assert "Found 2 source files (extensions: md)" in lines
    assert "  deleted: ops/gamma.md" in lines
    assert done(result) == Counts(docs=2, updated=0, renamed=0, deleted=1, skipped=0, chunks=3)


def test_extension_no_longer_enabled_is_deleted(groove: Groove) -> None:
    groove.configure('[parsers]\nenabled = ["md", "txt"]\n')
    write(groove.kb, "notes.txt", "\ufeffthe tree by the house\r\nthe bird flies\r\n")
    first = groove.index_ok()
    assert "Found 4 source files (extensions: md, txt)" in first.stderr.splitlines()
    assert done(first) == Counts(docs=4, updated=4, renamed=0, deleted=0, skipped=0, chunks=5)
    # .txt (index.md §3): BOM stripped, CRLF -> LF, stripped; one chunk, no heading.
    assert rows(groove.db, "SELECT c.heading, c.content FROM chunks c JOIN documents d "
                           "ON d.id = c.document_id WHERE d.path = 'notes.txt'") == [
        (None, "the tree by the house\nthe bird flies")]

    groove.configure()
    second = groove.index_ok("--verbose")
    lines = second.stderr.splitlines()
    assert "Found 3 source files (extensions: md)" in lines
    assert "  deleted: notes.txt" in lines
    assert done(second) == Counts(docs=3, updated=0, renamed=0, deleted=1, skipped=0, chunks=4)


def test_frontmatter_only_change_takes_the_fast_path(indexed: Groove) -> None:
    db = indexed.db
    ids = chunk_ids(db, "alpha.md")
    vectors = [vector(db, cid) for cid in ids]
    lines_sql = "SELECT line_start, line_end FROM chunks WHERE id IN (?, ?) ORDER BY chunk_index"
    assert rows(db, lines_sql, tuple(ids)) == [(5, 7), (9, 11)]  # the heading .. the text
    text = ALPHA_MD.replace("title: Alpha\ntags: [one, two]",
                            "title: Alpha Prime\ntags: [three]\ndate: 2026-01-02\ndepth: 01")
    raw = write(indexed.kb, "alpha.md", text).read_bytes()

    result = indexed.index_ok("--verbose")
    assert "  indexed: alpha.md (2 chunks)" in result.stderr.splitlines()
    assert LOADING not in result.stderr
    assert done(result) == Counts(docs=3, updated=1, renamed=0, deleted=0, skipped=0, chunks=4)
    assert chunk_ids(db, "alpha.md") == ids
    assert all(np.array_equal(vector(db, c), v) for c, v in zip(ids, vectors, strict=True))
    doc = document(db, "alpha.md")
    assert doc is not None
    assert (doc["title"], doc["tags"], doc["date"], doc["depth"]) == (
        "Alpha Prime", '["three"]', "2026-01-02", "01")
    assert doc["content_hash"] == hashlib.sha256(raw).hexdigest()
    assert doc["size_bytes"] == len(raw)
    # two more frontmatter lines move every chunk down by two, without re-embedding
    assert rows(db, lines_sql, tuple(ids)) == [(7, 9), (11, 13)]


def test_force_rebuilds_every_file(indexed: Groove) -> None:
    db = indexed.db
    old = {r[0] for r in rows(db, "SELECT id FROM chunks")}
    result = indexed.index_ok("--force")
    assert f"{LOADING}{indexed.model} ({DIM} dim)..." in result.stderr.splitlines()
    assert done(result) == Counts(docs=3, updated=3, renamed=0, deleted=0, skipped=0, chunks=4)
    new = {r[0] for r in rows(db, "SELECT id FROM chunks")}
    assert len(new) == 4 and not new & old
    assert_consistent(db)


# =========================================================================== identity checks


def test_model_mismatch_is_refused_before_anything_is_loaded(indexed: Groove,
                                                             tmp_path: Path) -> None:
    before = table_dump(indexed.db)
    result = indexed.index("--model", "multilingual-e5-small")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.endswith(
        "groove: error: embedding model mismatch.\n"
        f"  DB was indexed with: {indexed.model} ({DIM} dim)\n"
        "  Current runtime:     multilingual-e5-small (384 dim)\n"
        "\n"
        f"Run `groove index --kb-path {indexed.kb.resolve()} --force --model multilingual-e5-small` "
        "to rebuild "
        "the index, or switch back to the previous model.\n")
    assert LOADING not in result.stderr and "Indexing" not in result.stderr
    # Nothing was converted or downloaded into the models cache.
    assert not (indexed.models_dir / "multilingual-e5-small").exists()
    assert table_dump(indexed.db) == before

    wide = model_dir(tmp_path / "wide", tiny_embedder_onnx(
        np.ones((len(VOCAB), 16), dtype=np.float32)), TINY_MODEL_TOML.replace("dim = 8",
                                                                             "dim = 16"))
    other = indexed.index("--model", str(wide))
    assert other.exit_code == 1
    assert (f"  DB was indexed with: {indexed.model} ({DIM} dim)\n"
            f"  Current runtime:     {wide} (16 dim)\n") in other.stderr


def test_the_rebuild_hint_is_a_command_that_runs_as_printed() -> None:
    # issue 28: the hint printed a literal `<path>`
    from groove_cli.runtime_model import model_mismatch_text, rebuild_command

    assert rebuild_command("/path/to/my notes", "--model", "bge-m3") == (
        "groove index --kb-path '/path/to/my notes' --force --model bge-m3")
    assert rebuild_command(None) == "groove index --force"
    assert "<path>" not in model_mismatch_text("a", 8, "b", 16)


def test_max_length_mismatch_then_force_records_the_new_value(indexed: Groove) -> None:
    indexed.configure("max_length = 32\n")
    result = indexed.index()
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.endswith(
        "groove: error: embedding max_length mismatch.\n"
        f"  DB was indexed with max_length {MAX_LENGTH}; current runtime uses 32.\n"
        "\n"
        f"Run `groove index --kb-path {indexed.kb.resolve()} --force` to rebuild the index, or "
        "set max_length "
        f"back to {MAX_LENGTH}.\n")
    assert LOADING not in result.stderr

    forced = indexed.index_ok("--force")
    assert done(forced).updated == 3
    assert meta(indexed.db)["embedding_max_length"] == "32"


def test_other_kb_path_is_refused_without_force(indexed: Groove, tmp_path: Path) -> None:
    other = tmp_path / "other-kb"
    write_kb(other, {"only.md": BETA + "\n"})
    result = indexed.index(kb=other)
    assert result.exit_code == 1
    assert result.stdout == ""
    recorded, new = indexed.kb.resolve(), other.resolve()
    assert result.stderr.endswith(
        f"groove: error: the index at {indexed.db} was built from {recorded}, not {new}.\n"
        f"  If the knowledge base moved, run `groove index --kb-path {new} --force` to rebuild "
        "the index for\n"
        "  the new location. Otherwise pass the --db of this knowledge base's own index.\n")
    assert document(indexed.db, "alpha.md") is not None

    forced = indexed.index("--force", kb=other)
    assert forced.exit_code == 0, forced.stderr
    assert done(forced) == Counts(docs=1, updated=1, renamed=0, deleted=0, skipped=0, chunks=1)
    assert meta(indexed.db)["kb_path"] == str(new)


def test_vector_table_of_another_dimension_is_refused(indexed: Groove) -> None:
    con = apsw.Connection(str(indexed.db))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute("DROP TABLE vec_chunks")
    con.execute("CREATE VIRTUAL TABLE vec_chunks USING vec0(chunk_id INTEGER PRIMARY KEY, "
                "embedding float[4] distance_metric=cosine)")
    con.close()
    result = indexed.index()
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"groove: error: vec_chunks declared float[4] but runtime dim is {DIM}. Run index with "
        "--force to rebuild.")
    assert LOADING not in result.stderr


def test_changed_model_files_with_the_same_identity_only_warn(groove: Groove,
                                                             tmp_path: Path) -> None:
    model = tmp_path / "model-copy"
    shutil.copytree(groove.model, model)
    copy = Groove(groove.work, groove.kb, groove.db, model.resolve(), groove.models_dir)
    copy.configure()
    copy.index_ok()
    (model / "model.onnx").write_bytes(tiny_embedder_onnx(TABLE[::-1].copy()))
    result = copy.index_ok()
    assert (f"groove: warning: the model files for {model.resolve()} differ from those this "
            "index was built with; rankings may shift slightly. Run `groove index --force` to "
            "rebuild.") in result.stderr.splitlines()
    assert done(result) == Counts(docs=3, updated=0, renamed=0, deleted=0, skipped=0, chunks=4)


def test_a_second_indexer_is_refused_while_the_lock_is_held(indexed: Groove) -> None:
    lock = indexed.db.with_name(indexed.db.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = indexed.index()
    finally:
        os.close(fd)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"groove: error: another groove index is running on {indexed.db}")
    assert indexed.index().exit_code == 0


# =========================================================================== chunker and context mode


def test_changed_exclude_headings_rereads_every_file(indexed: Groove) -> None:
    db = indexed.db
    beta, gamma = chunk_ids(db, "eng/search/beta.md"), chunk_ids(db, "ops/gamma.md")
    cats = chunk_ids(db, "alpha.md")[0]
    indexed.configure('exclude_headings = ["Dogs"]\n')
    result = indexed.index_ok("--verbose")
    assert ("groove: note: chunking settings changed since the last run; every file is re-read"
            in result.stderr.splitlines())
    # alpha's chunk list changed (Dogs dropped): re-embedded; the others take the fast path.
    assert done(result) == Counts(docs=3, updated=1, renamed=0, deleted=0, skipped=0, chunks=3)
    new_alpha = chunk_ids(db, "alpha.md")
    assert len(new_alpha) == 1 and new_alpha[0] != cats
    assert rows(db, "SELECT heading FROM chunks WHERE id = ?", (new_alpha[0],)) == [("Cats",)]
    assert chunk_ids(db, "eng/search/beta.md") == beta
    assert chunk_ids(db, "ops/gamma.md") == gamma
    expected = hashlib.sha256(json.dumps(
        [CHUNKER_VERSION, ["Dogs"], [2, 3, 4, 5, 6], 700, False]).encode()).hexdigest()
    assert meta(db)["chunker_fingerprint"] == expected
    assert_consistent(db)

    again = indexed.index_ok()
    assert "chunking settings changed" not in again.stderr
    assert done(again).updated == 0


def test_absent_fingerprint_rereads_and_rewrites_quality_without_reembedding(
        indexed: Groove) -> None:
    db = indexed.db
    ids = {path: chunk_ids(db, path) for path in KB_FILES}
    con = apsw.Connection(str(db))
    con.execute("DELETE FROM index_meta WHERE key = 'chunker_fingerprint'")
    con.execute("UPDATE chunks SET quality_score = 0.5")
    con.close()

    result = indexed.index_ok()
    assert ("groove: note: chunking settings changed since the last run; every file is re-read"
            in result.stderr.splitlines())
    assert LOADING not in result.stderr
    assert done(result) == Counts(docs=3, updated=0, renamed=0, deleted=0, skipped=0, chunks=4)
    assert {path: chunk_ids(db, path) for path in KB_FILES} == ids
    scores = [r[0] for r in rows(db, "SELECT c.quality_score FROM chunks c JOIN documents d "
                                     "ON d.id = c.document_id ORDER BY d.path, c.chunk_index")]
    assert scores == pytest.approx([QUALITY["Cats"], QUALITY["Dogs"], QUALITY["beta"],
                                    QUALITY["gamma"]])
    assert meta(db)["chunker_fingerprint"] == chunker_fingerprint(ChunkRules())


def test_contextual_mode_is_adopted_by_an_empty_index_and_kept_once_it_has_chunks(
        groove: Groove, tmp_path: Path) -> None:
    kb = groove.kb
    shutil.rmtree(kb)
    kb.mkdir()
    groove.index_ok()  # an empty index, context mode 'off'
    assert meta(groove.db)["context_mode"] == "off"

    write(kb, "guide.md", f"---\ntitle: Guide\n---\n## Setup\n\n{CATS}\n")
    groove.configure("[contextual]\nenabled = true\n")
    adopted = groove.index_ok()
    assert ("groove: note: index is empty; adopting 'static' for empty index (was 'off')."
            in adopted.stderr.splitlines())
    assert meta(groove.db)["context_mode"] == "static"
    (cid,) = chunk_ids(groove.db, "guide.md")
    assert rows(groove.db, "SELECT context_text FROM chunks WHERE id = ?", (cid,)) == [
        ("Guide > Setup",)]
    # Static mode embeds "{context}\n\n{content}" (index.md §4).
    assert np.allclose(vector(groove.db, cid), expected_vector(f"Guide > Setup\n\n{CATS}"),
                       atol=1e-5)

    groove.configure()
    kept = groove.index_ok()
    assert ("groove: warning: [contextual] config expects 'off' mode but this index was built "
            "with 'static'. Run `groove index --force` to migrate; continuing in 'static' mode."
            in kept.stderr.splitlines())
    assert meta(groove.db)["context_mode"] == "static"
    assert done(kept) == Counts(docs=1, updated=0, renamed=0, deleted=0, skipped=0, chunks=1)


def test_static_mode_rename_rewrites_the_breadcrumb(groove: Groove) -> None:
    groove.configure("[contextual]\nenabled = true\n")
    write(groove.kb, "old-name.md", f"## Setup\n\n{CATS}\n")
    groove.index_ok()
    db = groove.db
    before = document(db, "old-name.md")
    (old_id,) = chunk_ids(db, "old-name.md")
    assert rows(db, "SELECT context_text FROM chunks WHERE id = ?", (old_id,)) == [
        ("old name > Setup",)]

    (groove.kb / "old-name.md").rename(groove.kb / "new_name.md")
    result = groove.index_ok()
    counts = done(result)
    assert (counts.renamed, counts.deleted, counts.docs) == (1, 0, 4)
    after = document(db, "new_name.md")
    assert after is not None and before is not None and after["id"] == before["id"]
    (new_id,) = chunk_ids(db, "new_name.md")
    assert new_id != old_id
    assert rows(db, "SELECT context_text FROM chunks WHERE id = ?", (new_id,)) == [
        ("new name > Setup",)]
    assert np.allclose(vector(db, new_id), expected_vector(f"new name > Setup\n\n{CATS}"),
                       atol=1e-5)
    assert_consistent(db)


# =========================================================================== skipped and refused files


def test_too_large_and_undecodable_files_are_skipped_and_keep_their_rows(
        indexed: Groove) -> None:
    before = table_dump(indexed.db)
    limit = 50 * 1024 * 1024
    os.truncate(indexed.kb / "eng/search/beta.md", limit + 1)  # sparse: no 50 MiB written
    (indexed.kb / "ops/gamma.md").write_bytes(b"\xff\xfe the fish swims\n")
    (indexed.kb / "new-bad.md").write_bytes(b"caf\xe9\n")

    result = indexed.index_ok()
    lines = result.stderr.splitlines()
    assert (f"Skipping eng/search/beta.md: text file too large ({limit + 1} bytes > {limit} "
            "limit)") in lines
    assert any(line.startswith("Skipping ops/gamma.md: not valid UTF-8") for line in lines)
    assert any(line.startswith("Skipping new-bad.md: not valid UTF-8") for line in lines)
    assert done(result) == Counts(docs=3, updated=0, renamed=0, deleted=0, skipped=3, chunks=4)
    assert table_dump(indexed.db) == before


def test_symbolic_and_hard_links_are_refused_and_count_as_not_seen(indexed: Groove) -> None:
    kb = indexed.kb
    os.symlink(kb / "alpha.md", kb / "link.md")
    (kb / "ops/gamma.md").unlink()
    os.symlink(kb / "eng/search/beta.md", kb / "ops/gamma.md")
    result = indexed.index_ok("--verbose")
    lines = result.stderr.splitlines()
    assert "Skipping link.md: refused symbolic link" in lines
    assert "Skipping ops/gamma.md: refused symbolic link" in lines
    assert "Found 2 source files (extensions: md)" in lines
    assert "  deleted: ops/gamma.md" in lines
    assert done(result) == Counts(docs=2, updated=0, renamed=0, deleted=1, skipped=0, chunks=3)

    os.link(kb / "alpha.md", kb / "hard.md")
    hard = indexed.index_ok()
    lines = hard.stderr.splitlines()
    assert "Skipping alpha.md: refused hard link" in lines
    assert "Skipping hard.md: refused hard link" in lines
    assert done(hard) == Counts(docs=1, updated=0, renamed=0, deleted=1, skipped=0, chunks=1)


def test_degenerate_embedding_skips_the_file_and_drops_its_rows(indexed: Groove) -> None:
    # Phase 1 has replaced gamma's rows before its vector is computed, so a degenerate
    # embedding drops the document (index.md §4); the next run reads it again.
    write(indexed.kb, "ops/gamma.md", f"{ZERO_WORD} {ZERO_WORD}\n")
    write(indexed.kb, "zero.md", f"{ZERO_WORD}\n")
    result = indexed.index_ok()
    lines = result.stderr.splitlines()
    assert "Skipping ops/gamma.md: degenerate embedding" in lines
    assert "Skipping zero.md: degenerate embedding" in lines
    assert done(result) == Counts(docs=2, updated=0, renamed=0, deleted=0, skipped=2, chunks=3)
    assert document(indexed.db, "ops/gamma.md") is None
    assert document(indexed.db, "zero.md") is None
    assert_consistent(indexed.db)


def test_truncation_note_and_untruncated_token_count(groove: Groove) -> None:
    words = ("the cat sat on the mat " * 12).split()  # 72 words: 74 tokens with [CLS], [SEP]
    write(groove.kb, "long.md", " ".join(words) + "\n")
    groove.configure("vector_pieces = true\n")  # off by default (index.md §4)
    result = groove.index_ok()
    assert (f"groove: note: 1 chunk(s) exceed max_length {MAX_LENGTH} tokens; their text past "
            "the window went into 1 more vector(s)") in result.stderr.splitlines()
    (cid,) = chunk_ids(groove.db, "long.md")
    assert rows(groove.db, "SELECT token_count FROM chunks WHERE id = ?", (cid,)) == [(72,)]
    # The first piece: [CLS] + the first 64 - 2 words + [SEP]. One extra piece (index.md §4):
    # 64 - 2 specials - 4 seam tokens = 58 a piece, overlap 58 // 8 = 7, the first piece
    # surely covers 60 words, so it holds words 53..71
    assert np.allclose(vector(groove.db, cid),
                       expected_vector(" ".join(words[: MAX_LENGTH - 2])), atol=1e-5)
    ((blob,),) = rows(groove.db, "SELECT embedding FROM chunk_pieces WHERE chunk_id = ?", (cid,))
    assert isinstance(blob, bytes)
    assert np.allclose(np.frombuffer(blob, dtype="<f4"), expected_vector(" ".join(words[53:])),
                       atol=1e-5)
    groove.configure("vector_pieces = false\n")  # truncated again, the extra piece deleted
    again = groove.index_ok()
    assert (f"groove: note: 1 chunk(s) exceed max_length {MAX_LENGTH} tokens and were "
            "truncated for embedding") not in again.stderr.splitlines()  # nothing re-embedded
    assert rows(groove.db, "SELECT count(*) FROM chunk_pieces") == [(0,)]


# =========================================================================== transactions


def test_files_are_committed_whole_a_few_to_a_transaction(
        groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_batches, "FILES_PER_TRANSACTION", 4)
    shutil.rmtree(groove.kb)
    for i in range(10):
        write(groove.kb, f"notes/n{i}.md", f"note {i}: {BETA}\n")
    observed: list[tuple[int, ...]] = []

    def probe() -> bool:
        """Called between files: another connection sees whole files only, 4 more at a time."""
        con = connect(groove.db)
        try:
            observed.append(tuple(int(str(con.execute(sql).fetchall()[0][0])) for sql in (
                "SELECT count(*) FROM documents", "SELECT count(*) FROM chunks",
                "SELECT count(*) FROM (SELECT rowid FROM fts_chunks)",
                "SELECT count(*) FROM (SELECT rowid FROM fts_words)",
                "SELECT count(*) FROM vec_chunks")))
        finally:
            con.close()
        return False

    report = index_kb(groove.options(), should_stop=probe)
    assert (report.documents, report.updated, report.interrupted) == (10, 10, False)
    # Phase 1, between files: whole files only (one chunk per note), committed 4 files at a
    # time, no vectors yet. Phase 2, before counting tokens, then between model batches
    # (batch_size 4) and while one runs (polled, so how often depends on the machine): every
    # note, vectors committed a batch at a time.
    assert observed[:10] == [(n, n, n, n, 0) for n in (0, 0, 0, 0, 4, 4, 4, 4, 8, 8)]
    phase_2 = [seen for i, seen in enumerate(observed[10:]) if i == 0 or seen != observed[9 + i]]
    assert phase_2 == [(10, 10, 10, 10, vectors) for vectors in (0, 4, 8)]


def test_interrupted_run_keeps_old_rows_skips_deletions_and_the_next_run_finishes(
        indexed: Groove) -> None:
    db = indexed.db
    stamp = meta(db)["last_indexed"]
    beta = document(db, "eng/search/beta.md")
    (indexed.kb / "ops/gamma.md").unlink()
    write(indexed.kb, "delta.md", f"{DOGS}\n")
    write(indexed.kb, "eng/search/beta.md", "the tree by the green house\n")
    write(indexed.kb, "epsilon.md", f"{CATS}\n")

    checks: list[None] = []

    def after_delta() -> bool:
        """Called before each file: the third call comes once delta.md is written."""
        checks.append(None)
        return len(checks) == 3

    report = index_kb(indexed.options(), should_stop=after_delta)
    # Files in path order: alpha.md (unchanged), delta.md (written), then the stop, which
    # commits delta.md's open transaction.
    assert (report.interrupted, report.processed, report.total) == (True, 2, 4)
    assert document(db, "delta.md") is not None
    assert document(db, "eng/search/beta.md") == beta
    assert document(db, "epsilon.md") is None
    assert document(db, "ops/gamma.md") is not None  # the deletion step was skipped
    assert meta(db)["last_indexed"] == stamp
    assert_consistent(db, pending=chunk_ids(db, "delta.md"))  # phase 2 did not start

    result = indexed.index_ok()
    assert done(result) == Counts(docs=4, updated=2, renamed=0, deleted=1, skipped=0, chunks=5)
    assert document(db, "ops/gamma.md") is None


def test_backfill_repairs_a_missing_fts_row(indexed: Groove) -> None:
    (cid,) = chunk_ids(indexed.db, "ops/gamma.md")
    con = apsw.Connection(str(indexed.db))
    con.execute("DELETE FROM fts_chunks WHERE rowid = ?", (cid,))
    con.close()
    result = indexed.index_ok()
    assert "Backfilled 1 chunks into FTS index" in result.stderr.splitlines()
    assert_consistent(indexed.db)


def test_backfill_repairs_missing_rows_of_either_fts_table(indexed: Groove) -> None:
    (gamma,) = chunk_ids(indexed.db, "ops/gamma.md")
    (beta,) = chunk_ids(indexed.db, "eng/search/beta.md")
    con = apsw.Connection(str(indexed.db))
    con.execute("DELETE FROM fts_words WHERE rowid = ?", (gamma,))
    for table in ("fts_chunks", "fts_words"):  # both rows of one chunk: still one repair
        con.execute(f"DELETE FROM {table} WHERE rowid = ?", (beta,))
    con.close()
    result = indexed.index_ok()
    assert "Backfilled 2 chunks into FTS index" in result.stderr.splitlines()
    assert_consistent(indexed.db)
    # the repaired word rows are searchable: "swim" stems like the "swims" of BETA and GAMMA
    found = rows(indexed.db, "SELECT rowid FROM fts_words WHERE fts_words MATCH ?", ('"swim"',))
    assert sorted(found) == sorted([(beta,), (gamma,)])


# =========================================================================== command line


def test_quiet_shows_only_indexing_found_done_and_warnings(groove: Groove) -> None:
    write(groove.kb, "bad.md", f"---\ntitle: [a, b]\n---\n{CATS}\n")
    result = groove.index_ok("--quiet")
    lines = result.stderr.splitlines()
    assert lines[0] == f"Indexing {groove.kb}..."
    assert lines[1] == "Found 4 source files (extensions: md)"
    assert lines[2] == ('groove: warning: failed to parse YAML frontmatter in bad.md: field "title" '
                        "must be a scalar, got a sequence")
    assert len(lines) == 4
    assert done(result) == Counts(docs=4, updated=4, renamed=0, deleted=0, skipped=0, chunks=5)


def test_verbose_lists_every_file(groove: Groove) -> None:
    result = groove.index_ok("--verbose")
    indexed = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    assert indexed == ["  indexed: alpha.md (2 chunks)", "  indexed: eng/search/beta.md (1 chunks)",
                       "  indexed: ops/gamma.md (1 chunks)"]
    plain = groove.index_ok("--force")
    assert not any(line.startswith("  ") for line in plain.stderr.splitlines())


@pytest.mark.parametrize("flags", [("--quiet", "--verbose"), ("--quiet", "--progress")])
def test_quiet_conflicts_are_usage_errors(groove: Groove, flags: tuple[str, ...]) -> None:
    result = groove.index(*flags)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--quiet conflicts with --progress and --verbose" in result.stderr
    assert not groove.db.exists()


def test_missing_kb_path_is_a_usage_error(groove: Groove) -> None:
    for args in (["index"], ["--db", str(groove.db), "index"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr.splitlines()[-1] == (
            "groove: error: --kb-path is required: no knowledge base found from the working "
            "folder (pass --kb-path or -c NAME, set kb_path in groove.toml, or run inside an "
            "indexed KB)")
    assert not groove.db.exists()


def test_plain_progress_lines(groove: Groove) -> None:
    result = groove.index_ok("--progress")
    progress = [line for line in result.stderr.splitlines() if line.startswith("Progress: ")]
    # 3 files: a line every max(1, 3 // 20) = 1 file.
    assert progress == ["Progress: 1/3 (33%)", "Progress: 2/3 (66%)", "Progress: 3/3 (100%)"]


# =========================================================================== full-text segments


def segments(db: Path) -> dict[str, int]:
    """Segments per full-text table (each write transaction adds one until they are merged)."""
    return {t: rows(db, f"SELECT count(DISTINCT segid) FROM {t}_idx")[0][0]
            for t in ("fts_chunks", "fts_words")}


def test_a_run_leaves_each_full_text_table_in_one_segment(groove: Groove) -> None:
    # one transaction per file: without the merge, 12 files leave several segments
    write_kb(groove.kb, {f"notes/n{i:02}.md": f"# Note {i}\n\n{CATS} {i}\n" for i in range(12)})
    groove.index_ok()
    assert segments(groove.db) == {"fts_chunks": 1, "fts_words": 1}
    write(groove.kb, "notes/n03.md", f"# Note 3\n\n{DOGS}\n")
    groove.index_ok()
    assert segments(groove.db) == {"fts_chunks": 1, "fts_words": 1}


def test_large_indexes_merge_only_after_a_fair_share_of_changes() -> None:
    from groove_cli.index import worth_optimizing

    assert worth_optimizing(0, 500, 20_000)  # small: always (a no-op when already merged)
    assert not worth_optimizing(9, 1_000, 20_001)  # 0.9 % of the documents changed
    assert worth_optimizing(10, 1_000, 20_001)  # 1 %
