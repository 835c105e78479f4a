#!/usr/bin/python3
"""zarrfs Zarr v3 benchmark: zarrfs against zarrita.js on the same data, in the same run.

Run it through bench/run_v3.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with numpy, Node and zarrita (npm ci --prefix tests/integration/js).

Data: one float32 array of about ZF_BENCH_V3_MIB MiB, shape (ROWS, 16384), the values of bench.py
(smooth fields plus noise, same generator and seed), written by this script following the Zarr v3
core and sharding_indexed specs (no zarr library involved) in three layouts:

  gzip        unsharded, chunks 1024 x 1024 (4 MiB), codecs [bytes little, gzip 1]
  shard-gzip  shards 2048 x 2048 (16 MiB) of inner chunks 512 x 512 (1 MiB), inner codecs
              [bytes little, gzip 1], index_codecs [bytes little, crc32c], index at the end
  shard-raw   the same with inner codecs [bytes little] (uncompressed inner chunks)

cached in ZF_BENCH_DIR/v3/data/ and reused (a stamp file holds the SHA-256 of the raw array).
Per layout and repetition, in this order:

  1. zarrita (bench/v3_read.mjs whole): time zarr.get(arr, null); its result, written to a file,
     is the reference (checked once per repetition against the SHA-256 of the generated array)
  2. zarrfs, fresh mount: cold read of the whole mounted file with ZF_BENCH_BS reads into a new
     buffer, compared with the reference
  3. zarrfs, fresh mount: ZF_BENCH_RANDOM random 4 KiB-aligned os.pread(4096)s, compared
  4. zarrita (v3_read.mjs random): the same offsets as zarr.get(arr, [i, slice(j, j+1024)]),
     time-boxed to ZF_BENCH_ZARRITA_RANDOM_S seconds, compared
  5. zarrfs, fresh mount: ZF_BENCH_V3_IO_READS random 4 KiB preads (other offsets), counting the
     bytes the daemon read: rchar of /proc/<daemon>/io after minus before (every byte returned by
     read/pread: the store files, and the FUSE requests read from /dev/fuse, 80 bytes per READ);
     read_bytes is recorded too but is ~0 because the store is in the page cache; if the mount
     has a .zarrfs-stats file, its store.bytes_fetched delta is recorded as a cross-check). Compared with
     what the reads need: the encoded bytes of the (inner) chunks they touch plus the shard
     indexes, and the sizes of the shards they touch (what a whole-shard reader would read).

The store's files are read once before each repetition so that both sides read them from the page
cache. Daemon peak RSS is the maximum VmHWM over the mounts of the repetition. The CPU time the
rest of the machine used during a repetition (/proc/stat busy time minus this process's and its
children's) is recorded, to tell a quiet run from a disturbed one.

MB = 1e6 bytes. Medians over the repetitions; a ratio is zarrfs / zarrita computed within each
repetition, then the median of those ratios is reported.
"""
import ctypes
import datetime
import hashlib
import json
import mmap
import os
import platform
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
COLS = 16384                   # elements per row: one row is 64 KiB
BAND = 1024                    # rows per generator call (as bench.py, so the values match)
GEN_VERSION = 1                # bump when the data or layouts change: cached stores regenerate


def env(name, default, conv=str):
    v = os.environ.get(name, "")
    return conv(v) if v != "" else default


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": KiB, "M": MiB, "G": GiB}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


HERE = os.path.dirname(os.path.abspath(__file__))
CFG = {
    "mib": env("ZF_BENCH_V3_MIB", 512.0, float),
    "reps": env("ZF_BENCH_REPS", 3, int),
    "dir": env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"),
    "layouts": env("ZF_BENCH_V3_LAYOUTS", "gzip,shard-gzip,shard-raw").split(","),
    "cache_size": env("ZF_BENCH_CACHE", "2G"),
    "threads": env("ZF_BENCH_THREADS", ""),
    "bs": parse_size(env("ZF_BENCH_BS", "4M")),
    "random": env("ZF_BENCH_RANDOM", 20000, int),
    "zarrita_random_s": env("ZF_BENCH_ZARRITA_RANDOM_S", 5.0, float),
    "io_reads": env("ZF_BENCH_V3_IO_READS", 100, int),
    "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 600.0, float),
    "seed": env("ZF_BENCH_SEED", 12345, int),
    "node": env("ZF_BENCH_NODE", "node"),
    "zarrfs": env("ZARRFS", os.path.join(HERE, "..", "build", "src", "fuse", "zarrfs")),
}
SHARD_ROWS = 2048
ROWS = max(SHARD_ROWS,
           int(round(CFG["mib"] * MiB / (COLS * 4) / SHARD_ROWS)) * SHARD_ROWS)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
