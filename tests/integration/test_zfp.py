#!/usr/bin/python3
"""The zfp codecs (src/codec/zfp.c) and the pcodec refusal, against other implementations.

* ZarrsFixtures: zarrs' test data (tests/fixtures/zarrs-test-data): v2/array_zfpy_C.zarr,
  v3/array_zfpy.zarr and v3_zarr_python/array_zfpy.zarr, written by zarr-python 3 with
  numcodecs' ZFPY(mode=4, tolerance=0.01) from the 10 x 10 float32 array 0..99 (zarrs'
  v2_generate.py / v3_generate.py): equal to that array within 0.01, and byte-equal to Debian's
  numcodecs 0.11 + python3-zfpy decoding the same chunks. The three pcodec arrays beside them
  (no library here) are listed with their size and fail to open with EOPNOTSUPP, logged once.
* ZfpyWrittenByZarrPython: zfpy arrays of every mode (fixed rate, fixed precision, fixed
  accuracy, reversible) in 1 to 4 dimensions, of float32, float64, int32 and int64, with edge
  chunks, written by zarr-python 2.13: every byte equals zarr-python's read.
* V3Zfp: v3 "zfp" arrays (zarr.json by the test) whose chunks the `zfp` command compressed
  (no header, as the registry's codec stores them): every mode, 1 to 4 dimensions, the four
  native types and int16/uint8 through zarrs' promotion; the expected values are what `zfp`
  decompresses (and demotes by zarrs' formula), fixed_rate with zarrs' parameters (zfp's rate
  for 3 dimensions whatever the chunk's: the command's expert mode with minbits = maxbits =
  floor(64 rate + 0.5), at least 9 bits for float32, 12 for float64).
* WrittenByZarrfs: with -o rw, zarrfs writes v2 zfpy arrays (read back by zarr-python 2.13 and
  byte-identical, chunk by chunk, to what zarr-python writes of the same data), v3
  "numcodecs.zfpy" chunks (decoded by numcodecs) and v3 "zfp" chunks (byte-identical to what
  the `zfp` command writes for the same chunk and parameters).
"""

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402

import numpy as np  # noqa: E402
import numcodecs  # noqa: E402
import zarr  # noqa: E402
from numcodecs.zfpy import ZFPY  # noqa: E402

ZARRS = os.path.join(zfmount.FIXTURES, "zarrs-test-data")
WORK = None

# zarrs' v2_generate.py / v3_generate.py: data = 0..99 as a 10 x 10 float32 array
ZARRS_DATA = np.arange(100, dtype=np.float32).reshape(10, 10)

SHAPES = {1: ((37,), (10,)), 2: ((9, 7), (4, 5)), 3: ((5, 6, 7), (3, 4, 5)),
          4: ((3, 4, 5, 6), (2, 3, 4, 5))}
TYPES = ("<f4", "<f8", "<i4", "<i8")
# numcodecs zfpy configurations: name -> ZFPY keyword arguments
ZFPY_MODES = {"rate": dict(mode=2, rate=12), "precision": dict(mode=3, precision=20),
              "accuracy": dict(mode=4, tolerance=1e-3), "reversible": dict(mode=4, tolerance=-1)}


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-zfp-")


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


