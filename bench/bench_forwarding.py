#!/usr/bin/env python3
"""Forwarded commands run side by side (issue 39): 8 `groove search` processes forwarding to one
`groove serve` at once against the same 8 one after another, and a forwarded search while a
slow request (`/status`, which hashes every note) is in flight against the same search alone. Also
checks that a forwarded search prints the bytes an in-process one prints. Writes
bench/results/serve_forwarding.{json,md}.

    python bench/bench_forwarding.py [--size 10000] [--rounds 5]

The index is bench_search's synthetic one (bench/search_index.py); the server and the query
generator are bench_serve's.
"""

from __future__ import annotations

import argparse
import http.client
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import empty_config, machine, machine_line, median, write_results
from bench_serve import GROOVE, Queries, env, queries, server

CLIENTS = 8
TARGET_RATIO = 1.5


def search_args(config: Path, db: Path, kb: Path, query: str, *extra: str) -> list[str]:
    return [str(GROOVE), "--config", str(config), "--db", str(db), "search", query,
            "--kb-path", str(kb), "--format", "text", *extra]


def one_after_another(commands: list[list[str]]) -> float:
    start = time.perf_counter()
    for command in commands:
        subprocess.run(command, env=env(), capture_output=True, check=True)
    return time.perf_counter() - start


def all_at_once(commands: list[list[str]]) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen(command, env=env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for command in commands]
    for proc in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"a forwarded search failed: {proc.args}")
    return time.perf_counter() - start


def concurrency(config: Path, db: Path, kb: Path, gen: Queries, rounds: int) -> dict[str, Any]:
    """Each round: 8 fresh queries one after another, then 8 more all at once."""
    serial, parallel = [], []
    for _ in range(rounds):
        serial.append(one_after_another([search_args(config, db, kb, gen.next())
                                         for _ in range(CLIENTS)]))
        parallel.append(all_at_once([search_args(config, db, kb, gen.next())
                                     for _ in range(CLIENTS)]))
    return {"rounds": rounds, "clients": CLIENTS, "one_after_another_s": serial,
            "at_once_s": parallel, "median_one_after_another_s": median(serial),
            "median_at_once_s": median(parallel),
            "ratio": median(serial) / median(parallel)}


def identical(config: Path, db: Path, kb: Path, gen: Queries) -> str:
    same = 0
    for _ in range(3):
        query = gen.next()
        forwarded = subprocess.run(search_args(config, db, kb, query), env=env(),
                                   capture_output=True, text=True, check=True)
        local = subprocess.run(search_args(config, db, kb, query, "--no-server"), env=env(),
                               capture_output=True, text=True, check=True)
        same += (forwarded.stdout, forwarded.stderr) == (local.stdout, local.stderr)
    return f"{same}/3"


def slow_requests(address: str, done: threading.Event, walls: list[float]) -> None:
    """`/status` again and again until `done`: it hashes every note of the KB to count the
    pending changes, the slowest read the server answers (a `get` is capped at 1 MB)."""
    host, _, port = address.partition(":")
    while not done.is_set():
        conn = http.client.HTTPConnection(host, int(port), timeout=600)
        start = time.perf_counter()
        conn.request("GET", "/status")
        response = conn.getresponse()
        body = response.read()
        conn.close()
        if response.status != 200:
            raise RuntimeError(f"/status answered {response.status}: {body[:300]!r}")
        walls.append(time.perf_counter() - start)


def beside_a_slow_request(config: Path, db: Path, kb: Path, address: str, gen: Queries,
                          runs: int) -> dict[str, Any]:
    """Forwarded searches alone, then with a `/status` always in flight."""
    def forwarded_search() -> float:
        start = time.perf_counter()
        subprocess.run(search_args(config, db, kb, gen.next()), env=env(), capture_output=True,
                       check=True)
        return time.perf_counter() - start

    alone = [forwarded_search() for _ in range(runs)]
    done, slow = threading.Event(), []
    worker = threading.Thread(target=slow_requests, args=(address, done, slow))
    worker.start()
    try:
        time.sleep(0.2)  # the first /status is under way
        beside = [forwarded_search() for _ in range(runs)]
    finally:
        done.set()
        worker.join()
    return {"runs": runs, "alone_s": alone, "beside_status_s": beside,
            "median_alone_s": median(alone), "median_beside_s": median(beside),
            "ratio": median(beside) / median(alone),
            "status_median_s": median(slow) if slow else None, "statuses": len(slow)}


def markdown(d: dict[str, Any]) -> str:
    c, s = d["concurrency"], d["slow_request"]
    return "\n".join([
        "# Forwarded commands side by side (issue 39)", "",
        machine_line(d["machine"]), "",
        f"Index: bench_search's synthetic {d['chunks']:,}-chunk index; `groove search` (hybrid, "
        "text) forwarded to one `groove serve` (bench/bench_forwarding.py).", "",
        "| measure | value | target |", "|---|---|---|",
        f"| {CLIENTS} forwarded searches one after another, median of {c['rounds']} rounds | "
        f"{c['median_one_after_another_s']:.2f} s | |",
        f"| the same {CLIENTS} at once | {c['median_at_once_s']:.2f} s | |",
        f"| speed-up | {c['ratio']:.2f}× | ≥ {TARGET_RATIO}× |",
        f"| forwarded search alone, median of {s['runs']} | {s['median_alone_s']:.2f} s | |",
        f"| the same while `/status` requests run back to back | "
        f"{s['median_beside_s']:.2f} s ({s['ratio']:.2f}×) | not held back |",
        f"| one `/status` (it hashes every note), median of {s['statuses']} | "
        f"{s['status_median_s'] or 0:.2f} s | |",
        f"| forwarded output = in-process output | {d['identical_outputs']} | all |", "",
        "Before issue 39 a forwarded command ran the command line inside the server, one at a "
        "time under a process-wide lock; now the server answers each core call on its own "
        "thread, so forwarded searches overlap and a slow request holds none of them back.", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import bench_search

    info = machine()
    kb, db, build = bench_search.ensure_index(args.size, rebuild=False)
    config = empty_config(bench_search.SEARCH_WORK / "serve-config")
    gen = Queries(queries())
    data: dict[str, Any] = {"machine": info, "args": vars(args),
                            "chunks": build.get("chunks", args.size)}
    with server(kb, db, config) as (_, address):
        for _ in range(3):  # warm: the model loads at the first hybrid search
            subprocess.run(search_args(config, db, kb, gen.next()), env=env(),
                           capture_output=True, check=True)
        data["identical_outputs"] = identical(config, db, kb, gen)
        data["concurrency"] = concurrency(config, db, kb, gen, args.rounds)
        data["slow_request"] = beside_a_slow_request(config, db, kb, address, gen,
                                                     args.rounds * 2)
    write_results("serve_forwarding", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
