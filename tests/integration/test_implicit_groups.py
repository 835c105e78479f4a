#!/usr/bin/python3
"""Final Zarr v3 nodes below directories without zarr.json: implicit groups (docs/formats.md,
"Implicit groups").

zarrita.js (and zarr-python 3 asked for an array at a deep path) store `a/b/c/arr/zarr.json` and
nothing for `a/b/c`, `a/b`, `a`; both open the array by its path. zarrfs shows such parents as
directories without metadata (user.zarr.format "3", user.zarr.attributes "{}", no
user.zarr.metadata), so every array a reader can open by path is reachable by `ls` and `open`.
The rule: a name without zarr.json below a group (explicit or implicit) is an implicit group when
consolidated metadata names a node below it, or, without consolidated metadata, when the store
holds a sub-directory (sub-prefix) below it — one listing, never a deeper scan. Hidden names
(".x") never are; the chunk directories of arrays never are (arrays are files).

Stores (built in setUpModule), each compared with what wrote it (numpy, zarrita's own read):
* zarrita.zarr: written by js/zarrita_implicit.mjs (zarrita 0.7.5 `zarr.create` at deep paths,
  which also checks that zarrita opens each array by path and finds no node at the implicit
  parents), plus non-Zarr directories: files only (hidden), a hidden directory, an empty
  directory (hidden), a directory holding only a non-Zarr sub-directory (shown, empty).
* hand.zarr: built here: an implicit group named "c", explicit groups below implicit ones,
  implicit below explicit, an array with v2 chunk keys in sub-directories ("0/1"), checksums.
* consolidated.zarr: hand.zarr with the root's inline consolidated_metadata listing only the
  explicit nodes (implicit parents come from their paths); one stored node left out of it is
  absent from the mount.
* subcons.zarr: a group "sub" whose own consolidated_metadata names "deep/er/arr".

Each is mounted locally, over HTTP (nginx autoindex on; autoindex off for the consolidated ones,
whose listings then come from the metadata) and from S3 (s3rver, ListObjectsV2 with delimiter):
the trees, listings, types, modes, xattrs and bytes are the same everywhere; paths that do not
exist are ENOENT. With -o rw: new groups and arrays below implicit groups, writes to arrays below
them, attributes set on an implicit group store its zarr.json (it becomes explicit), rmdir of a
non-empty implicit group is ENOTEMPTY.
"""

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import remote_fixtures as rf  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import gen_v3_zarrita as gz  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "zarrfs"
REMOTE_OPTS = ["retries=2", "timeout=20"]
IMPLICIT_XATTRS = {"user.zarr.format": b"3", "user.zarr.attributes": b"{}"}

WORK = SRV = None
NGINX_ON = NGINX_OFF = S3 = PROXY = None
S3_KEY, S3_SECRET = "AKIAZARRFSIMPLICIT01", "zarrfs/implicit+Secret=0123456789abcdefXYZ"
ZARRITA_RESULT = None
STORES = {}      # name -> {"dirs": [...], "files": {path: expected bytes}, "explicit": set()}


# ---------------------------------------------------------------------------------------------
# zarrita.zarr

def zarrita_nodes():
    def arr(path, dt, shape, chunks, seed, fill=0, written=None):
        return {"kind": "array", "path": path, "data_type": dt, "shape": list(shape),
                "chunk_shape": list(chunks), "seed": seed, "fill_value": fill, "written": written}
    return [
        {"kind": "group", "path": "", "attributes": {"title": "zarrita, parents without metadata"}},
        {"kind": "group", "path": "groups", "attributes": {"level": 1}},
        arr("groups/implicit/deeper/arr", "int32", (5, 7), (2, 3), 3, -1, [[0, 4], [0, 7]]),
        arr("groups/implicit/sibling", "int8", (300,), (64,), 1, -5, [[0, 200]]),
        arr("groups/implicit/deeper/deepest/x/leaf", "uint16", (4, 5, 6), (2, 2, 3), 7),
        arr("groups/c/d/arr", "float32", (6,), (4,), 2),          # an implicit group named "c"
        arr("top/level/a", "float64", (10,), (4,), 5),             # implicit below the root
        {"kind": "group", "path": "lonely/g", "attributes": {"explicit": True}},
        arr("lonely/g/h/arr", "int16", (3, 4), (2, 2), 9),         # implicit below explicit
        arr("flat", "uint8", (8,), (8,), 4),                       # its c/ is no directory
    ]


