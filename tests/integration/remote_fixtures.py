"""Test hierarchies and comparisons shared by the remote-store tests (test_remote_*.py).

build(root) writes, below root:
  v2.zarr        Zarr v2 written by zarr-python 2.13: groups with attributes, every compressor
                 (zlib, gzip, bz2, lzma, zstd, lz4, blosc), a delta filter, both byte orders,
                 order F, dimension_separator "/", chunks missing (fill values), 0-d and
                 zero-length arrays, names with spaces, non-ASCII and URL-special characters,
                 a name longer than nginx's autoindex column; consolidated (.zmetadata)
  v2nc.zarr      the same without .zmetadata
  v3.zarr        a copy of tests/fixtures/zarrita-fixtures/v3/data.zarr (zarrita)
  sharded.zarr   Zarr v3 sharded arrays built by hand (test_v3_sharding.write_array), and
                 `counted`: uint8 (64, 32768), shards (32, 16384) of 4 x 4 inner chunks
                 (8, 4096), raw inner chunks, index [bytes, crc32c] at the end; one inner-chunk
                 row of 4096 bytes is one page of the flat file

Expected values: zarr-python 2.13 (v2), the numpy arrays the shards were built from, and a local
zarrfs mount of the same directory (compare_trees), never the remote mount alone.
"""

import errno
import json
import os
import random
import shutil
import stat

import numcodecs
import numpy as np

import zfmount

V3_FIXTURE = os.path.join(zfmount.FIXTURES, "zarrita-fixtures", "v3", "data.zarr")

LONG_NAME = "a_very_long_array_name_longer_than_the_fifty_characters_nginx_autoindex_shows"
ODD_NAME = "odd name +%#&;=\u00e9\u305f"
SPACE_GROUP = "group with spaces"

COUNTED_SHAPE = (64, 32768)
COUNTED_SHARD = (32, 16384)
COUNTED_INNER = (8, 4096)
COUNTED_INDEX_BYTES = 16 * 16 + 4          # 4 x 4 (offset, nbytes) uint64 pairs + crc32c


def build_v2(root):
    import zarr
    if os.path.exists(root):
        shutil.rmtree(root)
    store = zarr.DirectoryStore(root)
    g = zarr.group(store=store)
    g.attrs.update({"title": "zarrfs remote test store", "unicode": "\u00e9\u305f"})
    rng = np.random.default_rng(77)

    def smooth(shape, dtype):
        n = int(np.prod(shape))
        x = np.arange(n, dtype="f8")
        return (np.sin(x / 13.0) * 1000 + x / 3.0).astype(dtype).reshape(shape)

    a = g.create_dataset("zlib_f4", shape=(40, 50), chunks=(16, 16), dtype="<f4",
                         compressor=numcodecs.Zlib(level=5), fill_value=np.nan)
    a[...] = smooth((40, 50), "<f4")
    b = g.create_dataset("blosc_i4_be", shape=(30, 30), chunks=(7, 11), dtype=">i4",
                         compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1),
                         fill_value=-1)
    b[...] = rng.integers(-2 ** 31, 2 ** 31 - 1, size=(30, 30), dtype="i4")
    c = g.create_dataset("zstd_u2_F", shape=(25, 33), chunks=(10, 10), dtype="<u2", order="F",
                         compressor=numcodecs.Zstd(level=3), fill_value=7)
    c[...] = (np.arange(25 * 33) % 65536).astype("<u2").reshape(25, 33)
    d = g.create_dataset("lz4_f8", shape=(1000,), chunks=(128,), dtype="<f8",
                         compressor=numcodecs.LZ4(), fill_value=0.5)
    d[...] = rng.standard_normal(1000)
    e = g.create_dataset("gzip_delta_i8", shape=(777,), chunks=(100,), dtype="<i8",
                         compressor=numcodecs.GZip(level=6), filters=[numcodecs.Delta(dtype="<i8")])
    e[...] = np.cumsum(rng.integers(-50, 50, size=777))
    f = g.create_dataset("bz2_u1", shape=(64, 64), chunks=(32, 32), dtype="|u1",
                         compressor=numcodecs.BZ2(level=9), fill_value=3)
    f[...] = rng.integers(0, 256, size=(64, 64), dtype="u1")
    h = g.create_dataset("lzma_i2_nested", shape=(20, 20, 6), chunks=(8, 8, 3), dtype="<i2",
                         compressor=numcodecs.LZMA(), dimension_separator="/", fill_value=0)
    h[...] = smooth((20, 20, 6), "<i2")
    i = g.create_dataset("raw_c8", shape=(12, 9), chunks=(5, 5), dtype="<c8", compressor=None,
                         fill_value=None)
    i[...] = (rng.standard_normal((12, 9)) + 1j * rng.standard_normal((12, 9))).astype("<c8")
    g.create_dataset("zero_d", shape=(), dtype="<i4", compressor=None, fill_value=0)[...] = 42
    g.create_dataset("zero_len", shape=(0, 5), chunks=(4, 5), dtype="<f4")

    sub = g.create_group("grp")
    sub.attrs["level"] = 1
    deep = sub.create_group("sub").create_group("deep")
    deep.attrs.update({"level": 3, "list": [1, 2, 3]})
    x = deep.create_dataset("arr", shape=(50, 40), chunks=(20, 20), dtype="<f8",
                            compressor=numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2),
                            fill_value=-9.5)
    x[...] = smooth((50, 40), "<f8")
    sp = g.create_group(SPACE_GROUP)
    y = sp.create_dataset("arr \u00fc", shape=(100,), chunks=(30,), dtype="<u4",
                          compressor=numcodecs.Zlib(level=1), fill_value=11)
    y[...] = np.arange(100, dtype="<u4") * 3
    z = g.create_dataset(LONG_NAME, shape=(33,), chunks=(10,), dtype="<i2", fill_value=5)
    z[...] = np.arange(33, dtype="<i2") - 16
    o = g.create_dataset(ODD_NAME, shape=(10, 10), chunks=(4, 4), dtype="<f4", fill_value=1.5)
    o[...] = smooth((10, 10), "<f4")

    # chunks missing: the fill value shows
    for key in ("zlib_f4/0.1", "zlib_f4/2.3", "blosc_i4_be/1.1", "zstd_u2_F/2.0", "lz4_f8/3",
                "bz2_u1/1.0", "lzma_i2_nested/1/1/0", "raw_c8/1.1", "grp/sub/deep/arr/1.0",
                SPACE_GROUP + "/arr \u00fc/2", ODD_NAME + "/1.1"):
        del store[key]
    zarr.consolidate_metadata(store)
    return root


