#!/usr/bin/python3
"""A rectilinear chunk grid (zarr-extensions chunk-grids/rectilinear) against the regular grid
of the same chunk count, streaming the whole array file through zarrfs, side by side in one run
(goal: rectilinear >= 0.95x regular). The FUSE limit of the machine is shown beside them: the
minimal passthrough (bench/passthrough.c) serving the raw bytes, when it is built.

Data: the float32 arrays of harness.py (ROWS x 16384, the generator and seed every driver uses),
written by this driver as two final-v3 stores per codec (zarr.json by hand, chunk files cut with
numpy and encoded with numcodecs, Blosc lz4 5 + shuffle for "lz4"), into ZF_BENCH_DIR/rect:

  regular      chunk_shape [1024, 1024] (4 MiB chunks)
  rectilinear  the same number of chunks, edges alternating along a dimension, each written as
               a run-length pair [edge, 1] (the grid keeps them as runs), in two layouts
               (ZF_BENCH_RECT_LAYOUTS):
    both       [[[768, 1], [1280, 1]] * (ROWS / 2048), [[1280, 1], [768, 1]] * 8]: both
               dimensions vary (a chunk lookup at every run), chunks of 2.25, 3.75 and 6.25 MiB
    rows       [[[512, 1], [1536, 1]] * (ROWS / 2048), 1024]: the first dimension varies,
               chunks of 2 and 6 MiB — whole 2 MiB huge pages, as the regular grid's 4 MiB, so
               that only the grid differs (chunk buffers are 2 MiB-aligned huge pages: a 2.25
               MiB chunk faults and zeroes 4 MiB)

Each repetition, for each side in alternating order, a fresh cached mount (`-o cache_size=...`),
2 GiB of memory touched first, then the whole file read with 4 MiB readv()s into one reused
buffer. Both files are compared with the raw bytes once per codec. Ratios are rectilinear /
regular per repetition, then the median.

  ZF_BENCH_RECT_MIB=256   array size in MiB (a multiple of 2048 rows of 64 KiB)
  ZF_BENCH_RECT_CODECS=none,lz4
  ZF_BENCH_RECT_LAYOUTS=both,rows
  ZF_BENCH_REPS=5, ZF_BENCH_DIR, ZF_BENCH_CACHE, ZF_BENCH_COLD_PRETOUCH=2G, ZARRFS (harness.py)
  ZF_PASSTHROUGH (default build/bench/zf_passthrough; skipped when missing)
  ZF_BENCH_RECT_BASELINE=OTHER/zarrfs: another binary (the code before the rectilinear grid)
               reading the regular store as a fourth side: the regular grid's hot path, before
               and after (ratio regular / baseline)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

TARGET = 0.95


def edges(n, a, b):
    """Alternating edges a, b (a + b = 2048) summing to n (a multiple of 2048), as run-length
    pairs."""
    return [[a, 1], [b, 1]] * (n // 2048)


def layout(name, rows):
    """(chunk_shapes, explicit row edges, explicit column edges) of a rectilinear layout."""
    if name == "both":
        cs = [edges(rows, 768, 1280), edges(H.COLS, 1280, 768)]
        return cs, explicit(cs[0]), explicit(cs[1])
    cs = [edges(rows, 512, 1536), 1024]
    return cs, explicit(cs[0]), [1024] * (H.COLS // 1024)


def explicit(spec):
    return [e for e, c in spec for _ in range(c)]


def codecs_of(codec):
    c = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if codec == "lz4":
        c.append({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                     "shuffle": "shuffle", "typesize": 4,
                                                     "blocksize": 0}})
    return c


def write_store(path, a, grid, row_edges, col_edges, codec):
    stamp = os.path.join(path, ".done")
    want = json.dumps([list(a.shape), grid, codec])
    if os.path.exists(stamp) and open(stamp).read() == want:
        return path
    comp = H.compressor(codec)
    os.makedirs(path, exist_ok=True)
    doc = {"zarr_format": 3, "node_type": "array", "shape": list(a.shape),
           "data_type": "float32", "chunk_grid": grid,
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
           "codecs": codecs_of(codec), "attributes": {}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(doc, f)
    r0 = 0
    for i, re in enumerate(row_edges):
        c0 = 0
        os.makedirs(os.path.join(path, "c", str(i)), exist_ok=True)
        for j, ce in enumerate(col_edges):
            b = np.ascontiguousarray(a[r0:r0 + re, c0:c0 + ce]).tobytes()
            with open(os.path.join(path, "c", str(i), str(j)), "wb") as f:
                f.write(comp.encode(b) if comp else b)
            c0 += ce
        r0 += re
    with open(stamp, "w") as f:
        f.write(want)
    return path


def one_read(cfg, store, mnt, logfile, nbytes, pretouch, passthrough=None, binary=None):
    """Seconds of one whole-file stream on a fresh mount (zarrfs, `binary` instead of cfg's
    zarrfs, or the passthrough over the raw file), and the daemon's CPU seconds."""
    if passthrough:
        d = H.Daemon([passthrough, store, mnt, "-f", "-o", "max_read=1048576"], mnt, logfile,
                     one_file=True)
    else:
        d = H.zarrfs_daemon(dict(cfg, zarrfs=binary or cfg["zarrfs"]), store, mnt, logfile,
                            one_file=True)
    with d:
        path = d.file
        H.pretouch(pretouch)
        c0 = d.cpu_s()
        with H.Watchdog(d, "stream %s" % store, cfg["phase_timeout"]):
            t = H.read_reused(path, nbytes, cfg["bs"])
        return t, d.cpu_s() - c0


