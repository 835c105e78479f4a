#!/usr/bin/python3
"""Mount tests/fixtures/zarr-python-2.18.7-fixture and compare every array, group listing and
xattr with what zarr-python 2.13 reads from the same directory.

Expected values come from zarr-python (open_array per array directory; `nested_legacy` — chunks in
nested directories without `dimension_separator` — through NestedDirectoryStore) and from the
stored .zarray/.zgroup/.zattrs files, never from zarrfs.
"""

import errno
import json
import os
import random
import stat
import sys

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

FIXTURE = os.path.join(zfmount.FIXTURES, "zarr-python-2.18.7-fixture")


class FixtureV2(zfmount.MountedTestCase):

    @classmethod
    def store_path(cls):
        if not os.path.isdir(FIXTURE):
            raise RuntimeError("fixture missing: %s" % FIXTURE)
        return FIXTURE

    @classmethod
    def setUpClass(cls):
        cls.groups, cls.arrays = zfmount.walk_store(FIXTURE)
        log("fixture: %d groups, %d arrays" % (len(cls.groups), len(cls.arrays)))
        super().setUpClass()

    def test_01_every_array_byte_exact(self):
        """Each array file == numpy.ascontiguousarray(z[...]).tobytes(), size prod(shape)*itemsize."""
        checked = 0
        total = 0
        for rel in self.arrays:
            with self.subTest(array=rel):
                z = zfmount.open_zarr_array(os.path.join(FIXTURE, rel))
                want = zfmount.expected_bytes(z)
                self.assertEqual(len(want), int(np.prod(z.shape)) * z.dtype.itemsize)
                p = self.m.path(rel)
                st = os.stat(p)
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s is not a regular file" % rel)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % rel)
                got = zfmount.read_all(p)
                self.assertBytesEqual(got, want, rel)
                checked += 1
                total += len(want)
        log("  %d/%d arrays byte-identical to zarr-python (%d bytes)" % (checked, len(self.arrays), total))

    def test_02_nested_legacy_found(self):
        """`nested_legacy` (no dimension_separator, chunks in 0/0) reads its real chunk data."""
        d = os.path.join(FIXTURE, "nested_legacy")
        with open(os.path.join(d, ".zarray")) as f:
            self.assertNotIn("dimension_separator", json.load(f))
        z = zarr.open_array(store=zarr.NestedDirectoryStore(d), mode="r")
        want = np.ascontiguousarray(z[...])
        self.assertFalse((want == z.fill_value).all(), "fixture data equals the fill value?")
        got = zfmount.read_all(self.m.path("nested_legacy"))
        self.assertBytesEqual(got, want.tobytes(), "nested_legacy")
        log("  nested_legacy: %r read from nested chunk dirs" % want.tolist())

    def test_03_random_preads(self):
        """40 random preads per array (page cache dropped first) against the expected bytes."""
        rng = random.Random(1234)
        n = 0
        for rel in self.arrays:
            with self.subTest(array=rel):
                z = zfmount.open_zarr_array(os.path.join(FIXTURE, rel))
                want = zfmount.expected_bytes(z)
                fd = os.open(self.m.path(rel), os.O_RDONLY)
                try:
                    zfmount.drop_page_cache(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    size = len(want)
                    for _ in range(40):
                        off = rng.randrange(0, size + 1)
                        ln = rng.choice([1, 3, 7, 100, 4096, 5000, rng.randrange(0, size + 10)])
                        got = zfmount.pread_full(fd, ln, off)
                        self.assertBytesEqual(got, want[off:off + ln], "%s pread(%d, %d)" % (rel, ln, off))
                        n += 1
                finally:
                    os.close(fd)
        log("  %d random preads matched" % n)

    def test_04_group_listings(self):
        """os.listdir of every group == the children zarr-python lists; types dir/regular."""
        root = zarr.open_group(store=zarr.DirectoryStore(FIXTURE), mode="r")
        for rel in self.groups:
            with self.subTest(group=rel or "/"):
                g = root[rel] if rel else root
                want = sorted(g.group_keys()) + sorted(g.array_keys())
                got = os.listdir(self.m.path(rel) if rel else self.m.mnt)
                self.assertEqual(sorted(got), sorted(want), "listing of /%s" % rel)
                for name in g.group_keys():
                    self.assertTrue(stat.S_ISDIR(os.stat(self.m.path(rel, name)).st_mode))
                for name in g.array_keys():
                    self.assertTrue(stat.S_ISREG(os.stat(self.m.path(rel, name)).st_mode))
        # nested_legacy is an array even though zarr's DirectoryStore sees directories inside
        self.assertIn("nested_legacy", os.listdir(self.m.mnt))
        log("  %d group listings match zarr-python" % len(self.groups))

    def test_05_xattrs(self):
        """user.zarr.* on every node, compared with the stored documents."""
        for rel in self.groups:
            with self.subTest(group=rel or "/"):
                zfmount.check_node_xattrs(self, self.m.path(rel) if rel else self.m.mnt,
                                          os.path.join(FIXTURE, rel), is_array=False)
        for rel in self.arrays:
            with self.subTest(array=rel):
                z = zfmount.open_zarr_array(os.path.join(FIXTURE, rel))
                zfmount.check_node_xattrs(self, self.m.path(rel), os.path.join(FIXTURE, rel),
                                          is_array=True, zarr_obj=z)
        log("  xattrs of %d groups and %d arrays match the stored metadata"
            % (len(self.groups), len(self.arrays)))

    def test_06_utf8_attributes(self):
        """utf8attrs: attributes {"foo": "た"} come back as UTF-8 JSON."""
        raw = os.getxattr(self.m.path("utf8attrs"), "user.zarr.attributes")
        # zarr 2.13 itself decodes .zattrs as ASCII and fails on this file (the fixture exists to
        # catch that), so the expected value is the stored document parsed as UTF-8 JSON
        with open(os.path.join(FIXTURE, "utf8attrs", ".zattrs"), encoding="utf-8") as f:
            stored = json.load(f)
        self.assertEqual(json.loads(raw.decode("utf-8")), stored)
        self.assertEqual(json.loads(raw.decode("utf-8"))["foo"], "\u305f")
        log("  utf8attrs attributes: %s" % raw.decode("utf-8"))

    def test_07_timestamps(self):
        """A node's mtime is its metadata key's mtime (whole seconds)."""
        for rel in self.arrays[:30] + self.groups:
            with self.subTest(node=rel):
                key = ".zarray" if rel in self.arrays else ".zgroup"
                want = int(os.stat(os.path.join(FIXTURE, rel, key)).st_mtime)
                got = int(os.stat(self.m.path(rel) if rel else self.m.mnt).st_mtime)
                self.assertEqual(got, want, "%s mtime" % (rel or "/"))
        log("  mtimes match the metadata keys")

    def test_08_read_only(self):
        """Writes are refused with EROFS on files and directories."""
        rel = self.arrays[0]
        p = self.m.path(rel)
        self.assertErrno(errno.EROFS, os.open, p, os.O_WRONLY)
        self.assertErrno(errno.EROFS, os.open, p, os.O_RDWR)
        self.assertErrno(errno.EROFS, os.open, self.m.path("newfile"), os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertErrno(errno.EROFS, os.mkdir, self.m.path("newdir"))
        self.assertErrno(errno.EROFS, os.unlink, p)
        self.assertErrno(errno.EROFS, os.rmdir, self.m.path("utf8attrs"))
        log("  EROFS for open(O_WRONLY/O_RDWR/O_CREAT), mkdir, unlink, rmdir")

    def test_09_no_metadata_files_exposed(self):
        """Store keys (.zarray, .zgroup, .zattrs, chunk files) are not files of the mount."""
        names = os.listdir(self.m.mnt)
        for n in (".zgroup", ".zattrs", ".zarray", ".zmetadata"):
            self.assertNotIn(n, names)
        self.assertErrno(errno.ENOENT, os.stat, self.m.path(".zgroup"))
        self.assertErrno((errno.ENOENT, errno.ENOTDIR), os.stat, self.m.path("flat", "0.0"))
        log("  metadata keys and chunks are not exposed as files")


if __name__ == "__main__":
    zfmount.main()
