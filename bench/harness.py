#!/usr/bin/python3
"""The shared harness of the zarrfs benchmarks (bench.py, bench_v3.py, bench_remote.py,
bench_write.py, bench_cold.py): each driver says what it measures, this module does the rest.

  knobs        env(), parse_size()
  data         band() (the one generator: smooth fields plus noise), make_array(), the codecs
               (compressor(), CODEC_LABEL), write_zarr(), v2_store() and write_raw() (written
               once, reused while their stamp matches), store_files(), store_bytes()
  page cache   resident_fraction() (mincore), prewarm() (read once, return the resident fraction),
               drop_file_cache(), pretouch() (touch and free memory before a timed read)
  processes    Daemon (a foreground FUSE daemon: zarrfs or the passthrough; mount, wait, CPU,
               VmHWM, /proc/PID/io, .zarrfs-stats, read_ahead_kb, unmount), Watchdog (kills a
               daemon whose phase hangs), cpu_seconds(), cpu_snapshot()
  reading      read_whole() (a new buffer), read_reused() (one reused buffer), check_equal(),
               check_blocks(), random_offsets(), timed_preads(), check_preads(), zarr_random(),
               zarr_read()
  numbers      mbps(), summarize() (median, min, max per key), rng()
  report       machine(), Session (header, the machine line, results JSON + markdown, --report)
  network      Net (a network namespace behind a veth pair, nginx inside, 20 ms of round trip by
               netem or by a delaying relay, and with the relay the same nginx answering at
               once), relay_main(), measure_rtt()

`python3 harness.py relay LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS` runs the relay.
MB = 1e6 bytes everywhere; ratios are taken per repetition, then their median.
"""
import asyncio
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

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
COLS = 16384                   # elements per row: one row is 64 KiB
CHUNK = (1024, 1024)           # 4 MiB of float32
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ZARRFS = os.path.join(HERE, "..", "build", "src", "fuse", "zarrfs")
DEFAULT_PASSTHROUGH = os.path.join(HERE, "..", "build", "bench", "zf_passthrough")


def env(name, default, conv=str):
    v = os.environ.get(name, "")
    return conv(v) if v != "" else default


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": KiB, "M": MiB, "G": GiB}.get(s[-1:], 1)
    return int(float(s[:-1] if s[-1:] in "KMG" else s) * mult)


def knobs(reps, **own):
    """A driver's CFG: its own knobs, then those every driver shares: ZF_BENCH_REPS (default
    `reps`), ZF_BENCH_DIR, ZF_BENCH_CACHE, ZF_BENCH_THREADS, ZF_BENCH_BS (parsed), ZF_BENCH_PHASE_
    TIMEOUT, ZF_BENCH_SEED, ZARRFS."""
    cfg = dict(own)
    cfg.update({
        "reps": env("ZF_BENCH_REPS", reps, int),
        "dir": env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"),
        "cache_size": env("ZF_BENCH_CACHE", "2G"),
        "threads": env("ZF_BENCH_THREADS", ""),
        "bs": parse_size(env("ZF_BENCH_BS", "4M")),
        "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 600.0, float),
        "seed": env("ZF_BENCH_SEED", 12345, int),
        "zarrfs": env("ZARRFS", DEFAULT_ZARRFS),
    })
    return cfg


def rows_for(nbytes, multiple=CHUNK[0]):
    """Rows of a float32 (rows, COLS) array of about nbytes, a multiple of `multiple` (>= 1)."""
    return max(multiple, int(round(nbytes / (COLS * 4) / multiple)) * multiple)


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------- data

def band(r0, r1, rng, cols=COLS):
    """Rows [r0, r1): smooth fields (separable sines, a slow diagonal wave) plus noise of sigma
    0.01 at a mean of 280, so that compressors see what they see in measured data: low mantissa
    bits noisy, high bits regular. Every driver draws the rows in bands of CHUNK[0] from one
    default_rng(seed): the same seed gives the same array everywhere."""
    y = np.arange(r0, r1, dtype=np.float64)[:, None]
    x = np.arange(cols, dtype=np.float64)[None, :]
    f = (np.sin(2 * np.pi * y / 2111.0) * np.cos(2 * np.pi * x / 1709.0) * 20.0
         + np.sin(2 * np.pi * (x + 0.7 * y) / 5003.0) * 5.0
         + 280.0)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32) * np.float32(0.01)
    return f


