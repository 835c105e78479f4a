#!/usr/bin/python3
"""Zip archives as stores: mount archives written by zarr-python 2.13's ZipStore (stored and
deflated), by `zip -r x.zarr.zip x.zarr` (the hierarchy one directory down), the zarrita fixtures
zipped from within and from the parent directory, a Zip64 archive and a v3 hierarchy; compare
every array byte for byte with zarr-python's read of the same data. A corrupted entry is EIO on
its array only; a truncated archive, or a file that is no archive, is refused at mount (exit 1,
one line). Over HTTP (a real nginx): the same bytes, and reading one small array of a large
archive fetches ranges only — the end, the directory and that array's entries."""

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import remote_servers as rs  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

ZARRITA_V2 = os.path.join(zfmount.FIXTURES, "zarrita-fixtures", "v2")
TMP = tempfile.mkdtemp(prefix="zf-zip-")


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def fill(g):
    """A few arrays of a v2 group, chunked unevenly, some chunks missing."""
    g.create_dataset("ints", data=np.arange(4000, dtype="<i4").reshape(40, 100), chunks=(7, 30))
    g.create_dataset("sub/floats", data=np.linspace(-1, 1, 999), chunks=(100,))
    g.create_dataset("sub/deeper/big_endian", data=np.arange(300, dtype=">u2"), chunks=(64,))
    z = g.create_dataset("sparse", shape=(50, 50), chunks=(10, 10), dtype="f8", fill_value=-1)
    z[0:10, 0:10] = 7.5
    g.attrs["title"] = "zip"


def make_zipstore(path, compression):
    st = zarr.ZipStore(path, mode="w", compression=compression)
    fill(zarr.group(store=st))
    st.close()


def make_dir(path):
    fill(zarr.group(store=zarr.DirectoryStore(path)))


def expected_from_zipstore(path):
    """{array path: expected bytes} from zarr-python's read of the ZipStore."""
    st = zarr.ZipStore(path, mode="r")
    out = {}
    g = zarr.open_group(store=st, mode="r")

    def visit(name, obj):
        if isinstance(obj, zarr.Array):
            out[name] = zfmount.expected_bytes(obj)
    g.visititems(visit)
    st.close()
    return out


def expected_from_dir(root):
    groups, arrays = zfmount.walk_store(root)
    out = {}
    for rel in arrays:
        try:
            z = zfmount.open_zarr_array(os.path.join(root, rel))
            out[rel] = zfmount.expected_bytes(z)
        except Exception as e:  # zarr-python cannot read it: the directory mount decides
            log("  zarr-python cannot read %s (%s)" % (rel, e))
            out[rel] = None
    return out


def read_or_errno(path):
    try:
        return read_file(path)
    except OSError as e:
        return e.errno


