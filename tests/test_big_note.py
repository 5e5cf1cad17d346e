"""A huge note is indexed in bounded memory and linear time (issue 15 item 11).

One 30 MB chunk used to be tokenized whole three times (token count, input length, model
input): 3.5 GB and 91 s. Long texts are now tokenized a window at a time, cut at whitespace,
which gives the same tokens as the whole text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from groove_cli.chunk import parse_document
from groove_cli.models import Embedder, resolve_model
from groove_cli.models.embedder import WINDOW_CHARS, windows
from tests.onnx_builders import model_dir
from tests.test_index import TINY_MODEL_TOML, tiny_embedder_onnx
from tests.waiting import HANG_GUARD_S

WORDS = ("retry", "budget", "storm", "queue", "backup", "障害", "連絡", "手順", "latency",
         "network", "schedule", "café", "naïve")


def long_text(n_chars: int) -> str:
    out: list[str] = []
    size = i = 0
    while size < n_chars:
        word = WORDS[(i * 7 + i // 3) % len(WORDS)]
        out.append(word)
        size += len(word) + 1
        i += 1
        if i % 13 == 0:
            out.append("\n")
    return " ".join(out)


def test_windows_cover_the_text_and_cut_at_whitespace() -> None:
    text = long_text(3 * WINDOW_CHARS + 123)
    parts = list(windows(text))
    assert "".join(parts) == text
    assert len(parts) >= 4
    assert all(len(p) <= WINDOW_CHARS for p in parts)
    assert all(p[0] in " \n" for p in parts[1:])
    solid = "x" * (2 * WINDOW_CHARS + 5)  # no whitespace at all: cut at the window size
    assert [len(p) for p in windows(solid)] == [WINDOW_CHARS, WINDOW_CHARS, 5]


def test_windowed_tokens_equal_whole_text_tokens(real_models_dir: Path) -> None:
    model = resolve_model("multilingual-e5-small", real_models_dir, offline=True)
    embedder = Embedder.load(model)
    text = long_text(5 * WINDOW_CHARS)
    tok = embedder._full_tokenizer()
    whole = tok.encode(text, add_special_tokens=False)
    assert embedder.count_tokens([text, "short text"]) == [
        len(whole.ids), len(tok.encode("short text", add_special_tokens=False).ids)]
    whole.truncate(embedder.max_length - 2)
    expected = tok.post_process(whole).ids
    assert embedder._rows([text], "passage: ")[0][:3] == tok.post_process(
        tok.encode("passage: " + text[:200], add_special_tokens=False)).ids[:3]
    assert embedder._rows([text], "")[0] == expected
    assert embedder.input_lengths([text], "query")[0] > embedder.max_length


CHILD = """
import json, resource, sys
from pathlib import Path
from groove_cli.index import IndexOptions, index_kb
from groove_cli.models.embedder import Embedder

# every call into the tokenizer, counted: the characters each one is handed
calls = []


class Counted:
    def __init__(self, tok):
        self._tok = tok

    def encode(self, text, *args, **kwargs):
        calls.append(len(text))
        return self._tok.encode(text, *args, **kwargs)

    def encode_batch(self, texts, *args, **kwargs):
        calls.extend(len(t) for t in texts)
        return self._tok.encode_batch(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tok, name)


full = Embedder._full_tokenizer
Embedder._full_tokenizer = lambda self: Counted(full(self))
kb, db, model = map(Path, sys.argv[1:4])
report = index_kb(IndexOptions(kb=kb, db=db, model=str(model), max_length=None,
                               models_dir=db.parent / "models", quiet=True))
# VmHWM belongs to this program; ru_maxrss would start from the forking pytest's size
status = Path("/proc/self/status")
peak = (int(next(line.split()[1] for line in status.read_text().splitlines()
                 if line.startswith("VmHWM:"))) if status.exists()
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(json.dumps({"chunks": report.chunks, "peak_mb": peak / 1024,
                  "tokenized_chars": sum(calls), "longest_call": max(calls)}))
"""


@pytest.mark.slow
def test_a_30_mb_note_is_indexed_in_bounded_memory_and_time(tmp_path: Path) -> None:
    model = model_dir(tmp_path / "tiny", tiny_embedder_onnx(), TINY_MODEL_TOML)
    kb = tmp_path / "kb"
    kb.mkdir()
    section = long_text(10_000_000)
    note = kb / "big.md"
    note.write_text("".join(f"## Part {i}\n\n{section}\n\n" for i in range(3)), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(kb), str(tmp_path / "i.db"),
                           str(model)], capture_output=True, text=True, timeout=4 * HANG_GUARD_S,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    # every section is cut to fit the model's window (chunk.py `_fit`), never one 10 MB chunk
    expected = parse_document(note.read_text(encoding="utf-8"), "big.md").chunks
    assert result["chunks"] == len(expected) > 3
    assert max(len(c.content) for c in expected) < 10_000
    assert result["peak_mb"] <= 500, result
    # linear time, by count: no tokenizer call is handed more than a window (the old code
    # handed it each 10 MB chunk whole), and each chunk is tokenised a bounded number of
    # times (counted, measured as an input, embedded), not once per window of its note
    assert result["longest_call"] <= WINDOW_CHARS, result
    assert result["tokenized_chars"] <= 5 * len(note.read_text(encoding="utf-8")), result
