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
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import harness as h
from harness import COLS, MiB, env

GEN_VERSION = 1                # bump when the data or layouts change: cached stores regenerate

HERE = h.HERE
CFG = h.knobs(
    3,
    mib=env("ZF_BENCH_V3_MIB", 512.0, float),
    layouts=env("ZF_BENCH_V3_LAYOUTS", "gzip,shard-gzip,shard-raw").split(","),
    random=env("ZF_BENCH_RANDOM", 20000, int),
    zarrita_random_s=env("ZF_BENCH_ZARRITA_RANDOM_S", 5.0, float),
    io_reads=env("ZF_BENCH_V3_IO_READS", 100, int),
    node=env("ZF_BENCH_NODE", "node"),
)
SHARD_ROWS = 2048
ROWS = h.rows_for(CFG["mib"] * MiB, SHARD_ROWS)
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

def make_array():
    """The array of bench.py (harness.band(), same seed, same bands)."""
    return h.make_array(ROWS, CFG["seed"])


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
    h.log("  generating %s (%s, %s float32) ..." % (path, L["label"], SHAPE))
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
    h.log("  ... %.1f s, %.1f MiB" % (time.perf_counter() - t0, total / MiB))


def generate_all():
    """Write the stores that are missing or stale; return {layout: stamp}."""
    todo = [l for l in CFG["layouts"] if read_stamp(l) is None]
    if todo:
        t0 = time.perf_counter()
        a = make_array()
        digest = hashlib.sha256(memoryview(a).cast("B")).hexdigest()
        h.log("  array generated in %.1f s, sha256 %s" % (time.perf_counter() - t0, digest[:16]))
        for l in todo:
            generate(l, a, digest)
        del a
    return {l: read_stamp(l) for l in CFG["layouts"]}


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


# ---------------------------------------------------------------------------- daemon

def daemon(store):
    return h.zarrfs_daemon(CFG, store, MNT, LOG, nbytes=NBYTES)


def watchdog(d, what):
    return h.Watchdog(d, what, CFG["phase_timeout"])


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
    h.check_preads("zarrita random read", offsets[:n],
                   [data[k * 4096:(k + 1) * 4096] for k in range(n)], ref)
    return res


def mbps(t):
    return h.mbps(NBYTES, t)