def check(cfg, store, mnt, logfile, raw):
    with H.zarrfs_daemon(cfg, store, mnt, logfile, one_file=True) as d:
        with open(d.file, "rb") as f, open(raw, "rb") as g:
            off = 0
            while True:
                x, y = f.read(64 << 20), g.read(64 << 20)
                if x != y:
                    raise RuntimeError("%s: differs from the raw bytes near %d" % (store, off))
                if not x:
                    return
                off += len(x)


def main():
    cfg = H.knobs(5, mib=H.env("ZF_BENCH_RECT_MIB", 256, int),
                  codecs=H.env("ZF_BENCH_RECT_CODECS", "none,lz4").split(","),
                  layouts=H.env("ZF_BENCH_RECT_LAYOUTS", "both,rows").split(","),
                  pretouch=H.parse_size(H.env("ZF_BENCH_COLD_PRETOUCH", "2G")),
                  passthrough=H.env("ZF_PASSTHROUGH", H.DEFAULT_PASSTHROUGH),
                  baseline=H.env("ZF_BENCH_RECT_BASELINE", ""))
    rows = H.rows_for(cfg["mib"] * H.MiB, multiple=2048)
    nbytes = rows * H.COLS * 4
    s = H.Session("bench_rect", cfg)
    s.intro("rectilinear vs regular chunk grid (same chunk count), %d MiB float32, %d "
            "repetitions" % (nbytes // H.MiB, cfg["reps"]))
    work = os.path.join(cfg["dir"], "rect")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(work, "daemons.log")
    raw = H.write_raw(os.path.join(work, "raw-%d.f32" % rows), rows, cfg["seed"])
    a = np.memmap(raw, dtype="<f4", mode="r", shape=(rows, H.COLS))
    regular = ({"name": "regular", "configuration": {"chunk_shape": [1024, 1024]}},
               [1024] * (rows // 1024), [1024] * (H.COLS // 1024))
    use_pt = os.access(cfg["passthrough"], os.X_OK)
    results, rows_md = {}, []
    for lay, codec in [(l_, c_) for l_ in cfg["layouts"] for c_ in cfg["codecs"]]:
        cs, re_, ce_ = layout(lay, rows)
        grids = {"regular": regular,
                 "rectilinear": ({"name": "rectilinear",
                                  "configuration": {"kind": "inline", "chunk_shapes": cs}},
                                 re_, ce_)}
        assert len(re_) * len(ce_) == len(regular[1]) * len(regular[2])
        stores = {}
        for side, (grid, re, ce) in grids.items():
            name = "%s-%s-%d.zarr" % (side if side == "regular" else "rect-" + lay, codec, rows)
            stores[side] = write_store(os.path.join(work, name), a, grid, re, ce, codec)
            H.prewarm(stores[side])
            check(cfg, stores[side], mnt, logfile, raw)
        reps = []
        for r in range(cfg["reps"]):
            rep = {}
            order = ["regular", "rectilinear"] if r % 2 == 0 else ["rectilinear", "regular"]
            for side in order:
                t, cpu = one_read(cfg, stores[side], mnt, logfile, nbytes, cfg["pretouch"])
                rep["%s_mbps" % side] = H.mbps(nbytes, t)
                rep["%s_cpu" % side] = cpu / t
            if cfg["baseline"]:
                t, _cpu = one_read(cfg, stores["regular"], mnt, logfile, nbytes,
                                   cfg["pretouch"], binary=cfg["baseline"])
                rep["baseline_mbps"] = H.mbps(nbytes, t)
                rep["regular_vs_baseline"] = rep["regular_mbps"] / rep["baseline_mbps"]
            if use_pt:
                H.prewarm(raw)
                t, _cpu = one_read(cfg, raw, mnt, logfile, nbytes, cfg["pretouch"],
                                   passthrough=cfg["passthrough"])
                rep["passthrough_mbps"] = H.mbps(nbytes, t)
            rep["ratio"] = rep["rectilinear_mbps"] / rep["regular_mbps"]
            H.log("  %s %s rep %d: regular %.0f, rectilinear %.0f MB/s (%.3f)%s%s"
                  % (lay, codec, r + 1, rep["regular_mbps"], rep["rectilinear_mbps"], rep["ratio"],
                     ", passthrough %.0f" % rep["passthrough_mbps"] if use_pt else "",
                     ", baseline regular %.0f (%.3f)" % (rep["baseline_mbps"],
                                                        rep["regular_vs_baseline"])
                     if cfg["baseline"] else ""))
            reps.append(rep)
        res = H.summarize(reps)
        results[lay + "/" + codec] = {"reps": reps, "summary": res, "chunk_shapes": cs}
        m = res["median"]
        rows_md.append("| %s | %s | %.0f | %.0f | %s | %s | %s | %s | %.0f%% / %.0f%% |"
                       % (lay, H.CODEC_LABEL[codec], m["regular_mbps"], m["rectilinear_mbps"],
                          "**%.3f** (≥ %.2f %s)" % (m["ratio"], TARGET,
                                                    "✓" if m["ratio"] >= TARGET else "✗"),
                          H.rng(res, "ratio", "%.3f"),
                          "%.0f" % m["passthrough_mbps"] if use_pt else "–",
                          "%.0f (%.3f)" % (m["baseline_mbps"], m["regular_vs_baseline"])
                          if cfg["baseline"] else "–",
                          100 * m["regular_cpu"], 100 * m["rectilinear_cpu"]))
    md = ("| layout | codec | regular MB/s | rectilinear MB/s | rectilinear / regular (target) "
          "| spread | passthrough MB/s | baseline regular MB/s (regular / baseline) "
          "| daemon CPU: regular / rectilinear |\n"
          "|---|---|--:|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows_md))
    s.finish(os.path.join(work, "results"), "bench-rect", results, md,
             "MB = 1e6 bytes; medians of %d; ratio per repetition, then the median; every read "
             "on a fresh cached mount (-o cache_size=%s), 4 MiB readv()s into one buffer, %s "
             "touched before each" % (cfg["reps"], cfg["cache_size"],
                                       H.env("ZF_BENCH_COLD_PRETOUCH", "2G")))


if __name__ == "__main__":
    main()
