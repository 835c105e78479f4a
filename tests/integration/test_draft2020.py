#!/usr/bin/python3
"""The October 2020 Zarr v3 core protocol draft (the editor's draft of 16 October 2020) as
zarr-python 2.13 writes it under ZARR_V3_EXPERIMENTAL_API=1 (zarr._storage.v3.DirectoryStoreV3,
zarr_version=3), through zarrfs.

zarr 2.13's layout: `zarr.json` entry point {"zarr_format": "https://purl.org/zarr/spec/protocol/
core/3.0", "metadata_encoding": ..., "metadata_key_suffix": ".json", "extensions": []}; the root
group at `meta/root.group.json`; a node P at `meta/root/P.array.json` / `meta/root/P.group.json`;
chunks at `data/root/P/c0/1` ("c" joined to the first coordinate, chunk_grid "separator" between
coordinates); arrays created at a/b/c without creating a/b leave implicit groups (directories under
meta/root without a .group.json); NumPy typestrs with byte order as data types (core types
"bool", "i1", "u1", "<i4", ">f8", ...; complex, bytes, unicode, datetime and structured types as
{"extension": ..., "type": ..., "fallback": null}); "compressor" {"codec": URI, "configuration"}
for gzip, zlib, blosc, bz2, lz4, lzma (not zstd: 2.13 writes a codec URI it cannot read back);
"chunk_memory_layout" C or F; filters only as a zarr-python quirk in attributes["filters"].

Every mounted file must equal zarr 2.13's own read (`numpy.ascontiguousarray(z[...]).tobytes()`,
zero bytes where fill_value is null and the chunk is missing) — the declared byte order kept
('>i4' stays big-endian in the flat file) — and user.zarr.format is "3-draft-2020".
"""

import errno
import json
import os
import random
import shutil
import stat
import sys
import tempfile
import time

os.environ["ZARR_V3_EXPERIMENTAL_API"] = "1"       # before zarr is imported
sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from zarr._storage.v3 import DirectoryStoreV3  # noqa: E402

