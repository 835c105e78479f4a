"""Broken copies of good Icechunk repositories, for the zarrfs integration tests.

Each producer takes a good repository directory (as `icechunk_fixtures.history` writes it: the
plain file layout of Icechunk's local file-system storage) and an output directory, copies the
repository there and breaks one thing, and returns a dict saying what it broke (keys, ids, chunk
coordinates) so a test can aim at it:

  bad_magic_snapshot        a snapshot file whose magic bytes are wrong
  truncated_manifest        a manifest file whose zstd payload is cut short
  overlapping_manifests     two ManifestRefs of one array in a snapshot covering the same chunk
  ref_id_wrong_length       (spec 1) a ref.json whose snapshot id has the wrong number of characters
  ref_to_missing_snapshot   a branch naming a snapshot that has no file
  virtual_target + virtualize
                            chunks turned into virtual references (location, offset, length and
                            an ETag or last-modified checksum) to an object holding their bytes,
                            with a virtual chunk container for the location in the configuration
  relocate_virtual          (not a breakage) every virtual location under one URL prefix moved
                            under another, e.g. to serve a fixture's targets from 127.0.0.1

The navigation helpers are for readers too (bench/bench_icechunk.py builds plain Zarr v3 copies
of repositories with them): branch_snapshot, load and load_many (many files per zstd and flatc
run), find_node, manifest_refs, chunk_bytes.

Icechunk files (spec "Binary File Format"): a 39-byte header — 12 bytes of magic `ICE🧊CHUNK`,
24 bytes naming the writer (right-padded with spaces), the spec version, the file type (1
snapshot, 2 manifest, 4 transaction log, 6 repo info), the compression (0 none, 1 zstd) — then a
FlatBuffers payload, zstd-compressed. Payloads are decoded and re-encoded with `flatc` (Debian's
flatbuffers-compiler) and the schema the zarrfs reader itself is built from: by default the
`*.fbs` files of this repository's `src/store/` (pass `schema_dir` to use others, e.g. Icechunk's
own schemas). Tables are found by name (`Snapshot`, `Manifest`, `Repo`) in whichever file declares
them, in whatever namespace; a schema that declares only some fields re-encodes only those (what
the reader reads). zstd runs through the `zstd` command (Debian's zstd).

Nothing here comes from zarrfs: the good repositories are Icechunk's, the edits follow the spec.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SCHEMA_DIR = os.path.join(REPO_ROOT, "src", "store")

HEADER_LEN = 39
MAGIC = "ICE🧊CHUNK".encode()  # 49 43 45 F0 9F A7 8A 43 48 55 4E 4B
FILE_SNAPSHOT, FILE_MANIFEST, FILE_TXLOG, FILE_REPO = 1, 2, 4, 6
assert len(MAGIC) == 12

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


# --------------------------------------------------------------------------------------------
# ids


def id_text(raw):
    """Crockford base32 of an id's bytes (12 bytes -> 20 characters), no padding."""
    n, bits = int.from_bytes(raw, "big"), len(raw) * 8
    pad = (5 - bits % 5) % 5
    n <<= pad
    nchars = (bits + pad) // 5
    return "".join(CROCKFORD[(n >> (5 * (nchars - 1 - i))) & 31] for i in range(nchars))


def id_bytes(text, nbytes=12):
    n = 0
    for c in text.upper():
        n = n * 32 + CROCKFORD.index(c)
    pad = len(text) * 5 - nbytes * 8
    if pad < 0 or n & ((1 << pad) - 1):
        raise ValueError("not the text of a %d-byte id: %r" % (nbytes, text))
    return (n >> pad).to_bytes(nbytes, "big")


def new_id_text(exclude=()):
    while True:
        t = id_text(os.urandom(12))
        if t not in exclude:
            return t


# --------------------------------------------------------------------------------------------
# files: header + zstd + FlatBuffers


