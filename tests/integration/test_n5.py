#!/usr/bin/python3
"""The zarr-extensions "n5_default" codec: N5 datasets read (and written) as Zarr v3.

The N5 data is written by another implementation, Debian's zarr-python 2.13 (zarr.N5Store: N5
blocks in default mode, padded edge blocks, big-endian, F order over N5's dimensions, N5's own
compressors raw/gzip/bzip2/xz/blosc). Each array then gets a zarr.json beside its
attributes.json, made here from the N5 attributes as the document's "Compatibility notes" say
(shape = N5 "dimensions", chunk shape = "blockSize", a v2 chunk key encoding with "/", the
n5_default codec wrapping a transpose that reverses every axis, a big-endian bytes codec and the
bytes -> bytes codec equivalent to the N5 compression). zarr-python's array is the transpose of
the Zarr v3 array (it shows N5 data in reversed dimension order), so the flat file must equal
`z[:].T` in C order, little-endian (the flat encoding of v3).

Also: truncated edge blocks as the Java N5 library writes them and a block smaller than the
region it covers (padded with the fill value), missing blocks, corrupt blocks (EIO, siblings
keep reading), configurations the document does not allow (the array is undecodable, named in
user.zarr.error), and writing through `-o rw` read back by zarr-python's N5Store.
"""

import errno
import json
import os
import shutil
import struct
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

WORK = None

DTYPES = ["uint8", "int16", "uint32", "int64", "float32", "float64"]
COMPRESSORS = {
    "raw": None,
    "gzip": numcodecs.GZip(level=5),
    "zlib": numcodecs.Zlib(level=3),   # N5 "gzip" with useZlib
    "bzip2": numcodecs.BZ2(level=5),
    "xz": numcodecs.LZMA(),
    "blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1),
}


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-n5-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def bytes_to_bytes(compression, itemsize):
    """The Zarr v3 codec equivalent to an N5 compression object (the document's table), or
    None for raw."""
    t = compression["type"]
    if t == "raw":
        return None
    if t == "gzip":
        if compression.get("useZlib"):
            return {"name": "numcodecs.zlib", "configuration": {"level": compression["level"]}}
        return {"name": "gzip", "configuration": {"level": compression["level"]}}
    if t == "bzip2":
        return {"name": "numcodecs.bz2", "configuration": {"level": compression["blockSize"]}}
    if t == "xz":
        return {"name": "numcodecs.lzma",
                "configuration": {"format": 1, "check": -1, "preset": compression["preset"],
                                  "filters": None}}
    if t == "blosc":
        return {"name": "blosc",
                "configuration": {"cname": compression["cname"], "clevel": compression["clevel"],
                                  "shuffle": ["noshuffle", "shuffle", "bitshuffle"][
                                      compression["shuffle"]],
                                  "typesize": itemsize, "blocksize": compression["blocksize"]}}
    raise ValueError(t)


def zarr_json_from_n5(array_dir, fill_value=0, codecs=None):
    """Write array_dir/zarr.json from array_dir/attributes.json."""
    with open(os.path.join(array_dir, "attributes.json")) as f:
        a = json.load(f)
    nd = len(a["dimensions"])
    if codecs is None:
        codecs = [{"name": "transpose", "configuration": {"order": list(range(nd))[::-1]}},
                  {"name": "bytes", "configuration": {"endian": "big"}}]
        b2b = bytes_to_bytes(a["compression"], np.dtype(a["dataType"]).itemsize)
        if b2b:
            codecs.append(b2b)
    meta = {"zarr_format": 3, "node_type": "array", "shape": a["dimensions"],
            "data_type": a["dataType"],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": a["blockSize"]}},
            "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
            "fill_value": fill_value,
            "codecs": [{"name": "n5_default", "configuration": {"codecs": codecs}}]}
    with open(os.path.join(array_dir, "zarr.json"), "w") as f:
        json.dump(meta, f)
    return meta


