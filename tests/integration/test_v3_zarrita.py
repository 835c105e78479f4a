#!/usr/bin/python3
"""Final Zarr v3 through zarrfs, with zarrita (npm, pinned in js/package-lock.json) as the reference.

* ZarritaFixture: tests/fixtures/zarrita-fixtures/v3/data.zarr mounted; every array of a
  fixed-size data type byte-exact with zarrita's own read of it (js/zarrita_read.mjs), random
  preads, listings, xattrs; variable-length string arrays read as text; its
  "consolidated" group (inline consolidated_metadata agreeing with the per-node documents), also
  mounted as the store root.
* ZarritaWritten: hierarchies written by zarrita (js/zarrita_write.mjs, described in
  gen_v3_zarrita.py): every data type zarrita writes, bytes little/big, gzip, zstd, blosc
  (every cname and shuffle), transpose, crc32c, numcodecs.lz4/shuffle, both chunk key encodings
  and separators, 0-d and zero-length arrays, edge chunks, chunks never written (fill values,
  non-zero), nested groups with attributes, dimension_names. Each file is compared with zarrita's
  read AND with the numpy-built expected array.
* ConsolidatedRoot: a root zarr.json with consolidated_metadata (as zarr-python 3 writes it) that
  disagrees with the per-node documents; the view must be the consolidated one (zarrita's
  withConsolidatedMetadata gives the expected arrays and node list).
* HandBuilt: data types and fill values zarrita cannot write (complex64/128, r16/r24 raw, NaN
  payload / hex fill values, extreme 64-bit fills, must_understand: false extras), built with numpy
  from the Zarr v3 spec, data types and codecs/bytes.

Expected values come from zarrita, numpy and the stored documents, never from zarrfs.
"""

import errno
import json
import mmap
import os
import random
import shutil
import stat
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import gen_v3_zarrita as gz  # noqa: E402

import numpy as np  # noqa: E402

FIXTURE = os.path.join(zfmount.FIXTURES, "zarrita-fixtures", "v3", "data.zarr")
WORK = None
WRITTEN = None          # the zarrita-written store
NODES = None            # gen_v3_zarrita.nodes()
_zr_cache = {}


def setUpModule():
    global WORK, WRITTEN, NODES
    if not gz.node_modules_ok():
        raise RuntimeError("zarrita is not installed: run `npm ci --prefix tests/integration/js` "
                           "(scripts/test.sh does)")
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-v3-")
    t0 = time.monotonic()
    WRITTEN = os.path.join(WORK, "zarrita.zarr")
    NODES = gz.write(WRITTEN)
    # a directory without zarr.json and without sub-directories is no node (no node can lie
    # below it; one with sub-directories is an implicit group: test_implicit_groups.py)
    c3.write_files(WRITTEN, {"g1/not_a_node/0.0": b"\x00" * 8, "g1/not_a_node/readme.txt": "x"})
    log("zarrita wrote %d nodes into %s (%.1f s)" % (len(NODES), WRITTEN, time.monotonic() - t0))


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def zarrita(store, paths, consolidated=False):
    """zarrita's read of arrays (cached per store)."""
    key = (store, tuple(paths), consolidated)
    if key not in _zr_cache:
        out = tempfile.mkdtemp(prefix="zr-", dir=WORK)
        _zr_cache[key] = gz.zarrita_read(store, paths, out, consolidated=consolidated)
    return _zr_cache[key]


