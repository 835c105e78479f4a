"""Shared harness for the zarrfs integration tests.

Run the tests with /usr/bin/python3 (Debian's zarr 2.13, numcodecs 0.11, numpy 1.24).

Environment:
  ZARRFS         path of the zarrfs binary (meson passes it); default ../../build/src/fuse/zarrfs
  ZARRFS_SHARED  optional: a directory holding testdata/ with the third-party fixtures; when
                 unset they are read from the repository's tests/fixtures (its README.md)
  ZARRFS_TEST_TIMEOUT  per-test watchdog in seconds (default 180)
  ZARRFS_MOUNT_OPTIONS  options added to every Mount (e.g. "direct_io": meson runs the read,
                 write and durability tests a second time so); tests read MOUNT_OPTIONS and
                 DIRECT_IO where the mode changes what they expect

Every mount goes through `Mount`, a context manager that starts `zarrfs -f STORE MNT` in the
background, waits (10 s at most) until the mount shows up in /proc/self/mountinfo, and on the way
out always unmounts (`fusermount3 -u`, then `-uz`), reaps or kills the daemon and removes the
mount point it created.  When something went wrong inside the `with` block, or the daemon did not
exit cleanly after the unmount, the daemon's stderr is printed.

A hung FUSE request cannot be interrupted by an ordinary signal, so the watchdogs here SIGKILL the
daemons instead: that aborts the FUSE connection, every blocked system call returns ENOTCONN and the
test fails instead of hanging.  A per-file watchdog finally `os._exit`s the process.
"""

import errno
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

ZARRFS = os.environ.get("ZARRFS") or os.path.join(REPO, "build", "src", "fuse", "zarrfs")
# the third-party fixtures (numcodecs-fixture, zarr-python-2.18.7-fixture, zarrita-fixtures)
if os.environ.get("ZARRFS_SHARED"):
    FIXTURES = os.path.join(os.environ["ZARRFS_SHARED"], "testdata")
else:
    FIXTURES = os.path.join(REPO, "tests", "fixtures")
TEST_TIMEOUT = float(os.environ.get("ZARRFS_TEST_TIMEOUT", "180"))
MOUNT_TIMEOUT = 10.0

