"""groove writes nothing outside the KB's state, the model cache and the paths the user names
(cli.md §2, issue 29 item 3).

`index`, `search`, `eval` and `tune` run in one fresh Python process (so that anything a
dependency writes at import time is caught, as onnxruntime's telemetry database under
`~/.cache/Microsoft/` was) with `HOME` and every `XDG_*` folder inside the test's temp folder, the
tiny model of `test_index.py` named in `./groove.toml`. Every file that appears or changes under
the temp folder must match `ALLOWED`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.onnx_builders import model_dir
from tests.test_index import TINY_MODEL_TOML, tiny_embedder_onnx

ALLOWED = (
    # the KB's state folder: the index, its companions and snapshot, the eval history
    "kb/.groove/*",
    # the model cache and the model folder the config names (the optimised graph)
    "models/*", "model/*",
    # paths the user names on the command line
    "work/run.trec",
)
"""Where groove may write, relative to the test's temp folder: the one list to update when
the KB's state moves (fnmatch patterns; `*` crosses folders)."""

CHILD = r"""
import json, sys
from typer.testing import CliRunner
from groove_cli.cli import app

runner = CliRunner()
codes = {}
for name, args in json.loads(sys.argv[1]):
    result = runner.invoke(app, args)
    codes[name] = [result.exit_code, result.output[-400:]]
print(json.dumps(codes))
"""

NOTES = {
    "animals/cat.md": "# Cat\n\nthe cat sat on the mat\n\n## Fish\n\na cat and a fish\n",
    "animals/dog.md": "# Dog\n\nthe dog sat on a red mat\n",
    "nature/sea.md": "# Sea\n\na fish swims in the blue sea\n",
    "nature/tree.md": "# Tree\n\na bird flies over the green tree\n",
    "nature/house.md": "# House\n\na red house and a tree\n",
}
GOLDEN = [
    {"id": "cat", "query": "cat mat", "expected": [{"path": "animals/cat.md"}]},
    {"id": "fish", "query": "fish sea", "expected": [{"path": "nature/sea.md"}]},
    {"id": "tree", "query": "bird tree", "expected": [{"path": "nature/tree.md"}]},
    {"id": "red", "query": "red house", "expected": [{"path": "nature/house.md"}]},
]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` (relative path → size, mtime in ns), links not followed."""
    found: dict[str, tuple[int, int]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            st = path.lstat()
            found[path.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return found


def test_index_search_eval_tune_write_only_the_kb_state_and_named_paths(tmp_path: Path) -> None:
    root = tmp_path
    home, work, kb = root / "home", root / "work", root / "kb"
    for folder in (home, work, kb):
        folder.mkdir()
    model = model_dir(root / "model", tiny_embedder_onnx(), TINY_MODEL_TOML).resolve()
    for rel, text in NOTES.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    golden = work / "golden.yml"
    golden.write_text(yaml.safe_dump({"queries": GOLDEN}, sort_keys=False), encoding="utf-8")
    (work / "groove.toml").write_text(
        f"model = {json.dumps(str(model))}\nmodels_dir = {json.dumps(str(root / 'models'))}\n",
        encoding="utf-8")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("XDG_", "GROOVE_", "ORT_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_RUNTIME_DIR=str(home / "run"),
               TMPDIR=str(root / "tmp"), GROOVE_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    (root / "tmp").mkdir()
    kb_args = ["--kb-path", str(kb)]
    commands = [
        ("index", ["index", *kb_args]),
        ("search", ["search", *kb_args, "cat"]),
        ("eval", ["eval", *kb_args, "--golden", str(golden), "--trec-run", "run.trec"]),
        ("tune", ["tune", *kb_args, "--golden", str(golden)]),
    ]
    before = _files(root)
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(commands)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    codes = json.loads(proc.stdout.splitlines()[-1])
    assert {name: code for name, (code, _) in codes.items()} == dict.fromkeys(codes, 0), codes
    after = _files(root)
    written = sorted(rel for rel, stat in after.items() if before.get(rel) != stat)
    stray = [rel for rel in written if not any(fnmatch.fnmatch(rel, p) for p in ALLOWED)]
    assert stray == []
    assert "kb/.groove/index.db" in written and "work/run.trec" in written

