#!/usr/bin/python3
"""zarrfs write benchmark: writing one array through a zarrfs mount against zarr-python writing
the same NumPy array, per codec, in the same run.

Run it through bench/write.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy.

Data: a float32 array of about ZF_BENCH_WRITE_MB MiB, shape (ROWS, 16384), chunks 1024 x 1024
(4 MiB), the values of bench.py (same generator and seed), stored once as a raw C-order file
($ZF_BENCH_DIR/write/raw-ROWS.f4) and kept in memory as the NumPy array zarr-python writes.

Per codec (none, zlib 1, blosc lz4 5 +shuffle, zstd 1, lz4) first a probe: a 16 x 16 array with
that codec is mounted -o rw, written and fsync'ed; a codec whose probe fails (zarrfs does not
encode it yet) is skipped with a note. Then per repetition, the two sides in alternating order:

  zarrfs       zarr-python creates a fresh empty array with the codec (no chunk stored), zarrfs
               mounts it -o rw,cache_size=ZF_BENCH_CACHE; timed: `dd if=RAW of=MNT/FILE
               bs=ZF_BENCH_BS conv=notrunc,fsync` (the fsync stores every chunk: encode, temporary
               file, fsync, rename), then, timed separately, the unmount (fusermount3 -u until the
               daemon exits; nothing should be left to store). The store is then read with
               zarr-python and compared with the array; the daemon's .zarrfs-stats (chunks
               encoded, store writes, bytes written, store reads) is recorded.
  zarr-python  a fresh array with the same codec, timed: `z[:] = a`; then, timed separately,
               os.sync() (zarr-python's DirectoryStore does not fsync; zarrfs does, per chunk:
               "zarr-python + sync" is the like-for-like durable peer).

os.sync() runs before each timed phase so that neither side pays for the other's dirty pages; the
raw file is read once before each repetition (dd reads it from the page cache).

MB = 1e6 bytes of the array (not of the store). Medians over the repetitions; a ratio is
zarrfs MB/s / zarr-python MB/s within each repetition (> 1: zarrfs faster), then the median.
"""
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import numcodecs
import zarr

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
COLS = 16384
CHUNK = (1024, 1024)


def env(name, default, conv=str):
    v = os.environ.get(name, "")
    return conv(v) if v != "" else default


HERE = os.path.dirname(os.path.abspath(__file__))
CFG = {
    "mb": env("ZF_BENCH_WRITE_MB", 1024.0, float),
    "reps": env("ZF_BENCH_REPS", 3, int),
    "dir": os.path.join(env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"), "write"),
    "codecs": env("ZF_BENCH_WRITE_CODECS", "none,zlib,blosc,zstd,lz4").split(","),
    "cache_size": env("ZF_BENCH_CACHE", "2G"),
    "threads": env("ZF_BENCH_THREADS", ""),
    "bs": env("ZF_BENCH_BS", "4M"),
    "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 600.0, float),
    "seed": env("ZF_BENCH_SEED", 12345, int),
    "zarrfs": env("ZARRFS", os.path.join(HERE, "..", "build", "src", "fuse", "zarrfs")),
}
ROWS = max(CHUNK[0], int(round(CFG["mb"] * MiB / (COLS * 4) / CHUNK[0])) * CHUNK[0])
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
MNT = os.path.join(CFG["dir"], "mnt")
LOG = os.path.join(CFG["dir"], "zarrfs.log")


def compressor(codec):
    from numcodecs import LZ4, Blosc, Zlib, Zstd
    return {
        "none": None,
        "zlib": Zlib(level=1),
        "blosc": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE),
        "zstd": Zstd(level=1),
        "lz4": LZ4(acceleration=1),
    }[codec]


CODEC_LABEL = {"none": "none", "zlib": "zlib 1", "blosc": "blosc lz4 5 +shuffle",
               "zstd": "zstd 1", "lz4": "lz4"}


# ---------------------------------------------------------------------------- data