# A suite started under nohup(1), or in the background by a shell without job control, inherits
# SIGHUP or SIGINT ignored, and so would every daemon it starts: libfuse leaves an ignored signal
# ignored, and the tests that stop daemons with signals would fail. The daemons get the defaults.
for _sig in (signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
MOUNT_OPTIONS = [o for o in os.environ.get("ZARRFS_MOUNT_OPTIONS", "").split(",") if o]
DIRECT_IO = "direct_io" in MOUNT_OPTIONS   # array files bypass the page cache: no MAP_SHARED
CMD_TIMEOUT = 20.0

ARRAY_XATTRS = ["user.zarr.format", "user.zarr.metadata", "user.zarr.attributes",
                "user.zarr.shape", "user.zarr.chunks", "user.zarr.dtype",
                "user.zarr.fill_value", "user.zarr.dimension_names"]
GROUP_XATTRS = ["user.zarr.format", "user.zarr.metadata", "user.zarr.attributes"]
ARRAY_ONLY_XATTRS = [x for x in ARRAY_XATTRS if x not in GROUP_XATTRS]


def log(*args):
    print(*args, flush=True)


# --------------------------------------------------------------------------------------------
# mounts

_active = []          # Mount objects currently mounted (for the watchdogs and atexit)
_active_lock = threading.Lock()


def _unescape_mountinfo(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and s[i + 1:i + 4].isdigit():
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mount_entries():
    """[(mount point, fstype, source)] from /proc/self/mountinfo (never touches the mounts)."""
    res = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            rfields = right.split()
            if len(fields) < 5 or not rfields:
                continue
            res.append((_unescape_mountinfo(fields[4]), rfields[0],
                        _unescape_mountinfo(rfields[1]) if len(rfields) > 1 else ""))
    return res


def fuse_mounted_at(mnt):
    """The fstype of the mount at mnt if it is a FUSE mount, else None."""
    mnt = os.path.realpath(mnt)
    found = None
    for mp, fstype, _src in mount_entries():
        if mp == mnt:
            found = fstype          # the last one stacked there wins
    if found is not None and (found == "fuse" or found.startswith("fuse.")):
        return found
    return None


def anything_mounted_at(mnt):
    mnt = os.path.realpath(mnt)
    return any(mp == mnt for mp, _f, _s in mount_entries())


def run(cmd, timeout=CMD_TIMEOUT, **kw):
    """subprocess.run with a timeout, capturing text output."""
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def unmount_path(mnt):
    """Unmount mnt: fusermount3 -u, then -uz, then umount -l.  Returns how it went."""
    if not anything_mounted_at(mnt):
        return "not mounted"
    for cmd in (["fusermount3", "-u", mnt], ["fusermount3", "-uz", mnt], ["umount", "-l", mnt]):
        try:
            r = run(cmd, timeout=10)
            if r.returncode == 0 and not anything_mounted_at(mnt):
                return " ".join(cmd[:2])
            log("  [harness] %s: status %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
        except subprocess.TimeoutExpired:
            log("  [harness] %s timed out" % " ".join(cmd))
    return "FAILED"


def dump_threads(pid, label):
    """Log where each thread of daemon pid is (gdb's backtraces), when gdb is there: a daemon that
    does not exit when it should names what it waits for."""
    gdb = shutil.which("gdb")
    if not gdb:
        return
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex",
                            "thread apply all bt 12"], capture_output=True, text=True,
                           timeout=60)
        out = [l for l in r.stdout.splitlines() if l.startswith(("Thread ", "#"))]
    except (OSError, subprocess.SubprocessError) as e:
        out = ["gdb failed: %s" % e]
    log("  ---- zarrfs threads (%s, pid %d; gdb) ----" % (label, pid))
    for line in out[:400]:
        log("  | " + line)
    log("  ---- end of zarrfs threads ----")


class MountError(Exception):
    def __init__(self, msg, status=None, stderr=""):
        super().__init__(msg)
        self.status = status
        self.stderr = stderr


class Mount:
    """with Mount(store, options=["cache_size=16M"]) as m: ... m.mnt, m.path("a/b"), m.pid"""

    def __init__(self, store, options=(), args=(), mnt=None, check_exit=True, label=None,
                 mount_timeout=MOUNT_TIMEOUT):
        self.mount_timeout = mount_timeout
        self.store = store
        self.options = list(options)
        self.args = list(args)
        self.mnt = mnt
        self._own_mnt = mnt is None
        self.check_exit = check_exit
        self.label = label or os.path.basename(os.path.normpath(store))
        self.proc = None
        self.errfile = None
        self.exit_status = None
        self.killed_by_watchdog = False

    # -- helpers usable in tests
    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self):
        if not self.errfile:
            return ""
        try:
            with open(self.errfile.name, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def proc_status(self, field):
        """A field of /proc/PID/status in kB (VmRSS, VmHWM, ...), or None."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except (OSError, TypeError):
            return None
        return None

    def command(self):
        cmd = [ZARRFS, "-f"]
        options = self.options + [o for o in MOUNT_OPTIONS if o not in self.options]
        if options:
            cmd += ["-o", ",".join(options)]
        cmd += self.args + [self.store, self.mnt]
        return cmd

    # -- lifecycle
    def start(self):
        if not os.path.exists(ZARRFS):
            raise MountError("zarrfs binary not found at %s (set ZARRFS)" % ZARRFS)
        if self.mnt is None:
            self.mnt = tempfile.mkdtemp(prefix="zfmnt-%s-" % self.label.replace("/", "_")[:20])
        self.errfile = tempfile.NamedTemporaryFile(prefix="zarrfs-stderr-", delete=False)
        cmd = self.command()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.errfile,
                                     stderr=self.errfile, start_new_session=True)
        with _active_lock:
            _active.append(self)
        deadline = time.monotonic() + self.mount_timeout
        while True:
            if fuse_mounted_at(self.mnt):
                return self
            st = self.proc.poll()
            if st is not None:
                err = self.stderr_text()
                self._cleanup_files()
                raise MountError("zarrfs exited with status %s before mounting\n  command: %s\n"
                                 "  stderr: %s" % (st, " ".join(cmd), err.strip()), st, err)
            if time.monotonic() > deadline:
                self.stop(failed=True)
                raise MountError("zarrfs did not mount %s within %.0f s\n  command: %s"
                                 % (self.mnt, self.mount_timeout, " ".join(cmd)))
            time.sleep(0.02)

    def stop(self, failed=False):
        """Unmount, reap the daemon, remove the mount point.  Returns the daemon's exit status."""
        how = "not mounted"
        if self.mnt is not None:
            how = unmount_path(self.mnt)
        status = None
        if self.proc is not None:
            try:
                status = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log("  [harness] daemon %d still running 10 s after unmount: its threads, then "
                    "SIGTERM" % self.pid)
                self.dump_threads()
                self._signal(signal.SIGTERM)
                try:
                    status = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    status = self.proc.wait(timeout=10)
                status = "hung after unmount (killed; status %s)" % status
        with _active_lock:
            if self in _active:
                _active.remove(self)
        self.exit_status = status
        if how == "FAILED":
            log("  [harness] could not unmount %s" % self.mnt)
        elif self._own_mnt and self.mnt and os.path.isdir(self.mnt):
            try:
                os.rmdir(self.mnt)
            except OSError:
                pass
        bad_exit = status != 0 and not self.killed_by_watchdog
        if failed or bad_exit or how == "FAILED":
            self.dump_stderr("daemon exit status %s, unmount: %s" % (status, how))
        self._cleanup_files()
        return status, how

    def dump_threads(self):
        if self.alive():
            dump_threads(self.pid, self.label)

    def _signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill_for_watchdog(self):
        self.killed_by_watchdog = True
        if self.alive():
            self._signal(signal.SIGKILL)

    def dump_stderr(self, why):
        err = self.stderr_text()
        lines = err.splitlines()
        log("  ---- zarrfs stderr (%s; %s; %d lines, last 60) ----" % (self.label, why, len(lines)))
        for line in lines[-60:]:
            log("  | " + line)
        log("  ---- end of zarrfs stderr ----")

    def _cleanup_files(self):
        if self.errfile is not None:
            self._stderr_cache = self.stderr_text()
            try:
                self.errfile.close()
                os.unlink(self.errfile.name)
            except OSError:
                pass
            self.errfile = None
            self.stderr_text = lambda: self._stderr_cache   # keep it readable afterwards

    def __enter__(self):
        return self.start()

    def __exit__(self, etype, evalue, tb):
        status, how = self.stop(failed=etype is not None)
        if etype is None and self.check_exit:
            if how == "FAILED":
                raise AssertionError("could not unmount %s" % self.mnt)
            if self.killed_by_watchdog:
                raise AssertionError("watchdog killed the daemon (a request hung)")
            if status != 0:
                raise AssertionError("zarrfs exited with status %s after a clean unmount "
                                     "(crash, sanitizer report or leak?)" % (status,))
        return False


def kill_all_daemons(why):
    with _active_lock:
        mounts = list(_active)
    for m in mounts:
        log("  [watchdog] %s: killing zarrfs pid %s (mount %s)" % (why, m.pid, m.mnt))
        m.kill_for_watchdog()
    for m in mounts:
        try:
            unmount_path(m.mnt)
        except Exception:
            pass


def _cleanup_at_exit():
    with _active_lock:
        mounts = list(_active)
    for m in mounts:
        try:
            m.stop(failed=True)
        except Exception:
            traceback.print_exc()


import atexit  # noqa: E402
atexit.register(_cleanup_at_exit)


def start_file_watchdog(seconds):
    """Kill everything and exit if the whole test file runs longer than `seconds`."""
    def fire():
        log("\n[watchdog] test file exceeded %.0f s; killing daemons and exiting" % seconds)
        kill_all_daemons("file timeout")
        time.sleep(2)
        _cleanup_at_exit()
        os._exit(124)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


class TestCase(unittest.TestCase):
    """Arms a per-test watchdog that SIGKILLs the daemons when one test hangs."""

    test_timeout = TEST_TIMEOUT

    def setUp(self):
        self._t0 = time.monotonic()
        self._wd = threading.Timer(self.test_timeout, kill_all_daemons,
                                   args=("test %s exceeded %.0f s" % (self.id(), self.test_timeout),))
        self._wd.daemon = True
        self._wd.start()

    def tearDown(self):
        self._wd.cancel()
        log("  (%s: %.1f s)" % (self._testMethodName, time.monotonic() - self._t0))

    # -- assertions
    def assertErrno(self, expected, fn, *args, **kw):
        """fn(*args) must raise OSError with errno in `expected` (an int or a tuple)."""
        exp = expected if isinstance(expected, tuple) else (expected,)
        try:
            res = fn(*args, **kw)
        except OSError as e:
            if e.errno not in exp:
                self.fail("%s%r: expected %s, got %s (%s)" % (
                    getattr(fn, "__name__", fn), args, "/".join(errno.errorcode[x] for x in exp),
                    errno.errorcode.get(e.errno, e.errno), e))
            return e
        self.fail("%s%r: expected %s, but it succeeded (returned %r)" % (
            getattr(fn, "__name__", fn), args, "/".join(errno.errorcode[x] for x in exp),
            res if not isinstance(res, (bytes, bytearray)) or len(res) < 64
            else bytes(res[:64]) + b"..."))

    def assertUndecodable(self, path, size, names=()):
        """An array zarrfs cannot decode (unknown codec, chunk grid, ...) but whose shape and data
        type are known (DESIGN.md "Errors users see"): a regular file of its real size, `size`
        bytes (shape x item size, computed by the caller from the metadata); it opens read-only,
        and every read of its bytes fails with EIO, never a short or empty read; its
        user.zarr.error names each of `names` (e.g. the codec)."""
        st = os.stat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode), path)
        self.assertEqual(st.st_size, size, "%s: size %d, shape x itemsize is %d"
                         % (path, st.st_size, size))
        why = os.getxattr(path, "user.zarr.error").decode()
        for n in names:
            self.assertIn(n, why, "%s: user.zarr.error %r does not name %s" % (path, why, n))
        self.assertErrno((errno.EROFS, errno.EOPNOTSUPP), os.open, path, os.O_RDWR)
        fd = os.open(path, os.O_RDONLY)
        try:
            if size:
                for off in sorted({0, size // 2, size - 1}):
                    self.assertErrno(errno.EIO, os.pread, fd, 4096, off)
            self.assertEqual(os.pread(fd, 16, size), b"", "%s: read at EOF" % path)
        finally:
            os.close(fd)
        return why

    def assertBytesEqual(self, got, want, what):
        if got == want:
            return
        n = min(len(got), len(want))
        i = next((k for k in range(n) if got[k] != want[k]), n)
        self.fail("%s: %d bytes read, %d expected; first difference at byte %d: got %r, want %r"
                  % (what, len(got), len(want), i, bytes(got[i:i + 16]), bytes(want[i:i + 16])))


def main(file_timeout=570):
    """Entry point of every test file: /dev/fuse check, watchdog, unittest verbosity 2."""
    if not os.path.exists("/dev/fuse"):
        # A suite that silently skips every mount proves nothing: fail unless told otherwise.
        if os.environ.get("ZARRFS_ALLOW_NO_FUSE") == "1":
            log("SKIP: /dev/fuse is missing (ZARRFS_ALLOW_NO_FUSE=1)")
            sys.exit(77)
        log("FAIL: /dev/fuse is missing; set ZARRFS_ALLOW_NO_FUSE=1 to skip the mounted tests")
        sys.exit(1)
    if os.geteuid() != 0:
        log("note: not running as root; mounting may fail")
    log("zarrfs binary: %s" % ZARRFS)
    log("fixtures:      %s" % FIXTURES)
    if not os.access(ZARRFS, os.X_OK):
        log("FAIL: zarrfs binary %s is missing or not executable" % ZARRFS)
        sys.exit(1)
    start_file_watchdog(file_timeout)
    prog = unittest.main(verbosity=2, exit=False)
    ok = prog.result.wasSuccessful()
    sys.exit(0 if ok else 1)


# --------------------------------------------------------------------------------------------
# file access

_SANITIZED = None


def sanitized_build():
    """True when ZARRFS is an AddressSanitizer or ThreadSanitizer build (its allocator copies on
    every realloc, so tests of scale use smaller inputs there)."""
    global _SANITIZED
    if _SANITIZED is None:
        with open(ZARRFS, "rb") as f:
            data = f.read()
        _SANITIZED = b"__asan_init" in data or b"__tsan_init" in data
    return _SANITIZED


def read_all(path, bufsize=1 << 20):
    with open(path, "rb", buffering=0) as f:
        chunks = []
        while True:
            b = f.read(bufsize)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks)


def drop_page_cache(fd_or_path):
    """Forget the kernel's cached pages of one file so reads reach the daemon again."""
    if isinstance(fd_or_path, int):
        os.posix_fadvise(fd_or_path, 0, 0, os.POSIX_FADV_DONTNEED)
    else:
        fd = os.open(fd_or_path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# numpy.memmap's read-only mode for array files: a shared mapping ("r"), or under -o direct_io,
# where shared mappings are refused (ENODEV), a private one ("c", copy-on-write)
MEMMAP_READ = "c" if DIRECT_IO else "r"


def mmap_read(fd):
    """A read-only mapping of a whole array file: shared, or under -o direct_io private, after
    checking that a shared one is refused with ENODEV as documented (never served stale)."""
    import mmap
    if DIRECT_IO:
        try:
            mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ).close()
        except OSError as e:
            if e.errno != errno.ENODEV:
                raise
        else:
            raise AssertionError("-o direct_io: a shared mapping was not refused")
        return mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    return mmap.mmap(fd, 0, prot=mmap.PROT_READ)


def pread_full(fd, n, off):
    """pread until n bytes or EOF (a FUSE read may legally return short)."""
    out = []
    while n > 0:
        b = os.pread(fd, n, off)
        if not b:
            break
        out.append(b)
        n -= len(b)
        off += len(b)
    return b"".join(out)


# --------------------------------------------------------------------------------------------
# expected values from zarr-python

def open_zarr_array(array_dir):
    """Open one v2 array directory with zarr 2.13; nested chunk dirs without
    dimension_separator (written before zarr-python 2.8) need NestedDirectoryStore."""
    import zarr
    with open(os.path.join(array_dir, ".zarray")) as f:
        meta = json.load(f)
    store = zarr.DirectoryStore(array_dir)
    if "dimension_separator" not in meta and len(meta["shape"]) > 1:
        nested = any(os.path.isdir(os.path.join(array_dir, e)) for e in os.listdir(array_dir))
        if nested:
            store = zarr.NestedDirectoryStore(array_dir)
    return zarr.open_array(store=store, mode="r")


def chunk_keys_present(z):
    """Set of chunk grid indices whose key exists in the store (a 0-d array has one chunk, ())."""
    import itertools
    present = set()
    grid = [int(math.ceil(s / c)) if c else 0 for s, c in zip(z.shape, z.chunks)]
    for idx in itertools.product(*[range(g) for g in grid]):
        # zarr-python keys the single chunk of a 0-d array as chunk (0,)
        if z._chunk_key(idx if idx else (0,)) in z.chunk_store:
            present.add(idx)
    return present, grid


def canonical_nans(a):
    """Plain float/complex arrays: every NaN as NumPy's positive quiet NaN.

    zarr-python decodes a complex fill value ["NaN", x] by arithmetic (re + 1j*im), which on x86
    yields a NaN with the sign bit set; which NaN bit pattern a fill value produces is not
    meaningful, so expected bytes use the canonical one (data NaNs are written canonical)."""
    import numpy as np
    if a.dtype.kind == "f":
        m = np.isnan(a)
        if m.any():
            a = a.copy()
            a[m] = np.nan
    elif a.dtype.kind == "c":
        re, im = a.real.copy(), a.imag.copy()
        if np.isnan(re).any() or np.isnan(im).any():
            re[np.isnan(re)] = np.nan
            im[np.isnan(im)] = np.nan
            b = np.empty(a.shape, dtype=a.dtype)
            b.real, b.imag = re, im
            a = b
    return a


def expected_bytes(z):
    """C-order bytes of the whole array as zarr-python reads it.

    zarr 2.13 leaves missing chunks uninitialised (np.empty) when fill_value is null; the zarrfs
    contract is zero bytes there, so build those arrays from zeros plus the chunks that exist."""
    import itertools
    import numpy as np
    if z.dtype.hasobject:  # no flat bytes: variable-length elements read as text (test_strings)
        raise ValueError("%s: object arrays have no flat bytes" % z.path)
    if z.fill_value is not None or z.size == 0:
        a = z[...]
        if z.fill_value is not None and z.dtype.kind in "fc" and np.isnan(z.fill_value):
            a = canonical_nans(np.asarray(a))
        return np.ascontiguousarray(a).tobytes()
    out = np.zeros(z.shape, dtype=z.dtype)
    present, grid = chunk_keys_present(z)
    for idx in itertools.product(*[range(g) for g in grid]):
        if idx in present:
            sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, z.chunks, z.shape))
            out[sel] = z[sel]
    return np.ascontiguousarray(out).tobytes()


