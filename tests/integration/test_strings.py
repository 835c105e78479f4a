#!/usr/bin/python3
"""Arrays of variable-length strings read as text, one element per line (docs/formats.md
"Variable-length arrays as text"), checked against the writers' own readers:

* Debian's anndata 0.8: write_zarr of an AnnData with obs/var indexes, string and categorical
  columns whose values hold spaces, tabs, newlines, backslashes, non-ASCII and empty strings;
  every obs/var string file equals what anndata's read_zarr returns, in order;
* zarr-python 2.13: vlen-utf8 with None, multi-chunk arrays with missing chunks (fill values
  "", null and zarr-python's default 0), 2-D arrays in C and F order with chunks splitting both
  dimensions, a blosc and a zlib compressor; a malformed chunk is EIO and a log line, its
  neighbours still read;
* vlen-bytes (zarr-python 2.13; a v3 `bytes` array around a numcodecs chunk): every byte value
  0..255 alone and together, None, valid and broken UTF-8 equal an escaping computed here from
  zarr-python's read, and unescape back to those bytes;
* json2 and vlen-array (zarr-python 2.13): one compact JSON document per line whose json.loads
  equals the element zarr-python reads;
* sizes: 0 in `ls -l` until a first whole read, the exact size after; `cat`, `wc -l`, `cp`,
  Python and pandas read the whole text; writing is refused;
* every store: a zip archive (zarr's ZipStore), kerchunk references, nginx with the disk cache
  (the second mount served from it), s3rver;
* xarray (Debian's) to_zarr: a string coordinate and a 2-D string variable equal open_zarr's;
* 10^6 elements in 500 chunks, local and over HTTP: `ls -l` decodes no chunk, `wc -l` counts
  them all, and the daemon's peak memory stays within cache_size + 64 MiB for 100 MB of text.
"""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numcodecs  # noqa: E402
import zarr  # noqa: E402

WORK = None
ESC = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def text_of(values):
    """The text zarrfs must show: PostgreSQL COPY escaping, None as \\N, one line each."""
    out = []
    for v in values:
        out.append("\\N" if v is None else "".join(ESC.get(c, c) for c in str(v)))
    return "".join(s + "\n" for s in out)


def unescape(line):
    if line == "\\N":
        return None
    rev = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            out.append(rev[line[i + 1]])
            i += 2
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


NASTY = ["plain", "with space", "tab\there", "new\nline", "cr\rx", "back\\slash", "\\N",
         "", "caf\u00e9 \u65e5\u672c", "last"]


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zf-strings-")
    z2 = os.path.join(WORK, "z2.zarr")
    g = zarr.open_group(z2, mode="w")
    a = g.create_dataset("nasty", shape=(len(NASTY),), chunks=(3,), dtype=object,
                         object_codec=numcodecs.VLenUTF8())
    a[:] = np.array(NASTY, dtype=object)
    a = g.create_dataset("none", shape=(4,), chunks=(4,), dtype=object,
                         object_codec=numcodecs.VLenUTF8(), fill_value=None)
    a[:] = np.array(["x", None, "y", None], dtype=object)
    for fill in ("", None, 0):
        name = "missing_%s" % {"": "empty", None: "null", 0: "zero"}[fill]
        a = g.create_dataset(name, shape=(9,), chunks=(2,), dtype=object,
                             object_codec=numcodecs.VLenUTF8(), fill_value=fill)
        a[2:5] = np.array(["c", "d", "e"], dtype=object)
    vals = np.array([["r%dc%d%s" % (i, j, "\t" * (i % 2)) for j in range(7)] for i in range(5)],
                    dtype=object)
    for order in "CF":
        for comp in (None, numcodecs.Blosc(cname="lz4"), numcodecs.Zlib(level=1)):
            name = "m%s_%s" % (order, comp.codec_id if comp else "raw")
            a = g.create_dataset(name, shape=vals.shape, chunks=(2, 3), dtype=object,
                                 object_codec=numcodecs.VLenUTF8(), order=order, compressor=comp)
            a[:] = vals
    a = g.create_dataset("corrupt", shape=(6,), chunks=(2,), dtype=object,
                         object_codec=numcodecs.VLenUTF8(), compressor=None)
    a[:] = np.array(list("abcdef"), dtype=object)
    with open(os.path.join(z2, "corrupt", "1"), "r+b") as f:  # element length past the end
        f.seek(4)
        f.write((1000).to_bytes(4, "little"))
    big = g.create_dataset("big", shape=(20000,), chunks=(512,), dtype=object,
                           object_codec=numcodecs.VLenUTF8(), compressor=numcodecs.Zstd())
    big[:] = np.array(["cell_%06d" % i for i in range(20000)], dtype=object)


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


