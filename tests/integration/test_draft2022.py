#!/usr/bin/python3
"""The May 2022 Zarr v3 core specification draft (the editor's draft of 25 May 2022)
through zarrfs. No library writes this dialect any more, so
the hierarchies are written here with numpy, gzip and numcodecs' Blosc, following the seed:

* "Entry point metadata": zarr.json {"zarr_format": "https://purl.org/zarr/spec/core/3.0",
  "metadata_encoding": {"type": "json", "metadata_key_suffix": ".json"}, "extensions": []};
* "Storage keys": root group meta/group.json (root array meta/array.json, data/c0/0), a node P at
  meta/P.group.json / meta/P.array.json, chunks at data/P/c0/0 ("c" + indices joined by the
  chunk_grid separator); groups implied by descendants are implicit groups;
* "Array metadata": named core data types (bool, int8 ... float64, complex64/128, r*), chunk_grid
  {"type": "regular", "chunk_shape", "separator"}, chunk_memory_layout C/F, a required
  fill_value ("0x…"/"0b…" bit strings, "NaN", "+Infinity", "-Infinity"), "codecs" objects naming
  a codec URI under "type" (the seed's text and examples, https://purl.org/zarr/spec/codecs/
  gzip/1.0) — some arrays use the "codec" key and .../codec/<name>/1.0 spelling of the codec
  specs of the time — for gzip, blosc, endian, transpose; extensions with must_understand;
* "Chunk encoding": the chunk in the memory layout (F reverses the dimension order), then each
  codec in turn; byte-level codecs take the elements' default binary representation (little
  endian) in C order.

Flat files are little-endian (named data types), compared with the numpy arrays the stores were
written from. Unknown metadata fields / must_understand extensions / codecs / data types make
that array's reads fail with EIO (open() with EOPNOTSUPP for an unknown data type, whose size is
unknown) while its siblings read.
"""

import errno
import gzip
import json
import os
import random
import shutil
import stat
import struct
import sys
import tempfile

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402

WORK = None
CORE = "https://purl.org/zarr/spec/core/3.0"
ENTRY = {"zarr_format": CORE, "metadata_encoding": {"type": "json", "metadata_key_suffix": ".json"},
         "extensions": []}


def codec(name, configuration=None, style="seed"):
    """A draft-2022 codec object: the seed's {"type": ".../codecs/<name>/1.0"} or the codec
    specs' {"codec": ".../codec/<name>/1.0"} spelling."""
    if style == "seed":
        d = {"type": "https://purl.org/zarr/spec/codecs/%s/1.0" % name}
    else:
        d = {"codec": "https://purl.org/zarr/spec/codec/%s/1.0" % name}
    if configuration is not None:
        d["configuration"] = configuration
    return d


def codec_name(c):
    uri = c.get("type") or c.get("codec")
    return uri.rstrip("/").split("/")[-2]


def encode_chunk(a, layout, codecs):
    """seed "Chunk encoding": EC[0] = A, dimension order reversed for layout F; then each codec."""
    x = a if layout == "C" else np.transpose(a, tuple(range(a.ndim))[::-1])
    data = None

    def le_bytes(arr):
        dt = arr.dtype.newbyteorder("<") if arr.dtype.itemsize > 1 and arr.dtype.kind != "V" else arr.dtype
        return np.ascontiguousarray(arr, dtype=dt).tobytes()

    for c in codecs:
        name, conf = codec_name(c), c.get("configuration", {})
        if name == "transpose":
            x = np.transpose(x, conf["order"])
        elif name == "endian":
            order = "<" if conf["endian"] == "little" else ">"
            data = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder(order)).tobytes()
        elif name == "gzip":
            data = gzip.compress(le_bytes(x) if data is None else data, compresslevel=conf["level"], mtime=0)
        elif name == "blosc":
            data = bytes(numcodecs.Blosc(cname=conf["cname"], clevel=conf["clevel"],
                                         shuffle=conf["shuffle"], blocksize=conf.get("blocksize", 0))
                         .encode(le_bytes(x) if data is None else data))
        else:
            raise ValueError(name)
    return le_bytes(x) if data is None else data


