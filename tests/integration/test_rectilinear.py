#!/usr/bin/python3
"""The zarr-extensions "rectilinear" chunk grid (chunk-grids/rectilinear/README.md) through
zarrfs: chunk edge lengths that vary along a dimension, declared as explicit lists, run-length
pairs [edge, count], integers (regular along that dimension), with overflow chunks past the
end.

The stores are written HERE: zarr.json by the test, each chunk cut from a numpy array with
numpy slicing at the cumulative sums of its dimension's edge lengths (README "Indexing"), padded
with the fill value to the chunk's full edge lengths and encoded with the codec chain by
test_v3_sharding.encode_chain (bytes, transpose, gzip, zstd, crc32c — written from the v3
spec there). Some chunks are left out (they read as the fill value).

* Read: every array's whole file and random preads against the numpy array; xattrs
  (user.zarr.chunks is the stored "chunk_shapes"); the .npy view; a sharded rectilinear array is
  refused by name (EIO, user.zarr.error).
* Write (-o rw): pwrites at random element ranges, then the store read back chunk by chunk by
  the test's own decoder and compared with numpy slicing of the model; a chunk written with the
  fill value everywhere is erased.
* Truncate: shrinking along the first dimension erases the chunk rows past the end and keeps
  the edges; growing is allowed up to the sum of the declared edge lengths (EINVAL past it) and
  without bound along an integer (regular) first dimension.
"""

import errno
import gzip
import json
import os
import random
import shutil
import struct
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount as zf  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import test_v3_sharding as sh  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
GZ = {"name": "gzip", "configuration": {"level": 5}}
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
CRC = {"name": "crc32c"}