def band(r0, r1, rng):
    """bench.py's generator (same formula, same rng sequence): smooth fields plus noise."""
    y = np.arange(r0, r1, dtype=np.float64)[:, None]
    x = np.arange(COLS, dtype=np.float64)[None, :]
    f = (np.sin(2 * np.pi * y / 2111.0) * np.cos(2 * np.pi * x / 1709.0) * 20.0
         + np.sin(2 * np.pi * (x + 0.7 * y) / 5003.0) * 5.0
         + 280.0)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32) * np.float32(0.01)
    return f


def raw_data():
    """(path of the raw file, the array), generating the file once."""
    path = os.path.join(CFG["dir"], "raw-%d-%d.f4" % (ROWS, CFG["seed"]))
    if os.path.exists(path) and os.path.getsize(path) == NBYTES:
        return path, np.fromfile(path, dtype="<f4").reshape(SHAPE)
    t0 = time.perf_counter()
    print("  generating %s (%s float32) ..." % (path, SHAPE), flush=True)
    a = np.empty(SHAPE, dtype="<f4")
    rng = np.random.default_rng(CFG["seed"])
    for r0 in range(0, ROWS, CHUNK[0]):
        a[r0:r0 + CHUNK[0]] = band(r0, min(ROWS, r0 + CHUNK[0]), rng)
    tmp = path + ".tmp"
    a.tofile(tmp)
    os.rename(tmp, path)
    print("  ... %.1f s" % (time.perf_counter() - t0), flush=True)
    return path, a


def prewarm(path):
    buf = bytearray(4 * MiB)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def store_bytes(path):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns
               if not n.startswith("."))


def fresh_array(path, codec, shape=SHAPE, chunks=CHUNK):
    if os.path.exists(path):
        shutil.rmtree(path)
    return zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype="<f4",
                           compressor=compressor(codec), fill_value=0.0, order="C")


# ---------------------------------------------------------------------------- daemon

def is_mounted(mnt=MNT):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


class Daemon:
    def __init__(self, store, mnt=MNT):
        if is_mounted(mnt):
            raise RuntimeError("%s is already mounted" % mnt)
        self.mnt = mnt
        cmd = [CFG["zarrfs"], "-f", "-o", "rw,cache_size=" + CFG["cache_size"]]
        if CFG["threads"]:
            cmd += ["-o", "threads=" + CFG["threads"]]
        cmd += [store, mnt]
        self.log = open(LOG, "ab")
        self.log.write(("\n=== %s %s\n" % (time.strftime("%T"), " ".join(cmd))).encode())
        self.log.flush()
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        self.closed = False
        try:
            deadline = time.monotonic() + 30
            while not is_mounted(mnt):
                if self.p.poll() is not None:
                    raise RuntimeError("zarrfs exited with status %s before mounting (see %s)"
                                       % (self.p.returncode, LOG))
                if time.monotonic() > deadline:
                    raise RuntimeError("zarrfs did not mount within 30 s")
                time.sleep(0.02)
            names = os.listdir(mnt)
            if len(names) != 1:
                raise RuntimeError("expected one file in the mount, got %r" % names)
            self.file = os.path.join(mnt, names[0])
        except BaseException:
            self.close(check=False)
            raise

    def cpu_s(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def hwm_mib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        return None

    def stats(self):
        with open(os.path.join(self.mnt, ".zarrfs-stats")) as f:
            return json.load(f)

    def close(self, check=True):
        """Unmount and wait for the daemon (it stores what is left); the seconds it took."""
        if self.closed:
            return 0.0
        self.closed = True
        t0 = time.perf_counter()
        if self.p.poll() is None:
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, timeout=60)
            try:
                self.p.wait(timeout=CFG["phase_timeout"])
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=30)
        t = time.perf_counter() - t0
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True, timeout=30)
        self.log.close()
        if check and self.p.returncode != 0:
            raise RuntimeError("zarrfs exited with status %d (see %s)" % (self.p.returncode, LOG))
        return t

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close(check=exc[0] is None)
        except Exception:
            if exc[0] is None:
                raise


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])


