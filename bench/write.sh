#!/usr/bin/env bash
# zarrfs write benchmark: `dd` of a ~1 GiB float32 array into a zarrfs mount, -o rw (cached) and
# -o rw,direct_io, against the FUSE write limit (the same dd into bench/passthrough.c -o rw,
# cached and direct) and zarr-python 2.13 writing the same NumPy array (`z[:] = a`, then sync),
# per codec (none, zlib 1, blosc lz4 +shuffle, zstd 1, lz4), in one run; and for none and blosc a
# numpy.memmap(mode="r+") write through the default-mode mount. Not part of the tests. See
# bench/README.md ("Writing") and the docstring of bench/bench_write.py. Codecs zarrfs cannot
# encode yet are skipped with a note.
#
#   ninja -C build && ninja -C build bench/zf_passthrough
#   bash bench/write.sh                             # the full run (~20 min on 2 cores)
#   ZF_BENCH_WRITE_MB=64 ZF_BENCH_REPS=1 bash bench/write.sh    # a quick smoke run
#
# Knobs (environment variables):
#   ZF_BENCH_WRITE_MB=1024     array size in MiB (shape (ROWS, 16384), ROWS a multiple of 1024:
#                              64 MiB at least)
#   ZF_BENCH_WRITE_CODECS=none,zlib,blosc,zstd,lz4
#   ZF_BENCH_WRITE_MMAP=none,blosc   codecs that also get the mapping write (all; empty: none)
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
#   ZF_PASSTHROUGH=build/bench/zf_passthrough
#
# Results: a table on stdout (markdown), raw numbers in
# $ZF_BENCH_DIR/write/results/bench-write-<time>.json. Needs FUSE (/dev/fuse, fusermount3) and
# about 3 x the array size free in $ZF_BENCH_DIR plus 3 x in RAM (the mapping write keeps the
# array in the page cache of the mount).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench write
export ZF_PASSTHROUGH=${ZF_PASSTHROUGH:-$here/../build/bench/zf_passthrough}
zf_need_zarrfs
if [[ ! -x $ZF_PASSTHROUGH ]]; then
    echo "bench: no passthrough binary at $ZF_PASSTHROUGH (build it: ninja -C build" \
        "bench/zf_passthrough)" >&2
    exit 1
fi
zf_need_python zarr numcodecs numpy
mkdir -p "$zf_dir/mnt" "$zf_dir/mnt-pt"
zf_freeze ZARRFS zarrfs.bin
zf_freeze ZF_PASSTHROUGH zf_passthrough.bin
zf_unmount_on_exit "$zf_dir"        # the benchmark's mount point and the probes' (probe-*/mnt)
zf_run bench_write.py
