#!/usr/bin/env bash
# zarrfs cold reads at the machine's limits: zarrfs in its default (cached) mode and with
# -o direct_io, against a minimal libfuse passthrough of the same bytes (bench/passthrough.c, the
# FUSE limit), cached and -o direct_io, and against zarr-python 2.13, on a ~512 MiB float32 array
# per codec (none, blosc-lz4+shuffle, zstd 1, zlib 1), side by side in one run; random 4 KiB
# preads (cached and direct) against zarr-python's reads of the same bytes. Not part of the
# tests. See bench/README.md ("Cold reads") and the docstring of bench/bench_cold.py.
#
#   ninja -C build && ninja -C build bench/zf_passthrough
#   sudo bash bench/cold.sh                                  # the full run (~25 min on 2 cores)
#   sudo bash bench/cold.sh --perf                           # and a perf profile per codec
#   ZF_BENCH_COLD_MIB=64 ZF_BENCH_REPS=1 bash bench/cold.sh  # a quick smoke run (as root)
#
# Knobs (environment variables):
#   ZF_BENCH_COLD_MIB=512      array size in MiB (shape (ROWS, 16384), ROWS a multiple of 1024)
#   ZF_BENCH_COLD_CODECS=none,lz4,zstd,zlib   (lz4: Blosc lz4 5 + shuffle)
#   ZF_BENCH_REPS=5            repetitions; medians are reported
#   ZF_BENCH_COLD_PRETOUCH=2G  memory touched and freed before each timed read (0: no pre-touched
#                              pass, only the untouched one)
#   ZF_BENCH_COLD_UNTOUCHED=1  also measure every read without the pre-touch (0: skip that pass)
#   ZF_BENCH_COLD_RANDOM=20000 random 4 KiB preads per mount, in the first pass (0: none)
#   ZF_BENCH_ZARR_RANDOM_S=5   seconds zarr-python gets for the same reads
#   ZF_BENCH_READAHEAD_KB=1024 read_ahead_kb of every mount (root)
#   ZF_BENCH_COLD_MAX_READ=1048576   the passthrough's -o max_read (cached and direct)
#   ZF_BENCH_BS=4M             read size (and the reused buffer's size)
#   ZF_BENCH_CACHE=2G          zarrfs -o cache_size
#   ZF_BENCH_THREADS=          zarrfs -o threads (empty: the daemon's default)
#   ZF_BENCH_COLD_OPTS=        more zarrfs -o options (both modes; direct adds -o direct_io)
#   ZF_BENCH_COLD_PERF=        codecs to profile with perf after their repetitions (all, or e.g.
#                              lz4,zlib; the --perf argument means all)
#   ZF_BENCH_COLD_PERF_READ=reused   the read profiled: reused or fromfile
#   ZF_BENCH_COLD_PERF_LINES=60      entries of the flat profile written
#   ZF_BENCH_PHASE_TIMEOUT=600 seconds before a stuck read kills the daemon
#   ZF_BENCH_TIMEOUT=3600      seconds for the whole run
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   data in $ZF_BENCH_DIR/data (shared with run.sh), the rest in
#                              $ZF_BENCH_DIR/cold (mount points, daemons.log, results/)
#   ZF_BENCH_PYTHON=/usr/bin/python3   needs zarr 2.13, numcodecs, numpy (Debian's)
#   ZARRFS=build/src/fuse/zarrfs
#   ZF_PASSTHROUGH=build/bench/zf_passthrough
#
# Results: tables on stdout (markdown, for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/cold/results/bench-cold-<time>.json (and .md, perf-<time>-<codec>.txt). Needs FUSE
# (/dev/fuse, fusermount3), root for read_ahead_kb, perf (apt-get install -y linux-perf) for --perf.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench cold
export ZF_PASSTHROUGH=${ZF_PASSTHROUGH:-$here/../build/bench/zf_passthrough}
zf_need_zarrfs
if [[ ! -x $ZF_PASSTHROUGH ]]; then
    echo "bench: no passthrough binary at $ZF_PASSTHROUGH (build it: ninja -C build" \
        "bench/zf_passthrough)" >&2
    exit 1
fi
zf_need_python zarr numcodecs numpy
if [[ $(id -u) != 0 ]]; then
    echo "bench: not root: the mounts' read_ahead_kb stays at the kernel's default" >&2
fi
if [[ " $* " == *" --perf "* || ! ${ZF_BENCH_COLD_PERF:-0} =~ ^(0|no)$ ]] \
    && ! command -v perf >/dev/null; then
    echo "bench: --perf needs perf (apt-get install -y linux-perf)" >&2
    exit 1
fi
mkdir -p "$zf_dir/mnt" "$zf_dir/mnt-pt"
zf_freeze ZARRFS zarrfs.bin
zf_freeze ZF_PASSTHROUGH zf_passthrough.bin
zf_unmount_on_exit "$zf_dir"
zf_run bench_cold.py "$@"
