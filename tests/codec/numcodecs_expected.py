"""Expected decodes from numcodecs itself, for the codec unit tests (tests/codec/).

    numcodecs_expected.py FIXTURE_DIR OUT_DIR

Run with a Python that has numcodecs and NumPy (Debian's /usr/bin/python3: numcodecs 0.11,
NumPy 1.24). Writes

  OUT_DIR/fixture/<path of encoded.NN.dat>.expected
      numcodecs' decode of every fixture case it can decode (the flat buffer, memory order);
  OUT_DIR/extra/<case>/{config.json,encoded.dat,expected.dat}
      further cases generated here: the semantics that matter (NumPy's promotion in delta, its
      value-based casting in fixedscaleoffset, astype casts, categorize, multi-stream
      compressors, lzma formats and raw filter chains, ...), each decoded by numcodecs.

Exit status 3 when numcodecs cannot be imported (the C test then falls back to tolerances).
"""
import bz2
import gzip
import json
import lzma
import os
import sys
import warnings
import zlib

try:
    import numpy as np
    import numcodecs
except ImportError:
    sys.exit(3)

warnings.simplefilter("ignore")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def as_bytes(dec):
    if isinstance(dec, (bytes, bytearray, memoryview)):
        return bytes(dec)
    arr = np.asarray(dec)
    if arr.dtype == object:
        raise TypeError("object result")
    return arr.tobytes(order="A")


def fixture_expected(fixture, out):
    n = 0
    for root, _dirs, files in os.walk(fixture):
        if "config.json" not in files:
            continue
        with open(os.path.join(root, "config.json")) as f:
            cfg = json.load(f)
        try:
            codec = numcodecs.get_codec(dict(cfg))
        except Exception:
            continue
        for name in sorted(files):
            if not (name.startswith("encoded.") and name.endswith(".dat")):
                continue
            with open(os.path.join(root, name), "rb") as f:
                enc = f.read()
            try:
                dec = as_bytes(codec.decode(enc))
            except Exception:
                continue
            rel = os.path.relpath(os.path.join(root, name), fixture)
            write(os.path.join(out, "fixture", rel + ".expected"), dec)
            n += 1
    return n


class Extra:
    def __init__(self, out):
        self.out = os.path.join(out, "extra")
        self.n = 0

    def add(self, config, encoded, expected=None):
        """One case; expected defaults to numcodecs' decode of encoded."""
        if expected is None:
            expected = as_bytes(numcodecs.get_codec(dict(config)).decode(encoded))
        d = os.path.join(self.out, "%05d" % self.n)
        write(os.path.join(d, "config.json"), json.dumps(config).encode())
        write(os.path.join(d, "encoded.dat"), bytes(encoded))
        write(os.path.join(d, "expected.dat"), bytes(expected))
        self.n += 1


rng = np.random.default_rng(20240601)

NUMERIC = ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
           ">i4", ">u2", ">f8"]


def random_values(dt, n, lo=None, hi=None):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if lo is None else max(lo, info.min)
        hi = info.max if hi is None else min(hi, info.max)
        return rng.integers(lo, hi, n, dtype=np.int64 if hi < 2**63 else np.uint64,
                            endpoint=True).astype(dt)
    if lo is None:
        v = rng.standard_normal(n) * np.array([1, 100, 1e-3])[rng.integers(0, 3, n)]
    else:
        v = rng.uniform(lo, hi, n)
    return v.astype(dt)


def delta_cases(x):
    for a in NUMERIC:
        for d in NUMERIC:
            loop = np.promote_types(a, d)
            if loop.kind == "f" and np.dtype(d).kind in "iub":
                enc = random_values(a, 40, 0, 3)  # sums stay in every integer's range
            elif loop.kind == "f":
                enc = random_values(a, 40, -100, 100) if np.dtype(a).kind in "iu" else \
                    random_values(a, 40)
            else:
                enc = random_values(a, 40)
            x.add({"id": "delta", "dtype": d, "astype": a}, enc.tobytes())


def fixedscaleoffset_cases(x):
    astypes = ["|i1", "|u1", "<i2", "<u4", "<i8", "<f2", "<f4", "<f8", ">f4", ">i2"]
    scales = [10, 300, 70000, -3, 2.5, 70000.0, 1e300, 0.1]
    offsets = [0, 1000, 1.5, 100000.0, -7, 3e38]
    for a in astypes:
        enc = random_values(a, 32, -1000, 1000) if np.dtype(a).kind == "f" else \
            random_values(a, 32)
        for s in scales:
            for o in offsets:
                x.add({"id": "fixedscaleoffset", "scale": s, "offset": o, "dtype": "<f8",
                       "astype": a}, enc.tobytes())
        for d in ["<f4", "<f2", ">f8"]:
            x.add({"id": "fixedscaleoffset", "scale": 10, "offset": 1000, "dtype": d,
                   "astype": a}, enc.tobytes())
    for a in ["<i2", "<f4", "|u1"]:
        enc = random_values(a, 32, 0, 100)
        x.add({"id": "fixedscaleoffset", "scale": 10, "offset": 1000, "dtype": "<i4",
               "astype": a}, enc.tobytes())


