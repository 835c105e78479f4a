#!/bin/bash
# Listing a wide group over HTTP: `ls -l` of a v2 group with N arrays served by a threaded Python
# HTTP server that adds 20 ms to every answer (a stand-in for a 20 ms round trip). Reports the
# time and the store requests zarrfs made (.zarrfs-stats). Usage: bash bench/wide_listing.sh [N]
# (ZF_OPTS: -o options for zarrfs, e.g. ZF_OPTS=sidecars=npy)
set -euo pipefail
N=${1:-200}
ZARRFS=${ZARRFS:-$(dirname "$0")/../build/src/fuse/zarrfs}
DIR=$(mktemp -d) MNT=$(mktemp -d) PORT=${PORT:-8766}
cleanup() { fusermount3 -u "$MNT" 2>/dev/null || true; kill "$SRV" 2>/dev/null || true; rm -rf "$DIR"; rmdir "$MNT"; }
trap cleanup EXIT
/usr/bin/python3 - "$DIR" "$N" <<'PY'
import sys, zarr
g = zarr.open_group(sys.argv[1] + "/g.zarr", mode="w")
for i in range(int(sys.argv[2])):
    g.create_dataset("a%04d" % i, shape=(4,), dtype="i1")
PY
/usr/bin/python3 - "$DIR" "$PORT" <<'PY' &
import functools, http.server, socketserver, sys, time
class H(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        time.sleep(0.02)
        super().end_headers()
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[2])), functools.partial(H, directory=sys.argv[1])).serve_forever()
PY
SRV=$!
sleep 1
"$ZARRFS" ${ZF_OPTS:+-o "$ZF_OPTS"} "http://127.0.0.1:$PORT/g.zarr" "$MNT"
start=$(date +%s.%N)
n=$(ls -l "$MNT" | tail -n +2 | wc -l)
end=$(date +%s.%N)
echo "children: $n  ls -l: $(echo "$end - $start" | bc) s  $(grep -o '"requests": [0-9]*' "$MNT/.zarrfs-stats")"