def zstd(data, decompress=False):
    args = ["zstd", "-q", "-c"] + (["-d"] if decompress else ["-3"])
    r = subprocess.run(args, input=data, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("zstd failed: %s" % r.stderr.decode(errors="replace"))
    return r.stdout


def read_object(path):
    """(header bytes, decompressed payload) of an Icechunk file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER_LEN or data[:12] != MAGIC:
        raise ValueError("%s: not an Icechunk file" % path)
    header = data[:HEADER_LEN]
    payload = data[HEADER_LEN:]
    if header[38] == 1:
        payload = zstd(payload, decompress=True)
    return header, payload


def read_objects(paths, batch=1000):
    """read_object() of many files, with one zstd run per `batch` of compressed payloads."""
    out = [None] * len(paths)
    todo = []
    for i, p in enumerate(paths):
        with open(p, "rb") as f:
            data = f.read()
        if len(data) < HEADER_LEN or data[:12] != MAGIC:
            raise ValueError("%s: not an Icechunk file" % p)
        out[i] = (data[:HEADER_LEN], data[HEADER_LEN:])
        if data[38] == 1:
            todo.append(i)
    for b0 in range(0, len(todo), batch):
        with tempfile.TemporaryDirectory() as tmp:
            names = []
            for i in todo[b0:b0 + batch]:
                names.append("p%d.zst" % i)
                with open(os.path.join(tmp, names[-1]), "wb") as f:
                    f.write(out[i][1])
            r = subprocess.run(["zstd", "-q", "-d", "--rm"] + names, cwd=tmp, capture_output=True,
                               timeout=600)
            if r.returncode != 0:
                raise RuntimeError("zstd failed: %s" % r.stderr.decode(errors="replace"))
            for i in todo[b0:b0 + batch]:
                with open(os.path.join(tmp, "p%d" % i), "rb") as f:
                    out[i] = (out[i][0], f.read())
    return out


def write_object(path, header, payload):
    """Write header + payload, compressed as the header's compression byte says."""
    if header[38] == 1:
        payload = zstd(payload)
    with open(path, "wb") as f:
        f.write(bytes(header) + payload)


def header_fields(header):
    return {"writer": header[12:36].decode().rstrip(" "), "spec_version": header[36],
            "file_type": header[37], "compression": header[38]}


class Schema:
    """flatc over the schema files of one directory: decode(table, payload) -> dict and
    encode(table, dict) -> payload, for the tables Snapshot, Manifest, Repo."""

    def __init__(self, schema_dir=None):
        self.dir = os.path.abspath(schema_dir or DEFAULT_SCHEMA_DIR)
        files = sorted(f for f in os.listdir(self.dir) if f.endswith(".fbs")) \
            if os.path.isdir(self.dir) else []
        if not files:
            raise FileNotFoundError("no FlatBuffers schema (*.fbs) in %s" % self.dir)
        self.tables = {}  # name -> (file, namespace-qualified name)
        for f in files:
            with open(os.path.join(self.dir, f), encoding="utf-8") as fh:
                text = re.sub(r"//[^\n]*", "", fh.read())
            ns = re.search(r"^\s*namespace\s+([\w.]+)\s*;", text, re.M)
            for m in re.finditer(r"^\s*table\s+(\w+)", text, re.M):
                name = m.group(1)
                q = "%s.%s" % (ns.group(1), name) if ns else name
                self.tables.setdefault(name, (os.path.join(self.dir, f), q))
        self.flexbuffer_config = False
        if "Repo" in self.tables:
            with open(self.tables["Repo"][0], encoding="utf-8") as fh:
                t = re.sub(r"//[^\n]*", "", fh.read())
            self.flexbuffer_config = bool(re.search(r"\bconfig\s*:\s*\[u?int8\]\s*\([^)]*flexbuffer",
                                                    t.replace("ubyte", "uint8")))

    def _flatc(self, args, cwd):
        r = subprocess.run(["flatc"] + args, capture_output=True, timeout=120, cwd=cwd)
        if r.returncode != 0:
            raise RuntimeError("flatc %s failed: %s%s" % (" ".join(args), r.stdout.decode(errors="replace"),
                                                         r.stderr.decode(errors="replace")))

    def _schema_for(self, table):
        if table not in self.tables:
            raise KeyError("no table %s in the schemas of %s" % (table, self.dir))
        return self.tables[table]

    def decode(self, table, payload):
        schema, qname = self._schema_for(table)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "in.bin"), "wb") as f:
                f.write(payload)
            self._flatc(["--json", "--raw-binary", "--strict-json", "-I", self.dir,
                         "--root-type", qname, "-o", tmp, schema, "--", "in.bin"], tmp)
            with open(os.path.join(tmp, "in.json"), encoding="utf-8") as f:
                return json.load(f)

    def decode_many(self, table, payloads, batch=1000):
        """decode() of many payloads of one table, with one flatc run per `batch` of them."""
        schema, qname = self._schema_for(table)
        out = []
        for b0 in range(0, len(payloads), batch):
            with tempfile.TemporaryDirectory() as tmp:
                names = []
                for i, p in enumerate(payloads[b0:b0 + batch]):
                    names.append("p%d.bin" % i)
                    with open(os.path.join(tmp, names[-1]), "wb") as f:
                        f.write(p)
                self._flatc(["--json", "--raw-binary", "--strict-json", "-I", self.dir,
                             "--root-type", qname, "-o", tmp, schema, "--"] + names, tmp)
                for n in names:
                    with open(os.path.join(tmp, n[:-4] + ".json"), encoding="utf-8") as f:
                        out.append(json.load(f))
        return out

    def encode(self, table, obj):
        schema, qname = self._schema_for(table)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "in.json"), "w", encoding="utf-8") as f:
                json.dump(obj, f)
            self._flatc(["-b", "-I", self.dir, "--root-type", qname, "-o", tmp, schema, "in.json"], tmp)
            with open(os.path.join(tmp, "in.bin"), "rb") as f:
                return f.read()


