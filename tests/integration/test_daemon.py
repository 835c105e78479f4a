#!/usr/bin/python3
"""The daemon as file-system daemons run (issue 6): failed mounts reported before backgrounding,
syslog when in the background, -o log_level, clean unmount on signals, systemd's readiness
notification, the .zarrfs-stats file and -o stats_log, values of extended attributes over Linux's
64 KiB limit, -o rw mounting read-write."""

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

WORK = None


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-daemon-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def make_store(name, big_attrs=0):
    """A group with array "a" (40 x 30 <i4, chunks 10 x 10: 12 chunks, one deleted so 11 are
    stored), an array "obj" of object dtype (unsupported), and optionally a root attribute of
    big_attrs bytes."""
    path = os.path.join(WORK, name)
    g = zarr.open_group(path, mode="w")
    a = g.create_dataset("a", shape=(40, 30), chunks=(10, 10), dtype="<i4",
                         compressor=numcodecs.Zlib(1), fill_value=-1)
    a[...] = np.arange(1200, dtype="<i4").reshape(40, 30)
    del a.store["a/3.2"]
    g.create_dataset("obj", shape=(3,), dtype=object, object_codec=numcodecs.Pickle())
    if big_attrs:
        g.attrs["big"] = "".join(chr(0x41 + (i * 7) % 26) for i in range(big_attrs))
    return path


def chunk_files(store, array):
    d = os.path.join(store, array)
    return [f for f in os.listdir(d) if not f.startswith(".")]


def pids_serving(mnt):
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"zarrfs" and mnt.encode() in argv:
                pids.append(int(d))
    return pids


def wait_for(cond, seconds=10):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class Background:
    """zarrfs without -f (it daemonizes); the daemon is found by its command line."""

    def __init__(self, store, options=(), env=None):
        self.store, self.options, self.env = store, list(options), env
        self.mnt = tempfile.mkdtemp(prefix="zfmnt-bg-", dir=WORK)
        self.result = None

    def __enter__(self):
        cmd = [zfmount.ZARRFS] + (["-o", ",".join(self.options)] if self.options else [])
        self.result = zfmount.run(cmd + [self.store, self.mnt], timeout=20, env=self.env)
        return self

    def __exit__(self, *exc):
        pids = pids_serving(self.mnt)
        zfmount.unmount_path(self.mnt)
        wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in pids))
        for p in pids:
            if os.path.exists("/proc/%d" % p):
                os.kill(p, signal.SIGKILL)
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass


class SyslogListener:
    """A datagram socket at /dev/log, where syslog(3) writes (RFC 3164 lines)."""

    PATH = "/dev/log"

    def __enter__(self):
        if os.path.exists(self.PATH):
            raise unittest_skip("/dev/log exists: a syslog daemon owns it")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.PATH)
        self.sock.settimeout(0.2)
        self.lines = []
        return self

    def collect(self, until, seconds=10):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self.lines.append(self.sock.recv(65536).decode("utf-8", "replace"))
            except socket.timeout:
                pass
            if until(self.lines):
                return True
        return False

    def __exit__(self, *exc):
        self.sock.close()
        os.unlink(self.PATH)


def unittest_skip(why):
    import unittest
    return unittest.SkipTest(why)


