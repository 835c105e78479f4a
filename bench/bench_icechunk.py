#!/usr/bin/python3
"""Icechunk repositories against plain Zarr v3 directory stores holding the same chunk bytes,
through zarrfs, side by side in one run (the targets of the Icechunk issue):

  1. reading a whole array from a repository >= 0.9x the same chunks from a plain v3 store,
     cached and with -o direct_io, with the minimal passthrough (bench/passthrough.c) serving
     the raw bytes as the FUSE limit;
  2. `ls -R` and `ls -lR` (a stat of every node) of a 10^4-node repository <= the plain store;
  3. the daemon's peak RSS (VmHWM) reading the array of 10^5 chunks (parsed manifests are kept
     within a quarter of -o cache_size), at the run's cache_size and at a small one.

Data, in ZF_BENCH_DIR/icechunk (made once, reused while their stamps match):

  dense-CODEC-ROWS   Icechunk 2.2.2 (npm, WebAssembly; tests/integration/icechunk_fixtures.py
                     load_plain) holding one float32 array /a of harness.py's values (ROWS x
                     16384, the generator and seed every driver uses) in chunks of 512 x 512
                     (1 MiB), codecs `bytes` and, for zstd, `zstd` level 1: its chunk bytes are
                     encoded here with numcodecs, staged as a plain v3 store and set key by key
                     through Icechunk's store (what a Zarr library writing to Icechunk does);
                     Icechunk writes them as native chunk files (`chunks/ID`), one manifest
  chunks-n100000-splitS  icechunk_fixtures.big_chunks: /big, int32, 10^5 chunks of 4 elements
                     (16 bytes, inline in the manifests), element k holding k, references in
                     manifests of S chunks each (ZF_BENCH_IC_SPLITS: 12,500 -> 8 manifests, Icechunk's
                     writer's default here; 100 -> 1,000 manifests)
  nodes-n10000       icechunk_fixtures.big_nodes: 10^4 nodes (101 groups, 9,899 arrays of 4
                     int32 in one inline chunk each; 9,899 manifests)

and each one's plain twin NAME.plain, built from the repository's files alone, not by zarrfs:
the branch head's snapshot and every manifest it names decoded with icechunk_hostile.py (flatc
and the reader's schema, zstd), each node's zarr.json written from its user_data, each chunk's
bytes (inline, or its range of chunks/ID) written to PATH/c/I/J (the zarr.json's chunk key
encoding). Checked once per run: both mounts of each pair give the same bytes, equal to the
expected values (the raw file of the generator; for /big, k at element k), and the same tree
(`find -printf '%P %y %s'`) for the nodes.

Per repetition, the sides in alternating order, each on a fresh mount (empty caches, no page
cache for the mounted file; read_ahead_kb set to ZF_BENCH_READAHEAD_KB when it can be):

  reads      the whole array file with 4 MiB readv()s into one reused buffer, ZF_BENCH_COLD_
             PRETOUCH of memory touched and freed before each dense read: Icechunk and plain,
             cached (-o cache_size=...) and -o direct_io; the passthrough over the raw file,
             cached and direct (dense arrays only). Daemon CPU over the read, VmHWM at the end
  small      the 10^5-chunk array again with -o cache_size=ZF_BENCH_IC_SMALL_CACHE (both sides)
  listing    fresh daemon, mount (polled every 2 ms), then `ls -R MNT` and, on another fresh
             mount, `ls -lR MNT`, each timed apart from the mount

Ratios Icechunk / plain per repetition (per pair of walks for the listing), then the median
(reads: MB/s, > 1 Icechunk faster; listing: seconds, < 1 Icechunk faster). Knobs:

  ZF_BENCH_IC_MIB=256         dense array size (a multiple of 512 rows of 64 KiB)
  ZF_BENCH_IC_CODECS=none,zstd
  ZF_BENCH_IC_CHUNKS=100000   chunks of /big;  ZF_BENCH_IC_NODES=10000  nodes of the listing
  ZF_BENCH_IC_SPLITS=12500,100  chunk references per manifest of /big, one repository each
  ZF_BENCH_IC_WALKS=3         pairs of walks (Icechunk, plain) per repetition and command
  ZF_BENCH_IC_SMALL_CACHE=4M  the small cache_size of the memory check ("" skips it)
  ZF_BENCH_IC_PARTS=dense,chunks,nodes,small
  ZF_BENCH_IC_PERF=           comma list of cases to profile after the repetitions, one more
                              Icechunk read each under `perf record -e cpu-clock -g`: dense-none,
                              dense-zstd, chunks-SPLIT, ls, ls-l (or "all"); reports in results/
  ZF_BENCH_READAHEAD_KB=1024, ZF_BENCH_COLD_PRETOUCH=2G, ZF_BENCH_REPS=5, ZF_BENCH_DIR,
  ZF_BENCH_CACHE=2G, ZARRFS, ZF_PASSTHROUGH (default build/bench/zf_passthrough; skipped when
  missing), ZF_BENCH_IC_BASELINE=OTHER/zarrfs: another binary (the code before a change)
  reading the Icechunk side too (reads and walks; its figures beside Icechunk's)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import harness as H  # noqa: E402
import icechunk_fixtures as F  # noqa: E402
import icechunk_hostile as IH  # noqa: E402

READ_TARGET = 0.9     # Icechunk / plain, MB/s
LIST_TARGET = 1.0     # Icechunk / plain, seconds
DENSE_CHUNK = (512, 512)
CODEC_LABEL = {"none": "none", "zstd": "zstd 1"}
GEN_VERSION = 1       # bump when the dense data or its layout change


# ---------------------------------------------------------------------------- data

def v3_codecs(codec):
    c = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if codec == "zstd":
        c.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    return c


def stage_dense(path, raw, rows, codec):
    """A plain v3 store (root group, array /a) of the raw file's values in 1 MiB chunks, the
    chunk bytes encoded with numcodecs: what is set through Icechunk's store."""
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(os.path.join(path, "a"))
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    doc = {"zarr_format": 3, "node_type": "array", "shape": [rows, H.COLS],
           "data_type": "float32",
           "chunk_grid": {"name": "regular",
                          "configuration": {"chunk_shape": list(DENSE_CHUNK)}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": 0.0, "codecs": v3_codecs(codec), "attributes": {},
           "dimension_names": ["y", "x"]}
    with open(os.path.join(path, "a", "zarr.json"), "w") as f:
        json.dump(doc, f)
    comp = None
    if codec == "zstd":
        from numcodecs import Zstd
        comp = Zstd(level=1)
    a = np.memmap(raw, dtype="<f4", mode="r", shape=(rows, H.COLS))
    cr, cc = DENSE_CHUNK
    for i in range(rows // cr):
        os.makedirs(os.path.join(path, "a", "c", str(i)))
        for j in range(H.COLS // cc):
            b = np.ascontiguousarray(a[i * cr:(i + 1) * cr, j * cc:(j + 1) * cc]).tobytes()
            with open(os.path.join(path, "a", "c", str(i), str(j)), "wb") as f:
                f.write(comp.encode(b) if comp else b)


def dense_repo(work, raw, rows, codec, seed):
    """The Icechunk repository of the dense array (made once): (directory, writer's facts)."""
    d = os.path.join(work, "dense-%s-%d" % (codec, rows))
    want = {"version": GEN_VERSION, "writer": F._writer_stamp(), "rows": rows, "seed": seed,
            "codec": codec, "chunk": list(DENSE_CHUNK)}
    stamp = d + ".json"
    if os.path.isdir(d) and os.path.exists(stamp):
        with open(stamp) as f:
            saved = json.load(f)
        if saved.get("want") == want:
            return d, saved["info"]
    t0 = time.perf_counter()
    H.log("  writing %s (Icechunk 2.2.2, %s, %d MiB) ..." % (d, CODEC_LABEL[codec],
                                                            rows * H.COLS * 4 // H.MiB))
    for p in (d, stamp):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.unlink(p)
    staging = d + ".staging"
    stage_dense(staging, raw, rows, codec)
    info = F.load_plain(d, staging, spec=2)
    shutil.rmtree(staging)
    with open(stamp, "w") as f:
        json.dump({"want": want, "info": info}, f)
    H.log("  ... %.1f s: %s" % (time.perf_counter() - t0, json.dumps(info)))
    return d, info


def chunk_key(doc, coords):
    """The key of a chunk below its array, from the zarr.json's chunk_key_encoding (v3 core)."""
    enc = doc.get("chunk_key_encoding") or {"name": "default"}
    sep = (enc.get("configuration") or {}).get("separator")
    if enc["name"] == "v2":
        return (sep or ".").join(map(str, coords)) if coords else "0"
    if enc["name"] != "default":
        raise ValueError("chunk key encoding %r" % enc["name"])
    return (sep or "/").join(["c"] + [str(c) for c in coords])


def plain_twin(repo, out):
    """The plain v3 directory store of the repository's main head, from its files alone
    (icechunk_hostile: flatc and the reader's schema): made once per snapshot. Returns out."""
    schema = IH.Schema()
    sid = IH.branch_snapshot(repo, "main", schema)
    stamp = out + ".json"
    if os.path.isdir(out) and os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f).get("snapshot") == sid:
                return out
    t0 = time.perf_counter()
    H.log("  writing %s from %s's snapshot %s ..." % (out, repo, sid))
    if os.path.exists(out):
        shutil.rmtree(out)
    _h, snap = IH.load(repo, "snapshots", sid, schema)
    arrays = {}
    for n in snap["nodes"]:
        doc = json.loads(bytes(n.get("user_data") or []))
        if doc.get("node_type") == "array":
            arrays[tuple(n["id"]["bytes"])] = (n, doc)
    mids = sorted({mid for n, _d in arrays.values() for mid, _e in IH.manifest_refs(n)})
    refs = {}
    for _mid, man in IH.load_many(repo, "manifests", mids, schema).items():
        for am in man["arrays"]:
            refs.setdefault(tuple(am["node_id"]["bytes"]), []).extend(am["refs"])
    nchunks = 0
    for n in snap["nodes"]:
        d = os.path.join(out, n["path"].lstrip("/"))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "zarr.json"), "wb") as f:
            f.write(bytes(n["user_data"]))
        if tuple(n["id"]["bytes"]) not in arrays:
            continue
        doc = arrays[tuple(n["id"]["bytes"])][1]
        for ref in refs.get(tuple(n["id"]["bytes"]), []):
            p = os.path.join(d, chunk_key(doc, ref["index"]))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(IH.chunk_bytes(repo, ref))
            nchunks += 1
    with open(stamp, "w") as f:
        json.dump({"snapshot": sid, "nodes": len(snap["nodes"]), "chunks": nchunks}, f)
    H.log("  ... %.1f s: %d nodes, %d chunks" % (time.perf_counter() - t0, len(snap["nodes"]),
                                                  nchunks))
    return out


# ---------------------------------------------------------------------------- mounts and reads

def mount(cfg, side, store, mnt, logfile, direct=False, cache=None, one_file=True, binary=None):
    """A fresh mount: zarrfs (side "ic", "plain", "base") or the passthrough ("pt") of store."""
    if side == "pt":
        cmd = [cfg["passthrough"], store, mnt, "-f", "-o", "max_read=1048576"]
        if direct:
            cmd += ["-o", "direct_io"]
        d = H.Daemon(cmd, mnt, logfile, one_file=one_file)
    else:
        c = dict(cfg, zarrfs=binary or cfg["zarrfs"])
        if cache:
            c["cache_size"] = cache
        d = H.zarrfs_daemon(c, store, mnt, logfile, opts=("direct_io" if direct else "",),
                            one_file=one_file)
    if cfg["readahead_kb"]:
        try:
            d.readahead_kb(cfg["readahead_kb"])
        except Exception:
            pass
    return d


def one_read(cfg, side, store, mnt, logfile, nbytes, pretouch, direct, cache=None, binary=None):
    """{mbps, s, cpu, hwm_mib} of one whole-file read on a fresh mount."""
    with mount(cfg, side, store, mnt, logfile, direct, cache, binary=binary) as d:
        if os.path.getsize(d.file) != nbytes:
            raise RuntimeError("%s: size %d, expected %d" % (d.file, os.path.getsize(d.file),
                                                             nbytes))
        buf = bytearray(cfg["bs"])
        H.pretouch(pretouch)
        c0 = d.cpu_s()
        with H.Watchdog(d, "read %s" % store, cfg["phase_timeout"]):
            t = H.read_reused(d.file, nbytes, cfg["bs"], buf)
        return {"mbps": H.mbps(nbytes, t), "s": t, "cpu": (d.cpu_s() - c0) / t,
                "hwm_mib": d.hwm_mib()}


def one_walk(cfg, side, store, mnt, logfile, cmd, binary=None):
    """{mount_s, walk_s, total_s, cpu, hwm_mib} of `cmd MNT` on a fresh daemon."""
    t0 = time.perf_counter()
    with mount(cfg, side, store, mnt, logfile, one_file=False, binary=binary) as d:
        t1 = time.perf_counter()
        c0 = d.cpu_s()
        with H.Watchdog(d, "%s %s" % (" ".join(cmd), store), cfg["phase_timeout"]):
            subprocess.run(cmd + [mnt], stdout=subprocess.DEVNULL, check=True,
                           timeout=cfg["phase_timeout"])
        t2 = time.perf_counter()
        return {"mount_s": t1 - t0, "walk_s": t2 - t1, "total_s": t2 - t0,
                "cpu": (d.cpu_s() - c0) / (t2 - t1), "hwm_mib": d.hwm_mib()}


def same_file(cfg, stores, mnt, logfile, expected):
    """Both mounts give the same bytes, equal to `expected` (a path or a uint8 array)."""
    ref = None
    if isinstance(expected, str):
        ref = np.memmap(expected, dtype=np.uint8, mode="r")
    else:
        ref = expected
    for side, store in stores:
        with mount(cfg, side, store, mnt, logfile) as d:
            H.check_blocks("%s (%s)" % (d.file, store), d.file, ref)
    # and the two mounts against each other, block by block
    with mount(cfg, stores[0][0], stores[0][1], mnt, logfile) as d0:
        m2 = mnt + "-2"
        os.makedirs(m2, exist_ok=True)
        with mount(cfg, stores[1][0], stores[1][1], m2, logfile) as d1:
            with open(d0.file, "rb") as f, open(d1.file, "rb") as g:
                off = 0
                while True:
                    x, y = f.read(16 * H.MiB), g.read(16 * H.MiB)
                    if x != y:
                        raise RuntimeError("%s and %s differ near byte %d" % (d0.file, d1.file,
                                                                             off))
                    if not x:
                        break
                    off += len(x)


def same_tree(cfg, stores, mnt, logfile, nodes):
    """Both mounts list the same paths, kinds and sizes: `nodes` nodes (the root included)."""
    trees = []
    for side, store in stores:
        with mount(cfg, side, store, mnt, logfile, one_file=False) as d:
            r = subprocess.run(["find", mnt, "-printf", "%P %y %s\n"], capture_output=True,
                               text=True, check=True, timeout=cfg["phase_timeout"])
            lines = sorted(ln for ln in r.stdout.splitlines()
                           if not os.path.basename(ln.split(" ")[0]).startswith("."))
            trees.append(lines)
            del d
    if trees[0] != trees[1]:
        diff = sorted(set(trees[0]) ^ set(trees[1]))[:5]
        raise RuntimeError("the trees differ: %s" % diff)
    if len(trees[0]) != nodes:
        raise RuntimeError("%d nodes listed, expected %d" % (len(trees[0]), nodes))


# ---------------------------------------------------------------------------- perf

def profile(cfg, name, mount_fn, work_fn, results_dir, stamp):
    """work_fn(daemon) -> seconds, run once on a fresh Icechunk mount (mount_fn()) under `perf
    record -e cpu-clock --call-graph dwarf -p DAEMON` (no hardware PMU on these VMs: cpu-clock;
    zarrfs is built without frame pointers: DWARF unwinding); the flat report, the inclusive one
    and the call graphs go to RESULTS/perf-STAMP-NAME.txt."""
    base = os.path.join(results_dir, "perf-%s-%s" % (stamp, name))
    out = {"file": base + ".txt", "data": base + ".data"}
    os.makedirs(results_dir, exist_ok=True)
    d = mount_fn()
    with d:
        try:
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "--call-graph",
                                     "dwarf,16384", "-p", str(d.pid), "-o", out["data"]], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            out["error"] = "perf cannot run: %s (apt-get install -y linux-perf)" % e
            return out
        time.sleep(1.0)
        if perf.poll() is not None:
            out["error"] = "perf record exited: %s" % perf.stdout.read().strip()[-500:]
            return out
        c0 = d.cpu_s()
        out["s"] = work_fn(d)
        out["daemon_cpu_s"] = d.cpu_s() - c0
        perf.send_signal(signal.SIGINT)
        out["perf_record"] = perf.communicate(timeout=120)[0].strip()[-500:]
    flat = subprocess.run(["perf", "report", "-i", out["data"], "--stdio", "--no-children",
                           "-g", "none", "--percent-limit", "0.5"],
                          capture_output=True, text=True, timeout=300)
    graph = subprocess.run(["perf", "report", "-i", out["data"], "--stdio", "--no-children",
                            "--percent-limit", "2"], capture_output=True, text=True, timeout=300)
    kids = subprocess.run(["perf", "report", "-i", out["data"], "--stdio", "--children",
                           "-g", "none", "--percent-limit", "2"],
                          capture_output=True, text=True, timeout=300)
    entries = [ln for ln in flat.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
    out["top"] = entries[:12]
    with open(out["file"], "w") as f:
        f.write("# zarrfs (Icechunk) %s under perf record -e cpu-clock --call-graph dwarf -p "
                "<daemon>: %.3f s, "
                "daemon CPU %.2f s\n# %s\n\n" % (name, out["s"], out["daemon_cpu_s"],
                                                 out["perf_record"].replace("\n", " ")))
        f.write("## perf report --stdio --no-children -g none\n\n")
        f.write("\n".join(entries[:80]) + "\n\n")
        f.write("## perf report --stdio --children -g none (inclusive, >= 1%)\n\n")
        f.write("\n".join(ln for ln in kids.stdout.splitlines()
                          if ln.strip() and not ln.startswith("#")) + "\n\n")
        f.write("## perf report --stdio --no-children --percent-limit 2 (call graphs)\n\n")
        f.write("\n".join(graph.stdout.splitlines()[:800]) + "\n")
    H.log("  perf %s: %s (%.3f s under perf); top: %s"
          % (name, out["file"], out["s"], " | ".join(" ".join(e.split()) for e in entries[:4])))
    return out


# ---------------------------------------------------------------------------- report

def fmt(mbps):
    return "%.0f" % mbps if mbps >= 100 else "%.2g" % mbps if mbps < 1 else "%.1f" % mbps


def render(data):
    res, cfg = data["results"], data["config"]
    out = []
    reads = [k for k in res if k.startswith("read/")]
    base = bool(cfg.get("baseline"))
    if reads:
        out.append("| array | mode | Icechunk MB/s | plain v3 MB/s | **Icechunk / plain** "
                   "(target) | spread |%s passthrough MB/s | Icechunk / passthrough | daemon CPU "
                   "Icechunk / plain | VmHWM MiB Icechunk / plain |"
                   % (" baseline Icechunk MB/s (Icechunk / baseline) |" if base else ""))
        out.append("|---|---|--:|--:|--:|--:|%s--:|--:|--:|--:|" % ("--:|" if base else ""))
        for k in reads:
            m, r = res[k]["summary"]["median"], res[k]["summary"]
            pt = "pt_mbps" in m
            out.append("| %s | %s | %s | %s | **%.3f** (≥ %.1f %s) | %s |%s %s | %s | "
                       "%.0f%% / %.0f%% | %.0f / %.0f |"
                       % (res[k]["what"], res[k]["mode"], fmt(m["ic_mbps"]), fmt(m["plain_mbps"]),
                          m["ratio"], READ_TARGET, "✓" if m["ratio"] >= READ_TARGET else "✗",
                          H.rng(r, "ratio", "%.3f"),
                          " %s (%.2f) |" % (fmt(m["base_mbps"]), m["ic_vs_base"]) if base else "",
                          "%.0f" % m["pt_mbps"] if pt else "–",
                          "%.2f" % m["ic_vs_pt"] if pt else "–", 100 * m["ic_cpu"],
                          100 * m["plain_cpu"], m["ic_hwm_mib"], m["plain_hwm_mib"]))
    walks = [k for k in res if k.startswith("list/")]
    if walks:
        out.append("")
        out.append("| command (10^4 nodes) | Icechunk walk s | plain v3 walk s | **Icechunk / "
                   "plain** (target) | spread |%s mount s Icechunk / plain | mount + walk "
                   "Icechunk / plain | daemon CPU Icechunk / plain |"
                   % (" baseline Icechunk walk s |" if base else ""))
        out.append("|---|--:|--:|--:|--:|%s--:|--:|--:|" % ("--:|" if base else ""))
        for k in walks:
            m, r = res[k]["summary"]["median"], res[k]["summary"]
            out.append("| `%s` | %.3f | %.3f | **%.3f** (≤ %.1f %s) | %s |%s %.3f / %.3f | "
                       "%.3f / %.3f (%.2f) | %.0f%% / %.0f%% |"
                       % (res[k]["what"], m["ic_walk_s"], m["plain_walk_s"], m["ratio"],
                          LIST_TARGET, "✓" if m["ratio"] <= LIST_TARGET else "✗",
                          H.rng(r, "ratio", "%.3f"),
                          " %.3f |" % m["base_walk_s"] if base else "",
                          m["ic_mount_s"], m["plain_mount_s"],
                          m["ic_total_s"], m["plain_total_s"], m["total_ratio"],
                          100 * m["ic_cpu"], 100 * m["plain_cpu"]))
    mem = [k for k in res if k.startswith("read/chunks") or k.startswith("small/")]
    if mem:
        out.append("")
        out.append("| read of the array of 16-byte chunks | mode | cache_size | manifest budget | "
                   "Icechunk VmHWM MiB | plain v3 VmHWM MiB | Icechunk MB/s | plain MB/s |")
        out.append("|---|---|--:|--:|--:|--:|--:|--:|")
        for k in mem:
            m = res[k]["summary"]["median"]
            cs = res[k].get("cache_size", cfg["cache_size"])
            out.append("| %s | %s | %s | %s | %.0f (max %.0f) | %.0f (max %.0f) | %.1f | %.1f |"
                       % (res[k]["what"], res[k]["mode"], cs, res[k].get("budget", "?"),
                          m["ic_hwm_mib"],
                          res[k]["summary"]["max"]["ic_hwm_mib"], m["plain_hwm_mib"],
                          res[k]["summary"]["max"]["plain_hwm_mib"], m["ic_mbps"],
                          m["plain_mbps"]))
    return "\n".join(out)


def budget_text(cache_size):
    return "%.3g MiB" % (H.parse_size(cache_size) / 4 / H.MiB)


# ---------------------------------------------------------------------------- main

def main():
    if H.report_cli(render):
        return
    cfg = H.knobs(5, mib=H.env("ZF_BENCH_IC_MIB", 256, int),
                  codecs=[c for c in H.env("ZF_BENCH_IC_CODECS", "none,zstd").split(",") if c],
                  nchunks=H.env("ZF_BENCH_IC_CHUNKS", 100000, int),
                  splits=[int(x) for x in H.env("ZF_BENCH_IC_SPLITS", "12500,100").split(",")
                          if x],
                  nnodes=H.env("ZF_BENCH_IC_NODES", 10000, int),
                  small_cache=H.env("ZF_BENCH_IC_SMALL_CACHE", "4M"),
                  walks=H.env("ZF_BENCH_IC_WALKS", 3, int),
                  parts=H.env("ZF_BENCH_IC_PARTS", "dense,chunks,nodes,small").split(","),
                  perf=H.env("ZF_BENCH_IC_PERF", ""),
                  readahead_kb=H.env("ZF_BENCH_READAHEAD_KB", 1024, int),
                  pretouch=H.parse_size(H.env("ZF_BENCH_COLD_PRETOUCH", "2G")),
                  passthrough=H.env("ZF_PASSTHROUGH", H.DEFAULT_PASSTHROUGH),
                  baseline=H.env("ZF_BENCH_IC_BASELINE", ""))
    if os.geteuid() != 0:
        cfg["readahead_kb"] = 0
    rows = H.rows_for(cfg["mib"] * H.MiB, multiple=DENSE_CHUNK[0])
    nbytes = rows * H.COLS * 4
    parts = set(cfg["parts"])
    s = H.Session("bench_icechunk", cfg)
    s.intro("Icechunk repositories (Icechunk 2.2.2, npm wasm32) vs plain Zarr v3 stores of the "
            "same chunk bytes; %d MiB float32 in 1 MiB chunks (%s), %d chunks of 16 bytes, %d "
            "nodes; %d repetitions" % (nbytes // H.MiB, ",".join(cfg["codecs"]), cfg["nchunks"],
                                       cfg["nnodes"], cfg["reps"]))
    if not F.node_modules_ok():
        sys.exit("bench_icechunk: Icechunk's npm packages are missing: "
                 "(. scripts/deps.sh; zf_install_js_deps)")
    work = os.path.join(cfg["dir"], "icechunk")
    results_dir = os.path.join(work, "results")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(work, "daemons.log")
    use_pt = os.access(cfg["passthrough"], os.X_OK)
    stamp = s.started.strftime("%Y%m%dT%H%M%S")

    # data (made once) and the checks (every run)
    t0 = time.perf_counter()
    cases = []        # (key, what, mode, ic, plain, nbytes, pretouch, direct, raw or None)
    repos = {}
    raw = None
    if "dense" in parts:
        raw = H.write_raw(os.path.join(work, "raw-%d.f32" % rows), rows, cfg["seed"])
        for codec in cfg["codecs"]:
            ic, info = dense_repo(work, raw, rows, codec, cfg["seed"])
            pl = plain_twin(ic, ic + ".plain")
            repos["dense-" + codec] = {"repo": ic, "plain": pl, "info": info}
            H.prewarm(ic)
            H.prewarm(pl)
            same_file(cfg, [("ic", ic), ("plain", pl)], mnt, logfile, raw)
            what = "%d MiB float32, 1 MiB chunks, %s" % (nbytes // H.MiB, CODEC_LABEL[codec])
            for direct in (False, True):
                cases.append(("read/dense-%s/%s" % (codec, "direct" if direct else "cached"),
                              what, "direct_io" if direct else "cached", ic, pl, nbytes,
                              cfg["pretouch"], direct, raw))
    for split in cfg["splits"] if parts & {"chunks", "small"} else []:
        name = "chunks-%d" % split
        ic, info = F.cached("chunks", cfg["dir"], n=cfg["nchunks"], split=split)
        pl = plain_twin(ic, ic + ".plain")
        repos[name] = {"repo": ic, "plain": pl, "info": info}
        H.prewarm(ic)
        H.prewarm(pl)
        cb = 16 * cfg["nchunks"]
        same_file(cfg, [("ic", ic), ("plain", pl)], mnt, logfile,
                  np.arange(4 * cfg["nchunks"], dtype="<i4").view(np.uint8))
        what = "%d chunks of 16 bytes (int32), %d manifests" % (cfg["nchunks"],
                                                                info["manifest_files"])
        if "chunks" in parts:
            for direct in (False, True):
                cases.append(("read/%s/%s" % (name, "direct" if direct else "cached"), what,
                              "direct_io" if direct else "cached", ic, pl, cb, 0, direct, None))
        if "small" in parts and cfg["small_cache"]:
            cases.append(("small/%s" % name, what, "cached, cache_size=%s" % cfg["small_cache"],
                          ic, pl, cb, 0, False, None))
    walks = []
    if "nodes" in parts:
        ic, info = F.cached("nodes", cfg["dir"], n=cfg["nnodes"])
        pl = plain_twin(ic, ic + ".plain")
        repos["nodes"] = {"repo": ic, "plain": pl, "info": info}
        H.prewarm(ic)
        H.prewarm(pl)
        same_tree(cfg, [("ic", ic), ("plain", pl)], mnt, logfile, cfg["nnodes"])
        walks = [("list/ls-R", "ls -R", ["ls", "-R"], ic, pl),
                 ("list/ls-lR", "ls -lR", ["ls", "-lR"], ic, pl)]
    H.log("  data ready and checked in %.1f s (both sides of every pair equal to the expected "
          "values)" % (time.perf_counter() - t0))

    reps = {k[0]: [] for k in cases}
    reps.update({w[0]: [] for w in walks})
    for r in range(cfg["reps"]):
        o0 = H.cpu_snapshot()
        line = []
        for key, what, mode, ic, pl, nb, touch, direct, rawf in cases:
            cache = cfg["small_cache"] if key.startswith("small/") else None
            rep = {}
            order = ["ic", "plain"] if r % 2 == 0 else ["plain", "ic"]
            for side in order:
                if rawf:
                    H.prewarm(ic if side == "ic" else pl, resident=False)
                x = one_read(cfg, side, ic if side == "ic" else pl, mnt, logfile, nb, touch,
                             direct, cache)
                for k_, v in x.items():
                    rep["%s_%s" % (side, k_)] = v
            if cfg["baseline"]:
                x = one_read(cfg, "ic", ic, mnt, logfile, nb, touch, direct, cache,
                             binary=cfg["baseline"])
                rep["base_mbps"] = x["mbps"]
                rep["ic_vs_base"] = rep["ic_mbps"] / x["mbps"]
            if rawf and use_pt:
                H.prewarm(rawf, resident=False)
                x = one_read(cfg, "pt", rawf, mnt, logfile, nb, touch, direct)
                rep["pt_mbps"] = x["mbps"]
                rep["ic_vs_pt"] = rep["ic_mbps"] / x["mbps"]
            rep["ratio"] = rep["ic_mbps"] / rep["plain_mbps"]
            reps[key].append(rep)
            line.append("%s %.0f/%.0f (%.2f)" % (key, rep["ic_mbps"],
                                                 rep["plain_mbps"], rep["ratio"]))
        for key, what, cmd, ic, pl in walks:
            for w in range(cfg["walks"]):
                rep = {}
                order = ["ic", "plain"] if (r + w) % 2 == 0 else ["plain", "ic"]
                for side in order:
                    x = one_walk(cfg, side, ic if side == "ic" else pl, mnt, logfile, cmd)
                    for k_, v in x.items():
                        rep["%s_%s" % (side, k_)] = v
                if cfg["baseline"]:
                    x = one_walk(cfg, "ic", ic, mnt, logfile, cmd, binary=cfg["baseline"])
                    rep["base_walk_s"] = x["walk_s"]
                rep["ratio"] = rep["ic_walk_s"] / rep["plain_walk_s"]
                rep["total_ratio"] = rep["ic_total_s"] / rep["plain_total_s"]
                reps[key].append(rep)
                line.append("%s %.3f/%.3f s (%.2f)" % (what, rep["ic_walk_s"],
                                                       rep["plain_walk_s"], rep["ratio"]))
        o1 = H.cpu_snapshot()
        other = (o1[0] - o0[0]) - (o1[1] - o0[1])
        for k in reps:
            for rep in reps[k]:
                rep.setdefault("other_cpu_s", other)
        H.log("  rep %d: %s; other processes %.1f CPU s" % (r + 1, "; ".join(line), other))

    results = {}
    for key, what, mode, ic, pl, nb, *_ in cases:
        results[key] = {"what": what, "mode": mode, "icechunk": ic, "plain": pl, "bytes": nb,
                        "reps": reps[key], "summary": H.summarize(reps[key])}
        cs = cfg["small_cache"] if key.startswith("small/") else cfg["cache_size"]
        results[key]["cache_size"] = cs
        results[key]["budget"] = budget_text(cs)
    for key, what, cmd, ic, pl in walks:
        results[key] = {"what": what, "mode": "walk", "icechunk": ic, "plain": pl,
                        "reps": reps[key], "summary": H.summarize(reps[key])}

    perf_out = {}
    want = [p for p in cfg["perf"].split(",") if p]
    if want == ["all"]:
        want = (["dense-" + c for c in cfg["codecs"]] + ["chunks-%d" % n for n in cfg["splits"]]
                + ["ls", "ls-l"])
    for name in want:
        if name.startswith("dense-") or name.startswith("chunks-"):
            if name not in repos:
                continue
            ic = repos[name]["repo"]
            nb = nbytes if name.startswith("dense-") else 16 * cfg["nchunks"]
            touch = cfg["pretouch"] if name.startswith("dense-") else 0

            def mount_fn(ic=ic):
                return mount(cfg, "ic", ic, mnt, logfile)

            def work_fn(d, nb=nb, touch=touch):
                buf = bytearray(cfg["bs"])
                H.pretouch(touch)
                return H.read_reused(d.file, nb, cfg["bs"], buf)
        elif name in ("ls", "ls-l") and "nodes" in repos:
            ic = repos["nodes"]["repo"]

            def mount_fn(ic=ic):
                return mount(cfg, "ic", ic, mnt, logfile, one_file=False)

            def work_fn(d, name=name):
                t0 = time.perf_counter()
                subprocess.run(["ls", "-R" if name == "ls" else "-lR", mnt],
                               stdout=subprocess.DEVNULL, check=True)
                return time.perf_counter() - t0
        else:
            H.log("  perf %s: no such case here (dense-CODEC, chunks-SPLIT, ls, ls-l)" % name)
            continue
        perf_out[name] = profile(cfg, name, mount_fn, work_fn, results_dir, stamp)

    data = {"results": results, "config": cfg}
    md = render(data)
    s.finish(results_dir, "bench-icechunk", results, md,
             "MB = 1e6 bytes; medians of %d reads (%d walks); ratios Icechunk / plain per "
             "repetition (pair of walks), then the median; every read and walk on a fresh mount "
             "(-o cache_size=%s, read_ahead_kb %s), 4 MiB readv()s into one buffer, %s touched "
             "before each dense read"
             % (cfg["reps"], cfg["reps"] * cfg["walks"], cfg["cache_size"],
                cfg["readahead_kb"] or "default",
                H.env("ZF_BENCH_COLD_PRETOUCH", "2G")),
             repositories=repos, perf=perf_out)


if __name__ == "__main__":
    main()
