#!/usr/bin/python3
"""Writing through a `-o rw` mount: every codec, partial and whole chunks, edge chunks, sharded
arrays, resizing, hierarchy edits, xattrs, and refusals.

Also: writeback by the timer and on SIGTERM/SIGINT; HTTP stores and the drafts stay read-only.

The reference readers are other implementations: zarr-python 2.13 (Debian's, /usr/bin/python3)
for Zarr v2 and zarrita.js 0.7.5 (js/, `npm ci`) for Zarr v3. Expected contents are a numpy
model of the writes; for the lossy filters (quantize, bitround) the expectation is a twin array
that zarr-python itself writes with the same model and codecs, read back by zarr-python.

Write methods: os.pwrite, dd conv=notrunc, numpy.memmap(mode="r+") and Python's mmap module,
then unmount (the daemon stores the dirty chunks) and read the store without zarrfs.
"""

import errno
import json
import mmap
import os
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np
import numcodecs
import zarr

import zfmount as zf
from gen_v3_zarrita import zarrita_read

SHAPE = (37, 29)   # edge chunks in both dimensions
CHUNKS = (8, 10)


def stats(m):
    with open(m.path(".zarrfs-stats")) as f:
        return json.load(f)


def nan_equal(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


# ---- the writes, applied to a mounted flat file and to a numpy model ----------------------

def values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -30000), min(info.max, 30000), n, endpoint=True).astype(dt)
    if dt.kind == "U":
        return np.array([("a", "b", "c")[i] for i in rng.integers(0, 3, n)], dtype=dt)
    return (rng.standard_normal(n) * 100).astype(dt)


def do_writes(tc, path, model, fill, seed):
    """Apply the standard write sequence to the flat file at path and to model (2-D numpy)."""
    tc.assertTrue(model.flags.c_contiguous)  # else reshape(-1) would be a copy
    dt = model.dtype
    isz = dt.itemsize
    flat = model.reshape(-1)
    rows, cols = model.shape
    n = flat.size
    # 1. pwrite of an element range crossing chunk boundaries (partial chunks), unaligned start
    a, b = 13, 13 + 3 * cols + 7
    v = values(dt, b - a, seed)
    fd = os.open(path, os.O_RDWR)
    try:
        tc.assertEqual(os.pwrite(fd, v.tobytes(), a * isz), (b - a) * isz)
    finally:
        os.close(fd)
    flat[a:b] = v
    # 2. dd conv=notrunc over another range
    a, b = 10 * cols + 3, 14 * cols + 25
    v = values(dt, b - a, seed + 1)
    with tempfile.NamedTemporaryFile() as t:
        t.write(v.tobytes())
        t.flush()
        r = zf.run(["dd", "if=" + t.name, "of=" + path, "bs=%d" % (7 * isz), "seek=%d" % (a * isz),
                    "oflag=seek_bytes", "conv=notrunc", "status=none"])
        tc.assertEqual(r.returncode, 0, r.stderr)
    flat[a:b] = v
    # 3. numpy.memmap r+: a 2-D block (rows 17..30, columns 4..26); under -o direct_io, where
    # shared mappings are refused (ENODEV), row by row with pwrite
    blk = values(dt, 13 * 22, seed + 2).reshape(13, 22)
    if zf.DIRECT_IO:
        with tc.assertRaises(OSError) as cm:
            np.memmap(path, dtype=dt, mode="r+", shape=model.shape)
        tc.assertEqual(cm.exception.errno, errno.ENODEV)
        fd = os.open(path, os.O_RDWR)
        try:
            for r in range(13):
                os.pwrite(fd, blk[r].tobytes(), ((17 + r) * cols + 4) * isz)
        finally:
            os.close(fd)
    else:
        mm = np.memmap(path, dtype=dt, mode="r+", shape=model.shape)
        mm[17:30, 4:26] = blk
        mm.flush()
        del mm
    model[17:30, 4:26] = blk
    # 4. Python mmap: the last elements (the edge chunks of the last row of chunks); pwrite under
    # -o direct_io
    a = n - 40
    v = values(dt, 40, seed + 3)
    fd = os.open(path, os.O_RDWR)
    try:
        if zf.DIRECT_IO:
            os.pwrite(fd, v.tobytes(), a * isz)
        else:
            with mmap.mmap(fd, n * isz) as m:
                m[a * isz:n * isz] = v.tobytes()
                m.flush()
    finally:
        os.close(fd)
    flat[a:] = v
    # 5. whole chunk rows 3 (rows 24..31) written with pwrite: chunks covered whole
    v = values(dt, 8 * cols, seed + 4)
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, v.tobytes(), 24 * cols * isz)
        # 6. chunk (1, 1) (rows 8..15, columns 10..19) set to the fill value everywhere: erased
        for r in range(8, 16):
            os.pwrite(fd, np.full(10, fill, dtype=dt).tobytes(), (r * cols + 10) * isz)
        os.fsync(fd)
    finally:
        os.close(fd)
    flat[24 * cols:32 * cols] = v
    model[8:16, 10:20] = fill


