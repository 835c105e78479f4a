#!/usr/bin/env bash
# One array read whole through each remote store of zarrfs — local directory, HTTP (nginx), S3
# (s3rver), Azure Blob (Azurite), GCS (firebase-tools' emulator) — side by side in one run, each
# from a fresh mount. Not part of the tests. See bench_cloud.py's docstring.
#
#   bash bench/cloud.sh                                  # 64 MiB, 5 repetitions (about 2 minutes)
#   ZF_BENCH_CLOUD_ROWS=512 ZF_BENCH_REPS=1 bash bench/cloud.sh    # smoke run
#
# Needs root (FUSE mounts), the servers the tests use ((. scripts/deps.sh; zf_install_js_deps))
# and a build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
zf_install_deps
zf_install_js_deps
[ -x build/src/fuse/zarrfs ] || { meson setup build >/dev/null; ninja -C build; }
exec /usr/bin/python3 bench/bench_cloud.py "$@"
