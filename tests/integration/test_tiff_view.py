#!/usr/bin/python3
"""TIFF views (issue 20, `-o sidecars=tif`): NAME.tif beside each array of >= 2 dimensions with
a plain numeric data type, a TIFF header (one page per plane of the last two dimensions, strips
pointing at the array's bytes, which follow the header) with OME-XML for arrays OME can
describe and tifffile's "shaped" JSON otherwise.

Checked with the real readers: libtiff's tiffinfo and tiffdump (libtiff-tools), tifffile
(python3-tifffile), PIL (python3-pil) and GDAL's GTiff driver (python3-gdal), plus a strict
structural reader of this file (every IFD, tag order, value offsets inside the header, the
strips tiling the data in order). Expected values come from zarr-python 2.13; the OME-Zarr
physical sizes from the multiscales this test writes.
"""

import errno
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

try:
    import tifffile
except ImportError:  # pragma: no cover
    tifffile = None
try:
    from PIL import Image
except ImportError:  # pragma: no cover
    Image = None
try:
    from osgeo import gdal
    gdal.UseExceptions()
except ImportError:  # pragma: no cover
    gdal = None

WORK = None


def ramp(shape, dtype):
    n = int(np.prod(shape))
    a = (np.arange(n) * 7 % 251 - 100).astype("<f8") / 3
    dt = np.dtype(dtype)
    if dt.kind in "ui":
        a = np.arange(n) * 37 % (np.iinfo(dt).max if dt.itemsize < 8 else 1 << 40)
        a = a.astype(dt.newbyteorder("<"))
    elif dt.kind == "c":
        a = a + 1j * a[::-1]
    elif dt.kind == "b":
        a = np.arange(n) % 3 == 0
    return a.astype(dt).reshape(shape)


ARRAYS = {
    # name: (shape, dtype, chunks)
    "u1_2d": ((37, 53), "u1", (16, 16)),
    "u1_img": ((29, 31), "u1", (16, 16)),
    "u2_2d": ((40, 61), "<u2", (16, 32)),
    "u2_be_2d": ((23, 17), ">u2", (8, 8)),
    "i4_3d": ((3, 20, 30), "<i4", (2, 8, 16)),
    "f4_be_3d": ((4, 18, 25), ">f4", (3, 7, 9)),
    "f8_2d": ((600, 1000), "<f8", (256, 256)),      # 4.8 MB: several strips per page
    "f8_be_3d": ((2, 300, 700), ">f8", (1, 128, 128)),  # big-endian, several strips
    "c8_2d": ((12, 9), "<c8", (5, 5)),
    "c16_be_3d": ((2, 5, 6), ">c16", (1, 5, 6)),
    "i2_4d": ((2, 3, 10, 12), "<i2", (1, 2, 5, 5)),
    "f2_2d": ((9, 14), "<f2", (4, 4)),               # no OME type: shaped JSON
    "u8_3d": ((3, 4, 5), "<u8", (2, 2, 2)),          # no OME type: shaped JSON
    "i1_6d": ((2, 2, 3, 2, 4, 5), "i1", (1, 1, 2, 2, 4, 5)),  # more than OME's 5: shaped
    "bool_2d": ((7, 8), "|b1", (4, 4)),
}
NO_TIFF = {
    # name: (shape, dtype, chunks); all get a .npy view but no .tif
    "i4_1d": ((50,), "<i4", (10,)),
    "f8_0d": ((), "<f8", None),
    "empty_2d": ((0, 5), "<u2", (4, 4)),
    "many_pages": ((2000000, 1, 1), "u1", (100000, 1, 1)),  # header over 64 MiB
}
STRUCT = np.dtype([("a", "<i4"), ("b", "<f8")])

# OME-Zarr images (NGFF 0.4): level "0" of a t,c,z,y,x image in micrometres; a z,y,x image in
# nanometres with a translation; an xarray-style (time, lat, lon) array (named: OME's T).
OME5 = {"shape": (2, 3, 4, 20, 30), "scale": [1.0, 1.0, 2.5, 0.5, 0.25],
        "units": ["second", None, "micrometer", "micrometer", "micrometer"],
        "names": ["t", "c", "z", "y", "x"]}
