#!/usr/bin/python3
"""netCDF classic views (issue 20, `-o sidecars=nc`): GROUP.nc beside each group (the root
group's STORE.nc), a netCDF classic file (CDF-2, CDF-5 where a type needs it) of the arrays
directly in the group, their bytes big-endian after the header.

Checked with the real readers against the Zarr side: ncdump and ncks (netcdf-bin, nco), CDO
(cdo), netCDF4-python, xarray (open_dataset of the view against open_zarr of the store, both
with decode_cf=False) and scipy's netCDF reader for the CDF-2 cases. The stores are written by
xarray (Debian's python3-xarray, Zarr v2) and, for Zarr v3 with dimension_names, by hand (the
v3 spec's bytes codec: the chunk files are raw little-endian arrays; and sharded, gzip'ed inner
chunks, served by s3rver, whose view must equal a local v2 directory's of the same data).
"""

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

warnings.filterwarnings("ignore", category=RuntimeWarning)
try:
    import xarray as xr
except ImportError:  # pragma: no cover
    xr = None
try:
    import netCDF4
except ImportError:  # pragma: no cover
    netCDF4 = None
try:
    from scipy.io import netcdf_file
except ImportError:  # pragma: no cover
    netcdf_file = None

WORK = None


def dataset(time_dtype):
    t = np.arange(6).astype(time_dtype)
    lat = np.linspace(-60, 60, 9).astype("f4")
    lon = np.linspace(0, 350, 12).astype("f4")
    temp = (280 + np.sin(np.arange(6 * 9 * 12)).reshape(6, 9, 12) * 20).astype("f4")
    pr = (np.arange(6 * 9 * 12).reshape(6, 9, 12) % 700 - 200).astype("i2")
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp,
                  {"units": "K", "long_name": "air temperature", "valid_range": [150.0, 350.0]}),
         "pr": (("time", "lat", "lon"), pr,
                {"units": "mm", "scale_factor": 0.1, "flag_values": [1, 2, 3]})},
        coords={"time": ("time", t, {"units": "days since 2000-01-01", "calendar": "standard"}),
                "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
                "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"})},
        attrs={"title": "a test dataset", "Conventions": "CF-1.8", "version": 3,
               "levels": [1000.0, 850.0, 500.0]})
    ds["temp"].encoding["_FillValue"] = -9999.0
    ds["pr"].encoding["_FillValue"] = -1
    for c in ("lat", "lon"):
        ds[c].encoding["_FillValue"] = None
    return ds


def write_v3(root):
    """A Zarr v3 group with dimension_names: t2m (time, lat, lon) float32 little-endian in 2 x 2
    x 3 chunks, lat float64 big-endian, a u2 array (CDF-5), a complex one (left out)."""
    def arr(name, data, chunks, dims, fill, endian="little"):
        d = os.path.join(root, name)
        os.makedirs(d)
        meta = {"zarr_format": 3, "node_type": "array", "shape": list(data.shape),
                "data_type": {"<f4": "float32", ">f8": "float64", "<u2": "uint16",
                              "<c8": "complex64"}[data.dtype.str],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill, "codecs": [{"name": "bytes",
                                                 "configuration": {"endian": endian}}],
                "dimension_names": dims, "attributes": {"units": "K"} if name == "t2m" else {}}
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(meta, f)
        grid = [range(0, s, c) for s, c in zip(data.shape, chunks)]
        for starts in np.ndindex(*[len(g) for g in grid]):
            sl = tuple(slice(g[i], g[i] + c) for g, i, c in zip(grid, starts, chunks))
            block = np.zeros(chunks, data.dtype)
            part = data[sl]
            block[tuple(slice(0, s) for s in part.shape)] = part
            key = os.path.join(d, "c", *[str(i) for i in starts])
            os.makedirs(os.path.dirname(key), exist_ok=True)
            dt = block.dtype.newbyteorder("<" if endian == "little" else ">")
            with open(key, "wb") as f:
                f.write(block.astype(dt).tobytes())
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group",
                   "attributes": {"source": "hand-written v3"}}, f)
    t2m = (np.arange(3 * 4 * 5, dtype="<f4") / 4 - 3).reshape(3, 4, 5)
    arr("t2m", t2m, [2, 2, 3], ["time", "lat", "lon"], -1.0)
    lat = np.linspace(10, 40, 4).astype(">f8")
    arr("lat", lat, [3], ["lat"], 0.0, endian="big")
    cnt = (np.arange(3 * 5) * 1000).astype("<u2").reshape(3, 5)
    arr("count", cnt, [3, 5], ["time", "lon"], 0)
    arr("cplx", np.ones((3,), "<c8"), [3], ["time"], [0.0, 0.0])
    return {"t2m": t2m, "lat": lat.astype("<f8"), "count": cnt}


