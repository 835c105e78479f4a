#!/usr/bin/python3
"""HTTP(S) stores: zarrfs mounting hierarchies that a real nginx (Debian's nginx-light, started
here on 127.0.0.1 with its own configuration, see remote_servers.Nginx) serves.

The hierarchies (remote_fixtures.build): Zarr v2 written by zarr-python 2.13 (codecs, groups,
missing chunks, odd names) with and without consolidated .zmetadata, the zarrita v3 fixture,
hand-built sharded v3 arrays. Every remote mount is compared with a LOCAL zarrfs mount of the same
directory (listings, types, sizes, xattrs, whole contents or the errno, random preads); the local
v2 mount is checked against zarr-python 2.13 and the sharded arrays against the numpy arrays they
were built from, so no expectation comes from the remote mount.

* AutoindexOn: nginx `autoindex on`: listings from the index pages (or .zmetadata).
* AutoindexOff: nginx `autoindex off` (a directory URL is 403): consolidated hierarchies list
  from their metadata (v2 .zmetadata; v3 inline consolidated_metadata, at the root and in a
  group below it); others still open every path by name, listing gives nothing and the log says
  a group's children cannot be listed.
* ShardedRanges: nginx's access log counts requests and bytes: one inner chunk of a 4 x 4 shard
  costs exactly a suffix range request for the index and one range request for that chunk; a
  second chunk of the same shard one range request; never a whole-shard GET. .zarrfs-stats agrees
  with the log.
* Https: nginx with a self-signed certificate made now by openssl: refused (TLS error, exit 1,
  nothing mounted) without -o insecure, byte-exact with it.
* Refusals: a closed port (connection refused) and a URL that is no Zarr hierarchy (404):
  exit 1, one clear message, nothing mounted.
"""

import errno
import os
import re
import shutil
import sys
import tempfile

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
SERVERS = {}
# short enough that a broken request fails the test quickly, long enough for a loaded machine
REMOTE_OPTS = ["retries=2", "timeout=20"]


def setUpModule():
    global WORK, SRV, WANT
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-http-")
    SRV = os.path.join(WORK, "srv")
    WANT = rf.build(SRV)["sharded"]
    SERVERS["on"] = rs.Nginx(SRV, autoindex=True).start()
    SERVERS["off"] = rs.Nginx(SRV, autoindex=False).start()
    log("nginx autoindex on at %s, off at %s" % (SERVERS["on"].url(), SERVERS["off"].url()))


def tearDownModule():
    for s in SERVERS.values():
        s.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


class Paired(zfmount.MountsTestCase):
    """Mounts, for each name in `stores`, SRV/name locally and server.url(name) remotely; the
    mounts are shared by the tests of the class and checked like MountedTestCase's."""

    server = None            # key of SERVERS
    stores = ()
    remote_options = ()

    @classmethod
    def mount_all(cls):
        cls.local, cls.remote = {}, {}
        for name in cls.stores:
            cls.local[name] = cls.add_mount(os.path.join(SRV, name), label="local-" + name)
            rm = cls.add_mount(SERVERS[cls.server].url(name),
                               options=REMOTE_OPTS + list(cls.remote_options),
                               label="%s-%s" % (cls.__name__, name))
            cls.remote[name] = rm
            log("mounted %s on %s (pid %d)" % (rm.store, rm.mnt, rm.pid))

    def compare(self, name, **kw):
        n_ok, n_bytes, n_err = rf.compare_trees(self, self.local[name].mnt, self.remote[name].mnt,
                                                what=name, **kw)
        log("  %s: %d files byte-exact (%d bytes), %d failing alike" % (name, n_ok, n_bytes, n_err))
        return n_ok, n_bytes, n_err

    def assertAlive(self):
        for m in self.mounts_started:
            self.assertTrue(m.alive(), "zarrfs %s (pid %s) died" % (m.label, m.pid))


def check_v2_local_against_zarr(tc, mnt, root):
    """The local mount (the reference of the remote one) against zarr-python 2.13."""
    arrays = rf.v2_arrays(root)
    tc.assertGreaterEqual(len(arrays), 14, "the v2 fixture has too few arrays")
    for rel in arrays:
        with tc.subTest(array=rel):
            z = zfmount.open_zarr_array(os.path.join(root, rel))
            tc.assertBytesEqual(zfmount.read_all(os.path.join(mnt, rel)), zfmount.expected_bytes(z),
                                "local mount of %s" % rel)
    return arrays