def probe(codec):
    """None when zarrfs can write the codec, else why not (one line)."""
    d = tempfile.mkdtemp(prefix="probe-", dir=CFG["dir"])
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    try:
        store = os.path.join(d, "arr")
        fresh_array(store, codec, shape=(16, 16), chunks=(8, 8))
        want = np.arange(256, dtype="<f4").reshape(16, 16) + 1
        with Daemon(store, mnt) as dm:
            try:
                fd = os.open(dm.file, os.O_RDWR)
                try:
                    os.pwrite(fd, want.tobytes(), 0)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                with open(LOG, "rb") as f:
                    f.seek(max(0, os.path.getsize(LOG) - 2000))
                    logged = [l for l in f.read().decode("utf-8", "replace").splitlines()
                              if l.startswith("zarrfs: ")]
                return "%s (zarrfs log: %s)" % (e, tail("\n".join(logged), 1))
        got = zarr.open_array(store, mode="r")[...]
        if not np.array_equal(got, want):
            return "zarr-python reads different data from the probe's store"
        return None
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------- measurements

def zarrfs_write(codec, raw, a):
    store = os.path.join(CFG["dir"], "stores", "zarrfs-%s" % codec)
    fresh_array(store, codec)
    r = {}
    os.sync()
    with Daemon(store) as d:
        s0, c0 = d.stats(), d.cpu_s()
        cmd = ["dd", "if=" + raw, "of=" + d.file, "bs=" + CFG["bs"], "conv=notrunc,fsync",
               "status=none"]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=CFG["phase_timeout"])
        except subprocess.TimeoutExpired:
            d.p.send_signal(signal.SIGKILL)
            raise RuntimeError("%s: dd took more than %.0f s" % (codec, CFG["phase_timeout"]))
        r["dd_s"] = time.perf_counter() - t0
        if p.returncode != 0:
            return None, "dd failed (status %d): %s" % (p.returncode, tail(p.stderr))
        r["daemon_cpu_s"] = d.cpu_s() - c0
        s1 = d.stats()
        r["hwm_mib"] = d.hwm_mib()
        r["dirty_after_fsync"] = s1["cache"]["dirty_bytes"]
        for k in ("writes", "bytes_written", "requests"):
            r["store_" + k] = s1["store"][k] - s0["store"][k]
        r["store_reads"] = r["store_requests"] - r["store_writes"]
        r["encoded_chunks"] = s1["encode"]["chunks"] - s0["encode"]["chunks"]
        r["encode_s"] = s1["encode"]["seconds"] - s0["encode"]["seconds"]
        r["writebacks"] = s1["cache"]["writebacks"] - s0["cache"]["writebacks"]
        r["unmount_s"] = d.close()
    r["total_s"] = r["dd_s"] + r["unmount_s"]
    r["store_bytes"] = store_bytes(store)
    got = zarr.open_array(store, mode="r")[...]
    if not np.array_equal(got.view(np.uint32), a.view(np.uint32)):
        bad = np.flatnonzero(got.reshape(-1) != a.reshape(-1))
        raise RuntimeError("%s: WRONG DATA in the store zarrfs wrote: %d elements differ, first "
                           "at %d" % (codec, bad.size, bad[0]))
    del got
    shutil.rmtree(store)
    return r, None


def zarr_write(codec, a):
    store = os.path.join(CFG["dir"], "stores", "zarr-%s" % codec)
    z = fresh_array(store, codec)
    os.sync()
    c0, t0 = time.process_time(), time.perf_counter()
    z[:] = a
    t = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t1 = time.perf_counter()
    os.sync()
    ts = time.perf_counter() - t1
    r = {"zarr_s": t, "zarr_cpu_s": cpu, "zarr_sync_s": ts, "zarr_store_bytes": store_bytes(store)}
    shutil.rmtree(store)
    return r


def mbps(t):
    return NBYTES / t / 1e6