def bands(rows, seed):
    """(r0, rows r0 .. r0 + CHUNK[0]) for the whole array, in order."""
    rng = np.random.default_rng(seed)
    for r0 in range(0, rows, CHUNK[0]):
        yield r0, band(r0, min(rows, r0 + CHUNK[0]), rng)


def make_array(rows, seed):
    a = np.empty((rows, COLS), dtype="<f4")
    for r0, b in bands(rows, seed):
        a[r0:r0 + len(b)] = b
    return a


# The codecs, by the names the knobs use. "lz4" is Blosc lz4 for the read benchmarks (bench.py,
# bench_remote.py, bench_cold.py) and plain LZ4 for bench_write.py, which calls Blosc "blosc".
CODEC_LABEL = {"none": "none", "lz4": "blosc lz4 5 +shuffle", "zstd": "zstd 1",
               "zlib": "zlib 1"}
WRITE_CODEC_LABEL = {"none": "none", "zlib": "zlib 1", "blosc": "blosc lz4 5 +shuffle",
                     "zstd": "zstd 1", "lz4": "lz4"}


def compressor(codec, write_names=False):
    from numcodecs import LZ4, Blosc, Zlib, Zstd
    table = {"none": None, "zstd": Zstd(level=1), "zlib": Zlib(level=1),
             "blosc": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)}
    table["lz4"] = LZ4(acceleration=1) if write_names else table["blosc"]
    return table[codec]


def _stamp_ok(stamp, want):
    try:
        with open(stamp) as f:
            return json.load(f) == json.loads(json.dumps(want))
    except (OSError, ValueError):
        return False


def write_zarr(path, rows, codec, seed, want):
    """A zarr-python 2 array (rows, COLS) float32, chunks CHUNK, of band()'s values at `path`,
    unless `path`.done holds `want` already; returns path."""
    import zarr
    stamp = path + ".done"
    if _stamp_ok(stamp, want):
        return path
    t0 = time.perf_counter()
    log("  generating %s (%s, %s float32) ..." % (path, CODEC_LABEL[codec], (rows, COLS)))
    if os.path.exists(stamp):
        os.unlink(stamp)
    z = zarr.open(path, mode="w", shape=(rows, COLS), chunks=CHUNK, dtype="<f4",
                  compressor=compressor(codec), fill_value=0.0, order="C")
    for r0, b in bands(rows, seed):
        z[r0:r0 + CHUNK[0], :] = b
    with open(stamp, "w") as f:
        json.dump(want, f)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return path


V2_GEN_VERSION = 1             # bump when the data or layout changes: cached stores regenerate


def v2_store(root, codec, rows, seed):
    """bench.py's store of `rows` rows with `codec`: ROOT/data/CODEC-ROWS.zarr, written once
    (bench_cold.py reads the same stores: same path, same stamp)."""
    want = {"version": V2_GEN_VERSION, "shape": (rows, COLS), "chunks": CHUNK, "seed": seed,
            "compressor": repr(compressor(codec))}
    return write_zarr(os.path.join(root, "data", "%s-%d.zarr" % (codec, rows)), rows, codec,
                      seed, want)


def write_raw(path, rows, seed):
    """The same values as one raw C-order little-endian float32 file; returns path."""
    if os.path.exists(path) and os.path.getsize(path) == rows * COLS * 4:
        return path
    t0 = time.perf_counter()
    log("  generating %s (%s float32) ..." % (path, (rows, COLS)))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for _r0, b in bands(rows, seed):
            f.write(memoryview(np.ascontiguousarray(b, dtype="<f4")).cast("B"))
    os.rename(tmp, path)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return path


def store_files(path, hidden=True):
    if os.path.isfile(path):
        return [path]
    return [os.path.join(d, n) for d, _, ns in os.walk(path) for n in ns
            if hidden or not n.startswith(".")]


def store_bytes(path, hidden=True):
    return sum(os.path.getsize(p) for p in store_files(path, hidden))