def _flexbuffer(value=None, raw=None):
    """FlexBuffers through flatc and a one-field schema: the bytes of JSON-compatible `value`,
    or the value of the bytes `raw`."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, attr in (("flex.fbs", " (flexbuffer)"), ("raw.fbs", "")):
            with open(os.path.join(tmp, name), "w") as f:
                f.write("table T { v: [ubyte]%s; }\nroot_type T;\n" % attr)
        run = lambda a: subprocess.run(["flatc"] + a, cwd=tmp, capture_output=True, timeout=60, check=True)
        if raw is None:
            with open(os.path.join(tmp, "t.json"), "w") as f:
                json.dump({"v": value}, f)
            run(["-b", "flex.fbs", "t.json"])
            run(["--json", "--raw-binary", "--strict-json", "raw.fbs", "--", "t.bin"])
            with open(os.path.join(tmp, "t.json")) as f:
                return bytes(json.load(f)["v"])
        with open(os.path.join(tmp, "t.json"), "w") as f:
            json.dump({"v": list(raw)}, f)
        run(["-b", "raw.fbs", "t.json"])
        run(["--json", "--raw-binary", "--strict-json", "flex.fbs", "--", "t.bin"])
        with open(os.path.join(tmp, "t.json")) as f:
            return json.load(f).get("v")


# --------------------------------------------------------------------------------------------
# navigating a repository


def spec_version(repo):
    """2 when the repository has a repo info file, 1 when it has refs/ (spec 1)."""
    if os.path.exists(os.path.join(repo, "repo")):
        return header_fields(read_object(os.path.join(repo, "repo"))[0])["spec_version"]
    if os.path.isdir(os.path.join(repo, "refs")):
        return 1
    raise ValueError("%s: not an Icechunk repository" % repo)


def branch_snapshot(repo, branch, schema):
    """The snapshot id (text) a branch names."""
    if spec_version(repo) == 1:
        with open(os.path.join(repo, "refs", "branch." + branch, "ref.json")) as f:
            return json.load(f)["snapshot"]
    r = schema.decode("Repo", read_object(os.path.join(repo, "repo"))[1])
    for b in r["branches"]:
        if b["name"] == branch:
            return id_text(bytes(r["snapshots"][b.get("snapshot_index", 0)]["id"]["bytes"]))
    raise KeyError("no branch %r" % branch)


def load(repo, kind, ident, schema):
    """(header, decoded table) of snapshots/ID or manifests/ID."""
    table = {"snapshots": "Snapshot", "manifests": "Manifest"}[kind]
    header, payload = read_object(os.path.join(repo, kind, ident))
    return header, schema.decode(table, payload)


def load_many(repo, kind, idents, schema):
    """{id: decoded table} of many snapshots/ID or manifests/ID (read_objects, decode_many)."""
    table = {"snapshots": "Snapshot", "manifests": "Manifest"}[kind]
    objs = read_objects([os.path.join(repo, kind, i) for i in idents])
    return dict(zip(idents, schema.decode_many(table, [p for _h, p in objs])))


def store(repo, kind, ident, header, obj, schema):
    table = {"snapshots": "Snapshot", "manifests": "Manifest"}[kind]
    write_object(os.path.join(repo, kind, ident), header, schema.encode(table, obj))


def find_node(snap, path):
    for n in snap["nodes"]:
        if n["path"] == path:
            return n
    raise KeyError("no node %s in the snapshot" % path)


def manifest_refs(node):
    """The ManifestRefs of an array node: [(manifest id text, [[from, to] per dimension])]."""
    data = node.get("node_data") or {}
    return [(id_text(bytes(m["object_id"]["bytes"])),
             [[e.get("from", 0), e.get("to", 0)] for e in m["extents"]]) for m in data.get("manifests", [])]


def _copy(good, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(good, out, symlinks=True)


# --------------------------------------------------------------------------------------------
# the producers


def bad_magic_snapshot(good, out, branch="main", schema_dir=None):
    """The branch head's snapshot file with one magic byte changed ('ICE' -> 'ICF')."""
    _copy(good, out)
    sid = branch_snapshot(out, branch, Schema(schema_dir))
    p = os.path.join(out, "snapshots", sid)
    with open(p, "r+b") as f:
        f.seek(2)
        f.write(b"F")
    return {"key": "snapshots/" + sid, "snapshot": sid, "branch": branch}


