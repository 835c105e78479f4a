#!/usr/bin/python3
"""zarrs' optional data type (docs/formats.md "Optional data types"): an array's file holds the
values (zero where an element is missing), NAME.mask beside it one byte per element (the number
of optional levels present: 0 missing, 1 valid; for optional(optional(T)) 1 is Some(None)).

* zarrs' own test data (tests/fixtures/zarrs-test-data/v3/array_optional*.zarr, written by
  zarrs' examples data_type_optional.rs and data_type_optional_nested.rs): the values and masks
  equal the grids those examples define (copied below from the examples' `ndarray::array!`) and
  the grid the arrays' own "description" attribute draws (parsed here);
* arrays written here in zarrs' optional codec format (zarrs codec/array_to_bytes/optional.rs:
  u64 mask and data lengths, the mask packed LSB first by packbits, only the valid elements,
  little- or big-endian, gzip-compressed; nested optionals) over edge chunks, missing chunks
  (fill null: all missing; fill [x]: all x), against numpy arrays the test built; a corrupt chunk
  is EIO in both files, its neighbours read;
* listing (the mask listed beside each optional array, no mask for other arrays), stat sizes,
  xattrs (user.zarr.dtype the inner typestr, user.zarr.fill_value as stored), numpy.memmap,
  random preads, read-only (EROFS; EACCES under -o rw for the array and its mask).
"""
import errno
import gzip
import json
import os
import random
import shutil
import stat
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

WORK = None
ZARRS = os.path.join(zfmount.FIXTURES, "zarrs-test-data", "v3")

# zarrs/examples/data_type_optional.rs: `let data = ndarray::array![...]` (None: missing)
OPTIONAL_DEF = [[0, None, 2, 3], [None, 5, None, 7], [8, 9, None, None], [12, None, None, None]]
# zarrs/examples/data_type_optional_nested.rs: None, ("SN",) for Some(None), ints Some(Some(v))
SN = ("SN",)
NESTED_DEF = [[None, SN, 2, 3], [None, 5, None, 7], [SN, SN, None, None], [SN, SN, None, None]]


def grid_from_description(desc):
    """The grid drawn by zarrs' "description" attribute: N missing, SN Some(None), numbers."""
    rows = [line.split() for line in desc.splitlines()]
    rows = [r for r in rows if r and all(t in ("N", "SN") or t.isdigit() for t in r)]
    return [[None if t == "N" else SN if t == "SN" else int(t) for t in r] for r in rows]


def flat_of(grid, levels):
    """(values, depths) of a grid of optional elements, in C order."""
    vals, depth = [], []
    for row in grid:
        for v in row:
            if v is None:
                vals.append(0)
                depth.append(0)
            elif v is SN:
                vals.append(0)
                depth.append(1)
            else:
                vals.append(v)
                depth.append(levels)
    return vals, depth


# ---------------------------------------------------------------------------------------------
# a writer of zarrs' optional format, from its documentation

def packbits(mask):
    return np.packbits(np.asarray(mask, dtype=bool), bitorder="little").tobytes()


def encode_level(depth, values, level, levels, dtype, big, gz):
    """One optional level: [mask_len u64][data_len u64][packbits mask][data of valid elements]."""
    valid = depth > level
    mask = packbits(valid)
    if not valid.any():
        data = b""
    elif level + 1 < levels:
        data = encode_level(depth[valid], values[valid], level + 1, levels, dtype, big, gz)
    else:
        data = values[valid].astype(np.dtype(dtype).newbyteorder(">" if big else "<")).tobytes()
        if gz:
            data = gzip.compress(data, mtime=0)
    return struct.pack("<QQ", len(mask), len(data)) + mask + data


def codecs_json(levels, big, gz):
    data = [{"name": "bytes", "configuration": {"endian": "big" if big else "little"}}]
    if gz:
        data.append({"name": "gzip", "configuration": {"level": 5}})
    for _ in range(levels - 1):
        data = [{"name": "optional", "configuration": {"mask_codecs": [{"name": "packbits"}],
                                                       "data_codecs": data}}]
    return [{"name": "optional", "configuration": {"mask_codecs": [{"name": "packbits"}],
                                                   "data_codecs": data}}]


def dtype_json(name, levels):
    t = {"name": name, "configuration": {}}
    for _ in range(levels):
        t = {"name": "optional", "configuration": t}
    return t