def v2_arrays(root):
    """Relative paths of the v2 arrays below root (from the files, not from zarrfs)."""
    return zfmount.walk_store(root)[1]


def build_sharded(root):
    """The sharded v3 hierarchy; returns {array name: expected numpy array}."""
    import gen_v3_common as c3
    import test_v3_sharding as ts
    if os.path.exists(root):
        shutil.rmtree(root)
    c3.write_files(root, {"zarr.json": c3.v3_group_doc({"built": "by hand"})})
    rng = np.random.default_rng(5)
    want = {}
    want["end_le_crc"] = ts.write_array(root, "end_le_crc", "int32",
                                        np.arange(20 * 30, dtype="<i4").reshape(20, 30) * 7 - 1000,
                                        (10, 15), [ts.shard_conf((5, 5), [ts.LE])])
    want["start_be_gzip"] = ts.write_array(root, "start_be_gzip", "float64",
                                           rng.standard_normal((12, 16)), (6, 8),
                                           [ts.shard_conf((3, 4), [ts.BE, ts.GZ], [ts.BE], "start")])
    want["missing_and_empty"] = ts.write_array(
        root, "missing_and_empty", "int16", (np.arange(24 * 24) % 251).astype("<i2").reshape(24, 24),
        (12, 12), [ts.shard_conf((4, 4), [ts.LE, ts.GZ])], fill=-5,
        fill_regions=[np.s_[0:4, 0:8], np.s_[12:24, 12:16]], missing_shards={(0, 1)})
    want["shuffled_gaps"] = ts.write_array(
        root, "shuffled_gaps", "uint32", rng.integers(0, 2 ** 31, size=(16, 16)).astype("<u4"),
        (16, 16), [ts.shard_conf((4, 4), [ts.LE])],
        layout={"shuffle": random.Random(5), "gap": b"\xaa" * 13})
    data = rng.integers(0, 256, size=COUNTED_SHAPE, dtype=np.uint8)
    want["counted"] = ts.write_array(root, "counted", "uint8", data, COUNTED_SHARD,
                                     [ts.shard_conf(COUNTED_INNER, [{"name": "bytes"}])])
    return want


def counted_index(root, shard):
    """(offset, nbytes) of every inner chunk of one `counted` shard, from the stored file's index."""
    p = os.path.join(root, "counted", "c", *[str(i) for i in shard])
    with open(p, "rb") as f:
        raw = f.read()
    idx = np.frombuffer(raw[-COUNTED_INDEX_BYTES:-4], dtype="<u8").reshape(4, 4, 2)
    return idx, len(raw)


