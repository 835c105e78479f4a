#!/usr/bin/python3
"""zarrfs cold reads against the FUSE limits of the machine (a minimal libfuse passthrough of the
same bytes, cached and direct) and against zarr-python 2.13, in the same run: zarrfs in its default
(cached) mode and with -o direct_io, side by side. Part 3 of the issue "Bulk reads and writes past
the page cache" (its goals are the targets marked in the tables).

Run it through bench/cold.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy, the zarrfs binary and zf_passthrough
(bench/passthrough.c, `ninja -C build bench/zf_passthrough`), FUSE, and root for the mounts'
read_ahead_kb. `bench_cold.py --perf` profiles one more zarrfs read per codec (or
ZF_BENCH_COLD_PERF=lz4,zlib); `bench_cold.py --report FILE.json` re-renders the tables.

Data: bench.py's float32 array (its generator and seed), ZF_BENCH_COLD_MIB (512) MiB, shape
(ROWS, 16384), chunks 1024 x 1024 (4 MiB), per codec (none, blosc lz4 5 +shuffle, zstd 1, zlib 1)
written once with zarr-python into ZF_BENCH_DIR/data (the stores of bench.py: same paths, same
stamps), and the same bytes as one raw file (ZF_BENCH_DIR/data/raw-ROWS-SEED.f4), which
zf_passthrough serves.

Four mounted sides, each read on a fresh mount (empty chunk cache, nothing of the file in the page
cache), all with read_ahead_kb set to ZF_BENCH_READAHEAD_KB (1024: 1 MiB READ requests):

  zarrfs cached         zarrfs -o cache_size=ZF_BENCH_CACHE (the default mode: page cache,
                        keep_cache)
  zarrfs direct         the same with -o direct_io (FOPEN_DIRECT_IO: no page cache)
  passthrough cached    zf_passthrough RAW MNT -o max_read=1048576 (the cached FUSE limit)
  passthrough direct    the same with -o direct_io (the direct FUSE limit)

Per codec and repetition, after reading the store's files and the raw file once (every side reads
from the page cache), in two passes: "pre-touched" (ZF_BENCH_COLD_PRETOUCH, 2 GiB, of fresh memory
touched and freed just before each timed read: on these VMs first touch of memory the host has
reclaimed is slow and erratic) and "untouched" (no such step; ZF_BENCH_COLD_UNTOUCHED=0 skips it):

  read() into one reused buffer   ZF_BENCH_BS (4 MiB) readv()s into one 4 MiB buffer, each of
                                  the four sides; for zarrfs cached also a second read of the
                                  same mount, timed, with the daemon's CPU time over it and the
                                  file's resident fraction before it (it should come from the
                                  page cache)
  numpy.fromfile                  numpy.fromfile (a new array) of each of the four sides, and
                                  zarr-python's z[:] after zarr.open

The sides of each kind run in alternating order (the list above in even repetitions, reversed in
odd ones). Every read is compared byte for byte with the raw file (mapped, in blocks): the arrays
of fromfile and z[:] directly, the reused-buffer reads by reading the mount's file once more.
Recorded per read: seconds, the daemon's CPU time (all threads) over the read and its VmHWM, the
mount's read_ahead_kb, the seconds the pre-touch took. The daemon's VmHWM is set against
cache_size + 64 MiB.

Random reads (in the first pass only; ZF_BENCH_COLD_RANDOM=0 skips them): bench.py's
measurement, reused: ZF_BENCH_COLD_RANDOM (20000) random 4 KiB-aligned os.pread(4096)s on a fresh
zarrfs mount, cached and direct, the same preads through the direct passthrough (a FUSE request,
a pread of the raw file and a reply per read: the daemon-side cost of a read when nothing is
decoded), and zarr-python reading the same 4096 bytes as
z[i, j:j+1024] (harness.zarr_random), time-boxed to ZF_BENCH_ZARR_RANDOM_S (5) seconds; every
read checked.

MB = 1e6 bytes. Medians over the repetitions; ratios (zarrfs / passthrough in the same mode,
zarrfs / zarr-python) are taken within each repetition, then their median, and set against the
issue's targets (reused buffer and fromfile with -o direct_io, the default mode guarded against
regression, random reads, daemon RSS).
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np

import harness as h
from harness import CHUNK, COLS, MiB, GiB, env, log

CFG = h.knobs(
    5,
    mib=env("ZF_BENCH_COLD_MIB", 512.0, float),
    codecs=env("ZF_BENCH_COLD_CODECS", "none,lz4,zstd,zlib").split(","),
    opts=env("ZF_BENCH_COLD_OPTS", ""),
    readahead_kb=env("ZF_BENCH_READAHEAD_KB", 1024, int),
    max_read=env("ZF_BENCH_COLD_MAX_READ", 1048576, int),
    pretouch=h.parse_size(env("ZF_BENCH_COLD_PRETOUCH", "2G")),
    untouched=env("ZF_BENCH_COLD_UNTOUCHED", 1, int),
    perf=env("ZF_BENCH_COLD_PERF", ""),
    perf_read=env("ZF_BENCH_COLD_PERF_READ", "reused"),
    perf_lines=env("ZF_BENCH_COLD_PERF_LINES", 60, int),
    passthrough=env("ZF_PASSTHROUGH", h.DEFAULT_PASSTHROUGH),
    random=env("ZF_BENCH_COLD_RANDOM", 20000, int),
    zarr_random_s=env("ZF_BENCH_ZARR_RANDOM_S", 5.0, float),
)
ROWS = h.rows_for(CFG["mib"] * MiB)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
COLD = os.path.join(CFG["dir"], "cold")
MNT = os.path.join(COLD, "mnt")
MNT_PT = os.path.join(COLD, "mnt-pt")
LOG = os.path.join(COLD, "daemons.log")
RESULTS = os.path.join(COLD, "results")

# the targets: (ratio, codec) -> at least. Keys: SIDE_RATIO with reused / fromfile, the
# ratio pt (zarrfs cached / passthrough cached), ptd (zarrfs direct / passthrough direct), zarr
# (zarrfs cached / zarr-python), zarrd (zarrfs direct / zarr-python).
TARGETS = {
    # -o direct_io
    ("reused_ptd_ratio", "none"): 0.7,
    ("reused_zarrd_ratio", "lz4"): 1.4,
    ("reused_zarrd_ratio", "zstd"): 1.6,
    ("reused_zarrd_ratio", "zlib"): 3.5,
    ("fromfile_zarrd_ratio", "lz4"): 1.2,
    ("fromfile_zarrd_ratio", "zstd"): 1.5,
    # the default (cached) mode, guarded against regression
    ("reused_pt_ratio", "none"): 0.8,
    ("reused_pt_ratio", "lz4"): 0.7,
    ("fromfile_pt_ratio", "lz4"): 0.8,
    ("fromfile_zarr_ratio", "zstd"): 1.0,
}
RANDOM_TARGET = 10.0                    # direct random 4 KiB preads / zarr-python's, every codec
RSS_SLACK_MIB = h.RSS_SLACK_MIB
# the four mounted sides: key -> (program, direct_io)
SIDES = {"zf": ("zarrfs", False), "zfd": ("zarrfs", True), "pt": ("passthrough", False),
         "ptd": ("passthrough", True)}
SIDE_LABEL = {"zf": "zarrfs cached", "zfd": "zarrfs direct", "pt": "passthrough cached",
              "ptd": "passthrough direct"}
MODES = {"pretouch": "pre-touched", "untouched": "untouched"}


def modes():
    return (["pretouch"] if CFG["pretouch"] > 0 else []) + \
        (["untouched"] if CFG["untouched"] or CFG["pretouch"] <= 0 else [])


# ---------------------------------------------------------------------------- the reads

def mount(side, store, raw):
    prog, direct = SIDES[side]
    if prog == "zarrfs":
        return h.zarrfs_daemon(CFG, store, MNT, LOG, [CFG["opts"], direct and "direct_io"],
                               nbytes=NBYTES)
    opts = "max_read=%d%s" % (CFG["max_read"], ",direct_io" if direct else "")
    return h.Daemon([CFG["passthrough"], raw, MNT_PT, "-f", "-o", opts], MNT_PT, LOG,
                    nbytes=NBYTES)


def fromfile(path):
    t0 = time.perf_counter()
    a = np.fromfile(path, dtype="<f4")
    return time.perf_counter() - t0, a


def mounted_read(side, kind, store, raw, ref, touch):
    """One timed read of a fresh mount: {s, cpu_s, hwm_mib, readahead_kb, resident, touch_s}, and
    for the reused-buffer read of zarrfs cached the second read (second_s, second_cpu_s,
    second_resident: the file's resident fraction before it)."""
    what = "%s %s read" % (SIDE_LABEL[side], kind)
    r = {}
    with mount(side, store, raw) as d, h.Watchdog(d, what, CFG["phase_timeout"]):
        r["readahead_kb"] = d.readahead_kb(CFG["readahead_kb"]) or 0
        # a direct_io file has no page cache (and refuses the shared mapping mincore needs)
        r["resident"] = 0.0 if SIDES[side][1] else h.resident_fraction(d.file)
        buf = bytearray(CFG["bs"])                      # touched (zeroed) before the clock
        r["touch_s"] = h.pretouch(touch)
        c0 = d.cpu_s()
        if kind == "reused":
            r["s"] = h.read_reused(d.file, NBYTES, CFG["bs"], buf)
        else:
            r["s"], a = fromfile(d.file)
        r["cpu_s"] = d.cpu_s() - c0
        r["hwm_mib"] = d.hwm_mib()
        if kind == "reused" and side == "zf":           # the second read: from the page cache
            r["second_resident"] = h.resident_fraction(d.file)
            c0 = d.cpu_s()
            r["second_s"] = h.read_reused(d.file, NBYTES, CFG["bs"], buf)
            r["second_cpu_s"] = d.cpu_s() - c0
        if kind == "reused":                            # read once more and compared
            h.check_blocks(what, d.file, ref)
        else:
            h.check_blocks(what, a, ref)
            del a
    return r


def zarr_read(store, ref, touch):
    import zarr
    z = zarr.open(store, mode="r")
    r = {"touch_s": h.pretouch(touch)}
    c0, t0 = time.process_time(), time.perf_counter()
    a = z[:]
    r["s"] = time.perf_counter() - t0
    r["cpu_s"] = time.process_time() - c0
    h.check_blocks("zarr-python z[:]", a, ref)
    del a
    return r


def rss_limit_mib():
    return h.parse_size(CFG["cache_size"]) / MiB + RSS_SLACK_MIB


def one_rep(codec, store, raw, ref, rep, mode):
    touch = CFG["pretouch"] if mode == "pretouch" else 0
    r = {"load1_start": os.getloadavg()[0], "order_reversed": rep % 2 == 1}
    r["store_resident"] = h.prewarm(store)
    r["raw_resident"] = h.prewarm(raw)
    flip = (lambda seq: seq) if rep % 2 == 0 else (lambda seq: seq[::-1])
    touch_s = []
    for kind in ("reused", "fromfile"):
        for side in flip(list(SIDES) + (["zarr"] if kind == "fromfile" else [])):
            if side == "zarr":
                x = zarr_read(store, ref, touch)
                r["zarr_s"], r["zarr_cpu_s"] = x["s"], x["cpu_s"]
            else:
                x = mounted_read(side, kind, store, raw, ref, touch)
                for k in ("s", "cpu_s", "hwm_mib", "readahead_kb", "resident"):
                    r["%s_%s_%s" % (kind, side, k)] = x[k]
                for k in ("second_s", "second_cpu_s", "second_resident"):
                    if k in x:
                        r[k] = x[k]
            touch_s.append(x["touch_s"])
    r["zarr_mbps"] = h.mbps(NBYTES, r["zarr_s"])
    r["zarr_cpu_pct"] = 100 * r["zarr_cpu_s"] / r["zarr_s"]
    r["second_mbps"] = h.mbps(NBYTES, r["second_s"])
    r["second_cpu_pct"] = 100 * r["second_cpu_s"] / r["second_s"]
    for kind in ("reused", "fromfile"):
        for side in SIDES:
            k = "%s_%s" % (kind, side)
            r[k + "_mbps"] = h.mbps(NBYTES, r[k + "_s"])
            r[k + "_cpu_pct"] = 100 * r[k + "_cpu_s"] / r[k + "_s"]
        m = lambda side: r["%s_%s_mbps" % (kind, side)]
        r[kind + "_pt_ratio"] = m("zf") / m("pt")
        r[kind + "_ptd_ratio"] = m("zfd") / m("ptd")
        r[kind + "_zarr_ratio"] = m("zf") / r["zarr_mbps"]
        r[kind + "_zarrd_ratio"] = m("zfd") / r["zarr_mbps"]
    r["hwm_mib"] = max(r["reused_zf_hwm_mib"], r["fromfile_zf_hwm_mib"])
    r["hwm_d_mib"] = max(r["reused_zfd_hwm_mib"], r["fromfile_zfd_hwm_mib"])
    r["touch_s"] = max(touch_s)
    r["load1_end"] = os.getloadavg()[0]
    log("  rep %d %-11s reused MB/s: zarrfs %5.0f / direct %5.0f, passthrough %5.0f / direct %5.0f"
        " (x%.2f / x%.2f) | fromfile: zarrfs %5.0f / direct %5.0f, passthrough %5.0f / direct "
        "%5.0f, zarr-python %5.0f (direct x%.2f zarr-python) | 2nd read %5.0f MB/s | RSS %4.0f / "
        "%4.0f MiB | touch %.2f s | load %.1f"
        % (rep + 1, MODES[mode] + ":", r["reused_zf_mbps"], r["reused_zfd_mbps"],
           r["reused_pt_mbps"], r["reused_ptd_mbps"], r["reused_pt_ratio"],
           r["reused_ptd_ratio"], r["fromfile_zf_mbps"], r["fromfile_zfd_mbps"],
           r["fromfile_pt_mbps"], r["fromfile_ptd_mbps"], r["zarr_mbps"],
           r["fromfile_zarrd_ratio"], r["second_mbps"], r["hwm_mib"], r["hwm_d_mib"],
           r["touch_s"], r["load1_end"]))
    return r


def random_rep(store, raw, ref, rep):
    """bench.py's random reads: zarrfs cached and direct (fresh mounts), the direct passthrough
    (one request, one pread of the file, one reply per read), zarr-python time-boxed."""
    offsets = h.random_offsets(1000 + rep, CFG["random"], NBYTES)
    r = {}
    for side in ("zf", "zfd", "ptd"):
        with mount(side, store, raw) as d, h.Watchdog(d, "%s random preads" % SIDE_LABEL[side],
                                                       CFG["phase_timeout"]):
            d.readahead_kb(CFG["readahead_kb"])
            ends, blobs = h.timed_preads(d.file, offsets)
            r["random_%s_hwm_mib" % side] = d.hwm_mib()
        h.check_preads("%s random pread" % SIDE_LABEL[side], offsets, blobs, ref)
        del blobs
        r["random_%s_rps" % side] = len(offsets) / float(ends[-1])
    n, t = h.zarr_random(store, offsets, ref, CFG["zarr_random_s"])
    r["zarr_random_n"], r["zarr_random_rps"] = n, n / t
    r["random_ratio"] = r["random_zf_rps"] / r["zarr_random_rps"]
    r["random_d_ratio"] = r["random_zfd_rps"] / r["zarr_random_rps"]
    r["random_ptd_ratio"] = r["random_ptd_rps"] / r["zarr_random_rps"]
    r["random_d_pt_ratio"] = r["random_zfd_rps"] / r["random_ptd_rps"]
    log("  rep %d random 4 KiB: zarrfs %6.0f / direct %6.0f reads/s, passthrough direct %6.0f, "
        "zarr-python %5.0f reads/s (n=%d): x%.0f / x%.0f" % (
            rep + 1, r["random_zf_rps"], r["random_zfd_rps"], r["random_ptd_rps"],
            r["zarr_random_rps"], n, r["random_ratio"], r["random_d_ratio"]))
    return r


# ---------------------------------------------------------------------------- perf

def perf_codecs():
    if CFG["perf"] in ("", "0", "no"):
        return []
    if CFG["perf"] in ("1", "all", "yes"):
        return list(CFG["codecs"])
    return [c for c in CFG["perf"].split(",") if c in CFG["codecs"]]


def profile(codec, store, raw, stamp):
    """One more zarrfs read (ZF_BENCH_COLD_PERF_READ: reused or fromfile) on a fresh mount under
    `perf record -e cpu-clock -g -p DAEMON` (cpu-clock: these VMs have no hardware PMU, so the
    default `cycles` records nothing); the top entries of `perf report --no-children` go to
    RESULTS/perf-STAMP-CODEC.txt. Returns what the JSON records."""
    base = os.path.join(RESULTS, "perf-%s-%s" % (stamp, codec))
    out = {"file": base + ".txt", "data": base + ".data", "read": CFG["perf_read"]}
    touch = CFG["pretouch"]
    with mount("zf", store, raw) as d, h.Watchdog(d, "perf read", CFG["phase_timeout"]):
        d.readahead_kb(CFG["readahead_kb"])
        buf = bytearray(CFG["bs"])
        h.pretouch(touch)
        try:
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-p", str(d.pid),
                                     "-o", out["data"]], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            out["error"] = "perf cannot run: %s (apt-get install -y linux-perf)" % e
            return out
        time.sleep(1.0)                                 # attached to every thread
        if perf.poll() is not None:
            out["error"] = "perf record exited: %s" % perf.stdout.read().strip()[-500:]
            return out
        c0 = d.cpu_s()
        if CFG["perf_read"] == "fromfile":
            t, a = fromfile(d.file)
            del a
        else:
            t = h.read_reused(d.file, NBYTES, CFG["bs"], buf)
        out["daemon_cpu_s"] = d.cpu_s() - c0
        perf.send_signal(signal.SIGINT)
        out["perf_record"] = perf.communicate(timeout=120)[0].strip()[-500:]
    out["mbps"] = h.mbps(NBYTES, t)
    flat = subprocess.run(["perf", "report", "-i", out["data"], "--stdio", "--no-children",
                           "-g", "none", "--percent-limit", "0.5"],
                          capture_output=True, text=True, timeout=300)
    graph = subprocess.run(["perf", "report", "-i", out["data"], "--stdio", "--no-children",
                            "--percent-limit", "2"], capture_output=True, text=True, timeout=300)
    entries = [l for l in flat.stdout.splitlines() if l.strip() and not l.startswith("#")]
    out["top"] = entries[:10]
    with open(out["file"], "w") as f:
        f.write("# zarrfs %s cold read of %s (%s, %.0f MiB) under perf record -e cpu-clock -g "
                "-p <daemon>: %.0f MB/s, daemon CPU %.2f s\n# %s\n\n"
                % (CFG["perf_read"], codec, h.CODEC_LABEL[codec], NBYTES / MiB, out["mbps"],
                   out["daemon_cpu_s"], out["perf_record"].replace("\n", " ")))
        f.write("## perf report --stdio --no-children -g none (top %d entries)\n\n"
                % CFG["perf_lines"])
        f.write("\n".join(entries[:CFG["perf_lines"]]) + "\n\n")
        f.write("## perf report --stdio --no-children --percent-limit 2 (call graphs)\n\n")
        f.write("\n".join(graph.stdout.splitlines()[:600]) + "\n")
        if flat.returncode or graph.returncode:
            f.write("\nperf report failed: %s\n" % (flat.stderr + graph.stderr)[-2000:])
    log("  perf: %s (%.0f MB/s under perf); top: %s"
        % (out["file"], out["mbps"], " | ".join(" ".join(e.split()) for e in entries[:3])))
    return out


