"""Zarr v3 codec test vectors for the codec unit tests (tests/codec/test_v3.c).

    v3_expected.py ZARRITA_V3_DIR OUT_DIR

Run with Debian's /usr/bin/python3 (numcodecs 0.11, NumPy 1.24). Writes OUT_DIR/<case>/ with

  codecs.json   the "codecs" list of the case (v3, or the 2022 draft when meta says so)
  meta.json     {"shape": [...], "typestr": "<i4", "fill": "<hex bytes>", "dialect": "v3"}
  encoded.dat   one stored chunk
  expected.dat  the decoded chunk, C order, little-endian (the v3 flat encoding)

Encoded chunks come from numcodecs (gzip, zstd, blosc, delta, shuffle, zlib), Python's own
modules, and shard layouts written here by following the Zarr v3 spec, codecs/
sharding-indexed ("Binary shard format"); the expected values are the NumPy arrays the chunks
were made from. The zarrita fixture chunks (ZARRITA_V3_DIR: data written by another Zarr
implementation) are decoded here, independently of zarrfs, with the same modules.

Exit status 3 when NumPy or numcodecs cannot be imported.
"""
import gzip
import json
import os
import struct
import sys
import zlib

try:
    import numpy as np
    import numcodecs
except ImportError:
    sys.exit(3)

rng = np.random.default_rng(3003)


def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit (RFC 3720)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4
assert crc32c(b"\xff" * 32) == 0x62A8AB43


class Cases:
    def __init__(self, out):
        self.out = out
        self.n = 0

    def add(self, name, codecs, arr, encoded, fill=None, dialect="v3"):
        arr = np.ascontiguousarray(arr)
        dt = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
        if fill is None:
            fill = np.zeros((), dt)
        d = os.path.join(self.out, name)
        os.makedirs(d, exist_ok=True)
        meta = {"shape": list(arr.shape), "typestr": dt.str,
                "fill": np.asarray(fill, dt).tobytes().hex(), "dialect": dialect}
        files = {"codecs.json": json.dumps(codecs).encode(), "meta.json": json.dumps(meta).encode(),
                 "encoded.dat": bytes(encoded), "expected.dat": arr.astype(dt).tobytes()}
        for k, v in files.items():
            with open(os.path.join(d, k), "wb") as f:
                f.write(v)
        self.n += 1


BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BE = {"name": "bytes", "configuration": {"endian": "big"}}
CRC = {"name": "crc32c"}


def gz(level):
    return {"name": "gzip", "configuration": {"level": level}}


# --- compressors (v3 codecs "gzip", "zstd", "blosc"), data from numcodecs ---

def compressor_cases(c):
    a = rng.integers(-1000, 1000, (6, 7)).astype("<i4")
    c.add("gzip_i4", [BYTES_LE, gz(5)], a, numcodecs.GZip(5).encode(a.tobytes()))
    f = rng.normal(size=(5, 4))
    c.add("gzip_f8_big", [BYTES_BE, gz(1)], f, numcodecs.GZip(1).encode(f.astype(">f8").tobytes()))
    u = (np.arange(300) % 17).astype("<u2")
    c.add("zstd_u2", [BYTES_LE, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}],
          u, numcodecs.Zstd(3).encode(u.tobytes()))
    c.add("zstd_u2_short", [BYTES_LE, {"name": "zstd", "configuration": {"level": -5}}],
          u, numcodecs.Zstd(-5).encode(u.tobytes()))
    g = np.cumsum(rng.normal(size=(20, 10)), axis=1)
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    c.add("blosc_lz4_shuffle_f8",
          [BYTES_LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                         "shuffle": "shuffle", "typesize": 8,
                                                         "blocksize": 0}}],
          g, blosc.encode(g))
    i = rng.integers(-50, 50, 400).astype(">i4")
    blosc = numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE)
    c.add("blosc_zstd_bitshuffle_i4_big",
          [BYTES_BE, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3,
                                                         "shuffle": "bitshuffle", "typesize": 4,
                                                         "blocksize": 0}}],
          i, blosc.encode(i))
    b = rng.integers(0, 4, 1000).astype("|u1")
    blosc = numcodecs.Blosc(cname="blosclz", clevel=9, shuffle=numcodecs.Blosc.NOSHUFFLE)
    c.add("blosc_blosclz_noshuffle_u1",
          [{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "blosclz", "clevel": 9,
                                                                  "shuffle": "noshuffle",
                                                                  "blocksize": 0}}],
          b, blosc.encode(b))


