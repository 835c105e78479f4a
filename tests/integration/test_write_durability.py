#!/usr/bin/python3
"""Durability and concurrency of the write path (-o rw): what zarr-python 2.13 reads from the
store after the daemon is killed with SIGKILL (fsync'ed data is there; a chunk is never torn,
whatever moment the kill hits), concurrent writers of one array losing no update, and writes of
whole chunks not reading the chunks they replace.

The codecs the tests write with come from ZF_WRITE_CODECS (comma-separated names of CODECS below;
default "none", the only chain zarrfs encodes today); each test runs once per codec (subTest).
ZF_DURABILITY_KILLS sets the number of kills of the kill loop (default 100)."""

import errno
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

PYTHON = "/usr/bin/python3"
WORK = None

# name -> compressor (v2); add a name to ZF_WRITE_CODECS once zarrfs encodes it
CODECS = {
    "none": lambda: None,
    "zlib": lambda: numcodecs.Zlib(level=1),
    "blosc": lambda: numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    "zstd": lambda: numcodecs.Zstd(level=1),
    "lz4": lambda: numcodecs.LZ4(),
}
SELECTED = [c.strip() for c in os.environ.get("ZF_WRITE_CODECS", "none").split(",") if c.strip()]
KILLS = int(os.environ.get("ZF_DURABILITY_KILLS", "100"))
FILL = -1.0
TMP_TAG = ".zarrfs-"


def setUpModule():
    global WORK
    unknown = [c for c in SELECTED if c not in CODECS]
    if unknown:
        raise ValueError("ZF_WRITE_CODECS: unknown codecs %r (known: %s)"
                         % (unknown, ", ".join(CODECS)))
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-wdur-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# helpers

class KillableMount(zfmount.Mount):
    """A Mount whose daemon the test may SIGKILL (kill9): the dead mount is then cleared with
    fusermount3 -uz, and the way out does not count the daemon's status as a failure."""

    def __init__(self, *a, **kw):
        kw.setdefault("check_exit", False)
        super().__init__(*a, **kw)
        self.killed9 = False

    def kill9(self):
        self.killed9 = True
        os.kill(self.proc.pid, signal.SIGKILL)
        st = self.proc.wait(timeout=10)
        r = zfmount.run(["fusermount3", "-uz", self.mnt], timeout=10)
        if r.returncode != 0 and zfmount.anything_mounted_at(self.mnt):
            raise AssertionError("fusermount3 -uz %s: %s" % (self.mnt, r.stderr.strip()))
        return st

    def stop(self, failed=False):
        if not self.killed9:
            return super().stop(failed)
        real_watchdog = self.killed_by_watchdog
        self.killed_by_watchdog = True       # a status of -9 is what we asked for: no stderr dump
        try:
            return super().stop(failed)
        finally:
            self.killed_by_watchdog = real_watchdog

    def __exit__(self, etype, evalue, tb):
        status, how = self.stop(failed=etype is not None)
        if etype is None:
            if how == "FAILED":
                raise AssertionError("could not unmount %s" % self.mnt)
            if self.killed_by_watchdog:
                raise AssertionError("watchdog killed the daemon (a request hung)")
            if not self.killed9 and status != 0:
                raise AssertionError("zarrfs exited with status %s after a clean unmount" % status)
        return False


def stats(m):
    with open(m.path(".zarrfs-stats")) as f:
        return json.load(f)


def store_reads(m):
    s = stats(m)["store"]
    return s["requests"] - s["writes"], s["writes"]


def make_array(path, shape, chunks, codec, init=None):
    """A v2 <f4 array (fill -1, '.' separator) with the codec; init: an array or a scalar to
    store, None: no chunk stored."""
    z = zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype="<f4",
                        compressor=CODECS[codec](), fill_value=FILL)
    if init is not None:
        z[...] = init
    return z


def make_group_with_array(name, shape, chunks, codec, init=None):
    root = os.path.join(WORK, name)
    zarr.open_group(root, mode="w")
    make_array(os.path.join(root, "arr"), shape, chunks, codec, init)
    return root


def tmp_files(d):
    return sorted(f for f in os.listdir(d) if TMP_TAG in f)


def read_with_zarr(array_dir):
    """The whole array as zarr-python 2.13 reads it, from the store alone."""
    return zarr.open_array(array_dir, mode="r")[...]


def chunk_versions(array_dir, grid):
    """{(i, j): version} of a 2-D store whose every written chunk holds one value: the decoded
    value, or FILL for a missing chunk. Raises AssertionError naming the chunk when a chunk file
    does not decode with zarr-python's own chunk decoder or is not uniform."""
    z = zarr.open_array(array_dir, mode="r")
    out = {}
    for i in range(grid[0]):
        for j in range(grid[1]):
            key = "%d.%d" % (i, j)
            p = os.path.join(array_dir, key)
            if not os.path.exists(p):
                out[(i, j)] = FILL
                continue
            with open(p, "rb") as f:
                raw = f.read()
            try:
                c = z._decode_chunk(raw)
            except Exception as e:   # noqa: BLE001 (any decoder error means undecodable)
                raise AssertionError("chunk %s (%d bytes) does not decode: %s: %s"
                                     % (key, len(raw), type(e).__name__, e))
            vals = np.unique(c)
            if len(vals) != 1:
                raise AssertionError("chunk %s mixes values %s" % (key, vals[:8].tolist()))
            out[(i, j)] = float(vals[0])
    return out


