#!/usr/bin/python3
"""The zarr-extensions codecs scale_offset and conditional, and zarrs' zarrs.vlen and
zarrs.vlen_v2 (docs/formats.md), on arrays this file writes from the registry documents and
zarrs' layout, with expected values computed here by numpy (never read from zarrfs):

* scale_offset: float32 data decoded in float32 arithmetic (the test checks that float64
  arithmetic would give other values for some elements, so it can tell), the document's float64
  example with a NaN fill value, integers (exact quotients; a remainder or an overflow is EIO),
  the fill value transformed before a sharding codec (an empty inner chunk reads as the array's
  fill value), unknown configuration keys and bad values refused (EIO on the node), and
  `-o rw`: written values stored as numpy's float32 (x - offset) * scale, read back after a
  remount as numpy's float32 decode; an integer overflow on write fails;
* conditional: chunks whose headers enable shuffle and zstd, only one or none (numcodecs'
  Shuffle and Zstd, Python's gzip), a 16-bit header before crc32c; a reserved bit, a truncated
  header, a bad header_bits or a codec of the wrong kind refused; chunks zarrfs writes decoded
  by this file's own reader of the format (compressible: compressed; random: stored raw);
* zarrs.vlen (index uint32/uint64, start/end, index and data chains with compressors) and
  zarrs.vlen_v2 on `string` arrays holding zarrs' cities.csv, and on `bytes` arrays holding
  every byte value (\\xHH escaping); missing chunks read as the fill value; corrupt chunks EIO.
"""
import errno
import gzip
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount as zf  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402
from test_strings import bytes_line, text_of, BYTES  # noqa: E402

import numcodecs  # noqa: E402

WORK = None
CITIES = os.path.join(zf.FIXTURES, "zarrs-test-data", "cities.csv")
LE = {"name": "bytes", "configuration": {"endian": "little"}}


def chunks_of(arr, chunks, fill):
    """(coords, chunk array padded with fill to the chunk shape) for each chunk, C order."""
    grid = [-(-s // c) for s, c in zip(arr.shape, chunks)]
    for coords in np.ndindex(*grid):
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, chunks, arr.shape))
        part = np.full(chunks, fill, dtype=arr.dtype)
        part[tuple(slice(0, x.stop - x.start) for x in sl)] = arr[sl]
        yield coords, part


def write_array(root, name, data_type, shape, chunks, codecs, encoded, fill=0):
    """zarr.json plus the given {coords: bytes} chunks (None: left out)."""
    files = {name + "/zarr.json": c3.v3_array_doc(shape, chunks, data_type, codecs, fill)}
    for coords, data in encoded.items():
        if data is not None:
            files[name + "/" + c3.default_key(coords)] = data
    c3.write_files(root, files)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


# ------------------------------------------------------------------------------------------
# scale_offset

F32 = np.float32


def so_decode32(stored, offset, scale):
    """The document's decode, out = in / scale + offset, in float32 arithmetic (numpy)."""
    return (stored / F32(scale)).astype(F32) + F32(offset)


