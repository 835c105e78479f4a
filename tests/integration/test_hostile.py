#!/usr/bin/python3
"""Hostile stores (docs/security.md): what a store's author controls must not crash zarrfs, hang
it, exhaust its memory, or expose bytes from outside the store.

* Names: keys with `..`, a leading `/`, empty and `.` segments, NUL bytes, names longer than
  NAME_MAX (255) and keys longer than PATH_MAX (4096), in v2 consolidated metadata (.zmetadata),
  in v3 consolidated metadata (the root zarr.json), in zip member names and in kerchunk reference
  keys: the mount shows no such name, the good array beside them reads right (compared with
  numpy / zarr-python), no byte of the array outside the store is readable.
* A kerchunk reference file served over HTTP naming a local file (/etc/passwd, file://) is
  refused at mount.
* Depth: 3000 nested group directories on disk (keys past PATH_MAX) and 1000 nested groups plus
  a key 10000 groups deep in .zmetadata: walked with openat level by level, no crash; JSON nested
  a million levels deep in .zattrs and in a v3 zarr.json (a stack overflow in yajl before
  ZF_JSON_MAX_DEPTH): EIO for that node, the rest of the mount works.
* Sockets: a UNIX socket as a chunk and as a .zarray: EIO or absent, at once (fifos and device
  nodes: test_bad_input.py SpecialFiles).
* Size: a sparse 600 MiB .zarray and .zattrs (over ZF_JSON_MAX_TEXT) and a sparse 5 GiB chunk
  (over ZF_STORE_MAX_VALUE) are EIO at once, without the daemon's memory growing (VmHWM).
"""

import errno
import json
import os
import socket
import stat
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
import zarr  # noqa: E402

WORK = None
SECRET = b"SECRET!\n" * 512 + b"XYZ"       # 4099 bytes: a distinctive size
OK_DATA = np.arange(40, dtype="<i4") * 7 - 3
LONG = "n" * 300                            # > NAME_MAX
DEEP = 1000                                 # levels of groups with .zgroup
LISTING_DEPTH = 300                         # levels of ConsolidatedListings' hierarchies
DEEP_JSON = "[" * 1000000 + "]" * 1000000   # 2 MB of nesting


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-hostile-")


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        subprocess.run(["rm", "-rf", "--one-file-system", WORK], timeout=120)  # deep trees


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else
                (data if isinstance(data, str) else json.dumps(data)).encode())


def v2_ok_array(root, rel="ok"):
    z = zarr.open_array(os.path.join(root, rel), mode="w", shape=OK_DATA.shape, chunks=(16,),
                        dtype="<i4", compressor=None, fill_value=0)
    z[...] = OK_DATA
    return z


def v3_array_meta(n, dtype="uint8"):
    return {"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {}}


HOSTILE_KEYS = ["..", "../outside/arr", "sub/../../outside/arr", "/abs", "a//b", "./c", "a/./b",
                "nul\x00/../../outside/arr", "ok\x00evil", LONG, "long/" + LONG + "/x",
                "p/" * 2100 + "deep"]


class TestCaseBase(zfmount.TestCase):

    def scan(self, m):
        """Walk the mount: no name with NUL or '/', no '.' or '..' entry, no name over 255 bytes
        that cannot be looked up, no outside bytes.  Returns the names at the root."""
        names = []
        for dirpath, dirnames, filenames in os.walk(m.mnt, onerror=lambda e: None):
            if dirpath.count("/") - m.mnt.count("/") >= 20:
                dirnames[:] = []             # the 2100-level key: deep enough
            for name in dirnames + filenames:
                self.assertNotIn("\x00", name)
                self.assertNotIn(name, (".", ".."))
                self.assertLessEqual(len(name.encode()), 255, "a name over NAME_MAX is listed")
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode):
                    try:
                        self.assertNotIn(b"SECRET!", zfmount.read_all(p), p)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.EIO, "%s: %s" % (p, e))
            if dirpath == m.mnt:
                names = sorted(dirnames + filenames)
        self.assertTrue(m.alive())
        return names

    def outside(self, base):
        """base/outside/arr: a v2 and a v3 array of the SECRET bytes, outside the store."""
        d = os.path.join(base, "outside", "arr")
        write(os.path.join(d, ".zarray"), {"zarr_format": 2, "shape": [len(SECRET)],
                                           "chunks": [len(SECRET)], "dtype": "|u1",
                                           "compressor": None, "fill_value": 0, "filters": None,
                                           "order": "C"})
        write(os.path.join(d, "0"), SECRET)
        write(os.path.join(d, "zarr.json"), v3_array_meta(len(SECRET)))
        write(os.path.join(d, "c", "0"), SECRET)


