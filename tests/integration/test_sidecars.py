#!/usr/bin/python3
"""Sidecar headers and .npy views (issue 14, `-o sidecars`).

For each array file NAME: NAME.npy (an NPY header followed by the array's bytes), NAME.hdr
(ENVI), NAME.mhd (MetaImage), NAME.nhdr (detached NRRD), each only for arrays its format can
describe, read-only, with a real node of the same name winning, following changes of what
feeds them (class Changes, issue 21). Checked with the real readers:
numpy.load(mmap_mode="r"), GDAL's ENVI driver (python3-gdal), VTK's vtkMetaImageReader and
vtkNrrdReader (python3-vtk9, skipped when missing). Expected values come from zarr-python 2.13.
Without the option no extra name appears.
"""

import errno
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

try:
    from osgeo import gdal
    gdal.UseExceptions()
except ImportError:  # pragma: no cover
    gdal = None
try:
    import vtk
    from vtk.util import numpy_support
    # python3-vtk9 registers vtkPNrrdReader (MPI) as an override of vtkNrrdReader: use the
    # plain reader
    vtk.vtkObjectFactory.SetAllEnableFlags(0, "vtkNrrdReader")
except ImportError:  # pragma: no cover
    vtk = None

WORK = None
STRUCT = np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "S3"), ("d", "<u2", (2,))])

ARRAYS = {
    # name: (data, chunks)
    "f8_2d": (np.arange(13 * 7, dtype="<f8").reshape(13, 7) / 4, (5, 3)),
    "i2_be_3d": ((np.arange(4 * 6 * 5, dtype="<i2") * 37 - 400).astype(">i2").reshape(4, 6, 5),
                 (3, 4, 2)),
    "u1_2d": (np.arange(9 * 11, dtype="u1").reshape(9, 11), (4, 4)),
    "f4_be_2d": ((np.arange(10 * 3, dtype="<f4") - 5.5).astype(">f4").reshape(10, 3), (3, 3)),
    "f4_be_3d": ((np.arange(3 * 12 * 10, dtype="<f4") / 8 - 20).astype(">f4").reshape(3, 12, 10),
                 (2, 5, 4)),
    "u2_3d": (np.arange(3 * 5 * 4, dtype="<u2").reshape(3, 5, 4) * 1000, (2, 2, 2)),
    "i8_1d": (np.arange(100, dtype="<i8") - 50, (7,)),
    "c16_2d": ((np.arange(6 * 4) + 1j * np.arange(6 * 4)).astype("<c16").reshape(6, 4), (4, 4)),
    "bool_2d": (np.arange(5 * 5).reshape(5, 5) % 3 == 0, (2, 2)),
    "struct_1d": (np.array([(i, i / 3, b"x%d" % i, (i, 2 * i)) for i in range(17)],
                           dtype=STRUCT), (5,)),
    "i4_0d": (np.array(42, dtype="<i4"), ()),
    "big": (np.arange(300 * 400, dtype="<u2").reshape(300, 400), (64, 64)),
}


def build(root):
    g = zarr.open_group(os.path.join(root, "store.zarr"), mode="w")
    for name, (data, chunks) in ARRAYS.items():
        a = g.create_dataset(name, shape=data.shape, chunks=chunks or True, dtype=data.dtype,
                             fill_value=None)
        a[...] = data
    # a real array whose name is a sidecar's name: it wins over f8_2d's .npy view
    r = g.create_dataset("f8_2d.npy", shape=(3,), chunks=(2,), dtype="<i4")
    r[...] = [7, 8, 9]
    # an OME-Zarr image (NGFF 0.4 multiscales): each level gets its own spacing
    ome = g.create_group("ome")
    for lvl, shp in (("0", (4, 20, 30)), ("1", (2, 10, 15))):
        o = ome.create_dataset(lvl, shape=shp, chunks=(2, 8, 8), dtype="<u2")
        o[...] = np.arange(np.prod(shp), dtype="<u2").reshape(shp)
    ome.attrs["multiscales"] = [{
        "version": "0.4",
        "axes": [{"name": "z", "type": "space"}, {"name": "y", "type": "space"},
                 {"name": "x", "type": "space"}],
        "datasets": [
            {"path": "0", "coordinateTransformations": [
                {"type": "scale", "scale": [2.0, 0.5, 0.25]}]},
            {"path": "1", "coordinateTransformations": [
                {"type": "scale", "scale": [4.0, 1.0, 0.5]},
                {"type": "translation", "translation": [1.0, 0.25, 0.125]}]}],
        "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0, 2.0]}],
    }]
    # xarray's dimension names
    xa = g.create_dataset("xr", shape=(11, 12), chunks=(5, 5), dtype="<f4")
    xa[...] = np.arange(132).reshape(11, 12)
    xa.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]
    sub = g.create_group("sub")
    s = sub.create_dataset("inner", shape=(4, 4), chunks=(2, 2), dtype="<i4")
    s[...] = np.arange(16).reshape(4, 4)
    return os.path.join(root, "store.zarr")