def truncated_manifest(good, out, array="/grid/temperature", branch="main", keep=0.5,
                       schema_dir=None):
    """One manifest of `array` in the branch head: its compressed payload cut to `keep` of its
    length (the header left whole). Returns the manifest id and the chunk extents it served."""
    schema = Schema(schema_dir)
    _copy(good, out)
    sid = branch_snapshot(out, branch, schema)
    _, snap = load(out, "snapshots", sid, schema)
    refs = manifest_refs(find_node(snap, array))
    if not refs:
        raise ValueError("%s has no manifest in %s" % (array, sid))
    mid, extents = refs[0]
    p = os.path.join(out, "manifests", mid)
    with open(p, "rb") as f:
        data = f.read()
    body = data[HEADER_LEN:]
    with open(p, "wb") as f:
        f.write(data[:HEADER_LEN] + body[:max(1, int(len(body) * keep))])
    return {"key": "manifests/" + mid, "manifest": mid, "snapshot": sid, "array": array,
            "extents": extents, "bytes_before": len(data), "bytes_after": HEADER_LEN + max(1, int(len(body) * keep))}


def overlapping_manifests(good, out, array="/grid/temperature", branch="main", schema_dir=None):
    """In the branch head's snapshot, the second ManifestRef of `array` widened (its `from` in
    every dimension lowered to the first's) so that both cover the first's chunks. The snapshot
    keeps its id. Returns the extents before and after and the chunks covered twice."""
    schema = Schema(schema_dir)
    _copy(good, out)
    sid = branch_snapshot(out, branch, schema)
    header, snap = load(out, "snapshots", sid, schema)
    node = find_node(snap, array)
    ms = node["node_data"]["manifests"]
    if len(ms) < 2:
        raise ValueError("%s has %d ManifestRef(s): nothing to overlap" % (array, len(ms)))
    before = [[[e.get("from", 0), e.get("to", 0)] for e in m["extents"]] for m in ms]
    for e0, e1 in zip(ms[0]["extents"], ms[1]["extents"]):
        e1["from"] = min(e0.get("from", 0), e1.get("from", 0))
        e1["to"] = max(e0.get("to", 0), e1.get("to", 0))
    after = [[[e.get("from", 0), e.get("to", 0)] for e in m["extents"]] for m in ms]
    store(out, "snapshots", sid, header, snap, schema)
    both = [[max(a[0], b[0]), min(a[1], b[1])] for a, b in zip(after[0], after[1])]
    return {"key": "snapshots/" + sid, "snapshot": sid, "array": array,
            "manifests": [id_text(bytes(m["object_id"]["bytes"])) for m in ms],
            "extents_before": before, "extents_after": after, "covered_twice": both}