def check_sharded_local(tc, mnt):
    for name, want in WANT.items():
        with tc.subTest(array=name):
            tc.assertBytesEqual(zfmount.read_all(os.path.join(mnt, name)),
                                np.ascontiguousarray(want).tobytes(), "local mount of %s" % name)


class AutoindexOn(Paired):
    server = "on"
    stores = ("v2.zarr", "v2nc.zarr", "v3.zarr", "sharded.zarr")

    def test_00_references(self):
        """The local mounts agree with zarr-python 2.13 and numpy (so they can be references)."""
        arrays = check_v2_local_against_zarr(self, self.local["v2.zarr"].mnt,
                                             os.path.join(SRV, "v2.zarr"))
        check_sharded_local(self, self.local["sharded.zarr"].mnt)
        log("  local mounts: %d v2 arrays = zarr-python, %d sharded = numpy" % (len(arrays), len(WANT)))

    def test_01_v2_consolidated(self):
        n_ok, _, _ = self.compare("v2.zarr")
        self.assertGreaterEqual(n_ok, 14)

    def test_02_v2_listed_from_index_pages(self):
        """No .zmetadata: every listing comes from nginx's autoindex pages (which hide the
        .zarray/.zgroup files and cut long names in the link text, not in the href)."""
        names = os.listdir(self.remote["v2nc.zarr"].mnt)
        self.assertIn(rf.LONG_NAME, names)
        self.assertIn(rf.ODD_NAME, names)
        self.assertIn(rf.SPACE_GROUP, names)
        n_ok, _, _ = self.compare("v2nc.zarr")
        self.assertGreaterEqual(n_ok, 14)

    def test_03_v3_zarrita(self):
        n_ok, _, n_err = self.compare("v3.zarr")
        self.assertGreaterEqual(n_ok, 30)
        self.assertIn("my group with spaces", os.listdir(self.remote["v3.zarr"].mnt))

    def test_04_sharded(self):
        n_ok, _, _ = self.compare("sharded.zarr")
        self.assertEqual(n_ok, len(WANT))
        for name, want in WANT.items():
            with self.subTest(array=name):
                self.assertBytesEqual(zfmount.read_all(self.remote["sharded.zarr"].path(name)),
                                      np.ascontiguousarray(want).tobytes(), name)

    def test_05_read_only_and_missing(self):
        m = self.remote["v2.zarr"]
        self.assertErrno(errno.ENOENT, os.stat, m.path("no_such_array"))
        self.assertErrno(errno.ENOENT, os.stat, m.path("grp", "no_such_group", "x"))
        self.assertErrno(errno.EROFS, os.open, m.path("zlib_f4"), os.O_WRONLY)
        self.assertErrno(errno.EROFS, os.mkdir, m.path("newdir"))
        self.assertAlive()


