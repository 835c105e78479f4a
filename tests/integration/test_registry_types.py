#!/usr/bin/python3
"""The zarr-extensions registry's data types (bfloat16, float8/6/4, int2/int4/uint2/uint4,
complex_*, struct), its "packbits" codec and its "cast_value" codec through zarrfs.

Every store here is written BY THIS TEST with numpy and the procedures of the registry's own
documents (no other Zarr implementation writes these types in Debian):

* the element values come from an independent decoder written below from each data type's
  README (sign / exponent bits and bias / mantissa bits, IEEE or fn / fnuz / fnu conventions);
* packbits chunks are packed by `pack_bits` below from codecs/packbits "Format and algorithm";
* cast_value chunks are cast by `cast_to_*` below from codecs/cast_value "Procedure".

Reads: the flat file (docs/formats.md: one byte per element holding the element's bits in the
low bits, int2/int4 sign-extended; bfloat16 two little-endian bytes; complex = real, imag)
compared byte for byte with what the documents say, and its values with the independent
decoder. Writes (-o rw): new values written to the flat file, the chunk then read from the
store and decoded here with the same independent code.
"""

import base64
import errno
import json
import math
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount as zf  # noqa: E402

import numpy as np  # noqa: E402

WORK = None

# data-types/<name>/README.md: (sign bits, exponent bits, bias, mantissa bits, convention)
# I: IEEE 754-like (exponent all ones: infinities and NaN); F: "fn", no infinity, no NaN;
# Z: "fnuz", NaN is 0b1000'0000, no negative zero; U: e8m0fnu, NaN 0xFF, no zero/subnormals.
FORMATS = {
    "bfloat16": (1, 8, 127, 7, "I"),
    "float8_e3m4": (1, 3, 3, 4, "I"),
    "float8_e4m3": (1, 4, 7, 3, "I"),
    "float8_e4m3b11fnuz": (1, 4, 11, 3, "Z"),
    "float8_e4m3fnuz": (1, 4, 8, 3, "Z"),
    "float8_e5m2": (1, 5, 15, 2, "I"),
    "float8_e5m2fnuz": (1, 5, 16, 2, "Z"),
    "float8_e8m0fnu": (0, 8, 127, 0, "U"),
    "float6_e2m3fn": (1, 2, 1, 3, "F"),
    "float6_e3m2fn": (1, 3, 3, 2, "F"),
    "float4_e2m1fn": (1, 2, 1, 1, "F"),
}


def nbits(name):
    s, e, _b, m, _k = FORMATS[name]
    return s + e + m


def decode_float(name, code):
    """The README's formula: (-1)^S * 2^(E - bias) * (1 + M / 2^m); E == 0: subnormal."""
    s, e, bias, m, kind = FORMATS[name]
    bits = s + e + m
    man = code & ((1 << m) - 1)
    exp = (code >> m) & ((1 << e) - 1)
    neg = s and (code >> (bits - 1)) & 1
    if kind == "I" and exp == (1 << e) - 1:
        return float("nan") if man else (-math.inf if neg else math.inf)
    if kind == "Z" and code == 0x80 or kind == "U" and code == 0xFF:
        return float("nan")
    if exp == 0 and kind != "U":
        v = math.ldexp(man, 1 - bias - m)
    else:
        v = math.ldexp((1 << m) + man, exp - bias - m)
    return -v if neg else v


def encode_float(name, x):
    """Round to nearest, ties to the even code: the nearest of all codes (brute force)."""
    best = None
    for code in range(1 << nbits(name)):
        v = decode_float(name, code)
        if math.isnan(v) or math.isinf(v):
            continue
        if v == 0 and math.copysign(1, v) != math.copysign(1, x):
            continue
        d = abs(v - x)
        if best is None or d < best[0] or (d == best[0] and code % 2 == 0):
            best = (d, code)
    return best[1]


