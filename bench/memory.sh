#!/usr/bin/env bash
# The daemon's peak memory under load: peak RSS (VmHWM, and VmRSS sampled every 50 ms) of a zarrfs
# daemon under 64 concurrent random readers, 4 sequential readers of different arrays, 4 readers
# of vlen-utf8 string arrays of ~1 MB-text chunks over HTTP at 20 ms, and 4 readers of an array
# of 16 MiB chunks over HTTP at 20 ms, each at cache_size 16 MiB and 512 MiB, with the readers'
# throughput beside it. Not part of the tests. See bench/README.md ("Memory: peak RSS under
# load") and bench_memory.py's docstring.
#
#   sudo bash bench/memory.sh                                   # 4 scenarios x 2 caches x 3 reps (~3 min)
#   ZF_BENCH_MEMORY_CACHES=16M ZF_BENCH_MEMORY_OPTS=memory_limit=96M sudo bash bench/memory.sh  # a tight bound
#   ZF_BENCH_REPS=1 ZF_BENCH_MEMORY_SCENARIOS=random,seq bash bench/memory.sh   # smoke run, no root for HTTP
#
# Knobs (environment variables):
#   ZF_BENCH_MEMORY_SCENARIOS=random,seq,strings,big16   which scenarios
#   ZF_BENCH_MEMORY_CACHES="16M 512M"   the cache_size of each mount, in turn
#   ZF_BENCH_MEMORY_OPTS=               extra -o options of every mount (e.g. memory_limit=96M);
#                                       the report gives peak RSS - that memory_limit, else - the
#                                       default one (goal <= 16 MiB)
#   ZF_BENCH_MEMORY_BASELINE=           another zarrfs binary (the code before a change) measured
#                                       beside it, the same mounts without ZF_BENCH_MEMORY_OPTS:
#                                       throughput zarrfs / baseline per repetition, then the median
#   ZF_BENCH_MEMORY_BASELINE_OPTS=      extra -o options of the baseline's mounts
#   ZF_BENCH_MEMORY_READERS=64          threads of the random scenario
#   ZF_BENCH_MEMORY_RANDOM_S=10         seconds the random readers read
#   ZF_BENCH_MEMORY_MIB=512             MiB of each of the 4 float arrays (random, seq)
#   ZF_BENCH_MEMORY_STR_CHUNKS=64       chunks (~1 MB of text each) of each of the 4 string arrays
#   ZF_BENCH_MEMORY_BIG_MIB=1024        MiB of the array of 16 MiB chunks
#   ZF_BENCH_REMOTE_DELAY_MS=10         one-way delay each way of the HTTP store (round trip: twice)
#   ZF_BENCH_REMOTE_LATENCY=auto        netem, relay or auto, as bench/remote.sh
#   ZF_BENCH_NETNS=zfbmem               the network namespace (must not exist; veth zfm-h/zfm-n,
#                                       10.213.9.0/24: apart from bench/remote.sh's)
#   ZF_BENCH_REPS=3                     repetitions; medians are reported
#   ZF_BENCH_DIR=/var/tmp/zarrfs-bench  data in $ZF_BENCH_DIR/memory/data (reused), results, log
#   ZF_BENCH_PYTHON=/usr/bin/python3    needs zarr 2.13, numcodecs, numpy
#   ZARRFS=build/src/fuse/zarrfs
#
# The HTTP scenarios need root (ip netns, veth), nginx (nginx-light), iproute2; all need FUSE.
# The namespace, the veth pair, nginx and the relays are removed on every exit (bench_memory.py
# tears them down; the trap below is a second net), and so is any mount left below the directory.
set -euo pipefail

export ZF_BENCH_DIR=${ZF_BENCH_DIR:-/var/tmp/zarrfs-bench}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
zf_bench_init bench/memory.sh memory
export ZF_BENCH_NETNS=${ZF_BENCH_NETNS:-zfbmem}

scenarios=${ZF_BENCH_MEMORY_SCENARIOS:-random,seq,strings,big16}
if [[ $scenarios =~ strings|big16 && $(id -u) != 0 ]]; then
    echo "bench/memory.sh: run as root for the HTTP scenarios (a network namespace), or set" \
        "ZF_BENCH_MEMORY_SCENARIOS=random,seq" >&2
    exit 1
fi
zf_need_zarrfs
zf_need_python zarr numcodecs numpy
zf_freeze ZARRFS zarrfs.bin
if [[ -n ${ZF_BENCH_MEMORY_BASELINE:-} ]]; then
    zf_freeze ZF_BENCH_MEMORY_BASELINE zarrfs-baseline.bin
fi

cleanup() {
    zf_unmount_below "$zf_dir"
    if ip netns list 2>/dev/null | grep -qw "$ZF_BENCH_NETNS"; then
        for pid in $(ip netns pids "$ZF_BENCH_NETNS" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null || true
        done
        ip netns del "$ZF_BENCH_NETNS" 2>/dev/null || true
        echo "bench/memory.sh: removed leftover namespace $ZF_BENCH_NETNS" >&2
    fi
    ip link del zfm-h 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

PATH=/usr/sbin:/sbin:$PATH zf_run bench_memory.py "$@"