def expand(spec, length):
    """README "Chunk edge lengths": an integer m repeats until the sum reaches length; a list's
    items are edge lengths or [edge, count] runs. Returns the explicit list."""
    if isinstance(spec, int):
        return [spec] * max(1, -(-length // spec)) if length else [spec]
    out = []
    for it in spec:
        if isinstance(it, list):
            out += [it[0]] * it[1]
        else:
            out.append(it)
    return out


def bounds(edges, length):
    """[(lo, edge)] of the chunks reaching into [0, length) (cumulative sums)."""
    out, lo = [], 0
    for e in edges:
        if lo >= length:
            break
        out.append((lo, e))
        lo += e
    return out


def chunk_boxes(chunk_shapes, shape):
    per_dim = [bounds(expand(s, n), n) for s, n in zip(chunk_shapes, shape)]
    for idx in np.ndindex(*[len(p) for p in per_dim]):
        yield idx, [per_dim[d][i] for d, i in enumerate(idx)]


def rect_doc(shape, chunk_shapes, data_type, codecs, fill):
    doc = c3.v3_array_doc(shape, [1] * len(shape), data_type, codecs, fill_value=fill)
    doc["chunk_grid"] = {"name": "rectilinear",
                         "configuration": {"kind": "inline", "chunk_shapes": chunk_shapes}}
    return doc


def write_rect(root, name, want, chunk_shapes, data_type, codecs, fill, missing=()):
    """Write want (numpy) as a rectilinear array; chunks in `missing` are left out (and set to
    the fill value in want, returned)."""
    want = want.copy()
    d = os.path.join(root, name)
    c3.write_files(d, {"zarr.json": rect_doc(want.shape, chunk_shapes, data_type, codecs, fill)})
    for idx, box in chunk_boxes(chunk_shapes, want.shape):
        sel = tuple(slice(lo, min(lo + e, n)) for (lo, e), n in zip(box, want.shape))
        if idx in missing:
            want[sel] = fill
            continue
        x = np.full([e for _lo, e in box], fill, dtype=want.dtype)
        x[tuple(slice(0, s.stop - s.start) for s in sel)] = want[sel]
        c3.write_files(d, {c3.default_key(idx): sh.encode_chain(x, codecs, fill)})
    return want


def decode_chunk(data, codecs, shape, dtype, fill=0):
    """Decode a stored chunk of full shape `shape` (the test's own decoder, v3 "Codecs" run
    backwards; a lone sharding_indexed codec by decode_shard)."""
    if codecs[0]["name"] == "sharding_indexed":
        return decode_shard(data, codecs[0]["configuration"], shape, dtype, fill)
    i = len(codecs) - 1
    while codecs[i]["name"] in ("gzip", "zstd", "crc32c"):
        n = codecs[i]["name"]
        if n == "gzip":
            data = gzip.decompress(data)
        elif n == "zstd":
            data = numcodecs.Zstd().decode(data)
        else:
            body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
            assert c3.crc32c(body) == crc, "crc32c mismatch"
            data = body
        i -= 1
    endian = codecs[i].get("configuration", {}).get("endian", "little")
    perms = [c["configuration"]["order"] for c in codecs[:i]]
    enc_shape = list(shape)
    for p in perms:
        enc_shape = [enc_shape[k] for k in p]
    dt = np.dtype(dtype).newbyteorder("<" if endian == "little" else ">")
    x = np.frombuffer(bytes(data), dtype=dt).reshape(enc_shape)
    for p in reversed(perms):
        x = np.transpose(x, np.argsort(p))
    return x.astype(np.dtype(dtype).newbyteorder("<"))


def decode_shard(data, conf, shape, dtype, fill):
    """sharding-indexed "Binary shard format": the index ([bytes little, crc32c] here) at the
    end, (offset, nbytes) per inner chunk in C order, (2^64-1, 2^64-1) for an empty one."""
    inner = conf["chunk_shape"]
    cps = [s // c for s, c in zip(shape, inner)]
    n = int(np.prod(cps))
    assert conf["index_codecs"] == [LE, CRC] and conf.get("index_location", "end") == "end"
    ib = data[-(16 * n + 4):]
    assert c3.crc32c(ib[:-4]) == struct.unpack("<I", ib[-4:])[0], "index crc32c"
    idx = np.frombuffer(ib[:-4], "<u8").reshape(n, 2)
    out = np.full(shape, fill, dtype=np.dtype(dtype).newbyteorder("<"))
    for k, ii in enumerate(np.ndindex(*cps)):
        off, nb = int(idx[k][0]), int(idx[k][1])
        if (off, nb) == (sh.EMPTY, sh.EMPTY):
            continue
        sel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(ii, inner))
        out[sel] = decode_chunk(data[off:off + nb], conf["codecs"], inner, dtype, fill)
    return out


SHARD = sh.shard_conf([2, 2], [LE, GZ])

# The arrays: name -> (data_type, shape, chunk_shapes, codecs, fill, missing chunk indices)
ARRAYS = {
    # overflow: 5+5+7+3+3+3+13 = 39 >= 37 along the first dimension
    "f4_gzip": ("float32", (37, 23), [[[5, 2], 7, [3, 3], 13], [4, [7, 2], 5]], [LE, GZ], 1.5,
                {(1, 2), (6, 0), (3, 3)}),
    # an integer (regular) middle dimension; a transpose of each chunk's own shape
    "i2_zstd_t": ("int16", (9, 10, 6), [[2, [3, 2], 1], 4, [[1, 2], 4]],
                  [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, BE, ZSTD], -7,
                  {(0, 1, 2)}),
    # raw chunks (no compressor): 50 chunks of 1, then one of 50
    "u1_raw": ("uint8", (100,), [[[1, 50], [50, 1]]], [LE], 0, {(3,), (50,)}),
    # whole rows: the second dimension is one chunk (runs span rows)
    "f8_rows": ("float64", (20, 8), [[3, 17], 8], [LE, CRC], 0.0, set()),
    # README "Indexing": [[16, 10], [24, 14]]
    "i4_readme": ("int32", (26, 38), [[16, 10], [24, 14]], [LE, GZ], 0, set()),
    # shards of differing shapes (4, 2, 2, 2, 4 x 6, 4), inner chunks 2 x 2 (zarrs' rule: the
    # inner chunk divides every shard edge); one shard missing, inner chunks of the fill value
    # left empty by the writer
    "i4_sharded": ("int32", (13, 10), [[4, [2, 3], 4], [[6, 1], [4, 1]]], [SHARD], 5,
                   {(1, 1)}),
}


def make_store(root):
    wants = {}
    rng = np.random.default_rng(7)
    for name, (dt, shape, cs, codecs, fill, missing) in ARRAYS.items():
        npdt = np.dtype(c3.V3_TYPESTR[dt])
        if npdt.kind == "f":
            data = rng.standard_normal(shape).astype(npdt)
        else:
            info = np.iinfo(npdt)
            data = rng.integers(info.min, info.max, size=shape, dtype=npdt, endpoint=True)
        if codecs[0]["name"] == "sharding_indexed":   # inner chunks of the fill value: empty
            data[0:2, 0:4] = fill
            data[6:8, 6:10] = fill
        wants[name] = write_rect(root, name, data, cs, dt, codecs, fill, missing)
    c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
    return wants


def flat(x):
    return np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<")).tobytes()


class Read(zf.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="zarrfs-itest-rect-")
        cls.store = os.path.join(cls.tmp, "r.zarr")
        cls.wants = make_store(cls.store)
        # sharding followed by another codec in a rectilinear grid: refused by name
        conf = sh.shard_conf([2], [LE])
        c3.write_files(os.path.join(cls.store, "sharded"),
                       {"zarr.json": rect_doc([6], [[2, 4]], "int8", [conf, CRC], 0)})

        # text: a v3 string array (vlen-utf8 + zstd, numcodecs' encoding) in a rectilinear grid
        cls.strings = np.array(["s%d_%s" % (i, "x" * (i % 5)) for i in range(20)],
                               dtype=object).reshape(5, 4)
        cs = [[1, [2, 2]], [3, 1]]
        d = os.path.join(cls.store, "text")
        doc = rect_doc([5, 4], cs, "string", [{"name": "vlen-utf8"}, ZSTD], "")
        c3.write_files(d, {"zarr.json": doc})
        for idx, box in chunk_boxes(cs, (5, 4)):
            if idx == (1, 1):
                cls.strings[1:3, 3:4] = ""   # missing: the fill value
                continue
            block = np.full([e for _lo, e in box], "", dtype=object)
            sel = tuple(slice(lo, min(lo + e, n)) for (lo, e), n in zip(box, (5, 4)))
            block[tuple(slice(0, s.stop - s.start) for s in sel)] = cls.strings[sel]
            enc = numcodecs.VLenUTF8().encode(block.ravel(order="C"))
            c3.write_files(d, {c3.default_key(idx): numcodecs.Zstd(level=1).encode(enc)})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_text_array(self):
        with zf.Mount(self.store, label="rect-text") as m:
            with open(m.path("text"), encoding="utf-8", newline="") as f:
                self.assertEqual(f.read(), "".join(v + "\n" for v in self.strings.ravel()))

    def test_whole_files_and_preads(self):
        import tifffile
        with zf.Mount(self.store, options=["sidecars=npy,tif"], label="rect") as m:
            for name, want in self.wants.items():
                p = m.path(name)
                raw = flat(want)
                self.assertEqual(os.path.getsize(p), len(raw), name)
                self.assertBytesEqual(zf.read_all(p), raw, name)
                self.assertBytesEqual(zf.read_all(p, bufsize=4096 + 3), raw, name + " (odd reads)")
                rnd = random.Random(name)
                fd = os.open(p, os.O_RDONLY)
                try:
                    for _ in range(300):
                        off = rnd.randrange(len(raw))
                        n = rnd.randrange(1, 300)
                        self.assertBytesEqual(os.pread(fd, n, off), raw[off:off + n],
                                              "%s pread(%d, %d)" % (name, n, off))
                finally:
                    os.close(fd)
                # the .npy view reads through the same byte range
                got = np.load(m.path(name + ".npy"))
                self.assertTrue(np.array_equal(got, want, equal_nan=True), name + ".npy")
                if want.ndim >= 2:   # the TIFF view's strips: the same flat bytes
                    got = tifffile.imread(m.path(name + ".tif"))
                    self.assertTrue(np.array_equal(got.reshape(want.shape), want,
                                                   equal_nan=True), name + ".tif")
                cs = ARRAYS[name][2]
                self.assertEqual(json.loads(os.getxattr(p, "user.zarr.chunks")), cs)
                self.assertEqual(json.loads(os.getxattr(p, "user.zarr.shape")),
                                 list(want.shape))

    def test_netcdf_view(self):
        """-o sidecars=nc: the root group's netCDF view (netCDF4-python reads it, CDF-5 for
        the uint8 array) holds each rectilinear array's values, served from the same byte
        ranges."""
        import netCDF4
        with zf.Mount(self.store, options=["sidecars=nc"], label="rect-nc") as m:
            views = [n for n in os.listdir(m.mnt) if n.endswith(".nc")]
            self.assertEqual(len(views), 1, views)
            seen = 0
            with netCDF4.Dataset(m.path(views[0])) as f:
                f.set_auto_mask(False)
                for name, want in self.wants.items():
                    if name not in f.variables:
                        continue
                    got = f.variables[name][:]
                    self.assertTrue(np.array_equal(got.reshape(want.shape), want,
                                                   equal_nan=True), name + " in the .nc view")
                    seen += 1
            self.assertGreaterEqual(seen, 3, sorted(f.variables))

    def test_sharded_refused(self):
        with zf.Mount(self.store, label="rect-shard") as m:
            why = self.assertUndecodable(m.path("sharded"), 6, names=["sharding_indexed",
                                                                      "rectilinear"])
            self.assertIn("must be the only codec", why)
            self.assertBytesEqual(zf.read_all(m.path("u1_raw")), flat(self.wants["u1_raw"]),
                                  "sibling")


class Write(zf.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="zarrfs-itest-rectw-")
        self.store = os.path.join(self.tmp, "w.zarr")
        self.wants = make_store(self.store)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        super().tearDown()

    def check_store(self, name, model, spec=None, store=None):
        """Every chunk in the store decoded by the test equals numpy slicing of the model (its
        part inside the array); absent chunks are the fill value there."""
        dt, _shape, cs, codecs, fill, _missing = spec or ARRAYS[name]
        shape = model.shape
        store = store or self.store
        npdt = np.dtype(c3.V3_TYPESTR[dt])
        for idx, box in chunk_boxes(cs, shape):
            sel = tuple(slice(lo, min(lo + e, n)) for (lo, e), n in zip(box, shape))
            inner = tuple(slice(0, s.stop - s.start) for s in sel)
            p = os.path.join(store, name, c3.default_key(idx))
            if os.path.exists(p):
                with open(p, "rb") as f:
                    x = decode_chunk(f.read(), codecs, [e for _lo, e in box], npdt, fill)
                got = x[inner]
            else:
                got = np.full([s.stop - s.start for s in sel], fill, dtype=npdt)
            self.assertTrue(np.array_equal(got, model[sel], equal_nan=True),
                            "%s chunk %s:\n%s\nwant\n%s" % (name, idx, got, model[sel]))

    def test_pwrites_chunk_by_chunk(self):
        models = {k: v.copy() for k, v in self.wants.items()}
        with zf.Mount(self.store, options=["rw"], label="rect-w") as m:
            for name, model in models.items():
                rnd = random.Random("w" + name)
                flatm = model.reshape(-1)
                isz = model.dtype.itemsize
                fd = os.open(m.path(name), os.O_WRONLY)
                try:
                    for _ in range(40):
                        a = rnd.randrange(flatm.size)
                        b = min(flatm.size, a + rnd.randrange(1, 60))
                        vals = np.arange(a, b).astype(model.dtype) + 3
                        flatm[a:b] = vals
                        os.pwrite(fd, flat(vals), a * isz)
                    # one whole chunk (the first) set to the fill value: erased from the store
                    dt, shape, cs, _c, fill, _mm = ARRAYS[name]
                    _idx, box = next(chunk_boxes(cs, shape))
                    sel = tuple(slice(lo, min(lo + e, n)) for (lo, e), n in zip(box, shape))
                    model[sel] = fill
                    for row in np.ndindex(*[s.stop - s.start for s in sel[:-1]]):
                        start = [s.start + r for s, r in zip(sel[:-1], row)] + [sel[-1].start]
                        e0 = int(np.ravel_multi_index(start, shape))
                        n = sel[-1].stop - sel[-1].start
                        os.pwrite(fd, flat(np.full(n, fill, model.dtype)), e0 * isz)
                finally:
                    os.close(fd)
        for name, model in models.items():
            self.check_store(name, model)
            self.assertFalse(os.path.exists(os.path.join(
                self.store, name, c3.default_key([0] * model.ndim))), name + ": fill chunk kept")
        with zf.Mount(self.store, label="rect-w-read") as m:
            for name, model in models.items():
                self.assertBytesEqual(zf.read_all(m.path(name)), flat(model), name + " reread")

    def test_truncate(self):
        name = "f4_gzip"   # first dimension: 5, 5, 7, 3, 3, 3, 13 (declared sum 39)
        model = self.wants[name].copy()
        fill = ARRAYS[name][4]
        row = 23 * 4
        with zf.Mount(self.store, options=["rw"], label="rect-t") as m:
            p = m.path(name)
            os.truncate(p, 16 * row)            # inside the 7-row chunk [10, 17)
            self.assertEqual(os.path.getsize(p), 16 * row)
            self.assertEqual(json.loads(os.getxattr(p, "user.zarr.shape")), [16, 23])
            self.assertEqual(json.loads(os.getxattr(p, "user.zarr.chunks")), ARRAYS[name][2])
            self.assertErrno(errno.EINVAL, os.truncate, p, 40 * row)   # past the edges' sum
            os.truncate(p, 39 * row)            # up to the sum: allowed, the fill value
            self.assertEqual(os.path.getsize(p), 39 * row)
            want = np.full((39, 23), fill, model.dtype)
            want[:16] = model[:16]
            self.assertBytesEqual(zf.read_all(p), flat(want), "grown")
            os.truncate(p, 10 * row)            # at a chunk boundary
        with open(os.path.join(self.store, name, "zarr.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["shape"], [10, 23])
        self.assertEqual(doc["chunk_grid"]["configuration"]["chunk_shapes"], ARRAYS[name][2])
        for dirpath, _dirs, files in os.walk(os.path.join(self.store, name, "c")):
            rel = os.path.relpath(dirpath, os.path.join(self.store, name, "c"))
            if files and rel != ".":
                self.assertLess(int(rel.split(os.sep)[0]), 2,
                                "chunks past the end not erased: %s %s" % (rel, files))
        self.check_store(name, model[:10])
        # an integer first dimension grows without bound
        name = "i2_zstd_t"  # first dimension [2, 3, 3, 1]: sum 9 = shape, so no growth
        n_row = 10 * 6 * 2
        with zf.Mount(self.store, options=["rw"], label="rect-t2") as m:
            p = m.path(name)
            self.assertErrno(errno.EINVAL, os.truncate, p, 9 * n_row + 1)   # not whole rows
            self.assertErrno(errno.EINVAL, os.truncate, p, 10 * n_row)
        name = "f8_rows"    # first dimension [3, 17]: sum 20 = shape; grows nowhere
        with zf.Mount(self.store, options=["rw"], label="rect-t3") as m:
            self.assertErrno(errno.EINVAL, os.truncate, m.path(name), 21 * 8 * 8)
            os.truncate(m.path(name), 2 * 8 * 8)
            self.assertBytesEqual(zf.read_all(m.path(name)), flat(self.wants[name][:2]),
                                  "shrunk")

    def test_truncate_sharded(self):
        """Shards of differing shapes (rows 4, 2, 2, 2, 4): a shrink into the third shard row
        erases the shard rows past it and sets the fill value in the rest of that shard."""
        name = "i4_sharded"
        model = self.wants[name].copy()
        fill = ARRAYS[name][4]
        row = 10 * 4
        with zf.Mount(self.store, options=["rw"], label="rect-ts") as m:
            p = m.path(name)
            os.truncate(p, 7 * row)            # inside the shard of rows [6, 8)
            self.assertErrno(errno.EINVAL, os.truncate, p, 15 * row)  # edges sum to 14
            os.truncate(p, 14 * row)           # up to the sum: the fill value past row 7
            want = np.full((14, 10), fill, model.dtype)
            want[:7] = model[:7]
            self.assertBytesEqual(zf.read_all(p), flat(want), "grown back")
            os.truncate(p, 7 * row)
        for dirpath, _dirs, files in os.walk(os.path.join(self.store, name, "c")):
            rel = os.path.relpath(dirpath, os.path.join(self.store, name, "c"))
            if files and rel != ".":
                self.assertLess(int(rel.split(os.sep)[0]), 3,
                                "shards past the end not erased: %s %s" % (rel, files))
        self.check_store(name, model[:7])

    def test_integer_first_dimension_grows(self):
        tmp = os.path.join(self.tmp, "g.zarr")
        want = write_rect(tmp, "a", np.arange(7 * 5, dtype="<u2").reshape(7, 5),
                          [3, [[2, 2], 1]], "uint16", [LE, GZ], 9)
        c3.write_files(tmp, {"zarr.json": c3.v3_group_doc()})
        with zf.Mount(tmp, options=["rw"], label="rect-g") as m:
            p = m.path("a")
            fd = os.open(p, os.O_WRONLY | os.O_APPEND)
            os.write(fd, flat(np.arange(5 * 5, dtype="<u2").reshape(5, 5) + 100))
            os.close(fd)
            self.assertEqual(os.path.getsize(p), 12 * 5 * 2)
            model = np.concatenate([want, np.arange(25, dtype="<u2").reshape(5, 5) + 100])
            self.assertBytesEqual(zf.read_all(p), flat(model), "appended")
        self.check_store("a", model, spec=("uint16", (12, 5), [3, [[2, 2], 1]], [LE, GZ], 9,
                                           set()), store=tmp)


if __name__ == "__main__":
    zf.main()
