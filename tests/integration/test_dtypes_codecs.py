#!/usr/bin/python3
"""Arrays written here with zarr 2.13 (gen_v2.py) covering every dtype, order, separator, fill
value, compressor and filter, read through zarrfs: whole files, random preads, O_DIRECT preads,
reads at and past EOF, mmap and numpy.memmap, `ls -l`, xattrs, EROFS, EOPNOTSUPP for object
dtypes, consolidated metadata, and 8 concurrent readers (threads, then processes with a cache
smaller than the array) over a 64 MiB zstd array.

Expected bytes are numpy.ascontiguousarray(z[...]).tobytes() from zarr-python (zero bytes where
fill_value is null and the chunk is missing, which zarr-python leaves uninitialised).
"""

import errno
import json
import mmap
import multiprocessing
import os
import random
import shutil
import stat
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v2  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402
from zarr.meta import Metadata2  # noqa: E402

WORK = None
MAIN = CONS = BIG = WIDE = TINY = HUGE = None
_expected = {}


def setUpModule():
    global WORK, MAIN, CONS, BIG, WIDE, TINY, HUGE
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-codecs-")
    t0 = time.monotonic()
    MAIN = gen_v2.build_main(os.path.join(WORK, "main.zarr"))
    CONS = gen_v2.build_consolidated(os.path.join(WORK, "consolidated.zarr"))
    BIG = gen_v2.build_big(os.path.join(WORK, "big.zarr"))
    WIDE = gen_v2.build_wide(os.path.join(WORK, "wide.zarr"))
    TINY = gen_v2.build_tinycache(os.path.join(WORK, "tinycache.zarr"))
    HUGE = gen_v2.build_huge(os.path.join(WORK, "huge.zarr"))
    log("wrote test stores in %s (%.1f s)" % (WORK, time.monotonic() - t0))
    for what, why in gen_v2.SKIPPED:
        log("SKIPPED (not writable here): %s: %s" % (what, why))


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def expected(root, rel):
    key = (root, rel)
    if key not in _expected:
        z = zfmount.open_zarr_array(os.path.join(root, rel))
        _expected[key] = (z, zfmount.expected_bytes(z))
    return _expected[key]


def is_unsupported(rel):
    """Not a fixed-size flat file: refused (object codecs zarrfs does not read) or text."""
    return rel in gen_v2.UNSUPPORTED or rel in gen_v2.TEXT


