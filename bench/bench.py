#!/usr/bin/python3
"""zarrfs benchmark: zarrfs against zarr-python on the same data, in the same run.

Run it through bench/run.sh (which documents the knobs and unmounts on exit); it needs Debian's
/usr/bin/python3 with zarr 2.13, numcodecs and numpy. The harness (mounting, page cache, timing,
medians, report) is bench/harness.py.

For each codec (none, blosc-lz4+shuffle, zstd, zlib) it writes one float32 array of about
ZF_BENCH_GIB GiB with zarr-python (chunks of 1024 x 1024 elements = 4 MiB; cached in ZF_BENCH_DIR
and reused), then, per repetition and in this order:

  1. zarr-python: fresh zarr.open, time z[:] into a NumPy array      (the peer, and the reference)
  2. zarrfs, fresh mount (empty chunk cache, no page cache for the mounted file):
       cold         read the whole mounted file into memory with ZF_BENCH_BS reads
       warm-page    the same again: served by the kernel page cache (the file uses keep_cache)
       warm-daemon  posix_fadvise(DONTNEED) on the mounted file (checked with mincore), then the
                    same again: every byte goes through the daemon, every chunk is in its cache
     every read is compared with the reference; VmHWM of the daemon is read before unmounting
  3. zarrfs, fresh mount: ZF_BENCH_RANDOM random 4 KiB-aligned os.pread(4096)s
  4. zarr-python: the same offsets as z[i, j:j+1024] (exactly the same 4096 bytes), fresh
     zarr.open, for at most ZF_BENCH_ZARR_RANDOM_S seconds (zarr-python has no chunk cache, so
     every read decodes a whole 4 MiB chunk and its rate does not depend on the count)

The store's files are read once before each repetition so that both sides read them from the page
cache: the benchmark measures decoding and delivery, not the disk.

MB = 1e6 bytes. Medians over the repetitions; a ratio is zarrfs / zarr-python computed within each
repetition (same moment, same machine load), then the median of those ratios is reported.
"""
import os
import sys

import harness as h
from harness import CHUNK, COLS, GiB, env

CFG = h.knobs(
    3,
    gib=env("ZF_BENCH_GIB", 1.0, float),
    codecs=env("ZF_BENCH_CODECS", "none,lz4,zstd,zlib").split(","),
    random=env("ZF_BENCH_RANDOM", 20000, int),
    zarr_random_s=env("ZF_BENCH_ZARR_RANDOM_S", 5.0, float),
    readahead_kb=env("ZF_BENCH_READAHEAD_KB", 0, int),
)
ROWS = h.rows_for(CFG["gib"] * GiB)
SHAPE = (ROWS, COLS)
NBYTES = ROWS * COLS * 4
MNT = os.path.join(CFG["dir"], "mnt")
LOG = os.path.join(CFG["dir"], "zarrfs.log")


def generate(codec):
    return h.v2_store(CFG["dir"], codec, ROWS, CFG["seed"])


def daemon(store):
    return h.zarrfs_daemon(CFG, store, MNT, LOG, nbytes=NBYTES)


def watchdog(d, what):
    return h.Watchdog(d, what, CFG["phase_timeout"])


def mbps(t):
    return h.mbps(NBYTES, t)


def run_codec(codec):
    store = generate(codec)
    res = {"codec": codec, "label": h.CODEC_LABEL[codec], "store": store,
           "store_bytes": h.store_bytes(store), "reps": []}
    res["compression_ratio"] = NBYTES / res["store_bytes"]
    for rep in range(CFG["reps"]):
        r = {"load1_start": os.getloadavg()[0]}
        r["store_resident"] = h.prewarm(store)

        # 1. zarr-python z[:]
        t, cpu, ref = h.zarr_read(store)
        r["zarr_whole_s"], r["zarr_whole_cpu_s"] = t, cpu

        # 2. zarrfs whole reads
        with daemon(store) as d:
            r["readahead_kb"] = d.readahead_kb(CFG["readahead_kb"])
            r["mounted_resident_before"] = h.resident_fraction(d.file)
            for phase in ("cold", "warm_page", "warm_daemon"):
                if phase == "warm_daemon":
                    r["evict_method"] = h.drop_file_cache(d.file)
                    if r["evict_method"] == "drop_caches":
                        h.prewarm(store)
                    r["mounted_resident_before_warm_daemon"] = h.resident_fraction(d.file)
                c0 = d.cpu_s()
                with watchdog(d, "%s %s read" % (codec, phase)):
                    t, buf = h.read_whole(d.file, NBYTES, CFG["bs"])
                r[phase + "_s"], r[phase + "_daemon_cpu_s"] = t, d.cpu_s() - c0
                h.check_equal("%s: zarrfs %s read" % (codec, phase), buf, ref)
                del buf
            r["hwm_whole_mib"] = d.hwm_mib()
            r["daemon_threads"] = d.threads()

        # 3. zarrfs random 4 KiB preads, cold mount
        offsets = h.random_offsets(1000 + rep, CFG["random"], NBYTES)
        with daemon(store) as d:
            d.readahead_kb(CFG["readahead_kb"])
            c0 = d.cpu_s()
            with watchdog(d, "%s random preads" % codec):
                ends, blobs = h.timed_preads(d.file, offsets)
            r["random_daemon_cpu_s"] = d.cpu_s() - c0
            r["hwm_random_mib"] = d.hwm_mib()
        h.check_preads("random pread", offsets, blobs, ref)
        del blobs
        r["random_n"], r["random_s"] = len(offsets), float(ends[-1])

        # 4. zarr-python random slices, same offsets, time-boxed
        n, t = h.zarr_random(store, offsets, ref, CFG["zarr_random_s"])
        r["zarr_random_n"], r["zarr_random_s"] = n, t
        r["random_prefix_s"] = float(ends[n - 1])       # zarrfs over the same first n reads
        del ref

        r["zarr_mbps"] = mbps(r["zarr_whole_s"])
        for phase in ("cold", "warm_page", "warm_daemon"):
            r[phase + "_mbps"] = mbps(r[phase + "_s"])
            r[phase + "_ratio"] = r[phase + "_mbps"] / r["zarr_mbps"]
        r["random_rps"] = r["random_n"] / r["random_s"]
        r["random_prefix_rps"] = n / r["random_prefix_s"]
        r["zarr_random_rps"] = n / t
        r["random_ratio"] = r["random_rps"] / r["zarr_random_rps"]
        r["random_prefix_ratio"] = r["random_prefix_rps"] / r["zarr_random_rps"]
        r["hwm_mib"] = max(r["hwm_whole_mib"], r["hwm_random_mib"])
        r["load1_end"] = os.getloadavg()[0]
        r["cold_daemon_cpu_pct"] = 100 * r["cold_daemon_cpu_s"] / r["cold_s"]
        r["warm_daemon_daemon_cpu_pct"] = 100 * r["warm_daemon_daemon_cpu_s"] / r["warm_daemon_s"]
        r["zarr_cpu_pct"] = 100 * r["zarr_whole_cpu_s"] / r["zarr_whole_s"]
        res["reps"].append(r)
        h.log("  rep %d: zarr %7.0f MB/s | zarrfs cold %7.0f (x%.2f) warm-page %7.0f "
              "warm-daemon %7.0f (x%.2f) MB/s | random %7.0f vs zarr %5.0f reads/s (n=%d) | "
              "RSS %5.0f MiB | load %.1f" % (rep + 1, r["zarr_mbps"], r["cold_mbps"], r["cold_ratio"],
                                 r["warm_page_mbps"], r["warm_daemon_mbps"],
                                 r["warm_daemon_ratio"], r["random_rps"], r["zarr_random_rps"],
                                 n, r["hwm_mib"], r["load1_end"]))
    res.update(h.summarize(res["reps"]))
    return res


