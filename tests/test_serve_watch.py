"""`groove serve --watch`: an edited, added, renamed or deleted note is reflected in full-text
search (how fast is the benchmark's: serve.md §7), and kill -9 during a watched re-index leaves
a valid index."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.serve_helpers import Server, groove, make_kb, serving
from tests.waiting import HANG_GUARD_S, wait_until


def paths_for(server: Server, query: str) -> list[str]:
    code, body, _ = server.get("/search", q=query, mode="fts", limit=10)
    assert code == 200, body
    return [hit["path"] for hit in json.loads(body)["results"]]


def found(server: Server, query: str, paths: list[str], what: str) -> None:
    """Wait until a full-text search for `query` finds `paths` (sorted)."""
    wait_until(lambda: sorted(paths_for(server, query)) == paths,
               what=f"{what}: {query!r} finding {paths}")


def test_edit_add_rename_delete_are_reflected_in_search(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    note = kb / "reliability" / "retry-budgets.md"
    with serving(kb, env, "--watch") as server:
        assert paths_for(server, "zorblaxine") == []
        with note.open("a", encoding="utf-8") as out:
            out.write("\n## Field notes\n\nThe zorblaxine incident taught us to cap retries.\n")
        found(server, "zorblaxine", ["reliability/retry-budgets.md"], "edit")

        added = kb / "team" / "quaternion-rota.md"
        added.write_text("# Quaternion rota\n\nWho carries the quaternion pager this week.\n",
                         encoding="utf-8")
        found(server, "quaternion", ["team/quaternion-rota.md"], "add")

        added.rename(kb / "team" / "pager-rota.md")
        found(server, "quaternion", ["team/pager-rota.md"], "rename")

        (kb / "team" / "pager-rota.md").unlink()
        found(server, "quaternion", [], "delete")
        # searches kept answering throughout, and the old hits are still right
        assert paths_for(server, "zorblaxine") == ["reliability/retry-budgets.md"]


def test_kill_9_during_a_watched_reindex_leaves_a_valid_index(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env, "--watch") as server:
        batch = kb / "bulk"
        batch.mkdir()
        for i in range(60):
            body = "\n\n".join(f"## Part {j}\n\nBulk note {i} section {j} about disk quotas "
                               f"and pager duty rotation number {i * 10 + j}." for j in range(8))
            (batch / f"note-{i:03}.md").write_text(f"# Bulk {i}\n\n{body}\n", encoding="utf-8")
        # the first bulk notes are committed (searches see them): the re-index is under way
        wait_until(lambda: paths_for(server, "quotas") != [], what="the first bulk notes")
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=HANG_GUARD_S)
    doctor = groove(env, "doctor", "--kb-path", str(kb), "--format", "json")
    # the committed notes are intact; at most the vector snapshot is behind (as after any
    # interrupted `groove index`: searches read the index itself until the next run)
    findings = json.loads(doctor.stdout)["findings"]
    assert [f["check"] for f in findings] in ([], ["stale-vector-snapshot"]), findings
    # killed mid-way: phase 1 commits up to 64 files at a time (index.md §6.1 step 8), so the
    # bulk notes became visible together, and the kill landed before phase 2 embedded them all
    assert 27 < json.loads(doctor.stdout)["documents"] <= 27 + 60
    status = groove(env, "status", "--kb-path", str(kb), "--format", "json")
    assert json.loads(status.stdout)["pending_vectors"] > 0, status.stdout
    again = groove(env, "index", "--kb-path", str(kb), "--quiet")  # and it completes later
    assert again.returncode == 0, again.stderr
    clean = groove(env, "doctor", "--kb-path", str(kb), "--format", "json")
    assert clean.returncode == 0 and json.loads(clean.stdout)["findings"] == []
    status = json.loads(groove(env, "status", "--kb-path", str(kb), "--format", "json").stdout)
    assert status["documents"] == 27 + 60
    assert status["pending"] == {"new": 0, "changed": 0, "deleted": 0, "renamed": 0,
                                 "skipped": 0, "files": []}


def test_a_folder_of_notes_moved_in_or_out_is_reindexed(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """A folder moved into the KB raises one event (for the folder), none for its notes; so
    does one moved out. Both must still reach the index."""
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    outside = tmp_path / "incoming"
    outside.mkdir()
    for i in range(3):
        (outside / f"memo-{i}.md").write_text(f"# Memo {i}\n\nThe glorptastic memo {i}.\n",
                                              encoding="utf-8")
    expected = [f"incoming/memo-{i}.md" for i in range(3)]
    with serving(kb, env, "--watch") as server:
        outside.rename(kb / "incoming")
        found(server, "glorptastic", expected, "a folder moved in")
        (kb / "incoming").rename(tmp_path / "gone")
        found(server, "glorptastic", [], "a folder moved out")
        # a hidden folder moved in is not a change: a note saved after it is indexed, the
        # hidden notes are not
        (tmp_path / "gone").rename(kb / ".drafts")
        (kb / "team" / "later.md").write_text("# Later\n\nThe flumbergast memo.\n",
                                              encoding="utf-8")
        found(server, "flumbergast", ["team/later.md"], "a note saved after")
        assert paths_for(server, "glorptastic") == []


def test_a_failed_reindex_is_tried_again_without_another_event(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """While another `groove index` holds the index, the watcher's re-index fails; it tries
    again on its own, so the edit is not left out until the next change."""
    import fcntl

    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    note = kb / "reliability" / "retry-budgets.md"
    with serving(kb, env, "--watch") as server:
        with open(kb / ".groove.db.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with note.open("a", encoding="utf-8") as out:
                out.write("\n## Field notes\n\nThe snarfwobble outage.\n")
            wait_until(lambda: server.logged("re-indexing kb failed"),
                       what="the watcher's re-index failing on the held lock")
            assert paths_for(server, "snarfwobble") == []
        found(server, "snarfwobble", ["reliability/retry-budgets.md"], "the retried re-index")


def test_a_deleted_kb_stops_the_watcher_and_is_never_rebuilt_empty(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """Issue 40 item 7: the watcher used to recreate a deleted (or moved) KB with an empty
    index and serve 0 hits with no warning."""
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env, "--watch") as server:
        assert json.loads(server.get("/health")[1]) == {"ok": True}
        kb.rename(tmp_path / "moved")
        (tmp_path / "moved" / "team" / "new.md").write_text("# New\n\nA note after the move.\n")
        wait_until(lambda: server.logged("was deleted or moved; watching stopped"),
                   what="the watcher noticing its KB is gone")
        assert json.loads(server.get("/health")[1]) == {"ok": False}
        assert not kb.exists()  # nothing recreated it
        assert not server.logged("Traceback")