V2_CASES = {
    # name: (dtype, fill_value, create kwargs, lossless)
    "raw": ("<f4", -1.5, dict(compressor=None), True),
    "raw_be": (">i4", 7, dict(compressor=None), True),
    "zlib": ("<f8", 0.0, dict(compressor=numcodecs.Zlib(5)), True),
    "gzip": ("<i2", -3, dict(compressor=numcodecs.GZip(3)), True),
    "bz2": ("<u4", 9, dict(compressor=numcodecs.BZ2(5)), True),
    "lzma": ("<f4", 0.0, dict(compressor=numcodecs.LZMA()), True),
    "zstd": ("<i8", 0, dict(compressor=numcodecs.Zstd(3)), True),
    "lz4": ("<f4", 2.0, dict(compressor=numcodecs.LZ4(1)), True),
    "blosc_lz4": ("<f4", 0.0, dict(compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)), True),
    "blosc_zstd_bit": ("<i4", -1, dict(compressor=numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE)), True),
    "blosc_zlib_none": ("<u2", 0, dict(compressor=numcodecs.Blosc("zlib", 1, numcodecs.Blosc.NOSHUFFLE)), True),
    "order_f": ("<f8", 1.0, dict(compressor=numcodecs.Zlib(1), order="F"), True),
    "delta": ("<i4", 0, dict(compressor=numcodecs.Zlib(1), filters=[numcodecs.Delta("<i4")]), True),
    "fixedscaleoffset": ("<f8", 0.0, dict(compressor=None, filters=[
        numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4")]), False),
    "astype": ("<f8", 0.0, dict(compressor=None, filters=[
        numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")]), False),
    "quantize": ("<f8", 0.0, dict(compressor=numcodecs.Zlib(1), filters=[numcodecs.Quantize(2, "<f8")]), False),
    "bitround": ("<f4", 0.0, dict(compressor=None, filters=[numcodecs.BitRound(6)]), False),
    "shuffle": ("<f4", 0.0, dict(compressor=numcodecs.Zlib(1), filters=[numcodecs.Shuffle(4)]), True),
    "packbits": ("|b1", False, dict(compressor=None, filters=[numcodecs.PackBits()]), True),
    "categorize": ("<U1", "", dict(compressor=None, filters=[
        numcodecs.Categorize(["a", "b", "c"], "<U1", astype="|u1")]), True),
    "crc32": ("<i2", 0, dict(compressor=numcodecs.CRC32()), True),
    "adler32": ("<i2", 0, dict(compressor=numcodecs.Adler32()), True),
    "base64": ("<u1", 0, dict(compressor=numcodecs.Base64()), True),
}


def initial(dtype, seed):
    return values(dtype, SHAPE[0] * SHAPE[1], seed).reshape(SHAPE)


class V2Codecs(zf.TestCase):
    """Every v2 codec: writes through the mount, read back by zarr-python 2.13."""

    def test_every_codec(self):
        tmp = tempfile.mkdtemp(prefix="zfw-v2-")
        try:
            store = os.path.join(tmp, "w.zarr")
            twins = os.path.join(tmp, "twins.zarr")
            g, tg = zarr.open_group(store, mode="w"), zarr.open_group(twins, mode="w")
            models = {}
            for i, (name, (dt, fill, kw, _)) in enumerate(V2_CASES.items()):
                for grp in (g, tg):
                    z = grp.create_dataset(name, shape=SHAPE, chunks=CHUNKS, dtype=dt,
                                           fill_value=fill, **kw)
                    z[0:20, :] = initial(dt, i)[0:20]  # some chunks stored, the rest absent
                models[name] = np.ascontiguousarray(
                    zarr.open_array(os.path.join(store, name), "r")[:])
            with zf.Mount(store, options=["rw"], label="v2w") as m:
                for i, (name, (dt, fill, _, lossless)) in enumerate(V2_CASES.items()):
                    with self.subTest(codec=name):
                        do_writes(self, m.path(name), models[name], fill, 100 + i)
                        if lossless:  # the daemon's cached chunks already hold the writes
                            got = zf.read_all(m.path(name))
                            self.assertBytesEqual(got, models[name].tobytes(), name + " via mount")
            for i, (name, (dt, fill, _, lossless)) in enumerate(V2_CASES.items()):
                with self.subTest(codec=name):
                    tw = zarr.open_array(os.path.join(twins, name), "r+")
                    tw[:] = models[name]
                    got = zarr.open_array(os.path.join(store, name), "r")[:]
                    want = models[name] if lossless else tw[:]
                    self.assertTrue(nan_equal(got, want), "%s: zarr-python reads %s, want %s"
                                    % (name, got.reshape(-1)[:8], want.reshape(-1)[:8]))
                    keys = set(os.listdir(os.path.join(store, name)))
                    self.assertNotIn("1.1", keys, name + ": a chunk of fill values was stored")
                    self.assertIn("3.1", keys)
                    self.assertFalse([k for k in keys if ".zarrfs-" in k], "temporary files left")
            # Edge chunks carry the fill value outside the array (raw chunks: read the bytes).
            with open(os.path.join(store, "raw", "4.2"), "rb") as f:
                raw = np.frombuffer(f.read(), "<f4")
            raw = raw.reshape(CHUNKS)
            self.assertTrue(np.all(raw[5:, :] == -1.5) and np.all(raw[:, 9:] == -1.5),
                            "outside the array the edge chunk must hold the fill value")
        finally:
            shutil.rmtree(tmp)

    def test_write_empty_chunks(self):
        tmp = tempfile.mkdtemp(prefix="zfw-empty-")
        try:
            for opts, stored in ((["rw"], False), (["rw", "write_empty_chunks"], True)):
                store = os.path.join(tmp, "e%d.zarr" % stored)
                z = zarr.open_array(store, mode="w", shape=(16,), chunks=(8,), dtype="<i4",
                                    fill_value=5, compressor=numcodecs.Zlib(1))
                z[:] = np.arange(16)
                with zf.Mount(store, options=opts, label="empty") as m:
                    fd = os.open(m.path("e%d" % stored), os.O_WRONLY)
                    os.pwrite(fd, np.full(8, 5, "<i4").tobytes(), 0)
                    os.close(fd)
                self.assertEqual(os.path.exists(os.path.join(store, "0")), stored, opts)
                got = zarr.open_array(store, "r")[:]
                self.assertEqual(list(got), [5] * 8 + list(range(8, 16)))
        finally:
            shutil.rmtree(tmp)


# ---- Zarr v3: arrays made through the mount (user.zarr.metadata), read back by zarrita ------

def v3_doc(dtype, shape, chunks, fill, codecs):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs, "attributes": {"made": "by zarrfs"}}


BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BE = {"name": "bytes", "configuration": {"endian": "big"}}
CRC = {"name": "crc32c"}


def sharding(chunk, codecs, index_codecs=(BYTES, CRC), location="end"):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk), "codecs": list(codecs), "index_codecs": list(index_codecs),
        "index_location": location}}


# name: (data_type, numpy dtype, fill, chunk shape, codecs, zarrita reads it)
V3_CASES = {
    "bytes_le": ("float32", "<f4", -1.5, CHUNKS, [BYTES], True),
    "bytes_be": ("int16", "<i2", 3, CHUNKS, [BYTES_BE], True),
    "transpose": ("float64", "<f8", 0.0, CHUNKS,
                  [{"name": "transpose", "configuration": {"order": [1, 0]}}, BYTES], True),
    "gzip": ("uint32", "<u4", 0, CHUNKS, [BYTES, {"name": "gzip", "configuration": {"level": 1}}], True),
    "zstd": ("int64", "<i8", 0, CHUNKS, [BYTES, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}], True),
    "blosc": ("float32", "<f4", 0.0, CHUNKS, [BYTES, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}], True),
    "crc32c": ("uint8", "|u1", 0, CHUNKS, [BYTES, CRC], True),
    "shard_end": ("float32", "<f4", 0.0, (16, 20),
                  [sharding((8, 10), [BYTES, {"name": "gzip", "configuration": {"level": 1}}])], True),
    "shard_start": ("int32", "<i4", -1, (16, 20),
                    [sharding((8, 5), [BYTES], [BYTES], "start")], False),
    "shard_in_chain": ("uint16", "<u2", 0, (16, 20), [sharding((4, 10), [BYTES]), CRC], False),
}


