#!/usr/bin/python3
"""Other local users: ownership and modes (-o uid, gid, umask, file_mode, dir_mode), FUSE's own
rule without allow_other, secrets kept out of everything other users can read, and the disk
cache's modes.

The daemon runs as root (as the other tests); the other users are processes started with
subprocess(user=, group=, extra_groups=[]): U (uid 54321, gid 54322, no passwd entry needed) and
nobody (65534). Each runs a few file operations in a child /usr/bin/python3 and reports the
result or the errno. The expected modes come from the rules in the brief (rclone and
mountpoint-s3's file_mode/dir_mode, s3fs's umask), the expected bytes from zarr-python reading
the store directly.

* uid=U,gid=G,umask=077 with allow_other: stat shows U, G, 0500/0400 (read-only); U reads and
  lists; nobody gets EACCES on open, listing, getxattr and the statistics file; derived files
  (sidecars) and .zarrfs-stats have the same owner.
* allow_other alone: root-owned, 0555/0444: nobody reads; with -o rw 0755/0644: nobody cannot
  write, mkdir or setxattr (EACCES). Without allow_other, nobody and even U with uid=U cannot
  stat the mount (EACCES: FUSE's rule).
* rw,allow_other,uid=U,file_mode=0600,dir_mode=0700: U writes a band of chunks, zarr-python
  reads them from the store; nobody gets EACCES.
* read-only with file_mode=0666,dir_mode=0777: no write bit shown; opens for writing fail.
* bad values: exit status 1, one line naming the option, nothing mounted.
* secrets: S3 credentials from the environment (s3rver behind the SigV4 proxy) and HTTP URLs
  with user:password (a directory, a zip archive, kerchunk references), mounted with log_level=debug,stats_log=1: the secret, the signing key, any
  Authorization header, the access key id and the password appear neither in the daemon's
  output, nor in .zarrfs-stats, nor in any xattr of any node, nor in /proc/mounts; nor in the
  error a failed mount prints, nor in the disk cache's files; the password not in the daemon's
  command line (/proc/PID/cmdline, what ps shows) either, once it is mounted.
* disk cache: the directory it creates is 0700, every entry and directory below has no group or
  other bits, even when zarrfs starts with umask 0; nobody cannot list it.
"""

import datetime
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402

import numpy as np  # noqa: E402

U, G = 54321, 54322              # a user and a group of no one else
NOBODY = 65534
WORK = None
STORE = None                     # a v2 hierarchy: a (20x30 int32), g/b (float64), consolidated
SHAPE, CHUNKS = (20, 30), (8, 8)

# Runs in a child as another user: argv[1] is a JSON list of [operation, path, args...]; prints
# a JSON list of ["ok", value] or ["errno", "EACCES"]. The kernel sends the RELEASE of a closed
# file asynchronously and drops it when the mount goes first (the daemon then never frees that
# handle: a leak under ASan), so the child ends with a request that comes after them.
CHILD = r'''
import errno, hashlib, json, os, sys
def op(kind, path, *a):
    if kind == "read":
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    if kind == "list":
        return sorted(os.listdir(path))
    if kind == "stat":
        st = os.stat(path)
        return [st.st_uid, st.st_gid, st.st_mode]
    if kind == "open_w":
        os.close(os.open(path, os.O_WRONLY))
        return "ok"
    if kind == "pwrite":
        fd = os.open(path, os.O_WRONLY)
        try:
            n = os.pwrite(fd, bytes.fromhex(a[1]), a[0])
        finally:
            os.close(fd)
        return n
    if kind == "getxattr":
        return os.getxattr(path, a[0]).decode()
    if kind == "setxattr":
        os.setxattr(path, a[0], a[1].encode())
        return "ok"
    if kind == "mkdir":
        os.mkdir(path)
        return "ok"
    raise ValueError(kind)
out = []
ops = json.loads(sys.argv[1])
for o in ops:
    try:
        out.append(["ok", op(*o)])
    except OSError as e:
        out.append(["errno", errno.errorcode.get(e.errno, str(e.errno))])
for o in ops:        # a request after the last close: its RELEASE(DIR) reaches the daemon first
    try:
        os.listxattr(o[1])
    except OSError:
        pass
print(json.dumps(out))
'''