def write_optional(path, values, depth, chunks, name, np_dtype, levels, fill, missing=(),
                   corrupt=(), big=False, gz=False):
    """An optional array at path; chunks in `missing` are left out, those in `corrupt` have a
    data length one byte too long in their header."""
    os.makedirs(path)
    shape = values.shape
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(shape),
            "data_type": dtype_json(name, levels),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs_json(levels, big, gz), "attributes": {}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f)
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    for cc in np.ndindex(*grid):
        if cc in missing:
            continue
        sl = tuple(slice(c * k, min((c + 1) * k, s)) for c, k, s in zip(cc, chunks, shape))
        d = np.zeros(chunks, dtype=np.uint8)       # edge chunks: outside the array missing
        v = np.zeros(chunks, dtype=np_dtype)
        inner = tuple(slice(0, s.stop - s.start) for s in sl)
        d[inner] = depth[sl]
        v[inner] = values[sl]
        blob = encode_level(d.ravel(), v.ravel(), 0, levels, np_dtype, big, gz)
        if cc in corrupt:
            blob = blob[:8] + struct.pack("<Q", struct.unpack("<Q", blob[8:16])[0] + 1) + blob[16:]
        key = os.path.join(path, "c", *map(str, cc))
        os.makedirs(os.path.dirname(key), exist_ok=True)
        with open(key, "wb") as f:
            f.write(blob)


def expected_of(values, depth, levels, chunks, missing, fill_value, fill_depth):
    """What the two files must hold: values where present at every level (else 0), depths; the
    missing chunks the fill value and its depth."""
    vals = np.where(depth == levels, values, 0).astype(values.dtype)
    dep = depth.astype(np.uint8).copy()
    for cc in missing:
        sl = tuple(slice(c * k, (c + 1) * k) for c, k in zip(cc, chunks))
        vals[sl] = fill_value
        dep[sl] = fill_depth
    return vals, dep


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zf-optional-")
    rng = np.random.default_rng(5)
    root = os.path.join(WORK, "h.zarr")
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    Built.cases = {}

    def add(name, values, depth, chunks, dt, np_dtype, levels, fill, fill_value, fill_depth,
            missing=(), corrupt=(), **kw):
        write_optional(os.path.join(root, name), values, depth, chunks, dt, np_dtype, levels,
                       fill, missing, corrupt, **kw)
        vals, dep = expected_of(values, depth, levels, chunks, missing, fill_value, fill_depth)
        Built.cases[name] = (vals, dep, chunks, corrupt)

    # int32, 2-D, edge chunks, missing chunks with a null fill: missing everywhere there
    v = rng.integers(-2**31, 2**31, size=(50, 37), dtype=np.int64).astype(np.int32)
    d = (rng.random((50, 37)) < 0.6).astype(np.uint8)
    add("i32", v, d, (8, 10), "int32", np.int32, 1, None, 0, 0, missing=[(1, 1), (6, 3)])
    # float64, gzip, big-endian stored; fill [1.5]: a missing chunk is valid 1.5s
    v = rng.normal(size=(30, 20))
    d = (rng.random((30, 20)) < 0.3).astype(np.uint8)
    add("f64", v, d, (7, 6), "float64", np.float64, 1, [1.5], 1.5, 1, missing=[(0, 0), (4, 3)],
        big=True, gz=True)
    # every element missing in one chunk, all valid in another (1-D, chunk larger than the rest)
    v = np.arange(1000, 1100, dtype=np.uint16)
    d = np.ones(100, dtype=np.uint8)
    d[:40] = 0
    add("u16", v, d, (40,), "uint16", np.uint16, 1, [7], 7, 1)
    # optional(optional(uint8)), fill [null] (Some(None)), a missing chunk
    v = rng.integers(0, 256, size=(9, 11), dtype=np.uint8)
    d = rng.integers(0, 3, size=(9, 11)).astype(np.uint8)
    add("nested", v, d, (4, 4), "uint8", np.uint8, 2, [None], 0, 1, missing=[(1, 2)])
    # three levels of int16
    v = rng.integers(-30000, 30000, size=(6, 5), dtype=np.int16)
    d = rng.integers(0, 4, size=(6, 5)).astype(np.uint8)
    add("nested3", v, d, (4, 2), "int16", np.int16, 3, [[[-1]]], -1, 3, missing=[(0, 1)])
    # a corrupt chunk among good ones
    v = rng.integers(0, 100, size=(64, 256), dtype=np.int8)
    d = (rng.random((64, 256)) < 0.5).astype(np.uint8)
    add("bad", v, d, (32, 128), "int8", np.int8, 1, None, 0, 0, corrupt=[(1, 0)])
    # a plain array beside them: no mask
    os.makedirs(os.path.join(root, "plain", "c"))
    with open(os.path.join(root, "plain", "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int16",
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": 3,
                   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}, f)


def tearDownModule():
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)


