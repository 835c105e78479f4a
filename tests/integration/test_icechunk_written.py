#!/usr/bin/python3
"""Icechunk repositories written by Icechunk 2.2.2 itself (npm, WebAssembly build: see
icechunk_fixtures.py), spec 1 and spec 2, checked through the mount against what Icechunk
reports of them (its facts: every branch's ancestry with ids, messages and commit times, every
tag, deleted tags and branches, every array's values at every snapshot):

* the head of main, `-o ref` (a branch, a tag), and every version under `.icechunk/`: branches,
  tags and snapshots, and each branch's `.log` (ids, ISO 8601 times, messages, newest first);
  deleted tags and branches absent, a branch reset to an older commit showing that commit;
* a mounted branch follows its head: a commit made by Icechunk while mounted (an array grown and
  rewritten) shows after metadata_ttl, with the array's new size, at the root and under
  .icechunk/branches/main, and main.log gains its line;
* hostile copies (icechunk_hostile.py): bad magic in the head snapshot and a ref naming a
  missing snapshot refuse the mount; a truncated manifest and two manifests whose extents
  overlap fail the reads they serve with EIO (logged) while the rest reads (the rows of chunks
  held by one manifest, last first; and every row of the good copy, whose /grid/temperature
  has one manifest per row, last first); a spec-1 ref.json
  naming an id of the wrong length refuses the mount;
* virtual chunks (references made by icechunk_hostile.virtualize, which Icechunk itself reads
  back): an HTTP container served by nginx, authorised, reads the right bytes; with an ETag
  checksum and with a last-modified checksum, a target rewritten afterwards is EIO, never other
  bytes.
"""

import datetime
import errno
import json
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import icechunk_fixtures as icf  # noqa: E402
import icechunk_hostile as ich  # noqa: E402
import remote_servers as rs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.join(HERE, "..", "..", "src", "store")
WORK = None
REPOS = {}  # spec -> (dir, facts)


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-icw-")
    if not icf.node_modules_ok():
        raise RuntimeError("Icechunk's npm packages are missing (scripts/deps.sh installs them)")
    for spec in (1, 2):
        d = os.path.join(WORK, "history-spec%d" % spec)
        REPOS[spec] = (d, icf.history(d, spec=spec))


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pread(path, n, off):
    fd = os.open(path, os.O_RDONLY)
    try:
        return zfmount.pread_full(fd, n, off)
    finally:
        os.close(fd)