# ---------------------------------------------------------------------------- page cache, memory

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


def prewarm(path, resident=True):
    """Read every file of a store (or one file) once, into the page cache; return the resident
    fraction afterwards (mincore), or None when not asked for."""
    buf = bytearray(4 * MiB)
    total = res = 0
    for p in store_files(path):
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
        if resident:
            sz = os.path.getsize(p)
            total += sz
            res += sz * resident_fraction(p)
    if not resident:
        return None
    return res / total if total else 1.0


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


def pretouch(nbytes):
    """Touch nbytes of fresh anonymous memory (one write per page) and free it; the seconds it
    took. On these VMs first touch of memory the host has reclaimed is slow and erratic; doing it
    just before a timed read leaves the guest's free pages backed by the host."""
    if nbytes <= 0:
        return 0.0
    t0 = time.perf_counter()
    b = np.empty(nbytes, dtype=np.uint8)         # mmap'ed by malloc, munmap'ed by del
    b[::PAGE] = 1
    del b
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------- processes

def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot():
    """(CPU seconds used on the whole machine, by this process and its waited-for children: the
    daemons, Node): the difference over a repetition is what other processes used meanwhile."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]        # user nice system irq softirq steal
    t = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), t.user + t.system + t.children_user + t.children_system


def is_mounted(mnt):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


class Daemon:
    """A foreground FUSE daemon (`cmd` ends with the mount point `mnt`), its log appended to
    `logfile`. Mounted when the constructor returns, with .file the one visible file of the mount
    (hidden names such as .zarrfs-stats aside), checked to be `nbytes` long if given; with
    one_file=False the mount is not looked at (a hierarchy; the mount is polled every 2 ms). Unmounted by
    close() or the with statement, which raise if the daemon exits with a non-zero status.
    new_session: the daemon gets its own process group (killed as a group)."""

    def __init__(self, cmd, mnt, logfile, nbytes=None, mount_timeout=30.0, close_timeout=30.0,
                 new_session=False, one_file=True):
        if is_mounted(mnt):
            raise RuntimeError("%s is already mounted" % mnt)
        self.mnt, self.logfile, self.close_timeout = mnt, logfile, close_timeout
        self.new_session, self.closed, self.one_file = new_session, False, one_file
        self.log = open(logfile, "ab")
        self.log.write(("\n=== %s %s\n" % (time.strftime("%T"), " ".join(cmd))).encode())
        self.log.flush()
        self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                  stderr=self.log, start_new_session=new_session)
        try:
            self._wait_mounted(mount_timeout, nbytes)
        except BaseException:
            self.close(check=False)
            raise

    def _wait_mounted(self, timeout, nbytes):
        deadline = time.monotonic() + timeout
        while not is_mounted(self.mnt):
            if self.p.poll() is not None:
                raise RuntimeError("%s exited with status %s before mounting (see %s)"
                                   % (os.path.basename(self.p.args[0]), self.p.returncode,
                                      self.logfile))
            if time.monotonic() > deadline:
                raise RuntimeError("%s did not mount within %.0f s"
                                   % (os.path.basename(self.p.args[0]), timeout))
            time.sleep(0.02 if self.one_file else 0.002)
        self.stats_file = os.path.join(self.mnt, ".zarrfs-stats")   # found by name, maybe unlisted
        if not self.one_file:
            return
        all_names = os.listdir(self.mnt)
        names = [n for n in all_names if not n.startswith(".")]
        if len(names) != 1:
            raise RuntimeError("expected one file in the mount, got %r" % all_names)
        self.file = os.path.join(self.mnt, names[0])
        if not os.path.exists(self.stats_file):
            self.stats_file = None
        if nbytes is not None and os.path.getsize(self.file) != nbytes:
            raise RuntimeError("%s: size %d, expected %d"
                               % (self.file, os.path.getsize(self.file), nbytes))

    @property
    def pid(self):
        return self.p.pid

    def cpu_s(self):
        return cpu_seconds(self.p.pid)

    def status(self, key):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split()[1:]
        return None

    def hwm_mib(self):
        return int(self.status("VmHWM")[0]) / 1024.0

    def threads(self):
        return int(self.status("Threads")[0])

    def io(self):
        """/proc/PID/io of the daemon (all its threads): rchar, read_bytes, syscr, ..."""
        with open("/proc/%d/io" % self.p.pid) as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}

    def stats(self):
        """The mount's .zarrfs-stats (zarrfs only)."""
        with open(os.path.join(self.mnt, ".zarrfs-stats")) as f:
            return json.load(f)

    def store_fetched(self):
        """store.bytes_fetched of .zarrfs-stats, or None if this zarrfs has no statistics file."""
        if self.stats_file is None:
            return None
        with open(self.stats_file) as f:
            return json.load(f)["store"]["bytes_fetched"]

    def readahead_kb(self, set_kb=0):
        """The mount's readahead window, which caps the size of READ requests for buffered
        reads (the kernel's default is 128 KiB whatever the daemon asks for); set it if set_kb
        (root). None if it cannot be read."""
        dev = subprocess.run(["mountpoint", "-d", self.mnt], capture_output=True, text=True,
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

    def kill(self):
        try:
            if self.new_session:
                os.killpg(self.p.pid, signal.SIGKILL)
            else:
                self.p.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self, check=True):
        """Unmount and wait for the daemon; the seconds that took (0 when closed already)."""
        if self.closed:
            return 0.0
        self.closed = True
        t0 = time.perf_counter()
        if self.p.poll() is None:
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, timeout=60)
            try:
                self.p.wait(timeout=self.close_timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                self.p.wait(timeout=30)
        t = time.perf_counter() - t0
        if is_mounted(self.mnt):                # the daemon died or was killed: lazy unmount
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True, timeout=30)
        self.log.close()
        if check and self.p.returncode != 0:
            raise RuntimeError("%s exited with status %d (see %s)"
                               % (os.path.basename(self.p.args[0]), self.p.returncode,
                                  self.logfile))
        return t

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close(check=exc[0] is None)
        except Exception:
            if exc[0] is None:
                raise