def _norm_fill(v):
    """Normalise a v2 fill_value for comparison: the NaN/Infinity strings become floats."""
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    if isinstance(v, list):
        return [_norm_fill(x) for x in v]
    return v


def fill_equal(a, b):
    a, b = _norm_fill(a), _norm_fill(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(fill_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return fill_equal(b, a)
    return a == b and type(a) == type(b)


def json_equal(a, b):
    """Equality of parsed JSON values that treats NaN as equal to NaN (attributes may hold the
    NaN / Infinity tokens zarr-python and xarray write)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def getx(path, name):
    return os.getxattr(path, name, follow_symlinks=False)


def check_node_xattrs(tc, path, node_dir, is_array, meta_text=None, meta=None, attrs=None,
                      zarr_obj=None):
    """Check the user.zarr.* xattrs of a mounted node against the stored documents.

    node_dir: the node's directory in the store (stored .zarray/.zgroup/.zattrs read from there)
    unless meta_text/meta/attrs are given (consolidated metadata)."""
    key = ".zarray" if is_array else ".zgroup"
    if meta is None:
        with open(os.path.join(node_dir, key), "rb") as f:
            meta_text = f.read()
        meta = json.loads(meta_text)
    if attrs is None:
        ap = os.path.join(node_dir, ".zattrs")
        attrs = {}
        if os.path.exists(ap):
            with open(ap, "rb") as f:
                attrs = json.loads(f.read())
    names = os.listxattr(path, follow_symlinks=False)
    want = ARRAY_XATTRS if is_array else GROUP_XATTRS
    missing = [n for n in want if n not in names]
    tc.assertFalse(missing, "%s: listxattr %r lacks %r" % (path, names, missing))
    if not is_array:
        extra = [n for n in ARRAY_ONLY_XATTRS if n in names]
        tc.assertFalse(extra, "%s: a group lists array xattrs %r" % (path, extra))
    tc.assertEqual(getx(path, "user.zarr.format").strip(), b"2", path)
    got_meta = getx(path, "user.zarr.metadata")
    if meta_text is not None:
        tc.assertEqual(got_meta, meta_text, "%s: user.zarr.metadata != stored %s" % (path, key))
    else:
        tc.assertEqual(json.loads(got_meta), meta, "%s: user.zarr.metadata" % path)
    got_attrs = json.loads(getx(path, "user.zarr.attributes"))
    tc.assertTrue(json_equal(got_attrs, attrs),
                  "%s: user.zarr.attributes %r, stored %r" % (path, got_attrs, attrs))
    if not is_array:
        return
    tc.assertEqual(json.loads(getx(path, "user.zarr.shape")), list(meta["shape"]),
                   "%s: user.zarr.shape" % path)
    tc.assertEqual(json.loads(getx(path, "user.zarr.chunks")), list(meta["chunks"]),
                   "%s: user.zarr.chunks" % path)
    dt = getx(path, "user.zarr.dtype").decode()
    if isinstance(meta["dtype"], str):
        if dt.startswith('"'):
            dt = json.loads(dt)
        tc.assertEqual(dt, meta["dtype"], "%s: user.zarr.dtype" % path)
    else:
        tc.assertEqual(json.loads(dt), meta["dtype"], "%s: user.zarr.dtype (structured)" % path)
    if zarr_obj is not None:
        import numpy as np
        from zarr.meta import Metadata2
        parsed = json.loads(dt) if dt.startswith("[") else dt
        tc.assertEqual(Metadata2.decode_dtype(parsed), np.dtype(zarr_obj.dtype),
                       "%s: user.zarr.dtype does not name zarr's dtype" % path)
    fv = json.loads(getx(path, "user.zarr.fill_value"))
    tc.assertTrue(fill_equal(fv, meta["fill_value"]),
                  "%s: user.zarr.fill_value %r, stored %r" % (path, fv, meta["fill_value"]))
    dn = json.loads(getx(path, "user.zarr.dimension_names"))
    tc.assertEqual(dn, attrs.get("_ARRAY_DIMENSIONS"), "%s: user.zarr.dimension_names" % path)
    tc.assertErrno(errno.ENODATA, os.getxattr, path, "user.zarr.no_such_attribute")


def walk_store(root):
    """(groups, arrays): relative paths ('' = root) of the v2 nodes under root, found by files."""
    groups, arrays = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        if ".zarray" in filenames:
            arrays.append(rel)
            dirnames[:] = []       # chunks below
        elif ".zgroup" in filenames:
            groups.append(rel)
        dirnames.sort()
    return groups, arrays


class MountsTestCase(TestCase):
    """Several mounts shared by the tests of a class: a subclass's `mount_all()` (classmethod)
    starts them with `cls.add_mount(store, ...)`; they are all stopped after the last test, and
    the class fails if one could not be unmounted, was killed by a watchdog (a request hung) or
    did not exit with status 0. Daemons' stderr is printed when a test of the class failed."""

    _failed = False

    @classmethod
    def mount_all(cls):
        raise NotImplementedError

    @classmethod
    def add_mount(cls, store, **kw):
        m = Mount(store, **kw).start()
        cls.mounts_started.append(m)
        return m

    @classmethod
    def setUpClass(cls):
        cls.mounts_started = []
        try:
            cls.mount_all()
        except Exception:
            cls.stop_mounts(True)
            raise

    @classmethod
    def stop_mounts(cls, failed):
        problems = []
        for m in cls.mounts_started:
            status, how = m.stop(failed=failed)
            if how == "FAILED":
                problems.append("could not unmount %s" % m.mnt)
            elif m.killed_by_watchdog:
                problems.append("watchdog killed %s (a request hung)" % m.label)
            elif status != 0:
                problems.append("%s exited with status %s after the unmount" % (m.label, status))
        return problems

    @classmethod
    def tearDownClass(cls):
        problems = cls.stop_mounts(cls._failed)
        if problems:
            raise AssertionError("; ".join(problems))

    def run(self, result=None):
        before = (len(result.failures), len(result.errors)) if result is not None else None
        r = super().run(result)
        if result is not None and (len(result.failures), len(result.errors)) != before:
            type(self)._failed = True
        return r


class MountedTestCase(TestCase):
    """One mount shared by the tests of a class: subclasses define `store_path()` (classmethod)
    and may set `mount_options`.  The daemon's stderr is printed when a test of the class failed,
    and the class fails if the daemon does not exit with status 0 after the unmount."""

    mount_options = ()
    _failed = False

    @classmethod
    def store_path(cls):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.m = Mount(cls.store_path(), options=cls.mount_options, label=cls.__name__)
        cls.m.start()
        log("mounted %s on %s (pid %d)" % (cls.m.store, cls.m.mnt, cls.m.pid))

    @classmethod
    def tearDownClass(cls):
        m = cls.m
        status, how = m.stop(failed=cls._failed)
        if how == "FAILED":
            raise AssertionError("could not unmount %s" % m.mnt)
        if m.killed_by_watchdog:
            raise AssertionError("watchdog killed the daemon (a request hung)")
        if status != 0:
            raise AssertionError("zarrfs exited with status %s after the unmount "
                                 "(crash, sanitizer report or leak?)" % (status,))

    def run(self, result=None):
        before = (len(result.failures), len(result.errors)) if result is not None else None
        r = super().run(result)
        if result is not None and (len(result.failures), len(result.errors)) != before:
            type(self)._failed = True
        return r

    def assertDaemonAlive(self):
        self.assertTrue(self.m.alive(), "zarrfs (pid %s) died" % self.m.pid)


def expect_refusal(store, args=(), timeout=MOUNT_TIMEOUT):
    """Run `zarrfs -f [args] STORE MNT` on a fresh mount point and wait for it to exit.

    Returns (exit status, stderr text, was_mounted).  If it mounted (it should not have), the
    mount is undone and the daemon reaped; if it neither exits nor mounts within `timeout`
    seconds it is killed and the status is the string "timeout"."""
    mnt = tempfile.mkdtemp(prefix="zfmnt-refuse-")
    errf = tempfile.TemporaryFile()
    cmd = [ZARRFS, "-f"] + list(args) + [store, mnt]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                            start_new_session=True)
    was_mounted = False
    status = None
    deadline = time.monotonic() + timeout
    try:
        while True:
            status = proc.poll()
            if anything_mounted_at(mnt):
                was_mounted = True
            if status is not None:
                break
            if was_mounted:
                unmount_path(mnt)
                try:
                    status = proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    status = proc.wait()
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                status = "timeout"
                break
            time.sleep(0.02)
        if anything_mounted_at(mnt):
            was_mounted = True
            unmount_path(mnt)
    finally:
        errf.seek(0)
        err = errf.read().decode("utf-8", "replace")
        errf.close()
        if not anything_mounted_at(mnt):
            try:
                os.rmdir(mnt)
            except OSError:
                pass
    return status, err, was_mounted
