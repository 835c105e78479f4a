#!/usr/bin/python3
"""Kerchunk references as stores: NetCDF4 files (python3-netcdf4: chunked, zlib+shuffle,
contiguous, several dtypes, big-endian, an unlimited dimension, groups, unallocated chunks) and
HDF5 files (h5py) are described by references generated here from h5py's chunk locations
(get_chunk_info / get_offset) with .zarray metadata written here; each mounted array must equal
what h5py reads from the original file AND what zarr-python 2.13 reads through fsspec's
ReferenceFileSystem from the same references. Also: relative and file:// targets, a version-1
file with templates and gen, inline text/JSON/base64 values, a range past the end of its target
(EIO on that array only), refused mounts (malformed JSON, a template that does not resolve, the
Parquet form: exit 1, one line), read-only, over HTTP (a real nginx: http targets, the reference
file itself fetched by URL, an unreachable target) and S3 (s3rver: s3 targets, an s3:// reference
file)."""

import base64
import collections.abc
import errno
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402

import fsspec  # noqa: E402
import h5py  # noqa: E402
import netCDF4  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

TMP = tempfile.mkdtemp(prefix="zf-refs-")


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def json_fill(v):
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return v


def refs_from_hdf5(path, url):
    """Version-0 references {key: value} for every numeric dataset and group of an HDF5 file,
    its chunks pointing at url; and {array key: expected C-order bytes} from h5py."""
    refs = {".zgroup": json.dumps({"zarr_format": 2})}
    want = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                refs[name + "/.zgroup"] = json.dumps({"zarr_format": 2})
                return
            if obj.dtype.kind not in "iuf" or obj.dtype.names:
                return
            shape = list(obj.shape)
            chunks = list(obj.chunks) if obj.chunks else (shape or [])
            chunks = [max(c, 1) for c in chunks]
            filters, compressor = None, None
            if obj.shuffle:
                filters = [{"id": "shuffle", "elementsize": obj.dtype.itemsize}]
            if obj.compression == "gzip":
                compressor = {"id": "zlib", "level": obj.compression_opts}
            elif obj.compression:
                raise AssertionError("unexpected compression %s" % obj.compression)
            refs[name + "/.zarray"] = json.dumps({
                "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": obj.dtype.str,
                "compressor": compressor, "filters": filters,
                "fill_value": json_fill(obj.fillvalue), "order": "C"})
            dsid = obj.id
            if obj.chunks is None:
                off = dsid.get_offset()
                if off is not None:
                    key = ".".join("0" for _ in shape) or "0"
                    refs[name + "/" + key] = [url, off, dsid.get_storage_size()]
            else:
                for i in range(dsid.get_num_chunks()):
                    info = dsid.get_chunk_info(i)
                    assert info.filter_mask == 0
                    key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, chunks))
                    refs[name + "/" + key] = [url, info.byte_offset, info.size]
            want[name] = np.ascontiguousarray(obj[()]).tobytes()
        f.visititems(visit)
    return refs, want


class PerKeyStore(collections.abc.MutableMapping):
    """fsspec 2022.11's batched cat raises KeyError for a missing key; fetch one at a time."""

    def __init__(self, fs):
        self.fs = fs

    def __getitem__(self, key):
        try:
            return self.fs.cat_file(key)
        except (FileNotFoundError, KeyError):
            raise KeyError(key)

    def __contains__(self, key):
        return key in self.fs.references

    def __iter__(self):
        return iter(self.fs.references)

    def __len__(self):
        return len(self.fs.references)

    def __setitem__(self, key, value):
        raise PermissionError("read-only")

    def __delitem__(self, key):
        raise PermissionError("read-only")


