"""Icechunk repositories written by Icechunk itself, for the integration tests and benchmarks.

Drives `icechunk-js/icechunk_write.mjs` (Icechunk 2.2.2's npm package, WebAssembly build, with
zarrita 0.7.5; installed by `npm ci --cpu=wasm32 --prefix tests/integration/icechunk-js`, which
scripts/deps.sh's zf_install_js_deps runs). Each repository is a plain directory laid out as
Icechunk's local file-system storage lays it out (spec 2: `repo`, `snapshots/ID`, `manifests/ID`,
`chunks/ID`, `transactions/ID`, `overwritten/`; spec 1: `config.yaml`, `refs/branch.NAME/ref.json`,
`refs/tag.NAME/ref.json`, a deleted tag's `ref.json.deleted` beside its `ref.json`).

  history(dir, spec)            the versioned repository the tests mount; returns its facts
  facts(dir, virtual=None)      what Icechunk reports of any repository it can open
  commit(dir, branch, ...)      one more commit (an array grows and changes) while mounted
  big_nodes(dir, n, spec)       n nodes (groups and 4-element arrays) in one commit
  big_chunks(dir, n, spec, ...) one array of n chunks, references split over several manifests
  load_plain(dir, plain, ...)   every key of a plain Zarr v3 directory store set through Icechunk
  cached(kind, work_dir, ...)   a big repository made once under work_dir and reused
  expected(facts, snapshot, path)  an array's values at a snapshot as a numpy array (the dtype
                                of its zarr.json, little-endian: zarrfs's flat encoding)

The facts (history's `DIR.facts.json`) are Icechunk's own answers, read back through Icechunk
and zarrita, never zarrfs's:

  {"writer", "spec_version", "inline_chunk_threshold_bytes",
   "labels": {"init", "structure", "fill", "delete_chunk", "resize", "nodes", "dev": snapshot id},
   "branches": {NAME: {"head": id, "ancestry": [{"id", "parent_id", "message", "written_at"
                (Icechunk's RFC 3339 text), "written_at_us" (microseconds since 1970),
                "metadata"}, ... newest first]}},
   "tags": {NAME: id}, "deleted_tags": [...], "deleted_branches": [...],
   "snapshots": {ID: {"id", "parent_id", "message", "written_at", "written_at_us", "metadata",
                "manifest_files": [{"id", "size_bytes", "num_chunk_refs"}],
                "nodes": {PATH: {"node_type", "zarr_json" (the document Icechunk returns),
                         arrays: "chunks": {"c/0/1": stored bytes}, "values": nested lists}}}}}

Values: integers as JSON numbers (int64 beyond 2^53 as strings), floats with NaN and the
infinities as "NaN", "Infinity", "-Infinity"; a 0-d array's value is a scalar.

Timing on the 2-core machine (node 20, wasm32): history 2 s per spec, commit 1.3 s, facts 1 s,
big_nodes(10^4) 13 s (Icechunk writes one manifest per array: 9,899 manifest files),
big_chunks(10^5) 12 s (8 manifests of 12,500 inline references, 1.7 MB); both specs alike.

    /usr/bin/python3 tests/integration/icechunk_fixtures.py history /tmp/h2 --spec 2
    /usr/bin/python3 tests/integration/icechunk_fixtures.py big /tmp/b --nodes 10000
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "icechunk-js")
WRITER = os.path.join(JS, "icechunk_write.mjs")
NODE_TIMEOUT = float(os.environ.get("ZARRFS_ICECHUNK_TIMEOUT", "600"))


def node_modules_ok():
    """True when the Icechunk npm packages are installed (npm ci --cpu=wasm32 in icechunk-js)."""
    return all(os.path.isdir(os.path.join(JS, "node_modules", p)) for p in
               ("@earthmover/icechunk", "@earthmover/icechunk-wasm32-wasi", "zarrita"))


def _run(args, timeout=NODE_TIMEOUT):
    if not node_modules_ok():
        raise RuntimeError("Icechunk's npm packages are missing: npm ci --cpu=wasm32 --prefix %s" % JS)
    r = subprocess.run(["node", "--no-warnings", WRITER] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("icechunk_write.mjs %s failed (%d): %s%s" % (
            " ".join(map(str, args)), r.returncode, r.stdout, r.stderr))
    return r.stdout


def _facts_file(dir_):
    return dir_.rstrip("/") + ".facts.json"


def history(dir_, spec=2, facts_file=None):
    """Write the history repository into the empty or missing dir_; return its facts (also in
    facts_file, default DIR.facts.json)."""
    facts_file = facts_file or _facts_file(dir_)
    _run(["history", dir_, "--spec", spec, "--facts", facts_file])
    with open(facts_file) as f:
        return json.load(f)


def facts(dir_, facts_file=None, values=True, virtual=None):
    """Icechunk's facts of the repository at dir_ (see the module docstring). virtual =
    (URL_PREFIX, LOCAL_DIR): HTTP virtual chunks under URL_PREFIX are read from LOCAL_DIR, with
    nginx's checksums (ETag "MTIME-SIZE" in hex, Last-Modified = the file's mtime), which
    Icechunk checks against the references'."""
    facts_file = facts_file or _facts_file(dir_)
    args = ["facts", dir_, "--facts", facts_file]
    if not values:
        args.append("--no-values")
    if virtual:
        args += ["--virtual", "%s=%s" % virtual]
    _run(args)
    with open(facts_file) as f:
        return json.load(f)


