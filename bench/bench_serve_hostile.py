#!/usr/bin/env python3
"""`groove serve` under a hostile load (issue 40): a normal `/search` while 2,000 connections
each hold half a request head, and the server's resident memory before and after a 1.5 GB POST.
Writes bench/results/serve_hostile.{json,md}.

    python bench/bench_serve_hostile.py [--slow 2000]

The KB is the sample KB (golden/), indexed under bench/work/hostile/; searches are full-text
(`mode=fts`), so the numbers are the server's, not the model's.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import empty_config, machine, machine_line, median, write_results
from bench_serve import GROOVE, env, rss_kb, start_server

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work" / "hostile"
POST_BYTES = 1_500_000_000


def search_s(address: str) -> float:
    host, port = address.rsplit(":", 1)
    start = time.perf_counter()
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("GET", "/search?q=retry+budget&mode=fts&limit=5")
    response = conn.getresponse()
    response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"/search answered {response.status}")
    return time.perf_counter() - start


def huge_post(address: str) -> dict[str, Any]:
    """POST /search announcing 1.5 GB, then send as much as the server reads before it
    answers (it should answer 413 from the header alone)."""
    host, port = address.rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=60)
    conn.sendall(f"POST /search HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {POST_BYTES}\r\n\r\n".encode())
    block, sent = b"x" * (1 << 20), 0
    conn.settimeout(0.05)
    answer = b""
    while sent < POST_BYTES:
        try:
            sent += conn.send(block)
        except (TimeoutError, BlockingIOError):
            pass
        except OSError:
            break  # the server closed the connection
        try:
            answer += conn.recv(65536)
        except (TimeoutError, BlockingIOError):
            continue
        except OSError:
            break
        if answer:
            break
    conn.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None
    return {"status": status, "bytes_sent_before_answer": sent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slow", type=int, default=2000)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    kb = WORK / "kb"
    if not kb.exists():
        shutil.copytree(ROOT / "golden", kb)
    db = WORK / "index.db"
    config = empty_config(WORK)
    if not db.exists():
        subprocess.run([str(GROOVE), "--config", str(config), "--db", str(db), "index",
                        "--kb-path", str(kb), "--quiet"], env=env(), check=True)
    log = (WORK / "serve.log").open("w+b")
    proc, address, _ = start_server(kb, db, config, log)
    data: dict[str, Any] = {"machine": machine(), "slow_connections": args.slow}
    try:
        for _ in range(3):
            search_s(address)
        data["search_alone_s"] = median([search_s(address) for _ in range(10)])
        host, port = address.rsplit(":", 1)
        slow = []
        for _ in range(args.slow):
            conn = socket.create_connection((host, int(port)), timeout=60)
            conn.sendall(b"GET /search?q=x HTTP/1.1\r\nHost: ")
            slow.append(conn)
        data["search_beside_slow_s"] = [search_s(address) for _ in range(10)]
        data["search_beside_slow_max_s"] = max(data["search_beside_slow_s"])
        for conn in slow:
            conn.close()
        time.sleep(1)
        data["rss_before_post_mb"] = rss_kb(proc.pid) / 1024
        data["post"] = huge_post(address)
        time.sleep(1)
        data["rss_after_post_mb"] = rss_kb(proc.pid) / 1024
        data["rss_growth_mb"] = data["rss_after_post_mb"] - data["rss_before_post_mb"]
        data["search_after_s"] = search_s(address)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    lines = ["# `groove serve` under a hostile load (issue 40)", "", machine_line(data["machine"]),
             "", "The sample KB, full-text `/search` (bench/bench_serve_hostile.py).", "",
             "| measure | value | target |", "|---|---|---|",
             f"| `/search` alone, median of 10 | {data['search_alone_s'] * 1000:.1f} ms | |",
             f"| `/search` beside {args.slow:,} connections holding half a request head, "
             f"slowest of 10 | {data['search_beside_slow_max_s'] * 1000:.1f} ms | < 1 s |",
             f"| answer to a POST announcing 1.5 GB | {data['post']['status']} after "
             f"{data['post']['bytes_sent_before_answer'] / 1e6:.1f} MB sent | 413 |",
             f"| resident memory before → after that POST | {data['rss_before_post_mb']:.0f} → "
             f"{data['rss_after_post_mb']:.0f} MB ({data['rss_growth_mb']:+.0f} MB) | "
             "within 50 MB |", ""]
    write_results("serve_hostile", data, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