def zarr_python_bytes(refs, names, **kw):
    """{name: C-order bytes} as zarr-python reads the references through fsspec."""
    fs = fsspec.filesystem("reference", fo=refs, **kw)
    root = zarr.open_group(store=zarr.storage.KVStore(PerKeyStore(fs)), mode="r")
    return {n: zfmount.expected_bytes(root[n]) for n in names}


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def make_netcdf(path):
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("y", 37)
        ds.createDimension("x", 53)
        t = ds.createVariable("temp", "f4", ("time", "y", "x"), zlib=True, shuffle=True,
                              complevel=4, chunksizes=(2, 16, 16))
        t[0:5] = rng.normal(280, 10, (5, 37, 53)).astype("f4")
        c = ds.createVariable("counts", "i2", ("y", "x"), contiguous=True)
        c[:] = np.arange(37 * 53).reshape(37, 53) % 30000
        b = ds.createVariable("big", ">f8", ("y", "x"), zlib=True, shuffle=True,
                              chunksizes=(10, 10), endian="big")
        b[:] = np.linspace(-5, 5, 37 * 53).reshape(37, 53)
        s = ds.createVariable("sparse", "i4", ("y", "x"), chunksizes=(10, 10), fill_value=-7)
        s[0:10, 0:10] = 1
        s[30:37, 50:53] = 2
        tm = ds.createVariable("time", "f8", ("time",))
        tm[:] = np.arange(5) * 3600.0
        g = ds.createGroup("sub")
        g.createDimension("n", 100)
        u = g.createVariable("bytes", "u1", ("n",), zlib=True, chunksizes=(16,))
        u[:] = np.arange(100, dtype="u1") * 3
        h = g.createGroup("deeper")
        q = h.createVariable("q", "u8", ("time", "n"), zlib=True, shuffle=True)
        q[0:3, :] = np.arange(300, dtype="u8").reshape(3, 100) << 40