OME3 = {"shape": (5, 16, 24), "scale": [0.75, 0.125, 0.0625],
        "units": ["nanometer"] * 3, "names": ["z", "y", "x"]}


def add_ome(g, name, spec):
    grp = g.create_group(name)
    a = grp.create_dataset("0", shape=spec["shape"], chunks=tuple(min(s, 8) for s in spec["shape"]),
                           dtype="<u2", fill_value=0)
    a[...] = ramp(spec["shape"], "<u2")
    axes = []
    for n, u in zip(spec["names"], spec["units"]):
        ax = {"name": n, "type": "time" if n == "t" else "channel" if n == "c" else "space"}
        if u:
            ax["unit"] = u
        axes.append(ax)
    grp.attrs["multiscales"] = [{
        "version": "0.4", "axes": axes,
        "datasets": [{"path": "0", "coordinateTransformations": [
            {"type": "scale", "scale": spec["scale"]},
            {"type": "translation", "translation": [0.5] * len(spec["shape"])}]}]}]


def build(root):
    g = zarr.open_group(os.path.join(root, "store.zarr"), mode="w")
    for name, (shape, dtype, chunks) in ARRAYS.items():
        a = g.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=0)
        a[...] = ramp(shape, dtype)
    for name, (shape, dtype, chunks) in NO_TIFF.items():
        a = g.create_dataset(name, shape=shape, chunks=chunks or True, dtype=dtype,
                             fill_value=0)
        if 0 < np.prod(shape) < 1000:
            a[...] = ramp(shape, dtype)
    s = g.create_dataset("struct_2d", shape=(3, 4), chunks=(2, 2), dtype=STRUCT)
    s[...] = np.zeros((3, 4), STRUCT)
    add_ome(g, "ome5", OME5)
    add_ome(g, "ome3", OME3)
    x = g.create_dataset("xr", shape=(3, 10, 12), chunks=(1, 10, 12), dtype="<f4")
    x[...] = ramp((3, 10, 12), "<f4")
    x.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    # a sparse array over 4 GiB (BigTIFF): 5 planes of 32768 x 32768 bytes, one chunk written
    # near the end, the rest the fill value
    b = g.create_dataset("big", shape=(5, 32768, 32768), chunks=(1, 4096, 4096), dtype="u1",
                         fill_value=3)
    b[4, 28672:, 28672:] = ramp((4096, 4096), "u1")
    # a real array named like a view wins
    r = g.create_dataset("u1_2d.tif", shape=(3,), chunks=(2,), dtype="<i4")
    r[...] = [7, 8, 9]
    return os.path.join(root, "store.zarr")


def expected(name):
    return zarr.open_group(os.path.join(WORK, "store.zarr"), mode="r")[name][...]