def zarrfs_cmd(binary, store, mnt, opts=()):
    """zarrfs in the foreground with -o OPT for each non-empty OPT."""
    cmd = [binary, "-f"]
    for o in opts:
        if o:
            cmd += ["-o", o]
    return cmd + [store, mnt]


def zarrfs_daemon(cfg, store, mnt, logfile, opts=(), **kw):
    """A Daemon of cfg's zarrfs on store with -o cache_size= and threads= from cfg (ZF_BENCH_CACHE,
    ZF_BENCH_THREADS) and -o OPT for each of opts."""
    cmd = zarrfs_cmd(cfg["zarrfs"], store, mnt,
                     ["cache_size=" + cfg["cache_size"],
                      cfg["threads"] and "threads=" + cfg["threads"]] + list(opts))
    return Daemon(cmd, mnt, logfile, **kw)


class Watchdog:
    """Kill the daemon if a phase takes longer than `seconds`: blocked reads on the mount then
    fail (ENOTCONN) instead of hanging the benchmark; the with statement then raises."""

    def __init__(self, daemon, what, seconds):
        self.daemon, self.what, self.seconds, self.fired = daemon, what, seconds, False

    def _fire(self):
        self.fired = True
        log("!! %s: no result after %.0f s: killing %s (pid %d)"
            % (self.what, self.seconds, os.path.basename(self.daemon.p.args[0]),
               self.daemon.p.pid))
        self.daemon.kill()

    def __enter__(self):
        self.t = threading.Timer(self.seconds, self._fire)
        self.t.daemon = True
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.t.cancel()
        if self.fired and exc[0] is None:
            raise RuntimeError("%s: timed out" % self.what)


# ---------------------------------------------------------------------------- reading