def ref_id_wrong_length(good, out, ref="branch.main", length=19):
    """(spec 1) refs/REF/ref.json naming an id of `length` characters: the real id cut short or
    padded with '0'."""
    if spec_version(good) != 1:
        raise ValueError("ref.json files are spec 1; %s is spec %d" % (good, spec_version(good)))
    _copy(good, out)
    p = os.path.join(out, "refs", ref, "ref.json")
    with open(p) as f:
        sid = json.load(f)["snapshot"]
    bad = (sid + "0" * length)[:length]
    with open(p, "w") as f:
        json.dump({"snapshot": bad}, f)
    return {"key": "refs/%s/ref.json" % ref, "snapshot": bad, "was": sid}


def ref_to_missing_snapshot(good, out, branch="main", mode="delete", schema_dir=None):
    """A branch whose snapshot has no file. mode "delete": the branch head's snapshot file is
    removed; "rewrite": the branch names a fresh random id (spec 1: ref.json; spec 2: that
    snapshot's id in the repo info file, so every ref to it names the new id)."""
    schema = Schema(schema_dir)
    _copy(good, out)
    sid = branch_snapshot(out, branch, schema)
    existing = set(os.listdir(os.path.join(out, "snapshots")))
    if mode == "delete":
        os.unlink(os.path.join(out, "snapshots", sid))
        return {"key": "snapshots/" + sid, "snapshot": sid, "branch": branch}
    if mode != "rewrite":
        raise ValueError("mode is delete or rewrite")
    new = new_id_text(existing)
    if spec_version(out) == 1:
        with open(os.path.join(out, "refs", "branch." + branch, "ref.json"), "w") as f:
            json.dump({"snapshot": new}, f)
    else:
        header, payload = read_object(os.path.join(out, "repo"))
        r = schema.decode("Repo", payload)
        for s in r["snapshots"]:
            if id_text(bytes(s["id"]["bytes"])) == sid:
                s["id"]["bytes"] = list(id_bytes(new))
        write_object(os.path.join(out, "repo"), header, schema.encode("Repo", r))
    return {"snapshot": new, "was": sid, "branch": branch}


def chunk_bytes(repo, ref):
    """The stored (encoded) bytes of a decoded ChunkRef: inline, or its range of chunks/ID."""
    for k in ("inline_data", "inline"):  # this repository's schema; Icechunk's
        if k in ref:
            return bytes(ref[k])
    if "chunk_id" in ref:
        with open(os.path.join(repo, "chunks", id_text(bytes(ref["chunk_id"]["bytes"]))), "rb") as f:
            f.seek(ref.get("offset", 0))
            return f.read(ref.get("length", 0))
    raise ValueError("chunk %s is already virtual" % ref["index"])


def _array_chunk_refs(repo, snap, array, schema):
    """{coords tuple: (manifest id, header, manifest, array manifest, ref)} of an array."""
    node = find_node(snap, array)
    node_id = node["id"]["bytes"]
    out = {}
    for mid, _ in manifest_refs(node):
        header, man = load(repo, "manifests", mid, schema)
        for am in man["arrays"]:
            if am["node_id"]["bytes"] == node_id:
                for ref in am["refs"]:
                    out[tuple(ref["index"])] = (mid, header, man, am, ref)
    return out


def virtual_target(good, array, chunks, target_file, branch="main", schema_dir=None):
    """Write the stored (encoded) bytes of `array`'s chunks `chunks` (coordinate tuples), one
    after the other, into target_file; returns {coords: (offset, length)} for virtualize()."""
    schema = Schema(schema_dir)
    snap = load(good, "snapshots", branch_snapshot(good, branch, schema), schema)[1]
    refs = _array_chunk_refs(good, snap, array, schema)
    placed, off = {}, 0
    with open(target_file, "wb") as f:
        f.write(b"virtual chunks of %s\n" % array.encode())  # so no chunk starts at 0
        off = f.tell()
        for c in chunks:
            b = chunk_bytes(good, refs[tuple(c)][4])
            f.write(b)
            placed[tuple(c)] = (off, len(b))
            off += len(b)
    return placed