def expected(name):
    return zarr.open_group(os.path.join(WORK, "store.zarr"), mode="r")[name][...]


class Sidecars(zfmount.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.store = os.path.join(WORK, "store.zarr")
        cls.m = zfmount.Mount(cls.store, options=["sidecars"])
        cls.m.start()

    @classmethod
    def tearDownClass(cls):
        cls.m.stop()

    def test_listing(self):
        names = set(os.listdir(self.m.mnt))
        for n in ARRAYS:
            self.assertIn(n, names)
            self.assertIn(n + ".npy", names)
        self.assertIn("f8_2d.hdr", names)
        self.assertIn("f8_2d.mhd", names)
        self.assertIn("f8_2d.nhdr", names)
        self.assertIn("i2_be_3d.hdr", names)
        # ENVI: 2-D and 3-D only, no int8/bool-less gaps checked here; structured: npy only
        self.assertNotIn("i8_1d.hdr", names)
        self.assertNotIn("struct_1d.hdr", names)
        self.assertNotIn("struct_1d.mhd", names)
        self.assertNotIn("struct_1d.nhdr", names)
        self.assertNotIn("c16_2d.mhd", names)
        self.assertNotIn("i4_0d.mhd", names)
        self.assertNotIn("sub.npy", names)
        self.assertIn("inner.npy", os.listdir(self.m.path("sub")))
        for absent in ("i8_1d.hdr", "struct_1d.mhd", "sub.npy", "nosuch.npy"):
            self.assertErrno(errno.ENOENT, os.stat, self.m.path(absent))

    def test_npy(self):
        for name in ARRAYS:
            if name == "f8_2d":  # its .npy name belongs to a real array (test_real_node_wins)
                continue
            want = expected(name)
            got = np.load(self.m.path(name + ".npy"), mmap_mode="r")
            self.assertEqual(got.dtype, want.dtype, name)
            self.assertEqual(got.shape, want.shape, name)
            self.assertTrue(np.array_equal(np.asarray(got), want), name)
            plain = np.load(self.m.path(name + ".npy"))
            self.assertTrue(np.array_equal(plain, want), name)
            st = os.stat(self.m.path(name + ".npy"))
            self.assertEqual(st.st_size - os.stat(self.m.path(name)).st_size,
                             got.offset, name)
            self.assertEqual(got.offset % 64, 0, name)
        inner = np.load(self.m.path("sub", "inner.npy"), mmap_mode="r")
        self.assertTrue(np.array_equal(inner, np.arange(16).reshape(4, 4)))

    def test_npy_partial_reads(self):
        path = self.m.path("big.npy")
        with open(path, "rb") as f:
            data = f.read()
        hdr = len(data) - ARRAYS["big"][0].nbytes
        self.assertBytesEqual(data[hdr:], ARRAYS["big"][0].tobytes(), "big.npy")
        with open(path, "rb") as f:
            for off in (0, hdr - 3, hdr, hdr + 12345, len(data) - 5):
                f.seek(off)
                self.assertBytesEqual(f.read(100), data[off:off + 100], "at %d" % off)

    def test_ome_spacing(self):
        def fields(path):
            with open(path) as f:
                return dict(line.split(" = ", 1) for line in f.read().splitlines())
        m0 = fields(self.m.path("ome", "0.mhd"))
        self.assertEqual(m0["DimSize"], "30 20 4")
        self.assertEqual(m0["ElementSpacing"], "0.5 0.5 2")
        self.assertEqual(m0["Offset"], "0 0 0")
        m1 = fields(self.m.path("ome", "1.mhd"))
        self.assertEqual(m1["ElementSpacing"], "1 1 4")
        self.assertEqual(m1["Offset"], "0.25 0.25 1")
        with open(self.m.path("ome", "1.nhdr")) as f:
            nh = f.read()
        self.assertIn("spacings: 1 1 4\n", nh)
        self.assertIn("axis mins: 0.25 0.25 1\n", nh)
        if vtk is not None:
            for lvl, sp, org in (("0", (0.5, 0.5, 2.0), (0, 0, 0)),
                                 ("1", (1.0, 1.0, 4.0), (0.25, 0.25, 1.0))):
                r = vtk.vtkMetaImageReader()
                r.SetFileName(self.m.path("ome", lvl + ".mhd"))
                r.Update()
                self.assertEqual(r.GetOutput().GetSpacing(), sp)
                self.assertEqual(r.GetOutput().GetOrigin(), org)
                r = vtk.vtkNrrdReader()
                r.SetFileName(self.m.path("ome", lvl + ".nhdr"))
                r.Update()
                self.assertEqual(r.GetOutput().GetSpacing(), sp)
                want = expected("ome/" + lvl)
                got = numpy_support.vtk_to_numpy(r.GetOutput().GetPointData().GetScalars())
                self.assertTrue(np.array_equal(got.reshape(want.shape), want))
        # not a level of an image: spacing 1
        self.assertEqual(fields(self.m.path("u2_3d.mhd"))["ElementSpacing"], "1 1 1")

    def test_nrrd_labels(self):
        with open(self.m.path("xr.nhdr")) as f:
            self.assertIn('labels: "lon" "lat"\n', f.read())
        with open(self.m.path("u2_3d.nhdr")) as f:
            self.assertNotIn("labels:", f.read())

    def test_real_node_wins(self):
        with open(self.m.path("f8_2d.npy"), "rb") as f:
            got = f.read()
        self.assertBytesEqual(got, np.array([7, 8, 9], "<i4").tobytes(), "f8_2d.npy")
        self.assertEqual(os.getxattr(self.m.path("f8_2d.npy"), "user.zarr.dtype"), b"<i4")

    def test_read_only(self):
        for n in ("f8_2d.hdr", "u2_3d.npy", "f8_2d.mhd"):
            self.assertErrno((errno.EROFS, errno.EACCES), os.open, self.m.path(n), os.O_RDWR)
            self.assertEqual(os.stat(self.m.path(n)).st_mode & 0o222, 0)

    @unittest.skipIf(gdal is None, "python3-gdal missing")
    def test_gdal_envi(self):
        types = {"f8_2d": gdal.GDT_Float64, "i2_be_3d": gdal.GDT_Int16, "u1_2d": gdal.GDT_Byte,
                 "f4_be_2d": gdal.GDT_Float32, "u2_3d": gdal.GDT_UInt16,
                 "big": gdal.GDT_UInt16, "c16_2d": gdal.GDT_CFloat64,
                 "f4_be_3d": gdal.GDT_Float32}
        for name, gtype in types.items():
            want = expected(name)
            ds = gdal.Open(self.m.path(name))
            self.assertIsNotNone(ds, name)
            self.assertEqual(ds.GetDriver().ShortName, "ENVI", name)
            bands = want.shape[0] if want.ndim == 3 else 1
            self.assertEqual((ds.RasterCount, ds.RasterYSize, ds.RasterXSize),
                             (bands, want.shape[-2], want.shape[-1]), name)
            self.assertEqual(ds.GetRasterBand(1).DataType, gtype, name)
            got = ds.ReadAsArray()
            self.assertTrue(np.array_equal(got, want.astype(want.dtype.newbyteorder("="))), name)
            ds = None
        info = gdal.Info(self.m.path("u2_3d"))
        self.assertIn("Size is 4, 5", info)
        self.assertIn("Type=UInt16", info)

    @unittest.skipIf(vtk is None, "python3-vtk9 missing")
    def test_vtk(self):
        # (vtkMetaImageReader of VTK 9.1 has no 64-bit integers: i8_1d is left out)
        for name in ("f8_2d", "i2_be_3d", "u1_2d", "f4_be_2d", "f4_be_3d", "u2_3d", "big"):
            want = expected(name)
            readers = [(".mhd", vtk.vtkMetaImageReader)]
            # vtkNrrdReader takes a fastest axis of 9 or fewer elements for vector components
            # (its guess, whatever the header's "kinds" say): only larger ones are compared
            if want.shape[-1] > 9:
                readers.append((".nhdr", vtk.vtkNrrdReader))
            for ext, cls in readers:
                r = cls()
                r.SetFileName(self.m.path(name + ext))
                r.Update()
                img = r.GetOutput()
                dims = img.GetDimensions()
                shape = tuple(reversed(want.shape))
                self.assertEqual(dims[:want.ndim], shape, name + ext)
                self.assertEqual(img.GetSpacing()[:want.ndim], (1.0,) * want.ndim, name + ext)
                got = numpy_support.vtk_to_numpy(img.GetPointData().GetScalars())
                self.assertTrue(np.array_equal(got.reshape(want.shape),
                                               want.astype(want.dtype.newbyteorder("="))),
                                name + ext)


def ome_multiscales(level_scales, image_scale):
    """NGFF 0.4 multiscales of levels "0" and "1": each level's scale (and for "1" a
    translation), then the image's scale."""
    return [{
        "version": "0.4",
        "axes": [{"name": "z", "type": "space"}, {"name": "y", "type": "space"},
                 {"name": "x", "type": "space"}],
        "datasets": [
            {"path": "0", "coordinateTransformations": [
                {"type": "scale", "scale": level_scales[0]}]},
            {"path": "1", "coordinateTransformations": [
                {"type": "scale", "scale": level_scales[1]},
                {"type": "translation", "translation": [1.0, 0.25, 0.125]}]}],
        "coordinateTransformations": [{"type": "scale", "scale": image_scale}],
    }]


def ome_geometry(ms, path):
    """(spacing, origin) per dimension (C order) of level `path` of multiscales ms, as NGFF
    defines them: the level's transformations in order, then the image's."""
    m = ms[0]
    ds = next(d for d in m["datasets"] if d["path"] == path)
    spacing, origin = [1.0] * 3, [0.0] * 3
    for t in ds["coordinateTransformations"] + m.get("coordinateTransformations", []):
        for d in range(3):
            if t["type"] == "scale":
                spacing[d] *= t["scale"][d]
                origin[d] *= t["scale"][d]
            else:
                origin[d] += t["translation"][d]
    return spacing, origin


def header_fields(text, sep):
    """{key: value} of a MetaImage (sep " = ") or NRRD (sep ": ") header."""
    return dict(line.split(sep, 1) for line in text.splitlines() if sep in line)


def floats(s):
    return [float(x) for x in s.split()]


class Changes(zfmount.TestCase):
    """The sidecars follow every change that feeds them, seen by a read or a stat right after
    it (no sleeping: the kernel is told; attribute timeouts of -o rw are a second): the group's
    OME-Zarr multiscales (spacing and origin of its levels' headers), an array's own attributes
    (NRRD labels from _ARRAY_DIMENSIONS), a resize (dimensions); a deleted array's sidecars are
    gone at once, and so are those of an array removed from the store behind zarrfs once it
    notices. Expected values are computed from what the test wrote."""

    SHAPES = {"0": (4, 20, 30), "1": (2, 10, 15)}
    SIDECARS = (".hdr", ".mhd", ".nhdr", ".npy", ".tif")

    def make(self, tmp):
        store = os.path.join(tmp, "ome.zarr")
        g = zarr.open_group(store, mode="w")
        ome = g.create_group("ome")
        for lvl, shp in self.SHAPES.items():
            o = ome.create_dataset(lvl, shape=shp, chunks=(2, 8, 8), dtype="<u2")
            o[...] = np.arange(np.prod(shp), dtype="<u2").reshape(shp)
        self.ms = ome_multiscales([[2.0, 0.5, 0.25], [4.0, 1.0, 0.5]], [1.0, 1.0, 2.0])
        ome.attrs["multiscales"] = self.ms
        xa = g.create_dataset("xr", shape=(11, 12), chunks=(5, 5), dtype="<f4")
        xa.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]
        return store

    def read_header(self, path):
        """The text of a header, checked to be as long as stat says (asked first, right after
        the change, as `stat -c %s` asks statx for the size alone)."""
        r = zfmount.run(["stat", "-c", "%s", path])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(int(r.stdout), len(data), "%s: stat right after the change" % path)
        return data.decode()

    def check_geometry(self, m, ms):
        for lvl in self.SHAPES:
            spacing, origin = ome_geometry(ms, lvl)
            mhd = header_fields(self.read_header(m.path("ome", lvl + ".mhd")), " = ")
            # MetaImage and NRRD list the fastest axis first
            self.assertEqual(floats(mhd["ElementSpacing"]), spacing[::-1], lvl + ".mhd")
            self.assertEqual(floats(mhd["Offset"]), origin[::-1], lvl + ".mhd")
            nhdr = header_fields(self.read_header(m.path("ome", lvl + ".nhdr")), ": ")
            self.assertEqual(floats(nhdr["spacings"]), spacing[::-1], lvl + ".nhdr")
            self.assertEqual(floats(nhdr["axis mins"]), origin[::-1], lvl + ".nhdr")
            if vtk is not None:
                r = vtk.vtkMetaImageReader()
                r.SetFileName(m.path("ome", lvl + ".mhd"))
                r.Update()
                self.assertEqual(r.GetOutput().GetSpacing(), tuple(spacing[::-1]), lvl)

    def test_attributes_remake_headers(self):
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-attrs-")
        try:
            store = self.make(tmp)
            with zfmount.Mount(store, options=["rw", "sidecars"], label="attrs") as m:
                self.check_geometry(m, self.ms)  # as built (and now in the kernel's caches)
                with open(m.path("xr.nhdr")) as f:
                    self.assertIn('labels: "lon" "lat"\n', f.read())
                # new spacing for both levels and the image (headers change length too)
                ms = ome_multiscales([[3.0, 0.125, 0.0625], [6.0, 0.25, 0.125]],
                                     [1.5, 1.0, 4.0])
                os.setxattr(m.path("ome"), "user.zarr.attributes",
                            json.dumps({"multiscales": ms}).encode())
                self.check_geometry(m, ms)
                # the attributes dropped: spacing 1 and origin 0 again
                os.setxattr(m.path("ome"), "user.zarr.attributes", b"{}")
                for lvl in self.SHAPES:
                    mhd = header_fields(self.read_header(m.path("ome", lvl + ".mhd")), " = ")
                    self.assertEqual(floats(mhd["ElementSpacing"]), [1.0] * 3, lvl)
                    self.assertEqual(floats(mhd["Offset"]), [0.0] * 3, lvl)
                # an array's own attributes: xarray's dimension names label NRRD's axes
                os.setxattr(m.path("xr"), "user.zarr.attributes",
                            json.dumps({"_ARRAY_DIMENSIONS": ["latitude", "longitude"]}).encode())
                nhdr = header_fields(self.read_header(m.path("xr.nhdr")), ": ")
                self.assertEqual(nhdr["labels"], '"longitude" "latitude"')
                self.assertEqual(json.loads(os.getxattr(m.path("xr"),
                                                        "user.zarr.dimension_names")),
                                 ["latitude", "longitude"])
            self.assertEqual(zarr.open_group(os.path.join(store, "ome"), mode="r").attrs.asdict(),
                             {})
        finally:
            shutil.rmtree(tmp)

    def test_resize_remakes_headers(self):
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-resize-")
        try:
            store = self.make(tmp)
            with zfmount.Mount(store, options=["rw", "sidecars"], label="resize") as m:
                for ext in self.SIDECARS[:3]:  # in the kernel's caches before the change
                    self.read_header(m.path("ome", "0" + ext))
                self.assertEqual(np.load(m.path("ome", "0.npy")).shape, self.SHAPES["0"])
                planes = 2  # of 20 x 30 uint16
                os.truncate(m.path("ome", "0"), planes * 20 * 30 * 2)
                mhd = header_fields(self.read_header(m.path("ome", "0.mhd")), " = ")
                self.assertEqual(mhd["DimSize"].split(), ["30", "20", str(planes)])
                nhdr = header_fields(self.read_header(m.path("ome", "0.nhdr")), ": ")
                self.assertEqual(nhdr["sizes"].split(), ["30", "20", str(planes)])
                envi = header_fields(self.read_header(m.path("ome", "0.hdr")), " = ")
                self.assertEqual((envi["samples"], envi["lines"], envi["bands"]),
                                 ("30", "20", str(planes)))
                got = np.load(m.path("ome", "0.npy"))
                self.assertEqual(got.shape, (planes, 20, 30))
                self.assertEqual(os.stat(m.path("ome", "0.npy")).st_size,
                                 got.nbytes + (os.stat(m.path("ome", "0.npy")).st_size
                                               - os.stat(m.path("ome", "0")).st_size))
                want = np.arange(4 * 20 * 30, dtype="<u2").reshape(4, 20, 30)[:planes]
                self.assertTrue(np.array_equal(got, want))
        finally:
            shutil.rmtree(tmp)

    def test_changes_racing_reads(self):
        """Attribute changes and resizes while other threads read and stat the headers (for
        ThreadSanitizer): every header read is one of the headers the changes make. (Only
        headers: reads of array data racing a resize of that array are a separate matter.)"""
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-race-")
        try:
            store = self.make(tmp)
            variants = [ome_multiscales([[2.0 * k, 0.5, 0.25], [4.0, 1.0, 0.5 * k]], [1.0, 1.0, k])
                        for k in (1.0, 2.0, 4.0)]
            spacings = {tuple(ome_geometry(ms, "0")[0][::-1]) for ms in variants}
            spacings.add((1.0, 1.0, 1.0))  # (a reader may come first: no attributes yet)
            planes = {2, 3, 4}
            errors, stop = [], threading.Event()
            with zfmount.Mount(store, options=["rw", "sidecars"], label="race") as m:
                os.setxattr(m.path("ome"), "user.zarr.attributes", b"{}")

                def changer():
                    i = 0
                    while not stop.is_set():
                        ms = variants[i % len(variants)]
                        os.setxattr(m.path("ome"), "user.zarr.attributes",
                                    json.dumps({"multiscales": ms}).encode())
                        os.truncate(m.path("ome", "0"), (2 + i % 3) * 20 * 30 * 2)
                        i += 1

                def reader():
                    while not stop.is_set():
                        with open(m.path("ome", "0.mhd")) as f:
                            mhd = header_fields(f.read(), " = ")
                        sp = tuple(floats(mhd["ElementSpacing"]))
                        dims = mhd["DimSize"].split()
                        if sp not in spacings or int(dims[2]) not in planes:
                            errors.append((sp, dims))
                        os.stat(m.path("ome", "1.nhdr"))
                        os.stat(m.path("ome", "0.npy"))  # (a read would read ahead into data)

                def run(fn):
                    try:
                        fn()
                    except Exception as e:  # noqa: BLE001 (reported by the test)
                        errors.append(repr(e))
                        stop.set()
                threads = [threading.Thread(target=run, args=(fn,))
                           for fn in (changer, reader, reader)]
                for t in threads:
                    t.start()
                time.sleep(2.0)
                stop.set()
                for t in threads:
                    t.join(30)
                self.assertEqual(errors, [])
        finally:
            shutil.rmtree(tmp)

    def test_delete_drops_sidecars(self):
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-delete-")
        try:
            store = self.make(tmp)
            with zfmount.Mount(store, options=["rw", "sidecars", "allow_delete"],
                               label="delete") as m:
                names = os.listdir(m.path("ome"))
                for ext in self.SIDECARS:  # known to the kernel (entries and attributes)
                    self.assertIn("1" + ext, names)
                    os.stat(m.path("ome", "1" + ext))
                    with open(m.path("ome", "1" + ext), "rb") as f:
                        f.read(64)
                os.unlink(m.path("ome", "1"))
                for ext in self.SIDECARS:
                    p = m.path("ome", "1" + ext)
                    self.assertErrno(errno.ENOENT, os.stat, p)
                    self.assertErrno(errno.ENOENT, os.open, p, os.O_RDONLY)
                    self.assertFalse(os.path.exists(p), p)
                left = set(os.listdir(m.path("ome")))
                self.assertEqual(left, {"0"} | {"0" + ext for ext in self.SIDECARS}, left)
                self.assertIn("ElementSpacing", self.read_header(m.path("ome", "0.mhd")))
            self.assertFalse(os.path.exists(os.path.join(store, "ome", "1")))
        finally:
            shutil.rmtree(tmp)

    def test_vanished_behind_the_daemon(self):
        """An array removed from the store behind zarrfs's back (read-only mount, metadata
        trusted for TTL seconds): once zarrfs notices (a lookup of the array after the TTL),
        the kernel forgets its sidecars too, though their own entries were looked up later
        and would otherwise be trusted for up to another TTL."""
        ttl = 2.0
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-vanish-")
        try:
            store = self.make(tmp)
            with zfmount.Mount(store, options=["sidecars", "metadata_ttl=%g" % ttl],
                               label="vanish") as m:
                t0 = time.monotonic()
                os.stat(m.path("ome", "1"))
                time.sleep(ttl / 2)
                for ext in self.SIDECARS:
                    os.stat(m.path("ome", "1" + ext))  # trusted until about t0 + 1.5 ttl
                shutil.rmtree(os.path.join(store, "ome", "1"))
                time.sleep(max(0.0, t0 + ttl * 1.15 - time.monotonic()))
                self.assertErrno(errno.ENOENT, os.stat, m.path("ome", "1"))  # noticed here
                for ext in self.SIDECARS:
                    self.assertErrno(errno.ENOENT, os.stat, m.path("ome", "1" + ext))
                late = time.monotonic() - t0
                if late > ttl * 1.5:  # the kernel's entries had expired anyway
                    zfmount.log("  (slow machine: checked %.2f s after the lookups; the check "
                                "proves little)" % late)
        finally:
            shutil.rmtree(tmp)