def as_user(uid, gid, *ops):
    """Run ops ([kind, path, args...]) as uid:gid with no supplementary groups: their results,
    each ("ok", value) or ("errno", name)."""
    r = zfmount.run(["/usr/bin/python3", "-c", CHILD, json.dumps(ops)], user=uid, group=gid,
                    extra_groups=[], cwd="/")
    if r.returncode != 0:
        raise AssertionError("child as %d:%d failed: %s" % (uid, gid, r.stderr))
    return [tuple(x) for x in json.loads(r.stdout)]


def build_store(root):
    import zarr
    g = zarr.open_group(zarr.DirectoryStore(root), mode="w")
    a = g.create_dataset("a", shape=SHAPE, chunks=CHUNKS, dtype="<i4", fill_value=0)
    a[...] = np.arange(SHAPE[0] * SHAPE[1], dtype="<i4").reshape(SHAPE)
    a.attrs["units"] = "counts"
    b = g.create_group("g").create_dataset("b", shape=(50,), chunks=(16,), dtype="<f8",
                                            fill_value=-1.0)
    b[:40] = np.linspace(0, 1, 40)
    zarr.consolidate_metadata(g.store)
    return root


def expected(store, rel):
    return zfmount.expected_bytes(zfmount.open_zarr_array(os.path.join(store, rel)))


def sha(b):
    return hashlib.sha256(b).hexdigest()


def setUpModule():
    global WORK, STORE
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-perm-")
    os.chmod(WORK, 0o755)                 # nginx's workers and the other users pass through
    STORE = build_store(os.path.join(WORK, "perm.zarr"))
    refs = {}
    with zipfile.ZipFile(os.path.join(WORK, "perm.zip"), "w") as z:
        for dirpath, _d, files in os.walk(STORE):
            for f in files:
                p = os.path.join(dirpath, f)
                key = os.path.relpath(p, STORE)
                z.write(p, key)
                with open(p, "rb") as fh:
                    data = fh.read()
                refs[key] = (data.decode() if f.startswith(".")
                             else ["perm.zarr/" + key])     # relative to the file's URL
    with open(os.path.join(WORK, "perm.json"), "w") as f:
        json.dump({"version": 1, "refs": refs}, f)


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def mode_of(st_mode):
    return st_mode & 0o7777