V3DIR = os.path.join(CFG["dir"], "v3")
MNT = os.path.join(V3DIR, "mnt")
TMP = os.path.join(V3DIR, "tmp")
LOG = os.path.join(V3DIR, "zarrfs.log")
V3_READ = os.path.join(HERE, "v3_read.mjs")

BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP1 = {"name": "gzip", "configuration": {"level": 1}}
LAYOUTS = {
    "gzip": {"label": "unsharded 1024², gzip 1", "chunk": (1024, 1024), "inner": None,
             "gzip": True},
    "shard-gzip": {"label": "shards 2048² / inner 512², gzip 1", "chunk": (2048, 2048),
                   "inner": (512, 512), "gzip": True},
    "shard-raw": {"label": "shards 2048² / inner 512², raw", "chunk": (2048, 2048),
                  "inner": (512, 512), "gzip": False},
}


# ---------------------------------------------------------------------------- crc32c

def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1     # Castagnoli, reflected
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


# ---------------------------------------------------------------------------- data generation

def band(r0, r1, rng):
    """Rows [r0, r1), exactly as bench.py's band(): smooth fields (separable sines, a slow
    diagonal wave) plus noise of sigma 0.01 at a mean of 280, so the low mantissa bits are noise."""
    y = np.arange(r0, r1, dtype=np.float64)[:, None]
    x = np.arange(COLS, dtype=np.float64)[None, :]
    f = (np.sin(2 * np.pi * y / 2111.0) * np.cos(2 * np.pi * x / 1709.0) * 20.0
         + np.sin(2 * np.pi * (x + 0.7 * y) / 5003.0) * 5.0
         + 280.0)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32) * np.float32(0.01)
    return f


def make_array():
    a = np.empty(SHAPE, dtype="<f4")
    rng = np.random.default_rng(CFG["seed"])
    for r0 in range(0, ROWS, BAND):
        a[r0:r0 + BAND] = band(r0, r0 + BAND, rng)
    return a


def store_path(layout):
    return os.path.join(V3DIR, "data", "%s-%d.zarr" % (layout, ROWS))


def stamp_want(layout):
    L = LAYOUTS[layout]
    return {"version": GEN_VERSION, "shape": SHAPE, "seed": CFG["seed"], "chunk": L["chunk"],
            "inner": L["inner"], "gzip": L["gzip"]}


def read_stamp(layout):
    try:
        with open(store_path(layout) + ".done") as f:
            got = json.load(f)
    except (OSError, ValueError):
        return None
    want = json.loads(json.dumps(stamp_want(layout)))
    return got if {k: got.get(k) for k in want} == want else None


def metadata(layout):
    L = LAYOUTS[layout]
    inner_codecs = [BYTES_LE] + ([GZIP1] if L["gzip"] else [])
    if L["inner"] is None:
        codecs = inner_codecs
    else:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(L["inner"]),
            "codecs": inner_codecs,
            "index_codecs": [BYTES_LE, {"name": "crc32c"}],
            "index_location": "end"}}]
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(SHAPE),
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(L["chunk"])}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": codecs,
        "attributes": {"zarrfs_bench": "bench/bench_v3.py", "layout": layout},
    }


def encode_inner(block, use_gzip):
    raw = np.ascontiguousarray(block, dtype="<f4").tobytes()
    # gzip member (RFC 1952) at level 1; zlib releases the GIL, so a thread pool uses every core
    return zlib.compress(raw, 1, wbits=31) if use_gzip else raw


def encode_chunk(layout, block):
    L = LAYOUTS[layout]
    if L["inner"] is None:
        return encode_inner(block, L["gzip"])
    i0, i1 = L["inner"]
    n0, n1 = block.shape[0] // i0, block.shape[1] // i1
    parts, index, off = [], np.empty((n0, n1, 2), dtype="<u8"), 0
    for k0 in range(n0):                    # inner chunks in C order, then the index
        for k1 in range(n1):
            enc = encode_inner(block[k0 * i0:(k0 + 1) * i0, k1 * i1:(k1 + 1) * i1], L["gzip"])
            index[k0, k1] = (off, len(enc))
            parts.append(enc)
            off += len(enc)
    idx = index.tobytes()
    return b"".join(parts) + idx + struct.pack("<I", crc32c(idx))


