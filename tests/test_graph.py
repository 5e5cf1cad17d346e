"""`groove graph` (retrieve/graph.py): a tiny KB indexed with a hand-made embedder whose words
are unit vectors (cat e0, dog e1, fish e2, bird e3, every other token 0), so each note's
direction, and every cosine, can be worked out by hand:

    ops/backup.md   cat              → e0
    ops/restore.md  cat cat dog      → (2e0 + e1)/√5      backup 0.8944
    ops/dr.md       dog dog cat (×2) → (e0 + 2e1)/√5      restore 0.8, backup 0.4472
    ops/bird.md     bird dog         → (e1 + e3)/√2       dr 0.6325, restore 0.3162
    eng/fish.md     fish             → e2
    misc/mixed.md   fish | bird      → e2 and e3 (two sections)

The index is real (SQLite, the snapshot `index` writes); nothing is mocked.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli.cli import app
from groove_cli.retrieve.graph import dot_quote
from tests.onnx_builders import VOCAB, model_dir
from tests.test_index import TINY_MODEL_TOML, tiny_embedder_onnx

runner = CliRunner()
BASIS = {"cat": 0, "dog": 1, "fish": 2, "bird": 3}


def _table() -> np.ndarray:
    table = np.zeros((len(VOCAB), 8), dtype=np.float32)
    for word, axis in BASIS.items():
        table[VOCAB[word], axis] = 1.0
    return table


NOTES = {
    "ops/backup.md": "cat " * 20,
    "ops/restore.md": "cat cat dog " * 8,
    "ops/dr.md": "## One\n\n" + "dog dog cat " * 8 + "\n\n## Two\n\n" + "dog dog cat " * 8,
    "ops/bird.md": "bird dog " * 10,
    "eng/fish.md": "fish " * 20,
    "misc/mixed.md": "## Fish\n\n" + "fish " * 20 + "\n\n## Bird\n\n" + "bird " * 20,
}
R5 = math.sqrt(5)
BACKUP_RESTORE = 2 / R5
RESTORE_DR = 0.8
DR_BIRD = 2 / (R5 * math.sqrt(2))


@pytest.fixture(scope="module")
def tiny_kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(kb, index, model folder): the notes above, indexed once."""
    root = tmp_path_factory.mktemp("graph")
    model = model_dir(root / "model", tiny_embedder_onnx(_table()), TINY_MODEL_TOML)
    kb = root / "kb"
    for rel, text in NOTES.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text.strip() + "\n", encoding="utf-8")
    db = root / "index.db"
    with groove_cli.open(kb, db=db, model=str(model), models_dir=str(root / "models")) as index:
        index.index()
    return kb, db, model


def open_kb(tiny_kb: tuple[Path, Path, Path]) -> groove_cli.Index:
    kb, db, model = tiny_kb
    return groove_cli.open(kb, db=db, model=str(model), models_dir=str(kb.parent / "models"))


def edges(graph: groove_cli.Index | object) -> dict[tuple[str, str], float]:
    document = graph.to_json()  # type: ignore[attr-defined]
    return {(e["source"], e["target"]): e["similarity"] for e in document["edges"]}


