#!/usr/bin/python3
"""Storage faults under writes (-o rw on a local directory): what the writer is told, what the
store holds afterwards, and that reads keep working.

1. A store that fills up (a 2 MiB tmpfs): the writer gets ENOSPC from fsync and close (from
   write itself once the unstorable data outgrows the chunk cache); the store holds only whole
   chunks, each the old or the new content (zarr-python reads them), and no temporary files;
   the written data stays in the cache, so that once room is made a later fsync stores it.
2. A store that turns read-only under the mount (remount,ro of its tmpfs; chmod would not stop
   root): fsync and close fail (EIO), as do metadata changes; reads go on; nothing is left
   behind; once writable again a later fsync stores the data.
3. Chunk files removed behind the daemon's back: reads give the cached bytes or the fill value
   (DESIGN.md: absent chunks read as the fill value); a partial write of a chunk whose file is
   gone starts from the fill value; with a whole array directory removed, reads give cached
   bytes or the fill value and a write is not stored (fsync and close: EIO) rather than making
   the directory again; no crash, no hang.

Runs as root (mount -t tmpfs). Reference reader: zarr-python 2.13; expectations are numpy models
of the writes."""

import contextlib
import errno
import json
import os
import shutil
import tempfile

import numcodecs
import numpy as np
import zarr

import zfmount as zf

KiB = 1024
NEW_META = {"zarr_format": 2, "shape": [6], "chunks": [3], "dtype": "<i4", "compressor": None,
            "fill_value": 0, "order": "C", "filters": None}


def stats(m):
    with open(m.path(".zarrfs-stats")) as f:
        return json.load(f)


def temp_files(root):
    """zarrfs's temporary files (".NAME.zarrfs-XXXXXX") anywhere below root."""
    return sorted(os.path.join(d, f) for d, _dirs, files in os.walk(root) for f in files
                  if f.startswith(".") and ".zarrfs-" in f)


@contextlib.contextmanager
def tmpfs(path, size):
    """A tmpfs of `size` bytes mounted at path (made), always unmounted on the way out."""
    os.makedirs(path, exist_ok=True)
    r = zf.run(["mount", "-t", "tmpfs", "-o", "size=%d,mode=0755" % size, "tmpfs", path])
    if r.returncode != 0:
        raise AssertionError("mount -t tmpfs %s: %s" % (path, r.stderr.strip()))
    try:
        yield path
    finally:
        for cmd in (["umount", path], ["umount", "-l", path]):
            if zf.run(cmd).returncode == 0:
                break


def remount(path, how):
    r = zf.run(["mount", "-o", "remount,%s" % how, path])
    if r.returncode != 0:
        raise AssertionError("mount -o remount,%s %s: %s" % (how, path, r.stderr.strip()))


def fill_to(path, free_bytes, fsdir):
    """Write a file at path that leaves about free_bytes free in the file system at fsdir."""
    sv = os.statvfs(fsdir)
    n = sv.f_bavail * sv.f_frsize - free_bytes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while n > 0:
            try:
                n -= os.write(fd, b"\xa5" * min(n, 65536))
            except OSError as e:      # asked for everything: full
                if e.errno != errno.ENOSPC or free_bytes:
                    raise
                break
    finally:
        os.close(fd)
    sv = os.statvfs(fsdir)
    return sv.f_bavail * sv.f_frsize


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