class AutoindexOff(Paired):
    server = "off"
    stores = ("v2.zarr", "v2nc.zarr", "v3.zarr", "sharded.zarr")

    def test_01_v2_consolidated_lists(self):
        """A directory URL is 403 here, but .zmetadata lists every group."""
        n_ok, _, _ = self.compare("v2.zarr")
        self.assertGreaterEqual(n_ok, 14)

    def unlistable(self, name, group=""):
        """Opening by name works everywhere (compared without listings); listing the group
        gives nothing and the log says its children cannot be listed."""
        dirs, files = rf.walk_mount(self.local[name].mnt)
        n_ok, _, _ = self.compare(name, listing=False, dirs=dirs, files=files)
        rp = os.path.join(self.remote[name].mnt, group)
        got = rf.outcome(os.listdir, rp)
        self.assertTrue(got == ("ok", []) or got[0] == "errno",
                        "listing %s/%s without index pages or consolidated metadata gave %r"
                        % (name, group, got))
        # the directory exists (stat and every path below it work): not "No such file"
        self.assertNotEqual(got, ("errno", "ENOENT"),
                            "listing the existing group %s/%s fails with ENOENT" % (name, group))
        err = self.remote[name].stderr_text()
        self.assertRegex(err, r"(?i)(list|index)",
                         "the log does not say that %s/%s cannot be listed" % (name, group))
        line = next((l for l in err.splitlines() if re.search(r"(?i)(list|index)", l)), "")
        log("  %s/%s: listing %r; log: %s" % (name, group, got, line.strip()))
        return n_ok

    def test_02_v2_by_name(self):
        self.assertGreaterEqual(self.unlistable("v2nc.zarr"), 14)

    def test_03_v3_by_name(self):
        self.assertGreaterEqual(self.unlistable("v3.zarr"), 30)

    def test_04_sharded_by_name(self):
        self.assertEqual(self.unlistable("sharded.zarr"), len(WANT))

    def test_05_v3_consolidated_group_as_root_lists(self):
        """The zarrita group "consolidated" (inline consolidated_metadata) mounted as the root."""
        with zfmount.Mount(SERVERS["off"].url("v3.zarr/consolidated"), options=REMOTE_OPTS,
                           label="off-consolidated-root") as m:
            for g in ("", "nested"):
                with self.subTest(group=g):
                    self.assertEqual(sorted(os.listdir(m.path(g))),
                                     sorted(os.listdir(self.local["v3.zarr"].path("consolidated", g))))
            self.assertBytesEqual(zfmount.read_all(m.path("nested", "1d.i2")),
                                  zfmount.read_all(self.local["v3.zarr"].path(
                                      "consolidated", "nested", "1d.i2")), "nested/1d.i2")

    def test_06_v3_consolidated_subgroup_lists(self):
        """Below the root, a group holding inline consolidated_metadata lists from it too."""
        for g in ("consolidated", "consolidated/nested"):
            with self.subTest(group=g):
                self.assertEqual(sorted(os.listdir(self.remote["v3.zarr"].path(g))),
                                 sorted(os.listdir(self.local["v3.zarr"].path(g))),
                                 "listing of v3.zarr/%s (its consolidated_metadata)" % g)


class ShardedRanges(zfmount.TestCase):
    """What reading inner chunks of `counted` costs, from nginx's access log."""

    def read_inner(self, fd, shard, inner, col_in_chunk_row=3):
        r0 = shard[0] * rf.COUNTED_SHARD[0] + inner[0] * rf.COUNTED_INNER[0] + col_in_chunk_row
        c0 = shard[1] * rf.COUNTED_SHARD[1] + inner[1] * rf.COUNTED_INNER[1]
        off = r0 * rf.COUNTED_SHAPE[1] + c0
        got = os.pread(fd, 4096, off)
        self.assertBytesEqual(got, WANT["counted"][r0, c0:c0 + 4096].tobytes(),
                              "counted shard %r inner %r" % (shard, inner))

    def test_01_one_inner_chunk(self):
        ng = SERVERS["on"]
        root = os.path.join(SRV, "sharded.zarr")
        with zfmount.Mount(ng.url("sharded.zarr"), options=REMOTE_OPTS + ["readahead=0"],
                           label="ranges") as m:
            p = m.path("counted")
            self.assertEqual(os.stat(p).st_size, int(np.prod(rf.COUNTED_SHAPE)))
            s0 = rf.read_json(m.path(".zarrfs-stats"))["store"]
            mark = ng.access_mark()
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                plan = [((1, 1), (2, 1), 2), ((1, 1), (0, 3), 1), ((0, 0), (3, 2), 2),
                        ((1, 1), (2, 1), 0)]
                seen = 0
                for shard, inner, cost in plan:
                    self.read_inner(fd, shard, inner)
                    key = "sharded.zarr/counted/c/%d/%d" % shard
                    entries = [e for e in ng.access_entries(mark) if e.path == key]
                    new = entries[seen:] if shard == (1, 1) else entries
                    what = "shard %r inner %r" % (shard, inner)
                    log("  %s: %s" % (what, ["%s %s %d %d" % (e.method, e.range, e.status, e.bytes)
                                             for e in new]))
                    self.assertEqual(len(new), cost, "%s: %d requests for %s, %d expected: %r"
                                     % (what, len(new), key, cost, new))
                    idx, size = rf.counted_index(root, shard)
                    o, n = (int(v) for v in idx[inner])
                    if cost == 2:
                        suffix = new[0]
                        self.assertEqual((suffix.method, suffix.range, suffix.status, suffix.bytes),
                                         ("GET", "bytes=-%d" % rf.COUNTED_INDEX_BYTES, 206,
                                          rf.COUNTED_INDEX_BYTES),
                                         "%s: the first request is not the index suffix" % what)
                    if cost:
                        rng_e = new[-1]
                        self.assertEqual((rng_e.method, rng_e.range, rng_e.status, rng_e.bytes),
                                         ("GET", "bytes=%d-%d" % (o, o + n - 1), 206, n),
                                         "%s: not one range request for the inner chunk" % what)
                    if shard == (1, 1):
                        seen = len(entries)
                all_new = ng.access_entries(mark)
                whole = [e for e in all_new if "/counted/c/" in e.path and not e.range]
                self.assertEqual(whole, [], "whole-shard GETs")
                s1 = rf.read_json(m.path(".zarrfs-stats"))["store"]
                sent = sum(e.bytes for e in all_new if e.method == "GET")
                log("  nginx: %d requests, %d body bytes; .zarrfs-stats: +%d requests, +%d bytes"
                    % (len(all_new), sent, s1["requests"] - s0["requests"],
                       s1["bytes_fetched"] - s0["bytes_fetched"]))
                self.assertEqual(s1["requests"] - s0["requests"], len(all_new))
                self.assertEqual(s1["bytes_fetched"] - s0["bytes_fetched"], sent)
                self.assertEqual(s1["errors"] - s0["errors"], 0)
                self.assertEqual(s1["retries"] - s0["retries"], 0)
            finally:
                os.close(fd)