def generate(layout, a, digest):
    path = store_path(layout)
    L = LAYOUTS[layout]
    t0 = time.perf_counter()
    print("  generating %s (%s, %s float32) ..." % (path, L["label"], SHAPE), flush=True)
    for p in (path + ".done", ):
        if os.path.exists(p):
            os.unlink(p)
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "zarr.json"), "w") as f:
        json.dump(metadata(layout), f, indent=2)
    c0, c1 = L["chunk"]
    keys = [(i, j) for i in range(ROWS // c0) for j in range(COLS // c1)]

    def one(key):
        i, j = key
        data = encode_chunk(layout, a[i * c0:(i + 1) * c0, j * c1:(j + 1) * c1])
        d = os.path.join(tmp, "c", str(i))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, str(j)), "wb") as f:
            f.write(data)
        return len(data)

    with ThreadPoolExecutor(os.cpu_count() or 1) as ex:
        total = sum(ex.map(one, keys))
    os.rename(tmp, path)
    with open(path + ".done", "w") as f:
        json.dump(dict(stamp_want(layout), sha256=digest, store_bytes=total), f)
    print("  ... %.1f s, %.1f MiB" % (time.perf_counter() - t0, total / MiB), flush=True)


def generate_all():
    """Write the stores that are missing or stale; return {layout: stamp}."""
    todo = [l for l in CFG["layouts"] if read_stamp(l) is None]
    if todo:
        t0 = time.perf_counter()
        a = make_array()
        digest = hashlib.sha256(memoryview(a).cast("B")).hexdigest()
        print("  array generated in %.1f s, sha256 %s" % (time.perf_counter() - t0, digest[:16]),
              flush=True)
        for l in todo:
            generate(l, a, digest)
        del a
    return {l: read_stamp(l) for l in CFG["layouts"]}


def store_files(path):
    return [os.path.join(d, n) for d, _, ns in os.walk(path) for n in ns]


def store_bytes(path):
    return sum(os.path.getsize(p) for p in store_files(path))


