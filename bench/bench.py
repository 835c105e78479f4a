#!/usr/bin/python3
"""zarrfs benchmark: zarrfs against zarr-python on the same data, in the same run.

Run it through bench/run.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy.

For each codec (none, blosc-lz4+shuffle, zstd, zlib) it writes one float32 array of about
ZF_BENCH_GIB GiB with zarr-python (chunks of 1024 x 1024 elements = 4 MiB; cached in ZF_BENCH_DIR
and reused), then, per repetition and in this order:

  1. zarr-python: fresh zarr.open, time z[:] into a NumPy array      (the peer, and the reference)
  2. zarrfs, fresh mount (empty chunk cache, no page cache for the mounted file):
       cold         read the whole mounted file into memory with ZF_BENCH_BS reads
       warm-page    the same again: served by the kernel page cache (the file uses keep_cache)
       warm-daemon  posix_fadvise(DONTNEED) on the mounted file (checked with mincore), then the
                    same again: every byte goes through the daemon, every chunk is in its cache
     every read is compared with the reference; VmHWM of the daemon is read before unmounting
  3. zarrfs, fresh mount: ZF_BENCH_RANDOM random 4 KiB-aligned os.pread(4096)s
  4. zarr-python: the same offsets as z[i, j:j+1024] (exactly the same 4096 bytes), fresh
     zarr.open, for at most ZF_BENCH_ZARR_RANDOM_S seconds (zarr-python has no chunk cache, so
     every read decodes a whole 4 MiB chunk and its rate does not depend on the count)

The store's files are read once before each repetition so that both sides read them from the page
cache: the benchmark measures decoding and delivery, not the disk.

MB = 1e6 bytes. Medians over the repetitions; a ratio is zarrfs / zarr-python computed within each
repetition (same moment, same machine load), then the median of those ratios is reported.
"""
import ctypes
import datetime
import json
import mmap
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import numcodecs
import zarr

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
COLS = 16384                   # elements per row: one row is 64 KiB
CHUNK = (1024, 1024)           # 4 MiB of float32
GEN_VERSION = 1                # bump when the data or layout changes: cached stores regenerate


def env(name, default, conv=str):
    v = os.environ.get(name, "")
    return conv(v) if v != "" else default


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": KiB, "M": MiB, "G": GiB}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


HERE = os.path.dirname(os.path.abspath(__file__))
CFG = {
    "gib": env("ZF_BENCH_GIB", 1.0, float),
    "reps": env("ZF_BENCH_REPS", 3, int),
    "dir": env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"),
    "codecs": env("ZF_BENCH_CODECS", "none,lz4,zstd,zlib").split(","),
    "cache_size": env("ZF_BENCH_CACHE", "2G"),
    "threads": env("ZF_BENCH_THREADS", ""),
    "bs": parse_size(env("ZF_BENCH_BS", "4M")),
    "random": env("ZF_BENCH_RANDOM", 20000, int),
    "zarr_random_s": env("ZF_BENCH_ZARR_RANDOM_S", 5.0, float),
    "readahead_kb": env("ZF_BENCH_READAHEAD_KB", 0, int),
    "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 600.0, float),
    "seed": env("ZF_BENCH_SEED", 12345, int),
    "zarrfs": env("ZARRFS", os.path.join(HERE, "..", "build", "src", "fuse", "zarrfs")),
}
ROWS = max(CHUNK[0], int(round(CFG["gib"] * GiB / (COLS * 4) / CHUNK[0])) * CHUNK[0])
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
MNT = os.path.join(CFG["dir"], "mnt")
LOG = os.path.join(CFG["dir"], "zarrfs.log")


def compressor(codec):
    from numcodecs import Blosc, Zlib, Zstd
    return {
        "none": None,
        "lz4": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE),
        "zstd": Zstd(level=1),
        "zlib": Zlib(level=1),
    }[codec]


CODEC_LABEL = {"none": "none", "lz4": "blosc lz4 5 +shuffle", "zstd": "zstd 1", "zlib": "zlib 1"}


# ---------------------------------------------------------------------------- data generation

def band(r0, r1, rng):
    """Rows [r0, r1): smooth fields (separable sines, a slow diagonal wave) plus small noise, so
    that compressors see what they see in measured data: low bits noisy, high bits regular."""
    y = np.arange(r0, r1, dtype=np.float64)[:, None]
    x = np.arange(COLS, dtype=np.float64)[None, :]
    f = (np.sin(2 * np.pi * y / 2111.0) * np.cos(2 * np.pi * x / 1709.0) * 20.0
         + np.sin(2 * np.pi * (x + 0.7 * y) / 5003.0) * 5.0
         + 280.0)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32) * np.float32(0.01)
    return f


