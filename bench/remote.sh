#!/usr/bin/env bash
# zarrfs over HTTP with 20 ms of round-trip latency, in its default (cached) mode and with
# -o direct_io, against zarr-python 2.13 (FSStore over fsspec/aiohttp) reading the same array from
# the same nginx, and against the same mounts of the same server answering at once (a relay that
# delays nothing), in one run. Not part of the tests.
# See bench/README.md ("Remote: zarrfs over HTTP with latency") and bench_remote.py's docstring.
#
#   sudo bash bench/remote.sh                         # 512 MB, 5 repetitions (1-3 minutes)
#   ZF_BENCH_REMOTE_MB=64 ZF_BENCH_REPS=1 bash bench/remote.sh    # smoke run
#
# Knobs (environment variables):
#   ZF_BENCH_REMOTE_MB=512        array size in MB (rounded up to whole rows of 4 MiB chunks)
#   ZF_BENCH_REMOTE_CODEC=lz4     lz4 (Blosc lz4 5 + shuffle), zstd, zlib or none
#   ZF_BENCH_REMOTE_DELAY_MS=10   one-way delay each way (round trip: twice that)
#   ZF_BENCH_REMOTE_LATENCY=auto  netem (tc qdisc netem on the veth pair), relay (a delaying TCP
#                                 relay in the namespace), auto (netem if the kernel has it)
#   ZF_BENCH_REMOTE_OPTS=         extra zarrfs -o options, both modes (e.g. max_connections=32)
#   ZF_BENCH_REMOTE_PRETOUCH=0    memory touched and freed before each timed read (e.g. 2G; 0: off)
#   ZF_BENCH_REPS=5               repetitions; medians are reported
#   ZF_BENCH_NETNS=zfbench        name of the network namespace (must not exist)
#   ZF_BENCH_DIR=/tmp/zarrfs-bench   data in $ZF_BENCH_DIR/remote/data (reused), results, log
#   ZF_BENCH_PYTHON=/usr/bin/python3   needs zarr 2.13, numcodecs, numpy, fsspec, aiohttp
#   ZARRFS=build/src/fuse/zarrfs
#
# Needs root (ip netns, veth), nginx (nginx-light), iproute2, FUSE. The namespace, the veth pair,
# nginx and the relay are removed on every exit (bench_remote.py tears them down; the trap below
# is a second net).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench/remote.sh remote
export ZF_BENCH_NETNS=${ZF_BENCH_NETNS:-zfbench}

if [[ $(id -u) != 0 ]]; then
    echo "bench/remote.sh: run as root (it creates a network namespace)" >&2
    exit 1
fi
zf_need_zarrfs
for tool in ip nginx fusermount3; do
    if ! command -v "$tool" >/dev/null && [[ ! -x /usr/sbin/$tool ]]; then
        echo "bench/remote.sh: $tool not found (scripts/deps.sh installs it)" >&2
        exit 1
    fi
done
zf_need_python zarr numcodecs numpy fsspec aiohttp
zf_freeze ZARRFS zarrfs.bin

cleanup() {
    if ip netns list 2>/dev/null | grep -qw "$ZF_BENCH_NETNS"; then
        for pid in $(ip netns pids "$ZF_BENCH_NETNS" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ZF_BENCH_NETNS" 2>/dev/null || true
        echo "bench/remote.sh: removed leftover namespace $ZF_BENCH_NETNS" >&2
    fi
    ip link del zfb-h 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

PATH=/usr/sbin:/sbin:$PATH "$py" -E -s "$here/bench_remote.py" "$@"
