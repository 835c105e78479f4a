"""Mounting on a /dev/fuse descriptor (`zarrfs STORE /dev/fd/N`), as in a container: the test is
the privileged helper — it opens /dev/fuse, mounts it with mount(2) ("fd=N,rootmode=...", what
fusermount3 or a Kubernetes CSI driver does) and hands the descriptor to zarrfs, which may then
run without any privilege. Data written by zarr-python 2.13, compared byte for byte.

Needs root (mount(2)); skipped without /dev/fuse only when ZARRFS_ALLOW_NO_FUSE=1 (as the
others)."""

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import ZARRFS, TestCase, fuse_mounted_at, main  # noqa: E402

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
MNT_DETACH = 2
NOBODY = 65534


def kernel_mount(fd, mnt):
    """What a privileged helper does: mount the FUSE connection of fd at mnt."""
    opts = "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other" % (fd, NOBODY, NOBODY)
    if libc.mount(b"zarrfs-fd", mnt.encode(), b"fuse.zarrfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                  opts.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount(2) of %s: %s" % (mnt, os.strerror(e)))


def kernel_umount(mnt):
    if libc.umount2(mnt.encode(), MNT_DETACH) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "umount2(%s): %s" % (mnt, os.strerror(e)))


def drop_privileges():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class FdMount(TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="zf-fdmount-")
        os.chmod(self.tmp, 0o755)  # the unprivileged daemon reads the store
        self.store = os.path.join(self.tmp, "data.zarr")
        root = zarr.open_group(zarr.DirectoryStore(self.store), mode="w")
        self.want = (np.arange(300 * 70, dtype="<f8") * 1.5).reshape(300, 70)
        root.create_dataset("temperature", data=self.want, chunks=(64, 32),
                            compressor=zarr.Zlib(level=3))
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o644)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.proc = None
        self.mounted = False
        self.errlog = os.path.join(self.tmp, "stderr")

    def tearDown(self):
        if self.mounted and fuse_mounted_at(self.mnt):
            try:
                kernel_umount(self.mnt)
            except OSError:
                pass
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)
        super().tearDown()

    def stderr(self):
        with open(self.errlog, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def serve(self, fd, unprivileged=True, options=()):
        cmd = [ZARRFS, "-f"] + (["-o", ",".join(options)] if options else [])
        cmd += [self.store, "/dev/fd/%d" % fd]
        with open(self.errlog, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         pass_fds=(fd,), start_new_session=True,
                                         preexec_fn=drop_privileges if unprivileged else None)

    def test_unprivileged_daemon_serves_the_descriptor(self):
        fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        try:
            kernel_mount(fd, self.mnt)
            self.mounted = True
            self.serve(fd)
        finally:
            os.close(fd)  # the daemon holds its own copy
        path = os.path.join(self.mnt, "temperature")
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            self.assertIsNone(self.proc.poll(), "zarrfs exited: " + self.stderr())
            self.assertLess(time.monotonic(), deadline, "no array after 10 s: " + self.stderr())
            time.sleep(0.05)
        self.assertEqual(sorted(os.listdir(self.mnt)), ["temperature"])
        self.assertEqual(os.path.getsize(path), self.want.nbytes)
        with open(path, "rb") as f:
            got = f.read()
        self.assertBytesEqual(got, self.want.tobytes(), "temperature over /dev/fd")
        # the daemon runs as nobody: no capability, no root
        with open("/proc/%d/status" % self.proc.pid) as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        self.assertEqual(status["Uid"].split()[0], str(NOBODY))
        self.assertEqual(int(status["CapEff"].strip(), 16), 0)
        # the helper unmounts; the daemon sees the connection end and exits 0
        kernel_umount(self.mnt)
        self.mounted = False
        self.assertEqual(self.proc.wait(timeout=20), 0, self.stderr())

    def test_a_descriptor_not_of_dev_fuse_is_refused(self):
        fd = os.open(self.errlog, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        other = os.open(os.path.join(self.tmp, "other"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
        try:
            cmd = [ZARRFS, "-f", self.store, "/dev/fd/%d" % other]
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               pass_fds=(other,), timeout=30)
        finally:
            os.close(fd)
            os.close(other)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not a /dev/fuse descriptor", r.stderr)

    def test_a_closed_descriptor_is_refused(self):
        r = subprocess.run([ZARRFS, "-f", self.store, "/dev/fd/917"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/dev/fd/917", r.stderr)
        self.assertIn("Bad file descriptor", r.stderr)


if __name__ == "__main__":
    main()
