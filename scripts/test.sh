#!/usr/bin/env bash
# Build zarrfs and run the whole test suite: unit tests (Check) and mounted integration tests,
# in a normal build, an AddressSanitizer + UndefinedBehaviorSanitizer build and a ThreadSanitizer
# build; then each fuzz target briefly (scripts/fuzz.sh; ZF_FUZZ_SECONDS, default 20). About 18
# minutes on 2 cores; .ci/run runs all of it.
#   scripts/test.sh --quick   the normal build only (unit and integration tests, a few minutes)
# For a fresh Debian machine, as root: installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
    --quick) quick=1 ;;
    "") ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
. scripts/deps.sh
zf_install_deps
zf_install_js_deps

passed=0
failed=0
run_suite() { # builddir [meson setup options...] [-- meson test arguments (test names)...]
    local dir=$1 status=0 log ok setup=() tests=()
    shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup+=("$1"); shift; done
    [ $# -gt 0 ] && shift && tests=("$@")
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "${setup[@]}"
    fi
    ninja -C "$dir"
    meson test -C "$dir" --print-errorlogs --num-processes 2 --timeout-multiplier 2 "${tests[@]}" ||
        status=$?
    log="$dir/meson-logs/testlog.json"
    ok=$(grep -c '"result": "OK"' "$log" || true)
    passed=$((passed + ok))
    failed=$((failed + $(grep -c '"result": ' "$log" || true) - ok))
    return $status
}

summary() { echo "zarrfs: $passed passed, $failed failed"; }
trap summary EXIT

echo "== zarrfs tests: normal build (build/)"
run_suite build
if [ $quick = 1 ]; then
    echo "== zarrfs tests passed (normal build only, --quick; the full run adds the ASan+UBSan and"
    echo "   TSan builds and fuzzing)"
    exit 0
fi
echo "== zarrfs tests: ASan + UBSan build (build-asan/)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
echo "== zarrfs tests: ThreadSanitizer build (build-tsan/): the whole suite again, so that every"
echo "   concurrent path (cache single-flight, readahead workers, writeback, the HTTP connection"
echo "   pool, concurrent readers and writers, two daemons on one store) runs under TSan"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ZF_DURABILITY_KILLS=20 # the kill loop's races are the same at 20 kills as at 100
run_suite build-tsan -Db_sanitize=thread -Db_lundef=false
echo "== zarrfs fuzzing: each libFuzzer target for ${ZF_FUZZ_SECONDS:-20} s, two at a time"
echo "   (scripts/fuzz.sh, docs/fuzzing.md; its own clang + ASan + UBSan build in build-fuzz/)"
env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u TSAN_OPTIONS ZF_FUZZ_JOBS=2 \
    bash scripts/fuzz.sh "${ZF_FUZZ_SECONDS:-20}"
echo "== all zarrfs tests passed (normal, ASan+UBSan and TSan builds; fuzzing)"
