#!/usr/bin/env bash
# TIFF and netCDF views (-o sidecars=tif,nc) against their array files: the same float32 arrays as cold.sh
# (none and blosc-lz4), stream and numpy.fromfile, each read on a fresh cached mount, side by side
# in one run. Not part of the tests. See the docstring of bench/bench_views.py.
#
#   ninja -C build
#   bash bench/views.sh                                     # 512 MiB per codec, 5 repetitions
#   ZF_BENCH_VIEWS_MIB=64 ZF_BENCH_REPS=1 bash bench/views.sh   # a quick smoke run
#
# Results: a table on stdout (markdown, for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/views/results/bench-views-<time>.json. Needs FUSE (/dev/fuse, fusermount3).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench views
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
zf_freeze ZARRFS zarrfs.bin
zf_unmount_on_exit "$zf_dir"
zf_run bench_views.py
