#!/usr/bin/python3
"""The Icechunk test data itself (no mount, no zarrfs): what icechunk_fixtures.py makes with
Icechunk and what icechunk_hostile.py breaks are what they claim, so the store adapter's tests
stand on checked ground.

* Layout: both specs' history repositories have exactly the files Icechunk's local storage
  writes (compared with tests/fixtures/icechunk's, written by Icechunk's Python
  package): top-level names, 20-character Crockford ids, each file's header (magic, spec
  version, file type of its folder), spec-1 refs naming existing snapshots.
* Facts: Icechunk's ancestry, tags, labels and the values it reads back agree with what the
  writer wrote (a Python twin of its value formula), the deleted chunk reads as the fill value,
  the resized arrays have their new shapes, the deleted tag/branch are gone; `commit` adds a
  snapshot whose parent is the old head; `big` splits references over the manifests it says.
* Hostile copies (need the FlatBuffers schema: src/store/*.fbs, or ZARRFS_ICECHUNK_SCHEMA_DIR):
  each breakage is checked with the `zstd` command and flatc directly. (Files re-encoded with
  zarrfs's schema, which declares only what zarrfs reads and no file identifier, are not
  readable by Icechunk itself; test_icechunk_written.py reads the virtualized ones through
  zarrfs.)
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import icechunk_fixtures as F  # noqa: E402
import icechunk_hostile as H  # noqa: E402

import numpy as np  # noqa: E402

UPSTREAM = os.path.join(H.REPO_ROOT, "tests", "fixtures", "icechunk")
SCHEMA_DIR = os.environ.get("ZARRFS_ICECHUNK_SCHEMA_DIR") or H.DEFAULT_SCHEMA_DIR
WORK = None
REPOS = {}  # spec -> (dir, facts)
ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{20}$")
FOLDER_TYPE = {"snapshots": H.FILE_SNAPSHOT, "manifests": H.FILE_MANIFEST, "transactions": H.FILE_TXLOG}


def log(*a):
    print(*a, flush=True)


def schema_or_skip(case):
    try:
        return H.Schema(SCHEMA_DIR)
    except FileNotFoundError as e:
        case.skipTest("%s (the reader's schema lands in src/store/; or set ZARRFS_ICECHUNK_SCHEMA_DIR)" % e)


def setUpModule():
    global WORK
    if not F.node_modules_ok():
        raise RuntimeError("Icechunk's npm packages are missing: npm ci --cpu=wasm32 --prefix "
                           "tests/integration/icechunk-js (scripts/test.sh does)")
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-icechunk-data-")
    for spec in (1, 2):
        t0 = time.monotonic()
        d = os.path.join(WORK, "history-v%d" % spec)
        REPOS[spec] = (d, F.history(d, spec))
        log("  history spec %d written in %.1f s" % (spec, time.monotonic() - t0))


def tearDownModule():
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)


# the Python twin of valueAt() in icechunk-js/icechunk_write.mjs
def value_at(dtype, k, seed):
    v = ((k * 7 + seed * 13) % 101) - (0 if dtype.startswith("uint") else 50)
    return v + 0.25 * (k % 4) if dtype.startswith("float") else v


def written(dtype, shape, seed):
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([value_at(dtype, k, seed) for k in range(n)],
                    dtype=F.NUMPY_DTYPES[dtype]).reshape(shape)


class Layout(unittest.TestCase):
    def top_level(self, d):
        return sorted(e for e in os.listdir(d))

    def test_01_top_level_like_icechunk(self):
        want = {1: set(self.top_level(os.path.join(UPSTREAM, "test-repo-v1"))),
                2: set(self.top_level(os.path.join(UPSTREAM, "test-repo-v2")))}
        for spec, (d, _) in REPOS.items():
            with self.subTest(spec=spec):
                self.assertEqual(set(self.top_level(d)), want[spec])

    def test_02_ids_and_headers(self):
        for spec, (d, _) in REPOS.items():
            for folder, ftype in FOLDER_TYPE.items():
                names = os.listdir(os.path.join(d, folder))
                self.assertTrue(names, folder)
                for n in names:
                    with self.subTest(spec=spec, key="%s/%s" % (folder, n)):
                        self.assertRegex(n, ID_RE)
                        with open(os.path.join(d, folder, n), "rb") as f:
                            h = H.header_fields(f.read(H.HEADER_LEN))
                        self.assertEqual((h["spec_version"], h["file_type"], h["compression"]),
                                         (spec, ftype, 1))
                        self.assertEqual(h["writer"], "ic-2.2.2")
            for n in os.listdir(os.path.join(d, "chunks")):
                self.assertRegex(n, ID_RE)
            if spec == 2:
                with open(os.path.join(d, "repo"), "rb") as f:
                    self.assertEqual(H.header_fields(f.read(H.HEADER_LEN))["file_type"], H.FILE_REPO)

    def test_03_spec1_refs(self):
        d, facts = REPOS[1]
        refs = sorted(os.listdir(os.path.join(d, "refs")))
        # a deleted branch leaves its folder without ref.json (files are deleted, folders stay)
        self.assertEqual(refs, ["branch.dev", "branch.gone", "branch.main", "branch.rewound",
                                "tag.deleted", "tag.dev-tag", "tag.it works!", "tag.v1", "tag.v2"])
        self.assertEqual(os.listdir(os.path.join(d, "refs", "branch.gone")), [])
        self.assertEqual(sorted(os.listdir(os.path.join(d, "refs", "tag.deleted"))),
                         ["ref.json", "ref.json.deleted"])
        for r in refs:
            p = os.path.join(d, "refs", r, "ref.json")
            if r == "branch.gone":
                continue
            with open(p) as f:
                sid = json.load(f)["snapshot"]
            self.assertTrue(os.path.exists(os.path.join(d, "snapshots", sid)), r)
            kind, name = r.split(".", 1)
            if kind == "branch":
                self.assertEqual(facts["branches"][name]["head"], sid)
            elif name != "deleted":
                self.assertEqual(facts["tags"][name], sid)


class Facts(unittest.TestCase):
    def test_01_history(self):
        for spec, (d, f) in REPOS.items():
            with self.subTest(spec=spec):
                L = f["labels"]
                msgs = lambda b: [a["message"] for a in f["branches"][b]["ancestry"]]  # noqa: E731
                self.assertEqual(msgs("main"), ["attributes and nodes", "resize arrays", "delete a chunk",
                                                "fill every array", "structure", "Repository initialized"])
                self.assertEqual(msgs("dev"), ["dev: new temperature values and a group", "fill every array",
                                               "structure", "Repository initialized"])
                self.assertEqual(msgs("rewound"), ["structure", "Repository initialized"])
                self.assertEqual(sorted(f["branches"]), ["dev", "main", "rewound"])
                self.assertEqual(f["tags"], {"v1": L["fill"], "v2": L["nodes"], "it works!": L["resize"],
                                             "dev-tag": L["dev"]})
                self.assertEqual(f["branches"]["main"]["head"], L["nodes"])
                for b in f["branches"].values():
                    anc = b["ancestry"]
                    for child, parent in zip(anc, anc[1:]):
                        self.assertEqual(child["parent_id"], parent["id"])
                        self.assertGreater(child["written_at_us"], parent["written_at_us"])
                    self.assertIsNone(anc[-1]["parent_id"])
                    self.assertEqual(anc[-1]["id"], "1CECHNKREP0F1RSTCMT0")
                for s in f["snapshots"].values():
                    self.assertTrue(os.path.exists(os.path.join(d, "snapshots", s["id"])))

    def test_02_values(self):
        for spec, (d, f) in REPOS.items():
            with self.subTest(spec=spec):
                E = lambda label, path: F.expected(f, label, path)  # noqa: E731
                nan = np.full((6, 8), np.nan, "<f4")
                np.testing.assert_array_equal(E("structure", "/grid/temperature"), nan)
                np.testing.assert_array_equal(E("structure", "/grid/counts"), np.full(10, -1, "<i2"))
                self.assertEqual(E("structure", "/scalar"), 7)
                seeds = {"/grid/temperature": 1, "/grid/counts": 2, "/grid/flags": 3, "/pressure": 4,
                         "/ids": 5, "/scalar": 6, "/données/série": 7, "/grid-x": 8}
                for path, seed in seeds.items():
                    doc = f["snapshots"][f["labels"]["fill"]]["nodes"][path]["zarr_json"]
                    np.testing.assert_array_equal(E("fill", path), written(doc["data_type"], doc["shape"], seed),
                                                  err_msg=path)
                counts = written("int16", [10], 2)
                counts[4:8] = -1  # chunk c/1 deleted: the fill value again
                np.testing.assert_array_equal(E("delete_chunk", "/grid/counts"), counts)
                np.testing.assert_array_equal(E("resize", "/grid/counts"), counts[:7])
                t = E("resize", "/grid/temperature")
                self.assertEqual(t.shape, (9, 8))
                np.testing.assert_array_equal(t[:6], written("float32", [6, 8], 1))
                np.testing.assert_array_equal(t[6:], written("float32", [3, 8], 9))
                np.testing.assert_array_equal(E("dev", "/grid/temperature"), written("float32", [6, 8], 21))
                nodes = f["snapshots"][f["labels"]["nodes"]]["nodes"]
                self.assertNotIn("/meta", nodes)
                self.assertIn("/meta", f["snapshots"][f["labels"]["resize"]]["nodes"])
                self.assertEqual(nodes["/"]["zarr_json"]["attributes"]["version"], 2)
                np.testing.assert_array_equal(E("nodes", "/grid/deep/er/nested"), written("int8", [3], 11))
                self.assertIn("/dev_only", f["snapshots"][f["labels"]["dev"]]["nodes"])
                # chunk listing: the deleted chunk is gone; inline (< 40 bytes) and native chunks
                ch = f["snapshots"][f["labels"]["delete_chunk"]]["nodes"]["/grid/counts"]["chunks"]
                self.assertEqual(sorted(ch), ["c/0", "c/2"])
                t = f["snapshots"][f["labels"]["fill"]]["nodes"]
                self.assertEqual(t["/grid/temperature"]["chunks"], {"c/%d/%d" % (i, j): 48 for i in range(2) for j in range(2)})
                self.assertEqual(t["/grid/counts"]["chunks"], {"c/0": 8, "c/1": 8, "c/2": 8})

    def test_03_commit(self):
        d0, _ = REPOS[2]
        d = os.path.join(WORK, "commit-v2")
        shutil.copytree(d0, d)
        before = F.facts(d, values=False)["branches"]["main"]["head"]
        out = F.commit(d, "main", "/grid/temperature", grow=2, seed=5)
        self.assertEqual(out["parent"], before)
        self.assertEqual(out["shape"], [11, 8])
        np.testing.assert_array_equal(np.array(F._numbers(out["values"]), "<f4"), written("float32", [11, 8], 5))
        after = F.facts(d, values=False)
        self.assertEqual(after["branches"]["main"]["head"], out["snapshot"])
        self.assertEqual(after["branches"]["main"]["ancestry"][1]["id"], before)

    def test_04_big_small_sizes(self):
        for spec in (1, 2):
            with self.subTest(spec=spec):
                out = F.big_chunks(os.path.join(WORK, "chunks-v%d" % spec), 2000, spec, split=500)
                self.assertEqual((out["chunks"], out["manifest_files"], out["manifest_refs"],
                                  out["manifest_refs_max"]), (2000, 4, 2000, 500))
                out = F.big_nodes(os.path.join(WORK, "nodes-v%d" % spec), 250, spec)
                self.assertEqual((out["nodes"], out["groups"], out["arrays"]), (250, 4, 246))
        f = F.facts(os.path.join(WORK, "chunks-v2"), values=True)
        node = f["snapshots"][f["branches"]["main"]["head"]]["nodes"]["/big"]
        np.testing.assert_array_equal(np.array(node["values"]), np.arange(8000))


class Hostile(unittest.TestCase):
    def setUp(self):
        self.schema = schema_or_skip(self)

    def out(self, name):
        return os.path.join(WORK, name)

    def test_00_chunk_kinds_and_split(self):
        for spec, (d, f) in REPOS.items():
            with self.subTest(spec=spec):
                snap = H.load(d, "snapshots", f["labels"]["resize"], self.schema)[1]
                refs = H.manifest_refs(H.find_node(snap, "/grid/temperature"))
                self.assertEqual([e for _, e in refs], [[[0, 1], [0, 2]], [[1, 2], [0, 2]], [[2, 3], [0, 2]]])
                kinds = {}
                for path in ("/grid/temperature", "/grid/counts"):
                    node = H.find_node(snap, path)
                    for mid, _ in H.manifest_refs(node):
                        for am in H.load(d, "manifests", mid, self.schema)[1]["arrays"]:
                            if am["node_id"] == node["id"]:
                                kinds.update({(path, tuple(r["index"])): "inline" if "inline_data" in r or "inline" in r else "native"
                                              for r in am["refs"]})
                self.assertEqual(set(k for (p, _), k in kinds.items() if p == "/grid/temperature"), {"native"})
                self.assertEqual(set(k for (p, _), k in kinds.items() if p == "/grid/counts"), {"inline"})

    def test_01_bad_magic(self):
        for spec, (d, _) in REPOS.items():
            r = H.bad_magic_snapshot(d, self.out("magic-%d" % spec), schema_dir=SCHEMA_DIR)
            with open(os.path.join(self.out("magic-%d" % spec), r["key"]), "rb") as f:
                bad = f.read(12)
            with open(os.path.join(d, r["key"]), "rb") as f:
                good = f.read(12)
            self.assertEqual(good, H.MAGIC)
            self.assertNotEqual(bad, H.MAGIC)
            self.assertEqual(r["snapshot"], REPOS[spec][1]["branches"]["main"]["head"])

    def test_02_truncated_manifest(self):
        for spec, (d, _) in REPOS.items():
            o = self.out("trunc-%d" % spec)
            r = H.truncated_manifest(d, o, schema_dir=SCHEMA_DIR)
            with open(os.path.join(o, r["key"]), "rb") as f:
                data = f.read()
            self.assertEqual(len(data), r["bytes_after"])
            self.assertLess(r["bytes_after"], r["bytes_before"])
            p = subprocess.run(["zstd", "-d", "-q", "-c"], input=data[H.HEADER_LEN:], capture_output=True)
            self.assertNotEqual(p.returncode, 0)
            with open(os.path.join(d, r["key"]), "rb") as f:
                ok = subprocess.run(["zstd", "-d", "-q", "-c"], input=f.read()[H.HEADER_LEN:], capture_output=True)
            self.assertEqual(ok.returncode, 0)

    def test_03_overlapping_extents(self):
        for spec, (d, _) in REPOS.items():
            o = self.out("overlap-%d" % spec)
            r = H.overlapping_manifests(d, o, schema_dir=SCHEMA_DIR)
            snap = H.load(o, "snapshots", r["snapshot"], self.schema)[1]
            refs = H.manifest_refs(H.find_node(snap, "/grid/temperature"))
            self.assertEqual(len(refs), 3)
            (m0, e0), (m1, e1) = refs[0], refs[1]
            self.assertNotEqual(m0, m1)
            self.assertTrue(all(max(a[0], b[0]) < min(a[1], b[1]) for a, b in zip(e0, e1)),
                            "extents %s and %s do not overlap" % (e0, e1))
            good = H.manifest_refs(H.find_node(H.load(d, "snapshots", r["snapshot"], self.schema)[1],
                                                "/grid/temperature"))
            self.assertFalse(all(max(a[0], b[0]) < min(a[1], b[1]) for a, b in zip(good[0][1], good[1][1])))

    def test_04_ref_id_wrong_length(self):
        d, _ = REPOS[1]
        for n in (19, 21):
            o = self.out("idlen-%d" % n)
            r = H.ref_id_wrong_length(d, o, length=n)
            with open(os.path.join(o, r["key"])) as f:
                self.assertEqual(len(json.load(f)["snapshot"]), n)
        with self.assertRaises(ValueError):
            H.ref_id_wrong_length(REPOS[2][0], self.out("idlen-v2"))

    def test_05_missing_snapshot(self):
        for spec, (d, _) in REPOS.items():
            for mode in ("delete", "rewrite"):
                o = self.out("missing-%d-%s" % (spec, mode))
                r = H.ref_to_missing_snapshot(d, o, mode=mode, schema_dir=SCHEMA_DIR)
                self.assertEqual(H.branch_snapshot(o, "main", self.schema), r["snapshot"])
                self.assertFalse(os.path.exists(os.path.join(o, "snapshots", r["snapshot"])))


def _watchdog(signum, frame):
    log("FAIL: test_icechunk_data.py took too long")
    os._exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, _watchdog)
    signal.alarm(int(os.environ.get("ZARRFS_TEST_TIMEOUT", "400")))
    prog = unittest.main(verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
