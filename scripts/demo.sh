#!/usr/bin/env bash
# zarrfs demo, for a fresh Debian machine, as root:
#
#     scripts/demo.sh
#
# Installs what is missing, builds zarrfs, writes a real Zarr v2 hierarchy with Debian's
# python3-zarr, mounts it, shows `ls -lR` and the xattrs, reads arrays through numpy.memmap on the
# mounted files and compares them with zarr-python's own read, then unmounts.
#
# Environment: BUILD_DIR (default: build, relative to the repository), KEEP=1 keeps the temp dir.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$REPO/$BUILD_DIR" ;; esac
PY=/usr/bin/python3

say()  { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die()  { printf 'demo: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run me as root (I install packages and mount with FUSE)"

# ---------------------------------------------------------------------------------------------
say "Checking the Debian packages zarrfs and this demo need"
. "$REPO/scripts/deps.sh"
zf_install_deps
[ -e /dev/fuse ] || die "/dev/fuse is missing: this machine (container?) cannot mount FUSE file systems"

# ---------------------------------------------------------------------------------------------
say "Building zarrfs in $BUILD_DIR"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" "$REPO"
fi
ninja -C "$BUILD_DIR"
ZARRFS="$BUILD_DIR/src/fuse/zarrfs"
[ -x "$ZARRFS" ] || die "build did not produce $ZARRFS"
info "binary: $ZARRFS ($("$ZARRFS" --version 2>&1 | head -n1))"

# ---------------------------------------------------------------------------------------------
WORK=$(mktemp -d /tmp/zarrfs-demo.XXXXXX)
STORE="$WORK/demo.zarr"
MNT="$WORK/mnt"
LOG="$WORK/zarrfs.log"
mkdir -p "$MNT"
PID=

cleanup() {
    local rc=$?
    set +e
    if mountpoint -q "$MNT" 2>/dev/null; then
        echo "==> Unmounting $MNT"
        timeout 20 fusermount3 -u "$MNT" || timeout 20 fusermount3 -uz "$MNT"
    fi
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$PID" 2>/dev/null && kill "$PID"
    fi
    if [ "$rc" -ne 0 ] && [ -s "$LOG" ]; then
        echo "---- zarrfs log ($LOG) ----"; tail -n 40 "$LOG"
    fi
    if [ "${KEEP:-0}" = 1 ] || mountpoint -q "$MNT" 2>/dev/null; then
        echo "(kept $WORK)"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT INT TERM

say "Writing a Zarr v2 hierarchy with zarr-python ($PY) into $STORE"
"$PY" - "$STORE" <<'EOF'
import sys
import numcodecs, numpy as np, zarr
store = sys.argv[1]
root = zarr.open_group(store, mode="w")
root.attrs.update({"title": "zarrfs demo", "created_with": "zarr-python " + zarr.__version__})

climate = root.create_group("climate")
climate.attrs.update({"source": "synthetic", "institution": "zarrfs demo"})
t = climate.create_dataset("temperature", shape=(24, 90, 180), chunks=(6, 45, 60), dtype="<f4",
                           compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
hours = np.arange(24)[:, None, None]
lat = np.linspace(-89, 89, 90)[None, :, None]
lon = np.linspace(-179, 179, 180)[None, None, :]
t[...] = (15 - 30 * np.abs(np.sin(np.radians(lat))) + 5 * np.sin(2 * np.pi * hours / 24)
          + 2 * np.cos(np.radians(lon))).astype("f4")
t.attrs.update({"units": "degC", "_ARRAY_DIMENSIONS": ["hour", "lat", "lon"]})
print("    climate/temperature  float32 %s, chunks %s, blosc lz4+shuffle" % (t.shape, t.chunks))

stations = climate.create_group("stations")
stations.attrs.update({"network": "demo", "count": 3})
meta = stations.create_group("meta")
meta.attrs.update({"names": ["alpha", "beta", "gamma"], "elevations_m": [120, 845, 2310]})
ids = stations.create_dataset("ids", data=np.array([101, 202, 303], dtype=">u4"), chunks=(2,))
print("    climate/stations/ids big-endian uint32 %s; nested group climate/stations/meta with attributes" % (ids.shape,))

e = root.create_dataset("elevation", shape=(1000, 750), chunks=(256, 256), dtype="<i2",
                        compressor=numcodecs.Zlib(level=5), fill_value=-9999)
y, x = np.mgrid[0:1000, 0:750]
e[...] = (1000 * np.sin(y / 150.0) * np.cos(x / 100.0) + 1200).astype("i2")
del e.store["elevation/1.2"]          # a missing chunk: reads as the fill value
print("    elevation            int16 %s, chunks %s (edge chunks), zlib, chunk 1.2 missing (fill -9999)"
      % (e.shape, e.chunks))
EOF

# ---------------------------------------------------------------------------------------------
say "Mounting: $ZARRFS -f $STORE $MNT"
"$ZARRFS" -f "$STORE" "$MNT" 2>"$LOG" &
PID=$!
for _ in $(seq 100); do
    mountpoint -q "$MNT" && break
    kill -0 "$PID" 2>/dev/null || die "zarrfs exited before mounting: $(cat "$LOG")"
    sleep 0.1
done
mountpoint -q "$MNT" || die "zarrfs did not mount $MNT within 10 s"
info "mounted (daemon pid $PID)"

say "ls -lR $MNT   (groups are directories, arrays are files of prod(shape)*itemsize bytes)"
timeout 30 ls -lR "$MNT"

say "Extended attributes (getfattr -d -m user.zarr)"
for node in "$MNT" "$MNT/climate" "$MNT/climate/temperature" "$MNT/elevation"; do
    timeout 30 getfattr -d -m '^user\.zarr\.' --absolute-names "$node" \
        | grep -v '^user.zarr.metadata=' || true
done
info "(user.zarr.metadata, the stored .zarray/.zgroup text, left out above; e.g. for elevation:)"
timeout 30 getfattr --absolute-names --only-values -n user.zarr.metadata "$MNT/elevation" | sed 's/^/    /'
echo

say "Reading the mounted files with numpy.memmap and comparing with zarr-python's own read"
timeout 120 "$PY" - "$STORE" "$MNT" <<'EOF'
import json, os, sys
import numpy as np, zarr
store, mnt = sys.argv[1:]
ok = True
for rel in ["climate/temperature", "elevation", "climate/stations/ids"]:
    path = os.path.join(mnt, rel)
    dtype = os.getxattr(path, "user.zarr.dtype").decode()
    shape = tuple(json.loads(os.getxattr(path, "user.zarr.shape")))
    mm = np.memmap(path, dtype=dtype, shape=shape, mode="r")
    ref = zarr.open_array(os.path.join(store, rel), mode="r")[...]
    same = mm.dtype == ref.dtype and np.array_equal(mm, ref)
    ok &= same
    print("    %-22s memmap(%s, %s) vs zarr-python: %s" % (rel, dtype, shape, "OK" if same else "FAIL"))
e = np.memmap(os.path.join(mnt, "elevation"), dtype="<i2", shape=(1000, 750), mode="r")
print("    elevation[300, 520] (inside the missing chunk 1.2) = %d (fill value -9999)" % e[300, 520])
print("    elevation[999, 749] (last edge chunk) = %d" % e[999, 749])
t = np.memmap(os.path.join(mnt, "climate/temperature"), dtype="<f4", shape=(24, 90, 180), mode="r")
print("    temperature: min %.2f, mean %.2f, max %.2f degC" % (t.min(), t.mean(), t.max()))
print("OK: every array read through the mount equals zarr-python's read" if ok else
      "FAIL: the mounted files differ from zarr-python's read")
sys.exit(0 if ok else 1)
EOF

say "Unmounting"
timeout 20 fusermount3 -u "$MNT"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID" 2>/dev/null; then die "zarrfs still running after unmount"; fi
wait "$PID" || die "zarrfs exited with status $? after the unmount"
PID=
info "unmounted; zarrfs exited cleanly"
say "Demo finished: OK"
