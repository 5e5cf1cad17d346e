"""`groove tune --write`: in-place groove.toml edits that keep everything else byte for byte."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from groove_cli.config import load_settings, validate_text
from groove_cli.errors import ConfigError, GrooveError
from groove_cli.evaluate import tune as T
from groove_cli.evaluate.tune.run import TuneRequest, run_tune
from groove_cli.evaluate.tune.write import (
    REFUSE_KEEP_DEFAULTS,
    creating_config_note,
    edit_config_text,
    refuse_user_config,
    write_recommendation,
    write_refusal,
    write_target,
    written_note,
)

# h=4.0 ctx=1.0 content=0.5 k=10
FUSION = T.fusion_grid()[((3 * 4 + 1) * 4 + 0) * 6 + 1]
# vector_weight=1.5 fts_weight=1.0 cjk_weight=6.0 min_score=0.2
RETRIEVAL = T.retrieval_grid()[(3 * 3 + 1) * 4 + 1]

COMMENTED = """\
# groove config for my notes
kb_path = "notes"   # relative to this file
model = "multilingual-e5-small"

[parsers]
enabled = ["md", "txt"]  # both

# fusion knobs, tuned by hand
[search.fusion]
rrf_k = 60          # the RRF constant
bm25_heading_weight = 2.0
# the context column is empty in this KB
bm25_context_weight = 1.0

[search.mmr]
enabled = false
lambda = 0.7

[eval]
k_values = [1, 5, 10]   # tune adds 5 anyway
"""

COMMENTED_WRITTEN = """\
# groove config for my notes
kb_path = "notes"   # relative to this file
model = "multilingual-e5-small"

[parsers]
enabled = ["md", "txt"]  # both

# fusion knobs, tuned by hand
[search.fusion]
rrf_k = 10.0          # the RRF constant
bm25_heading_weight = 4.0
# the context column is empty in this KB
bm25_context_weight = 1.0
bm25_content_weight = 0.5

[search.mmr]
enabled = false
lambda = 0.7