class ZarrPython(zfmount.TestCase):
    def test_01_values_equal_zarr_python(self):
        store = os.path.join(WORK, "z2.zarr")
        names = [n for n in sorted(os.listdir(store)) if n not in (".zgroup", "corrupt")]
        with zfmount.Mount(store) as m:
            for name in names:
                with self.subTest(array=name):
                    z = zarr.open_array(os.path.join(store, name), mode="r")
                    want = text_of(z[...].ravel(order="C"))
                    self.assertEqual(os.stat(m.path(name)).st_size, 0, "size before a read")
                    got = zfmount.read_all(m.path(name)).decode("utf-8")
                    self.assertEqual(got, want)
                    self.assertEqual(os.stat(m.path(name)).st_size, len(want.encode()),
                                     "exact size once read")
                    self.assertEqual([unescape(x) for x in got.splitlines()],
                                     [None if v is None else str(v)
                                      for v in z[...].ravel(order="C")])
            log("  %d zarr-python 2.13 string arrays equal, sizes 0 then exact" % len(names))

    def test_02_shell_tools_and_pandas(self):
        import pandas
        store = os.path.join(WORK, "z2.zarr")
        with zfmount.Mount(store) as m:
            p = m.path("big")
            wc = subprocess.run(["wc", "-l", p], capture_output=True, text=True, check=True)
            self.assertEqual(int(wc.stdout.split()[0]), 20000)
            out = os.path.join(WORK, "big.txt")
            subprocess.run(["cp", m.path("nasty"), out], check=True)
            with open(out) as f:
                self.assertEqual(f.read(), text_of(NASTY))
            cat = subprocess.run(["cat", p], capture_output=True, check=True).stdout
            self.assertEqual(cat.decode().splitlines()[12345], "cell_012345")
            df = pandas.read_csv(p, header=None, sep="\t", quoting=3, na_values=["\\N"],
                                 keep_default_na=False)
            self.assertEqual(list(df[0]), ["cell_%06d" % i for i in range(20000)])
            sh = subprocess.run(
                "grep -c '^cell_0123' %s; sort -r %s | head -n 1; cut -c6-8 %s | head -n 3 | "
                "tr '\\n' ,; paste %s %s | head -n 2" % (p, p, p, p, m.path("nasty")),
                shell=True, capture_output=True, text=True, check=True,
                timeout=zfmount.CMD_TIMEOUT).stdout.split("\n")
            self.assertEqual(sh[0], "100")  # cell_012300 .. cell_012399
            self.assertEqual(sh[1], "cell_019999")
            self.assertEqual(sh[2], "000,000,000,cell_000000\tplain")
            self.assertEqual(sh[3], "cell_000001\twith space")
            # a reader at offset N, after the size is known: pread in the middle
            fd = os.open(p, os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fd, 11, 12 * 777), b"cell_000777")
            finally:
                os.close(fd)
            self.assertErrno(errno.EROFS, os.open, p, os.O_WRONLY)
            log("  wc -l, cp, cat, grep, sort, cut, paste, pandas.read_csv and pread read the "
                "whole text")

    def test_03_corrupt_chunk_eio(self):
        store = os.path.join(WORK, "z2.zarr")
        with zfmount.Mount(store) as m:
            self.assertErrno(errno.EIO, zfmount.read_all, m.path("corrupt"))
            self.assertIn("vlen-utf8", m.stderr_text())
            fd = os.open(m.path("corrupt"), os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fd, 4, 0), b"a\nb\n")  # chunk 0 still reads
            finally:
                os.close(fd)
            self.assertTrue(m.alive())

    def test_04_rw_mount_refuses_writes(self):
        store = os.path.join(WORK, "z2.zarr")
        with zfmount.Mount(store, options=["rw"]) as m:
            self.assertErrno(errno.EACCES, os.open, m.path("nasty"), os.O_WRONLY)
            self.assertEqual(zfmount.read_all(m.path("nasty")).decode(), text_of(NASTY))

    def test_06_sidecars_skip_string_arrays(self):
        """-o sidecars: a numeric array gets its headers, a string array beside it none (a
        header cannot describe lines of text); looking one up is ENOENT."""
        path = os.path.join(WORK, "sidecars.zarr")
        g = zarr.open_group(path, mode="w")
        g.create_dataset("num", shape=(4, 3), chunks=(2, 3), dtype="<i4")[:] = 7
        s = g.create_dataset("s", shape=(3,), chunks=(2,), dtype=object,
                             object_codec=numcodecs.VLenUTF8())
        s[:] = np.array(["a", "b", "c"], dtype=object)
        with zfmount.Mount(path, options=["sidecars"]) as m:
            names = set(os.listdir(m.mnt))
            self.assertIn("num.npy", names)
            self.assertFalse([n for n in names if n.startswith("s.")], names)
            for ext in ("hdr", "mhd", "nhdr", "npy"):
                self.assertErrno(errno.ENOENT, os.stat, m.path("s." + ext))
            self.assertEqual(zfmount.read_all(m.path("s")), b"a\nb\nc\n")

    def test_05_rw_mount_creates_no_string_arrays(self):
        """On -o rw: a string array opened read-write or truncated is EACCES; creating one
        through user.zarr.metadata (v2 |O + vlen-utf8, v3 string) is EINVAL, a log line naming
        the data type, and nothing stored."""
        tmp = tempfile.mkdtemp(prefix="zf-strings-rw-", dir=WORK)
        v2 = os.path.join(tmp, "v2.zarr")
        g = zarr.open_group(v2, mode="w")
        a = g.create_dataset("s", shape=(3,), chunks=(2,), dtype=object,
                             object_codec=numcodecs.VLenUTF8())
        a[:] = np.array(["a", "b", "c"], dtype=object)
        v3 = os.path.join(tmp, "v3.zarr")
        os.makedirs(v3)
        with open(os.path.join(v3, "zarr.json"), "w") as f:
            f.write('{"zarr_format": 3, "node_type": "group", "attributes": {}}')
        docs = {
            v2: {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O",
                 "compressor": None, "fill_value": None, "order": "C",
                 "filters": [{"id": "vlen-utf8"}]},
            v3: {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "string",
                 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
                 "chunk_key_encoding": {"name": "default"}, "fill_value": "",
                 "codecs": [{"name": "vlen-utf8"}]},
        }
        for store, doc in docs.items():
            with self.subTest(store=os.path.basename(store)), \
                    zfmount.Mount(store, options=["rw"]) as m:
                if store == v2:
                    self.assertErrno(errno.EACCES, os.open, m.path("s"), os.O_RDWR)
                    self.assertErrno(errno.EACCES, os.truncate, m.path("s"), 0)
                    self.assertEqual(zfmount.read_all(m.path("s")), b"a\nb\nc\n")
                p = m.path("new")
                open(p, "wb").close()
                self.assertErrno(errno.EINVAL, os.setxattr, p, "user.zarr.metadata",
                                 json.dumps(doc).encode())
                self.assertIn("variable-length data type", m.stderr_text())
                self.assertFalse(os.path.exists(os.path.join(store, "new", ".zarray")))
                self.assertFalse(os.path.exists(os.path.join(store, "new", "zarr.json")))
                self.assertTrue(m.alive())
        self.assertEqual(list(zarr.open_array(os.path.join(v2, "s"), mode="r")[:]),
                         ["a", "b", "c"])
        log("  rw: EACCES for open O_RDWR and truncate; user.zarr.metadata of a v2 |O and a v3 "
            "string array EINVAL, logged, nothing stored")