def run_codec(codec, raw, a):
    res = {"codec": codec, "label": CODEC_LABEL[codec], "reps": []}
    why = probe(codec)
    if why:
        res["skipped"] = "zarrfs cannot write %s yet: %s" % (CODEC_LABEL[codec], why)
        print("  SKIPPED: " + res["skipped"], flush=True)
        return res
    for rep in range(CFG["reps"]):
        prewarm(raw)
        r = {"load1_start": os.getloadavg()[0], "zarrfs_first": rep % 2 == 0}
        if r["zarrfs_first"]:
            zf, err = zarrfs_write(codec, raw, a)
            if zf is not None:
                r.update(zarr_write(codec, a))
        else:
            r.update(zarr_write(codec, a))
            zf, err = zarrfs_write(codec, raw, a)
        if zf is None:
            res["skipped"] = "zarrfs write of %s failed: %s" % (CODEC_LABEL[codec], err)
            print("  SKIPPED: " + res["skipped"], flush=True)
            return res
        r.update(zf)
        r["zarrfs_mbps"] = mbps(r["dd_s"])
        r["zarrfs_total_mbps"] = mbps(r["total_s"])
        r["zarr_mbps"] = mbps(r["zarr_s"])
        r["zarr_sync_mbps"] = mbps(r["zarr_s"] + r["zarr_sync_s"])
        r["ratio"] = r["zarrfs_mbps"] / r["zarr_mbps"]
        r["ratio_total"] = r["zarrfs_total_mbps"] / r["zarr_mbps"]
        r["ratio_sync"] = r["zarrfs_total_mbps"] / r["zarr_sync_mbps"]
        r["daemon_cpu_pct"] = 100 * r["daemon_cpu_s"] / r["dd_s"]
        r["zarr_cpu_pct"] = 100 * r["zarr_cpu_s"] / r["zarr_s"]
        r["load1_end"] = os.getloadavg()[0]
        res["reps"].append(r)
        print("  rep %d: zarrfs dd+fsync %6.2f s (%5.0f MB/s) + unmount %.2f s | zarr-python "
              "%6.2f s (%5.0f MB/s) + sync %.2f s | ratio %.2f (vs +sync %.2f) | %d chunks "
              "encoded, %d store writes, %d reads | RSS %.0f MiB | load %.1f"
              % (rep + 1, r["dd_s"], r["zarrfs_mbps"], r["unmount_s"], r["zarr_s"],
                 r["zarr_mbps"], r["zarr_sync_s"], r["ratio"], r["ratio_sync"],
                 r["encoded_chunks"], r["store_writes"], r["store_reads"], r["hwm_mib"],
                 r["load1_end"]), flush=True)
    keys = [k for k, v in res["reps"][0].items() if isinstance(v, (int, float))
            and not isinstance(v, bool)]
    res["median"] = {k: statistics.median(r[k] for r in res["reps"]) for k in keys}
    res["min"] = {k: min(r[k] for r in res["reps"]) for k in keys}
    res["max"] = {k: max(r[k] for r in res["reps"]) for k in keys}
    return res


# ---------------------------------------------------------------------------- report

def machine():
    info = {"nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "zarr": zarr.__version__,
            "numcodecs": numcodecs.__version__, "numpy": np.__version__}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        info["mem_gib"] = round(int(f.readline().split()[1]) / MiB, 1)
    v = subprocess.run([CFG["zarrfs"], "--version"], capture_output=True, text=True, timeout=10)
    info["zarrfs"] = v.stdout.strip().replace("\n", "; ")
    return info