# what zarrfs must not show (and one thing it shows: a sub-directory without nodes)
ZARRITA_EXTRA = {
    "groups/notes/readme.txt": "notes",          # files only: no node can lie below
    "groups/notes/c.0": b"\x00" * 4,
    "groups/.hidden/sub/x.txt": "x",              # hidden
    "groups/emptydir": None,                      # empty (S3 cannot even hold it)
    "groups/junk/sub/file.txt": "x",              # a sub-directory: an (empty) implicit group
}
ZARRITA_DIRS = ["", "groups", "groups/c", "groups/c/d", "groups/implicit",
                "groups/implicit/deeper", "groups/implicit/deeper/deepest",
                "groups/implicit/deeper/deepest/x", "groups/junk", "lonely", "lonely/g",
                "lonely/g/h", "top", "top/level"]

NPTYPE = {"int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
          "float32": "<f4", "float64": "<f8"}


def values(node):
    """numpy twin of regionChunk() in js/zarrita_implicit.mjs: k * 3 + seed, wrapped."""
    n = int(np.prod(node["shape"]))
    k = np.arange(n, dtype=np.int64) * 3 + node["seed"]
    return k.astype(NPTYPE[node["data_type"]]).reshape(node["shape"])


def expected(node):
    a = np.full(node["shape"], node["fill_value"], dtype=NPTYPE[node["data_type"]])
    sel = tuple(slice(x, y) for x, y in (node["written"] or [[0, s] for s in node["shape"]]))
    a[sel] = values(node)[sel]
    return a.tobytes()