def _container_config_yaml(text, containers):
    """config.yaml with its virtual_chunk_containers replaced by `containers`."""
    lines, skip = [], False
    for ln in text.splitlines():
        if ln.startswith("virtual_chunk_containers:"):
            skip = True
            continue
        if skip and (ln.startswith(" ") or ln.startswith("-")):
            continue
        skip = False
        lines.append(ln)
    lines.append("virtual_chunk_containers:")
    for c in containers:
        (kind, opts), = c["store"].items()
        lines.append("  %s:" % json.dumps(c.get("name") or c["url_prefix"]))
        lines.append("    name: %s" % json.dumps(c.get("name")))
        lines.append("    url_prefix: %s" % json.dumps(c["url_prefix"]))
        lines.append("    store: !%s %s" % (kind, json.dumps(opts)))
    return "\n".join(lines) + "\n"


def set_containers(repo, containers, schema_dir=None):
    """Replace the repository's virtual chunk containers. Each container is
    {"name": str or None, "url_prefix": "http://127.0.0.1:8080/", "store": {KIND: OPTIONS}} with
    Icechunk's store kinds: {"http": {}}, {"local_file_system": "/path"},
    {"s3_compatible": {"region": ..., "endpoint_url": ..., "anonymous": ..., "allow_http": ...,
    "force_path_style": ...}}, {"s3": {...}}, ... Spec 1: config.yaml (YAML tags for the kind);
    spec 2: the configuration FlexBuffer in the repo info file."""
    if spec_version(repo) == 1:
        p = os.path.join(repo, "config.yaml")
        text = ""
        if os.path.exists(p):
            with open(p) as fh:
                text = fh.read()
        with open(p, "w") as f:
            f.write(_container_config_yaml(text, containers))
        return
    schema = Schema(schema_dir)
    header, payload = read_object(os.path.join(repo, "repo"))
    r = schema.decode("Repo", payload)
    cfg = r.get("config")
    if isinstance(cfg, list):
        cfg = _flexbuffer(raw=bytes(cfg))
    cfg = dict(cfg or {})
    cfg["virtual_chunk_containers"] = {
        c["url_prefix"]: {"name": c.get("name"), "url_prefix": c["url_prefix"], "store": c["store"]}
        for c in containers}
    r["config"] = cfg if schema.flexbuffer_config else list(_flexbuffer(value=cfg))
    write_object(os.path.join(repo, "repo"), header, schema.encode("Repo", r))


def virtualize(good, out, array, refs, containers, branch="main", schema_dir=None):
    """Copy `good` to `out` and turn chunks of `array` (in the branch head's manifests) into
    virtual references: refs = {coords tuple: {"location": URL, "offset": N, "length": N,
    "etag": str (optional), "last_modified": seconds since 1970 (optional)}}. Each manifest
    changed is written under a new id that the head snapshot (same id, edited) names instead, with
    its size in the snapshot's manifest_files (Icechunk reads a manifest by the size recorded
    there: a size that differs is an error to it); older snapshots are unchanged. `containers`
    become the repository's virtual chunk containers (set_containers). Returns the manifests
    renamed ({old id: new id}) and the chunks changed."""
    schema = Schema(schema_dir)
    _copy(good, out)
    sid = branch_snapshot(out, branch, schema)
    sheader, snap = load(out, "snapshots", sid, schema)
    found = _array_chunk_refs(out, snap, array, schema)
    touched = {}
    for coords, v in refs.items():
        mid, header, man, am, ref = found[tuple(coords)]
        for k in ("inline", "inline_data", "chunk_id", "compressed_location", "checksum_etag", "checksum_last_modified"):
            ref.pop(k, None)
        ref["location"] = v["location"]
        ref["offset"] = v["offset"]
        ref["length"] = v["length"]
        if v.get("etag") is not None:
            ref["checksum_etag"] = v["etag"]
        if v.get("last_modified") is not None:
            ref["checksum_last_modified"] = int(v["last_modified"])
        touched[mid] = (header, man)
    # each changed manifest is written under a new id that only the head snapshot names, so
    # older snapshots sharing the manifest keep their native chunks
    existing = set(os.listdir(os.path.join(out, "manifests")))
    renamed = {}
    for mid, (header, man) in touched.items():
        if any("compressed_location" in r for am in man["arrays"] for r in am["refs"]):
            raise ValueError("manifest %s has compressed locations: not handled" % mid)
        new = new_id_text(existing)
        existing.add(new)
        renamed[mid] = new
        man["id"]["bytes"] = list(id_bytes(new))
        man["compression_algorithm"] = 0
        store(out, "manifests", new, header, man, schema)
        size = os.path.getsize(os.path.join(out, "manifests", new))
        for key in ("manifest_files", "manifest_files_v2"):
            for mf in snap.get(key) or []:
                if id_text(bytes(mf["id"]["bytes"])) == mid:
                    mf["id"]["bytes"] = list(id_bytes(new))
                    mf["size_bytes"] = size
        for m in find_node(snap, array)["node_data"]["manifests"]:
            if id_text(bytes(m["object_id"]["bytes"])) == mid:
                m["object_id"]["bytes"] = list(id_bytes(new))
    for key in ("manifest_files", "manifest_files_v2"):  # sorted by id (Icechunk searches them)
        if snap.get(key):
            snap[key].sort(key=lambda mf: bytes(mf["id"]["bytes"]))
    store(out, "snapshots", sid, sheader, snap, schema)
    set_containers(out, containers, schema_dir)
    return {"snapshot": sid, "array": array, "manifests": renamed,
            "chunks": {"/".join(map(str, c)): v for c, v in refs.items()}}


