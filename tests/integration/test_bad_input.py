#!/usr/bin/python3
"""Bad input: stores zarrfs must refuse at mount, nodes with invalid metadata below the root,
corrupt / truncated / wrong-size / bad-checksum chunks, decompression bombs, and attempts to make
zarrfs read outside the store (symlinks, `..` keys in .zmetadata).

Whether a corrupt chunk is really undecodable is confirmed with zarr-python first (it must raise
too), so the EIO expected from zarrfs is zarr-python's verdict, not zarrfs's own.
"""

import bz2
import errno
import json
import lzma
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

WORK = None


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-bad-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def write_files(root, files):
    """files: {relpath: bytes | str | JSON-able}; None makes a directory."""
    os.makedirs(root, exist_ok=True)
    for rel, content in files.items():
        p = os.path.join(root, rel)
        if content is None:
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if isinstance(content, bytes):
            data = content
        elif isinstance(content, str):
            data = content.encode()
        else:
            data = json.dumps(content, indent=4).encode()
        with open(p, "wb") as f:
            f.write(data)
    return root


BASE = {"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "<i4", "compressor": None,
        "fill_value": 0, "filters": None, "order": "C"}


def arr(**kw):
    d = dict(BASE)
    for k, v in kw.items():
        if v is _DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


_DROP = object()

# (name, files, key expected in the message or None, acceptable field names or None)
REFUSALS = [
    ("zarray_not_json", {".zarray": '{"zarr_format": 2, "shape": [10'}, ".zarray", None),
    ("zarray_empty", {".zarray": b""}, ".zarray", None),
    ("zarray_list", {".zarray": "[1, 2]"}, ".zarray", None),
    ("zarray_binary", {".zarray": b"\x89PNG\r\n\x1a\n\x00\x00\xff"}, ".zarray", None),
    ("shape_string", {".zarray": arr(shape="10")}, ".zarray", ("shape",)),
    ("shape_missing", {".zarray": arr(shape=_DROP)}, ".zarray", ("shape",)),
    ("shape_negative", {".zarray": arr(shape=[-1], chunks=[5])}, ".zarray", ("shape",)),
    ("shape_float", {".zarray": arr(shape=[10.5])}, ".zarray", ("shape",)),
    ("shape_null_elem", {".zarray": arr(shape=[None])}, ".zarray", ("shape",)),
    ("shape_product_2p64", {".zarray": arr(shape=[2 ** 32, 2 ** 32], chunks=[1024, 1024], dtype="|u1")},
     ".zarray", ("shape",)),
    ("shape_product_2p63", {".zarray": arr(shape=[2 ** 62, 2], chunks=[1024, 2], dtype="|u1")},
     ".zarray", ("shape",)),
    ("shape_elem_2p64", {".zarray": arr(shape=[2 ** 64], chunks=[1024], dtype="|u1")},
     ".zarray", ("shape",)),
    ("shape_elem_huge", {".zarray": '{"zarr_format": 2, "shape": [123456789012345678901234567890], '
                                    '"chunks": [5], "dtype": "|u1", "compressor": null, '
                                    '"fill_value": 0, "filters": null, "order": "C"}'},
     ".zarray", ("shape",)),
    ("size_in_bytes_2p64", {".zarray": arr(shape=[2 ** 61], chunks=[1024], dtype="<f8")},
     ".zarray", ("shape", "dtype")),
    ("chunks_zero", {".zarray": arr(chunks=[0])}, ".zarray", ("chunks",)),
    ("chunks_zero_len0_shape", {".zarray": arr(shape=[0], chunks=[0])}, ".zarray", ("chunks",)),
    ("chunks_negative", {".zarray": arr(chunks=[-5])}, ".zarray", ("chunks",)),
    ("chunks_wrong_rank", {".zarray": arr(chunks=[5, 5])}, ".zarray", ("chunks",)),
    ("chunks_string", {".zarray": arr(chunks="5")}, ".zarray", ("chunks",)),
    ("chunks_missing", {".zarray": arr(chunks=_DROP)}, ".zarray", ("chunks",)),
    ("dtype_unknown", {".zarray": arr(dtype="<q9")}, ".zarray", ("dtype",)),
    ("dtype_number", {".zarray": arr(dtype=5)}, ".zarray", ("dtype",)),
    ("dtype_missing", {".zarray": arr(dtype=_DROP)}, ".zarray", ("dtype",)),
    ("dtype_bad_struct", {".zarray": arr(dtype=[["a"]])}, ".zarray", ("dtype",)),
    ("zarr_format_3", {".zarray": arr(zarr_format=3)}, ".zarray", ("zarr_format",)),
    ("zarr_format_string", {".zarray": arr(zarr_format="2")}, ".zarray", ("zarr_format",)),
    ("zarr_format_missing", {".zarray": arr(zarr_format=_DROP)}, ".zarray", ("zarr_format",)),
    ("order_bad", {".zarray": arr(order="X")}, ".zarray", ("order",)),
    ("fill_value_string_for_int", {".zarray": arr(fill_value="abc")}, ".zarray", ("fill_value",)),
    ("fill_value_object", {".zarray": arr(fill_value={})}, ".zarray", ("fill_value",)),
    ("fill_value_u8_2p64", {".zarray": arr(dtype="<u8", fill_value=2 ** 64)}, ".zarray", ("fill_value",)),
    ("fill_value_i8_2p63", {".zarray": arr(dtype="<i8", fill_value=2 ** 63)}, ".zarray", ("fill_value",)),
    ("compressor_number", {".zarray": arr(compressor=5)}, ".zarray", ("compressor",)),
    ("compressor_no_id", {".zarray": arr(compressor={"level": 1})}, ".zarray", ("compressor", "id")),
    ("filters_string", {".zarray": arr(filters="delta")}, ".zarray", ("filters",)),
    ("filters_number_elem", {".zarray": arr(filters=[5])}, ".zarray", ("filters",)),
    ("dimension_separator_bad", {".zarray": arr(dimension_separator="x")}, ".zarray",
     ("dimension_separator",)),
    ("zgroup_not_json", {".zgroup": "{zarr_format: 2"}, ".zgroup", None),
    ("zgroup_format_3", {".zgroup": {"zarr_format": 3}}, ".zgroup", ("zarr_format",)),
    ("zgroup_list", {".zgroup": "[]"}, ".zgroup", None),
    ("zattrs_not_json_root", {".zgroup": {"zarr_format": 2}, ".zattrs": "{not json"}, ".zattrs", None),
]