def store_path(codec):
    return os.path.join(CFG["dir"], "data", "%s-%d.zarr" % (codec, ROWS))


def generate(codec):
    path = store_path(codec)
    stamp = path + ".done"
    want = {"version": GEN_VERSION, "shape": SHAPE, "chunks": CHUNK, "seed": CFG["seed"],
            "compressor": repr(compressor(codec))}
    try:
        with open(stamp) as f:
            if json.load(f) == json.loads(json.dumps(want)):
                return path
    except (OSError, ValueError):
        pass
    t0 = time.perf_counter()
    print("  generating %s (%s, %s %s) ..." % (path, CODEC_LABEL[codec], SHAPE, "float32"),
          flush=True)
    if os.path.exists(stamp):
        os.unlink(stamp)
    z = zarr.open(path, mode="w", shape=SHAPE, chunks=CHUNK, dtype="<f4",
                  compressor=compressor(codec), fill_value=0.0, order="C")
    rng = np.random.default_rng(CFG["seed"])     # same data for every codec
    for r0 in range(0, ROWS, CHUNK[0]):
        z[r0:r0 + CHUNK[0], :] = band(r0, min(ROWS, r0 + CHUNK[0]), rng)
    with open(stamp, "w") as f:
        json.dump(want, f)
    print("  ... %.1f s" % (time.perf_counter() - t0), flush=True)
    return path


def store_bytes(path):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns)


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
    for d, _, names in os.walk(path):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb", buffering=0) as f:
                while f.readinto(buf):
                    pass
            sz = os.path.getsize(p)
            total += sz
            resident += sz * resident_fraction(p)
    return resident / total if total else 1.0


