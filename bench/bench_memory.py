#!/usr/bin/python3
"""The daemon's peak memory under load (issue "Run it in production", part 1): how far the
resident set of a zarrfs daemon grows past -o memory_limit (its default, cache_size + 256 MiB
above the daemon's own memory at mount, or the one ZF_BENCH_MEMORY_OPTS gives, as the daemon's
.zarrfs-stats reports it; for a baseline binary, past cache_size) in four scenarios, each at
several cache sizes, with the readers' throughput beside it. Run it through bench/memory.sh
(root: the HTTP scenarios use a network namespace).

Scenarios (ZF_BENCH_MEMORY_SCENARIOS, default all four, comma-separated):
  random   ZF_BENCH_MEMORY_READERS (64) threads, each os.preadv() of random ranges of 64 KiB to
           1 MiB (4 KiB multiples, 4 KiB-aligned) at random offsets of a random one of the four
           float arrays, for ZF_BENCH_MEMORY_RANDOM_S (10) seconds; local directory store.
  seq      4 threads, each reading a different one of the four float arrays whole (4 MiB
           readv()s into one reused buffer); local directory store.
  strings  4 threads, each reading a different one of four vlen-utf8 string arrays whole (its
           text file: one line per element; 4 MiB readv()s to end of file, as the file's size is
           0 until read once), over HTTP at 20 ms of round trip.
  big16    4 threads reading one float array of 16 MiB chunks whole, each a quarter of it (a
           contiguous range of whole chunks), over HTTP at 20 ms of round trip.

Data (written once with zarr-python 2.13 into ZF_BENCH_DIR/memory/data, reused while its stamp
matches; chunk bytes read back with zarr-python give the CRC-32 the mounts are checked against):
  float.zarr     a group of four float32 arrays a0..a3 of (rows, 16384), ZF_BENCH_MEMORY_MIB (512)
                 MiB each, chunks (64, 16384) = 4 MiB (one chunk per band of 64 rows: a sequential
                 reader needs one chunk at a time), Blosc lz4 5 + shuffle, harness.band()'s values
                 (seed, seed + 1, ...).
  http/strings.zarr  a group of four 1-D vlen-utf8 arrays s0..s3, ZF_BENCH_MEMORY_STR_CHUNKS (64)
                 chunks of 10,000 elements each, an element 15 pseudo-words (about 100 bytes): a
                 chunk is about 1 MB of text; Zstd 1; consolidated metadata.
  http/big16.zarr    one float32 array (rows, 16384), ZF_BENCH_MEMORY_BIG_MIB (1024) MiB, chunks
                 (256, 16384) = 16 MiB, Blosc lz4 5 + shuffle.
The HTTP store is nginx in a network namespace with 20 ms of round trip (harness.Net: netem where
the kernel has it, else the delaying relay; namespace ZF_BENCH_NETNS, default zfbmem, its own
veth pair and addresses so that it can run beside bench/remote.sh).

Per repetition (ZF_BENCH_REPS, default 3), per scenario, per cache size (ZF_BENCH_MEMORY_CACHES,
default "16M 512M"): the store's files read once (page cache), a fresh mount with
-o cache_size=C plus ZF_BENCH_MEMORY_OPTS (extra -o options, e.g. a future memory_limit=...;
HTTP mounts also retries=3,timeout=60), the readers started together; meanwhile the daemon's
VmRSS is sampled every 50 ms; at the end, before unmounting, VmHWM, VmRSS, /proc/PID/smaps_rollup
and the daemon's mappings (anonymous, and the PROT_NONE reserves glibc's malloc arenas leave) are
read. Reported: throughput (bytes read by all readers / wall time from their start to the last
one's end, MB = 1e6 bytes), peak RSS (VmHWM; the sampled maximum beside it), RSS after mounting,
and peak RSS minus the bound: memory_limit when ZF_BENCH_MEMORY_OPTS gives one, else zarrfs's
default, cache_size + 256 MiB above its own memory at mount (goal: <= 16 MiB, the issue's);
cache_size for a baseline. Medians over the repetitions, min-max beside.

Before the timed reads, each scenario's data is checked once on its own mount: the whole files'
CRC-32 (float arrays, text) against zarr-python's, and for `random` 16 random ranges against
zarr-python's values. Results: ZF_BENCH_DIR/memory/results/bench-memory-TIME.json and .md;
`bench_memory.py --report FILE.json` re-renders the table.
"""
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib

import numpy as np

import harness as h
from harness import COLS, MiB, env, log

SCENARIOS = ("random", "seq", "strings", "big16")
HTTP_SCENARIOS = ("strings", "big16")
GEN_VERSION = 1
STR_PER_CHUNK = 10000
STR_WORDS = 15
FLOAT_CHUNK_ROWS = 64          # (64, 16384) float32 = 4 MiB
BIG_CHUNK_ROWS = 256           # (256, 16384) float32 = 16 MiB
N_ARRAYS = 4
GOAL_SLACK_MIB = 16            # the goal: peak RSS <= memory_limit + 16 MiB

CFG = h.knobs(
    3,
    caches=env("ZF_BENCH_MEMORY_CACHES", "16M 512M").replace(",", " ").split(),
    opts=env("ZF_BENCH_MEMORY_OPTS", ""),
    scenarios=[s for s in env("ZF_BENCH_MEMORY_SCENARIOS", ",".join(SCENARIOS)).split(",") if s],
    readers=env("ZF_BENCH_MEMORY_READERS", 64, int),
    random_s=env("ZF_BENCH_MEMORY_RANDOM_S", 10.0, float),
    array_mib=env("ZF_BENCH_MEMORY_MIB", 512, int),
    big_mib=env("ZF_BENCH_MEMORY_BIG_MIB", 1024, int),
    str_chunks=env("ZF_BENCH_MEMORY_STR_CHUNKS", 64, int),
    baseline=env("ZF_BENCH_MEMORY_BASELINE", ""),
    baseline_opts=env("ZF_BENCH_MEMORY_BASELINE_OPTS", ""),
    delay_ms=env("ZF_BENCH_REMOTE_DELAY_MS", 10.0, float),
    latency=env("ZF_BENCH_REMOTE_LATENCY", "auto"),
    netns=env("ZF_BENCH_NETNS", "zfbmem"),
    sample_ms=50,
)
CFG["dir"] = os.path.join(env("ZF_BENCH_DIR", "/var/tmp/zarrfs-bench"), "memory")
CFG["bs"] = 4 * MiB
# the namespace's own veth pair and subnet (bench/remote.sh uses zfb-h/zfb-n, 10.213.7.0/24)
NET_NAMES = {"VETH_HOST": "zfm-h", "VETH_NS": "zfm-n", "HOST_IP": "10.213.9.1",
             "NS_IP": "10.213.9.2"}


DEFAULT_MARGIN = 256 * MiB  # zarrfs's default memory_limit: cache_size + 256 MiB


def limit_of(opts, cache, side="zarrfs"):
    """(bound in bytes, its text): the memory_limit=SIZE among comma-separated -o options; else,
    for the zarrfs side (whose daemon always has one), the default cache_size + 256 MiB (the
    daemon adds what it holds at mount: measure() takes the bound from its .zarrfs-stats); else
    (None, "cache_size")."""
    for o in opts.split(","):
        if o.startswith("memory_limit="):
            v = o.split("=", 1)[1]
            return h.parse_size(v), "memory_limit " + v
    if side == "zarrfs":
        return h.parse_size(cache) + DEFAULT_MARGIN, "default memory_limit (cache_size + 256M + the daemon's own)"
    return None, "cache_size"


# ---------------------------------------------------------------------------- data

def _stamp(path, want):
    try:
        with open(path + ".done") as f:
            got = json.load(f)
        if got["want"] == json.loads(json.dumps(want)):
            return got
    except (OSError, ValueError, KeyError):
        pass
    return None


def _done(path, want, **facts):
    facts["want"] = want
    with open(path + ".done", "w") as f:
        json.dump(facts, f)
    return facts