class Refusal(zfmount.TestCase):
    """Invalid roots: exit status 1, one stderr line `zarrfs: KEY: "FIELD": ...`, nothing mounted."""

    def check_refused(self, store, key, fields, args=()):
        status, err, was_mounted = zfmount.expect_refusal(store, args=args)
        self.assertFalse(was_mounted, "zarrfs mounted %s; it must refuse it" % store)
        self.assertEqual(status, 1, "exit status %r (want 1); stderr: %r" % (status, err))
        lines = [ln for ln in err.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, "want exactly one stderr line, got: %r" % err)
        line = lines[0]
        self.assertTrue(line.startswith("zarrfs: "), "stderr line %r lacks 'zarrfs: '" % line)
        if key:
            self.assertIn(key, line, "stderr line %r does not name the key %s" % (line, key))
        if fields:
            self.assertTrue(any(f in line for f in fields),
                            "stderr line %r does not name the field (%s)" % (line, "/".join(fields)))
        return line

    def test_00_base_document_mounts(self):
        """Control: the valid document the refusal cases start from mounts and reads."""
        store = write_files(os.path.join(WORK, "refuse", "base_ok"), {".zarray": BASE})
        with zfmount.Mount(store) as m:
            self.assertEqual(os.listdir(m.mnt), ["base_ok"])
            self.assertEqual(zfmount.read_all(m.path("base_ok")), bytes(40))
        log("  control store mounts; its file reads 40 zero bytes (fill 0, no chunks)")

    def test_01_invalid_root_metadata(self):
        for name, files, key, fields in REFUSALS:
            with self.subTest(case=name):
                store = write_files(os.path.join(WORK, "refuse", name), files)
                line = self.check_refused(store, key, fields)
                log("  %-28s refused: %s" % (name, line))

    def test_02_not_zarr(self):
        cases = {
            "empty_dir": {},
            "random_files": {"README": "hello", "data.bin": b"\x00" * 100, "sub/x": "y"},
            "only_zattrs": {".zattrs": {"a": 1}},
            "chunks_only": {"0.0": b"\x00" * 16},
        }
        for name, files in cases.items():
            with self.subTest(case=name):
                store = write_files(os.path.join(WORK, "notzarr", name), files)
                line = self.check_refused(store, None, None)
                log("  %-28s refused: %s" % (name, line))
        with self.subTest(case="missing_dir"):
            line = self.check_refused(os.path.join(WORK, "does", "not", "exist"), None, None)
            log("  %-28s refused: %s" % ("missing_dir", line))
        with self.subTest(case="regular_file"):
            p = os.path.join(WORK, "a_regular_file")
            with open(p, "w") as f:
                f.write('{"zarr_format": 2}')
            line = self.check_refused(p, None, None)
            log("  %-28s refused: %s" % ("regular_file", line))

    def test_02b_fifo_root_metadata(self):
        """A root .zarray that is a FIFO is refused promptly (no blocking open)."""
        store = os.path.join(WORK, "refuse_fifo")
        os.makedirs(store)
        os.mkfifo(os.path.join(store, ".zarray"))
        status, err, mounted = zfmount.expect_refusal(store)
        self.assertNotEqual(status, "timeout", "zarrfs hung on a FIFO .zarray")
        self.assertFalse(mounted)
        self.assertEqual(status, 1, err)
        self.assertTrue(err.startswith("zarrfs: "), err)
        log("  FIFO .zarray refused: %s" % err.strip())

    def test_03_refusal_when_daemonizing(self):
        """Without -f the refusal happens before daemonizing: exit 1, one line, no mount."""
        store = write_files(os.path.join(WORK, "refuse_bg", "shape_string"), {".zarray": arr(shape="10")})
        mnt = tempfile.mkdtemp(prefix="zfmnt-bg-")
        try:
            r = zfmount.run([zfmount.ZARRFS, store, mnt], timeout=15)
            mounted = zfmount.anything_mounted_at(mnt)
            if mounted:
                zfmount.unmount_path(mnt)
            self.assertFalse(mounted, "mounted an invalid store")
            self.assertEqual(r.returncode, 1, r.stderr)
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("zarrfs: .zarray") and "shape" in lines[0], lines[0])
        finally:
            if not zfmount.anything_mounted_at(mnt):
                os.rmdir(mnt)
        log("  daemonizing run refused too: %s" % lines[0])

    def test_04_unsupported_codec_at_root_mounts(self):
        """Valid but unsupported root (unknown compressor / filter): mounts; the file has its real
        size and its reads fail with EIO; an object dtype of strings (no chunks): fill-value lines."""
        for name, doc, cid in [("unknown_compressor", arr(compressor={"id": "nosuchcodec", "level": 3}),
                                "nosuchcodec"),
                               ("unknown_filter", arr(filters=[{"id": "nosuchfilter"}]), "nosuchfilter"),
                               ("object_dtype", arr(dtype="|O", filters=[{"id": "vlen-utf8"}]), "vlen-utf8")]:
            with self.subTest(case=name):
                store = write_files(os.path.join(WORK, "unsupported_root", name), {".zarray": doc})
                with zfmount.Mount(store) as m:
                    self.assertEqual(os.listdir(m.mnt), [name])
                    self.assertTrue(stat.S_ISREG(os.stat(m.path(name)).st_mode))
                    if name == "object_dtype":  # strings: text; no chunks: fill value 0,
                        # as zarr-python 2 reads it
                        n = 1
                        for d in doc["shape"]:
                            n *= d
                        self.assertEqual(zfmount.read_all(m.path(name)), b"0\n" * n)
                        continue
                    else:
                        self.assertUndecodable(m.path(name), 10 * 4, [cid])
                    self.assertTrue(cid in m.stderr_text() or (name == "object_dtype" and "|O" in m.stderr_text()),
                                    "log does not name %s: %r" % (cid, m.stderr_text()[-500:]))
                log("  %-20s mounted, listed, %s, log names %s"
                    % (name, "EOPNOTSUPP on open" if name == "object_dtype" else "40 bytes, EIO on read", cid))


