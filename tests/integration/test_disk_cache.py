#!/usr/bin/python3
"""The disk cache (-o disk_cache=DIR): remote stores served by nginx (remote_servers.Nginx, its
access log counting the requests) and s3rver behind the SigV4 proxy, mounted with a cache
directory, compared with a local zarrfs mount of the same directory (and zarr-python for v2).

* Reuse: a v2 hierarchy without consolidated metadata (listings from autoindex pages) and the
  sharded v3 one (shard indexes by suffix range, inner chunks by range) read whole through a
  mount with a cache; a second mount of the same URL (long metadata_ttl) reads the same bytes
  with no request at all in nginx's access log.
* Bad entries: entry files corrupted (a flipped byte) or torn (truncated) in the cache
  directory: still the right bytes, bad_entries in .zarrfs-stats counts them, and nginx sees
  exactly one request for each.
* Changed object: a chunk rewritten on the server (new ETag); after metadata_ttl the next mount
  revalidates every entry with a HEAD and GETs only the changed chunk.
* kill -9 during fills (nginx slowed with limit_rate): the next mount reads the right bytes, no
  bad entry is found (no torn entry is ever visible), the killed daemon's temporary files go.
* Two mounts sharing one cache directory at once, with a bound small enough to evict all the
  time: right bytes in both, the count of the directory agrees with its files and the bound.
* S3 -o rw: written chunks (v2) and a rewritten shard (v3) replace their entries: a fresh mount
  with the cache reads the written bytes.

Run: ZARRFS=build/src/fuse/zarrfs /usr/bin/python3 tests/integration/test_disk_cache.py -v
"""

import json
import warnings
import os
import shutil
import struct
import sys
import tempfile
import threading
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
WANT = None
NGINX = None
REMOTE_OPTS = ["retries=2", "timeout=20"]
LONG_TTL = "metadata_ttl=3600"


def setUpModule():
    global WORK, SRV, WANT, NGINX
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-dc-")
    SRV = os.path.join(WORK, "srv")
    os.makedirs(SRV)
    v2 = rf.build_v2(os.path.join(SRV, "v2.zarr"))
    os.unlink(os.path.join(v2, ".zmetadata"))          # listings from the index pages
    WANT = rf.build_sharded(os.path.join(SRV, "sharded.zarr"))
    NGINX = rs.Nginx(SRV, autoindex=True).start()
    log("nginx at %s" % NGINX.url())


def tearDownModule():
    if NGINX:
        NGINX.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def cache_dir(name):
    return os.path.join(WORK, "caches", name)


def stats(m):
    """.zarrfs-stats in one read, closed a moment later: under ASan, a release right after the
    reply can free the snapshot while the replying thread's writev interceptor still checks
    it (src/fuse/ops.c op_read/op_release)."""
    fd = os.open(m.path(".zarrfs-stats"), os.O_RDONLY)
    try:
        data = os.read(fd, 1 << 20)
        time.sleep(0.05)
    finally:
        os.close(fd)
    return json.loads(data)


def entry_files(cache, names=None):
    """Entry files below the cache (v1/HH/HASH/NAME), optionally those whose NAME is in names or
    starts with one of them."""
    out = []
    for dirpath, _d, files in os.walk(os.path.join(cache, "v1")):
        for n in files:
            if names is None or any(n == x or (x.endswith("*") and n.startswith(x[:-1]))
                                    for x in names):
                out.append(os.path.join(dirpath, n))
    return sorted(out)


def entry_key(path):
    """The key an entry file is for, from its header."""
    with open(path, "rb") as f:
        h = f.read(96)
        ln, kn = struct.unpack_from("<II", h, 16)
        f.seek(96 + ln)
        return f.read(kn).decode()


def counted_state(cache):
    """The bytes the cache's state file counts."""
    with open(os.path.join(cache, "state"), "rb") as f:
        b = f.read(24)
    assert b[:8] == b"zarrfsDS", b
    return struct.unpack_from("<Q", b, 8)[0]