def build(root):
    """All hierarchies below root; returns {"sharded": {name: numpy array}}."""
    os.makedirs(root, exist_ok=True)
    v2 = build_v2(os.path.join(root, "v2.zarr"))
    nc = os.path.join(root, "v2nc.zarr")
    if os.path.exists(nc):
        shutil.rmtree(nc)
    shutil.copytree(v2, nc)
    os.unlink(os.path.join(nc, ".zmetadata"))
    v3 = os.path.join(root, "v3.zarr")
    if os.path.exists(v3):
        shutil.rmtree(v3)
    if not os.path.isdir(V3_FIXTURE):
        raise RuntimeError("fixture missing: %s" % V3_FIXTURE)
    shutil.copytree(V3_FIXTURE, v3)
    return {"sharded": build_sharded(os.path.join(root, "sharded.zarr"))}


# ---------------------------------------------------------------------------------------------
# comparisons

def outcome(fn, *args):
    """("ok", value) or ("errno", name) of fn(*args)."""
    try:
        return ("ok", fn(*args))
    except OSError as e:
        return ("errno", errno.errorcode.get(e.errno, e.errno))


def walk_mount(mnt):
    """(dirs, files) relative paths of a mounted tree ('' = the root), sorted."""
    dirs, files = [], []
    for dirpath, dirnames, filenames in os.walk(mnt):
        rel = os.path.relpath(dirpath, mnt)
        dirs.append("" if rel == "." else rel)
        for n in filenames:
            files.append(os.path.normpath(os.path.join(rel, n)))
        dirnames.sort()
    return sorted(dirs), sorted(files)


def xattrs(path):
    names = sorted(n for n in os.listxattr(path) if n.startswith("user.zarr"))
    return {n: outcome(os.getxattr, path, n) for n in names}


def compare_trees(tc, local, remote, listing=True, dirs=None, files=None, preads=20, seed=1,
                  what=""):
    """The remote mount against the local mount of the same store: every directory (listing
    when `listing`, type, xattrs) and every file (type, size, xattrs, whole content or the errno
    of opening/reading it, `preads` random preads). dirs/files default to the local walk.
    Returns (number of files read byte-exact, bytes compared, files failing alike)."""
    if dirs is None or files is None:
        d, f = walk_mount(local)
        dirs = d if dirs is None else dirs
        files = f if files is None else files
    rng = random.Random(seed)
    for rel in dirs:
        lp, rp = os.path.join(local, rel), os.path.join(remote, rel)
        with tc.subTest(what=what, dir=rel or "/"):
            tc.assertTrue(stat.S_ISDIR(os.stat(rp).st_mode), "%s/%s is not a directory" % (what, rel))
            if listing:
                tc.assertEqual(sorted(os.listdir(rp)), sorted(os.listdir(lp)),
                               "%s: listing of /%s" % (what, rel))
            tc.assertEqual(xattrs(rp), xattrs(lp), "%s: xattrs of /%s" % (what, rel))
    n_ok = n_bytes = n_err = 0
    for rel in files:
        lp, rp = os.path.join(local, rel), os.path.join(remote, rel)
        with tc.subTest(what=what, file=rel):
            lst, rst = os.stat(lp), os.stat(rp)
            tc.assertTrue(stat.S_ISREG(rst.st_mode), "%s/%s is not a regular file" % (what, rel))
            tc.assertEqual(rst.st_size, lst.st_size, "%s/%s: st_size" % (what, rel))
            tc.assertEqual(xattrs(rp), xattrs(lp), "%s/%s: xattrs" % (what, rel))
            want = outcome(zfmount.read_all, lp)
            got = outcome(zfmount.read_all, rp)
            if want[0] == "ok" and got[0] == "ok":
                tc.assertBytesEqual(got[1], want[1], "%s/%s" % (what, rel))
                n_ok += 1
                n_bytes += len(want[1])
            else:
                short = lambda o: o if o[0] == "errno" else ("ok", "%d bytes" % len(o[1]))  # noqa
                tc.assertEqual(short(got), short(want), "%s/%s: remote mount %r, local mount %r"
                               % (what, rel, short(got), short(want)))
                n_err += 1
                continue
            data = want[1]
            if preads and data:
                fd = os.open(rp, os.O_RDONLY)
                try:
                    zfmount.drop_page_cache(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    for _ in range(preads):
                        off = rng.randrange(0, len(data))
                        ln = rng.choice([1, 7, 100, 4096, rng.randrange(1, len(data) + 10)])
                        tc.assertBytesEqual(zfmount.pread_full(fd, ln, off), data[off:off + ln],
                                            "%s/%s pread(%d, %d)" % (what, rel, ln, off))
                finally:
                    os.close(fd)
    return n_ok, n_bytes, n_err


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read())