def iso(us):
    t = datetime.datetime.fromtimestamp(us // 1000000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (us % 1000000)


def escape(msg):
    return (msg.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r")
            .replace("\n", "\\n"))


def copy_repo(src, name):
    dst = os.path.join(WORK, name)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


class Checks:
    def check_snapshot(self, facts, sid, root, what):
        """Every node of snapshot sid under root: groups as directories with their attributes,
        arrays with Icechunk's values."""
        nodes = facts["snapshots"][sid]["nodes"]
        n = 0
        for path, node in sorted(nodes.items()):
            rel = path.lstrip("/")
            p = os.path.join(root, rel) if rel else root
            doc = node["zarr_json"]
            if node["node_type"] == "group":
                self.assertTrue(os.path.isdir(p), (what, path))
                kids = sorted(k.rsplit("/", 1)[1] for k in nodes
                              if k != path and k.rsplit("/", 1)[0] == (path if path != "/" else ""))
                self.assertEqual(sorted(os.listdir(p)), kids, (what, path))
            else:
                want = icf.expected(facts, sid, path).tobytes()
                self.assertEqual(os.path.getsize(p), len(want), (what, path))
                self.assertEqual(read(p), want, (what, path))
                n += 1
            if rel:
                self.assertEqual(json.loads(os.getxattr(p, "user.zarr.attributes")),
                                 doc.get("attributes", {}), (what, path))
        return n

    def check_log(self, facts, branch, path):
        with open(path, encoding="utf-8") as f:
            lines = [ln.split("\t") for ln in f.read().splitlines()]
        want = [[a["id"], iso(a["written_at_us"]), escape(a["message"])]
                for a in facts["branches"][branch]["ancestry"]]
        self.assertEqual(lines, want, branch)


class Written(zfmount.TestCase, Checks):

    def test_01_every_version(self):
        for spec, (repo, facts) in sorted(REPOS.items()):
            with zfmount.Mount(repo, label="icw-%d" % spec) as m:
                main = facts["branches"]["main"]["head"]
                arrays = self.check_snapshot(facts, main, m.mnt, "main")
                ic = m.path(".icechunk")
                self.assertNotIn(".icechunk", os.listdir(m.mnt))
                branches = sorted(facts["branches"])
                self.assertEqual(sorted(os.listdir(os.path.join(ic, "branches"))),
                                 sorted(branches + [b + ".log" for b in branches]))
                for b in facts.get("deleted_branches", []):
                    self.assertFalse(os.path.exists(os.path.join(ic, "branches", b)), b)
                self.assertEqual(sorted(os.listdir(os.path.join(ic, "tags"))),
                                 sorted(facts["tags"]))
                for t in facts.get("deleted_tags", []):
                    self.assertFalse(os.path.exists(os.path.join(ic, "tags", t)), t)
                for b in branches:
                    self.check_log(facts, b, os.path.join(ic, "branches", b + ".log"))
                    self.check_snapshot(facts, facts["branches"][b]["head"],
                                        os.path.join(ic, "branches", b), "branch " + b)
                for t, sid in sorted(facts["tags"].items()):
                    self.check_snapshot(facts, sid, os.path.join(ic, "tags", t), "tag " + t)
                snaps = set(os.listdir(os.path.join(ic, "snapshots")))
                reachable = {a["id"] for b in facts["branches"].values() for a in b["ancestry"]}
                self.assertTrue(reachable <= snaps, (reachable - snaps))
                for sid in sorted(facts["snapshots"]):
                    self.check_snapshot(facts, sid, os.path.join(ic, "snapshots", sid), sid)
                log("  spec %d: main (%d arrays), %d branches, %d tags, %d snapshots as Icechunk "
                    "reports them" % (spec, arrays, len(branches), len(facts["tags"]),
                                      len(facts["snapshots"])))
            for ref, sid in [("dev", facts["branches"]["dev"]["head"]),
                             ("v1", facts["tags"]["v1"])]:
                with zfmount.Mount(repo, options=["ref=" + ref], label="icw-ref") as m:
                    self.check_snapshot(facts, sid, m.mnt, "-o ref=" + ref)
            with zfmount.Mount(repo, options=["snapshot=" + facts["labels"]["fill"]]) as m:
                self.check_snapshot(facts, facts["labels"]["fill"], m.mnt, "-o snapshot")

    def test_02_branch_follows_head(self):
        for spec in (1, 2):
            repo = copy_repo(REPOS[spec][0], "follow-spec%d" % spec)
            facts = REPOS[spec][1]
            with zfmount.Mount(repo, options=["metadata_ttl=1"], label="icw-follow") as m:
                arr = "grid/temperature"
                before = os.path.getsize(m.path(arr))
                self.assertEqual(read(m.path(arr)), icf.expected(
                    facts, facts["branches"]["main"]["head"], "/" + arr).tobytes())
                first = icf.commit(repo, branch="main", array="/" + arr)
                old = facts["branches"]["main"]["head"]
                self.assertNotEqual(first["snapshot"], old)
                deadline = time.time() + 20
                while True:
                    with open(m.path(".icechunk", "branches", "main.log")) as f:
                        head = f.readline().split("\t")[0]
                    if head == first["snapshot"] or time.time() > deadline:
                        break
                    time.sleep(0.5)
                self.assertEqual(head, first["snapshot"], "main.log did not follow the commit")
                import numpy as np
                dtype = icf.NUMPY_DTYPES[facts["snapshots"][old]["nodes"][first["array"]]
                                         ["zarr_json"]["data_type"]]
                want = np.array(icf._numbers(first["values"]), dtype=dtype).reshape(
                    first["shape"]).tobytes()
                deadline = time.time() + 20
                while os.path.getsize(m.path(arr)) != len(want) and time.time() < deadline:
                    time.sleep(0.5)
                self.assertNotEqual(len(want), before)
                self.assertEqual(os.path.getsize(m.path(arr)), len(want))
                self.assertEqual(read(m.path(arr)), want)
                self.assertEqual(read(m.path(".icechunk", "branches", "main", arr)), want)
                self.assertEqual(read(m.path(".icechunk", "snapshots", old, arr)),
                                 icf.expected(facts, old, first["array"]).tobytes())
            log("  spec %d: a commit made while mounted shows after metadata_ttl (%s: %d -> %d "
                "bytes)" % (spec, arr, before, len(want)))

    def test_03_hostile(self):
        for spec in (1, 2):
            good = REPOS[spec][0]
            out = os.path.join(WORK, "bad-magic-%d" % spec)
            ich.bad_magic_snapshot(good, out, schema_dir=SCHEMA_DIR)
            status, err, mounted = zfmount.expect_refusal(out, timeout=30)
            self.assertEqual((status, mounted), (1, False), err)
            self.assertIn("snapshots/", err)
            out = os.path.join(WORK, "missing-%d" % spec)
            ich.ref_to_missing_snapshot(good, out, schema_dir=SCHEMA_DIR)
            status, err, mounted = zfmount.expect_refusal(out, timeout=30)
            self.assertEqual((status, mounted), (1, False), err)
            out = os.path.join(WORK, "truncated-%d" % spec)
            info = ich.truncated_manifest(good, out, schema_dir=SCHEMA_DIR)
            with zfmount.Mount(out, label="icw-trunc") as m:
                self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
                self.assertIn("manifests/", m.stderr_text())
                for other in os.listdir(m.path("grid")):
                    if other != "temperature" and os.path.isfile(m.path("grid", other)):
                        read(m.path("grid", other))  # siblings keep reading
            out = os.path.join(WORK, "overlap-%d" % spec)
            info = ich.overlapping_manifests(good, out, schema_dir=SCHEMA_DIR)
            facts = REPOS[spec][1]
            want = icf.expected(facts, facts["branches"]["main"]["head"], "/grid/temperature")
            chunk_rows = (facts["snapshots"][facts["branches"]["main"]["head"]]["nodes"]
                          ["/grid/temperature"]["zarr_json"]["chunk_grid"]["configuration"]
                          ["chunk_shape"][0])
            row_bytes = want[0].nbytes
            # direct_io: each pread reaches the daemon as it is (not as whole pages of the file)
            with zfmount.Mount(out, options=["direct_io"], label="icw-overlap") as m:
                self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
                self.assertIn("overlap", m.stderr_text())
                # the rows of chunks held by one manifest only still read, last first
                twice = range(*info["covered_twice"][0])
                once = [i for i in range(-(-want.shape[0] // chunk_rows)) if i not in twice]
                self.assertTrue(once)
                for i in reversed(once):
                    rows = want[i * chunk_rows:(i + 1) * chunk_rows]
                    self.assertEqual(pread(m.path("grid", "temperature"), rows.nbytes,
                                           i * chunk_rows * row_bytes), rows.tobytes())
            with zfmount.Mount(good, options=["direct_io"], label="icw-manifests") as m:
                # one manifest per row of chunks: each row's chunks read last first, so the
                # lookup among the array's manifests starts away from the one that held the last
                for i in reversed(range(-(-want.shape[0] // chunk_rows))):
                    rows = want[i * chunk_rows:(i + 1) * chunk_rows]
                    self.assertEqual(pread(m.path("grid", "temperature"), rows.nbytes,
                                           i * chunk_rows * row_bytes), rows.tobytes())
            if spec == 1:
                out = os.path.join(WORK, "short-id")
                ich.ref_id_wrong_length(good, out)
                status, err, mounted = zfmount.expect_refusal(out, timeout=30)
                self.assertEqual((status, mounted), (1, False), err)
                self.assertIn("ref.json", err)
            log("  spec %d: bad magic, missing snapshot refused; truncated manifest, overlapping "
                "extents EIO (%s)" % (spec, info.get("chunks", "")))

    def test_04_virtual(self):
        for spec in (1, 2):
            good = REPOS[spec][0]
            facts = REPOS[spec][1]
            srv = os.path.join(WORK, "vsrv-%d" % spec)
            os.makedirs(srv, exist_ok=True)
            target = os.path.join(srv, "target.bin")
            head = facts["branches"]["main"]["head"]
            want = icf.expected(facts, head, "/grid/temperature").tobytes()
            chunks = sorted(tuple(int(x) for x in k.split("/")[1:])
                            for k in facts["snapshots"][head]["nodes"]["/grid/temperature"]
                            ["chunks"])
            placed = ich.virtual_target(good, "/grid/temperature", chunks, target,
                                        schema_dir=SCHEMA_DIR)
            ng = rs.Nginx(srv, autoindex=True).start()
            try:
                prefix = ng.url("")
                if not prefix.endswith("/"):
                    prefix += "/"
                st = os.stat(target)
                for check in ("etag", "last_modified"):
                    refs = {}
                    for c, (off, length) in placed.items():
                        r = {"location": prefix + "target.bin", "offset": off, "length": length}
                        if check == "etag":
                            r["etag"] = '"%x-%x"' % (int(st.st_mtime), st.st_size)
                        else:
                            r["last_modified"] = int(st.st_mtime)
                        refs[c] = r
                    out = os.path.join(WORK, "virtual-%d-%s" % (spec, check))
                    ich.virtualize(good, out, "/grid/temperature", refs,
                                   [{"name": None, "url_prefix": prefix, "store": {"http": {}}}],
                                   schema_dir=SCHEMA_DIR)
                    with zfmount.Mount(out, label="icw-virtual") as m:  # not authorised
                        self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
                        self.assertIn(prefix, m.stderr_text())
                    opts = ["virtual_chunks=" + prefix]
                    with zfmount.Mount(out, options=opts, label="icw-virtual-ok") as m:
                        self.assertEqual(read(m.path("grid", "temperature")), want)
                    # the target rewritten (same bytes, later time): the checksum fails
                    os.utime(target, (st.st_atime + 10, st.st_mtime + 10))
                    try:
                        with zfmount.Mount(out, options=opts, label="icw-virtual-changed") as m:
                            self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
                            self.assertIn("changed" if check == "etag" else "modified",
                                          m.stderr_text())
                    finally:
                        os.utime(target, (st.st_atime, st.st_mtime))
            finally:
                ng.stop()
            log("  spec %d: virtual chunks over HTTP: authorised -> Icechunk's values; not "
                "authorised, or the target changed (ETag, last-modified) -> EIO" % spec)

    def check_virtual_in_cloud(self, kind, prefix, store_cfg, endpoint_opt, upload, rewrite,
                               changed_word):
        """Virtual chunks of /grid/temperature in one object of a cloud container: upload(key,
        data) stores it and returns the reference's checksum fields ({"etag": ...} or
        {"last_modified": seconds}); rewrite(key, data) stores it again, a version the checksum
        refuses (the log then says changed_word)."""
        for spec in (1, 2):
            good, facts = REPOS[spec]
            head = facts["branches"]["main"]["head"]
            want = icf.expected(facts, head, "/grid/temperature").tobytes()
            chunks = sorted(tuple(int(x) for x in k.split("/")[1:])
                            for k in facts["snapshots"][head]["nodes"]["/grid/temperature"]
                            ["chunks"])
            target = os.path.join(WORK, "%s-target-%d.bin" % (kind, spec))
            placed = ich.virtual_target(good, "/grid/temperature", chunks, target,
                                        schema_dir=SCHEMA_DIR)
            with open(target, "rb") as f:
                data = f.read()
            checksum = upload("v%d/target.bin" % spec, data)
            refs = {c: dict({"location": prefix + "v%d/target.bin" % spec, "offset": off,
                             "length": length}, **checksum)
                    for c, (off, length) in placed.items()}
            out = os.path.join(WORK, "virtual-%s-%d" % (kind, spec))
            ich.virtualize(good, out, "/grid/temperature", refs,
                           [{"name": None, "url_prefix": prefix, "store": store_cfg}],
                           schema_dir=SCHEMA_DIR)
            opts = ["virtual_chunks=" + prefix, "virtual_endpoint=%s=%s" % (prefix, endpoint_opt)]
            with zfmount.Mount(out, options=opts[1:], label="icw-%s-no" % kind) as m:
                self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
            with zfmount.Mount(out, options=opts, label="icw-%s" % kind) as m:
                self.assertEqual(read(m.path("grid", "temperature")), want)
            rewrite("v%d/target.bin" % spec, data)  # same bytes, another version: refused
            with zfmount.Mount(out, options=opts, label="icw-%s-changed" % kind) as m:
                self.assertErrno(errno.EIO, read, m.path("grid", "temperature"))
                self.assertIn(changed_word, m.stderr_text())
        log("  virtual chunks in %s containers (%s): read when authorised, EIO when not or "
            "when the object changed" % (kind, prefix))

    def test_05_virtual_azure(self):
        with rs.Azurite() as az:
            cl = az.client()
            cl.create_container("vchunks", public=True)
            self.check_virtual_in_cloud(
                "azure", "az://vchunks/", {"azure": {"account": rs.AZ_ACCOUNT}}, az.endpoint(),
                lambda key, data: {"etag": cl.put("vchunks", key, data)},
                lambda key, data: cl.put("vchunks", key, data), "changed")

    def test_06_virtual_gcs(self):
        """GCS: zarrfs's GCS store tells versions by generation, so the references' checksum
        here is a last-modified time (an ETag checksum of a GCS object is refused: EIO)."""
        import gcs_servers as gs

        def updated(meta):
            t = datetime.datetime.strptime(meta["updated"][:19], "%Y-%m-%dT%H:%M:%S")
            return int(t.replace(tzinfo=datetime.timezone.utc).timestamp())

        emu = gs.GcsEmulator().start()
        try:
            cl = gs.GcsClient(emu.port)

            def rewrite(key, data):
                time.sleep(1.1)  # a later second than the reference's time
                cl.put("vchunks", key, data)

            self.check_virtual_in_cloud(
                "gcs", "gcs://vchunks/", {"gcs": {}}, emu.endpoint(),
                lambda key, data: {"last_modified": updated(cl.put("vchunks", key, data))},
                rewrite, "modified")
            cl.close()
        finally:
            emu.stop()


if __name__ == "__main__":
    zfmount.main()