# --- transpose, crc32c, numcodecs.* ---

def chain_cases(c):
    a = rng.integers(-30000, 30000, (3, 4, 5)).astype("<i2")
    for order in [(2, 0, 1), (1, 2, 0), (2, 1, 0), (0, 1, 2)]:
        # transpose codec: B_shape[i] = A_shape[order[i]], B[B_pos] = A[A_pos] with
        # B_pos[i] = A_pos[order[i]]: NumPy's np.transpose(A, order).
        enc = gzip.compress(np.transpose(a, order).astype("<i2").tobytes())
        c.add("transpose_%d%d%d_gzip" % order,
              [{"name": "transpose", "configuration": {"order": list(order)}}, BYTES_LE, gz(1)],
              a, enc)
    m = rng.normal(size=(4, 6)).astype("<f4")
    c.add("transpose_F_string", [{"name": "transpose", "configuration": {"order": "F"}}, BYTES_BE],
          m, m.T.astype(">f4").tobytes())
    raw = m.tobytes()
    c.add("crc32c_f4", [BYTES_LE, CRC], m, raw + struct.pack("<I", crc32c(raw)))
    z = gzip.compress(raw)
    c.add("gzip_crc32c", [BYTES_LE, gz(6), CRC], m, z + struct.pack("<I", crc32c(z)))
    # zarr-python 3's numcodecs.<id>: as zarrita's 1d.contiguous.delta.i4 fixture.
    d = np.cumsum(rng.integers(-5, 6, (5, 8)), axis=1).astype("<i4")
    c.add("numcodecs_delta_i4",
          [{"name": "numcodecs.delta", "configuration": {"dtype": "int32"}}, BYTES_LE], d,
          numcodecs.Delta(dtype="<i4").encode(d).tobytes())
    # ... followed by a transpose (the chunk keeps its shape through delta).
    c.add("numcodecs_delta_then_transpose",
          [{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}},
           {"name": "transpose", "configuration": {"order": [1, 0]}}, BYTES_LE], d,
          np.ascontiguousarray(numcodecs.Delta(dtype="<i4").encode(d).reshape(d.shape).T).tobytes())
    # numcodecs.shuffle is a bytes -> bytes codec in numcodecs.zarr3.
    s = rng.normal(size=50)
    sh = numcodecs.Shuffle(elementsize=8).encode(s.tobytes())
    c.add("numcodecs_shuffle_zlib",
          [BYTES_LE, {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}},
           {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
          s, zlib.compress(bytes(sh), 1))
    q = rng.normal(size=(3, 3)).astype("<f8")
    fso = numcodecs.FixedScaleOffset(offset=0, scale=100, dtype="<f8", astype="<i2")
    enc = fso.encode(q)
    c.add("numcodecs_fixedscaleoffset",
          [{"name": "numcodecs.fixedscaleoffset",
            "configuration": {"offset": 0, "scale": 100, "dtype": "<f8", "astype": "<i2"}},
           BYTES_BE], fso.decode(enc).reshape(3, 3), enc.astype(">i2").tobytes())
    # Short-hand names (core "Extension definition"), and a codec that may be ignored.
    c.add("shorthand_names", ["bytes", "crc32c"], np.arange(7, dtype="|u1"),
          bytes(range(7)) + struct.pack("<I", crc32c(bytes(range(7)))))
    c.add("must_understand_false",
          [BYTES_LE, {"name": "x-unknown-checksum", "must_understand": False}, gz(1)],
          m, gzip.compress(raw))


# --- sharding_indexed, shards laid out by hand from the spec ---

def encode_index(pairs, cps, big=False, crc=True):
    """The shard index: uint64 array of shape cps + [2], C order, then crc32c of those bytes."""
    arr = np.array(pairs, dtype=">u8" if big else "<u8").reshape(tuple(cps) + (2,))
    raw = arr.tobytes()
    return raw + (struct.pack("<I", crc32c(raw)) if crc else b"")


EMPTY = 2**64 - 1


def make_shard(arr, chunk, encode_chunk, index_at_end=True, big=False, crc=True, empty=(),
               order=None, gap=b""):
    """Shard bytes for arr: inner chunks encoded with encode_chunk, written in `order` (inner
    chunk numbers, default C order) with `gap` between them; chunks in `empty` left out."""
    cps = [s // c for s, c in zip(arr.shape, chunk)]
    n = int(np.prod(cps))
    pairs = [(EMPTY, EMPTY)] * n
    index_len = 16 * n + (4 if crc else 0)
    body = bytearray()
    start = 0 if index_at_end else index_len
    for k in (order if order is not None else range(n)):
        if k in empty:
            continue
        pos = np.unravel_index(k, cps)
        sl = tuple(slice(p * c, (p + 1) * c) for p, c in zip(pos, chunk))
        data = encode_chunk(np.ascontiguousarray(arr[sl]))
        body += gap
        pairs[k] = (start + len(body), len(data))
        body += data
    index = encode_index([v for p in pairs for v in p], cps, big, crc)
    return bytes(body) + index if index_at_end else index + bytes(body)


def shard_cfg(chunk, codecs, index_codecs=None, location=None):
    cfg = {"chunk_shape": list(chunk), "codecs": codecs,
           "index_codecs": index_codecs if index_codecs is not None else [BYTES_LE, CRC]}
    if location:
        cfg["index_location"] = location
    return {"name": "sharding_indexed", "configuration": cfg}


def with_fill(arr, chunk, empty, fill):
    """arr with the inner chunks in `empty` set to fill (what a reader must see)."""
    out = arr.copy()
    cps = [s // c for s, c in zip(arr.shape, chunk)]
    for k in empty:
        pos = np.unravel_index(k, cps)
        out[tuple(slice(p * c, (p + 1) * c) for p, c in zip(pos, chunk))] = fill
    return out


def sharding_cases(c):
    a = rng.integers(-500, 500, (8, 6)).astype("<i2")
    chunk = (4, 3)
    gzc = lambda x: gzip.compress(x.astype("<i2").tobytes(), 1)
    # Index at the end, [bytes, crc32c]; two empty inner chunks; non-zero fill value; chunks
    # written out of order with unused bytes between them.
    enc = make_shard(a, chunk, gzc, empty={1, 2}, order=[3, 0, 2, 1], gap=b"unused")
    c.add("shard_end_gzip_fill", [shard_cfg(chunk, [BYTES_LE, gz(1)])],
          with_fill(a, chunk, {1, 2}, -7), enc, fill=np.int16(-7))
    # Index at the start, index codecs [bytes big, crc32c].
    enc = make_shard(a, chunk, gzc, index_at_end=False, big=True, empty={0})
    c.add("shard_start_bigindex",
          [shard_cfg(chunk, [BYTES_LE, gz(1)], [BYTES_BE, CRC], "start")],
          with_fill(a, chunk, {0}, 0), enc)
    # Index without a checksum.
    enc = make_shard(a, chunk, lambda x: x.astype("<i2").tobytes(), crc=False)
    c.add("shard_index_bytes_only", [shard_cfg(chunk, [BYTES_LE], [BYTES_LE])], a, enc)
    # Inner chunks transposed and big-endian.
    f = rng.normal(size=(4, 6, 2))
    ch = (2, 3, 2)
    enc = make_shard(f, ch, lambda x: np.transpose(x, (2, 0, 1)).astype(">f8").tobytes())
    c.add("shard_inner_transpose",
          [shard_cfg(ch, [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                          BYTES_BE])], f, enc)
    # Nested sharding: inner chunks are themselves shards (of zstd-compressed chunks).
    u = rng.integers(0, 65535, (8, 8)).astype("<u2")
    zs = numcodecs.Zstd(1)
    inner = lambda x: make_shard(x, (2, 2), lambda y: zs.encode(y.astype("<u2").tobytes()),
                                 empty={3})
    enc = make_shard(u, (4, 4), inner, empty={2})
    expect = with_fill(u, (4, 4), {2}, 9)
    for k in range(4):  # inner chunk 3 of each inner shard is empty
        if k == 2:
            continue
        pos = np.unravel_index(k, (2, 2))
        expect[pos[0] * 4 + 2:pos[0] * 4 + 4, pos[1] * 4 + 2:pos[1] * 4 + 4] = 9
    c.add("shard_nested",
          [shard_cfg((4, 4), [shard_cfg((2, 2), [BYTES_LE, {"name": "zstd",
                                                           "configuration": {"level": 1}}])])],
          expect, enc, fill=np.uint16(9))
    # The edge shard of a ragged array (shape [5], shards of 4, inner chunks of 2): the second
    # shard holds elements 4..7, of which only 4 exists; its last inner chunk was never written.
    e = np.array([11, 12, 13, 14, 15, 3, 3, 3], dtype="<i4")  # array [11..15], fill 3
    shard1 = e[4:8]
    enc = make_shard(shard1, (2,), lambda x: x.astype("<i4").tobytes(), empty={1})
    c.add("shard_ragged_edge", [shard_cfg((2,), [BYTES_LE])], shard1, enc, fill=np.int32(3))
    # Sharding after a transpose and before a checksum (not the only codec).
    t = rng.integers(0, 100, (4, 6)).astype("|u1")
    shard = make_shard(np.ascontiguousarray(t.T), (3, 2), lambda x: x.tobytes())
    c.add("shard_between_codecs",
          [{"name": "transpose", "configuration": {"order": [1, 0]}},
           shard_cfg((3, 2), ["bytes"]), CRC], t, shard + struct.pack("<I", crc32c(shard)))
    # Inner chunks compressed with blosc, index codecs as short-hand names.
    g = rng.normal(size=(16,))
    bl = numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE)
    enc = make_shard(g, (4,), lambda x: bl.encode(np.ascontiguousarray(x, "<f8")))
    c.add("shard_blosc",
          [shard_cfg((4,), [BYTES_LE, {"name": "blosc", "configuration": {
              "cname": "zstd", "clevel": 1, "shuffle": "shuffle", "typesize": 8,
              "blocksize": 0}}], [BYTES_LE, "crc32c"])], g, enc)


# --- the May 2022 draft ---

def draft2022_cases(c):
    uri = "https://purl.org/zarr/spec/codec/%s/1.0"
    a = rng.integers(-100, 100, (3, 5)).astype("<i4")
    c.add("draft2022_endian_big_gzip",
          [{"codec": uri % "endian", "configuration": {"endian": "big"}},
           {"codec": uri % "gzip", "configuration": {"level": 1}}],
          a, gzip.compress(a.astype(">i4").tobytes()), dialect="draft2022")
    # No endian codec: the default binary representation, little endian.
    c.add("draft2022_implicit_little",
          [{"codec": uri % "gzip", "configuration": {"level": 1}}],
          a, gzip.compress(a.tobytes()), dialect="draft2022")
    c.add("draft2022_empty_list", [], a, a.tobytes(), dialect="draft2022")
    c.add("draft2022_transpose_F",
          [{"codec": uri % "transpose", "configuration": {"order": "F"}},
           {"type": "https://purl.org/zarr/spec/codecs/gzip/1.0", "configuration": {"level": 1}}],
          a, gzip.compress(a.T.astype("<i4").tobytes()), dialect="draft2022")
    bl = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
    c.add("draft2022_blosc_int_shuffle",
          [{"codec": uri % "blosc",
            "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}}],
          a, bl.encode(a), dialect="draft2022")


# --- chunks written by another implementation (zarrita fixtures), decoded here ---

V3_DTYPES = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
             "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
             "float16": "<f2", "float32": "<f4", "float64": "<f8",
             "complex64": "<c8", "complex128": "<c16"}


def norm(codec):
    return codec if isinstance(codec, dict) else {"name": codec}


def py_decode(codecs, shape, dt, data, fill):
    """Decode one chunk by the v3 decoding procedure, independently of zarrfs."""
    codecs = [norm(x) for x in codecs]
    # Representations forwards (only what these fixtures use).
    reprs = [(tuple(shape), dt)]
    for cd in codecs:
        cfg = cd.get("configuration", {})
        s, t = reprs[-1]
        if cd["name"] == "transpose":
            s = tuple(s[i] for i in cfg["order"])
        reprs.append((s, t))
    for i in reversed(range(len(codecs))):
        name, cfg = codecs[i]["name"], codecs[i].get("configuration", {})
        s, t = reprs[i]
        if name == "gzip":
            data = gzip.decompress(data)
        elif name == "zstd":
            data = bytes(numcodecs.Zstd().decode(data))
        elif name == "blosc":
            data = bytes(numcodecs.Blosc().decode(data))
        elif name == "crc32c":
            assert struct.unpack("<I", data[-4:])[0] == crc32c(data[:-4])
            data = data[:-4]
        elif name == "bytes":
            order = ">" if cfg.get("endian") == "big" else "<"
            data = np.frombuffer(data, np.dtype(t).newbyteorder(order)).reshape(s)
        elif name == "transpose":
            data = np.transpose(data, np.argsort(cfg["order"]))
        elif name == "numcodecs.delta":
            data = numcodecs.Delta(dtype=cfg["dtype"]).decode(np.ascontiguousarray(data))
            data = data.reshape(s)
        elif name == "sharding_indexed":
            chunk = cfg["chunk_shape"]
            cps = [a // b for a, b in zip(s, chunk)]
            n = int(np.prod(cps))
            ilen = 16 * n + (4 if any(norm(x)["name"] == "crc32c"
                                      for x in cfg["index_codecs"]) else 0)
            at_end = cfg.get("index_location", "end") == "end"
            ib = data[-ilen:] if at_end else data[:ilen]
            assert struct.unpack("<I", ib[16 * n:16 * n + 4])[0] == crc32c(ib[:16 * n])
            pairs = np.frombuffer(ib[:16 * n], "<u8").reshape(n, 2)
            out = np.full(s, np.frombuffer(fill, t)[0], t)
            for k in range(n):
                off, nb = int(pairs[k][0]), int(pairs[k][1])
                if off == EMPTY and nb == EMPTY:
                    continue
                pos = np.unravel_index(k, cps)
                sl = tuple(slice(p * c, (p + 1) * c) for p, c in zip(pos, chunk))
                out[sl] = py_decode(cfg["codecs"], chunk, t, data[off:off + nb], fill)
            data = out
        else:
            raise NotImplementedError(name)
    return np.ascontiguousarray(np.asarray(data).astype(np.dtype(dt).newbyteorder("<")))


def fill_bytes(value, dt):
    return np.asarray(value, dt).tobytes()


def zarrita_cases(c, root):
    if not os.path.isdir(root):
        return
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "zarr.json")
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            meta = json.load(f)
        if meta.get("node_type") != "array" or meta["data_type"] not in V3_DTYPES:
            continue
        dt = V3_DTYPES[meta["data_type"]]
        chunk = meta["chunk_grid"]["configuration"]["chunk_shape"]
        fill = fill_bytes(meta["fill_value"], dt)
        cdir = os.path.join(root, name, "c")
        for dirpath, _dirs, files in os.walk(cdir):
            for fn in sorted(files):
                p = os.path.join(dirpath, fn)
                with open(p, "rb") as f:
                    enc = f.read()
                try:
                    arr = py_decode(meta["codecs"], chunk, dt, enc, fill)
                except NotImplementedError:
                    continue
                key = os.path.relpath(p, cdir).replace(os.sep, ".")
                c.add("zarrita." + name + "." + key, meta["codecs"], arr, enc,
                      fill=np.frombuffer(fill, dt)[0])


def main():
    zarrita, out = sys.argv[1], sys.argv[2]
    c = Cases(out)
    compressor_cases(c)
    chain_cases(c)
    sharding_cases(c)
    draft2022_cases(c)
    n = c.n
    zarrita_cases(c, zarrita)
    print("v3 codec vectors: %d generated, %d zarrita fixture chunks" % (n, c.n - n))


if __name__ == "__main__":
    main()
