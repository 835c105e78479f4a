#!/usr/bin/python3
"""Reading the views (`-o sidecars=tif,nc`: NAME.tif, and GROUP.nc, whose little-endian data
is byte-swapped while served) against reading the array file itself, on the same kind of mount,
side by side in one run (issue 20's goal: each view at >= 0.8x the array file, stream and
numpy.fromfile).

For each codec (ZF_BENCH_VIEWS_CODECS, default none and lz4 = Blosc lz4 5 + shuffle) the same
float32 arrays as bench_cold.py (ROWS x 16384, chunks 1024 x 1024, written by zarr-python 2.13
into ZF_BENCH_DIR/data, reused while their stamp matches), as array "a" of a group (the chunk
files hard-linked into ZF_BENCH_DIR/views/group-CODEC.zarr). Each repetition, for the array file,
its TIFF view and the group's netCDF view, each on a fresh `-o sidecars=tif,nc,cache_size=...`
mount (cached mode, the views' own path; the array file's read is the limit of this path), with
2 GiB of memory touched first: the whole file with 4 MiB readv()s into one reused buffer, then
numpy.fromfile of the data (a view: from its header's end; the netCDF view's as big-endian
float32). Every view's data is compared with the array file's bytes once per codec. Ratios are
view / array per repetition, then the median.

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


OPTS = ["sidecars=tif,nc"]


def group_store(root, src, codec):
    """A group holding `src`'s array as "a" (its files hard-linked)."""
    g = os.path.join(root, "group-%s.zarr" % codec)
    stamp = os.path.join(g, ".done")
    if os.path.exists(stamp) and open(stamp).read() == src:
        return g
    if os.path.exists(g):
        import shutil
        shutil.rmtree(g)
    os.makedirs(os.path.join(g, "a"))
    with open(os.path.join(g, ".zgroup"), "w") as f:
        f.write('{"zarr_format": 2}')
    for n in os.listdir(src):
        if not n.startswith(".done"):
            os.link(os.path.join(src, n), os.path.join(g, "a", n))
    with open(stamp, "w") as f:
        f.write(src)
    return g


def one_read(cfg, store, mnt, logfile, name, nbytes, how, pretouch):
    """Seconds of one read of `name` (the array's file or a view) on a fresh mount, the
    daemon's CPU seconds, and the data's offset in the file."""
    with H.zarrfs_daemon(cfg, store, mnt, logfile, opts=OPTS, one_file=False) as d:
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
                a = np.fromfile(path, dtype=">f4" if name.endswith(".nc") else "<f4",
                                offset=offset)
                t = time.perf_counter() - t0
                if a.nbytes != nbytes:
                    raise RuntimeError("%s: fromfile gave %d bytes" % (path, a.nbytes))
                del a
        return t, d.cpu_s() - c0, offset


def check(cfg, store, mnt, logfile, views, nbytes):
    """Each view's data equals the array file's bytes (the netCDF view's big-endian); the
    views' header sizes."""
    headers = {}
    with H.zarrfs_daemon(cfg, store, mnt, logfile, opts=OPTS, one_file=False):
        array = os.path.join(mnt, "a")
        for kind, name in views:
            view = os.path.join(mnt, name)
            offset = os.path.getsize(view) - nbytes
            with open(array, "rb") as fa, open(view, "rb") as fv:
                fv.seek(offset)
                done = 0
                while done < nbytes:
                    a, v = fa.read(64 << 20), fv.read(64 << 20)
                    if kind == "nc":
                        a = np.frombuffer(a, "<f4").astype(">f4").tobytes()
                    if a != v or not a:
                        raise RuntimeError("%s: the view's data differ from the array near %d"
                                           % (view, done))
                    done += len(a)
            headers[kind] = offset
    return headers