def astype_cases(x):
    for a in NUMERIC:
        for d in NUMERIC:
            dk, ak = np.dtype(d).kind, np.dtype(a).kind
            if ak == "f" and dk in "iu":
                lo = 0 if dk == "u" else -100
                enc = random_values(a, 40, lo, 100)  # in range: no undefined casts
            else:
                enc = random_values(a, 40)
            if ak == "f" and dk in "fb":
                enc[:3] = [np.nan, np.inf, -np.inf]
            x.add({"id": "astype", "encode_dtype": a, "decode_dtype": d}, enc.tobytes())


def categorize_cases(x):
    labels = ["ƒöõ", "a", "", "longer label", "\U0001F600x", "ß"]
    for a in ["|u1", "<u2", "<i4", "<f8", ">i2"]:
        enc = rng.integers(0, len(labels) + 3, 50).astype(a)
        if np.dtype(a).kind == "f":
            enc[:2] = [1.5, -1]
        for d in ["<U4", ">U2", "<U1", "<U12"]:
            x.add({"id": "categorize", "labels": labels, "dtype": d, "astype": a},
                  enc.tobytes())


def packbits_cases(x):
    codec = numcodecs.get_codec({"id": "packbits"})
    for n in [0, 1, 7, 8, 9, 63, 64, 65, 1001]:
        arr = rng.integers(0, 2, n).astype(bool)
        x.add({"id": "packbits"}, codec.encode(arr).tobytes())


def shuffle_cases(x):
    for es in [0, 1, 2, 3, 4, 8, 16]:
        data = rng.integers(0, 256, 48 * 16, dtype=np.uint8)
        x.add({"id": "shuffle", "elementsize": es}, data.tobytes())


def compressor_cases(x):
    a = rng.integers(0, 50, 5000, dtype=np.uint8).tobytes()
    b = np.arange(3000, dtype="<i4").tobytes()
    # zlib: Python ignores bytes after the end of the stream.
    x.add({"id": "zlib", "level": 1}, zlib.compress(a) + b"trailing garbage")
    # gzip: members back to back, zero padding after the last.
    x.add({"id": "gzip", "level": 1}, gzip.compress(a) + gzip.compress(b) + b"\0\0\0\0")
    x.add({"id": "gzip", "level": 1}, gzip.compress(b""))
    # bz2: streams back to back; bytes after them that are no stream are ignored.
    x.add({"id": "bz2", "level": 1}, bz2.compress(a) + bz2.compress(b) + b"not bzip2")
    # lzma: every format, concatenated streams, raw filter chains.
    x.add({"id": "lzma", "format": 1},
          lzma.compress(a) + lzma.compress(b) + b"this is not an xz stream")
    x.add({"id": "lzma", "format": 1, "check": 0},
          lzma.compress(a, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE))
    x.add({"id": "lzma", "format": 1, "check": 10},
          lzma.compress(a, format=lzma.FORMAT_XZ, check=lzma.CHECK_SHA256))
    x.add({"id": "lzma", "format": 2}, lzma.compress(b, format=lzma.FORMAT_ALONE))
    x.add({"id": "lzma", "format": 0}, lzma.compress(b, format=lzma.FORMAT_ALONE))
    x.add({"id": "lzma", "format": 0}, lzma.compress(a, format=lzma.FORMAT_XZ))
    chains = [
        [{"id": lzma.FILTER_LZMA1, "preset": 6}],
        [{"id": lzma.FILTER_LZMA1, "lc": 0, "lp": 2, "pb": 2, "dict_size": 1 << 16}],
        [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}],
        [{"id": lzma.FILTER_DELTA, "dist": 4}, {"id": lzma.FILTER_LZMA2, "preset": 3}],
        [{"id": lzma.FILTER_X86}, {"id": lzma.FILTER_LZMA2}],
    ]
    for chain in chains:
        enc = lzma.compress(b, format=lzma.FORMAT_RAW, filters=chain)
        x.add({"id": "lzma", "format": 3, "filters": chain}, enc)
    # base64 with line breaks and stray characters (skipped), padding ends the data.
    import base64
    x.add({"id": "base64"}, base64.encodebytes(a))
    x.add({"id": "base64"}, b"  " + base64.b64encode(b[:10]) + b"\n")
    x.add({"id": "base64"}, base64.b64encode(b[:11]) + b"garbage-after-pad")


def main():
    fixture, out = sys.argv[1], sys.argv[2]
    nf = fixture_expected(fixture, out)
    x = Extra(out)
    for gen in (delta_cases, fixedscaleoffset_cases, astype_cases, categorize_cases,
                packbits_cases, shuffle_cases, compressor_cases):
        gen(x)
    print("numcodecs %s: %d fixture decodes, %d extra cases" % (numcodecs.__version__, nf, x.n))


if __name__ == "__main__":
    main()
