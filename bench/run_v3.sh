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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZF_BENCH_DIR=${ZF_BENCH_DIR:-/tmp/zarrfs-bench}
export ZARRFS=${ZARRFS:-$here/../build/src/fuse/zarrfs}
export ZF_BENCH_JS_DIR=${ZF_BENCH_JS_DIR:-$here/../tests/integration/js}
py=${ZF_BENCH_PYTHON:-/usr/bin/python3}
node=${ZF_BENCH_NODE:-node}
mnt=$ZF_BENCH_DIR/v3/mnt

if [[ ! -x $ZARRFS ]]; then
    echo "bench: no zarrfs binary at $ZARRFS (build it: ninja -C build)" >&2
    exit 1
fi
if ! "$py" -E -s -c 'import numpy' 2>/dev/null; then
    echo "bench: $py cannot import numpy (apt-get install python3-numpy)" >&2
    exit 1
fi
if ! command -v "$node" >/dev/null; then
    echo "bench: no Node.js ($node)" >&2
    exit 1
fi
if [[ ! -f $ZF_BENCH_JS_DIR/node_modules/zarrita/package.json ]]; then
    echo "bench: zarrita is not installed in $ZF_BENCH_JS_DIR (npm ci --prefix tests/integration/js)" >&2
    exit 1
fi

mkdir -p "$mnt"
# run a frozen copy: the build tree may be rebuilt while the benchmark runs
cp "$ZARRFS" "$ZF_BENCH_DIR/v3/zarrfs.bin"
echo "zarrfs: $ZARRFS, sha256 $(sha256sum "$ZARRFS" | cut -c1-16)"
export ZARRFS=$ZF_BENCH_DIR/v3/zarrfs.bin
cleanup() {
    if grep -qs " $mnt fuse" /proc/self/mounts; then
        timeout 30 fusermount3 -u "$mnt" 2>/dev/null || timeout 30 fusermount3 -uz "$mnt" || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $(env | grep -E '^ZF_BENCH_' | grep -v '^ZF_BENCH_JS_DIR=' | sort | tr '\n' ' ')bash bench/run_v3.sh"
echo "uptime before: $(uptime)"
timeout --signal=INT --kill-after=60 "${ZF_BENCH_TIMEOUT:-3600}" \
    "$py" -E -s -u "$here/bench_v3.py"
echo "uptime after: $(uptime)"
