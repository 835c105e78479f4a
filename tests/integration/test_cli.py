#!/usr/bin/python3
"""The command line: --help, --version, bad usage, -s, -d, -o cache_size, daemonizing (no -f) with
a relative STORE path, a store whose root is an array (file named after the store), unmount
behaviour (the daemon exits 0 and leaves nothing mounted)."""

import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

WORK = None


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-cli-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def root_array(path, shape=(40, 30), chunks=(16, 16), dtype=">i4"):
    z = zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype=dtype,
                        compressor=numcodecs.Zlib(1), fill_value=-5)
    z[...] = (np.arange(int(np.prod(shape))) * 13 % 1000).reshape(shape).astype(dtype)
    del z.store["1.1"]
    return zarr.open_array(path, mode="r")


def small_group(path):
    g = zarr.open_group(path, mode="w")
    z = g.create_dataset("a", shape=(300, 200), chunks=(100, 50), dtype="<f8",
                         compressor=numcodecs.Blosc("zstd", 3, 1))
    z[...] = np.arange(60000, dtype="<f8").reshape(300, 200) / 3
    g.create_group("sub").attrs["x"] = 1
    return g


class Cli(zfmount.TestCase):

    def test_01_help(self):
        r = zfmount.run([zfmount.ZARRFS, "--help"])
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, "--help exit status %d: %s" % (r.returncode, out))
        self.assertIn("zarrfs", out)
        self.assertIn("cache_size", out, "--help does not document -o cache_size")
        log("  --help: exit 0, %d lines, mentions cache_size" % len(out.splitlines()))

    def test_02_version(self):
        r = zfmount.run([zfmount.ZARRFS, "--version"])
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        self.assertRegex(out, r"\d+\.\d+\.\d+")
        with open(os.path.join(zfmount.REPO, "meson.build")) as f:
            m = re.search(r"version\s*:\s*'([^']+)'", f.read())
        if m:
            self.assertIn(m.group(1), out, "--version does not print the meson project version")
        log("  --version: %s" % out.strip().splitlines()[0])

    def test_03_bad_usage(self):
        store = os.path.join(WORK, "usage.zarr")
        root_array(store)
        for args in ([], [store], ["--no-such-option", store, "/tmp"],
                     [store, os.path.join(WORK, "no_such_mountpoint")]):
            with self.subTest(args=args):
                r = zfmount.run([zfmount.ZARRFS, "-f"] + args, timeout=15)
                self.assertNotEqual(r.returncode, 0, "zarrfs %r succeeded" % args)
                self.assertTrue(r.stderr.strip(), "no message for bad usage %r" % args)
        status, err, mounted = zfmount.expect_refusal(store, args=["-o", "cache_size=lots"])
        self.assertFalse(mounted, "mounted with -o cache_size=lots")
        self.assertNotEqual(status, 0)
        self.assertIn("cache_size", err)
        log("  bad usage refused (no args, one arg, unknown option, missing mount point, "
            "cache_size=lots: %s)" % err.strip().splitlines()[-1:])

    def test_04_root_array_naming(self):
        """A store whose root is an array: one file named after the store, suffix dropped."""
        for dirname, want in [("temperature.zarr", "temperature"), ("t.zr3", "t"),
                              ("pressure.zarr3", "pressure"), ("plain", "plain"),
                              (".zarr", "array"), ("weird.name.zarr", "weird.name")]:
            with self.subTest(store=dirname):
                store = os.path.join(WORK, "named", dirname)
                z = root_array(store)
                want_bytes = zfmount.expected_bytes(z)
                for arg in (store, store + "/"):
                    with zfmount.Mount(arg, label=want) as m:
                        self.assertEqual(os.listdir(m.mnt), [want], "store %s" % arg)
                        self.assertTrue(stat.S_ISDIR(os.stat(m.mnt).st_mode))
                        p = m.path(want)
                        self.assertTrue(stat.S_ISREG(os.stat(p).st_mode))
                        self.assertBytesEqual(zfmount.read_all(p), want_bytes, arg)
                        self.assertEqual(os.getxattr(p, "user.zarr.dtype"), b">i4")
                log("  %-18s -> %s (also with a trailing slash)" % (dirname, want))

    def test_05_options(self):
        """-s, -d, -o ro, -o cache_size=1M (smaller than one band), 512M: all read right."""
        store = os.path.join(WORK, "opts")
        g = small_group(store)
        want = zfmount.expected_bytes(g["a"])
        for args, opts in [(["-s"], []), (["-d"], []), ([], ["ro"]), ([], ["cache_size=1M"]),
                           ([], ["cache_size=512M"]), (["-s"], ["ro", "cache_size=100K"]),
                           ([], ["cache_size=1G"]), ([], ["cache_size=12345678"])]:
            with self.subTest(args=args, opts=opts):
                with zfmount.Mount(store, args=args, options=opts, label="opts") as m:
                    for k in range(2):
                        zfmount.drop_page_cache(m.path("a"))
                        self.assertBytesEqual(zfmount.read_all(m.path("a"), bufsize=65536), want,
                                              "a with %r %r pass %d" % (args, opts, k))
                    self.assertEqual(sorted(os.listdir(m.mnt)), ["a", "sub"])
                    if "-d" in args:
                        self.assertTrue(m.stderr_text().strip(), "-d printed nothing")
                log("  %-4s %-24s reads right" % (" ".join(args), ",".join(opts)))

    def test_06_daemonize_relative_store(self):
        """Without -f: exit 0 once mounted, even with a relative STORE; unmount ends the daemon."""
        store = os.path.join(WORK, "bg")
        g = small_group(store)
        want = zfmount.expected_bytes(g["a"])
        mnt = tempfile.mkdtemp(prefix="zfmnt-bg-")
        try:
            r = zfmount.run([zfmount.ZARRFS, "bg", mnt], timeout=15, cwd=WORK)
            self.assertEqual(r.returncode, 0, "zarrfs (daemonizing) exit %d: %s" % (r.returncode, r.stderr))
            deadline = time.monotonic() + 10
            while not zfmount.fuse_mounted_at(mnt) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(zfmount.fuse_mounted_at(mnt), "nothing mounted after the parent exited")
            self.assertBytesEqual(zfmount.read_all(os.path.join(mnt, "a")), want, "a (daemonized)")
            self.assertEqual(sorted(os.listdir(mnt)), ["a", "sub"])
            pids = self.daemon_pids(mnt)
            r = zfmount.run(["fusermount3", "-u", mnt])
            self.assertEqual(r.returncode, 0, r.stderr)
            deadline = time.monotonic() + 10
            while any(os.path.exists("/proc/%d" % p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertFalse([p for p in pids if os.path.exists("/proc/%d" % p)],
                             "daemon still running after unmount")
        finally:
            zfmount.unmount_path(mnt)
            try:
                os.rmdir(mnt)
            except OSError:
                pass
        log("  daemonized with relative STORE 'bg': mounted, read right, exited on unmount")

    def daemon_pids(self, mnt):
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"zarrfs" and mnt.encode() in argv:
                pids.append(int(d))
        return pids

    def test_07_sigterm_unmounts(self):
        """SIGTERM to a foreground daemon unmounts and exits cleanly."""
        store = os.path.join(WORK, "term")
        small_group(store)
        m = zfmount.Mount(store, label="term")
        m.start()
        try:
            os.kill(m.pid, signal.SIGTERM)
            st = m.proc.wait(timeout=10)
            # libfuse's loop reports the signal; exiting 0 or 1 is fine, dying of a signal is not
            self.assertIn(st, (0, 1), "exit status after SIGTERM")
            m.killed_by_watchdog = st != 0    # do not report the non-zero status again in stop()
            self.assertFalse(zfmount.anything_mounted_at(m.mnt), "still mounted after SIGTERM")
        finally:
            m.stop()
        log("  SIGTERM: daemon exited (status %s) and the mount is gone" % st)

    def test_07b_mount_cycles(self):
        """20 mount / read / unmount cycles: each daemon exits 0 and leaves nothing behind."""
        store = os.path.join(WORK, "cycles20")
        g = small_group(store)
        want = zfmount.expected_bytes(g["a"])
        mnt = tempfile.mkdtemp(prefix="zfmnt-cycles-")
        try:
            for i in range(20):
                with zfmount.Mount(store, mnt=mnt, label="cycle") as m:
                    fd = os.open(m.path("a"), os.O_RDONLY)
                    try:
                        off = (i * 104729) % len(want)
                        self.assertEqual(os.pread(fd, 1000, off), want[off:off + 1000])
                    finally:
                        os.close(fd)
                self.assertEqual(m.exit_status, 0)
                self.assertFalse(zfmount.anything_mounted_at(mnt))
        finally:
            zfmount.unmount_path(mnt)
            os.rmdir(mnt)
        log("  20 mount/read/unmount cycles, each daemon exited 0")

    def test_08_mount_point_busy_files_open(self):
        """Files open across many opens/closes do not leak: 2000 open/read/close cycles."""
        store = os.path.join(WORK, "cycles")
        g = small_group(store)
        want = zfmount.expected_bytes(g["a"])
        with zfmount.Mount(store, label="cycles") as m:
            p = m.path("a")
            for i in range(2000):
                fd = os.open(p, os.O_RDONLY)
                off = (i * 7919) % len(want)
                got = os.pread(fd, 64, off)
                os.close(fd)
                self.assertEqual(got, want[off:off + 64])
            fds = os.listdir("/proc/%d/fd" % m.pid)
            self.assertLess(len(fds), 64, "daemon holds %d descriptors after 2000 open/close" % len(fds))
        log("  2000 open/pread/close cycles; daemon holds %d fds" % len(fds))


    def test_09_one_mib_requests(self):
        """The daemon takes FUSE reads of 1 MiB: an aligned 4 MiB O_DIRECT read arrives as four
        1 MiB READ requests (seen in libfuse's -d trace as replies of 1 MiB + 16 header bytes)."""
        import mmap
        store = os.path.join(WORK, "maxread")
        z = zarr.open_array(store, mode="w", shape=(1024, 1024), chunks=(256, 256), dtype="<f8",
                            compressor=numcodecs.Zstd(1))
        z[...] = np.arange(1 << 20, dtype="<f8").reshape(1024, 1024)
        want = zfmount.expected_bytes(zarr.open_array(store, mode="r"))
        with zfmount.Mount(store, args=["-d"], label="maxread") as m:
            fd = os.open(m.path("maxread"), os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 4 << 20)           # page-aligned, as O_DIRECT wants
            try:
                n = os.preadv(fd, [buf], 0)
                self.assertEqual(n, 4 << 20)
                self.assertBytesEqual(bytes(buf[:n]), want[:4 << 20], "4 MiB O_DIRECT read")
            finally:
                os.close(fd)
                buf.close()
            time.sleep(0.2)
            trace = m.stderr_text()
        sizes = [int(x) - 16 for x in re.findall(r"success, outsize: (\d+)", trace)]
        self.assertIn(1 << 20, sizes, "no 1 MiB read reply in the -d trace (largest %s)"
                      % (max(sizes) if sizes else None))
        log("  READ replies of %d bytes seen; largest %d" % (sizes.count(1 << 20), max(sizes)))


if __name__ == "__main__":
    zfmount.main()
