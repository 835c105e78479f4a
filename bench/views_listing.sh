#!/usr/bin/env bash
# What netCDF views (-o sidecars=nc) cost a listing: `ls` and `ls -l` of a root group with 300
# subgroups of 5 arrays, without sidecars, with -o sidecars=tif and with -o sidecars=tif,nc, a
# plain store and one with consolidated metadata. Not part of the tests. See the docstring of
# bench/bench_views_listing.py.
#
#   ninja -C build
#   bash bench/views_listing.sh                       # 300 x 5, 7 repetitions
#   ZF_BENCH_REPS=1 bash bench/views_listing.sh       # a quick smoke run
#
# Results: a table on stdout (markdown, for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/views-listing/results/. Needs FUSE (/dev/fuse, fusermount3).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench views-listing
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
zf_freeze ZARRFS zarrfs.bin
zf_unmount_on_exit "$zf_dir"
zf_run bench_views_listing.py
