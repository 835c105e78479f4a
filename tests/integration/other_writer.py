"""Another program rewrites chunks behind a `-o rw` mount that holds them in its cache; then a
program writes part of those chunks through the mount and fsyncs. zarrfs must store only the
elements written through the mount, merged into the chunks as the store holds them then — never
its cached copy of the other elements, which the other program made stale. Shared by
test_several_writers.py (a local directory) and test_remote_s3.py (S3).

Each case takes the store as three callables, so that the same steps run on any store:
  mount()            a context manager: the store mounted with -o rw (a zfmount.Mount)
  put(key, data)     the other program stores one value (key relative to the store's root)
  download(dest)     a local copy of the whole store in directory dest, to read it back
Plain chunks: zarr-python 2.13 writes the store, the other program's chunks and reads the result.
Shards: the test writes them (Zarr v3 codecs/sharding-indexed, gen_v3_common.shard_bytes) and
zarrita.js reads the result."""

import json
import os
import shutil

import numcodecs
import numpy as np
import zarr

import zfmount
from gen_v3_common import one_shard_int32_doc, shard_bytes, write_files
from gen_v3_zarrita import zarrita_read


def build_plain(root):
    """A v2 group with array "a": 16 x 16 float32 in 8 x 8 chunks (zstd), every element 1 but
    chunk 1.1, absent (fill value 0)."""
    z = zarr.open_group(root, mode="w").create("a", shape=(16, 16), chunks=(8, 8), dtype="<f4",
                                                fill_value=0, compressor=numcodecs.Zstd(1))
    z[:] = 1
    z[8:16, 8:16] = 0
    absent = os.path.join(root, "a", "1.1")  # all fill: stored or not, as write_empty_chunks
    if os.path.exists(absent):
        os.remove(absent)


def plain_case(tc, work, mount, put, download):
    """Chunk 0.0 rewritten (2 everywhere) and chunk 1.1 created (5 everywhere) by zarr-python
    while the mount has both cached; then one row segment of each written through the mount."""
    scratch = os.path.join(work, "other-program")  # where zarr-python encodes its chunks
    shutil.rmtree(scratch, ignore_errors=True)
    build_plain(scratch)
    with mount() as m:
        path = m.path("a")
        want = np.ones((16, 16), "<f4")
        want[8:16, 8:16] = 0
        tc.assertBytesEqual(zfmount.read_all(path), want.tobytes(), "before")  # all cached
        z = zarr.open_array(os.path.join(scratch, "a"), mode="r+")
        z[0:8, 0:8] = 2
        z[8:16, 8:16] = 5
        for key in ("0.0", "1.1"):
            with open(os.path.join(scratch, "a", key), "rb") as f:
                put("a/" + key, f.read())
        row = np.full(4, 9, "<f4").tobytes()
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, row, 4 * (3 * 16 + 2))    # row 3, columns 2..5: in chunk 0.0
            os.pwrite(fd, row, 4 * (12 * 16 + 10))  # row 12, columns 10..13: in chunk 1.1
            os.fsync(fd)
        finally:
            os.close(fd)
    want[0:8, 0:8] = 2
    want[8:16, 8:16] = 5
    want[3, 2:6] = 9
    want[12, 10:14] = 9
    back = os.path.join(work, "plain-back")
    shutil.rmtree(back, ignore_errors=True)
    download(back)
    got = zarr.open_array(os.path.join(back, "a"), mode="r")[:]
    tc.assertTrue(np.array_equal(got, want),
                  "zarr-python reads (the other program's 2 and 5 lost where zarrfs's stale "
                  "cache came back):\n%s" % got)


N_INNER, INNER = 8, 8  # one shard of 8 inner chunks of 8 int32


def shard_files():
    meta = one_shard_int32_doc(N_INNER, INNER)
    first = [np.full(INNER, 1, "<i4") for _ in range(N_INNER)]
    first[6] = None  # empty: the fill value
    return {"zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
            "a/zarr.json": json.dumps(meta), "a/c/0": shard_bytes(first)}


def shard_case(tc, work, mount, put, download):
    """The shard rewritten by another program (inner chunk i holds 10 + i; inner chunk 6,
    empty before, too) while the mount has its inner chunks cached; then half of inner chunks 5
    and 6 written through the mount."""
    with mount() as m:
        path = m.path("a")
        before = np.full(N_INNER * INNER, 1, "<i4")
        before[6 * INNER:7 * INNER] = 0
        tc.assertBytesEqual(zfmount.read_all(path), before.tobytes(), "before")
        other = [np.full(INNER, 10 + i, "<i4") for i in range(N_INNER)]
        put("a/c/0", shard_bytes(other))
        half = np.full(INNER // 2, 9, "<i4").tobytes()
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, half, 4 * 5 * INNER)                  # first half of inner chunk 5
            os.pwrite(fd, half, 4 * (6 * INNER + INNER // 2))   # second half of inner chunk 6
            os.fsync(fd)
        finally:
            os.close(fd)
    want = np.concatenate(other)
    want[5 * INNER:5 * INNER + INNER // 2] = 9
    want[6 * INNER + INNER // 2:7 * INNER] = 9
    back = os.path.join(work, "shard-back")
    shutil.rmtree(back, ignore_errors=True)
    download(back)
    got = zarrita_read(back, ["a"], os.path.join(work, "shard-zarrita"))["a"]
    tc.assertTrue(got.get("ok"), got)
    tc.assertBytesEqual(got["data"], want.tobytes(), "zarrita.js reads the shard")


def write_shard_store(root):
    write_files(root, shard_files())