def wait_line(proc, seconds, what):
    """One line from proc's stdout within `seconds`, else AssertionError."""
    r, _, _ = select.select([proc.stdout], [], [], seconds)
    if not r:
        raise AssertionError("%s: no answer from pid %d within %.0f s" % (what, proc.pid, seconds))
    line = proc.stdout.readline()
    if not line:
        raise AssertionError("%s: pid %d exited (status %s): %s"
                             % (what, proc.pid, proc.poll(), proc.stderr.read()[-2000:]))
    return line.strip()


# --------------------------------------------------------------------------------------------
# the kill loop's writer: one process for all iterations (no numpy import per mount)

WRITER_B = r'''
import errno, json, os, random, sys, time
H, W, CH, CW = map(int, sys.argv[1:5])
GH, GW = -(-H // CH), -(-W // CW)
import struct
def f4(v, n):
    return struct.pack("<f", float(v)) * n
for line in sys.stdin:
    job = json.loads(line)
    rnd = random.Random(job["seed"])
    v = job["version"]
    ops = []         # [kind, where, version, completed]
    fsyncs = []      # [ops issued before it, completed]
    res = {"ops": ops, "fsyncs": fsyncs, "error": None, "call": None}
    try:
        # descriptors, not paths: after the kill the mount is lazily unmounted (fusermount3 -uz),
        # and a path would then name the empty mount point (ENOENT) instead of the dead mount
        fd = os.open(job["path"], os.O_RDWR)
        rootfd = os.open(job["root"], os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        res["error"] = "open: %s" % e
        print(json.dumps(res), flush=True)
        continue
    print("started", flush=True)
    deadline = time.monotonic() + job["max_seconds"]
    try:
        while time.monotonic() < deadline:
            r = rnd.random()
            if r < 0.2:
                fsyncs.append([len(ops), False])
                res["call"] = "fsync"
                os.fsync(fd)
                fsyncs[-1][1] = True
                continue
            v += 1
            if r < 0.5:
                # one pwrite covering chunk row i: each of its chunks becomes v, whole
                i = rnd.randrange(GH)
                rows = min(CH, H - i * CH)
                ops.append(["row", [i], v, False])
                res["call"] = "pwrite"
                os.pwrite(fd, f4(v, rows * W), i * CH * W * 4)
            elif r < 0.95:
                # chunk (i, j) one row segment at a time: partial-chunk writes (read-modify-write)
                i, j = rnd.randrange(GH), rnd.randrange(GW)
                rows, cols = min(CH, H - i * CH), min(CW, W - j * CW)
                ops.append(["chunk", [i, j], v, False])
                res["call"] = "pwrite"
                seg = f4(v, cols)
                for rr in rnd.sample(range(rows), rows):
                    os.pwrite(fd, seg, ((i * CH + rr) * W + j * CW) * 4)
            else:
                # the attributes of the root group and of the array (metadata documents)
                ops.append(["attrs", [], v, False])
                doc = json.dumps({"v": v}).encode()
                res["call"] = "setxattr"
                os.setxattr(rootfd, "user.zarr.attributes", doc)
                os.setxattr(fd, "user.zarr.attributes", doc)
            ops[-1][3] = True
        res["call"] = None
        res["error"] = "not interrupted within %s s" % job["max_seconds"]
    except OSError as e:
        res["error"] = errno.errorcode.get(e.errno, str(e.errno))
    for d in (fd, rootfd):
        try:
            os.close(d)
        except OSError:
            pass
    res["version"] = v
    print(json.dumps(res), flush=True)
'''


def allowed_after_kill(before, res, grid):
    """({chunk: set of allowed versions}, {document: set of allowed versions}) after a kill, from
    the state before the iteration and the writer's log. A chunk may hold its version at the
    writer's last completed fsync (else its version before) or any version written after that
    (completed or in flight). Attributes are stored by setxattr itself: the last completed
    version (else the one before) or the one in flight."""
    ops, fsyncs = res["ops"], res["fsyncs"]
    done = [n for n, ok in fsyncs if ok]
    durable_upto = max(done) if done else 0
    state = dict(before["chunks"])

    def touched(op):
        kind, where, _v, _ok = op
        if kind == "row":
            return [(where[0], j) for j in range(grid[1])]
        if kind == "chunk":
            return [tuple(where)]
        return []

    for op in ops[:durable_upto]:
        for c in touched(op):
            state[c] = op[2]
    allowed = {c: {v} for c, v in state.items()}
    for op in ops[durable_upto:]:
        for c in touched(op):
            allowed[c].add(op[2])
    attrs = [op for op in ops if op[0] == "attrs"]
    done_attrs = [op[2] for op in attrs if op[3]]
    allowed_attrs = {}
    for where, prev in before["attrs"].items():
        allowed_attrs[where] = {done_attrs[-1] if done_attrs else prev}
        allowed_attrs[where].update(op[2] for op in attrs if not op[3])
    return allowed, allowed_attrs