class Fixtures(zfmount.TestCase):
    """Every array of the zarrita fixtures (Zarr v2 and v3, many data types and codecs): its
    .npy view has the array file's shape (user.zarr.shape), data type (user.zarr.dtype) and
    bytes."""

    def test_walk(self):
        base = os.path.join(zfmount.FIXTURES, "zarrita-fixtures")
        stores = [os.path.join(base, v, "data.zarr") for v in ("v2", "v3")]
        checked = 0
        for store in stores:
            if not os.path.isdir(store):
                continue
            with zfmount.Mount(store, options=["sidecars=npy"]) as m:
                for dirpath, _dirs, files in os.walk(m.mnt):
                    for f in files:
                        if not f.endswith(".npy") or f[:-4] not in files:
                            continue
                        arr = os.path.join(dirpath, f[:-4])
                        try:
                            with open(arr, "rb") as fh:
                                raw = fh.read()
                        except OSError:
                            continue  # undecodable: its reads fail, so do the view's
                        got = np.load(os.path.join(dirpath, f), mmap_mode="r")
                        shape = tuple(int(x) for x in os.getxattr(arr, "user.zarr.shape")
                                      .decode().strip("[]").split(",") if x.strip())
                        self.assertEqual(got.shape, shape, arr)
                        dt = os.getxattr(arr, "user.zarr.dtype").decode()
                        if not dt.startswith("["):
                            self.assertEqual(got.dtype, np.dtype(dt), arr)
                        self.assertBytesEqual(np.ascontiguousarray(got).tobytes(), raw, arr)
                        del got
                        checked += 1
        zfmount.log("  %d .npy views checked" % checked)

