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

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench .
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
mkdir -p "$zf_dir/mnt"
zf_freeze ZARRFS zarrfs.bin
zf_unmount_on_exit "$zf_dir/mnt"
zf_run bench.py