class ScaleOffset(zf.MountedTestCase):
    WANT = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "scale_offset.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        W = cls.WANT
        rng = np.random.default_rng(3)

        def so(offset=None, scale=None, **extra):
            cfg = {k: v for k, v in (("offset", offset), ("scale", scale)) if v is not None}
            cfg.update(extra)
            return {"name": "scale_offset", "configuration": cfg}

        # float32, the document's example configuration (offset 5, scale 0.1)
        stored = (rng.standard_normal(1024) * 1000).astype(F32)
        want = so_decode32(stored, 5, 0.1)
        in_f64 = (stored.astype(np.float64) / np.float64(F32(0.1)) + 5.0).astype(F32)
        assert (want != in_f64).any(), "no element tells float32 from float64 arithmetic"
        cls.F32_DIFFERS = int((want != in_f64).sum())
        write_array(root, "f32", "float32", (1024,), (256,), [so(5, 0.1), LE],
                    {(i,): stored[256 * i:256 * i + 256].tobytes() for i in range(4)})
        W["f32"] = want.tobytes()

        # float64 with NaN fill (the document's third example, without cast_value); one chunk
        # missing: NaN; "Infinity" and "0x..." values of the fill value encoding
        s64 = rng.uniform(1, 255, 30)
        s64[3] = np.nan
        w64 = s64 / 0.1 + (-10.0)
        w64 = np.concatenate([w64, np.full(10, np.nan)])
        write_array(root, "f64_nan", "float64", (40,), (10,), [so(-10, 0.1), LE],
                    {(i,): s64[10 * i:10 * i + 10].tobytes() for i in range(3)}, fill="NaN")
        W["f64_nan"] = w64.tobytes()
        hexscale = struct.unpack("<Q", struct.pack("<d", 0.25))[0]
        write_array(root, "f64_hex", "float64", (4,), (4,),
                    [so("-Infinity", "0x%016x" % hexscale), LE],
                    {(0,): np.array([1.0, -2.0, 0.0, 8.0]).tobytes()})
        W["f64_hex"] = np.array([1.0, -2.0, 0.0, 8.0]) / 0.25 + -np.inf
        W["f64_hex"] = W["f64_hex"].tobytes()

        # int16: exact quotients
        vals = (np.arange(-20, 20, dtype="<i2") * 3)
        write_array(root, "i16", "int16", (40,), (8,), [so(1000, 3), LE],
                    {(i,): vals[8 * i:8 * i + 8].tobytes() for i in range(5)})
        W["i16"] = (vals // 3 + 1000).astype("<i2").tobytes()
        # a missing chunk: the fill value itself (the decoded array's)
        write_array(root, "u8_fill", "uint8", (8,), (4,), [so(10, 2), LE],
                    {(0,): np.array([0, 2, 4, 6], "u1").tobytes()}, fill=7)
        W["u8_fill"] = bytes([10, 11, 12, 13, 7, 7, 7, 7])

        # errors when decoding: a remainder; an overflow (uint8 250/1 + 10)
        write_array(root, "bad_remainder", "int32", (4,), (4,), [so(0, 2), LE],
                    {(0,): np.array([2, 4, 7, 8], "<i4").tobytes()})
        write_array(root, "bad_overflow", "uint8", (4,), (4,), [so(10), LE],
                    {(0,): np.array([1, 250, 3, 4], "u1").tobytes()})
        write_array(root, "bad_f32_overflow", "float32", (2,), (2,), [so(0, 1e-30), LE],
                    {(0,): np.array([1e10, 1], F32).tobytes()})

        # metadata refused: an unknown key, a value not of the data type, a bool array
        write_array(root, "bad_key", "float32", (2,), (2,), [so(1, 2, factor=3), LE], {})
        write_array(root, "bad_int_offset", "int8", (2,), (2,), [so(1.5), LE], {})
        write_array(root, "bad_range", "uint8", (2,), (2,), [so(300), LE], {})
        write_array(root, "bad_bool", "bool", (2,), (2,), [so(1), LE], {}, fill=False)
        write_array(root, "bad_zero_scale", "int32", (2,), (2,), [so(1, 0), LE], {})

        # before sharding: the inner chunks' fill value is the encoded one, (7 - 5) * 2 = 4, so
        # an empty inner chunk reads as 7 (an untransformed 7 would read as 7 / 2 + 5 = 8.5)
        inner0 = np.array([0, 2, 4, 6], F32)  # decodes to 5, 6, 7, 8
        index = struct.pack("<QQQQ", 0, 16, 2 ** 64 - 1, 2 ** 64 - 1)
        shard = {"name": "sharding_indexed", "configuration": {
            "chunk_shape": [4], "codecs": [LE], "index_codecs": [LE], "index_location": "end"}}
        write_array(root, "sharded", "float32", (8,), (8,), [so(5, 2), shard],
                    {(0,): inner0.tobytes() + index}, fill=7)
        W["sharded"] = np.array([5, 6, 7, 8, 7, 7, 7, 7], F32).tobytes()
        # a fill value the codec cannot encode (uint8: 7 - 10 < 0): refused where a sharding
        # codec needs it; without one (u8_fill above) the array reads
        write_array(root, "bad_shard_fill", "uint8", (8,), (8,), [so(10), shard], {}, fill=7)
        return root

    def test_01_values(self):
        for name, want in self.WANT.items():
            got = zf.read_all(self.m.path(name))
            self.assertBytesEqual(got, want, name)
        log("  %d arrays equal numpy's decode; float32: %d of 1024 elements differ from float64 "
            "arithmetic" % (len(self.WANT), self.F32_DIFFERS))

    def test_02_decode_errors(self):
        for name, size in (("bad_remainder", 16), ("bad_overflow", 4), ("bad_f32_overflow", 8)):
            self.assertEqual(os.stat(self.m.path(name)).st_size, size)
            self.assertErrno(errno.EIO, zf.read_all, self.m.path(name))
        self.assertIn("scale_offset", self.m.stderr_text())

    def test_03_metadata_refused(self):
        for name in ("bad_key", "bad_int_offset", "bad_range", "bad_bool", "bad_zero_scale",
                     "bad_shard_fill"):
            self.assertErrno(errno.EIO, os.stat, self.m.path(name))
        err = self.m.stderr_text()
        self.assertIn('"factor": unknown configuration field', err)
        self.assertIn("sharding_indexed fills empty inner chunks", err)


class ScaleOffsetWrite(zf.TestCase):
    def test_write_read_back(self):
        root = os.path.join(WORK, "so_write.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        cfg = {"name": "scale_offset", "configuration": {"offset": 0.5, "scale": 3.3}}
        write_array(root, "a", "float32", (32,), (16,), [cfg, LE], {})
        icfg = {"name": "scale_offset", "configuration": {"offset": 0, "scale": 100}}
        write_array(root, "i8", "int8", (4,), (4,), [icfg, LE], {})
        x = (np.random.default_rng(8).standard_normal(32) * 77).astype(F32)
        with zf.Mount(root, options=["rw"], label="so_rw") as m:
            with open(m.path("a"), "r+b") as f:
                f.write(x.tobytes())
            with open(m.path("i8"), "r+b") as f:
                f.write(np.array([1, -1, 0, 1], "i1").tobytes())  # fits: 100, -100
            ok = True
            try:
                with open(m.path("i8"), "r+b") as f:
                    f.write(np.array([1, 2, 0, 0], "i1").tobytes())  # 200: overflow
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:
                ok = False
                self.assertIn(e.errno, (errno.EIO, errno.EINVAL))
            self.assertFalse(ok, "an int8 overflow on write was not refused")
        enc = ((x - F32(0.5)) * F32(3.3)).astype(F32)  # numpy's float32 arithmetic
        stored = np.concatenate([np.frombuffer(read_file(os.path.join(root, "a", "c", str(i))),
                                               "<f4") for i in range(2)])
        self.assertBytesEqual(stored.tobytes(), enc.tobytes(), "stored chunks")
        self.assertBytesEqual(read_file(os.path.join(root, "i8", "c", "0")),
                              np.array([100, -100, 0, 100], "i1").tobytes(), "int8 chunk")
        with zf.Mount(root, label="so_reread") as m:
            got = zf.read_all(m.path("a"))
        self.assertBytesEqual(got, so_decode32(enc, 0.5, 3.3).tobytes(), "read back")
        log("  32 float32 written, stored as numpy's float32 encode, read back as its decode; "
            "int8 overflow refused")


# ------------------------------------------------------------------------------------------
# conditional

def cond_header(bits, nbytes=1):
    return int(bits).to_bytes(nbytes, "little")


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return struct.pack("<I", crc ^ 0xFFFFFFFF)


def cond_decode(data, codecs, header_bytes):
    """This file's own reader of the conditional codec (registry document, "Decoding Process"):
    header bits little-endian, codecs whose bit is set decoded in reverse order."""
    mask = int.from_bytes(data[:header_bytes], "little")
    body = data[header_bytes:]
    for i in reversed(range(len(codecs))):
        if mask >> i & 1:
            body = codecs[i](body)
    return mask, body


class Conditional(zf.MountedTestCase):
    WANT = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "conditional.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        W = cls.WANT
        shuf = numcodecs.Shuffle(elementsize=4)
        zst = numcodecs.Zstd(level=3)
        a = (np.arange(4 * 256, dtype="<i4") * 5 % 1000).reshape(4, 256)
        a[1] = np.random.default_rng(1).integers(-2 ** 31, 2 ** 31 - 1, 256)
        conf = {"name": "conditional", "configuration": {"codecs": [
            {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]}}
        enc = {}
        for (i, _), part in chunks_of(a, (1, 256), 0):
            raw = part.tobytes()
            bits = [0b11, 0b00, 0b10, 0b01][i]
            body = raw
            if bits & 1:
                body = bytes(shuf.encode(body))
            if bits & 2:
                body = bytes(zst.encode(body))
            enc[(i, 0)] = cond_header(bits) + body
        write_array(root, "shuffle_zstd", "int32", (4, 256), (1, 256), [LE, conf], enc)
        W["shuffle_zstd"] = a.tobytes()

        b = np.linspace(0, 1, 300).astype("<f8")
        gconf = {"name": "conditional", "configuration": {
            "codecs": [{"name": "gzip", "configuration": {"level": 5}}], "header_bits": 16}}
        enc = {}
        for (i,), part in chunks_of(b, (100,), 0.0):
            body = part.tobytes()
            bits = i % 2  # chunks 0 and 2 raw, 1 gzip
            if bits:
                body = gzip.compress(body, 5, mtime=0)
            payload = cond_header(bits, 2) + body
            enc[(i,)] = payload + crc32c(payload)
        write_array(root, "gzip_crc", "float64", (300,), (100,), [LE, gconf, {"name": "crc32c"}],
                    enc)
        W["gzip_crc"] = b.tobytes()

        # empty list: header_bits 8 given, nothing to apply
        e = np.arange(10, dtype="u1")
        econf = {"name": "conditional", "configuration": {"codecs": [], "header_bits": 8}}
        write_array(root, "empty_list", "uint8", (10,), (10,), [LE, econf],
                    {(0,): b"\x00" + e.tobytes()})
        W["empty_list"] = e.tobytes()

        # after a compressor: the conditional's size is known only from the data
        zconf = {"name": "conditional", "configuration": {"codecs": [
            {"name": "numcodecs.zlib", "configuration": {"level": 1}}]}}
        d = np.arange(500, dtype="<u2")
        write_array(root, "after_gzip", "uint16", (500,), (500,),
                    [LE, {"name": "gzip", "configuration": {"level": 1}}, zconf],
                    {(0,): cond_header(1) + zlib.compress(gzip.compress(d.tobytes(), 1, mtime=0))})
        W["after_gzip"] = d.tobytes()

        # corrupt chunks: a reserved bit; a truncated header; inner data that does not decode
        one = {"name": "conditional", "configuration": {"codecs": [
            {"name": "zstd", "configuration": {"level": 1}}]}}
        raw = np.arange(16, dtype="<i4").tobytes()
        write_array(root, "bad_reserved", "int32", (16,), (16,), [LE, one],
                    {(0,): cond_header(0b100) + raw})
        two = dict(one, configuration=dict(one["configuration"], header_bits=16))
        write_array(root, "bad_truncated", "int32", (16,), (16,), [LE, two], {(0,): b"\x00"})
        write_array(root, "bad_inner", "int32", (16,), (16,), [LE, one],
                    {(0,): cond_header(1) + raw})
        write_array(root, "bad_raw_size", "int32", (16,), (16,), [LE, one],
                    {(0,): cond_header(0) + raw[:-4]})

        # metadata refused
        for name, cfg in (("bad_bits", {"codecs": [], "header_bits": 12}),
                          ("bad_few_bits", {"codecs": [one["configuration"]["codecs"][0]] * 9,
                                            "header_bits": 8}),
                          ("bad_kind", {"codecs": [LE]}),
                          ("bad_key", {"codecs": [], "mask": 1}),
                          ("bad_missing", {})):
            write_array(root, name, "int32", (16,), (16,),
                        [LE, {"name": "conditional", "configuration": cfg}], {})
        return root

    def test_01_values(self):
        for name, want in self.WANT.items():
            self.assertBytesEqual(zf.read_all(self.m.path(name)), want, name)
        log("  %d arrays, chunks with headers 0b11, 0b00, 0b10, 0b01, 16-bit headers before "
            "crc32c, an empty list, after gzip" % len(self.WANT))

    def test_02_corrupt(self):
        for name in ("bad_reserved", "bad_truncated", "bad_inner", "bad_raw_size"):
            self.assertErrno(errno.EIO, zf.read_all, self.m.path(name))

    def test_03_refused(self):
        for name in ("bad_bits", "bad_few_bits", "bad_kind", "bad_key", "bad_missing"):
            self.assertErrno(errno.EIO, os.stat, self.m.path(name))


class ConditionalWrite(zf.TestCase):
    def test_write(self):
        root = os.path.join(WORK, "cond_write.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        conf = {"name": "conditional", "configuration": {"codecs": [
            {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
            {"name": "zstd", "configuration": {"level": 3}}]}}
        write_array(root, "a", "int32", (2, 1024), (1, 1024), [LE, conf], {})
        x = np.zeros((2, 1024), "<i4")
        x[0] = np.arange(1024) // 7
        x[1] = np.random.default_rng(2).integers(-2 ** 31, 2 ** 31 - 1, 1024)
        with zf.Mount(root, options=["rw"], label="cond_rw") as m:
            with open(m.path("a"), "r+b") as f:
                f.write(x.tobytes())
        shuf = numcodecs.Shuffle(elementsize=4)
        zst = numcodecs.Zstd()
        codecs = [lambda b: bytes(shuf.decode(b)), lambda b: bytes(zst.decode(b))]
        masks = []
        for i in range(2):
            data = read_file(os.path.join(root, "a", "c", str(i), "0"))
            mask, body = cond_decode(data, codecs, 1)
            masks.append(mask)
            self.assertBytesEqual(body, x[i].tobytes(), "chunk %d decoded here" % i)
        self.assertEqual(masks, [0b11, 0b00], "compressible chunk compressed, random one raw")
        with zf.Mount(root, label="cond_reread") as m:
            self.assertBytesEqual(zf.read_all(m.path("a")), x.tobytes(), "read back")
        log("  written chunks decoded by this file's reader: masks %s" % masks)


# ------------------------------------------------------------------------------------------
# zarrs.vlen, zarrs.vlen_v2

def vlen_v2_chunk(items):
    """numcodecs' layout (zarrs.vlen_v2): u32 count, then u32 length + bytes per element."""
    out = [struct.pack("<I", len(items))]
    for b in items:
        out.append(struct.pack("<I", len(b)) + b)
    return b"".join(out)


def vlen_chunk(items, index64, at_end, index_enc=lambda b: b, data_enc=lambda b: b, first=0):
    """zarrs.vlen (zarrs' vlen.rs): offsets (n + 1, from `first`) and data, each encoded; the
    encoded index's length as u64 LE at the start (index first) or at the end (index last)."""
    offs = [first]
    for b in items:
        offs.append(offs[-1] + len(b))
    index = index_enc(np.array(offs, "<u8" if index64 else "<u4").tobytes())
    data = data_enc(b"\xee" * first + b"".join(items))
    n = struct.pack("<Q", len(index))
    return data + index + n if at_end else n + index + data


def vlen_conf(index64, location, index_codecs=(LE,), data_codecs=({"name": "bytes"},)):
    cfg = {"index_codecs": list(index_codecs), "data_codecs": list(data_codecs),
           "index_data_type": "uint64" if index64 else "uint32"}
    if location:
        cfg["index_location"] = location
    return {"name": "zarrs.vlen", "configuration": cfg}


class ZarrsVlen(zf.MountedTestCase):
    WANT = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "vlen.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        W = cls.WANT
        with open(CITIES, encoding="utf-8") as f:
            cities = f.read().splitlines()
        n, ch = len(cities), 1000
        parts = [[c.encode() for c in cities[i:i + ch]] for i in range(0, n, ch)]
        pad = lambda p: p + [b""] * (ch - len(p))  # noqa: E731 (the edge chunk's padding)
        zst = numcodecs.Zstd(level=1)
        zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
        gz = {"name": "gzip", "configuration": {"level": 1}}
        cities_text = text_of(cities)

        # zarrs.vlen, uint32 offsets at the end, compressors on both chains
        enc = {(i,): vlen_chunk(pad(p), False, True, lambda b: bytes(zst.encode(b)),
                                lambda b: gzip.compress(b, 1, mtime=0))
               for i, p in enumerate(parts)}
        write_array(root, "cities_vlen", "string", (n,), (ch,),
                    [vlen_conf(False, "end", [LE, zstd], [{"name": "bytes"}, gz])], enc, fill="")
        W["cities_vlen"] = cities_text
        # zarrs' first draft (no index_location: start), uint64, one chunk missing
        enc = {(i,): vlen_chunk(pad(p), True, False) for i, p in enumerate(parts)}
        enc[(3,)] = None
        write_array(root, "cities_vlen_v0", "string", (n,), (ch,), [vlen_conf(True, None)], enc,
                    fill="")
        W["cities_vlen_v0"] = text_of(cities[:3000] + [""] * 1000 + cities[4000:])
        # zarrs.vlen_v2 followed by zstd, under the URL name
        enc = {(i,): bytes(zst.encode(vlen_v2_chunk(pad(p)))) for i, p in enumerate(parts)}
        write_array(root, "cities_vlen_v2", "string", (n,), (ch,),
                    [{"name": "https://codec.zarrs.dev/array_to_bytes/vlen_v2"}, zstd], enc,
                    fill="")
        W["cities_vlen_v2"] = cities_text

        # bytes arrays: every byte value; the escaping is vlen-bytes'
        items = [b for b in BYTES if b is not None]
        m = len(items)
        bparts = [items[i:i + 64] for i in range(0, m, 64)]
        bpad = lambda p: p + [b""] * (64 - len(p))  # noqa: E731
        want_bytes = "".join(bytes_line(b) + "\n" for b in items)
        enc = {(i,): vlen_chunk(bpad(p), True, False, first=5 * i) for i, p in enumerate(bparts)}
        write_array(root, "bytes_vlen", "bytes", (m,), (64,), [vlen_conf(True, "start")], enc,
                    fill=[])
        W["bytes_vlen"] = want_bytes
        enc = {(i,): vlen_v2_chunk(bpad(p)) for i, p in enumerate(bparts)}
        enc[(1,)] = None  # the fill value: the bytes [104, 105] ("hi")
        write_array(root, "bytes_vlen_v2", "bytes", (m,), (64,), [{"name": "zarrs.vlen_v2"}],
                    enc, fill=[104, 105])
        W["bytes_vlen_v2"] = "".join(
            (bytes_line(b) if not 64 <= k < 128 else "hi") + "\n" for k, b in enumerate(items))
        # 2-D, a string array, transposed before the codec
        s2 = np.array([["r%dc%d\t" % (r, c) for c in range(5)] for r in range(4)], dtype=object)
        tr = {"name": "transpose", "configuration": {"order": [1, 0]}}
        enc = {(0, 0): vlen_chunk([x.encode() for x in s2.T.reshape(-1)], False, True)}
        write_array(root, "t2d", "string", (4, 5), (4, 5), [tr, vlen_conf(False, "end")], enc,
                    fill="")
        W["t2d"] = text_of(list(s2.reshape(-1)))

        # corrupt chunks and refused metadata
        good = [b"a", b"bc", b"", b"d"]
        conf = vlen_conf(False, "start")
        chunk = vlen_chunk(good, False, False)
        bad_offsets = struct.pack("<Q", 20) + np.array([0, 1, 3, 2, 4], "<u4").tobytes() + b"abcd"
        for name, data in (("bad_short", chunk[:5]), ("bad_index_len", b"\xff" * 8 + chunk[8:]),
                           ("bad_offsets", bad_offsets), ("bad_data", chunk[:-1]),
                           ("bad_utf8", vlen_chunk([b"a", b"\xff", b"", b"d"], False, False))):
            write_array(root, name, "string", (4,), (4,), [conf], {(0,): data}, fill="")
        for name, cfg in (("bad_key", dict(conf["configuration"], extra=1)),
                          ("bad_type", dict(conf["configuration"], index_data_type="uint16")),
                          ("bad_location", dict(conf["configuration"], index_location="middle"))):
            write_array(root, name, "string", (4,), (4,), [{"name": "zarrs.vlen",
                                                            "configuration": cfg}], {}, fill="")
        write_array(root, "bad_v2_key", "bytes", (4,), (4,),
                    [{"name": "zarrs.vlen_v2", "configuration": {"x": 1}}], {}, fill=[])
        return root

    def test_01_text(self):
        for name, want in self.WANT.items():
            got = zf.read_all(self.m.path(name)).decode("utf-8")
            self.assertEqual(got, want, name)
        log("  %d arrays: zarrs' cities.csv (string) and every byte value (bytes) as text"
            % len(self.WANT))

    def test_02_xattr(self):
        t = os.getxattr(self.m.path("bytes_vlen"), "user.zarr.text").decode()
        self.assertIn("\\xHH", t)
        self.assertIn("codec: zarrs.vlen", t)
        t = os.getxattr(self.m.path("cities_vlen_v2"), "user.zarr.text").decode()
        self.assertEqual(t, "lines; escaping: postgresql-copy-text; codec: zarrs.vlen_v2")

    def test_03_corrupt(self):
        for name in ("bad_short", "bad_index_len", "bad_offsets", "bad_data", "bad_utf8"):
            self.assertErrno(errno.EIO, zf.read_all, self.m.path(name))

    def test_04_refused(self):
        for name in ("bad_key", "bad_type", "bad_location", "bad_v2_key"):
            self.assertErrno(errno.EIO, os.stat, self.m.path(name))


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zf-regcodecs-")


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    zf.main()
