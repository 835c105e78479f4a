#!/usr/bin/env bash
# Walking a whole consolidated hierarchy of 10^5 nodes: `find MOUNT | wc -l` over a zarrfs mount
# (mount included) against zarr-python 2.13 `open_consolidated(STORE).visititems(...)` (interpreter
# start included), wide and deep v2 stores, locally and over HTTP (nginx on 127.0.0.1), in one
# run. Not part of the tests. See bench/README.md ("Listing consolidated hierarchies") and the
# docstring of bench/bench_listing.py. Goal (issue 21, item 3): zarrfs <= 0.5x zarr-python.
#
#   bash bench/consolidated_listing.sh                  # 2 shapes x local, http x 5 reps (~15 min)
#   ZF_BENCH_LISTING_WIDE=10x99 ZF_BENCH_LISTING_DEEP=50x19 ZF_BENCH_REPS=1 \
#       bash bench/consolidated_listing.sh             # smoke run (~1 min)
#
# Knobs (environment variables):
#   ZF_BENCH_LISTING_SHAPES=wide,deep
#   ZF_BENCH_LISTING_WIDE=10x9999    G groups under the root, A arrays in each (G x (1 + A) nodes)
#   ZF_BENCH_LISTING_DEEP=500x199    a chain of D nested groups, A arrays in each (D x (1 + A));
#                                    D < ~990 (zarr-python's visititems recurses) and the paths
#                                    find prints (2 bytes a level) must fit PATH_MAX (4096)
#   ZF_BENCH_LISTING_WHERE=local,http
#   ZF_BENCH_LISTING_OPTS=           extra zarrfs -o options
#   ZF_BENCH_LISTING_BASELINE=       another zarrfs binary (e.g. the code before a change) timed as
#                                    a third side; copied first, as ZARRFS is
#   ZF_BENCH_REPS=5                  repetitions; medians are reported
#   ZF_BENCH_PHASE_TIMEOUT=600       seconds for one mount, walk or zarr-python run
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   its listing/ holds the stores (generated once, reused; about
#                                    2 x 10^5 small files each), mount point, results, daemon log
#   ZF_BENCH_TIMEOUT=3600            seconds for the whole run
#   ZF_BENCH_PYTHON=/usr/bin/python3 needs zarr 2.13, numcodecs, numpy, fsspec, aiohttp
#   ZARRFS=build/src/fuse/zarrfs
#
# Needs FUSE, nginx (nginx-light; run as root, as the tests' nginx configuration says `user
# root`). Results: a table on stdout (markdown), raw numbers in
# $ZF_BENCH_DIR/listing/results/bench-listing-<time>.json.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench/consolidated_listing.sh listing
zf_need_zarrfs
zf_need_python zarr numcodecs numpy fsspec aiohttp
if [[ ,${ZF_BENCH_LISTING_WHERE:-local,http}, == *,http,* ]] && ! command -v nginx >/dev/null &&
    [[ ! -x /usr/sbin/nginx ]]; then
    echo "bench/consolidated_listing.sh: nginx not found (scripts/deps.sh installs it)" >&2
    exit 1
fi
mkdir -p "$zf_dir/mnt"
zf_freeze ZARRFS zarrfs.bin
if [[ -n ${ZF_BENCH_LISTING_BASELINE:-} ]]; then zf_freeze ZF_BENCH_LISTING_BASELINE baseline.bin; fi
zf_unmount_on_exit "$zf_dir"
zf_run bench_listing.py