class StorageFaults(zf.TestCase):
    ROWS, ROW_ELEMS = 4, 65536          # "big": 4 chunks of 256 KiB, stored raw

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="zf-sfault-")

    def tearDown(self):
        if not any(mp.startswith(self.tmp) for mp, _f, _s in zf.mount_entries()):
            shutil.rmtree(self.tmp, ignore_errors=True)
        super().tearDown()

    def make_store(self, root):
        """A v2 group with "a" (zlib, written by zarr-python) and "big" (raw, empty)."""
        store = os.path.join(root, "s.zarr")
        g = zarr.open_group(store, mode="w")
        a = g.create_dataset("a", shape=(64, 256), chunks=(16, 256), dtype="<f4",
                             compressor=numcodecs.Zlib(1), fill_value=0)
        a[:] = np.arange(64 * 256, dtype="<f4").reshape(64, 256)
        g.create_dataset("big", shape=(self.ROWS, self.ROW_ELEMS), chunks=(1, self.ROW_ELEMS),
                         dtype="<f4", compressor=None, fill_value=0)
        return store

    def model(self, seed):
        return np.random.default_rng(seed).random((self.ROWS, self.ROW_ELEMS), dtype="<f4")

    def check_whole_chunks(self, store, model, old=None):
        """Every stored chunk of "big" is whole and holds the new content (or `old`, the content
        before the writes). (Temporary files are checked for where no write-back can be under
        way: the close's release, the timer may be retrying one meanwhile.)"""
        z = zarr.open_array(os.path.join(store, "big"), "r")
        for i in range(self.ROWS):
            if not os.path.exists(os.path.join(store, "big", "%d.0" % i)):
                continue
            got = z[i]     # a torn (short) chunk file fails to decode here
            self.assertTrue(np.array_equal(got, model[i]) or
                            (old is not None and np.array_equal(got, old[i])),
                            "chunk %d.0 is neither the old nor the new content" % i)

    def check_a(self, m, store):
        want = zarr.open_array(os.path.join(store, "a"), "r")[:].tobytes()
        self.assertBytesEqual(read_all(m.path("a")), want, "array a while the store fails")

    # ---- 1. the store fills up --------------------------------------------------------------

    def test_full_store_fsync_close_then_retry(self):
        fsdir = os.path.join(self.tmp, "fs")
        with tmpfs(fsdir, 2048 * KiB):
            store = self.make_store(fsdir)
            filler = os.path.join(fsdir, "filler")
            free = fill_to(filler, 900 * KiB, fsdir)   # room for 3 of the 4 chunks of "big"
            zf.log("  free before writing: %d KiB" % (free // KiB))
            model = self.model(1)
            with zf.Mount(store, options=["rw"], label="full") as m:
                fd = os.open(m.path("big"), os.O_RDWR)
                try:
                    data = model.tobytes()
                    for off in range(0, len(data), 128 * KiB):
                        self.assertEqual(os.pwrite(fd, data[off:off + 128 * KiB], off), 128 * KiB)
                    self.assertErrno(errno.ENOSPC, os.fsync, fd)
                    self.check_whole_chunks(store, model)
                    self.check_a(m, store)
                    self.assertBytesEqual(os.pread(fd, len(data), 0), data,
                                          "big through the mount (the cache keeps the writes)")
                    self.assertErrno(errno.ENOSPC, os.fsync, fd)   # still full: again
                finally:
                    self.assertErrno(errno.ENOSPC, os.close, fd)   # close reports it too
                self.check_whole_chunks(store, model)
                s = stats(m)["cache"]
                self.assertGreater(s["writeback_failures"], 0, s)
                self.assertGreater(s["dirty_entries"], 0, "the unstored chunks were dropped")
                os.unlink(filler)                                  # make room: retry
                fd = os.open(m.path("big"), os.O_RDWR)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self.assertEqual(stats(m)["cache"]["dirty_entries"], 0)
                z = zarr.open_array(os.path.join(store, "big"), "r")
                self.assertTrue(np.array_equal(z[:], model), "big after the retry")
                self.assertEqual(temp_files(store), [])
            self.assertIn("No space left on device", m.stderr_text())
            self.assertEqual(temp_files(store), [])

    def test_full_store_write_fails_past_the_cache(self):
        """With a chunk cache of 512 KiB, a writer whose chunks cannot be stored is stopped by
        write(2) itself (ENOSPC) once they outgrow the cache; what it wrote before is kept."""
        fsdir = os.path.join(self.tmp, "fs")
        with tmpfs(fsdir, 2048 * KiB):
            store = self.make_store(fsdir)
            filler = os.path.join(fsdir, "filler")
            fill_to(filler, 64 * KiB, fsdir)                 # no room for a single chunk
            model = self.model(2)
            data = model.tobytes()
            piece = self.ROW_ELEMS * 4                       # one chunk per write
            with zf.Mount(store, options=["rw", "cache_size=512K"], label="full-w") as m:
                fd = os.open(m.path("big"), os.O_RDWR)
                written = 0
                try:
                    while written < len(data):
                        try:
                            os.pwrite(fd, data[written:written + piece], written)
                        except OSError as e:
                            self.assertEqual(e.errno, errno.ENOSPC, e)
                            break
                        written += piece
                    self.assertLess(written, len(data), "every write succeeded")
                    self.assertGreater(written, 0)
                    self.check_whole_chunks(store, model)
                    self.check_a(m, store)
                    # metadata changes on a store with no room at all: ENOSPC, nothing changed
                    filler2 = os.path.join(fsdir, "filler2")
                    fill_to(filler2, 0, fsdir)
                    self.assertErrno(errno.ENOSPC, os.mkdir, m.path("g"))
                    self.assertErrno(errno.ENOSPC, os.setxattr, m.path("a"),
                                     "user.zarr.attributes", b'{"x": 1}')
                    self.assertEqual(json.loads(os.getxattr(m.path("a"), "user.zarr.attributes")),
                                     {})
                    self.assertNotIn("g", os.listdir(m.path()))
                    self.assertFalse(os.path.exists(os.path.join(store, "g")),
                                     "the failed mkdir left a directory in the store")
                    new = m.path("new")                      # a new array: its .zarray
                    open(new, "wb").close()
                    self.assertErrno(errno.ENOSPC, os.setxattr, new, "user.zarr.metadata",
                                     json.dumps(NEW_META).encode())
                    self.assertEqual(os.stat(new).st_size, 0)
                    self.assertFalse(os.path.exists(os.path.join(store, "new")))
                    os.unlink(filler2)
                    os.unlink(filler)
                    os.fsync(fd)                             # the kept chunks are stored
                finally:
                    os.close(fd)
                want = model.copy()
                want[written // piece:] = 0                  # never written: the fill value
                z = zarr.open_array(os.path.join(store, "big"), "r")
                self.assertTrue(np.array_equal(z[:], want), "big after the retry")
                os.mkdir(m.path("g"))                        # room again: retries work
                os.setxattr(new, "user.zarr.metadata", json.dumps(NEW_META).encode())
                self.assertEqual(os.stat(new).st_size, 6 * 4)
            self.assertEqual(temp_files(store), [])
            g = zarr.open_group(store, "r")
            self.assertEqual((sorted(g.group_keys()), dict(g["a"].attrs)), (["g"], {}))
            self.assertEqual(g["new"].shape, (6,))

    # ---- 2. the store turns read-only --------------------------------------------------------

    def test_read_only_store(self):
        fsdir = os.path.join(self.tmp, "fs")
        with tmpfs(fsdir, 8192 * KiB):
            store = self.make_store(fsdir)
            old = self.model(3)
            zarr.open_array(os.path.join(store, "big"), "r+")[:] = old
            model = old.copy()
            model[1, 1000:3000] = 42.5                       # part of one chunk (read first)
            model[2] = -1.0                                  # a whole chunk
            with zf.Mount(store, options=["rw"], label="ro-store") as m:
                remount(fsdir, "ro")
                try:
                    fd = os.open(m.path("big"), os.O_RDWR)
                    try:
                        os.pwrite(fd, model[1, 1000:3000].tobytes(), (self.ROW_ELEMS + 1000) * 4)
                        os.pwrite(fd, model[2].tobytes(), 2 * self.ROW_ELEMS * 4)
                        self.assertErrno((errno.EIO, errno.EROFS), os.fsync, fd)
                        self.assertBytesEqual(os.pread(fd, model.nbytes, 0), model.tobytes(),
                                              "big through the mount after the failed fsync")
                    finally:
                        self.assertErrno((errno.EIO, errno.EROFS), os.close, fd)
                    self.check_a(m, store)
                    self.assertErrno((errno.EIO, errno.EROFS), os.mkdir, m.path("g"))
                    self.assertErrno((errno.EIO, errno.EROFS), os.setxattr, m.path("a"),
                                     "user.zarr.attributes", b'{"x": 1}')
                    self.assertErrno((errno.EIO, errno.EROFS), os.truncate, m.path("a"),
                                     32 * 256 * 4)
                    self.assertEqual(os.stat(m.path("a")).st_size, 64 * 256 * 4)
                    self.check_whole_chunks(store, model, old)
                    self.assertEqual(temp_files(store), [])   # none can be made
                finally:
                    remount(fsdir, "rw")
                fd = os.open(m.path("big"), os.O_RDWR)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                z = zarr.open_array(os.path.join(store, "big"), "r")
                self.assertTrue(np.array_equal(z[:], model), "big once the store is writable")
                self.assertEqual(temp_files(store), [])
                self.assertEqual(zarr.open_array(os.path.join(store, "a"), "r").shape, (64, 256))
                self.assertFalse(os.path.exists(os.path.join(store, "g")))
            self.assertEqual(temp_files(store), [])

    # ---- 3. chunk files removed behind the daemon's back -------------------------------------

    def test_chunks_removed_behind_the_daemon(self):
        store = os.path.join(self.tmp, "r.zarr")
        g = zarr.open_group(store, mode="w")
        data = np.arange(40 * 10, dtype="<i4").reshape(40, 10)
        for name in ("c", "d", "e"):
            z = g.create_dataset(name, shape=(40, 10), chunks=(10, 10), dtype="<i4",
                                 compressor=numcodecs.Zlib(1), fill_value=-7)
            z[:] = data
        fill = np.full((10, 10), -7, "<i4")
        with zf.Mount(store, options=["rw"], label="removed") as m:
            # c: read whole (its chunks are cached), then two chunk files go
            self.assertBytesEqual(read_all(m.path("c")), data.tobytes(), "c")
            os.unlink(os.path.join(store, "c", "1.0"))
            os.unlink(os.path.join(store, "c", "3.0"))
            got = np.frombuffer(read_all(m.path("c")), "<i4").reshape(40, 10)
            for r in (1, 3):
                blk = got[r * 10:(r + 1) * 10]
                self.assertTrue(np.array_equal(blk, data[r * 10:(r + 1) * 10]) or
                                np.array_equal(blk, fill), "c chunk %d: neither cached nor fill" % r)
            self.assertTrue(np.array_equal(got[0:10], data[0:10]))
            self.assertTrue(np.array_equal(got[20:30], data[20:30]))
            # d: never read; its chunk 2 goes, then one row of it is written: the rest of the
            # chunk is the fill value (read-modify-write of an absent chunk)
            os.unlink(os.path.join(store, "d", "2.0"))
            fd = os.open(m.path("d"), os.O_RDWR)
            try:
                os.pwrite(fd, np.full(10, 99, "<i4").tobytes(), 25 * 10 * 4)
                os.fsync(fd)
            finally:
                os.close(fd)
            want_d = data.copy()
            want_d[20:30] = -7
            want_d[25] = 99
            self.assertTrue(np.array_equal(zarr.open_array(os.path.join(store, "d"), "r")[:],
                                           want_d))
            # c chunk 3 (cached before its file went): a write of one row keeps the rest as the
            # cache had it or as the fill value
            fd = os.open(m.path("c"), os.O_RDWR)
            try:
                os.pwrite(fd, np.full(10, 55, "<i4").tobytes(), 35 * 10 * 4)
                os.fsync(fd)
            finally:
                os.close(fd)
            blk = zarr.open_array(os.path.join(store, "c"), "r")[30:40]
            a, b = data[30:40].copy(), fill.copy()
            a[5] = b[5] = 55
            self.assertTrue(np.array_equal(blk, a) or np.array_equal(blk, b), blk)
            # e: partly read, then its whole directory goes
            fd = os.open(m.path("e"), os.O_RDONLY)
            try:
                self.assertEqual(os.pread(fd, 400, 0), data[:10].tobytes())
            finally:
                os.close(fd)
            shutil.rmtree(os.path.join(store, "e"))
            try:
                got = np.frombuffer(read_all(m.path("e")), "<i4").reshape(40, 10)
                for r in range(4):
                    blk = got[r * 10:(r + 1) * 10]
                    self.assertTrue(np.array_equal(blk, data[r * 10:(r + 1) * 10]) or
                                    np.array_equal(blk, fill), "e chunk %d" % r)
            except OSError as e:
                self.assertIn(e.errno, (errno.ENOENT, errno.EIO), e)
            # a write to it is not stored (that would make its directory again, holding chunks
            # no metadata describes): fsync and close report EIO
            try:
                fd = os.open(m.path("e"), os.O_RDWR)
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOENT, e)
            else:
                try:
                    os.pwrite(fd, np.full(10, 1, "<i4").tobytes(), 0)
                    self.assertErrno(errno.EIO, os.fsync, fd)
                finally:
                    self.assertErrno(errno.EIO, os.close, fd)
                self.assertFalse(os.path.exists(os.path.join(store, "e")),
                                 "a chunk of the removed array was stored")
                self.assertIn("e/: the array's directory is gone from the store",
                              m.stderr_text())
            self.assertIn("c", os.listdir(m.path()))
            self.assertBytesEqual(read_all(m.path("c"))[:400], data[:10].tobytes(), "c row 0-9")
            self.assertTrue(m.alive())
        self.assertEqual(temp_files(store), [])


if __name__ == "__main__":
    zf.main()