# ---------------------------------------------------------------------------------------------

def good_array(root, rel, data, chunks, **kw):
    z = zarr.open_array(os.path.join(root, rel), mode="w", shape=data.shape, chunks=chunks,
                        dtype=data.dtype, **kw)
    z[...] = data
    return z


class BelowRoot(zfmount.MountedTestCase):
    """Nodes with invalid metadata fail their own operations with EIO; siblings keep working."""

    BAD = {
        "bad_shape": arr(shape="x"),
        "bad_json": '{"zarr_format": 2, ',
        "bad_dtype": arr(dtype="<q9"),
        "bad_chunks0": arr(chunks=[0]),
        "bad_overflow": arr(shape=[2 ** 40, 2 ** 40], chunks=[1, 1]),
        "bad_fill": arr(dtype="<u8", fill_value=2 ** 64),
    }

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "below_root")
        write_files(root, {".zgroup": {"zarr_format": 2}})
        good_array(root, "ok", np.arange(100, dtype="<i4"), (30,), compressor=numcodecs.Zlib(1))
        good_array(root, "x..y", np.arange(10, dtype=">f8"), (4,))
        good_array(root, "grp/inner", np.arange(12, dtype="|u1").reshape(3, 4), (2, 2))
        write_files(root, {"grp/.zgroup": {"zarr_format": 2}})
        for name, doc in cls.BAD.items():
            # no chunk files: an EIO must come from the metadata, not from a bad chunk
            write_files(root, {name + "/.zarray": doc})
        write_files(root, {"bad_group/.zgroup": "not json"})
        good_array(root, "bad_group/child", np.arange(4, dtype="<i2"), (4,))
        good_array(root, "bad_attrs", np.arange(4, dtype="<i2"), (4,))
        write_files(root, {"bad_attrs/.zattrs": "{broken"})
        write_files(root, {"unknown_codec/.zarray": arr(compressor={"id": "nosuchcodec"}),
                           "unknown_codec/0": b"\x00" * 20,
                           "unknown_filter/.zarray": arr(filters=[{"id": "nosuchfilter"}])})
        return root

    def assert_node_eio(self, p):
        """The node's first failing operation (stat, open/listdir, read) fails with EIO."""
        try:
            st = os.stat(p)
        except OSError as e:
            self.assertEqual(e.errno, errno.EIO, "stat %s: %s (want EIO)" % (p, e))
            return "stat"
        if stat.S_ISDIR(st.st_mode):
            self.assertErrno(errno.EIO, os.listdir, p)
            return "listdir"
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            self.assertEqual(e.errno, errno.EIO, "open %s: %s (want EIO)" % (p, e))
            return "open"
        try:
            self.assertErrno(errno.EIO, os.pread, fd, 4096, 0)
            return "read"
        finally:
            os.close(fd)

    def test_01_bad_nodes_eio(self):
        names = os.listdir(self.m.mnt)
        for n in ["ok", "x..y", "grp"]:
            self.assertIn(n, names)
        for name in list(self.BAD) + ["bad_group"]:
            with self.subTest(node=name):
                how = self.assert_node_eio(self.m.path(name))
                log("  %-14s EIO at %s" % (name, how))
        self.assertDaemonAlive()

    def test_02_bad_attrs(self):
        """Unparseable .zattrs: user.zarr.attributes fails with EIO (not a silent {})."""
        p = self.m.path("bad_attrs")
        try:
            os.stat(p)
        except OSError as e:
            self.assertEqual(e.errno, errno.EIO)
            log("  bad_attrs: stat EIO")
            return
        self.assertErrno(errno.EIO, os.getxattr, p, "user.zarr.attributes")
        log("  bad_attrs: getxattr user.zarr.attributes EIO")

    def test_03_siblings_work(self):
        for rel in ["ok", "x..y", "grp/inner"]:
            z = zfmount.open_zarr_array(os.path.join(self.m.store, rel))
            self.assertBytesEqual(zfmount.read_all(self.m.path(rel)), zfmount.expected_bytes(z), rel)
        self.assertEqual(sorted(os.listdir(self.m.path("grp"))), ["inner"])
        self.assertDaemonAlive()
        log("  siblings ok, x..y, grp/inner read right after the bad nodes failed")

    def test_04_unknown_codecs(self):
        for name, cid in [("unknown_codec", "nosuchcodec"), ("unknown_filter", "nosuchfilter")]:
            with self.subTest(node=name):
                self.assertIn(name, os.listdir(self.m.mnt))
                self.assertUndecodable(self.m.path(name), 10 * 4, [cid])
                self.assertIn(cid, self.m.stderr_text(), "log does not name %s" % cid)
        log("  unknown compressor / filter below the root: listed, real size, EIO, named in the log")


