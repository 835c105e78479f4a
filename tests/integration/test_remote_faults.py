#!/usr/bin/python3
"""HTTP stores under failure: zarrfs against remote_servers.FaultServer, an http.server on
127.0.0.1 that serves a directory (GET/HEAD, byte ranges, index pages) and injects, per key or per
request number: 500, 503, 429, a connection reset mid-body, a truncated body (Content-Length
larger than what is sent, then close), a stall past the client's timeout, a 200 that ignores
Range, or a healthy answer.

Mounted with small -o retries=N,timeout=SECONDS. The rule everywhere: a read returns the right
bytes (after retries) or fails with EIO, never wrong bytes. Expected bytes come from zarr-python
2.13 (v2) and from the numpy arrays the shards were built from.

* Transient: each fault kind on its own chunk, fewer times than the retries: the whole array
  reads right; the server saw the faulted requests retried; .zarrfs-stats counts the retries.
* Persistent: a chunk that always fails gives EIO (after exactly retries + 1 attempts per store
  request), its neighbours keep reading, and once the server heals the same read gives the right
  bytes (failures are not cached); stalls fail within the timeout budget.
* Sharded: faults on the shard index suffix request and on the inner-chunk range requests.
* Random: a seeded random fault on 40 % of the chunk requests, many reads through a tiny chunk
  cache: each read right or EIO; after healing every read right.
* Mount: root metadata failing twice then healthy mounts; failing for ever is refused with
  exit 1 and a message naming the HTTP status.
"""

import errno
import os
import random
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import remote_fixtures as rf  # noqa: E402

import numpy as np  # noqa: E402

WORK = None
SRV = None
WANT = None          # sharded arrays (numpy)
EXPECT = {}          # v2 array path -> expected bytes (zarr-python)
FS = None
TIMEOUT = 1.5        # -o timeout: a stall lasts STALL seconds, longer than this
STALL = 4.0


def setUpModule():
    global WORK, SRV, WANT, FS
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-faults-")
    SRV = os.path.join(WORK, "srv")
    os.makedirs(SRV)
    rf.build_v2(os.path.join(SRV, "v2.zarr"))
    add_big(os.path.join(SRV, "v2.zarr"))
    WANT = rf.build_sharded(os.path.join(SRV, "sharded.zarr"))
    for rel in rf.v2_arrays(os.path.join(SRV, "v2.zarr")):
        EXPECT[rel] = zfmount.expected_bytes(
            zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel)))
    FS = rs.FaultServer(SRV, stall_seconds=STALL).start()
    log("fault server at %s" % FS.url())


def tearDownModule():
    if FS:
        FS.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def add_big(root):
    """big_i4: int32 (256, 256), chunks (64, 64): a 4 KiB page of the flat file lies within one
    band of chunks, so a page read in band 0 touches no chunk of band 2."""
    import zarr
    import numcodecs
    store = zarr.DirectoryStore(root)
    g = zarr.open_group(store=store, mode="a")
    a = g.create_dataset("big_i4", shape=(256, 256), chunks=(64, 64), dtype="<i4",
                         compressor=numcodecs.Zlib(level=1), fill_value=-3)
    a[...] = np.arange(256 * 256, dtype="<i4").reshape(256, 256) * 3 - 77
    zarr.consolidate_metadata(store)


def chunk_keys(rel):
    """Chunk keys (relative to v2.zarr/rel) present on disk for the v2 array rel."""
    d = os.path.join(SRV, "v2.zarr", rel)
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def chunk_span(rel, key):
    """(offset, length) of one whole C-order row band of chunk `key` of a 2-d v2 array: the flat
    bytes of the chunk's first row (touches that chunk only)."""
    z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel))
    idx = [int(x) for x in key.split(".")]
    itemsize = z.dtype.itemsize
    row = idx[0] * z.chunks[0]
    col0 = idx[1] * z.chunks[1]
    col1 = min(col0 + z.chunks[1], z.shape[1])
    off = (row * z.shape[1] + col0) * itemsize
    return off, (col1 - col0) * itemsize


def stats(m):
    return rf.read_json(m.path(".zarrfs-stats"))["store"]


def mount(options, label, store="v2.zarr"):
    return zfmount.Mount(FS.url(store), options=["timeout=%g" % TIMEOUT, "max_connections=4"] +
                         options, label="faults-" + label)