class V3Codecs(zf.TestCase):
    """v3 arrays created through the mount, written, read back by zarrita (or, where zarrita
    cannot read them, by a fresh read-only mount) and compared with the numpy model."""

    def test_every_codec(self):
        tmp = tempfile.mkdtemp(prefix="zfw-v3-")
        try:
            store = os.path.join(tmp, "w3.zarr")
            os.makedirs(store)
            with open(os.path.join(store, "zarr.json"), "w") as f:
                json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
            models = {}
            with zf.Mount(store, options=["rw"], label="v3w") as m:
                for i, (name, (dt, npdt, fill, ch, codecs, _)) in enumerate(V3_CASES.items()):
                    with self.subTest(codec=name):
                        p = m.path(name)
                        open(p, "wb").close()
                        self.assertEqual(os.path.getsize(p), 0)
                        doc = json.dumps(v3_doc(dt, SHAPE, ch, fill, codecs))
                        os.setxattr(p, "user.zarr.metadata", doc.encode())
                        self.assertEqual(os.path.getsize(p), SHAPE[0] * SHAPE[1] * np.dtype(npdt).itemsize)
                        model = np.full(SHAPE, fill, dtype=npdt)
                        self.assertBytesEqual(zf.read_all(p), model.tobytes(), name + " fresh")
                        do_writes(self, p, model, fill, 300 + i)
                        models[name] = model
            zr = zarrita_read(store, [n for n, c in V3_CASES.items() if c[5]],
                              os.path.join(tmp, "zarrita"))
            with zf.Mount(store, label="v3r") as m:
                for name, (dt, npdt, fill, ch, codecs, by_zarrita) in V3_CASES.items():
                    with self.subTest(codec=name):
                        want = models[name].tobytes()
                        if by_zarrita:
                            self.assertTrue(zr[name].get("ok"), zr[name].get("error"))
                            self.assertBytesEqual(zr[name]["data"], want, name + " by zarrita")
                        self.assertBytesEqual(zf.read_all(m.path(name)), want, name + " remounted")
                        with open(os.path.join(store, name, "zarr.json")) as f:
                            meta = json.load(f)
                        self.assertEqual(meta["attributes"], {"made": "by zarrfs"})
            # the fill-only chunk (1, 1) is not stored; for shards, its inner chunk is left out
            self.assertFalse(os.path.exists(os.path.join(store, "gzip", "c", "1", "1")))
            self.assertTrue(os.path.exists(os.path.join(store, "gzip", "c", "3", "1")))
        finally:
            shutil.rmtree(tmp)

    def test_whole_shard_write_does_not_read(self):
        tmp = tempfile.mkdtemp(prefix="zfw-shard-")
        try:
            store = os.path.join(tmp, "s.zarr")
            os.makedirs(store)
            doc = v3_doc("float32", (32, 40), (16, 20), 0.0, [sharding((8, 10), [BYTES])])
            with open(os.path.join(store, "zarr.json"), "w") as f:
                json.dump(doc, f)
            a = np.arange(32 * 40, dtype="<f4").reshape(32, 40)
            with zf.Mount(store, options=["rw"], label="shard") as m:
                name = os.listdir(m.mnt)[0]
                fd = os.open(m.path(name), os.O_WRONLY)
                os.pwrite(fd, a.tobytes(), 0)          # everything: every shard whole
                os.fsync(fd)
                s0 = stats(m)["store"]
                os.pwrite(fd, a[16:].tobytes(), 16 * 40 * 4)   # the second row of shards again
                os.fsync(fd)
                s1 = stats(m)["store"]
                self.assertEqual(s1["requests"] - s1["writes"], s0["requests"] - s0["writes"],
                                 "whole shards written again must not be read")
                self.assertEqual(s1["writes"] - s0["writes"], 2)
                os.pwrite(fd, b"\0\0\x80\x3f", 4 * 41)  # one element: read-modify-write
                os.fsync(fd)
                s2 = stats(m)["store"]
                self.assertGreater(s2["requests"] - s2["writes"], s1["requests"] - s1["writes"])
                os.close(fd)
            a.reshape(-1)[41] = 1.0
            zr = zarrita_read(store, [""], os.path.join(tmp, "zr"))
            self.assertBytesEqual(zr[""]["data"], a.tobytes(), "sharded array by zarrita")
        finally:
            shutil.rmtree(tmp)


