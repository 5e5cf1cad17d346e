"""Every read a server makes is confined to the notes `index` would select (issue 40, items 1,
3 and 12): a file named like a location, links, ignored and excluded notes, and lines too long
to hold are refused, whatever route asks (`get`, `multi_get`, `fetch`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import groove_cli
from groove_cli.errors import GrooveError, UsageError
from groove_cli.serve.service import Service


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    (kb / "notes").mkdir(parents=True)
    (kb / "a.md").write_text("# A\n\nline two\nline three\n")
    (kb / "notes" / "kept.md").write_text("# Kept\n\nkept body\n")
    (kb / "notes" / "private.md").write_text("# Private\n\nignored body\n")
    (kb / "node_modules").mkdir()
    (kb / "node_modules" / "dep.md").write_text("# Dep\n")
    (kb / "drafts").mkdir()
    (kb / "drafts" / "draft.md").write_text("# Draft\n")
    (kb / ".grooveignore").write_text("notes/private.md\n")
    (kb / "groove.toml").write_text('exclude_dirs = ["drafts"]\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret\n\nTOP SECRET\n")
    return kb


def service(kb: Path) -> Service:
    return Service([groove_cli.open(kb, db=kb / ".groove.db", config=kb / "groove.toml")])


def test_a_file_named_like_a_location_is_never_read_through(kb: Path) -> None:
    (kb / "a.md:2").symlink_to(kb.parent / "outside" / "secret.md")
    (kb / "b.md:1:1").write_text("# a plain file named like a location\n")
    served = service(kb)
    note = served.get("a.md:2")  # line 2 of a.md, not the link named `a.md:2`
    assert (note["rel_path"], note["line_start"], note["content"].split("\n")[0]) == \
        ("a.md", 2, "")
    assert "TOP SECRET" not in served.get("a.md:2:3")["content"]
    with pytest.raises(GrooveError, match=r"no such note: b\.md"):
        served.get("b.md:1:1")  # `b.md` line 1: the file `b.md:1:1` is no note type
    hits = served.multi_get("*")
    assert [n["rel_path"] for n in hits["notes"]] == ["a.md", "notes/kept.md"]


def test_links_ignored_and_excluded_notes_are_refused(kb: Path) -> None:
    (kb / "notes" / "link.md").symlink_to(kb.parent / "outside" / "secret.md")
    (kb / "linked").symlink_to(kb.parent / "outside", target_is_directory=True)
    served = service(kb)
    refused = {
        "notes/private.md": "not a note of this KB",
        "node_modules/dep.md": "not a note of this KB",
        "drafts/draft.md": "not a note of this KB",
        "notes/link.md": "refused symbolic link",
        "linked/secret.md": "refused symbolic link",
        "groove.toml": "not a note of this KB",
    }
    for location, why in refused.items():
        with pytest.raises(GrooveError, match=why):
            served.get(location)
    for location in ("../outside/secret.md", "/etc/passwd", "./a.md", "notes//kept.md", "a\x00.md"):
        with pytest.raises(UsageError, match="not a path inside the KB"):
            served.get(location)
    assert served.get("notes/kept.md")["content"].endswith("kept body")
    listed = served.multi_get("**")
    assert [n["rel_path"] for n in listed["notes"]] == ["a.md", "notes/kept.md"]
    skipped = served.multi_get(["notes/private.md", "a.md"])
    assert [s["path"] for s in skipped["skipped"]] == ["notes/private.md"]
    with pytest.raises(GrooveError, match="not a note of this KB"):
        served.fetch("kb:notes/private.md")


def test_a_long_line_is_refused_without_being_held(kb: Path) -> None:
    (kb / "big.md").write_bytes(b"# big\n" + b"x" * 3_000_000)  # no newline for 3 MB
    served = service(kb)
    assert served.get("big.md:1:1")["content"] == "# big"
    with pytest.raises(GrooveError, match="gives more than 1000 bytes"):
        served.get("big.md:2:1", max_bytes=1000)
    with pytest.raises(GrooveError, match="larger than"):
        served.get("big.md")


def test_a_message_never_repeats_a_huge_path(kb: Path) -> None:
    served = service(kb)
    with pytest.raises(GrooveError) as caught:
        served.get("d/" * 2500 + "x.md")
    assert len(caught.value.message) < 200 and "…" in caught.value.message