def strict_parse(data):
    """Parse a whole TIFF view strictly: the header, every IFD in the chain (entries in
    ascending tag order, known types, values inline exactly when they fit, out-of-line values
    inside the header and on even offsets), the fields a baseline reader needs, and the strips:
    each page's strips in order, one after the other, the pages likewise, from the end of the
    header to the end of the file. Returns (byte order, bigtiff, header length, pages), each page
    a dict of tag -> values. Raises AssertionError on any violation."""
    bo = data[:2]
    assert bo in (b"II", b"MM"), bo
    e = "<" if bo == b"II" else ">"
    version = struct.unpack(e + "H", data[2:4])[0]
    assert version in (42, 43), version
    big = version == 43
    if big:
        assert struct.unpack(e + "HH", data[4:8]) == (8, 0)
        ifd = struct.unpack(e + "Q", data[8:16])[0]
    else:
        ifd = struct.unpack(e + "I", data[4:8])[0]
    sizes = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 16: 8}
    codes = {1: "B", 3: "H", 4: "I", 16: "Q"}
    field = 8 if big else 4
    pages, seen, header_end = [], set(), len(data)
    while ifd:
        assert ifd % 2 == 0 and ifd not in seen and ifd < header_end, ifd
        seen.add(ifd)
        if big:
            n = struct.unpack(e + "Q", data[ifd:ifd + 8])[0]
            at, elen = ifd + 8, 20
        else:
            n = struct.unpack(e + "H", data[ifd:ifd + 2])[0]
            at, elen = ifd + 2, 12
        tags, last = {}, -1
        for i in range(n):
            ent = data[at + i * elen:at + (i + 1) * elen]
            tag, typ = struct.unpack(e + "HH", ent[:4])
            assert tag > last, "tags out of order: %d after %d" % (tag, last)
            last = tag
            assert typ in sizes, "type %d" % typ
            count = struct.unpack(e + ("Q" if big else "I"), ent[4:4 + field])[0]
            nbytes = count * sizes[typ]
            if nbytes <= field:
                raw = ent[4 + field:4 + field + nbytes]
            else:
                off = struct.unpack(e + ("Q" if big else "I"), ent[4 + field:4 + 2 * field])[0]
                assert off % 2 == 0 and off + nbytes <= len(data), (tag, off, nbytes)
                raw = data[off:off + nbytes]
            if typ == 2:
                assert raw.endswith(b"\0") and b"\0" not in raw[:-1], "ASCII %d" % tag
                assert all(c < 0x80 for c in raw), "non-ASCII description"
                tags[tag] = raw[:-1].decode("ascii")
            else:
                tags[tag] = list(struct.unpack(e + codes[typ] * count, raw))
        nxt = data[at + n * elen:at + n * elen + field]
        ifd = struct.unpack(e + ("Q" if big else "I"), nxt)[0]
        for t in (256, 257, 258, 259, 262, 273, 277, 278, 279, 284, 339):
            assert t in tags, "tag %d missing" % t
        assert tags[259] == [1] and tags[277] == [1] and tags[284] == [1]
        assert len(tags[273]) == len(tags[279])
        pages.append(tags)
    assert pages, "no IFD"
    header = pages[0][273][0]
    pos = header
    for p in pages:
        rows, cols, bps, rps = p[257][0], p[256][0], p[258][0], p[278][0]
        rowbytes = cols * bps // 8
        assert len(p[273]) == (rows + rps - 1) // rps
        for k, (off, cnt) in enumerate(zip(p[273], p[279])):
            want = min(rps, rows - k * rps) * rowbytes
            assert off == pos and cnt == want, (off, pos, cnt, want)
            pos += cnt
    assert pos == len(data), "strips end at %d, file at %d" % (pos, len(data))
    assert header >= max(seen), "an IFD inside the data"
    return bo, big, header, pages


def squeezed_shape(shape):
    return tuple(s for s in shape if s != 1)


