#!/usr/bin/python3
"""Walking a whole consolidated hierarchy: `find MOUNT | wc -l` over a zarrfs mount against
zarr-python 2.13's `open_consolidated(STORE).visititems(...)`, on the same v2 store of 10^5 nodes,
locally and over HTTP, in one run. Run it through bench/consolidated_listing.sh (the knobs are
listed there; it unmounts on exit).

Stores (ZF_BENCH_DIR/listing/data, written once and reused while their stamp matches): Zarr v2
hierarchies whose .zgroup and .zarray documents are zarr-python's own (a group and a (100, 100)
float32 array, chunks (10, 10), Blosc lz4, no dimension_separator: what zarr-python 2.13 writes),
copied to every node with Python, then consolidated by `zarr.consolidate_metadata`:
  wide  ZF_BENCH_LISTING_WIDE=GxA (10x9999): the root holds G groups, each holding A arrays;
  deep  ZF_BENCH_LISTING_DEEP=DxA (500x199): a chain of D nested groups ("g/g/.../g"), each
        holding A arrays. Depth is bounded twice: zarr-python's visititems recurses and fails
        (RecursionError) at about 990 levels, and `find` prints paths ("/g" per level) that must
        stay below the kernel's PATH_MAX (4096 bytes); 500 levels make paths of about 1 KB.
No chunk is stored: listing is what is measured.

Per shape and repetition (ZF_BENCH_REPS, 5), locally and over HTTP (nginx on 127.0.0.1, the tests'
configuration, no added latency: ZF_BENCH_LISTING_WHERE=local,http), .zmetadata read once before
(the page cache serves both sides), the two sides in alternating order:
  zarrfs       start `zarrfs -f STORE MNT` (fresh: no node known), wait for the mount (polled
               every 2 ms), then `find MNT | wc -l`; the time is mount + walk (both reported), the
               unmount is not timed. The line count must be the nodes + 1 (the mount point).
               Daemon CPU time, peak RSS (VmHWM) and store requests (.zarrfs-stats) recorded.
  zarr-python  `/usr/bin/python3 -c 'import sys, zarr; g = zarr.open_consolidated(sys.argv[1]);
               g.visititems(lambda n, o: None)' STORE` (STORE the directory, or the URL: fsspec's
               HTTP file system), the whole command timed (interpreter start and import included),
               its CPU time from RUSAGE_CHILDREN. Before the first repetition, one untimed run
               counting the nodes visititems visits checks the store.
Ratio = zarrfs seconds / zarr-python seconds per repetition, then its median (goal: <= 0.5).
ZF_BENCH_LISTING_BASELINE=PATH adds a third side, another zarrfs binary (the code before a change)
measured as zarrfs is, and the ratio zarrfs / baseline.
Results: ZF_BENCH_DIR/listing/results/bench-listing-TIME.json and .md; `bench_listing.py --report
FILE.json` re-renders the tables.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import harness as h
from harness import env, log

GEN_VERSION = 1
CFG = h.knobs(
    5,
    shapes=env("ZF_BENCH_LISTING_SHAPES", "wide,deep").split(","),
    wide=env("ZF_BENCH_LISTING_WIDE", "10x9999"),
    deep=env("ZF_BENCH_LISTING_DEEP", "500x199"),
    where=env("ZF_BENCH_LISTING_WHERE", "local,http").split(","),
    opts=env("ZF_BENCH_LISTING_OPTS", ""),
    baseline=env("ZF_BENCH_LISTING_BASELINE", ""),
)
DIR = os.path.join(CFG["dir"], "listing")
DATA, MNT = os.path.join(DIR, "data"), os.path.join(DIR, "mnt")
PY = sys.executable
ZARR_CMD = ("import sys, zarr; g = zarr.open_consolidated(sys.argv[1]); "
            "g.visititems(lambda n, o: None)")
COUNT_CMD = ("import sys, zarr; g = zarr.open_consolidated(sys.argv[1]); c = []; "
             "g.visititems(lambda n, o: c.append(n)); print(len(c))")


# ---------------------------------------------------------------------------- stores

def zarr_documents():
    """(.zgroup, .zarray) as zarr-python writes them (bytes)."""
    import zarr
    t = tempfile.mkdtemp(prefix="zf-listing-")
    try:
        g = zarr.open_group(t, mode="w")
        g.create_dataset("a", shape=(100, 100), chunks=(10, 10), dtype="<f4")
        with open(os.path.join(t, ".zgroup"), "rb") as f:
            zgroup = f.read()
        with open(os.path.join(t, "a", ".zarray"), "rb") as f:
            zarray = f.read()
    finally:
        shutil.rmtree(t)
    return zgroup, zarray


def put(dir_fd, name, data):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def add_arrays(dir_fd, n, zarray):
    for j in range(n):
        name = "a%04d" % j
        os.mkdir(name, dir_fd=dir_fd)
        put(dir_fd, name + "/.zarray", zarray)


def make_store(shape):
    """The store of `shape` (written unless its stamp matches): (path, nodes below the root)."""
    import zarr
    outer, arrays = (int(x) for x in CFG[shape].lower().split("x"))
    path = os.path.join(DATA, "%s-%dx%d.zarr" % (shape, outer, arrays))
    nodes = outer * (1 + arrays)
    want = {"gen": GEN_VERSION, "shape": shape, "outer": outer, "arrays": arrays,
            "zarr": zarr.__version__}
    if h._stamp_ok(path + ".done", want):
        return path, nodes
    t0 = time.perf_counter()
    log("  generating %s (%d nodes) ..." % (path, nodes))
    if os.path.exists(path + ".done"):
        os.unlink(path + ".done")
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=True, timeout=1800)
    zgroup, zarray = zarr_documents()
    os.makedirs(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        put(fd, ".zgroup", zgroup)
        for i in range(outer):
            name = "g" if shape == "deep" else "g%02d" % i
            os.mkdir(name, dir_fd=fd)
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            put(sub, ".zgroup", zgroup)
            add_arrays(sub, arrays, zarray)
            if shape == "deep":          # go down the chain
                os.close(fd)
                fd = sub
            else:
                os.close(sub)
    finally:
        os.close(fd)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * outer + 1000))  # os.walk recurses
    zarr.consolidate_metadata(zarr.DirectoryStore(path))
    with open(path + ".done", "w") as f:
        json.dump(want, f)
    log("  ... %.1f s, .zmetadata %.0f MB"
        % (time.perf_counter() - t0, os.path.getsize(os.path.join(path, ".zmetadata")) / 1e6))
    return path, nodes


# ---------------------------------------------------------------------------- measurements

def run_zarrfs(store, nodes, logfile, binary=None):
    opts = [o for o in CFG["opts"].split(",") if o]
    cmd = h.zarrfs_cmd(binary or CFG["zarrfs"], store, MNT, opts)
    t0 = time.perf_counter()
    with h.Daemon(cmd, MNT, logfile, one_file=False, mount_timeout=CFG["phase_timeout"]) as d:
        t1 = time.perf_counter()
        r = subprocess.run(["sh", "-c", 'find "$1" | wc -l', "sh", MNT], capture_output=True,
                           text=True, timeout=CFG["phase_timeout"])
        t2 = time.perf_counter()
        lines = int(r.stdout.strip() or -1)
        if r.returncode != 0 or lines != nodes + 1:
            raise RuntimeError("find %s: %d lines (status %d, %s), expected %d"
                               % (MNT, lines, r.returncode, r.stderr.strip()[:300], nodes + 1))
        out = {"zarrfs_mount_s": t1 - t0, "zarrfs_walk_s": t2 - t1, "zarrfs_s": t2 - t0,
               "daemon_cpu_s": d.cpu_s(), "hwm_mib": d.hwm_mib(),
               "requests": d.stats()["store"]["requests"]}
    return out


def run_zarr(store, cmd=ZARR_CMD):
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([PY, "-c", cmd, store], capture_output=True, text=True,
                       timeout=CFG["phase_timeout"])
    t = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError("zarr-python on %s: status %d: %s"
                           % (store, r.returncode, r.stderr.strip()[-500:]))
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return t, cpu, r.stdout


def run_case(shape, where, path, nodes, nginx):
    store = path if where == "local" else nginx.url(os.path.basename(path))
    zmeta = os.path.join(path, ".zmetadata")
    if where == "local":            # zarr-python visits what zarrfs must list
        _t, _c, out = run_zarr(store, COUNT_CMD)
        if int(out.strip()) != nodes:
            raise RuntimeError("zarr-python visits %s nodes of %s, expected %d"
                               % (out.strip(), path, nodes))
    res = {"shape": shape, "where": where, "store": store, "nodes": nodes,
           "zmetadata_bytes": os.path.getsize(zmeta), "reps": []}
    for rep in range(CFG["reps"]):
        h.prewarm(zmeta)
        r = {}
        sides = ["zarrfs", "zarr"] + (["baseline"] if CFG["baseline"] else [])
        for side in (sides if rep % 2 == 0 else sides[::-1]):
            if side == "zarrfs":
                r.update(run_zarrfs(store, nodes, os.path.join(DIR, "daemon.log")))
            elif side == "baseline":
                b = run_zarrfs(store, nodes, os.path.join(DIR, "daemon.log"), CFG["baseline"])
                r.update({"baseline_" + k: v for k, v in b.items()})
            else:
                r["zarr_s"], r["zarr_cpu_s"], _ = run_zarr(store)
        r["ratio"] = r["zarrfs_s"] / r["zarr_s"]
        if CFG["baseline"]:
            r["ratio_baseline"] = r["zarrfs_s"] / r["baseline_zarrfs_s"]
        r["load1_end"] = os.getloadavg()[0]
        res["reps"].append(r)
        log("    rep %d: zarrfs %.2f s (mount %.2f + find %.2f; daemon CPU %.2f s, %d requests), "
            "zarr-python %.2f s: ratio %.3f; load %.1f"
            % (rep, r["zarrfs_s"], r["zarrfs_mount_s"], r["zarrfs_walk_s"], r["daemon_cpu_s"],
               r["requests"], r["zarr_s"], r["ratio"], r["load1_end"]))
        if CFG["baseline"]:
            log("      baseline zarrfs %.2f s (mount %.2f + find %.2f; %d requests)"
                % (r["baseline_zarrfs_s"], r["baseline_zarrfs_mount_s"],
                   r["baseline_zarrfs_walk_s"], r["baseline_requests"]))
    res.update(h.summarize(res["reps"]))
    return res


# ---------------------------------------------------------------------------- report

def markdown(results):
    med = lambda r, k: r["median"][k]
    lines = ["| store | where | nodes | .zmetadata MB | zarrfs s (mount + `find`) | mount s "
             "| `find` s | zarr-python s (`visititems`) | **ratio** (goal ≤ 0.5) | daemon CPU s "
             "| daemon peak RSS MiB | store requests | zarr-python CPU s |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        ok = "✓" if med(r, "ratio") <= 0.5 else "✗"
        lines.append("| %s | %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | **%.3f** %s | %.2f "
                     "| %.0f | %d | %.2f |" % (
                         r["shape"], r["where"], r["nodes"], r["zmetadata_bytes"] / 1e6,
                         med(r, "zarrfs_s"), med(r, "zarrfs_mount_s"), med(r, "zarrfs_walk_s"),
                         med(r, "zarr_s"), med(r, "ratio"), ok, med(r, "daemon_cpu_s"),
                         med(r, "hwm_mib"), med(r, "requests"), med(r, "zarr_cpu_s")))
    if any("baseline_zarrfs_s" in r["median"] for r in results):
        lines += ["", "| store | where | zarrfs s | baseline zarrfs s (ZF_BENCH_LISTING_BASELINE) "
                  "| its mount s | its `find` s | its daemon CPU s | its store requests "
                  "| **zarrfs / baseline** |",
                  "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
        for r in results:
            if "baseline_zarrfs_s" in r["median"]:
                lines.append("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %d | **%.3f** |" % (
                    r["shape"], r["where"], med(r, "zarrfs_s"), med(r, "baseline_zarrfs_s"),
                    med(r, "baseline_zarrfs_mount_s"), med(r, "baseline_zarrfs_walk_s"),
                    med(r, "baseline_daemon_cpu_s"), med(r, "baseline_requests"),
                    med(r, "ratio_baseline")))
    rng = lambda r, k, f="%.2f": h.rng(r, k, f)
    lines += ["", "| store | where | spread (min–max): zarrfs s | zarr-python s | ratio "
              "| load average (1 min) |", "|---|---|--:|--:|--:|--:|"]
    for r in results:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            r["shape"], r["where"], rng(r, "zarrfs_s"), rng(r, "zarr_s"),
            rng(r, "ratio", "%.3f"), rng(r, "load1_end", "%.1f")))
    return "\n".join(lines)


def main():
    if h.report_cli(lambda rec: markdown(rec["results"])):
        return
    for s in CFG["shapes"]:
        if s not in ("wide", "deep"):
            sys.exit("bench_listing: ZF_BENCH_LISTING_SHAPES: unknown shape %r (wide, deep)" % s)
    for w in CFG["where"]:
        if w not in ("local", "http"):
            sys.exit("bench_listing: ZF_BENCH_LISTING_WHERE: unknown %r (local, http)" % w)
    os.makedirs(DATA, exist_ok=True)
    os.makedirs(MNT, exist_ok=True)
    s = h.Session("zarrfs consolidated listing benchmark", CFG,
                  modules=("zarr", "numcodecs", "numpy", "fsspec", "aiohttp"))
    s.intro("find over a zarrfs mount vs zarr-python open_consolidated().visititems; shapes %s "
            "(wide %s, deep %s); %s; %d reps"
            % (",".join(CFG["shapes"]), CFG["wide"], CFG["deep"], ",".join(CFG["where"]),
               CFG["reps"]))
    stores = {shape: make_store(shape) for shape in CFG["shapes"]}
    nginx = None
    results = []
    try:
        if "http" in CFG["where"]:
            sys.path.insert(0, os.path.join(h.HERE, "..", "tests", "integration"))
            import remote_servers as rs
            nginx = rs.Nginx(DATA, master_process=True).start()
            log("nginx on %s" % nginx.url())
        for shape in CFG["shapes"]:
            for where in CFG["where"]:
                log("%s, %s:" % (shape, where))
                results.append(run_case(shape, where, *stores[shape], nginx))
    finally:
        if nginx is not None:
            nginx.stop()
    s.finish(os.path.join(DIR, "results"), "bench-listing", results, markdown(results),
             "medians of %d repetitions; ratio = zarrfs s / zarr-python s per repetition, then "
             "its median (< 1: zarrfs faster); zarrfs s includes starting the daemon and "
             "mounting; zarr-python s includes starting the interpreter and importing zarr"
             % CFG["reps"])


if __name__ == "__main__":
    main()