class WriteDurability(zfmount.TestCase):

    test_timeout = 240

    def _kill_after(self, how):
        """Write a whole 60 x 60 array (edge chunks; one chunk of fill values) in 1000-byte
        pwrites, then fsync or close; SIGKILL the daemon; zarr-python reads exactly those bytes
        from the store, every chunk file decodes, no temporary file is left, the chunk of fill
        values was erased."""
        for codec in SELECTED:
            with self.subTest(codec=codec):
                shape, chunks = (60, 60), (8, 8)
                root = make_group_with_array("kill-%s-%s" % (how, codec), shape, chunks, codec,
                                             init=np.float32(7))
                rng = np.random.default_rng(1)
                a = rng.standard_normal(shape).astype("<f4")
                a[8:16, 8:16] = FILL
                raw = a.tobytes()
                with KillableMount(root, options=["rw"], label="kill9") as m:
                    fd = os.open(m.path("arr"), os.O_RDWR)
                    # close: a dup keeps the open file, so close(fd) sends FLUSH but not the
                    # RELEASE that would store the chunks a moment later, in the background
                    keep = os.dup(fd)
                    try:
                        for off in range(0, len(raw), 1000):
                            self.assertEqual(os.pwrite(fd, raw[off:off + 1000], off),
                                             len(raw[off:off + 1000]))
                        if how == "fsync":
                            os.fsync(fd)
                    finally:
                        os.close(fd)
                    dirty = stats(m)["cache"]["dirty_bytes"]
                    m.kill9()
                    try:
                        os.close(keep)
                    except OSError:
                        pass
                d = os.path.join(root, "arr")
                got = read_with_zarr(d)
                diff = np.argwhere(got != a)
                self.assertEqual(len(diff), 0, "after %s and kill -9: %d elements differ, first "
                                 "at %s (%d dirty bytes when %s returned)"
                                 % (how, len(diff), diff[:3].tolist(), dirty, how))
                self.assertEqual(dirty, 0, "dirty bytes after %s returned" % how)
                self.assertEqual(tmp_files(d), [], "temporary files left in %s" % d)
                z = zarr.open_array(d, mode="r")
                for key in os.listdir(d):
                    if not key.startswith("."):
                        with open(os.path.join(d, key), "rb") as f:
                            z._decode_chunk(f.read())
                self.assertFalse(os.path.exists(os.path.join(d, "1.1")),
                                 "the chunk of fill values was not erased")
                log("  %s: written, %s, kill -9: the store holds the data" % (codec, how))

    def test_01a_fsynced_data_survives_kill9(self):
        """fsync returned: the data is in the store (see _kill_after)."""
        self._kill_after("fsync")

    def test_01b_closed_data_survives_kill9(self):
        """close returned (FLUSH; the open file lives on in a dup, so no RELEASE): the data is
        in the store (see _kill_after)."""
        self._kill_after("close")

    def test_02_checker_catches_torn_and_mixed_chunks(self):
        """The kill loop's check can fail: a truncated chunk, a chunk of two versions and a chunk
        of garbage are each reported."""
        d = os.path.join(WORK, "checker", "arr")
        make_array(d, (16, 16), (8, 8), SELECTED[0], init=np.float32(3))
        self.assertEqual(set(chunk_versions(d, (2, 2)).values()), {3.0})
        z = zarr.open_array(d, mode="r+")
        with open(os.path.join(d, "0.0"), "rb") as f:
            good = f.read()
        for name, mutate in (("truncated", lambda: good[:len(good) // 2]),
                             ("garbage", lambda: bytes(range(256)) * 3)):
            with open(os.path.join(d, "0.0"), "wb") as f:
                f.write(mutate())
            with self.assertRaises(AssertionError, msg=name):
                chunk_versions(d, (2, 2))
        z[0:8, 0:8] = 3
        z[0:4, 0:8] = 4
        with self.assertRaisesRegex(AssertionError, "mixes"):
            chunk_versions(d, (2, 2))

    def test_03_kill9_loop_never_tears_chunks(self):
        """KILLS times: mount, a writer process writes whole chunk rows (one pwrite each), chunks
        row segment by row segment, attributes, and fsyncs; SIGKILL after 0-150 ms. Then every
        chunk file decodes with zarr-python and is entirely one version: the one at the writer's
        last completed fsync or a later one (missing = fill value, the initial state); the
        attributes documents parse and hold an allowed version. Temporary files left by the kills
        are ignored by zarr-python and never listed by a new mount."""
        H, W, CH, CW = 64, 64, 8, 8
        grid = (H // CH, W // CW)
        for codec in SELECTED:
            with self.subTest(codec=codec):
                root = make_group_with_array("loop-" + codec, (H, W), (CH, CW), codec)
                adir = os.path.join(root, "arr")
                z = zarr.open_array(adir, mode="r+")
                for i in range(grid[0]):          # version 0 in half the chunks, the rest missing
                    for j in range(grid[1]):
                        if (i + j) % 2 == 0:
                            z[i * CH:(i + 1) * CH, j * CW:(j + 1) * CW] = 0
                zarr.open_group(root, mode="r+").attrs["v"] = 0
                z.attrs["v"] = 0
                before = {"chunks": chunk_versions(adir, grid), "attrs": {root: 0, adir: 0}}
                writer = subprocess.Popen([PYTHON, "-c", WRITER_B, str(H), str(W), str(CH),
                                           str(CW)], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
                rnd = random.Random(20240611)
                version, t0 = 0, time.monotonic()
                totals = {"ops": 0, "fsyncs": 0, "max_tmp": 0, "interrupted_fsyncs": 0,
                          "cut_replies": 0}
                try:
                    for it in range(KILLS):
                        with KillableMount(root, options=["rw"], label="loop") as m:
                            job = {"path": m.path("arr"), "root": m.mnt, "version": version,
                                   "seed": rnd.randrange(1 << 30), "max_seconds": 10}
                            writer.stdin.write(json.dumps(job) + "\n")
                            writer.stdin.flush()
                            line = wait_line(writer, 20, "writer start")
                            if line != "started":
                                self.fail("iteration %d: writer: %s" % (it, line))
                            time.sleep(rnd.uniform(0, 0.150))
                            m.kill9()
                            res = json.loads(wait_line(writer, 20, "writer log"))
                            daemon_log = m.stderr_text()
                        # The kill ends the writer's call with ENOTCONN (sent after the abort)
                        # or ECONNABORTED (in flight). EIO too when the daemon died while the
                        # kernel copied its reply from the daemon's memory (fs/fuse/dev.c,
                        # fuse_dev_do_write: a reply that cannot be copied fails its request
                        # with -EIO): accepted only when the daemon logged no error, as it logs
                        # every error it answers before answering.
                        answered_error = [ln for ln in daemon_log.splitlines()
                                          if ln.startswith("zarrfs: error:")]
                        cut = res["error"] == "EIO" and not answered_error
                        totals["cut_replies"] += cut
                        self.assertTrue(res["error"] in ("ENOTCONN", "ECONNABORTED") or cut,
                                        "iteration %d: the writer's %s stopped with %r; the "
                                        "daemon said: %s" % (it, res["call"], res["error"],
                                                             daemon_log[-3000:]))
                        version = res["version"]
                        totals["ops"] += len(res["ops"])
                        totals["fsyncs"] += sum(1 for _n, ok in res["fsyncs"] if ok)
                        totals["interrupted_fsyncs"] += sum(1 for _n, ok in res["fsyncs"]
                                                            if not ok)
                        allowed, allowed_attrs = allowed_after_kill(before, res, grid)
                        try:
                            got = chunk_versions(adir, grid)
                        except AssertionError as e:
                            self.fail("iteration %d (%d ops, kill after %s): %s"
                                      % (it, len(res["ops"]), res["ops"][-1:], e))
                        bad = {c: (v, sorted(allowed[c])) for c, v in got.items()
                               if v not in allowed[c]}
                        self.assertFalse(bad, "iteration %d: chunks holding versions not allowed "
                                         "(got, allowed): %s" % (it, bad))
                        got_attrs = {}
                        for where in (root, adir):
                            with open(os.path.join(where, ".zattrs")) as f:
                                got_attrs[where] = json.load(f)["v"]
                            self.assertIn(got_attrs[where], allowed_attrs[where],
                                          "iteration %d: %s/.zattrs" % (it, where))
                        before = {"chunks": got, "attrs": got_attrs}
                        # temporary files: zarr-python ignores them
                        tmps = tmp_files(adir) + tmp_files(root)
                        totals["max_tmp"] = max(totals["max_tmp"], len(tmps))
                        if tmps:
                            za = zarr.open_array(adir, mode="r")
                            nreal = sum(1 for k in os.listdir(adir) if not k.startswith("."))
                            self.assertEqual(za.nchunks_initialized, nreal)
                            self.assertEqual(list(zarr.open_group(root, mode="r").keys()), ["arr"])
                            want = np.full((H, W), FILL, "<f4")
                            for (i, j), cv in got.items():
                                want[i * CH:(i + 1) * CH, j * CW:(j + 1) * CW] = cv
                            np.testing.assert_array_equal(za[...], want)
                    log("  %s: %d kills in %.1f s: %d ops, %d completed fsyncs, %d interrupted "
                        "(%d with EIO: a reply cut by the kill); at most %d temporary files left"
                        % (codec, KILLS, time.monotonic() - t0, totals["ops"], totals["fsyncs"],
                           totals["interrupted_fsyncs"], totals["cut_replies"],
                           totals["max_tmp"]))
                finally:
                    writer.stdin.close()
                    try:
                        writer.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        writer.kill()
                        writer.wait()
                    writer.stdout.close()
                    writer.stderr.close()
                # a new mount: no temporary file shows, the data is what zarr-python reads
                left = tmp_files(adir) + tmp_files(root)
                with zfmount.Mount(root, label="after-loop") as m:
                    self.assertEqual(sorted(os.listdir(m.mnt)), ["arr"])
                    for name in left:
                        where = m.mnt if os.path.exists(os.path.join(root, name)) else None
                        if where:
                            self.assertErrno(errno.ENOENT, os.stat, os.path.join(where, name))
                    got = zfmount.read_all(m.path("arr"))
                self.assertEqual(got, read_with_zarr(adir).tobytes())
                log("  %s: %d temporary files remain; a new mount lists only 'arr' and reads "
                    "what zarr-python reads" % (codec, len(left)))


# --------------------------------------------------------------------------------------------
# concurrency

WRITER_C = r'''
import json, os, random, sys
import numpy as np
path, wid, lo, hi, nwrites, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rnd = random.Random(wid * 7919)
model = np.fromfile(out, dtype="<f4")          # initial content of [lo, hi)
fd = os.open(path, os.O_RDWR)
print("ready", flush=True)
sys.stdin.readline()                            # start together
for seq in range(1, nwrites + 1):
    n = rnd.choice([1, 7, 100, 1000, 5000, 20000, 40000])
    n = min(n, hi - lo)
    s = rnd.randrange(lo, hi - n + 1)
    buf = np.full(n, (wid + 1) * 100000 + seq, "<f4")
    k = os.pwrite(fd, buf.tobytes(), s * 4)
    assert k == n * 4, (k, n)
    model[s - lo:s - lo + n] = buf
    if seq % 25 == 0:
        os.fsync(fd)
os.close(fd)
model.tofile(out)
print("done", flush=True)
'''

READER_C = r'''
import json, os, random, sys, time
import numpy as np
path, stop, nelem, init = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
bounds = json.loads(sys.argv[5])
owner = np.zeros(nelem, dtype=np.int64)
for w in range(len(bounds) - 1):
    owner[bounds[w]:bounds[w + 1]] = w + 1
rnd = random.Random(5)
fd = os.open(path, os.O_RDONLY)
print("ready", flush=True)
reads, bad, examples = 0, 0, []
while not os.path.exists(stop):
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    n = rnd.choice([64, 1000, 16384, 65536, nelem])
    s = rnd.randrange(0, nelem - n + 1)
    raw = os.pread(fd, n * 4, s * 4)
    if len(raw) % 4:
        bad += 1; examples.append("short read %d" % len(raw)); continue
    v = np.frombuffer(raw, dtype="<f4")
    o = owner[s:s + len(v)]
    ok = (v == init) | ((v.astype(np.int64) // 100000 == o) & (v % 100000 >= 1))
    reads += 1
    if not ok.all():
        bad += 1
        i = int(np.argmin(ok))
        if len(examples) < 5:
            examples.append("element %d: %r (owner %d)" % (s + i, float(v[i]), int(o[i])))
print(json.dumps({"reads": reads, "bad": bad, "examples": examples}), flush=True)
'''


class Concurrency(zfmount.TestCase):

    test_timeout = 240

    def test_01_disjoint_writers_and_a_reader(self):
        """8 writer processes pwrite (and now and then fsync) random spans of 8 disjoint,
        chunk-unaligned regions of one 512 x 512 array (chunks 32 x 32: regions share chunks)
        while a reader process preads at random and checks that each element is its initial
        value or one its region's writer wrote (never the fill value, never another writer's).
        The mount and then zarr-python after the unmount read exactly the writers' models.
        Once with the default cache, once with a 256 KiB cache (writeback under pressure and
        eviction while writing)."""
        H = W = 512
        nelem, nw = H * W, 8
        rnd = random.Random(3)
        # boundaries: multiples of nothing in particular (not of rows, not of chunk columns)
        bounds = [0] + sorted(rnd.sample(range(1000, nelem - 1000), nw - 1)) + [nelem]
        for codec in SELECTED:
            for cache in (None, "256K"):
                with self.subTest(codec=codec, cache=cache):
                    self._run(codec, cache, H, W, bounds)

    def _run(self, codec, cache, H, W, bounds):
        name = "conc-%s-%s" % (codec, cache or "default")
        root = make_group_with_array(name, (H, W), (32, 32), codec, init=np.float32(0.25))
        init = np.full(H * W, 0.25, "<f4")
        opts = ["rw"] + (["cache_size=" + cache] if cache else [])
        stopfile = os.path.join(WORK, name + ".stop")
        procs = []
        t0 = time.monotonic()
        with zfmount.Mount(root, options=opts, label=name) as m:
            try:
                writers = []
                for w in range(len(bounds) - 1):
                    out = os.path.join(WORK, "%s.w%d" % (name, w))
                    init[bounds[w]:bounds[w + 1]].tofile(out)
                    p = subprocess.Popen([PYTHON, "-c", WRITER_C, m.path("arr"), str(w),
                                          str(bounds[w]), str(bounds[w + 1]), "150", out],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
                    procs.append(p)
                    writers.append((p, out))
                reader = subprocess.Popen([PYTHON, "-c", READER_C, m.path("arr"), stopfile,
                                           str(H * W), "0.25", json.dumps(bounds)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
                procs.append(reader)
                for p in procs:
                    self.assertEqual(wait_line(p, 60, "start"), "ready")
                for p, _o in writers:
                    p.stdin.write("go\n")
                    p.stdin.flush()
                for p, _o in writers:
                    self.assertEqual(wait_line(p, 150, "writer"), "done")
                with open(stopfile, "w"):
                    pass
                rres = json.loads(wait_line(reader, 60, "reader"))
                model = np.concatenate([np.fromfile(o, dtype="<f4") for _p, o in writers])
                zfmount.drop_page_cache(m.path("arr"))
                via_mount = np.frombuffer(zfmount.read_all(m.path("arr")), dtype="<f4")
                st = stats(m)
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                    p.wait()
                    for f in (p.stdin, p.stdout, p.stderr):
                        if f:
                            f.close()
        self.assertEqual(rres["bad"], 0, "the reader saw values never written there: %s"
                         % rres["examples"])
        self.assertGreater(rres["reads"], 0)
        diff = np.flatnonzero(via_mount != model)
        self.assertEqual(len(diff), 0, "read through the mount: %d elements differ from the "
                         "model, first at %s" % (len(diff), diff[:5].tolist()))
        got = read_with_zarr(os.path.join(root, "arr")).reshape(-1)
        diff = np.flatnonzero(got != model)
        self.assertEqual(len(diff), 0, "zarr-python after the unmount: %d elements differ from "
                         "the model (lost updates), first at %s: got %s, want %s"
                         % (len(diff), diff[:5].tolist(), got[diff[:5]].tolist(),
                            model[diff[:5]].tolist()))
        log("  %s: 8 writers x 150 writes + %d concurrent reads in %.1f s; %d writebacks, "
            "%d evictions; no lost update" % (name, rres["reads"], time.monotonic() - t0,
                                              st["cache"]["writebacks"],
                                              st["cache"]["evictions"]))


    def test_02_direct_reads_see_old_or_new_data(self):
        """A writer process rewrites whole chunk rows of a 256 x 256 array (chunks 32 x 32, all
        stored with 5; one pwrite per chunk row, values 10, 11, 12) under a 64 KiB cache (the
        chunks are evicted between writes) while two O_DIRECT readers pread the whole array:
        every element read is 5, 10, 11 or 12, never the fill value (-1), which nobody wrote."""
        for codec in SELECTED:
            with self.subTest(codec=codec):
                root = make_group_with_array("direct-" + codec, (256, 256), (32, 32), codec,
                                             init=np.float32(5))
                with zfmount.Mount(root, options=["rw", "cache_size=64K"], label="direct") as m:
                    procs = []
                    try:
                        procs.append(subprocess.Popen(
                            [PYTHON, "-c", WRITER_ROWS, m.path("arr"), "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                        for _ in range(2):
                            procs.append(subprocess.Popen(
                                [PYTHON, "-c", READER_DIRECT, m.path("arr"), "4"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                        out = [json.loads(wait_line(p, 60, "direct")) for p in procs]
                    finally:
                        for p in procs:
                            if p.poll() is None:
                                p.kill()
                            p.wait()
                            p.stdout.close()
                            p.stderr.close()
                writes, readers = out[0]["writes"], out[1:]
                bad = [r for r in readers if r["bad"]]
                self.assertFalse(bad, "O_DIRECT reads during whole-chunk writes saw values "
                                 "never written (%d writes; per reader: reads, bad reads, "
                                 "[(first element, values, how many)]): %s"
                                 % (writes, [(r["reads"], r["bad"], r["examples"])
                                             for r in readers]))
                log("  %s: %d chunk-row writes, %s O_DIRECT reads: old or new data only"
                    % (codec, writes, [r["reads"] for r in readers]))


WRITER_ROWS = r'''
import json, os, sys, time
import numpy as np
fd = os.open(sys.argv[1], os.O_RDWR)
t, n = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < t:
    os.pwrite(fd, np.full((32, 256), 10 + n % 3, "<f4").tobytes(), (n % 8) * 32 * 256 * 4)
    n += 1
    if n % 50 == 0:
        os.fsync(fd)
os.close(fd)
print(json.dumps({"writes": n}), flush=True)
'''

READER_DIRECT = r'''
import json, mmap, os, sys, time
import numpy as np
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 256 * 256 * 4)          # page-aligned, as O_DIRECT wants
t, n, bad, ex = time.monotonic() + float(sys.argv[2]), 0, 0, []
while time.monotonic() < t:
    k = os.preadv(fd, [buf], 0)
    v = np.frombuffer(buf, "<f4")[:k // 4].copy()
    n += 1
    wrong = ~np.isin(v, [5, 10, 11, 12])
    if k != len(buf) or wrong.any():
        bad += 1
        if len(ex) < 3:
            ex.append((int(np.argmax(wrong)), sorted(set(v[wrong].tolist()))[:3],
                       int(wrong.sum())))
os.close(fd)
print(json.dumps({"reads": n, "bad": bad, "examples": ex}), flush=True)
'''


# --------------------------------------------------------------------------------------------
# reads caused by writes

class FullChunkWrites(zfmount.TestCase):

    def test_01_whole_chunks_are_not_read_partial_ones_are(self):
        """Into an array whose 64 chunks all exist: pwrites covering whole chunk rows (two rows
        at once, one row, the short edge row) read no chunk, neither while writing nor at the
        fsync that stores them; a write of one element reads its chunk; a chunk-row write one
        element off the grid reads exactly its two partial chunks."""
        H = W = 60
        CH = CW = 8
        for codec in SELECTED:
            with self.subTest(codec=codec):
                root = make_group_with_array("full-" + codec, (H, W), (CH, CW), codec,
                                             init=np.arange(H * W, dtype="<f4").reshape(H, W))
                model = np.arange(H * W, dtype="<f4")
                row = CH * W                                  # elements in one chunk row
                with zfmount.Mount(root, options=["rw"], label="full") as m:
                    fd = os.open(m.path("arr"), os.O_RDWR)
                    try:
                        r0, w0 = store_reads(m)
                        for first, nrows in ((0, 2), (3, 1), (7, 1)):   # row 7: 4 array rows
                            s, e = first * row, min((first + nrows) * row, H * W)
                            buf = np.full(e - s, 1000 + first, "<f4")
                            self.assertEqual(os.pwrite(fd, buf.tobytes(), s * 4), buf.nbytes)
                            model[s:e] = buf
                        r1, w1 = store_reads(m)
                        self.assertEqual(r1 - r0, 0, "whole-chunk writes read %d times"
                                         % (r1 - r0))
                        os.fsync(fd)
                        r2, w2 = store_reads(m)
                        self.assertEqual(r2 - r0, 0, "the fsync of whole chunks read %d times"
                                         % (r2 - r0))
                        # each stored once: behind the writer (the first two writes are
                        # sequential) or by the fsync
                        self.assertEqual(w2 - w0, 4 * 8, "chunks stored by the time the fsync "
                                         "returned (%d before it)" % (w1 - w0))
                        # one element of chunk (4, 2): that chunk is read
                        k = (4 * CH + 3) * W + 2 * CW + 5
                        os.pwrite(fd, np.float32(-5).tobytes(), k * 4)
                        model[k] = -5
                        r3, _ = store_reads(m)
                        self.assertEqual(r3 - r2, 1, "a one-element write read %d chunks"
                                         % (r3 - r2))
                        # chunk row 5, shifted by one element: chunks (5, 0) and (6, 0) partial
                        s = 5 * row + 1
                        buf = np.full(row, 2000, "<f4")
                        os.pwrite(fd, buf.tobytes(), s * 4)
                        model[s:s + row] = buf
                        r4, _ = store_reads(m)
                        self.assertEqual(r4 - r3, 2, "an unaligned chunk-row write read %d "
                                         "chunks, want 2" % (r4 - r3))
                        os.fsync(fd)
                        r5, _ = store_reads(m)
                        self.assertEqual(r5 - r4, 0, "the fsync read")
                    finally:
                        os.close(fd)
                got = read_with_zarr(os.path.join(root, "arr")).reshape(-1)
                np.testing.assert_array_equal(got, model)
                log("  %s: whole chunk rows: 0 reads; 1 element: 1 read; unaligned row: 2 reads"
                    % codec)


class WriteBehind(zfmount.TestCase):
    """A sequential writer's completed chunks are stored behind it, before any fsync or close;
    other writes wait for the fsync (or the timer, two seconds after the last write)."""

    def wait_stored(self, m, want, seconds=1.5):
        """Store writes (from .zarrfs-stats) once they reach want, or what they are after
        `seconds` (under the timer's two seconds idle: the timer stores nothing meanwhile)."""
        deadline = time.monotonic() + seconds
        while True:
            w = store_reads(m)[1]
            if w >= want or time.monotonic() > deadline:
                return w
            time.sleep(0.02)

    def test_01_sequential_chunks_stored_behind_the_writer(self):
        """Array (64, 128) in chunks of (8, 32), stored version 0 everywhere: pwrites of whole
        chunk rows (4 KiB: a page each, so that the kernel sends each as one request in the
        default mode) in order, one at a time, no fsync. After each, the four chunks it completed
        are stored (store writes, .zarrfs-stats "write_behinds") and zarr-python reads them from
        the store alone, equal to what was written; no chunk is read. Then one element far
        back (not sequential): not stored within a second; the fsync stores it, one write."""
        H, W, CH, CW = 64, 128, 8, 32
        for codec in SELECTED:
            with self.subTest(codec=codec):
                root = make_group_with_array("behind-" + codec, (H, W), (CH, CW), codec,
                                             init=0)
                adir = os.path.join(root, "arr")
                model = np.zeros((H, W), "<f4")
                with zfmount.Mount(root, options=["rw"], label="behind") as m:
                    fd = os.open(m.path("arr"), os.O_RDWR)
                    try:
                        w0 = store_reads(m)[1]
                        s0 = stats(m)
                        b0, d0 = s0["cache"]["write_behinds"], s0["decode"]["chunks"]
                        for i in range(H // CH):
                            rows = np.full((CH, W), 10 + i, "<f4")
                            os.pwrite(fd, rows.tobytes(), i * CH * W * 4)
                            model[i * CH:(i + 1) * CH] = rows
                            want = w0 + (i + 1) * (W // CW)
                            got = self.wait_stored(m, want)
                            self.assertEqual(got, want, "after chunk row %d: %d chunks stored, "
                                             "want %d" % (i, got - w0, want - w0))
                            on_disk = zarr.open_array(adir, mode="r")[:(i + 1) * CH]
                            np.testing.assert_array_equal(on_disk, model[:(i + 1) * CH])
                        st = stats(m)
                        self.assertEqual(st["cache"]["write_behinds"] - b0, (H // CH) * (W // CW))
                        self.assertEqual(st["decode"]["chunks"], d0, "whole chunk rows read chunks")
                        self.assertEqual(st["cache"]["dirty_entries"], 0)
                        # one element of chunk (0, 1), far behind the writer: its chunk is read
                        # and stays dirty until the fsync
                        w1 = store_reads(m)[1]
                        k = 3 * W + 20
                        os.pwrite(fd, np.float32(-7).tobytes(), k * 4)
                        model.reshape(-1)[k] = -7
                        time.sleep(1.0)
                        self.assertEqual(store_reads(m)[1], w1, "a write that is not "
                                         "sequential was stored before the fsync")
                        self.assertEqual(stats(m)["cache"]["dirty_entries"], 1)
                        os.fsync(fd)
                        self.assertEqual(store_reads(m)[1], w1 + 1)
                    finally:
                        os.close(fd)
                np.testing.assert_array_equal(read_with_zarr(adir), model)
                log("  %s: %d chunks stored behind the writer, the stray write by the fsync"
                    % (codec, (H // CH) * (W // CW)))

    def test_02_stored_behind_is_the_completed_state(self):
        """A chunk completed by one write and written again (in part) before its write-behind
        ran is stored as the write left it or not at all, never with some of the later partial
        writes: 200 rounds of a whole chunk row (every chunk completed: stored behind the
        writer), at once each row segment of one of its chunks rewritten one pwrite at a time,
        then every stored chunk holding one version only (zarr-python's decoder, the mount still
        up), then an fsync; at the end every chunk holds its last version."""
        H, W, CH, CW = 8, 64, 8, 8
        for codec in SELECTED:
            with self.subTest(codec=codec):
                root = make_group_with_array("behind2-" + codec, (H, W), (CH, CW), codec)
                adir = os.path.join(root, "arr")
                with zfmount.Mount(root, options=["rw"], label="behind2") as m:
                    fd = os.open(m.path("arr"), os.O_RDWR)
                    try:
                        v = 0
                        for rnd in range(200):
                            v += 1
                            os.pwrite(fd, np.full(H * W, v, "<f4").tobytes(), 0)
                            v += 1
                            seg = np.full(CW, v, "<f4").tobytes()
                            j = rnd % (W // CW)
                            for r in range(CH):  # chunk (0, j), row by row
                                os.pwrite(fd, seg, (r * W + j * CW) * 4)
                            got = chunk_versions(adir, (1, W // CW))  # asserts: no mix
                            self.assertTrue(all(x <= v for x in got.values()))
                            os.fsync(fd)
                        got = chunk_versions(adir, (1, W // CW))
                        want = {(0, i): v - 1 for i in range(W // CW)}
                        want[(0, j)] = v
                        self.assertEqual(got, want)
                        log("  %s: %d write-behinds, no chunk mixed"
                            % (codec, stats(m)["cache"]["write_behinds"]))
                    finally:
                        os.close(fd)


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