def commit(dir_, branch="main", array=None, grow=1, seed=31):
    """One more commit on `branch`: `array` (default: the first array of one dimension or more
    in path order) grows by `grow` along its first dimension and gets new values. Returns
    {"snapshot", "parent", "branch", "array", "shape", "values"} as Icechunk reads it back."""
    args = ["commit", dir_, "--branch", branch, "--grow", grow, "--seed", seed]
    if array:
        args += ["--array", array]
    return json.loads(_run(args).strip().splitlines()[-1])


def big_nodes(dir_, n=10000, spec=2):
    return json.loads(_run(["big", dir_, "--spec", spec, "--nodes", n]).strip().splitlines()[-1])


def big_chunks(dir_, n=100000, spec=2, split=None, inline_threshold=512):
    args = ["big", dir_, "--spec", spec, "--chunks", n, "--inline-threshold", inline_threshold]
    if split:
        args += ["--split", split]
    return json.loads(_run(args).strip().splitlines()[-1])


def load_plain(dir_, plain_dir, spec=2, inline_threshold=None):
    """A repository holding the keys of the plain Zarr v3 directory store plain_dir (its
    zarr.json documents and chunk files, set through Icechunk's store as a Zarr library would)
    in one commit on main; returns what the writer printed."""
    args = ["load", dir_, "--spec", spec, "--from", plain_dir]
    if inline_threshold is not None:
        args += ["--inline-threshold", inline_threshold]
    return json.loads(_run(args).strip().splitlines()[-1])


def _writer_stamp():
    with open(os.path.join(JS, "package-lock.json"), "rb") as f:
        lock = f.read()
    with open(WRITER, "rb") as f:
        src = f.read()
    import hashlib
    return hashlib.sha256(lock + src).hexdigest()[:16]


def cached(kind, work_dir, **kw):
    """A repository made once under work_dir and reused while the writer and its lock file are
    unchanged: kind "nodes" (big_nodes), "chunks" (big_chunks) or "history". Returns
    (directory, what the writer printed)."""
    name = "%s-%s" % (kind, "-".join("%s%s" % (k, kw[k]) for k in sorted(kw)) or "default")
    d = os.path.join(work_dir, "icechunk", name)
    stamp = d + ".json"
    want = _writer_stamp()
    if os.path.exists(stamp):
        with open(stamp) as f:
            saved = json.load(f)
        if saved.get("writer") == want and os.path.isdir(d):
            return d, saved["info"]
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    info = {"nodes": big_nodes, "chunks": big_chunks, "history": history}[kind](d, **kw)
    with open(stamp, "w") as f:
        json.dump({"writer": want, "info": info}, f)
    return d, info


# --------------------------------------------------------------------------------------------
# expected arrays

NUMPY_DTYPES = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
                "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
                "float32": "<f4", "float64": "<f8"}


def _number(v):
    if isinstance(v, str):  # "NaN", "Infinity", "-Infinity", or an integer beyond 2^53
        return float(v) if v in ("NaN", "Infinity", "-Infinity") else int(v)
    return v


def _numbers(v):
    return [_numbers(x) for x in v] if isinstance(v, list) else _number(v)


def expected(facts_, snapshot, path):
    """numpy array of `path` at `snapshot` (an id, or a label of facts["labels"]), from the facts:
    the shape and data type of its zarr.json, little-endian, C order — the bytes zarrfs's array
    file must hold (`.tobytes()`)."""
    import numpy as np
    sid = facts_.get("labels", {}).get(snapshot, snapshot)
    node = facts_["snapshots"][sid]["nodes"][path]
    doc = node["zarr_json"]
    a = np.array(_numbers(node["values"]), dtype=NUMPY_DTYPES[doc["data_type"]])
    return a.reshape(doc["shape"])


def _main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["history", "facts", "commit", "big"])
    ap.add_argument("dir")
    ap.add_argument("--spec", type=int, default=2)
    ap.add_argument("--branch", default="main")
    ap.add_argument("--array")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--chunks", type=int)
    a = ap.parse_args()
    if a.command == "history":
        f = history(a.dir, a.spec)
        print("%s: spec %d, branches %s, tags %s; facts in %s" % (
            a.dir, f["spec_version"], sorted(f["branches"]), sorted(f["tags"]), _facts_file(a.dir)))
    elif a.command == "facts":
        facts(a.dir)
        print(_facts_file(a.dir))
    elif a.command == "commit":
        print(json.dumps(commit(a.dir, a.branch, a.array)))
    elif a.nodes:
        print(json.dumps(big_nodes(a.dir, a.nodes, a.spec)))
    elif a.chunks:
        print(json.dumps(big_chunks(a.dir, a.chunks, a.spec)))
    else:
        sys.exit("big needs --nodes N or --chunks N")


if __name__ == "__main__":
    _main()