class MainStore(zfmount.MountedTestCase):
    """One mount of main.zarr for all single-reader checks."""

    @classmethod
    def store_path(cls):
        return MAIN

    @classmethod
    def setUpClass(cls):
        cls.groups, all_arrays = zfmount.walk_store(MAIN)
        cls.arrays = [a for a in all_arrays if not is_unsupported(a)]
        cls.unsupported = [a for a in all_arrays if is_unsupported(a)]
        log("main.zarr: %d groups, %d arrays (+%d unsupported)"
            % (len(cls.groups), len(cls.arrays), len(cls.unsupported)))
        super().setUpClass()

    def test_01_every_array_byte_exact(self):
        """Whole file == ascontiguousarray(z[...]).tobytes(); size == prod(shape)*itemsize."""
        per_cat = {}
        for rel in self.arrays:
            with self.subTest(array=rel):
                z, want = expected(MAIN, rel)
                self.assertEqual(len(want), int(np.prod(z.shape, dtype=np.int64)) * z.dtype.itemsize)
                p = self.m.path(rel)
                st = os.stat(p)
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s: not a regular file" % rel)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % rel)
                self.assertBytesEqual(zfmount.read_all(p), want, rel)
                cat = rel.split("/")[0]
                per_cat[cat] = per_cat.get(cat, 0) + 1
        for cat, n in sorted(per_cat.items()):
            log("  %-12s %3d arrays byte-identical" % (cat, n))

    def test_02_fill_values_visible(self):
        """In every fill/ array some chunks are missing and read as the fill value's bytes."""
        import itertools
        n = 0
        for rel in [a for a in self.arrays if a.startswith("fill/")]:
            with self.subTest(array=rel):
                z, want = expected(MAIN, rel)
                present, grid = zfmount.chunk_keys_present(z)
                missing = [i for i in itertools.product(*[range(g) for g in grid]) if i not in present]
                self.assertTrue(missing, "%s: generator left no chunk missing" % rel)
                if z.fill_value is None:
                    fill = bytes(z.dtype.itemsize)
                else:
                    fill = zfmount.canonical_nans(np.array([z.fill_value], dtype=z.dtype)).tobytes()
                idx = missing[0]
                elem = tuple(i * c for i, c in zip(idx, z.chunks))
                flat = int(np.ravel_multi_index(elem, z.shape)) if z.ndim else 0
                isz = z.dtype.itemsize
                fd = os.open(self.m.path(rel), os.O_RDONLY)
                try:
                    got = zfmount.pread_full(fd, isz, flat * isz)
                finally:
                    os.close(fd)
                self.assertBytesEqual(got, fill, "%s: element %r in missing chunk %r" % (rel, elem, idx))
                n += 1
        log("  %d fill values read back exactly in missing chunks" % n)

    def _random_preads(self, flags, per_array, label):
        rng = random.Random(99)
        n = 0
        for rel in self.arrays:
            with self.subTest(array=rel):
                z, want = expected(MAIN, rel)
                size = len(want)
                fd = os.open(self.m.path(rel), os.O_RDONLY | flags)
                try:
                    if not flags:
                        zfmount.drop_page_cache(fd)
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    for _ in range(per_array):
                        r = rng.random()
                        if r < 0.1:
                            off = max(0, size - rng.randrange(0, 64))
                        else:
                            off = rng.randrange(0, size + 1)
                        ln = rng.choice([0, 1, 2, 5, 8, 17, 511, 4096, 4097, 65536,
                                         rng.randrange(0, max(1, size)) + 1])
                        if not flags:
                            # forget cached pages so that every pread reaches the daemon
                            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        got = zfmount.pread_full(fd, ln, off)
                        self.assertBytesEqual(got, want[off:off + ln],
                                              "%s %s pread(len=%d, off=%d)" % (label, rel, ln, off))
                        n += 1
                finally:
                    os.close(fd)
        return n

    def test_03_random_preads(self):
        """200 preads per array at random offsets/lengths (page cache dropped before each, no readahead)."""
        n = self._random_preads(0, 200, "buffered")
        log("  %d random preads matched" % n)

    def test_04_odirect_preads(self):
        """O_DIRECT preads at unaligned offsets reach the daemon as they are."""
        probe = self.m.path(self.arrays[0])
        try:
            os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
        except OSError as e:
            self.skipTest("O_DIRECT open refused (%s); buffered preads cover reads" % e)
        n = self._random_preads(os.O_DIRECT, 40, "O_DIRECT")
        log("  %d O_DIRECT preads matched" % n)

    def test_05_reads_at_and_past_eof(self):
        """pread at EOF returns b'', across EOF returns the short tail, past EOF returns b''."""
        n = 0
        for rel in self.arrays:
            z, want = expected(MAIN, rel)
            size = len(want)
            with self.subTest(array=rel):
                fd = os.open(self.m.path(rel), os.O_RDONLY)
                try:
                    self.assertEqual(os.pread(fd, 4096, size), b"", "%s: read at EOF" % rel)
                    self.assertEqual(os.pread(fd, 10, size + 12345), b"", "%s: read past EOF" % rel)
                    self.assertEqual(os.pread(fd, 1, 1 << 40), b"", "%s: read at 1 TiB" % rel)
                    if size:
                        tail = min(size, 10)
                        self.assertBytesEqual(zfmount.pread_full(fd, 100, size - tail), want[-tail:],
                                              "%s: read across EOF" % rel)
                        self.assertEqual(zfmount.pread_full(fd, 1, size - 1), want[-1:])
                    # sequential read() to the end then one more
                    os.lseek(fd, 0, os.SEEK_SET)
                    got = b""
                    while True:
                        b = os.read(fd, 65536)
                        if not b:
                            break
                        got += b
                    self.assertEqual(len(got), size)
                    self.assertEqual(os.read(fd, 10), b"")
                finally:
                    os.close(fd)
                n += 1
        log("  EOF behaviour right on %d arrays (incl. zero-length ones)" % n)

    def test_06_mmap(self):
        """mmap of every non-empty file equals the expected bytes."""
        n = 0
        for rel in self.arrays:
            z, want = expected(MAIN, rel)
            if not want:
                continue
            with self.subTest(array=rel):
                with open(self.m.path(rel), "rb") as f:
                    zfmount.drop_page_cache(f.fileno())
                    with zfmount.mmap_read(f.fileno()) as mm:
                        self.assertEqual(len(mm), len(want))
                        self.assertBytesEqual(mm[:], want, "mmap " + rel)
                        # scattered single-byte accesses fault pages in out of order
                        for off in range(len(want) - 1, -1, -max(1, len(want) // 7)):
                            self.assertEqual(mm[off], want[off])
                n += 1
        log("  %d files mmapped and compared" % n)

    def test_07_numpy_memmap(self):
        """numpy.memmap(file, dtype=zarray dtype, shape=zarray shape) == z[...] (values)."""
        n = 0
        for rel in self.arrays:
            z, want = expected(MAIN, rel)
            if not want or z.ndim == 0:
                continue
            with self.subTest(array=rel):
                with open(os.path.join(MAIN, rel, ".zarray")) as f:
                    meta = json.load(f)
                dt = Metadata2.decode_dtype(meta["dtype"])
                mm = np.memmap(self.m.path(rel), dtype=dt, shape=tuple(meta["shape"]),
                               mode=zfmount.MEMMAP_READ)
                try:
                    ref = np.frombuffer(want, dtype=z.dtype).reshape(z.shape)
                    if dt.kind in "fc":
                        self.assertTrue(np.array_equal(mm, ref, equal_nan=True), rel)
                    elif dt.kind in "mM":
                        self.assertTrue(np.array_equal(mm.view("i8"), ref.view("i8")), rel)
                    elif dt.fields is None:
                        self.assertTrue(np.array_equal(mm, ref), rel)
                    self.assertEqual(mm.tobytes(), want)
                    if z.fill_value is not None and dt.kind in "biu":
                        # values, not only bytes, agree with zarr-python's own read
                        self.assertTrue(np.array_equal(mm, z[...]), rel + " vs z[...]")
                finally:
                    del mm
                n += 1
        log("  %d arrays read through numpy.memmap" % n)

    def test_08_ls_sizes(self):
        """`ls -lnA` of every group: types and sizes as zarr-python says."""
        n = 0
        for grel in self.groups:
            d = self.m.path(grel) if grel else self.m.mnt
            r = zfmount.run(["ls", "-lnA", "--time-style=+%s", d])
            self.assertEqual(r.returncode, 0, "ls %s: %s" % (d, r.stderr))
            rows = {}
            for line in r.stdout.splitlines()[1:]:
                parts = line.split(None, 6)
                rows[parts[6]] = (parts[0][0], int(parts[4]))
            g = zarr.open_group(store=zarr.DirectoryStore(MAIN), mode="r")
            g = g[grel] if grel else g
            want = {}
            for name in g.group_keys():
                want[name] = "d"
            for name in g.array_keys():
                want[name] = "-"
            self.assertEqual(sorted(rows), sorted(want), "ls of /%s" % grel)
            for name, kind in want.items():
                self.assertEqual(rows[name][0], kind, "/%s/%s type" % (grel, name))
                rel = "%s/%s" % (grel, name) if grel else name
                if kind == "-" and not is_unsupported(rel):
                    z, w = expected(MAIN, rel)
                    self.assertEqual(rows[name][1], len(w), "ls size of %s" % rel)
                    n += 1
        log("  ls -l sizes right for %d files in %d groups" % (n, len(self.groups)))

    def test_09_xattrs(self):
        """user.zarr.* of every group and array (incl. unsupported ones) vs the stored documents."""
        for grel in self.groups:
            with self.subTest(group=grel or "/"):
                zfmount.check_node_xattrs(self, self.m.path(grel) if grel else self.m.mnt,
                                          os.path.join(MAIN, grel), is_array=False)
        for rel in self.arrays:
            with self.subTest(array=rel):
                z, _ = expected(MAIN, rel)
                zfmount.check_node_xattrs(self, self.m.path(rel), os.path.join(MAIN, rel),
                                          is_array=True, zarr_obj=z)
        for rel in self.unsupported:
            with self.subTest(array=rel):
                zfmount.check_node_xattrs(self, self.m.path(rel), os.path.join(MAIN, rel),
                                          is_array=True)
        # spot checks of values that are easy to get wrong
        p = self.m.path("fill/u8_max")
        self.assertEqual(json.loads(os.getxattr(p, "user.zarr.fill_value")), 18446744073709551615)
        p = self.m.path("fill/i8_2p53p1")
        self.assertEqual(json.loads(os.getxattr(p, "user.zarr.fill_value")), 2 ** 53 + 1)
        p = self.m.path("attrs/g1/g2/g3/deep")
        self.assertEqual(json.loads(os.getxattr(p, "user.zarr.dimension_names")), ["y", "x"])
        with self.subTest(spot="0-d shape and chunks are []"):
            p = self.m.path("shapes/zerod_f8")
            self.assertEqual(os.getxattr(p, "user.zarr.shape").replace(b" ", b""), b"[]")
            self.assertEqual(os.getxattr(p, "user.zarr.chunks").replace(b" ", b""), b"[]")
        log("  xattrs of %d groups and %d arrays match" % (len(self.groups),
                                                           len(self.arrays) + len(self.unsupported)))

    def test_10_getfattr(self):
        """`getfattr -d -m user.zarr` shows every array xattr."""
        p = self.m.path("attrs/dims3")
        r = zfmount.run(["getfattr", "-d", "-m", "user.zarr", "-e", "text", "--absolute-names", p])
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [line.split("=", 1)[0] for line in r.stdout.splitlines() if "=" in line]
        self.assertEqual(sorted(names), sorted(zfmount.ARRAY_XATTRS), r.stdout)
        self.assertIn('user.zarr.dtype="<i2"', r.stdout)
        log("  getfattr lists: %s" % ", ".join(sorted(names)))

    def test_11_read_only(self):
        """Every modifying operation fails with EROFS."""
        f = self.m.path("dtypes", "Li4")
        d = self.m.path("attrs")
        E = errno.EROFS
        self.assertErrno(E, os.open, f, os.O_WRONLY)
        self.assertErrno(E, os.open, f, os.O_RDWR)
        self.assertErrno(E, os.open, self.m.path("new"), os.O_WRONLY | os.O_CREAT, 0o644)
        self.assertErrno(E, os.mkdir, self.m.path("newdir"))
        self.assertErrno(E, os.unlink, f)
        self.assertErrno(E, os.rmdir, self.m.path("attrs", "empty_group"))
        self.assertErrno(E, os.rename, f, self.m.path("dtypes", "renamed"))
        self.assertErrno(E, os.truncate, f, 0)
        self.assertErrno(E, os.chmod, f, 0o777)
        self.assertErrno(E, os.chown, f, 1, 1)
        self.assertErrno(E, os.utime, f, (1, 1))
        self.assertErrno(E, os.symlink, "x", self.m.path("link"))
        self.assertErrno(E, os.link, f, self.m.path("hardlink"))
        self.assertErrno(E, os.setxattr, f, "user.zarr.attributes", b"{}")
        self.assertErrno(E, os.setxattr, d, "user.other", b"1")
        self.assertErrno(E, os.removexattr, f, "user.zarr.attributes")
        # the data did not change
        z, want = expected(MAIN, "dtypes/Li4")
        self.assertBytesEqual(zfmount.read_all(f), want, "dtypes/Li4 after refused writes")
        log("  17 modifying operations refused with EROFS")

    def test_12_unsupported_dtypes(self):
        """Object-dtype arrays are listed; open fails EOPNOTSUPP; the log names dtype or codec."""
        names = os.listdir(self.m.path("unsupported"))
        for rel in gen_v2.TEXT:  # strings and bytes (ASCII here): text, what zarr-python reads
            z = zfmount.open_zarr_array(os.path.join(MAIN, rel))
            self.assertEqual(zfmount.read_all(self.m.path(rel)).decode(),
                             "".join((v.decode("ascii") if isinstance(v, bytes) else v) + "\n"
                                     for v in z[...]))
        for rel in gen_v2.JSON_LINES:  # json2, vlen-array: one JSON document a line
            z = zfmount.open_zarr_array(os.path.join(MAIN, rel))
            got = [json.loads(ln) for ln in zfmount.read_all(self.m.path(rel)).splitlines()]
            self.assertEqual(got, [v.tolist() if isinstance(v, np.ndarray) else v
                                   for v in z[...]], rel)
        refused = [r for r in self.unsupported if r not in gen_v2.TEXT + gen_v2.JSON_LINES]
        for rel in refused:
            with self.subTest(array=rel):
                self.assertIn(os.path.basename(rel), names)
                st = os.stat(self.m.path(rel))
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s listed as a file" % rel)
                self.assertErrno(errno.EOPNOTSUPP, os.open, self.m.path(rel), os.O_RDONLY)
        z, want = expected(MAIN, "unsupported/supported_sibling")
        self.assertBytesEqual(zfmount.read_all(self.m.path("unsupported/supported_sibling")), want,
                              "supported sibling")
        err = self.m.stderr_text()
        for rel in refused:
            with open(os.path.join(MAIN, rel, ".zarray")) as f:
                meta = json.load(f)
            ids = [c["id"] for c in (meta.get("filters") or [])]
            self.assertTrue(any(s in err for s in ids + ["|O", "object"]),
                            "daemon log does not name the dtype (|O) or codec %r for %s; log:\n%s"
                            % (ids, rel, err[-2000:]))
        log("  %d object-dtype arrays listed, EOPNOTSUPP on open, named in the log"
            % len(self.unsupported))

    def test_13_statfs_and_root(self):
        """statfs works; the mount root is a directory with the root group's xattrs."""
        sv = os.statvfs(self.m.mnt)
        self.assertGreater(sv.f_namemax, 0)
        self.assertTrue(stat.S_ISDIR(os.stat(self.m.mnt).st_mode))
        g = zarr.open_group(store=zarr.DirectoryStore(MAIN), mode="r")
        self.assertEqual(json.loads(os.getxattr(self.m.mnt, "user.zarr.attributes")), g.attrs.asdict())
        self.assertErrno(errno.ENOENT, os.stat, self.m.path("no_such_node"))
        self.assertErrno(errno.ENOENT, os.stat, self.m.path("dtypes", "no_such_array"))
        self.assertErrno(errno.ENOTDIR, os.stat, self.m.path("dtypes", "Li4", "x"))
        self.assertErrno(errno.ENOTDIR, os.listdir, self.m.path("dtypes", "Li4"))
        dfd = os.open(self.m.path("dtypes"), os.O_RDONLY)
        try:
            self.assertErrno(errno.EISDIR, os.read, dfd, 10)
        finally:
            os.close(dfd)
        log("  statfs, root xattrs, ENOENT/ENOTDIR/EISDIR right")

    def test_14_reopen_and_many_fds(self):
        """100 simultaneously open descriptors over different arrays all read right."""
        fds = []
        try:
            for rel in self.arrays[:100]:
                fds.append((rel, os.open(self.m.path(rel), os.O_RDONLY)))
            for rel, fd in reversed(fds):
                z, want = expected(MAIN, rel)
                self.assertBytesEqual(zfmount.pread_full(fd, len(want) + 1, 0), want, rel)
        finally:
            for _rel, fd in fds:
                os.close(fd)
        self.assertDaemonAlive()
        log("  %d descriptors open at once, all read right" % len(fds))


    def test_15_find_and_deep_paths(self):
        """`find` sees every group and array (directory link counts must not mislead it)."""
        r = zfmount.run(["find", self.m.mnt, "-mindepth", "1"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = sorted(os.path.relpath(p, self.m.mnt) for p in r.stdout.splitlines())
        want = sorted([g for g in self.groups if g] + self.arrays + self.unsupported)
        self.assertEqual(got, want)
        r = zfmount.run(["find", self.m.mnt, "-type", "f"], timeout=60)
        self.assertEqual(len(r.stdout.splitlines()), len(self.arrays) + len(self.unsupported))
        deep = "deep/" + "/".join("l%02d" % i for i in range(30)) + "/leaf"
        z, want_b = expected(MAIN, deep)
        self.assertBytesEqual(zfmount.read_all(self.m.path(deep)), want_b, deep)
        log("  find lists %d nodes; a 31-level deep array reads right" % len(got))


class Wide(zfmount.MountedTestCase):
    """A group with 600 children with 100-character names: readdir across several buffers."""

    @classmethod
    def store_path(cls):
        return WIDE

    def test_01_listing(self):
        g = zarr.open_group(store=zarr.DirectoryStore(WIDE), mode="r")
        want = sorted(list(g.group_keys()) + list(g.array_keys()))
        self.assertEqual(len(want), 600)
        for k in range(2):
            got = os.listdir(self.m.mnt)
            self.assertEqual(len(got), len(set(got)), "duplicate names in readdir")
            self.assertEqual(sorted(got), want)
        with os.scandir(self.m.mnt) as it:
            kinds = {e.name: e.is_dir(follow_symlinks=False) for e in it}
        for name in g.group_keys():
            self.assertTrue(kinds[name], name)
        for name in g.array_keys():
            self.assertFalse(kinds[name], name)
        r = zfmount.run(["ls", "-lnA", self.m.mnt])
        self.assertEqual(len(r.stdout.splitlines()) - 1, 600)
        log("  600 entries listed (twice, and with scandir types and ls -l)")

    def test_02_every_file(self):
        n = 0
        for name in os.listdir(WIDE):
            if os.path.exists(os.path.join(WIDE, name, ".zarray")):
                z, want = expected(WIDE, name)
                self.assertBytesEqual(zfmount.read_all(self.m.path(name)), want, name)
                n += 1
        log("  %d arrays in the wide group read right" % n)


class TinyCache(zfmount.MountedTestCase):
    """cache_size=256K, smaller than one 4 MiB chunk and than a 512 KiB band."""

    mount_options = ("cache_size=256K",)

    @classmethod
    def store_path(cls):
        return TINY

    def test_01_whole_and_random(self):
        rng = random.Random(5)
        for rel in ["one_chunk_4MiB", "bands_512KiB", "f_order_bands"]:
            with self.subTest(array=rel):
                z, want = expected(TINY, rel)
                p = self.m.path(rel)
                zfmount.drop_page_cache(p)
                t0 = time.monotonic()
                self.assertBytesEqual(zfmount.read_all(p), want, rel)
                dt = time.monotonic() - t0
                fd = os.open(p, os.O_RDONLY)
                try:
                    for _ in range(100):
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        off = rng.randrange(0, len(want))
                        ln = rng.choice([1, 4096, 100000, 1 << 20])
                        self.assertBytesEqual(zfmount.pread_full(fd, ln, off), want[off:off + ln],
                                              "%s pread(%d, %d)" % (rel, ln, off))
                finally:
                    os.close(fd)
                log("  %-16s %7d bytes right with a 256 KiB cache (whole read %.2f s)"
                    % (rel, len(want), dt))


    def test_02_concurrent_stress(self):
        """8 threads, O_DIRECT random reads over all three arrays for ~4 s with the tiny cache:
        constant eviction while other threads decode and copy (races show up here, or under ASan)."""
        names = ["one_chunk_4MiB", "bands_512KiB", "f_order_bands"]
        wants = {n: expected(TINY, n)[1] for n in names}
        errors, counts = [], [0] * NREADERS
        stop = time.monotonic() + 4

        def work(i):
            rng = random.Random(1000 + i)
            fds = {}
            try:
                for n in names:
                    try:
                        fds[n] = os.open(self.m.path(n), os.O_RDONLY | os.O_DIRECT)
                    except OSError:
                        fds[n] = os.open(self.m.path(n), os.O_RDONLY)
                while time.monotonic() < stop and not errors:
                    n = rng.choice(names)
                    want = wants[n]
                    off = rng.randrange(0, len(want))
                    ln = rng.choice([1, 333, 4096, 70000, 300000])
                    got = zfmount.pread_full(fds[n], ln, off)
                    if got != want[off:off + ln]:
                        errors.append("thread %d: %s pread(%d, %d) wrong" % (i, n, ln, off))
                    counts[i] += 1
            except OSError as e:
                errors.append("thread %d: %s" % (i, e))
            finally:
                for fd in fds.values():
                    os.close(fd)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(NREADERS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=120)
        self.assertFalse(any(t.is_alive() for t in ts), "a stress thread hung")
        self.assertFalse(errors, "\n".join(errors[:10]))
        self.assertDaemonAlive()
        log("  %d concurrent random reads right under constant cache eviction" % sum(counts))


def zarr_range_bytes(z, off, ln):
    """Bytes [off, off+ln) of the flat C-order file of z, from zarr-python element reads."""
    isz = z.dtype.itemsize
    total = int(np.prod(z.shape, dtype=object)) * isz
    end = min(off + ln, total)
    if end <= off:
        return b""
    first, last = off // isz, (end - 1) // isz
    raw = b""
    for f in range(first, last + 1):
        idx, rem = [], f
        for d in range(z.ndim - 1, -1, -1):
            idx.append(rem % z.shape[d])
            rem //= z.shape[d]
        # one element at a time: zarr's coordinate selection allocates per chunk of the grid
        raw += np.asarray(z[tuple(reversed(idx))], dtype=z.dtype).tobytes()
    return raw[off - first * isz:end - first * isz]


class HugeSparse(zfmount.MountedTestCase):
    """Files of 2^62 bytes: st_size, preads near 0, the middle, real chunks and the very end."""

    @classmethod
    def store_path(cls):
        return HUGE

    def test_01_huge_offsets(self):
        rng = random.Random(11)
        n = 0
        for rel in ["u1_2p62", "f8_2p59", "u2_2d", "i4_4d"]:
            with self.subTest(array=rel):
                z = zarr.open_array(os.path.join(HUGE, rel), mode="r")
                size = int(np.prod(z.shape, dtype=object)) * z.dtype.itemsize
                self.assertEqual(os.stat(self.m.path(rel)).st_size, size, rel)
                offs = [0, size - 64, size - 1, size // 2 - 5, size // 3]
                if rel == "u1_2p62":
                    offs.append(2 ** 61 - 10)
                if rel == "u2_2d":
                    offs.append((12345 * 2 ** 30 + 2 ** 29) * 2 - 6)
                    offs.append((12346 * 2 ** 30 + 2 ** 29) * 2 - 6)
                offs += [rng.randrange(0, size) for _ in range(20)]
                fd = os.open(self.m.path(rel), os.O_RDONLY)
                try:
                    for off in offs:
                        ln = 64
                        want = zarr_range_bytes(z, off, ln)
                        got = zfmount.pread_full(fd, ln, off)
                        self.assertBytesEqual(got, want, "%s pread(64, %d)" % (rel, off))
                        n += 1
                    self.assertEqual(os.pread(fd, 10, size), b"")
                finally:
                    os.close(fd)
        log("  %d preads into 2^62-byte files right (fill, real chunks, the last bytes)" % n)


class Consolidated(zfmount.MountedTestCase):
    """.zmetadata present: zarrfs must use it (one .zarray deleted on disk, attributes changed)."""

    @classmethod
    def store_path(cls):
        return CONS

    def zc(self):
        return zarr.open_consolidated(zarr.DirectoryStore(CONS), mode="r")

    def test_01_arrays_via_consolidated(self):
        g = self.zc()
        n = 0
        arrays = []
        g.visitvalues(lambda v: arrays.append(v) if isinstance(v, zarr.Array) else None)
        self.assertIn("meta_only", [a.path for a in arrays])
        self.assertFalse(os.path.exists(os.path.join(CONS, "meta_only", ".zarray")))
        for z in arrays:
            with self.subTest(array=z.path):
                want = zfmount.expected_bytes(z)
                p = self.m.path(z.path)
                self.assertEqual(os.stat(p).st_size, len(want), z.path)
                self.assertBytesEqual(zfmount.read_all(p), want, z.path)
                n += 1
        log("  %d arrays byte-identical to zarr.open_consolidated (incl. meta_only, "
            "whose .zarray exists only in .zmetadata)" % n)

    def test_02_listing_and_xattrs_from_zmetadata(self):
        g = self.zc()
        with open(os.path.join(CONS, ".zmetadata")) as f:
            cm = json.load(f)["metadata"]
        groups, arrays = [""], []
        g.visitvalues(lambda v: (arrays if isinstance(v, zarr.Array) else groups).append(v.path))
        for grel in groups:
            gg = g[grel] if grel else g
            with self.subTest(group=grel or "/"):
                got = os.listdir(self.m.path(grel) if grel else self.m.mnt)
                self.assertEqual(sorted(got), sorted(list(gg.group_keys()) + list(gg.array_keys())))
                pre = grel + "/" if grel else ""
                zfmount.check_node_xattrs(self, self.m.path(grel) if grel else self.m.mnt, None,
                                          is_array=False, meta=cm[pre + ".zgroup"],
                                          attrs=gg.attrs.asdict())
        for rel in arrays:
            with self.subTest(array=rel):
                zfmount.check_node_xattrs(self, self.m.path(rel), None, is_array=True,
                                          meta=cm[rel + "/.zarray"], attrs=g[rel].attrs.asdict(),
                                          zarr_obj=g[rel])
        self.assertEqual(json.loads(os.getxattr(self.m.path("attrs_changed"), "user.zarr.attributes")),
                         {"version": "consolidated"})
        self.assertEqual(json.loads(os.getxattr(self.m.mnt, "user.zarr.attributes")),
                         {"where": "consolidated root"})
        self.assertTrue(os.path.exists(os.path.join(CONS, "added_later", ".zarray")))
        self.assertNotIn("added_later", os.listdir(self.m.mnt),
                         "a node missing from .zmetadata is listed (zarr.open_consolidated omits it)")
        log("  listings and xattrs come from .zmetadata (%d groups, %d arrays)"
            % (len(groups), len(arrays)))


# ---------------------------------------------------------------------------------------------
# concurrency over the 64 MiB array

BLOCK = (1 << 20) + 12345      # deliberately not aligned to chunks, rows or pages
NREADERS = 8


def _reader_ranges(size, i, rng_seed):
    rng = random.Random(rng_seed * 100 + i)
    ranges = [(off, min(BLOCK, size - off)) for off in range(i * BLOCK, size, NREADERS * BLOCK)]
    ranges += [(rng.randrange(0, size), rng.choice([1, 8, 4096, 100000])) for _ in range(100)]
    rng.shuffle(ranges)
    return ranges


def _check_ranges(path, want, i, seed):
    """Read this reader's ranges with its own descriptor; None or a failure message."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return "reader %d: open: %s" % (i, e)
    try:
        for off, ln in _reader_ranges(len(want), i, seed):
            try:
                got = zfmount.pread_full(fd, ln, off)
            except OSError as e:
                return "reader %d: pread(%d, %d): %s" % (i, ln, off, e)
            if got != want[off:off + ln]:
                k = next((j for j in range(min(len(got), ln)) if got[j] != want[off + j]), len(got))
                return ("reader %d: pread(len=%d, off=%d): %d bytes, first difference at file "
                        "offset %d" % (i, ln, off, len(got), off + k))
        return None
    finally:
        os.close(fd)


_BIG_WANT = None


def _proc_reader(args):
    path, i, seed = args
    return _check_ranges(path, _BIG_WANT, i, seed)


def big_expected():
    global _BIG_WANT
    if _BIG_WANT is None:
        z = zarr.open_array(BIG, mode="r")
        _BIG_WANT = zfmount.expected_bytes(z)
        assert len(_BIG_WANT) == 64 << 20
    return _BIG_WANT


class BigThreads(zfmount.MountedTestCase):
    """64 MiB zstd array, default cache: whole read, 8 reader threads, mmap."""

    @classmethod
    def store_path(cls):
        return BIG

    def test_01_whole_file(self):
        want = big_expected()
        p = self.m.path("big")
        self.assertEqual(os.listdir(self.m.mnt), ["big"])
        self.assertEqual(os.stat(p).st_size, len(want))
        t0 = time.monotonic()
        got = zfmount.read_all(p)
        dt = time.monotonic() - t0
        self.assertBytesEqual(got, want, "big (whole read)")
        log("  64 MiB read whole in %.2f s (%.0f MB/s, cold daemon cache)" % (dt, len(got) / dt / 1e6))

    def test_02_eight_threads(self):
        want = big_expected()
        p = self.m.path("big")
        zfmount.drop_page_cache(p)
        results = [None] * NREADERS

        def work(i):
            results[i] = _check_ranges(p, want, i, 1)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(NREADERS)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=240)
        self.assertFalse(any(t.is_alive() for t in ts), "a reader thread hung")
        fails = [r for r in results if r]
        self.assertFalse(fails, "\n".join(fails))
        log("  %d threads read their ranges concurrently, all right (%.2f s)"
            % (NREADERS, time.monotonic() - t0))

    def test_03_mmap_two_threads(self):
        want = big_expected()
        p = self.m.path("big")
        zfmount.drop_page_cache(p)
        errs = []
        with open(p, "rb") as f:
            with zfmount.mmap_read(f.fileno()) as mm:
                def work(lo, hi, step):
                    for off in range(lo, hi, step):
                        if mm[off:off + 8] != want[off:off + 8]:
                            errs.append(off)
                            return
                half = len(want) // 2
                ts = [threading.Thread(target=work, args=(half, len(want), 4093)),
                      threading.Thread(target=work, args=(0, half, 4091))]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join(timeout=240)
                self.assertBytesEqual(mm[:], want, "mmap of big")
        self.assertFalse(errs, "mmap mismatch at offsets %r" % errs[:5])
        log("  64 MiB mmap read by 2 threads, right")


class BigProcessesSmallCache(zfmount.MountedTestCase):
    """8 reader processes at once, daemon cache (16 MiB) smaller than the array (64 MiB)."""

    mount_options = ("cache_size=16M",)

    @classmethod
    def store_path(cls):
        return BIG

    def test_01_eight_processes(self):
        big_expected()
        p = self.m.path("big")
        zfmount.drop_page_cache(p)
        ctx = multiprocessing.get_context("fork")
        t0 = time.monotonic()
        with ctx.Pool(NREADERS) as pool:
            res = pool.map_async(_proc_reader, [(p, i, 2) for i in range(NREADERS)])
            results = res.get(timeout=300)
        fails = [r for r in results if r]
        self.assertFalse(fails, "\n".join(fails))
        log("  %d processes read their ranges concurrently with cache_size=16M, all right (%.2f s)"
            % (NREADERS, time.monotonic() - t0))

    def test_03_one_huge_pread(self):
        """A single 64 MiB pread (the kernel splits it) returns everything."""
        want = big_expected()
        fd = os.open(self.m.path("big"), os.O_RDONLY)
        try:
            zfmount.drop_page_cache(fd)
            got = zfmount.pread_full(fd, len(want) + 4096, 0)
        finally:
            os.close(fd)
        self.assertBytesEqual(got, want, "one 64 MiB pread")
        log("  one 64 MiB pread right")

    def test_02_two_sequential_passes(self):
        want = big_expected()
        p = self.m.path("big")
        for k in range(2):
            zfmount.drop_page_cache(p)
            self.assertBytesEqual(zfmount.read_all(p, bufsize=3 << 20), want, "pass %d" % k)
        log("  two sequential passes with cache_size=16M, right")
        self.assertDaemonAlive()


if __name__ == "__main__":
    zfmount.main()