def main():
    cfg = H.knobs(5, mib=H.env("ZF_BENCH_VIEWS_MIB", 512, int),
                  codecs=H.env("ZF_BENCH_VIEWS_CODECS", "none,lz4").split(","),
                  pretouch=H.parse_size(H.env("ZF_BENCH_COLD_PRETOUCH", "2G")))
    rows = H.rows_for(cfg["mib"] * H.MiB)
    nbytes = rows * H.COLS * 4
    s = H.Session("bench_views", cfg)
    s.intro("TIFF and netCDF views against their array files, %d MiB float32, %d repetitions"
            % (cfg["mib"], cfg["reps"]))
    work = os.path.join(cfg["dir"], "views")
    mnt = os.path.join(work, "mnt")
    os.makedirs(work, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(work, "daemons.log")
    results, rows_md = {}, []
    ok = lambda x: "✓" if x >= TARGET else "✗"  # noqa: E731
    for codec in cfg["codecs"]:
        src = H.v2_store(cfg["dir"], codec, rows, cfg["seed"])
        store = group_store(work, src, codec)
        views = (("tif", "a.tif"), ("nc", os.path.basename(store)[:-len(".zarr")] + ".nc"))
        H.prewarm(store)
        headers = check(cfg, store, mnt, logfile, views, nbytes)
        reps = []
        for r in range(cfg["reps"]):
            rep = {}
            for how in ("stream", "fromfile"):
                for kind, name in (("array", "a"),) + views:
                    t, cpu, _ = one_read(cfg, store, mnt, logfile, name, nbytes, how,
                                         cfg["pretouch"])
                    rep["%s_%s_mbps" % (how, kind)] = H.mbps(nbytes, t)
                    rep["%s_%s_cpu" % (how, kind)] = cpu / t
                for kind, _ in views:
                    rep["%s_%s_ratio" % (how, kind)] = (rep["%s_%s_mbps" % (how, kind)]
                                                        / rep["%s_array_mbps" % how])
            H.log("  %s rep %d: stream %.0f / %.0f / %.0f MB/s, fromfile %.0f / %.0f / %.0f MB/s"
                  " (array / tif / nc)"
                  % (codec, r + 1, rep["stream_array_mbps"], rep["stream_tif_mbps"],
                     rep["stream_nc_mbps"], rep["fromfile_array_mbps"], rep["fromfile_tif_mbps"],
                     rep["fromfile_nc_mbps"]))
            reps.append(rep)
        res = H.summarize(reps)
        results[codec] = {"reps": reps, "summary": res, "header_bytes": headers}
        m = res["median"]
        for kind, _ in views:
            rows_md.append(
                "| %s | %s | %d | %.0f | %.0f | **%.2f** (≥ %.1f %s) | %s | %.0f | %.0f | "
                "**%.2f** (≥ %.1f %s) | %s | %.0f%% / %.0f%% |"
                % (H.CODEC_LABEL[codec], {"tif": "TIFF", "nc": "netCDF (swapped)"}[kind],
                   headers[kind], m["stream_array_mbps"], m["stream_%s_mbps" % kind],
                   m["stream_%s_ratio" % kind], TARGET, ok(m["stream_%s_ratio" % kind]),
                   H.rng(res, "stream_%s_ratio" % kind, "%.2f"), m["fromfile_array_mbps"],
                   m["fromfile_%s_mbps" % kind], m["fromfile_%s_ratio" % kind], TARGET,
                   ok(m["fromfile_%s_ratio" % kind]),
                   H.rng(res, "fromfile_%s_ratio" % kind, "%.2f"), 100 * m["stream_array_cpu"],
                   100 * m["stream_%s_cpu" % kind]))
    md = ("| codec | view | header bytes | stream: array file MB/s | view MB/s | view / array "
          "(target) | spread | `numpy.fromfile`: array file MB/s | view MB/s | view / array "
          "(target) | spread | daemon CPU, stream: array / view |\n"
          "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows_md))
    s.finish(os.path.join(work, "results"), "bench-views", results, md,
             "MB = 1e6 bytes; medians of %d; ratios per repetition, then the median; every read "
             "on a fresh cached mount (-o sidecars=tif,nc,cache_size=%s), %s touched before each"
             % (cfg["reps"], cfg["cache_size"], H.env("ZF_BENCH_COLD_PRETOUCH", "2G")))


if __name__ == "__main__":
    main()