def make_hdf5(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", data=np.linspace(0, 1, 600).reshape(20, 30))
        f.create_dataset("gz_shuffle", data=np.arange(5000, dtype=">i4").reshape(50, 100),
                         chunks=(16, 32), compression="gzip", shuffle=True)
        d = f.create_dataset("partial", shape=(100, 100), dtype="u1", chunks=(25, 25),
                             fillvalue=9)
        d[0:25, 0:50] = 200
        f.create_dataset("never_written", shape=(10,), dtype="<f4", fillvalue=1.5)
        g = f.create_group("g1/g2")
        g.create_dataset("h", data=np.arange(333, dtype="<i2"), chunks=(50,), compression="gzip")
        r = f.create_dataset("resizable", shape=(3, 10), maxshape=(None, 10), chunks=(2, 10),
                             dtype="<u4")
        r[:] = 5
        r.resize((7, 10))
        r[5:7] = 6


class Local(zfmount.MountsTestCase):

    @classmethod
    def mount_all(cls):
        cls.nc = os.path.join(TMP, "data.nc")
        cls.h5 = os.path.join(TMP, "data.h5")
        make_netcdf(cls.nc)
        make_hdf5(cls.h5)
        cls.nc_refs, cls.nc_want = refs_from_hdf5(cls.nc, cls.nc)
        cls.h5_refs, cls.h5_want = refs_from_hdf5(cls.h5, cls.h5)
        # the same references with relative and file:// targets, in a subdirectory
        os.makedirs(os.path.join(TMP, "refsdir"))
        rel = {k: (["../data.h5"] + v[1:] if isinstance(v, list) else v)
               for k, v in cls.h5_refs.items()}
        furl = {k: (["file://" + cls.nc] + v[1:] if isinstance(v, list) else v)
                for k, v in cls.nc_refs.items()}
        cls.m_nc = cls.add_mount(write_json(os.path.join(TMP, "nc.json"), cls.nc_refs),
                                 label="nc")
        cls.m_h5 = cls.add_mount(write_json(os.path.join(TMP, "h5.json"), cls.h5_refs),
                                 label="h5")
        cls.m_rel = cls.add_mount(write_json(os.path.join(TMP, "refsdir", "rel.json"), rel),
                                  label="relative")
        cls.m_furl = cls.add_mount(write_json(os.path.join(TMP, "furl.json"),
                                              {"version": 1, "refs": furl}), label="file-url")
        # version 1: templates, gen, inline text/JSON/base64
        cls.grid = np.arange(12 * 9 * 10, dtype="<f8").reshape(12 * 10, 9) / 7
        cs = (10, 3)
        with open(os.path.join(TMP, "grid.bin"), "wb") as f:
            f.write(b"HEADER" * 10 + b"....")  # 64 bytes
            for i in range(12):
                for j in range(3):
                    f.write(np.ascontiguousarray(
                        cls.grid[i * 10:(i + 1) * 10, j * 3:(j + 1) * 3]).tobytes())
        cls.small = np.array([1, -2, 3, -4], dtype="<i8")
        zarray = {"zarr_format": 2, "shape": list(cls.grid.shape), "chunks": list(cs),
                  "dtype": "<f8", "compressor": None, "filters": None, "fill_value": 0.0,
                  "order": "C"}
        cls.v1 = {
            "version": 1,
            "templates": {"f": "grid.bin", "d": TMP, "nm": "{{base}}.bin"},
            "gen": [{"key": "grid/{{i}}.{{j}}", "url": "{{d}}/{{f}}",
                     "offset": "{{64 + (i * 3 + j) * 240}}", "length": "240",
                     "dimensions": {"i": {"stop": 12}, "j": {"start": 0, "stop": 3, "step": 1}}}],
            "refs": {
                ".zgroup": json.dumps({"zarr_format": 2}),
                ".zattrs": json.dumps({"title": "v1"}),
                "grid/.zarray": json.dumps(zarray),
                "small/.zarray": json.dumps(dict(zarray, shape=[4], chunks=[2], dtype="<i8")),
                "small/0": "base64:" + base64.b64encode(cls.small[:2].tobytes()).decode(),
                "small/1": "base64:" + base64.b64encode(cls.small[2:].tobytes()).decode(),
                "again/.zarray": json.dumps(dict(zarray, shape=[10, 3], chunks=[10, 3])),
                "again/0.0": ["{{d}}/{{nm(base='grid')}}", 64, 240],
            },
        }
        cls.m_v1 = cls.add_mount(write_json(os.path.join(TMP, "v1.json"), cls.v1), label="v1")
        # a root array: named after the reference file without .json
        cls.m_root = cls.add_mount(write_json(os.path.join(TMP, "temperature.zarr.json"), {
            ".zarray": json.dumps(dict(zarray, shape=[4], chunks=[3], dtype="<i8",
                                       fill_value=-9)),
            "0": "base64:" + base64.b64encode(cls.small[:3].tobytes()).decode()}), label="root")
        # inline JSON objects as values (not strings), an array whose range is past the end
        bad = dict(cls.h5_refs)
        bad[".zattrs"] = {"k": [1, 2]}
        bad["contig/.zarray"] = json.loads(bad["contig/.zarray"])
        bad["g1/g2/h/3"] = [cls.h5, os.path.getsize(cls.h5) - 10, 100]
        bad["gone/.zarray"] = bad["g1/g2/h/.zarray"]
        bad["gone/0"] = [os.path.join(TMP, "gone.h5"), 0, 10]
        open(os.path.join(TMP, "gone.h5"), "wb").close()
        cls.m_bad = cls.add_mount(write_json(os.path.join(TMP, "bad.json"), bad), label="bad")
        os.unlink(os.path.join(TMP, "gone.h5"))

    def check(self, m, want, other=None):
        self.assertTrue(want)
        for name, data in sorted(want.items()):
            with self.subTest(mount=m.label, array=name):
                got = read_file(m.path(name))
                self.assertEqual(len(got), len(data), name)
                self.assertEqual(got, data, "%s differs from h5py" % name)
                if other is not None:
                    self.assertEqual(got, other[name], "%s differs from zarr-python" % name)

    def test_01_netcdf(self):
        zp = zarr_python_bytes(self.nc_refs, list(self.nc_want))
        self.check(self.m_nc, self.nc_want, zp)
        with netCDF4.Dataset(self.nc) as ds:
            ds.set_auto_mask(False)
            self.assertEqual(read_file(self.m_nc.path("temp")),
                             np.ascontiguousarray(ds["temp"][:], dtype="f4").tobytes())
            # netCDF shows q with the unlimited dimension's current length (5); its HDF5 dataset,
            # which the references describe as kerchunk does, holds the 3 rows written
            self.assertEqual(read_file(self.m_nc.path("sub", "deeper", "q")),
                             np.ascontiguousarray(ds["sub/deeper/q"][:3], dtype="u8").tobytes())
            self.assertEqual(ds.dimensions["time"].isunlimited(), True)
        self.assertEqual(os.stat(self.m_nc.path("temp")).st_size, 5 * 37 * 53 * 4)
        self.assertEqual(os.getxattr(self.m_nc.path("big"), "user.zarr.dtype"), b">f8")
        self.assertIn("deeper", os.listdir(self.m_nc.path("sub")))
        log("  NetCDF4: %d arrays as h5py, netCDF4 and zarr-python read them" % len(self.nc_want))

    def test_02_hdf5(self):
        zp = zarr_python_bytes(self.h5_refs, list(self.h5_want))
        self.check(self.m_h5, self.h5_want, zp)
        self.assertEqual(read_file(self.m_h5.path("never_written")),
                         np.full(10, 1.5, "<f4").tobytes())
        log("  HDF5: %d arrays as h5py and zarr-python read them" % len(self.h5_want))

    def test_03_relative_and_file_url_targets(self):
        self.check(self.m_rel, self.h5_want)
        self.check(self.m_furl, self.nc_want)

    def test_04_v1_templates_gen_inline(self):
        zp = zarr_python_bytes(self.v1, ["grid", "small", "again"], simple_templates=False)
        self.assertEqual(read_file(self.m_v1.path("grid")), self.grid.tobytes())
        self.assertEqual(read_file(self.m_v1.path("grid")), zp["grid"])
        self.assertEqual(read_file(self.m_v1.path("small")), self.small.tobytes())
        self.assertEqual(read_file(self.m_v1.path("small")), zp["small"])
        self.assertEqual(read_file(self.m_v1.path("again")),
                         np.ascontiguousarray(self.grid[:10, :3]).tobytes())
        self.assertEqual(json.loads(os.getxattr(self.m_v1.mnt, "user.zarr.attributes")),
                         {"title": "v1"})
        log("  version 1: 36 generated chunk keys, templates, base64 values")

    def test_04b_root_array(self):
        self.assertEqual(os.listdir(self.m_root.mnt), ["temperature"])
        self.assertEqual(read_file(self.m_root.path("temperature")),
                         np.array([1, -2, 3, -9], "<i8").tobytes())

    def test_05_past_the_end_and_missing_target(self):
        with self.assertRaises(OSError) as cm:
            read_file(self.m_bad.path("g1", "g2", "h"))
        self.assertEqual(cm.exception.errno, errno.EIO)
        with self.assertRaises(OSError) as cm:
            read_file(self.m_bad.path("gone"))
        self.assertEqual(cm.exception.errno, errno.EIO)
        for name in ("contig", "gz_shuffle", "partial", "resizable"):
            self.assertEqual(read_file(self.m_bad.path(name)), self.h5_want[name])
        self.assertEqual(json.loads(os.getxattr(self.m_bad.mnt, "user.zarr.attributes")),
                         {"k": [1, 2]})
        err = self.m_bad.stderr_text()
        self.assertIn("g1/g2/h/3: target %s" % self.h5, err)
        self.assertIn("past the end", err)
        self.assertIn("gone/0: target", err)
        log("  a range past the end: EIO on that array only, logged with key and target")

    def test_06_read_only(self):
        with self.assertRaises(OSError) as cm:
            with open(self.m_h5.path("contig"), "r+b") as f:
                f.write(b"x")
        self.assertIn(cm.exception.errno, (errno.EROFS, errno.EACCES, errno.EPERM))

    def test_07_partial_reads(self):
        want = self.nc_want["temp"]
        with open(self.m_nc.path("temp"), "rb") as f:
            for off in (0, 3, 4095, 20000, len(want) - 7):
                f.seek(off)
                self.assertEqual(f.read(1001), want[off:off + 1001])


class Refused(zfmount.TestCase):

    def refused(self, path, what, needle):
        mnt = tempfile.mkdtemp(prefix="zf-refs-mnt-")
        try:
            r = subprocess.run([zfmount.ZARRFS, "-f", path, mnt], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("zarrfs: "), lines[0])
            self.assertIn(needle, lines[0])
            self.assertFalse(zfmount.fuse_mounted_at(mnt))
            log("  %s: %s" % (what, lines[0]))
        finally:
            os.rmdir(mnt)

    def test_01_refused(self):
        p = os.path.join(TMP, "malformed.json")
        with open(p, "w") as f:
            f.write('{"version": 1, "refs": {".zgroup": "{}", ')
        self.refused(p, "malformed JSON", "not valid JSON")
        p = write_json(os.path.join(TMP, "tmpl.json"),
                       {"version": 1, "refs": {".zgroup": "{}", "a/0": ["{{nope}}/x", 0, 1]}})
        self.refused(p, "a template that does not resolve", "a/0: template does not resolve")
        p = os.path.join(TMP, "refs.parq")
        with open(p, "wb") as f:
            f.write(b"PAR1" + b"\0" * 20 + b"PAR1")
        self.refused(p, "Parquet", "Parquet")
        pq = os.path.join(TMP, "pq")
        os.makedirs(pq)
        write_json(os.path.join(pq, ".zmetadata"), {"metadata": {}, "record_size": 100000})
        self.refused(pq, "a Parquet reference directory", "Parquet")
        p = write_json(os.path.join(TMP, "v2.json"), {"version": 2, "refs": {}})
        self.refused(p, "another version", "version")
        p = write_json(os.path.join(TMP, "nodir.json"),
                       {".zgroup": "{}", "a/0": [os.path.join(TMP, "no", "such.h5"), 0, 8]})
        self.refused(p, "a target directory that does not exist", "a/0: target")


class OverHttp(zfmount.TestCase):
    """HDF5 and NetCDF files served by nginx; references to http:// targets."""

    @classmethod
    def setUpClass(cls):
        cls.srv = os.path.join(TMP, "srv")
        os.makedirs(os.path.join(cls.srv, "files"))
        cls.nc = os.path.join(cls.srv, "files", "data.nc")
        cls.h5 = os.path.join(cls.srv, "files", "data.h5")
        make_netcdf(cls.nc)
        make_hdf5(cls.h5)
        cls.ng = rs.Nginx(cls.srv, autoindex=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.ng.stop()

    def test_01_http_targets(self):
        nc_refs, nc_want = refs_from_hdf5(self.nc, self.ng.url("files/data.nc"))
        h5_refs, h5_want = refs_from_hdf5(self.h5, self.ng.url("files/data.h5"))
        both = dict(nc_refs)
        both.update({"h5/" + k: v for k, v in h5_refs.items()})
        p = write_json(os.path.join(TMP, "http.json"), both)
        mark = self.ng.access_mark()
        with zfmount.Mount(p, label="http-targets") as m:
            for name, data in sorted(nc_want.items()):
                self.assertEqual(read_file(m.path(name)), data, name)
            for name, data in sorted(h5_want.items()):
                self.assertEqual(read_file(m.path("h5", name)), data, name)
            with open(m.path(".zarrfs-stats")) as f:
                store_stats = json.load(f)["store"]
        entries = [e for e in self.ng.access_entries(mark) if e.path.startswith("files/")]
        self.assertTrue(entries)
        # .zarrfs-stats counts the requests to the targets, as nginx saw them
        self.assertEqual(store_stats["requests"], len(entries))
        self.assertEqual(store_stats["errors"], 0)
        self.assertTrue(all(e.range for e in entries), "a whole-file GET")
        zp = zarr_python_bytes(nc_refs, ["temp", "sparse"])
        self.assertEqual(zp["temp"], nc_want["temp"])
        log("  http targets: %d arrays byte-exact, %d range requests"
            % (len(nc_want) + len(h5_want), len(entries)))

    def test_02_reference_file_by_url(self):
        refs, want = refs_from_hdf5(self.h5, "files/data.h5")  # relative to the JSON's URL
        write_json(os.path.join(self.srv, "refs.json"), {"version": 1, "refs": refs})
        with zfmount.Mount(self.ng.url("refs.json"), label="http-refs") as m:
            for name, data in sorted(want.items()):
                self.assertEqual(read_file(m.path(name)), data, name)
        log("  the reference file by URL, relative targets: %d arrays" % len(want))

    def test_03_unreachable_target(self):
        refs, want = refs_from_hdf5(self.h5, "http://127.0.0.1:9/data.h5")
        p = write_json(os.path.join(TMP, "unreachable.json"), refs)
        with zfmount.Mount(p, options=["retries=0", "timeout=5"], label="unreachable") as m:
            with self.assertRaises(OSError) as cm:
                read_file(m.path("gz_shuffle"))
            self.assertEqual(cm.exception.errno, errno.EIO)
            self.assertIn("gz_shuffle/0.0: target http://127.0.0.1:9/data.h5", m.stderr_text())
        log("  an unreachable target: EIO, logged with key and target")


class OverS3(zfmount.TestCase):
    """s3:// targets and an s3:// reference file (s3rver behind the SigV4-checking proxy)."""

    BUCKET = "zarrfs"
    KEY, SECRET = "AKIAZARRFSTEST000001", "zarrfs/Test+Secret=Key0123456789abcdefXYZ"

    @classmethod
    def setUpClass(cls):
        cls.h5 = os.path.join(TMP, "s3data.h5")
        make_hdf5(cls.h5)
        cls.s3 = rs.S3rver([cls.BUCKET]).start()
        cls.proxy = rs.SigV4Proxy(cls.s3.port, {cls.KEY: cls.SECRET},
                                  region="us-east-1").start()
        cls.client = cls.s3.client()
        cls.client.put(cls.BUCKET, "dir/data.h5", read_file(cls.h5))

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.s3.stop()

    def test_01_s3_targets(self):
        opts = ["endpoint=" + self.proxy.endpoint(), "region=us-east-1", "retries=2"]
        with rs.aws_env(AWS_ACCESS_KEY_ID=self.KEY, AWS_SECRET_ACCESS_KEY=self.SECRET):
            refs, want = refs_from_hdf5(self.h5, "s3://%s/dir/data.h5" % self.BUCKET)
            p = write_json(os.path.join(TMP, "s3.json"), refs)
            with zfmount.Mount(p, options=opts, label="s3-targets") as m:
                for name, data in sorted(want.items()):
                    self.assertEqual(read_file(m.path(name)), data, name)
            rel, _ = refs_from_hdf5(self.h5, "data.h5")
            self.client.put(self.BUCKET, "dir/refs.json", json.dumps(rel).encode())
            with zfmount.Mount("s3://%s/dir/refs.json" % self.BUCKET, options=opts,
                               label="s3-refs") as m:
                for name, data in sorted(want.items()):
                    self.assertEqual(read_file(m.path(name)), data, name)
            log("  s3:// targets and an s3:// reference file: %d arrays byte-exact" % len(want))


if __name__ == "__main__":
    try:
        zfmount.main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
