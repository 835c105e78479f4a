#!/usr/bin/python3
"""What real writers produce, and never a wrong file in silence (issue "Read every variant that
real writers produce").

* Undecodable: arrays zarrfs cannot decode — unknown or unsupported codecs (v2 compressor and
  filter, v3 codec), an unknown chunk grid, chunk key encoding or storage transformer, a chunk
  over zarrfs's 2 GiB limit — are regular files of their real size (shape x item size); they
  open read-only, every read of their bytes fails with EIO, one log line names the node and the
  codec however often it is read, and `user.zarr.error` says why. Arrays of variable-length
  strings read as text (one line per element); other object codecs fail to open (EOPNOTSUPP), as
  do arrays whose codec no library on this system provides (pcodec), listed with their size.
  Locally and over HTTP (nginx).
* BoolFill: v3 bool arrays written by zarrita.js 0.7 itself, whose zarr.json says
  "fill_value": 0 or 1 and "codecs": [] (zarrita's metadata, unpatched): read as zarrita reads
  them, locally and over HTTP; a bool fill value of 2 or "0" is still refused.
* WalkEverything: every array of the third-party fixtures (tests/fixtures: zarr-python's and
  zarrita's stores, zarrita's v2 zip archives mounted as archives) and of the suite's own fixtures (the stores of gen_v2, gen_v3_zarrita, the two
  drafts' tests, remote_fixtures, this file): each regular
  file's size is shape x item size computed from the stored metadata document, and reading it
  whole, and at its last byte, gives exactly that many bytes or fails with EIO — never a short
  or empty read; arrays whose item size is not fixed, or whose codec has no library here, refuse
  to open.

Expected values come from zarr-python 2.13, zarrita.js, numpy and the stored documents.
"""

import errno
import json
import os
import shutil
import stat
import sys
import tempfile
import time

os.environ.setdefault("ZARR_V3_EXPERIMENTAL_API", "1")   # test_draft2020.build writes the draft
sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import gen_v3_zarrita as gz  # noqa: E402
import remote_servers as rs  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

TESTDATA = zfmount.FIXTURES
WORK = None
SRV = None              # served by nginx: the stores of this file
NGINX = None
REMOTE_OPTS = ["retries=2", "timeout=20"]

GOOD = np.arange(13 * 7, dtype="<f8").reshape(13, 7) / 4
V3_GOOD = np.arange(16, dtype="<i4") * 3 - 7

# v2 arrays (13, 7) <f8 whose .zarray names something zarrfs does not decode: name -> (field,
# value, token the log and user.zarr.error must name)
V2_UNDECODABLE = {
    "nosuch_compressor": ("compressor", {"id": "zarrfs_nosuch", "level": 1}, "zarrfs_nosuch"),
    "nosuch_filter": ("filters", [{"id": "zarrfs_nosuch_filter"}], "zarrfs_nosuch_filter"),
}
# v2 arrays (13, 7) <f8 whose codec no library on this system provides: they fail to open
# (EOPNOTSUPP) instead of failing their reads; name -> (field, value, token)
V2_NO_LIBRARY = {
    "pcodec": ("compressor", {"id": "pcodec", "level": 8}, "pcodec"),
}
# v3 arrays of 16 int32 (or as given): name -> (extra zarr.json fields, token, shape, itemsize)
V3_UNDECODABLE = {
    "unknown_codec": ({"codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                  {"name": "zarrfs_nosuch_codec"}]},
                      "zarrfs_nosuch_codec", (16,), 4),
    "unknown_chunk_grid": ({"chunk_grid": {"name": "zarrfs_nosuch_grid",
                                           "configuration": {"chunk_shapes": [[8, 8]]}}},
                           "zarrfs_nosuch_grid", (16,), 4),
    "unknown_key_encoding": ({"chunk_key_encoding": {"name": "zarrfs_keys"}}, "zarrfs_keys",
                             (16,), 4),
    "storage_transformer": ({"storage_transformers": [{"name": "zarrfs_transformer"}]},
                            "zarrfs_transformer", (16,), 4),
    # one chunk of 4 GiB: over zarrfs's 2 GiB decoded-chunk limit; the file still has its size
    "huge_chunk": ({"shape": [1 << 31], "data_type": "uint16",
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1 << 31]}}},
                   "2147483648 bytes", (1 << 31,), 2),
}


