"""File selection and safe reads (index.md §1, §6.1 step 6)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from groove_cli.errors import GrooveError
from groove_cli.scan import (
    ALWAYS_EXCLUDED,
    MAX_FILE_BYTES,
    ScanResult,
    SkipKind,
    SourceBytes,
    SourceDecodeError,
    SourceFile,
    SourceSkip,
    collect_files,
    decode_source,
    read_source,
)

needs_posix = pytest.mark.skipif(os.name != "posix", reason="POSIX links and FIFOs")


def write(kb: Path, rel: str, text: str = "note\n") -> Path:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def scan(
    kb: Path, exclude_dirs: Sequence[str] = (), extensions: Sequence[str] = ("md",)
) -> ScanResult:
    return collect_files(kb, exclude_dirs=exclude_dirs, extensions=extensions)


def rels(result: ScanResult) -> list[str]:
    return [source.rel for source in result.files]


def source(kb: Path, rel: str) -> SourceFile:
    return SourceFile(rel=rel, path=kb / rel)


# --- collect_files: order, extensions, keys ----------------------------------------------------


def test_files_sorted_by_relative_path_with_slashes(tmp_path: Path) -> None:
    for rel in ("b.md", "a/z.md", "a/b/c.md", "A.md", "日本語/メモ.md", "a.md"):
        write(tmp_path, rel)
    result = scan(tmp_path)
    assert rels(result) == sorted(["b.md", "a/z.md", "a/b/c.md", "A.md", "日本語/メモ.md", "a.md"])
    assert rels(result)[:2] == ["A.md", "a.md"]  # code point order: uppercase first
    assert result.files[1].path == tmp_path / "a.md"
    assert (result.refused, result.ignore_patterns, result.warnings) == ((), None, ())


def test_extensions_case_insensitive_and_enabled_only(tmp_path: Path) -> None:
    for rel in ("a.md", "b.MD", "c.Md", "d.txt", "e.TXT", "f.markdown", "g.md.bak", ".md", "h"):
        write(tmp_path, rel)
    assert rels(scan(tmp_path)) == ["a.md", "b.MD", "c.Md"]
    assert rels(scan(tmp_path, extensions=("txt",))) == ["d.txt", "e.TXT"]
    assert rels(scan(tmp_path, extensions=("MD", "txt"))) == [
        "a.md", "b.MD", "c.Md", "d.txt", "e.TXT"]


def test_dotfile_named_like_extension_has_no_extension(tmp_path: Path) -> None:
    write(tmp_path, ".md")
    write(tmp_path, "x/.hidden.md")
    assert rels(scan(tmp_path)) == ["x/.hidden.md"]


def test_empty_kb(tmp_path: Path) -> None:
    assert scan(tmp_path) == ScanResult(files=(), refused=(), ignore_patterns=None, warnings=())


def test_missing_kb_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GrooveError, match="cannot read the knowledge base"):
        scan(tmp_path / "nope")


# --- exclusion layers 1 and 2 ------------------------------------------------------------------


def test_always_excluded_dirs_any_ascii_case(tmp_path: Path) -> None:
    assert ALWAYS_EXCLUDED == (".git", ".svn", "node_modules")
    for rel in (".git/a.md", ".GIT/b.md", ".Svn/c.md", "sub/Node_Modules/d.md", "keep/e.md"):
        write(tmp_path, rel)
    assert rels(scan(tmp_path)) == ["keep/e.md"]


def test_always_excluded_applies_to_directories_only(tmp_path: Path) -> None:
    write(tmp_path, "node_modules.md")
    assert rels(scan(tmp_path)) == ["node_modules.md"]


def test_exclude_dirs_casefold(tmp_path: Path) -> None:
    for rel in ("Archive/a.md", "deep/ARCHIVE/b.md", "STRASSE/c.md", "Straße/d.md", "ok/e.md",
                "archive.md"):
        write(tmp_path, rel)
    result = scan(tmp_path, exclude_dirs=["archive", "straße"])
    # casefold("Straße") == "strasse" == casefold("STRASSE"); lower() would not match them.
    assert rels(result) == ["archive.md", "ok/e.md"]


def test_exclude_dirs_match_basenames_not_paths(tmp_path: Path) -> None:
    write(tmp_path, "a/b/c.md")
    assert rels(scan(tmp_path, exclude_dirs=["a/b"])) == ["a/b/c.md"]
    assert rels(scan(tmp_path, exclude_dirs=["b"])) == []


def test_exclude_dirs_replace_but_git_still_excluded(tmp_path: Path) -> None:
    write(tmp_path, ".git/x.md")
    write(tmp_path, ".obsidian/y.md")
    shown = collect_files(tmp_path, exclude_dirs=[], extensions=["md"], hidden_dirs=True)
    assert rels(shown) == [".obsidian/y.md"]


def test_hidden_folders_are_skipped_unless_asked(tmp_path: Path) -> None:
    # issue 28: .github/ and .claude/ were indexed as notes
    for rel in (".github/workflows/ci.md", ".claude/agent.md", "docs/.cache/x.md",
                "docs/.draft.md", "docs/a.md"):
        write(tmp_path, rel)
    assert rels(scan(tmp_path, exclude_dirs=[])) == ["docs/.draft.md", "docs/a.md"]
    every = collect_files(tmp_path, exclude_dirs=[], extensions=["md"], hidden_dirs=True)
    assert rels(every) == [".claude/agent.md", ".github/workflows/ci.md", "docs/.cache/x.md",
                           "docs/.draft.md", "docs/a.md"]


# --- layer 3: .grooveignore --------------------------------------------------------------------


def test_grooveignore_patterns(tmp_path: Path) -> None:
    for rel in ("drafts/a.md", "notes/drafts/b.md", "notes/c.tmp.md", "notes/d.md", "top.md",
                "sub/top.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "# comment\n\ndrafts/\n*.tmp.md\n/top.md\n")
    result = scan(tmp_path)
    assert rels(result) == ["notes/d.md", "sub/top.md"]
    assert result.ignore_patterns == 3
    assert result.warnings == ()


def test_grooveignore_is_case_insensitive(tmp_path: Path) -> None:
    for rel in ("Drafts/a.md", "x/Secret.MD", "ok.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "drafts/\nSECRET.md\n")
    assert rels(scan(tmp_path)) == ["ok.md"]


def test_grooveignore_japanese_names(tmp_path: Path) -> None:
    for rel in ("下書き/a.md", "メモ/非公開.md", "メモ/公開.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "下書き/\n非公開.md\n")
    assert rels(scan(tmp_path)) == ["メモ/公開.md"]


def test_grooveignore_negation_reincludes_a_file(tmp_path: Path) -> None:
    for rel in ("a.md", "keep.md", "sub/keep.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "*.md\n!keep.md\n")
    assert rels(scan(tmp_path)) == ["keep.md", "sub/keep.md"]


def test_grooveignore_last_match_wins(tmp_path: Path) -> None:
    write(tmp_path, "keep.md")
    write(tmp_path, ".grooveignore", "!keep.md\n*.md\n")
    assert rels(scan(tmp_path)) == []


def test_grooveignore_cannot_reinclude_under_excluded_directory(tmp_path: Path) -> None:
    for rel in ("drafts/keep.md", "drafts/sub/keep.md", "drafts/other.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "drafts/\n!drafts/keep.md\n!keep.md\n!drafts/sub/\n")
    assert rels(scan(tmp_path)) == []


def test_grooveignore_directory_pattern_does_not_match_a_file(tmp_path: Path) -> None:
    write(tmp_path, "notes.md/inner.md")
    write(tmp_path, "other/notes.md")
    write(tmp_path, ".grooveignore", "notes.md/\n")
    assert rels(scan(tmp_path)) == ["other/notes.md"]


def test_grooveignore_anchored_directory(tmp_path: Path) -> None:
    for rel in ("private/a.md", "x/private/b.md"):
        write(tmp_path, rel)
    write(tmp_path, ".grooveignore", "/private/\n")
    assert rels(scan(tmp_path)) == ["x/private/b.md"]


def test_grooveignore_bom_crlf_and_count(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    (tmp_path / ".grooveignore").write_bytes("\ufeffa.md\r\n# c\r\n   \r\n".encode())
    result = scan(tmp_path)
    assert rels(result) == ["b.md"]
    assert result.ignore_patterns == 1


def test_grooveignore_without_patterns_is_applied_with_zero(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, ".grooveignore", "# nothing yet\n")
    result = scan(tmp_path)
    assert (rels(result), result.ignore_patterns) == (["a.md"], 0)


def test_only_root_grooveignore_and_never_gitignore(tmp_path: Path) -> None:
    write(tmp_path, "sub/a.md")
    write(tmp_path, "b.md")
    write(tmp_path, "sub/.grooveignore", "a.md\n")
    write(tmp_path, ".gitignore", "b.md\n")
    result = scan(tmp_path)
    assert rels(result) == ["b.md", "sub/a.md"]
    assert result.ignore_patterns is None


def test_grooveignore_reread_each_scan(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    assert rels(scan(tmp_path)) == ["a.md"]
    write(tmp_path, ".grooveignore", "a.md\n")
    assert rels(scan(tmp_path)) == []


def test_grooveignore_at_the_size_cap_is_applied(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    text = "a.md\n" + "#" * (64 * 1024 - 6) + "\n"
    assert len(text.encode()) == 64 * 1024
    write(tmp_path, ".grooveignore", text)
    result = scan(tmp_path)
    assert (rels(result), result.ignore_patterns, result.warnings) == ([], 1, ())


def test_grooveignore_over_64_kib_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, ".grooveignore", "a.md\n" + "#" * (64 * 1024 - 5) + "\n")
    result = scan(tmp_path)
    assert rels(result) == ["a.md"]
    assert result.ignore_patterns is None
    assert result.warnings == (
        f"ignoring {tmp_path / '.grooveignore'}: it is 65537 bytes, over the 65536-byte limit",
    )


def test_grooveignore_pattern_cap(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    names = [f"n{i}.md" for i in range(999)]
    write(tmp_path, ".grooveignore", "\n".join(["a.md", *names]) + "\n")
    assert scan(tmp_path).ignore_patterns == 1000
    write(tmp_path, ".grooveignore", "\n".join(["a.md", *names, "extra.md"]) + "\n")
    result = scan(tmp_path)
    assert (rels(result), result.ignore_patterns) == (["a.md"], None)
    assert result.warnings == (
        f"ignoring {tmp_path / '.grooveignore'}: it has 1001 patterns, over the 1000 limit",
    )


def test_grooveignore_invalid_utf8_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    (tmp_path / ".grooveignore").write_bytes(b"a.md\n\xff\n")
    result = scan(tmp_path)
    assert rels(result) == ["a.md"]
    assert result.ignore_patterns is None
    assert result.warnings == (
        f"ignoring {tmp_path / '.grooveignore'}: cannot read it: "
        "not valid UTF-8 (invalid start byte at byte 5)",
    )


def test_grooveignore_directory_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    (tmp_path / ".grooveignore").mkdir()
    result = scan(tmp_path)
    assert rels(result) == ["a.md"]
    assert result.warnings == (f"ignoring {tmp_path / '.grooveignore'}: not a regular file",)


def test_grooveignore_invalid_pattern_dropped_others_kept(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, "b.md")
    write(tmp_path, ".grooveignore", "!\na.md\n")
    result = scan(tmp_path)
    assert rels(result) == ["b.md"]
    assert result.ignore_patterns == 1
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith(
        f"ignoring invalid pattern '!' in {tmp_path / '.grooveignore'}: ")


@needs_posix
def test_grooveignore_symlink_is_ignored(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md")
    write(tmp_path, "elsewhere", "a.md\n")
    (kb / ".grooveignore").symlink_to(tmp_path / "elsewhere")
    result = scan(kb)
    assert rels(result) == ["a.md"]
    assert result.ignore_patterns is None
    assert result.warnings == (f"ignoring {kb / '.grooveignore'}: refused symbolic link",)


@needs_posix
def test_grooveignore_hard_link_is_ignored(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md")
    outside = write(tmp_path, "elsewhere", "a.md\n")
    os.link(outside, kb / ".grooveignore")
    result = scan(kb)
    assert rels(result) == ["a.md"]
    assert result.warnings == (f"ignoring {kb / '.grooveignore'}: refused hard link",)


@needs_posix
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_grooveignore_unreadable_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    ignore = write(tmp_path, ".grooveignore", "a.md\n")
    ignore.chmod(0)
    try:
        result = scan(tmp_path)
    finally:
        ignore.chmod(0o644)
    assert rels(result) == ["a.md"]
    assert result.warnings == (f"ignoring {ignore}: cannot read it: Permission denied",)


# --- links and special files -------------------------------------------------------------------


@needs_posix
def test_symlinks_refused_and_not_followed(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "real.md")
    target = write(tmp_path, "outside/secret.md")
    (kb / "link.md").symlink_to(target)
    (kb / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (kb / "other.png").symlink_to(target)
    result = scan(kb)
    assert rels(result) == ["real.md"]
    # A link with an enabled extension is reported; the directory link is only not followed.
    assert result.refused == (("link.md", "refused symbolic link"),)


@needs_posix
def test_symlink_excluded_by_ignore_file_is_not_reported(tmp_path: Path) -> None:
    write(tmp_path, "real.md")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    write(tmp_path, ".grooveignore", "link.md\n")
    assert scan(tmp_path).refused == ()


@needs_posix
def test_hard_links_refused(tmp_path: Path) -> None:
    first = write(tmp_path, "a/first.md")
    os.link(first, tmp_path / "second.md")
    write(tmp_path, "single.md")
    result = scan(tmp_path)
    assert rels(result) == ["single.md"]
    assert result.refused == (
        ("a/first.md", "refused hard link"),
        ("second.md", "refused hard link"),
    )


@needs_posix
def test_fifo_refused_without_opening(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    result = scan(tmp_path)
    assert (rels(result), result.refused) == ([], (("pipe.md", "not a regular file"),))


@needs_posix
def test_non_utf8_file_name_skipped_with_warning(tmp_path: Path) -> None:
    write(tmp_path, "ok.md")
    (tmp_path / os.fsdecode(b"bad\xff.md")).write_text("x")
    result = scan(tmp_path)
    assert rels(result) == ["ok.md"]
    assert result.warnings == ("Skipping bad\\xff.md: file name is not valid UTF-8",)


# --- read_source -------------------------------------------------------------------------------


def test_read_source_returns_bytes_and_sha256(tmp_path: Path) -> None:
    raw = "---\ntitle: メモ\n---\n本文\r\n".encode()
    (tmp_path / "n.md").write_bytes(raw)
    result = read_source(source(tmp_path, "n.md"))
    assert result == SourceBytes(rel="n.md", raw=raw, sha256=hashlib.sha256(raw).hexdigest(),
                                 mtime_ns=(tmp_path / "n.md").stat().st_mtime_ns)
    assert isinstance(result, SourceBytes)
    assert result.size == len(raw)
    assert result.sha256 == result.sha256.lower()


def test_read_source_size_cap_from_stat(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written or read
    result = read_source(source(tmp_path, "big.md"))
    assert result == SourceSkip(
        rel="big.md",
        reason="text file too large (52428801 bytes > 52428800 limit)",
        kind=SkipKind.KEEP_ROWS,
    )
    assert result.keeps_rows


def test_read_source_at_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "edge.md"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES)
    result = read_source(source(tmp_path, "edge.md"))
    assert isinstance(result, SourceBytes)
    assert result.size == 52428800 == 50 * 1024 * 1024


def test_read_source_missing_file_keeps_rows(tmp_path: Path) -> None:
    result = read_source(source(tmp_path, "gone.md"))
    assert result == SourceSkip(
        rel="gone.md", reason="failed to read: No such file or directory", kind=SkipKind.KEEP_ROWS
    )


@needs_posix
def test_read_source_refuses_a_file_replaced_by_a_symlink(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    found = scan(tmp_path).files[0]
    (tmp_path / "a.md").unlink()
    (tmp_path / "a.md").symlink_to(write(tmp_path, "target.txt"))
    result = read_source(found)
    assert result == SourceSkip(rel="a.md", reason="refused symbolic link", kind=SkipKind.REFUSED)
    assert not result.keeps_rows


@needs_posix
def test_read_source_refuses_a_hard_link_made_after_the_scan(tmp_path: Path) -> None:
    path = write(tmp_path, "a.md")
    found = scan(tmp_path).files[0]
    os.link(path, tmp_path / "copy.txt")
    assert read_source(found) == SourceSkip(
        rel="a.md", reason="refused hard link", kind=SkipKind.REFUSED
    )


@needs_posix
def test_read_source_refuses_a_linked_parent_directory(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "sub/a.md")
    found = scan(kb).files[0]
    (kb / "sub").rename(tmp_path / "moved")
    (kb / "sub").symlink_to(tmp_path / "moved", target_is_directory=True)
    assert read_source(found) == SourceSkip(
        rel="sub/a.md", reason="refused symbolic link", kind=SkipKind.REFUSED
    )


@needs_posix
def test_read_source_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.md")
    assert read_source(source(tmp_path, "p.md")) == SourceSkip(
        rel="p.md", reason="not a regular file", kind=SkipKind.REFUSED
    )


# --- decode_source -----------------------------------------------------------------------------


def test_decode_source_strict_utf8() -> None:
    assert decode_source("\ufeff日本語".encode()) == "\ufeff日本語"
    with pytest.raises(SourceDecodeError) as caught:
        decode_source(b"ok \xe6\x97")
    assert str(caught.value) == "not valid UTF-8 (unexpected end of data at byte 3)"
    with pytest.raises(SourceDecodeError, match=r"invalid start byte at byte 2"):
        decode_source(b"ab\xff")