class Daemon(zfmount.TestCase):

    def test_01_failed_mounts_report_before_backgrounding(self):
        """Without -f, a mount that cannot happen exits 1 with one line naming the reason, and
        nothing is mounted: a store that is not Zarr, a missing mount point, a file as mount
        point, an already mounted zarrfs mount point, a bad -o log_level."""
        good = make_store("fail")
        notzarr = os.path.join(WORK, "notzarr")
        os.makedirs(notzarr, exist_ok=True)
        afile = os.path.join(WORK, "afile")
        open(afile, "w").close()
        mnt = tempfile.mkdtemp(prefix="zfmnt-fail-", dir=WORK)
        cases = [
            ([notzarr, mnt], "not a Zarr hierarchy"),
            ([good, os.path.join(WORK, "no-such-dir")], "no-such-dir"),
            ([good, afile], "not a directory"),
            (["-o", "log_level=loud", good, mnt], "log_level=loud"),
        ]
        for args, needle in cases:
            r = zfmount.run([zfmount.ZARRFS] + args, timeout=15)
            self.assertEqual(r.returncode, 1, "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))
            self.assertIn(needle, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, "%s: %r" % (args, r.stderr))
            self.assertFalse(zfmount.anything_mounted_at(mnt), args)
        with zfmount.Mount(good, mnt=mnt, label="first"):
            r = zfmount.run([zfmount.ZARRFS, good, mnt], timeout=15)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("already mounted", r.stderr)
            n = sum(1 for mp, _f, _s in zfmount.mount_entries() if mp == os.path.realpath(mnt))
            self.assertEqual(n, 1, "a second mount was stacked on the first")
        # A daemon killed outright leaves a dead mount: say so, and how to clear it.
        proc = subprocess.Popen([zfmount.ZARRFS, "-f", good, mnt], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_for(lambda: zfmount.fuse_mounted_at(mnt)), "no mount")
            proc.kill()
            proc.wait()
            r = zfmount.run([zfmount.ZARRFS, good, mnt], timeout=15)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("fusermount3 -uz", r.stderr)
        finally:
            zfmount.unmount_path(mnt)
        os.rmdir(mnt)
        log("  failed mounts: exit 1 with one line each, nothing mounted; dead mount explained")

    def test_02_background_logs_to_syslog(self):
        """In the background, log lines go to syslog with the ident zarrfs[PID]; -o log_level
        selects them: info shows the mount; a corrupt chunk's error is there at level error;
        an unsupported array's warning is not at level error."""
        store = make_store("syslog")
        with open(os.path.join(store, "a", "0.0"), "r+b") as f:
            f.write(b"\0\0\0\0")  # corrupt one chunk: reads of it fail with EIO
        for level in ("info", "error"):
            with SyslogListener() as sl, Background(store, ["log_level=" + level]) as bg:
                self.assertEqual(bg.result.returncode, 0, bg.result.stderr)
                self.assertEqual(bg.result.stderr, "", "the daemon wrote to the terminal")
                pids = pids_serving(bg.mnt)
                self.assertEqual(len(pids), 1)
                tag = "zarrfs[%d]:" % pids[0]
                if level == "info":
                    self.assertTrue(sl.collect(lambda ls: any("mounted" in l and tag in l for l in ls)),
                                    "no 'mounted' line in syslog: %r" % sl.lines)
                self.assertErrno(errno.EIO, lambda: zfmount.read_all(os.path.join(bg.mnt, "a")))
                self.assertErrno(errno.EOPNOTSUPP, lambda: open(os.path.join(bg.mnt, "obj"), "rb"))
                self.assertTrue(sl.collect(lambda ls: any("a/0.0" in l and tag in l for l in ls)),
                                "no line naming the corrupt chunk: %r" % sl.lines)
                sl.collect(lambda ls: False, seconds=0.5)
                warned = any("obj" in l and "warning" in l for l in sl.lines)
                self.assertEqual(warned, level == "info", "%s: %r" % (level, sl.lines))
                for line in sl.lines:
                    self.assertTrue(line.startswith("<"), "not a syslog line: %r" % line)
        log("  syslog: mount line at info, chunk error at error, warnings filtered by level")

    def test_03_signals_unmount_the_background_daemon(self):
        """SIGTERM, SIGINT and SIGHUP each unmount a backgrounded daemon, which then exits."""
        store = make_store("signals")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with Background(store) as bg:
                self.assertEqual(bg.result.returncode, 0, bg.result.stderr)
                self.assertTrue(zfmount.fuse_mounted_at(bg.mnt))
                pids = pids_serving(bg.mnt)
                self.assertEqual(len(pids), 1)
                os.kill(pids[0], sig)
                gone = wait_for(lambda: not os.path.exists("/proc/%d" % pids[0]))
                if not gone:  # say where it waits (seen twice beside test_service, not understood)
                    zfmount.dump_threads(pids[0], "signalled with %s" % sig.name)
                    log("  mounted at %s: %s" % (bg.mnt, zfmount.anything_mounted_at(bg.mnt)))
                self.assertTrue(gone, "daemon alive after %s" % sig.name)
                self.assertFalse(zfmount.anything_mounted_at(bg.mnt), "mounted after %s" % sig.name)
        log("  SIGTERM/SIGINT/SIGHUP: unmounted, daemon gone")

    def test_04_systemd_readiness(self):
        """With NOTIFY_SOCKET set (systemd Type=notify), READY=1 arrives once the mount is
        usable, STOPPING=1 when it goes."""
        store = make_store("notify")
        sock_path = os.path.join(WORK, "notify.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(sock_path)
        s.settimeout(10)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        mnt = tempfile.mkdtemp(prefix="zfmnt-notify-", dir=WORK)
        proc = subprocess.Popen([zfmount.ZARRFS, "-f", store, mnt], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            msg = s.recv(4096).decode()
            self.assertIn("READY=1", msg)
            self.assertTrue(zfmount.fuse_mounted_at(mnt), "READY=1 before the mount was there")
            self.assertEqual(sorted(os.listdir(mnt)), ["a", "obj"])
            proc.send_signal(signal.SIGTERM)
            self.assertIn("STOPPING=1", s.recv(4096).decode())
            self.assertEqual(proc.wait(timeout=10), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            zfmount.unmount_path(mnt)
            s.close()
            os.rmdir(mnt)
        log("  NOTIFY_SOCKET: READY=1 after mounting, STOPPING=1 on SIGTERM")

    def test_05_stats_file_counts(self):
        """.zarrfs-stats: never listed (not even by ls -a: programs walking the mount see only the
        hierarchy) but opened by name; read-only JSON whose counters move as the test reads known
        chunks: 12 chunks of "a", 11 stored; a second read hits the cache."""
        store = make_store("stats")
        with zfmount.Mount(store, label="stats") as m:
            stats_path = m.path(".zarrfs-stats")
            ls = zfmount.run(["ls", m.mnt]).stdout.split()
            ls_a = zfmount.run(["ls", "-a", m.mnt]).stdout.split()
            self.assertEqual(sorted(ls), ["a", "obj"])
            self.assertEqual(sorted(ls_a), [".", "..", "a", "obj"])
            self.assertTrue(os.path.isfile(stats_path))
            self.assertErrno(errno.EROFS, lambda: open(stats_path, "w"))

            def stats():
                with open(stats_path) as f:
                    return json.load(f)
            s0 = stats()
            want = (np.arange(1200, dtype="<i4").reshape(40, 30))
            want[30:40, 20:30] = -1
            got = zfmount.read_all(m.path("a"))
            self.assertEqual(got, want.tobytes())
            s1 = stats()
            self.assertEqual(s1["decode"]["chunks"] - s0["decode"]["chunks"], 11)
            self.assertEqual(s1["cache"]["misses"] - s0["cache"]["misses"], 12)
            self.assertEqual(s1["cache"]["entries"], 12)
            self.assertEqual(s1["cache"]["bytes"], 11 * 400 + 64)  # absent entries count 64
            sizes = sum(os.path.getsize(os.path.join(store, "a", f))
                        for f in chunk_files(store, "a"))
            self.assertGreaterEqual(s1["store"]["bytes_fetched"] - s0["store"]["bytes_fetched"],
                                    sizes)
            self.assertEqual(s1["store"]["errors"], 0)
            zfmount.drop_page_cache(m.path("a"))
            self.assertEqual(zfmount.read_all(m.path("a")), want.tobytes())
            s2 = stats()
            self.assertEqual(s2["decode"]["chunks"], s1["decode"]["chunks"], "decoded again")
            self.assertGreaterEqual(s2["cache"]["hits"] - s1["cache"]["hits"], 12)
            self.assertErrno(errno.EOPNOTSUPP, lambda: open(m.path("obj"), "rb"))
            self.assertEqual(stats()["replies_failed"] - s2["replies_failed"], 1)
        log("  .zarrfs-stats: unlisted, read-only, counters match 11 decodes, 12 misses, then hits")

    def test_06_stats_log(self):
        """-o stats_log=1 logs a JSON statistics line every second, whatever the log level."""
        store = make_store("statslog")
        with zfmount.Mount(store, options=["stats_log=1", "log_level=error"], label="statslog") as m:
            zfmount.read_all(m.path("a"))
            self.assertTrue(wait_for(lambda: m.stderr_text().count("stats: ") >= 2, 6),
                            "no stats lines: %r" % m.stderr_text())
            lines = [l for l in m.stderr_text().splitlines() if "stats: " in l]
            last = json.loads(lines[-1].split("stats: ", 1)[1])
            self.assertEqual(last["decode"]["chunks"], 11)
        log("  stats_log=1: %d lines, JSON, counters right" % len(lines))

    def test_07_large_attributes_in_pieces(self):
        """An attributes document over 64 KiB: user.zarr.attributes fails with E2BIG (and a log
        line says how to read it); listxattr offers user.zarr.attributes.0..N, each at most
        65536 bytes, whose concatenation is the document."""
        store = make_store("bigattrs", big_attrs=200000)
        with open(os.path.join(store, ".zattrs"), "rb") as f:
            want = json.loads(f.read())
        with zfmount.Mount(store, label="bigattrs") as m:
            names = os.listxattr(m.mnt)
            self.assertNotIn("user.zarr.attributes", names)
            pieces = sorted((n for n in names if n.startswith("user.zarr.attributes.")),
                            key=lambda n: int(n.rsplit(".", 1)[1]))
            self.assertEqual(len(pieces), 4, names)
            self.assertErrno(errno.E2BIG, lambda: os.getxattr(m.mnt, "user.zarr.attributes"))
            self.assertIn("user.zarr.attributes.0", m.stderr_text())
            values = [os.getxattr(m.mnt, n) for n in pieces]
            self.assertTrue(all(len(v) == 65536 for v in values[:-1]))
            self.assertEqual(json.loads(b"".join(values)), want)
            self.assertErrno(errno.ENODATA, lambda: os.getxattr(m.mnt, "user.zarr.attributes.4"))
            self.assertErrno(errno.ENODATA, lambda: os.getxattr(m.mnt, "user.zarr.attributes.01"))
            small = os.getxattr(m.path("a"), "user.zarr.attributes")
            self.assertEqual(json.loads(small), {})
        log("  200 kB attributes: E2BIG, then 4 pieces that concatenate to the document")

    def test_08_rw_mounts_read_write(self):
        """-o rw (what mount(8) passes unless told ro) mounts read-write: no warning, "rw" in
        the mount's options, and a write lands in the store (read back by zarr-python); without
        it the mount is "ro" and writes fail with EROFS."""
        store = make_store("rw")
        with zfmount.Mount(store, options=["rw"], label="rw") as m:
            self.assertNotIn("read-only", m.stderr_text())
            with open("/proc/self/mountinfo") as f:  # field 6: the mount's options
                opts = [l.split()[5] for l in f if l.split()[4] == os.path.realpath(m.mnt)]
            self.assertTrue(opts and "rw" in opts[-1].split(","), opts)
            with open(m.path("a"), "r+b") as f:
                f.seek(4 * 31)
                f.write(np.array([-5], "<i4").tobytes())
        self.assertEqual(zarr.open_array(os.path.join(store, "a"), "r")[1, 1], -5)
        with zfmount.Mount(store, label="ro") as m:
            self.assertErrno(errno.EROFS, lambda: open(m.path("a"), "r+b"))
            with open("/proc/self/mountinfo") as f:
                opts = [l.split()[5] for l in f if l.split()[4] == os.path.realpath(m.mnt)]
            self.assertTrue(opts and "ro" in opts[-1].split(","), opts)
        log("  -o rw: mounted rw, a write stored; without it: ro, EROFS")

    def test_09_metadata_ttl(self):
        """-o metadata_ttl=4: within the TTL the old metadata and listing are served; after it,
        changed attributes, a new array and a removed one show. Without the option (a local
        store) a node's metadata is read once, and each opendir lists the store."""
        for ttl in (4, None):  # 4 s: room for the steps before the check on a loaded machine
            store = make_store("ttl%s" % ttl)
            opts = ["metadata_ttl=%s" % ttl] if ttl else []
            with zfmount.Mount(store, options=opts, label="ttl") as m:
                self.assertEqual(json.loads(os.getxattr(m.path("a"), "user.zarr.attributes")), {})
                self.assertEqual(sorted(os.listdir(m.mnt)), ["a", "obj"])
                with open(os.path.join(store, "a", ".zattrs"), "w") as f:
                    json.dump({"v": 2}, f)
                g = zarr.open_group(store, mode="a")
                g.create_dataset("b", shape=(3,), dtype="<u2", fill_value=7)
                shutil.rmtree(os.path.join(store, "obj"))
                self.assertEqual(json.loads(os.getxattr(m.path("a"), "user.zarr.attributes")), {},
                                 "changed before the TTL ran out")
                if ttl:  # listings are kept for the TTL (without one, each opendir lists)
                    self.assertEqual(sorted(os.listdir(m.mnt)), ["a", "obj"])
                time.sleep(ttl + 0.5 if ttl else 1.5)
                attrs = json.loads(os.getxattr(m.path("a"), "user.zarr.attributes"))
                names = sorted(os.listdir(m.mnt))
                if ttl:
                    self.assertEqual(attrs, {"v": 2})
                    self.assertEqual(names, ["a", "b"])
                    with open(m.path("b"), "rb") as f:
                        self.assertEqual(f.read(), np.full(3, 7, "<u2").tobytes())
                    self.assertFalse(os.path.exists(m.path("obj")))
                else:
                    self.assertEqual(attrs, {})
                    self.assertEqual(names, ["a", "b"])
        log("  metadata_ttl=4: old within the TTL, new after; default local: read once")


if __name__ == "__main__":
    zfmount.main()
