#!/usr/bin/python3
"""zarrfs over HTTP with network latency: zarrfs, in its default (cached) mode and with
-o direct_io, against zarr-python 2.13 (FSStore on fsspec's HTTP file system, python3-fsspec +
python3-aiohttp), the same array served by the same nginx, in one run; and the same zarrfs mounts
of the same server answering at once. Run it through bench/remote.sh (root: it creates a network
namespace).

Setup (always torn down, also on errors and signals):
  * a network namespace ZF_BENCH_NETNS (default zfbench) joined to the host by a veth pair,
    10.213.7.1/24 on the host side, 10.213.7.2/24 inside;
  * ZF_BENCH_REMOTE_DELAY_MS (default 10) ms of one-way delay each way, so 2x that round trip:
      netem   `tc qdisc add dev VETH root netem delay Dms` on both ends, when the kernel has
              sch_netem;
      relay   otherwise (ZF_BENCH_REMOTE_LATENCY=auto falls back to it; `relay` forces it): a TCP
              relay inside the namespace on 10.213.7.2:8080 in front of nginx on the namespace's
              127.0.0.1, holding every piece of data D ms in each direction and every new
              connection one round trip (the TCP handshake) before its first byte; up to 16 MiB
              in flight per direction and connection; a second relay on 10.213.7.2:8082 in front
              of the same nginx delays nothing: the same server answering at once (netem
              delays everything on the veth pair: no such server there, those reads are
              skipped);
  * nginx (the tests' remote_servers.Nginx configuration, master process, `sendfile off`) run
    with `ip netns exec`, serving the data directory.
The round trip is measured (median of 20 requests for a small file on one connection) and
reported.

Data: float32 (rows, 16384), chunks 1024 x 1024 (4 MiB), the generator of bench.py (smooth fields
plus noise), ZF_BENCH_REMOTE_MB (default 512) MB rounded up to whole chunk rows, compressor
ZF_BENCH_REMOTE_CODEC (lz4 = Blosc lz4 5 + shuffle, zstd, zlib, none), written once with
zarr-python into ZF_BENCH_DIR/remote/data and reused.

Per repetition (ZF_BENCH_REPS, default 5), in this order, each after reading the store's files
once (nginx serves them from the page cache: the network and the clients are measured, not the
disk):
  1. zarr-python: zarr.open(FSStore("http://10.213.7.2:8080/NAME")), time z[:]   (the reference)
  2. zarrfs: a fresh mount of the same URL, read the whole file with 4 MiB reads into a new
     buffer; compared byte for byte with the reference; .zarrfs-stats (requests, bytes, retries)
     and nginx's access log (requests) recorded; CPU time of both readers (zarr-python's process,
     the daemon) over wall time.
  3. zarrfs -o direct_io: the same on a fresh mount with -o direct_io.
  4. the server answering at once (the undelayed relay): the same two zarrfs reads, cached and
     direct, of its URL: what the latency costs each mode.
  5. the same two reads as 1 and 2 from the local directory (a zarrfs mount of it, checked byte
     for byte; zarr.open of the directory): what the network costs each reader.
ZF_BENCH_REMOTE_PRETOUCH (a size, default 0: off) touches and frees that much memory before each
of the four timed reads (see bench_cold.py).
MB = 1e6 bytes; medians over the repetitions; ratios are computed per repetition, then their median
reported: zarrfs / zarr-python over HTTP, zarrfs / zarr-python from the directory, and the goals:
of the issue "Bulk reads and writes past the page cache", with -o direct_io, zarrfs over HTTP /
the same mount of the server answering at once (target >= 0.9) and zarrfs over HTTP / zarr-python
over HTTP (target >= 2.5); of the issue "Read at the machine's limits", cached, zarrfs over HTTP /
zarrfs from the local directory (target >= 0.8) and zarrfs over HTTP / zarr-python over HTTP
(target >= 2). Results:
ZF_BENCH_DIR/remote/results/bench-remote-TIME.json and .md; `bench_remote.py --report FILE.json`
re-renders the tables.

The network (namespace, veth pair, netem or relay, nginx) is harness.Net; `bench_remote.py relay
LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS` runs the relay (harness.relay_main).
"""

import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import harness as h
from harness import CHUNK, COLS, env, log