def read_whole(path, nbytes, bs):
    """Read the file sequentially with bs-byte readv()s into a new buffer (as z[:] produces a
    new array); (seconds, the buffer as uint8), the allocation included."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        buf = np.empty(nbytes, dtype=np.uint8)
        mv = memoryview(buf)
        off = 0
        while off < nbytes:
            n = os.readv(fd, [mv[off:off + bs]])
            if n <= 0:
                raise RuntimeError("%s: short read at %d" % (path, off))
            off += n
        return time.perf_counter() - t0, buf
    finally:
        os.close(fd)


def read_reused(path, nbytes, bs, buf=None):
    """Read the file sequentially with bs-byte readv()s into one reused bs-byte buffer (touched
    before the clock starts); the seconds."""
    if buf is None:
        buf = bytearray(bs)
    mv = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        off = 0
        while off < nbytes:
            n = os.readv(fd, [mv[:min(bs, nbytes - off)]])
            if n <= 0:
                raise RuntimeError("%s: short read at %d" % (path, off))
            off += n
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def _first_difference(what, a, b, base=0):
    bad = np.flatnonzero(a != b)
    raise RuntimeError("%s: WRONG DATA: %d bytes differ, first at byte offset %d"
                       % (what, bad.size, base + bad[0]))


def check_equal(what, buf, ref):
    """buf (uint8) equal to ref (any dtype, its bytes in C order); raises on a difference."""
    ref = ref.view(np.uint8).reshape(-1)
    if not np.array_equal(buf, ref):
        _first_difference(what, buf, ref)


def check_blocks(what, data, ref, block=4 * MiB):
    """check_equal in blocks (no temporary the size of the array): data is an array or, for a
    file, its path (read again, with one reused buffer)."""
    ref = ref.view(np.uint8).reshape(-1)
    if isinstance(data, str):
        if os.path.getsize(data) != ref.size:
            raise RuntimeError("%s: size %d, expected %d" % (what, os.path.getsize(data),
                                                             ref.size))
        buf = np.empty(block, dtype=np.uint8)
        with open(data, "rb", buffering=0) as f:
            off = 0
            while off < ref.size:
                n = f.readinto(memoryview(buf)[:min(block, ref.size - off)])
                if not n:
                    raise RuntimeError("%s: short read at %d" % (what, off))
                if not np.array_equal(buf[:n], ref[off:off + n]):
                    _first_difference(what, buf[:n], ref[off:off + n], off)
                off += n
        return
    data = data.view(np.uint8).reshape(-1)
    if data.size != ref.size:
        raise RuntimeError("%s: %d bytes, expected %d" % (what, data.size, ref.size))
    for off in range(0, ref.size, block):
        if not np.array_equal(data[off:off + block], ref[off:off + block]):
            _first_difference(what, data[off:off + block], ref[off:off + block], off)


def random_offsets(seed, n, nbytes):
    rng = np.random.default_rng(seed)
    return rng.integers(0, nbytes // 4096, n).astype(np.int64) * 4096


def timed_preads(path, offsets, size=4096):
    """os.pread(size) at each offset, in order; (seconds elapsed after each read, the data)."""
    fd = os.open(path, os.O_RDONLY)
    ends = np.empty(len(offsets))
    out = []
    try:
        t0 = time.perf_counter()
        for k, off in enumerate(offsets.tolist()):
            out.append(os.pread(fd, size, off))
            ends[k] = time.perf_counter()
    finally:
        os.close(fd)
    return ends - t0, out


def check_preads(what, offsets, blobs, ref):
    flat = ref.view(np.uint8).reshape(-1)
    for off, b in zip(offsets.tolist(), blobs):
        if b != flat[off:off + len(b)].tobytes() or not b:
            raise RuntimeError("%s at offset %d: WRONG DATA" % (what, off))


def zarr_random(store, offsets, ref, limit_s):
    """zarr-python 2 reading the bytes of random 4 KiB preads: z[i, j:j+1024] for each offset (the
    same 4096 bytes), fresh zarr.open, each result compared with ref, for at most limit_s seconds
    (zarr-python has no chunk cache: every read decodes a whole chunk, so its rate does not depend
    on the count); (reads done, seconds)."""
    import zarr
    z = zarr.open(store, mode="r")
    flat = ref.reshape(-1) if ref.dtype == np.float32 else ref.view("<f4").reshape(-1)
    cols = z.shape[1]
    n, t, t0 = 0, 0.0, time.perf_counter()
    for off in offsets.tolist():
        e = off // 4
        i, j = divmod(e, cols)
        v = z[i, j:j + 1024]
        n += 1
        t = time.perf_counter() - t0
        if not np.array_equal(v, flat[e:e + 1024]):
            raise RuntimeError("zarr-python z[%d, %d:%d]: unexpected data" % (i, j, j + 1024))
        if t >= limit_s:
            break
    return n, t


def zarr_read(store, include_open=False):
    """zarr-python 2: open the array (a directory, or an http:// URL through FSStore) and time
    z[:]; (seconds, CPU seconds of this process, the array). include_open: time the open too."""
    import zarr
    c0, t0 = time.process_time(), time.perf_counter()
    if "://" in store:
        store = zarr.storage.FSStore(store, mode="r")
    z = zarr.open(store, mode="r")
    if not include_open:
        c0, t0 = time.process_time(), time.perf_counter()
    a = z[:]
    return time.perf_counter() - t0, time.process_time() - c0, a


# ---------------------------------------------------------------------------- numbers

RSS_SLACK_MIB = 64  # a daemon's VmHWM goal: <= cache_size + this


def goal_cell(v, want):
    """A ratio in bold, with its goal (>= want) marked met or not when there is one."""
    if want is None:
        return "**%.2f**" % v
    return "**%.2f** (≥ %.1f %s)" % (v, want, "✓" if v >= want else "✗")


def limit_cell(v, limit):
    """A figure with its upper bound, marked met or not."""
    return "%.0f (≤ %.0f %s)" % (v, limit, "✓" if v <= limit else "✗")


def mbps(nbytes, t):
    return nbytes / t / 1e6


def summarize(reps):
    """{"median", "min", "max"}: per numeric key of the first repetition (bools aside)."""
    keys = [k for k, v in reps[0].items() if isinstance(v, (int, float))
            and not isinstance(v, bool)]
    return {"median": {k: statistics.median(r[k] for r in reps) for k in keys},
            "min": {k: min(r[k] for r in reps) for k in keys},
            "max": {k: max(r[k] for r in reps) for k in keys}}


def rng(res, key, fmt="%.0f"):
    """"min–max" of a summarized key."""
    return (fmt + "–" + fmt) % (res["min"][key], res["max"][key])


# ---------------------------------------------------------------------------- report

def machine(zarrfs=None, modules=("zarr", "numcodecs", "numpy")):
    """CPUs, memory, kernel, Python, the versions of `modules` and of zarrfs."""
    info = {"nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "modules": list(modules)}
    for m in modules:
        info[m] = __import__(m).__version__
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        info["mem_gib"] = round(int(f.readline().split()[1]) / MiB, 1)
    if zarrfs:
        v = subprocess.run([zarrfs, "--version"], capture_output=True, text=True, timeout=10)
        info["zarrfs"] = v.stdout.strip().replace("\n", "; ")
    return info


class Session:
    """One run of a driver: the header (title, what, machine, load), then finish() prints the
    tables and writes DIR/results/PREFIX-TIME.json (config, machine, results, markdown, and the
    driver's extra keys) and .md."""

    def __init__(self, title, cfg, modules=("zarr", "numcodecs", "numpy"), extra=None):
        self.title, self.cfg = title, cfg
        self.started = datetime.datetime.now().astimezone()
        self.info = machine(cfg.get("zarrfs"), modules)
        self.info.update(extra or {})
        self.info["load_before"] = os.getloadavg()

    def intro(self, what, versions=""):
        i = self.info
        log("%s %s: %s" % (self.title, self.started.strftime("%F %T %Z"), what))
        mods = ", ".join("%s %s" % (m, i[m]) for m in i["modules"])
        log("machine: %d CPUs (%s), %s GiB, kernel %s; %s%s; %s"
            % (i["nproc"], i.get("cpu", "?"), i["mem_gib"], i["kernel"], mods,
               "; " + versions if versions else "", i.get("zarrfs", "")))
        log("load average before: %.2f %.2f %.2f" % i["load_before"])

    def finish(self, results_dir, prefix, results, md, conventions, **extra):
        self.info["load_after"] = os.getloadavg()
        ended = datetime.datetime.now().astimezone()
        log("\nload average after: %.2f %.2f %.2f; %.1f min"
            % (self.info["load_after"] + ((ended - self.started).total_seconds() / 60,)))
        log(conventions + "\n")
        log(md)
        out = {"started": self.started.isoformat(), "ended": ended.isoformat(),
               "config": self.cfg}
        out.update(extra)
        out.update({"machine": self.info, "results": results, "markdown": md})
        os.makedirs(results_dir, exist_ok=True)
        base = os.path.join(results_dir, "%s-%s" % (prefix, self.started.strftime("%Y%m%dT%H%M%S")))
        with open(base + ".json", "w") as f:
            json.dump(out, f, indent=1)
        with open(base + ".md", "w") as f:
            f.write(md + "\n")
        log("\nresults: %s.json, %s.md" % (base, base))
        return base


def report_cli(render):
    """`DRIVER --report FILE.json` re-renders a recorded run's tables: render(the JSON) -> text.
    True if it did."""
    if sys.argv[1:2] != ["--report"]:
        return False
    with open(sys.argv[2]) as f:
        print(render(json.load(f)))
    return True


# ---------------------------------------------------------------------------- network (HTTP)

def relay_main(listen_host, listen_port, target_host, target_port, delay_ms):
    """A TCP relay holding every piece of data delay_ms in each direction (up to 16 MiB in flight
    per direction and connection) and a new connection's first bytes one more round trip, as a
    TCP handshake over the delayed link would."""
    delay = float(delay_ms) / 1000.0
    window = 16 * MiB
    piece = 256 * KiB

    async def pipe(reader, writer, first_delay):
        loop = asyncio.get_running_loop()
        q = asyncio.Queue(maxsize=max(1, window // piece))

        async def rd():
            try:
                while True:
                    data = await reader.read(piece)
                    await q.put((loop.time() + delay, data))
                    if not data:
                        return
            except (ConnectionError, OSError):
                await q.put((loop.time(), b""))

        async def wr():
            if first_delay:
                await asyncio.sleep(first_delay)
            try:
                while True:
                    t, data = await q.get()
                    dt = t - loop.time()
                    if dt > 0:
                        await asyncio.sleep(dt)
                    if not data:
                        if writer.can_write_eof():
                            writer.write_eof()
                        return
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                return

        await asyncio.gather(rd(), wr())

    async def handle(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(target_host, int(target_port))
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pipe(creader, uwriter, 2 * delay), pipe(ureader, cwriter, 0))
        for w in (uwriter, cwriter):
            try:
                w.close()
            except OSError:
                pass

    async def main():
        server = await asyncio.start_server(handle, listen_host, int(listen_port), backlog=256)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def sh(cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError("%s: status %d: %s" % (" ".join(cmd), r.returncode, r.stdout.strip()))
    return r


class Net:
    """A network namespace `ns` joined to the host by a veth pair (HOST_IP outside, NS_IP
    inside), delay_ms of one-way delay each way (netem where the kernel has sch_netem, else a
    delaying relay in the namespace: latency = auto, netem or relay), nginx inside serving a
    directory at url(). With the relay, url0() is the same nginx behind a second relay that
    delays nothing (NS_IP:PORT0): the same server answering at once (None with netem, which
    delays everything on the veth pair). up(), start_servers(root), then down() in a finally
    (always)."""
    HOST_IP, NS_IP, PORT, NS_NGINX_PORT, PORT0 = "10.213.7.1", "10.213.7.2", 8080, 8081, 8082
    VETH_HOST, VETH_NS = "zfb-h", "zfb-n"

    def __init__(self, ns, delay_ms, latency="auto"):
        self.ns, self.delay_ms, self.latency = ns, delay_ms, latency
        self.mode = None
        self.relays = []
        self.nginx = None

    def url(self, path=""):
        return "http://%s:%d/%s" % (self.NS_IP, self.PORT, path)

    def url0(self, path=""):
        if self.mode != "relay":
            return None
        return "http://%s:%d/%s" % (self.NS_IP, self.PORT0, path)
    def up(self):
        if sh(["ip", "netns", "list"]).stdout.split().count(self.ns):
            raise RuntimeError("network namespace %s exists already (a previous run? "
                               "`ip netns del %s`)" % (self.ns, self.ns))
        sh(["ip", "netns", "add", self.ns])
        sh(["ip", "link", "add", self.VETH_HOST, "type", "veth", "peer", "name", self.VETH_NS])
        sh(["ip", "link", "set", self.VETH_NS, "netns", self.ns])
        sh(["ip", "addr", "add", self.HOST_IP + "/24", "dev", self.VETH_HOST])
        sh(["ip", "link", "set", self.VETH_HOST, "up"])
        ns = ["ip", "netns", "exec", self.ns]
        sh(ns + ["ip", "addr", "add", self.NS_IP + "/24", "dev", self.VETH_NS])
        sh(ns + ["ip", "link", "set", self.VETH_NS, "up"])
        sh(ns + ["ip", "link", "set", "lo", "up"])
        d = "%gms" % self.delay_ms
        if self.latency in ("auto", "netem"):
            r1 = sh(["tc", "qdisc", "add", "dev", self.VETH_HOST, "root", "netem", "delay", d],
                    check=False)
            r2 = sh(ns + ["tc", "qdisc", "add", "dev", self.VETH_NS, "root", "netem", "delay", d],
                    check=False) if r1.returncode == 0 else r1
            if r1.returncode == 0 and r2.returncode == 0:
                self.mode = "netem"
            elif self.latency == "netem":
                raise RuntimeError("tc netem is not available: %s" % r2.stdout.strip())
            else:
                log("  tc netem is not available here (%s): using the delaying relay"
                    % r2.stdout.strip())
                sh(["tc", "qdisc", "del", "dev", self.VETH_HOST, "root"], check=False)
        if self.mode is None:
            self.mode = "relay"
        return self

    def start_servers(self, root):
        sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
        import remote_servers as rs
        if self.mode == "netem":
            self.nginx = rs.Nginx(root, listen=self.NS_IP, port=self.PORT, master_process=True,
                                  netns=self.ns).start()
            return
        self.nginx = rs.Nginx(root, listen="127.0.0.1", port=self.NS_NGINX_PORT,
                              master_process=True, netns=self.ns).start()
        for port, delay in ((self.PORT, self.delay_ms), (self.PORT0, 0)):
            self._start_relay(port, delay)

    def _start_relay(self, port, delay_ms):
        relay = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, os.path.abspath(__file__), "relay",
             self.NS_IP, str(port), "127.0.0.1", str(self.NS_NGINX_PORT), str(delay_ms)],
            stdin=subprocess.DEVNULL)
        self.relays.append(relay)
        deadline = time.monotonic() + 20
        while True:
            if relay.poll() is not None:
                raise RuntimeError("the relay exited with status %s" % relay.returncode)
            r = sh(["ip", "netns", "exec", self.ns, "ss", "-Hltn", "sport = :%d" % port],
                   check=False)
            if r.stdout.strip():
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the relay does not listen")
            time.sleep(0.1)

    def down(self):
        for relay in self.relays:
            if relay.poll() is None:
                relay.terminate()
                try:
                    relay.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    relay.kill()
                    relay.wait()
        if self.nginx is not None:
            try:
                self.nginx.stop()
            except Exception as e:  # noqa: BLE001 - go on tearing down
                log("  stopping nginx: %s" % e)
        # processes still in the namespace (none expected): killed before deleting it
        r = sh(["ip", "netns", "pids", self.ns], check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass
        sh(["ip", "netns", "del", self.ns], check=False)
        sh(["ip", "link", "del", self.VETH_HOST], check=False)


def measure_rtt(url, n=20):
    """(median request round trip over one connection, connect() time), in ms."""
    import http.client
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    t_conn = time.perf_counter()
    c.connect()
    t_conn = time.perf_counter() - t_conn
    times = []
    for _ in range(n + 1):
        t0 = time.perf_counter()
        c.request("GET", u.path)
        r = c.getresponse()
        r.read()
        times.append(time.perf_counter() - t0)
    c.close()
    return statistics.median(times[1:]) * 1000, t_conn * 1000


if __name__ == "__main__":
    if sys.argv[1:2] == ["relay"] and len(sys.argv) == 7:
        relay_main(*sys.argv[2:7])
    else:
        sys.exit("usage: harness.py relay LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS")