def build(root):
    out = {}
    ds = dataset("i8")  # int64 time: CDF-5
    ds.to_zarr(os.path.join(root, "cdf5.zarr"), mode="w", consolidated=True)
    ds2 = dataset("i4")  # every type in CDF-2
    ds2.to_zarr(os.path.join(root, "cdf2.zarr"), mode="w", consolidated=False)
    out["v3"] = write_v3(os.path.join(root, "v3.zarr"))
    # a v2 hierarchy with what netCDF classic cannot hold, clashing dimension names, subgroups
    g = zarr.open_group(os.path.join(root, "mixed.zarr"), mode="w")
    g.attrs.update({"nested": {"a": [1, "x"]}, "bad name": 1, "ok_flag": True})
    a = g.create_dataset("a", data=np.arange(3, dtype="<f8"), chunks=(2,))
    a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    b = g.create_dataset("b", data=np.arange(4, dtype=">i4"), chunks=(3,))
    b.attrs["_ARRAY_DIMENSIONS"] = ["x"]  # x again, another length
    c = g.create_dataset("c", data=np.arange(6, dtype="<c16").reshape(2, 3), chunks=(2, 3))
    c.attrs["_ARRAY_DIMENSIONS"] = ["y", "z"]
    s = g.create_dataset("s", data=np.array([b"ab", b"cd"]), chunks=(2,))
    s.attrs["_ARRAY_DIMENSIONS"] = ["w"]
    f = g.create_dataset("flag", data=np.array([True, False, True]), chunks=(2,))
    f.attrs["_ARRAY_DIMENSIONS"] = ["v"]
    g.create_dataset("nodims", data=np.arange(10, dtype="<u1").reshape(2, 5), chunks=(1, 5))
    g.create_dataset("bad name", data=np.zeros(2, "<f4"), chunks=(2,))
    sub = g.create_group("sub")
    sub.attrs["where"] = "sub"
    i = sub.create_dataset("inner", data=np.arange(12, dtype="<i2").reshape(3, 4),
                           chunks=(2, 2), fill_value=-5)
    i.attrs["_ARRAY_DIMENSIONS"] = ["r", "q"]
    g.create_group("empty")
    return out


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@unittest.skipIf(xr is None or netCDF4 is None, "python3-xarray or python3-netcdf4 missing")
class NetcdfViews(zfmount.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.expected_v3 = build(WORK)["v3"]
        cls.mounts = {}
        for name in ("cdf5", "cdf2", "v3", "mixed"):
            m = zfmount.Mount(os.path.join(WORK, name + ".zarr"), options=["sidecars=nc"],
                              label=name)
            m.start()
            cls.mounts[name] = m

    @classmethod
    def tearDownClass(cls):
        for m in cls.mounts.values():
            m.stop()

    def view(self, name):
        return self.mounts[name].path(name + ".nc")

    def test_placement(self):
        m = self.mounts["mixed"]
        names = set(os.listdir(m.mnt))
        self.assertTrue({"mixed.nc", "sub.nc", "empty.nc", "sub", "a"} <= names, names)
        self.assertNotIn("a.nc", names)
        self.assertNotIn("inner.nc", os.listdir(m.path("sub")))
        self.assertErrno(errno.ENOENT, os.stat, m.path("a.nc"))
        self.assertErrno(errno.ENOENT, os.stat, m.path("nosuch.nc"))
        self.assertErrno((errno.EACCES, errno.EROFS, errno.EPERM), os.open, m.path("sub.nc"),
                         os.O_WRONLY)
        with netCDF4.Dataset(m.path("sub.nc")) as d:
            self.assertEqual(d.file_format, "NETCDF3_64BIT_OFFSET")
            self.assertEqual(d.getncattr("where"), "sub")
            self.assertTrue(np.array_equal(d["inner"][:].data,
                                           np.arange(12, dtype="<i2").reshape(3, 4)))
            self.assertEqual(d["inner"].getncattr("_FillValue"), -5)
        with netCDF4.Dataset(m.path("empty.nc")) as d:
            self.assertEqual(len(d.variables), 0)

    def test_xarray_equal(self):
        for name in ("cdf5", "cdf2"):
            with xr.open_dataset(self.view(name), decode_cf=False) as got, \
                    xr.open_zarr(os.path.join(WORK, name + ".zarr"), decode_cf=False) as want:
                self.assertTrue(got.identical(want), "%s:\n%s\n%s" % (name, got, want))
                for v in want.variables:
                    self.assertEqual(got[v].dtype, want[v].dtype, (name, v))
            with netCDF4.Dataset(self.view(name)) as d:
                self.assertEqual(d.file_format, "NETCDF3_64BIT_DATA" if name == "cdf5"
                                 else "NETCDF3_64BIT_OFFSET")

    def test_ncdump_ncks(self):
        r = run(["ncdump", "-h", self.view("cdf5")])
        self.assertEqual(r.returncode, 0, r.stderr)
        for text in ("time = 6 ;", "lat = 9 ;", "lon = 12 ;", "float temp(time, lat, lon) ;",
                     "short pr(time, lat, lon) ;", 'temp:units = "K" ;',
                     "temp:_FillValue = -9999.f ;", "pr:_FillValue = -1s ;",
                     "pr:flag_values = 1, 2, 3 ;", ':title = "a test dataset" ;',
                     ":levels = 1000., 850., 500. ;"):
            self.assertIn(text, r.stdout)
        want = xr.open_zarr(os.path.join(WORK, "cdf2.zarr"), decode_cf=False)
        r = run(["ncdump", "-v", "pr", "-p", "9,17", self.view("cdf2")])
        self.assertEqual(r.returncode, 0, r.stderr)
        data = r.stdout.split("pr =", 1)[1].split(";")[0]
        # ncdump prints values equal to _FillValue (-1 here) as "_"
        vals = [-1 if x == "_" else int(x)
                for x in data.replace("\n", " ").replace(",", " ").split()]
        self.assertEqual(vals, want["pr"].values.ravel().tolist())
        r = run(["ncks", "-H", "-C", "-v", "temp", "-d", "time,2", "-d", "lat,3",
                 self.view("cdf2")])
        self.assertEqual(r.returncode, 0, r.stderr)
        # NCO 5's CDL: "temp = v, v, ... ;" (7 significant digits)
        got = [float(x) for x in r.stdout.split("temp =", 1)[1].split(";")[0].split(",")]
        self.assertTrue(np.allclose(got, want["temp"].values[2, 3], rtol=1e-6), (got, r.stdout))

    def test_cdo(self):
        r = run(["cdo", "-s", "sinfo", self.view("cdf2")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("points=108 (12x9)", r.stdout)
        r = run(["cdo", "-s", "outputtab,value", "-fldmean", "-selvar,temp", self.view("cdf2")])
        self.assertEqual(r.returncode, 0, r.stderr)
        vals = [float(x) for x in r.stdout.split() if not x.startswith("#") and x != "value"]
        self.assertEqual(len(vals), 6, r.stdout)
        want = xr.open_zarr(os.path.join(WORK, "cdf2.zarr"))["temp"].values
        for t in range(6):  # an area-weighted mean lies within the field's range
            self.assertTrue(want[t].min() <= vals[t] <= want[t].max(), (t, vals[t]))

    @unittest.skipIf(netcdf_file is None, "python3-scipy missing")
    def test_scipy_cdf2(self):
        want = xr.open_zarr(os.path.join(WORK, "cdf2.zarr"), decode_cf=False)
        f = netcdf_file(self.view("cdf2"), mmap=False)
        try:
            self.assertEqual(f.version_byte, 2)
            for v in ("temp", "pr", "lat", "lon", "time"):
                self.assertTrue(np.array_equal(f.variables[v].data, want[v].values), v)
            self.assertEqual(f.title, b"a test dataset")
        finally:
            f.close()

    def test_v3_dimension_names(self):
        exp = self.expected_v3
        r = run(["ncdump", "-h", self.view("v3")])
        self.assertEqual(r.returncode, 0, r.stderr)
        for text in ("time = 3 ;", "lat = 4 ;", "lon = 5 ;", "float t2m(time, lat, lon) ;",
                     "double lat(lat) ;", "ushort count(time, lon) ;",
                     'zarrfs_omitted_variables = "cplx'):
            self.assertIn(text, r.stdout)
        with netCDF4.Dataset(self.view("v3")) as d:
            self.assertEqual(d.file_format, "NETCDF3_64BIT_DATA")
            for v, a in exp.items():
                self.assertTrue(np.array_equal(d[v][:].data, a), v)
            self.assertEqual(d["t2m"].getncattr("_FillValue"), -1.0)
            self.assertEqual(d.getncattr("source"), "hand-written v3")

    def test_left_out_and_renamed(self):
        m = self.mounts["mixed"]
        r = run(["ncdump", "-h", self.view("mixed")])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("x = 3 ;", out)
        self.assertIn("x_4 = 4 ;", out)  # the second length of x, renamed
        self.assertIn("double a(x) ;", out)
        self.assertIn("int b(x_4) ;", out)
        self.assertIn('flag:dtype = "bool" ;', out)
        self.assertIn("ubyte nodims(nodims_dim0, nodims_dim1) ;", out)
        omitted = out.split("zarrfs_omitted_variables = ", 1)[1].split(";")[0]
        for name in ("bad name", "c (", "s ("):
            self.assertIn(name, omitted)
        self.assertIn(':nested = "{\\"a\\":[1,\\"x\\"]}" ;', out)
        self.assertIn(':ok_flag = "true" ;', out)
        self.assertNotIn("bad name =", out)
        with netCDF4.Dataset(m.path("mixed.nc")) as d:
            self.assertTrue(np.array_equal(d["b"][:].data, np.arange(4)))
            self.assertTrue(np.array_equal(d["flag"][:].data, [1, 0, 1]))

    def test_partial_reads(self):
        """Reads at any offset and length give the bytes of a whole read (item swapping across
        read boundaries, the padding between variables)."""
        path = self.view("cdf5")
        with open(path, "rb") as f:
            whole = f.read()
        self.assertEqual(len(whole), os.stat(path).st_size)
        rnd = random.Random(20)
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(300):
                off = rnd.randrange(len(whole))
                n = rnd.randrange(1, 40)
                self.assertEqual(os.pread(fd, n, off), whole[off:off + n], (off, n))
            self.assertEqual(os.pread(fd, 100, len(whole) + 5), b"")
        finally:
            os.close(fd)


@unittest.skipIf(netCDF4 is None, "python3-netcdf4 missing")
class OverHttp(zfmount.TestCase):
    def test_same_view_over_http(self):
        """The same store over HTTP (nginx) gives the same view, byte for byte."""
        import remote_servers
        tmp = tempfile.mkdtemp(prefix="zarrfs-nc-http-")
        try:
            exp = write_v3(os.path.join(tmp, "v3.zarr"))
            with remote_servers.Nginx(tmp) as srv, \
                    zfmount.Mount(os.path.join(tmp, "v3.zarr"), options=["sidecars=nc"],
                                  label="local") as local, \
                    zfmount.Mount(srv.url("v3.zarr"), options=["sidecars=nc"],
                                  label="http") as remote:
                with open(local.path("v3.nc"), "rb") as f:
                    want = f.read()
                with open(remote.path("v3.nc"), "rb") as f:
                    self.assertEqual(f.read(), want)
                with netCDF4.Dataset(remote.path("v3.nc")) as d:
                    for v, a in exp.items():
                        self.assertTrue(np.array_equal(d[v][:].data, a), v)
        finally:
            remote_servers.stop_all()
            shutil.rmtree(tmp)


@unittest.skipIf(netCDF4 is None, "python3-netcdf4 missing")
class ShardedOnS3(zfmount.TestCase):
    def test_same_view_as_local_v2(self):
        """The same data as a Zarr v3 store with sharding (inner chunks gzip'ed) on S3 (s3rver)
        and as a local Zarr v2 directory written by zarr-python (zlib) give the same netCDF
        view, byte for byte, and netCDF4 reads the data back from the S3 one."""
        import numcodecs
        import remote_servers as rs
        import gen_v3_common as c3
        import test_v3_sharding as ts
        tmp = tempfile.mkdtemp(prefix="zarrfs-nc-s3-")
        rng = np.random.default_rng(20)
        # name: data, dimension names, fill value, v2 chunks, v3 shard and inner chunk shapes,
        # attributes (in sorted order, as zarr-python writes .zattrs)
        arrays = {
            "count": ((np.arange(6 * 10) % 300 - 100).astype("<i2").reshape(6, 10), ["time", "lon"],
                      -1, (6, 5), (6, 10), (3, 5), {}),
            "lat": (np.linspace(-70, 70, 8).astype("<f8"), ["lat"], 0.0, (4,), (8,), (4,),
                    {"units": "degrees_north"}),
            "t2m": ((rng.standard_normal((6, 8, 10)) * 10 + 280).astype("<f4"),
                    ["time", "lat", "lon"], -9999.0, (3, 4, 5), (3, 8, 10), (3, 4, 5),
                    {"long_name": "2 m temperature", "units": "K"}),
        }
        v3_types = {"<i2": "int16", "<f8": "float64", "<f4": "float32"}
        try:
            g2 = zarr.open_group(os.path.join(tmp, "v2", "ds.zarr"), mode="w")
            g2.attrs["source"] = "the same data in two dialects"
            root3 = os.path.join(tmp, "v3", "ds.zarr")
            c3.write_files(root3, {"zarr.json": c3.v3_group_doc(
                {"source": "the same data in two dialects"})})
            for name, (data, dims, fill, chunks, shard, inner, attrs) in arrays.items():
                a = g2.create_dataset(name, data=data, chunks=chunks, fill_value=fill,
                                      compressor=numcodecs.Zlib(1))
                a.attrs.update(dict(attrs, _ARRAY_DIMENSIONS=dims))
                ts.write_array(root3, name, v3_types[data.dtype.str], data, shard,
                               [ts.shard_conf(inner, [ts.LE, ts.GZ])], fill=fill,
                               dimension_names=dims)
                doc = os.path.join(root3, name, "zarr.json")
                with open(doc) as f:
                    meta = json.load(f)
                meta["attributes"] = attrs
                with open(doc, "w") as f:
                    json.dump(meta, f)
            with rs.S3rver(["nc"]) as s3:
                s3.client().upload_tree(root3, "nc", "ds.zarr")
                with rs.aws_env(AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"), \
                        zfmount.Mount("s3://nc/ds.zarr", label="s3",
                                      options=["endpoint=" + s3.endpoint(), "region=us-east-1",
                                               "sidecars=nc"]) as remote, \
                        zfmount.Mount(os.path.join(tmp, "v2", "ds.zarr"), label="local-v2",
                                      options=["sidecars=nc"]) as local:
                    with open(local.path("ds.nc"), "rb") as f:
                        want = f.read()
                    with open(remote.path("ds.nc"), "rb") as f:
                        got = f.read()
                    self.assertEqual(len(got), len(want))
                    self.assertEqual(got, want)
                    with netCDF4.Dataset(remote.path("ds.nc")) as d:
                        self.assertEqual(d.getncattr("source"), "the same data in two dialects")
                        for name, (data, dims, *_rest) in arrays.items():
                            self.assertEqual(list(d[name].dimensions), dims, name)
                            self.assertTrue(np.array_equal(d[name][:].data, data), name)
                        self.assertEqual(d["t2m"].getncattr("units"), "K")
        finally:
            rs.stop_all()
            shutil.rmtree(tmp)


@unittest.skipIf(xr is None or netCDF4 is None, "python3-xarray or python3-netcdf4 missing")
class Changes(zfmount.TestCase):
    def test_resize_attributes_new_array(self):
        tmp = tempfile.mkdtemp(prefix="zarrfs-nc-rw-")
        try:
            g = zarr.open_group(os.path.join(tmp, "s.zarr"), mode="w")
            a = g.create_dataset("v", data=np.arange(20, dtype="<f4").reshape(4, 5), chunks=(2, 5))
            a.attrs["_ARRAY_DIMENSIONS"] = ["t", "x"]
            with zfmount.Mount(os.path.join(tmp, "s.zarr"), options=["rw", "sidecars=nc"]) as m:
                with netCDF4.Dataset(m.path("s.nc")) as d:
                    self.assertEqual(d["v"].shape, (4, 5))
                os.truncate(m.path("v"), 2 * 5 * 4)
                with netCDF4.Dataset(m.path("s.nc")) as d:
                    self.assertEqual(d["v"].shape, (2, 5))
                    self.assertTrue(np.array_equal(d["v"][:].data,
                                                   np.arange(10, dtype="f4").reshape(2, 5)))
                os.setxattr(m.path("v"), "user.zarr.attributes",
                            json.dumps({"_ARRAY_DIMENSIONS": ["t", "x"],
                                        "units": "m"}).encode())
                os.setxattr(m.path(""), "user.zarr.attributes", b'{"title": "changed"}')
                with netCDF4.Dataset(m.path("s.nc")) as d:
                    self.assertEqual(d["v"].getncattr("units"), "m")
                    self.assertEqual(d.getncattr("title"), "changed")
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    WORK = tempfile.mkdtemp(prefix="zarrfs-netcdf-")
    try:
        zfmount.main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