class Ownership(zfmount.TestCase):

    def assertOwner(self, path, uid, gid, mode, who=None):
        if who is None:
            st = os.stat(path)
            got = (st.st_uid, st.st_gid, mode_of(st.st_mode))
        else:
            res = as_user(*who, ["stat", path])[0]
            self.assertEqual(res[0], "ok", "%s: stat as %r: %r" % (path, who, res))
            got = (res[1][0], res[1][1], mode_of(res[1][2]))
        self.assertEqual(got, (uid, gid, mode), "%s: (uid, gid, mode) %r, want %r"
                         % (path, got, (uid, gid, oct(mode))))

    def test_01_uid_gid_umask077(self):
        """uid=U,gid=G,umask=077,allow_other: U reads, nobody gets EACCES everywhere."""
        opts = ["allow_other", "uid=%d" % U, "gid=%d" % G, "umask=077", "sidecars=npy"]
        with zfmount.Mount(STORE, options=opts, label="perm-umask") as m:
            self.assertOwner(m.mnt, U, G, 0o500)
            self.assertOwner(m.path("g"), U, G, 0o500)
            for f in ("a", "g/b", "a.npy", ".zarrfs-stats"):
                self.assertOwner(m.path(f), U, G, 0o400)
            self.assertOwner(m.path("a"), U, G, 0o400, who=(U, G))
            res = as_user(U, G, ["read", m.path("a")], ["read", m.path("g/b")],
                          ["list", m.mnt], ["getxattr", m.path("a"), "user.zarr.attributes"],
                          ["read", m.path(".zarrfs-stats")], ["open_w", m.path("a")])
            self.assertEqual(res[0], ("ok", sha(expected(STORE, "a"))), "U reads a")
            self.assertEqual(res[1], ("ok", sha(expected(STORE, "g/b"))), "U reads g/b")
            self.assertEqual(res[2], ("ok", ["a", "a.npy", "g"]), "U lists the root")
            self.assertEqual(json.loads(res[3][1]), {"units": "counts"})
            self.assertEqual(res[4][0], "ok", "U reads .zarrfs-stats: %r" % (res[4],))
            self.assertIn(res[5], (("errno", "EROFS"), ("errno", "EACCES")))
            p = m.path("a")
            res = as_user(NOBODY, NOBODY, ["read", p], ["list", m.mnt], ["list", m.path("g")],
                          ["getxattr", m.mnt, "user.zarr.format"], ["read", m.path("a.npy")],
                          ["read", m.path(".zarrfs-stats")], ["stat", p])
            for r, what in zip(res, ("open a", "list /", "list g", "getxattr /", "open a.npy",
                                     "open .zarrfs-stats", "stat a")):
                self.assertEqual(r, ("errno", "EACCES"), "nobody: %s: %r" % (what, r))
            log("  umask=077: U reads, nobody: EACCES for open, list, getxattr, stat below /")

    def test_02_allow_other_defaults(self):
        """allow_other alone: root-owned 0555/0444, others read; -o rw 0755/0644, others cannot
        write (EACCES)."""
        with zfmount.Mount(STORE, options=["allow_other"], label="perm-ro") as m:
            self.assertOwner(m.mnt, 0, 0, 0o555)
            self.assertOwner(m.path("a"), 0, 0, 0o444)
            self.assertOwner(m.path(".zarrfs-stats"), 0, 0, 0o444)
            res = as_user(NOBODY, NOBODY, ["read", m.path("a")], ["list", m.mnt],
                          ["open_w", m.path("a")])
            self.assertEqual(res[0], ("ok", sha(expected(STORE, "a"))))
            self.assertEqual(res[1], ("ok", ["a", "g"]))
            self.assertIn(res[2], (("errno", "EROFS"), ("errno", "EACCES")))
        work = os.path.join(WORK, "rw-default.zarr")
        shutil.copytree(STORE, work)
        before = expected(work, "a")
        with zfmount.Mount(work, options=["allow_other", "rw"], label="perm-rw") as m:
            self.assertOwner(m.mnt, 0, 0, 0o755)
            self.assertOwner(m.path("a"), 0, 0, 0o644)
            self.assertOwner(m.path(".zarrfs-stats"), 0, 0, 0o444)
            res = as_user(NOBODY, NOBODY, ["read", m.path("a")],
                          ["open_w", m.path("a")], ["pwrite", m.path("a"), 0, "01020304"],
                          ["mkdir", m.path("new")],
                          ["setxattr", m.path("a"), "user.zarr.attributes", "{}"])
            self.assertEqual(res[0], ("ok", sha(before)))
            for r, what in zip(res[1:], ("open for writing", "write", "mkdir", "setxattr")):
                self.assertEqual(r, ("errno", "EACCES"), "nobody: %s: %r" % (what, r))
        self.assertBytesEqual(expected(work, "a"), before, "a after nobody's attempts")
        self.assertFalse(os.path.exists(os.path.join(work, "new")))
        log("  allow_other: 0555/0444 and 0755/0644 root-owned; nobody reads, cannot write")

    def test_03_without_allow_other(self):
        """Without allow_other FUSE lets no other user in, not even the one named by uid=."""
        with zfmount.Mount(STORE, options=["uid=%d" % U], label="perm-private") as m:
            self.assertOwner(m.mnt, U, 0, 0o555)
            for who in ((NOBODY, NOBODY), (U, G)):
                res = as_user(*who, ["stat", m.mnt], ["stat", m.path("a")], ["read", m.path("a")])
                for r in res:
                    self.assertEqual(r, ("errno", "EACCES"), "%r without allow_other: %r"
                                     % (who, res))
        log("  no allow_other: stat of the mount by others: EACCES")

    def test_04_rw_file_dir_mode(self):
        """rw,allow_other,uid=U,file_mode=0600,dir_mode=0700: U writes chunks, nobody cannot."""
        work = os.path.join(WORK, "rw-owner.zarr")
        shutil.copytree(STORE, work)
        want = np.arange(SHAPE[0] * SHAPE[1], dtype="<i4").reshape(SHAPE)
        band = (-7 * np.arange(8 * SHAPE[1], dtype="<i4")).reshape(8, SHAPE[1])
        want[8:16] = band                         # one whole row of chunks
        opts = ["rw", "allow_other", "uid=%d" % U, "file_mode=0600", "dir_mode=0700",
                "umask=077", "sidecars=npy"]
        with zfmount.Mount(work, options=opts, label="perm-rw-owner") as m:
            self.assertOwner(m.mnt, U, 0, 0o700)
            self.assertOwner(m.path("g"), U, 0, 0o700)
            self.assertOwner(m.path("a"), U, 0, 0o600)
            self.assertOwner(m.path("a.npy"), U, 0, 0o400)        # derived: read-only
            self.assertOwner(m.path(".zarrfs-stats"), U, 0, 0o400)
            off = 8 * SHAPE[1] * 4
            res = as_user(U, G, ["pwrite", m.path("a"), off, band.tobytes().hex()],
                          ["read", m.path("a")], ["open_w", m.path("a.npy")])
            self.assertEqual(res[0], ("ok", band.nbytes), "U writes a band: %r" % (res[0],))
            self.assertEqual(res[1], ("ok", sha(want.tobytes())), "U reads it back")
            self.assertEqual(res[2], ("errno", "EACCES"), "U opens a.npy for writing")
            res = as_user(NOBODY, NOBODY, ["read", m.path("a")], ["open_w", m.path("a")],
                          ["list", m.mnt], ["mkdir", m.path("x")])
            for r in res:
                self.assertEqual(r, ("errno", "EACCES"), "nobody: %r" % (res,))
        import zarr
        got = zarr.open_array(os.path.join(work, "a"), mode="r")[...]
        np.testing.assert_array_equal(got, want, "zarr-python reads what U wrote")
        log("  U wrote %d bytes through the mount; zarr-python reads them; nobody: EACCES"
            % band.nbytes)

    def test_05_readonly_masks_write_bits(self):
        """Read-only with file_mode=0666,dir_mode=0777: no write bit, no open for writing."""
        opts = ["allow_other", "uid=%d" % U, "gid=%d" % G, "file_mode=0666", "dir_mode=0777",
                "sidecars=npy"]
        with zfmount.Mount(STORE, options=opts, label="perm-ro-0666") as m:
            self.assertOwner(m.mnt, U, G, 0o555)
            self.assertOwner(m.path("a"), U, G, 0o444)
            self.assertOwner(m.path("a.npy"), U, G, 0o444)
            self.assertErrno((errno.EROFS, errno.EACCES), os.open, m.path("a"), os.O_WRONLY)
            for who in ((U, G), (NOBODY, NOBODY)):
                res = as_user(*who, ["open_w", m.path("a")], ["mkdir", m.path("x")],
                              ["read", m.path("a")])
                self.assertIn(res[0], (("errno", "EROFS"), ("errno", "EACCES")), repr(who))
                self.assertIn(res[1], (("errno", "EROFS"), ("errno", "EACCES")), repr(who))
                self.assertEqual(res[2], ("ok", sha(expected(STORE, "a"))), repr(who))

    def test_06_bad_values(self):
        for opt in ("uid=abc", "uid=-1", "uid=4294967295", "gid=", "gid=1x", "umask=8",
                    "umask=0x22", "umask=", "file_mode=1777", "file_mode=rw", "dir_mode=09",
                    "dir_mode=-700"):
            with self.subTest(opt=opt):
                status, err, mounted = zfmount.expect_refusal(STORE, ["-o", opt])
                self.assertEqual(status, 1, "%s: %s" % (opt, err))
                self.assertFalse(mounted)
                self.assertIn("-o " + opt, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)