# ---------------------------------------------------------------------------- runs and report

def run_codec(codec, raw, stamp):
    store = h.v2_store(CFG["dir"], codec, ROWS, CFG["seed"])
    res = {"codec": codec, "label": h.CODEC_LABEL[codec], "store": store,
           "store_bytes": h.store_bytes(store), "modes": {m: {"reps": []} for m in modes()}}
    res["compression_ratio"] = NBYTES / res["store_bytes"]
    ref = np.memmap(raw, dtype=np.uint8, mode="r")      # the reference: the raw file's bytes
    if CFG["random"] > 0:
        res["random"] = {"reps": []}
    for rep in range(CFG["reps"]):
        for m in modes():
            res["modes"][m]["reps"].append(one_rep(codec, store, raw, ref, rep, m))
        if CFG["random"] > 0:
            res["random"]["reps"].append(random_rep(store, raw, ref, rep))
    for m in modes():
        res["modes"][m].update(h.summarize(res["modes"][m]["reps"]))
    if CFG["random"] > 0:
        res["random"].update(h.summarize(res["random"]["reps"]))
    if codec in perf_codecs():
        res["perf"] = profile(codec, store, raw, stamp)
        if "error" in res["perf"]:
            log("  perf: " + res["perf"]["error"])
    del ref
    return res