GEN_VERSION = 1
CFG = {
    "mb": env("ZF_BENCH_REMOTE_MB", 512.0, float),
    "reps": env("ZF_BENCH_REPS", 5, int),
    "dir": os.path.join(env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"), "remote"),
    "codec": env("ZF_BENCH_REMOTE_CODEC", "lz4"),
    "delay_ms": env("ZF_BENCH_REMOTE_DELAY_MS", 10.0, float),
    "latency": env("ZF_BENCH_REMOTE_LATENCY", "auto"),
    "netns": env("ZF_BENCH_NETNS", "zfbench"),
    "opts": env("ZF_BENCH_REMOTE_OPTS", ""),
    "pretouch": h.parse_size(env("ZF_BENCH_REMOTE_PRETOUCH", "0")),
    "bs": 4 * h.MiB,
    "seed": env("ZF_BENCH_SEED", 12345, int),
    "zarrfs": env("ZARRFS", h.DEFAULT_ZARRFS),
    "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 900.0, float),
}
ROWS = max(CHUNK[0], -(-int(CFG["mb"] * 1e6 / (COLS * 4)) // CHUNK[0]) * CHUNK[0])
NBYTES = ROWS * COLS * 4
# the goals for HTTP: key -> (what, target); the ratios per repetition, from the raw numbers
GOALS = [
    ("d_at_once_ratio", "direct: zarrfs over HTTP / the same mount of the server answering at once",
     0.9, "zarrfs_d_mbps", "zarrfs_d_once_mbps"),
    ("d_ratio", "direct: zarrfs over HTTP / zarr-python over HTTP", 2.5, "zarrfs_d_mbps",
     "zarr_mbps"),
    ("at_once_ratio", "cached: zarrfs over HTTP / the same mount of the server answering at once",
     None, "zarrfs_mbps", "zarrfs_once_mbps"),
    ("http_local_ratio", "cached: zarrfs over HTTP / zarrfs local directory", 0.8, "zarrfs_mbps",
     "zarrfs_local_mbps"),
    ("ratio", "cached: zarrfs over HTTP / zarr-python over HTTP", 2.0, "zarrfs_mbps",
     "zarr_mbps"),
]
TARGETS = {k: t for k, _, t, _, _ in GOALS if t is not None}


def generate(root):
    name = "%s-%d.zarr" % (CFG["codec"], ROWS)
    want = {"version": GEN_VERSION, "rows": ROWS, "seed": CFG["seed"],
            "compressor": repr(h.compressor(CFG["codec"]))}
    h.write_zarr(os.path.join(root, name), ROWS, CFG["codec"], CFG["seed"], want)
    return name


def mount(src, mnt, logfile, direct=False):
    """A zarrfs mount of a URL or a directory, in its own process group, timeouts on all;
    direct: -o direct_io."""
    opts = "retries=3,timeout=60" + ("," + CFG["opts"] if CFG["opts"] else "") + \
        (",direct_io" if direct else "")
    return h.Daemon(h.zarrfs_cmd(CFG["zarrfs"], src, mnt, [opts]), mnt, logfile, nbytes=NBYTES,
                    mount_timeout=60, close_timeout=20, new_session=True)


def zarrfs_read(src, mnt, logfile, what, direct=False):
    """(seconds, daemon CPU seconds, store stats before and after, the bytes) of a whole read of
    a fresh mount of src (direct: -o direct_io)."""
    with mount(src, mnt, logfile, direct) as m, h.Watchdog(m, what, CFG["phase_timeout"]):
        s0 = m.stats()["store"]
        c0 = m.cpu_s()
        h.pretouch(CFG["pretouch"])
        t, buf = h.read_whole(m.file, NBYTES, CFG["bs"])
        cpu = m.cpu_s() - c0
        s1 = m.stats()["store"]
    return t, cpu, s0, s1, buf


def zarr_python(src):
    h.pretouch(CFG["pretouch"])
    return h.zarr_read(src, include_open=True)


def run(net, data_root, name):
    import numpy as np
    url = net.url(name)
    url0 = net.url0(name)
    local = os.path.join(data_root, name)
    mnt = tempfile.mkdtemp(prefix="zfbench-mnt-")
    logfile = os.path.join(CFG["dir"], "zarrfs.log")
    reps = []
    try:
        for rep in range(CFG["reps"]):
            r = {}
            h.prewarm(local, resident=False)
            t, cpu, ref = zarr_python(url)
            r["zarr_s"] = t
            r["zarr_cpu_pct"] = 100.0 * cpu / t
            r["zarr_mbps"] = h.mbps(NBYTES, t)
            refb = np.ascontiguousarray(ref).view(np.uint8).reshape(-1)
            del ref
            h.prewarm(local, resident=False)
            mark = net.nginx.access_mark()
            t, cpu, s0, s1, buf = zarrfs_read(url, mnt, logfile, "zarrfs over HTTP")
            r["zarrfs_daemon_cpu_pct"] = 100.0 * cpu / t
            h.check_equal("zarrfs over HTTP", buf, refb)
            r["zarrfs_s"] = t
            r["zarrfs_mbps"] = h.mbps(NBYTES, t)
            r["ratio"] = r["zarrfs_mbps"] / r["zarr_mbps"]
            del buf
            # -o direct_io, the same URL
            h.prewarm(local, resident=False)
            mark = net.nginx.access_mark()
            t, cpu, s0, s1, buf = zarrfs_read(url, mnt, logfile, "zarrfs direct over HTTP", True)
            h.check_equal("zarrfs direct over HTTP", buf, refb)
            del buf
            r["zarrfs_d_daemon_cpu_pct"] = 100.0 * cpu / t
            r["zarrfs_d_mbps"] = h.mbps(NBYTES, t)
            r["zarrfs_d_requests"] = s1["requests"] - s0["requests"]
            r["nginx_requests_mount_d"] = len(net.nginx.access_entries(mark))
            r["d_ratio"] = r["zarrfs_d_mbps"] / r["zarr_mbps"]
            # both modes against the same server answering at once (the undelayed relay)
            if url0:
                for key, direct in (("zarrfs_once", False), ("zarrfs_d_once", True)):
                    h.prewarm(local, resident=False)
                    what = "zarrfs%s, the server answering at once" % (" direct" if direct else "")
                    t, _cpu, _s0, _s1, buf = zarrfs_read(url0, mnt, logfile, what, direct)
                    h.check_equal(what, buf, refb)
                    del buf
                    r[key + "_mbps"] = h.mbps(NBYTES, t)
                r["at_once_ratio"] = r["zarrfs_mbps"] / r["zarrfs_once_mbps"]
                r["d_at_once_ratio"] = r["zarrfs_d_mbps"] / r["zarrfs_d_once_mbps"]
            # the same two readers on the local directory: what the network costs each
            h.prewarm(local, resident=False)
            t, _cpu, _s0, _s1, buf = zarrfs_read(local, mnt, logfile, "zarrfs local directory")
            h.check_equal("zarrfs (local directory)", buf, refb)
            r["zarrfs_local_mbps"] = h.mbps(NBYTES, t)
            del buf
            t, _cpu, a = zarr_python(local)
            r["zarr_local_mbps"] = h.mbps(NBYTES, t)
            del a
            r["local_ratio"] = r["zarrfs_local_mbps"] / r["zarr_local_mbps"]
            r["http_local_ratio"] = r["zarrfs_mbps"] / r["zarrfs_local_mbps"]
            r["zarrfs_requests"] = s1["requests"] - s0["requests"]
            r["zarrfs_bytes_fetched"] = s1["bytes_fetched"] - s0["bytes_fetched"]
            r["zarrfs_retries"] = s1["retries"] - s0["retries"]
            r["nginx_requests_mount"] = len(net.nginx.access_entries(mark))
            r["load1"] = os.getloadavg()[0]
            log("  rep %d: zarr-python %.1f MB/s (CPU %.0f%%), zarrfs %.1f MB/s (daemon CPU %.0f%%)"
                " ratio %.2f; %d requests, byte-exact" % (
                    rep + 1, r["zarr_mbps"], r["zarr_cpu_pct"], r["zarrfs_mbps"],
                    r["zarrfs_daemon_cpu_pct"], r["ratio"], r["zarrfs_requests"]))
            log("         local directory: zarr-python %.1f MB/s, zarrfs %.1f MB/s; zarrfs HTTP / "
                "local %.2f" % (r["zarr_local_mbps"], r["zarrfs_local_mbps"],
                                r["http_local_ratio"]))
            log("         direct: zarrfs %.1f MB/s (daemon CPU %.0f%%), x%.2f zarr-python%s" % (
                r["zarrfs_d_mbps"], r["zarrfs_d_daemon_cpu_pct"], r["d_ratio"],
                "; server answering at once: zarrfs %.1f / direct %.1f MB/s (HTTP / at once "
                "%.2f / direct %.2f)" % (r["zarrfs_once_mbps"], r["zarrfs_d_once_mbps"],
                                         r["at_once_ratio"], r["d_at_once_ratio"])
                if url0 else ""))
            reps.append(r)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt])
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return reps


def markdown(res):
    med, lo, hi = res["summary"]["median"], res["summary"]["min"], res["summary"]["max"]
    nbytes = res.get("nbytes", NBYTES)
    lines = [
        "| array | round trip | zarr-python 2.13 `z[:]` MB/s | zarrfs cached whole file MB/s "
        "| ratio | zarrfs requests | CPU: zarr-python / zarrfs daemon "
        "| spread (min–max): zarr-python / zarrfs MB/s | load (1 min) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
        "| %.0f MB float32, %s, %d chunks of 4 MiB (%.0f MB stored) | %.1f ms (%s) | %.1f | %.1f "
        "| **%.2f** | %d | %.0f%% / %.0f%% | %.1f–%.1f / %.1f–%.1f | %.1f–%.1f |" % (
            nbytes / 1e6, h.CODEC_LABEL[res["config"]["codec"]], res["chunks"],
            res["stored_bytes"] / 1e6, res["rtt_ms"], res["latency_mode"], med["zarr_mbps"],
            med["zarrfs_mbps"], med["ratio"], med["zarrfs_requests"], med["zarr_cpu_pct"],
            med["zarrfs_daemon_cpu_pct"], lo["zarr_mbps"],
            hi["zarr_mbps"], lo["zarrfs_mbps"], hi["zarrfs_mbps"], lo["load1"], hi["load1"]),
    ]
    if "zarrfs_d_mbps" in med:
        lines += [
            "",
            "| -o direct_io, the same URL | zarrfs whole file MB/s | ratio to zarr-python "
            "| zarrfs requests | daemon CPU | spread (min–max) MB/s |",
            "|---|--:|--:|--:|--:|--:|",
            "| direct | %.1f | %.2f | %d | %.0f%% | %.1f–%.1f |" % (
                med["zarrfs_d_mbps"], med["d_ratio"], med["zarrfs_d_requests"],
                med["zarrfs_d_daemon_cpu_pct"], lo["zarrfs_d_mbps"], hi["zarrfs_d_mbps"]),
        ]
    if "zarrfs_once_mbps" in med:
        lines += [
            "",
            "| the same server answering at once (no delay) | zarrfs cached MB/s "
            "| zarrfs direct MB/s |",
            "|---|--:|--:|",
            "| undelayed relay | %.1f | %.1f |" % (med["zarrfs_once_mbps"],
                                                med["zarrfs_d_once_mbps"]),
        ]
    lines += [
        "",
        "| the same, from the local directory (page cache) | zarr-python `z[:]` MB/s "
        "| zarrfs whole file MB/s | ratio |",
        "|---|--:|--:|--:|",
        "| no network | %.1f | %.1f | %.2f |" % (
            med["zarr_local_mbps"], med["zarrfs_local_mbps"],
            statistics.median([r["zarrfs_local_mbps"] / r["zarr_local_mbps"]
                               for r in res["reps"]])),
    ]
    lines += [
        "",
        "| goal (per repetition, then the median) | ratio | min–max | target | met |",
        "|---|--:|--:|--:|:-:|",
    ]
    for _key, what, target, num, den in GOALS:
        if num not in res["reps"][0] or den not in res["reps"][0]:
            continue                        # a record from before this measurement
        per_rep = [r[num] / r[den] for r in res["reps"]]
        v = statistics.median(per_rep)
        lines.append("| %s | **%.2f** | %.2f–%.2f | %s | %s |" % (
            what, v, min(per_rep), max(per_rep), "≥ %.1f" % target if target else "",
            ("✓" if v >= target else "✗") if target else ""))
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["relay"]:
        h.relay_main(*sys.argv[2:7])
        return
    if h.report_cli(markdown):
        return
    if os.geteuid() != 0:
        sys.exit("bench_remote: run as root (ip netns)")
    data_root = os.path.join(CFG["dir"], "data")
    os.makedirs(data_root, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "results"), exist_ok=True)
    name = generate(data_root)
    stored = h.store_bytes(os.path.join(data_root, name))
    log("== %s: %.0f MB float32 (%d x %d), %d chunks, %.0f MB stored, %d repetitions"
        % (name, NBYTES / 1e6, ROWS, COLS, (ROWS // CHUNK[0]) * (COLS // CHUNK[1]), stored / 1e6,
           CFG["reps"]))
    net = h.Net(CFG["netns"], CFG["delay_ms"], CFG["latency"])

    def on_signal(sig, _frame):
        raise KeyboardInterrupt("signal %d" % sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        net.up()
        net.start_servers(data_root)
        rtt, conn = h.measure_rtt(net.url(name + "/.zarray"))
        log("  latency by %s: request round trip %.1f ms (TCP connect() %.1f ms; the relay adds "
            "the handshake's round trip to a new connection's first request instead)"
            % (net.mode, rtt, conn))
        reps = run(net, data_root, name)
    finally:
        net.down()
        log("  network namespace %s removed" % net.ns)
    info = h.machine(CFG["zarrfs"], ("zarr", "numcodecs", "numpy", "fsspec", "aiohttp"))
    info["nginx"] = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    res = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "config": CFG,
           "rows": ROWS, "cols": COLS, "nbytes": NBYTES,
           "chunks": (ROWS // CHUNK[0]) * (COLS // CHUNK[1]), "stored_bytes": stored,
           "latency_mode": net.mode, "rtt_ms": rtt, "connect_ms": conn, "machine": info,
           "reps": reps, "summary": h.summarize(reps), "targets": TARGETS}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = os.path.join(CFG["dir"], "results", "bench-remote-%s.json" % stamp)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(out[:-5] + ".md", "w") as f:
        f.write(md + "\n")
    log("\n" + md + "\n\nraw: %s" % out)


if __name__ == "__main__":
    main()