def walk_readable(tc, mnt):
    """Everything another user could read of a mount: listing, bytes of each file, every xattr
    of every node, and .zarrfs-stats. One string."""
    out = []
    for dirpath, dirnames, filenames in os.walk(mnt):
        out.append(" ".join(sorted(dirnames + filenames)))
        for name in [""] + filenames:
            p = os.path.join(dirpath, name) if name else dirpath
            for x in os.listxattr(p):
                out.append(x + "=" + os.getxattr(p, x).decode("utf-8", "replace"))
            if name:
                out.append(zfmount.read_all(p).decode("latin-1"))
    stats = zfmount.read_all(os.path.join(mnt, ".zarrfs-stats")).decode()
    json.loads(stats)
    out.append(stats)
    return "\n".join(out)


def proc_mounts():
    with open("/proc/mounts") as f:
        a = f.read()
    with open("/proc/self/mountinfo") as f:
        return a + f.read()


class Secrets(zfmount.TestCase):
    """The access key id: AWS calls it an identifier, not a secret, but zarrfs has no reason to
    show it anywhere (its messages name where credentials came from); the tests hold it to that."""

    S3_KEY = "AKIAZFPERMKEYID77777"
    S3_SECRET = "zfPerm/Secret+Value=0123456789abcdefWXYZ"
    HTTP_PASSWORD = "zfHttpPassw0rd-Sekrit"

    def check_absent(self, texts, needles):
        for where, text in texts.items():
            for what, s in needles.items():
                self.assertNotIn(s, text, "the %s appears in %s" % (what, where))

    def test_01_s3_credentials(self):
        if not os.access(rs.S3RVER_BIN, os.X_OK):
            self.skipTest("s3rver is not installed (npm ci --prefix tests/integration/js)")
        with rs.S3rver(["zarrfs"]) as s3, \
                rs.SigV4Proxy(s3.port, {self.S3_KEY: self.S3_SECRET}) as proxy:
            s3.client().upload_tree(STORE, "zarrfs", "perm.zarr")
            opts = ["endpoint=" + proxy.endpoint(), "region=us-east-1", "retries=1",
                    "log_level=debug", "stats_log=1", "allow_other"]
            with rs.aws_env(AWS_ACCESS_KEY_ID=self.S3_KEY, AWS_SECRET_ACCESS_KEY=self.S3_SECRET):
                m = zfmount.Mount("s3://zarrfs/perm.zarr", options=opts, label="perm-s3").start()
            try:
                self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "s3 a")
                seen = walk_readable(self, m.mnt)
                time.sleep(2.5)                   # a stats_log line or two
                mounts = proc_mounts()
            finally:
                status, _ = m.stop()
            self.assertEqual(status, 0)
            recs = list(proxy.records)
        self.assertTrue(recs and all(r.signed and r.verdict == "ok" for r in recs),
                        "requests not signed with the key, or refused: %r" % recs[:3])
        err = m.stderr_text()
        self.assertIn("stats: ", err, "no stats_log line in the daemon's output")
        today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")
        needles = {"secret": self.S3_SECRET, "URL-encoded secret": rs.aws_quote(self.S3_SECRET),
                   "signing key": rs.signing_key(self.S3_SECRET, today, "us-east-1").hex(),
                   "access key id": self.S3_KEY, "SigV4 Authorization header": "AWS4-HMAC-SHA256",
                   "signature": "Signature="}
        self.check_absent({"the daemon's output": err, "the mount (files, xattrs, stats)": seen,
                           "/proc/mounts": mounts}, needles)
        self.assertNotIn("authorization", err.lower())
        log("  s3: %d signed requests; %d lines of debug output, files, xattrs, stats and "
            "/proc/mounts without secret, signature or key id" % (len(recs), len(err.splitlines())))

    def test_02_http_password(self):
        """http://user:password@host/STORE for a directory, a zip archive and kerchunk
        references: the password nowhere, the user in /proc/mounts with "***"."""
        with rs.Nginx(WORK, autoindex=True) as ng:
            for store in ("perm.zarr", "perm.zip", "perm.json"):
                with self.subTest(store=store):
                    self.check_http_password(ng, store)

    def test_02b_http_token_as_user(self):
        """http://TOKEN@host/STORE (a user name alone, often a token): hidden as ***@ in
        /proc/mounts and the command line, absent from the daemon's output and the mount."""
        token = "ghp_Zf" + self.HTTP_PASSWORD
        with rs.Nginx(WORK, autoindex=True) as ng:
            url = ng.url("perm.zarr").replace("://", "://%s@" % token, 1)
            with zfmount.Mount(url, options=["log_level=debug", "allow_other"],
                               label="perm-token") as m:
                self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "a")
                seen = walk_readable(self, m.mnt)
                mounts = proc_mounts()
                self.assertIn("://***@127.0.0.1", mounts, "fsname of the mount")
                with open("/proc/%d/cmdline" % m.pid, "rb") as f:
                    cmdline = f.read().decode("latin-1").replace("\0", " ")
            err = m.stderr_text()
        self.check_absent({"the daemon's output": err, "the mount (files, xattrs, stats)": seen,
                           "/proc/mounts": mounts, "the daemon's command line": cmdline},
                          {"token": token})

    def check_http_password(self, ng, store):
        url = ng.url(store).replace("://", "://zfuser:%s@" % self.HTTP_PASSWORD, 1)
        dc = os.path.join(WORK, "dc-http-" + store)
        opts = ["log_level=debug", "stats_log=1", "allow_other", "disk_cache=" + dc]
        with zfmount.Mount(url, options=opts, label="perm-http") as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "a")
            seen = walk_readable(self, m.mnt)
            time.sleep(1.5)
            mounts = proc_mounts()
            self.assertIn("zfuser:***@127.0.0.1", mounts, "fsname of the mount")
            with open("/proc/%d/cmdline" % m.pid, "rb") as f:       # what ps shows
                cmdline = f.read().decode("latin-1").replace("\0", " ")
            self.assertIn("zfuser:" + "*" * len(self.HTTP_PASSWORD) + "@", cmdline)
        err = m.stderr_text()
        self.assertIn("stats: ", err)
        bad = url.replace("perm.", "no-such.")
        status, refusal, mounted = zfmount.expect_refusal(bad, ["-o", "retries=0"])
        self.assertEqual(status, 1, refusal)
        self.assertIn("zfuser:***@", refusal, "the refusal names the store")
        cache = []
        for dirpath, _d, files in os.walk(dc):
            cache += [os.path.join(dirpath, f) for f in files]
        cached = "".join(zfmount.read_all(p).decode("latin-1") for p in cache)
        self.assertTrue(cache, "nothing in the disk cache")
        self.check_absent({"the daemon's output": err, "the mount (files, xattrs, stats)": seen,
                           "/proc/mounts": mounts, "a refusal's message": refusal,
                           "the daemon's command line": cmdline,
                           "the disk cache's files": cached},
                          {"password": self.HTTP_PASSWORD})
        log("  http %s with user:password: fsname %s; no password in output, mount, refusal "
            "(%s), disk cache" % (store, [ln.split()[0] for ln in mounts.splitlines()
                                          if "zfuser" in ln][:1], refusal.strip()))

    def test_03_disk_cache_modes(self):
        """The disk cache directory: created 0700, nothing in it readable by others, even when
        zarrfs starts with umask 0."""
        with rs.Nginx(WORK, autoindex=True) as ng:
            parent = os.path.join(WORK, "dc-modes")
            os.makedirs(parent)
            os.chmod(parent, 0o755)
            dc = os.path.join(parent, "cache")
            old = os.umask(0)
            try:
                m = zfmount.Mount(ng.url("perm.zarr"), options=["disk_cache=" + dc],
                                  label="perm-dc").start()
            finally:
                os.umask(old)
            try:
                zfmount.read_all(m.path("a"))
                zfmount.read_all(m.path("g/b"))
            finally:
                status, _ = m.stop()
            self.assertEqual(status, 0)
        self.assertEqual(mode_of(os.stat(dc).st_mode), 0o700, "disk cache directory")
        n = 0
        for dirpath, dirnames, filenames in os.walk(dc):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                mode = mode_of(os.lstat(p).st_mode)
                self.assertEqual(mode & 0o077, 0, "%s: mode %o" % (p, mode))
                n += 1
        self.assertGreater(n, 4, "too few entries in the disk cache")
        res = as_user(NOBODY, NOBODY, ["list", dc])
        self.assertEqual(res[0], ("errno", "EACCES"))
        log("  disk cache: %s 0700, %d entries and directories, none with group/other bits"
            % (dc, n))


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
