#!/usr/bin/env bash
# Icechunk repositories (written by Icechunk 2.2.2 itself) against plain Zarr v3 directory stores
# holding the same chunk bytes, through zarrfs, side by side in one run: whole-array reads
# (cached and -o direct_io, the minimal passthrough as the FUSE limit), `ls -R` / `ls -lR` of
# 10^4 nodes, the daemon's peak RSS reading 10^5 chunks. Not part of the tests. See the
# docstring of bench/bench_icechunk.py.
#
#   ninja -C build && ninja -C build bench/zf_passthrough
#   (. scripts/deps.sh; zf_install_js_deps)                 # Icechunk's npm packages
#   sudo bash bench/icechunk.sh                              # 5 repetitions (~5 min, 2 cores)
#   ZF_BENCH_IC_PERF=all sudo bash bench/icechunk.sh         # and a perf profile per case
#   ZF_BENCH_IC_MIB=64 ZF_BENCH_REPS=1 bash bench/icechunk.sh   # smoke run
#
# Root only sets the mounts' read_ahead_kb (1 MiB READ requests); without it the kernel's
# default applies to every side alike. Results: a table on stdout (markdown, for
# docs/benchmarks.md), raw numbers in $ZF_BENCH_DIR/icechunk/results/bench-icechunk-<time>.json.
# Needs FUSE (/dev/fuse, fusermount3), node, flatc, zstd, /usr/bin/python3 with numpy, numcodecs.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench icechunk
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
for c in node flatc zstd; do
    command -v "$c" >/dev/null || { echo "bench/icechunk.sh: $c is missing (scripts/deps.sh)" >&2; exit 1; }
done
zf_freeze ZARRFS zarrfs.bin
if [[ -n ${ZF_BENCH_IC_BASELINE:-} ]]; then zf_freeze ZF_BENCH_IC_BASELINE zarrfs-baseline.bin; fi
zf_unmount_on_exit "$zf_dir"
zf_run bench_icechunk.py "$@"