class Layout:
    """What a random 4 KiB read needs from the store: which chunk/shard files and inner chunks
    it touches, with their encoded sizes (from the shard indexes on disk)."""

    def __init__(self, layout):
        self.L = LAYOUTS[layout]
        self.path = store_path(layout)
        self.c0, self.c1 = self.L["chunk"]
        self.file_size = {}
        self.inner_nbytes = {}
        for i in range(ROWS // self.c0):
            for j in range(COLS // self.c1):
                p = os.path.join(self.path, "c", str(i), str(j))
                self.file_size[(i, j)] = os.path.getsize(p)
                if self.L["inner"] is not None:
                    n0, n1 = self.c0 // self.L["inner"][0], self.c1 // self.L["inner"][1]
                    self.index_bytes = n0 * n1 * 16 + 4
                    with open(p, "rb") as f:
                        f.seek(-self.index_bytes, os.SEEK_END)
                        raw = f.read()
                    idx, crc = raw[:-4], struct.unpack("<I", raw[-4:])[0]
                    if crc32c(idx) != crc:
                        raise RuntimeError("%s: shard index crc32c mismatch" % p)
                    index = np.frombuffer(idx, dtype="<u8").reshape(n0, n1, 2)
                    for k0 in range(n0):
                        for k1 in range(n1):
                            self.inner_nbytes[(i, j, k0, k1)] = int(index[k0, k1, 1])

    def needs(self, offsets):
        """(files touched, their bytes, inner chunks touched, bytes a byte-range reader needs:
        touched inner chunks + one index per touched shard)."""
        files, inner = set(), set()
        for off in offsets.tolist():
            e = off // 4
            r, c = divmod(e, COLS)
            for cc in (c, c + 1023):
                key = (r // self.c0, cc // self.c1)
                files.add(key)
                if self.L["inner"] is not None:
                    i0, i1 = self.L["inner"]
                    inner.add(key + ((r % self.c0) // i0, (cc % self.c1) // i1))
        file_bytes = sum(self.file_size[k] for k in files)
        if self.L["inner"] is None:
            return len(files), file_bytes, len(files), file_bytes
        need = sum(self.inner_nbytes[k] for k in inner) + len(files) * self.index_bytes
        return len(files), file_bytes, len(inner), need


# ---------------------------------------------------------------------------- page-cache tools

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_fraction(path):
    """Fraction of the file's pages in the page cache (mincore on a mapping; touches nothing)."""
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap " + path)
        try:
            n = (size + PAGE - 1) // PAGE
            vec = (ctypes.c_ubyte * n)()
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore " + path)
            return float(np.count_nonzero(np.frombuffer(vec, dtype=np.uint8) & 1)) / n
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def prewarm(path):
    """Read every file of the store once (into the page cache); return the resident fraction."""
    buf = bytearray(4 * MiB)
    total = resident = 0
    for p in store_files(path):
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
        sz = os.path.getsize(p)
        total += sz
        resident += sz * resident_fraction(p)
    return resident / total if total else 1.0


# ---------------------------------------------------------------------------- daemon

def is_mounted():
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == MNT for line in f)


class Daemon:
    def __init__(self, store):
        if is_mounted():
            raise RuntimeError("%s is already mounted" % MNT)
        cmd = [CFG["zarrfs"], "-f", "-o", "cache_size=" + CFG["cache_size"]]
        if CFG["threads"]:
            cmd += ["-o", "threads=" + CFG["threads"]]
        cmd += [store, MNT]
        self.log = open(LOG, "ab")
        self.log.write(("\n=== %s %s\n" % (time.strftime("%T"), " ".join(cmd))).encode())
        self.log.flush()
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        try:
            self._wait_mounted()
        except BaseException:
            try:
                self.close()
            except Exception:
                pass
            raise

    def _wait_mounted(self):
        deadline = time.monotonic() + 30
        while subprocess.run(["mountpoint", "-q", MNT], timeout=10).returncode != 0:
            if self.p.poll() is not None:
                raise RuntimeError("zarrfs exited with status %s before mounting (see %s)"
                                   % (self.p.returncode, LOG))
            if time.monotonic() > deadline:
                raise RuntimeError("zarrfs did not mount within 30 s")
            time.sleep(0.02)
        all_names = os.listdir(MNT)
        names = [n for n in all_names if not n.startswith(".")]
        if len(names) != 1:
            raise RuntimeError("expected one file in the mount, got %r" % all_names)
        self.file = os.path.join(MNT, names[0])
        self.stats_file = os.path.join(MNT, ".zarrfs-stats")     # found by name, maybe unlisted
        if not os.path.exists(self.stats_file):
            self.stats_file = None
        if os.path.getsize(self.file) != NBYTES:
            raise RuntimeError("%s: size %d, expected %d"
                               % (self.file, os.path.getsize(self.file), NBYTES))

    def cpu_s(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def io(self):
        """/proc/PID/io of the daemon (all its threads): rchar, read_bytes, syscr, ..."""
        with open("/proc/%d/io" % self.p.pid) as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}

    def store_fetched(self):
        """The daemon's own count of bytes fetched from the store (store.bytes_fetched of the
        mount's .zarrfs-stats file), or None if this zarrfs has no statistics file."""
        if self.stats_file is None:
            return None
        with open(self.stats_file) as f:
            return json.load(f)["store"]["bytes_fetched"]

    def status(self, key):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split()[1:]
        return None

    def hwm_mib(self):
        return int(self.status("VmHWM")[0]) / 1024.0

    def close(self):
        if self.p.poll() is None:
            subprocess.run(["fusermount3", "-u", MNT], capture_output=True, timeout=30)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=30)
        if is_mounted():                    # the daemon died or was killed: lazy unmount
            subprocess.run(["fusermount3", "-uz", MNT], capture_output=True, timeout=30)
        self.log.close()
        if self.p.returncode != 0:
            raise RuntimeError("zarrfs exited with status %d (see %s)" % (self.p.returncode, LOG))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        except Exception:
            if exc[0] is None:
                raise


class Watchdog:
    """Kill the daemon if a phase takes longer than ZF_BENCH_PHASE_TIMEOUT: blocked reads on the
    mount then fail (ENOTCONN) instead of hanging the benchmark."""

    def __init__(self, daemon, what):
        self.daemon, self.what, self.fired = daemon, what, False

    def _fire(self):
        self.fired = True
        print("!! %s: no result after %.0f s: killing zarrfs (pid %d)"
              % (self.what, CFG["phase_timeout"], self.daemon.p.pid), flush=True)
        self.daemon.p.send_signal(signal.SIGKILL)

    def __enter__(self):
        self.t = threading.Timer(CFG["phase_timeout"], self._fire)
        self.t.daemon = True
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.t.cancel()
        if self.fired and exc[0] is None:
            raise RuntimeError("%s: timed out" % self.what)


# ---------------------------------------------------------------------------- measurements

def zarrita(*args):
    cmd = [CFG["node"], V3_READ] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=CFG["phase_timeout"])
    if p.returncode != 0:
        raise RuntimeError("zarrita (%s) failed with status %d:\n%s"
                           % (" ".join(cmd), p.returncode, p.stderr[-4000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


def zarrita_whole(store, digest):
    out = os.path.join(TMP, "zarrita-whole.bin")
    res = zarrita("whole", store, out)
    try:
        if res["nbytes"] != NBYTES or os.path.getsize(out) != NBYTES:
            raise RuntimeError("zarrita returned %d bytes, expected %d" % (res["nbytes"], NBYTES))
        ref = np.fromfile(out, dtype=np.uint8)
    finally:
        os.unlink(out)
    got = hashlib.sha256(memoryview(ref)).hexdigest()
    if got != digest:
        raise RuntimeError("zarrita's array differs from the generated one (sha256 %s, expected "
                           "%s): the store or zarrita is wrong, not zarrfs" % (got[:16], digest[:16]))
    return res, ref


def read_whole(path):
    """Read the file sequentially into a new buffer (as zarr.get produces a new array)."""
    bs = CFG["bs"]
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        buf = np.empty(NBYTES, dtype=np.uint8)
        mv = memoryview(buf)
        off = 0
        while off < NBYTES:
            n = os.readv(fd, [mv[off:off + bs]])
            if n <= 0:
                raise RuntimeError("%s: short read at %d" % (path, off))
            off += n
        return time.perf_counter() - t0, buf
    finally:
        os.close(fd)


def check_equal(what, buf, ref):
    if not np.array_equal(buf, ref):
        bad = np.flatnonzero(buf != ref)
        raise RuntimeError("%s: WRONG DATA: %d bytes differ, first at byte offset %d"
                           % (what, bad.size, bad[0]))


def random_offsets(seed, n):
    rng = np.random.default_rng(seed)
    return rng.integers(0, NBYTES // 4096, n).astype(np.int64) * 4096


def check_random(what, offsets, blobs, ref):
    for off, b in zip(offsets.tolist(), blobs):
        if b != ref[off:off + 4096].tobytes():
            raise RuntimeError("%s: 4 KiB read at offset %d: WRONG DATA" % (what, off))


def zarrfs_random(path, offsets, ref):
    fd = os.open(path, os.O_RDONLY)
    ends = np.empty(len(offsets))
    out = []
    try:
        t0 = time.perf_counter()
        for k, off in enumerate(offsets.tolist()):
            out.append(os.pread(fd, 4096, off))
            ends[k] = time.perf_counter()
    finally:
        os.close(fd)
    check_random("zarrfs random pread", offsets, out, ref)
    return ends - t0


def zarrita_random(store, offsets, ref):
    off_file = os.path.join(TMP, "offsets.i64")
    out = os.path.join(TMP, "zarrita-random.bin")
    offsets.astype("<i8").tofile(off_file)
    res = zarrita("random", store, off_file, out, CFG["zarrita_random_s"])
    try:
        with open(out, "rb") as f:
            data = f.read()
    finally:
        os.unlink(out)
        os.unlink(off_file)
    n = res["n"]
    if len(data) != n * 4096 or n == 0:
        raise RuntimeError("zarrita random: %d bytes for %d reads" % (len(data), n))
    check_random("zarrita random read", offsets[:n],
                 [data[k * 4096:(k + 1) * 4096] for k in range(n)], ref)
    return res


def cpu_snapshot():
    """(CPU seconds used on the whole machine, by this process and its waited-for children: the
    daemons, Node): the difference over a repetition is what other processes used meanwhile."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]        # user nice system irq softirq steal
    t = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), t.user + t.system + t.children_user + t.children_system


def mbps(t):
    return NBYTES / t / 1e6


def run_layout(layout, stamp):
    store = store_path(layout)
    lay = Layout(layout)
    res = {"layout": layout, "label": LAYOUTS[layout]["label"], "store": store,
           "store_bytes": store_bytes(store), "files": len(store_files(store)) - 1,
           "sha256": stamp["sha256"], "reps": []}
    res["compression_ratio"] = NBYTES / res["store_bytes"]
    for rep in range(CFG["reps"]):
        r = {"load1_start": os.getloadavg()[0]}
        r["store_resident"] = prewarm(store)
        cpu0 = cpu_snapshot()

        # 1. zarrita zarr.get(arr, null): the peer and the reference
        zw, ref = zarrita_whole(store, stamp["sha256"])
        r["zarrita_s"], r["zarrita_cpu_s"] = zw["seconds"], zw["cpu_s"]
        r["zarrita_rss_mib"] = zw["max_rss_kib"] / 1024.0

        # 2. zarrfs cold whole read
        with Daemon(store) as d:
            r["mounted_resident_before"] = resident_fraction(d.file)
            f0 = d.store_fetched()
            io0, c0 = d.io(), d.cpu_s()
            with Watchdog(d, "%s cold read" % layout):
                t, buf = read_whole(d.file)
            io1 = d.io()
            f1 = d.store_fetched()
            if f0 is not None:
                r["cold_stats_fetched"] = f1 - f0
            r["cold_s"], r["cold_daemon_cpu_s"] = t, d.cpu_s() - c0
            r["cold_rchar"] = io1["rchar"] - io0["rchar"]
            r["cold_read_bytes"] = io1["read_bytes"] - io0["read_bytes"]
            check_equal("%s: zarrfs cold read" % layout, buf, ref)
            del buf
            r["hwm_cold_mib"] = d.hwm_mib()
            r["daemon_threads"] = int(d.status("Threads")[0])

        # 3. zarrfs random 4 KiB preads, fresh mount
        offsets = random_offsets(1000 + rep, CFG["random"])
        with Daemon(store) as d:
            io0, c0 = d.io(), d.cpu_s()
            with Watchdog(d, "%s random preads" % layout):
                ends = zarrfs_random(d.file, offsets, ref)
            io1 = d.io()
            r["random_daemon_cpu_s"] = d.cpu_s() - c0
            r["random_rchar"] = io1["rchar"] - io0["rchar"]
            r["hwm_random_mib"] = d.hwm_mib()
        r["random_n"], r["random_s"] = len(offsets), float(ends[-1])

        # 4. zarrita random slices, same offsets, time-boxed
        zr = zarrita_random(store, offsets, ref)
        n = zr["n"]
        r["zarrita_random_n"], r["zarrita_random_s"] = n, zr["seconds"]
        r["random_prefix_s"] = float(ends[n - 1])       # zarrfs over the same first n reads

        # 5. bytes read from the store for a few random 4 KiB reads, fresh mount
        io_off = random_offsets(2000 + rep, CFG["io_reads"])
        with Daemon(store) as d:
            f0 = d.store_fetched()
            io0 = d.io()
            with Watchdog(d, "%s I/O preads" % layout):
                t0 = time.perf_counter()
                zarrfs_random(d.file, io_off, ref)
                r["io_s"] = time.perf_counter() - t0
            io1 = d.io()
            f1 = d.store_fetched()
            if f0 is not None:          # a cross-check of rchar, not used for the table
                r["io_stats_fetched"] = f1 - f0
            r["io_rchar"] = io1["rchar"] - io0["rchar"]
            r["io_read_bytes"] = io1["read_bytes"] - io0["read_bytes"]
            r["io_syscr"] = io1["syscr"] - io0["syscr"]
            r["hwm_io_mib"] = d.hwm_mib()
        (r["io_files"], r["io_file_bytes"], r["io_inner"],
         r["io_need_bytes"]) = lay.needs(io_off)
        del ref

        r["zarrita_mbps"] = mbps(r["zarrita_s"])
        r["cold_mbps"] = mbps(r["cold_s"])
        r["cold_ratio"] = r["cold_mbps"] / r["zarrita_mbps"]
        r["random_rps"] = r["random_n"] / r["random_s"]
        r["random_prefix_rps"] = n / r["random_prefix_s"]
        r["zarrita_random_rps"] = n / r["zarrita_random_s"]
        r["random_ratio"] = r["random_rps"] / r["zarrita_random_rps"]
        r["random_prefix_ratio"] = r["random_prefix_rps"] / r["zarrita_random_rps"]
        r["hwm_mib"] = max(r["hwm_cold_mib"], r["hwm_random_mib"], r["hwm_io_mib"])
        r["cold_daemon_cpu_pct"] = 100 * r["cold_daemon_cpu_s"] / r["cold_s"]
        r["zarrita_cpu_pct"] = 100 * r["zarrita_cpu_s"] / r["zarrita_s"]
        r["cold_rchar_per_store"] = r["cold_rchar"] / res["store_bytes"]
        r["io_rchar_per_need"] = r["io_rchar"] / r["io_need_bytes"]
        r["io_rchar_per_files"] = r["io_rchar"] / r["io_file_bytes"]
        r["load1_end"] = os.getloadavg()[0]
        cpu1 = cpu_snapshot()
        r["rep_cpu_s"] = cpu1[1] - cpu0[1]
        r["other_cpu_s"] = max(0.0, (cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1]))
        res["reps"].append(r)
        print("  rep %d: zarrita %6.0f MB/s | zarrfs cold %6.0f MB/s (x%.2f) | random %6.0f vs "
              "zarrita %5.0f reads/s (n=%d) | %d reads: daemon read %.1f MB, need %.1f MB, "
              "touched files %.1f MB | RSS %4.0f MiB | load %.1f, other processes %.1f CPU s"
              % (rep + 1, r["zarrita_mbps"], r["cold_mbps"], r["cold_ratio"], r["random_rps"],
                 r["zarrita_random_rps"], n, CFG["io_reads"], r["io_rchar"] / 1e6,
                 r["io_need_bytes"] / 1e6, r["io_file_bytes"] / 1e6, r["hwm_mib"],
                 r["load1_end"], r["other_cpu_s"]), flush=True)
    keys = [k for k, v in res["reps"][0].items() if isinstance(v, (int, float))]
    res["median"] = {k: statistics.median(r[k] for r in res["reps"]) for k in keys}
    res["min"] = {k: min(r[k] for r in res["reps"]) for k in keys}
    res["max"] = {k: max(r[k] for r in res["reps"]) for k in keys}
    return res


# ---------------------------------------------------------------------------- report

def machine():
    info = {"nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "numpy": np.__version__}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        info["mem_gib"] = round(int(f.readline().split()[1]) / MiB, 1)
    v = subprocess.run([CFG["zarrfs"], "--version"], capture_output=True, text=True, timeout=10)
    info["zarrfs"] = v.stdout.strip().replace("\n", "; ")
    info["node"] = subprocess.run([CFG["node"], "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
    try:
        js = os.environ.get("ZF_BENCH_JS_DIR") or os.path.join(HERE, "..", "tests", "integration",
                                                                "js")
        with open(os.path.join(js, "node_modules", "zarrita", "package.json")) as f:
            info["zarrita"] = json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        info["zarrita"] = "?"
    return info


def markdown(results, io_reads):
    med = lambda r, k: r["median"][k]
    lines = [
        "| layout | store (% of raw) | zarrita `zarr.get` MB/s | zarrfs cold MB/s | cold ratio "
        "| random 4 KiB zarrfs reads/s | zarrita reads/s | random ratio "
        "| daemon peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f | %.0f | **%.2f** | %.0f | %.1f | **%.0f** | %.0f |" % (
            r["label"], 100.0 / r["compression_ratio"], med(r, "zarrita_mbps"),
            med(r, "cold_mbps"), med(r, "cold_ratio"), med(r, "random_rps"),
            med(r, "zarrita_random_rps"), med(r, "random_ratio"), med(r, "hwm_mib")))
    lines += [
        "",
        "| layout | %d random 4 KiB reads: chunk/shard files touched | their bytes, MB "
        "| inner chunks touched | needed: those inner chunks + shard indexes, MB "
        "| daemon read (rchar), MB | read / needed | read / files touched |" % io_reads,
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        inner = "%d" % med(r, "io_inner") if LAYOUTS[r["layout"]]["inner"] else "–"
        lines.append("| %s | %d of %d | %.1f | %s | %.1f | %.1f | %.2f | %.2f |" % (
            r["label"], med(r, "io_files"), r["files"], med(r, "io_file_bytes") / 1e6, inner,
            med(r, "io_need_bytes") / 1e6, med(r, "io_rchar") / 1e6,
            med(r, "io_rchar_per_need"), med(r, "io_rchar_per_files")))
    lines += [
        "",
        "| layout | CPU: zarrita `zarr.get` | CPU: daemon, cold read | zarrita peak RSS MiB "
        "| daemon rchar, cold read / store size | zarrfs reads/s over zarrita's first n reads (n) "
        "| same-prefix random ratio |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f%% | %.0f | %.2f | %.0f (%d) | %.1f |" % (
            r["label"], med(r, "zarrita_cpu_pct"), med(r, "cold_daemon_cpu_pct"),
            med(r, "zarrita_rss_mib"), med(r, "cold_rchar_per_store"),
            med(r, "random_prefix_rps"), int(med(r, "zarrita_random_n")),
            med(r, "random_prefix_ratio")))
    rng = lambda r, k, f="%.0f": (f + "–" + f) % (r["min"][k], r["max"][k])
    lines += [
        "",
        "| layout | spread (min–max): zarrita MB/s | zarrfs cold MB/s | cold ratio "
        "| zarrfs random reads/s | zarrita random reads/s | load average (1 min) "
        "| CPU s used by other processes per repetition (the bench's own) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        other = "–"
        if "other_cpu_s" in r["min"]:
            other = "%s (%s)" % (rng(r, "other_cpu_s", "%.1f"), rng(r, "rep_cpu_s"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], rng(r, "zarrita_mbps"), rng(r, "cold_mbps"), rng(r, "cold_ratio", "%.2f"),
            rng(r, "random_rps"), rng(r, "zarrita_random_rps", "%.1f"),
            rng(r, "load1_end", "%.1f"), other))
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["--report"]:                 # re-render a recorded run's tables
        with open(sys.argv[2]) as f:
            rec = json.load(f)
        print(markdown(rec["results"], rec["config"]["io_reads"]))
        return
    for layout in CFG["layouts"]:
        if layout not in LAYOUTS:
            sys.exit("bench_v3: unknown layout %r (known: %s)" % (layout, ", ".join(LAYOUTS)))
    for d in (MNT, TMP, os.path.join(V3DIR, "data")):
        os.makedirs(d, exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench_v3: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    started = datetime.datetime.now().astimezone()
    info = machine()
    info["load_before"] = os.getloadavg()
    print("zarrfs v3 benchmark %s: array %s float32 = %.0f MiB, %d reps, cache_size=%s, "
          "%d random reads, %d I/O reads" % (started.strftime("%F %T %Z"), SHAPE, NBYTES / MiB,
                                             CFG["reps"], CFG["cache_size"], CFG["random"],
                                             CFG["io_reads"]), flush=True)
    print("machine: %(nproc)d CPUs (%(cpu)s), %(mem_gib)s GiB, kernel %(kernel)s; numpy %(numpy)s; "
          "node %(node)s, zarrita %(zarrita)s; %(zarrfs)s" % info, flush=True)
    print("load average before: %.2f %.2f %.2f" % info["load_before"], flush=True)
    stamps = generate_all()                          # generate everything first
    results = []
    for layout in CFG["layouts"]:
        print("%s:" % LAYOUTS[layout]["label"], flush=True)
        results.append(run_layout(layout, stamps[layout]))
    info["load_after"] = os.getloadavg()
    ended = datetime.datetime.now().astimezone()
    md = markdown(results, CFG["io_reads"])
    print("\nload average after: %.2f %.2f %.2f; %.1f min"
          % (info["load_after"] + ((ended - started).total_seconds() / 60,)))
    print("MB = 1e6 bytes; medians of %d repetitions; ratios = zarrfs / zarrita, the median of the "
          "per-repetition ratios.\n" % CFG["reps"])
    print(md)
    stamp = started.strftime("%Y%m%dT%H%M%S")
    out = {"started": started.isoformat(), "ended": ended.isoformat(), "config": CFG,
           "shape": SHAPE, "nbytes": NBYTES, "machine": info, "results": results, "markdown": md}
    os.makedirs(os.path.join(V3DIR, "results"), exist_ok=True)
    base = os.path.join(V3DIR, "results", "bench-v3-%s" % stamp)
    with open(base + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print("\nresults: %s.json, %s.md" % (base, base))


if __name__ == "__main__":
    main()