def markdown(results):
    med = lambda r, k: r["median"][k]
    lines = [
        "| codec | size on disk | zarr-python `z[:]` MB/s | zarrfs cold MB/s | cold ratio "
        "| zarrfs warm, page cache MB/s | zarrfs warm, daemon cache MB/s | warm (daemon) ratio "
        "| random 4 KiB zarrfs reads/s | zarr-python reads/s | random ratio | daemon peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f | %.0f | **%.2f** | %.0f | %.0f | **%.2f** | %.0f | %.1f "
                     "| **%.0f** | %.0f |" % (
                         r["label"], 100.0 / r["compression_ratio"], med(r, "zarr_mbps"),
                         med(r, "cold_mbps"), med(r, "cold_ratio"), med(r, "warm_page_mbps"),
                         med(r, "warm_daemon_mbps"), med(r, "warm_daemon_ratio"),
                         med(r, "random_rps"), med(r, "zarr_random_rps"),
                         med(r, "random_ratio"), med(r, "hwm_mib")))
    lines += [
        "",
        "| codec | CPU: zarr-python `z[:]` | CPU: daemon, cold read | CPU: daemon, warm (daemon) "
        "| zarrfs reads/s over zarr-python's first n reads (n) | same-prefix random ratio |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %.0f%% | %.0f%% | %.0f%% | %.0f (%d) | %.1f |" % (
            r["label"], med(r, "zarr_cpu_pct"), med(r, "cold_daemon_cpu_pct"),
            med(r, "warm_daemon_daemon_cpu_pct"), med(r, "random_prefix_rps"),
            int(med(r, "zarr_random_n")), med(r, "random_prefix_ratio")))
    lines += [
        "",
        "| codec | spread (min–max): zarr-python MB/s | zarrfs cold MB/s | cold ratio "
        "| zarrfs warm, daemon cache MB/s | zarrfs random reads/s | load average (1 min) |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], h.rng(r, "zarr_mbps"), h.rng(r, "cold_mbps"),
            h.rng(r, "cold_ratio", "%.2f"), h.rng(r, "warm_daemon_mbps"),
            h.rng(r, "random_rps"), h.rng(r, "load1_end", "%.1f")))
    return "\n".join(lines)


def main():
    if h.report_cli(lambda rec: markdown(rec["results"])):
        return
    os.makedirs(MNT, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "data"), exist_ok=True)
    if not os.access(CFG["zarrfs"], os.X_OK):
        sys.exit("bench: no zarrfs binary at %s (build it: ninja -C build)" % CFG["zarrfs"])
    s = h.Session("zarrfs benchmark", CFG)
    s.intro("array %s float32 = %.3f GiB, chunks %s, %d reps, cache_size=%s%s"
            % (SHAPE, NBYTES / GiB, CHUNK, CFG["reps"], CFG["cache_size"],
               ", read_ahead_kb=%d" % CFG["readahead_kb"] if CFG["readahead_kb"] else ""))
    for codec in CFG["codecs"]:                     # generate everything first
        generate(codec)
    results = []
    for codec in CFG["codecs"]:
        h.log("%s:" % h.CODEC_LABEL[codec])
        results.append(run_codec(codec))
    s.finish(os.path.join(CFG["dir"], "results"), "bench", results, markdown(results),
             "MB = 1e6 bytes; medians of %d repetitions; ratios = zarrfs / zarr-python, the "
             "median of the per-repetition ratios." % CFG["reps"],
             shape=SHAPE, chunks=CHUNK, nbytes=NBYTES)


if __name__ == "__main__":
    main()
