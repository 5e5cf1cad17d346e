"""`groove tune` end to end on a purpose-built KB with the real model (tune.md, cli.md §7).

The fixture KB has 12 topics. Topic `w` (a 3-letter word such as `ant`) has one relevant note,
`entries/{w}.md`, whose heading is the word and whose body describes it without containing it,
and four distractor memos whose body is the same description followed by the word itself four
times. Each golden query is the bare word, an English word: it runs the word-level full-text leg
(`fts_words`), which matches the five notes of its topic and no other. The index is built with
`max_length = 16`, so the embedder reads only the shared first 16 tokens: all five notes of a
topic get one and the same vector, the vector leg ties them, and ties go to the lower chunk id,
the relevant note's.

So only the bm25 weights decide. FTS5's bm25 weighs the term frequency per column, x = w_h·1
for the entry (heading) and x = w_c·4 for a memo (content), and scores x / (x + K), K growing
with the row's length; the entry is shorter (K_entry / K_memo ≈ 0.75–0.78 here), so it leads
once w_h / w_c > 4 · K_entry / K_memo ≈ 3.0–3.1. At the built-in weights (h=2, content=1,
ratio 2) it is the last of its five candidates and, fused, the first memo always outranks it
(word rank 1 vs 5, vector rank one behind); with the heading at 4x the content (the next ratio
on the grid) the relevant note leads both legs and every query scores nDCG@5 = 1.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest
import yaml
from typer.testing import CliRunner, Result

from groove_cli.cli import app
from groove_cli.index import IndexOptions, index_kb
from groove_cli.store import Store

runner = CliRunner()

# word: description without the word
TOPICS: dict[str, str] = {
    "ant": ("A tiny insect that lives in huge colonies underground and carries crumbs back to "
            "its nest."),
    "owl": ("A nocturnal bird of prey with big round eyes that hunts voles in the dark and "
            "hoots."),
    "ink": "Coloured liquid that a fountain nib or a printer puts on sheets to write letters.",
    "ape": ("A large tailless primate such as a gorilla or a chimpanzee living in tropical "
            "forests."),
    "oak": "A tall hardwood tree that drops acorns every autumn and lives for hundreds of years.",
    "fig": "A soft purple fruit full of tiny seeds, eaten fresh or dried in the summer months.",
    "ice": "Frozen water that forms on ponds during winter and keeps summer lemonade cold.",
    "ram": "A male sheep with thick curled horns that butts heads with rivals on the hillside.",
    "cat": "A small furry domestic pet that purrs, chases birds and sleeps most of the day.",
    "bat": ("A flying mammal that hunts insects at night by listening to the echoes of its "
            "squeaks."),
    "eel": ("A long slippery snake-like fish that swims in rivers and migrates to the sea to "
            "spawn."),
    "ash": "Grey powder left behind after wood or coal has burned in a fireplace or a stove.",
}
DISTRACTORS = 4
WEIGHTS = (0.5, 1.0, 2.0, 4.0)

TUNE_KEYS = ["kb_path", "golden_path", "model", "reranker", "space", "limit", "candidate_pool",
             "vector_k", "primary_k", "k_values", "chunk_total", "context_axis_noop",
             "query_count", "effective_query_count", "diagnostics", "grid", "loo",
             "secondary_metrics", "per_query_impact", "verdict", "written"]
DIAGNOSTIC_KEYS = ["id", "fts_candidates", "fts_total_matches", "vec_fts_overlap",
                   "bm25_sensitive", "idf_clamped", "rrf_ties", "effective"]
FUSION_KEYS = ["rrf_k", "bm25_heading_weight", "bm25_context_weight", "bm25_content_weight"]

# The plateau of perfect weight sets (heading >= 4x content; the context column is empty, so its
# weight is a no-op) is closest to the grid centre at h=2.0 content=0.5 (L1 2.5, tied with
# h=4.0 content=1.0 but lower in grid order), ctx=1.0 (index 1 before 2). Every rrf_k then
# scores 1 as well, and of 20 and 30 (both 0.5 from the centre 2.5) the lower index wins.
REFIT = {"rrf_k": 20.0, "bm25_heading_weight": 2.0, "bm25_context_weight": 1.0,
         "bm25_content_weight": 0.5}
BUILT_IN = {"rrf_k": 60.0, "bm25_heading_weight": 2.0, "bm25_context_weight": 1.0,
            "bm25_content_weight": 1.0}

NO_EFFECTIVE_ERROR = """\
groove: error: none of the 2 golden queries is sensitive to the fusion parameters (every query \
has fewer than 2 FTS candidates), so the grid was not run.
  Fusion weights and the RRF constant can only reorder results when the full-text leg returns at
  least two candidates for a query. Add golden queries that share words, names or identifiers with
  the notes, or check that the index is not empty.
  nonsense-1: FTS candidates = 0
  nonsense-2: FTS candidates = 0