def relocate_virtual(good, out, old_prefix, new_prefix, containers=None, schema_dir=None):
    """Not a breakage: copy `good` to `out` with every virtual chunk location starting with
    old_prefix moved under new_prefix (e.g. https://github.com/ -> http://127.0.0.1:PORT/, to
    serve a fixture's targets locally), in every manifest (ids kept; each snapshot's
    manifest_files sizes updated, since Icechunk reads a manifest by its recorded size), and
    `containers` (default: one HTTP container for new_prefix) as the configuration's virtual
    chunk containers. Checksums are kept: a last-modified checksum holds only while the served
    file's mtime is not later than it. Returns {"manifests": ids changed, "locations": count}."""
    schema = Schema(schema_dir)
    _copy(good, out)
    sizes, n = {}, 0
    for mid in sorted(os.listdir(os.path.join(out, "manifests"))):
        header, man = load(out, "manifests", mid, schema)
        changed = False
        for am in man["arrays"]:
            for ref in am["refs"]:
                if "compressed_location" in ref:
                    raise ValueError("manifest %s has compressed locations: not handled" % mid)
                loc = ref.get("location")
                if loc is not None and loc.startswith(old_prefix):
                    ref["location"] = new_prefix + loc[len(old_prefix):]
                    changed = True
                    n += 1
        if changed:
            store(out, "manifests", mid, header, man, schema)
            sizes[mid] = os.path.getsize(os.path.join(out, "manifests", mid))
    for sid in sorted(os.listdir(os.path.join(out, "snapshots"))):
        header, snap = load(out, "snapshots", sid, schema)
        hit = False
        for key in ("manifest_files", "manifest_files_v2"):
            for mf in snap.get(key) or []:
                t = id_text(bytes(mf["id"]["bytes"]))
                if t in sizes:
                    mf["size_bytes"] = sizes[t]
                    hit = True
        if hit:
            store(out, "snapshots", sid, header, snap, schema)
    set_containers(out, containers or [{"name": None, "url_prefix": new_prefix, "store": {"http": {}}}],
                   schema_dir)
    return {"manifests": sorted(sizes), "locations": n}


def _main():
    import argparse
    ap = argparse.ArgumentParser(description="decode an Icechunk file to JSON (header and payload)")
    ap.add_argument("file")
    ap.add_argument("--schema-dir", default=None)
    a = ap.parse_args()
    header, payload = read_object(a.file)
    h = header_fields(header)
    table = {FILE_SNAPSHOT: "Snapshot", FILE_MANIFEST: "Manifest", FILE_REPO: "Repo"}.get(h["file_type"])
    body = Schema(a.schema_dir).decode(table, payload) if table else base64.b64encode(payload).decode()
    print(json.dumps({"header": h, "payload": body}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    _main()