def _crc_rows(z, step):
    crc = 0
    for r0 in range(0, z.shape[0], step):
        crc = zlib.crc32(np.ascontiguousarray(z[r0:r0 + step]).view(np.uint8), crc)
    return crc


def _write_floats(z, rows, seed):
    for r0, b in h.bands(rows, seed):
        z[r0:r0 + len(b)] = b


def float_group(root):
    """float.zarr: arrays a0..a3; {"crc": [...], "nbytes": per array}."""
    import zarr
    path = os.path.join(root, "float.zarr")
    rows = h.rows_for(CFG["array_mib"] * MiB)
    want = {"version": GEN_VERSION, "rows": rows, "n": N_ARRAYS, "chunk_rows": FLOAT_CHUNK_ROWS,
            "seed": CFG["seed"], "compressor": repr(h.compressor("lz4"))}
    got = _stamp(path, want)
    if got:
        return path, got
    t0 = time.perf_counter()
    log("  generating %s (%d arrays of %s float32, chunks %s) ..."
        % (path, N_ARRAYS, (rows, COLS), (FLOAT_CHUNK_ROWS, COLS)))
    g = zarr.open_group(path, mode="w")
    crcs = []
    for i in range(N_ARRAYS):
        z = g.create_dataset("a%d" % i, shape=(rows, COLS), chunks=(FLOAT_CHUNK_ROWS, COLS),
                             dtype="<f4", compressor=h.compressor("lz4"), fill_value=0.0)
        _write_floats(z, rows, CFG["seed"] + i)
        crcs.append(_crc_rows(zarr.open(os.path.join(path, "a%d" % i), mode="r"), 1024))
    zarr.consolidate_metadata(path)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return path, _done(path, want, crc=crcs, nbytes=rows * COLS * 4)


def big_array(root):
    """http/big16.zarr: one array of 16 MiB chunks; {"crc", "nbytes"}."""
    import zarr
    path = os.path.join(root, "big16.zarr")
    rows = h.rows_for(CFG["big_mib"] * MiB)
    want = {"version": GEN_VERSION, "rows": rows, "chunk_rows": BIG_CHUNK_ROWS,
            "seed": CFG["seed"], "compressor": repr(h.compressor("lz4"))}
    got = _stamp(path, want)
    if got:
        return path, got
    t0 = time.perf_counter()
    log("  generating %s (%s float32, chunks %s) ..." % (path, (rows, COLS),
                                                          (BIG_CHUNK_ROWS, COLS)))
    z = zarr.open(path, mode="w", shape=(rows, COLS), chunks=(BIG_CHUNK_ROWS, COLS),
                  dtype="<f4", compressor=h.compressor("lz4"), fill_value=0.0)
    _write_floats(z, rows, CFG["seed"] + 100)
    crc = _crc_rows(zarr.open(path, mode="r"), 1024)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return path, _done(path, want, crc=crc, nbytes=rows * COLS * 4)


def _words(rng, n=2000):
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    return ["".join(map(chr, letters[rng.integers(0, 26, rng.integers(3, 11))])) for _ in range(n)]