class Subset(zfmount.TestCase):
    def test_subset_and_off(self):
        store = os.path.join(WORK, "store.zarr")
        with zfmount.Mount(store, options=["sidecars=npy,mhd"]) as m:
            names = set(os.listdir(m.mnt))
            self.assertIn("u2_3d.npy", names)
            self.assertIn("u2_3d.mhd", names)
            self.assertNotIn("u2_3d.hdr", names)
            self.assertNotIn("u2_3d.nhdr", names)
            self.assertErrno(errno.ENOENT, os.stat, m.path("u2_3d.hdr"))
        with zfmount.Mount(store) as m:
            names = set(os.listdir(m.mnt))
            self.assertEqual(names, set(ARRAYS) | {"f8_2d.npy", "sub", "ome", "xr"})
            for n in ("u2_3d.npy", "u2_3d.hdr", "u2_3d.mhd", "u2_3d.nhdr"):
                self.assertErrno(errno.ENOENT, os.stat, m.path(n))

    def test_follows_resize(self):
        """Under -o rw, a resize of the array changes its .npy view and headers."""
        src = os.path.join(WORK, "rw.zarr")
        g = zarr.open_group(src, mode="w")
        a = g.create_dataset("r", shape=(20, 12), chunks=(6, 5), dtype="<i4")
        a[...] = np.arange(240).reshape(20, 12)
        with zfmount.Mount(src, options=["rw", "sidecars"]) as m:
            self.assertEqual(np.load(m.path("r.npy")).shape, (20, 12))
            self.assertErrno((errno.EACCES, errno.EROFS, errno.EPERM), os.open,
                             m.path("r.npy"), os.O_WRONLY)
            self.assertErrno((errno.EACCES, errno.EROFS, errno.EPERM), os.truncate,
                             m.path("r.hdr"), 0)
            os.truncate(m.path("r"), 8 * 12 * 4)  # 8 rows
            got = np.load(m.path("r.npy"), mmap_mode="r")
            self.assertEqual(got.shape, (8, 12))
            self.assertTrue(np.array_equal(got, np.arange(96).reshape(8, 12)))
            del got  # the mapping keeps the file open: release it before the unmount
            with open(m.path("r.nhdr")) as f:
                self.assertIn("sizes: 12 8\n", f.read())
        self.assertEqual(zarr.open_array(os.path.join(src, "r"), mode="r").shape, (8, 12))

    def test_bad_option(self):
        m = zfmount.Mount(os.path.join(WORK, "store.zarr"), options=["sidecars=bogus"],
                          check_exit=False)
        with self.assertRaises(zfmount.MountError):
            m.start()
        m.stop()