TYPESTR = dict(c3.V3_TYPESTR)


def fill_array_value(data_type, fv):
    """seed "fill_value" as a numpy scalar of the (little-endian) flat dtype."""
    dt = np.dtype(TYPESTR[data_type]) if not data_type.startswith("r") else np.dtype("V%d" % (int(data_type[1:]) // 8))
    if isinstance(fv, str) and fv[:2] in ("0x", "0b"):
        v = int(fv[2:], 16 if fv[1] == "x" else 2)
        if dt.kind == "V":
            return np.frombuffer(v.to_bytes(dt.itemsize, "big"), dtype=dt)[0]
        return np.array([v], dtype="<u%d" % dt.itemsize).view(dt)[0]
    if isinstance(fv, str):
        return dt.type(float(fv.replace("Infinity", "inf")))
    if isinstance(fv, list):
        half = np.dtype("<f%d" % (dt.itemsize // 2)).str
        parts = [fill_array_value({"<f4": "float32", "<f8": "float64"}[half], x) for x in fv]
        return np.frombuffer(b"".join(p.tobytes() for p in parts), dtype=dt)[0]
    return np.array([fv], dtype=dt)[0]


class Store2022:
    """Writes a draft-2022 hierarchy; remembers each array's expected numpy array."""

    def __init__(self, root, entry=None):
        self.root = root
        self.want = {}
        self.docs = {}
        if os.path.exists(root):
            shutil.rmtree(root)
        c3.write_files(root, {"zarr.json": entry or ENTRY})

    def meta_key(self, path, kind):
        return "meta/%s.json" % kind if path == "" else "meta/%s.%s.json" % (path, kind)

    def group(self, path, attributes=None, doc=None):
        d = doc if doc is not None else {"attributes": attributes or {}}
        c3.write_files(self.root, {self.meta_key(path, "group"): d})
        self.docs[path] = d

    def array(self, path, data_type, data, chunks, fill, codecs=(), layout="C", sep="/",
              missing=(), extra=None, write=True):
        dt = TYPESTR.get(data_type) or "V%d" % (int(data_type[1:]) // 8)
        want = np.array(data, dtype=dt)
        fillv = fill_array_value(data_type, fill)
        doc = {"shape": list(want.shape), "data_type": data_type,
               "chunk_grid": {"type": "regular", "chunk_shape": list(chunks), "separator": sep},
               "chunk_memory_layout": layout, "fill_value": fill, "extensions": [],
               "attributes": {}}
        if codecs is not None:
            doc["codecs"] = list(codecs)
        doc.update(extra or {})
        c3.write_files(self.root, {self.meta_key(path, "array"): doc})
        self.docs[path] = doc
        grid = [-(-s // c) for s, c in zip(want.shape, chunks)]
        files = {}
        for idx in (np.ndindex(*grid) if write else ()):
            sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, want.shape))
            if idx in missing:
                want[sel] = fillv
                continue
            chunk = np.empty(chunks, dtype=want.dtype)
            chunk[...] = fillv
            part = want[sel]
            chunk[tuple(slice(0, x) for x in part.shape)] = part
            key = "c" + sep.join(str(i) for i in idx)
            files[("data/" + path + "/" if path else "data/") + key] = encode_chunk(chunk, layout, codecs or [])
        if write:
            c3.write_files(self.root, files)
        self.want[path] = want
        return want


def flat(want):
    if want.dtype.kind == "V":
        return want.tobytes()
    return np.ascontiguousarray(want.astype(want.dtype.newbyteorder("<"))).tobytes()


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-d2022-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


SEED_TYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32",
              "float64"]
# in the final spec but not in the seed's table (int64/uint64), or without a fill-value form in
# the seed (complex, raw): tested separately
OTHER_TYPES = ["int64", "uint64", "complex64", "complex128", "r16", "r24"]
UNSUPPORTED = {}         # array path -> token the log must name


def sample(data_type, shape, rng):
    if data_type.startswith("r"):
        n = int(data_type[1:]) // 8
        return np.frombuffer(rng.integers(0, 256, int(np.prod(shape)) * n, dtype=np.uint8).tobytes(),
                             dtype="V%d" % n).reshape(shape)
    dt = np.dtype(TYPESTR[data_type])
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    v = rng.standard_normal(shape) * 100
    v.flat[::11] = np.nan
    v.flat[3::13] = -np.inf
    return v.astype(dt)


FILLS = {"bool": True, "int8": "0b11111110", "int16": -1234, "int32": "0x80000000",
         "uint8": 255, "uint16": "0xbeef", "uint32": 4000000000, "float16": "0x3e00",
         "float32": "NaN", "float64": "+Infinity", "int64": "0xfffffffffffffff0",
         "uint64": "0x8000000000000001", "complex64": [1.5, -2.0], "complex128": ["NaN", 0.5],
         "r16": "0xabab", "r24": "0x000000"}     # raw: palindromes (the seed gives no byte order)


def build_main(root):
    s = Store2022(root)
    rng = np.random.default_rng(2022)
    s.group("", {"title": "draft 2022", "list": [1, 2, 3]})
    # implicit group "types": every core data type, a non-zero fill where chunks are missing
    for dtn in SEED_TYPES + OTHER_TYPES:
        s.array("types/" + dtn, dtn, sample(dtn, (9, 7), rng), (4, 3), FILLS[dtn],
                codecs=[codec("gzip", {"level": 1})], missing={(2, 2), (0, 1)})
    # codecs (seed spelling and the codec-spec spelling), big endian, transpose, layout F
    s.group("codecs", {"what": "codec chains"})
    d = sample("int32", (13, 11), rng)
    s.array("codecs/none", "int32", d, (5, 4), 7, codecs=None)
    s.array("codecs/empty_list", "int32", d, (5, 4), 7, codecs=[])
    s.array("codecs/gzip", "int32", d, (5, 4), 7, codecs=[codec("gzip", {"level": 5})], missing={(1, 1)})
    s.array("codecs/gzip_codec_key", "int32", d, (5, 4), 7,
            codecs=[codec("gzip", {"level": 9}, style="codec")])
    s.array("codecs/endian_big", "int32", d, (5, 4), 7, codecs=[codec("endian", {"endian": "big"})])
    s.array("codecs/endian_little_gzip", "int32", d, (5, 4), 7,
            codecs=[codec("endian", {"endian": "little"}), codec("gzip", {"level": 1})])
    s.array("codecs/endian_big_gzip", "float64", sample("float64", (13, 11), rng), (5, 4), "NaN",
            codecs=[codec("endian", {"endian": "big"}, style="codec"),
                    codec("gzip", {"level": 1}, style="codec")], missing={(0, 0)})
    for cname in ("lz4", "zstd", "blosclz", "zlib"):
        for sh in (0, 1, 2):
            s.array("codecs/blosc_%s_%d" % (cname, sh), "uint16", sample("uint16", (20, 15), rng),
                    (8, 8), 1, codecs=[codec("blosc", {"cname": cname, "clevel": 5, "shuffle": sh,
                                                       "blocksize": 0})], missing={(2, 1)})
    s.array("codecs/blosc_after_endian_big", "float32", sample("float32", (20, 15), rng), (8, 8), "-Infinity",
            codecs=[codec("endian", {"endian": "big"}),
                    codec("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0})])
    t3 = sample("int16", (5, 6, 7), rng)
    s.array("codecs/transpose", "int16", t3, (2, 4, 3), -1,
            codecs=[codec("transpose", {"order": [2, 0, 1]}), codec("gzip", {"level": 1})])
    s.array("codecs/transpose_endian_big", "int16", t3, (2, 4, 3), -1,
            codecs=[codec("transpose", {"order": [1, 2, 0]}), codec("endian", {"endian": "big"})],
            missing={(1, 0, 2)})
    s.array("layout/F", "uint32", sample("uint32", (7, 9, 4), rng), (3, 4, 3), 9, layout="F",
            codecs=[codec("gzip", {"level": 1})], missing={(2, 2, 1)})
    s.array("layout/F_endian_big_blosc", "float64", sample("float64", (10, 6), rng), (4, 4), 0.5, layout="F",
            codecs=[codec("endian", {"endian": "big"}),
                    codec("blosc", {"cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0})])
    s.array("layout/F_transpose", "int8", sample("int8", (4, 5, 6), rng), (3, 2, 4), 0, layout="F",
            codecs=[codec("transpose", {"order": [0, 2, 1]})])
    s.array("sep/dot", "uint8", sample("uint8", (10, 10), rng), (3, 4), 0, sep=".", missing={(3, 0)})
    s.array("sep/dot_3d", "float32", sample("float32", (4, 4, 4), rng), (2, 2, 2), 0.0, sep=".",
            codecs=[codec("gzip", {"level": 1})])
    # fill value forms
    s.array("fill/f32_nan_payload", "float32", np.arange(8, dtype="<f4"), (4,), "0x7fc00001", missing={(1,)})
    s.array("fill/f64_minus_inf", "float64", np.arange(8.0), (4,), "-Infinity", missing={(0,)})
    s.array("fill/f32_binary", "float32", np.arange(8, dtype="<f4"), (4,),
            "0b00111111100000000000000000000000", missing={(1,)})
    s.array("fill/i16_binary", "int16", np.arange(8, dtype="<i2"), (4,), "0b1000000000000001", missing={(0,)})
    s.array("fill/all_missing", "uint16", np.zeros((5, 5), "<u2"), (2, 2), 4321,
            missing={(i, j) for i in range(3) for j in range(3)})
    # groups: explicit, nested, implicit; attributes
    s.group("groups", {"level": 1})
    s.group("groups/inner", {"level": 2, "unicode": "\u00fc\u2713", "nested": {"a": [None, True]}})
    s.group("groups/inner/empty")
    s.array("groups/inner/leaf", "int32", sample("int32", (3, 4), rng), (2, 2), 0)
    s.array("implicit/x/y/deep", "float32", sample("float32", (6,), rng), (4,), 1.0)
    s.array("implicit/x/other", "uint8", sample("uint8", (3,), rng), (2,), 3)
    # an extension that may be ignored; empty storage_transformers; zero-length
    s.array("ext/ignorable", "int16", np.arange(6, dtype="<i2"), (4,), 0,
            extra={"extensions": [{"extension": "http://example.org/zarrfs/ignorable",
                                   "must_understand": False, "configuration": {"x": 1}}],
                   "storage_transformers": []})
    s.array("empty/len0", "int32", np.zeros((0,), "<i4"), (4,), 0)
    s.array("empty/4x0", "float64", np.zeros((4, 0)), (2, 2), 0.0)
    s.array("big", "float64", sample("float64", (400, 500), rng), (128, 128), 0.0,
            codecs=[codec("gzip", {"level": 1})], missing={(1, 1)})
    # unsupported: siblings of the good arrays above
    bad = s.array("unsupported/unknown_field", "int32", np.arange(4, dtype="<i4"), (4,), 0,
                  extra={"zarrfs_unknown_field": 1})
    UNSUPPORTED["unsupported/unknown_field"] = "zarrfs_unknown_field"
    s.array("unsupported/must_understand_true", "int32", bad, (4,), 0,
            extra={"extensions": [{"extension": "http://example.org/zarrfs/required",
                                   "must_understand": True}]})
    UNSUPPORTED["unsupported/must_understand_true"] = "http://example.org/zarrfs/required"
    s.array("unsupported/unknown_codec", "int32", bad, (4,), 0, write=False,
            codecs=[{"type": "https://purl.org/zarr/spec/codecs/zarrfs_nosuch/1.0"}])
    c3.write_files(root, {"data/unsupported/unknown_codec/c0": b"\x00" * 16})
    UNSUPPORTED["unsupported/unknown_codec"] = "zarrfs_nosuch"
    s.array("unsupported/unknown_dtype_extension", "int32", bad, (4,), 0,
            extra={"data_type": {"extension": "http://example.org/zarrfs/dtype", "type": "zarrfs_float7"}})
    UNSUPPORTED["unsupported/unknown_dtype_extension"] = "http://example.org/zarrfs/dtype"
    s.array("unsupported/unknown_chunk_grid", "int32", bad, (4,), 0,
            extra={"chunk_grid": {"extension": "http://example.org/zarrfs/grid", "type": "zarrfs_grid"}})
    UNSUPPORTED["unsupported/unknown_chunk_grid"] = "zarrfs_grid"
    s.array("unsupported/unknown_memory_layout", "int32", bad, (4,), 0,
            extra={"chunk_memory_layout": {"extension": "http://example.org/zarrfs/layout",
                                           "type": "zarrfs_layout"}})
    UNSUPPORTED["unsupported/unknown_memory_layout"] = "zarrfs_layout"
    s.array("unsupported/storage_transformer", "int32", bad, (4,), 0,
            extra={"storage_transformers": [{"extension": "http://example.org/zarrfs/st",
                                             "type": "zarrfs_transformer"}]})
    UNSUPPORTED["unsupported/storage_transformer"] = "zarrfs_transformer"
    for p in UNSUPPORTED:
        s.want.pop(p)
    return s


def meta_doc(root, path, kind):
    key = "meta/%s.json" % kind if path == "" else "meta/%s.%s.json" % (path, kind)
    p = os.path.join(root, key)
    if not os.path.isfile(p):
        return None, None
    with open(p, "rb") as f:
        raw = f.read()
    return json.loads(raw), raw


def children_2022(root, path):
    """seed "Discover children of a group": list_dir("meta" + P + "/"): *.array.json arrays,
    *.group.json groups, any prefix an (implicit) group."""
    d = os.path.join(root, "meta", path)
    names = set()
    for n in os.listdir(d):
        full = os.path.join(d, n)
        if os.path.isdir(full):
            names.add(n)
        elif n.endswith(".array.json") or n.endswith(".group.json"):
            names.add(n[:-len(".array.json")])
    if path == "":
        names -= {"array", "group"}     # meta/group.json is the root group's own document
    return sorted(names)


class Draft2022(zfmount.MountedTestCase):

    @classmethod
    def store_path(cls):
        cls.s = build_main(os.path.join(WORK, "draft2022.zr3"))
        return cls.s.root

    def check(self, paths):
        for p in paths:
            with self.subTest(array=p):
                want = flat(self.s.want[p])
                mp = self.m.path(p)
                st = os.stat(mp)
                self.assertTrue(stat.S_ISREG(st.st_mode), p)
                self.assertEqual(st.st_size, len(want), "%s: st_size" % p)
                self.assertBytesEqual(zfmount.read_all(mp), want, p)

    def seed_arrays(self):
        return sorted(p for p in self.s.want if not any(p == "types/" + t for t in OTHER_TYPES))

    def test_00_fixture_layout(self):
        """Sanity (no zarrfs): the seed's storage keys."""
        r = self.s.root
        for key in ("zarr.json", "meta/group.json", "meta/codecs.group.json",
                    "meta/types/int32.array.json", "data/types/int32/c0/0", "data/sep/dot/c0.0",
                    "meta/implicit/x/y/deep.array.json"):
            self.assertTrue(os.path.isfile(os.path.join(r, key)), key)
        for key in ("meta/types.group.json", "meta/implicit.group.json", "data/types/int32/c2/2"):
            self.assertFalse(os.path.exists(os.path.join(r, key)), key)
        with open(os.path.join(r, "data/codecs/endian_big/c0/0"), "rb") as f:
            self.assertEqual(f.read(4), self.s.want["codecs/endian_big"][0, :1].astype(">i4").tobytes())
        log("  the store holds the seed's keys (meta/…, data/…/c0/0, implicit groups)")

    def test_01_seed_arrays_byte_exact(self):
        ps = self.seed_arrays()
        self.check(ps)
        log("  %d arrays byte-identical to the numpy arrays they were written from" % len(ps))

    def test_02_types_outside_the_seed_table(self):
        """int64/uint64 (final v3, not in the seed's table), complex64/128 and r16/r24 (in the
        table, without a fill-value form in the seed: [re, im] and "0x…" used here)."""
        ps = ["types/" + t for t in OTHER_TYPES]
        self.check(ps)
        log("  %s byte-identical" % ", ".join(OTHER_TYPES))

    def test_03_random_preads(self):
        rng = random.Random(22)
        n = 0
        for p in self.seed_arrays():
            want = flat(self.s.want[p])
            if not want:
                continue
            with self.subTest(array=p):
                fd = os.open(self.m.path(p), os.O_RDONLY)
                try:
                    zfmount.drop_page_cache(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    for _ in range(60 if p == "big" else 6):
                        off = rng.randrange(0, len(want) + 1)
                        ln = rng.choice([1, 2, 5, 64, 4096, 9000, rng.randrange(0, len(want) + 9)])
                        self.assertBytesEqual(zfmount.pread_full(fd, ln, off), want[off:off + ln],
                                              "%s pread(%d, %d)" % (p, ln, off))
                        n += 1
                finally:
                    os.close(fd)
        log("  %d random preads matched" % n)

    def test_04_listings(self):
        r = self.s.root
        groups = [""]
        for dirpath, dirnames, _files in os.walk(os.path.join(r, "meta")):
            rel = os.path.relpath(dirpath, os.path.join(r, "meta"))
            if rel != ".":
                groups.append(rel)
        for g in groups:
            with self.subTest(group=g or "/"):
                want = children_2022(r, g)
                got = sorted(os.listdir(self.m.path(g) if g else self.m.mnt))
                self.assertEqual(got, want, "listing of /%s" % g)
                for n in want:
                    is_arr = os.path.isfile(os.path.join(r, "meta", g, n + ".array.json"))
                    mode = os.stat(self.m.path(g, n)).st_mode
                    self.assertTrue(stat.S_ISREG(mode) if is_arr else stat.S_ISDIR(mode), "%s/%s" % (g, n))
        self.assertEqual(os.listdir(self.m.path("implicit")), ["x"])
        self.assertEqual(os.listdir(self.m.path("groups/inner/empty")), [])
        log("  %d group listings (explicit and implicit) follow the seed's list_dir rule" % len(groups))

    def test_05_xattrs(self):
        r = self.s.root
        for p, want in sorted(self.s.want.items()):
            with self.subTest(array=p):
                doc, raw = meta_doc(r, p, "array")
                dt = doc["data_type"]
                c3.check_v3_node_xattrs(self, self.m.path(p), doc, raw, fmt=b"3-draft-2022",
                                        typestr=c3.v3_typestr(dt),
                                        chunks=doc["chunk_grid"]["chunk_shape"], what=p,
                                        fill_bytes=lambda v, dt=dt: fill_array_value(dt, v).tobytes())
        for g in ("", "codecs", "groups", "groups/inner", "groups/inner/empty"):
            with self.subTest(group=g or "/"):
                doc, raw = meta_doc(r, g, "group")
                c3.check_v3_node_xattrs(self, self.m.path(g) if g else self.m.mnt, doc, raw,
                                        fmt=b"3-draft-2022", what=g or "/")
        for g in ("types", "implicit", "implicit/x", "implicit/x/y"):
            with self.subTest(implicit_group=g):
                self.assertEqual(c3.xattr_text(self.m.path(g), "user.zarr.format").strip(), b"3-draft-2022")
                self.assertEqual(json.loads(c3.xattr_text(self.m.path(g), "user.zarr.attributes")), {})
        self.assertEqual(os.getxattr(self.m.path("codecs/endian_big"), "user.zarr.dtype").strip(b'"'), b"<i4")
        log("  xattrs (user.zarr.format 3-draft-2022, little-endian dtypes) match")

    def test_06_unsupported_eopnotsupp(self):
        names = os.listdir(self.m.path("unsupported"))
        for p, token in sorted(UNSUPPORTED.items()):
            with self.subTest(array=p):
                self.assertIn(p.split("/")[1], names)
                if p.endswith("unknown_dtype_extension"):  # no known item size: no file size
                    self.assertErrno(errno.EOPNOTSUPP, os.open, self.m.path(p), os.O_RDONLY)
                else:  # 4 int32 elements (as built above): real size, EIO on read
                    doc, _ = meta_doc(self.m.store, p, "array")
                    self.assertEqual(doc["shape"], [4])
                    self.assertUndecodable(self.m.path(p), 4 * 4, [token])
                self.assertIn(token, self.m.stderr_text(), "the log does not name %s" % token)
                self.assertBytesEqual(zfmount.read_all(self.m.path("groups/inner/leaf")),
                                      flat(self.s.want["groups/inner/leaf"]), "sibling")
        self.assertDaemonAlive()
        log("  %d arrays with unknown fields/extensions/codecs/types: real size and EIO (unknown "
            "data type: EOPNOTSUPP), siblings read"
            % len(UNSUPPORTED))


class RootArray2022(zfmount.TestCase):
    """seed "Storage keys": a root array at meta/array.json with chunks data/c0/0; the mount point
    holds one file named after the store without ".zr3"."""

    def test_01_root_array(self):
        s = Store2022(os.path.join(WORK, "root_array.zr3"))
        rng = np.random.default_rng(9)
        want = s.array("", "uint16", sample("uint16", (6, 5), rng), (4, 4), "0x0102",
                       codecs=[codec("endian", {"endian": "big"}), codec("gzip", {"level": 1})],
                       missing={(1, 1)})
        self.assertTrue(os.path.isfile(os.path.join(s.root, "data", "c0", "0")))
        with zfmount.Mount(s.root) as m:
            self.assertEqual(os.listdir(m.mnt), ["root_array"])
            self.assertBytesEqual(zfmount.read_all(m.path("root_array")), flat(want), "root_array")
            self.assertEqual(c3.xattr_text(m.path("root_array"), "user.zarr.format").strip(), b"3-draft-2022")
        log("  root array (meta/array.json, data/c0/0) mounted as root_array")

    def test_02_entry_point_must_understand(self):
        """seed "extensions" of the entry point: an unknown extension with must_understand true
        stops processing (refused at mount, exit 1); with false it is ignored."""
        entry = dict(ENTRY, extensions=[{"extension": "http://example.org/zarrfs/entry",
                                         "must_understand": True}])
        s = Store2022(os.path.join(WORK, "entry_required.zr3"), entry=entry)
        s.group("", {})
        s.array("a", "int8", np.arange(3, dtype="i1"), (3,), 0)
        status, err, mounted = zfmount.expect_refusal(s.root)
        self.assertFalse(mounted, "mounted a hierarchy with an unknown must_understand extension")
        self.assertEqual(status, 1, "exit status %r; stderr %r" % (status, err))
        self.assertIn("http://example.org/zarrfs/entry", err)
        entry = dict(ENTRY, extensions=[{"extension": "http://example.org/zarrfs/entry",
                                         "must_understand": False}])
        s = Store2022(os.path.join(WORK, "entry_ignorable.zr3"), entry=entry)
        s.group("", {})
        want = s.array("a", "int8", np.arange(3, dtype="i1"), (3,), 0)
        with zfmount.Mount(s.root) as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), flat(want), "a")
        log("  entry-point extension: must_understand true refused (%s), false ignored" % err.strip())


if __name__ == "__main__":
    zfmount.main()