class HostileKeys(TestCaseBase):
    """`..`, `/`, NUL, empty segments, long names in consolidated metadata (v2 and v3)."""

    def test_01_zmetadata(self):
        base = os.path.join(WORK, "keys_v2")
        self.outside(base)
        s = os.path.join(base, "store")
        zarr.open_group(s, mode="w")
        v2_ok_array(s)
        zarr.consolidate_metadata(zarr.DirectoryStore(s))
        with open(os.path.join(s, ".zmetadata")) as f:
            zm = json.load(f)
        evil = {"zarr_format": 2, "shape": [len(SECRET)], "chunks": [len(SECRET)],
                "dtype": "|u1", "compressor": None, "fill_value": 0, "filters": None,
                "order": "C"}
        for k in HOSTILE_KEYS:
            zm["metadata"][k + "/.zarray"] = evil
            zm["metadata"][k + "/.zgroup"] = {"zarr_format": 2}
        write(os.path.join(s, ".zmetadata"), zm)
        self.mount_and_check(s, "v2")

    def test_02_v3_consolidated(self):
        base = os.path.join(WORK, "keys_v3")
        self.outside(base)
        s = os.path.join(base, "store")
        md = {"ok": v3_array_meta(len(OK_DATA), "int32")}
        for k in HOSTILE_KEYS:
            md[k] = v3_array_meta(len(SECRET))
            md[k + "/g"] = {"zarr_format": 3, "node_type": "group", "attributes": {}}
        write(os.path.join(s, "zarr.json"),
              {"zarr_format": 3, "node_type": "group", "attributes": {},
               "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                         "metadata": md}})
        write(os.path.join(s, "ok", "zarr.json"), md["ok"])
        write(os.path.join(s, "ok", "c", "0"), OK_DATA.tobytes())
        self.mount_and_check(s, "v3")

    def mount_and_check(self, s, what):
        status, err, mounted = zfmount.expect_refusal(s, timeout=20)
        if not mounted:
            self.assertEqual(status, 1, "neither mounted nor exited 1: %r %r" % (status, err))
            log("  %s: refused: %s" % (what, err.strip()[:200]))
            return
        with zfmount.Mount(s) as m:
            names = self.scan(m)
            self.assertIn("ok", names)
            self.assertEqual(zfmount.read_all(m.path("ok")), OK_DATA.tobytes())
            log("  %s: mounted; root lists %r" % (what, names))

    def test_03_zip_member_names(self):
        base = os.path.join(WORK, "keys_zip")
        self.outside(base)
        src = os.path.join(base, "src")
        zarr.open_group(src, mode="w")
        v2_ok_array(src)
        zp = os.path.join(base, "store.zip")
        with zipfile.ZipFile(zp, "w") as z:
            for dirpath, _d, files in os.walk(src):
                for f in files:
                    full = os.path.join(dirpath, f)
                    z.write(full, os.path.relpath(full, src))
            evil = json.dumps({"zarr_format": 2, "shape": [len(SECRET)], "chunks": [len(SECRET)],
                               "dtype": "|u1", "compressor": None, "fill_value": 0,
                               "filters": None, "order": "C"})
            for k in HOSTILE_KEYS:
                if "\x00" in k:
                    continue             # zipfile cuts names at NUL (see test_zip.c)
                z.writestr(k + "/.zarray", evil)
                z.writestr(k + "/0", SECRET)
        self.mount_and_check(zp, "zip")

    def test_04_reference_keys(self):
        base = os.path.join(WORK, "keys_refs")
        self.outside(base)
        src = os.path.join(base, "src")
        zarr.open_group(src, mode="w")
        v2_ok_array(src)
        refs = {}
        for dirpath, _d, files in os.walk(src):
            for f in files:
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, src)
                if f.startswith("."):
                    with open(full) as fh:
                        refs[rel] = fh.read()
                else:
                    refs[rel] = [os.path.abspath(full)]
        nul = dict(refs)
        nul["ok\x00evil/.zarray"] = refs["ok/.zarray"]
        nul["ok/0\x00/../../x"] = ["/etc/passwd"]
        p = os.path.join(base, "refs.json")
        write(p, {"version": 1, "refs": nul})
        self.mount_and_check(p, "refs with NUL keys")
        for k in ["../outside/arr/0", "/abs/0", "a//b/0", LONG + "/0"]:
            r = dict(refs)
            r[k] = [os.path.join(base, "outside", "arr", "0")]
            write(p, {"version": 1, "refs": r})
            self.mount_and_check(p, "refs key %r" % k[:20])


class RemoteReferences(TestCaseBase):
    """A reference file fetched over HTTP names local files: refused at mount."""

    def test_01_local_targets_refused(self):
        srv_root = os.path.join(WORK, "refs_srv")
        os.makedirs(srv_root)
        with rs.FaultServer(srv_root) as fs:
            for i, target in enumerate(["/etc/passwd", "file:///etc/passwd",
                                        "file://" + os.path.join(WORK, "x.bin")]):
                name = "r%d.json" % i
                write(os.path.join(srv_root, name),
                      {".zgroup": json.dumps({"zarr_format": 2}),
                       "a/.zarray": json.dumps({"zarr_format": 2, "shape": [4], "chunks": [4],
                                                "dtype": "|u1", "compressor": None,
                                                "fill_value": 0, "filters": None,
                                                "order": "C"}),
                       "a/0": [target, 0, 4]})
                status, err, mounted = zfmount.expect_refusal(fs.url(name), timeout=20)
                self.assertFalse(mounted)
                self.assertEqual(status, 1, err)
                self.assertIn("names no local file", err)
                log("  %s: %s" % (target, err.strip()))


class Depth(TestCaseBase):
    """Deep hierarchies and deeply nested JSON: no recursion without a bound."""

    def walk_down(self, m, name, limit):
        """openat level by level; the depth reached (a failure past PATH_MAX is fine)."""
        fd = os.open(m.mnt, os.O_RDONLY | os.O_DIRECTORY)
        depth = 0
        try:
            while depth < limit:
                try:
                    entries = os.listdir(fd)
                    if name not in entries:
                        break
                    nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                except OSError as e:
                    self.assertIn(e.errno, (errno.EIO, errno.ENOENT, errno.ENAMETOOLONG),
                                  "depth %d: %s" % (depth, e))
                    break
                os.close(fd)
                fd = nfd
                depth += 1
            return depth, fd
        except BaseException:
            os.close(fd)
            raise

    def test_01_deep_directories(self):
        s = os.path.join(WORK, "deep_dirs")
        os.makedirs(s)
        write(os.path.join(s, ".zgroup"), {"zarr_format": 2})
        fd = os.open(s, os.O_RDONLY)
        for _ in range(3000):
            os.mkdir("g", dir_fd=fd)
            nfd = os.open("g", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            wfd = os.open(".zgroup", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(wfd, b'{"zarr_format": 2}')
            os.close(wfd)
        os.close(fd)
        with zfmount.Mount(s) as m:
            depth, fd = self.walk_down(m, "g", 3000)
            os.close(fd)
            self.assertGreaterEqual(depth, 1500)      # keys up to PATH_MAX work
            self.assertTrue(m.alive())
            log("  3000 nested directories: walked %d levels" % depth)

    def test_02_deep_consolidated(self):
        s = os.path.join(WORK, "deep_cons")
        zarr.open_group(s, mode="w")
        md = {".zgroup": {"zarr_format": 2}}
        for d in range(1, DEEP + 1):
            md["g/" * d + ".zgroup"] = {"zarr_format": 2}
        deep = "g/" * DEEP
        src = os.path.join(WORK, "deep_cons_src")
        v2_ok_array(src)
        with open(os.path.join(src, "ok", ".zarray")) as f:
            md[deep + "ok/.zarray"] = json.load(f)
        md["g/" * 10000 + ".zgroup"] = {"zarr_format": 2}
        write(os.path.join(s, ".zmetadata"), {"zarr_consolidated_format": 1, "metadata": md})
        fd = os.open(s, os.O_RDONLY)    # the chunks, DEEP levels down
        for name in ["g"] * DEEP + ["ok"]:
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        for c in os.listdir(os.path.join(src, "ok")):
            if not c.startswith("."):
                wfd = os.open(c, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                with open(os.path.join(src, "ok", c), "rb") as f:
                    os.write(wfd, f.read())
                os.close(wfd)
        os.close(fd)
        t0 = time.monotonic()
        with zfmount.Mount(s) as m:
            reached, fd = self.walk_down(m, "g", DEEP + 200)
            try:
                self.assertGreaterEqual(reached, DEEP)  # v2: no implicit groups below
            finally:
                os.close(fd)
            depth, fd = self.walk_down(m, "g", DEEP)
            try:
                afd = os.open("ok", os.O_RDONLY, dir_fd=fd)
                try:
                    data = os.pread(afd, 1 << 20, 0)
                finally:
                    os.close(afd)
                self.assertEqual(data, OK_DATA.tobytes())
            finally:
                os.close(fd)
            self.assertTrue(m.alive())
        log("  %d groups deep (+ a key 10000 deep): walked %d levels in %.1f s"
            % (DEEP, reached, time.monotonic() - t0))

    def test_03_deep_json(self):
        s = os.path.join(WORK, "deep_json")
        zarr.open_group(s, mode="w")
        v2_ok_array(s)
        write(os.path.join(s, "deepattrs", ".zgroup"), {"zarr_format": 2})
        write(os.path.join(s, "deepattrs", ".zattrs"), DEEP_JSON)
        write(os.path.join(s, "deeparray", ".zarray"),
              '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|u1", '
              '"compressor": null, "fill_value": 0, "filters": null, "order": "C", '
              '"x": ' + DEEP_JSON + '}')
        v3 = os.path.join(WORK, "deep_json_v3")
        write(os.path.join(v3, "zarr.json"), {"zarr_format": 3, "node_type": "group"})
        write(os.path.join(v3, "ok", "zarr.json"), v3_array_meta(len(OK_DATA), "int32"))
        write(os.path.join(v3, "ok", "c", "0"), OK_DATA.tobytes())
        write(os.path.join(v3, "deep", "zarr.json"),
              '{"zarr_format": 3, "node_type": "group", "attributes": {"a": ' + DEEP_JSON + '}}')
        for store, bad in ((s, ["deepattrs", "deeparray"]), (v3, ["deep"])):
            with zfmount.Mount(store) as m:
                for name in bad:
                    try:
                        st = os.stat(m.path(name))
                        for x in os.listxattr(m.path(name)):
                            os.getxattr(m.path(name), x)
                        if stat.S_ISDIR(st.st_mode):
                            os.listdir(m.path(name))
                        else:
                            zfmount.read_all(m.path(name))
                        self.fail("%s: no error" % name)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.EIO, "%s: %s" % (name, e))
                self.assertTrue(m.alive(), m.stderr_text()[-2000:])
                self.assertEqual(zfmount.read_all(m.path("ok")), OK_DATA.tobytes())
                self.assertIn("nested deeper than 512 levels", m.stderr_text())


class Wide(TestCaseBase):
    """A group with very many children must list in time linear-ish in their number: before,
    each child's lookup scanned every key of the consolidated metadata and each listed name was
    compared with all before it (200 000 children: over 10 minutes, killed)."""

    test_timeout = 240

    def test_01_wide_consolidated_group(self):
        # sanitizer allocators copy at every realloc, and yajl grows objects one key at a time:
        # there the 400 000 keys alone take minutes, so the scale is checked in normal builds
        n = 10000 if zfmount.sanitized_build() else 200000
        s = os.path.join(WORK, "wide")
        os.makedirs(s)
        write(os.path.join(s, ".zgroup"), {"zarr_format": 2})
        md = {".zgroup": {"zarr_format": 2}}
        for i in range(n):                     # two keys per child: listed once each
            md["g%06d/.zgroup" % i] = {"zarr_format": 2}
            md["g%06d/.zattrs" % i] = {"i": i}
        write(os.path.join(s, ".zmetadata"), {"zarr_consolidated_format": 1, "metadata": md})
        t0 = time.monotonic()
        with zfmount.Mount(s, mount_timeout=60) as m:
            mounted = time.monotonic()
            names = os.listdir(m.mnt)
            took = time.monotonic() - mounted
            self.assertEqual(sorted(names), ["g%06d" % i for i in range(n)])
            self.assertEqual(json.loads(os.getxattr(m.path("g%06d" % (n - 1)),
                                                    "user.zarr.attributes")),
                             {"i": n - 1})
        log("  mounted in %.1f s, %d children listed in %.1f s" % (mounted - t0, n, took))


class ConsolidatedListings(TestCaseBase):
    """Consolidated metadata is indexed by parent once per mount: a deep hierarchy lists exactly
    what zarr-python lists (v2) or what its keys name (v3, implicit groups included), and each
    ignored key is warned about once per mount, not at every listing (before: every listing
    warned about every invalid key of the whole document)."""

    test_timeout = 240

    def walk(self, m):
        """[(path, is_dir)] of every node below the mount, sorted (a name listed twice shows)."""
        got = []
        for dirpath, dirnames, filenames in os.walk(m.mnt):
            rel = os.path.relpath(dirpath, m.mnt)
            for name in dirnames + filenames:
                got.append((name if rel == "." else rel + "/" + name, name in dirnames))
        return sorted(got)

    def test_01_deep_v2_against_zarr_python(self):
        s = os.path.join(WORK, "listing_deep_v2")
        root = zarr.open_group(s, mode="w")
        g = root
        for level in range(LISTING_DEPTH):      # each level: a0, a1, g-x/a, s, and g further down
            g.create_dataset("a0", shape=(3, 4), chunks=(2, 2), dtype="<i2")
            g.create_dataset("a1", shape=(5,), dtype="<f8")
            g.create_group("g-x").create_dataset("a", shape=(2,), dtype="u1")
            g.create_group("s")
            g = g.create_group("g")
        zarr.consolidate_metadata(zarr.DirectoryStore(s))
        want = []
        zarr.open_consolidated(s).visititems(
            lambda name, obj: want.append((name, isinstance(obj, zarr.hierarchy.Group))))
        self.assertEqual(len(want), 6 * LISTING_DEPTH)
        with zfmount.Mount(s, mount_timeout=60) as m:
            t0 = time.monotonic()
            self.assertEqual(self.walk(m), sorted(want))
            took = time.monotonic() - t0
            self.assertTrue(m.alive())
        log("  %d levels, %d nodes: listed as zarr-python lists them, walked in %.1f s"
            % (LISTING_DEPTH, len(want), took))

    def test_02_deep_v3_implicit_groups(self):
        s = os.path.join(WORK, "listing_deep_v3")
        md, want = {}, set()
        group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
        path = ""
        for level in range(LISTING_DEPTH):
            # an explicit group, a name sorting around the chain's, an implicit group (only a
            # node two levels below it names it), an array
            md[path + "x"] = group
            md[path + "x-y"] = v3_array_meta(4)
            md[path + "imp/deeper/arr"] = v3_array_meta(4)
            want |= {(path + "x", True), (path + "x-y", False), (path + "imp", True),
                     (path + "imp/deeper", True), (path + "imp/deeper/arr", False)}
            path += "x/"
        write(os.path.join(s, "zarr.json"),
              dict(group, consolidated_metadata={"kind": "inline", "must_understand": False,
                                                 "metadata": md}))
        with zfmount.Mount(s, mount_timeout=60) as m:
            self.assertEqual(self.walk(m), sorted(want))
            self.assertTrue(m.alive())
        log("  v3, %d levels, %d nodes (%d implicit groups): listed as the keys name them"
            % (LISTING_DEPTH, len(want), LISTING_DEPTH * 2))

    def test_03_ignored_keys_warned_once(self):
        bad = ["a//b", "../outside", "g/./x", LONG]
        for v in (2, 3):
            with self.subTest(zarr_format=v):
                s = os.path.join(WORK, "listing_warn_v%d" % v)
                if v == 2:
                    md = {".zgroup": {"zarr_format": 2}}
                    for k in ["g", "g/h", "g/h/i", "j"] + bad:
                        md[k + "/.zgroup"] = {"zarr_format": 2}
                    write(os.path.join(s, ".zgroup"), {"zarr_format": 2})
                    write(os.path.join(s, ".zmetadata"),
                          {"zarr_consolidated_format": 1, "metadata": md})
                else:
                    grp = {"zarr_format": 3, "node_type": "group", "attributes": {}}
                    md = {k: grp for k in ["g", "g/h", "g/h/i", "j"] + bad}
                    write(os.path.join(s, "zarr.json"),
                          dict(grp, consolidated_metadata={"kind": "inline", "metadata": md,
                                                           "must_understand": False}))
                with zfmount.Mount(s) as m:
                    for _ in range(2):
                        self.assertEqual([p for p, _d in self.walk(m)],
                                         ["g", "g/h", "g/h/i", "j"])
                    text = m.stderr_text()
                for k in bad:
                    said = [ln for ln in text.splitlines()
                            if ("ignoring invalid key \"%s" % k if k != LONG
                                else "ignoring a child named \"%s" % LONG[:40]) in ln]
                    self.assertEqual(len(said), 1, "%r said %d times:\n%s" % (k, len(said), text))
        log("  each of %d ignored keys warned about once, after two walks (v2 and v3)" % len(bad))


class Sockets(TestCaseBase):
    """A UNIX socket where a chunk or a metadata document belongs (fifos and devices:
    test_bad_input.py SpecialFiles): EIO or absent, at once."""

    def test_01_socket_chunk_and_metadata(self):
        s = os.path.join(WORK, "sockets")
        zarr.open_group(s, mode="w")
        z = zarr.open_array(os.path.join(s, "sock_chunk"), mode="w", shape=(2048,),
                            chunks=(1024,), dtype="<i4", compressor=None, fill_value=0)
        z[...] = np.arange(2048, dtype="<i4") - 5
        os.unlink(os.path.join(s, "sock_chunk", "0"))
        os.makedirs(os.path.join(s, "sock_meta"))
        socks = []
        for p in (os.path.join(s, "sock_chunk", "0"), os.path.join(s, "sock_meta", ".zarray")):
            so = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            so.bind(p)
            so.listen(1)
            socks.append(so)
        try:
            with zfmount.Mount(s) as m:
                t0 = time.monotonic()
                fd = os.open(m.path("sock_chunk"), os.O_RDONLY)
                try:
                    with self.assertRaises(OSError) as cm:
                        os.pread(fd, 4096, 0)
                    self.assertEqual(cm.exception.errno, errno.EIO)
                    self.assertEqual(os.pread(fd, 4096, 4096), z[1024:].tobytes())
                finally:
                    os.close(fd)
                try:
                    os.stat(m.path("sock_meta"))
                    self.assertNotIn("sock_meta", os.listdir(m.mnt))
                except OSError as e:
                    self.assertIn(e.errno, (errno.EIO, errno.ENOENT))
                self.assertLess(time.monotonic() - t0, 5)
                self.assertTrue(m.alive())
        finally:
            for so in socks:
                so.close()


class Size(TestCaseBase):
    """Documents and chunks larger than any valid one: EIO before they are read."""

    def test_01_sparse_giants(self):
        s = os.path.join(WORK, "giants")
        zarr.open_group(s, mode="w")
        v2_ok_array(s)
        write(os.path.join(s, "hugeattrs", ".zgroup"), {"zarr_format": 2})
        with open(os.path.join(s, "hugeattrs", ".zattrs"), "wb") as f:
            f.truncate(600 << 20)
        os.makedirs(os.path.join(s, "hugemeta"))
        with open(os.path.join(s, "hugemeta", ".zarray"), "wb") as f:
            f.truncate(600 << 20)
        z = zarr.open_array(os.path.join(s, "hugechunk"), mode="w", shape=(4096,),
                            chunks=(1024,), dtype="<i4", compressor=None, fill_value=0)
        z[...] = np.arange(4096, dtype="<i4") * 3 + 1
        with open(os.path.join(s, "hugechunk", "0"), "r+b") as f:
            f.truncate(5 << 30)
        with zfmount.Mount(s) as m:
            t0 = time.monotonic()
            for name in ("hugeattrs", "hugemeta"):
                with self.assertRaises(OSError) as cm:
                    os.stat(m.path(name))
                self.assertEqual(cm.exception.errno, errno.EIO)
            fd = os.open(m.path("hugechunk"), os.O_RDONLY)
            try:
                with self.assertRaises(OSError) as cm:
                    os.pread(fd, 64, 0)
                self.assertEqual(cm.exception.errno, errno.EIO)
                # the chunk after it is a normal one
                self.assertEqual(os.pread(fd, 4096, 4096), z[1024:2048].tobytes())
            finally:
                os.close(fd)
            took = time.monotonic() - t0
            hwm = m.proc_status("VmHWM")
            log("  600 MiB .zattrs and .zarray, a 5 GiB chunk: EIO in %.2f s, VmHWM %s kB"
                % (took, hwm))
            self.assertLess(took, 10)
            self.assertLess(hwm, 512 * 1024)
            err = m.stderr_text()
            self.assertIn("hugemeta/.zarray: JSON document larger than 512 MiB", err)
            self.assertIn("hugeattrs/.zattrs: JSON document larger than 512 MiB", err)
            self.assertIn("refusing a value larger than 4096 MiB", err)


if __name__ == "__main__":
    zfmount.main()
