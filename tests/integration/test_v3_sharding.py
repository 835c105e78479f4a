#!/usr/bin/python3
"""The sharding_indexed codec through zarrfs, with shards built BY HAND here (zarrita cannot
write sharding or crc32c) from the Zarr v3 spec, codecs/sharding-indexed, with numpy,
struct, zlib/gzip, numcodecs (blosc, zstd) and the table-driven CRC-32C of gen_v3_common.py.

* Sharded: index at the end and at the start; index codecs [bytes little, crc32c] and
  [bytes big]; inner codecs bytes / gzip / transpose+bytes+gzip / blosc / zstd / crc32c; nested
  sharding (inner chunks that are shards themselves); a transpose before the sharding codec;
  edge shards of a ragged array; empty inner chunks (fill value, non-zero); missing whole
  shards; inner chunks stored in shuffled order with unused bytes between them; whole files and
  random preads compared with the numpy array.
* BadShards: corrupt shard indexes and inner chunks — offset past the end, offset+nbytes
  overflowing 2^64, overlapping pairs, half an empty-sentinel, wrong index crc32c, wrong inner
  crc32c, wrong decoded size, undecodable gzip, truncated shards: every read touching them
  fails with EIO (never wrong bytes), and the daemon keeps serving the good sibling.
* Unsupported: unknown codec (outer, inner, index), data type, chunk grid, chunk key encoding,
  storage transformer, must_understand:true extension, unknown plain field (core.rst
  "must_understand": an implementation MUST fail to open) — reads fail EIO, named in
  the log, siblings read fine.

Expected bytes are the numpy arrays the shards were built from, never zarrfs's output.
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
import gen_v3_zarrita as gz  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402

WORK = None
EMPTY = 2 ** 64 - 1        # sharding-indexed.rst, "Binary shard format": empty inner chunk sentinel


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-shard-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# an encoder for v3 codec chains (core.rst "Codecs": array -> array codecs, exactly one
# array -> bytes codec, then bytes -> bytes codecs, applied in list order when encoding)

def _bytes_of(x, endian):
    """codecs/bytes.rst: each element in the given endianness, lexicographical (C) order."""
    order = "<" if endian == "little" else ">"
    dt = x.dtype.newbyteorder(order) if x.dtype.itemsize > 1 else x.dtype
    return np.ascontiguousarray(x, dtype=dt).tobytes()


def encode_bytes_codec(data, c):
    name, conf = c["name"], c.get("configuration", {})
    if name == "gzip":          # codecs/gzip.rst: RFC 1952 gzip stream
        return gzip.compress(data, compresslevel=conf.get("level", 5), mtime=0)
    if name == "zstd":          # codecs/zstd.md: a zstd frame
        return numcodecs.Zstd(level=conf.get("level", 0)).encode(data)
    if name == "blosc":         # codecs/blosc.rst: a blosc (v1) frame
        sh = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[conf["shuffle"]]
        return bytes(numcodecs.Blosc(cname=conf["cname"], clevel=conf["clevel"], shuffle=sh,
                                     blocksize=conf.get("blocksize", 0)).encode(data))
    if name == "crc32c":        # codecs/crc32c.rst: input + little-endian CRC-32C of the input
        return c3.with_crc32c(data)
    raise ValueError(name)


def encode_chain(x, codecs, fill, layout=None):
    """Encode chunk array x (the chunk's full shape, C-contiguous, logical data type)."""
    i = 0
    while codecs[i]["name"] == "transpose":
        # codecs/transpose.rst: axis j of the encoded array is axis order[j] of the decoded one
        x = np.transpose(x, codecs[i]["configuration"]["order"])
        i += 1
    c = codecs[i]
    i += 1
    if c["name"] == "bytes":
        data = _bytes_of(x, c.get("configuration", {}).get("endian", "little"))
    elif c["name"] == "sharding_indexed":
        data = encode_shard(np.ascontiguousarray(x), c["configuration"], fill, layout or {})
    else:
        raise ValueError(c["name"])
    for c in codecs[i:]:
        data = encode_bytes_codec(data, c)
    return data


def index_size(conf, n):
    """sharding-indexed.rst "Binary shard format": 16 bytes per inner chunk, then what the index
    codecs add (4 for crc32c)."""
    return 16 * n + 4 * sum(1 for c in conf["index_codecs"] if c["name"] == "crc32c")


def encode_index(conf, entries, cps):
    """The index: uint64 array of shape chunks-per-shard + [2], (offset, nbytes) per inner chunk
    in C order, encoded with the index codecs."""
    idx = np.array(entries, dtype=np.uint64).reshape(tuple(cps) + (2,))
    return encode_chain(idx, conf["index_codecs"], 0)


def assemble_shard(conf, cps, payload, entries, prefix_gap=b""):
    """Shard bytes from the inner-chunk payload and the (offset, nbytes) entries, whose offsets
    are relative to the payload; index at the start or end per index_location (default end)."""
    n = int(np.prod(cps))
    loc = conf.get("index_location", "end")
    base = len(prefix_gap) + (index_size(conf, n) if loc == "start" else 0)
    abs_entries = [(o, b) if (o, b) == (EMPTY, EMPTY) else (o + base, b) for o, b in entries]
    index = encode_index(conf, abs_entries, cps)
    assert len(index) == index_size(conf, n)
    if loc == "start":
        return index + prefix_gap + payload
    return prefix_gap + payload + index


def encode_shard(x, conf, fill, layout):
    """x: the whole shard (shape = the outer chunk shape). layout: "shuffle" (a random.Random:
    store inner chunks in a shuffled order), "gap" (junk bytes between chunks and before the
    first), "keep_fill" (store inner chunks holding only the fill value; default: empty)."""
    inner = conf["chunk_shape"]
    cps = [s // c for s, c in zip(x.shape, inner)]
    assert all(s % c == 0 for s, c in zip(x.shape, inner))
    encoded = []
    for idx in np.ndindex(*cps):
        sel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, inner))
        sub = np.ascontiguousarray(x[sel])
        if not layout.get("keep_fill") and np.array_equal(sub, np.full_like(sub, fill)):
            encoded.append(None)
        else:
            encoded.append(encode_chain(sub, conf["codecs"], fill))
    order = [k for k, e in enumerate(encoded) if e is not None]
    if layout.get("shuffle"):
        layout["shuffle"].shuffle(order)
    gap = layout.get("gap", b"")
    payload = b""
    entries = [(EMPTY, EMPTY)] * len(encoded)
    for k in order:
        payload += gap
        entries[k] = (len(payload), len(encoded[k]))
        payload += encoded[k]
    return assemble_shard(conf, cps, payload, entries, prefix_gap=gap)


