"""-o memory_limit: one bound on the daemon's memory, held by backpressure. Arrays written by
zarr-python 2.13 (the expected bytes are zarr-python's own read-back, never zarrfs's output) are
read by many concurrent readers through a mount whose memory_limit leaves room for only a few
chunk loads at once: every byte must match, the daemon must report that loads waited for memory
(the bound was what held them back), nothing may hang, and — outside sanitizer builds, whose
allocators keep freed memory — the daemon's peak resident memory (VmHWM) must stay within
memory_limit + 16 MiB. A chunk larger than the whole bound still reads (a load alone is always
admitted), and bounds the daemon cannot keep are refused at mount with a message."""

import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import Mount, TestCase, expect_refusal, log, main  # noqa: E402

MiB = 1 << 20
SLACK_MIB = 16  # the goal: peak RSS <= memory_limit + 16 MiB

# meson test sets MALLOC_PERTURB_, under which glibc fills every block it hands out and takes
# back, touching pages a daemon never touches otherwise (a 94 MiB peak against 57 without it,
# here): the bound is the daemon's as users run it, so its mounts here go without.
os.environ.pop("MALLOC_PERTURB_", None)


def stats(m):
    with open(m.path(".zarrfs-stats")) as f:
        return json.load(f)


class MemoryLimit(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="zf-memlimit-")
        cls.store = os.path.join(cls.tmp, "data.zarr")
        root = zarr.open_group(zarr.DirectoryStore(cls.store), mode="w")
        rng = np.random.default_rng(7)
        comp = zarr.Blosc(cname="lz4", clevel=5, shuffle=zarr.Blosc.SHUFFLE)
        cls.want = {}
        for i in range(2):  # 64 MiB each, chunks (64, 16384) float32 = 4 MiB
            data = (np.arange(1024 * 16384, dtype="<f4").reshape(1024, 16384) * (i + 1)
                    + rng.standard_normal((1024, 16384), dtype="<f4"))
            z = root.create_dataset("a%d" % i, data=data, chunks=(64, 16384),
                                    compressor=comp, dtype="<f4")
            cls.want["a%d" % i] = z[:].tobytes()
        # one array of two 32 MiB chunks: a chunk larger than a whole bound below
        big = np.arange(1024 * 16384, dtype="<f4").reshape(1024, 16384)
        z = root.create_dataset("big", data=big, chunks=(512, 16384), compressor=comp)
        cls.want["big"] = z[:].tobytes()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def read_concurrently(self, m, names, readers, seconds, sequential=()):
        """`readers` threads of random preads (64 KiB - 1 MiB) of the arrays `names` for
        `seconds`, beside one whole sequential read of each of `sequential`; every read compared
        with zarr-python's bytes. Returns the bytes read."""
        errors, total = [], [0]
        lock = threading.Lock()

        def random_reader(seed):
            rng = random.Random(seed)
            fds = {n: os.open(m.path(n), os.O_RDONLY) for n in names}
            n_read = 0
            try:
                end = time.monotonic() + seconds
                while time.monotonic() < end and not errors:
                    name = rng.choice(names)
                    want = self.want[name]
                    ln = rng.randrange(16, 257) * 4096
                    off = rng.randrange(0, (len(want) - ln) // 4096) * 4096
                    got = os.pread(fds[name], ln, off)
                    if got != want[off:off + ln]:
                        errors.append("%s: %d bytes at %d differ" % (name, ln, off))
                    n_read += len(got)
            except OSError as e:
                errors.append("%s: %s" % (name, e))
            finally:
                for fd in fds.values():
                    os.close(fd)
            with lock:
                total[0] += n_read

        def whole_reader(name):
            try:
                with open(m.path(name), "rb") as f:
                    got = b"".join(iter(lambda: f.read(4 * MiB), b""))
                if got != self.want[name]:
                    errors.append("%s: the whole file differs" % name)
                with lock:
                    total[0] += len(got)
            except OSError as e:
                errors.append("%s: %s" % (name, e))

        threads = [threading.Thread(target=random_reader, args=(i,)) for i in range(readers)]
        threads += [threading.Thread(target=whole_reader, args=(n,)) for n in sequential]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=zfmount.CMD_TIMEOUT)
            self.assertFalse(t.is_alive(), "a reader hung")
        self.assertEqual(errors, [])
        return total[0]

    def check_peak(self, m, limit_mib, what):
        if zfmount.sanitized_build():
            return
        hwm = m.proc_status("VmHWM")
        self.assertLessEqual(hwm, (limit_mib + SLACK_MIB) * 1024,
                             "%s: peak RSS %d MiB, memory_limit %d MiB" % (what, hwm >> 10,
                                                                          limit_mib))
        log("  %s: peak RSS %d MiB of memory_limit %d MiB" % (what, hwm >> 10, limit_mib))

    def reserve_mib(self, options=()):
        """What the daemon keeps outside its memory account (its own memory at mount, 16 MiB),
        read from a mount with the default bound: a sanitizer build's is larger."""
        with Mount(self.store, options=list(options)) as m:
            return -(-stats(m)["memory"]["reserve"] // MiB)

    def test_01_concurrent_readers_wait_within_the_bound(self):
        limit_mib = self.reserve_mib() + 28  # the cache's 8 MiB and about two 4 MiB loads
        with Mount(self.store, options=["cache_size=8M", "memory_limit=%dM" % limit_mib]) as m:
            s0 = stats(m)["memory"]
            self.assertEqual(s0["limit"], limit_mib * MiB)
            self.assertGreater(s0["reserve"], 0)
            n = self.read_concurrently(m, ["a0", "a1"], readers=32, seconds=4,
                                       sequential=["a0", "a1"])
            s1 = stats(m)["memory"]
            # the bound is what held loads back: they waited, and the account stayed near it
            self.assertGreater(s1["waits"], 0, "no load waited for memory: %s" % s1)
            self.assertEqual(s1["loads"], 0)
            self.assertLessEqual(s1["accounted"], limit_mib * MiB - s1["reserve"])
            self.check_peak(m, limit_mib, "32 random + 2 whole readers")
            with open(m.path(".zarrfs-metrics")) as f:
                text = f.read()
            self.assertIn("zarrfs_memory_limit_bytes{", text)
            self.assertIn("} %d\n" % (limit_mib * MiB), text)
        log("  %d MB read by 34 readers, every byte as zarr-python's; %d loads waited for "
            "memory" % (n // 1000000, s1["waits"]))

    def test_02_a_chunk_larger_than_the_bound_still_reads(self):
        limit_mib = self.reserve_mib() + 20  # a chunk of `big` decodes to 32 MiB: it exceeds that
        with Mount(self.store, options=["cache_size=4M", "memory_limit=%dM" % limit_mib]) as m:
            self.read_concurrently(m, ["big"], readers=4, seconds=2, sequential=["big", "big"])
            self.assertEqual(stats(m)["memory"]["loads"], 0)
        log("  chunks of 32 MiB under memory_limit=%dM: read right by 6 readers, no hang"
            % limit_mib)

    def test_03_default_bound_is_cache_size_plus_256M(self):
        with Mount(self.store, options=["cache_size=24M"]) as m:
            mem = stats(m)["memory"]  # above the daemon's own memory (its reserve)
            self.assertEqual(mem["limit"] - mem["reserve"], (24 + 256) * MiB)
            with open(m.path("a1"), "rb") as f:
                f.seek(5 * MiB)
                self.assertEqual(f.read(MiB), self.want["a1"][5 * MiB:6 * MiB])

    def test_04_bounds_it_cannot_keep_are_refused(self):
        for value, words in (("1M", "too small"), ("lots", "expected a size")):
            status, err, mounted = expect_refusal(self.store, ["-o", "memory_limit=" + value])
            self.assertFalse(mounted)
            self.assertEqual(status, 1, err)
            self.assertIn("memory_limit=" + value, err)
            self.assertIn(words, err)
        log("  memory_limit=1M and =lots refused with a message")


if __name__ == "__main__":
    main()