def test_depth_two_from_backup(tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        graph = index.graph("ops/backup.md", depth=2, fan_out=5, min_similarity=0.5)
    assert [(n.id, n.depth) for n in graph.nodes] == [
        ("ops/backup.md", 0), ("ops/restore.md", 1), ("ops/dr.md", 2)]
    assert edges(graph) == pytest.approx({("ops/backup.md", "ops/restore.md"): BACKUP_RESTORE,
                                          ("ops/restore.md", "ops/dr.md"): RESTORE_DR}, abs=1e-4)
    assert not graph.truncated and graph.left_out == 0


def test_depth_three_reaches_bird_and_a_lower_threshold_more(
        tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        deeper = index.graph("ops/backup.md", depth=3, min_similarity=0.5)
        lower = index.graph("ops/backup.md", depth=1, min_similarity=0.4)
    assert [n.id for n in deeper.nodes][-1] == "ops/bird.md"
    assert edges(deeper)[("ops/dr.md", "ops/bird.md")] == pytest.approx(DR_BIRD, abs=1e-4)
    # 0.4 lets dr (0.4472) in at depth 1, the more similar restore first
    assert [n.id for n in lower.nodes] == ["ops/backup.md", "ops/dr.md", "ops/restore.md"]
    assert list(edges(lower)) == [("ops/backup.md", "ops/restore.md"),
                                  ("ops/backup.md", "ops/dr.md")]


def test_bounds_are_enforced_and_reported(tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        capped = index.graph("ops/backup.md", depth=2, max_nodes=2)
        one = index.graph("ops/backup.md", depth=1, fan_out=1, min_similarity=0.4)
        excluded = index.graph("ops/backup.md", exclude_paths=["ops/rest*"])
    assert [n.id for n in capped.nodes] == ["ops/backup.md", "ops/restore.md"]
    assert capped.truncated and capped.left_out == 1
    assert capped.to_json()["truncated"] is True
    assert [n.id for n in one.nodes] == ["ops/backup.md", "ops/restore.md"]
    assert [n.id for n in excluded.nodes] == ["ops/backup.md"] and excluded.edges == ()


def test_chunk_nodes_without_dedup(tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        graph = index.graph("ops/backup.md", depth=2, dedup_by_path=False)
    assert [(n.path, n.depth) for n in graph.nodes] == [
        ("ops/backup.md", 0), ("ops/restore.md", 1), ("ops/dr.md", 2), ("ops/dr.md", 2)]
    sections = [n for n in graph.nodes if n.path == "ops/dr.md"]
    assert [n.heading for n in sections] == ["One", "Two"]
    assert [n.id for n in sections] == [f"ops/dr.md:{n.line_start}" for n in sections]
    assert sections[0].line_start == 1 and sections[1].line_start is not None
    assert sections[1].line_start > 1


def test_seed_all_takes_the_best_chunk_centroid_the_mean(
        tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        every = index.graph("misc/mixed.md", depth=1, min_similarity=0.45)
        centroid = index.graph("misc/mixed.md", depth=1, min_similarity=0.45, seed="centroid")
    assert edges(every) == pytest.approx({("misc/mixed.md", "eng/fish.md"): 1.0,
                                          ("misc/mixed.md", "ops/bird.md"): 1 / math.sqrt(2)},
                                         abs=1e-4)
    assert edges(centroid) == pytest.approx({("misc/mixed.md", "eng/fish.md"): 1 / math.sqrt(2),
                                             ("misc/mixed.md", "ops/bird.md"): 0.5}, abs=1e-4)


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"depth": 0}, "depth 0 must be a whole number from 1 to 5"),
    ({"fan_out": 51}, "fan_out 51 must be a whole number from 1 to 50"),
    ({"max_nodes": 501}, "max_nodes 501 must be a whole number from 1 to 500"),
    ({"min_similarity": 2.0}, "min_similarity 2.0 must be a number from -1 to 1"),
    ({"seed": "middle"}, "unknown seed 'middle'"),
    ({"exclude_paths": ["{a"]}, 'invalid path_glob pattern: "{a"'),
])
def test_bad_bounds_are_one_line_errors(tiny_kb: tuple[Path, Path, Path],
                                        kwargs: dict[str, object], problem: str) -> None:
    with open_kb(tiny_kb) as index, pytest.raises(groove_cli.GrooveError) as caught:
        index.graph("ops/backup.md", **kwargs)  # type: ignore[arg-type]
    assert caught.value.message == problem


def test_a_start_outside_the_index_is_refused(tiny_kb: tuple[Path, Path, Path]) -> None:
    with open_kb(tiny_kb) as index:
        for start in ("../etc/passwd", "/etc/passwd", "ops/missing.md"):
            with pytest.raises(groove_cli.GrooveError) as caught:
                index.graph(start)
            assert "is not a note with vectors in this index" in caught.value.message


def cli(tiny_kb: tuple[Path, Path, Path], *args: str) -> tuple[int, str, str]:
    kb, db, model = tiny_kb
    (kb.parent / "groove.toml").write_text(
        f"model = {json.dumps(str(model))}\nmodels_dir = {json.dumps(str(kb.parent / 'models'))}\n",
        encoding="utf-8")
    result = runner.invoke(app, ["--config", str(kb.parent / "groove.toml"), "--db", str(db),
                                 "graph", "--kb-path", str(kb), *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_text_and_dot(tiny_kb: tuple[Path, Path, Path]) -> None:
    code, out, err = cli(tiny_kb, "--start", "ops/backup.md", "--depth", "2", "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert [n["id"] for n in document["nodes"]] == ["ops/backup.md", "ops/restore.md",
                                                    "ops/dr.md"]
    assert document["edges"] == [
        {"source": "ops/backup.md", "target": "ops/restore.md", "similarity": 0.8944},
        {"source": "ops/restore.md", "target": "ops/dr.md", "similarity": 0.8}]
    assert document["truncated"] is False and document["max_nodes"] == 50
    code, out, _ = cli(tiny_kb, "--start", "ops/backup.md")
    assert out.splitlines() == ["ops/backup.md  (start)",
                                "  ops/restore.md  (0.89 from ops/backup.md)",
                                "    ops/dr.md  (0.80 from ops/restore.md)"]
    code, out, _ = cli(tiny_kb, "--start", "ops/backup.md", "--format", "dot")
    assert out.startswith('graph "groove" {') and '"ops/backup.md" -- "ops/restore.md"' in out


def test_cli_svg_is_valid_svg(tiny_kb: tuple[Path, Path, Path]) -> None:
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    code, out, err = cli(tiny_kb, "--start", "ops/backup.md", "--format", "svg")
    assert code == 0, err
    root = ET.fromstring(out[out.index("<svg"):])
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = {t.text for t in root.iter("{http://www.w3.org/2000/svg}title")}
    assert {"ops/backup.md", "ops/restore.md", "ops/dr.md"} <= titles


def test_cli_svg_without_dot_says_to_install_graphviz(
        tiny_kb: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    code, out, err = cli(tiny_kb, "--start", "ops/backup.md", "--format", "svg")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "groove: error: --format svg needs Graphviz's `dot` program, which is not on PATH",
        "groove: hint: install Graphviz: apt install graphviz (Debian, Ubuntu) or brew install "
        "graphviz (macOS); --format dot needs neither"]


def test_cli_bad_start_is_one_line(tiny_kb: tuple[Path, Path, Path]) -> None:
    code, out, err = cli(tiny_kb, "--start", "ops/nope.md", "--format", "json")
    assert code == 1 and out == ""
    assert err.splitlines()[0] == ("groove: error: 'ops/nope.md' is not a note with vectors in "
                                   "this index")


def test_dot_quoting_escapes_quotes_backslashes_and_newlines() -> None:
    assert dot_quote('a "b"\\c\nd\x01') == '"a \\"b\\"\\\\c\\nd"'


def test_the_same_graph_from_a_postgres_store(tiny_kb: tuple[Path, Path, Path], pg_url: str,
                                              pg_kb: str) -> None:
    """Postgres's HNSW store keeps no snapshot: the graph reads every vector once, and finds
    what the SQLite index finds."""
    kb, _, model = tiny_kb
    settings = {"model": str(model), "models_dir": str(kb.parent / "models"),
                "store.kb": pg_kb}
    with groove_cli.open(kb, db=pg_url, **settings) as index:
        index.index()
        graph = index.graph("ops/backup.md", depth=2)
    with open_kb(tiny_kb) as index:
        expected = index.graph("ops/backup.md", depth=2)
    assert graph.to_json() == expected.to_json()