WORK = None
STORE = None
CORE = ["bool", "|i1", "|u1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "<u2", ">u2", "<u4",
        ">u4", "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
EXTENDED = {"complex_le": "<c8", "complex_be": ">c16", "bytes_S5": "|S5", "unicode_le": "<U3",
            "unicode_be": ">U2", "datetime_s": "<M8[s]", "timedelta_be": ">m8[ms]",
            "structured": [("a", "<i4"), ("b", ">f8"), ("c", "|S2")]}
QUIRKS = ["quirks/filters_delta"]          # zarr-python's attributes["filters"] (not in the draft)


def sample(dtype, shape, rng):
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.fields is not None:
        a = np.zeros(n, dtype=dt)
        for name in dt.names:
            a[name] = sample(dt.fields[name][0], (n,), rng).reshape(n)
        return a.reshape(shape)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt.newbyteorder("="), endpoint=True)
    elif dt.kind == "f":
        v = (rng.standard_normal(n) * 1000)
        v[::13] = np.nan
        v[5::17] = np.inf
    elif dt.kind == "c":
        v = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    elif dt.kind == "S":
        v = np.array([("x%d" % i).encode()[:dt.itemsize] for i in range(n)])
    elif dt.kind == "U":
        v = np.array([("\u00e9%d" % i)[:dt.itemsize // 4] for i in range(n)])
    elif dt.kind in "mM":
        v = rng.integers(-10 ** 9, 10 ** 9, n)
    else:
        raise ValueError(dt)
    return np.asarray(v).astype(dt).reshape(shape)


def build(root):
    """The hierarchy, written with zarr 2.13's v3 API."""
    if os.path.exists(root):
        shutil.rmtree(root)
    store = DirectoryStoreV3(root)
    g = zarr.open_group(store, mode="w", zarr_version=3)
    g.attrs.update({"title": "zarr 2.13 draft 2020", "n": 3, "nested": {"x": [1, None]}})
    rng = np.random.default_rng(2020)

    def arr(path, data, chunks, keep=None, **kw):
        """Create, write everything, then delete the chunks whose index `keep` rejects."""
        z = g.create_dataset(path, shape=data.shape, chunks=chunks, dtype=data.dtype, **kw)
        if data.size:
            z[...] = data
        if keep is not None:
            for key in list(store.keys()):
                pre = "data/root/" + path + "/c"
                if key.startswith(pre):
                    idx = tuple(int(x) for x in key[len(pre):].replace(".", "/").split("/"))
                    if not keep(idx):
                        del store[key]
        return z

    # every core data type, both byte orders; fill values; chunks left missing. "dtypes" is an
    # implicit group (never created)
    fills = {"bool": True, "|i1": -3, "|u1": 250, "<f2": -1.5, ">f2": 0.25, "<f4": np.nan,
             ">f4": -np.inf, "<f8": 1e300, ">f8": np.inf}
    for i, dt in enumerate(CORE):
        name = "dtypes/" + dt.replace("<", "L").replace(">", "B").replace("|", "N")
        fill = fills.get(dt, 100 + i if np.dtype(dt).kind == "u" else -(100 + i))
        arr(name, sample(dt, (11, 7), rng), (4, 3), fill_value=fill,
            keep=lambda idx: idx not in ((2, 2), (1, 0)))
    # compressors zarr 2.13 can write in this draft
    comps = {"none": None, "gzip1": numcodecs.GZip(1), "gzip9": numcodecs.GZip(9),
             "zlib": numcodecs.Zlib(5), "bz2": numcodecs.BZ2(3), "lzma": numcodecs.LZMA(preset=1),
             "lz4": numcodecs.LZ4(1)}
    for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
        for sh in (0, 1, 2):
            comps["blosc_%s_%d" % (cname, sh)] = numcodecs.Blosc(cname, 5, sh)
    for i, (name, comp) in enumerate(sorted(comps.items())):
        dt = [">i4", "<f8", "<u2"][i % 3]
        arr("compressors/" + name, sample(dt, (30, 20), rng), (8, 7), compressor=comp,
            keep=lambda idx: idx != (3, 2))
    # order F (chunk_memory_layout), 1-d to 4-d, edge chunks
    for dt, shape, chunks in [(">i2", (9, 10), (4, 3)), ("<f4", (5, 6, 7), (2, 4, 3)),
                              (">u8", (3, 4, 5, 6), (2, 3, 2, 4)), ("|u1", (13,), (5,))]:
        arr("order_F/%s_%dd" % (dt.replace(">", "B").replace("<", "L").replace("|", "N"), len(shape)),
            sample(dt, shape, rng), chunks, order="F", compressor=numcodecs.Zlib(1))
    # chunk_grid separator "."
    arr("sep/dot", sample("<i4", (10, 6), rng), (4, 4), dimension_separator=".",
        keep=lambda idx: idx != (1, 1))
    # fill values where chunks are missing: null (zero bytes), NaN, Infinity
    arr("fill/null_i4", sample(">i4", (10, 10), rng), (4, 4), fill_value=None,
        keep=lambda idx: idx[0] != 1)
    arr("fill/nan_f8", sample(">f8", (10, 10), rng), (4, 4), fill_value=np.nan,
        keep=lambda idx: idx[1] != 2)
    arr("fill/inf_f4", sample("<f4", (9,), rng), (4,), fill_value=-np.inf, keep=lambda idx: idx != (1,))
    arr("fill/all_missing", sample("<u2", (7, 7), rng), (3, 3), fill_value=4242, keep=lambda idx: False)
    # zero-length
    arr("empty/len0", np.zeros((0,), "<i2"), (4,))
    arr("empty/3x0", np.zeros((3, 0), ">f4"), (2, 2))
    # explicit groups with attributes, implicit groups, dimension names in attributes
    gg = g.create_group("groups")
    gg.attrs["level"] = 1
    hh = gg.create_group("inner")
    hh.attrs.update({"level": 2, "unicode": "gr\u00fc\u00dfe"})
    hh.create_group("empty_group").attrs["empty"] = True
    z = arr("groups/inner/leaf", sample("<i8", (4, 5), rng), (2, 2))
    z.attrs.update({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
    arr("implicit/a/b/c", sample(">u4", (6,), rng), (4,))
    arr("implicit/a/sibling", sample("<f8", (3,), rng), (2,))
    # a larger array for random preads
    arr("big", sample("<f8", (200000,), rng), (30000,), compressor=numcodecs.GZip(1),
        keep=lambda idx: idx != (3,))
    # extended data types
    for name, dt in EXTENDED.items():
        arr("extended/" + name, sample(dt, (7, 5), rng), (3, 2), keep=lambda idx: idx != (2, 1))
    # zarr-python quirk: filters kept in attributes["filters"] and applied
    arr("quirks/filters_delta", np.arange(40, dtype="<i4").reshape(8, 5) * 3, (4, 5),
        filters=[numcodecs.Delta("<i4")])
    return root


def open_arr(path):
    return zarr.open_array(DirectoryStoreV3(STORE), path=path, mode="r", zarr_version=3)


def meta_doc(path, kind):
    p = os.path.join(STORE, "meta", "root.%s.json" % kind if path == "" else
                     os.path.join("root", path + ".%s.json" % kind))
    if not os.path.isfile(p):
        return None, None
    with open(p, "rb") as f:
        raw = f.read()
    return json.loads(raw), raw


def draft_typestr(doc):
    """user.zarr.dtype of a 2020-draft array: the declared NumPy typestr (core names "bool",
    "i1", "u1" are |b1, |i1, |u1; extension dtypes their "type")."""
    dt = doc["data_type"]
    if isinstance(dt, dict):
        dt = dt["type"]
    if isinstance(dt, list):
        return dt
    return {"bool": "|b1", "i1": "|i1", "u1": "|u1"}.get(dt, dt)


def setUpModule():
    global WORK, STORE
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-d2020-")
    t0 = time.monotonic()
    STORE = build(os.path.join(WORK, "draft2020.zr3"))
    log("zarr %s wrote the draft-2020 hierarchy in %.1f s" % (zarr.__version__, time.monotonic() - t0))


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


class Draft2020(zfmount.MountedTestCase):

    @classmethod
    def store_path(cls):
        return STORE

    @classmethod
    def setUpClass(cls):
        root = zarr.open_group(DirectoryStoreV3(STORE), mode="r", zarr_version=3)
        arrays, groups = [], [""]
        root.visitvalues(lambda v: (arrays if isinstance(v, zarr.Array) else groups).append(v.path))
        cls.root_group = root
        cls.all_arrays = sorted(arrays)
        cls.groups = sorted(groups)
        cls.extended = sorted("extended/" + n for n in EXTENDED)
        cls.arrays = [a for a in cls.all_arrays if a not in cls.extended and a not in QUIRKS]
        cls.want = {}
        for a in cls.all_arrays:
            cls.want[a] = zfmount.expected_bytes(open_arr(a))
        log("draft 2020: %d groups, %d arrays" % (len(cls.groups), len(cls.all_arrays)))
        super().setUpClass()

    def check_arrays(self, names):
        total = 0
        for rel in names:
            with self.subTest(array=rel):
                z = open_arr(rel)
                want = self.want[rel]
                self.assertEqual(len(want), int(np.prod(z.shape, dtype=np.int64)) * z.dtype.itemsize)
                st = os.stat(self.m.path(rel))
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s: not a regular file" % rel)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % rel)
                self.assertBytesEqual(zfmount.read_all(self.m.path(rel)), want, rel)
                total += len(want)
        return total

    def test_00_fixture_layout(self):
        """Sanity (no zarrfs): zarr 2.13 wrote the draft's layout; chunks were really removed."""
        with open(os.path.join(STORE, "zarr.json")) as f:
            ep = json.load(f)
        self.assertEqual(ep["zarr_format"], "https://purl.org/zarr/spec/protocol/core/3.0")
        self.assertTrue(os.path.isfile(os.path.join(STORE, "meta", "root.group.json")))
        self.assertTrue(os.path.isdir(os.path.join(STORE, "meta", "root", "implicit", "a")))
        self.assertFalse(os.path.exists(os.path.join(STORE, "meta", "root", "implicit.group.json")))
        self.assertFalse(os.path.exists(os.path.join(STORE, "meta", "root", "implicit", "a.group.json")))
        self.assertTrue(os.path.isfile(os.path.join(STORE, "data", "root", "dtypes", "Bi4", "c0", "0")))
        self.assertFalse(os.path.exists(os.path.join(STORE, "data", "root", "dtypes", "Bi4", "c2", "2")))
        self.assertTrue(os.path.isfile(os.path.join(STORE, "data", "root", "sep", "dot", "c0.0")))
        doc, _ = meta_doc("order_F/Bi2_2d", "array")
        self.assertEqual(doc["chunk_memory_layout"], "F")
        z = open_arr("dtypes/Bi4")
        self.assertEqual(z.dtype, np.dtype(">i4"))
        log("  zarr 2.13 wrote the draft-2020 layout (meta/root, data/root/.../c0/0, implicit groups)")

    def test_01_core_arrays_byte_exact(self):
        """Every core-type array == zarr 2.13's read, byte order as declared."""
        total = self.check_arrays(self.arrays)
        log("  %d arrays byte-identical to zarr 2.13 (%d bytes)" % (len(self.arrays), total))

    def test_02_big_endian_stays_big_endian(self):
        """'>i4' data in the flat file is big-endian (DESIGN.md: the 2020 draft keeps the typestr)."""
        z = open_arr("dtypes/Bi4")
        got = zfmount.read_all(self.m.path("dtypes/Bi4"))
        a = np.frombuffer(got, dtype=">i4").reshape(z.shape)
        self.assertTrue(np.array_equal(a[:4, :3], z[:4, :3]), "dtypes/Bi4 is not big-endian")
        self.assertNotEqual(got[:4], np.asarray(z[0, 0]).astype("<i4").tobytes())
        log("  >i4 read back as big-endian")

    def test_03_extended_dtypes(self):
        """complex, |S, <U/>U, datetime64/timedelta64, structured (data_type {"extension", "type"}):
        the declared typestr, NumPy-packed."""
        total = self.check_arrays(self.extended)
        log("  %d extended-dtype arrays byte-identical (%d bytes)" % (len(self.extended), total))

    def test_04_filters_quirk_never_wrong(self):
        """zarr-python 2.13 keeps filters in attributes["filters"] and applies them; the draft has
        no filters. zarrfs must not serve the still-filtered bytes: zarr's values or an error."""
        for rel in QUIRKS:
            with self.subTest(array=rel):
                try:
                    got = zfmount.read_all(self.m.path(rel))
                except OSError as e:
                    self.assertIn(e.errno, (errno.EOPNOTSUPP, errno.EIO), "%s: %s" % (rel, e))
                    log("  %s: %s" % (rel, errno.errorcode[e.errno]))
                    continue
                self.assertBytesEqual(got, self.want[rel], rel)
                log("  %s: zarr 2.13's values (filters applied)" % rel)

    def test_05_random_preads(self):
        rng = random.Random(2020)
        n = 0
        for rel in self.arrays + self.extended:
            want = self.want[rel]
            if not want:
                continue
            with self.subTest(array=rel):
                fd = os.open(self.m.path(rel), os.O_RDONLY)
                try:
                    zfmount.drop_page_cache(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    for _ in range(60 if rel == "big" else 6):
                        off = rng.randrange(0, len(want) + 1)
                        ln = rng.choice([1, 3, 8, 100, 4096, 70000, rng.randrange(0, len(want) + 10)])
                        self.assertBytesEqual(zfmount.pread_full(fd, ln, off), want[off:off + ln],
                                              "%s pread(%d, %d)" % (rel, ln, off))
                        n += 1
                finally:
                    os.close(fd)
        log("  %d random preads matched" % n)

    def test_06_listings(self):
        """os.listdir of every group (explicit or implicit) == zarr 2.13's group/array keys."""
        for rel in self.groups:
            with self.subTest(group=rel or "/"):
                g = self.root_group[rel] if rel else self.root_group
                want = sorted(list(g.group_keys()) + list(g.array_keys()))
                got = sorted(os.listdir(self.m.path(rel) if rel else self.m.mnt))
                self.assertEqual(got, want, "listing of /%s" % rel)
                for name in g.group_keys():
                    self.assertTrue(stat.S_ISDIR(os.stat(self.m.path(rel, name)).st_mode), name)
                for name in g.array_keys():
                    self.assertTrue(stat.S_ISREG(os.stat(self.m.path(rel, name)).st_mode), name)
        self.assertEqual(os.listdir(self.m.path("implicit")), ["a"])
        self.assertEqual(sorted(os.listdir(self.m.path("implicit/a"))), ["b", "sibling"])
        self.assertEqual(os.listdir(self.m.path("groups/inner/empty_group")), [])
        for n in ("zarr.json", "meta", "data"):
            self.assertNotIn(n, os.listdir(self.m.mnt))
        log("  %d group listings (incl. implicit groups) match zarr 2.13" % len(self.groups))

    def test_07_xattrs(self):
        for rel in self.groups:
            with self.subTest(group=rel or "/"):
                p = self.m.path(rel) if rel else self.m.mnt
                doc, raw = meta_doc(rel, "group")
                if doc is None:         # implicit group: no document
                    self.assertEqual(c3.xattr_text(p, "user.zarr.format").strip(), b"3-draft-2020", rel)
                    self.assertEqual(json.loads(c3.xattr_text(p, "user.zarr.attributes")), {}, rel)
                    continue
                c3.check_v3_node_xattrs(self, p, doc, raw, fmt=b"3-draft-2020", what=rel or "/")
        for rel in self.all_arrays:
            with self.subTest(array=rel):
                doc, raw = meta_doc(rel, "array")
                c3.check_v3_node_xattrs(
                    self, self.m.path(rel), doc, raw, fmt=b"3-draft-2020",
                    typestr=draft_typestr(doc), chunks=doc["chunk_grid"]["chunk_shape"],
                    fill_value=doc["fill_value"],
                    dimension_names=doc["attributes"].get("_ARRAY_DIMENSIONS"), what=rel,
                    fill_bytes=None)
        self.assertEqual(json.loads(os.getxattr(self.m.path("groups/inner/leaf"),
                                                "user.zarr.dimension_names")), ["y", "x"])
        self.assertEqual(os.getxattr(self.m.path("dtypes/Bi4"), "user.zarr.dtype").strip(b'"'), b">i4")
        log("  xattrs of %d groups and %d arrays (user.zarr.format 3-draft-2020)"
            % (len(self.groups), len(self.all_arrays)))


if __name__ == "__main__":
    zfmount.main()