def blocks_on_disk(cache):
    return sum((os.path.getsize(p) + 4095) // 4096 * 4096 for p in entry_files(cache))


def compare(tc, local, remote, what, preads=5):
    n_ok, n_bytes, n_err = rf.compare_trees(tc, local, remote, what=what, preads=preads)
    log("  %s: %d files byte-exact (%d bytes), %d failing alike" % (what, n_ok, n_bytes, n_err))
    return n_ok


def mount_remote(url, cache, extra=(), label=None):
    return zfmount.Mount(url, options=REMOTE_OPTS + ["disk_cache=" + cache] + list(extra),
                         label=label or "dc")


class Reuse(zfmount.TestCase):

    def read_twice(self, name, cache):
        """Mount name twice with the cache; returns (access entries of each mount, stats)."""
        url = NGINX.url(name)
        logs, st = [], []
        with zfmount.Mount(os.path.join(SRV, name), label="local-" + name) as lm:
            for rnd in range(2):
                mark = NGINX.access_mark()
                with mount_remote(url, cache, [LONG_TTL], label="dc-%s-%d" % (name, rnd)) as m:
                    compare(self, lm.mnt, m.mnt, "%s mount %d" % (name, rnd + 1))
                    st.append(stats(m)["disk_cache"])
                logs.append(NGINX.access_entries(mark))
        return logs, st

    def test_01_v2_second_mount_sends_nothing(self):
        cache = cache_dir("reuse-v2")
        logs, st = self.read_twice("v2.zarr", cache)
        chunks = [e for e in logs[0] if e.method == "GET" and not e.path.endswith("/")
                  and "/." not in "/" + e.path]
        self.assertGreater(len(chunks), 30, "the first mount fetched chunks")
        self.assertGreater(st[0]["misses"], 30)
        self.assertGreater(st[0]["bytes_written"], 0)
        self.assertEqual(logs[1], [], "the second mount reached nginx")
        self.assertEqual(st[1]["misses"], 0)
        self.assertGreater(st[1]["hits"], 30)
        self.assertEqual(st[1]["bad_entries"], 0)
        self.assertEqual(oct(os.stat(cache).st_mode & 0o777), "0o700")
        # the local mount itself against zarr-python (the reference of the comparisons)
        with zfmount.Mount(os.path.join(SRV, "v2.zarr"), label="local-v2") as lm:
            for rel in ("zlib_f4", "blosc_i4_be", "grp/sub/deep/arr"):
                z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel))
                self.assertBytesEqual(zfmount.read_all(lm.path(rel)), zfmount.expected_bytes(z),
                                      rel)
        log("  first mount: %d requests (%d chunk GETs); second: none; %d disk hits"
            % (len(logs[0]), len(chunks), st[1]["hits"]))

    def test_02_sharded_second_mount_sends_nothing(self):
        cache = cache_dir("reuse-sharded")
        logs, st = self.read_twice("sharded.zarr", cache)
        ranged = [e for e in logs[0] if e.method == "GET" and e.range]
        self.assertTrue(any(e.range.startswith("bytes=-") for e in ranged), "no index suffix")
        self.assertGreater(len(ranged), 20, "inner chunks by range")
        self.assertFalse(any(e.method == "GET" and not e.range and "/c/" in e.path
                             for e in logs[0]), "a whole shard was fetched")
        self.assertEqual(logs[1], [], "the second mount reached nginx")
        self.assertEqual(st[1]["misses"], 0)
        # and the mounts agree with the arrays the shards were built from
        with mount_remote(NGINX.url("sharded.zarr"), cache, [LONG_TTL]) as m:
            for name, want in WANT.items():
                self.assertBytesEqual(zfmount.read_all(m.path(name)),
                                      np.ascontiguousarray(want).tobytes(), name)
        names = [os.path.basename(p) for p in entry_files(cache)]
        log("  first mount: %d ranged GETs; second: none; entries: %d suffix, %d range"
            % (len(ranged), sum(n.startswith("s") and n != "stat" for n in names),
               sum(n.startswith("r") for n in names)))

    def test_03_bad_entries_dropped_and_fetched_again(self):
        cache = cache_dir("reuse-v2")
        if not os.path.isdir(cache):
            self.read_twice("v2.zarr", cache)
        chunk_entries = [p for p in entry_files(cache, ["all"])
                         if not os.path.basename(entry_key(p)).startswith(".")]
        self.assertGreater(len(chunk_entries), 10)
        damaged = chunk_entries[::max(1, len(chunk_entries) // 6)][:6]
        keys = []
        for i, p in enumerate(damaged):
            keys.append(entry_key(p))
            size = os.path.getsize(p)
            with open(p, "r+b") as f:
                if i % 2 == 0:                  # a flipped bit in the payload
                    f.seek(size - 1)
                    c = f.read(1)
                    f.seek(size - 1)
                    f.write(bytes([c[0] ^ 0x40]))
                else:                           # torn: its tail missing
                    f.truncate(size - 1 if size < 200 else size // 2)
        mark = NGINX.access_mark()
        with zfmount.Mount(os.path.join(SRV, "v2.zarr"), label="local-v2") as lm:
            with mount_remote(NGINX.url("v2.zarr"), cache, [LONG_TTL], label="dc-bad") as m:
                compare(self, lm.mnt, m.mnt, "v2 with bad entries", preads=0)
                st = stats(m)["disk_cache"]
        got = sorted(e.path for e in NGINX.access_entries(mark))
        self.assertEqual(st["bad_entries"], len(damaged), st)
        self.assertEqual(got, sorted("v2.zarr/" + k for k in keys))
        log("  %d damaged entries: dropped, fetched again (%s)" % (len(damaged), ", ".join(keys)))


def write_v2(path, data, chunks, compressor=None):
    import zarr
    import numcodecs
    if os.path.exists(path):
        shutil.rmtree(path)
    z = zarr.open_array(path, mode="w", shape=data.shape, chunks=chunks, dtype=data.dtype,
                        compressor=compressor or numcodecs.Zlib(1), fill_value=0)
    z[...] = data
    return z


class Changes(zfmount.TestCase):

    def test_01_changed_object_fetched_after_ttl(self):
        path = os.path.join(SRV, "chg.zarr")
        data = np.arange(40 * 40, dtype="<i4").reshape(40, 40)
        write_v2(path, data, (10, 10))
        cache = cache_dir("changes")
        url = NGINX.url("chg.zarr")
        with mount_remote(url, cache, ["metadata_ttl=1"]) as m:
            self.assertBytesEqual(zfmount.read_all(m.path("chg")), data.tobytes(), "first read")
        import zarr
        z = zarr.open_array(path, mode="r+")
        z[10:20, 20:30] = -1                    # chunk 1.2 only
        data[10:20, 20:30] = -1
        t = time.time() + 30                    # a new mtime, whatever the clock: a new ETag
        os.utime(os.path.join(path, "1.2"), (t, t))
        time.sleep(1.2)                         # past the ttl of every entry
        mark = NGINX.access_mark()
        with mount_remote(url, cache, ["metadata_ttl=1"]) as m:
            self.assertBytesEqual(zfmount.read_all(m.path("chg")), data.tobytes(), "after change")
            st = stats(m)["disk_cache"]
        entries = NGINX.access_entries(mark)
        # absent keys (.zattrs here) and listings are kept for the ttl only, then asked again;
        # values are revalidated with a HEAD, and fetched again only when they changed
        gets = sorted(e.path for e in entries if e.method == "GET" and e.status == 200
                      and not e.path.endswith("/"))
        heads = [e for e in entries if e.method == "HEAD"]
        self.assertEqual(gets, ["chg.zarr/1.2"], "only the changed chunk is fetched again")
        self.assertGreaterEqual(st["revalidations"], 16)
        self.assertEqual(st["stale"], 1)
        log("  after the ttl: %d HEADs (revalidations %d), one GET of the changed chunk"
            % (len(heads), st["revalidations"]))

    def test_02_kill9_during_fills(self):
        """kill -9 while chunks are fetched and entries written: the next mount reads the right
        bytes and never finds a torn entry."""
        slow_root = os.path.join(WORK, "slow")
        path = os.path.join(slow_root, "big.zarr")
        rng = np.random.default_rng(3)
        data = rng.integers(0, 1 << 30, size=(256, 8192), dtype="<i4")   # 8 MiB
        write_v2(path, data, (16, 8192), compressor=None)               # 512 KiB chunks
        cache = cache_dir("kill")
        with rs.Nginx(slow_root, extra_http="limit_rate 1m;") as ng:
            url = ng.url("big.zarr")
            for delay in (0.4, 1.0):
                m = mount_remote(url, cache, [LONG_TTL, "max_connections=4"], label="dc-kill")
                m.check_exit = False
                m.start()
                reader = threading.Thread(target=rf.outcome,
                                          args=(zfmount.read_all, m.path("big")), daemon=True)
                reader.start()
                time.sleep(delay)
                m.kill_for_watchdog()           # SIGKILL, as the watchdog does
                reader.join(10)
                m.stop()
                tmp = os.listdir(os.path.join(cache, "tmp"))
                log("  killed after %.1f s: %d entries, %d temporary files left"
                    % (delay, len(entry_files(cache, ["all"])), len(tmp)))
            # a temporary file of a writer that died (no such pid) goes at the next open
            planted = os.path.join(cache, "tmp", "%d.1.abc" % (1 << 22 | 12345))
            with open(planted, "wb") as f:
                f.write(b"zarrfsDC half an entry")
            with mount_remote(url, cache, [LONG_TTL], label="dc-after-kill") as m:
                self.assertBytesEqual(zfmount.read_all(m.path("big")), data.tobytes(), "big")
                st = stats(m)["disk_cache"]
            self.assertEqual(st["bad_entries"], 0, st)
            self.assertGreater(st["hits"], 0, "entries filled before the kills are used")
            self.assertEqual(os.listdir(os.path.join(cache, "tmp")), [],
                             "temporary files of the killed daemons")
            log("  after the kills: %d hits, %d misses, no bad entry" % (st["hits"], st["misses"]))

    def test_03_two_mounts_share_a_directory(self):
        cache = cache_dir("shared")
        bound = 192 * 1024
        opts = [LONG_TTL, "disk_cache_size=%d" % bound]
        url = NGINX.url("v2.zarr")
        with zfmount.Mount(os.path.join(SRV, "v2.zarr"), label="local-v2") as lm:
            with mount_remote(url, cache, opts, label="dc-share-a") as a, \
                    mount_remote(url, cache, opts, label="dc-share-b") as b:
                errors = []

                def run(m, seed):
                    try:
                        rf.compare_trees(self, lm.mnt, m.mnt, what=m.label, preads=3, seed=seed)
                    except Exception as e:      # noqa: BLE001 - reported below
                        errors.append(e)
                threads = [threading.Thread(target=run, args=(m, i)) for i, m in
                           enumerate((a, b, a, b))]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                self.assertEqual(errors, [])
                sa, sb = stats(a)["disk_cache"], stats(b)["disk_cache"]
        self.assertGreater(sa["evictions"] + sb["evictions"], 0, "the bound was reached")
        self.assertLessEqual(counted_state(cache), bound)
        self.assertEqual(counted_state(cache), blocks_on_disk(cache))
        log("  two mounts: %d + %d hits, %d + %d evictions; %d bytes counted, as on disk"
            % (sa["hits"], sb["hits"], sa["evictions"], sb["evictions"], counted_state(cache)))


aws_env = rs.aws_env


class S3Writes(zfmount.TestCase):
    """-o rw on S3 with a cache: written chunks replace their entries."""

    BUCKET = "zarrfs"
    KEY, SECRET = "AKIAZARRFSDCTEST0001", "zarrfs/DiskCache+Secret=0123456789"

    def test_01_written_chunks_replace_entries(self):
        import zarr
        warnings.simplefilter("ignore", ResourceWarning)    # S3Client's pooled connections
        s3 = rs.S3rver([self.BUCKET]).start()
        proxy = rs.SigV4Proxy(s3.port, {self.KEY: self.SECRET}).start()
        try:
            src = os.path.join(WORK, "w.zarr")
            model = np.arange(30 * 20, dtype="<f4").reshape(30, 20)
            write_v2(src, model, (8, 8))
            c = s3.client()
            c.upload_tree(src, self.BUCKET, "w.zarr")
            c.upload_tree(os.path.join(SRV, "sharded.zarr"), self.BUCKET, "sharded.zarr")
            cache = cache_dir("s3")
            env = {"AWS_ACCESS_KEY_ID": self.KEY, "AWS_SECRET_ACCESS_KEY": self.SECRET}
            opts = [LONG_TTL, "endpoint=" + proxy.endpoint(), "region=us-east-1"]
            shard_want = np.array(WANT["end_le_crc"])
            with aws_env(**env):
                with mount_remote("s3://%s/w.zarr" % self.BUCKET, cache, opts + ["rw"],
                                  label="dc-s3-rw") as m, \
                        mount_remote("s3://%s/sharded.zarr" % self.BUCKET, cache, opts + ["rw"],
                                     label="dc-s3-rw-sh") as ms:
                    # everything read (and cached) first
                    self.assertBytesEqual(zfmount.read_all(m.path("w")), model.tobytes(), "w")
                    self.assertBytesEqual(zfmount.read_all(ms.path("end_le_crc")),
                                          shard_want.tobytes(), "end_le_crc")
                    model[3:20, 5:17] = -7
                    with open(m.path("w"), "r+b") as f:
                        for r in range(3, 20):
                            f.seek(4 * (r * 20 + 5))
                            f.write(model[r, 5:17].tobytes())
                        os.fsync(f.fileno())
                    shard_want[0:5, 0:15] = 12345   # inner chunks of shard (0, 0)
                    with open(ms.path("end_le_crc"), "r+b") as f:
                        for r in range(0, 5):
                            f.seek(4 * (r * 30))
                            f.write(shard_want[r, 0:15].astype("<i4").tobytes())
                        os.fsync(f.fileno())
                mark = len(proxy.records)
                with mount_remote("s3://%s/w.zarr" % self.BUCKET, cache, opts,
                                  label="dc-s3-fresh") as m, \
                        mount_remote("s3://%s/sharded.zarr" % self.BUCKET, cache, opts,
                                     label="dc-s3-fresh-sh") as ms:
                    self.assertBytesEqual(zfmount.read_all(m.path("w")), model.tobytes(),
                                          "w read back through the cache")
                    self.assertBytesEqual(zfmount.read_all(ms.path("end_le_crc")),
                                          shard_want.tobytes(), "end_le_crc read back")
                    st = stats(m)["disk_cache"]
                fetched = [r.path for r in proxy.records[mark:] if r.method == "GET"]
            # the server has the writes too (zarr-python on the downloaded objects)
            out = os.path.join(WORK, "w-back.zarr")
            os.makedirs(out)
            for key in [".zarray"] + ["%d.%d" % (i, j) for i in range(4) for j in range(3)]:
                status, _, body = c.request("GET", "/%s/w.zarr/%s" % (self.BUCKET, key))
                self.assertEqual(status, 200, key)
                with open(os.path.join(out, key), "wb") as f:
                    f.write(body)
            self.assertTrue(np.array_equal(zarr.open_array(out, "r")[:], model))
            self.assertEqual(st["stale"], 0)
            # fetched again: exactly the written chunks, the rewritten shard (its index and
            # inner chunks), the listing of the root the writes changed; the rest from disk
            prefix = "/%s/" % self.BUCKET
            w = sorted(p[len(prefix) + 7:] for p in fetched if p.startswith(prefix + "w.zarr/"))
            self.assertEqual(w, ["%d.%d" % (i, j) for i in range(3) for j in range(3)])
            sh = {p for p in fetched if p.startswith(prefix + "sharded.zarr/")}
            self.assertEqual(sh, {prefix + "sharded.zarr/end_le_crc/c/0/0"})
            self.assertEqual(len(fetched), len(w) + sum(p in sh for p in fetched) + 1)
            log("  fresh mounts after the writes: right bytes; GETs: the 9 written chunks, %d "
                "pieces of the rewritten shard, 1 listing" % sum(p in sh for p in fetched))
        finally:
            proxy.stop()
            s3.stop()


if __name__ == "__main__":
    zfmount.main(file_timeout=300)
