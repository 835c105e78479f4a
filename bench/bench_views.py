#!/usr/bin/python3
"""Reading a TIFF view (`-o sidecars=tif`, NAME.tif) against reading the array file itself, on
the same kind of mount, side by side in one run (issue 20's goal: the view at >= 0.8x the array
file, stream and numpy.fromfile).

For each codec (ZF_BENCH_VIEWS_CODECS, default none and lz4 = Blosc lz4 5 + shuffle) the same
float32 arrays as bench_cold.py (ROWS x 16384, chunks 1024 x 1024, written by zarr-python 2.13
into ZF_BENCH_DIR/data, reused while their stamp matches). Each repetition, for the array file
and then for its view, each on a fresh `-o sidecars=tif,cache_size=...` mount (cached mode, the
view's own path; the array file's read is the limit of this path), with 2 GiB of memory touched
first: the whole file with 4 MiB readv()s into one reused buffer, then numpy.fromfile of the
pixels (the view: from the header's end). Every view's pixels are compared with the array file's
bytes once per codec. Ratios are view / array per repetition, then the median.

  ZF_BENCH_VIEWS_MIB=512   array size in MiB
  ZF_BENCH_VIEWS_CODECS=none,lz4
  ZF_BENCH_REPS=5, ZF_BENCH_DIR, ZF_BENCH_CACHE, ZF_BENCH_COLD_PRETOUCH=2G, ZARRFS (harness.py)
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

TARGET = 0.8


def one_read(cfg, store, mnt, logfile, name, nbytes, how, pretouch):
    """Seconds of one read of `name` (the array's file or its view) on a fresh mount, the
    daemon's CPU seconds, and the pixels' offset in the file."""
    with H.zarrfs_daemon(cfg, store, mnt, logfile, opts=["sidecars=tif"],
                         one_file=False) as d:
        path = os.path.join(mnt, name)
        size = os.path.getsize(path)
        offset = size - nbytes
        H.pretouch(pretouch)
        c0 = d.cpu_s()
        with H.Watchdog(d, "%s %s" % (how, name), cfg["phase_timeout"]):
            if how == "stream":
                t = H.read_reused(path, size, cfg["bs"])
            else:
                t0 = time.perf_counter()
                a = np.fromfile(path, dtype="<f4", offset=offset)
                t = time.perf_counter() - t0
                if a.nbytes != nbytes:
                    raise RuntimeError("%s: fromfile gave %d bytes" % (path, a.nbytes))
                del a
        return t, d.cpu_s() - c0, offset


def check(cfg, store, mnt, logfile, base, nbytes):
    with H.zarrfs_daemon(cfg, store, mnt, logfile, opts=["sidecars=tif"], one_file=False):
        array = os.path.join(mnt, base)
        view = array + ".tif"
        offset = os.path.getsize(view) - nbytes
        with open(array, "rb") as fa, open(view, "rb") as fv:
            fv.seek(offset)
            done = 0
            while done < nbytes:
                a, v = fa.read(64 << 20), fv.read(64 << 20)
                if a != v or not a:
                    raise RuntimeError("%s: the view's pixels differ from the array near %d"
                                       % (view, done))
                done += len(a)
        return offset


def main():
    cfg = H.knobs(5, mib=H.env("ZF_BENCH_VIEWS_MIB", 512, int),
                  codecs=H.env("ZF_BENCH_VIEWS_CODECS", "none,lz4").split(","),
                  pretouch=H.parse_size(H.env("ZF_BENCH_COLD_PRETOUCH", "2G")))
    rows = H.rows_for(cfg["mib"] * H.MiB)
    nbytes = rows * H.COLS * 4
    s = H.Session("bench_views", cfg)
    s.intro("TIFF views against their array files, %d MiB float32, %d repetitions"
            % (cfg["mib"], cfg["reps"]))
    work = os.path.join(cfg["dir"], "views")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(work, "daemons.log")
    results, rows_md = {}, []
    for codec in cfg["codecs"]:
        store = H.v2_store(cfg["dir"], codec, rows, cfg["seed"])
        base = os.path.basename(store)[:-len(".zarr")]
        H.prewarm(store)
        header = check(cfg, store, mnt, logfile, base, nbytes)
        reps = []
        for r in range(cfg["reps"]):
            rep = {}
            for how in ("stream", "fromfile"):
                for kind, name in (("array", base), ("view", base + ".tif")):
                    t, cpu, _ = one_read(cfg, store, mnt, logfile, name, nbytes, how,
                                         cfg["pretouch"])
                    rep["%s_%s_mbps" % (how, kind)] = H.mbps(nbytes, t)
                    rep["%s_%s_cpu" % (how, kind)] = cpu / t
                rep["%s_ratio" % how] = rep["%s_view_mbps" % how] / rep["%s_array_mbps" % how]
            H.log("  %s rep %d: stream %.0f / %.0f MB/s, fromfile %.0f / %.0f MB/s"
                  % (codec, r + 1, rep["stream_array_mbps"], rep["stream_view_mbps"],
                     rep["fromfile_array_mbps"], rep["fromfile_view_mbps"]))
            reps.append(rep)
        res = H.summarize(reps)
        results[codec] = {"reps": reps, "summary": res, "header_bytes": header}
        m = res["median"]
        ok = lambda x: "✓" if x >= TARGET else "✗"  # noqa: E731
        rows_md.append(
            "| %s | %d | %.0f | %.0f | **%.2f** (≥ %.1f %s) | %s | %.0f | %.0f | **%.2f** (≥ %.1f %s) "
            "| %s | %.0f%% / %.0f%% |"
            % (H.CODEC_LABEL[codec], header, m["stream_array_mbps"], m["stream_view_mbps"],
               m["stream_ratio"], TARGET, ok(m["stream_ratio"]),
               H.rng(res, "stream_ratio", "%.2f"), m["fromfile_array_mbps"],
               m["fromfile_view_mbps"], m["fromfile_ratio"], TARGET, ok(m["fromfile_ratio"]),
               H.rng(res, "fromfile_ratio", "%.2f"), 100 * m["stream_array_cpu"],
               100 * m["stream_view_cpu"]))
    md = ("| codec | TIFF header bytes | stream: array file MB/s | view MB/s | view / array "
          "(target) | spread | `numpy.fromfile`: array file MB/s | view MB/s | view / array "
          "(target) | spread | daemon CPU, stream: array / view |\n"
          "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows_md))
    s.finish(os.path.join(work, "results"), "bench-views", results, md,
             "MB = 1e6 bytes; medians of %d; ratios per repetition, then the median; every read "
             "on a fresh cached mount (-o sidecars=tif,cache_size=%s), %s touched before each"
             % (cfg["reps"], cfg["cache_size"], H.env("ZF_BENCH_COLD_PRETOUCH", "2G")))


if __name__ == "__main__":
    main()