# ---- resizing, hierarchy edits, xattrs, deletion ------------------------------------------

class Hierarchy(zf.TestCase):
    def make_v2(self, tmp):
        store = os.path.join(tmp, "h.zarr")
        g = zarr.open_group(store, mode="w")
        z = g.create_dataset("a", shape=(10, 6), chunks=(4, 6), dtype="<i2", fill_value=-1,
                             compressor=numcodecs.Zlib(1))
        z[:] = np.arange(60).reshape(10, 6)
        g.create_group("sub").create_dataset("b", shape=(3,), dtype="<u1")
        return store

    def test_resize_and_append(self):
        tmp = tempfile.mkdtemp(prefix="zfw-resize-")
        try:
            store = self.make_v2(tmp)
            row = 6 * 2
            with zf.Mount(store, options=["rw"], label="resize") as m:
                p = m.path("a")
                self.assertErrno(errno.EINVAL, os.truncate, p, 5 * row + 1)
                os.truncate(p, 5 * row)          # shrink into the middle of chunk row 1
                self.assertEqual(os.path.getsize(p), 5 * row)
                self.assertEqual(json.loads(os.getxattr(p, "user.zarr.shape")), [5, 6])
                os.truncate(p, 9 * row)          # grow again: fill value, not the old rows
                fd = os.open(p, os.O_WRONLY | os.O_APPEND)
                os.write(fd, np.full(6, 77, "<i2").tobytes())   # one more row
                os.close(fd)
                self.assertEqual(os.stat(p).st_size, 10 * row)
            z = zarr.open_array(os.path.join(store, "a"), "r")
            self.assertEqual(z.shape, (10, 6))
            want = np.full((10, 6), -1, "<i2")
            want[:5] = np.arange(30).reshape(5, 6)
            want[9] = 77
            self.assertTrue(np.array_equal(z[:], want), z[:])
            with zf.Mount(store, options=["rw"], label="shrink") as m:
                os.truncate(m.path("a"), 2 * row)
            self.assertEqual(sorted(k for k in os.listdir(os.path.join(store, "a"))
                                    if not k.startswith(".")), ["0.0"])
            self.assertEqual(zarr.open_array(os.path.join(store, "a"), "r").shape, (2, 6))
        finally:
            shutil.rmtree(tmp)

    def test_groups_attributes_new_arrays(self):
        tmp = tempfile.mkdtemp(prefix="zfw-hier-")
        try:
            store = self.make_v2(tmp)
            with zf.Mount(store, options=["rw"], label="hier") as m:
                os.mkdir(m.path("g1"))
                os.mkdir(m.path("g1", "g2"))
                self.assertErrno(errno.EEXIST, os.mkdir, m.path("g1"))
                self.assertErrno(errno.ENOTEMPTY, os.rmdir, m.path("g1"))
                os.rmdir(m.path("g1", "g2"))
                self.assertErrno(errno.ENOTDIR, os.rmdir, m.path("a"))
                os.setxattr(m.path("a"), "user.zarr.attributes", b'{"units": "m", "n": [1, 2]}')
                os.setxattr(m.path("g1"), "user.zarr.attributes", b'{"kind": "group"}')
                self.assertErrno(errno.EINVAL, os.setxattr, m.path("a"), "user.zarr.attributes",
                                 b"[1, 2]")
                self.assertErrno(errno.EINVAL, os.setxattr, m.path("a"), "user.zarr.attributes",
                                 b"{not json")
                # a new array: an empty file, then its .zarray
                p = m.path("g1", "new")
                open(p, "wb").close()
                self.assertIn("new", os.listdir(m.path("g1")))
                self.assertErrno(errno.EINVAL, os.setxattr, p, "user.zarr.metadata",
                                 b'{"zarr_format": 2, "shape": [4]}')
                self.assertFalse(os.path.exists(os.path.join(store, "g1", "new", ".zarray")))
                meta = {"zarr_format": 2, "shape": [5, 4], "chunks": [2, 4], "dtype": "<f8",
                        "compressor": {"id": "zstd", "level": 1}, "fill_value": "NaN",
                        "order": "C", "filters": None}
                os.setxattr(p, "user.zarr.metadata", json.dumps(meta).encode())
                self.assertEqual(os.path.getsize(p), 5 * 4 * 8)
                with open(p, "r+b") as f:
                    f.seek(8 * 4)
                    f.write(np.arange(8, dtype="<f8").tobytes())
                self.assertErrno(errno.EPERM, os.setxattr, m.path("a"), "user.zarr.metadata",
                                 json.dumps(meta).encode())
                self.assertErrno(errno.EPERM, os.unlink, m.path("sub", "b"))
            g = zarr.open_group(store, "r")
            self.assertEqual(dict(g["a"].attrs), {"units": "m", "n": [1, 2]})
            self.assertEqual(dict(g["g1"].attrs), {"kind": "group"})
            self.assertNotIn("g2", g["g1"])
            new = g["g1/new"][:]
            self.assertTrue(np.all(np.isnan(new[0])) and np.all(np.isnan(new[3:])))
            self.assertEqual(list(new[1:3].reshape(-1)), list(range(8)))
            with zf.Mount(store, options=["rw", "allow_delete"], label="delete") as m:
                os.unlink(m.path("sub", "b"))
                self.assertNotIn("b", os.listdir(m.path("sub")))
                os.rmdir(m.path("sub"))
            self.assertFalse(os.path.exists(os.path.join(store, "sub")))
        finally:
            shutil.rmtree(tmp)

    def test_consolidated_takes_chunk_writes_only(self):
        tmp = tempfile.mkdtemp(prefix="zfw-cons-")
        try:
            store = self.make_v2(tmp)
            zarr.consolidate_metadata(store)
            with zf.Mount(store, options=["rw"], label="cons") as m:
                self.assertErrno(errno.EOPNOTSUPP, os.mkdir, m.path("new"))
                self.assertErrno(errno.EOPNOTSUPP, os.setxattr, m.path("a"),
                                 "user.zarr.attributes", b"{}")
                self.assertErrno(errno.EOPNOTSUPP, os.truncate, m.path("a"), 12)
                with open(m.path("a"), "r+b") as f:
                    f.write(np.full(6, 42, "<i2").tobytes())
            self.assertIn("consolidated", m.stderr_text())
            z = zarr.open_consolidated(store, mode="r")["a"]
            self.assertEqual(list(z[0]), [42] * 6)
            self.assertEqual(list(z[1]), list(range(6, 12)))
        finally:
            shutil.rmtree(tmp)

    def test_v3_groups_and_attributes(self):
        tmp = tempfile.mkdtemp(prefix="zfw-h3-")
        try:
            store = os.path.join(tmp, "h3.zarr")
            os.makedirs(store)
            with open(os.path.join(store, "zarr.json"), "w") as f:
                json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
            with zf.Mount(store, options=["rw"], label="h3") as m:
                os.mkdir(m.path("grp"))
                os.setxattr(m.path("grp"), "user.zarr.attributes", b'{"x": 1}')
                p = m.path("grp", "arr")
                open(p, "wb").close()
                os.setxattr(p, "user.zarr.metadata", json.dumps(
                    v3_doc("int16", (6,), (4,), 0, [BYTES])).encode())
                with open(p, "r+b") as f:
                    f.write(np.arange(6, dtype="<i2").tobytes())
            with open(os.path.join(store, "grp", "zarr.json")) as f:
                doc = json.load(f)
            self.assertEqual((doc["node_type"], doc["attributes"]), ("group", {"x": 1}))
            zr = zarrita_read(store, ["grp/arr"], os.path.join(tmp, "zr"))
            self.assertBytesEqual(zr["grp/arr"]["data"], np.arange(6, dtype="<i2").tobytes(),
                                  "new v3 array by zarrita")
        finally:
            shutil.rmtree(tmp)