"""


@dataclass(frozen=True, slots=True)
class TuneKb:
    """The fixture KB, its index and its golden files."""

    kb: Path
    db: Path
    win: Path
    """Each word expects its entry note: heading-heavy weights win."""
    keep: Path
    """Each word expects all five notes of its topic: every condition ranks them first."""
    none: Path
    """Words that no note contains: no query is effective."""
    statements: Path
    """Three words, one with an exclusion, and a mixed-script query, for the statement count."""


def _write_golden(path: Path, queries: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"queries": queries}, sort_keys=False), encoding="utf-8")
    return path


def _build_notes(kb: Path) -> None:
    (kb / "entries").mkdir(parents=True)
    (kb / "memos").mkdir()
    for i, (word, body) in enumerate(TOPICS.items()):
        (kb / "entries" / f"{word}.md").write_text(f"## {word.capitalize()}\n\n{body}\n",
                                                   encoding="utf-8")
        words = ", ".join([word] * 4)
        for j in range(DISTRACTORS):
            (kb / "memos" / f"memo-{i:02d}-{j}.md").write_text(
                f"## Memo {i}{j}\n\n{body} Also noted: {words}.\n", encoding="utf-8")


def _topic(path: str) -> str:
    """The topic word of a note path (`entries/ant.md`, `memos/memo-00-2.md`)."""
    words = list(TOPICS)
    if path.startswith("entries/"):
        return path.removeprefix("entries/").removesuffix(".md")
    return words[int(path.split("-")[1])]


def invoke(args: list[str]) -> Result:
    """Run the CLI in-process; a Python exception (not an exit code) fails the test."""
    result = runner.invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture(scope="module")
def tune_kb(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> TuneKb:
    """Build and index the KB once, then fill the query cache for every golden query."""
    root = tmp_path_factory.mktemp("tune-kb")
    kb, db = root / "kb", root / "index.db"
    _build_notes(kb)
    for word in TOPICS:  # the design needs each word in its own topic's five notes only
        holders = sorted(str(p.relative_to(kb)) for p in kb.rglob("*.md")
                         if re.search(rf"\b{word}\b", p.read_text(encoding="utf-8").lower()))
        assert len(holders) == DISTRACTORS + 1 and {_topic(h) for h in holders} == {word}
    # truncated inputs (no extra pieces) give each topic's notes one identical vector
    index_kb(IndexOptions(kb=kb, db=db, model=None, max_length=16,
                          models_dir=real_models_dir, quiet=True, offline=True,
                          vector_pieces=False))

    store = Store.open_readonly(db)
    chunks = store.chunks_by_id(cid for cid, _ in store.all_vectors())
    by_topic: dict[str, set[bytes]] = {}
    for cid, blob in store.all_vectors():
        by_topic.setdefault(_topic(chunks[cid].path), set()).add(blob)
    store.close()
    assert {word: len(blobs) for word, blobs in by_topic.items()} == dict.fromkeys(TOPICS, 1)

    files = root / "golden"
    files.mkdir()
    win = _write_golden(files / "win.yml", [
        {"id": w, "query": w, "expected": [{"path": f"entries/{w}.md"}]} for w in TOPICS])
    keep = _write_golden(files / "keep.yml", [
        {"id": w, "query": w, "expected": [{"path": f"entries/{w}.md"}] + [
            {"path": f"memos/memo-{i:02d}-{j}.md"} for j in range(DISTRACTORS)]}
        for i, w in enumerate(TOPICS)])
    none = _write_golden(files / "none.yml", [
        {"id": "nonsense-1", "query": "zyxwv", "expected": [{"path": "entries/ant.md"}]},
        {"id": "nonsense-2", "query": "qqxjj", "expected": [{"path": "entries/owl.md"}]}])
    statements = _write_golden(files / "statements.yml", [
        {"id": "ant", "query": "ant", "expected": [{"path": "entries/ant.md"}]},
        {"id": "owl", "query": "owl", "expected": [{"path": "entries/owl.md"}]},
        {"id": "ink-but-not-qqqq", "query": "ink -qqqq", "expected": [{"path": "entries/ink.md"}]},
        MIXED_QUERY])
    union = _write_golden(root / "union.yml", [
        *yaml.safe_load(win.read_text(encoding="utf-8"))["queries"],
        *yaml.safe_load(none.read_text(encoding="utf-8"))["queries"], MIXED_QUERY])

    config = root / "groove.toml"
    config.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROOVE_OFFLINE", "1")
        warmed = invoke(["--config", str(config), "--db", str(db), "eval", "--kb-path", str(kb),
                         "--golden", str(union), "--no-history"])
    assert warmed.exit_code == 0, warmed.output
    con = apsw.Connection(str(db))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return TuneKb(kb, db, win, keep, none, statements)


MODELS_LINE = "models_dir = {}  # the converted test model\n"
# a CJK phrase and two Latin words: the CJK table alone, which holds the words as tokens too
# (no word-level leg for a query with CJK text since issue #25)
MIXED_QUERY = {"id": "owl-mixed", "query": "owl hoots の夜行性",
               "expected": [{"path": "entries/owl.md"}]}


@pytest.fixture(autouse=True)
def _cli_env(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GROOVE_OFFLINE", "1")
    yield


def write_config(workdir: Path, models_dir: Path, rest: str = "") -> Path:
    """`./groove.toml`: the models line, then `rest` (found by discovery, and --write's target)."""
    path = workdir / "groove.toml"
    path.write_text(MODELS_LINE.format(json.dumps(str(models_dir))) + rest, encoding="utf-8")
    return path


def run_tune(t: TuneKb, golden: Path, *args: str) -> Result:
    """`groove tune` on the RRF fusion space unless `args` name another (plain `tune` sweeps
    the fusion in use: test_plain_tune_sweeps_the_fusion_in_use)."""
    space = [] if "--space" in args else ["--space", "fusion"]
    return invoke(["--db", str(t.db), "tune", "--kb-path", str(t.kb), "--golden", str(golden),
                   *space, *args])


def tune_json(t: TuneKb, golden: Path, *args: str) -> dict[str, Any]:
    result = run_tune(t, golden, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def snippet(table: str, values: dict[str, float]) -> str:
    return "\n".join([f"[{table}]", *(f"{key} = {value!r}" for key, value in values.items())])


# --------------------------------------------------------------------------- verdicts


def test_heading_heavy_weights_are_adopted(tune_kb: TuneKb, workdir: Path,
                                           real_models_dir: Path) -> None:
    write_config(workdir, real_models_dir)
    result = run_tune(tune_kb, tune_kb.win, "--format", "json", "--verbose")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report) == TUNE_KEYS
    assert report["verdict"] == {"decision": "adopt", "condition": REFIT,
                                 "toml_snippet": snippet("search.fusion", REFIT)}
    assert {key: report[key] for key in TUNE_KEYS[:14] if key not in ("kb_path", "golden_path")} == {
        "model": "multilingual-e5-small", "reranker": None, "space": "fusion", "limit": 10,
        "candidate_pool": 50, "vector_k": 50, "primary_k": 5, "k_values": [1, 5, 10],
        "chunk_total": 12 * (1 + DISTRACTORS), "context_axis_noop": True, "query_count": 12,
        "effective_query_count": 12}
    assert report["golden_path"] == str(tune_kb.win)
    assert report["kb_path"] == str(tune_kb.kb)

    # every query has its topic's 5 notes as FTS candidates, and heading-heavy vs content-heavy
    # weights order them differently
    for d in report["diagnostics"]:
        assert list(d) == DIAGNOSTIC_KEYS
        assert (d["fts_candidates"], d["fts_total_matches"], d["vec_fts_overlap"]) == (5, 5, 5)
        assert d["bm25_sensitive"] and d["effective"] and not d["idf_clamped"]

    grid = report["grid"]
    assert list(grid) == ["rrf_k", "bm25_weights", "top_weight_conditions", "rrf_k_sweep"]
    assert grid["rrf_k"] == [5, 10, 20, 30, 60, 100] and grid["bm25_weights"] == list(WEIGHTS)
    top = grid["top_weight_conditions"]
    assert len(top) == 5
    for entry in top:
        condition = entry["condition"]
        assert list(condition) == FUSION_KEYS and condition["rrf_k"] == 60.0
        assert entry["ndcg"] == 1.0
        assert condition["bm25_heading_weight"] >= 4 * condition["bm25_content_weight"]
    assert [e["condition"]["rrf_k"] for e in grid["rrf_k_sweep"]] == [5, 10, 20, 30, 60, 100]
    assert [e["ndcg"] for e in grid["rrf_k_sweep"]] == [1.0] * 6

    loo = report["loo"]
    assert list(loo) == ["refit", "folds", "held_out_diffs", "mean_delta", "paired_se",
                         "selection_stability", "sign_test"]
    assert loo["refit"] == REFIT and loo["folds"] == 12 and loo["selection_stability"] == 1.0
    assert all(d > 0 for d in loo["held_out_diffs"])
    assert loo["mean_delta"] == pytest.approx(sum(loo["held_out_diffs"]) / 12)
    assert loo["mean_delta"] > 3 * loo["paired_se"] and loo["mean_delta"] > 0.02
    assert loo["sign_test"] == {"improved": 12, "degraded": 0, "tied": 0, "p_value": 2 / 2**12}

    secondary = report["secondary_metrics"]
    # at the built-in weights the first distractor always outranks the entry; refit: always first
    assert secondary["baseline"]["recall_at_k"]["1"] == 0.0
    assert secondary["refit"] == {"recall_at_k": {"1": 1.0, "5": 1.0, "10": 1.0}, "mrr": 1.0,
                                  "ndcg_at_k": {"1": 1.0, "5": 1.0, "10": 1.0}, "query_count": 12}
    assert secondary["violations"] == []
    assert report["per_query_impact"]["improved"] == 12
    assert report["per_query_impact"]["degraded"] == 0
    assert report["written"] is None

    notes = result.stderr.splitlines()
    assert "groove: note: no chunk has a contextual breadcrumb, so the context weight axis is a " \
           "no-op" in notes
    assert "groove: note: 12 of 12 golden queries are effective" in notes
    assert ("groove: warning: effective N = 12 is below the IR convention of 50 topics; treat "
            "the verdict as indicative") in notes
    assert [line for line in notes if "sweeping" in line] == [
        f"  [{i}/12] sweeping 384 conditions for {w}" for i, w in enumerate(TOPICS, start=1)]


def test_text_report_sections_and_adopt_verdict(tune_kb: TuneKb, workdir: Path,
                                                real_models_dir: Path) -> None:
    write_config(workdir, real_models_dir)
    result = run_tune(tune_kb, tune_kb.win, "--verbose")
    assert result.exit_code == 0
    text = result.stdout
    lines = text.splitlines()
    assert lines[0] == f"groove tune — {tune_kb.kb}"
    headings = [line.split(" (")[0] for line in lines if line.startswith("## ")]
    assert headings == ["## Query diagnostics", "## Grid", "## Nested leave-one-query-out CV",
                        "## Secondary metrics", "## Per-query impact", "## Verdict"]
    assert "  queries: 12 total / 12 effective (FTS candidates >= 2)   primary metric: nDCG@5" in lines
    verdict = lines[lines.index("## Verdict"):]
    assert verdict[1] == "  Recommendation: h=2.0 ctx=1.0 content=0.5 k=20"
    assert snippet("search.fusion", REFIT) in text
    assert verdict[-1] == "  or run groove tune --write"
    assert "    h=2.0 ctx=1.0 content=0.5 k=20     nDCG@5 1.0000  ← refit" in lines


COMMENTED = """\

# groove config for the tune fixture
[search.retrieval]
mode = "hybrid"   # both legs, as tune measures them

[search.fusion]
# set by hand, equal to the built-ins
rrf_k = 60.0  # the RRF constant
bm25_content_weight = 1.0

[eval]
k_values = [1, 5, 10]   # the defaults, spelled out
"""

COMMENTED_AFTER = """\

# groove config for the tune fixture
[search.retrieval]
mode = "hybrid"   # both legs, as tune measures them

[search.fusion]
# set by hand, equal to the built-ins
rrf_k = 20.0  # the RRF constant
bm25_content_weight = 0.5
bm25_heading_weight = 2.0
bm25_context_weight = 1.0

[eval]
k_values = [1, 5, 10]   # the defaults, spelled out
"""


def test_write_changes_only_the_fusion_keys(tune_kb: TuneKb, workdir: Path,
                                            real_models_dir: Path) -> None:
    config = write_config(workdir, real_models_dir, COMMENTED)
    before = config.read_text(encoding="utf-8")
    report = tune_json(tune_kb, tune_kb.win, "--write")
    assert report["verdict"]["decision"] == "adopt"
    assert report["written"] == {"path": str(config), "table": "search.fusion", "keys": FUSION_KEYS}
    models_line = before.splitlines(keepends=True)[0]
    assert config.read_text(encoding="utf-8") == models_line + COMMENTED_AFTER

    check = invoke(["config", "check"])
    assert check.exit_code == 0 and check.stdout == f"{config}: ok\n"
    shown = json.loads(invoke(["config", "show", "--format", "json"]).stdout)["settings"]
    for key, value in REFIT.items():
        assert shown[f"search.fusion.{key}"]["value"] == value
        assert shown[f"search.fusion.{key}"]["source"] == "file"


def test_write_is_refused_for_keep_defaults_unless_forced(tune_kb: TuneKb, workdir: Path,
                                                          real_models_dir: Path) -> None:
    config = write_config(workdir, real_models_dir, "\n[search.fusion]\nrrf_k = 30.0\n")
    before = config.read_text(encoding="utf-8")
    refused = run_tune(tune_kb, tune_kb.keep, "--write")
    assert refused.exit_code == 0
    assert config.read_text(encoding="utf-8") == before
    stderr = refused.stderr.splitlines()
    assert ("groove: warning: --write refused: the verdict is keep-defaults (use --force to "
            "write the refit values anyway)") in stderr
    assert ("groove: note: [search.fusion] / [search.retrieval] differ from the built-in "
            "defaults; tune still measures deltas against the BUILT-IN defaults, not your "
            "values.") in stderr
    lines = refused.stdout.splitlines()  # the default summary ends with the verdict's lines
    assert lines[lines.index("") + 1:-2] == [
        "  Recommendation: keep the built-in defaults (h=2.0 ctx=1.0 content=1.0 k=60).",
        "    - the refit selection is the built-in default",
        "    - held-out mean delta 0.0000 is not above 0.02",
        "    - held-out mean delta 0.0000 is not above 3.0 × paired SE (0.0000)",
    ]

    forced = run_tune(tune_kb, tune_kb.keep, "--write", "--force", "--format", "json")
    assert forced.exit_code == 0
    report = json.loads(forced.stdout)
    assert report["verdict"]["decision"] == "keep_default"
    assert report["loo"]["refit"] == BUILT_IN
    assert report["written"] == {"path": str(config), "table": "search.fusion", "keys": FUSION_KEYS}
    assert f"groove: note: wrote 4 key(s) to {config} ([search.fusion])" in forced.stderr
    assert config.read_text(encoding="utf-8") == before.replace(
        "rrf_k = 30.0\n", "rrf_k = 60.0\nbm25_heading_weight = 2.0\nbm25_context_weight = 1.0\n"
                          "bm25_content_weight = 1.0\n")


def test_config_equal_to_the_built_ins_gives_no_scope_note(tune_kb: TuneKb, workdir: Path,
                                                           real_models_dir: Path) -> None:
    write_config(workdir, real_models_dir, COMMENTED)
    result = run_tune(tune_kb, tune_kb.keep)
    assert result.exit_code == 0
    assert "differ from the built-in defaults" not in result.stderr
    # the fusion space sweeps weighted RRF, and the default fusion is score (tune.md §4)
    assert ('groove: note: the fusion space sweeps weighted RRF (method = "rrf") against the '
            "built-in RRF; the default fusion is score, under which rrf_k does nothing and the "
            "bm25 weights were not measured; --space fusion-method compares the fusions."
            ) in result.stderr.splitlines()


def test_no_effective_query_exits_2_with_nothing_on_stdout(tune_kb: TuneKb, workdir: Path,
                                                           real_models_dir: Path) -> None:
    config = write_config(workdir, real_models_dir)
    before = config.read_text(encoding="utf-8")
    result = run_tune(tune_kb, tune_kb.none, "--write", "--force")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.endswith(NO_EFFECTIVE_ERROR)
    assert config.read_text(encoding="utf-8") == before


def test_plain_tune_sweeps_the_fusion_in_use(tune_kb: TuneKb, workdir: Path,
                                             real_models_dir: Path) -> None:
    """Issue 46 item 6: plain `groove tune` sweeps the knobs that rank under the fusion the
    settings use — score fusion's (fusion-method) by default, RRF's under method = "rrf"."""
    plain = ["--db", str(tune_kb.db), "tune", "--kb-path", str(tune_kb.kb), "--golden",
             str(tune_kb.win), "--format", "json"]
    write_config(workdir, real_models_dir)
    score = invoke(plain)
    assert score.exit_code == 0, score.output
    assert json.loads(score.stdout)["space"] == "fusion-method"
    assert "sweeps weighted RRF" not in score.stderr
    write_config(workdir, real_models_dir, '[search.fusion]\nmethod = "rrf"\n')
    rrf = invoke(plain)
    assert rrf.exit_code == 0, rrf.output
    assert json.loads(rrf.stdout)["space"] == "fusion"


def test_retrieval_space_sweeps_60_conditions_and_keeps_min_score_0(
        tune_kb: TuneKb, workdir: Path, real_models_dir: Path) -> None:
    write_config(workdir, real_models_dir)
    result = run_tune(tune_kb, tune_kb.win, "--space", "retrieval", "--format", "json",
                          "--verbose")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["space"] == "retrieval"
    assert ('groove: note: the retrieval space sweeps weighted RRF (method = "rrf") against the '
            "built-in RRF; the default fusion is score, under which the leg weights only switch "
            "legs on and off; --space fusion-method compares the fusions."
            ) in result.stderr.splitlines()
    rrf = write_config(workdir, real_models_dir, '[search.fusion]\nmethod = "rrf"\n')
    quiet = run_tune(tune_kb, tune_kb.win, "--space", "retrieval", "--format", "json")
    assert quiet.exit_code == 0 and "sweeps weighted RRF" not in quiet.stderr
    rrf.unlink()
    assert [line for line in result.stderr.splitlines() if "sweeping" in line] == [
        f"  [{i}/12] sweeping 60 conditions for {w}" for i, w in enumerate(TOPICS, start=1)]
    grid = report["grid"]
    assert list(grid) == ["weight_ratios", "cjk_weights", "min_scores", "ratio_sweep",
                          "min_score_sweep"]
    assert grid["weight_ratios"] == [0.5, 0.67, 1, 1.5, 2]
    assert grid["cjk_weights"] == [3.0, 6.0, 12.0]
    assert grid["min_scores"] == [0, 0.2, 0.3, 0.4]
    # phase 1: the best 5 of the 15 (vector weight, CJK weight) pairs, at min_score 0
    assert len(grid["ratio_sweep"]) == 5
    for entry in grid["ratio_sweep"]:
        condition = entry["condition"]
        assert condition["vector_weight"] in (0.5, 0.67, 1.0, 1.5, 2.0)
        assert condition["cjk_weight"] in (3.0, 6.0, 12.0) and condition["min_score"] == 0.0
    sweep = grid["min_score_sweep"]
    assert [e["condition"]["min_score"] for e in sweep] == [0.0, 0.2, 0.3, 0.4]
    # the floors remove nothing in the top 5 here, so they tie, and the tie keeps no floor
    assert len({e["ndcg"] for e in sweep}) == 1
    refit = report["loo"]["refit"]
    assert list(refit) == ["vector_weight", "fts_weight", "cjk_weight", "min_score"]
    assert refit["min_score"] == 0.0 and refit["fts_weight"] == 1.0
    if report["verdict"]["decision"] == "adopt":
        assert report["verdict"]["toml_snippet"] == snippet("search.retrieval", refit)


# --------------------------------------------------------------------------- statement count


def test_statements_per_query_do_not_depend_on_the_number_of_conditions(
        tune_kb: TuneKb, workdir: Path, real_models_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """tune.md §5: fusion = 64 FTS searches + 1 count per query and full-text table the query
    uses; retrieval = 3 + 1. All-Latin queries use `fts_words` only, the mixed one `fts_cjk`
    only (its CJK text and its Latin words go to the CJK table, issues #13 and #25)."""
    write_config(workdir, real_models_dir)
    log: list[tuple[str, tuple[object, ...]]] = []

    def trace(_cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        log.append((sql, tuple(bindings) if isinstance(bindings, tuple | list) else ()))
        return True

    opened = Store.open_readonly

    def traced(path: Path, kb_hint: str = "<path>") -> Store:
        store = opened(path, kb_hint)
        store.con.exec_trace = trace
        return store

    monkeypatch.setattr(Store, "open_readonly", staticmethod(traced))
    every_weight_set = set(itertools.product(WEIGHTS, repeat=3))
    probes = {(2.0, 1.0, 1.0), (4.0, 0.5, 0.5), (0.5, 0.5, 4.0)}
    for space, conditions, weight_sets in (("fusion", 384, every_weight_set),
                                           ("retrieval", 60, probes)):
        log.clear()
        result = run_tune(tune_kb, tune_kb.statements, "--space", space, "--format", "json",
                          "--verbose")
        assert result.exit_code == 0, result.output
        assert f"sweeping {conditions} conditions" in result.stderr
        searches: dict[tuple[str, object], list[tuple[object, ...]]] = {}
        limits: dict[tuple[str, object], set[object]] = {}
        counts: dict[tuple[str, object], int] = {}
        scans: list[tuple[object, ...]] = []
        for sql, args in log:
            assert "vec_chunks WHERE embedding MATCH" not in sql  # vectors: numpy snapshot
            tables = [t for t in ("fts_chunks", "fts_words", "fts_cjk") if f"{t} MATCH" in sql]
            if not tables:
                continue
            key = (tables[0], args[0])
            if "bm25(" in sql:
                searches.setdefault(key, []).append(tuple(args[1:4]))
                limits.setdefault(key, set()).add(args[4])
            elif "count(*)" in sql:
                counts[key] = counts.get(key, 0) + 1
            else:
                scans.append(key)
        assert sorted(searches) == sorted([
            ("fts_words", '"ant"'), ("fts_words", '"owl"'),
            ("fts_words", '("ink") NOT ("qqqq")'),
            ("fts_cjk", '"owl" OR "hoots" OR "の夜" OR "夜" OR "夜行" OR "行" OR "行性" OR "性"')])
        for key, weights in searches.items():
            assert len(weights) == len(weight_sets) and set(weights) == weight_sets, key
            assert counts[key] == 1
            # pool P = 50; the exclusion filters the word list by ids: ×10 over-fetch
            assert limits[key] == ({500} if "qqqq" in str(key[1]) else {50}), key
        assert set(counts) == set(searches)
        # the exclusion's id scan, once per table with negatives, run by the vector lists' and
        # again by the word list's filter (sharing one scan would halve this)
        assert scans == [("fts_chunks", '"qqqq"'), ("fts_words", '"qqqq"')] * 2


# --------------------------------------------------------------------------- inputs and targets


def test_expected_entries_are_checked_against_the_index_as_in_eval(
        tune_kb: TuneKb, workdir: Path, real_models_dir: Path) -> None:
    write_config(workdir, real_models_dir)
    queries = yaml.safe_load(tune_kb.win.read_text(encoding="utf-8"))["queries"]
    queries[0]["expected"].append({"path": "entries/ant.md", "heading": "Nope"})
    queries[1]["expected"].append({"path": "entries/missing.md"})
    golden = _write_golden(workdir / "checked.yml", queries)
    result = run_tune(tune_kb, golden)
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("groove: warning: golden")]
    assert warnings == [
        'groove: warning: golden: queries[0].expected[1]: no chunk of entries/ant.md has the '
        'heading "Nope"',
        "groove: warning: golden: queries[1].expected[1]: path entries/missing.md is not in the "
        "index",
    ]


def test_write_without_a_loaded_config_creates_one_in_the_working_directory(
        tune_kb: TuneKb, workdir: Path, real_models_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no groove.toml anywhere: the default models folder (under XDG_CACHE_HOME) holds the model
    cache = tmp_path / "cache"
    (cache / "groove").mkdir(parents=True)
    (cache / "groove" / "models").symlink_to(real_models_dir, target_is_directory=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    result = run_tune(tune_kb, tune_kb.win, "--write")
    assert result.exit_code == 0, result.output
    created = Path.cwd() / "groove.toml"
    assert f"groove: note: no config file was loaded; creating {created}" in result.stderr
    assert created.read_text(encoding="utf-8") == snippet("search.fusion", REFIT) + "\n"