def group_json(d):
    with open(os.path.join(d, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group"}, f)


def random_array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt) * 1000
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def flat(a):
    """The Zarr v3 flat encoding of zarr-python's view of an N5 array: its transpose in C
    order, little-endian."""
    t = np.ascontiguousarray(a.T)
    return t.astype(t.dtype.newbyteorder("<")).tobytes()


def n5_header(shape):
    """N5 4.0.0 block header: mode 0, ndim, each dimension (N5 order), all big-endian."""
    return struct.pack(">HH", 0, len(shape)) + b"".join(struct.pack(">I", d) for d in shape)


class N5Read(zfmount.MountsTestCase):
    """zarr-python 2.13's N5 arrays of every N5 data type and compression."""

    @classmethod
    def mount_all(cls):
        cls.store = os.path.join(WORK, "read.n5")
        root = zarr.group(store=zarr.N5Store(cls.store), overwrite=True)
        cls.want = {}
        seed = 0
        for dt in DTYPES:
            for cname, comp in COMPRESSORS.items():
                seed += 1
                shape = (23, 17, 5) if seed % 2 else (41, 30)
                chunks = (10, 7, 3) if seed % 2 else (16, 9)
                name = "%s_%s" % (dt, cname)
                z = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dt,
                                        compressor=comp, fill_value=0)
                a = random_array(dt, shape, seed)
                a[: chunks[0]] = 0 if seed % 3 == 0 else a[: chunks[0]]
                z[:] = a
                cls.want[name] = flat(z[:])   # zarr-python's read of what it wrote
                zarr_json_from_n5(os.path.join(cls.store, name))
        group_json(cls.store)
        cls.m = cls.add_mount(cls.store)

    def test_every_type_and_compression(self):
        self.assertEqual(len(self.want), len(DTYPES) * len(COMPRESSORS))
        for name, want in sorted(self.want.items()):
            got = zfmount.read_all(self.m.path(name))
            self.assertBytesEqual(got, want, name)

    def test_preads(self):
        rng = np.random.default_rng(7)
        for name, want in sorted(self.want.items()):
            fd = os.open(self.m.path(name), os.O_RDONLY)
            try:
                for _ in range(20):
                    off = int(rng.integers(0, len(want)))
                    n = int(rng.integers(1, 4096))
                    self.assertBytesEqual(os.pread(fd, n, off), want[off:off + n],
                                          "%s at %d" % (name, off))
            finally:
                os.close(fd)

    def test_xattrs(self):
        p = self.m.path("float32_gzip")
        meta = json.loads(os.getxattr(p, "user.zarr.metadata"))
        self.assertEqual(meta["codecs"][0]["name"], "n5_default")
        self.assertEqual(os.getxattr(p, "user.zarr.dtype").decode(), "<f4")


