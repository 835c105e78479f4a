#!/usr/bin/env bash
# zarrfs Zarr v3 benchmark: zarrfs against zarrita.js (Node) on the same ~512 MiB float32 array,
# in three v3 layouts (unsharded gzip, sharded gzip, sharded raw), in one run. Not part of the
# tests. See bench/README.md ("Zarr v3") and the docstring of bench/bench_v3.py.
#
#   bash bench/run_v3.sh                          # the full run (~5 min on 2 cores)
#   ZF_BENCH_V3_MIB=64 bash bench/run_v3.sh       # a quick smoke run
#
# Knobs (environment variables):
#   ZF_BENCH_V3_MIB=512        array size in MiB (shape (ROWS, 16384), ROWS a multiple of 2048)
#   ZF_BENCH_V3_LAYOUTS=gzip,shard-gzip,shard-raw
#   ZF_BENCH_REPS=3            repetitions; medians are reported
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   its v3/ holds data (generated once, reused), mount point,
#                              results, log
#   ZF_BENCH_CACHE=2G          zarrfs -o cache_size
#   ZF_BENCH_THREADS=          zarrfs -o threads (empty: the daemon's default, one per CPU)
#   ZF_BENCH_BS=4M             read size of the whole-file reads
#   ZF_BENCH_RANDOM=20000      random 4 KiB preads on the mounted file
#   ZF_BENCH_ZARRITA_RANDOM_S=5   time box of zarrita's random 4 KiB slices (same offsets)
#   ZF_BENCH_V3_IO_READS=100   random 4 KiB preads for which the daemon's store reads are counted
#   ZF_BENCH_PHASE_TIMEOUT=600 seconds before a stuck phase kills the daemon
#   ZF_BENCH_TIMEOUT=3600      seconds for the whole run
#   ZF_BENCH_PYTHON=/usr/bin/python3   needs numpy (Debian's)
#   ZF_BENCH_NODE=node         Node.js (20 or later)
#   ZF_BENCH_JS_DIR=tests/integration/js   where node_modules/zarrita is (npm ci --prefix ...)
#   ZARRFS=build/src/fuse/zarrfs
#
# Results: a table on stdout (and markdown tables for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/v3/results/bench-v3-<time>.json. Needs FUSE (/dev/fuse, fusermount3).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench v3
export ZF_BENCH_JS_DIR=${ZF_BENCH_JS_DIR:-$here/../tests/integration/js}
node=${ZF_BENCH_NODE:-node}
zf_need_zarrfs
zf_need_python numpy
if ! command -v "$node" >/dev/null; then
    echo "bench: no Node.js ($node)" >&2
    exit 1
fi
if [[ ! -f $ZF_BENCH_JS_DIR/node_modules/zarrita/package.json ]]; then
    echo "bench: zarrita is not installed in $ZF_BENCH_JS_DIR (npm ci --prefix tests/integration/js)" >&2
    exit 1
fi
mkdir -p "$zf_dir/mnt"
zf_freeze ZARRFS zarrfs.bin
zf_unmount_on_exit "$zf_dir/mnt"
zf_run bench_v3.py