# ---------------------------------------------------------------------------------------------
# special files in the store

class SpecialFiles(zfmount.MountedTestCase):
    """FIFOs and device nodes where chunks or metadata belong: no hang, never their bytes."""

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "special")
        write_files(root, {".zgroup": {"zarr_format": 2}})
        for name, comp in [("fifo_chunk", None), ("devzero_chunk_raw", None),
                           ("devzero_chunk_zlib", numcodecs.Zlib(1)), ("devurandom_chunk_raw", None)]:
            good_array(root, name, np.full(2 * N, 65, dtype="|u1"), (N,), compressor=comp, fill_value=66)
            p = os.path.join(root, name, "1")
            os.unlink(p)
            if name.startswith("fifo"):
                os.mkfifo(p)
            elif "urandom" in name:
                os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 9))
            else:
                os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        os.makedirs(os.path.join(root, "fifo_meta"))
        os.mkfifo(os.path.join(root, "fifo_meta", ".zarray"))
        good_array(root, "ok", np.arange(20, dtype="<i8"), (8,))
        return root

    def call_with_deadline(self, fn, secs=10):
        res = {}

        def run():
            try:
                res["v"] = fn()
            except BaseException as e:      # noqa: B902 - handed back to the test thread
                res["e"] = e
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(secs)
        if t.is_alive():
            self.m.kill_for_watchdog()
            t.join(10)
            self.fail("the operation hung for %d s (daemon killed)" % secs)
        if "e" in res:
            raise res["e"]
        return res.get("v")

    def test_01_special_chunk_files(self):
        for name in ["fifo_chunk", "devzero_chunk_raw", "devzero_chunk_zlib", "devurandom_chunk_raw"]:
            with self.subTest(case=name):
                p = self.m.path(name)

                def read_chunk1():
                    fd = os.open(p, os.O_RDONLY)
                    try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                        return zfmount.pread_full(fd, N, N)
                    finally:
                        os.close(fd)
                try:
                    got = self.call_with_deadline(read_chunk1)
                    self.assertEqual(got, b"B" * N, "%s: chunk 1 is neither EIO nor the fill value" % name)
                    log("  %-22s read as the fill value (missing chunk)" % name)
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO, "%s: %s" % (name, e))
                    log("  %-22s EIO" % name)
                def read_chunk0():
                    fd = os.open(p, os.O_RDONLY)
                    try:
                        return zfmount.pread_full(fd, N, 0)
                    finally:
                        os.close(fd)
                self.assertEqual(self.call_with_deadline(read_chunk0), b"A" * N)
        self.assertDaemonAlive()

    def test_02_fifo_metadata(self):
        def probe():
            try:
                os.stat(self.m.path("fifo_meta"))
                return "stat ok"
            except OSError as e:
                return e.errno
        r = self.call_with_deadline(probe)
        self.assertIn(r, (errno.EIO, errno.ENOENT, "stat ok"))
        z = zfmount.open_zarr_array(os.path.join(self.m.store, "ok"))
        self.assertBytesEqual(self.call_with_deadline(lambda: zfmount.read_all(self.m.path("ok"))),
                              zfmount.expected_bytes(z), "ok")
        log("  .zarray that is a FIFO: %s, no hang; sibling reads right"
            % (errno.errorcode.get(r, r) if isinstance(r, int) else r))