class N5Blocks(zfmount.MountsTestCase):
    """Blocks written by hand from the N5 header format: truncated edge blocks (the Java
    library), a short block padded with the fill value, a missing block, corrupt blocks."""

    @classmethod
    def mount_all(cls):
        cls.store = os.path.join(WORK, "blocks.n5")
        root = zarr.group(store=zarr.N5Store(cls.store), overwrite=True)
        shape, chunks = (300, 220), (64, 48)      # zarr-python's order; N5's is reversed
        z = root.create_dataset("t", shape=shape, chunks=chunks, dtype="int32",
                                compressor=None, fill_value=0)
        a = random_array("int32", shape, 99)
        z[:] = a
        cls.a = z[:]                              # zarr-python order
        arr = os.path.join(cls.store, "t")
        cls.meta = zarr_json_from_n5(arr, fill_value=7)
        nshape, nchunk = cls.meta["shape"], cls.meta["chunk_grid"]["configuration"]["chunk_shape"]
        # Rewrite every edge block truncated to the array (N5 order: key i0/i1, dims d0, d1;
        # data F order over (d0, d1) = C order of zarr-python's (d1, d0) block).
        v3 = np.ascontiguousarray(cls.a.T)        # the Zarr v3 array, N5 order
        grid = [-(-s // c) for s, c in zip(nshape, nchunk)]
        for i0 in range(grid[0]):
            for i1 in range(grid[1]):
                lo = (i0 * nchunk[0], i1 * nchunk[1])
                hi = (min(lo[0] + nchunk[0], nshape[0]), min(lo[1] + nchunk[1], nshape[1]))
                if hi[0] - lo[0] == nchunk[0] and hi[1] - lo[1] == nchunk[1]:
                    continue
                block = v3[lo[0]:hi[0], lo[1]:hi[1]]
                data = np.asfortranarray(block).astype(">i4").tobytes(order="F")
                with open(os.path.join(arr, "%d/%d" % (i0, i1)), "wb") as f:
                    f.write(n5_header(block.shape) + data)
        cls.want = v3.copy()
        # block (1, 1): only its first 3 x 2 elements stored; the rest reads as the fill value
        lo = (nchunk[0], nchunk[1])
        small = v3[lo[0]:lo[0] + 3, lo[1]:lo[1] + 2]
        with open(os.path.join(arr, "1/1"), "wb") as f:
            f.write(n5_header(small.shape) +
                    np.asfortranarray(small).astype(">i4").tobytes(order="F"))
        cls.want[lo[0]:lo[0] + nchunk[0], lo[1]:lo[1] + nchunk[1]] = 7
        cls.want[lo[0]:lo[0] + 3, lo[1]:lo[1] + 2] = small
        # block (2, 0) missing: the fill value
        os.unlink(os.path.join(arr, "2/0"))
        cls.want[2 * nchunk[0]:3 * nchunk[0], 0:nchunk[1]] = 7
        # corrupt copies of the same array: one bad block each
        cls.bad = {}
        good = open(os.path.join(arr, "0/0"), "rb").read()
        body = good[4 + 8:]
        for name, blob in [
                ("mode_varlength", struct.pack(">HH", 1, 2) + good[4:]),
                ("ndim_3", struct.pack(">HH", 0, 3) + good[4:] + b"\0\0\0\1"),
                ("dim_too_large", n5_header((nchunk[0] + 1, nchunk[1])) + body + body),
                ("dim_zero", n5_header((0, nchunk[1])) + body),
                ("header_truncated", good[:9]),
                ("data_short", good[:-4]),
                ("data_long", good + b"\0\0\0\0")]:
            d = os.path.join(cls.store, "bad_" + name)
            shutil.copytree(arr, d)
            with open(os.path.join(d, "0/0"), "wb") as f:
                f.write(blob)
            cls.bad[name] = d
        # configurations the document does not allow
        cls.invalid = {}
        for name, codecs in [
                ("no_transpose", [{"name": "bytes", "configuration": {"endian": "big"}}]),
                ("identity_transpose", [
                    {"name": "transpose", "configuration": {"order": [0, 1]}},
                    {"name": "bytes", "configuration": {"endian": "big"}}]),
                ("little_endian", [
                    {"name": "transpose", "configuration": {"order": [1, 0]}},
                    {"name": "bytes", "configuration": {"endian": "little"}}]),
                ("two_compressors", [
                    {"name": "transpose", "configuration": {"order": [1, 0]}},
                    {"name": "bytes", "configuration": {"endian": "big"}},
                    {"name": "gzip", "configuration": {"level": 1}},
                    {"name": "gzip", "configuration": {"level": 1}}])]:
            d = os.path.join(cls.store, "invalid_" + name)
            shutil.copytree(arr, d)
            zarr_json_from_n5(d, fill_value=7, codecs=codecs)
            cls.invalid[name] = d
        group_json(cls.store)
        cls.m = cls.add_mount(cls.store)

    def test_truncated_short_and_missing_blocks(self):
        got = zfmount.read_all(self.m.path("t"))
        self.assertBytesEqual(got, self.want.astype("<i4").tobytes(), "t")

    def test_corrupt_blocks(self):
        size = self.want.size * 4
        row0 = self.want.shape[1] * 4     # the first row lies in block (0, 0)
        last = size - 4                   # the last element lies in a good edge block
        for name in sorted(self.bad):
            p = self.m.path("bad_" + name)
            fd = os.open(p, os.O_RDONLY)
            try:
                self.assertErrno(errno.EIO, os.pread, fd, row0, 0)
                self.assertBytesEqual(os.pread(fd, 4, last), self.want.astype("<i4")
                                      .tobytes()[last:], "%s: a good block" % name)
            finally:
                os.close(fd)

    def test_invalid_configurations(self):
        """Invalid metadata (docs/formats.md "What zarrfs refuses"): listed, stat and open EIO."""
        listed = set(os.listdir(self.m.mnt))
        for name in sorted(self.invalid):
            self.assertIn("invalid_" + name, listed)
            self.assertErrno(errno.EIO, os.stat, self.m.path("invalid_" + name))
        for name in sorted(self.invalid):
            self.assertIn("invalid_%s/zarr.json: \"codecs\": n5_default" % name,
                          self.m.stderr_text())


class N5Write(zfmount.TestCase):
    """-o rw: what zarrfs writes, zarr-python's N5Store reads."""

    def test_write_read_back_by_zarr_python(self):
        store = os.path.join(WORK, "write.n5")
        root = zarr.group(store=zarr.N5Store(store), overwrite=True)
        for dt, comp in [("float64", "gzip"), ("uint16", "raw"), ("int32", "blosc")]:
            root.create_dataset(dt, shape=(19, 11), chunks=(8, 4), dtype=dt,
                                compressor=COMPRESSORS[comp], fill_value=0)
            zarr_json_from_n5(os.path.join(store, dt))
        group_json(store)
        written = {}
        with zfmount.Mount(store, options=["rw"]) as m:
            for i, dt in enumerate(["float64", "uint16", "int32"]):
                v3 = random_array(dt, (11, 19), 50 + i)      # N5 order
                with open(m.path(dt), "r+b") as f:
                    f.write(v3.astype(v3.dtype.newbyteorder("<")).tobytes())
                written[dt] = v3
        root = zarr.open_group(store=zarr.N5Store(store), mode="r")
        for dt, v3 in written.items():
            np.testing.assert_array_equal(root[dt][:], v3.T, err_msg=dt)
            with open(os.path.join(store, dt, "0/0"), "rb") as f:
                self.assertEqual(f.read(12), n5_header((4, 8)), dt)  # N5 order


if __name__ == "__main__":
    zfmount.main()
