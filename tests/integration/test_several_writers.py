#!/usr/bin/python3
"""Several writers of one store: two zarrfs daemons (two mounts with -o rw) on one local
directory, each writing its own inner chunks of the same shard of a Zarr v3 sharded array
(v3 codecs "Sharding codec"). A write of some inner chunks rewrites the whole shard from the
stored one (read-modify-write); zarrfs stores the merge only when the shard is still the one it
read (a conditional write, zf_store_set_if), and otherwise reads it again and merges anew, so
neither daemon loses the other's inner chunks. The result is read by zarrita.js (an independent
implementation) and by a fresh mount."""

import os
import shutil
import sys
import tempfile
import threading
import json

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
from gen_v3_zarrita import zarrita_read  # noqa: E402
from gen_v3_common import one_shard_int32_doc  # noqa: E402
import other_writer  # noqa: E402

import numpy as np  # noqa: E402

WORK = None
N_INNER = 16   # inner chunks in the one shard
INNER = 8      # int32 elements per inner chunk
ROUNDS = 25    # each daemon writes each of its inner chunks this many times, fsync after each


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-writers-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def make_store(name):
    """A v3 group holding array "a": int32, one shard of N_INNER inner chunks (index at the end,
    crc32c), fill value 0 — the metadata the spec defines, written here."""
    root = os.path.join(WORK, name)
    os.makedirs(os.path.join(root, "a"))
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    meta = one_shard_int32_doc(N_INNER, INNER)
    with open(os.path.join(root, "a", "zarr.json"), "w") as f:
        json.dump(meta, f)
    return root


def value(rnd, i):
    """What round rnd writes into inner chunk i."""
    return np.arange(INNER, dtype="<i4") + (rnd * 1000 + i) * 100


def writer(path, mine, errors):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            for rnd in range(1, ROUNDS + 1):
                for i in mine:
                    os.pwrite(fd, value(rnd, i).tobytes(), i * INNER * 4)
                    os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        errors.append("%s: %s" % (path, e))


def stats(m):
    with open(m.path(".zarrfs-stats")) as f:
        return json.load(f)


class TwoDaemonsOneShard(zfmount.TestCase):

    test_timeout = 300

    def test_01_disjoint_inner_chunks_of_one_shard(self):
        """Daemon A writes the even inner chunks, daemon B the odd ones, at the same time, each
        write fsync'ed (one shard rewrite each): every inner chunk ends with its writer's last
        value, read by zarrita.js and by a fresh mount; and the daemons did meet (conflicts
        counted in .zarrfs-stats) — otherwise the test would prove nothing."""
        root = make_store("one-shard")
        errors = []
        with zfmount.Mount(root, ["rw"], label="writer-a") as ma, \
                zfmount.Mount(root, ["rw"], label="writer-b") as mb:
            ts = [threading.Thread(target=writer, args=(ma.path("a"), range(0, N_INNER, 2), errors)),
                  threading.Thread(target=writer, args=(mb.path("a"), range(1, N_INNER, 2), errors))]
            for t in ts:
                t.start()
            for t in ts:
                t.join(240)
            self.assertFalse(any(t.is_alive() for t in ts), "writers hang")
            self.assertEqual(errors, [])
            conflicts = [stats(m)["encode"]["shard_conflicts"] for m in (ma, mb)]
            log("  shard conflicts (merged again): A %d, B %d" % tuple(conflicts))
        want = np.concatenate([value(ROUNDS, i) for i in range(N_INNER)]).tobytes()
        got = zarrita_read(root, ["a"], os.path.join(WORK, "zarrita-out"))["a"]
        self.assertTrue(got.get("ok"), got)
        self.assertBytesEqual(got["data"], want, "zarrita.js reading the store")
        with zfmount.Mount(root) as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), want, "a fresh mount")
        self.assertGreater(sum(conflicts), 0, "the two daemons never wrote the shard at once")
        left = [f for _d, _s, fs in os.walk(root) for f in fs if ".zarrfs-" in f]
        self.assertEqual(left, [], "temporary files left in the store")


class OtherProgram(zfmount.TestCase):
    """Another program rewrites chunks the mount has cached, then a program writes part of them
    through the mount (other_writer.py): only what was written through the mount changes."""

    def local(self, name, build):
        root = os.path.join(WORK, name)
        shutil.rmtree(root, ignore_errors=True)
        build(root)

        def put(key, data):  # as zarr-python stores a value: a new file renamed into place
            tmp = os.path.join(root, key + ".other-tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(root, key))

        return (lambda: zfmount.Mount(root, ["rw"], label=name), put,
                lambda dest: shutil.copytree(root, dest))

    def test_01_plain_chunks(self):
        other_writer.plain_case(self, WORK, *self.local("other-plain", other_writer.build_plain))

    def test_02_shard(self):
        other_writer.shard_case(self, WORK,
                                *self.local("other-shard", other_writer.write_shard_store))


if __name__ == "__main__":
    zfmount.main()