class ZarrsFixtures(zfmount.TestCase):
    def check(self, store, definition, levels, fill_json):
        with open(os.path.join(store, "zarr.json")) as f:
            meta = json.load(f)
        drawn = grid_from_description(meta["attributes"]["description"])
        self.assertEqual(drawn, definition, "the example's grid and the description's differ")
        vals, depth = flat_of(definition, levels)
        with zfmount.Mount(store) as m:
            self.assertEqual(sorted(os.listdir(m.mnt)), ["array", "array.mask"])
            data = zfmount.read_all(m.path("array"))
            mask = zfmount.read_all(m.path("array.mask"))
            self.assertEqual(list(data), vals)
            self.assertEqual(list(mask), depth)
            self.assertEqual(os.stat(m.path("array.mask")).st_size, 16)
            self.assertEqual(os.getxattr(m.path("array"), "user.zarr.dtype"), b"|u1")
            self.assertEqual(json.loads(os.getxattr(m.path("array"), "user.zarr.fill_value")),
                             fill_json)
            for p in ("array", "array.mask"):
                self.assertEqual(os.stat(m.path(p)).st_mode & 0o222, 0, p)
                self.assertErrno(errno.EROFS, os.open, m.path(p), os.O_WRONLY)
        log("  %s: values and mask as zarrs' example defines them" % os.path.basename(
            os.path.dirname(store)))

    def test_01_optional(self):
        self.check(os.path.join(ZARRS, "array_optional.zarr", "array"), OPTIONAL_DEF, 1, None)

    def test_02_nested(self):
        self.check(os.path.join(ZARRS, "array_optional_nested.zarr", "array"), NESTED_DEF, 2,
                   [None])

    def test_03_rw_refused(self):
        store = os.path.join(WORK, "rw", "array")
        shutil.copytree(os.path.join(ZARRS, "array_optional.zarr", "array"), store)
        with zfmount.Mount(store, options=["rw"]) as m:
            for p in ("array", "array.mask"):
                self.assertErrno(errno.EACCES, os.open, m.path(p), os.O_RDWR)
                self.assertEqual(os.stat(m.path(p)).st_mode & 0o222, 0, p)
            self.assertErrno((errno.EACCES, errno.EPERM), os.truncate, m.path("array"), 0)
            self.assertEqual(list(zfmount.read_all(m.path("array.mask")))[:4], [1, 0, 1, 1])
        log("  -o rw: the array and its mask are read-only (EACCES)")


class Built(zfmount.MountedTestCase):
    cases = {}

    @classmethod
    def store_path(cls):
        return os.path.join(WORK, "h.zarr")

    def test_01_listing(self):
        names = sorted(os.listdir(self.m.mnt))
        want = sorted(list(self.cases) + [n + ".mask" for n in self.cases] + ["plain"])
        self.assertEqual(names, want)
        self.assertErrno(errno.ENOENT, os.stat, self.m.path("plain.mask"))
        self.assertErrno(errno.ENOENT, os.stat, self.m.path("nothere.mask"))

    def test_02_values_and_masks(self):
        for name, (vals, dep, chunks, corrupt) in sorted(self.cases.items()):
            if corrupt:
                continue
            p = self.m.path(name)
            self.assertEqual(os.stat(p).st_size, vals.nbytes)
            self.assertEqual(os.stat(p + ".mask").st_size, vals.size)
            self.assertBytesEqual(zfmount.read_all(p), vals.tobytes(), name)
            self.assertBytesEqual(zfmount.read_all(p + ".mask"), dep.tobytes(), name + ".mask")
            dt = os.getxattr(p, "user.zarr.dtype").decode()
            mm = np.memmap(p, dtype=dt, mode="r", shape=vals.shape)
            self.assertTrue(np.array_equal(mm, vals), name)
            del mm
            # random preads of both
            rnd = random.Random(name)
            for path, want in ((p, vals.tobytes()), (p + ".mask", dep.tobytes())):
                fd = os.open(path, os.O_RDONLY)
                try:
                    for _ in range(200):
                        off = rnd.randrange(len(want))
                        n = rnd.randrange(1, 300)
                        self.assertEqual(os.pread(fd, n, off), want[off:off + n], path)
                    self.assertEqual(os.pread(fd, 10, len(want)), b"")
                finally:
                    os.close(fd)
            log("  %s: %s values and mask (%d of %d present)"
                % (name, vals.dtype, int((dep > 0).sum()), dep.size))

    def test_03_xattrs(self):
        self.assertEqual(os.getxattr(self.m.path("f64"), "user.zarr.dtype"), b"<f8")
        self.assertEqual(json.loads(os.getxattr(self.m.path("f64"), "user.zarr.fill_value")),
                         [1.5])
        self.assertEqual(os.getxattr(self.m.path("nested3"), "user.zarr.dtype"), b"<i2")
        meta = json.loads(os.getxattr(self.m.path("nested"), "user.zarr.metadata"))
        self.assertEqual(meta["data_type"]["name"], "optional")

    def test_04_corrupt_chunk(self):
        vals, dep, chunks, corrupt = self.cases["bad"]
        start = chunks[0] * corrupt[0][0] * vals.shape[1]  # the corrupt chunk's first byte: 8192
        for path, want in ((self.m.path("bad"), vals), (self.m.path("bad.mask"), dep)):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # pages past the read: not read
                self.assertEqual(zfmount.pread_full(fd, start, 0), want.tobytes()[:start])
                self.assertErrno(errno.EIO, os.pread, fd, 4, start)
                self.assertErrno(errno.EIO, os.pread, fd, 4, start + 4096)
            finally:
                os.close(fd)
        self.assertDaemonAlive()
        log("  a corrupt chunk: EIO in the array and its mask, the chunks before it read")


if __name__ == "__main__":
    zfmount.main()
