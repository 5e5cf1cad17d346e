"""Where a KB's state lives and how commands find a KB (cli.md §1, §11; config.md §1.2, §1.3;
index.md §6.5): the `.groove/` state folder, the user data folder for a read-only KB, the move
from the old layout (with a kill -9 at each step), discovery from a subfolder, named collections
and the multi-KB search.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from groove_cli import kbs, statedir
from groove_cli.cli import app
from tests.onnx_builders import model_dir
from tests.test_index import (
    KB_FILES,
    TINY_MODEL_TOML,
    Groove,
    make_groove,
    rows,
    runner,
    tiny_embedder_onnx,
    write,
    write_kb,
)

STATE_FILES = {".gitignore", "index.db", "index.db.vectors.npy", "index.db.vectors-ids.npy",
               "index.db.vectors.json"}


def run(*args: str) -> Result:
    return runner.invoke(app, list(args))


def ok(*args: str) -> Result:
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    return result


def user_config(groove: Groove) -> None:
    """The tiny model in the per-user groove.toml, so it applies from any folder."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "groove"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "groove.toml").write_text(
        f"model = {json.dumps(str(groove.model))}\n"
        f"models_dir = {json.dumps(str(groove.models_dir))}\n", encoding="utf-8")
    (groove.work / "groove.toml").unlink()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model") / "embedder"
    return model_dir(folder, tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()


@pytest.fixture
def groove(tiny_model: Path, workdir: Path, tmp_path: Path) -> Groove:
    """The sample KB, not indexed, with the tiny model in the per-user config."""
    made = make_groove(workdir, tmp_path, tiny_model)
    write_kb(made.kb)
    user_config(made)
    return made


def paths_of(result: Result) -> list[str]:
    return [hit["path"] for hit in json.loads(result.stdout)["results"]]


def kb_entries(kb: Path) -> set[str]:
    return {p.name for p in kb.iterdir()}


# --------------------------------------------------------------------------- the state folder


def test_index_writes_only_the_state_folder(groove: Groove) -> None:
    before = kb_entries(groove.kb)
    ok("index", "--kb-path", str(groove.kb))
    assert kb_entries(groove.kb) - before == {".groove"}
    state = groove.kb / ".groove"
    assert {p.name for p in state.iterdir()} == STATE_FILES | {"index.db.lock"}
    assert (state / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert rows(state / "index.db", "SELECT count(*) FROM documents") == [(3,)]


def test_discovery_from_a_subfolder(groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    ok("index", "--kb-path", str(groove.kb))
    monkeypatch.chdir(groove.kb / "eng" / "search")
    result = ok("search", "bird", "--mode", "fts")
    assert paths_of(result) == ["eng/search/beta.md"]
    assert json.loads(ok("status", "--format", "json").stdout)["documents"] == 3
    shown = json.loads(ok("config", "show", "--format", "json").stdout)["settings"]["kb_path"]
    assert (shown["value"], shown["source"]) == (str(groove.kb.resolve()), "found")
    ok("index")  # an update, found the same way
    other = groove.work / "other.db"  # --db names an index not tied to the working folder
    ok("--db", str(other), "index", "--kb-path", str(groove.work))
    with_db = ok("--db", str(other), "search", "bird", "--mode", "fts")
    assert "was built from" not in with_db.stderr
    monkeypatch.chdir(groove.work)  # outside the KB, nothing is found
    result = run("search", "bird")
    assert result.exit_code == 2
    assert "--kb-path is required: no knowledge base found" in result.stderr


def test_discovery_finds_the_nearest_kb(groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = groove.kb / "inner"
    write(inner, "only.md", "# Only\n\nzebra crossing\n")
    ok("index", "--kb-path", str(groove.kb))
    ok("index", "--kb-path", str(inner))
    monkeypatch.chdir(inner)
    assert paths_of(ok("search", "zebra", "--mode", "fts")) == ["only.md"]
    assert kbs.find_kb(inner) == inner.resolve()
    assert kbs.find_kb(groove.kb / "ops") == groove.kb.resolve()


# --------------------------------------------------------------------------- collections


def test_collections_add_list_remove_and_c_from_anywhere(
        groove: Groove, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ok("kb", "add", str(groove.kb), "--name", "notes").stdout.splitlines() == [
        f"added collection notes: {groove.kb.resolve()}", "not indexed yet: groove index -c notes"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ok("index", "-c", "notes")
    assert (groove.kb / ".groove" / "index.db").is_file()
    result = ok("search", "bird", "-c", "notes", "--mode", "fts")
    assert paths_of(result) == ["eng/search/beta.md"]
    assert json.loads(ok("kb", "list", "--format", "json").stdout) == {"collections": [
        {"name": "notes", "path": str(groove.kb.resolve()), "exists": True, "indexed": True}]}
    taken = run("kb", "add", str(tmp_path), "--name", "notes")
    assert taken.exit_code == 2
    assert "a collection named 'notes' already exists" in taken.stderr
    assert run("kb", "add", str(tmp_path), "--name", "no/slash").exit_code == 2
    unknown = run("search", "bird", "-c", "nope")
    assert unknown.exit_code == 2
    assert "no collection named 'nope' (known: notes)" in unknown.stderr
    ok("kb", "remove", "notes")
    assert ok("kb", "list").stdout.startswith("no collections")
    assert (groove.kb / ".groove" / "index.db").is_file()  # forgetting a name deletes nothing


def test_c_uses_the_collection_folder_config(groove: Groove, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """-c runs as if started in the KB: the working folder's groove.toml does not apply."""
    ok("kb", "add", str(groove.kb), "--name", "notes")
    ok("index", "-c", "notes")
    other = tmp_path / "other"
    other.mkdir()
    (other / "groove.toml").write_text('model = "no-such-model"\n', encoding="utf-8")
    monkeypatch.chdir(other)
    assert paths_of(ok("search", "bird", "-c", "notes")) [0] == "eng/search/beta.md"


def two_kbs(groove: Groove, tmp_path: Path) -> Path:
    second = tmp_path / "second"
    write(second, "zebra.md", "# Zebra\n\nthe zebra eats grass on the plain\n")
    write(second, "cats.md", "# Felines\n\ncats hunt at night on the plain\n")
    ok("kb", "add", str(groove.kb), "--name", "a")
    ok("kb", "add", str(second), "--name", "b")
    ok("index", "-c", "a")
    ok("index", "-c", "b")
    return second


def own_lists(query: str, *mode: str) -> dict[str, list[dict[str, object]]]:
    return {name: json.loads(ok("search", query, "-c", name, *mode).stdout)["results"]
            for name in ("a", "b")}


def check_attributed(hits: list[dict[str, object]], single: dict[str, list[dict[str, object]]],
                     roots: dict[str, Path]) -> None:
    """Every hit is its KB's own hit at its own rank, with paths under its KB, and each KB's
    hits keep their order."""
    for hit in hits:
        own = single[str(hit["kb"])][int(str(hit["kb_rank"])) - 1]
        assert (hit["path"], hit["score"], hit["relevance"]) == (
            own["path"], own["score"], own["relevance"])
        assert hit["abs_path"] == str(roots[str(hit["kb"])] / str(hit["path"]))
    for name in roots:
        ranks = [h["kb_rank"] for h in hits if h["kb"] == name]
        assert ranks == list(range(1, len(ranks) + 1))


def test_search_several_kbs_merges_by_relevance(groove: Groove, tmp_path: Path) -> None:
    second = two_kbs(groove, tmp_path)
    roots = {"a": groove.kb.resolve(), "b": second.resolve()}
    single = own_lists("cats on the plain")
    doc = json.loads(ok("search", "cats on the plain", "-c", "a", "-c", "b").stdout)
    hits = doc["results"]
    assert doc["fusion"] == "relevance"
    assert len(hits) == min(5, len(single["a"]) + len(single["b"]))
    check_attributed(hits, single, roots)
    # each next hit is the most relevant head of the two lists
    heads = {"a": 0, "b": 0}
    for hit in hits:
        waiting = [single[n][heads[n]]["relevance"] for n in ("a", "b")
                   if heads[n] < len(single[n])]
        assert hit["relevance"] == max(waiting)  # type: ignore[type-var]
        heads[str(hit["kb"])] += 1
    assert {h["kb"] for h in hits} == {"a", "b"}
    assert [k["name"] for k in doc["kbs"]] == ["a", "b"]
    assert doc == json.loads(ok("search", "cats on the plain", "--all").stdout)
    text = ok("search", "cats on the plain", "--all", "--format", "text").stdout.splitlines()
    weak = [k["name"] for k in doc["kbs"] if k["low_confidence"]]
    assert weak == ["a"]  # the sample KB has no plain, no cat hunting
    assert text[:3] == ["[weak match in: a]", "", f"[{hits[0]['kb']}] #1 in {hits[0]['kb']}"]
    assert sum(line.startswith(("[a] #", "[b] #")) for line in text) == len(hits)
    files = ok("search", "cats on the plain", "--all", "--format", "files").stdout
    assert len(files.splitlines()) == len({(h["kb"], h["path"]) for h in hits})


def test_search_several_kbs_without_relevance_fuses_by_rank(groove: Groove,
                                                           tmp_path: Path) -> None:
    second = two_kbs(groove, tmp_path)
    single = own_lists("cats", "--mode", "fts")
    assert single["a"] and single["b"]
    doc = json.loads(ok("search", "cats", "-c", "b", "-c", "a", "--mode", "fts").stdout)
    hits = doc["results"]
    assert doc["fusion"] == "rank"  # fts mode: no relevance
    check_attributed(hits, single, {"a": groove.kb.resolve(), "b": second.resolve()})
    # RRF over the two lists: rank 1 of each first (in the order named), then rank 2, …
    order = [(h["kb_rank"], h["kb"]) for h in hits]
    assert order == sorted(order, key=lambda pair: (pair[0], pair[1] != "b"))
    assert order[:2] == [(1, "b"), (1, "a")]


def test_search_several_refuses_one_kb_options(groove: Groove, tmp_path: Path) -> None:
    two_kbs(groove, tmp_path)
    result = run("search", "cats", "-c", "a", "-c", "b", "--kb-path", str(groove.kb))
    assert result.exit_code == 2
    assert "--kb-path names one KB" in result.stderr
    result = run("status", "-c", "a", "-c", "b")
    assert result.exit_code == 2
    assert "only search takes several -c" in result.stderr


# --------------------------------------------------------------------------- read-only KB


@pytest.fixture
def read_only_kb(groove: Groove, tmp_path: Path) -> Iterator[Path]:
    """The sample KB on storage groove cannot write (a read-only bind mount as root)."""
    if os.geteuid() != 0:
        groove.kb.chmod(0o555)
        yield groove.kb
        groove.kb.chmod(0o755)
        return
    mount = tmp_path / "ro-kb"
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(groove.kb), str(mount)], check=False,
                      capture_output=True).returncode != 0:
        pytest.skip("cannot make a read-only mount here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True,
                       capture_output=True)
        yield mount
    finally:
        gc.collect()  # closes any connection the commands left for the collector
        if subprocess.run(["umount", str(mount)], check=False,
                          capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


def test_read_only_kb_keeps_its_state_in_the_user_data_folder(
        read_only_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = kb_entries(read_only_kb)
    ok("index", "--kb-path", str(read_only_kb))
    state = statedir.user_state_dir(read_only_kb)
    assert state.parent == Path(os.environ["XDG_DATA_HOME"]) / "groove" / "kbs"
    assert state.name.startswith(read_only_kb.name + "-")
    assert {p.name for p in state.iterdir()} >= STATE_FILES
    assert kb_entries(read_only_kb) == before
    monkeypatch.chdir(read_only_kb / "ops")  # found from inside, through the data folder
    assert paths_of(ok("search", "bird", "--mode", "fts")) == ["eng/search/beta.md"]


def test_location_user_on_request(groove: Groove) -> None:
    (groove.kb / "groove.toml").write_text('[store]\nlocation = "user"\n', encoding="utf-8")
    ok("--config", str(groove.kb / "groove.toml"), "index", "--kb-path", str(groove.kb))
    assert not (groove.kb / ".groove").exists()
    assert (statedir.user_state_dir(groove.kb) / "index.db").is_file()


# --------------------------------------------------------------------------- the old layout


def old_layout(groove: Groove) -> Path:
    """The sample KB indexed into `<kb>/.groove.db` as groove did before the state folder."""
    legacy = groove.kb / ".groove.db"
    ok("--db", str(legacy), "index", "--kb-path", str(groove.kb))
    (groove.kb / ".groove.db.lock").unlink()
    assert {p.name for p in groove.kb.glob(".groove.db*")} == {
        ".groove.db", ".groove.db.vectors.npy", ".groove.db.vectors-ids.npy",
        ".groove.db.vectors.json"}
    return legacy


def test_old_layout_is_read_in_place_then_moved_by_index(groove: Groove,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    old_layout(groove)
    monkeypatch.chdir(groove.kb)
    before = paths_of(ok("search", "cats dogs"))
    assert not (groove.kb / ".groove").exists()  # reading moves nothing
    result = ok("index")
    assert "moved the index from" in result.stderr
    assert list(groove.kb.glob(".groove.db*")) == []
    assert {p.name for p in (groove.kb / ".groove").iterdir()} >= STATE_FILES
    assert paths_of(ok("search", "cats dogs")) == before
    assert "0 updated" in result.stderr  # the moved index is the same index


def test_a_damaged_old_layout_index_is_set_aside_by_force(groove: Groove) -> None:
    legacy = old_layout(groove)
    damaged = b"SQLite format 3\x00" + b"the rest of the header is gone" * 200
    legacy.write_bytes(damaged)  # an SQLite file (its magic stays) that SQLite cannot read
    refused = run("index", "--kb-path", str(groove.kb))
    assert refused.exit_code == 1
    assert "groove: error: the index file is damaged (" in refused.stderr
    assert "`groove index --force` moves the damaged file aside" in refused.stderr
    result = ok("index", "--kb-path", str(groove.kb), "--force")
    (aside,) = groove.kb.glob(".groove.db.corrupt-*")
    assert aside.read_bytes() == damaged
    assert f"moved it aside to {aside}" in result.stderr.replace("\n", " ")
    assert [p.name for p in groove.kb.glob(".groove.db*")] == [aside.name]
    assert rows(groove.kb / ".groove" / "index.db", "SELECT count(*) FROM documents") == [
        (len(KB_FILES),)]


def crashed_index(groove: Groove, step: str) -> None:
    env = {**os.environ, statedir.CRASH_HOOK: step, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "groove_cli", "index", "--kb-path",
                           str(groove.kb)], cwd=groove.work, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.parametrize("step", ["copied", "renamed", "removed-index"])
def test_migration_killed_at_each_step_leaves_a_usable_index(groove: Groove, step: str) -> None:
    old_layout(groove)
    crashed_index(groove, step)
    new = groove.kb / ".groove" / "index.db"
    if step == "copied":  # not renamed yet: the old layout is whole and is the one used
        assert (groove.kb / ".groove.db").is_file() and not new.exists()
    else:
        assert new.is_file()
    hits = paths_of(ok("search", "bird", "--mode", "fts", "--kb-path", str(groove.kb)))
    assert hits == ["eng/search/beta.md"]
    assert ok("doctor", "--kb-path", str(groove.kb)).exit_code == 0
    ok("index", "--kb-path", str(groove.kb))  # finishes the move
    assert list(groove.kb.glob(".groove.db*")) == []
    assert not (groove.kb / ".groove" / statedir.MIGRATING).exists()
    assert rows(new, "SELECT count(*) FROM documents") == [(len(KB_FILES),)]


# --------------------------------------------------------------------------- git status


GOLDEN = """\
queries:
  - query: bird
    expected: [{path: eng/search/beta.md}]
  - query: cat
    expected: [{path: alpha.md}]
"""


def git(kb: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=kb, check=True, capture_output=True,
                          text=True).stdout


def test_git_status_stays_clean(groove: Groove, monkeypatch: pytest.MonkeyPatch) -> None:
    (groove.kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    git(groove.kb, "init", "-q")
    git(groove.kb, "add", ".")
    git(groove.kb, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notes")
    monkeypatch.chdir(groove.kb)
    ok("index", "--kb-path", ".")
    ok("index")  # found from here now
    ok("search", "bird")
    ok("eval", "--mode", "fts")
    ok("eval", "--mode", "fts")  # a second run reads and rewrites the history
    assert (groove.kb / ".groove" / statedir.HISTORY_NAME).is_file()
    assert git(groove.kb, "status", "--porcelain", "--untracked-files=all") == ""


def test_index_takes_the_kb_folder_as_an_argument(groove: Groove,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46 item 5: `groove index .` in a folder never indexed."""
    fresh = groove.kb / "fresh"
    write(fresh, "only.md", "# Only\n\nzebra crossing at the corner of the street\n")
    monkeypatch.chdir(fresh)
    ok("index", ".")
    assert (fresh / ".groove" / "index.db").is_file()
    assert paths_of(ok("search", "zebra", "--mode", "fts")) == ["only.md"]
    both = run("index", ".", "--kb-path", str(groove.kb))
    assert both.exit_code == 2
    assert f"the folder . and --kb-path {groove.kb} name two KBs" in both.stderr