def setUpModule():
    global WORK, SRV, NGINX
    if not gz.node_modules_ok():
        raise RuntimeError("zarrita is not installed: run `npm ci --prefix tests/integration/js`")
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-variants-")
    SRV = os.path.join(WORK, "srv")
    build_undecodable_v2(os.path.join(SRV, "undecodable_v2.zarr"))
    build_undecodable_v3(os.path.join(SRV, "undecodable_v3.zarr"))
    build_boolfill(os.path.join(SRV, "boolfill.zarr"))
    NGINX = rs.Nginx(SRV, autoindex=True).start()
    log("nginx at %s" % NGINX.url())


def tearDownModule():
    if NGINX:
        NGINX.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# stores

def edit_json(path, fn):
    with open(path) as f:
        d = json.load(f)
    fn(d)
    with open(path, "w") as f:
        json.dump(d, f, indent=2)


def build_undecodable_v2(root):
    g = zarr.open_group(root, mode="w")
    g.create_dataset("good", data=GOOD, chunks=(5, 4))
    for name, (field, value, _tok) in list(V2_UNDECODABLE.items()) + list(V2_NO_LIBRARY.items()):
        g.create_dataset(name, data=GOOD, chunks=(5, 4), compressor=None)  # chunks on disk

        def setf(d, field=field, value=value):
            d[field] = value
        edit_json(os.path.join(root, name, ".zarray"), setf)
    g.create_dataset("strings", data=np.array(["a", "bb", "ccc"], dtype=object),
                     dtype=object, object_codec=__import__("numcodecs").VLenUTF8())


def build_undecodable_v3(root):
    le = {"name": "bytes", "configuration": {"endian": "little"}}
    files = {"zarr.json": c3.v3_group_doc(),
             "good/zarr.json": c3.v3_array_doc((16,), (8,), "int32", [le]),
             "good/c/0": V3_GOOD[:8].tobytes(), "good/c/1": V3_GOOD[8:].tobytes(),
             "strings/zarr.json": c3.v3_array_doc((4,), (4,), "string",
                                                  [{"name": "vlen-utf8"}], fill_value="")}
    for name, (extra, _tok, _shape, _isz) in V3_UNDECODABLE.items():
        doc = c3.v3_array_doc((16,), (8,), "int32", [le])
        doc.update(extra)
        files[name + "/zarr.json"] = doc
        files[name + "/c/0"] = bytes(32)
    c3.write_files(root, files)