def pack_bits(values, bits, pad=None):
    """codecs/packbits: element i at bits [i*k, (i+1)*k), byte j holds bits [8j, 8j+8), least
    significant first; padded with zeros; the padding count before or after."""
    out = bytearray((len(values) * bits + 7) // 8)
    for i, v in enumerate(values):
        for b in range(bits):
            if (v >> b) & 1:
                p = i * bits + b
                out[p // 8] |= 1 << (p % 8)
    padding = (8 - len(values) * bits % 8) % 8
    if pad == "first_byte":
        return bytes([padding]) + bytes(out)
    if pad == "last_byte":
        return bytes(out) + bytes([padding])
    return bytes(out)


def unpack_bits(data, bits, n):
    return [sum(((data[(i * bits + b) // 8] >> ((i * bits + b) % 8)) & 1) << b
                for b in range(bits)) for i in range(n)]


def write_array(root, name, shape, chunks, data_type, fill, codecs, chunk_bytes):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs,
            "attributes": {}}
    with open(os.path.join(d, "zarr.json"), "w") as f:
        json.dump(meta, f)
    for key, b in chunk_bytes.items():
        p = os.path.join(d, "c", *[str(k) for k in key])
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b)


def chunk_path(root, name, *key):
    return os.path.join(root, name, "c", *[str(k) for k in key])


def read_file(p):
    with open(p, "rb") as f:
        return f.read()


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-registry-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zf.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def new_store(label):
    root = os.path.join(WORK, label)
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    return root


BYTES = [{"name": "bytes", "configuration": {"endian": "little"}}]


class Reads(zf.TestCase):
    def test_float_formats_every_code(self):
        """Every code of every 8/6/4-bit format through the bytes codec (upper bits of the
        sub-byte formats set to garbage: "ignored") and through packbits; the flat file holds
        the codes, whose values the README decoder gives."""
        root = new_store("floats")
        want = {}
        for name in FORMATS:
            if name == "bfloat16":
                continue
            w = nbits(name)
            codes = list(range(1 << w))
            stored = bytes(c | (0xC0 if w == 6 else 0xF0 if w == 4 else 0) for c in codes)
            n = len(codes)
            write_array(root, name, [n], [n], name, 0, BYTES, {(0,): stored})
            write_array(root, name + "_packed", [n], [n], name, 0,
                        [{"name": "packbits", "configuration": {"padding_encoding": "last_byte"}}],
                        {(0,): pack_bits(codes, w, "last_byte")})
            want[name] = bytes(codes)
        with zf.Mount(root, label="floats") as m:
            for name, flat in want.items():
                for node in (name, name + "_packed"):
                    got = zf.read_all(m.path(node))
                    self.assertBytesEqual(got, flat, node)
                self.assertEqual(os.getxattr(m.path(name), "user.zarr.dtype").decode(), name)
                # the values: zero is zero, the README's maxima
                vals = [decode_float(name, c) for c in got]
                finite = [v for v in vals if math.isfinite(v)]
                self.assertEqual(max(finite), {
                    "float8_e3m4": 15.5, "float8_e4m3": 240, "float8_e4m3b11fnuz": 30,
                    "float8_e4m3fnuz": 240, "float8_e5m2": 57344, "float8_e5m2fnuz": 57344,
                    "float8_e8m0fnu": 2.0 ** 127, "float6_e2m3fn": 7.5, "float6_e3m2fn": 28,
                    "float4_e2m1fn": 6}[name], name)

    def test_sub_byte_integers_and_complex(self):
        root = new_store("ints")
        # int4 [-8, 7] stored as 0bIIIIXXXX with garbage upper bits; flat: sign-extended int8
        i4 = list(range(-8, 8))
        write_array(root, "int4", [16], [8], "int4", -8, BYTES,
                    {(0,): bytes((v & 0xF) | 0xA0 for v in i4[:8]),
                     (1,): bytes((v & 0xF) | 0x50 for v in i4[8:])})
        write_array(root, "int2_packed", [7], [7], "int2", 0,
                    [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}],
                    {(0,): pack_bits([v & 3 for v in [-2, -1, 0, 1, 1, 0, -2]], 2,
                                     "first_byte")})
        write_array(root, "uint4_fill", [6], [4], "uint4", 11, ["packbits"],
                    {(0,): pack_bits([0, 5, 10, 15], 4)})   # chunk 1 absent: fill 11
        # complex_float8_e5m2: real, imag codes; complex_bfloat16 little-endian pairs
        re_im = [(1.0, -2.0), (0.5, 57344.0), (-0.0, 3.0)]
        codes = [c for p in re_im for c in (encode_float("float8_e5m2", p[0]),
                                            encode_float("float8_e5m2", p[1]))]
        write_array(root, "cf8", [3], [3], "complex_float8_e5m2", [0, 0], BYTES,
                    {(0,): bytes(codes)})
        bf = np.array([1.5, -2.0, 3.0, 0.25], dtype="<f4").view("<u4") >> 16
        write_array(root, "cbf16", [2], [2], "complex_bfloat16", ["NaN", 0], BYTES,
                    {(0,): bf.astype("<u2").tobytes()})
        write_array(root, "cbf16_fill", [2], [1], "complex_bfloat16", ["NaN", "-Infinity"],
                    BYTES, {})
        write_array(root, "cf16", [2], [2], "complex_float16", [0, 0], BYTES,
                    {(0,): np.array([1 + 2j, -3 - 4j], dtype="<c8").view("<f4")
                     .astype("<f2").tobytes()})
        with zf.Mount(root, label="ints") as m:
            self.assertBytesEqual(zf.read_all(m.path("int4")),
                                  np.array(i4, dtype="i1").tobytes(), "int4")
            self.assertEqual(zf.read_all(m.path("int2_packed")),
                             np.array([-2, -1, 0, 1, 1, 0, -2], dtype="i1").tobytes())
            self.assertEqual(zf.read_all(m.path("uint4_fill")), bytes([0, 5, 10, 15, 11, 11]))
            got = zf.read_all(m.path("cf8"))
            vals = [decode_float("float8_e5m2", c) for c in got]
            self.assertEqual(vals, [v for p in re_im for v in p])
            self.assertEqual(math.copysign(1, vals[4]), -1.0)     # -0.0 kept
            self.assertEqual(zf.read_all(m.path("cbf16")), bf.astype("<u2").tobytes())
            self.assertEqual(zf.read_all(m.path("cbf16_fill")),
                             bytes.fromhex("c07f80ff") * 2)      # README: "NaN" is 0x7fc0
            self.assertEqual(zf.read_all(m.path("cf16")),
                             np.array([1, 2, -3, -4], dtype="<f2").tobytes())
            self.assertEqual(os.getxattr(m.path("cf16"), "user.zarr.dtype"), b"complex_float16")
            self.assertEqual(os.getxattr(m.path("int4"), "user.zarr.dtype"), b"int4")

    def test_struct(self):
        """data-types/struct: fields packed in order; the flat file is numpy's packed
        structured dtype."""
        root = new_store("struct")
        fields = [{"name": "id", "data_type": "int32"}, {"name": "flags", "data_type": "uint8"},
                  {"name": "value", "data_type": "float64"}]
        dt = np.dtype([("id", "<i4"), ("flags", "u1"), ("value", "<f8")])
        a = np.array([(1, 2, 0.5), (-7, 255, -1e300), (3, 0, 2.0)], dtype=dt)
        write_array(root, "s", [4], [3], {"name": "struct", "configuration": {"fields": fields}},
                    {"id": 9, "flags": 1, "value": -0.25}, BYTES,
                    {(0,): a.tobytes()})            # chunk 1 absent: the fill value
        with zf.Mount(root, label="struct") as m:
            got = np.frombuffer(zf.read_all(m.path("s")), dtype=dt)
            want = np.concatenate([a, np.array([(9, 1, -0.25)], dtype=dt)])
            self.assertEqual(got.tobytes(), want.tobytes())
            descr = json.loads(os.getxattr(m.path("s"), "user.zarr.dtype"))
            self.assertEqual(np.dtype([tuple(f) for f in descr]), dt)

    def test_structured_legacy_alias(self):
        """data-types/structured: the legacy alias zarr-python 3.0/3.1 wrote — tuple fields,
        a base64 fill value of the packed bytes, a bytes codec without "endian" meaning
        little-endian; also the object fill value; a big-endian one is refused by name."""
        root = new_store("structured")
        fields = [["x", "float32"], ["n", "int16"], ["tag", "uint8"]]
        dt = np.dtype([("x", "<f4"), ("n", "<i2"), ("tag", "u1")])
        a = np.array([(1.5, -2, 7), (-0.0, 300, 255)], dtype=dt)
        fill = np.array([(2.25, -9, 3)], dtype=dt)
        b64 = base64.b64encode(fill.tobytes()).decode()
        typ = {"name": "structured", "configuration": {"fields": fields}}
        write_array(root, "b64", [3], [2], typ, b64, [{"name": "bytes"}], {(0,): a.tobytes()})
        write_array(root, "obj", [3], [2], typ, {"x": 2.25, "n": -9, "tag": 3}, BYTES,
                    {(0,): a.tobytes()})
        write_array(root, "big", [3], [2], typ, b64,
                    [{"name": "bytes", "configuration": {"endian": "big"}}], {})
        write_array(root, "short_fill", [3], [2], typ, base64.b64encode(b"1234").decode(),
                    BYTES, {})
        with zf.Mount(root, label="structured") as m:
            want = np.concatenate([a, fill]).tobytes()
            for name in ("b64", "obj"):
                self.assertBytesEqual(zf.read_all(m.path(name)), want, name)
                descr = json.loads(os.getxattr(m.path(name), "user.zarr.dtype"))
                self.assertEqual(np.dtype([tuple(f) for f in descr]), dt)
            self.assertUndecodable(m.path("big"), 3 * dt.itemsize, ["big-endian"])
            self.assertErrno(errno.EIO, os.stat, m.path("short_fill"))

    def test_cast_value(self):
        """codecs/cast_value: the document's NumPy-compatibility example (float64 stored as
        uint8), and float32 stored as float8_e4m3 (nearest-even)."""
        root = new_store("cast")
        stored = bytes([0, 1, 127, 200, 255, 3])
        numpy_cfg = {"name": "cast_value", "configuration": {
            "data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
            "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]}}}
        write_array(root, "u8", [8], [6], "float64", 0, [numpy_cfg] + BYTES, {(0,): stored})
        x = [1.0, -0.3125, 240.0, 0.0, -3.5, 0.1]
        codes = bytes(encode_float("float8_e4m3", v) for v in x)
        e4m3 = {"name": "cast_value", "configuration": {"data_type": "float8_e4m3"}}
        write_array(root, "e4m3", [6], [6], "float32", "NaN", [e4m3] + BYTES, {(0,): codes})
        with zf.Mount(root, label="cast") as m:
            got = np.frombuffer(zf.read_all(m.path("u8")), "<f8")
            self.assertEqual(list(got), [0, 1, 127, 200, 255, 3, 0, 0])
            got = np.frombuffer(zf.read_all(m.path("e4m3")), "<f4")
            want = np.array([decode_float("float8_e4m3", c) for c in codes], "<f4")
            self.assertEqual(got.tobytes(), want.tobytes())
            self.assertEqual(got[5], np.float32(0.1015625))   # 0.1 -> 1.625 * 2^-4


class Views(zf.TestCase):
    def test_sidecars_only_for_types_they_can_name(self):
        """-o sidecars: .npy for complex_float32 (<c8) and a struct NumPy can describe; no
        header views for bfloat16 or int4 (none of the formats names them); the group's netCDF
        file leaves them out and says so."""
        root = new_store("views")
        c = np.array([[1 + 2j, 3 - 4j], [0.5j, -1]], dtype="<c8")
        write_array(root, "cf32", [2, 2], [2, 2], "complex_float32", [0, 0], BYTES,
                    {(0, 0): c.tobytes()})
        write_array(root, "bf", [2, 2], [2, 2], "bfloat16", 0, BYTES,
                    {(0, 0): bytes.fromhex("803f00c0c07f0000")})
        write_array(root, "i4", [2, 2], [2, 2], "int4", 0, BYTES, {(0, 0): bytes([1, 2, 15, 8])})
        dt = np.dtype([("a", "<i2"), ("b", "<f4")])
        st = np.array([(1, 0.5), (-2, 2.0)], dtype=dt)
        write_array(root, "st", [2], [2], {"name": "struct", "configuration": {"fields": [
            {"name": "a", "data_type": "int16"}, {"name": "b", "data_type": "float32"}]}},
            {"a": 0, "b": 0}, BYTES, {(0,): st.tobytes()})
        write_array(root, "i16", [2, 2], [2, 2], "int16", 0, BYTES,
                    {(0, 0): np.arange(4, dtype="<i2").tobytes()})
        with zf.Mount(root, options=["sidecars"], label="views") as m:
            names = set(os.listdir(m.mnt))
            for ext in ("npy", "hdr", "mhd", "nhdr", "tif"):
                self.assertIn("i16." + ext, names)
                self.assertNotIn("bf." + ext, names)
                self.assertNotIn("i4." + ext, names)
            self.assertEqual(np.load(m.path("cf32.npy")).tobytes(), c.tobytes())
            self.assertEqual(np.load(m.path("st.npy")).tobytes(), st.tobytes())
            self.assertEqual(np.load(m.path("st.npy")).dtype, dt)
            nc = [n for n in names if n.endswith(".nc")]
            self.assertTrue(nc, names)
            head = zf.read_all(m.path(nc[0]))[:4096]
            self.assertIn(b"zarrfs_omitted_variables", head)
            self.assertIn(b"bf (a data type netCDF has not)", head)
            self.assertIn(b"i16", head)


class Writes(zf.TestCase):
    def test_write_back(self):
        """-o rw: values written to the flat file reach the store as the documents encode
        them (decoded here by the independent code above)."""
        root = new_store("writes")
        write_array(root, "f4", [10], [5], "float4_e2m1fn", 0,
                    [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}],
                    {})
        write_array(root, "i4", [5], [5], "int4", 0, BYTES, {})
        write_array(root, "bf", [3], [3], "bfloat16", 0, BYTES, {})
        write_array(root, "cast", [4], [4], "float64", 0,
                    [{"name": "cast_value", "configuration": {"data_type": "int8",
                                                              "out_of_range": "clamp"}}] + BYTES,
                    {})
        f4codes = [encode_float("float4_e2m1fn", v) for v in
                   [0.5, 1, 1.5, 2, 3, 4, 6, -6, -0.0, 0]]
        bfv = np.array([1.0, -2.5, 65280.0], "<f4").view("<u4") >> 16
        with zf.Mount(root, options=["rw"], label="writes") as m:
            with open(m.path("f4"), "r+b") as f:
                f.write(bytes(f4codes))
            with open(m.path("i4"), "r+b") as f:
                f.write(np.array([-8, -1, 0, 3, 7], "i1").tobytes())
            with open(m.path("bf"), "r+b") as f:
                f.write(bfv.astype("<u2").tobytes())
            with open(m.path("cast"), "r+b") as f:
                f.write(np.array([1.4, -300.0, 2.5, 127.6], "<f8").tobytes())
            # a byte that is no uint4 / int4 value is refused, not stored
            fd = os.open(m.path("i4"), os.O_WRONLY)
            try:
                with self.assertRaises(OSError):
                    os.pwrite(fd, b"\x10", 0)
                    os.fsync(fd)
            finally:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for k in (0, 1):
            data = read_file(chunk_path(root, "f4", k))
            self.assertEqual(data[0], 4)                 # 5 elements x 4 bits: 4 padding bits
            self.assertEqual(unpack_bits(data[1:], 4, 5), f4codes[5 * k:5 * k + 5])
        vals = [decode_float("float4_e2m1fn", c) for c in f4codes]
        self.assertEqual(vals[:8], [0.5, 1, 1.5, 2, 3, 4, 6, -6])
        self.assertEqual([b & 0xF for b in read_file(chunk_path(root, "i4", 0))],
                         [8, 15, 0, 3, 7])
        self.assertEqual(read_file(chunk_path(root, "bf", 0)),
                         bfv.astype("<u2").tobytes())
        # cast_value int8, nearest-even, clamp: 1, -128, 2, 127
        self.assertEqual(np.frombuffer(read_file(chunk_path(root, "cast", 0)), "i1")
                         .tolist(), [1, -128, 2, 127])


if __name__ == "__main__":
    zf.main()