class KernelAttributes(zf.TestCase):
    """Metadata changes made through a -o rw mount reach the kernel's attribute cache at once:
    the size stat reports right after the setxattr that creates an array, a truncate, a write
    past the end, for the array and its sidecars (-o sidecars). No sleeping: the attribute
    timeout of a writable mount is a second, and these checks run well within it. Sizes are read
    both with os.stat (stat(2)) and coreutils stat -c %s, which asks statx(2) for the size alone
    (the kernel then trusts a cached size even where it refreshes other fields)."""

    META = {"zarr_format": 2, "shape": [10, 4], "chunks": [3, 4], "dtype": "<f8",
            "compressor": None, "fill_value": 1.5, "order": "C", "filters": None}
    ROW = 4 * 8

    def sizes(self, path):
        r = zf.run(["stat", "-c", "%s", path])
        self.assertEqual(r.returncode, 0, r.stderr)
        return os.stat(path).st_size, int(r.stdout)

    def check_npy(self, path, rows):
        """path (a .npy sidecar) is an NPY header for (rows, 4) <f8 and that many bytes."""
        want = rows * self.ROW
        size = self.sizes(path)
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            shape, _fortran, dtype = np.lib.format._read_array_header(f, version)
            data_at = f.tell()
        self.assertEqual((shape, dtype), ((rows, 4), np.dtype("<f8")), path)
        self.assertEqual(size, (data_at + want,) * 2, "%s: stat right after the change" % path)

    def test_new_array_resize_and_growth(self):
        tmp = tempfile.mkdtemp(prefix="zfw-attr-")
        try:
            store = os.path.join(tmp, "s.zarr")
            zarr.open_group(store, mode="w")
            with zf.Mount(store, options=["rw", "sidecars=npy,nhdr"], label="attrs") as m:
                p = m.path("new")
                open(p, "wb").close()
                self.assertEqual(self.sizes(p), (0, 0))
                self.assertFalse(os.path.exists(p + ".npy"))
                os.setxattr(p, "user.zarr.metadata", json.dumps(self.META).encode())
                self.assertEqual(self.sizes(p), (10 * self.ROW,) * 2, "stat after setxattr")
                self.assertIn("new.npy", os.listdir(m.path()))
                self.check_npy(p + ".npy", 10)
                os.truncate(p, 20 * self.ROW)                       # grow
                self.assertEqual(self.sizes(p), (20 * self.ROW,) * 2, "stat after truncate")
                self.check_npy(p + ".npy", 20)
                nhdr = self.sizes(p + ".nhdr")
                with open(p + ".nhdr", "rb") as f:
                    text = f.read()
                self.assertIn(b"sizes: 4 20\n", text)   # NRRD: fastest axis first
                self.assertEqual(nhdr, (len(text),) * 2, "new.nhdr: stat after truncate")
                fd = os.open(p, os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, np.float64(7).tobytes())         # into a new row 21
                finally:
                    os.close(fd)
                self.assertEqual(self.sizes(p), (21 * self.ROW,) * 2, "stat after appending")
                self.check_npy(p + ".npy", 21)
                os.truncate(p, 5 * self.ROW)                        # shrink
                self.assertEqual(self.sizes(p), (5 * self.ROW,) * 2, "stat after shrinking")
                self.check_npy(p + ".npy", 5)
                self.assertEqual(json.loads(os.getxattr(p, "user.zarr.shape")), [5, 4])
            z = zarr.open_array(os.path.join(store, "new"), "r")
            self.assertEqual(z.shape, (5, 4))
            self.assertTrue(np.all(z[:] == 1.5), z[:])
        finally:
            shutil.rmtree(tmp)


