#!/usr/bin/python3
"""zarrfs cold reads against the FUSE limit of the machine (a minimal libfuse passthrough of the
same bytes) and against zarr-python 2.13, in the same run: goal 1 of the issue "Read at the
machine's limits".

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

Per codec and repetition, after reading the store's files and the raw file once (both sides read
from the page cache), in two passes: "pre-touched" (ZF_BENCH_COLD_PRETOUCH, 2 GiB, of fresh memory
touched and freed just before each timed read: on these VMs first touch of memory the host has
reclaimed is slow and erratic) and "untouched" (no such step; ZF_BENCH_COLD_UNTOUCHED=0 skips it).
Every read of a mount is on a fresh mount (empty chunk cache, nothing of the file in the page
cache), both mounts with read_ahead_kb set to ZF_BENCH_READAHEAD_KB (1024: 1 MiB READ requests),
the passthrough with -o max_read=1048576:

  read() into one reused buffer   ZF_BENCH_BS (4 MiB) readv()s into one 4 MiB buffer, of the
                                  zarrfs file and of the passthrough file
  numpy.fromfile                  numpy.fromfile of the zarrfs file and of the passthrough file
                                  (a new array), and zarr-python's z[:] after zarr.open

The sides of each kind run in alternating order (zarrfs first in even repetitions, last in odd
ones). Every read is compared byte for byte with the raw file (mapped, in blocks): the arrays of
fromfile and z[:] directly, the reused-buffer reads by reading the mount's file once more.
Recorded per read: seconds, the daemon's CPU time (all threads) over the read and its VmHWM, the
mount's read_ahead_kb, the seconds the pre-touch took.

MB = 1e6 bytes. Medians over the repetitions; ratios (zarrfs / passthrough, zarrfs / zarr-python)
are taken within each repetition, then their median, and set against the issue's targets.
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
)
ROWS = h.rows_for(CFG["mib"] * MiB)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
COLD = os.path.join(CFG["dir"], "cold")
MNT = os.path.join(COLD, "mnt")
MNT_PT = os.path.join(COLD, "mnt-pt")
LOG = os.path.join(COLD, "daemons.log")
RESULTS = os.path.join(COLD, "results")

# the targets: (ratio, codec) -> at least
TARGETS = {
    ("reused_pt_ratio", "none"): 0.8,
    ("reused_pt_ratio", "lz4"): 0.7,
    ("fromfile_pt_ratio", "none"): 0.8,
    ("fromfile_zarr_ratio", "lz4"): 1.2,
    ("fromfile_zarr_ratio", "zstd"): 1.5,
    ("fromfile_zarr_ratio", "zlib"): 3.0,
}
MODES = {"pretouch": "pre-touched", "untouched": "untouched"}


def modes():
    return (["pretouch"] if CFG["pretouch"] > 0 else []) + \
        (["untouched"] if CFG["untouched"] or CFG["pretouch"] <= 0 else [])


# ---------------------------------------------------------------------------- the reads

def mount(side, store, raw):
    if side == "zarrfs":
        return h.zarrfs_daemon(CFG, store, MNT, LOG, [CFG["opts"]], nbytes=NBYTES)
    cmd = [CFG["passthrough"], raw, MNT_PT, "-f", "-o", "max_read=%d" % CFG["max_read"]]
    return h.Daemon(cmd, MNT_PT, LOG, nbytes=NBYTES)


def fromfile(path):
    t0 = time.perf_counter()
    a = np.fromfile(path, dtype="<f4")
    return time.perf_counter() - t0, a


def mounted_read(side, kind, store, raw, ref, touch):
    """One timed read of a fresh mount: {s, cpu_s, hwm_mib, readahead_kb, resident, touch_s}."""
    what = "%s %s read" % (side, kind)
    r = {}
    with mount(side, store, raw) as d, h.Watchdog(d, what, CFG["phase_timeout"]):
        r["readahead_kb"] = d.readahead_kb(CFG["readahead_kb"]) or 0
        r["resident"] = h.resident_fraction(d.file)
        buf = bytearray(CFG["bs"])                      # touched (zeroed) before the clock
        r["touch_s"] = h.pretouch(touch)
        c0 = d.cpu_s()
        if kind == "reused":
            r["s"] = h.read_reused(d.file, NBYTES, CFG["bs"], buf)
        else:
            r["s"], a = fromfile(d.file)
        r["cpu_s"] = d.cpu_s() - c0
        r["hwm_mib"] = d.hwm_mib()
        if kind == "reused":                            # what the read left in the page cache
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


def one_rep(codec, store, raw, ref, rep, mode):
    touch = CFG["pretouch"] if mode == "pretouch" else 0
    r = {"load1_start": os.getloadavg()[0], "zarrfs_first": rep % 2 == 0}
    r["store_resident"] = h.prewarm(store)
    r["raw_resident"] = h.prewarm(raw)
    flip = (lambda seq: seq) if rep % 2 == 0 else (lambda seq: seq[::-1])
    touch_s = []
    for side in flip(["zarrfs", "passthrough"]):
        x = mounted_read(side, "reused", store, raw, ref, touch)
        key = "zf" if side == "zarrfs" else "pt"
        r["reused_%s_s" % key], r["reused_%s_cpu_s" % key] = x["s"], x["cpu_s"]
        r["reused_%s_hwm_mib" % key], r["reused_%s_ra_kb" % key] = x["hwm_mib"], x["readahead_kb"]
        r["reused_%s_resident" % key] = x["resident"]
        touch_s.append(x["touch_s"])
    for side in flip(["zarrfs", "passthrough", "zarr"]):
        if side == "zarr":
            x = zarr_read(store, ref, touch)
            r["fromfile_zarr_s"], r["zarr_cpu_s"] = x["s"], x["cpu_s"]
        else:
            x = mounted_read(side, "fromfile", store, raw, ref, touch)
            key = "zf" if side == "zarrfs" else "pt"
            r["fromfile_%s_s" % key], r["fromfile_%s_cpu_s" % key] = x["s"], x["cpu_s"]
            r["fromfile_%s_hwm_mib" % key] = x["hwm_mib"]
            r["fromfile_%s_ra_kb" % key] = x["readahead_kb"]
            r["fromfile_%s_resident" % key] = x["resident"]
        touch_s.append(x["touch_s"])
    for k in ("reused_zf", "reused_pt", "fromfile_zf", "fromfile_pt", "fromfile_zarr"):
        r[k + "_mbps"] = h.mbps(NBYTES, r[k + "_s"])
    for k in ("reused_zf", "reused_pt", "fromfile_zf", "fromfile_pt"):
        r[k + "_cpu_pct"] = 100 * r[k + "_cpu_s"] / r[k + "_s"]
    r["zarr_cpu_pct"] = 100 * r["zarr_cpu_s"] / r["fromfile_zarr_s"]
    r["reused_pt_ratio"] = r["reused_zf_mbps"] / r["reused_pt_mbps"]
    r["fromfile_pt_ratio"] = r["fromfile_zf_mbps"] / r["fromfile_pt_mbps"]
    r["fromfile_zarr_ratio"] = r["fromfile_zf_mbps"] / r["fromfile_zarr_mbps"]
    r["hwm_mib"] = max(r["reused_zf_hwm_mib"], r["fromfile_zf_hwm_mib"])
    r["touch_s"] = max(touch_s)
    r["load1_end"] = os.getloadavg()[0]
    log("  rep %d %-11s reused: zarrfs %5.0f passthrough %5.0f MB/s (x%.2f) | fromfile: zarrfs "
        "%5.0f passthrough %5.0f zarr-python %5.0f MB/s (x%.2f, x%.2f) | daemon CPU "
        "%3.0f%%/%3.0f%% RSS %4.0f MiB | touch %.2f s | load %.1f"
        % (rep + 1, MODES[mode] + ":", r["reused_zf_mbps"], r["reused_pt_mbps"],
           r["reused_pt_ratio"], r["fromfile_zf_mbps"], r["fromfile_pt_mbps"],
           r["fromfile_zarr_mbps"], r["fromfile_pt_ratio"], r["fromfile_zarr_ratio"],
           r["reused_zf_cpu_pct"], r["fromfile_zf_cpu_pct"], r["hwm_mib"], r["touch_s"],
           r["load1_end"]))
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
    with mount("zarrfs", store, raw) as d, h.Watchdog(d, "perf read", CFG["phase_timeout"]):
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
    for rep in range(CFG["reps"]):
        for m in modes():
            res["modes"][m]["reps"].append(one_rep(codec, store, raw, ref, rep, m))
    for m in modes():
        res["modes"][m].update(h.summarize(res["modes"][m]["reps"]))
    if codec in perf_codecs():
        res["perf"] = profile(codec, store, raw, stamp)
        if "error" in res["perf"]:
            log("  perf: " + res["perf"]["error"])
    del ref
    return res


def ratio_cell(res, mode, key, codec):
    v = res["modes"][mode]["median"][key]
    want = TARGETS.get((key, codec))
    if want is None:
        return "**%.2f**" % v
    return "**%.2f** (≥ %.1f %s)" % (v, want, "✓" if v >= want else "✗")


def markdown(results, cfg):
    lines = []
    for mode in [m for m in MODES if m in results[0]["modes"]]:
        if lines:
            lines.append("")
        if mode == "pretouch":
            lines.append("Pre-touched: %s of fresh memory touched and freed just before each timed "
                         "read." % ("%.0f GiB" % (cfg["pretouch"] / GiB) if cfg["pretouch"] >= GiB
                                    else "%.0f MiB" % (cfg["pretouch"] / MiB)))
        else:
            lines.append("Untouched: no memory touched before the reads.")
        lines += [
            "",
            "| codec | store (% of raw) | reused 4 MiB buffer: zarrfs MB/s | passthrough MB/s "
            "| zarrfs / passthrough (target) | numpy.fromfile: zarrfs MB/s | passthrough MB/s "
            "| zarr-python `z[:]` MB/s | zarrfs / passthrough (target) "
            "| zarrfs / zarr-python (target) | daemon CPU: reused / fromfile "
            "| daemon peak RSS MiB |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for r in results:
            med = r["modes"][mode]["median"]
            lines.append("| %s | %.0f%% | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %s | %s "
                         "| %.0f%% / %.0f%% | %.0f |" % (
                             r["label"], 100.0 / r["compression_ratio"], med["reused_zf_mbps"],
                             med["reused_pt_mbps"], ratio_cell(r, mode, "reused_pt_ratio",
                                                               r["codec"]),
                             med["fromfile_zf_mbps"], med["fromfile_pt_mbps"],
                             med["fromfile_zarr_mbps"],
                             ratio_cell(r, mode, "fromfile_pt_ratio", r["codec"]),
                             ratio_cell(r, mode, "fromfile_zarr_ratio", r["codec"]),
                             med["reused_zf_cpu_pct"], med["fromfile_zf_cpu_pct"],
                             med["hwm_mib"]))
        lines += [
            "",
            "| codec | spread (min–max): reused zarrfs MB/s | reused passthrough MB/s "
            "| reused zarrfs / passthrough | fromfile zarrfs MB/s | fromfile passthrough MB/s "
            "| zarr-python MB/s | fromfile zarrfs / passthrough | fromfile zarrfs / zarr-python "
            "| CPU: passthrough reused / fromfile, zarr-python | pre-touch s | load (1 min) |",
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for r in results:
            m = r["modes"][mode]
            med = m["median"]
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f%% / %.0f%%, %.0f%% "
                         "| %s | %s |" % (
                             r["label"], h.rng(m, "reused_zf_mbps"), h.rng(m, "reused_pt_mbps"),
                             h.rng(m, "reused_pt_ratio", "%.2f"), h.rng(m, "fromfile_zf_mbps"),
                             h.rng(m, "fromfile_pt_mbps"), h.rng(m, "fromfile_zarr_mbps"),
                             h.rng(m, "fromfile_pt_ratio", "%.2f"),
                             h.rng(m, "fromfile_zarr_ratio", "%.2f"), med["reused_pt_cpu_pct"],
                             med["fromfile_pt_cpu_pct"], med["zarr_cpu_pct"],
                             h.rng(m, "touch_s", "%.2f"), h.rng(m, "load1_end", "%.1f")))
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
            "read_ahead_kb=%d, passthrough max_read=%d, read size %d KiB"
            % (SHAPE, NBYTES / MiB, CHUNK, CFG["reps"], ", ".join(MODES[m] for m in modes()),
               CFG["cache_size"], CFG["readahead_kb"], CFG["max_read"], CFG["bs"] // 1024))
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
             "MB = 1e6 bytes; medians of %d repetitions; ratios: zarrfs / passthrough and zarrfs / "
             "zarr-python, the median of the per-repetition ratios, with the issue's targets "
             "(✓ met, ✗ not met). Every read on a fresh mount, store and raw file in the page "
             "cache." % CFG["reps"], shape=SHAPE, chunks=CHUNK, nbytes=NBYTES, raw=raw,
             targets={"%s/%s" % k: v for k, v in TARGETS.items()})


if __name__ == "__main__":
    main()