def run_layout(layout, stamp):
    store = store_path(layout)
    lay = Layout(layout)
    res = {"layout": layout, "label": LAYOUTS[layout]["label"], "store": store,
           "store_bytes": h.store_bytes(store), "files": len(h.store_files(store)) - 1,
           "sha256": stamp["sha256"], "reps": []}
    res["compression_ratio"] = NBYTES / res["store_bytes"]
    for rep in range(CFG["reps"]):
        r = {"load1_start": os.getloadavg()[0]}
        r["store_resident"] = h.prewarm(store)
        cpu0 = h.cpu_snapshot()

        # 1. zarrita zarr.get(arr, null): the peer and the reference
        zw, ref = zarrita_whole(store, stamp["sha256"])
        r["zarrita_s"], r["zarrita_cpu_s"] = zw["seconds"], zw["cpu_s"]
        r["zarrita_rss_mib"] = zw["max_rss_kib"] / 1024.0

        # 2. zarrfs cold whole read
        with daemon(store) as d:
            r["mounted_resident_before"] = h.resident_fraction(d.file)
            f0 = d.store_fetched()
            io0, c0 = d.io(), d.cpu_s()
            with watchdog(d, "%s cold read" % layout):
                t, buf = h.read_whole(d.file, NBYTES, CFG["bs"])
            io1 = d.io()
            f1 = d.store_fetched()
            if f0 is not None:
                r["cold_stats_fetched"] = f1 - f0
            r["cold_s"], r["cold_daemon_cpu_s"] = t, d.cpu_s() - c0
            r["cold_rchar"] = io1["rchar"] - io0["rchar"]
            r["cold_read_bytes"] = io1["read_bytes"] - io0["read_bytes"]
            h.check_equal("%s: zarrfs cold read" % layout, buf, ref)
            del buf
            r["hwm_cold_mib"] = d.hwm_mib()
            r["daemon_threads"] = d.threads()

        # 3. zarrfs random 4 KiB preads, fresh mount
        offsets = h.random_offsets(1000 + rep, CFG["random"], NBYTES)
        with daemon(store) as d:
            io0, c0 = d.io(), d.cpu_s()
            with watchdog(d, "%s random preads" % layout):
                ends, blobs = h.timed_preads(d.file, offsets)
                h.check_preads("zarrfs random pread", offsets, blobs, ref)
                del blobs
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
        io_off = h.random_offsets(2000 + rep, CFG["io_reads"], NBYTES)
        with daemon(store) as d:
            f0 = d.store_fetched()
            io0 = d.io()
            with watchdog(d, "%s I/O preads" % layout):
                t0 = time.perf_counter()
                h.check_preads("zarrfs random pread", io_off,
                               h.timed_preads(d.file, io_off)[1], ref)
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
        cpu1 = h.cpu_snapshot()
        r["rep_cpu_s"] = cpu1[1] - cpu0[1]
        r["other_cpu_s"] = max(0.0, (cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1]))
        res["reps"].append(r)
        h.log("  rep %d: zarrita %6.0f MB/s | zarrfs cold %6.0f MB/s (x%.2f) | random %6.0f vs "
              "zarrita %5.0f reads/s (n=%d) | %d reads: daemon read %.1f MB, need %.1f MB, "
              "touched files %.1f MB | RSS %4.0f MiB | load %.1f, other processes %.1f CPU s"
              % (rep + 1, r["zarrita_mbps"], r["cold_mbps"], r["cold_ratio"], r["random_rps"],
                 r["zarrita_random_rps"], n, CFG["io_reads"], r["io_rchar"] / 1e6,
                 r["io_need_bytes"] / 1e6, r["io_file_bytes"] / 1e6, r["hwm_mib"],
                 r["load1_end"], r["other_cpu_s"]))
    res.update(h.summarize(res["reps"]))
    return res


# ---------------------------------------------------------------------------- report

def js_versions():
    """Node's version and zarrita's (from its package.json)."""
    info = {"node": subprocess.run([CFG["node"], "--version"], capture_output=True, text=True,
                                   timeout=30).stdout.strip()}
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
    rng = h.rng
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
    if h.report_cli(lambda rec: markdown(rec["results"], rec["config"]["io_reads"])):
        return
    for layout in CFG["layouts"]:
        if layout not in LAYOUTS:
            sys.exit("bench_v3: unknown layout %r (known: %s)" % (layout, ", ".join(LAYOUTS)))
    for d in (MNT, TMP, os.path.join(V3DIR, "data")):
        os.makedirs(d, exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench_v3: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    s = h.Session("zarrfs v3 benchmark", CFG, modules=("numpy",), extra=js_versions())
    s.intro("array %s float32 = %.0f MiB, %d reps, cache_size=%s, %d random reads, %d I/O reads"
            % (SHAPE, NBYTES / MiB, CFG["reps"], CFG["cache_size"], CFG["random"],
               CFG["io_reads"]), "node %(node)s, zarrita %(zarrita)s" % s.info)
    stamps = generate_all()                          # generate everything first
    results = []
    for layout in CFG["layouts"]:
        h.log("%s:" % LAYOUTS[layout]["label"])
        results.append(run_layout(layout, stamps[layout]))
    s.finish(os.path.join(V3DIR, "results"), "bench-v3", results,
             markdown(results, CFG["io_reads"]),
             "MB = 1e6 bytes; medians of %d repetitions; ratios = zarrfs / zarrita, the median of "
             "the per-repetition ratios." % CFG["reps"], shape=SHAPE, nbytes=NBYTES)


if __name__ == "__main__":
    main()