def markdown(results):
    med = lambda r, k: r["median"][k]
    lines = [
        "| codec | zarrfs s (dd + fsync) | unmount s | zarr-python s (`z[:] = a`) | ratio "
        "| zarrfs MB/s | zarr-python MB/s | zarr-python + sync s | ratio vs + sync "
        "| store size zarrfs / zarr-python | daemon CPU | zarr-python CPU | daemon peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    notes = []
    for r in results:
        if not r["reps"]:
            lines.append("| %s | skipped | | | | | | | | | | | |" % r["label"])
            notes.append("- %s: %s" % (r["label"], r.get("skipped", "no repetition")))
            continue
        lines.append("| %s | %.2f | %.2f | %.2f | **%.2f** | %.0f | %.0f | %.2f | **%.2f** "
                     "| %.0f / %.0f MB | %.0f%% | %.0f%% | %.0f |" % (
                         r["label"], med(r, "dd_s"), med(r, "unmount_s"), med(r, "zarr_s"),
                         med(r, "ratio"), med(r, "zarrfs_mbps"), med(r, "zarr_mbps"),
                         med(r, "zarr_s") + med(r, "zarr_sync_s"), med(r, "ratio_sync"),
                         med(r, "store_bytes") / 1e6, med(r, "zarr_store_bytes") / 1e6,
                         med(r, "daemon_cpu_pct"), med(r, "zarr_cpu_pct"), med(r, "hwm_mib")))
        if r.get("skipped"):
            notes.append("- %s: %s" % (r["label"], r["skipped"]))
    rng = lambda r, k, f="%.2f": (f + "–" + f) % (r["min"][k], r["max"][k])
    lines += ["", "| codec | spread (min–max): zarrfs s | zarr-python s | ratio | store reads "
              "during the write | chunks encoded | load average (1 min) |",
              "|---|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        if r["reps"]:
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                r["label"], rng(r, "dd_s"), rng(r, "zarr_s"), rng(r, "ratio"),
                rng(r, "store_reads", "%d"), rng(r, "encoded_chunks", "%d"),
                rng(r, "load1_end", "%.1f")))
    if notes:
        lines += [""] + notes
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["--report"]:
        with open(sys.argv[2]) as f:
            print(markdown(json.load(f)["results"]))
        return
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "stores"), exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    unknown = [c for c in CFG["codecs"] if c not in CODEC_LABEL]
    if unknown:
        sys.exit("bench: ZF_BENCH_WRITE_CODECS: unknown %r (known: %s)"
                 % (unknown, ",".join(CODEC_LABEL)))
    started = datetime.datetime.now().astimezone()
    info = machine()
    info["load_before"] = os.getloadavg()
    print("zarrfs write benchmark %s: array %s float32 = %.3f GiB, chunks %s, %d reps, "
          "cache_size=%s, dd bs=%s" % (started.strftime("%F %T %Z"), SHAPE, NBYTES / GiB, CHUNK,
                                      CFG["reps"], CFG["cache_size"], CFG["bs"]), flush=True)
    print("machine: %(nproc)d CPUs (%(cpu)s), %(mem_gib)s GiB, kernel %(kernel)s; zarr %(zarr)s, "
          "numcodecs %(numcodecs)s, numpy %(numpy)s; %(zarrfs)s" % info, flush=True)
    print("load average before: %.2f %.2f %.2f" % info["load_before"], flush=True)
    raw, a = raw_data()
    results = []
    for codec in CFG["codecs"]:
        print("%s:" % CODEC_LABEL[codec], flush=True)
        results.append(run_codec(codec, raw, a))
    info["load_after"] = os.getloadavg()
    ended = datetime.datetime.now().astimezone()
    md = markdown(results)
    print("\nload average after: %.2f %.2f %.2f; %.1f min"
          % (info["load_after"] + ((ended - started).total_seconds() / 60,)))
    print("MB = 1e6 bytes of the array; medians of %d repetitions; ratio = zarrfs MB/s / "
          "zarr-python MB/s (> 1: zarrfs faster), the median of the per-repetition ratios; "
          "'vs + sync' sets zarrfs with its unmount against zarr-python followed by sync.\n"
          % CFG["reps"])
    print(md)
    stamp = started.strftime("%Y%m%dT%H%M%S")
    out = {"started": started.isoformat(), "ended": ended.isoformat(), "config": CFG,
           "shape": SHAPE, "chunks": CHUNK, "nbytes": NBYTES, "machine": info,
           "results": results, "markdown": md}
    os.makedirs(os.path.join(CFG["dir"], "results"), exist_ok=True)
    base = os.path.join(CFG["dir"], "results", "bench-write-%s" % stamp)
    with open(base + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print("\nresults: %s.json, %s.md" % (base, base))
    if not any(r["reps"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