class ListingAttributes(zfmount.TestCase):
    """A listing gives the kernel each entry's attributes (readdirplus) where they are at hand,
    so `ls -l` needs no lookup per entry: what a listing's entries then `lstat` as must be what a
    lookup gives on a fresh mount, for groups, arrays, sidecars, netCDF views (made or not) and a
    text file of variable-length strings (size unknown until read), read-only and under -o rw."""

    @staticmethod
    def attrs(st, name):
        # (a netCDF view's time is when it was made: not compared)
        return (st.st_mode, st.st_size, st.st_nlink, st.st_uid, st.st_gid,
                None if name.endswith(".nc") else st.st_mtime_ns)

    def test_listing_equals_lookups(self):
        import numcodecs
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-plus-")
        try:
            store = os.path.join(tmp, "store.zarr")
            shutil.copytree(os.path.join(WORK, "store.zarr"), store)
            g = zarr.open_group(store, mode="a")
            t = g.create_dataset("names", shape=(5,), chunks=(2,), dtype=object,
                                 object_codec=numcodecs.VLenUTF8())
            t[...] = np.array(["alpha", "b", "gamma", "delta", "epsilon"], dtype=object)
            for opts in (["sidecars"], ["sidecars", "rw"]):
                seen = {}
                with zfmount.Mount(store, options=opts, args=["-d"],
                                   label="listed " + ",".join(opts)) as m:
                    for d in ("", "sub", "ome"):
                        for e in os.scandir(m.path(d)):
                            seen[os.path.join(d, e.name)] = self.attrs(e.stat(follow_symlinks=False),
                                                                       e.name)
                    log_text = m.stderr_text()
                with zfmount.Mount(store, options=opts, label="looked up " + ",".join(opts)) as m:
                    for rel in sorted(seen, reverse=True):  # no listing: each a lookup
                        self.assertEqual(self.attrs(os.lstat(m.path(rel)), rel), seen[rel],
                                         "%s (%s)" % (rel, ",".join(opts)))
                self.assertIn("names", seen)
                self.assertIn("store.nc", seen)
                self.assertIn("sub.nc", seen)
                # only what a listing could not give is looked up: the views not made yet
                # (store.nc, sub.nc, ome.nc) and the text file, 4 of 93 entries; without
                # readdirplus, every entry
                lookups = log_text.count("opcode: LOOKUP")
                self.assertGreaterEqual(len(seen), 60)
                self.assertLess(lookups, len(seen) // 4, "lookups for %d entries" % len(seen))
        finally:
            shutil.rmtree(tmp)


class OverHttp(zfmount.TestCase):
    def test_listing_asks_nothing_more(self):
        """Over HTTP (nginx), `ls -l` of a group with every array sidecar makes the store requests
        that it makes without sidecars, and not one more: the headers come from the metadata
        already read, and no sidecar's name is asked of the store as a real node first."""
        import remote_servers as rs
        tmp = tempfile.mkdtemp(prefix="zarrfs-sidecars-http-")
        try:
            g = zarr.open_group(os.path.join(tmp, "g.zarr"), mode="w")
            for i in range(12):
                g.create_dataset("a%02d" % i, shape=(6, 8), chunks=(3, 4), dtype="<f4")

            def listing(srv, opts):
                with zfmount.Mount(srv.url("g.zarr"), options=opts,
                                   label="http " + (opts[0] if opts else "plain")) as m:
                    names = sorted(os.listdir(m.mnt))
                    for n in names:
                        os.lstat(m.path(n))
                    with open(m.path(".zarrfs-stats")) as f:
                        return names, json.load(f)["store"]["requests"]

            with rs.Nginx(tmp) as srv:
                plain, want = listing(srv, [])
                names, got = listing(srv, ["sidecars=envi,mhd,nhdr,npy,tif"])
            self.assertEqual(len(plain), 12)
            self.assertEqual(len(names), 12 * 6)  # each array, .hdr, .mhd, .nhdr, .npy, .tif
            self.assertEqual(got, want, "store requests with sidecars / without")
        finally:
            rs.stop_all()
            shutil.rmtree(tmp)


if __name__ == "__main__":
    WORK = tempfile.mkdtemp(prefix="zarrfs-sidecars-")
    try:
        build(WORK)
        zfmount.main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