def string_group(root):
    """http/strings.zarr: vlen-utf8 arrays s0..s3 of ~1 MB of text per chunk; {"crc": [...],
    "text_bytes": [...]}, the CRC-32 and length of each array's text as zarrfs serves it (one
    line per element; the elements hold no character that needs escaping)."""
    import numcodecs
    import zarr
    path = os.path.join(root, "strings.zarr")
    n = CFG["str_chunks"] * STR_PER_CHUNK
    want = {"version": GEN_VERSION, "n": n, "per_chunk": STR_PER_CHUNK, "words": STR_WORDS,
            "arrays": N_ARRAYS, "seed": CFG["seed"], "compressor": repr(h.compressor("zstd"))}
    got = _stamp(path, want)
    if got:
        return path, got
    t0 = time.perf_counter()
    log("  generating %s (%d vlen-utf8 arrays of %d elements, chunks of %d) ..."
        % (path, N_ARRAYS, n, STR_PER_CHUNK))
    rng = np.random.default_rng(CFG["seed"])
    vocab = np.array(_words(rng), dtype=object)
    g = zarr.open_group(path, mode="w")
    crcs, sizes = [], []
    for i in range(N_ARRAYS):
        z = g.create_dataset("s%d" % i, shape=(n,), chunks=(STR_PER_CHUNK,), dtype=object,
                             object_codec=numcodecs.VLenUTF8(), compressor=h.compressor("zstd"))
        for c0 in range(0, n, STR_PER_CHUNK):
            pick = vocab[rng.integers(0, len(vocab), (STR_PER_CHUNK, STR_WORDS))]
            z[c0:c0 + STR_PER_CHUNK] = np.array([" ".join(r) for r in pick], dtype=object)
        back = zarr.open(os.path.join(path, "s%d" % i), mode="r")
        crc = size = 0
        for c0 in range(0, n, STR_PER_CHUNK):
            text = "".join(s + "\n" for s in back[c0:c0 + STR_PER_CHUNK]).encode()
            crc, size = zlib.crc32(text, crc), size + len(text)
        crcs.append(crc)
        sizes.append(size)
    zarr.consolidate_metadata(path)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return path, _done(path, want, crc=crcs, text_bytes=sizes)


# ---------------------------------------------------------------------------- daemon memory

def proc_kib(pid, key, name="status"):
    with open("/proc/%d/%s" % (pid, name)) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def smaps_rollup(pid):
    """/proc/PID/smaps_rollup's kB fields, in MiB."""
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1]) / 1024.0
    return out


def mappings(pid):
    """Anonymous mappings of the daemon: (count, MiB of address space, count of PROT_NONE ones:
    the reserves of glibc's malloc arenas' 64 MiB heaps and the threads' stack guards)."""
    n = none = 0
    size = 0
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5:                  # a file or [heap], [stack], ...
                continue
            a, b = (int(x, 16) for x in parts[0].split("-"))
            n += 1
            size += b - a
            none += parts[1].startswith("---")
    return n, size / MiB, none


class Sampler(threading.Thread):
    """The max of the daemon's VmRSS, read every `ms` milliseconds until stop()."""

    def __init__(self, pid, ms):
        super().__init__(daemon=True)
        self.pid, self.period, self.max_kib, self.n = pid, ms / 1000.0, 0, 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                self.max_kib = max(self.max_kib, proc_kib(self.pid, "VmRSS") or 0)
                self.n += 1
            except OSError:
                return
            self.done.wait(self.period)

    def stop(self):
        self.done.set()
        self.join()
        return self.max_kib / 1024.0


# ---------------------------------------------------------------------------- readers

def whole_reader(path, start=0, end=None):
    """Read path from start to end (None: to end of file) with 4 MiB readv()s into one reused
    buffer; (bytes, CRC-32)."""
    buf = bytearray(CFG["bs"])
    mv = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        off, crc = start, 0
        while end is None or off < end:
            want = CFG["bs"] if end is None else min(CFG["bs"], end - off)
            n = os.preadv(fd, [mv[:want]], off)
            if n <= 0:
                if end is None and n == 0:
                    break
                raise RuntimeError("%s: short read at %d" % (path, off))
            crc = zlib.crc32(mv[:n], crc) if CHECKING.is_set() else 0
            off += n
        return off - start, crc
    finally:
        os.close(fd)


CHECKING = threading.Event()    # set: the readers compute the CRC-32 of what they read


def random_reader(paths, size, seed, seconds):
    """Random ranges of 64 KiB-1 MiB (4 KiB multiples, 4 KiB-aligned) of random files of `paths`
    (each `size` bytes) for `seconds`; (bytes, 0)."""
    deadline = time.perf_counter() + seconds
    r = random.Random(seed)
    buf = bytearray(MiB)
    mv = memoryview(buf)
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    total = 0
    try:
        while time.perf_counter() < deadline:
            k = r.randrange(len(fds))
            n = r.randrange(16, 257) * 4096
            off = r.randrange(0, (size - n) // 4096 + 1) * 4096
            got = os.preadv(fds[k], [mv[:n]], off)
            if got != n:
                raise RuntimeError("%s: %d bytes at %d, expected %d" % (paths[k], got, off, n))
            total += n
    finally:
        for fd in fds:
            os.close(fd)
    return total, 0


def run_readers(jobs):
    """Run the callables in threads started together; (seconds from the start to the last one's
    end, their results in order). An exception in any is raised."""
    out = [None] * len(jobs)
    errors = []
    gate = threading.Barrier(len(jobs) + 1)

    def go(i, job):
        try:
            gate.wait()
            out[i] = job()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=go, args=(i, j), daemon=True) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    t = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return t, out