def random_preads(tc, path, want, rng, n=40, what=None):
    fd = os.open(path, os.O_RDONLY)
    try:
        zfmount.drop_page_cache(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        size = len(want)
        for _ in range(n):
            off = rng.randrange(0, size + 1)
            ln = rng.choice([1, 2, 3, 7, 8, 100, 4096, 5000, rng.randrange(0, size + 10)])
            got = zfmount.pread_full(fd, ln, off)
            tc.assertBytesEqual(got, want[off:off + ln], "%s pread(%d, %d)" % (what or path, ln, off))
        tc.assertEqual(os.pread(fd, 16, size), b"", "%s: read at EOF" % (what or path))
    finally:
        os.close(fd)
    return n


def check_listings(tc, mnt, root, groups):
    for rel in groups:
        with tc.subTest(group=rel or "/"):
            want = c3.children_v3(root, rel)
            got = sorted(os.listdir(os.path.join(mnt, rel) if rel else mnt))
            tc.assertEqual(got, want, "listing of /%s" % rel)
            for name in want:
                with open(os.path.join(root, rel, name, "zarr.json")) as f:
                    kind = json.load(f)["node_type"]
                mode = os.stat(os.path.join(mnt, rel, name)).st_mode
                if kind == "group":
                    tc.assertTrue(stat.S_ISDIR(mode), "%s/%s: a group, not a directory" % (rel, name))
                else:
                    tc.assertTrue(stat.S_ISREG(mode), "%s/%s: an array, not a regular file" % (rel, name))


# ---------------------------------------------------------------------------------------------

class ZarritaFixture(zfmount.MountedTestCase):

    @classmethod
    def store_path(cls):
        if not os.path.isdir(FIXTURE):
            raise RuntimeError("fixture missing: %s" % FIXTURE)
        return FIXTURE

    @classmethod
    def setUpClass(cls):
        cls.groups, all_arrays, cls.docs = c3.walk_v3(FIXTURE)
        cls.arrays = [a for a in all_arrays if c3.is_fixed_size(cls.docs[a][0]["data_type"])]
        cls.strings = [a for a in all_arrays if a not in cls.arrays]
        cls.zr = zarrita(FIXTURE, all_arrays)
        log("fixture: %d groups, %d fixed-size arrays, %d string arrays"
            % (len(cls.groups), len(cls.arrays), len(cls.strings)))
        super().setUpClass()

    def test_01_every_array_byte_exact(self):
        """Each array file == zarrita's read (C order, little-endian); st_size too."""
        total = 0
        for rel in self.arrays:
            with self.subTest(array=rel):
                r = self.zr[rel]
                self.assertTrue(r["ok"], "zarrita cannot read %s: %s" % (rel, r.get("error")))
                doc = self.docs[rel][0]
                want = r["data"]
                self.assertEqual(len(want), int(np.prod(doc["shape"], dtype=np.int64)) *
                                 np.dtype(c3.v3_typestr(doc["data_type"])).itemsize)
                p = self.m.path(rel)
                st = os.stat(p)
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s: not a regular file" % rel)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % rel)
                self.assertBytesEqual(zfmount.read_all(p), want, rel)
                total += len(want)
        log("  %d arrays byte-identical to zarrita (%d bytes), incl. sharded, transposed, "
            "big-endian, blosc, gzip, numcodecs.delta" % (len(self.arrays), total))

    def test_02_string_arrays_as_text(self):
        """"string" (vlen-utf8) arrays: text, one line per element, the strings zarrita reads
        (escaped: backslash, newline, CR, tab), in C order."""
        self.assertTrue(self.strings, "the fixture has no string arrays?")
        esc = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
        for rel in self.strings:
            with self.subTest(array=rel):
                self.assertTrue(self.zr[rel]["ok"] and "strings" in self.zr[rel],
                                "zarrita reads %s as strings" % rel)
                parent, name = os.path.split(rel)
                self.assertIn(name, os.listdir(self.m.path(parent) if parent else self.m.mnt))
                self.assertTrue(stat.S_ISREG(os.stat(self.m.path(rel)).st_mode))
                want = "".join("".join(esc.get(ch, ch) for ch in v) + "\n"
                               for v in self.zr[rel]["strings"])
                got = zfmount.read_all(self.m.path(rel)).decode("utf-8")
                self.assertEqual(got, want)
                self.assertEqual(os.stat(self.m.path(rel)).st_size, len(want.encode()))
        self.assertDaemonAlive()
        log("  %d string arrays read as text, equal to zarrita's strings" % len(self.strings))

    def test_03_random_preads(self):
        rng = random.Random(31)
        n = 0
        for rel in self.arrays:
            with self.subTest(array=rel):
                n += random_preads(self, self.m.path(rel), self.zr[rel]["data"], rng, 15, rel)
        log("  %d random preads matched" % n)

    def test_04_listings(self):
        """Every group lists exactly its child nodes; groups are directories, arrays files."""
        check_listings(self, self.m.mnt, FIXTURE, self.groups)
        self.assertEqual(os.listdir(self.m.path("my group with spaces")), [])
        self.assertNotIn("zarr.json", os.listdir(self.m.mnt))
        self.assertErrno(errno.ENOENT, os.stat, self.m.path("zarr.json"))
        self.assertErrno((errno.ENOENT, errno.ENOTDIR), os.stat, self.m.path("1d.chunked.i2", "c"))
        log("  %d group listings match the store's nodes" % len(self.groups))

    def test_05_xattrs(self):
        for rel in self.groups:
            with self.subTest(group=rel or "/"):
                doc, raw = self.docs[rel]
                c3.check_v3_node_xattrs(self, self.m.path(rel) if rel else self.m.mnt, doc, raw,
                                        what=rel or "/")
        for rel in self.arrays:
            with self.subTest(array=rel):
                doc, raw = self.docs[rel]
                c3.check_v3_node_xattrs(self, self.m.path(rel), doc, raw,
                                        typestr=c3.v3_typestr(doc["data_type"]), what=rel)
                self.assertEqual(json.loads(os.getxattr(self.m.path(rel), "user.zarr.shape")),
                                 self.zr[rel]["shape"], "%s: shape differs from zarrita's" % rel)
        log("  xattrs of %d groups and %d arrays match the stored zarr.json"
            % (len(self.groups), len(self.arrays)))

    def test_06_consolidated_group(self):
        """The "consolidated" group's inline consolidated_metadata names the same nodes as the
        per-node documents; listings, attributes and data agree with both."""
        with open(os.path.join(FIXTURE, "consolidated", "zarr.json")) as f:
            cdoc = json.load(f)
        cm = cdoc["consolidated_metadata"]
        self.assertEqual(cm["kind"], "inline")
        md = cm["metadata"]
        self.assertEqual(sorted(md), ["1d.chunked.i2", "2d.contiguous.i2", "nested", "nested/1d.i2"])
        top = sorted({k.split("/")[0] for k in md})
        self.assertEqual(sorted(os.listdir(self.m.path("consolidated"))), top)
        self.assertEqual(os.listdir(self.m.path("consolidated", "nested")), ["1d.i2"])
        self.assertEqual(json.loads(os.getxattr(self.m.path("consolidated"), "user.zarr.attributes")),
                         {"answer": 42})
        self.assertEqual(json.loads(os.getxattr(self.m.path("consolidated", "nested"),
                                                "user.zarr.attributes")),
                         md["nested"]["attributes"])
        for rel in ("1d.chunked.i2", "2d.contiguous.i2", "nested/1d.i2"):
            p = "consolidated/" + rel
            self.assertBytesEqual(zfmount.read_all(self.m.path(p)), self.zr[p]["data"], p)
            self.assertEqual(json.loads(os.getxattr(self.m.path(p), "user.zarr.shape")),
                             md[rel]["shape"])
        log("  consolidated/: %d consolidated entries, listings/attributes/data agree" % len(md))

    def test_07_consolidated_group_as_root(self):
        """The "consolidated" group mounted as the store root (its consolidated_metadata is then
        the root's): node list == zarrita withConsolidatedMetadata's, data == zarrita's."""
        root = os.path.join(FIXTURE, "consolidated")
        arrays = ["1d.chunked.i2", "2d.contiguous.i2", "nested/1d.i2"]
        zr = zarrita(root, arrays, consolidated=True)
        known = sorted(x["path"] for x in zr[None])
        self.assertEqual(known, ["/", "/1d.chunked.i2", "/2d.contiguous.i2", "/nested", "/nested/1d.i2"])
        with zfmount.Mount(root, label="consolidated_root") as m:
            self.assertEqual(sorted(os.listdir(m.mnt)), ["1d.chunked.i2", "2d.contiguous.i2", "nested"])
            self.assertTrue(stat.S_ISDIR(os.stat(m.path("nested")).st_mode))
            for rel in arrays:
                self.assertBytesEqual(zfmount.read_all(m.path(rel)), zr[rel]["data"], rel)
            self.assertEqual(json.loads(os.getxattr(m.mnt, "user.zarr.attributes")), {"answer": 42})
        log("  consolidated/ as the root: listing and data match zarrita (consolidated)")

    def test_08_read_only(self):
        p = self.m.path("1d.contiguous.i4")
        self.assertErrno(errno.EROFS, os.open, p, os.O_WRONLY)
        self.assertErrno(errno.EROFS, os.mkdir, self.m.path("newdir"))
        self.assertErrno(errno.EROFS, os.unlink, p)
        log("  EROFS for writes")


# ---------------------------------------------------------------------------------------------

class ZarritaWritten(zfmount.MountedTestCase):

    @classmethod
    def store_path(cls):
        return WRITTEN

    @classmethod
    def setUpClass(cls):
        cls.arrays = {a["path"]: a for a in gz.arrays(NODES)}
        cls.groups = [g["path"] for g in gz.groups(NODES)]
        cls.want = {p: gz.expected(a) for p, a in cls.arrays.items()}
        cls.zr = zarrita(WRITTEN, list(cls.arrays))
        super().setUpClass()

    def test_00_zarrita_agrees_with_numpy(self):
        """Sanity of the fixture (no zarrfs involved): zarrita reads back what numpy expects,
        and the store really holds what the description says (chunk keys, missing chunks,
        blosc shuffle flags, big-endian bytes)."""
        for p, a in self.arrays.items():
            with self.subTest(array=p):
                r = self.zr[p]
                self.assertTrue(r["ok"], "zarrita cannot read back %s: %s" % (p, r.get("error")))
                self.assertBytesEqual(r["data"], self.want[p], "zarrita vs numpy: " + p)
        d = os.path.join(WRITTEN, "keys")
        for name, key in [("default_slash", "c/1/1/0"), ("default_dot", "c.1.1.0"),
                          ("default_noconf", "c/1/1/0"), ("v2_dot", "1.1.0"), ("v2_slash", "1/1/0"),
                          ("v2_noconf", "1.1.0")]:
            self.assertTrue(os.path.isfile(os.path.join(d, name, key)), "keys/%s lacks %s" % (name, key))
        # chunk (1, 0, 2) of keys/* was never written (rows 4-5 were written in chunk (1, 1, 0) only)
        self.assertFalse(os.path.exists(os.path.join(d, "v2_dot", "1.0.2")))
        self.assertFalse(os.path.exists(os.path.join(d, "default_slash", "c", "1", "0", "2")))
        # never-written chunks are absent, so they must read as the fill value
        for dt in gz.DTYPES:
            self.assertFalse(os.path.exists(os.path.join(WRITTEN, "dtypes", dt, "c", "2", "2")))
            self.assertTrue(os.path.exists(os.path.join(WRITTEN, "dtypes", dt, "c", "2", "0")))
        self.assertFalse(os.path.exists(os.path.join(WRITTEN, "big_f32_gzip", "c", "3", "4")))
        self.assertTrue(os.path.isfile(os.path.join(WRITTEN, "zerod", "int32_written", "c")))
        self.assertTrue(os.path.isfile(os.path.join(WRITTEN, "zerod", "uint16_v2key_gzip", "0")))
        self.assertFalse(os.path.exists(os.path.join(WRITTEN, "zerod", "float64_fill", "c")))
        for shuffle, bit in (("noshuffle", 0), ("shuffle", 0x1), ("bitshuffle", 0x4)):
            with open(os.path.join(WRITTEN, "blosc", "zstd_" + shuffle, "c", "0", "0"), "rb") as f:
                flags = f.read(4)[2]
            self.assertEqual(flags & 0x5, bit, "blosc header flags of zstd_%s: %#x" % (shuffle, flags))
        with open(os.path.join(WRITTEN, "big_endian", "int32", "c", "0"), "rb") as f:
            raw = f.read()
        self.assertEqual(raw, gz.values("int32", (50,), self.arrays["big_endian/int32"]["seed"])[:16]
                         .astype(">i4").tobytes())
        log("  zarrita reads back all %d arrays as numpy expects; store layout as described"
            % len(self.arrays))

    def test_01_every_array_byte_exact(self):
        """Each file == numpy's expected bytes == zarrita's read; st_size == prod(shape)*itemsize."""
        total = 0
        for p, a in self.arrays.items():
            with self.subTest(array=p):
                want = self.want[p]
                itemsize = np.dtype(c3.v3_typestr(a["data_type"])).itemsize
                self.assertEqual(len(want), int(np.prod(a["shape"], dtype=np.int64)) * itemsize)
                st = os.stat(self.m.path(p))
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s: not a regular file" % p)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % p)
                got = zfmount.read_all(self.m.path(p))
                self.assertBytesEqual(got, want, p + " (vs numpy)")
                if self.zr[p]["ok"]:
                    self.assertBytesEqual(got, self.zr[p]["data"], p + " (vs zarrita)")
                total += len(want)
        log("  %d zarrita-written arrays byte-identical to numpy and zarrita (%d bytes)"
            % (len(self.arrays), total))

    def test_02_fill_values_where_never_written(self):
        """A never-written chunk reads as the fill value's little-endian bytes (non-zero fills,
        NaN, -inf, high-bit 64-bit integers, float16)."""
        for dt in gz.DTYPES:
            with self.subTest(dtype=dt):
                a = self.arrays["dtypes/" + dt]
                fill = gz.fill_scalar(dt, a["fill_value"]).tobytes()
                itemsize = len(fill)
                # element (6, 8) is in chunk (2, 2), which no write touched
                off = (6 * 9 + 8) * itemsize
                fd = os.open(self.m.path("dtypes", dt), os.O_RDONLY)
                try:
                    got = os.pread(fd, itemsize, off)
                finally:
                    os.close(fd)
                self.assertEqual(got, fill, "dtypes/%s: element (6, 8) is not the fill value" % dt)
        log("  fill values of %d data types read where chunks are missing" % len(gz.DTYPES))

    def test_03_random_preads(self):
        rng = random.Random(32)
        n = 0
        for p in sorted(self.arrays):
            if not self.want[p]:
                continue
            with self.subTest(array=p):
                n += random_preads(self, self.m.path(p), self.want[p], rng,
                                   60 if p == "big_f32_gzip" else 8, p)
        log("  %d random preads matched" % n)

    def test_04_listings(self):
        groups, _arrays, _docs = c3.walk_v3(WRITTEN)
        self.assertEqual(sorted(groups), sorted(self.groups))
        check_listings(self, self.m.mnt, WRITTEN, groups)
        self.assertNotIn("not_a_node", os.listdir(self.m.path("g1")),
                         "a directory without zarr.json or sub-directories is listed")
        self.assertEqual(os.listdir(self.m.path("g1/g2/g3/empty_group")), [])
        self.assertIn("with spaces & symbols", os.listdir(self.m.path("g1")))
        log("  %d group listings match the hierarchy zarrita wrote" % len(groups))

    def test_05_xattrs(self):
        groups, arrays, docs = c3.walk_v3(WRITTEN)
        for rel in groups:
            with self.subTest(group=rel or "/"):
                doc, raw = docs[rel]
                c3.check_v3_node_xattrs(self, self.m.path(rel) if rel else self.m.mnt, doc, raw,
                                        what=rel or "/")
        for rel in arrays:
            with self.subTest(array=rel):
                doc, raw = docs[rel]
                a = self.arrays[rel]
                c3.check_v3_node_xattrs(self, self.m.path(rel), doc, raw,
                                        typestr=gz.TYPESTR[a["data_type"]], what=rel)
        p = self.m.path("g1/g2/g3/leaf")
        self.assertEqual(json.loads(os.getxattr(p, "user.zarr.dimension_names")), ["row", "col"])
        self.assertEqual(json.loads(os.getxattr(p, "user.zarr.attributes")), {"units": "m", "scale": [1, 2]})
        self.assertEqual(json.loads(os.getxattr(self.m.path("g1/dims_partial"),
                                                "user.zarr.dimension_names")), ["t", None, "x"])
        self.assertEqual(os.getxattr(self.m.path("dtypes/uint64"), "user.zarr.fill_value").strip(),
                         b"18446744073709549568")
        self.assertEqual(json.loads(os.getxattr(self.m.mnt, "user.zarr.attributes"))["nested"]["unicode"],
                         "gr\u00fc\u00dfe \u2713")
        log("  xattrs of %d groups and %d arrays match the stored zarr.json" % (len(groups), len(arrays)))

    def test_06_memmap_with_xattr_dtype(self):
        """numpy.memmap(path, dtype=user.zarr.dtype, shape=user.zarr.shape) == the array."""
        for p in ("big_f32_gzip", "dtypes/float16", "transpose/3d_be_gzip", "dtypes/int64"):
            with self.subTest(array=p):
                path = self.m.path(p)
                dt = os.getxattr(path, "user.zarr.dtype").decode()
                dt = json.loads(dt) if dt.startswith('"') else dt
                shape = tuple(json.loads(os.getxattr(path, "user.zarr.shape")))
                mm = np.memmap(path, dtype=dt, mode=zfmount.MEMMAP_READ, shape=shape)
                want = np.frombuffer(self.want[p], dtype=gz.TYPESTR[self.arrays[p]["data_type"]]).reshape(shape)
                self.assertTrue(np.array_equal(np.asarray(mm), want, equal_nan=want.dtype.kind == "f"), p)
                del mm
        with open(self.m.path("big_f32_gzip"), "rb") as f:
            with zfmount.mmap_read(f.fileno()) as mm:
                self.assertBytesEqual(mm[:], self.want["big_f32_gzip"], "mmap big_f32_gzip")
        log("  numpy.memmap with the xattr dtype/shape and mmap agree")

    def test_07_zero_size_and_0d(self):
        for p in ("empty/len0", "empty/3x0", "empty/0x5_gzip"):
            with self.subTest(array=p):
                self.assertEqual(os.stat(self.m.path(p)).st_size, 0)
                self.assertEqual(zfmount.read_all(self.m.path(p)), b"")
        self.assertEqual(zfmount.read_all(self.m.path("zerod/float64_fill")), np.float64(2.5).tobytes())
        self.assertEqual(zfmount.read_all(self.m.path("zerod/bool_written")), b"\x01")
        self.assertEqual(zfmount.read_all(self.m.path("zerod/uint16_v2key_gzip")),
                         gz.values("uint16", (), 14).astype("<u2").tobytes())
        log("  zero-size arrays are empty files; 0-d arrays one element")


# ---------------------------------------------------------------------------------------------

class ConsolidatedRoot(zfmount.MountedTestCase):
    """A root zarr.json with inline consolidated_metadata (zarr-python 3's layout: keys are node
    paths relative to the root, every descendant listed) that differs from the per-node documents:
    an array whose zarr.json was deleted afterwards, attributes changed on disk, a node added
    afterwards. The expected view is the consolidated one, as zarrita's withConsolidatedMetadata
    reads it."""

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "consolidated.zarr")
        cls.nodes = [
            gz._group("", {"where": "consolidated root"}),
            gz._group("sub", {"who": "sub"}),
            gz._group("sub/deeper", {"x": 1}),
            gz._array("sub/a", "float32", (40, 30), (16, 16),
                      [gz._bytes_codec("float32", "big"), {"name": "gzip", "configuration": {"level": 1}}],
                      fill=-9.0, seed=21, writes=[{"sel": [[0, 16], [0, 30]]}, {"sel": [[16, 40], [0, 16]]}],
                      dimension_names=["row", "col"]),
            gz._array("meta_only", "int64", (100,), (30,), seed=22, fill=42,
                      writes=[{"sel": [[0, 30]]}, {"sel": [[60, 100]]}]),
            gz._array("attrs_changed", "uint8", (5,), (5,), seed=23, fill=0,
                      attributes={"version": "consolidated"}),
        ]
        gz.write(root, cls.nodes)
        _groups, _arrays, docs = c3.walk_v3(root)
        md = {rel: doc for rel, (doc, _raw) in docs.items() if rel}
        with open(os.path.join(root, "zarr.json")) as f:
            rootdoc = json.load(f)
        rootdoc["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": md}
        c3.write_files(root, {"zarr.json": rootdoc})
        cls.cmd = md
        # after consolidating: the per-node documents no longer agree
        os.unlink(os.path.join(root, "meta_only", "zarr.json"))
        with open(os.path.join(root, "attrs_changed", "zarr.json")) as f:
            d = json.load(f)
        d["attributes"] = {"version": "on disk, not consolidated"}
        c3.write_files(root, {"attrs_changed/zarr.json": d})
        # a node written after consolidating is not part of the consolidated view
        gz.write(os.path.join(WORK, "later.zarr"), [gz._array("", "int16", (3,), (3,), fill=1, seed=0)])
        shutil.copytree(os.path.join(WORK, "later.zarr"), os.path.join(root, "added_later"))
        cls.root = root
        return root

    def test_01_arrays_from_consolidated_metadata(self):
        arrays = ["sub/a", "meta_only", "attrs_changed"]
        zr = zarrita(self.root, arrays, consolidated=True)
        self.assertFalse(os.path.exists(os.path.join(self.root, "meta_only", "zarr.json")))
        for node in self.nodes:
            if node["kind"] != "array":
                continue
            p = node["path"]
            with self.subTest(array=p):
                self.assertTrue(zr[p]["ok"], zr[p].get("error"))
                want = gz.expected(node)
                self.assertBytesEqual(zr[p]["data"], want, "zarrita (consolidated) vs numpy: " + p)
                self.assertEqual(os.stat(self.m.path(p)).st_size, len(want))
                self.assertBytesEqual(zfmount.read_all(self.m.path(p)), want, p)
        log("  arrays read through the consolidated metadata, incl. meta_only (no zarr.json on disk)")

    def test_02_listing_and_xattrs(self):
        zr = zarrita(self.root, [], consolidated=True)
        known = {x["path"].lstrip("/"): x["kind"] for x in zr[None]}
        self.assertNotIn("added_later", known)
        for grel in [p for p, k in known.items() if k == "group"]:
            with self.subTest(group=grel or "/"):
                pre = grel + "/" if grel else ""
                want = sorted(p[len(pre):] for p in known
                              if p.startswith(pre) and p != grel and "/" not in p[len(pre):])
                got = sorted(os.listdir(self.m.path(grel) if grel else self.m.mnt))
                self.assertEqual(got, want, "listing of /%s (consolidated view)" % grel)
        self.assertNotIn("added_later", os.listdir(self.m.mnt),
                         "a node missing from consolidated_metadata is listed")
        self.assertEqual(json.loads(os.getxattr(self.m.path("attrs_changed"), "user.zarr.attributes")),
                         {"version": "consolidated"})
        self.assertEqual(json.loads(os.getxattr(self.m.mnt, "user.zarr.attributes")),
                         {"where": "consolidated root"})
        for rel, doc in self.cmd.items():
            with self.subTest(node=rel):
                kw = {"typestr": c3.v3_typestr(doc["data_type"])} if doc["node_type"] == "array" else {}
                c3.check_v3_node_xattrs(self, self.m.path(rel), doc, None, what=rel, **kw)
        log("  listings and xattrs come from the root's consolidated_metadata")


