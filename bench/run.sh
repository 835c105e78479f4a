#!/usr/bin/env bash
# zarrfs benchmark: zarrfs against zarr-python 2.13 on the same ~1 GiB float32 array, per codec
# (none, blosc-lz4+shuffle, zstd, zlib), in one run. Not part of the tests. See bench/README.md.
#
#   bash bench/run.sh                          # the full run (~15 min on 2 cores)
#   ZF_BENCH_GIB=0.125 bash bench/run.sh       # a quick smoke run
#
# Knobs (environment variables):
#   ZF_BENCH_GIB=1             array size in GiB (shape (16384*GIB, 16384), rounded to 1024 rows)
#   ZF_BENCH_REPS=3            repetitions; medians are reported
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   data (generated once, reused), mount point, results, log
#   ZF_BENCH_CODECS=none,lz4,zstd,zlib
#   ZF_BENCH_CACHE=2G          zarrfs -o cache_size (must exceed the array for the warm reads)
#   ZF_BENCH_THREADS=          zarrfs -o threads (empty: the daemon's default, one per CPU)
#   ZF_BENCH_BS=4M             read size of the whole-file reads
#   ZF_BENCH_RANDOM=20000      random 4 KiB preads on the mounted file
#   ZF_BENCH_ZARR_RANDOM_S=5   time box of zarr-python's random 4 KiB slices (same offsets)
#   ZF_BENCH_READAHEAD_KB=    override the mount's read_ahead_kb (root; empty: what zarrfs sets,
#                              1024 KiB, which lets buffered READ requests reach 1 MiB)
#   ZF_BENCH_PHASE_TIMEOUT=600 seconds before a stuck phase kills the daemon
#   ZF_BENCH_TIMEOUT=3600      seconds for the whole run
#   ZF_BENCH_PYTHON=/usr/bin/python3   needs zarr 2.13, numcodecs, numpy (Debian's)
#   ZARRFS=build/src/fuse/zarrfs
#
# Results: a table on stdout (and a markdown table for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/results/bench-<time>.json. Needs FUSE (/dev/fuse, fusermount3); run as root if
# the store's page-cache eviction fallback (drop_caches) may be needed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZF_BENCH_DIR=${ZF_BENCH_DIR:-/tmp/zarrfs-bench}
export ZARRFS=${ZARRFS:-$here/../build/src/fuse/zarrfs}
py=${ZF_BENCH_PYTHON:-/usr/bin/python3}
mnt=$ZF_BENCH_DIR/mnt

if [[ ! -x $ZARRFS ]]; then
    echo "bench: no zarrfs binary at $ZARRFS (build it: ninja -C build)" >&2
    exit 1
fi
if ! "$py" -E -s -c 'import zarr, numcodecs, numpy' 2>/dev/null; then
    echo "bench: $py cannot import zarr, numcodecs and numpy (apt-get install python3-zarr)" >&2
    exit 1
fi

mkdir -p "$mnt"
# run a frozen copy: the build tree may be rebuilt while the benchmark runs
cp "$ZARRFS" "$ZF_BENCH_DIR/zarrfs.bin"
echo "zarrfs: $ZARRFS, sha256 $(sha256sum "$ZARRFS" | cut -c1-16)"
export ZARRFS=$ZF_BENCH_DIR/zarrfs.bin
cleanup() {
    if grep -qs " $mnt fuse" /proc/self/mounts; then
        timeout 30 fusermount3 -u "$mnt" 2>/dev/null || timeout 30 fusermount3 -uz "$mnt" || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $(env | grep -E '^ZF_BENCH_' | sort | tr '\n' ' ')bash bench/run.sh"
echo "uptime before: $(uptime)"
timeout --signal=INT --kill-after=60 "${ZF_BENCH_TIMEOUT:-3600}" \
    "$py" -E -s -u "$here/bench.py"
echo "uptime after: $(uptime)"