def values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = np.sin(np.arange(n) * 0.37) * 100 + rng.normal(0, 1, n)
    else:
        hi = min(np.iinfo(dt).max, 1 << 40)
        x = np.cumsum(rng.integers(-1000, 1000, n)) + rng.integers(-hi // 4, hi // 4)
        x = np.clip(x, np.iinfo(dt).min, np.iinfo(dt).max)
    return x.astype(dt).reshape(shape)


def mount_read(m, name, dtype, shape):
    return np.frombuffer(zfmount.read_all(m.path(name)), dtype=dtype).reshape(shape)


def chunk_grid(shape, chunks):
    return [range((s + c - 1) // c) for s, c in zip(shape, chunks)]


def chunk_slices(idx, chunks, shape):
    return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))


# ---- the zfp command ----

ZTYPE = {"<f4": "f32", "<f8": "f64", "<i4": "i32", "<i8": "i64"}


def zfp_cmd(dtype, shape, params, raw, packed, out=None):
    """zfp -t TYPE -N dims (x fastest) PARAMS -i raw -z packed [-o out]: compress (and
    decompress) without a header."""
    dims = ["-%d" % len(shape)] + [str(n) for n in reversed(shape)]
    cmd = ["zfp", "-q", "-t", ZTYPE[dtype]] + dims + params + ["-i", raw, "-z", packed]
    if out:
        cmd += ["-o", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (cmd, r.stderr))


def zarrs_rate_bits(rate, dtype):
    """zarrs' fixed_rate: zfp_stream_set_rate(rate, type, 3, 0) = minbits = maxbits = bits."""
    bits = int(np.floor(64 * rate + 0.5))
    return max(bits, {"<f4": 9, "<f8": 12}.get(dtype, 0))


# v3 "zfp" configurations: name -> (configuration, zfp command parameters for dtype)
V3_MODES = {
    "reversible": ({"mode": "reversible"}, lambda dt: ["-R"]),
    "fixed_precision": ({"mode": "fixed_precision", "precision": 18}, lambda dt: ["-p", "18"]),
    "fixed_accuracy": ({"mode": "fixed_accuracy", "tolerance": 0.01}, lambda dt: ["-a", "0.01"]),
    "fixed_rate": ({"mode": "fixed_rate", "rate": 10.5},
                   lambda dt: ["-c", str(zarrs_rate_bits(10.5, dt)), str(zarrs_rate_bits(10.5, dt)),
                               "64", "-1074"]),
    "expert": ({"mode": "expert", "minbits": 1, "maxbits": 600, "maxprec": 19, "minexp": -2},
               lambda dt: ["-c", "1", "600", "19", "-2"]),
}


class ZarrsFixtures(zfmount.TestCase):
    def test_01_zfpy_arrays(self):
        cases = (("v2", "array_zfpy_C.zarr", "array_zfpy_C"),
                 ("v3", "array_zfpy.zarr", "array_zfpy"),
                 ("v3_zarr_python", "array_zfpy.zarr", "array_zfpy"))
        for sub, store, name in cases:
            path = os.path.join(ZARRS, sub, store)
            # numcodecs 0.11 + zfpy decoding the stored chunks
            if os.path.exists(os.path.join(path, ".zarray")):
                ref = zarr.open_array(path, mode="r")[...]
            else:
                ref = np.zeros((10, 10), np.float32)
                for i in range(2):
                    for j in range(2):
                        with open(os.path.join(path, "c", str(i), str(j)), "rb") as f:
                            ch = ZFPY().decode(f.read())
                        ref[i * 5:(i + 1) * 5, j * 5:(j + 1) * 5] = np.asarray(ch).reshape(5, 5)
            self.assertLessEqual(float(np.abs(ref - ZARRS_DATA).max()), 0.01)
            with self.subTest(store=sub + "/" + store), zfmount.Mount(path) as m:
                got = mount_read(m, name, "<f4", (10, 10))
                self.assertTrue(np.array_equal(got, ref), "%s: %s" % (store, got))
                self.assertLessEqual(float(np.abs(got - ZARRS_DATA).max()), 0.01)
        log("  zarrs' 3 zfpy arrays: numcodecs' decode exactly, 0..99 within 0.01")

    def test_02_pcodec_refused_at_open(self):
        cases = (("v2", "array_pcodec_C.zarr", "array_pcodec_C"),
                 ("v3", "array_pcodec.zarr", "array_pcodec"),
                 ("v3_zarr_python", "array_pcodec.zarr", "array_pcodec"))
        for sub, store, name in cases:
            with self.subTest(store=sub + "/" + store), \
                    zfmount.Mount(os.path.join(ZARRS, sub, store)) as m:
                self.assertEqual(os.listdir(m.mnt), [name])
                self.assertEqual(os.stat(m.path(name)).st_size, 400)
                for _ in range(3):
                    self.assertErrno(errno.EOPNOTSUPP, os.open, m.path(name), os.O_RDONLY)
                why = os.getxattr(m.path(name), "user.zarr.error").decode()
                self.assertIn("pcodec", why)
                self.assertIn("no library on this system provides it", why)
                self.assertEqual(os.getxattr(m.path(name), "user.zarr.dtype"), b"<f4")
                lines = [ln for ln in m.stderr_text().splitlines() if "cannot be opened" in ln]
                self.assertEqual(len(lines), 1, m.stderr_text())
        log("  zarrs' 3 pcodec arrays: listed (400 bytes), EOPNOTSUPP at open, one log line")


class ZfpyWrittenByZarrPython(zfmount.TestCase):
    def test_01_every_mode_dims_type(self):
        root = os.path.join(WORK, "zfpy_v2.zarr")
        g = zarr.open_group(root, mode="w")
        want = {}
        for mode, kw in ZFPY_MODES.items():
            for nd, (shape, chunks) in SHAPES.items():
                for k, dt in enumerate(TYPES):
                    name = "%s_%dd_%s" % (mode, nd, dt[1:])
                    z = g.create_dataset(name, shape=shape, chunks=chunks, dtype=dt,
                                         compressor=ZFPY(**kw), fill_value=0)
                    z[...] = values(dt, shape, nd * 10 + k)
                    want[name] = (dt, shape, zarr.open_array(os.path.join(root, name), mode="r")[...])
        with zfmount.Mount(root) as m:
            for name, (dt, shape, ref) in sorted(want.items()):
                with self.subTest(array=name):
                    self.assertBytesEqual(zfmount.read_all(m.path(name)), ref.tobytes(), name)
        log("  %d zfpy arrays of zarr-python 2.13 (4 modes x 1-4 dims x 4 types) equal its read"
            % len(want))


class Unsupported(zfmount.TestCase):
    def test_01_types_and_dimensions_zfp_does_not_take(self):
        """float16 (v2 zfpy, v3 zfp) and a 5-d chunk: listed with their size, reads EIO,
        user.zarr.error names the codec; a sibling reads."""
        root = os.path.join(WORK, "unsupported.zarr")
        files = {"zarr.json": c3.v3_group_doc(),
                 "f2/zarr.json": c3.v3_array_doc((8,), (8,), "float16",
                                                 [{"name": "zfp", "configuration":
                                                   {"mode": "reversible"}}]),
                 "d5/zarr.json": c3.v3_array_doc((2, 2, 2, 2, 2), (2, 2, 2, 2, 2), "float32",
                                                 [{"name": "zfp", "configuration":
                                                   {"mode": "reversible"}}]),
                 "good/zarr.json": c3.v3_array_doc((8,), (8,), "float32",
                                                   [{"name": "zfp", "configuration":
                                                     {"mode": "reversible"}}])}
        c3.write_files(root, files)
        v2 = os.path.join(WORK, "unsupported_v2.zarr")
        zarr.open_array(v2, mode="w", shape=(8,), chunks=(8,), dtype="<f2", compressor=None)
        with open(os.path.join(v2, ".zarray")) as f:
            doc = json.load(f)
        doc["compressor"] = {"id": "zfpy", "mode": 4, "tolerance": -1}
        with open(os.path.join(v2, ".zarray"), "w") as f:
            json.dump(doc, f)
        with zfmount.Mount(root) as m:
            self.assertUndecodable(m.path("f2"), 16, ["zfp", "<f2"])
            self.assertUndecodable(m.path("d5"), 128, ["zfp", "5 dimensions"])
            self.assertEqual(zfmount.read_all(m.path("good")), bytes(32))
        with zfmount.Mount(v2) as m:
            self.assertUndecodable(m.path("unsupported_v2"), 16, ["zfpy", "<f2"])
        log("  float16 and 5-d chunks: real size, EIO, user.zarr.error names zfp / zfpy")


class V3Zfp(zfmount.TestCase):
    def test_01_chunks_of_the_zfp_command(self):
        root = os.path.join(WORK, "zfp_v3.zarr")
        files = {"zarr.json": c3.v3_group_doc()}
        want = {}
        tmp = os.path.join(WORK, "cmd")
        os.makedirs(tmp, exist_ok=True)
        for mode, (cfg, params) in V3_MODES.items():
            for nd, (shape, chunks) in SHAPES.items():
                for k, dt in enumerate(TYPES + ("<i2", "|u1")):
                    if mode == "fixed_accuracy" and dt[1] != "f":
                        continue  # zarrs refuses fixed_accuracy for integers (so does zarrfs)
                    name = "%s_%dd_%s" % (mode, nd, dt[1:])
                    data = values(dt, shape, nd * 7 + k)
                    zdt = dt if dt in ZTYPE else "<i4"   # int16/uint8: promoted to int32
                    expect = np.zeros(shape, dt)
                    v3_type = {"<f4": "float32", "<f8": "float64", "<i4": "int32",
                               "<i8": "int64", "<i2": "int16", "|u1": "uint8"}[dt]
                    files[name + "/zarr.json"] = c3.v3_array_doc(
                        shape, chunks, v3_type, [{"name": "zfp", "configuration": cfg}])
                    for idx in np.ndindex(*[len(r) for r in chunk_grid(shape, chunks)]):
                        sl = chunk_slices(idx, chunks, shape)
                        chunk = np.zeros(chunks, dt)     # edge chunks padded with the fill value
                        chunk[tuple(slice(0, s.stop - s.start) for s in sl)] = data[sl]
                        c = chunk.astype(np.int64)
                        if dt == "<i2":                  # zarrs: int16 << 15
                            chunk = (c * (1 << 15)).astype("<i4")
                        elif dt == "|u1":                # zarrs: (uint8 - 0x80) << 23
                            chunk = ((c - 0x80) * (1 << 23)).astype("<i4")
                        raw, packed, out = (os.path.join(tmp, n) for n in ("raw", "zfp", "out"))
                        chunk.tofile(raw)
                        zfp_cmd(zdt, chunks, params(zdt), raw, packed, out)
                        dec = np.fromfile(out, zdt).reshape(chunks)
                        if dt == "<i2":                  # zarrs' demotion: >> 15, clamped
                            dec = np.clip(dec.astype(np.int64) >> 15, -0x8000, 0x7fff)
                        elif dt == "|u1":
                            dec = np.clip((dec.astype(np.int64) >> 23) + 0x80, 0, 0xff)
                        expect[sl] = dec.astype(dt)[tuple(slice(0, s.stop - s.start) for s in sl)]
                        with open(packed, "rb") as f:
                            files[name + "/" + c3.default_key(idx)] = f.read()
                    want[name] = (dt, shape, expect)
        c3.write_files(root, files)
        with zfmount.Mount(root) as m:
            for name, (dt, shape, exp) in sorted(want.items()):
                with self.subTest(array=name):
                    self.assertBytesEqual(zfmount.read_all(m.path(name)), exp.tobytes(), name)
        log("  %d v3 zfp arrays (5 modes x 1-4 dims x 6 types) equal the zfp command's "
            "decompression" % len(want))

    def test_02_sharded_and_aliases(self):
        """zfp inside sharding_indexed, and zarrs' other names for the codecs."""
        root = os.path.join(WORK, "zfp_v3_names.zarr")
        data = values("<f8", (8, 8), 5)
        tmp = os.path.join(WORK, "cmd2")
        os.makedirs(tmp, exist_ok=True)
        raw, packed = os.path.join(tmp, "raw"), os.path.join(tmp, "zfp")
        files = {"zarr.json": c3.v3_group_doc()}
        for name in ("zarrs.zfp", "https://codec.zarrs.dev/array_to_bytes/zfp"):
            key = name.replace("/", "_").replace(":", "")
            files[key + "/zarr.json"] = c3.v3_array_doc(
                (8, 8), (8, 8), "float64", [{"name": name, "configuration": {"mode": "reversible"}}])
            data.tofile(raw)
            zfp_cmd("<f8", (8, 8), ["-R"], raw, packed)
            with open(packed, "rb") as f:
                files[key + "/c/0/0"] = f.read()
        zname = "https://codec.zarrs.dev/array_to_bytes/zfpy"
        files["zfpy_url/zarr.json"] = c3.v3_array_doc(
            (8, 8), (8, 8), "float64", [{"name": zname, "configuration": {"mode": 4,
                                                                         "tolerance": -1}}])
        files["zfpy_url/c/0/0"] = ZFPY(mode=4, tolerance=-1).encode(data)
        # a shard of 2 x 2 inner chunks of 4 x 4, each a zfp stream, index at the end
        inner, offs = [], []
        pos = 0
        for i in range(2):
            for j in range(2):
                data[i * 4:(i + 1) * 4, j * 4:(j + 1) * 4].copy().tofile(raw)
                zfp_cmd("<f8", (4, 4), ["-R"], raw, packed)
                with open(packed, "rb") as f:
                    b = f.read()
                inner.append(b)
                offs.append((pos, len(b)))
                pos += len(b)
        index = b"".join(np.array(o, "<u8").tobytes() for o in offs)
        index += np.uint32(c3.crc32c(index)).astype("<u4").tobytes()
        files["sharded/zarr.json"] = c3.v3_array_doc((8, 8), (8, 8), "float64", [
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 4],
                "codecs": [{"name": "zfp", "configuration": {"mode": "reversible"}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}]}}])
        files["sharded/c/0/0"] = b"".join(inner) + index
        c3.write_files(root, files)
        with zfmount.Mount(root) as m:
            for name in sorted(os.listdir(m.mnt)):
                with self.subTest(array=name):
                    self.assertBytesEqual(zfmount.read_all(m.path(name)), data.tobytes(), name)
            self.assertEqual(len(os.listdir(m.mnt)), 4)
        log("  zarrs.zfp, the zarrs URLs of zfp and zfpy, zfp inside a shard: exact")


