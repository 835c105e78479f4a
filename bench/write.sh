#!/usr/bin/env bash
# zarrfs write benchmark: `dd` of a ~1 GiB float32 array into a zarrfs mount (-o rw) against
# zarr-python 2.13 writing the same NumPy array (`z[:] = a`), per codec (none, zlib 1, blosc lz4
# +shuffle, zstd 1, lz4), in one run. Not part of the tests. See bench/README.md ("Writing") and
# the docstring of bench/bench_write.py. Codecs zarrfs cannot encode yet are skipped with a note.
#
#   bash bench/write.sh                             # the full run (~10 min on 2 cores)
#   ZF_BENCH_WRITE_MB=64 ZF_BENCH_REPS=1 bash bench/write.sh    # a quick smoke run
#
# Knobs (environment variables):
#   ZF_BENCH_WRITE_MB=1024     array size in MiB (shape (ROWS, 16384), ROWS a multiple of 1024:
#                              64 MiB at least)
#   ZF_BENCH_WRITE_CODECS=none,zlib,blosc,zstd,lz4
#   ZF_BENCH_REPS=3            repetitions; medians are reported
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   its write/ holds the raw data (generated once, reused), the
#                              stores being written, mount point, results, log
#   ZF_BENCH_CACHE=2G          zarrfs -o cache_size (more than the array: no writeback under
#                              cache pressure)
#   ZF_BENCH_THREADS=          zarrfs -o threads (empty: the daemon's default)
#   ZF_BENCH_BS=4M             dd's block size
#   ZF_BENCH_PHASE_TIMEOUT=600 seconds before a stuck dd or unmount kills the daemon
#   ZF_BENCH_TIMEOUT=3600      seconds for the whole run
#   ZF_BENCH_PYTHON=/usr/bin/python3   needs zarr 2.13, numcodecs, numpy (Debian's)
#   ZARRFS=build/src/fuse/zarrfs
#
# Results: a table on stdout (markdown), raw numbers in
# $ZF_BENCH_DIR/write/results/bench-write-<time>.json. Needs FUSE (/dev/fuse, fusermount3) and
# about 3 x the array size free in $ZF_BENCH_DIR plus 2 x in RAM.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZF_BENCH_DIR=${ZF_BENCH_DIR:-/tmp/zarrfs-bench}
export ZARRFS=${ZARRFS:-$here/../build/src/fuse/zarrfs}
py=${ZF_BENCH_PYTHON:-/usr/bin/python3}
mnt=$ZF_BENCH_DIR/write/mnt

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
cp "$ZARRFS" "$ZF_BENCH_DIR/write/zarrfs.bin"
echo "zarrfs: $ZARRFS, sha256 $(sha256sum "$ZARRFS" | cut -c1-16)"
export ZARRFS=$ZF_BENCH_DIR/write/zarrfs.bin
cleanup() {
    # the benchmark's mount point and the probes' (write/probe-*/mnt)
    for m in "$mnt" "$ZF_BENCH_DIR"/write/probe-*/mnt; do
        if grep -qs " $m fuse" /proc/self/mounts; then
            timeout 30 fusermount3 -u "$m" 2>/dev/null || timeout 30 fusermount3 -uz "$m" || true
        fi
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $(env | grep -E '^ZF_BENCH_' | sort | tr '\n' ' ')bash bench/write.sh"
echo "uptime before: $(uptime)"
timeout --signal=INT --kill-after=60 "${ZF_BENCH_TIMEOUT:-3600}" \
    "$py" -E -s -u "$here/bench_write.py"
echo "uptime after: $(uptime)"
