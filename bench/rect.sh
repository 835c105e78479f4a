#!/usr/bin/env bash
# A rectilinear chunk grid against the regular grid of the same chunk count (float32 arrays of
# harness.py, none and blosc-lz4), streamed through fresh cached mounts side by side in one run,
# with the minimal passthrough as the FUSE limit when built. Not part of the tests. See the
# docstring of bench/bench_rect.py.
#
#   ninja -C build && ninja -C build bench/zf_passthrough
#   bash bench/rect.sh                                      # 256 MiB per codec, 5 repetitions
#   ZF_BENCH_RECT_MIB=128 ZF_BENCH_REPS=1 bash bench/rect.sh   # a quick smoke run
#
# Results: a table on stdout (markdown, for docs/benchmarks.md), raw numbers in
# $ZF_BENCH_DIR/rect/results/bench-rect-<time>.json. Needs FUSE (/dev/fuse, fusermount3).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench rect
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
zf_freeze ZARRFS zarrfs.bin
zf_unmount_on_exit "$zf_dir"
zf_run bench_rect.py