def build_boolfill(root):
    r = zfmount.subprocess.run(["node", os.path.join(gz.JS, "zarrita_bool_fill.mjs"), root],
                               stdout=zfmount.subprocess.PIPE, stderr=zfmount.subprocess.PIPE,
                               text=True, timeout=120, stdin=zfmount.subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError("zarrita_bool_fill.mjs failed: %s %s" % (r.stdout, r.stderr))
    # what zarrita wrote itself: the quirks this test is about
    for name, fill in (("zero", 0), ("one", 1)):
        with open(os.path.join(root, name, "zarr.json")) as f:
            doc = json.load(f)
        assert doc["fill_value"] == fill and doc["fill_value"] is not bool(fill), doc
        assert doc["codecs"] == [], doc


def bool_expected(fill):
    a = np.full((10, 7), bool(fill))
    i, j = np.meshgrid(np.arange(4), np.arange(3), indexing="ij")
    a[:4, :3] = (i + 2 * j) % 3 == 0
    return a.tobytes()


# ---------------------------------------------------------------------------------------------

class LocalAndRemote(zfmount.MountsTestCase):
    """Mounts SRV/<store> locally and over nginx; `self.mounts` is [(where, Mount)]."""

    store = None

    @classmethod
    def mount_all(cls):
        cls.mounts = [("local", cls.add_mount(os.path.join(SRV, cls.store),
                                              label="local-" + cls.store)),
                      ("http", cls.add_mount(NGINX.url(cls.store), options=REMOTE_OPTS,
                                             label="http-" + cls.store))]

    def assertLoggedOnce(self, m, path):
        lines = [ln for ln in m.stderr_text().splitlines() if ("%s: cannot be read" % path) in ln]
        self.assertEqual(len(lines), 1, "log lines for %s: %r" % (path, lines))


class UndecodableV2(LocalAndRemote):
    store = "undecodable_v2.zarr"

    def test_01_real_size_eio_one_log_line(self):
        for where, m in self.mounts:
            names = os.listdir(m.mnt)
            for name, (_f, _v, token) in sorted(V2_UNDECODABLE.items()):
                with self.subTest(where=where, array=name):
                    self.assertIn(name, names)
                    why = self.assertUndecodable(m.path(name), GOOD.nbytes, [token])
                    self.assertUndecodable(m.path(name), GOOD.nbytes, [token])  # read again
                    self.assertLoggedOnce(m, name)
                    self.assertIn(name + "/.zarray", why)
                    # ls -l shows the size too (readdir + stat of every entry)
                    out = zfmount.subprocess.run(["ls", "-l", m.mnt], stdout=zfmount.subprocess.PIPE,
                                                 text=True, timeout=20).stdout
                    row = [ln for ln in out.splitlines() if ln.endswith(" " + name)]
                    self.assertEqual(len(row), 1, out)
                    self.assertIn(" %d " % GOOD.nbytes, row[0])
            log("  %s: %d undecodable v2 arrays: %d bytes each, EIO, one log line, "
                "user.zarr.error" % (where, len(V2_UNDECODABLE), GOOD.nbytes))

    def test_02_object_dtype_reads_as_text(self):
        for where, m in self.mounts:
            with self.subTest(where=where):
                self.assertEqual(zfmount.read_all(m.path("strings")), b"a\nbb\nccc\n")
                self.assertErrno(errno.ENODATA, os.getxattr, m.path("strings"), "user.zarr.error")
                self.assertIn(b"vlen-utf8", os.getxattr(m.path("strings"), "user.zarr.text"))

    def test_04_no_library_eopnotsupp_one_log_line(self):
        for where, m in self.mounts:
            for name, (_f, _v, token) in sorted(V2_NO_LIBRARY.items()):
                with self.subTest(where=where, array=name):
                    self.assertEqual(os.stat(m.path(name)).st_size, GOOD.nbytes)  # listed, sized
                    self.assertErrno(errno.EOPNOTSUPP, os.open, m.path(name), os.O_RDONLY)
                    self.assertErrno(errno.EOPNOTSUPP, os.open, m.path(name), os.O_RDONLY)
                    why = os.getxattr(m.path(name), "user.zarr.error").decode()
                    self.assertIn(token, why)
                    self.assertIn("no library on this system provides it", why)
                    lines = [ln for ln in m.stderr_text().splitlines()
                             if "%s: cannot be opened" % name in ln]
                    self.assertEqual(len(lines), 1, lines)
            log("  %s: %d arrays of a codec without a library here: listed with their size, "
                "open fails with EOPNOTSUPP, one log line" % (where, len(V2_NO_LIBRARY)))

    def test_03_siblings_read(self):
        want = zfmount.expected_bytes(zfmount.open_zarr_array(os.path.join(SRV, self.store, "good")))
        self.assertEqual(want, GOOD.tobytes())
        for where, m in self.mounts:
            self.assertBytesEqual(zfmount.read_all(m.path("good")), want, where + " good")
            self.assertErrno(errno.ENODATA, os.getxattr, m.path("good"), "user.zarr.error")
            self.assertNotIn("user.zarr.error", os.listxattr(m.path("good")))


class UndecodableV3(LocalAndRemote):
    store = "undecodable_v3.zarr"

    def test_01_real_size_eio_one_log_line(self):
        for where, m in self.mounts:
            for name, (_x, token, shape, isz) in sorted(V3_UNDECODABLE.items()):
                with self.subTest(where=where, array=name):
                    size = int(np.prod(shape)) * isz
                    self.assertUndecodable(m.path(name), size, [token])
                    self.assertUndecodable(m.path(name), size, [token])
                    self.assertLoggedOnce(m, name)
            log("  %s: %d undecodable v3 arrays (codec, chunk grid, key encoding, storage "
                "transformer, 4 GiB chunk): real size, EIO, one log line" % (where, len(V3_UNDECODABLE)))

    def test_02_string_reads_as_text_sibling_reads(self):
        for where, m in self.mounts:
            with self.subTest(where=where):  # no chunks stored: four fill values ""
                self.assertEqual(zfmount.read_all(m.path("strings")), b"\n\n\n\n")
                self.assertEqual(os.getxattr(m.path("strings"), "user.zarr.dtype"), b"string")
                self.assertBytesEqual(zfmount.read_all(m.path("good")), V3_GOOD.tobytes(), "good")


class BoolFill(LocalAndRemote):
    store = "boolfill.zarr"

    def test_01_zarrita_bool_fill_values(self):
        store = os.path.join(SRV, self.store)
        zr = gz.zarrita_read(store, ["zero", "one"], os.path.join(WORK, "zr-bool"))
        for name, fill in (("zero", 0), ("one", 1)):
            self.assertTrue(zr[name].get("ok"), zr[name])
            self.assertEqual(zr[name]["data"], bool_expected(fill), "zarrita's own read of " + name)
            for where, m in self.mounts:
                with self.subTest(where=where, array=name):
                    self.assertBytesEqual(zfmount.read_all(m.path(name)), zr[name]["data"],
                                          "%s %s" % (where, name))
                    self.assertEqual(os.getxattr(m.path(name), "user.zarr.fill_value").strip(),
                                     str(fill).encode())
        log("  zarrita's bool arrays with fill_value 0 and 1 and codecs [] read as zarrita reads "
            "them, locally and over HTTP")

    def test_02_still_strict(self):
        for bad in ("2", "\"0\"", "0.5", "null"):
            with self.subTest(fill=bad):
                root = os.path.join(WORK, "strict", "b%d" % len(bad))
                doc = c3.v3_array_doc((4,), (4,), "bool", [{"name": "bytes"}])
                text = json.dumps(doc).replace('"fill_value": 0', '"fill_value": ' + bad)
                c3.write_files(root, {"zarr.json": c3.v3_group_doc(), "x/zarr.json": text,
                                      "y/zarr.json": doc})
                with zfmount.Mount(root) as m:
                    self.assertErrno(errno.EIO, os.stat, m.path("x"))
                    self.assertIn('"fill_value"', m.stderr_text())
                    self.assertEqual(zfmount.read_all(m.path("y")), bytes(4))


# ---------------------------------------------------------------------------------------------
# the walk

V3_ITEMSIZE = {k: np.dtype(v).itemsize for k, v in c3.V3_TYPESTR.items()}


def v3_itemsize(dt):
    """Item size of a final-v3 / 2022-draft data type, or None when not fixed or unknown."""
    if isinstance(dt, dict):
        name, cfg = dt.get("name") or dt.get("extension"), dt.get("configuration") or {}
        if name in ("numpy.datetime64", "numpy.timedelta64"):
            return 8
        if name == "fixed_length_utf32":
            return cfg.get("length_bytes")
        return None
    if not isinstance(dt, str):
        return None
    if dt in V3_ITEMSIZE:
        return V3_ITEMSIZE[dt]
    if dt.startswith("r") and dt[1:].isdigit():
        return int(dt[1:]) // 8
    return None


def numpy_itemsize(dt):
    """Item size of a v2 / 2020-draft data type (typestr or structured list), None for object."""
    if isinstance(dt, dict):       # 2020 draft extension type
        dt = dt.get("type")
    def descr(v):   # v2 "Data type encoding": nested lists of [name, type(, shape)]
        if not isinstance(v, list):
            return v
        return [tuple([f[0], descr(f[1])] + [tuple(x) for x in f[2:]]) for f in v]
    try:
        d = np.dtype(descr(dt))
    except (TypeError, ValueError):
        return None
    return None if d.hasobject else d.itemsize


def store_format(root):
    if os.path.isfile(os.path.join(root, ".zgroup")) or os.path.isfile(os.path.join(root, ".zarray")):
        return "2"
    with open(os.path.join(root, "zarr.json")) as f:
        zf = json.load(f)["zarr_format"]
    return {3: "3", "https://purl.org/zarr/spec/protocol/core/3.0": "2020",
            "https://purl.org/zarr/spec/core/3.0": "2022"}[zf]


def load_json(path):
    with open(path) as f:
        return json.load(f)


def array_doc(root, fmt, rel):
    """The stored metadata document of the array at view path rel ('' for a root array)."""
    j = lambda *p: os.path.join(root, *p)  # noqa: E731
    if fmt == "2":
        p = j(rel, ".zarray")
        if os.path.isfile(p):
            return load_json(p)
        return load_json(j(".zmetadata"))["metadata"][rel + "/.zarray"]
    if fmt == "3":
        p = j(rel, "zarr.json")
        if os.path.isfile(p):
            return load_json(p)
        return load_json(j("zarr.json"))["consolidated_metadata"]["metadata"][rel]
    if fmt == "2020":
        return load_json(j("meta", "root", rel + ".array.json") if rel else j("meta", "root.array.json"))
    return load_json(j("meta", rel + ".array.json") if rel else j("meta", "array.json"))


def flat_size(fmt, doc):
    isz = numpy_itemsize(doc.get("dtype", doc.get("data_type"))) if fmt in ("2", "2020") \
        else v3_itemsize(doc["data_type"])
    if isz is None:
        return None
    return int(np.prod(doc["shape"], dtype=object)) * isz


def root_is_array(root, fmt):
    if fmt == "2":
        return os.path.isfile(os.path.join(root, ".zarray"))
    if fmt == "3":
        return load_json(os.path.join(root, "zarr.json")).get("node_type") == "array"
    meta = "meta/root.array.json" if fmt == "2020" else "meta/array.json"
    return os.path.isfile(os.path.join(root, meta))


class WalkEverything(zfmount.TestCase):
    test_timeout = 400

    MAX_WHOLE = 64 << 20    # read larger files at their start, middle and end only

    def stores(self):
        out = [os.path.join(TESTDATA, "zarr-python-2.18.7-fixture"),
               os.path.join(TESTDATA, "zarrita-fixtures", "v2", "data.zarr"),
               os.path.join(TESTDATA, "zarrita-fixtures", "v3", "data.zarr")]
        import gen_v2
        import remote_fixtures
        import test_draft2020
        import test_draft2022
        own = os.path.join(WORK, "own")
        for name, build in (("v2main.zarr", gen_v2.build_main),
                            ("v2consolidated.zarr", gen_v2.build_consolidated),
                            ("zarrita.zarr", gz.write),
                            ("draft2020.zr3", test_draft2020.build),
                            ("draft2022.zarr", test_draft2022.build_main)):
            build(os.path.join(own, name))
            out.append(os.path.join(own, name))
        remote = os.path.join(own, "remote")
        remote_fixtures.build(remote)
        out += [os.path.join(remote, n) for n in sorted(os.listdir(remote))]
        out += [os.path.join(SRV, n) for n in sorted(os.listdir(SRV))]
        # zip archives (zarrita's fixtures, hierarchy at the top and one directory down): mounted
        # as archives; their documents are read from a copy the test extracts itself
        for z in ("data.zipped_from_within.zarr.zip", "data.zipped_from_parent.zarr.zip"):
            out.append(os.path.join(TESTDATA, "zarrita-fixtures", "v2", z))
        return out

    @staticmethod
    def document_root(store):
        """Where the stored documents of store lie: the store itself, or for a zip archive the
        directory of its hierarchy in a copy extracted with Python's zipfile."""
        if not store.endswith(".zip"):
            return store
        import zipfile
        dest = os.path.join(WORK, "unzipped", os.path.basename(store))
        with zipfile.ZipFile(store) as zf:
            zf.extractall(dest)
        top = [n for n in os.listdir(dest) if n != "__MACOSX"]
        if not any(os.path.exists(os.path.join(dest, n)) for n in (".zgroup", ".zarray", "zarr.json")) \
                and len(top) == 1:
            return os.path.join(dest, top[0])
        return dest

    def check_file(self, m, root, fmt, rel, view):
        doc = array_doc(root, fmt, rel)
        size = flat_size(fmt, doc)
        if size is None:
            try:  # variable-length elements: text, one line per element, or refused
                text = zfmount.read_all(view)
            except OSError as e:
                self.assertEqual(e.errno, errno.EOPNOTSUPP, "%s: %s" % (view, e))
                return "refused"
            n = int(np.prod(doc["shape"], dtype=object))
            self.assertEqual(text.count(b"\n"), n, "%s: one line per element" % view)
            self.assertEqual(os.stat(view).st_size, len(text), "%s: size once read" % view)
            return "text"
        st = os.stat(view)
        self.assertEqual(st.st_size, size, "%s: size %d, shape x itemsize %d" % (view, st.st_size, size))
        try:
            fd = os.open(view, os.O_RDONLY)
        except OSError as e:  # a codec no library here provides (pcodec): refused at open
            self.assertEqual(e.errno, errno.EOPNOTSUPP, "%s: %s" % (view, e))
            self.assertIn(b"no library on this system", os.getxattr(view, "user.zarr.error"))
            return "refused"
        try:
            if size <= self.MAX_WHOLE:
                spans = [(0, size)]
            else:
                spans = [(0, 1 << 20), (size // 2, 1 << 20), (size - (1 << 20), 1 << 20)]
            for off, n in spans:
                got = 0
                while got < n:
                    try:
                        b = os.pread(fd, min(1 << 20, n - got), off + got)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.EIO, "%s at %d: %s" % (view, off + got, e))
                        return "EIO"
                    self.assertTrue(b, "%s: read at %d of a %d-byte file returned nothing"
                                    % (view, off + got, size))
                    got += len(b)
            if size:
                try:
                    self.assertEqual(len(os.pread(fd, 4096, size - 1)), 1, view + ": last byte")
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO)
                    return "EIO"
            self.assertEqual(os.pread(fd, 4096, size), b"", view + ": past the end")
        finally:
            os.close(fd)
        return "read"

    def test_01_every_array(self):
        total = {"read": 0, "EIO": 0, "refused": 0, "text": 0}
        for store in self.stores():
            root = self.document_root(store)
            fmt = store_format(root)
            counts = {"read": 0, "EIO": 0, "refused": 0, "text": 0}
            with zfmount.Mount(store, label="walk") as m:
                root_array = root_is_array(root, fmt)
                for d, dirs, files in os.walk(m.mnt):
                    for fn in files:
                        view = os.path.join(d, fn)
                        rel = "" if root_array else os.path.relpath(view, m.mnt)
                        self.assertTrue(stat.S_ISREG(os.stat(view).st_mode), view)
                        with self.subTest(store=store, array=rel):
                            counts[self.check_file(m, root, fmt, rel, view)] += 1
            self.assertGreater(sum(counts.values()), 0, store)
            label = os.path.relpath(store, TESTDATA if store.startswith(TESTDATA) else WORK)
            log("  %-45s v%-4s %4d read, %3d EIO, %3d refused (variable-length)"
                % (label, fmt, counts["read"], counts["EIO"], counts["refused"]))
            for k in total:
                total[k] += counts[k]
        log("  every array walked: %d read whole, %d EIO, %d refused; no short or empty file"
            % (total["read"], total["EIO"], total["refused"]))


if __name__ == "__main__":
    zfmount.main()