def shard_conf(chunk_shape, codecs, index_codecs=None, location=None):
    conf = {"chunk_shape": list(chunk_shape), "codecs": codecs,
            "index_codecs": index_codecs or [LE, {"name": "crc32c"}]}
    if location is not None:
        conf["index_location"] = location
    return {"name": "sharding_indexed", "configuration": conf}


LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
GZ = {"name": "gzip", "configuration": {"level": 5}}


def write_array(root, name, data_type, data, shard_shape, codecs, fill=0, missing_shards=(),
                fill_regions=(), layout=None, dimension_names=None):
    """Write a v3 array of sharded chunks; returns the expected array (numpy, logical dtype).

    fill_regions: tuples of slices set to the fill value first (inner chunks entirely inside are
    then stored empty); missing_shards: shard grid indices whose file is not written."""
    want = np.array(data, dtype=c3.V3_TYPESTR[data_type])
    for reg in fill_regions:
        want[reg] = fill
    shape = want.shape
    grid = [-(-s // c) for s, c in zip(shape, shard_shape)]
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    doc = c3.v3_array_doc(shape, shard_shape, data_type, codecs, fill_value=fill,
                          dimension_names=dimension_names)
    c3.write_files(d, {"zarr.json": doc})
    for sidx in np.ndindex(*grid):
        sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(sidx, shard_shape, shape))
        if sidx in missing_shards:
            want[sel] = fill
            continue
        x = np.full(shard_shape, fill, dtype=want.dtype)
        x[tuple(slice(0, s.stop - s.start) for s in sel)] = want[sel]
        data = encode_chain(x, codecs, fill, dict(layout or {}))
        c3.write_files(d, {c3.default_key(sidx): data})
    return want


# ---------------------------------------------------------------------------------------------

ZARRITA_CANNOT = {"index_start_3d", "shuffled_gaps_start", "start_be_gzip", "nested", "outer_transpose"}


class Sharded(zfmount.MountedTestCase):

    WANT = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "sharded.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc({"built": "by hand, sharding-indexed.rst"})})
        rng = np.random.default_rng(11)
        W = cls.WANT

        a = np.arange(20 * 30, dtype="<i4").reshape(20, 30) * 7 - 1000
        W["end_le_crc"] = write_array(root, "end_le_crc", "int32", a, (10, 15),
                                      [shard_conf((5, 5), [LE])])
        b = rng.standard_normal((12, 16))
        W["start_be_gzip"] = write_array(root, "start_be_gzip", "float64", b, (6, 8),
                                         [shard_conf((3, 4), [BE, GZ], [BE], "start")])
        cc = (np.arange(17 * 23) * 13 % 65536).astype("<u2").reshape(17, 23)
        W["ragged_transpose_inner"] = write_array(
            root, "ragged_transpose_inner", "uint16", cc, (8, 12),
            [shard_conf((4, 4), [{"name": "transpose", "configuration": {"order": [1, 0]}}, LE, GZ])])
        d = (np.arange(24 * 24) % 251).astype("<i2").reshape(24, 24)
        W["empty_inner_nonzero_fill"] = write_array(
            root, "empty_inner_nonzero_fill", "int16", d, (12, 12), [shard_conf((4, 4), [LE, GZ])],
            fill=-5, fill_regions=[np.s_[0:4, 0:8], np.s_[12:24, 12:16], np.s_[20:24, 0:12]],
            missing_shards={(0, 1)})
        e = rng.integers(0, 2 ** 31, size=(16, 16)).astype("<u4")
        W["shuffled_gaps"] = write_array(
            root, "shuffled_gaps", "uint32", e, (16, 16), [shard_conf((4, 4), [LE])],
            layout={"shuffle": random.Random(5), "gap": b"\xaa" * 13})
        W["shuffled_gaps_start"] = write_array(
            root, "shuffled_gaps_start", "uint32", e[::-1].copy(), (8, 16),
            [shard_conf((4, 4), [BE, {"name": "crc32c"}], [LE, {"name": "crc32c"}], "start")],
            layout={"shuffle": random.Random(6), "gap": b"\x55" * 7})
        f = (np.arange(32 * 32) * 3).astype("<i8").reshape(32, 32)
        nested_inner = shard_conf((4, 4), [LE, GZ], [BE], "start")
        W["nested"] = write_array(root, "nested", "int64", f, (16, 16),
                                  [shard_conf((8, 8), [nested_inner])],
                                  fill=9, fill_regions=[np.s_[0:4, 4:8], np.s_[16:24, 0:8]])
        g = rng.integers(0, 256, size=(6, 10, 12)).astype("|u1")
        W["index_start_3d"] = write_array(root, "index_start_3d", "uint8", g, (3, 5, 6),
                                          [shard_conf((3, 5, 2), [{"name": "bytes"}, GZ],
                                                      location="start")],
                                          fill=200, missing_shards={(1, 1, 1)})
        h = (rng.standard_normal((40, 40)) * 100).astype("<f4")
        W["inner_blosc"] = write_array(root, "inner_blosc", "float32", h, (20, 20), [shard_conf(
            (10, 10), [LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                                 "shuffle": "shuffle", "typesize": 4,
                                                                 "blocksize": 0}}])])
        W["inner_zstd_crc"] = write_array(root, "inner_zstd_crc", "float32", h.T.copy(), (20, 40),
                                          [shard_conf((10, 10), [BE, {"name": "zstd", "configuration":
                                                                      {"level": 3, "checksum": False}},
                                                                 {"name": "crc32c"}])])
        k = np.arange(10 * 6, dtype="<i2").reshape(10, 6)
        W["single_inner"] = write_array(root, "single_inner", "int16", k, (5, 6),
                                        [shard_conf((5, 6), [LE])])
        W["all_empty_shard"] = write_array(root, "all_empty_shard", "int16", k, (5, 6),
                                           [shard_conf((5, 3), [LE])], fill=3,
                                           fill_regions=[np.s_[5:10, :]])
        # a transpose before the sharding codec: the shard codec sees the transposed (6, 4) shard
        m = np.arange(8 * 12, dtype="<u8").reshape(8, 12) * 1000003
        W["outer_transpose"] = write_array(
            root, "outer_transpose", "uint64", m, (4, 6),
            [{"name": "transpose", "configuration": {"order": [1, 0]}}, shard_conf((3, 2), [LE, GZ])])
        n = np.array([True, False, True, True, False] * 8).reshape(8, 5)
        W["bool_sharded"] = write_array(root, "bool_sharded", "bool", n, (4, 5),
                                        [shard_conf((2, 5), [{"name": "bytes"}])], fill=False,
                                        missing_shards={(1, 0)})
        z = np.array(5, dtype="<i4")
        W["zero_d"] = write_array(root, "zero_d", "int32", z, (), [shard_conf((), [LE])])
        # the stored representation stays readable even when every inner chunk holds the fill
        W["fill_chunks_stored"] = write_array(root, "fill_chunks_stored", "float64",
                                              np.zeros((4, 4)), (4, 4), [shard_conf((2, 2), [LE])],
                                              fill=0.0, layout={"keep_fill": True})
        cls.root = root
        return root

    def test_00_layout_is_what_the_spec_describes(self):
        """Fixture sanity (no zarrfs): shard files, sentinels, index placement, crc32c."""
        p = os.path.join(self.root, "end_le_crc", "c", "0", "0")
        with open(p, "rb") as f:
            raw = f.read()
        idx, crc = raw[-(16 * 6 + 4):-4], struct.unpack("<I", raw[-4:])[0]
        self.assertEqual(crc, c3.crc32c(idx))
        pairs = np.frombuffer(idx, dtype="<u8").reshape(2, 3, 2)
        self.assertEqual(int(pairs[0, 0, 0]), 0)
        self.assertEqual(int(pairs[0, 0, 1]), 5 * 5 * 4)
        p = os.path.join(self.root, "empty_inner_nonzero_fill", "c", "0", "0")
        with open(p, "rb") as f:
            raw = f.read()
        pairs = np.frombuffer(raw[-(16 * 9 + 4):-4], dtype="<u8").reshape(3, 3, 2)
        self.assertEqual([int(x) for x in pairs[0, 0]], [EMPTY, EMPTY])
        self.assertEqual([int(x) for x in pairs[0, 1]], [EMPTY, EMPTY])
        self.assertFalse(os.path.exists(os.path.join(self.root, "empty_inner_nonzero_fill", "c", "0", "1")))
        p = os.path.join(self.root, "start_be_gzip", "c", "0", "0")
        with open(p, "rb") as f:
            raw = f.read()
        pairs = np.frombuffer(raw[:16 * 4], dtype=">u8").reshape(2, 2, 2)
        self.assertEqual(int(pairs[0, 0, 0]), 64)
        self.assertEqual(raw[64:66], b"\x1f\x8b")
        p = os.path.join(self.root, "shuffled_gaps", "c", "0", "0")
        with open(p, "rb") as f:
            raw = f.read()
        offs = [int(o) for o in np.frombuffer(raw[-(16 * 16 + 4):-4], dtype="<u8")[0::2]]
        self.assertNotEqual(offs, sorted(offs), "inner chunks are not shuffled")
        log("  shard layouts as described (index placement, sentinels, crc32c, shuffled order)")

    def test_00b_zarrita_reads_the_hand_built_shards(self):
        """Cross-check of the hand-built shards with zarrita, for the arrays zarrita 0.7.5 can
        read: it always takes the index from the end of the shard (ignores index_location),
        cannot nest sharding_indexed, and mishandles a transpose before the sharding codec."""
        self.assertTrue(gz.node_modules_ok(), "zarrita missing: npm ci --prefix tests/integration/js")
        names = [n for n in sorted(self.WANT) if n not in ZARRITA_CANNOT]
        res = gz.zarrita_read(self.root, names, tempfile.mkdtemp(prefix="zr-", dir=WORK))
        for name in names:
            with self.subTest(array=name):
                want = self.WANT[name]
                self.assertTrue(res[name]["ok"], res[name].get("error"))
                self.assertBytesEqual(res[name]["data"], want.astype(want.dtype.newbyteorder("<")).tobytes(),
                                      "zarrita vs numpy: " + name)
        log("  zarrita reads %d of the hand-built sharded arrays exactly as numpy expects" % len(names))

    def test_01_byte_exact(self):
        for name, want in sorted(self.WANT.items()):
            with self.subTest(array=name):
                exp = np.ascontiguousarray(want.astype(want.dtype.newbyteorder("<"))).tobytes()
                p = self.m.path(name)
                self.assertEqual(os.stat(p).st_size, len(exp), name)
                self.assertBytesEqual(zfmount.read_all(p), exp, name)
        log("  %d sharded arrays byte-identical to the numpy arrays they were built from"
            % len(self.WANT))

    def test_02_random_preads(self):
        rng = random.Random(77)
        n = 0
        for name, want in sorted(self.WANT.items()):
            exp = np.ascontiguousarray(want.astype(want.dtype.newbyteorder("<"))).tobytes()
            with self.subTest(array=name):
                fd = os.open(self.m.path(name), os.O_RDONLY)
                try:
                    zfmount.drop_page_cache(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    for _ in range(30):
                        off = rng.randrange(0, len(exp) + 1)
                        ln = rng.choice([1, 3, 8, 17, 100, 1000, rng.randrange(0, len(exp) + 5)])
                        self.assertBytesEqual(zfmount.pread_full(fd, ln, off), exp[off:off + ln],
                                              "%s pread(%d, %d)" % (name, ln, off))
                        n += 1
                finally:
                    os.close(fd)
        log("  %d random preads matched" % n)

    def test_03_xattrs(self):
        for name, want in sorted(self.WANT.items()):
            with self.subTest(array=name):
                with open(os.path.join(self.root, name, "zarr.json"), "rb") as f:
                    raw = f.read()
                doc = json.loads(raw)
                c3.check_v3_node_xattrs(self, self.m.path(name), doc, raw,
                                        typestr=c3.V3_TYPESTR[doc["data_type"]], what=name)
        self.assertEqual(sorted(os.listdir(self.m.mnt)), sorted(self.WANT))
        log("  xattrs and listing of %d sharded arrays" % len(self.WANT))


# ---------------------------------------------------------------------------------------------

N_INNER = 4          # 1-d int32 arrays of 16 elements: one shard of 4 inner chunks of 4
GOOD = np.arange(16, dtype="<i4") * 11 - 50


def raw_inner(k):
    return GOOD[4 * k:4 * k + 4].tobytes()


class BadShards(zfmount.MountedTestCase):
    """Each corrupt array: reads touching a bad inner chunk or index fail with EIO; a read of
    any inner chunk either fails with EIO or returns its right bytes; the sibling `good` reads."""

    # name -> (index of the inner chunks that must fail, or "all")
    BAD = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "bad_shards.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        std = shard_conf((4,), [LE])
        conf = std["configuration"]

        def put(name, shard_bytes, codecs=None, bad="all"):
            doc = c3.v3_array_doc((16,), (16,), "int32", codecs or [std])
            c3.write_files(root, {name + "/zarr.json": doc, name + "/c/0": shard_bytes})
            cls.BAD[name] = bad

        payload = b"".join(raw_inner(k) for k in range(N_INNER))
        ok_entries = [(16 * k, 16) for k in range(N_INNER)]
        write_array(root, "good", "int32", GOOD, (16,), [std])
        # sanity of the construction itself: the good entries assemble to the good shard
        with open(os.path.join(root, "good", "c", "0"), "rb") as f:
            assert f.read() == assemble_shard(conf, [N_INNER], payload, ok_entries)

        def entries_with(k, pair):
            e = list(ok_entries)
            e[k] = pair
            return e

        # sharding-indexed.rst "Binary shard format": offset/nbytes must lie inside the shard
        put("offset_past_end", assemble_shard(conf, [4], payload, entries_with(2, (len(payload) + 100, 16))),
            bad={2})
        put("nbytes_past_end", assemble_shard(conf, [4], payload, entries_with(3, (48, 2 ** 40))), bad={3})
        # offset + nbytes overflows 64 bits (absolute offsets: assemble adds nothing at "end")
        put("offset_overflow", assemble_shard(conf, [4], payload, entries_with(1, (2 ** 64 - 8, 16))),
            bad={1})
        put("nbytes_overflow", assemble_shard(conf, [4], payload, entries_with(1, (16, 2 ** 64 - 2))),
            bad={1})
        # inner chunks "written successively ... unused space between them is allowed": pairs
        # whose byte ranges overlap are not a valid shard
        put("overlapping_pairs", assemble_shard(conf, [4], payload, entries_with(1, (8, 16))), bad={1})
        # "Empty inner chunks are denoted by setting both offset and nbytes to 2^64 - 1"
        put("half_sentinel", assemble_shard(conf, [4], payload, entries_with(2, (EMPTY, 16))), bad={2})
        put("half_sentinel_nbytes", assemble_shard(conf, [4], payload, entries_with(2, (32, EMPTY))), bad={2})
        # codecs/crc32c.rst: index checksum wrong
        good_shard = assemble_shard(conf, [4], payload, ok_entries)
        put("index_crc_wrong", good_shard[:-4] + struct.pack("<I", c3.crc32c(good_shard[-68:-4]) ^ 1))
        put("index_flipped_bit", good_shard[:-30] + bytes([good_shard[-30] ^ 0x10]) + good_shard[-29:])
        # inner chunks with crc32c, one checksum wrong
        crc_conf = shard_conf((4,), [LE, {"name": "crc32c"}])
        inner = [c3.with_crc32c(raw_inner(k)) for k in range(4)]
        inner[2] = inner[2][:-4] + struct.pack("<I", c3.crc32c(raw_inner(2)) ^ 0x80000000)
        pl = b"".join(inner)
        put("inner_crc_wrong", assemble_shard(crc_conf["configuration"], [4], pl,
                                              [(20 * k, 20) for k in range(4)]), [crc_conf], bad={2})
        inner2 = [c3.with_crc32c(raw_inner(k)) for k in range(4)]
        inner2[1] = bytes([inner2[1][0] ^ 1]) + inner2[1][1:]          # data changed, crc kept
        put("inner_data_corrupt_crc", assemble_shard(crc_conf["configuration"], [4], b"".join(inner2),
                                                     [(20 * k, 20) for k in range(4)]), [crc_conf], bad={1})
        # decoded size wrong (12 bytes for 4 int32)
        put("inner_wrong_size", assemble_shard(conf, [4], payload, entries_with(0, (0, 12))), bad={0})
        # gzip inner codec, chunk 3 is not a gzip stream
        gz_conf = shard_conf((4,), [LE, GZ])
        gz_inner = [gzip.compress(raw_inner(k), mtime=0) for k in range(4)]
        gz_inner[3] = b"\x1f\x8b\x08\x00" + b"\x00" * 20
        pl, ent = b"", []
        for blob in gz_inner:
            ent.append((len(pl), len(blob)))
            pl += blob
        put("inner_gzip_garbage", assemble_shard(gz_conf["configuration"], [4], pl, ent), [gz_conf], bad={3})
        # truncated shards: index at the end (cut mid-index: crc fails / index garbage), index at
        # the start without crc (the last inner chunk's range passes the new end), shorter than
        # the index itself, empty file
        put("truncated_end_index", good_shard[:-10])
        start_conf = shard_conf((4,), [LE], [LE], "start")
        start_shard = assemble_shard(start_conf["configuration"], [4], payload, ok_entries)
        put("truncated_start_index", start_shard[:-6], [start_conf], bad={3})
        put("shorter_than_index", good_shard[:20])
        put("empty_shard_file", b"")
        cls.root = root
        return root

    def check_bad(self, name, bad):
        p = self.m.path(name)
        self.assertEqual(os.stat(p).st_size, 64, name)
        fd = os.open(p, os.O_RDONLY)
        try:
            zfmount.drop_page_cache(fd)
            self.assertErrno(errno.EIO, os.pread, fd, 64, 0)
            outcome = []
            for k in range(N_INNER):
                zfmount.drop_page_cache(fd)
                try:
                    got = os.pread(fd, 16, 16 * k)
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO, "%s inner chunk %d: %s" % (name, k, e))
                    outcome.append("EIO")
                    continue
                self.assertNotIn(k, bad if bad != "all" else range(N_INNER),
                                 "%s: inner chunk %d read %r instead of failing with EIO"
                                 % (name, k, got))
                self.assertEqual(got, raw_inner(k), "%s: inner chunk %d: wrong bytes" % (name, k))
                outcome.append("ok")
        finally:
            os.close(fd)
        return outcome

    def test_01_corrupt_shards_eio(self):
        for name, bad in sorted(self.BAD.items()):
            with self.subTest(array=name):
                outcome = self.check_bad(name, bad)
                log("  %-24s whole read EIO; inner chunks %s" % (name, " ".join(outcome)))
                self.assertBytesEqual(zfmount.read_all(self.m.path("good")), GOOD.tobytes(), "good")
        self.assertDaemonAlive()

    def test_02_again_after_failures(self):
        """Failures are not cached as data: a second read fails again, good reads stay right."""
        for name in sorted(self.BAD):
            with self.subTest(array=name):
                self.assertErrno(errno.EIO, zfmount.read_all, self.m.path(name))
        self.assertBytesEqual(zfmount.read_all(self.m.path("good")), GOOD.tobytes(), "good")
        self.assertDaemonAlive()
        log("  %d corrupt arrays fail again; good still reads" % len(self.BAD))


