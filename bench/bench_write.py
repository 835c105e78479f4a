#!/usr/bin/python3
"""zarrfs write benchmark: writing one array through a zarrfs mount against zarr-python writing
the same NumPy array, per codec, in the same run.

Run it through bench/write.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy.

Data: a float32 array of about ZF_BENCH_WRITE_MB MiB, shape (ROWS, 16384), chunks 1024 x 1024
(4 MiB), the values of bench.py (same generator and seed), stored once as a raw C-order file
($ZF_BENCH_DIR/write/raw-ROWS.f4) and kept in memory as the NumPy array zarr-python writes.

Per codec (none, zlib 1, blosc lz4 5 +shuffle, zstd 1, lz4) first a probe: a 16 x 16 array with
that codec is mounted -o rw, written and fsync'ed; a codec whose probe fails (zarrfs does not
encode it yet) is skipped with a note. Then per repetition, the two sides in alternating order:

  zarrfs       zarr-python creates a fresh empty array with the codec (no chunk stored), zarrfs
               mounts it -o rw,cache_size=ZF_BENCH_CACHE; timed: `dd if=RAW of=MNT/FILE
               bs=ZF_BENCH_BS conv=notrunc,fsync` (the fsync stores every chunk: encode, temporary
               file, fsync, rename), then, timed separately, the unmount (fusermount3 -u until the
               daemon exits; nothing should be left to store). The store is then read with
               zarr-python and compared with the array; the daemon's .zarrfs-stats (chunks
               encoded, store writes, bytes written, store reads) is recorded.
  zarr-python  a fresh array with the same codec, timed: `z[:] = a`; then, timed separately,
               os.sync() (zarr-python's DirectoryStore does not fsync; zarrfs does, per chunk:
               "zarr-python + sync" is the like-for-like durable peer).

os.sync() runs before each timed phase so that neither side pays for the other's dirty pages; the
raw file is read once before each repetition (dd reads it from the page cache).

MB = 1e6 bytes of the array (not of the store). Medians over the repetitions; a ratio is
zarrfs MB/s / zarr-python MB/s within each repetition (> 1: zarrfs faster), then the median.
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
)
CFG["dir"] = os.path.join(CFG["dir"], "write")
CFG["bs"] = env("ZF_BENCH_BS", "4M")           # dd's bs=, as given
ROWS = h.rows_for(CFG["mb"] * MiB)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
MNT = os.path.join(CFG["dir"], "mnt")
LOG = os.path.join(CFG["dir"], "zarrfs.log")


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

def daemon(store, mnt=MNT):
    """zarrfs -o rw on store; close() waits up to ZF_BENCH_PHASE_TIMEOUT for the daemon to store
    what is left, and returns the seconds the unmount took."""
    return h.zarrfs_daemon(CFG, store, mnt, LOG, ["rw"], close_timeout=CFG["phase_timeout"])


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

def zarrfs_write(codec, raw, a):
    store = os.path.join(CFG["dir"], "stores", "zarrfs-%s" % codec)
    fresh_array(store, codec)
    r = {}
    os.sync()
    with daemon(store) as d:
        s0, c0 = d.stats(), d.cpu_s()
        cmd = ["dd", "if=" + raw, "of=" + d.file, "bs=" + CFG["bs"], "conv=notrunc,fsync",
               "status=none"]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=CFG["phase_timeout"])
        except subprocess.TimeoutExpired:
            d.kill()
            raise RuntimeError("%s: dd took more than %.0f s" % (codec, CFG["phase_timeout"]))
        r["dd_s"] = time.perf_counter() - t0
        if p.returncode != 0:
            return None, "dd failed (status %d): %s" % (p.returncode, tail(p.stderr))
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
    got = zarr.open_array(store, mode="r")[...]
    if not np.array_equal(got.view(np.uint32), a.view(np.uint32)):
        bad = np.flatnonzero(got.reshape(-1) != a.reshape(-1))
        raise RuntimeError("%s: WRONG DATA in the store zarrfs wrote: %d elements differ, first "
                           "at %d" % (codec, bad.size, bad[0]))
    del got
    shutil.rmtree(store)
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


def run_codec(codec, raw, a):
    res = {"codec": codec, "label": CODEC_LABEL[codec], "reps": []}
    why = probe(codec)
    if why:
        res["skipped"] = "zarrfs cannot write %s yet: %s" % (CODEC_LABEL[codec], why)
        h.log("  SKIPPED: " + res["skipped"])
        return res
    for rep in range(CFG["reps"]):
        h.prewarm(raw, resident=False)
        r = {"load1_start": os.getloadavg()[0], "zarrfs_first": rep % 2 == 0}
        if r["zarrfs_first"]:
            zf, err = zarrfs_write(codec, raw, a)
            if zf is not None:
                r.update(zarr_write(codec, a))
        else:
            r.update(zarr_write(codec, a))
            zf, err = zarrfs_write(codec, raw, a)
        if zf is None:
            res["skipped"] = "zarrfs write of %s failed: %s" % (CODEC_LABEL[codec], err)
            h.log("  SKIPPED: " + res["skipped"])
            return res
        r.update(zf)
        r["zarrfs_mbps"] = mbps(r["dd_s"])
        r["zarrfs_total_mbps"] = mbps(r["total_s"])
        r["zarr_mbps"] = mbps(r["zarr_s"])
        r["zarr_sync_mbps"] = mbps(r["zarr_s"] + r["zarr_sync_s"])
        r["ratio"] = r["zarrfs_mbps"] / r["zarr_mbps"]
        r["ratio_total"] = r["zarrfs_total_mbps"] / r["zarr_mbps"]
        r["ratio_sync"] = r["zarrfs_total_mbps"] / r["zarr_sync_mbps"]
        r["daemon_cpu_pct"] = 100 * r["daemon_cpu_s"] / r["dd_s"]
        r["zarr_cpu_pct"] = 100 * r["zarr_cpu_s"] / r["zarr_s"]
        r["load1_end"] = os.getloadavg()[0]
        res["reps"].append(r)
        h.log("  rep %d: zarrfs dd+fsync %6.2f s (%5.0f MB/s) + unmount %.2f s | zarr-python "
              "%6.2f s (%5.0f MB/s) + sync %.2f s | ratio %.2f (vs +sync %.2f) | %d chunks "
              "encoded, %d store writes, %d reads | RSS %.0f MiB | load %.1f"
              % (rep + 1, r["dd_s"], r["zarrfs_mbps"], r["unmount_s"], r["zarr_s"],
                 r["zarr_mbps"], r["zarr_sync_s"], r["ratio"], r["ratio_sync"],
                 r["encoded_chunks"], r["store_writes"], r["store_reads"], r["hwm_mib"],
                 r["load1_end"]))
    res.update(h.summarize(res["reps"]))
    return res


# ---------------------------------------------------------------------------- report

def markdown(results):
    med = lambda r, k: r["median"][k]
    lines = [
        "| codec | zarrfs s (dd + fsync) | unmount s | zarr-python s (`z[:] = a`) | ratio "
        "| zarrfs MB/s | zarr-python MB/s | zarr-python + sync s | ratio vs + sync "
        "| store size zarrfs / zarr-python | daemon CPU | zarr-python CPU | daemon peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    notes = []
    for r in results:
        if not r["reps"]:
            lines.append("| %s | skipped | | | | | | | | | | | |" % r["label"])
            notes.append("- %s: %s" % (r["label"], r.get("skipped", "no repetition")))
            continue
        lines.append("| %s | %.2f | %.2f | %.2f | **%.2f** | %.0f | %.0f | %.2f | **%.2f** "
                     "| %.0f / %.0f MB | %.0f%% | %.0f%% | %.0f |" % (
                         r["label"], med(r, "dd_s"), med(r, "unmount_s"), med(r, "zarr_s"),
                         med(r, "ratio"), med(r, "zarrfs_mbps"), med(r, "zarr_mbps"),
                         med(r, "zarr_s") + med(r, "zarr_sync_s"), med(r, "ratio_sync"),
                         med(r, "store_bytes") / 1e6, med(r, "zarr_store_bytes") / 1e6,
                         med(r, "daemon_cpu_pct"), med(r, "zarr_cpu_pct"), med(r, "hwm_mib")))
        if r.get("skipped"):
            notes.append("- %s: %s" % (r["label"], r["skipped"]))
    rng = lambda r, k, f="%.2f": h.rng(r, k, f)
    lines += ["", "| codec | spread (min–max): zarrfs s | zarr-python s | ratio | store reads "
              "during the write | chunks encoded | load average (1 min) |",
              "|---|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        if r["reps"]:
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                r["label"], rng(r, "dd_s"), rng(r, "zarr_s"), rng(r, "ratio"),
                rng(r, "store_reads", "%d"), rng(r, "encoded_chunks", "%d"),
                rng(r, "load1_end", "%.1f")))
    if notes:
        lines += [""] + notes
    return "\n".join(lines)


def main():
    if h.report_cli(lambda rec: markdown(rec["results"])):
        return
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "stores"), exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    unknown = [c for c in CFG["codecs"] if c not in CODEC_LABEL]
    if unknown:
        sys.exit("bench: ZF_BENCH_WRITE_CODECS: unknown %r (known: %s)"
                 % (unknown, ",".join(CODEC_LABEL)))
    s = h.Session("zarrfs write benchmark", CFG)
    s.intro("array %s float32 = %.3f GiB, chunks %s, %d reps, cache_size=%s, dd bs=%s"
            % (SHAPE, NBYTES / GiB, CHUNK, CFG["reps"], CFG["cache_size"], CFG["bs"]))
    raw, a = raw_data()
    results = []
    for codec in CFG["codecs"]:
        h.log("%s:" % CODEC_LABEL[codec])
        results.append(run_codec(codec, raw, a))
    s.finish(os.path.join(CFG["dir"], "results"), "bench-write", results, markdown(results),
             "MB = 1e6 bytes of the array; medians of %d repetitions; ratio = zarrfs MB/s / "
             "zarr-python MB/s (> 1: zarrfs faster), the median of the per-repetition ratios; "
             "'vs + sync' sets zarrfs with its unmount against zarr-python followed by sync."
             % CFG["reps"], shape=SHAPE, chunks=CHUNK, nbytes=NBYTES)
    if not any(r["reps"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
