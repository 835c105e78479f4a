#!/usr/bin/env bash
# Build zarrfs and run the whole test suite: unit tests (Check) and mounted integration tests,
# in a normal build and in an AddressSanitizer + UndefinedBehaviorSanitizer build.
# For a fresh Debian machine, as root: installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
zf_install_deps
zf_install_js_deps

passed=0
failed=0
run_suite() { # builddir [meson setup options...]
    local dir=$1 status=0 log ok
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
    meson test -C "$dir" --print-errorlogs --num-processes 2 --timeout-multiplier 2 || status=$?
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
echo "== zarrfs tests: ASan + UBSan build (build-asan/)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
echo "== all zarrfs tests passed (normal and sanitizer builds)"