# ---------------------------------------------------------------------------------------------

def _le(a):
    """numpy array -> the flat encoding (little-endian, C order) bytes."""
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes()


class HandBuilt(zfmount.MountedTestCase):
    """Data types and fill values zarrita cannot write, built with numpy from data-types.rst
    ("Permitted fill values") and codecs/bytes.rst (complex = two consecutive floats, raw = bytes)."""

    CASES = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "handbuilt.zarr")
        files = {"zarr.json": c3.v3_group_doc({"built": "by hand"})}
        rng = np.random.default_rng(5)

        def add(name, data_type, shape, chunks, fill, data, endian="little", present=None,
                expect_fill=None, typestr=None, extra=None, codecs=None):
            """data: the whole array (numpy, any byte order); chunks not in `present` are left
            out and expected as expect_fill (a numpy scalar of the flat dtype)."""
            typestr = typestr or c3.v3_typestr(data_type)
            bytes_codec = {"name": "bytes", "configuration": {"endian": endian}}
            doc = c3.v3_array_doc(shape, chunks, data_type, codecs or [bytes_codec], fill_value=fill,
                                  **(extra or {}))
            files[name + "/zarr.json"] = doc
            want = np.array(data, dtype=np.dtype(typestr)).copy()
            grid = [-(-s // c) for s, c in zip(shape, chunks)]
            for idx in np.ndindex(*grid):
                sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
                if present is not None and idx not in present:
                    want[sel] = expect_fill
                    continue
                chunk = np.empty(chunks, dtype=want.dtype)
                chunk[...] = expect_fill if expect_fill is not None else 0
                part = want[sel]
                chunk[tuple(slice(0, x) for x in part.shape)] = part
                order = "<" if endian == "little" else ">"
                enc = chunk.astype(chunk.dtype.newbyteorder(order)) if chunk.dtype.kind not in "V" else chunk
                files[name + "/" + c3.default_key(idx)] = np.ascontiguousarray(enc).tobytes()
            cls.CASES[name] = (want, typestr, doc)

        c64 = (rng.standard_normal((6, 5)) + 1j * rng.standard_normal((6, 5))).astype("<c8")
        c64[0, 0] = complex(np.inf, np.nan)
        add("complex64_le", "complex64", (6, 5), (4, 4), [1.5, -2.0], c64,
            present={(0, 0), (0, 1), (1, 0)}, expect_fill=np.complex64(1.5 - 2.0j))
        c128 = (rng.standard_normal((7,)) + 1j * rng.standard_normal((7,))).astype("<c16")
        add("complex128_be", "complex128", (7,), (3,), ["-Infinity", 0.25], c128, endian="big",
            present={(0,), (2,)}, expect_fill=np.complex128(complex(-np.inf, 0.25)))
        r16 = np.frombuffer(bytes(range(2 * 12)), dtype="|V2").reshape(3, 4)
        add("raw_r16", "r16", (3, 4), (2, 2), [171, 205], r16, present={(0, 0), (1, 1)},
            expect_fill=np.frombuffer(b"\xab\xcd", dtype="|V2")[0])
        r24 = np.frombuffer(bytes((i * 7) % 256 for i in range(3 * 10)), dtype="|V3")
        add("raw_r24_big", "r24", (10,), (4,), [1, 2, 3], r24, endian="big", present={(0,), (1,)},
            expect_fill=np.frombuffer(b"\x01\x02\x03", dtype="|V3")[0])
        f32 = np.arange(10, dtype="<f4")
        add("f32_nan_payload_fill", "float32", (10,), (4,), "0x7fc00001", f32, present={(0,)},
            expect_fill=np.array([0x7FC00001], dtype="<u4").view("<f4")[0])
        f16 = np.arange(9, dtype="<f2") / 4
        add("f16_hex_fill_be", "float16", (9,), (4,), "0x3c00", f16, endian="big", present={(1,)},
            expect_fill=np.float16(1.0))
        f64 = np.linspace(-1, 1, 6).astype("<f8")
        add("f64_neg_zero_fill", "float64", (6,), (2,), -0.0, f64, present={(1,)},
            expect_fill=np.float64(-0.0))
        add("f64_hex_inf_fill", "float64", (6,), (2,), "0xfff0000000000000", f64, present={(0,)},
            expect_fill=np.float64(-np.inf))
        i64 = np.arange(5, dtype="<i8") - 2 ** 62
        add("i64_min_fill", "int64", (5,), (2,), -2 ** 63, i64, endian="big", present={(0,)},
            expect_fill=np.int64(-2 ** 63))
        u64 = np.arange(5, dtype="<u8") + 2 ** 63
        add("u64_max_fill", "uint64", (5,), (2,), 2 ** 64 - 1, u64, present={(2,)},
            expect_fill=np.uint64(2 ** 64 - 1))
        add("f32_rounded_fill", "float32", (4,), (2,), 0.1, np.ones(4, "<f4"), present={(1,)},
            expect_fill=np.float32(0.1))
        add("must_understand_false", "int16", (4,), (4,), 0, np.arange(4, dtype="<i2"),
            extra={"zarrfs_test_extension": {"must_understand": False, "hello": 1},
                   "storage_transformers": []})
        add("int8_with_endian_big", "int8", (5,), (5,), -1, np.arange(5, dtype="i1") - 2, endian="big")
        c3.write_files(root, files)
        return root

    def test_01_byte_exact(self):
        for name, (want, typestr, doc) in sorted(self.CASES.items()):
            with self.subTest(array=name):
                self.assertEqual(os.stat(self.m.path(name)).st_size, want.nbytes)
                expect = _le(want) if want.dtype.kind != "V" else want.tobytes()
                self.assertBytesEqual(zfmount.read_all(self.m.path(name)), expect, name)
        log("  %d hand-built arrays byte-exact (complex, raw, hex/NaN-payload/-0.0/extreme fills)"
            % len(self.CASES))

    def test_02_xattrs(self):
        for name, (want, typestr, doc) in sorted(self.CASES.items()):
            with self.subTest(array=name):
                with open(os.path.join(self.m.store, name, "zarr.json"), "rb") as f:
                    raw = f.read()
                c3.check_v3_node_xattrs(self, self.m.path(name), doc, raw, typestr=typestr, what=name)
        log("  xattrs (dtype <c8, <c16, |V2, |V3, <f2 ...) match")


if __name__ == "__main__":
    zfmount.main()