class Writeback(zf.TestCase):
    """Written data reaches the store without fsync or close: a few seconds after the last write
    (the timer), and when the daemon is told to stop (SIGTERM, SIGINT)."""

    def make(self, tmp, name):
        store = os.path.join(tmp, name)
        z = zarr.open_array(store, mode="w", shape=(20, 10), chunks=(5, 10), dtype="<i4",
                            fill_value=0, compressor=numcodecs.Zstd(1))
        z[:] = 1
        return store

    def test_timer(self):
        tmp = tempfile.mkdtemp(prefix="zfw-timer-")
        try:
            store = self.make(tmp, "t.zarr")
            with zf.Mount(store, options=["rw"], label="timer") as m:
                fd = os.open(m.path("t"), os.O_RDWR)
                try:
                    os.pwrite(fd, np.full(10, 9, "<i4").tobytes(), 4 * 10 * 7)
                    t0 = time.monotonic()
                    while time.monotonic() - t0 < 10:
                        if zarr.open_array(store, "r")[7, 0] == 9:
                            break
                        time.sleep(0.2)
                    waited = time.monotonic() - t0
                finally:
                    os.close(fd)
            self.assertLess(waited, 5.0, "the write did not reach the store within 5 s")
            zf.log("  stored %.1f s after the write, file still open" % waited)
        finally:
            shutil.rmtree(tmp)

    def test_sigterm_and_sigint(self):
        tmp = tempfile.mkdtemp(prefix="zfw-sig-")
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                store = self.make(tmp, "s%d.zarr" % sig)
                m = zf.Mount(store, options=["rw"], label="sig").start()
                try:
                    fd = os.open(m.path("s%d" % sig), os.O_RDWR)
                    os.pwrite(fd, np.full(30, 5, "<i4").tobytes(), 4 * 10 * 12)
                    os.kill(m.pid, sig)
                    status = m.proc.wait(timeout=20)
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                finally:
                    m.stop()
                self.assertEqual(status, 0)
                got = zarr.open_array(store, "r")[:]
                want = np.ones((20, 10), "<i4")
                want[12:15] = 5
                self.assertTrue(np.array_equal(got, want), (sig, got))
        finally:
            shutil.rmtree(tmp)