# ---------------------------------------------------------------------------------------------

class Unsupported(zfmount.MountedTestCase):
    """Unknown names (core.rst "Extensions": an implementation MUST fail to open arrays with
    metadata it does not recognise unless marked must_understand: false): the file keeps its size
    and its reads fail with EIO; an unknown data type (no item size) fails open with EOPNOTSUPP."""

    CASES = {}

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "unsupported.zarr")
        c3.write_files(root, {"zarr.json": c3.v3_group_doc()})
        write_array(root, "good", "int32", GOOD, (16,), [shard_conf((4,), [LE])])
        write_array(root, "good_plain", "int32", GOOD, (8,), [LE])

        def add(name, token, **kw):
            base = dict(shape=(16,), chunk_shape=(8,), data_type="int32", codecs=[LE], fill_value=0)
            base.update(kw)
            doc = c3.v3_array_doc(**{k: v for k, v in base.items() if k not in ("extra",)},
                                  **base.get("extra", {}))
            c3.write_files(root, {name + "/zarr.json": doc, name + "/c/0": bytes(32)})
            cls.CASES[name] = token

        add("unknown_codec", "zarrfs_no_such_codec",
            codecs=[LE, {"name": "zarrfs_no_such_codec", "configuration": {}}])
        add("unknown_inner_codec", "zarrfs_no_such_inner",
            codecs=[shard_conf((4,), [LE, {"name": "zarrfs_no_such_inner"}])])
        add("unknown_index_codec", "zarrfs_no_such_index",
            codecs=[shard_conf((4,), [LE], [LE, {"name": "zarrfs_no_such_index"}])])
        add("unknown_array_to_bytes", "zarrfs_no_such_serializer",
            codecs=[{"name": "zarrfs_no_such_serializer"}])
        add("unknown_data_type", "zarrfs_float7", data_type="zarrfs_float7")
        add("unknown_chunk_grid", "zarrfs_rectilinear",
            extra={"chunk_grid": {"name": "zarrfs_rectilinear", "configuration": {"chunk_shape": [8]}}})
        add("unknown_chunk_key_encoding", "zarrfs_keys",
            chunk_key_encoding={"name": "zarrfs_keys", "configuration": {"separator": "/"}})
        add("unknown_storage_transformer", "zarrfs_transformer",
            extra={"storage_transformers": [{"name": "zarrfs_transformer", "configuration": {}}]})
        add("must_understand_true", "zarrfs_required_ext",
            extra={"zarrfs_required_ext": {"name": "zarrfs_required_ext", "must_understand": True}})
        add("unknown_plain_field", "zarrfs_unknown_field", extra={"zarrfs_unknown_field": 1})
        return root

    def test_01_eopnotsupp(self):
        names = os.listdir(self.m.mnt)
        for name, token in sorted(self.CASES.items()):
            with self.subTest(array=name):
                self.assertIn(name, names)
                if name == "unknown_data_type":  # no item size: no file size, open fails
                    self.assertErrno(errno.EOPNOTSUPP, os.open, self.m.path(name), os.O_RDONLY)
                else:  # shape (16,) int32: the real size, every read EIO
                    self.assertUndecodable(self.m.path(name), 16 * 4, [token])
                self.assertIn(token, self.m.stderr_text(), "the log does not name %s" % token)
                self.assertBytesEqual(zfmount.read_all(self.m.path("good")), GOOD.tobytes(), "good")
        self.assertBytesEqual(zfmount.read_all(self.m.path("good_plain")), GOOD.tobytes(), "good_plain")
        self.assertDaemonAlive()
        log("  %d arrays with unknown names: listed with their size, EIO (data type: EOPNOTSUPP), "
            "named in the log; siblings read"
            % len(self.CASES))


if __name__ == "__main__":
    zfmount.main()
