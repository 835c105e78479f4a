#!/usr/bin/env bash
# Fuzz zarrfs with libFuzzer (docs/fuzzing.md): build the targets of tests/fuzz/ with clang,
# ASan and UBSan in their own build directory, write the seed corpora from the fixtures, then run
# each target for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   # TARGET: meta_v2, codec_v3, zip, ... (default: all)
#   scripts/fuzz.sh --replay [TARGET...]    # run tests/fuzz/regress/<target>/ through the
#                                           # libFuzzer binaries (no fuzzing)
#
# Environment: ZF_FUZZ_BUILD (build directory, default build-fuzz), ZF_FUZZ_JOBS (targets run at
# once, default 1), ZF_FUZZ_NICE (nice level, default 10), ZF_FUZZ_RSS_MB (default 2048),
# ZF_FUZZ_RUNS (stop each target after this many executions, or SECONDS, whichever comes first).
# Results go to $ZF_FUZZ_BUILD/fuzz/: corpus/<target>/ (kept between runs, grown by each run),
# artifacts/<target>/ (crash-*, leak-*, timeout-*, oom-* inputs), logs/<target>.log.
# Exits non-zero when any target found a crash, leak, timeout or out-of-memory, naming the
# reproducer; reproduce with `$ZF_FUZZ_BUILD/tests/fuzz/fuzz_<target> <file>`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/deps.sh
. scripts/deps.sh
zf_install_deps "$ZF_DEPS $ZF_FUZZ_DEPS"

ALL="meta_v2 meta_v3 meta_draft consolidated hierarchy codec_v2 codec_v3 shard http_index s3_xml
azure_xml gcs_json url_key zip refs views icechunk"
replay=false
if [ "${1:-}" = "--replay" ]; then
    replay=true
    shift
    secs=0
else
    secs=${1:-60}
    [ $# -gt 0 ] && shift
fi
targets=${*:-$ALL}
build=${ZF_FUZZ_BUILD:-build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac # absolute: TMPDIR and messages use it
jobs=${ZF_FUZZ_JOBS:-1}
nicelevel=${ZF_FUZZ_NICE:-10}
rss=${ZF_FUZZ_RSS_MB:-2048}
runs=${ZF_FUZZ_RUNS:--1} # libFuzzer's -runs: -1 is no limit

if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=disabled -Db_lundef=false \
        -Dbuildtype=debugoptimized
fi
ninja -C "$build"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# No target makes network requests; should one try, it fails at once.
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9
export ALL_PROXY=http://127.0.0.1:9 NO_PROXY='' no_proxy=''

if $replay; then
    status=0
    for t in $targets; do
        files=(tests/fuzz/regress/"$t"/*)
        [ -e "${files[0]}" ] || continue
        echo "== replay $t: ${#files[@]} input(s)"
        "$build/tests/fuzz/fuzz_$t" "${files[@]}" </dev/null >"$build/replay-$t.log" 2>&1 ||
            { status=1; echo "FAILED: $t (see $build/replay-$t.log)"; }
    done
    exit $status
fi

out=$build/fuzz
rm -rf "$out/seeds"
# the third-party fixtures: tests/fixtures, or $ZARRFS_SHARED/testdata when that is set
fixtures=$PWD/tests/fixtures
[ -z "${ZARRFS_SHARED:-}" ] || fixtures=$ZARRFS_SHARED/testdata
/usr/bin/python3 tests/fuzz/seeds.py "$out/seeds" "$fixtures" >/dev/null
mkdir -p "$out/logs"
# Temporary files of the targets (fuzz_refs's target directory): libFuzzer ends with _Exit, so
# they are removed here.
rm -rf "$out/tmp"
mkdir -p "$out/tmp"
export TMPDIR=$out/tmp
trap 'rm -rf "$out/tmp"' EXIT

dict_of() {
    case $1 in
    http_index) echo tests/fuzz/html.dict ;;
    s3_xml | azure_xml) echo tests/fuzz/xml.dict ;;
    url_key) echo tests/fuzz/url.dict ;;
    zip) echo tests/fuzz/zip.dict ;;
    icechunk) echo tests/fuzz/icechunk.dict ;;
    *) echo tests/fuzz/json.dict ;;
    esac
}

# Inputs longer than this are cut (libFuzzer's -max_len): longer inputs only slow the search
# down. 4 KiB holds a store image's metadata and a few chunks, or a consolidated document of
# some ten nodes (tests/fuzz/seeds.py also writes such shorter ones of the fixtures' long
# documents): the parsers and the walk do nothing else with longer ones, but take several times
# as long. A zip archive must be whole (its directory is at its end).
max_len_of() {
    case $1 in
    hierarchy | consolidated) echo 4096 ;;
    codec_v3 | zip) echo 131072 ;;
    *) echo 32768 ;;
    esac
}

run_one() { # target
    local t=$1
    rm -rf "$out/artifacts/$t" # findings of earlier runs are not this run's
    mkdir -p "$out/corpus/$t" "$out/artifacts/$t" "$out/seeds/$t"
    local regress=()
    [ -d "tests/fuzz/regress/$t" ] && regress=("tests/fuzz/regress/$t") # seeds too (read only)
    nice -n "$nicelevel" "$build/tests/fuzz/fuzz_$t" "$out/corpus/$t" "$out/seeds/$t" "${regress[@]}" \
        -max_total_time="$secs" -runs="$runs" -timeout=10 -max_len="$(max_len_of "$t")" -rss_limit_mb="$rss" -malloc_limit_mb="$rss" \
        -dict="$(dict_of "$t")" -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 \
        -close_fd_mask=0 </dev/null >"$out/logs/$t.log" 2>&1
}

status=0
declare -A pids=()
for t in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    echo "== fuzz $t for ${secs}s"
    run_one "$t" &
    pids[$t]=$!
done
for t in "${!pids[@]}"; do
    wait "${pids[$t]}" || true
done

printf '%-13s %12s %8s %7s %7s %7s  %s\n' target execs exec/s cov ft corpus result
for t in $targets; do
    log=$out/logs/$t.log
    last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|REDUCE|NEW|pulse)' "$log" | tail -1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    found=$(find "$out/artifacts/$t" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' \) -printf '%f\n' 2>/dev/null || true)
    result=ok
    if [ -n "$found" ] || grep -qE '^==[0-9]+==ERROR|^SUMMARY: |libFuzzer: (deadly signal|timeout|out-of-memory)' "$log"; then
        result=FAILED
        status=1
    fi
    printf '%-13s %12s %8s %7s %7s %7s  %s\n' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" \
        "${ft:-?}" "${corp:-?}" "$result"
    for f in $found; do
        echo "    reproducer: $out/artifacts/$t/$f  (run: $build/tests/fuzz/fuzz_$t $out/artifacts/$t/$f)"
        # a run in a throw-away clone (CI) loses the file: small ones are printed too
        if [ "$(stat -c %s "$out/artifacts/$t/$f")" -le 16384 ]; then
            echo "    its bytes (base64 -d to rebuild it):"
            base64 -w 100 "$out/artifacts/$t/$f" | sed 's/^/      /'
        fi
    done
    if [ "$result" != ok ]; then
        echo "    log: $log"
        grep -E -A40 '^==[0-9]+==ERROR|runtime error|libFuzzer: (deadly signal|timeout|out-of-memory)' \
            "$log" | head -60 | sed 's/^/      /' || true
    fi
done
exit $status