def ratio_cell(res, mode, key, codec):
    return h.goal_cell(res["modes"][mode]["median"][key], TARGETS.get((key, codec)))


def markdown(results, cfg):
    lines = []
    limit = h.parse_size(cfg["cache_size"]) / MiB + RSS_SLACK_MIB
    for mode in [m for m in MODES if m in results[0]["modes"]]:
        if lines:
            lines.append("")
        if mode == "pretouch":
            lines.append("Pre-touched: %s of fresh memory touched and freed just before each timed "
                         "read." % ("%.0f GiB" % (cfg["pretouch"] / GiB) if cfg["pretouch"] >= GiB
                                    else "%.0f MiB" % (cfg["pretouch"] / MiB)))
        else:
            lines.append("Untouched: no memory touched before the reads.")
        for kind, title in (("reused", "read() into one reused 4 MiB buffer"),
                            ("fromfile", "`numpy.fromfile` (a new array)")):
            lines += [
                "",
                "| %s | zarrfs cached MB/s | zarrfs direct MB/s | passthrough cached MB/s "
                "| passthrough direct MB/s | zarr-python `z[:]` MB/s "
                "| direct: zarrfs / passthrough (target) | direct: zarrfs / zarr-python (target) "
                "| cached: zarrfs / passthrough (target) | cached: zarrfs / zarr-python (target) "
                "| daemon CPU: cached / direct |%s" % (
                    title, " second read (cached): MB/s, daemon CPU, resident before |"
                    if kind == "reused" else ""),
                "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|%s" % (
                    "--:|" if kind == "reused" else ""),
            ]
            for r in results:
                med = r["modes"][mode]["median"]
                k = lambda side, what="mbps": med["%s_%s_%s" % (kind, side, what)]
                row = ("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s "
                       "| %.0f%% / %.0f%% |") % (
                    r["label"], k("zf"), k("zfd"), k("pt"), k("ptd"), med["zarr_mbps"],
                    ratio_cell(r, mode, kind + "_ptd_ratio", r["codec"]),
                    ratio_cell(r, mode, kind + "_zarrd_ratio", r["codec"]),
                    ratio_cell(r, mode, kind + "_pt_ratio", r["codec"]),
                    ratio_cell(r, mode, kind + "_zarr_ratio", r["codec"]),
                    k("zf", "cpu_pct"), k("zfd", "cpu_pct"))
                if kind == "reused":
                    row += " %.0f, %.0f%%, %.2f %s |" % (
                        med["second_mbps"], med["second_cpu_pct"], med["second_resident"],
                        "✓" if r["modes"][mode]["min"]["second_resident"] >= 0.99 else "✗")
                lines.append(row)
        lines += [
            "",
            "| codec | store (% of raw) | daemon peak RSS MiB: cached (limit) | direct (limit) "
            "| spread (min–max): reused direct zarrfs / passthrough | reused direct zarrfs / "
            "zarr-python | fromfile direct zarrfs / zarr-python | reused cached zarrfs / "
            "passthrough | fromfile cached zarrfs / passthrough | CPU: passthrough cached / "
            "direct (reused), zarr-python | pre-touch s | load (1 min) |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for r in results:
            m = r["modes"][mode]
            med, mx = m["median"], m["max"]
            lines.append("| %s | %.0f%% | %s | %s | %s | %s | %s | %s | %s | %.0f%% / %.0f%%, "
                         "%.0f%% | %s | %s |" % (
                             r["label"], 100.0 / r["compression_ratio"],
                             h.limit_cell(mx["hwm_mib"], limit), h.limit_cell(mx["hwm_d_mib"], limit),
                             h.rng(m, "reused_ptd_ratio", "%.2f"),
                             h.rng(m, "reused_zarrd_ratio", "%.2f"),
                             h.rng(m, "fromfile_zarrd_ratio", "%.2f"),
                             h.rng(m, "reused_pt_ratio", "%.2f"),
                             h.rng(m, "fromfile_pt_ratio", "%.2f"),
                             med["reused_pt_cpu_pct"], med["reused_ptd_cpu_pct"],
                             med["zarr_cpu_pct"], h.rng(m, "touch_s", "%.2f"),
                             h.rng(m, "load1_end", "%.1f")))
    rand = [r for r in results if r.get("random")]
    if rand:
        lines += [
            "",
            "Random 4 KiB `pread`s (%d per mount, fresh mounts; zarr-python reads the same bytes "
            "as `z[i, j:j+1024]`, time-boxed to %.0f s):" % (cfg["random"], cfg["zarr_random_s"]),
            "",
            "| codec | zarrfs cached reads/s | zarrfs direct reads/s | passthrough direct "
            "reads/s | zarr-python reads/s (n) | direct / zarr-python (target) | passthrough "
            "direct / zarr-python | direct zarrfs / passthrough | cached / "
            "zarr-python | daemon peak RSS MiB: cached / direct (limit) |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for r in rand:
            med, mx = r["random"]["median"], r["random"]["max"]
            v = med["random_d_ratio"]
            lines.append("| %s | %.0f | %.0f | %.0f | %.1f (%d) | **%.0f** (≥ %.0f %s) | %.0f "
                         "| %.2f | %.0f | %.0f / %s |" % (
                             r["label"], med["random_zf_rps"], med["random_zfd_rps"],
                             med["random_ptd_rps"], med["zarr_random_rps"],
                             med["zarr_random_n"], v, RANDOM_TARGET,
                             "✓" if v >= RANDOM_TARGET else "✗", med["random_ptd_ratio"],
                             med["random_d_pt_ratio"], med["random_ratio"],
                             mx["random_zf_hwm_mib"], h.limit_cell(mx["random_zfd_hwm_mib"],
                                                                  limit)))
    profiles = [r for r in results if r.get("perf")]
    if profiles:
        lines.append("")
        for r in profiles:
            p = r["perf"]
            if "error" in p:
                lines.append("- perf, %s: %s" % (r["label"], p["error"]))
            else:
                lines.append("- perf, %s (%s read, %.0f MB/s under perf): `%s`; top: %s" % (
                    r["label"], p["read"], p["mbps"], os.path.basename(p["file"]),
                    "; ".join(" ".join(e.split()) for e in p["top"][:3])))
    return "\n".join(lines)


def main():
    if "--perf" in sys.argv[1:] and CFG["perf"] in ("", "0", "no"):
        CFG["perf"] = "all"
    if h.report_cli(lambda rec: markdown(rec["results"], rec["config"])):
        return
    unknown = [c for c in CFG["codecs"] if c not in h.CODEC_LABEL]
    if unknown:
        sys.exit("bench_cold: ZF_BENCH_COLD_CODECS: unknown %r (known: %s)"
                 % (unknown, ",".join(h.CODEC_LABEL)))
    for d in (MNT, MNT_PT, RESULTS, os.path.join(CFG["dir"], "data")):
        os.makedirs(d, exist_ok=True)
    for k in ("zarrfs", "passthrough"):
        if not os.access(CFG[k], os.X_OK):
            sys.exit("bench_cold: no %s binary at %s (build it: ninja -C build)" % (k, CFG[k]))
    s = h.Session("zarrfs cold-read benchmark", CFG)
    s.intro("array %s float32 = %.0f MiB, chunks %s, %d reps, passes: %s, cache_size=%s, "
            "read_ahead_kb=%d, passthrough max_read=%d, read size %d KiB; sides: %s; random "
            "preads: %d" % (SHAPE, NBYTES / MiB, CHUNK, CFG["reps"],
                            ", ".join(MODES[m] for m in modes()), CFG["cache_size"],
                            CFG["readahead_kb"], CFG["max_read"], CFG["bs"] // 1024,
                            ", ".join(SIDE_LABEL.values()), CFG["random"]))
    if os.geteuid() != 0:
        log("!! not root: the mounts' read_ahead_kb cannot be set (the kernel's 128 KiB for the "
            "passthrough); the tables record what the mounts had")
    raw = h.write_raw(os.path.join(CFG["dir"], "data", "raw-%d-%d.f4" % (ROWS, CFG["seed"])),
                      ROWS, CFG["seed"])
    for codec in CFG["codecs"]:                     # generate everything first
        h.v2_store(CFG["dir"], codec, ROWS, CFG["seed"])
    stamp = s.started.strftime("%Y%m%dT%H%M%S")
    results = []
    for codec in CFG["codecs"]:
        log("%s:" % h.CODEC_LABEL[codec])
        results.append(run_codec(codec, raw, stamp))
    s.finish(RESULTS, "bench-cold", results, markdown(results, CFG),
             "MB = 1e6 bytes; medians of %d repetitions; ratios: zarrfs / passthrough in the same "
             "mode (cached: default; direct: -o direct_io) and zarrfs / zarr-python, the median "
             "of the per-repetition ratios, with the issue's targets (✓ met, ✗ not met); peak "
             "RSS: the maximum over the repetitions against cache_size + %d MiB. Every read on a "
             "fresh mount, store and raw file in the page cache." % (CFG["reps"], RSS_SLACK_MIB),
             shape=SHAPE, chunks=CHUNK, nbytes=NBYTES, raw=raw,
             targets={"%s/%s" % k: v for k, v in TARGETS.items()}, random_target=RANDOM_TARGET,
             rss_slack_mib=RSS_SLACK_MIB)


if __name__ == "__main__":
    main()