class Https(zfmount.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.ng = rs.Nginx(SRV, autoindex=True, tls=True).start()
        log("nginx with a self-signed certificate at %s" % cls.ng.url())

    @classmethod
    def tearDownClass(cls):
        cls.ng.stop()

    def test_01_refused_without_insecure(self):
        url = self.ng.url("v2.zarr")
        status, err, mounted = zfmount.expect_refusal(url, ["-o", ",".join(REMOTE_OPTS)])
        log("  %s without insecure: status %s, stderr: %s" % (url, status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertRegex(err, r"(?i)(certificate|tls|ssl)")
        self.assertLessEqual(len(err.strip().splitlines()), 3, "not one clear message: %r" % err)
        # no request got to the files: TLS failed first
        self.assertEqual([e for e in self.ng.access_entries() if e.path.startswith("v2.zarr")], [])

    def test_02_insecure_works(self):
        for name in ("v2.zarr", "sharded.zarr"):
            with self.subTest(store=name), \
                    zfmount.Mount(os.path.join(SRV, name), label="local-" + name) as lm, \
                    zfmount.Mount(self.ng.url(name), options=REMOTE_OPTS + ["insecure"],
                                  label="https-" + name) as rm:
                n_ok, n_bytes, _ = rf.compare_trees(self, lm.mnt, rm.mnt, what="https " + name,
                                                    preads=5)
                self.assertGreaterEqual(n_ok, 5)
                log("  https %s with insecure: %d files byte-exact (%d bytes)" % (name, n_ok, n_bytes))
        self.assertTrue(any(e.path.startswith("sharded.zarr/") and e.status == 206
                            for e in self.ng.access_entries()), "no range request over TLS")


class Refusals(zfmount.TestCase):

    def test_01_connection_refused(self):
        url = "http://127.0.0.1:%d/store.zarr" % rs.closed_port()
        status, err, mounted = zfmount.expect_refusal(url, ["-o", "retries=1,timeout=3"], timeout=30)
        log("  %s: status %s, stderr: %s" % (url, status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertRegex(err, r"(?i)(connect|refused|unreachable)")
        self.assertIn("127.0.0.1", err)

    def test_02_not_zarr(self):
        url = SERVERS["on"].url("no_such_store.zarr")
        status, err, mounted = zfmount.expect_refusal(url, ["-o", ",".join(REMOTE_OPTS)])
        log("  %s: status %s, stderr: %s" % (url, status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertTrue(err.strip(), "no message")
        self.assertLessEqual(len(err.strip().splitlines()), 3, "not one clear message: %r" % err)


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