# ---------------------------------------------------------------------------------------------
# corrupt chunks

N = 4096


def flip(b, *positions):
    b = bytearray(b)
    for p in positions:
        b[p % len(b)] ^= 0xFF
    return bytes(b)


def encode(codec, data):
    return bytes(codec.encode(data))


def chunk_cases():
    """(name, dtype, compressor, filters, bad chunk bytes) — chunk 0 good, chunk 1 replaced."""
    u1 = np.frombuffer(bytes(range(256)) * (N // 256), dtype="|u1")
    i4 = np.arange(N // 4, dtype="<i4") * 3
    raw1 = u1.tobytes()
    cases = []
    Z, G, B, L, S, Z4 = (numcodecs.Zlib(1), numcodecs.GZip(1), numcodecs.BZ2(1),
                         numcodecs.LZMA(preset=1), numcodecs.Zstd(1), numcodecs.LZ4())
    BL = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    for nm, c in [("zlib", Z), ("gzip", G), ("bz2", B), ("lzma", L), ("zstd", S), ("lz4", Z4), ("blosc", BL)]:
        enc = encode(c, u1)
        cases.append((nm + "_truncated", "|u1", c, None, enc[:len(enc) // 2]))
        cases.append((nm + "_empty", "|u1", c, None, b""))
        cases.append((nm + "_decodes_short", "|u1", c, None, encode(c, u1[:N // 2])))
        cases.append((nm + "_decodes_long", "|u1", c, None, encode(c, np.concatenate([u1, u1]))))
        cases.append((nm + "_garbage", "|u1", c, None, bytes((i * 7 + 3) % 256 for i in range(300))))
    cases.append(("zlib_flipped", "|u1", Z, None, flip(encode(Z, u1), 40, 41, 42)))
    cases.append(("gzip_flipped", "|u1", G, None, flip(encode(G, u1), 30, 31)))
    cases.append(("gzip_bad_trailer", "|u1", G, None, flip(encode(G, u1), -6)))
    cases.append(("bz2_flipped", "|u1", B, None, flip(encode(B, u1), 50, 51)))
    cases.append(("lzma_flipped", "|u1", L, None, flip(encode(L, u1), 60)))
    cases.append(("zstd_bad_magic", "|u1", S, None, flip(encode(S, u1), 0)))
    cases.append(("lz4_header_huge", "|u1", Z4, None, b"\xf0\xff\xff\x7f" + encode(Z4, u1)[4:]))
    cases.append(("lz4_header_lies_small", "|u1", Z4, None,
                  (N // 2).to_bytes(4, "little") + encode(Z4, u1)[4:]))
    benc = encode(BL, u1)
    nb = bytearray(benc)
    nb[4:8] = (N * 2).to_bytes(4, "little")          # nbytes field: decoded size lie
    cases.append(("blosc_nbytes_lie", "|u1", BL, None, bytes(nb)))
    cases.append(("blosc_header_only", "|u1", BL, None, benc[:16]))
    cases.append(("none_short", "|u1", None, None, raw1[:N - 96]))
    cases.append(("none_long", "|u1", None, None, raw1 + b"\x00" * 96))
    cases.append(("none_empty", "|u1", None, None, b""))
    C, A = numcodecs.CRC32(), numcodecs.Adler32()
    for nm, c in [("crc32", C), ("adler32", A)]:
        enc = encode(c, i4)
        cases.append((nm + "_data_flipped", "<i4", None, [c], flip(enc, 100)))
        cases.append((nm + "_sum_flipped", "<i4", None, [c], flip(enc, 0, -1)))
        cases.append((nm + "_too_short", "<i4", None, [c], enc[:3]))
        inner = flip(enc, 200)
        cases.append((nm + "_inside_zlib", "<i4", Z, [c], zlib.compress(inner)))
    cases.append(("delta_wrong_size", "<i4", None, [numcodecs.Delta("<i4")], i4.tobytes()[:1000]))
    cases.append(("fso_wrong_size", "<f8", None,
                  [numcodecs.FixedScaleOffset(0, 10, "<f8", astype="<i2")], b"\x00" * 100))
    cases.append(("astype_wrong_size", "<f8", None,
                  [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")], b"\x00" * 100))
    cases.append(("shuffle_wrong_size", "<i4", None, [numcodecs.Shuffle(4)], b"\x00" * 101))
    cases.append(("packbits_wrong_size", "|b1", None, [numcodecs.PackBits()], b"\x00" * 3))
    cases.append(("packbits_bad_pad", "|b1", None, [numcodecs.PackBits()], b"\x09" + b"\x00" * (N // 8)))
    return cases


class CorruptChunks(zfmount.MountedTestCase):
    """Chunk 1 of each array is corrupt: reading it is EIO; chunk 0 still reads right."""

    cases = []

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "corrupt")
        write_files(root, {".zgroup": {"zarr_format": 2}})
        cls.cases = []
        for name, dt, comp, filters, bad in chunk_cases():
            dt = np.dtype(dt)
            n = N // dt.itemsize
            if dt.kind == "b":
                data = np.arange(2 * N) % 3 == 0
                n = N
            elif dt.kind == "f":
                data = np.arange(2 * n, dtype=dt) / 10.0
            else:
                data = (np.arange(2 * n) % 251).astype(dt)
            z = zarr.open_array(os.path.join(root, name), mode="w", shape=data.shape, chunks=(n,),
                                dtype=dt, compressor=comp, filters=filters, fill_value=0)
            z[...] = data
            with open(os.path.join(root, name, "1"), "wb") as f:
                f.write(bad)
            # zarr-python's chunk decoder (codec pipeline + reshape to the chunk shape) must
            # reject this chunk too, else the case is not a corruption.  (z[...] itself is no
            # judge: decoding straight into the output it silently accepts short chunks.)
            try:
                z._decode_chunk(bad)
                zarr_ok = True
            except Exception:
                zarr_ok = False
            if zarr_ok:
                log("  note: zarr-python decodes %s's chunk 1 without error; case skipped" % name)
                shutil.rmtree(os.path.join(root, name))
                continue
            cls.cases.append((name, n * dt.itemsize))
        log("corrupt-chunk store: %d cases" % len(cls.cases))
        return root

    def test_01_corrupt_chunk_eio(self):
        for name, csize in self.cases:
            with self.subTest(case=name):
                p = self.m.path(name)
                z = zarr.open_array(os.path.join(self.m.store, name), mode="r")
                good = np.ascontiguousarray(z[:z.chunks[0]]).tobytes()
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    t0 = time.monotonic()
                    self.assertErrno(errno.EIO, os.pread, fd, csize, csize)
                    self.assertErrno(errno.EIO, os.pread, fd, 10, csize + csize // 2)
                    dt = time.monotonic() - t0
                    self.assertLess(dt, 10, "%s: EIO took %.1f s" % (name, dt))
                    self.assertBytesEqual(zfmount.pread_full(fd, csize, 0), good, name + " good chunk 0")
                finally:
                    os.close(fd)
                self.assertErrno(errno.EIO, zfmount.read_all, p)
        self.assertDaemonAlive()
        log("  %d corrupt chunks: EIO (again on retry), good chunk beside each reads right"
            % len(self.cases))

    def test_02_log_mentions_failures(self):
        err = self.m.stderr_text()
        unnamed = [n for n, _ in self.cases if n not in err]
        # the log line should say which chunk failed; accept the array name or its path
        self.assertLess(len(unnamed), len(self.cases),
                        "daemon log names none of the failing arrays; log tail:\n%s" % err[-1500:])
        if unnamed:
            log("  note: log does not name %d of %d failing arrays: %s"
                % (len(unnamed), len(self.cases), ", ".join(unnamed[:10])))
        log("  log names failing chunks (%d of %d arrays named)" % (len(self.cases) - len(unnamed),
                                                                    len(self.cases)))


# ---------------------------------------------------------------------------------------------
# decompression bombs

GiB = 1 << 30


def _stream(compobj, total):
    zero = bytes(1 << 20)
    out = [compobj.compress(zero) for _ in range(total >> 20)]
    out.append(compobj.flush())
    return b"".join(out)


class Bombs(zfmount.MountedTestCase):
    """4 KiB chunks whose data decompresses to 256 MiB..1 GiB: EIO fast, small RSS, daemon lives."""

    test_timeout = 240
    cases = []

    @classmethod
    def store_path(cls):
        root = os.path.join(WORK, "bombs")
        write_files(root, {".zgroup": {"zarr_format": 2}})
        t0 = time.monotonic()
        zeros = np.zeros(GiB, dtype="u1")
        lz4 = bytes(numcodecs.LZ4().encode(zeros))
        bombs = [
            ("zlib_1GiB", numcodecs.Zlib(1), _stream(zlib.compressobj(9), GiB)),
            ("gzip_256MiB", numcodecs.GZip(1), _stream(zlib.compressobj(9, zlib.DEFLATED, 31), GiB // 4)),
            ("bz2_256MiB", numcodecs.BZ2(1), _stream(bz2.BZ2Compressor(9), GiB // 4)),
            ("lzma_256MiB", numcodecs.LZMA(), _stream(lzma.LZMACompressor(preset=0), GiB // 4)),
            ("zstd_1GiB", numcodecs.Zstd(1), bytes(numcodecs.Zstd(1).encode(zeros))),
            ("lz4_1GiB_header", numcodecs.LZ4(), lz4),
            ("lz4_1GiB_header_says_4KiB", numcodecs.LZ4(), N.to_bytes(4, "little") + lz4[4:]),
            ("blosc_1GiB", numcodecs.Blosc("lz4", 5, 0), bytes(numcodecs.Blosc("lz4", 5, 0).encode(zeros))),
        ]
        del zeros
        try:
            zs = subprocess.run("head -c %d /dev/zero | zstd -1 -c" % GiB, shell=True,
                                stdout=subprocess.PIPE, check=True, timeout=60).stdout
            bombs.append(("zstd_1GiB_no_content_size", numcodecs.Zstd(1), zs))
        except Exception as e:
            log("  note: no zstd CLI bomb (%s)" % e)
        cls.cases = []
        for name, comp, blob in bombs:
            data = (np.arange(2 * N) % 251).astype("|u1")
            z = zarr.open_array(os.path.join(root, name), mode="w", shape=(2 * N,), chunks=(N,),
                                dtype="|u1", compressor=comp, fill_value=0)
            z[...] = data
            with open(os.path.join(root, name, "1"), "wb") as f:
                f.write(blob)
            cls.cases.append((name, len(blob)))
        good_array(root, "other", np.arange(5000, dtype="<f8"), (1000,), compressor=numcodecs.Zstd(1))
        log("bomb store written in %.1f s: %s" % (time.monotonic() - t0,
                                                  ", ".join("%s (%d B)" % c for c in cls.cases)))
        return root

    def test_01_bombs(self):
        hwm0 = self.m.proc_status("VmHWM")
        for name, blen in self.cases:
            with self.subTest(case=name):
                fd = os.open(self.m.path(name), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    t0 = time.monotonic()
                    self.assertErrno(errno.EIO, os.pread, fd, N, N)
                    dt = time.monotonic() - t0
                    z = zarr.open_array(os.path.join(self.m.store, name), mode="r")
                    self.assertBytesEqual(zfmount.pread_full(fd, N, 0), z[:N].tobytes(), name + " chunk 0")
                finally:
                    os.close(fd)
                hwm = self.m.proc_status("VmHWM")
                log("  %-28s EIO in %.2f s; daemon peak RSS %s MiB" % (name, dt, hwm and hwm // 1024))
                self.assertLess(dt, 15, "%s: took %.1f s to fail" % (name, dt))
                self.assertTrue(self.m.alive(), "daemon died on %s" % name)
                self.assertLess(hwm - hwm0, 200 * 1024,
                                "%s: daemon peak RSS grew from %d to %d KiB" % (name, hwm0, hwm))
        z = zarr.open_array(os.path.join(self.m.store, "other"), mode="r")
        self.assertBytesEqual(zfmount.read_all(self.m.path("other")), z[...].tobytes(), "other")
        log("  peak RSS %d -> %d KiB; other array still reads right"
            % (hwm0, self.m.proc_status("VmHWM")))


# ---------------------------------------------------------------------------------------------
# escapes

SECRET = b"SECRET!\n" * 512 + b"XYZ"       # 4099 bytes: also a distinctive size
MARKER = "OUTSIDE-MARKER-7f3a"


def outside_array(d):
    write_files(d, {".zarray": arr(shape=[len(SECRET)], chunks=[len(SECRET)], dtype="|u1"),
                    ".zattrs": {"marker": MARKER}, "0": SECRET})


class Escapes(zfmount.TestCase):
    """Symlinks out of the store and `..` keys in .zmetadata never expose outside bytes."""

    @classmethod
    def setUpClass(cls):
        base = os.path.join(WORK, "escape")
        cls.outside = os.path.join(base, "outside")
        os.makedirs(cls.outside)
        with open(os.path.join(cls.outside, "secret.bin"), "wb") as f:
            f.write(SECRET[:N])
        outside_array(os.path.join(cls.outside, "arr"))
        write_files(os.path.join(cls.outside, "grp"), {".zgroup": {"zarr_format": 2},
                                                       ".zattrs": {"marker": MARKER}})
        outside_array(os.path.join(cls.outside, "grp", "arr"))
        outside_array(base)                          # base/.zarray, base/0: what "../.zarray" names
        # store 1: symlinks
        s = cls.sym_store = os.path.join(base, "symlinks")
        write_files(s, {".zgroup": {"zarr_format": 2}})
        for name in ["sym_chunk", "sym_chunk_rel"]:
            good_array(s, name, np.full(N, 65, dtype="|u1"), (N,), compressor=None, fill_value=66)
        os.unlink(os.path.join(s, "sym_chunk", "0"))
        os.symlink(os.path.join(cls.outside, "secret.bin"), os.path.join(s, "sym_chunk", "0"))
        os.unlink(os.path.join(s, "sym_chunk_rel", "0"))
        os.symlink("../../outside/secret.bin", os.path.join(s, "sym_chunk_rel", "0"))
        os.symlink(os.path.join(cls.outside, "grp"), os.path.join(s, "sym_group"))
        os.symlink("../outside/arr", os.path.join(s, "sym_array"))
        os.makedirs(os.path.join(s, "sym_meta"))
        for k in (".zarray", ".zattrs", "0"):
            os.symlink(os.path.join(cls.outside, "arr", k), os.path.join(s, "sym_meta", k))
        good_array(s, "ok", np.arange(50, dtype="<i4"), (20,))
        good_array(s, "x..y", np.arange(7, dtype="<i2"), (3,))
        # store 2: consolidated metadata naming keys outside the store
        c = cls.cons_store = os.path.join(base, "consolidated")
        write_files(c, {".zgroup": {"zarr_format": 2}})
        good_array(c, "ok", np.arange(30, dtype="<u2"), (8,))
        zarr.consolidate_metadata(zarr.DirectoryStore(c))
        with open(os.path.join(c, ".zmetadata")) as f:
            zm = json.load(f)
        evil_meta = arr(shape=[len(SECRET)], chunks=[len(SECRET)], dtype="|u1")
        for key in ["../outside/arr/.zarray", "sub/../../outside/arr/.zarray", "../.zarray",
                    "..", "../outside/grp/.zgroup", os.path.join(cls.outside, "arr", ".zarray"),
                    "sub/./../../outside/arr/.zarray", "../escape/outside/arr/.zarray"]:
            zm["metadata"][key] = evil_meta if key.endswith(".zarray") else {"zarr_format": 2}
        zm["metadata"]["evil/.zarray"] = arr(shape=[100], chunks=[100], dtype="|u1")
        with open(os.path.join(c, ".zmetadata"), "w") as f:
            json.dump(zm, f, indent=4)

    def scan_mount(self, m, outside_meta=True):
        """Walk the whole mount; read every file and xattr.  Returns (files read, errors seen).
        outside_meta: the outside metadata (size 4099, MARKER attributes) must not show either
        (off for the consolidated store, whose own .zmetadata holds such documents)."""
        leaks, files, errs = [], 0, []
        for dirpath, dirnames, filenames in os.walk(m.mnt, onerror=lambda e: errs.append(str(e))):
            for name in [None] + dirnames + filenames:
                p = dirpath if name is None else os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError as e:
                    errs.append("lstat %s: %s" % (p, e))
                    continue
                self.assertFalse(stat.S_ISLNK(st.st_mode), "%s is a symlink in the mount" % p)
                if outside_meta and stat.S_ISREG(st.st_mode) and st.st_size == len(SECRET):
                    leaks.append("%s has the outside array's size %d" % (p, st.st_size))
                try:
                    for x in os.listxattr(p):
                        v = os.getxattr(p, x)
                        if outside_meta and (MARKER.encode() in v or b"4099" in v):
                            leaks.append("%s xattr %s = %r" % (p, x, v[:200]))
                except OSError as e:
                    errs.append("xattr %s: %s" % (p, e))
                if name in filenames:
                    try:
                        data = zfmount.read_all(p)
                        files += 1
                        if b"SECRET!" in data:
                            leaks.append("%s returned outside bytes" % p)
                    except OSError as e:
                        errs.append("read %s: %s" % (p, e))
        self.assertFalse(leaks, "zarrfs exposed data from outside the store:\n" + "\n".join(leaks))
        return files, errs

    def test_01_symlinks(self):
        with zfmount.Mount(self.sym_store) as m:
            files, errs = self.scan_mount(m)
            for name in ["sym_chunk", "sym_chunk_rel"]:
                with self.subTest(case=name):
                    try:
                        data = zfmount.read_all(m.path(name))
                        self.assertNotIn(b"SECRET", data)
                        self.assertEqual(data, b"B" * N, "%s: neither EIO nor the fill value" % name)
                        log("  %s: read returned the fill value (EIO preferred)" % name)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.EIO, "%s: %s" % (name, e))
                        log("  %s: EIO" % name)
            for rel in ["ok", "x..y"]:
                z = zfmount.open_zarr_array(os.path.join(self.sym_store, rel))
                self.assertBytesEqual(zfmount.read_all(m.path(rel)), zfmount.expected_bytes(z), rel)
            self.assertTrue(m.alive())
        log("  symlink store: %d files read, no outside bytes; errors seen: %s"
            % (files, "; ".join(errs) or "none"))

    def test_02_dotdot_keys_in_zmetadata(self):
        status, err, mounted = zfmount.expect_refusal(self.cons_store, timeout=3)
        if not mounted:
            # refusing the whole store is acceptable; it must say so properly
            self.assertEqual(status, 1, "neither mounted nor exited 1: %r %r" % (status, err))
            log("  store with .. keys refused: %s" % err.strip())
            return
        with zfmount.Mount(self.cons_store) as m:
            files, errs = self.scan_mount(m, outside_meta=False)
            names = os.listdir(m.mnt)
            self.assertIn("ok", names)
            self.assertNotIn("..", names)
            z = zfmount.open_zarr_array(os.path.join(self.cons_store, "ok"))
            self.assertBytesEqual(zfmount.read_all(m.path("ok")), zfmount.expected_bytes(z), "ok")
            # evil/ is a legitimate key inside the store with no chunks: fill (0) only
            if "evil" in names:
                self.assertEqual(zfmount.read_all(m.path("evil")), bytes(100))
        log("  .. keys in .zmetadata: mounted, root lists %r, %d files read, no outside bytes"
            % (sorted(names), files))


if __name__ == "__main__":
    zfmount.main()
