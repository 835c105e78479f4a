#!/usr/bin/python3
"""zarrfs write benchmark: writing one array through a zarrfs mount, in the default (cached) mode
and with -o direct_io, against the FUSE write limits of the machine (the passthrough, cached and
direct) and zarr-python writing the same NumPy array, per codec, in the same run; and the
default mode's write through a shared mapping. Part 3 of the issue "Bulk reads and writes past the
page cache" (its goals are the targets marked in the tables).

Run it through bench/write.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy, the zarrfs binary and zf_passthrough
(bench/passthrough.c, `ninja -C build bench/zf_passthrough`).

Data: a float32 array of about ZF_BENCH_WRITE_MB MiB, shape (ROWS, 16384), chunks 1024 x 1024
(4 MiB), the values of bench.py (same generator and seed), stored once as a raw C-order file
($ZF_BENCH_DIR/write/raw-ROWS.f4) and kept in memory as the NumPy array zarr-python writes.

Per codec (none, zlib 1, blosc lz4 5 +shuffle, zstd 1, lz4) first a probe: a 16 x 16 array with
that codec is mounted -o rw, written and fsync'ed; a codec whose probe fails (zarrfs does not
encode it yet) is skipped with a note. Then per repetition, the sides in alternating order (the
list below in even repetitions, reversed in odd ones), os.sync() before each:

  zarrfs cached   zarr-python creates a fresh empty array with the codec (no chunk stored), zarrfs
                  mounts it -o rw,cache_size=ZF_BENCH_CACHE; timed: `dd if=RAW of=MNT/FILE
                  bs=ZF_BENCH_BS conv=notrunc,fsync` (the fsync stores every chunk: encode,
                  temporary file, fsync, rename), then, timed separately, the unmount
                  (fusermount3 -u until the daemon exits; nothing should be left to store). The
                  store is then read with zarr-python and compared with the array; the daemon's
                  .zarrfs-stats (chunks encoded, store writes, bytes written, store reads) is
                  recorded.
  zarrfs direct   the same with -o rw,direct_io (dd needs no oflag=direct: the file is opened
                  with FOPEN_DIRECT_IO, every write(2) reaches the daemon, several requests in
                  flight).
  passthrough cached, passthrough direct
                  the FUSE write limit: a fresh backing file of the array's size (created empty
                  and extended with ftruncate, so its blocks are allocated by the writes as a new
                  store's are), zf_passthrough -o rw,max_read=1048576[,direct_io] on it, the same
                  timed dd, the timed unmount; the backing file is then compared with RAW.
  zarr-python     a fresh array with the same codec, timed: `z[:] = a`; then, timed separately,
                  os.sync() (zarr-python's DirectoryStore does not fsync; zarrfs does, per chunk:
                  "zarr-python + sync" is the like-for-like durable peer).
  mapping         (codecs in ZF_BENCH_WRITE_MMAP: none and blosc by default) zarrfs -o rw in the
                  default mode on a fresh empty array; timed: numpy.memmap(FILE, mode="r+") of the
                  whole array, assign the whole array, flush (msync), fsync; then the timed
                  unmount; the store compared with the array.
  passthrough mapping
                  (the same codecs) the FUSE limit of that path: the same mapping write into
                  zf_passthrough -o rw,max_read=1048576 (default mode) over a fresh backing file,
                  the timed unmount, the backing file compared with RAW.

The raw file is read once before each repetition (dd reads it from the page cache).

MB = 1e6 bytes of the array (not of the store). Medians over the repetitions; ratios are taken
within each repetition (> 1: zarrfs faster), then their median: a zarrfs side's time is its dd (or
mapping write) plus its unmount, set against zarr-python + sync and against the passthrough in the
same mode (dd + unmount). The daemon's VmHWM is set against cache_size + 64 MiB.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import zarr

import harness as h
from harness import CHUNK, COLS, GiB, MiB, env

CFG = h.knobs(
    3,
    mb=env("ZF_BENCH_WRITE_MB", 1024.0, float),
    codecs=env("ZF_BENCH_WRITE_CODECS", "none,zlib,blosc,zstd,lz4").split(","),
    mmap=env("ZF_BENCH_WRITE_MMAP", "none,blosc"),
    passthrough=env("ZF_PASSTHROUGH", h.DEFAULT_PASSTHROUGH),
)
CFG["dir"] = os.path.join(CFG["dir"], "write")
CFG["bs"] = env("ZF_BENCH_BS", "4M")           # dd's bs=, as given
ROWS = h.rows_for(CFG["mb"] * MiB)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
MNT = os.path.join(CFG["dir"], "mnt")
MNT_PT = os.path.join(CFG["dir"], "mnt-pt")
LOG = os.path.join(CFG["dir"], "zarrfs.log")
BACKING = os.path.join(CFG["dir"], "passthrough-backing.f4")

# the targets: (ratio, codec) -> at least. d_sync: zarrfs direct / zarr-python + sync;
# ptd: zarrfs direct / passthrough direct; mmap_sync: the mapping write / zarr-python + sync
# (also reported: ptmm_sync, the passthrough's mapping write / zarr-python + sync, the limit).
TARGETS = {
    ("d_sync_ratio", "zstd"): 1.0,
    ("d_sync_ratio", "lz4"): 1.0,
    ("d_sync_ratio", "zlib"): 1.0,
    ("d_sync_ratio", "blosc"): 0.8,
    ("ptd_ratio", "none"): 0.8,
    ("mmap_sync_ratio", "none"): 0.8,
    ("mmap_sync_ratio", "blosc"): 0.8,
}
RSS_SLACK_MIB = h.RSS_SLACK_MIB


CODEC_LABEL = h.WRITE_CODEC_LABEL


def compressor(codec):
    return h.compressor(codec, write_names=True)


# ---------------------------------------------------------------------------- data

def raw_data():
    """(path of the raw file, the array), generating the file once."""
    path = h.write_raw(os.path.join(CFG["dir"], "raw-%d-%d.f4" % (ROWS, CFG["seed"])), ROWS,
                       CFG["seed"])
    return path, np.fromfile(path, dtype="<f4").reshape(SHAPE)


def fresh_array(path, codec, shape=SHAPE, chunks=CHUNK):
    if os.path.exists(path):
        shutil.rmtree(path)
    return zarr.open_array(path, mode="w", shape=shape, chunks=chunks, dtype="<f4",
                           compressor=compressor(codec), fill_value=0.0, order="C")


# ---------------------------------------------------------------------------- daemon

def daemon(store, mnt=MNT, direct=False):
    """zarrfs -o rw (and direct_io) on store; close() waits up to ZF_BENCH_PHASE_TIMEOUT for the
    daemon to store what is left, and returns the seconds the unmount took."""
    return h.zarrfs_daemon(CFG, store, mnt, LOG, ["rw", direct and "direct_io"],
                           close_timeout=CFG["phase_timeout"])


def mmap_codecs():
    if CFG["mmap"] in ("", "0", "no"):
        return []
    if CFG["mmap"] == "all":
        return list(CFG["codecs"])
    return CFG["mmap"].split(",")


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])


def probe(codec):
    """None when zarrfs can write the codec, else why not (one line)."""
    d = tempfile.mkdtemp(prefix="probe-", dir=CFG["dir"])
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    try:
        store = os.path.join(d, "arr")
        fresh_array(store, codec, shape=(16, 16), chunks=(8, 8))
        want = np.arange(256, dtype="<f4").reshape(16, 16) + 1
        with daemon(store, mnt) as dm:
            try:
                fd = os.open(dm.file, os.O_RDWR)
                try:
                    os.pwrite(fd, want.tobytes(), 0)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                with open(LOG, "rb") as f:
                    f.seek(max(0, os.path.getsize(LOG) - 2000))
                    logged = [l for l in f.read().decode("utf-8", "replace").splitlines()
                              if l.startswith("zarrfs: ")]
                return "%s (zarrfs log: %s)" % (e, tail("\n".join(logged), 1))
        got = zarr.open_array(store, mode="r")[...]
        if not np.array_equal(got, want):
            return "zarr-python reads different data from the probe's store"
        return None
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------- measurements

def timed_dd(raw, dst, what, d):
    """dd RAW into dst (conv=notrunc,fsync); (seconds, None) or (None, why it failed)."""
    cmd = ["dd", "if=" + raw, "of=" + dst, "bs=" + CFG["bs"], "conv=notrunc,fsync",
           "status=none"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=CFG["phase_timeout"])
    except subprocess.TimeoutExpired:
        d.kill()
        raise RuntimeError("%s: dd took more than %.0f s" % (what, CFG["phase_timeout"]))
    t = time.perf_counter() - t0
    if p.returncode != 0:
        return None, "dd failed (status %d): %s" % (p.returncode, tail(p.stderr))
    return t, None


def check_store(what, store, a):
    got = zarr.open_array(store, mode="r")[...]
    if not np.array_equal(got.view(np.uint32), a.view(np.uint32)):
        bad = np.flatnonzero(got.reshape(-1) != a.reshape(-1))
        raise RuntimeError("%s: WRONG DATA in the store zarrfs wrote: %d elements differ, first "
                           "at %d" % (what, bad.size, bad[0]))


def mapping_write(d, a, what):
    """numpy.memmap(mode="r+") of the whole mounted file, assign a, flush (msync), fsync; the
    seconds it took."""
    with h.Watchdog(d, what, CFG["phase_timeout"]):
        t0 = time.perf_counter()
        fd = os.open(d.file, os.O_RDWR)
        try:
            m = np.memmap(d.file, dtype="<f4", mode="r+", shape=SHAPE)
            m[:] = a
            m.flush()
            os.fsync(fd)
            del m
        finally:
            os.close(fd)
        return time.perf_counter() - t0


def zarrfs_write(codec, raw, a, direct=False, mapping=False):
    """dd (or, mapping, the numpy.memmap write) into a fresh empty array through a zarrfs -o rw
    mount (direct: -o rw,direct_io); (the numbers, None) or (None, why it failed)."""
    kind = "mmap" if mapping else "direct" if direct else "cached"
    store = os.path.join(CFG["dir"], "stores", "zarrfs-%s-%s" % (codec, kind))
    fresh_array(store, codec)
    r = {}
    os.sync()
    with daemon(store, direct=direct) as d:
        s0, c0 = d.stats(), d.cpu_s()
        if mapping:
            r["dd_s"] = mapping_write(d, a, "%s mapping write" % codec)
        else:
            r["dd_s"], err = timed_dd(raw, d.file, codec, d)
            if err:
                return None, err
        r["daemon_cpu_s"] = d.cpu_s() - c0
        s1 = d.stats()
        r["hwm_mib"] = d.hwm_mib()
        r["dirty_after_fsync"] = s1["cache"]["dirty_bytes"]
        for k in ("writes", "bytes_written", "requests"):
            r["store_" + k] = s1["store"][k] - s0["store"][k]
        r["store_reads"] = r["store_requests"] - r["store_writes"]
        r["encoded_chunks"] = s1["encode"]["chunks"] - s0["encode"]["chunks"]
        r["encode_s"] = s1["encode"]["seconds"] - s0["encode"]["seconds"]
        r["writebacks"] = s1["cache"]["writebacks"] - s0["cache"]["writebacks"]
        r["unmount_s"] = d.close()
    r["total_s"] = r["dd_s"] + r["unmount_s"]
    r["store_bytes"] = h.store_bytes(store, hidden=False)
    check_store("%s (%s)" % (codec, kind), store, a)
    shutil.rmtree(store)
    return r, None


def passthrough_write(raw, ref, direct, a=None):
    """The FUSE write limit: dd into zf_passthrough -o rw[,direct_io] over a fresh backing file
    (a given: the mapping write of a instead, in the default mode); (the numbers, None) or (None,
    why it failed)."""
    if os.path.exists(BACKING):
        os.unlink(BACKING)
    with open(BACKING, "wb") as f:
        f.truncate(NBYTES)
    os.sync()
    opts = "rw,max_read=1048576" + (",direct_io" if direct else "")
    r = {}
    with h.Daemon([CFG["passthrough"], BACKING, MNT_PT, "-f", "-o", opts], MNT_PT, LOG,
                  nbytes=NBYTES, close_timeout=CFG["phase_timeout"]) as d:
        c0 = d.cpu_s()
        if a is not None:
            r["dd_s"] = mapping_write(d, a, "passthrough mapping write")
        else:
            r["dd_s"], err = timed_dd(raw, d.file, "passthrough", d)
            if err:
                return None, err
        r["daemon_cpu_s"] = d.cpu_s() - c0
        r["unmount_s"] = d.close()
    r["total_s"] = r["dd_s"] + r["unmount_s"]
    h.check_blocks("passthrough%s write" % (" direct" if direct else " mapping" if a is not None
                                           else ""), BACKING, ref)
    os.unlink(BACKING)
    return r, None


def zarr_write(codec, a):
    store = os.path.join(CFG["dir"], "stores", "zarr-%s" % codec)
    z = fresh_array(store, codec)
    os.sync()
    c0, t0 = time.process_time(), time.perf_counter()
    z[:] = a
    t = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t1 = time.perf_counter()
    os.sync()
    ts = time.perf_counter() - t1
    r = {"zarr_s": t, "zarr_cpu_s": cpu, "zarr_sync_s": ts,
         "zarr_store_bytes": h.store_bytes(store, hidden=False)}
    shutil.rmtree(store)
    return r


def mbps(t):
    return h.mbps(NBYTES, t)


SIDE_LABEL = {"zf": "zarrfs cached", "zfd": "zarrfs direct", "pt": "passthrough cached",
              "ptd": "passthrough direct", "zarr": "zarr-python", "mmap": "zarrfs mapping",
              "ptmm": "passthrough mapping"}


def run_codec(codec, raw, a, ref):
    res = {"codec": codec, "label": CODEC_LABEL[codec], "reps": []}
    why = probe(codec)
    if why:
        res["skipped"] = "zarrfs cannot write %s yet: %s" % (CODEC_LABEL[codec], why)
        h.log("  SKIPPED: " + res["skipped"])
        return res
    sides = ["zf", "zfd", "pt", "ptd", "zarr"] + (["mmap", "ptmm"] if codec in mmap_codecs()
                                                  else [])
    for rep in range(CFG["reps"]):
        h.prewarm(raw, resident=False)
        r = {"load1_start": os.getloadavg()[0], "order_reversed": rep % 2 == 1}
        for side in (sides if rep % 2 == 0 else sides[::-1]):
            if side == "zarr":
                r.update(zarr_write(codec, a))
                continue
            if side in ("pt", "ptd", "ptmm"):
                x, err = passthrough_write(raw, ref, side == "ptd", a if side == "ptmm" else None)
            else:
                x, err = zarrfs_write(codec, raw, a, direct=side == "zfd", mapping=side == "mmap")
            if x is None:
                res["skipped"] = "%s write of %s failed: %s" % (SIDE_LABEL[side],
                                                               CODEC_LABEL[codec], err)
                h.log("  SKIPPED: " + res["skipped"])
                return res
            r.update({"%s_%s" % (side, k): v for k, v in x.items()})
        r["zarr_mbps"] = mbps(r["zarr_s"])
        r["zarr_sync_mbps"] = mbps(r["zarr_s"] + r["zarr_sync_s"])
        r["zarr_cpu_pct"] = 100 * r["zarr_cpu_s"] / r["zarr_s"]
        for side in [x for x in sides if x != "zarr"]:
            r[side + "_mbps"] = mbps(r[side + "_dd_s"])
            r[side + "_total_mbps"] = mbps(r[side + "_total_s"])
            r[side + "_cpu_pct"] = 100 * r[side + "_daemon_cpu_s"] / r[side + "_dd_s"]
            if side not in ("pt", "ptd", "ptmm"):
                r[side + "_sync_ratio"] = r[side + "_total_mbps"] / r["zarr_sync_mbps"]
        # the ratios of the tables and the goals (the keys TARGETS names)
        r["ratio"] = r["zf_mbps"] / r["zarr_mbps"]                     # dd alone vs z[:] = a
        r["sync_ratio"] = r["zf_sync_ratio"]
        r["d_sync_ratio"] = r["zfd_sync_ratio"]
        r["pt_ratio"] = r["zf_total_mbps"] / r["pt_total_mbps"]
        r["ptd_ratio"] = r["zfd_total_mbps"] / r["ptd_total_mbps"]
        if "mmap" in sides: # the FUSE limit of a mapping write, and zarrfs against it
            r["ptmm_sync_ratio"] = r["ptmm_total_mbps"] / r["zarr_sync_mbps"]
            r["mmap_pt_ratio"] = r["mmap_total_mbps"] / r["ptmm_total_mbps"]
        r["load1_end"] = os.getloadavg()[0]
        res["reps"].append(r)
        h.log("  rep %d: s (dd + fsync + unmount): zarrfs %.2f / direct %.2f, passthrough %.2f / "
              "direct %.2f, zarr-python %.2f + sync %.2f%s | direct / zarr+sync %.2f, / "
              "passthrough direct %.2f | RSS %.0f / %.0f MiB | load %.1f"
              % (rep + 1, r["zf_total_s"], r["zfd_total_s"], r["pt_total_s"], r["ptd_total_s"],
                 r["zarr_s"], r["zarr_sync_s"],
                 ", mapping %.2f (/ zarr+sync %.2f), passthrough mapping %.2f"
                 % (r["mmap_total_s"], r["mmap_sync_ratio"], r["ptmm_total_s"])
                 if "mmap" in sides else "", r["d_sync_ratio"], r["ptd_ratio"],
                 r["zf_hwm_mib"], r["zfd_hwm_mib"], r["load1_end"]))
    res.update(h.summarize(res["reps"]))
    return res


# ---------------------------------------------------------------------------- report

def ratio_cell(r, key):
    return h.goal_cell(r["median"][key], TARGETS.get((key, r["codec"])))


def markdown(results, cfg):
    limit = h.parse_size(cfg["cache_size"]) / MiB + RSS_SLACK_MIB
    med = lambda r, k: r["median"][k]
    lines = [
        "| codec | s (dd + fsync + unmount): zarrfs cached | zarrfs direct | passthrough cached "
        "| passthrough direct | zarr-python `z[:] = a` + sync s | direct: zarrfs / zarr-python + "
        "sync (target) | direct: zarrfs / passthrough (target) | cached: zarrfs / zarr-python "
        "+ sync | cached: zarrfs / passthrough | MB/s: zarrfs cached / direct, passthrough "
        "cached / direct, zarr-python + sync |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    notes = []
    for r in results:
        if not r["reps"]:
            lines.append("| %s | skipped | | | | | | | | | |" % r["label"])
            notes.append("- %s: %s" % (r["label"], r.get("skipped", "no repetition")))
            continue
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f + %.2f | %s | %s | %s | %s "
                     "| %.0f / %.0f, %.0f / %.0f, %.0f |" % (
                         r["label"], med(r, "zf_total_s"), med(r, "zfd_total_s"),
                         med(r, "pt_total_s"), med(r, "ptd_total_s"), med(r, "zarr_s"),
                         med(r, "zarr_sync_s"), ratio_cell(r, "d_sync_ratio"),
                         ratio_cell(r, "ptd_ratio"), ratio_cell(r, "sync_ratio"),
                         ratio_cell(r, "pt_ratio"), med(r, "zf_total_mbps"),
                         med(r, "zfd_total_mbps"), med(r, "pt_total_mbps"),
                         med(r, "ptd_total_mbps"), med(r, "zarr_sync_mbps")))
        if r.get("skipped"):
            notes.append("- %s: %s" % (r["label"], r["skipped"]))
    mm = [r for r in results if r["reps"] and "mmap_total_s" in r["median"]]
    if mm:
        lines += [
            "",
            "| default mode, through a mapping | `numpy.memmap` r+: assign, flush, fsync s "
            "| unmount s | passthrough, the same mapping write + unmount s | zarr-python + sync s "
            "| mapping / zarr-python + sync (target) | the FUSE limit: passthrough mapping / "
            "zarr-python + sync | zarrfs mapping / passthrough mapping | daemon CPU "
            "| daemon peak RSS MiB (limit) |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for r in mm:
            lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %.0f%% | %s |" % (
                r["label"], med(r, "mmap_dd_s"), med(r, "mmap_unmount_s"),
                med(r, "ptmm_total_s"), med(r, "zarr_s") + med(r, "zarr_sync_s"),
                ratio_cell(r, "mmap_sync_ratio"), med(r, "ptmm_sync_ratio"),
                med(r, "mmap_pt_ratio"), med(r, "mmap_cpu_pct"),
                h.limit_cell(r["max"]["mmap_hwm_mib"], limit)))
    lines += [
        "",
        "| codec | dd + fsync s: zarrfs cached / direct | unmount s: cached / direct "
        "| zarr-python s (`z[:] = a`) / sync s | dd alone: zarrfs cached / zarr-python "
        "| store size zarrfs / zarr-python | daemon CPU: cached / direct / passthrough direct "
        "| zarr-python CPU | daemon peak RSS MiB: cached (limit) | direct (limit) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        if r["reps"]:
            lines.append("| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f | %.0f / %.0f MB "
                         "| %.0f%% / %.0f%% / %.0f%% | %.0f%% | %s | %s |" % (
                             r["label"], med(r, "zf_dd_s"), med(r, "zfd_dd_s"),
                             med(r, "zf_unmount_s"), med(r, "zfd_unmount_s"), med(r, "zarr_s"),
                             med(r, "zarr_sync_s"), med(r, "ratio"),
                             med(r, "zf_store_bytes") / 1e6, med(r, "zarr_store_bytes") / 1e6,
                             med(r, "zf_cpu_pct"), med(r, "zfd_cpu_pct"), med(r, "ptd_cpu_pct"),
                             med(r, "zarr_cpu_pct"), h.limit_cell(r["max"]["zf_hwm_mib"], limit),
                             h.limit_cell(r["max"]["zfd_hwm_mib"], limit)))
    rng = lambda r, k, f="%.2f": h.rng(r, k, f)
    lines += ["", "| codec | spread (min–max): zarrfs direct s | zarr-python + sync ratio, "
              "direct | passthrough direct ratio | cached zarrfs s | store reads during the "
              "write: cached / direct | chunks encoded: cached / direct | load average (1 min) |",
              "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        if r["reps"]:
            lines.append("| %s | %s | %s | %s | %s | %s / %s | %s / %s | %s |" % (
                r["label"], rng(r, "zfd_total_s"), rng(r, "d_sync_ratio"), rng(r, "ptd_ratio"),
                rng(r, "zf_total_s"), rng(r, "zf_store_reads", "%d"),
                rng(r, "zfd_store_reads", "%d"), rng(r, "zf_encoded_chunks", "%d"),
                rng(r, "zfd_encoded_chunks", "%d"), rng(r, "load1_end", "%.1f")))
    if notes:
        lines += [""] + notes
    return "\n".join(lines)


def main():
    if h.report_cli(lambda rec: markdown(rec["results"], rec["config"])):
        return
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(MNT_PT, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "stores"), exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    if not os.access(CFG["passthrough"], os.X_OK):
        sys.exit("bench: no passthrough binary at %s (build it: ninja -C build "
                 "bench/zf_passthrough)" % CFG["passthrough"])
    unknown = [c for c in CFG["codecs"] if c not in CODEC_LABEL]
    if unknown:
        sys.exit("bench: ZF_BENCH_WRITE_CODECS: unknown %r (known: %s)"
                 % (unknown, ",".join(CODEC_LABEL)))
    s = h.Session("zarrfs write benchmark", CFG)
    s.intro("array %s float32 = %.3f GiB, chunks %s, %d reps, cache_size=%s, dd bs=%s; sides: "
            "zarrfs cached and direct, passthrough cached and direct, zarr-python; mapping "
            "writes: %s" % (SHAPE, NBYTES / GiB, CHUNK, CFG["reps"], CFG["cache_size"], CFG["bs"],
                            ",".join(mmap_codecs()) or "none"))
    raw, a = raw_data()
    ref = np.memmap(raw, dtype=np.uint8, mode="r")
    results = []
    for codec in CFG["codecs"]:
        h.log("%s:" % CODEC_LABEL[codec])
        results.append(run_codec(codec, raw, a, ref))
    s.finish(os.path.join(CFG["dir"], "results"), "bench-write", results, markdown(results, CFG),
             "MB = 1e6 bytes of the array; medians of %d repetitions; a zarrfs or passthrough "
             "time is dd (conv=notrunc,fsync) or the mapping write, plus the unmount; ratios "
             "(> 1: zarrfs faster) are taken per repetition, then their median, with the issue's "
             "targets (✓ met, ✗ not met): zarrfs / zarr-python + sync, zarrfs / passthrough in "
             "the same mode (cached: default; direct: -o direct_io); peak RSS: the maximum over "
             "the repetitions against cache_size + %d MiB." % (CFG["reps"], RSS_SLACK_MIB),
             shape=SHAPE, chunks=CHUNK, nbytes=NBYTES, rss_slack_mib=RSS_SLACK_MIB,
             targets={"%s/%s" % k: v for k, v in TARGETS.items()})
    if not any(r["reps"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
