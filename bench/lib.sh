# Shared by the benchmark wrappers (run.sh, run_v3.sh, write.sh, cold.sh, remote.sh): source it,
# then call the functions. Not a script of its own.
#
#   zf_bench_init NAME SUBDIR   $here, ZF_BENCH_DIR, ZARRFS, $py, $zf_dir (ZF_BENCH_DIR/SUBDIR, or
#                               ZF_BENCH_DIR itself for "."), $zf_name (for messages)
#   zf_need_zarrfs              exits unless $ZARRFS is executable
#   zf_need_python MODULES...   exits unless $py imports them
#   zf_freeze VAR NAME          copy the binary in $VAR to $zf_dir/NAME and point VAR at the copy
#                               (the build tree may be rebuilt while the benchmark runs)
#   zf_unmount_on_exit DIR...   an exit trap unmounting every FUSE mount at or below each DIR
#   zf_run SCRIPT [ARGS]        runs bench/SCRIPT under $py with ZF_BENCH_TIMEOUT, with the
#                               command and uptime before and after

zf_bench_init() {
    zf_name=$1
    here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
    export ZF_BENCH_DIR=${ZF_BENCH_DIR:-/tmp/zarrfs-bench}
    export ZARRFS=${ZARRFS:-$here/../build/src/fuse/zarrfs}
    py=${ZF_BENCH_PYTHON:-/usr/bin/python3}
    if [[ $2 == . ]]; then zf_dir=$ZF_BENCH_DIR; else zf_dir=$ZF_BENCH_DIR/$2; fi
    mkdir -p "$zf_dir"
}

zf_need_zarrfs() {
    if [[ ! -x $ZARRFS ]]; then
        echo "$zf_name: no zarrfs binary at $ZARRFS (build it: ninja -C build)" >&2
        exit 1
    fi
}

zf_need_python() {
    local imports
    imports=$(IFS=,; echo "$*")
    if ! "$py" -E -s -c "import $imports" 2>/dev/null; then
        echo "$zf_name: $py cannot import $* (Debian: apt-get install python3-zarr" \
            "python3-fsspec python3-aiohttp; scripts/deps.sh)" >&2
        exit 1
    fi
}

zf_freeze() {
    local var=$1 name=$2
    cp "${!var}" "$zf_dir/$name"
    echo "$(basename "${!var}"): ${!var}, sha256 $(sha256sum "${!var}" | cut -c1-16)"
    export "$var=$zf_dir/$name"
}

zf_unmount_below() {
    local d m
    for d in "$@"; do
        for m in $(awk -v d="$d" '$3 ~ /^fuse/ && ($2 == d || index($2, d "/") == 1) { print $2 }' \
                /proc/self/mounts); do
            timeout 30 fusermount3 -u "$m" 2>/dev/null || timeout 30 fusermount3 -uz "$m" || true
        done
    done
}

zf_unmount_on_exit() {
    zf_unmount_dirs=("$@")
    trap 'zf_unmount_below "${zf_unmount_dirs[@]}"' EXIT
    trap 'exit 130' INT TERM
}

zf_run() {
    local script=$1
    shift
    local knobs
    knobs=$(env | grep -E '^ZF_BENCH_' | grep -v '^ZF_BENCH_JS_DIR=' | sort | tr '\n' ' ' || true)
    echo "command: ${knobs}bash bench/${BASH_SOURCE[1]##*/}${*:+ $*}"
    echo "uptime before: $(uptime)"
    timeout --signal=INT --kill-after=60 "${ZF_BENCH_TIMEOUT:-3600}" \
        "$py" -E -s -u "$here/$script" "$@"
    echo "uptime after: $(uptime)"
}