def write_zarrita(root):
    ns = zarrita_nodes()
    os.makedirs(root)
    spec = root + ".spec.json"
    with open(spec, "w") as f:
        json.dump({"nodes": ns}, f)
    r = subprocess.run(["node", os.path.join(HERE, "js", "zarrita_implicit.mjs"), spec, root],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError("zarrita_implicit.mjs failed (%d): %s %s"
                           % (r.returncode, r.stdout, r.stderr))
    c3.write_files(root, ZARRITA_EXTRA)
    arrays = {n["path"]: expected(n) for n in ns if n["kind"] == "array"}
    explicit = {n["path"] for n in ns if n["kind"] == "group"}
    return json.loads(r.stdout.splitlines()[-1]), arrays, explicit


# ---------------------------------------------------------------------------------------------
# hand-built stores

def v3_array(files, path, a, chunks, codecs=None, v2_keys=False, checksum=False, fill=0):
    """zarr.json and every chunk of numpy array a (little-endian `bytes` codec) into files."""
    dt = {v: k for k, v in NPTYPE.items()}[a.dtype.str]
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if checksum:
        codecs.append({"name": "crc32c"})
    cke = {"name": "v2", "configuration": {"separator": "/"}} if v2_keys else None
    doc = c3.v3_array_doc(a.shape, chunks, dt, codecs, fill_value=fill, chunk_key_encoding=cke)
    files[path + "/zarr.json"] = doc
    grid = [-(-s // c) for s, c in zip(a.shape, chunks)]
    for idx in np.ndindex(*grid):
        block = np.full(chunks, fill, dtype=a.dtype)
        src = a[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks))]
        block[tuple(slice(0, s) for s in src.shape)] = src
        data = block.tobytes()
        key = "/".join(str(i) for i in idx) if v2_keys else c3.default_key(idx)
        files[path + "/" + key] = c3.with_crc32c(data) if checksum else data
    return doc


def hand_arrays():
    return {
        "a/b/c/arr": (np.arange(10, dtype="<i4") * 7 - 20, (4,), {}),
        "a/g/h/arr2": (np.arange(5, dtype="|u1") + 100, (5,), {}),
        "c/d/arr3": (np.array([0.5, -1.25, 3e10], dtype="<f8"), (3,), {"checksum": True}),
        "a/v2keys": (np.arange(16, dtype="<i2").reshape(4, 4) - 8, (2, 2), {"v2_keys": True}),
        "plain": (np.arange(6, dtype="<u2") * 1000, (3,), {}),
    }


HAND_DIRS = ["", "a", "a/b", "a/b/c", "a/g", "a/g/h", "c", "c/d"]


def write_hand(root, consolidated=False):
    files = {"zarr.json": c3.v3_group_doc({"hand": "built"}),
             "a/g/zarr.json": c3.v3_group_doc({"explicit": True})}
    docs = {"a/g": files["a/g/zarr.json"]}
    arrays = {}
    for path, (a, chunks, kw) in hand_arrays().items():
        docs[path] = v3_array(files, path, a, chunks, **kw)
        arrays[path] = a.tobytes()
    if consolidated:
        # stored, but not in the consolidated metadata: not part of the mounted hierarchy
        v3_array(files, "a/unlisted/arr", np.arange(3, dtype="<i4"), (3,))
        files["zarr.json"]["consolidated_metadata"] = {
            "kind": "inline", "must_understand": False, "metadata": docs}
    c3.write_files(root, files)
    return arrays, {"", "a/g"}


def write_subcons(root):
    files = {"zarr.json": c3.v3_group_doc()}
    a = np.arange(12, dtype="<f4").reshape(3, 4) / 4
    doc = v3_array(files, "sub/deep/er/arr", a, (2, 2))
    files["sub/zarr.json"] = c3.v3_group_doc(
        {"consolidated": "here"},
        consolidated_metadata={"kind": "inline", "must_understand": False,
                               "metadata": {"deep/er/arr": doc}})
    c3.write_files(root, files)
    return {"sub/deep/er/arr": a.tobytes()}, {"", "sub"}


# ---------------------------------------------------------------------------------------------

def setUpModule():
    global WORK, SRV, NGINX_ON, NGINX_OFF, S3, PROXY, ZARRITA_RESULT
    if not gz.node_modules_ok():
        raise RuntimeError("zarrita is not installed: run `npm ci --prefix tests/integration/js`")
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-implicit-")
    SRV = os.path.join(WORK, "srv")
    ZARRITA_RESULT, arrays, explicit = write_zarrita(os.path.join(SRV, "zarrita.zarr"))
    STORES["zarrita.zarr"] = {"dirs": ZARRITA_DIRS, "files": arrays, "explicit": explicit}
    arrays, explicit = write_hand(os.path.join(SRV, "hand.zarr"))
    STORES["hand.zarr"] = {"dirs": HAND_DIRS, "files": arrays, "explicit": explicit}
    arrays, explicit = write_hand(os.path.join(SRV, "consolidated.zarr"), consolidated=True)
    STORES["consolidated.zarr"] = {"dirs": HAND_DIRS, "files": arrays, "explicit": explicit}
    arrays, explicit = write_subcons(os.path.join(SRV, "subcons.zarr"))
    STORES["subcons.zarr"] = {"dirs": ["", "sub", "sub/deep", "sub/deep/er"], "files": arrays,
                              "explicit": explicit}
    NGINX_ON = rs.Nginx(SRV, autoindex=True).start()
    NGINX_OFF = rs.Nginx(SRV, autoindex=False).start()
    S3 = rs.S3rver([BUCKET]).start()
    # s3rver 3.7.1 leaves out the common prefixes that hold no object directly (exactly the
    # implicit groups); the proxy adds them, as S3 lists them (remote_servers.SigV4Proxy)
    PROXY = rs.SigV4Proxy(S3.port, {S3_KEY: S3_SECRET}, fix_common_prefixes=True).start()
    c = S3.client()
    n = sum(c.upload_tree(os.path.join(SRV, name), BUCKET, name) for name in STORES)
    log("stores in %s; nginx %s (autoindex on), %s (off); s3rver %s (%d objects)"
        % (SRV, NGINX_ON.url(), NGINX_OFF.url(), S3.endpoint(), n))


def tearDownModule():
    for s in (NGINX_ON, NGINX_OFF, PROXY, S3):
        if s:
            s.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def s3_env():
    """The proxy's credentials for the zarrfs started inside; no ~/.aws."""
    return rs.aws_env(AWS_ACCESS_KEY_ID=S3_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET)


def children(store, rel):
    """The names a listing of directory rel of store must show."""
    s = STORES[store]
    out = set()
    for p in list(s["dirs"]) + list(s["files"]):
        if p and os.path.dirname(p) == rel:
            out.add(os.path.basename(p))
    return sorted(out)


# (store, where): where is local, http (autoindex on), http-off (autoindex off), s3
MOUNTS = [("zarrita.zarr", "local"), ("zarrita.zarr", "http"), ("zarrita.zarr", "s3"),
          ("zarrita.zarr", "http-off"),
          ("hand.zarr", "local"), ("hand.zarr", "http"), ("hand.zarr", "s3"),
          ("consolidated.zarr", "local"), ("consolidated.zarr", "http-off"),
          ("consolidated.zarr", "s3"),
          ("subcons.zarr", "local"), ("subcons.zarr", "http-off"), ("subcons.zarr", "http")]
# mounts that can list every directory (autoindex off lists only from consolidated metadata)
LISTABLE = [m for m in MOUNTS if m[1] != "http-off" or m[0] == "consolidated.zarr"]


class ImplicitGroups(zfmount.MountsTestCase):
    @classmethod
    def mount_all(cls):
        cls.m = {}
        for store, where in MOUNTS:
            label = "%s-%s" % (where, store)
            if where == "local":
                m = cls.add_mount(os.path.join(SRV, store), label=label)
            elif where == "s3":
                with s3_env():
                    m = cls.add_mount("s3://%s/%s" % (BUCKET, store), label=label,
                                      options=REMOTE_OPTS + ["endpoint=" + PROXY.endpoint(),
                                                             "region=us-east-1"])
            else:
                srv = NGINX_ON if where == "http" else NGINX_OFF
                m = cls.add_mount(srv.url(store), options=REMOTE_OPTS, label=label)
            cls.m[(store, where)] = m
        log("%d mounts" % len(cls.m))

    def p(self, store, where, rel=""):
        return self.m[(store, where)].path(rel) if rel else self.m[(store, where)].mnt

    # -----------------------------------------------------------------------------------------

    def test_00_what_zarrita_wrote(self):
        """zarrita stored no document for the parents, opens every array by its path, and finds
        no node at a parent."""
        root = os.path.join(SRV, "zarrita.zarr")
        s = STORES["zarrita.zarr"]
        self.assertEqual(sorted(ZARRITA_RESULT["arrays"]), sorted(s["files"]))
        implicit = sorted(d for d in s["dirs"] if d not in s["explicit"] and d != "groups/junk")
        self.assertEqual(sorted(ZARRITA_RESULT["implicit"]), implicit)
        for d, why in ZARRITA_RESULT["implicit"].items():
            self.assertFalse(os.path.exists(os.path.join(root, d, "zarr.json")), d)
            self.assertIn("NotFoundError", why, "zarrita opened the implicit group %s" % d)
        got = gz.zarrita_read(root, sorted(s["files"]), os.path.join(WORK, "zr"))
        for path, want in s["files"].items():
            self.assertTrue(got[path]["ok"], got[path])
            self.assertBytesEqual(got[path]["data"], want, "zarrita's read of %s" % path)
        log("  zarrita: %d arrays by path, %d parents without zarr.json (NotFoundError)"
            % (len(got), len(implicit)))

    def test_01_walk_and_listings(self):
        """os.walk finds every array; each directory lists its nodes and implicit groups."""
        for store, where in LISTABLE:
            with self.subTest(store=store, where=where):
                s = STORES[store]
                dirs, files = rf.walk_mount(self.p(store, where))
                self.assertEqual(dirs, sorted(s["dirs"]), "%s %s: directories" % (where, store))
                self.assertEqual(files, sorted(s["files"]), "%s %s: files" % (where, store))
                for d in s["dirs"]:
                    self.assertEqual(sorted(os.listdir(self.p(store, where, d))),
                                     children(store, d), "%s %s: ls /%s" % (where, store, d))
        log("  %d mounts walk and list the same trees" % len(LISTABLE))

    def test_02_implicit_directories(self):
        """Implicit groups: read-only directories with user.zarr.format 3 and attributes {},
        no user.zarr.metadata; explicit groups keep their documents."""
        n = 0
        for store, where in MOUNTS:
            s = STORES[store]
            for d in s["dirs"]:
                if (store, where) == ("zarrita.zarr", "http-off") and d not in ("", "groups"):
                    continue          # not reachable there (test_05)
                p = self.p(store, where, d)
                with self.subTest(store=store, where=where, dir=d):
                    st = os.stat(p)
                    self.assertTrue(stat.S_ISDIR(st.st_mode))
                    self.assertEqual(stat.S_IMODE(st.st_mode), 0o555)
                    if d in s["explicit"]:
                        doc = json.loads(os.getxattr(p, "user.zarr.metadata"))
                        self.assertEqual(doc["node_type"], "group")
                        continue
                    names = sorted(x for x in os.listxattr(p) if x.startswith("user.zarr"))
                    self.assertEqual(names, sorted(IMPLICIT_XATTRS))
                    for name, want in IMPLICIT_XATTRS.items():
                        self.assertEqual(os.getxattr(p, name), want, name)
                    self.assertErrno(errno.ENODATA, os.getxattr, p, "user.zarr.metadata")
                    n += 1
        log("  %d implicit directories: mode 0555, user.zarr.format 3, attributes {}" % n)

    def test_03_bytes(self):
        """Every array through every mount: what zarrita or numpy wrote."""
        n = 0
        for store, where in MOUNTS:
            if where == "http-off" and store == "zarrita.zarr":
                continue
            for path, want in STORES[store]["files"].items():
                with self.subTest(store=store, where=where, array=path):
                    p = self.p(store, where, path)
                    self.assertEqual(os.stat(p).st_size, len(want))
                    self.assertBytesEqual(zfmount.read_all(p), want,
                                          "%s %s/%s" % (where, store, path))
                    n += 1
        log("  %d array reads byte-exact" % n)

    def test_04_enoent(self):
        """Paths that hold no node: ENOENT (ENOTDIR through an array), everywhere."""
        missing = {
            "zarrita.zarr": ["nope", "groups/nope", "groups/implicit/nope",
                             "groups/implicit/deeper/nothing/arr", "groups/notes",
                             "groups/notes/readme.txt", "groups/.hidden", "groups/.hidden/sub",
                             "groups/emptydir", "groups/junk/sub", "groups/junk/sub/file.txt",
                             "top/level/zarr.json", "zarr.json"],
            "hand.zarr": ["a/b/nope", "a/nope/deeper", "c/d/c", "a/zarr.json"],
            "consolidated.zarr": ["a/unlisted", "a/unlisted/arr", "a/nope"],
            "subcons.zarr": ["sub/nope", "sub/deep/nope", "sub/deep/er/nope"],
        }
        through_arrays = {
            "zarrita.zarr": ["groups/implicit/deeper/arr/c", "groups/implicit/deeper/arr/c/0/0",
                             "flat/c", "top/level/a/zarr.json"],
            "hand.zarr": ["a/v2keys/0", "a/v2keys/0/1", "plain/c", "a/b/c/arr/c/0"],
            "consolidated.zarr": ["plain/c"],
            "subcons.zarr": ["sub/deep/er/arr/c"],
        }
        for store, where in MOUNTS:
            for rel in missing[store]:
                with self.subTest(store=store, where=where, path=rel):
                    self.assertErrno(errno.ENOENT, os.stat, self.p(store, where, rel))
            # without index pages, zarrita.zarr's implicit groups are unreachable (test_05)
            unreachable = (store, where) == ("zarrita.zarr", "http-off")
            for rel in through_arrays[store]:
                with self.subTest(store=store, where=where, path=rel):
                    want = (errno.ENOTDIR, errno.ENOENT) if unreachable else errno.ENOTDIR
                    self.assertErrno(want, os.stat, self.p(store, where, rel))
        log("  ENOENT for names without nodes, ENOTDIR below arrays, on %d mounts" % len(MOUNTS))

    def test_05_same_tree_everywhere(self):
        """Each remote mount against the local mount of the same directory: listings, types,
        sizes, xattrs, bytes, random preads."""
        for store, where in MOUNTS:
            if where == "local":
                continue
            local = self.p(store, "local")
            if where == "http-off" and store != "consolidated.zarr":
                # no index pages and no consolidated metadata for the parents: the groups with
                # documents and the nodes named by consolidated metadata only
                if store == "zarrita.zarr":
                    self.assertEqual(os.listdir(self.p(store, where, "groups")), [])
                    for rel in ("groups/implicit", "top", "lonely/g", "lonely/g/h/arr"):
                        self.assertErrno(errno.ENOENT, os.stat, self.p(store, where, rel))
                    dirs, files, listing = ["groups"], ["flat"], False
                else:
                    dirs = [d for d in STORES[store]["dirs"] if d.startswith("sub")]
                    files, listing = list(STORES[store]["files"]), True
                rf.compare_trees(self, local, self.p(store, where), dirs=dirs, files=files,
                                 listing=listing, what="%s %s" % (where, store), preads=5)
                continue
            n_ok, _b, n_err = rf.compare_trees(self, local, self.p(store, where),
                                               what="%s %s" % (where, store), preads=5)
            self.assertEqual((n_ok, n_err), (len(STORES[store]["files"]), 0), (store, where))
        log("  %d remote mounts show their local mount's trees (the S3 proxy added %d common "
            "prefixes s3rver left out)" % (len(MOUNTS) - 4, PROXY.prefixes_fixed))

    def test_06_remote_listing_is_shallow(self):
        """Listing a group costs one listing per child directory without zarr.json, never a
        scan of what lies deeper (nginx's access log)."""
        m = zfmount.Mount(NGINX_ON.url("zarrita.zarr"), options=REMOTE_OPTS, label="shallow")
        with m:
            mark = NGINX_ON.access_mark()
            names = sorted(os.listdir(m.path("groups")))
            self.assertEqual(names, children("zarrita.zarr", "groups"))
            got = [e.path for e in NGINX_ON.access_entries(mark)]
        lists = sorted(p for p in got if p.endswith("/"))
        base = "zarrita.zarr/groups/"
        self.assertEqual(lists, sorted([base] + [base + n + "/" for n in
                                                 ("c", "emptydir", "implicit", "junk", "notes")]),
                         "directory requests: %r" % lists)
        self.assertFalse([p for p in got if p.count("/") > 3], "deeper requests: %r" % got)
        log("  ls groups: %d requests, %d of them listings" % (len(got), len(lists)))


class Writable(zfmount.TestCase):
    """-o rw below implicit groups (a local copy of hand.zarr)."""

    def test_rw(self):
        tmp = tempfile.mkdtemp(prefix="rw-", dir=WORK)
        store = os.path.join(tmp, "hand.zarr")
        shutil.copytree(os.path.join(SRV, "hand.zarr"), store)
        arr = np.frombuffer(STORES["hand.zarr"]["files"]["a/b/c/arr"], dtype="<i4").copy()
        with zfmount.Mount(store, options=["rw"], label="rw-implicit") as m:
            self.assertEqual(stat.S_IMODE(os.stat(m.path("a/b")).st_mode), 0o755)
            # a new group and a new array in an implicit group; the parent stays implicit
            os.mkdir(m.path("a/b/newgroup"))
            p = m.path("a/b/newarr")
            open(p, "wb").close()
            os.setxattr(p, "user.zarr.metadata", json.dumps(c3.v3_array_doc(
                (6,), (4,), "int16", [{"name": "bytes", "configuration": {"endian": "little"}}]
            )).encode())
            with open(p, "r+b") as f:
                f.write(np.arange(6, dtype="<i2").tobytes())
            self.assertEqual(sorted(os.listdir(m.path("a/b"))), ["c", "newarr", "newgroup"])
            self.assertErrno(errno.ENODATA, os.getxattr, m.path("a/b"), "user.zarr.metadata")
            # writes to an array below implicit groups
            fd = os.open(m.path("a/b/c/arr"), os.O_WRONLY)
            try:
                os.pwrite(fd, np.array([111, 222], dtype="<i4").tobytes(), 4 * 3)
            finally:
                os.close(fd)
            arr[3:5] = [111, 222]
            # the implicit group's name is taken
            self.assertErrno(errno.EEXIST, os.mkdir, m.path("a/b"))
            self.assertErrno(errno.ENOTEMPTY, os.rmdir, m.path("c"))
            # attributes make an implicit group explicit: its zarr.json is stored
            os.setxattr(m.path("a/g/h"), "user.zarr.attributes", b'{"now": "explicit"}')
            self.assertEqual(json.loads(os.getxattr(m.path("a/g/h"), "user.zarr.attributes")),
                             {"now": "explicit"})
            doc = json.loads(os.getxattr(m.path("a/g/h"), "user.zarr.metadata"))
            self.assertEqual((doc["node_type"], doc["attributes"]), ("group", {"now": "explicit"}))
            self.assertEqual(os.listdir(m.path("a/g/h")), ["arr2"])
        self.assertFalse(os.path.exists(os.path.join(store, "a/b/zarr.json")))
        self.assertFalse(os.path.exists(os.path.join(store, "a/zarr.json")))
        with open(os.path.join(store, "a/b/newgroup/zarr.json")) as f:
            self.assertEqual(json.load(f)["node_type"], "group")
        with open(os.path.join(store, "a/g/h/zarr.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["zarr_format"], doc["node_type"], doc["attributes"]),
                         (3, "group", {"now": "explicit"}))
        zr = gz.zarrita_read(store, ["a/b/newarr", "a/b/c/arr", "a/g/h/arr2"],
                             os.path.join(tmp, "zr"))
        self.assertBytesEqual(zr["a/b/newarr"]["data"], np.arange(6, dtype="<i2").tobytes(),
                              "zarrita: the new array below an implicit group")
        self.assertBytesEqual(zr["a/b/c/arr"]["data"], arr.tobytes(),
                              "zarrita: the array written below implicit groups")
        self.assertBytesEqual(zr["a/g/h/arr2"]["data"], STORES["hand.zarr"]["files"]["a/g/h/arr2"],
                              "zarrita: the array below the group made explicit")
        log("  rw: mkdir, a new array, writes and attributes below implicit groups")


if __name__ == "__main__":
    zfmount.main()