[eval]
k_values = [1, 5, 10]   # tune adds 5 anyway
"""


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_commented_file_changes_only_the_written_values(tmp_path: Path) -> None:
    path = _write(tmp_path / "groove.toml", COMMENTED)
    written = write_recommendation(path, "fusion", FUSION, validate=validate_text)
    assert path.read_text(encoding="utf-8") == COMMENTED_WRITTEN
    assert written == T.WrittenKeys(path, "search.fusion", (
        "rrf_k", "bm25_heading_weight", "bm25_context_weight", "bm25_content_weight"))
    assert written_note(written) == f"wrote 4 key(s) to {path} ([search.fusion])"
    assert sorted(os.listdir(tmp_path)) == ["groove.toml"]  # no temporary file left behind


def test_dotted_keys_are_replaced_in_place() -> None:
    text = (
        "[search]\n"
        "fusion.rrf_k = 60   # dotted\n"
        "min_confidence_ratio = 1.5\n"
        "fusion.bm25_heading_weight = 2\n"
        "fusion.bm25_context_weight = 1.0\n"
        "fusion.bm25_content_weight = 1.0  # c\n"
        "\n"
        "[eval]\n"
        "k_values = [1]\n"
    )
    assert edit_config_text(text, "fusion", FUSION) == (
        "[search]\n"
        "fusion.rrf_k = 10.0   # dotted\n"
        "min_confidence_ratio = 1.5\n"
        "fusion.bm25_heading_weight = 4.0\n"
        "fusion.bm25_context_weight = 1.0\n"
        "fusion.bm25_content_weight = 0.5  # c\n"
        "\n"
        "[eval]\n"
        "k_values = [1]\n"
    )


def test_top_level_dotted_keys_are_replaced_in_place() -> None:
    text = ('kb_path = "x"\nsearch.retrieval.vector_weight = 2  # ratio\n'
            "search.retrieval.min_score = 0.1\n")
    edited = edit_config_text(text, "retrieval", RETRIEVAL)
    assert edited.startswith('kb_path = "x"\nsearch.retrieval.vector_weight = 1.5  # ratio\n')
    validate_text(edited, Path("groove.toml"))
    assert "search.retrieval.min_score = 0.2\n" in edited
    assert "search.retrieval.fts_weight = 1.0\n" in edited  # the missing key joins the table


def test_inline_table_values_are_replaced_in_place() -> None:
    text = (
        "[search]\n"
        "fusion = { rrf_k = 30, bm25_heading_weight = 1, bm25_context_weight = 1, "
        "bm25_content_weight = 1 }  # inline\n"
        "min_confidence_ratio = 1.0\n"
    )
    assert edit_config_text(text, "fusion", FUSION) == (
        "[search]\n"
        "fusion = { rrf_k = 10.0, bm25_heading_weight = 4.0, bm25_context_weight = 1.0, "
        "bm25_content_weight = 0.5 }  # inline\n"
        "min_confidence_ratio = 1.0\n"
    )


def test_inline_table_gains_missing_keys_in_its_own_style() -> None:
    text = '[search]\nretrieval = {mode = "hybrid", min_score = 0.3}  # x\n'
    assert edit_config_text(text, "retrieval", RETRIEVAL) == (
        '[search]\nretrieval = {mode = "hybrid", min_score = 0.2, vector_weight = 1.5, '
        'fts_weight = 1.0, cjk_weight = 6.0}  # x\n'
    )
    text = "search = { mmr = { enabled = true } }  # all inline\n"
    edited = edit_config_text(text, "fusion", FUSION)
    assert edited == (
        "search = { mmr = { enabled = true }, fusion = { rrf_k = 10.0, bm25_heading_weight = 4.0, "
        "bm25_context_weight = 1.0, bm25_content_weight = 0.5 } }  # all inline\n"
    )
    validate_text(edited, Path("groove.toml"))


def test_missing_key_is_added_to_the_existing_table() -> None:
    text = ('[search.retrieval]\nmode = "hybrid"   # legs\nvector_weight = 1.2\n'
            "\n[eval]\nk_values = [1]\n")
    assert edit_config_text(text, "retrieval", RETRIEVAL) == (
        '[search.retrieval]\nmode = "hybrid"   # legs\nvector_weight = 1.5\nfts_weight = 1.0\n'
        "cjk_weight = 6.0\nmin_score = 0.2\n\n[eval]\nk_values = [1]\n"
    )


def test_missing_table_is_appended_at_the_end() -> None:
    text = "# c\n[search]\nmin_confidence_ratio = 2.0\n\n[eval]\nk_values = [1]  # end"
    assert edit_config_text(text, "fusion", FUSION) == (
        "# c\n[search]\nmin_confidence_ratio = 2.0\n\n[eval]\nk_values = [1]  # end\n"
        "\n"
        "[search.fusion]\n"
        "rrf_k = 10.0\n"
        "bm25_heading_weight = 4.0\n"
        "bm25_context_weight = 1.0\n"
        "bm25_content_weight = 0.5\n"
    )
    # a file that already ends with a blank line gets no second one
    assert edit_config_text('kb_path = "n"\n\n', "retrieval", RETRIEVAL) == (
        'kb_path = "n"\n\n[search.retrieval]\nvector_weight = 1.5\nfts_weight = 1.0\n'
        "cjk_weight = 6.0\nmin_score = 0.2\n"
    )


def test_a_top_table_key_is_written_where_its_table_is() -> None:
    """The per-note space writes `[search] per_note`, a table directly under the document."""
    one = T.grid("per-note")[1]
    assert edit_config_text("", "per-note", one) == "[search]\nper_note = 1\n"
    assert edit_config_text("# mine\n[search.fusion]\nrrf_k = 40.0\n", "per-note", one) == (
        "# mine\n[search]\nper_note = 1\n\n[search.fusion]\nrrf_k = 40.0\n")
    assert edit_config_text("[search]\nmin_confidence_ratio = 1.2  # mine\n\n[eval]\n",
                            "per-note", one) == (
        "[search]\nmin_confidence_ratio = 1.2  # mine\nper_note = 1\n\n[eval]\n")
    assert edit_config_text("search = {min_confidence_ratio = 1.2}\n", "per-note", one) == (
        "search = {min_confidence_ratio = 1.2, per_note = 1}\n")
    with pytest.raises(ConfigError, match="search is not a table"):
        edit_config_text('search = "x"\n', "per-note", one)


def test_crlf_files_stay_crlf() -> None:
    text = "# c\r\n[search.fusion]\r\nrrf_k = 30 # x\r\n\r\n[eval]\r\nk_values = [1]\r\n"
    assert edit_config_text(text, "fusion", FUSION) == (
        "# c\r\n[search.fusion]\r\nrrf_k = 10.0 # x\r\nbm25_heading_weight = 4.0\r\n"
        "bm25_context_weight = 1.0\r\nbm25_content_weight = 0.5\r\n\r\n[eval]\r\nk_values = [1]\r\n"
    )


def test_non_table_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"search\.fusion is not a table"):
        edit_config_text("[search]\nfusion = 3\n", "fusion", FUSION)
    with pytest.raises(ConfigError, match="search is not a table"):
        edit_config_text('search = "x"\n', "fusion", FUSION)


def test_missing_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "groove.toml"
    written = write_recommendation(path, "retrieval", RETRIEVAL, validate=validate_text)
    assert path.read_text(encoding="utf-8") == (
        "[search.retrieval]\nvector_weight = 1.5\nfts_weight = 1.0\ncjk_weight = 6.0\n"
        "min_score = 0.2\n"
    )
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert written.keys == ("vector_weight", "fts_weight", "cjk_weight", "min_score")
    assert written.table == "search.retrieval"


def test_permissions_are_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "groove.toml", "[search.fusion]\nrrf_k = 30\n")
    path.chmod(0o640)
    write_recommendation(path, "fusion", FUSION, validate=validate_text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert "rrf_k = 10.0\n" in path.read_text(encoding="utf-8")


def test_a_read_only_config_is_refused(tmp_path: Path) -> None:
    text = "[search.fusion]\nrrf_k = 30\n"
    path = _write(tmp_path / "groove.toml", text)
    path.chmod(0o444)
    with pytest.raises(GrooveError, match=r"refusing to write .*groove\.toml: it is read-only "
                                          r"\(mode 444\)") as caught:
        write_recommendation(path, "fusion", FUSION, validate=validate_text)
    assert caught.value.exit_code == 1 and "chmod u+w" in str(caught.value.hint)
    assert path.read_text(encoding="utf-8") == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert sorted(os.listdir(tmp_path)) == ["groove.toml"]


def test_tune_refuses_a_read_only_config_before_the_sweep(tmp_path: Path) -> None:
    # The refusal comes first: the index and golden file are missing too, and are not reached.
    path = _write(tmp_path / "groove.toml", "[search.fusion]\nrrf_k = 30\n")
    path.chmod(0o444)
    request = TuneRequest(settings=load_settings(path, {}), db=tmp_path / "missing.db",
                          kb=tmp_path, golden=None, k_values=(1, 5, 10), limit=None,
                          space="fusion", write=True)
    with pytest.raises(GrooveError, match=r"refusing to write .*groove\.toml: it is read-only"):
        run_tune(request)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown needs root")
def test_owner_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "groove.toml", "[search.fusion]\nrrf_k = 30\n")
    os.chown(path, 4321, 4322)
    path.chmod(0o664)
    write_recommendation(path, "fusion", FUSION, validate=validate_text)
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4321, 4322, 0o664)
    assert "rrf_k = 10.0\n" in path.read_text(encoding="utf-8")


def test_validation_runs_before_anything_is_written(tmp_path: Path) -> None:
    text = "[search.fusion]\nrrf_kk = 30\n"  # an unknown key: the validator refuses the result
    path = _write(tmp_path / "groove.toml", text)
    with pytest.raises(ConfigError, match=r'unknown key "search\.fusion\.rrf_kk"'):
        write_recommendation(path, "fusion", FUSION, validate=validate_text)
    assert path.read_text(encoding="utf-8") == text
    assert sorted(os.listdir(tmp_path)) == ["groove.toml"]


def test_validator_sees_the_edited_text_and_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path / "groove.toml", "[search.fusion]\nrrf_k = 30\n")
    seen: list[tuple[str, Path]] = []

    def record(text: str, where: Path) -> None:
        seen.append((text, where))

    write_recommendation(path, "fusion", FUSION, validate=record)
    assert seen == [(path.read_text(encoding="utf-8"), path)]


def test_symlinked_config_is_written_through(tmp_path: Path) -> None:
    real = _write(tmp_path / "real.toml", "[search.fusion]\nrrf_k = 30\n")
    link = tmp_path / "groove.toml"
    link.symlink_to(real)
    write_recommendation(link, "fusion", FUSION, validate=validate_text)
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8").startswith("[search.fusion]\nrrf_k = 10.0\n")


def test_refusals(tmp_path: Path) -> None:
    user = tmp_path / "config" / "groove" / "groove.toml"
    local = tmp_path / "groove.toml"
    assert REFUSE_KEEP_DEFAULTS == (
        "--write refused: the verdict is keep-defaults (use --force to write the refit values "
        "anyway)")
    assert write_refusal("keep_default", force=False, loaded=local, user_config=user,
                         config_flag=None) == REFUSE_KEEP_DEFAULTS
    assert write_refusal("keep_default", force=True, loaded=local, user_config=user,
                         config_flag=None) is None
    assert write_refusal("adopt", force=False, loaded=None, user_config=user,
                         config_flag=None) is None
    assert write_refusal("adopt", force=False, loaded=user, user_config=user,
                         config_flag=None) == refuse_user_config(user)
    assert write_refusal("adopt", force=False, loaded=user, user_config=user,
                         config_flag=user) is None
    assert refuse_user_config(user) == (
        f"--write refused: the loaded config is the per-user file {user}, which applies to every "
        f"knowledge base; pass --config {user} to write there, or create a groove.toml for this "
        "knowledge base")


def test_write_target() -> None:
    assert write_target(None, Path("/w")) == Path("/w/groove.toml")
    assert write_target(Path("/c/x.toml"), Path("/w")) == Path("/c/x.toml")
    assert creating_config_note(Path("/w/groove.toml")) == (
        "no config file was loaded; creating /w/groove.toml")
