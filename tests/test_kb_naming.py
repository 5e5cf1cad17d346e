"""One way to name a KB (issue 46 item 5): `serve` and `mcp` take the folder positionally and
by `--kb-path`, like `index`; the same folder named twice is served once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from groove_cli.cli_serve import served_kbs


def test_positional_and_flag_kbs_are_served_once_each(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert served_kbs(None, None) is None
    assert served_kbs(None, a) == [str(a)]
    assert served_kbs([str(a)], b) == [str(a), str(b)]
    assert served_kbs([str(a), str(tmp_path / "." / "a")], a) == [str(a)]


def test_mcp_serves_the_kb_named_by_kb_path(kb_env: tuple[Path, dict[str, str]]) -> None:
    kb, env = kb_env
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "groove_cli", "mcp", "--kb-path", str(kb)],
                                   env=env)

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=120) as client:
            return await client.call_tool("search", {"query": "retry budget", "limit": 1})

    answer = anyio.run(main)
    assert not answer.is_error
    assert answer.structured_content["results"][0]["path"] == "reliability/retry-budgets.md"