class Zip(zfmount.MountsTestCase):

    @classmethod
    def mount_all(cls):
        cls.stored = os.path.join(TMP, "stored.zip")
        cls.deflated = os.path.join(TMP, "deflated.zip")
        make_zipstore(cls.stored, zipfile.ZIP_STORED)
        make_zipstore(cls.deflated, zipfile.ZIP_DEFLATED)
        # zip -r x.zarr.zip x.zarr: one directory down
        make_dir(os.path.join(TMP, "x.zarr"))
        cls.zipr = os.path.join(TMP, "x.zarr.zip")
        subprocess.run(["zip", "-q", "-r", "x.zarr.zip", "x.zarr"], cwd=TMP, check=True)
        # Zip64: more than 65535 entries (Zip64 end records), some with Zip64 local headers
        cls.zip64 = os.path.join(TMP, "zip64.zip")
        cls.zip64_n = 70000
        cls.zip64_data = (np.arange(cls.zip64_n) % 251).astype("u1")
        with zipfile.ZipFile(cls.zip64, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr(".zarray", json.dumps({
                "zarr_format": 2, "shape": [cls.zip64_n], "chunks": [1], "dtype": "|u1",
                "compressor": None, "filters": None, "fill_value": 0, "order": "C"}))
            for i in range(cls.zip64_n):
                if i < 10:
                    with zf.open(str(i), "w", force_zip64=True) as out:
                        out.write(cls.zip64_data[i:i + 1].tobytes())
                else:
                    zf.writestr(str(i), cls.zip64_data[i:i + 1].tobytes())
        # a v3 hierarchy in a zip (no extension in the name: detected by content)
        cls.v3dir = os.path.join(TMP, "v3.zarr")
        le = {"name": "bytes", "configuration": {"endian": "little"}}
        cls.v3_a = np.arange(40, dtype="<i4")
        cls.v3_b = np.arange(12, dtype="<f8") / 3
        c3.write_files(cls.v3dir, {
            "zarr.json": c3.v3_group_doc(),
            "a/zarr.json": c3.v3_array_doc((40,), (16,), "int32", [le]),
            "a/c/0": cls.v3_a[:16].tobytes(), "a/c/1": cls.v3_a[16:32].tobytes(),
            "a/c/2": np.concatenate([cls.v3_a[32:], np.zeros(8, "<i4")]).tobytes(),
            "g/zarr.json": c3.v3_group_doc(),
            "g/b/zarr.json": c3.v3_array_doc((12,), (5,), "float64",
                                             [le, {"name": "gzip", "configuration": {"level": 5}}]),
        })
        import gzip
        for i in range(3):
            part = np.zeros(5, "<f8")
            piece = cls.v3_b[i * 5:(i + 1) * 5]
            part[:len(piece)] = piece
            c3.write_files(cls.v3dir, {"g/b/c/%d" % i: gzip.compress(part.tobytes())})
        cls.v3zip = os.path.join(TMP, "v3archive")
        shutil.make_archive(cls.v3zip, "zip", cls.v3dir)
        os.rename(cls.v3zip + ".zip", cls.v3zip)

        cls.m_stored = cls.add_mount(cls.stored)
        cls.m_deflated = cls.add_mount(cls.deflated)
        cls.m_zipr = cls.add_mount(cls.zipr)
        cls.m_zip64 = cls.add_mount(cls.zip64)
        cls.m_v3 = cls.add_mount(cls.v3zip)
        cls.m_within = cls.add_mount(os.path.join(ZARRITA_V2, "data.zipped_from_within.zarr.zip"))
        cls.m_parent = cls.add_mount(os.path.join(ZARRITA_V2, "data.zipped_from_parent.zarr.zip"))
        cls.m_zdir = cls.add_mount(os.path.join(ZARRITA_V2, "data.zarr"))

    def check_all(self, m, want):
        self.assertTrue(want)
        for rel, data in sorted(want.items()):
            with self.subTest(array=rel):
                got = read_file(m.path(rel))
                self.assertEqual(len(got), len(data))
                self.assertEqual(got, data, "%s differs" % rel)
        log("  %s: %d arrays byte-exact" % (m.label, len(want)))

    def test_01_zipstore_stored(self):
        self.check_all(self.m_stored, expected_from_zipstore(self.stored))

    def test_02_zipstore_deflated(self):
        self.check_all(self.m_deflated, expected_from_zipstore(self.deflated))

    def test_03_zip_r_one_level_down(self):
        want = expected_from_dir(os.path.join(TMP, "x.zarr"))
        self.check_all(self.m_zipr, want)
        self.assertEqual(sorted(os.listdir(self.m_zipr.mnt)), ["ints", "sparse", "sub"])
        self.assertEqual(sorted(os.listdir(self.m_zipr.path("sub"))), ["deeper", "floats"])
        self.assertEqual(os.getxattr(self.m_zipr.mnt, "user.zarr.format"), b"2")

    def test_04_zip64(self):
        self.assertIn(b"PK\x06\x06", read_file(self.zip64))  # a Zip64 end of central directory
        got = read_file(self.m_zip64.path("zip64"))
        self.assertEqual(got, self.zip64_data.tobytes())
        log("  Zip64 archive of %d entries: byte-exact" % (self.zip64_n + 1))

    def test_05_v3(self):
        self.assertEqual(read_file(self.m_v3.path("a")), self.v3_a.tobytes())
        self.assertEqual(read_file(self.m_v3.path("g", "b")), self.v3_b.tobytes())
        self.assertEqual(os.getxattr(self.m_v3.mnt, "user.zarr.format"), b"3")
        log("  v3 hierarchy in a zip: 2 arrays byte-exact")

    def test_06_zarrita_fixtures(self):
        """Both zarrita zips read as the directory they were made from (by zarr-python where it
        can read an array, else as zarrfs reads the directory: bytes or the same error)."""
        want = expected_from_dir(os.path.join(ZARRITA_V2, "data.zarr"))
        for m in (self.m_within, self.m_parent):
            n = 0
            for rel, data in sorted(want.items()):
                with self.subTest(mount=m.label, array=rel):
                    got = read_or_errno(m.path(rel))
                    ref = read_or_errno(self.m_zdir.path(rel))
                    self.assertEqual(got, ref, rel)
                    if data is not None and not isinstance(ref, int):
                        self.assertEqual(got, data, rel)
                        n += 1
            self.assertEqual(sorted(os.listdir(m.mnt)), sorted(os.listdir(self.m_zdir.mnt)))
            log("  %s: %d arrays as the directory reads, %d checked against zarr-python"
                % (m.label, len(want), n))

    def test_07_read_only(self):
        with self.assertRaises(OSError) as cm:
            with open(self.m_stored.path("ints"), "r+b") as f:
                f.write(b"x")
        self.assertIn(cm.exception.errno, (errno.EROFS, errno.EACCES, errno.EPERM))

    def test_08_stat_and_partial_reads(self):
        want = expected_from_zipstore(self.deflated)["ints"]
        with open(self.m_deflated.path("ints"), "rb") as f:
            for off in (0, 1, 999, 8191, 15000):
                f.seek(off)
                self.assertEqual(f.read(333), want[off:off + 333])
        self.assertEqual(os.stat(self.m_deflated.path("ints")).st_size, 16000)


class Over4GiB(zfmount.TestCase):
    """A Zip64 archive over 4 GiB: a 4 GiB stored filler entry first, so the Zarr entries lie
    past the 32-bit offsets (Zip64 extra fields in the central directory); written by Python's
    zipfile, read by zarr-python's ZipStore as the reference."""

    test_timeout = 300

    def test_01_entries_past_4_gib(self):
        import zipfile
        import zarr
        path = os.path.join(TMP, "big64.zip")
        zero = bytes(64 << 20)
        data = np.arange(300 * 7, dtype="<f8").reshape(300, 7) * 0.25
        try:
            with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                with zf.open(zipfile.ZipInfo("filler.bin"), "w", force_zip64=True) as f:
                    for _ in range((4 << 30) // len(zero) + 1):
                        f.write(zero)
            store = zarr.ZipStore(path, mode="a", compression=zipfile.ZIP_DEFLATED)
            z = zarr.open_array(store, mode="w", path="arr", shape=data.shape, chunks=(64, 7),
                                dtype="<f8")
            z[...] = data
            store.close()
            self.assertGreater(os.path.getsize(path), 1 << 32)
            ref = zarr.open_array(zarr.ZipStore(path, mode="r"), mode="r", path="arr")[...]
            self.assertEqual(ref.tobytes(), data.tobytes())
            with zfmount.Mount(path, label="over-4GiB") as m:
                self.assertIn("arr", os.listdir(m.mnt))
                self.assertEqual(read_file(m.path("arr")), data.tobytes())
            log("  %.2f GiB Zip64 archive: entries past 4 GiB read byte-exact"
                % (os.path.getsize(path) / (1 << 30)))
        finally:
            if os.path.exists(path):
                os.unlink(path)


def flip_byte_in_entry(path, name):
    """Flip one byte of the compressed data of entry name, in place."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)
        n, m = np.frombuffer(f.read(4), "<u2")
        data_off = info.header_offset + 30 + int(n) + int(m)
        pos = data_off + info.compress_size // 2
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0x5A]))


class Broken(zfmount.TestCase):

    def test_01_corrupt_entry_is_eio(self):
        for comp in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            with self.subTest(compression=comp):
                path = os.path.join(TMP, "corrupt%d.zip" % comp)
                make_zipstore(path, comp)
                want = expected_from_zipstore(path)
                flip_byte_in_entry(path, "ints/1.1")
                with zfmount.Mount(path) as m:
                    with self.assertRaises(OSError) as cm:
                        read_file(m.path("ints"))
                    self.assertEqual(cm.exception.errno, errno.EIO)
                    for rel in ("sub/floats", "sub/deeper/big_endian", "sparse"):
                        self.assertEqual(read_file(m.path(rel)), want[rel])
                log("  compression %d: a flipped byte in ints/1.1 is EIO; siblings read" % comp)

    def refused(self, path, what):
        mnt = tempfile.mkdtemp(prefix="zf-zip-mnt-")
        try:
            r = subprocess.run([zfmount.ZARRFS, "-f", path, mnt], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("zarrfs: "), lines[0])
            self.assertFalse(zfmount.fuse_mounted_at(mnt))
            log("  %s: %s" % (what, lines[0]))
        finally:
            os.rmdir(mnt)

    def test_02_truncated_archive_refused(self):
        src = os.path.join(TMP, "whole.zip")
        make_zipstore(src, zipfile.ZIP_DEFLATED)
        data = read_file(src)
        for n, what in ((len(data) - 10, "cut in the end record"),
                        (len(data) * 2 // 3, "cut in the entries")):
            path = os.path.join(TMP, "trunc%d.zip" % n)
            with open(path, "wb") as f:
                f.write(data[:n])
            self.refused(path, what)

    def test_03_not_an_archive_refused(self):
        path = os.path.join(TMP, "notzip.zip")
        with open(path, "wb") as f:
            f.write(b"hello, world\n" * 100)
        self.refused(path, "a text file")

    def test_04_bad_central_directory_refused(self):
        src = os.path.join(TMP, "cd.zip")
        make_zipstore(src, zipfile.ZIP_STORED)
        data = bytearray(read_file(src))
        cd = data.find(b"PK\x01\x02")
        data[cd:cd + 4] = b"XX\x01\x02"
        path = os.path.join(TMP, "badcd.zip")
        with open(path, "wb") as f:
            f.write(data)
        self.refused(path, "a damaged central directory")


class OverHttp(zfmount.TestCase):
    """Archives served by nginx: ranges only, never the whole archive."""

    @classmethod
    def setUpClass(cls):
        cls.srv = os.path.join(TMP, "srv")
        os.makedirs(cls.srv)
        cls.big = os.path.join(cls.srv, "big.zarr.zip")
        st = zarr.ZipStore(cls.big, mode="w", compression=zipfile.ZIP_DEFLATED)
        g = zarr.group(store=st)
        fill(g)
        rng = np.random.default_rng(1)
        g.create_dataset("noise", data=rng.integers(0, 255, 8 << 20, dtype="u1"),
                         chunks=(1 << 20,), compressor=None)
        st.close()
        cls.want = expected_from_zipstore(cls.big)
        cls.ng = rs.Nginx(cls.srv, autoindex=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.ng.stop()

    def test_01_ranges_only(self):
        size = os.path.getsize(self.big)
        mark = self.ng.access_mark()
        with zfmount.Mount(self.ng.url("big.zarr.zip"), label="http-zip") as m:
            self.assertEqual(read_file(m.path("ints")), self.want["ints"])
            entries = [e for e in self.ng.access_entries(mark) if e.path == "big.zarr.zip"]
            sent = sum(e.bytes for e in entries)
            log("  one small array: %d requests, %d of %d archive bytes"
                % (len(entries), sent, size))
            self.assertTrue(all(e.range for e in entries), "a whole-archive GET: %r" % entries)
            self.assertLess(sent, size // 4)
            for rel, data in sorted(self.want.items()):
                with self.subTest(array=rel):
                    self.assertEqual(read_file(m.path(rel)), data)
            entries = [e for e in self.ng.access_entries(mark) if e.path == "big.zarr.zip"]
            self.assertTrue(all(e.range for e in entries), "a whole-archive GET")
            log("  all %d arrays byte-exact over HTTP, %d requests" % (len(self.want),
                                                                      len(entries)))

    def test_02_not_an_archive(self):
        with open(os.path.join(self.srv, "text.zip"), "wb") as f:
            f.write(b"plain text\n" * 10)
        mnt = tempfile.mkdtemp(prefix="zf-zip-mnt-")
        try:
            r = subprocess.run([zfmount.ZARRFS, "-f", self.ng.url("text.zip"), mnt],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            log("  %s" % r.stderr.strip())
        finally:
            os.rmdir(mnt)


class OverS3(zfmount.TestCase):
    """An archive in a bucket (s3rver behind the SigV4-checking proxy of remote_servers)."""

    BUCKET = "zarrfs"
    KEY, SECRET = "AKIAZARRFSTEST000001", "zarrfs/Test+Secret=Key0123456789abcdefXYZ"

    @classmethod
    def setUpClass(cls):
        path = os.path.join(TMP, "s3.zip")
        make_zipstore(path, zipfile.ZIP_DEFLATED)
        cls.want = expected_from_zipstore(path)
        cls.s3 = rs.S3rver([cls.BUCKET]).start()
        cls.proxy = rs.SigV4Proxy(cls.s3.port, {cls.KEY: cls.SECRET},
                                  region="us-east-1").start()
        c = cls.s3.client()
        c.put(cls.BUCKET, "dir/data.zarr.zip", read_file(path))
        c.put(cls.BUCKET, "top.zip", read_file(path))

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.s3.stop()

    def test_01_read(self):
        with rs.aws_env(AWS_ACCESS_KEY_ID=self.KEY, AWS_SECRET_ACCESS_KEY=self.SECRET):
            for key in ("dir/data.zarr.zip", "top.zip"):
                url = "s3://%s/%s" % (self.BUCKET, key)
                with zfmount.Mount(url, options=["endpoint=" + self.proxy.endpoint(),
                                                 "region=us-east-1", "retries=2"],
                                   label="s3-zip") as m:
                    for rel, data in sorted(self.want.items()):
                        with self.subTest(url=url, array=rel):
                            self.assertEqual(read_file(m.path(rel)), data)
                log("  %s: %d arrays byte-exact" % (url, len(self.want)))


if __name__ == "__main__":
    try:
        zfmount.main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