def drop_file_cache(path):
    """Evict the mounted file's pages (not the store's); 'fadvise' or 'drop_caches' if needed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    if resident_fraction(path) < 0.001:
        return "fadvise"
    with open("/proc/sys/vm/drop_caches", "w") as f:   # fallback: everything, then re-read store
        f.write("1\n")
    return "drop_caches"


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
        names = os.listdir(MNT)
        if len(names) != 1:
            raise RuntimeError("expected one file in the mount, got %r" % names)
        self.file = os.path.join(MNT, names[0])
        if os.path.getsize(self.file) != NBYTES:
            raise RuntimeError("%s: size %d, expected %d"
                               % (self.file, os.path.getsize(self.file), NBYTES))

    def cpu_s(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status(self, key):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split()[1:]
        return None

    def hwm_mib(self):
        return int(self.status("VmHWM")[0]) / 1024.0

    def readahead_kb(self, set_kb=0):
        """The mount's readahead window, which caps the size of READ requests for buffered
        reads (the kernel's default is 128 KiB whatever the daemon asks for); set it if set_kb."""
        dev = subprocess.run(["mountpoint", "-d", MNT], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        path = "/sys/class/bdi/%s/read_ahead_kb" % dev
        try:
            if set_kb:
                with open(path, "w") as f:
                    f.write("%d\n" % set_kb)
            with open(path) as f:
                return int(f.read())
        except OSError:
            return None

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

def read_whole(path):
    """Read the file sequentially into a new buffer (like z[:] produces a new array)."""
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
    if not np.array_equal(buf, ref.view(np.uint8).reshape(-1)):
        bad = np.flatnonzero(buf != ref.view(np.uint8).reshape(-1))
        raise RuntimeError("%s: WRONG DATA: %d bytes differ, first at byte offset %d"
                           % (what, bad.size, bad[0]))


def zarr_whole(store):
    z = zarr.open(store, mode="r")
    c0, t0 = time.process_time(), time.perf_counter()
    a = z[:]
    t = time.perf_counter() - t0
    return t, time.process_time() - c0, a


def random_offsets(rep):
    rng = np.random.default_rng(1000 + rep)
    return rng.integers(0, NBYTES // 4096, CFG["random"]) * 4096


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
    flat = ref.view(np.uint8).reshape(-1)
    for off, b in zip(offsets.tolist(), out):
        if b != flat[off:off + 4096].tobytes():
            raise RuntimeError("random pread at offset %d: WRONG DATA" % off)
    return ends - t0


def zarr_random(store, offsets, ref):
    z = zarr.open(store, mode="r")
    flat = ref.reshape(-1)
    n = 0
    t0 = time.perf_counter()
    t = 0.0
    for off in offsets.tolist():
        e = off // 4
        i, j = divmod(e, COLS)
        v = z[i, j:j + 1024]
        n += 1
        t = time.perf_counter() - t0
        if not np.array_equal(v, flat[e:e + 1024]):
            raise RuntimeError("zarr-python z[%d, %d:%d]: unexpected data" % (i, j, j + 1024))
        if t >= CFG["zarr_random_s"]:
            break
    return n, t


def mbps(t):
    return NBYTES / t / 1e6


def run_codec(codec):
    store = generate(codec)
    res = {"codec": codec, "label": CODEC_LABEL[codec], "store": store,
           "store_bytes": store_bytes(store), "reps": []}
    res["compression_ratio"] = NBYTES / res["store_bytes"]
    for rep in range(CFG["reps"]):
        r = {"load1_start": os.getloadavg()[0]}
        r["store_resident"] = prewarm(store)

        # 1. zarr-python z[:]
        t, cpu, ref = zarr_whole(store)
        r["zarr_whole_s"], r["zarr_whole_cpu_s"] = t, cpu

        # 2. zarrfs whole reads
        with Daemon(store) as d:
            r["readahead_kb"] = d.readahead_kb(CFG["readahead_kb"])
            r["mounted_resident_before"] = resident_fraction(d.file)
            for phase in ("cold", "warm_page", "warm_daemon"):
                if phase == "warm_daemon":
                    r["evict_method"] = drop_file_cache(d.file)
                    if r["evict_method"] == "drop_caches":
                        prewarm(store)
                    r["mounted_resident_before_warm_daemon"] = resident_fraction(d.file)
                c0 = d.cpu_s()
                with Watchdog(d, "%s %s read" % (codec, phase)):
                    t, buf = read_whole(d.file)
                r[phase + "_s"], r[phase + "_daemon_cpu_s"] = t, d.cpu_s() - c0
                check_equal("%s: zarrfs %s read" % (codec, phase), buf, ref)
                del buf
            r["hwm_whole_mib"] = d.hwm_mib()
            r["daemon_threads"] = int(d.status("Threads")[0])

        # 3. zarrfs random 4 KiB preads, cold mount
        offsets = random_offsets(rep)
        with Daemon(store) as d:
            d.readahead_kb(CFG["readahead_kb"])
            c0 = d.cpu_s()
            with Watchdog(d, "%s random preads" % codec):
                ends = zarrfs_random(d.file, offsets, ref)
            r["random_daemon_cpu_s"] = d.cpu_s() - c0
            r["hwm_random_mib"] = d.hwm_mib()
        r["random_n"], r["random_s"] = len(offsets), float(ends[-1])

        # 4. zarr-python random slices, same offsets, time-boxed
        n, t = zarr_random(store, offsets, ref)
        r["zarr_random_n"], r["zarr_random_s"] = n, t
        r["random_prefix_s"] = float(ends[n - 1])       # zarrfs over the same first n reads
        del ref

        r["zarr_mbps"] = mbps(r["zarr_whole_s"])
        for phase in ("cold", "warm_page", "warm_daemon"):
            r[phase + "_mbps"] = mbps(r[phase + "_s"])
            r[phase + "_ratio"] = r[phase + "_mbps"] / r["zarr_mbps"]
        r["random_rps"] = r["random_n"] / r["random_s"]
        r["random_prefix_rps"] = n / r["random_prefix_s"]
        r["zarr_random_rps"] = n / t
        r["random_ratio"] = r["random_rps"] / r["zarr_random_rps"]
        r["random_prefix_ratio"] = r["random_prefix_rps"] / r["zarr_random_rps"]
        r["hwm_mib"] = max(r["hwm_whole_mib"], r["hwm_random_mib"])
        r["load1_end"] = os.getloadavg()[0]
        r["cold_daemon_cpu_pct"] = 100 * r["cold_daemon_cpu_s"] / r["cold_s"]
        r["warm_daemon_daemon_cpu_pct"] = 100 * r["warm_daemon_daemon_cpu_s"] / r["warm_daemon_s"]
        r["zarr_cpu_pct"] = 100 * r["zarr_whole_cpu_s"] / r["zarr_whole_s"]
        res["reps"].append(r)
        print("  rep %d: zarr %7.0f MB/s | zarrfs cold %7.0f (x%.2f) warm-page %7.0f "
              "warm-daemon %7.0f (x%.2f) MB/s | random %7.0f vs zarr %5.0f reads/s (n=%d) | "
              "RSS %5.0f MiB | load %.1f" % (rep + 1, r["zarr_mbps"], r["cold_mbps"], r["cold_ratio"],
                                 r["warm_page_mbps"], r["warm_daemon_mbps"],
                                 r["warm_daemon_ratio"], r["random_rps"], r["zarr_random_rps"],
                                 n, r["hwm_mib"], r["load1_end"]), flush=True)
    keys = [k for k, v in res["reps"][0].items() if isinstance(v, (int, float))]
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
        "| codec | size on disk | zarr-python `z[:]` MB/s | zarrfs cold MB/s | cold ratio "
        "| zarrfs warm, page cache MB/s | zarrfs warm, daemon cache MB/s | warm (daemon) ratio "
        "| random 4 KiB zarrfs reads/s | zarr-python reads/s | random ratio | daemon peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f | %.0f | **%.2f** | %.0f | %.0f | **%.2f** | %.0f | %.1f "
                     "| **%.0f** | %.0f |" % (
                         r["label"], 100.0 / r["compression_ratio"], med(r, "zarr_mbps"),
                         med(r, "cold_mbps"), med(r, "cold_ratio"), med(r, "warm_page_mbps"),
                         med(r, "warm_daemon_mbps"), med(r, "warm_daemon_ratio"),
                         med(r, "random_rps"), med(r, "zarr_random_rps"),
                         med(r, "random_ratio"), med(r, "hwm_mib")))
    lines += [
        "",
        "| codec | CPU: zarr-python `z[:]` | CPU: daemon, cold read | CPU: daemon, warm (daemon) "
        "| zarrfs reads/s over zarr-python's first n reads (n) | same-prefix random ratio |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f%% | %.0f%% | %.0f (%d) | %.1f |" % (
            r["label"], med(r, "zarr_cpu_pct"), med(r, "cold_daemon_cpu_pct"),
            med(r, "warm_daemon_daemon_cpu_pct"), med(r, "random_prefix_rps"),
            int(med(r, "zarr_random_n")), med(r, "random_prefix_ratio")))
    rng = lambda r, k, f="%.0f": (f + "–" + f) % (r["min"][k], r["max"][k])
    lines += [
        "",
        "| codec | spread (min–max): zarr-python MB/s | zarrfs cold MB/s | cold ratio "
        "| zarrfs warm, daemon cache MB/s | zarrfs random reads/s | load average (1 min) |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], rng(r, "zarr_mbps"), rng(r, "cold_mbps"), rng(r, "cold_ratio", "%.2f"),
            rng(r, "warm_daemon_mbps"), rng(r, "random_rps"), rng(r, "load1_end", "%.1f")))
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["--report"]:                 # re-render a recorded run's tables
        with open(sys.argv[2]) as f:
            print(markdown(json.load(f)["results"]))
        return
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "data"), exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    started = datetime.datetime.now().astimezone()
    info = machine()
    info["load_before"] = os.getloadavg()
    print("zarrfs benchmark %s: array %s float32 = %.3f GiB, chunks %s, %d reps, cache_size=%s%s"
          % (started.strftime("%F %T %Z"), SHAPE, NBYTES / GiB, CHUNK, CFG["reps"],
             CFG["cache_size"], ", read_ahead_kb=%d" % CFG["readahead_kb"]
             if CFG["readahead_kb"] else ""), flush=True)
    print("machine: %(nproc)d CPUs (%(cpu)s), %(mem_gib)s GiB, kernel %(kernel)s; zarr %(zarr)s, "
          "numcodecs %(numcodecs)s, numpy %(numpy)s; %(zarrfs)s" % info, flush=True)
    print("load average before: %.2f %.2f %.2f" % info["load_before"], flush=True)
    for codec in CFG["codecs"]:                     # generate everything first
        generate(codec)
    results = []
    for codec in CFG["codecs"]:
        print("%s:" % CODEC_LABEL[codec], flush=True)
        results.append(run_codec(codec))
    info["load_after"] = os.getloadavg()
    ended = datetime.datetime.now().astimezone()
    md = markdown(results)
    print("\nload average after: %.2f %.2f %.2f; %.1f min"
          % (info["load_after"] + ((ended - started).total_seconds() / 60,)))
    print("MB = 1e6 bytes; medians of %d repetitions; ratios = zarrfs / zarr-python, the median "
          "of the per-repetition ratios.\n" % CFG["reps"])
    print(md)
    stamp = started.strftime("%Y%m%dT%H%M%S")
    out = {"started": started.isoformat(), "ended": ended.isoformat(), "config": CFG,
           "shape": SHAPE, "chunks": CHUNK, "nbytes": NBYTES, "machine": info,
           "results": results, "markdown": md}
    os.makedirs(os.path.join(CFG["dir"], "results"), exist_ok=True)
    base = os.path.join(CFG["dir"], "results", "bench-%s" % stamp)
    with open(base + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print("\nresults: %s.json, %s.md" % (base, base))


if __name__ == "__main__":
    main()