class ReadOnly(zf.TestCase):
    """Without -o rw (and for the drafts, even with it) every change fails with EROFS."""

    def check_refusals(self, m, array, group):
        A, G = m.path(array), m.path(group)
        self.assertErrno(errno.EROFS, os.open, A, os.O_WRONLY)
        self.assertErrno(errno.EROFS, os.open, A, os.O_RDWR)
        self.assertErrno(errno.EROFS, os.truncate, A, 0)
        self.assertErrno(errno.EROFS, os.mkdir, os.path.join(G, "new"))
        self.assertErrno(errno.EROFS, os.open, os.path.join(G, "f"), os.O_CREAT | os.O_WRONLY)
        self.assertErrno(errno.EROFS, os.unlink, A)
        self.assertErrno(errno.EROFS, os.setxattr, A, "user.zarr.attributes", b"{}")

    def test_read_only_mount(self):
        tmp = tempfile.mkdtemp(prefix="zfw-ro-")
        try:
            store = Hierarchy.make_v2(self, tmp)
            before = zf.walk_store(store)
            with zf.Mount(store, label="ro") as m:
                self.check_refusals(m, "a", "sub")
                self.assertErrno(errno.EROFS, os.rmdir, m.path("sub"))
            self.assertEqual(zf.walk_store(store), before)
        finally:
            shutil.rmtree(tmp)

    def test_drafts_stay_read_only(self):
        tmp = tempfile.mkdtemp(prefix="zfw-draft-")
        try:
            store = os.path.join(tmp, "d.zr3")
            env = dict(os.environ, ZARR_V3_EXPERIMENTAL_API="1")
            r = subprocess.run(["/usr/bin/python3", "-c",
                                "import zarr, sys; g = zarr.open_group(sys.argv[1], mode='w', "
                                "zarr_version=3); g.create_group('g').zeros('a', shape=(4,))",
                                store], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with zf.Mount(store, options=["rw"], label="draft") as m:
                self.check_refusals(m, "g/a", "g")
            self.assertIn("read-only", m.stderr_text())
        finally:
            shutil.rmtree(tmp)

    def test_http_stays_read_only(self):
        tmp = tempfile.mkdtemp(prefix="zfw-http-")
        srv = None
        try:
            store = Hierarchy.make_v2(self, tmp)
            srv = subprocess.Popen(["/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                                    "0", "--directory", tmp], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            line = srv.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N ..."
            port = int(line.split(" port ")[1].split()[0])
            url = "http://127.0.0.1:%d/h.zarr" % port
            with zf.Mount(url, options=["rw"], label="http") as m:
                self.check_refusals(m, "a", "sub")
            self.assertIn("read-only", m.stderr_text())
        finally:
            if srv:
                srv.kill()
                srv.wait()
                srv.stdout.close()
            shutil.rmtree(tmp)


if __name__ == "__main__":
    zf.main()