class TiffViews(zfmount.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.store = os.path.join(WORK, "store.zarr")
        cls.m = zfmount.Mount(cls.store, options=["sidecars=tif"])
        cls.m.start()

    @classmethod
    def tearDownClass(cls):
        cls.m.stop()

    def views(self):
        return list(ARRAYS) + ["ome5/0", "ome3/0", "xr"]

    def read(self, name):
        with open(self.m.path(name + ".tif"), "rb") as f:
            return f.read()

    def test_listing(self):
        names = set(os.listdir(self.m.mnt))
        for n in list(ARRAYS) + ["xr", "big"]:
            self.assertIn(n + ".tif", names)
        for n in list(NO_TIFF) + ["struct_2d"]:
            self.assertIn(n, names)
            self.assertNotIn(n + ".tif", names)
            self.assertErrno(errno.ENOENT, os.stat, self.m.path(n + ".tif"))
        self.assertNotIn("u1_2d.npy", names)  # only the kinds asked for
        self.assertIn("0.tif", os.listdir(self.m.path("ome5")))
        # a real node of the view's name wins
        self.assertEqual(np.frombuffer(self.read("u1_2d"), "<i4").tolist(), [7, 8, 9])

    def test_structure_and_libtiff(self):
        for name in self.views():
            if name == "u1_2d":
                continue  # its view's name is a real array's
            data = self.read(name)
            ref = expected(name)
            bo, big, header, pages = strict_parse(data)
            self.assertFalse(big, name)
            self.assertEqual(bo, b"MM" if ref.dtype.byteorder == ">" else b"II", name)
            self.assertEqual(len(data) - header, ref.nbytes, name)
            self.assertEqual(len(pages), int(np.prod(ref.shape[:-2])), name)
            self.assertEqual(data[header:], ref.tobytes(), name)
            for tool in (["tiffinfo"], ["tiffdump"]):
                r = subprocess.run(tool + [self.m.path(name + ".tif")], capture_output=True,
                                   timeout=60)
                self.assertEqual(r.returncode, 0, (name, tool, r.stderr))
                self.assertNotIn(b"rror", r.stderr, (name, tool, r.stderr))
            if name == "i2_4d":
                r = subprocess.run(["tiffinfo", self.m.path(name + ".tif")],
                                   capture_output=True, timeout=60, text=True)
                self.assertEqual(r.stdout.count("TIFF Directory at offset"), 6, r.stdout)

    @unittest.skipIf(tifffile is None, "python3-tifffile missing")
    def test_tifffile(self):
        for name in self.views():
            if name == "u1_2d":
                continue
            ref = expected(name)
            with tifffile.TiffFile(self.m.path(name + ".tif")) as t:
                s = t.series[0]
                got = s.asarray()
                kind = "shaped" if name in ("u8_3d", "i1_6d", "f2_2d") else "ome"
                self.assertEqual(s.kind, kind, name)
                if kind == "shaped":
                    self.assertEqual(tuple(s.shape), ref.shape, name)
                else:
                    self.assertEqual(squeezed_shape(s.shape), squeezed_shape(ref.shape), name)
                want = ref.astype("u1") if ref.dtype == bool else ref
                self.assertEqual(got.dtype.newbyteorder("="), want.dtype.newbyteorder("="), name)
                self.assertTrue(np.array_equal(got.reshape(ref.shape), want), name)
            self.assertTrue(np.array_equal(tifffile.imread(self.m.path(name + ".tif"))
                                           .reshape(ref.shape), want), name)

    @unittest.skipIf(tifffile is None, "python3-tifffile missing")
    def test_ome_physical_sizes(self):
        for name, spec, unit in (("ome5/0", OME5, "\u00b5m"), ("ome3/0", OME3, "nm")):
            with tifffile.TiffFile(self.m.path(name + ".tif")) as t:
                ome = ET.fromstring(t.ome_metadata)
                px = ome.find(".//{*}Pixels").attrib
                self.assertEqual(t.series[0].axes, "TCZYX"[5 - len(spec["shape"]):], name)
            n = len(spec["shape"])
            self.assertEqual(float(px["PhysicalSizeX"]), spec["scale"][n - 1], name)
            self.assertEqual(float(px["PhysicalSizeY"]), spec["scale"][n - 2], name)
            self.assertEqual(float(px["PhysicalSizeZ"]), spec["scale"][n - 3], name)
            for ax in "XYZ":
                self.assertEqual(px["PhysicalSize%sUnit" % ax], unit, name)
            self.assertEqual(ome.find("{*}Image").attrib["Name"], "0")
        # xarray's names: time is OME's T (tifffile's axes), no physical sizes
        with tifffile.TiffFile(self.m.path("xr.tif")) as t:
            self.assertEqual(t.series[0].axes, "TYX")
            self.assertNotIn("PhysicalSizeX", t.ome_metadata)

    @unittest.skipIf(Image is None, "python3-pil missing")
    def test_pil(self):
        for name in ("u1_img", "u2_2d", "u2_be_2d", "bool_2d"):
            with Image.open(self.m.path(name + ".tif")) as im:
                got = np.array(im)
            want = expected(name)
            self.assertTrue(np.array_equal(got, want.astype("u1") if want.dtype == bool
                                           else want), name)

    @unittest.skipIf(gdal is None, "python3-gdal missing")
    def test_gdal(self):
        for name in ("u2_2d", "f8_2d", "c8_2d", "i4_3d", "f4_be_3d", "f8_be_3d"):
            ref = expected(name)
            path = self.m.path(name + ".tif")
            ds = gdal.Open(path)
            self.assertEqual(ds.GetDriver().ShortName, "GTiff")
            self.assertTrue(np.array_equal(ds.ReadAsArray(), ref.reshape(-1, *ref.shape[-2:])[0]),
                            name)
            for k in range(1, int(np.prod(ref.shape[:-2]))):  # the other pages
                sub = gdal.Open("GTIFF_DIR:%d:%s" % (k + 1, path))
                self.assertTrue(np.array_equal(sub.ReadAsArray(),
                                               ref.reshape(-1, *ref.shape[-2:])[k]), (name, k))
                sub = None
            ds = None

    def test_bigtiff(self):
        """A view over 4 GiB is a BigTIFF: its IFDs (read whole) are right, and the strips of
        the last page read the chunk zarr-python wrote and the fill value around it."""
        path = self.m.path("big.tif")
        size = os.stat(path).st_size
        self.assertGreater(size, 5 << 30)
        fd = os.open(path, os.O_RDONLY)
        try:
            head = os.pread(fd, 16, 0)
            self.assertEqual(head[:4], b"II\x2b\x00")
            hdr_len = size - 5 * 32768 * 32768
            data = bytearray(os.pread(fd, hdr_len, 0))
            # strict_parse wants the whole file: give it the header and a sparse stand-in
            bo, big, header, pages = strict_parse_header_only(bytes(data), size)
            self.assertTrue(big)
            self.assertEqual(header, hdr_len)
            self.assertEqual(len(pages), 5)
            last = pages[4]
            rps = last[278][0]
            # the strip holding row 28672 + 100: its bytes from column 28672 on
            row = 28672 + 100
            k, r = divmod(row, rps)
            off = last[273][k] + r * 32768
            got = os.pread(fd, 32768, off)
            want = np.full(32768, 3, "u1")
            want[28672:] = ramp((4096, 4096), "u1")[100]
            self.assertEqual(got, want.tobytes())
        finally:
            os.close(fd)
        r = subprocess.run(["tiffinfo", path], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"BigTIFF", subprocess.run(["tiffdump", path], capture_output=True,
                                                 timeout=60).stdout[:200])


def strict_parse_header_only(header, size):
    """strict_parse for a file too large to read: the header's bytes with the data stood in
    for by a zero-copy view of the right length (only the header's bytes are looked at)."""
    class View:
        def __init__(self, head, n):
            self.head, self.n = head, n

        def __len__(self):
            return self.n

        def __getitem__(self, k):
            if isinstance(k, slice):
                start, stop = k.start or 0, k.stop if k.stop is not None else self.n
                assert stop <= len(self.head), "read past the header at %d" % start
                return self.head[start:stop]
            return self.head[k]

    return strict_parse(View(header, size))


class Changes(zfmount.TestCase):
    def test_resize_and_attributes_remake_the_view(self):
        tmp = tempfile.mkdtemp(prefix="zarrfs-tiff-rw-")
        try:
            g = zarr.open_group(os.path.join(tmp, "s.zarr"), mode="w")
            add_ome(g, "img", OME3)
            with zfmount.Mount(os.path.join(tmp, "s.zarr"), options=["rw", "sidecars"]) as m:
                path = m.path("img", "0.tif")
                with open(path, "rb") as f:
                    _, _, header, pages = strict_parse(f.read())
                self.assertEqual(len(pages), 5)
                os.truncate(m.path("img", "0"), 2 * 16 * 24 * 2)  # two planes
                with open(path, "rb") as f:
                    data = f.read()
                _, _, header, pages = strict_parse(data)
                self.assertEqual(len(pages), 2)
                self.assertEqual(data[header:], ramp(OME3["shape"], "<u2")[:2].tobytes())
                ms = json.loads(os.getxattr(m.path("img"), "user.zarr.attributes"))
                ms["multiscales"][0]["datasets"][0]["coordinateTransformations"][0]["scale"] = \
                    [4.0, 2.0, 1.0]
                os.setxattr(m.path("img"), "user.zarr.attributes", json.dumps(ms).encode())
                with open(path, "rb") as f:
                    _, _, _, pages = strict_parse(f.read())
                px = ET.fromstring(pages[0][270]).find(".//{*}Pixels").attrib
                self.assertEqual((float(px["PhysicalSizeX"]), float(px["PhysicalSizeZ"])),
                                 (1.0, 4.0))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    WORK = tempfile.mkdtemp(prefix="zarrfs-tiff-")
    try:
        build(WORK)
        zfmount.main()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
