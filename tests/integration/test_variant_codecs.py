#!/usr/bin/python3
"""Codec variants real writers produce, through zarrfs, from a local directory and over HTTP
(a real nginx, remote_servers.Nginx, autoindex on): every store is mounted both ways and each
array file is byte-compared with the array this test wrote (numpy), or with GDAL's own read.

* v2.zarr (Zarr v2, written here): numcodecs' fletcher32 and jenkins_lookup3 checksums as the
  compressor and as a filter (before zlib / blosc). Debian's numcodecs 0.11 predates both
  codecs (0.12), so the checksums come from fletcher32_ref / lookup3_ref below, Python
  implementations of numcodecs' fletcher32.pyx and jenkins.pyx checked against numcodecs'
  own known-answer vectors (tests/test_fletcher32.py, tests/test_jenkins.py). Arrays with one
  chunk whose checksum is wrong read as EIO there, and only there.
* v3.zarr (Zarr v3, written here): numcodecs.fletcher32, numcodecs.jenkins_lookup3; zarrs'
  bitround on integers and floats (stored values rounded by zarrs_round below, a model of
  zarrs' round_bits; plus two chunks zarrs itself wrote for its tests, verbatim); chains whose
  intermediate sizes only the data can tell: transpose -> bytes -> zstd -> gzip and
  sharding_indexed -> gzip.
* d2022.zarr (the May 2022 draft, written as test_draft2022.py does): endian (big) -> gzip ->
  blosc.
* gdal_v2.zarr, gdal_v3.zarr: written by GDAL 3.6 (python3-gdal) with COMPRESS=BLOSC and
  BLOSC_SHUFFLE=BIT / NONE / BYTE / bit / 2 / 0 (Zarr v2, and FORMAT=ZARR_V3, which is the 2020
  draft), whose metadata spells "shuffle" as the option's string (BYTE, the default, as 1);
  compared with GDAL's ReadAsArray.
* Writes (local, -o rw, on a copy): the new chains and codecs encode: the chunks zarrfs stores
  are decoded here with gzip/numcodecs/the reference checksums, bitround by the zarrs model.

Run: ZARRFS=build/src/fuse/zarrfs /usr/bin/python3 tests/integration/test_variant_codecs.py -v
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

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import gen_v3_common as c3  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402

WORK = None
SRV = None
NGINX = None
WANT = {}        # (store, array path) -> expected flat bytes
BAD = {}         # (store, array path) -> (item bytes per chunk, set of bad chunk indices, n chunks)
REMOTE_OPTS = ["retries=2", "timeout=20"]
STORES = ["v2.zarr", "v3.zarr", "d2022.zarr", "gdal_v2.zarr", "gdal_v3.zarr"]

# ---------------------------------------------------------------------------------------------
# reference implementations


def fletcher32_ref(data):
    """numcodecs 0.12+ fletcher32.pyx (HDF5's H5_checksum_fletcher32): 16-bit big-endian words,
    32-bit sums folded after every 360 words, an odd last byte as a high byte, two final
    folds."""
    m = 0xFFFFFFFF
    s1 = s2 = 0
    words, i = len(data) // 2, 0
    while words:
        t = min(words, 360)
        words -= t
        for _ in range(t):
            s1 = (s1 + (data[i] << 8 | data[i + 1])) & m
            s2 = (s2 + s1) & m
            i += 2
        s1 = (s1 & 0xFFFF) + (s1 >> 16)
        s2 = (s2 & 0xFFFF) + (s2 >> 16)
    if len(data) % 2:
        s1 = (s1 + (data[i] << 8)) & m
        s2 = (s2 + s1) & m
        s1 = (s1 & 0xFFFF) + (s1 >> 16)
        s2 = (s2 & 0xFFFF) + (s2 >> 16)
    s1 = (s1 & 0xFFFF) + (s1 >> 16)
    s2 = (s2 & 0xFFFF) + (s2 >> 16)
    return (s2 << 16 | s1) & m


def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def lookup3_ref(data, initval=0):
    """Bob Jenkins' hashlittle (lookup3.c, public domain), as numcodecs' jenkins.pyx."""
    m = 0xFFFFFFFF
    n = len(data)
    a = b = c = (0xDEADBEEF + n + initval) & m
    if n == 0:
        return c

    def w(p):
        return int.from_bytes(bytes(p).ljust(4, b"\0"), "little")

    i = 0
    while n - i > 12:
        a, b, c = (a + w(data[i:i + 4])) & m, (b + w(data[i + 4:i + 8])) & m, (c + w(data[i + 8:i + 12])) & m
        a = (a - c) & m; a ^= _rot(c, 4); c = (c + b) & m      # noqa: E702
        b = (b - a) & m; b ^= _rot(a, 6); a = (a + c) & m      # noqa: E702
        c = (c - b) & m; c ^= _rot(b, 8); b = (b + a) & m      # noqa: E702
        a = (a - c) & m; a ^= _rot(c, 16); c = (c + b) & m     # noqa: E702
        b = (b - a) & m; b ^= _rot(a, 19); a = (a + c) & m     # noqa: E702
        c = (c - b) & m; c ^= _rot(b, 4); b = (b + a) & m      # noqa: E702
        i += 12
    t = bytes(data[i:]).ljust(12, b"\0")
    a, b, c = (a + w(t[0:4])) & m, (b + w(t[4:8])) & m, (c + w(t[8:12])) & m
    c ^= b; c = (c - _rot(b, 14)) & m      # noqa: E702
    a ^= c; a = (a - _rot(c, 11)) & m      # noqa: E702
    b ^= a; b = (b - _rot(a, 25)) & m      # noqa: E702
    c ^= b; c = (c - _rot(b, 16)) & m      # noqa: E702
    a ^= c; a = (a - _rot(c, 4)) & m       # noqa: E702
    b ^= a; b = (b - _rot(a, 14)) & m      # noqa: E702
    c ^= b; c = (c - _rot(b, 24)) & m      # noqa: E702
    return c


# numcodecs' own vectors (tests/test_fletcher32.py test_known, tests/test_jenkins.py)
_FL_KNOWN = (b'w\x07\x00\x00\x00\x00\x00\x00\x85\xf6\xff\xff\xff\xff\xff\xff'
             b'i\x07\x00\x00\x00\x00\x00\x00\x94\xf6\xff\xff\xff\xff\xff\xff'
             b'\x88\t\x00\x00\x00\x00\x00\x00i\x03\x00\x00\x00\x00\x00\x00'
             b'\x93\xfd\xff\xff\xff\xff\xff\xff\xc3\xfc\xff\xff\xff\xff\xff\xff'
             b"'\x02\x00\x00\x00\x00\x00\x00\xba\xf7\xff\xff\xff\xff\xff\xff")
assert struct.pack("<I", fletcher32_ref(_FL_KNOWN)) == b'\xfd%\x86d'
assert lookup3_ref(b"", 0) == 0xDEADBEEF
assert lookup3_ref(b"", 0xDEADBEEF) == 0xBD5B7DDE
assert lookup3_ref(b"Four score and seven years ago", 0) == 0x17770551
assert lookup3_ref(b"Four score and seven years ago", 1) == 0xCD628161
assert struct.pack("<I", lookup3_ref(b"Four score and seven years ago", 1230)) == b'\xd7Z\xe2\x0e'
assert lookup3_ref(b"jenkins", 0) == 202276345


def with_fletcher32(raw):
    return raw + struct.pack("<I", fletcher32_ref(raw))


def with_lookup3(raw, initval=0):
    return raw + struct.pack("<I", lookup3_ref(raw, initval))


def zarrs_round(a, keepbits):
    """zarrs' bitround (zarrs_data_type codec_traits/bitround.rs round_bits): the element's bits
    as an unsigned integer v of its width; maxbits = the mantissa bits of a float, or for an
    integer the position of v's most significant set bit; when keepbits < maxbits, with
    m = maxbits - keepbits: v = saturating(v + ((v >> m) & 1) + 2^(m-1) - 1) & ~(2^m - 1)."""
    a = np.ascontiguousarray(a)
    width = a.dtype.itemsize * 8
    mant = {"f": {16: 10, 32: 23, 64: 52}.get(width)}.get(a.dtype.kind)
    top = (1 << width) - 1
    u = a.view("<u%d" % a.dtype.itemsize).reshape(-1)
    out = []
    for v in (int(x) for x in u):
        maxbits = mant if mant else v.bit_length()
        if keepbits < maxbits:
            m = maxbits - keepbits
            v = min(v + ((v >> m) & 1) + (1 << (m - 1)) - 1, top) & (top >> m << m)
        out.append(v)
    return np.array(out, dtype=u.dtype).view(a.dtype).reshape(a.shape)


# ---------------------------------------------------------------------------------------------
# writing the stores


def chunk_of(want, idx, chunks, fill):
    """The chunk idx of want, padded with the fill value to the full chunk shape."""
    sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, want.shape))
    x = np.full(chunks, fill, dtype=want.dtype)
    x[tuple(slice(0, s.stop - s.start) for s in sel)] = want[sel]
    return x


def grid_of(shape, chunks):
    return [-(-s // c) for s, c in zip(shape, chunks)]


def corrupt_sum(enc, at_end=True):
    """The same chunk with one bit of its checksum flipped."""
    b = bytearray(enc)
    b[-2 if at_end else 1] ^= 0x08
    return bytes(b)


def write_v2(root, name, want, chunks, compressor, filters, encode, fill=0, bad=()):
    """A v2 array: .zarray as zarr-python 2.13 writes it, chunks encode(raw C-order bytes)."""
    d = os.path.join(root, name)
    doc = {"zarr_format": 2, "shape": list(want.shape), "chunks": list(chunks),
           "dtype": want.dtype.str, "compressor": compressor, "filters": filters,
           "fill_value": fill, "order": "C"}
    files = {".zarray": doc}
    for idx in np.ndindex(*grid_of(want.shape, chunks)):
        enc = encode(chunk_of(want, idx, chunks, fill).tobytes())
        files[".".join(map(str, idx))] = corrupt_sum(enc) if idx in bad else enc
    c3.write_files(d, files)
    WANT[("v2.zarr", name)] = want.tobytes()


def write_v3(root, name, want, chunks, codecs, encode, fill=0, bad=()):
    """A final-v3 array; encode(chunk array) gives the stored bytes. Flat files are
    little-endian."""
    d = os.path.join(root, name)
    files = {"zarr.json": c3.v3_array_doc(want.shape, chunks, DT_NAMES[want.dtype.str], codecs,
                                          fill_value=fill)}
    for idx in np.ndindex(*grid_of(want.shape, chunks)):
        enc = encode(chunk_of(want, idx, chunks, fill))
        files[c3.default_key(idx)] = corrupt_sum(enc) if idx in bad else enc
    c3.write_files(d, files)
    WANT[("v3.zarr", name)] = np.ascontiguousarray(want, dtype=want.dtype.newbyteorder("<")).tobytes()


DT_NAMES = {v: k for k, v in c3.V3_TYPESTR.items()}
LE = {"name": "bytes", "configuration": {"endian": "little"}}
EMPTY = 2 ** 64 - 1


def le(x):
    return np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<")).tobytes()


def shard_of(x, inner, fill):
    """sharding-indexed.rst "Binary shard format": inner chunks [bytes little, zstd] in C order,
    fill-only ones left out, then the index (little-endian uint64 pairs) and its CRC-32C."""
    cps = [s // c for s, c in zip(x.shape, inner)]
    payload, entries = b"", []
    for idx in np.ndindex(*cps):
        sub = x[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, inner))]
        if np.all(sub == fill):
            entries += [EMPTY, EMPTY]
            continue
        enc = bytes(numcodecs.Zstd(level=1).encode(le(sub)))
        entries += [len(payload), len(enc)]
        payload += enc
    return payload + c3.with_crc32c(np.array(entries, dtype="<u8").tobytes())


def build_v2(root):
    c3.write_files(root, {".zgroup": {"zarr_format": 2}})
    rng = np.random.default_rng(1)
    a = rng.integers(-50000, 50000, (37, 29)).astype("<i4")
    write_v2(root, "fletcher32", a, (10, 8), {"id": "fletcher32"}, None, with_fletcher32)
    f = rng.normal(0, 1e3, (21, 19)).astype(">f8")
    write_v2(root, "jenkins_lookup3", f, (8, 8), {"id": "jenkins_lookup3", "initval": 0,
                                                  "prefix": None}, None, with_lookup3)
    z = numcodecs.Zlib(level=1)
    write_v2(root, "fletcher32_filter", a, (16, 16), {"id": "zlib", "level": 1},
             [{"id": "fletcher32"}], lambda raw: bytes(z.encode(with_fletcher32(raw))))
    u = (np.arange(40 * 30) % 700).astype("<u2").reshape(40, 30)
    bl = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
    write_v2(root, "jenkins_filter", u, (16, 16), bl.get_config(),
             [{"id": "jenkins_lookup3", "initval": 7, "prefix": None}],
             lambda raw: bytes(bl.encode(with_lookup3(raw, 7))))
    # one bad checksum: chunks of a page each, so that the kernel's page reads of the other
    # chunks do not touch it
    v = np.arange(4096, dtype="<i4") * 3 - 7
    write_v2(root, "fletcher32_bad", v, (1024,), {"id": "fletcher32"}, None, with_fletcher32,
             bad={(2,)})
    BAD[("v2.zarr", "fletcher32_bad")] = (4096, {2}, 4)
    write_v2(root, "jenkins_filter_bad", v, (1024,), {"id": "zlib", "level": 1},
             [{"id": "jenkins_lookup3", "initval": 0, "prefix": None}],
             lambda raw: bytes(z.encode(with_lookup3(raw))))
    # flip a bit of the checksum inside the zlib stream: rewrite chunk 1
    raw = v[1024:2048].tobytes()
    c3.write_files(os.path.join(root, "jenkins_filter_bad"),
                   {"1": bytes(z.encode(corrupt_sum(with_lookup3(raw))))})
    BAD[("v2.zarr", "jenkins_filter_bad")] = (4096, {1}, 4)


# Chunks zarrs wrote for its own tests (zarrs tests/data/codec/bitround/*.zarr/c/0, keepbits 3)
ZARRS_U8 = bytes.fromhex("00010a0c6080c0c0e0e0")
ZARRS_F32 = bytes.fromhex("00000000" "0000d03d" "0000a03f" "00004041" "0000f042" "0000a044"
                          "0000c07f" "0000807f" "000080ff")


def build_v3(root):
    c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
    rng = np.random.default_rng(2)
    a = rng.integers(-2 ** 31, 2 ** 31 - 1, (33, 27)).astype("<i4")
    write_v3(root, "fletcher32", a, (10, 10), [LE, {"name": "numcodecs.fletcher32"}],
             lambda x: with_fletcher32(le(x)))
    f = rng.normal(0, 1, (30, 20)).astype("<f4")
    write_v3(root, "jenkins_lookup3", f, (16, 7),
             [LE, {"name": "numcodecs.jenkins_lookup3",
                   "configuration": {"initval": 5, "prefix": None}}],
             lambda x: with_lookup3(le(x), 5))
    v = np.arange(8192, dtype="<i2") * 11
    write_v3(root, "fletcher32_bad", v, (2048,), [LE, {"name": "numcodecs.fletcher32"}],
             lambda x: with_fletcher32(le(x)), bad={(3,)})
    BAD[("v3.zarr", "fletcher32_bad")] = (4096, {3}, 4)
    # zarrs bitround: stored values are the rounded ones
    for name, arr, keep in [
            ("bitround_u16", (np.arange(2000) * 37 % 65536).astype("<u2").reshape(40, 50), 5),
            ("bitround_i32", rng.integers(-10 ** 9, 10 ** 9, (20, 30)).astype("<i4"), 7),
            ("bitround_f4", rng.normal(0, 100, (25, 16)).astype("<f4"), 3),
            ("bitround_f8", rng.normal(0, 1e10, (12, 12)).astype("<f8"), 20)]:
        r = zarrs_round(arr, keep)
        assert not np.array_equal(r, arr)
        write_v3(root, name, r, (16, 16),
                 [{"name": "bitround", "configuration": {"keepbits": keep}}, LE], le)
    for name, dt, raw in [("zarrs_bitround_uint8", "uint8", ZARRS_U8),
                          ("zarrs_bitround_float32", "float32", ZARRS_F32)]:
        n = len(raw) // np.dtype(c3.V3_TYPESTR[dt]).itemsize
        c3.write_files(os.path.join(root, name), {
            "zarr.json": c3.v3_array_doc([n], [n], dt, [
                {"name": "bitround", "configuration": {"keepbits": 3}},
                {"name": "bytes", "configuration": {"endian": "little"}}], fill_value=0),
            "c/0": raw})
        WANT[("v3.zarr", name)] = raw
    # transpose -> bytes -> zstd -> gzip
    t = rng.integers(0, 1000, (24, 35)).astype("<i8")
    write_v3(root, "transpose_zstd_gzip", t, (10, 16),
             [{"name": "transpose", "configuration": {"order": [1, 0]}}, LE,
              {"name": "zstd", "configuration": {"level": 3}},
              {"name": "gzip", "configuration": {"level": 5}}],
             lambda x: gzip.compress(bytes(numcodecs.Zstd(level=3).encode(le(x.T))), 5, mtime=0))
    # sharding_indexed -> gzip
    s = np.zeros((20, 30), dtype="<u4")
    s[5:17, 3:28] = rng.integers(1, 10 ** 6, (12, 25))
    sh = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 5], "codecs": [LE, {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": [LE, {"name": "crc32c"}], "index_location": "end"}}
    write_v3(root, "sharding_gzip", s, (8, 10), [sh, {"name": "gzip", "configuration": {"level": 1}}],
             lambda x: gzip.compress(shard_of(x, (4, 5), 0), 1, mtime=0))


def build_d2022(root):
    """test_draft2022.py's layout: zarr.json entry point, meta/<path>.array.json, data/<path>/c…"""
    c3.write_files(root, {
        "zarr.json": {"zarr_format": "https://purl.org/zarr/spec/core/3.0",
                      "metadata_encoding": {"type": "json", "metadata_key_suffix": ".json"},
                      "extensions": []},
        "meta/group.json": {"attributes": {}}})
    rng = np.random.default_rng(3)
    for name, arr, chunks in [("endian_gzip_blosc_f8", rng.normal(0, 1, (30, 22)), (8, 8)),
                              ("endian_gzip_blosc_i2", rng.integers(-3000, 3000, (41,)).astype("<i2"), (16,))]:
        dt = {"<f8": "float64", "<i2": "int16"}[arr.dtype.str]
        blosc = {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
        codecs = [{"codec": "https://purl.org/zarr/spec/codec/endian/1.0", "configuration": {"endian": "big"}},
                  {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0", "configuration": {"level": 1}},
                  {"codec": "https://purl.org/zarr/spec/codec/blosc/1.0", "configuration": blosc}]
        files = {"meta/%s.array.json" % name: {
            "shape": list(arr.shape), "data_type": dt,
            "chunk_grid": {"type": "regular", "chunk_shape": list(chunks), "separator": "/"},
            "chunk_memory_layout": "C", "fill_value": 0, "extensions": [], "attributes": {},
            "codecs": codecs}}
        bl = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1, blocksize=0)
        for idx in np.ndindex(*grid_of(arr.shape, chunks)):
            x = chunk_of(arr, idx, chunks, 0)
            be = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder(">")).tobytes()
            files["data/%s/c%s" % (name, "/".join(map(str, idx)))] = bytes(
                bl.encode(gzip.compress(be, 1, mtime=0)))
        c3.write_files(root, files)
        WANT[("d2022.zarr", name)] = le(arr)


# (array, BLOSC_SHUFFLE creation option, GDAL data type, "shuffle" as GDAL 3.6 then writes it:
# the option verbatim, except BYTE, its default, written as numcodecs' 1)
GDAL_ARRAYS = [("bit", "BIT", "Float32", "BIT"), ("none", "NONE", "UInt16", "NONE"),
               ("byte", "BYTE", "Int32", 1), ("lower_bit", "bit", "Int16", "bit"),
               ("digit_two", "2", "Float64", "2"), ("digit_zero", "0", "Byte", "0")]


def build_gdal(root, fmt, store):
    from osgeo import gdal
    gdal.UseExceptions()
    drv = gdal.GetDriverByName("Zarr")
    rng = np.random.default_rng(4)
    for i, (name, shuffle, typ, _written) in enumerate(GDAL_ARRAYS):
        opts = ["FORMAT=" + fmt, "COMPRESS=BLOSC", "BLOSC_SHUFFLE=" + shuffle,
                "BLOCKSIZE=16,24", "ARRAY_NAME=" + name] + (["APPEND_SUBDATASET=YES"] if i else [])
        ds = drv.Create(root, 50, 40, 1, getattr(gdal, "GDT_" + typ), options=opts)
        ds.GetRasterBand(1).WriteArray(rng.normal(500, 200, (40, 50)))
        ds = None
    ds = gdal.OpenEx(root, gdal.OF_MULTIDIM_RASTER)
    rg = ds.GetRootGroup()
    for name, _shuffle, _typ, _written in GDAL_ARRAYS:
        a = rg.OpenMDArray(name).ReadAsArray()
        WANT[(store, name)] = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
    ds = None
    # the metadata really says "shuffle": "<string>" (else this test proves nothing)
    for name, _shuffle, _typ, written in GDAL_ARRAYS:
        p = (os.path.join(root, name, ".zarray") if fmt == "ZARR_V2"
             else os.path.join(root, "meta", "root", name + ".array.json"))
        with open(p) as f:
            doc = json.load(f)
        conf = doc["compressor"] if fmt == "ZARR_V2" else doc["compressor"]["configuration"]
        assert conf["shuffle"] == written, (p, conf)


def setUpModule():
    global WORK, SRV, NGINX
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-variants-")
    SRV = os.path.join(WORK, "srv")
    build_v2(os.path.join(SRV, "v2.zarr"))
    build_v3(os.path.join(SRV, "v3.zarr"))
    build_d2022(os.path.join(SRV, "d2022.zarr"))
    build_gdal(os.path.join(SRV, "gdal_v2.zarr"), "ZARR_V2", "gdal_v2.zarr")
    build_gdal(os.path.join(SRV, "gdal_v3.zarr"), "ZARR_V3", "gdal_v3.zarr")
    NGINX = rs.Nginx(SRV, autoindex=True).start()
    log("stores in %s, nginx at %s" % (SRV, NGINX.url()))


def tearDownModule():
    if NGINX:
        NGINX.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


# ---------------------------------------------------------------------------------------------


class Variants(zfmount.MountsTestCase):
    """Every store mounted locally and over HTTP; the mounts are shared by the tests."""

    @classmethod
    def mount_all(cls):
        cls.where = {}
        for name in STORES:
            lm = cls.add_mount(os.path.join(SRV, name), label="local-" + name)
            rm = cls.add_mount(NGINX.url(name), options=REMOTE_OPTS, label="http-" + name)
            cls.where[name] = (("local", lm), ("http", rm))

    def check_store(self, store):
        names = sorted(n for s, n in WANT if s == store)
        for how, m in self.where[store]:
            for name in names:
                with self.subTest(store=store, via=how, array=name):
                    p = m.path(name)
                    want = WANT[(store, name)]
                    self.assertEqual(os.stat(p).st_size, len(want))
                    zfmount.drop_page_cache(p)
                    if (store, name) not in BAD:
                        self.assertBytesEqual(zfmount.read_all(p), want, "%s %s" % (how, name))
                    else:
                        self.check_bad(p, want, *BAD[(store, name)])
            nbad = sum(1 for s, _n in BAD if s == store)
            log("  %s via %s: %d arrays byte-exact, %d with a bad checksum EIO exactly there"
                % (store, how, len(names) - nbad, nbad))

    def check_bad(self, path, want, chunk_bytes, bad, n):
        """A 1-d array of n chunks, chunk_bytes each in the flat file: the whole file and each bad
        chunk read as EIO, the other chunks read right (DESIGN.md: a checksum failure is EIO,
        never the fill value)."""
        self.assertErrno(errno.EIO, zfmount.read_all, path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)   # no readahead into the bad chunk
            for k in range(n):
                zfmount.drop_page_cache(fd)
                off = k * chunk_bytes
                if k in bad:
                    self.assertErrno(errno.EIO, os.pread, fd, chunk_bytes, off)
                else:
                    self.assertEqual(zfmount.pread_full(fd, chunk_bytes, off),
                                     want[off:off + chunk_bytes], "chunk %d" % k)
        finally:
            os.close(fd)

    def test_01_v2_checksums(self):
        self.check_store("v2.zarr")

    def test_02_v3_checksums_bitround_unknown_sizes(self):
        self.check_store("v3.zarr")

    def test_03_draft2022_endian_gzip_blosc(self):
        self.check_store("d2022.zarr")

    def test_04_gdal_blosc_shuffle_strings(self):
        self.check_store("gdal_v2.zarr")
        self.check_store("gdal_v3.zarr")

    def test_05_daemons_alive(self):
        for m in self.mounts_started:
            self.assertTrue(m.alive(), "%s died" % m.label)


class Writes(zfmount.TestCase):
    """-o rw on a local copy: zarrfs encodes the new codecs and chains; the stored chunks are
    decoded here without zarrfs."""

    def test_01_write_and_decode_in_python(self):
        root = os.path.join(WORK, "rw")
        shutil.copytree(os.path.join(SRV, "v3.zarr"), os.path.join(root, "v3.zarr"))
        shutil.copytree(os.path.join(SRV, "v2.zarr"), os.path.join(root, "v2.zarr"))
        rng = np.random.default_rng(9)
        new = {
            ("v3.zarr", "transpose_zstd_gzip"): rng.integers(0, 2 ** 40, (24, 35)).astype("<i8"),
            ("v3.zarr", "sharding_gzip"): rng.integers(0, 2 ** 32, (20, 30)).astype("<u4"),
            ("v3.zarr", "fletcher32"): rng.integers(-2 ** 31, 2 ** 31, (33, 27)).astype("<i4"),
            ("v3.zarr", "jenkins_lookup3"): rng.normal(0, 1, (30, 20)).astype("<f4"),
            ("v3.zarr", "bitround_i32"): rng.integers(-10 ** 9, 10 ** 9, (20, 30)).astype("<i4"),
            ("v3.zarr", "bitround_f4"): rng.normal(0, 100, (25, 16)).astype("<f4"),
            ("v2.zarr", "fletcher32_filter"): rng.integers(-9, 9, (37, 29)).astype("<i4"),
            ("v2.zarr", "jenkins_filter"): rng.integers(0, 60000, (40, 30)).astype("<u2"),
        }
        for store in ("v3.zarr", "v2.zarr"):
            with zfmount.Mount(os.path.join(root, store), options=["rw"], label="rw-" + store) as m:
                for (s, name), a in new.items():
                    if s != store:
                        continue
                    fd = os.open(m.path(name), os.O_WRONLY)
                    try:
                        self.assertEqual(os.pwrite(fd, a.tobytes(), 0), a.nbytes)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
        # decode every stored chunk here
        for (store, name), a in new.items():
            d = os.path.join(root, store, name)
            if store == "v2.zarr":
                with open(os.path.join(d, ".zarray")) as f:
                    chunks = json.load(f)["chunks"]
            else:
                with open(os.path.join(d, "zarr.json")) as f:
                    chunks = json.load(f)["chunk_grid"]["configuration"]["chunk_shape"]
            want = zarrs_round(a, {"bitround_i32": 7, "bitround_f4": 3}[name]) \
                if name.startswith("bitround") else a
            for idx in np.ndindex(*grid_of(a.shape, chunks)):
                key = ".".join(map(str, idx)) if store == "v2.zarr" else c3.default_key(idx)
                with open(os.path.join(d, key), "rb") as f:
                    enc = f.read()
                x = decode_chunk(name, enc, chunks, a.dtype)
                self.assertTrue(np.array_equal(x, chunk_of(want, idx, chunks, 0)),
                                "%s %s chunk %s" % (store, name, idx))
        log("  %d arrays written through zarrfs decode right in Python" % len(new))


def decode_chunk(name, enc, chunks, dtype):
    """The stored chunk of one of the arrays of Writes, decoded without zarrfs."""
    n = int(np.prod(chunks))

    def unsum(b, fn, *args):
        payload, tail = b[:-4], b[-4:]
        assert struct.unpack("<I", tail)[0] == fn(payload, *args), "checksum"
        return payload

    if name == "transpose_zstd_gzip":
        raw = bytes(numcodecs.Zstd().decode(gzip.decompress(enc)))
        return np.frombuffer(raw, dtype=dtype).reshape(chunks[::-1]).T
    if name == "sharding_gzip":
        shard = gzip.decompress(enc)
        ix = shard[-(16 * 4 + 4):]          # 2 x 2 inner chunks
        assert c3.crc32c(ix[:-4]) == struct.unpack("<I", ix[-4:])[0]
        pairs = np.frombuffer(ix[:-4], dtype="<u8").reshape(2, 2, 2)
        out = np.zeros(chunks, dtype=dtype)
        for i, j in np.ndindex(2, 2):
            off, nb = (int(v) for v in pairs[i, j])
            if off == EMPTY:
                continue
            sub = np.frombuffer(bytes(numcodecs.Zstd().decode(shard[off:off + nb])), dtype=dtype)
            out[i * 4:(i + 1) * 4, j * 5:(j + 1) * 5] = sub.reshape(4, 5)
        return out
    if name == "fletcher32":
        return np.frombuffer(unsum(enc, fletcher32_ref), dtype=dtype).reshape(chunks)
    if name == "jenkins_lookup3":
        return np.frombuffer(unsum(enc, lookup3_ref, 5), dtype=dtype).reshape(chunks)
    if name.startswith("bitround"):
        return np.frombuffer(enc, dtype=dtype).reshape(chunks)
    if name == "fletcher32_filter":
        return np.frombuffer(unsum(zlib.decompress(enc), fletcher32_ref), dtype=dtype).reshape(chunks)
    if name == "jenkins_filter":
        raw = bytes(numcodecs.Blosc().decode(enc))
        return np.frombuffer(unsum(raw, lookup3_ref, 7), dtype=dtype).reshape(chunks)
    raise ValueError(name)


if __name__ == "__main__":
    zfmount.main(file_timeout=300)
