#!/usr/bin/python3
"""Icechunk repositories written by Icechunk itself, mounted read-only.

The compatibility repositories of Icechunk's own test suite (tests/fixtures/icechunk/: spec 1,
spec 2 and spec 1 migrated to 2, written by Icechunk; Apache-2.0) hold what their generator,
icechunk-python/tests/test_can_read_old.py, says they hold. Every fact it states is checked here
through the mount — the head of `main`, `-o ref` (a branch, and tags whose names hold a space
and a '!'), `-o snapshot`, and the hidden history directories `.icechunk/` — from a local
directory, over HTTP (nginx) and from S3 (s3rver):

* test-repo-*: /group1 with attributes {"this": "is a nice group", "icechunk": 1, "size":
  42.0}; /group1/big_chunks, 10 x 10 float32 in 5 x 5 chunks, fill NaN, all 42.0 at main's head,
  its chunk 0/0 a virtual reference to s3://testbucket/can_read_old/chunk-1 (container
  s3://testbucket/ in the repository's configuration) holding the bytes of its chunk 0/1;
  /group1/small_chunks, 5 int8 in chunks of 1 (inline), fill 8, all 84; main's ancestry "set
  virtual chunk", "fill data", "empty structure", "Repository initialized"; branch my-branch
  two commits further ("some more structure", "delete a chunk"), where small_chunks' last chunk
  is deleted ([84, 84, 84, 84, 8]) and /group2/group3/group4/group5/inner (10 x 10 float32,
  never written: all NaN) exists; tag "it works!" at "delete a chunk", "it also works!" at
  "some more structure"; tag "deleted" deleted.
* split-repo-*: /group1/split, 10 x 10 float32 in 3 x 3 chunks (fill NaN) whose references
  Icechunk split over several manifests, and /group1/small_chunks (5 int8, fill 8): written
  120 and 0 ("write data"), 12 and 1 ("write data again"), 14 and 3 ("write data again with
  more splits", with more manifests); "empty structure" before them.

The virtual chunk: read from an s3rver the test starts only when the container is authorised
(-o virtual_chunks), else EIO with a log line naming the container; its checksum (a
last-modified time of 2106, always satisfied) checked on the response.
"""

import errno
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "icechunk")
TEST_REPOS = ["test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"]
SPLIT_REPOS = ["split-repo-v1", "split-repo-v2", "split-repo-v2-migrated"]

MAIN_HISTORY = ["set virtual chunk", "fill data", "empty structure", "Repository initialized"]
BRANCH_HISTORY = ["some more structure", "delete a chunk"] + MAIN_HISTORY
SPLIT_HISTORY = ["write data again with more splits", "write data again", "write data",
                 "empty structure", "Repository initialized"]
GROUP_ATTRS = {"this": "is a nice group", "icechunk": 1, "size": 42.0}
ARRAY_ATTRS = {"this": "is a nice array", "icechunk": 1, "size": 42.0}

WORK = None


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-icechunk-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def f32(value, n):
    return struct.pack("<%df" % n, *([value] * n))


def i8(values):
    return struct.pack("<%db" % len(values), *values)


def nan_f32(n):
    return struct.pack("<I", 0x7FC00000) * n


def read(path):
    with open(path, "rb") as f:
        return f.read()