def read_range(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        zfmount.drop_page_cache(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return zfmount.pread_full(fd, n, off)
    finally:
        os.close(fd)


class Transient(zfmount.TestCase):

    def tearDown(self):
        FS.heal()
        super().tearDown()

    def test_01_each_fault_retried(self):
        """zlib_f4 has 3 x 4 chunks (2 missing); one fault kind per present chunk, injected twice
        (stall once), retries=3: the whole file reads right. (norange is for range requests:
        test_02.)"""
        rel = "zlib_f4"
        keys = chunk_keys(rel)
        kinds = ["500", "503", "429", "reset", "truncate", "stall"]
        self.assertGreaterEqual(len(keys), len(kinds))
        plan = {}
        for k, kind in zip(keys, kinds):
            times = 1 if kind == "stall" else 2
            plan[k] = (kind, times)
            FS.on_key("v2.zarr/%s/%s" % (rel, k), [kind] * times)
        with mount(["retries=3", "readahead=0"], "transient") as m:
            s0 = stats(m)
            mark = FS.mark()
            t0 = time.monotonic()
            got = zfmount.read_all(m.path(rel))
            dt = time.monotonic() - t0
            self.assertBytesEqual(got, EXPECT[rel], rel)
            s1 = stats(m)
            injected = 0
            for k, (kind, times) in plan.items():
                es = FS.entries("v2.zarr/%s/%s" % (rel, k), since=mark)
                faults = [e.fault for e in es]
                log("  %s/%s: %s" % (rel, k, faults))
                self.assertEqual(faults[:times], [kind] * times, "chunk %s" % k)
                self.assertGreaterEqual(len(es), times + 1, "chunk %s: not retried" % k)
                self.assertEqual(es[times].fault, "ok")
                injected += times
            retries = s1["retries"] - s0["retries"]
            log("  whole %s right in %.1f s; %d faults injected; .zarrfs-stats: +%d retries, "
                "+%d errors" % (rel, dt, injected, retries, s1["errors"] - s0["errors"]))
            self.assertGreaterEqual(retries, injected)
            self.assertLess(dt, 60)

    def test_02_transient_on_sharded_index_and_inner_chunks(self):
        """Faults on the index suffix request and the inner-chunk range request of a shard."""
        name = "end_le_crc"
        FS.on_key("sharded.zarr/%s/c/0/0" % name, ["503", "truncate", "reset"])
        FS.on_key("sharded.zarr/%s/c/1/1" % name, ["norange", "500", "norange"])
        with mount(["retries=3", "readahead=0"], "sharded", "sharded.zarr") as m:
            got = zfmount.read_all(m.path(name))
            self.assertBytesEqual(got, np.ascontiguousarray(WANT[name]).tobytes(), name)
            s = stats(m)
            self.assertGreaterEqual(s["retries"], 4)
        es = FS.entries("sharded.zarr/%s/c/*" % name)
        self.assertTrue(any(e.range.startswith("bytes=-") and e.fault != "ok" for e in es),
                        "no fault hit an index request: %r" % (es,))
        log("  %s right; %d shard requests, faults %s" % (
            name, len(es), [e.fault for e in es if e.fault != "ok"]))


class Persistent(zfmount.TestCase):

    def tearDown(self):
        FS.heal()
        super().tearDown()

    def check(self, kind, retries, budget):
        rel = "big_i4"
        bad, good = "2.1", "0.2"
        pattern = "v2.zarr/%s/%s" % (rel, bad)
        FS.on_key(pattern, [], then=kind)
        off, n = chunk_span(rel, bad)
        goff, gn = chunk_span(rel, good)
        with mount(["retries=%d" % retries, "readahead=0", "cache_size=1M"], kind) as m:
            p = m.path(rel)
            s0 = stats(m)
            mark = FS.mark()
            t0 = time.monotonic()
            self.assertErrno(errno.EIO, read_range, p, off, n)
            dt = time.monotonic() - t0
            es = FS.entries(pattern, since=mark)
            log("  %s: EIO after %.1f s and %d requests %s" % (kind, dt, len(es),
                                                               [e.fault for e in es]))
            self.assertGreaterEqual(len(es), retries + 1, "fewer attempts than 1 + retries")
            self.assertEqual(len(es) % (retries + 1), 0,
                             "attempts are not a multiple of 1 + retries: %d" % len(es))
            self.assertLessEqual(len(es), 3 * (retries + 1), "too many attempts")
            self.assertLess(dt, budget, "the failing read took too long")
            # the neighbours keep working; the mount is alive
            self.assertBytesEqual(read_range(p, goff, gn), EXPECT[rel][goff:goff + gn], "good chunk")
            # failing again: not cached as data
            self.assertErrno(errno.EIO, read_range, p, off, n)
            s1 = stats(m)
            self.assertGreaterEqual(s1["retries"] - s0["retries"], 2 * retries)
            self.assertGreaterEqual(s1["errors"] - s0["errors"], 2)
            log("  .zarrfs-stats: +%d retries, +%d errors" % (s1["retries"] - s0["retries"],
                                                              s1["errors"] - s0["errors"]))
            # the server heals: the same read gives the right bytes
            FS.heal()
            self.assertBytesEqual(read_range(p, off, n), EXPECT[rel][off:off + n], "after healing")
            self.assertBytesEqual(zfmount.read_all(p), EXPECT[rel], "whole after healing")
            self.assertTrue(m.alive())

    def test_01_503_for_ever(self):
        self.check("503", retries=2, budget=30)

    def test_02_reset_for_ever(self):
        self.check("reset", retries=2, budget=30)

    def test_03_truncated_for_ever(self):
        self.check("truncate", retries=1, budget=30)

    def test_04_stall_for_ever(self):
        # (1 + retries) timeouts plus backoff, not more
        self.check("stall", retries=1, budget=2 * TIMEOUT + 12)


class Random(zfmount.TestCase):

    def tearDown(self):
        FS.heal()
        super().tearDown()

    def test_01_right_bytes_or_eio(self):
        rng = random.Random(20240607)
        FS.random_faults(random.Random(99), 0.4, ["500", "503", "reset", "truncate", "norange",
                                                   "429"], pattern="v2.zarr/*/[0-9]*")
        arrays = [a for a in EXPECT if len(EXPECT[a]) > 0]
        ok = eio = 0
        with mount(["retries=1", "readahead=0", "cache_size=16K"], "random") as m:
            mark = FS.mark()
            t_end = time.monotonic() + 40
            for i in range(120):
                if time.monotonic() > t_end:
                    break
                rel = rng.choice(arrays)
                want = EXPECT[rel]
                off = rng.randrange(0, len(want))
                n = rng.choice([1, 100, 4096, len(want)])
                try:
                    got = read_range(m.path(rel), off, n)
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO, "%s: %s" % (rel, e))
                    eio += 1
                    continue
                self.assertBytesEqual(got, want[off:off + n], "%s pread(%d, %d) #%d" % (rel, n, off, i))
                ok += 1
            faults = [e for e in FS.entries(since=mark) if e.fault != "ok"]
            s = stats(m)
            log("  %d reads right, %d EIO; %d faults injected; .zarrfs-stats %r"
                % (ok, eio, len(faults), s))
            self.assertGreater(ok, 10)
            self.assertGreater(len(faults), 10)
            self.assertGreater(s["retries"], 0)
            FS.heal()
            for rel in arrays:
                self.assertBytesEqual(zfmount.read_all(m.path(rel)), EXPECT[rel],
                                      "%s after healing" % rel)
            self.assertTrue(m.alive())


class AtMount(zfmount.TestCase):

    def tearDown(self):
        FS.heal()
        super().tearDown()

    def test_01_root_metadata_retried(self):
        FS.on_key("v2.zarr/.z*", ["503", "reset"])
        with mount(["retries=3"], "mount-retried") as m:
            self.assertIn("zlib_f4", os.listdir(m.mnt))
            self.assertBytesEqual(zfmount.read_all(m.path("lz4_f8")), EXPECT["lz4_f8"], "lz4_f8")

    def test_02_root_failing_refused(self):
        FS.on_key("v2.zarr*", [], then="500")
        status, err, mounted = zfmount.expect_refusal(
            FS.url("v2.zarr"), ["-o", "retries=1,timeout=%g" % TIMEOUT], timeout=30)
        log("  root answering 500: status %s: %s" % (status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertIn("500", err)
        self.assertLessEqual(len(err.strip().splitlines()), 3, "not one clear message: %r" % err)


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