# ---------------------------------------------------------------------------- scenarios

class Scenario:
    """What a scenario mounts and how its readers read: src (a directory or URL), files (the
    paths inside the mount), jobs(mnt) -> callables."""

    def __init__(self, name, src, local, facts, what):
        self.name, self.src, self.local, self.facts, self.what = name, src, local, facts, what

    def files(self, mnt):
        if self.name == "big16":
            return [os.path.join(mnt, os.listdir(mnt)[0])]
        prefix = "s" if self.name == "strings" else "a"
        return [os.path.join(mnt, "%s%d" % (prefix, i)) for i in range(N_ARRAYS)]

    def readers(self):
        return CFG["readers"] if self.name == "random" else N_ARRAYS

    def jobs(self, mnt, rep):
        files = self.files(mnt)
        if self.name == "random":
            return [(lambda i=i: random_reader(files, self.facts["nbytes"],
                                               CFG["seed"] + 1000 * rep + i, CFG["random_s"]))
                    for i in range(CFG["readers"])]
        if self.name == "big16":
            q = self.facts["nbytes"] // N_ARRAYS
            return [(lambda i=i: whole_reader(files[0], i * q, (i + 1) * q))
                    for i in range(N_ARRAYS)]
        return [(lambda f=f: whole_reader(f)) for f in files]

    def check(self, mnt):
        """The data through the mount against zarr-python's (raises on a difference)."""
        import zarr
        files = self.files(mnt)
        if self.name == "random":
            r = random.Random(CFG["seed"])
            z = zarr.open(os.path.join(self.local, "a0"), mode="r")
            row = COLS * 4
            with open(files[0], "rb", buffering=0) as f:
                for _ in range(16):
                    n = r.randrange(16, 257) * 4096
                    off = r.randrange(0, (self.facts["nbytes"] - n) // 4096 + 1) * 4096
                    f.seek(off)
                    got = f.read(n)
                    r0, r1 = off // row, -(-(off + n) // row)
                    ref = np.ascontiguousarray(z[r0:r1]).view(np.uint8).reshape(-1)
                    ref = ref[off - r0 * row:off - r0 * row + n].tobytes()
                    if got != ref:
                        raise RuntimeError("random: %d bytes at %d of a0: WRONG DATA" % (n, off))
            return
        CHECKING.set()
        try:
            _t, out = run_readers(self.jobs(mnt, 0))
        finally:
            CHECKING.clear()
        if self.name == "big16":
            # the quarters' CRCs combined in order: read the whole file once more instead
            _n, crc = _whole_crc(files[0])
            want = [self.facts["crc"]]
            got = [crc]
        else:
            want, got = self.facts["crc"], [c for _n, c in out]
        if got != want:
            raise RuntimeError("%s: CRC-32 of the files %s, zarr-python's %s: WRONG DATA"
                               % (self.name, got, want))


def _whole_crc(path):
    CHECKING.set()
    try:
        return whole_reader(path)
    finally:
        CHECKING.clear()


def sides():
    """(side, binary, extra -o options): zarrfs with ZF_BENCH_MEMORY_OPTS, and with
    ZF_BENCH_MEMORY_BASELINE another binary (the code before a change) with
    ZF_BENCH_MEMORY_BASELINE_OPTS."""
    out = [("zarrfs", CFG["zarrfs"], CFG["opts"])]
    if CFG["baseline"]:
        out.append(("baseline", CFG["baseline"], CFG["baseline_opts"]))
    return out


def mount(sc, cache, mnt, logfile, side=None):
    _name, binary, extra = side or sides()[0]
    opts = ["cache_size=" + cache]
    if "://" in sc.src:
        opts.append("retries=3,timeout=60")
    if extra:
        opts.append(extra)
    one = sc.name == "big16"
    return h.Daemon(h.zarrfs_cmd(binary, sc.src, mnt, opts), mnt, logfile,
                    nbytes=sc.facts["nbytes"] if one else None, one_file=one,
                    mount_timeout=60, close_timeout=30, new_session=True)


def measure(sc, cache, side, rep, mnt, logfile):
    h.prewarm(sc.local, resident=False)
    r = {}
    busy0, own0 = h.cpu_snapshot()
    with mount(sc, cache, mnt, logfile, side) as m, \
            h.Watchdog(m, "%s cache_size=%s" % (sc.name, cache), CFG["phase_timeout"]):
        for f in sc.files(mnt):              # lookups done: the mount's own memory before reads
            os.stat(f)
        r["rss_mount_mib"] = proc_kib(m.pid, "VmRSS") / 1024.0
        s = Sampler(m.pid, CFG["sample_ms"])
        c0 = m.cpu_s()
        s.start()
        try:
            t, out = run_readers(sc.jobs(mnt, rep))
        finally:
            r["rss_sampled_max_mib"] = s.stop()
        r["daemon_cpu_pct"] = 100.0 * (m.cpu_s() - c0) / t
        r["hwm_mib"] = m.hwm_mib()
        r["rss_end_mib"] = proc_kib(m.pid, "VmRSS") / 1024.0
        roll = smaps_rollup(m.pid)
        r["anon_end_mib"] = roll.get("Anonymous", 0.0)
        r["rss_file_end_mib"] = roll.get("Rss", 0.0) - roll.get("Anonymous", 0.0)
        r["anon_maps"], r["anon_maps_mib"], r["prot_none_maps"] = mappings(m.pid)
        r["threads"] = m.threads()
        r["samples"] = s.n
        try:  # the bound the daemon applies (its default depends on its memory at mount)
            with open(os.path.join(mnt, ".zarrfs-stats")) as f:
                st = json.load(f)
            r["memory"] = st.get("memory", {})  # the account's figures, kept
            r["buffers"] = st.get("buffers", {})  # chunk buffers fresh / reused
            r["memory_limit"] = r["memory"].get("limit")
        except (OSError, ValueError):
            r["memory_limit"] = None
    busy1, own1 = h.cpu_snapshot()
    r["other_cpu_s"] = (busy1 - busy0) - (own1 - own0)
    r["bytes"] = sum(n for n, _c in out)
    r["seconds"] = t
    r["mbps"] = h.mbps(r["bytes"], t)
    if side[0] == "zarrfs" and r.get("memory_limit"):
        bound = r["memory_limit"]  # the daemon's own, from its .zarrfs-stats
    else:
        bound = limit_of(side[2], cache, side[0])[0] or h.parse_size(cache)
    r["over_bound_mib"] = r["hwm_mib"] - bound / MiB
    r["load1"] = os.getloadavg()[0]
    return r


def scenarios(data_root, net):
    out = []
    if {"random", "seq"} & set(CFG["scenarios"]):
        path, facts = float_group(data_root)
        for name in ("random", "seq"):
            if name in CFG["scenarios"]:
                what = ("%d readers, random 64 KiB–1 MiB ranges of 4 arrays, %g s"
                        % (CFG["readers"], CFG["random_s"]) if name == "random" else
                        "4 readers, each a different array whole")
                out.append(Scenario(name, path, path, facts,
                                    what + " (%d × %d MiB float32, 4 MiB chunks, blosc lz4; "
                                    "local directory)" % (N_ARRAYS, facts["nbytes"] // MiB)))
    http_root = os.path.join(data_root, "http")
    if "strings" in CFG["scenarios"]:
        path, facts = string_group(http_root)
        out.append(Scenario("strings", net.url("strings.zarr") if net else None, path, facts,
                            "4 readers, each a different vlen-utf8 array's text whole (%d × "
                            "%.0f MB of text, ~1 MB per chunk, zstd 1; HTTP)"
                            % (N_ARRAYS, facts["text_bytes"][0] / 1e6)))
    if "big16" in CFG["scenarios"]:
        path, facts = big_array(http_root)
        out.append(Scenario("big16", net.url("big16.zarr") if net else None, path, facts,
                            "4 readers, each a quarter of one array (%d MiB float32, 16 MiB "
                            "chunks, blosc lz4; HTTP)" % (facts["nbytes"] // MiB)))
    return out


# ---------------------------------------------------------------------------- report

def markdown(res):
    cfg = res["config"]
    lines = [
        "| side | scenario | cache_size | extra `-o` | MB/s (min–max) "
        "| **peak RSS** MiB (VmHWM; min–max) | max sampled VmRSS MiB | RSS after mount MiB "
        "| **peak RSS − bound** MiB (bound) | anonymous / file-backed at end MiB "
        "| anon. mappings (PROT_NONE) | daemon threads | daemon CPU | other processes' CPU s "
        "| load (1 min) |",
        "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    by_key = {}
    for row in res["results"]:
        side = row.get("side", "zarrfs")
        opts = row.get("opts", cfg["opts"])
        by_key[(side, row["scenario"], row["cache"])] = row
        med = row["summary"]["median"]
        over = med["over_bound_mib"]
        limit, what = limit_of(opts, row["cache"], side)
        bound = ("%s; goal ≤ +%d %s" % (what, GOAL_SLACK_MIB,
                                        "✓" if over <= GOAL_SLACK_MIB else "✗")
                 if limit else what)
        lines.append(
            "| %s | %s | %s | %s | %.0f (%s) | **%.0f** (%s) | %.0f | %.0f | **%+.0f** (%s) "
            "| %.0f / %.0f | %.0f (%.0f) | %.0f | %.0f%% | %s | %s |" % (
                side, row["scenario"], row["cache"], ("`%s`" % opts) if opts else "—",
                med["mbps"], h.rng(row["summary"], "mbps"), med["hwm_mib"],
                h.rng(row["summary"], "hwm_mib"), med["rss_sampled_max_mib"],
                med["rss_mount_mib"], over, bound, med["anon_end_mib"],
                med["rss_file_end_mib"], med["anon_maps"], med["prot_none_maps"],
                med["threads"], med["daemon_cpu_pct"],
                "%.1f" % med["other_cpu_s"] if "other_cpu_s" in med else "–",
                h.rng(row["summary"], "load1", "%.1f")))
    pairs = [(k, by_key[("baseline",) + k[1:]]) for k in by_key
             if k[0] == "zarrfs" and ("baseline",) + k[1:] in by_key]
    if pairs:
        lines += ["", "| scenario | cache_size | throughput zarrfs / baseline (per repetition, "
                  "then the median; min–max) | peak RSS zarrfs / baseline MiB |",
                  "|---|--:|--:|--:|"]
        for k, b in pairs:
            a = by_key[k]
            ratios = [x["mbps"] / y["mbps"] for x, y in zip(a["reps"], b["reps"])]
            lines.append("| %s | %s | **%.2f** (%.2f–%.2f) | %.0f / %.0f |" % (
                k[1], k[2], statistics.median(ratios), min(ratios), max(ratios),
                a["summary"]["median"]["hwm_mib"], b["summary"]["median"]["hwm_mib"]))
    lines += ["", "Scenarios:"]
    for name, what in res["scenario_what"].items():
        lines.append("* `%s`: %s" % (name, what))
    return "\n".join(lines)


def log_rep(rep, side, sc, cache, r):
    log("  rep %d %s%-7s cache_size=%-5s %7.0f MB/s in %5.1f s; peak RSS %.0f MiB (sampled %.0f, "
        "after mount %.0f), %+.0f past the bound; anon %.0f MiB, %d anon maps (%d PROT_NONE), "
        "%d threads" % (
            rep + 1, "" if side[0] == "zarrfs" else side[0] + " ", sc.name, cache, r["mbps"],
            r["seconds"], r["hwm_mib"], r["rss_sampled_max_mib"], r["rss_mount_mib"],
            r["over_bound_mib"], r["anon_end_mib"], r["anon_maps"], r["prot_none_maps"],
            r["threads"]))


def main():
    if h.report_cli(markdown):
        return
    bad = [s for s in CFG["scenarios"] if s not in SCENARIOS]
    if bad:
        sys.exit("bench_memory: unknown scenario %s (known: %s)" % (bad, ", ".join(SCENARIOS)))
    need_net = bool(set(HTTP_SCENARIOS) & set(CFG["scenarios"]))
    if need_net and os.geteuid() != 0:
        sys.exit("bench_memory: the HTTP scenarios need root (ip netns); or set "
                 "ZF_BENCH_MEMORY_SCENARIOS=random,seq")
    data_root = os.path.join(CFG["dir"], "data")
    os.makedirs(os.path.join(data_root, "http"), exist_ok=True)
    session = h.Session("zarrfs memory benchmark", CFG)
    session.intro("peak RSS of the daemon under load, scenarios %s, cache_size %s%s"
                  % (", ".join(CFG["scenarios"]), " and ".join(CFG["caches"]),
                     ", -o " + CFG["opts"] if CFG["opts"] else ""))
    net = None

    def on_signal(sig, _frame):
        raise KeyboardInterrupt("signal %d" % sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    mnt = os.path.join(CFG["dir"], "mnt")
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(CFG["dir"], "zarrfs.log")
    extra = {}
    try:
        if need_net:
            net = h.Net(CFG["netns"], CFG["delay_ms"], CFG["latency"])
            for k, v in NET_NAMES.items():
                setattr(net, k, v)
            net.up()
        scs = scenarios(data_root, net)
        if net:
            net.start_servers(os.path.join(data_root, "http"))
            rtt, conn = h.measure_rtt(net.url("big16.zarr/.zarray" if "big16" in CFG["scenarios"]
                                              else "strings.zarr/.zgroup"))
            extra.update(latency_mode=net.mode, rtt_ms=rtt, connect_ms=conn)
            log("  latency by %s: request round trip %.1f ms" % (net.mode, rtt))
        for sc in scs:
            t0 = time.perf_counter()
            h.prewarm(sc.local, resident=False)
            with mount(sc, CFG["caches"][0], mnt, logfile) as m, \
                    h.Watchdog(m, "check " + sc.name, CFG["phase_timeout"]):
                sc.check(mnt)
            log("  %s: data checked against zarr-python (%.1f s)"
                % (sc.name, time.perf_counter() - t0))
        reps = {(sd[0], sc.name, c): [] for sd in sides() for sc in scs for c in CFG["caches"]}
        for rep in range(CFG["reps"]):
            for sc in scs:
                for cache in (CFG["caches"] if rep % 2 == 0 else CFG["caches"][::-1]):
                    for side in (sides() if rep % 2 == 0 else sides()[::-1]):
                        r = measure(sc, cache, side, rep, mnt, logfile)
                        reps[(side[0], sc.name, cache)].append(r)
                        log_rep(rep, side, sc, cache, r)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt])
        if net:
            net.down()
            log("  network namespace %s removed" % net.ns)
    results = [{"side": side, "opts": dict((s[0], s[2]) for s in sides())[side],
                "scenario": name, "cache": cache, "reps": rs, "summary": h.summarize(rs)}
               for (side, name, cache), rs in reps.items()]
    res = {"config": CFG, "results": results,
           "scenario_what": {sc.name: sc.what for sc in scs}}
    res.update(extra)
    conventions = ("MB = 1e6 bytes; medians of %d repetitions; peak RSS = the daemon's VmHWM "
                   "before unmounting; the bound is memory_limit where -o gives one, else "
                   "cache_size" % CFG["reps"])
    session.finish(os.path.join(CFG["dir"], "results"), "bench-memory", results, markdown(res),
                   conventions, scenario_what=res["scenario_what"], **extra)


if __name__ == "__main__":
    main()