def bytes_line(b):
    """The line zarrfs must show for byte string b (docs/formats.md, vlen-bytes), computed apart
    from zarrfs: Python's strict UTF-8 decoder decides what is valid; bytes it cannot decode,
    C0/C1 controls, DEL, U+2028 and U+2029 are \\xHH; backslash, newline, CR, tab as for
    strings."""
    out = []
    for ch in b.decode("utf-8", errors="surrogateescape"):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:  # a byte outside valid UTF-8
            out.append("\\x%02x" % (o - 0xDC00))
        elif ch in ESC:
            out.append(ESC[ch])
        elif o < 0x20 or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029):
            out.append("".join("\\x%02x" % x for x in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def unescape_bytes(line):
    """A vlen-bytes line back to its bytes (None for \\N)."""
    if line == "\\N":
        return None
    rev = {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}
    out, i = bytearray(), 0
    while i < len(line):
        if line[i] == "\\" and line[i + 1] == "x":
            out.append(int(line[i + 2:i + 4], 16))
            i += 4
        elif line[i] == "\\":
            out += rev[line[i + 1]]
            i += 2
        else:
            out += line[i].encode("utf-8")
            i += 1
    return bytes(out)


BYTES = [bytes([i]) for i in range(256)] + [
    None, b"", b"caf\xc3\xa9", b"\xc2\x85", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xe2\x80\xa7", b"\xed\xa0\x80",
    b"\xc0\x80", b"\xf0\x9f\x98\x80", b"\xe6\x97a", b"\xf4\x90\x80\x80", b"a\\b\nc\r\td",
    b"\\N", b"\\x41", bytes(range(256))]


class VlenBytes(zfmount.TestCase):
    """vlen-bytes (v2 |O, numcodecs VLenBytes; v3 `bytes`): zarr-python 2.13 writes every byte
    value 0..255 alone and all together, None, UTF-8 and broken UTF-8; each file equals the
    escaping computed here from zarr-python's own read, and its lines unescape to those bytes."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.store = os.path.join(WORK, "bytes.zarr")
        g = zarr.open_group(cls.store, mode="w")
        a = g.create_dataset("all", shape=(len(BYTES),), chunks=(50,), dtype=object,
                             object_codec=numcodecs.VLenBytes(), compressor=numcodecs.Zlib())
        a[:] = np.array(BYTES, dtype=object)
        for fill in (None, 0):
            a = g.create_dataset("missing_%s" % fill, shape=(7,), chunks=(2,), dtype=object,
                                 object_codec=numcodecs.VLenBytes(), fill_value=fill)
            a[2:4] = np.array([b"\x00\xff", b"x"], dtype=object)
        a = g.create_dataset("m2", shape=(16, 16), chunks=(5, 3), dtype=object,
                             object_codec=numcodecs.VLenBytes(), order="F")
        a[:] = np.array(BYTES[:256], dtype=object).reshape(16, 16)
        # v3 `bytes` (zarr-extensions): zarr-python 2.13 writes no v3, so its chunk is numcodecs'
        cls.v3 = os.path.join(WORK, "bytes3.zarr")
        os.makedirs(os.path.join(cls.v3, "b", "c"))
        with open(os.path.join(cls.v3, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
        with open(os.path.join(cls.v3, "b", "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "bytes",
                       "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
                       "chunk_key_encoding": {"name": "default"}, "fill_value": "",
                       "codecs": [{"name": "vlen-bytes"}]}, f)
        cls.v3vals = [b"\x00a", b"\xff", b"\xc3\xa9\n"]
        with open(os.path.join(cls.v3, "b", "c", "0"), "wb") as f:
            f.write(numcodecs.VLenBytes().encode(np.array(cls.v3vals, dtype=object)))

    def test_01_every_byte_equals_zarr_python(self):
        with zfmount.Mount(self.store) as m:
            for name in ("all", "missing_None", "missing_0", "m2"):
                with self.subTest(array=name):
                    z = zarr.open_array(os.path.join(self.store, name), mode="r")
                    vals = list(z[...].ravel(order="C"))
                    want = "".join(("\\N" if v is None else str(v) if isinstance(v, int)
                                    else bytes_line(v)) + "\n" for v in vals)
                    raw = zfmount.read_all(m.path(name))
                    got = raw.decode("utf-8")  # valid UTF-8 whatever the bytes
                    self.assertEqual(got, want)
                    self.assertEqual(len(got.splitlines()), len(vals))
                    back = [unescape_bytes(x) for x in got.splitlines()]
                    self.assertEqual(back, [v if not isinstance(v, int) else str(v).encode()
                                            for v in vals])
            self.assertIn(b"vlen-bytes", os.getxattr(m.path("all"), "user.zarr.text"))
            self.assertIn(b"xHH", os.getxattr(m.path("all"), "user.zarr.text"))
            # what the escaping does to a few, spelled out
            lines = zfmount.read_all(m.path("all")).decode().splitlines()
            self.assertEqual(lines[0], "\\x00")
            self.assertEqual(lines[ord("\\")], "\\\\")
            self.assertEqual(lines[ord("A")], "A")
            self.assertEqual(lines[0x7F], "\\x7f")
            self.assertEqual(lines[0xE9], "\\xe9")
            self.assertEqual(lines[256], "")  # None inside a chunk: numcodecs stores b""
            self.assertEqual(lines[258:261], ["caf\u00e9", "\\xc2\\x85", "\u00a0"])
        log("  vlen-bytes: bytes 0..255, None, UTF-8 and broken UTF-8 equal zarr-python 2.13's read")

    def test_02_v3_bytes(self):
        with zfmount.Mount(self.v3) as m:
            got = zfmount.read_all(m.path("b")).decode()
            self.assertEqual(got.splitlines(),
                             [bytes_line(v) for v in self.v3vals] + ["", ""])
            self.assertEqual([unescape_bytes(x) for x in got.splitlines()[:3]], self.v3vals)

    def test_03_malformed_chunk_eio(self):
        path = os.path.join(WORK, "bytes_bad.zarr")
        g = zarr.open_group(path, mode="w")
        a = g.create_dataset("x", shape=(4,), chunks=(2,), dtype=object, compressor=None,
                             object_codec=numcodecs.VLenBytes())
        a[:] = np.array([b"a", b"b", b"c", b"d"], dtype=object)
        with open(os.path.join(path, "x", "1"), "r+b") as f:
            f.write((-1).to_bytes(4, "little", signed=True))  # negative count
        with zfmount.Mount(path) as m:
            self.assertErrno(errno.EIO, zfmount.read_all, m.path("x"))
            self.assertIn("vlen-bytes", m.stderr_text())
            self.assertTrue(m.alive())


def same_json(a, b):
    """Equal as JSON values, NaN equal to NaN (what json.loads of Python's NaN token gives)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class JsonLines(zfmount.TestCase):
    """json2 and vlen-array object arrays (zarr-python 2.13): one compact JSON document per line,
    C order; json.loads of each line equals the element zarr-python reads (a vlen-array element
    as its list of values), missing chunks their fill value; a malformed chunk is EIO."""

    ELEMS = [None, 1, -2.5, float("nan"), "a\nb\tc", "caf\u00e9 \u2028 \u2029", True,
             {"k": [1, 2.5, None]}, [1, [2, "x"]], "", {}, []]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.store = os.path.join(WORK, "jsonl.zarr")
        g = zarr.open_group(cls.store, mode="w")
        a = g.create_dataset("j1", shape=(len(cls.ELEMS),), chunks=(5,), dtype=object,
                             object_codec=numcodecs.JSON(), fill_value=None)
        v = np.empty(len(cls.ELEMS), dtype=object)
        v[:] = cls.ELEMS
        a[:] = v
        a = g.create_dataset("j2", shape=(5, 4), chunks=(2, 3), dtype=object,
                             object_codec=numcodecs.JSON(), compressor=numcodecs.Zlib(1),
                             fill_value=0)
        v = np.empty((5, 4), dtype=object)
        for i in range(5):
            for j in range(4):
                v[i, j] = {"i": i, "j": [j] * j} if (i + j) % 3 else "s%d%d" % (i, j)
        a[:4, :] = v[:4, :]  # row 4 lies in chunks (2, *) never written: the fill value 0
        for name, dt in (("va_i4", "<i4"), ("va_f8", "<f8"), ("va_u2be", ">u2")):
            a = g.create_dataset(name, shape=(6,), chunks=(4,), dtype=object,
                                 object_codec=numcodecs.VLenArray(dt))
            vals = [np.array([1, 2, 3]), np.array([]), np.array([7]),
                    np.array([0.5, float("nan"), -1e300]) if dt == "<f8" else np.array([65535]),
                    np.arange(10)]
            v = np.empty(6, dtype=object)
            v[:5] = [x.astype(dt) for x in vals]
            v[5] = np.array([], dtype=dt)
            a[:5] = v[:5]
        # msgpack2 (numcodecs MsgPack): the json2 elements, floats Python writes in many forms,
        # bytes; float32 packing too (use_single_float). (Maps with keys other than strings: Python
        # msgpack will not unpack them, strict_map_key.)
        cls.MSG = cls.ELEMS + [1.0, 1e16, 1.5e-5, 0.1, -0.0, 123456789.125, float("inf"),
                               2 ** 64 - 1, -2 ** 63,
                               b"\x00\xffok", {"b": b"\n"}]
        for name, single in (("mp", False), ("mp_single", True)):
            a = g.create_dataset(name, shape=(len(cls.MSG) + 3,), chunks=(7,), dtype=object,
                                 object_codec=numcodecs.MsgPack(use_single_float=single),
                                 fill_value=None)
            v = np.empty(len(cls.MSG), dtype=object)
            v[:] = cls.MSG
            a[:len(cls.MSG)] = v
        a = g.create_dataset("mp2", shape=(3, 4), chunks=(2, 3), dtype=object,
                             object_codec=numcodecs.MsgPack(), compressor=numcodecs.Zstd())
        v = np.empty((3, 4), dtype=object)
        v[:] = [["r%dc%d" % (i, j) if j % 2 else [i, j] for j in range(4)] for i in range(3)]
        a[:] = v

    def msgpack_line(self, v):
        """The line zarrfs must show for element v: Python's compact JSON (floats by repr), bytes
        as the string of their vlen-bytes line, map keys as json.dumps makes them."""
        def conv(x):
            if isinstance(x, bytes):
                return bytes_line(x)
            if isinstance(x, list):
                return [conv(y) for y in x]
            if isinstance(x, dict):
                return {k: conv(y) for k, y in x.items()}
            return x
        return json.dumps(conv(v), separators=(",", ":"), ensure_ascii=False) \
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")

    def test_04_msgpack2_equals_python(self):
        with zfmount.Mount(self.store) as m:
            for name in ("mp", "mp_single", "mp2"):
                with self.subTest(array=name):
                    z = zarr.open_array(os.path.join(self.store, name), mode="r")
                    want = [self.msgpack_line(x) for x in z[...].ravel(order="C")]
                    got = zfmount.read_all(m.path(name)).decode("utf-8")
                    self.assertTrue(got.endswith("\n"))
                    self.assertEqual(got[:-1].split("\n"), want)
            self.assertIn(b"msgpack2", os.getxattr(m.path("mp"), "user.zarr.text"))
        log("  msgpack2: %d elements (floats as repr, bytes, map keys), float32, 2-D equal "
            "Python's JSON of zarr-python's read" % len(self.MSG))

    def check(self, m, name):
        z = zarr.open_array(os.path.join(self.store, name), mode="r")
        want = list(z[...].ravel(order="C"))
        text = zfmount.read_all(m.path(name)).decode("utf-8")
        self.assertTrue(text.endswith("\n"))
        lines = text.splitlines()
        self.assertEqual(len(lines), len(want), "one line per element (splitlines)")
        for k, (line, w) in enumerate(zip(lines, want)):
            w = w.tolist() if isinstance(w, np.ndarray) else w
            self.assertTrue(same_json(json.loads(line), w), "%s[%d]: %r, zarr-python %r"
                            % (name, k, line, w))
        self.assertNotIn(" ", "".join(l for l in lines if not l.startswith('"')),
                         "compact JSON")

    def test_01_json2_equals_zarr_python(self):
        with zfmount.Mount(self.store) as m:
            for name in ("j1", "j2"):
                with self.subTest(array=name):
                    self.check(m, name)
            self.assertIn(b"json2", os.getxattr(m.path("j1"), "user.zarr.text"))
        log("  json2: %d elements and a 2-D array with a missing chunk equal zarr-python's read"
            % len(self.ELEMS))

    def test_02_vlen_array_equals_zarr_python(self):
        with zfmount.Mount(self.store) as m:
            for name in ("va_i4", "va_f8", "va_u2be"):
                with self.subTest(array=name):
                    self.check(m, name)

    def test_03_malformed_chunks_eio(self):
        path = os.path.join(WORK, "jsonl_bad.zarr")
        g = zarr.open_group(path, mode="w")
        a = g.create_dataset("j", shape=(4,), chunks=(2,), dtype=object, compressor=None,
                             object_codec=numcodecs.JSON())
        a[:] = np.array(["a", "b", "c", "d"], dtype=object)
        b = g.create_dataset("v", shape=(4,), chunks=(2,), dtype=object, compressor=None,
                             object_codec=numcodecs.VLenArray("<i4"))
        b[:] = np.array([np.arange(2, dtype="<i4")] * 4 + [None], dtype=object)[:4]
        with open(os.path.join(path, "j", "1"), "wb") as f:
            f.write(b'["c","d","e","|O",[2]]')  # three elements for a chunk of two
        with open(os.path.join(path, "v", "1"), "r+b") as f:
            f.seek(4)
            f.write((7).to_bytes(4, "little"))  # 7 bytes: not a whole number of int32
        c = g.create_dataset("m", shape=(4,), chunks=(2,), dtype=object, compressor=None,
                             object_codec=numcodecs.MsgPack())
        c[:] = np.array(["a", "b", "c", "d"], dtype=object)
        with open(os.path.join(path, "m", "1"), "wb") as f:  # an array of 2^32 - 1 elements
            f.write(b"\xdd\xff\xff\xff\xff\xa1c")
        with zfmount.Mount(path) as m:
            for name, codec in (("j", "json2"), ("v", "vlen-array"), ("m", "msgpack2")):
                self.assertErrno(errno.EIO, zfmount.read_all, m.path(name))
                self.assertIn(codec, m.stderr_text())
            self.assertTrue(m.alive())


class AnnData(zfmount.TestCase):
    def test_01_obs_var_equal_read_zarr(self):
        import anndata
        import pandas as pd
        n_obs, n_var = 40, 6
        obs = pd.DataFrame({
            "batch": pd.Categorical([["b 1", "b\t2", "b\n3", "\u00e9", ""][i % 5]
                                     for i in range(n_obs)]),
            "note": [NASTY[i % len(NASTY)] for i in range(n_obs)],
        }, index=["cell_%d%s" % (i, " x" if i % 7 == 0 else "") for i in range(n_obs)])
        var = pd.DataFrame({"symbol": ["G\\%d" % i for i in range(n_var)]},
                           index=["gene-%d" % i for i in range(n_var)])
        ad = anndata.AnnData(X=np.arange(n_obs * n_var, dtype="f4").reshape(n_obs, n_var),
                             obs=obs, var=var)
        path = os.path.join(WORK, "ad.zarr")
        ad.write_zarr(path)
        back = anndata.read_zarr(path)
        want = {"obs/_index": list(back.obs.index), "var/_index": list(back.var.index)}
        for side, df in (("obs", back.obs), ("var", back.var)):
            for col in df.columns:  # anndata stores string columns as categoricals
                if isinstance(df[col].dtype, pd.CategoricalDtype):
                    want["%s/%s/categories" % (side, col)] = list(df[col].cat.categories)
                else:
                    want["%s/%s" % (side, col)] = list(df[col])
        with zfmount.Mount(path) as m:
            for rel, values in want.items():
                if not os.path.exists(m.path(rel)):  # anndata 0.7 layout: obs/__categories
                    continue
                with self.subTest(file=rel):
                    with open(m.path(rel)) as f:
                        lines = f.read().splitlines()
                    self.assertEqual([unescape(x) for x in lines], values)
            checked = [r for r in want if os.path.exists(m.path(r))]
            self.assertIn("obs/_index", checked)
            self.assertIn("obs/batch/categories", checked)
            paste = subprocess.run(["wc", "-l", m.path("obs/_index")], capture_output=True,
                                   text=True, check=True)
            self.assertEqual(int(paste.stdout.split()[0]), n_obs)
            log("  anndata %s: %s equal to read_zarr" % (anndata.__version__, ", ".join(checked)))


STORE_ARRAYS = ["nasty", "none", "missing_empty", "mC_blosc", "mF_zlib", "big"]


class Stores(zfmount.TestCase):
    """The same vlen-utf8 arrays (zarr-python 2.13) from every store: a zip archive (zarr's
    ZipStore), a kerchunk reference file (version 1, inline metadata, chunks by path), nginx
    with the disk cache (a first and a second mount, the second from the cache), s3rver. Each
    text equals zarr-python's read of the directory."""

    @classmethod
    def setUpClass(cls):
        cls.src = os.path.join(WORK, "z2.zarr")
        cls.want = {n: text_of(zarr.open_array(os.path.join(cls.src, n), mode="r")[...]
                               .ravel(order="C")) for n in STORE_ARRAYS}

    def check(self, m, where):
        for name in STORE_ARRAYS:
            with self.subTest(store=where, array=name):
                with open(m.path(name), encoding="utf-8", newline="") as f:
                    self.assertEqual(f.read(), self.want[name])
        log("  %s: %d string arrays equal zarr-python's" % (where, len(STORE_ARRAYS)))

    def test_01_zip(self):
        path = os.path.join(WORK, "z2.zip")
        zs = zarr.ZipStore(path, mode="w")
        zarr.copy_store(zarr.DirectoryStore(self.src), zs)
        zs.close()
        with zfmount.Mount(path) as m:
            self.check(m, "zip")

    def test_02_references(self):
        refs = {}
        for root, _dirs, files in os.walk(self.src):
            for f in files:
                p = os.path.join(root, f)
                key = os.path.relpath(p, self.src)
                if key.split("/")[0] not in STORE_ARRAYS + [".zgroup"]:
                    continue
                if f.startswith("."):
                    with open(p) as fh:
                        refs[key] = fh.read()
                else:
                    refs[key] = [p]
        path = os.path.join(WORK, "z2.refs.json")
        with open(path, "w") as f:
            json.dump({"version": 1, "refs": refs}, f)
        with zfmount.Mount(path) as m:
            self.check(m, "references")

    def test_03_http_disk_cache(self):
        import remote_servers as rs
        cache = os.path.join(WORK, "dcache")
        with rs.Nginx(WORK, autoindex=True) as ng:
            for run in ("first", "second"):
                with zfmount.Mount(ng.url("z2.zarr"), options=["disk_cache=" + cache]) as m:
                    self.check(m, "HTTP + disk cache, %s mount" % run)
                    if run == "second":
                        with open(m.path(".zarrfs-stats")) as f:
                            dc = json.load(f).get("disk_cache", {})
                        self.assertGreater(dc.get("hits", 0), 0, dc)

    def test_04_s3(self):
        import remote_servers as rs
        with rs.S3rver(["strings"]) as s3:
            s3.client().upload_tree(self.src, "strings", "z2.zarr")
            with rs.aws_env(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"):
                with zfmount.Mount("s3://strings/z2.zarr",
                                   options=["endpoint=" + s3.endpoint(),
                                            "region=us-east-1"]) as m:
                    self.check(m, "S3 (s3rver)")


def write_v3_string_array(root, name, data_type, codec, shape, chunks, values, fill="",
                          missing=()):
    """A v3 array of variable-length elements as the v3 spec and the zarr-extensions registry
    define it (data type `string`/`bytes`, the vlen codec, zstd), each chunk numcodecs' encoding
    (the vlen-utf8 and vlen-bytes formats are numcodecs'); chunks in `missing` not written."""
    import itertools
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "array", "shape": list(shape),
                   "data_type": data_type,
                   "chunk_grid": {"name": "regular",
                                  "configuration": {"chunk_shape": list(chunks)}},
                   "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                   "fill_value": fill,
                   "codecs": [{"name": codec},
                              {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]},
                  f)
    arr = np.array(values, dtype=object).reshape(shape)
    enc = numcodecs.VLenBytes() if data_type in ("bytes", "variable_length_bytes") \
        else numcodecs.VLenUTF8()
    grid = [range(-(-s // c)) for s, c in zip(shape, chunks)]
    for idx in itertools.product(*grid):
        if idx in missing:
            continue
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks))
        block = np.full(chunks, fill.encode() if enc.codec_id == "vlen-bytes" else fill,
                        dtype=object)
        part = arr[sl]
        block[tuple(slice(0, n) for n in part.shape)] = part
        p = os.path.join(d, "c", *map(str, idx))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(numcodecs.Zstd(level=1).encode(enc.encode(block.ravel(order="C"))))
    return arr


class V3Strings(zfmount.TestCase):
    """v3 `string` (and zarr-python 3.1's `variable_length_utf8`) with vlen-utf8 + zstd, 1-D
    with a missing chunk and 2-D with edge chunks; zarrs' names for the vlen codecs
    (https://codec.zarrs.dev/array_to_bytes/vlen_utf8, .../vlen_bytes). The expected text is
    computed here from the values."""

    def test_01_v3_string_arrays(self):
        root = os.path.join(WORK, "v3strings.zarr")
        os.makedirs(root)
        with open(os.path.join(root, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
        vals = NASTY + ["eleven", "twelve"]
        want = {}
        a = write_v3_string_array(root, "s", "string", "vlen-utf8", (12,), (4,), vals,
                                  missing={(1,)})
        a[4:8] = ""
        want["s"] = text_of(a.ravel())
        a = write_v3_string_array(root, "s2", "variable_length_utf8", "vlen-utf8", (3, 4),
                                  (2, 3), vals)
        want["s2"] = text_of(a.ravel())
        a = write_v3_string_array(root, "zs", "string",
                                  "https://codec.zarrs.dev/array_to_bytes/vlen_utf8", (5,), (2,),
                                  vals[:5])
        want["zs"] = text_of(a.ravel())
        bvals = [b"\x00a", b"plain", b"\xff\xfe", b"tab\t"]
        write_v3_string_array(root, "zb", "bytes",
                              "https://codec.zarrs.dev/array_to_bytes/vlen_bytes", (4,), (3,),
                              bvals)
        want["zb"] = "".join(bytes_line(v) + "\n" for v in bvals)
        with zfmount.Mount(root) as m:
            for name, text in want.items():
                with self.subTest(array=name):
                    with open(m.path(name), encoding="utf-8", newline="") as f:
                        self.assertEqual(f.read(), text)
        log("  v3 string / variable_length_utf8 / zarrs' vlen names: %d arrays" % len(want))


class ZarrsData(zfmount.TestCase):
    """zarrs' own test data (tests/fixtures/zarrs-test-data): v3/cities.zarr, 47,868 names, equals
    the cities.csv it was written from; zarr-python 3.0.1's v2 string arrays with fill values 0
    and null (a missing chunk) equal zarr-python 2.13's read."""

    def test_01_cities_and_fill_values(self):
        import pandas
        root = os.path.join(zfmount.FIXTURES, "zarrs-test-data")
        cities = list(pandas.read_csv(os.path.join(root, "cities.csv"), header=None,
                                      keep_default_na=False)[0])
        self.assertEqual(len(cities), 47868)
        with zfmount.Mount(os.path.join(root, "v3", "cities.zarr")) as m:
            with open(m.path("cities"), encoding="utf-8", newline="") as f:  # a root array
                self.assertEqual(f.read(), text_of(cities))
        for name in ("str_v2_fv_0.zarr", "str_v2_fv_null.zarr"):
            path = os.path.join(root, "zarr_python_compat", name)
            want = text_of(zarr.open_array(path, mode="r")[...])
            with self.subTest(array=name), zfmount.Mount(path) as m:
                with open(m.path(name[:-len(".zarr")]), encoding="utf-8", newline="") as f:
                    self.assertEqual(f.read(), want)
        log("  zarrs' cities.zarr (%d names) and zarr-python 3's v2 fill values" % len(cities))


class Xarray(zfmount.TestCase):
    def test_01_to_zarr_string_coordinate_and_2d_variable(self):
        """xarray's to_zarr: object strings become |O + vlen-utf8 (text through the mount), a
        list of str a fixed-size <U array (its raw UTF-32 layout, as before)."""
        import xarray as xr
        vals = np.array([[NASTY[(i * 3 + j) % len(NASTY)] for j in range(3)] for i in range(4)],
                        dtype=object)
        ds = xr.Dataset({"label": (("site", "band"), vals),
                         "temp": ("site", np.array([1.5, 2.5, 3.5, 4.5]))},
                        coords={"site": np.array(["s\u00e9 0", "s 1", "", "s\t3"], dtype=object),
                                "band": ["red", "nir", "swir"]})
        path = os.path.join(WORK, "xr.zarr")
        ds.to_zarr(path, mode="w")
        back = xr.open_zarr(path)
        with zfmount.Mount(path) as m:
            for name in ("site", "label"):
                with self.subTest(variable=name):
                    with open(m.path(name), encoding="utf-8", newline="") as f:
                        got = f.read()
                    want = [str(v) for v in back[name].values.ravel(order="C")]
                    self.assertEqual(got, text_of(want))
                    self.assertEqual(zfmount.getx(m.path(name), "user.zarr.dtype"), b"|O")
            band = zfmount.read_all(m.path("band"))
            want_band = np.asarray(back["band"].values)
            self.assertEqual(band, want_band.astype(want_band.dtype.newbyteorder("<")).tobytes())
            self.assertEqual(zfmount.read_all(m.path("temp")),
                             np.asarray(back["temp"].values, dtype="<f8").tobytes())
        log("  xarray to_zarr: string coordinate and 2-D string variable as text, <U as before")


LARGE_N, LARGE_CHUNK = 1000000, 2000
LARGE_PAD = "x" * 90  # about 100 bytes a line: 100 MB of text, more than the memory bound


def large_value(i):
    return "cell_%07d_%s" % (i, LARGE_PAD)


def make_large(path):
    g = zarr.open_group(path, mode="w")
    a = g.create_dataset("names", shape=(LARGE_N,), chunks=(LARGE_CHUNK,), dtype=object,
                         object_codec=numcodecs.VLenUTF8())
    a[:] = np.array([large_value(i) for i in range(LARGE_N)], dtype=object)
    g.create_dataset("numbers", shape=(LARGE_N,), chunks=(LARGE_CHUNK,), dtype="<i4")


class Large(zfmount.TestCase):
    """10^6 elements in 500 chunks, local and over HTTP (nginx): `ls -l` of the group decodes
    nothing (the daemon's counters), `wc -l` counts every element, lines read right at both
    ends, and the daemon's peak memory stays within cache_size + 64 MiB while 100 MB of text
    streams through (not in sanitizer builds, whose allocators keep freed memory)."""
    CACHE_MIB = 16

    @classmethod
    def setUpClass(cls):
        cls.store = os.path.join(WORK, "large.zarr")
        make_large(cls.store)

    def check_mount(self, m, where):
        stats_path = m.path(".zarrfs-stats")

        def stats():
            with open(stats_path) as f:
                return json.load(f)
        rss0 = m.proc_status("VmRSS")
        s0 = stats()
        ls = zfmount.run(["ls", "-l", m.mnt]).stdout
        self.assertIn("names", ls)
        self.assertEqual(os.stat(m.path("names")).st_size, 0)
        s1 = stats()
        self.assertEqual(s1["decode"]["chunks"], s0["decode"]["chunks"], "ls -l decoded chunks")
        self.assertEqual(s1["cache"]["misses"], s0["cache"]["misses"], "ls -l loaded chunks")
        wc = subprocess.run(["wc", "-l", m.path("names")], capture_output=True, text=True,
                            check=True, timeout=zfmount.CMD_TIMEOUT)
        self.assertEqual(int(wc.stdout.split()[0]), LARGE_N)
        size = os.stat(m.path("names")).st_size
        self.assertEqual(size, sum(len(large_value(i)) + 1 for i in range(LARGE_N)))
        with open(m.path("names"), "rb") as f:
            self.assertEqual(f.readline().decode(), large_value(0) + "\n")
            line = len(large_value(0)) + 1  # every line has the same length
            f.seek(line * 654321)
            self.assertEqual(f.readline().decode(), large_value(654321) + "\n")
            f.seek(size - line)
            self.assertEqual(f.read().decode(), large_value(LARGE_N - 1) + "\n")
        if not zfmount.sanitized_build():
            hwm = m.proc_status("VmHWM")
            bound = (self.CACHE_MIB + 64) * 1024
            self.assertLessEqual(hwm - rss0, bound,
                                 "%s: peak RSS grew %d kB reading %d MB of text (bound %d kB)"
                                 % (where, hwm - rss0, size >> 20, bound))
            log("  %s: peak RSS +%d MiB for %d MiB of text" % (where, (hwm - rss0) >> 10,
                                                              size >> 20))

    def test_01_local(self):
        with zfmount.Mount(self.store, options=["cache_size=%dM" % self.CACHE_MIB]) as m:
            self.check_mount(m, "local")
        log("  10^6 elements: ls -l decodes nothing, wc -l, lines at both ends")

    def test_02_http(self):
        import remote_servers as rs
        with rs.Nginx(WORK, autoindex=True) as ng:
            with zfmount.Mount(ng.url("large.zarr"),
                               options=["cache_size=%dM" % self.CACHE_MIB]) as m:
                self.check_mount(m, "HTTP")
        log("  the same over HTTP (nginx)")


if __name__ == "__main__":
    zfmount.main()