class WrittenByZarrfs(zfmount.TestCase):
    def test_01_v2_zfpy_read_by_zarr_python(self):
        root = os.path.join(WORK, "w_v2.zarr")
        twin = os.path.join(WORK, "w_v2_twin.zarr")
        g, t = zarr.open_group(root, mode="w"), zarr.open_group(twin, mode="w")
        data = {}
        for mode, kw in ZFPY_MODES.items():
            for nd in (1, 2, 3, 4):
                for k, dt in enumerate(TYPES):
                    shape, chunks = SHAPES[nd]
                    name = "%s_%dd_%s" % (mode, nd, dt[1:])
                    for grp in (g, t):
                        grp.create_dataset(name, shape=shape, chunks=chunks, dtype=dt,
                                           compressor=ZFPY(**kw), fill_value=0)
                    data[name] = values(dt, shape, 100 + nd * 10 + k)
                    t[name][...] = data[name]            # zarr-python's own write
        with zfmount.Mount(root, options=["rw"]) as m:
            for name, x in data.items():
                with open(m.path(name), "r+b") as f:
                    f.write(x.tobytes())
        for name, x in sorted(data.items()):
            with self.subTest(array=name):
                mine = zarr.open_array(os.path.join(root, name), mode="r")
                theirs = zarr.open_array(os.path.join(twin, name), mode="r")
                self.assertTrue(np.array_equal(mine[...], theirs[...]), name)
                if name.startswith("reversible"):
                    self.assertTrue(np.array_equal(mine[...], x), name)
                keys = sorted(k for k in os.listdir(os.path.join(twin, name)) if k[0] != ".")
                self.assertEqual(sorted(k for k in os.listdir(os.path.join(root, name))
                                        if k[0] != "."), keys)
                for key in keys:
                    with open(os.path.join(root, name, key), "rb") as a, \
                            open(os.path.join(twin, name, key), "rb") as b:
                        self.assertEqual(a.read(), b.read(), "%s/%s" % (name, key))
        log("  %d zfpy arrays written through -o rw: every chunk byte-identical to "
            "zarr-python's, its reads equal" % len(data))

    def test_02_v3_zfp_and_numcodecs_zfpy(self):
        root = os.path.join(WORK, "w_v3.zarr")
        files = {"zarr.json": c3.v3_group_doc()}
        data = {}
        for mode, (cfg, params) in V3_MODES.items():
            for nd in (1, 2, 3, 4):
                for k, dt in enumerate(TYPES):
                    if mode == "fixed_accuracy" and dt[1] != "f":
                        continue
                    shape, chunks = SHAPES[nd]
                    name = "zfp_%s_%dd_%s" % (mode, nd, dt[1:])
                    files[name + "/zarr.json"] = c3.v3_array_doc(
                        shape, chunks, {"<f4": "float32", "<f8": "float64", "<i4": "int32",
                                        "<i8": "int64"}[dt],
                        [{"name": "zfp", "configuration": cfg}])
                    data[name] = (values(dt, shape, 200 + nd * 10 + k), chunks, params(dt))
        for mode, kw in ZFPY_MODES.items():
            dt, (shape, chunks) = "<f8", SHAPES[3]
            name = "zfpy_" + mode
            cfg = dict(kw)
            files[name + "/zarr.json"] = c3.v3_array_doc(
                shape, chunks, "float64", [{"name": "numcodecs.zfpy", "configuration": cfg}])
            data[name] = (values(dt, shape, 300 + len(name)), chunks, kw)
        c3.write_files(root, files)
        with zfmount.Mount(root, options=["rw"]) as m:
            for name, (x, _c, _p) in data.items():
                with open(m.path(name), "r+b") as f:
                    f.write(x.tobytes())
        tmp = os.path.join(WORK, "cmd3")
        os.makedirs(tmp, exist_ok=True)
        raw, packed = os.path.join(tmp, "raw"), os.path.join(tmp, "zfp")
        for name, (x, chunks, params) in sorted(data.items()):
            with self.subTest(array=name):
                for idx in np.ndindex(*[len(r) for r in chunk_grid(x.shape, chunks)]):
                    sl = chunk_slices(idx, chunks, x.shape)
                    chunk = np.zeros(chunks, x.dtype)
                    chunk[tuple(slice(0, s.stop - s.start) for s in sl)] = x[sl]
                    with open(os.path.join(root, name, c3.default_key(idx)), "rb") as f:
                        stored = f.read()
                    if name.startswith("zfpy_"):    # numcodecs decodes it, and writes the same
                        back = np.asarray(ZFPY(**params).decode(stored)).reshape(chunks)
                        own = ZFPY(**params).encode(chunk)
                        self.assertEqual(stored, own, "%s %s" % (name, idx))
                        if name.endswith("reversible"):
                            self.assertTrue(np.array_equal(back, chunk))
                    else:                            # the zfp command writes the same stream
                        chunk.tofile(raw)
                        zfp_cmd(x.dtype.str, chunks, params, raw, packed)
                        with open(packed, "rb") as f:
                            self.assertEqual(stored, f.read(), "%s %s" % (name, idx))
        log("  %d v3 arrays written through -o rw: zfp chunks identical to the zfp command's, "
            "numcodecs.zfpy chunks to numcodecs'" % len(data))


if __name__ == "__main__":
    zfmount.main()