def log_lines(path):
    """The lines of a branch log: (id, time, message)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            parts = line.split("\t")
            assert len(parts) == 3, line
            out.append(tuple(parts))
    return out


def is_all_nan_f32(data):
    return len(data) % 4 == 0 and all(math.isnan(v) for v in struct.unpack("<%df" % (len(data) // 4), data))


class Checks:
    """What the generator says, checked below a mounted root (the view of one version)."""

    def check_main_head(self, root, virtual_ok):
        self.assertEqual(sorted(os.listdir(root)), ["group1"])
        g1 = os.path.join(root, "group1")
        self.assertEqual(sorted(os.listdir(g1)), ["big_chunks", "small_chunks"])
        self.assertEqual(json.loads(os.getxattr(g1, "user.zarr.attributes")), GROUP_ATTRS)
        small = os.path.join(g1, "small_chunks")
        self.assertEqual(json.loads(os.getxattr(small, "user.zarr.attributes")), ARRAY_ATTRS)
        self.assertEqual(read(small), i8([84] * 5))
        big = os.path.join(g1, "big_chunks")
        self.assertEqual(os.path.getsize(big), 400)
        if virtual_ok:
            self.assertEqual(read(big), f32(42.0, 100))
        else:
            zfmount.drop_page_cache(big)
            self.assertErrno(errno.EIO, read, big)

    def check_branch_head(self, root, virtual_ok=False):
        self.assertEqual(sorted(os.listdir(root)), ["group1", "group2"])
        self.assertEqual(read(os.path.join(root, "group1", "small_chunks")),
                         i8([84, 84, 84, 84, 8]))
        inner = os.path.join(root, "group2", "group3", "group4", "group5", "inner")
        for d in ["group2", "group2/group3", "group2/group3/group4",
                  "group2/group3/group4/group5"]:
            self.assertEqual(json.loads(os.getxattr(os.path.join(root, d),
                                                    "user.zarr.attributes")), GROUP_ATTRS)
        self.assertEqual(os.path.getsize(inner), 400)
        self.assertTrue(is_all_nan_f32(read(inner)))
        self.assertEqual(json.loads(os.getxattr(inner, "user.zarr.shape")), [10, 10])
        if virtual_ok:
            self.assertEqual(read(os.path.join(root, "group1", "big_chunks")), f32(42.0, 100))

    def check_history(self, mnt):
        """.icechunk/ of a test-repo: hidden, its kinds, branches, tags, logs, snapshots."""
        self.assertNotIn(".icechunk", os.listdir(mnt))
        ic = os.path.join(mnt, ".icechunk")
        self.assertEqual(sorted(os.listdir(ic)), ["branches", "snapshots", "tags"])
        self.assertEqual(sorted(os.listdir(os.path.join(ic, "branches"))),
                         ["main", "main.log", "my-branch", "my-branch.log"])
        self.assertEqual(sorted(os.listdir(os.path.join(ic, "tags"))),
                         ["it also works!", "it works!"])
        self.assertFalse(os.path.exists(os.path.join(ic, "tags", "deleted")))
        main_log = log_lines(os.path.join(ic, "branches", "main.log"))
        branch_log = log_lines(os.path.join(ic, "branches", "my-branch.log"))
        self.assertEqual([m for _i, _t, m in main_log], MAIN_HISTORY)
        self.assertEqual([m for _i, _t, m in branch_log], BRANCH_HISTORY)
        for lines in (main_log, branch_log):
            times = [t for _i, t, _m in lines]
            self.assertEqual(times, sorted(times, reverse=True), "newest first")
            for t in times:
                self.assertRegex(t, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        snaps = sorted(os.listdir(os.path.join(ic, "snapshots")))
        ids = {i for i, _t, _m in main_log + branch_log}
        self.assertEqual(len(ids), 6)
        self.assertTrue(ids <= set(snaps), (ids, snaps))
        for i in ids:
            self.assertRegex(i, r"^[0-9A-HJKMNP-TV-Z]{20}$")
        # the versions, each a whole hierarchy
        self.check_main_head(os.path.join(ic, "branches", "main"), virtual_ok=False)
        self.check_branch_head(os.path.join(ic, "branches", "my-branch"))
        self.check_branch_head(os.path.join(ic, "tags", "it also works!"))
        it_works = os.path.join(ic, "tags", "it works!")
        self.assertEqual(sorted(os.listdir(it_works)), ["group1"])
        self.assertEqual(read(os.path.join(it_works, "group1", "small_chunks")),
                         i8([84, 84, 84, 84, 8]))
        by_msg = {m: i for i, _t, m in branch_log}
        empty = os.path.join(ic, "snapshots", by_msg["empty structure"])
        self.assertEqual(read(os.path.join(empty, "group1", "small_chunks")), i8([8] * 5))
        self.assertTrue(is_all_nan_f32(read(os.path.join(empty, "group1", "big_chunks"))))
        init = os.path.join(ic, "snapshots", by_msg["Repository initialized"])
        self.assertEqual(os.listdir(init), [])
        fill = os.path.join(ic, "snapshots", by_msg["fill data"])
        self.assertEqual(read(os.path.join(fill, "group1", "big_chunks")), f32(42.0, 100))
        # read-only, even there
        self.assertErrno(errno.EROFS, os.mkdir, os.path.join(fill, "newgroup"))
        with self.assertRaises(OSError):
            with open(os.path.join(fill, "group1", "small_chunks"), "r+b") as f:
                f.write(b"x")
        # names that are no version
        self.assertFalse(os.path.exists(os.path.join(ic, "snapshots", "0" * 20)))
        self.assertFalse(os.path.exists(os.path.join(ic, "branches", "nope")))
        self.assertFalse(os.path.exists(os.path.join(ic, "other")))
        return main_log, branch_log


class Local(zfmount.TestCase, Checks):
    """The fixtures from a local directory."""

    def test_01_test_repos(self):
        for name in TEST_REPOS:
            repo = os.path.join(FIXTURES, name)
            with zfmount.Mount(repo, label="ic-" + name) as m:
                self.check_main_head(m.mnt, virtual_ok=False)
                self.assertIn("testbucket", m.stderr_text() + "")  # the refusal names it
                main_log, branch_log = self.check_history(m.mnt)
            with zfmount.Mount(repo, options=["ref=my-branch"], label="ic-ref") as m:
                self.check_branch_head(m.mnt)
            with zfmount.Mount(repo, options=["ref=it works!"], label="ic-tag") as m:
                self.assertEqual(read(m.path("group1", "small_chunks")), i8([84, 84, 84, 84, 8]))
                self.assertEqual(sorted(os.listdir(m.mnt)), ["group1"])
            snap = {msg: i for i, _t, msg in branch_log}["fill data"]
            with zfmount.Mount(repo, options=["snapshot=" + snap], label="ic-snap") as m:
                self.assertEqual(read(m.path("group1", "small_chunks")), i8([84] * 5))
                self.assertEqual(read(m.path("group1", "big_chunks")), f32(42.0, 100))
            log("  %s: main, my-branch, both tags, snapshot %s and .icechunk/ as stated"
                % (name, snap))

    def test_02_refused_refs(self):
        repo = os.path.join(FIXTURES, "test-repo-v2")
        for opt, what in [("ref=deleted", "deleted tag"), ("ref=nope", "no such ref"),
                          ("snapshot=" + "0" * 20, "no such snapshot"),
                          ("snapshot=short", "an id of the wrong length")]:
            status, stderr, mounted = zfmount.expect_refusal(repo, ["-o", opt], timeout=30)
            self.assertEqual((status, mounted), (1, False), (what, stderr))
            log("  -o %s (%s): refused: %s" % (opt, what, stderr.strip().splitlines()[-1]))

    def test_02b_icechunk_0_1_refused(self):
        """Icechunk 0.1 kept each branch version as refs/branch.NAME/VERSION.json (the first
        ZZZZZZZZ.json) and msgpack snapshots: refused, naming the version."""
        repo = os.path.join(WORK, "ic01")
        os.makedirs(os.path.join(repo, "refs", "branch.main"))
        os.makedirs(os.path.join(repo, "snapshots"))
        with open(os.path.join(repo, "refs", "branch.main", "ZZZZZZZZ.json"), "w") as f:
            json.dump({"snapshot": "1CECHNKREP0F1RSTCMT0"}, f)
        status, stderr, mounted = zfmount.expect_refusal(repo, timeout=30)
        self.assertEqual((status, mounted), (1, False), stderr)
        self.assertIn("0.1", stderr)
        log("  an Icechunk 0.1 repository: refused: %s" % stderr.strip().splitlines()[-1])

    def test_03_split_repos(self):
        for name in SPLIT_REPOS:
            repo = os.path.join(FIXTURES, name)
            with zfmount.Mount(repo, label="ic-" + name) as m:
                self.assertEqual(read(m.path("group1", "split")), f32(14.0, 100))
                self.assertEqual(read(m.path("group1", "small_chunks")), i8([3] * 5))
                lines = log_lines(m.path(".icechunk", "branches", "main.log"))
                self.assertEqual([msg for _i, _t, msg in lines], SPLIT_HISTORY)
                want = {"write data": (120.0, 0), "write data again": (12.0, 1),
                        "write data again with more splits": (14.0, 3)}
                for i, _t, msg in lines:
                    snap = m.path(".icechunk", "snapshots", i)
                    if msg in want:
                        v, s = want[msg]
                        self.assertEqual(read(os.path.join(snap, "group1", "split")), f32(v, 100),
                                         msg)
                        self.assertEqual(read(os.path.join(snap, "group1", "small_chunks")),
                                         i8([s] * 5), msg)
                    elif msg == "empty structure":
                        self.assertTrue(is_all_nan_f32(read(os.path.join(snap, "group1",
                                                                         "split"))))
                        self.assertEqual(read(os.path.join(snap, "group1", "small_chunks")),
                                         i8([8] * 5))
            log("  %s: values at each of the %d commits as written" % (name, len(SPLIT_HISTORY)))

    def test_04_read_only(self):
        repo = os.path.join(FIXTURES, "test-repo-v2")
        with zfmount.Mount(repo, options=["rw"], label="ic-rw") as m:
            self.assertIn("read-only", m.stderr_text())
            self.assertErrno(errno.EROFS, os.mkdir, m.path("g"))
            self.assertEqual(read(m.path("group1", "small_chunks")), i8([84] * 5))


def fixture_tree_copy(dst):
    shutil.copytree(FIXTURES, dst)
    return dst


class Remote(zfmount.TestCase, Checks):
    """The fixtures over HTTP (nginx) and from S3 (s3rver), and the virtual chunk from S3."""

    BUCKET = "icechunk"
    VBUCKET = "testbucket"

    @classmethod
    def setUpClass(cls):
        cls.srv = fixture_tree_copy(os.path.join(WORK, "srv"))
        cls.ng = rs.Nginx(cls.srv, autoindex=True).start()
        cls.s3 = rs.S3rver([cls.BUCKET, cls.VBUCKET]).start()
        cls.client = cls.s3.client()
        for name in TEST_REPOS + SPLIT_REPOS:
            cls.client.upload_tree(os.path.join(cls.srv, name), cls.BUCKET, name)
        # the virtual chunk: the bytes of big_chunks' chunk 0/1 (a native chunk of the same
        # array, all 42.0), as the generator puts it in its MinIO
        cls.chunk = native_chunk_bytes(os.path.join(FIXTURES, "test-repo-v2"))
        cls.client.put(cls.VBUCKET, "can_read_old/chunk-1", cls.chunk)

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()
        cls.ng.stop()

    def s3_opts(self, *extra):
        return ["endpoint=" + self.s3.endpoint(), "region=us-east-1", "retries=1"] + list(extra)

    def virtual_opts(self):
        return ["virtual_chunks=s3://testbucket/",
                "virtual_endpoint=s3://testbucket/=" + self.s3.endpoint()]

    def test_01_http(self):
        for name in TEST_REPOS:
            with zfmount.Mount(self.ng.url(name), options=["retries=1"],
                               label="ic-http-" + name) as m:
                mark = self.ng.access_mark()
                with open(m.path(".zarrfs-stats")) as f:
                    before = json.load(f)["store"]["requests"]
                self.check_main_head(m.mnt, virtual_ok=False)
                self.check_history(m.mnt)
                # .zarrfs-stats counts the requests of the mount and of its versions (which share
                # the repository's store) once each, as nginx saw them
                with open(m.path(".zarrfs-stats")) as f:
                    after = json.load(f)["store"]["requests"]
                self.assertEqual(after - before, len(self.ng.access_entries(mark)))
            log("  %s over HTTP: as stated" % name)
        for name in SPLIT_REPOS:
            with zfmount.Mount(self.ng.url(name), options=["retries=1"]) as m:
                self.assertEqual(read(m.path("group1", "split")), f32(14.0, 100))

    def test_02_s3(self):
        with rs.aws_env(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"):
            for name in TEST_REPOS:
                with zfmount.Mount("s3://%s/%s" % (self.BUCKET, name), options=self.s3_opts(),
                                   label="ic-s3-" + name) as m:
                    self.check_main_head(m.mnt, virtual_ok=False)
                    self.check_history(m.mnt)
                log("  %s from S3: as stated" % name)

    def test_03_virtual_authorised(self):
        with rs.aws_env(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"):
            for name in TEST_REPOS:
                repo = os.path.join(FIXTURES, name)
                with zfmount.Mount(repo, options=self.virtual_opts(), label="ic-v") as m:
                    self.check_main_head(m.mnt, virtual_ok=True)
                    self.check_branch_head(m.path(".icechunk", "branches", "my-branch"),
                                           virtual_ok=True)
                # the prefix without its trailing '/' authorises too
                opts = ["virtual_chunks=s3://testbucket",
                        "virtual_endpoint=s3://testbucket=" + self.s3.endpoint()]
                with zfmount.Mount(repo, options=opts, label="ic-v2") as m:
                    self.assertEqual(read(m.path("group1", "big_chunks")), f32(42.0, 100))
                # another prefix does not
                opts = ["virtual_chunks=s3://otherbucket/",
                        "virtual_endpoint=s3://testbucket/=" + self.s3.endpoint()]
                with zfmount.Mount(repo, options=opts, label="ic-v3") as m:
                    self.assertErrno(errno.EIO, read, m.path("group1", "big_chunks"))
                    self.assertIn("s3://testbucket", m.stderr_text())
            log("  the virtual chunk: authorised -> all 42.0; not authorised -> EIO, logged")

    def test_04_virtual_changed(self):
        """The reference's checksum is 2106: a rewritten object still satisfies it; a missing
        one is EIO, never the fill value."""
        with rs.aws_env(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"):
            repo = os.path.join(FIXTURES, "test-repo-v2")
            self.client.put(self.VBUCKET, "can_read_old/chunk-1", self.chunk[:-1])
            try:
                with zfmount.Mount(repo, options=self.virtual_opts(), label="ic-short") as m:
                    self.assertErrno(errno.EIO, read, m.path("group1", "big_chunks"))
            finally:
                self.client.put(self.VBUCKET, "can_read_old/chunk-1", self.chunk)


class ZarrsExample(zfmount.TestCase):
    """zarrs_icechunk's example (tests/fixtures/icechunk-zarrs: spec 1, written by Icechunk
    through VirtualiZarr): /data, 4 x 5 x 10 float64, every one of its 60 chunks a virtual
    reference into test0.nc/test1.nc with a last-modified checksum (1774040459). The references
    name github.com: the test serves the two files with nginx and moves the locations there
    (icechunk_hostile.relocate_virtual, checksums kept). Expected values: the README's, checked
    there with netCDF4 and Icechunk: (arange(100) - 3.0) / 0.1, then the same of arange(100) +
    100, as float64."""

    OLD = "https://github.com/zarrs/zarrs_icechunk/raw/refs/heads/main/examples/data/"
    CHECKSUM = 1774040459

    def test_01_virtual_netcdf(self):
        import icechunk_hostile as ich
        src = os.path.join(FIXTURES + "-zarrs")
        srv = os.path.join(WORK, "zarrs-srv")
        os.makedirs(srv)
        for n in ("test0.nc", "test1.nc"):
            shutil.copy(os.path.join(src, n), os.path.join(srv, n))
            os.utime(os.path.join(srv, n), (self.CHECKSUM, self.CHECKSUM))
        ng = rs.Nginx(srv, autoindex=True).start()
        try:
            prefix = ng.url("")
            prefix += "" if prefix.endswith("/") else "/"
            repo = os.path.join(WORK, "zarrs-repo")
            ich.relocate_virtual(os.path.join(src, "test.icechunk.zarr"), repo, self.OLD, prefix,
                                 schema_dir=os.path.join(HERE, "..", "..", "src", "store"))
            x = list(range(100))
            want = struct.pack("<200d", *([(v - 3.0) / 0.1 for v in x] +
                                          [(v + 100 - 3.0) / 0.1 for v in x]))
            with zfmount.Mount(repo, options=["virtual_chunks=" + prefix], label="ic-zarrs") as m:
                self.assertEqual(json.loads(os.getxattr(m.path("data"), "user.zarr.shape")),
                                 [4, 5, 10])
                self.assertEqual(read(m.path("data")), want)
            with zfmount.Mount(repo, label="ic-zarrs-unauth") as m:
                self.assertErrno(errno.EIO, read, m.path("data"))
            # a served file modified after the checksum time: the object changed
            os.utime(os.path.join(srv, "test1.nc"), (self.CHECKSUM + 60, self.CHECKSUM + 60))
            with zfmount.Mount(repo, options=["virtual_chunks=" + prefix], label="ic-zarrs-changed") as m:
                self.assertErrno(errno.EIO, read, m.path("data"))
                self.assertIn("modified", m.stderr_text())
            log("  zarrs_icechunk's example: 60 virtual chunks in two netCDF files over HTTP, as "
                "netCDF4 reads them; unauthorised or modified since the checksum: EIO")
        finally:
            ng.stop()


def native_chunk_bytes(repo):
    """The encoded bytes of big_chunks' chunk 0/1 as Icechunk wrote them: the repository's chunk
    files are big_chunks' four chunks of "fill data" (small_chunks' are inline), each 25 values
    42.0 encoded alike, so the bytes shared by at least three identical chunk files."""
    chunks = os.path.join(repo, "chunks")
    sizes = {}
    for n in sorted(os.listdir(chunks)):
        data = read(os.path.join(chunks, n))
        sizes.setdefault(len(data), []).append(data)
    for _size, datas in sorted(sizes.items()):
        if len(datas) >= 3 and all(d == datas[0] for d in datas):
            return datas[0]
    raise AssertionError("no three identical chunk files in %s" % chunks)


if __name__ == "__main__":
    zfmount.main()
