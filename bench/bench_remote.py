#!/usr/bin/python3
"""zarrfs over HTTP with network latency: zarrfs against zarr-python 2.13 (FSStore on fsspec's
HTTP file system, python3-fsspec + python3-aiohttp), the same array served by the same nginx, in
one run. Run it through bench/remote.sh (root: it creates a network namespace).

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
              in flight per direction and connection;
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
  3. the same two reads from the local directory (a zarrfs mount of it, checked byte for byte;
     zarr.open of the directory): what the network costs each reader.
MB = 1e6 bytes; medians over the repetitions; the ratio zarrfs / zarr-python is computed per
repetition, then its median reported. Results: ZF_BENCH_DIR/remote/results/bench-remote-TIME.json
and .md; `bench_remote.py --report FILE.json` re-renders the table.

`bench_remote.py relay LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS` runs the relay.
"""

import asyncio
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

KiB, MiB = 1 << 10, 1 << 20
COLS = 16384
CHUNK = (1024, 1024)
GEN_VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def env(name, default, conv=str):
    v = os.environ.get(name, "")
    return conv(v) if v != "" else default


CFG = {
    "mb": env("ZF_BENCH_REMOTE_MB", 512.0, float),
    "reps": env("ZF_BENCH_REPS", 5, int),
    "dir": os.path.join(env("ZF_BENCH_DIR", "/tmp/zarrfs-bench"), "remote"),
    "codec": env("ZF_BENCH_REMOTE_CODEC", "lz4"),
    "delay_ms": env("ZF_BENCH_REMOTE_DELAY_MS", 10.0, float),
    "latency": env("ZF_BENCH_REMOTE_LATENCY", "auto"),
    "netns": env("ZF_BENCH_NETNS", "zfbench"),
    "opts": env("ZF_BENCH_REMOTE_OPTS", ""),
    "bs": 4 * MiB,
    "seed": env("ZF_BENCH_SEED", 12345, int),
    "zarrfs": env("ZARRFS", os.path.join(HERE, "..", "build", "src", "fuse", "zarrfs")),
    "phase_timeout": env("ZF_BENCH_PHASE_TIMEOUT", 900.0, float),
}
HOST_IP, NS_IP, PORT, NS_NGINX_PORT = "10.213.7.1", "10.213.7.2", 8080, 8081
VETH_HOST, VETH_NS = "zfb-h", "zfb-n"
ROWS = max(CHUNK[0], -(-int(CFG["mb"] * 1e6 / (COLS * 4)) // CHUNK[0]) * CHUNK[0])
NBYTES = ROWS * COLS * 4


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------------------------- the relay

def relay_main(listen_host, listen_port, target_host, target_port, delay_ms):
    delay = float(delay_ms) / 1000.0
    window = 16 * MiB
    piece = 256 * KiB

    async def pipe(reader, writer, first_delay):
        loop = asyncio.get_running_loop()
        q = asyncio.Queue(maxsize=max(1, window // piece))

        async def rd():
            try:
                while True:
                    data = await reader.read(piece)
                    await q.put((loop.time() + delay, data))
                    if not data:
                        return
            except (ConnectionError, OSError):
                await q.put((loop.time(), b""))

        async def wr():
            if first_delay:
                await asyncio.sleep(first_delay)
            try:
                while True:
                    t, data = await q.get()
                    dt = t - loop.time()
                    if dt > 0:
                        await asyncio.sleep(dt)
                    if not data:
                        if writer.can_write_eof():
                            writer.write_eof()
                        return
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                return

        await asyncio.gather(rd(), wr())

    async def handle(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(target_host, int(target_port))
        except OSError:
            cwriter.close()
            return
        # the client's connect() returned at once: its first bytes wait one round trip, as
        # behind a real TCP handshake over the delayed link
        await asyncio.gather(pipe(creader, uwriter, 2 * delay), pipe(ureader, cwriter, 0))
        for w in (uwriter, cwriter):
            try:
                w.close()
            except OSError:
                pass

    async def main():
        server = await asyncio.start_server(handle, listen_host, int(listen_port), backlog=256)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# ------------------------------------------------------------------------------- the network

def sh(cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError("%s: status %d: %s" % (" ".join(cmd), r.returncode, r.stdout.strip()))
    return r


class Net:
    def __init__(self):
        self.ns = CFG["netns"]
        self.mode = None
        self.relay = None
        self.nginx = None

    def up(self):
        if sh(["ip", "netns", "list"]).stdout.split().count(self.ns):
            raise RuntimeError("network namespace %s exists already (a previous run? "
                               "`ip netns del %s`)" % (self.ns, self.ns))
        sh(["ip", "netns", "add", self.ns])
        sh(["ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS])
        sh(["ip", "link", "set", VETH_NS, "netns", self.ns])
        sh(["ip", "addr", "add", HOST_IP + "/24", "dev", VETH_HOST])
        sh(["ip", "link", "set", VETH_HOST, "up"])
        ns = ["ip", "netns", "exec", self.ns]
        sh(ns + ["ip", "addr", "add", NS_IP + "/24", "dev", VETH_NS])
        sh(ns + ["ip", "link", "set", VETH_NS, "up"])
        sh(ns + ["ip", "link", "set", "lo", "up"])
        d = "%gms" % CFG["delay_ms"]
        want = CFG["latency"]
        if want in ("auto", "netem"):
            r1 = sh(["tc", "qdisc", "add", "dev", VETH_HOST, "root", "netem", "delay", d], check=False)
            r2 = sh(ns + ["tc", "qdisc", "add", "dev", VETH_NS, "root", "netem", "delay", d],
                    check=False) if r1.returncode == 0 else r1
            if r1.returncode == 0 and r2.returncode == 0:
                self.mode = "netem"
            elif want == "netem":
                raise RuntimeError("tc netem is not available: %s" % r2.stdout.strip())
            else:
                log("  tc netem is not available here (%s): using the delaying relay"
                    % r2.stdout.strip())
                sh(["tc", "qdisc", "del", "dev", VETH_HOST, "root"], check=False)
        if self.mode is None:
            self.mode = "relay"
        return self

    def start_servers(self, root):
        import remote_servers as rs
        if self.mode == "netem":
            self.nginx = rs.Nginx(root, listen=NS_IP, port=PORT, master_process=True,
                                  netns=self.ns).start()
        else:
            self.nginx = rs.Nginx(root, listen="127.0.0.1", port=NS_NGINX_PORT,
                                  master_process=True, netns=self.ns).start()
            self.relay = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, sys.executable, os.path.abspath(__file__), "relay",
                 NS_IP, str(PORT), "127.0.0.1", str(NS_NGINX_PORT), str(CFG["delay_ms"])],
                stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 20
            while True:
                if self.relay.poll() is not None:
                    raise RuntimeError("the relay exited with status %s" % self.relay.returncode)
                r = sh(["ip", "netns", "exec", self.ns, "ss", "-Hltn", "sport = :%d" % PORT],
                       check=False)
                if r.stdout.strip():
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the relay does not listen")
                time.sleep(0.1)

    def down(self):
        if self.relay is not None and self.relay.poll() is None:
            self.relay.terminate()
            try:
                self.relay.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.relay.kill()
                self.relay.wait()
        if self.nginx is not None:
            try:
                self.nginx.stop()
            except Exception as e:  # noqa: BLE001 - go on tearing down
                log("  stopping nginx: %s" % e)
        # processes still in the namespace (none expected): killed before deleting it
        r = sh(["ip", "netns", "pids", self.ns], check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass
        sh(["ip", "netns", "del", self.ns], check=False)
        sh(["ip", "link", "del", VETH_HOST], check=False)


def measure_rtt(url, n=20):
    import http.client
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    t_conn = time.perf_counter()
    c.connect()
    t_conn = time.perf_counter() - t_conn
    times = []
    for _ in range(n + 1):
        t0 = time.perf_counter()
        c.request("GET", u.path)
        r = c.getresponse()
        r.read()
        times.append(time.perf_counter() - t0)
    c.close()
    return statistics.median(times[1:]) * 1000, t_conn * 1000


# ------------------------------------------------------------------------------------ the data

def band(r0, r1, rng):
    """bench.py's generator: smooth fields (separable sines, a slow diagonal wave) plus noise."""
    import numpy as np
    y = np.arange(r0, r1, dtype=np.float64)[:, None]
    x = np.arange(COLS, dtype=np.float64)[None, :]
    f = (np.sin(2 * np.pi * y / 2111.0) * np.cos(2 * np.pi * x / 1709.0) * 20.0
         + np.sin(2 * np.pi * (x + 0.7 * y) / 5003.0) * 5.0 + 280.0)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32) * np.float32(0.01)
    return f


def compressor(codec):
    from numcodecs import Blosc, Zlib, Zstd
    return {"none": None, "lz4": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE),
            "zstd": Zstd(level=1), "zlib": Zlib(level=1)}[codec]


CODEC_LABEL = {"none": "none", "lz4": "blosc lz4 5 +shuffle", "zstd": "zstd 1", "zlib": "zlib 1"}


def generate(root):
    import numpy as np
    import zarr
    name = "%s-%d.zarr" % (CFG["codec"], ROWS)
    path = os.path.join(root, name)
    stamp = path + ".done"
    want = {"version": GEN_VERSION, "rows": ROWS, "seed": CFG["seed"],
            "compressor": repr(compressor(CFG["codec"]))}
    try:
        with open(stamp) as f:
            if json.load(f) == want:
                return name
    except (OSError, ValueError):
        pass
    log("  generating %s (%d x %d float32, %s) ..." % (path, ROWS, COLS, CODEC_LABEL[CFG["codec"]]))
    t0 = time.perf_counter()
    z = zarr.open(path, mode="w", shape=(ROWS, COLS), chunks=CHUNK, dtype="<f4",
                  compressor=compressor(CFG["codec"]), fill_value=0.0)
    rng = np.random.default_rng(CFG["seed"])
    for r0 in range(0, ROWS, CHUNK[0]):
        z[r0:r0 + CHUNK[0], :] = band(r0, r0 + CHUNK[0], rng)
    with open(stamp, "w") as f:
        json.dump(want, f)
    log("  ... %.1f s" % (time.perf_counter() - t0))
    return name


def store_bytes(path):
    total = 0
    for dp, _d, fs in os.walk(path):
        total += sum(os.path.getsize(os.path.join(dp, f)) for f in fs)
    return total


# ------------------------------------------------------------------------------- measurements

def zarr_python(url):
    """(seconds, CPU seconds of this process (its threads included), the array). url: an
    http:// URL (FSStore on fsspec's HTTP file system) or a local directory."""
    import zarr
    c0, t0 = time.process_time(), time.perf_counter()
    store = zarr.storage.FSStore(url, mode="r") if "://" in url else url
    z = zarr.open(store, mode="r")
    a = z[:]
    return time.perf_counter() - t0, time.process_time() - c0, a


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_whole(path):
    import numpy as np
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = np.empty(NBYTES, dtype=np.uint8)
        mv = memoryview(buf)
        t0 = time.perf_counter()
        off = 0
        while off < NBYTES:
            n = os.readv(fd, [mv[off:off + CFG["bs"]]])
            if n <= 0:
                raise RuntimeError("%s: short read at %d" % (path, off))
            off += n
        return time.perf_counter() - t0, buf
    finally:
        os.close(fd)


class Mount:
    """A zarrfs mount (foreground daemon) with a timeout on everything."""

    def __init__(self, url, mnt, logfile):
        self.url, self.mnt, self.logfile = url, mnt, logfile
        self.proc = None

    def __enter__(self):
        opts = "retries=3,timeout=60" + ("," + CFG["opts"] if CFG["opts"] else "")
        self.err = open(self.logfile, "ab")
        self.proc = subprocess.Popen([CFG["zarrfs"], "-f", "-o", opts, self.url, self.mnt],
                                     stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                raise RuntimeError("zarrfs exited with status %s (log: %s)"
                                   % (self.proc.returncode, self.logfile))
            if time.monotonic() > deadline:
                raise RuntimeError("zarrfs did not mount within 60 s")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL)
        if os.path.ismount(self.mnt):
            subprocess.run(["fusermount3", "-uz", self.mnt], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.err.close()
        return False

    def stats(self):
        with open(os.path.join(self.mnt, ".zarrfs-stats")) as f:
            return json.load(f)


class Watchdog:
    """SIGKILLs the daemon of `mount` (by its pid: a hung FUSE read cannot be interrupted
    otherwise) when a phase exceeds its time."""

    def __init__(self, seconds, mount):
        self.seconds = seconds
        self.mount = mount

    def __enter__(self):
        import threading
        self.t = threading.Timer(self.seconds, self.fire)
        self.t.daemon = True
        self.t.start()
        return self

    def fire(self):
        log("  [watchdog] phase exceeded %.0f s: killing zarrfs pid %d"
            % (self.seconds, self.mount.proc.pid))
        try:
            os.killpg(self.mount.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def __exit__(self, *exc):
        self.t.cancel()
        return False


def prewarm(path):
    """Read the store's files once, so that nginx serves them from the page cache."""
    for dp, _d, fs in os.walk(path):
        for f in fs:
            with open(os.path.join(dp, f), "rb") as fh:
                while fh.read(8 * MiB):
                    pass


def run(net, data_root, name):
    import numpy as np
    url = "http://%s:%d/%s" % (NS_IP, PORT, name)
    mnt = tempfile.mkdtemp(prefix="zfbench-mnt-")
    logfile = os.path.join(CFG["dir"], "zarrfs.log")
    reps = []
    try:
        for rep in range(CFG["reps"]):
            r = {}
            prewarm(os.path.join(data_root, name))
            t, cpu, ref = zarr_python(url)
            r["zarr_s"] = t
            r["zarr_cpu_pct"] = 100.0 * cpu / t
            r["zarr_mbps"] = NBYTES / t / 1e6
            refb = np.ascontiguousarray(ref).view(np.uint8).reshape(-1)
            del ref
            prewarm(os.path.join(data_root, name))
            mark = net.nginx.access_mark()
            with Mount(url, mnt, logfile) as m, Watchdog(CFG["phase_timeout"], m):
                files = os.listdir(mnt)          # a root array: the one file of the mount
                if len(files) != 1:
                    raise RuntimeError("the mount holds %r, not one array file" % files)
                path = os.path.join(mnt, files[0])
                s0 = m.stats()["store"]
                c0 = cpu_seconds(m.proc.pid)
                t, buf = read_whole(path)
                r["zarrfs_daemon_cpu_pct"] = 100.0 * (cpu_seconds(m.proc.pid) - c0) / t
                s1 = m.stats()["store"]
            if not np.array_equal(buf, refb):
                bad = np.flatnonzero(buf != refb)
                raise RuntimeError("zarrfs: WRONG DATA: %d bytes differ, first at %d"
                                   % (bad.size, bad[0]))
            r["zarrfs_s"] = t
            r["zarrfs_mbps"] = NBYTES / t / 1e6
            r["ratio"] = r["zarrfs_mbps"] / r["zarr_mbps"]
            # the same two readers on the local directory: what the network costs each
            local = os.path.join(data_root, name)
            del buf
            prewarm(local)
            with Mount(local, mnt, logfile) as m, Watchdog(CFG["phase_timeout"], m):
                t, buf = read_whole(os.path.join(mnt, os.listdir(mnt)[0]))
            if not np.array_equal(buf, refb):
                raise RuntimeError("zarrfs (local directory): WRONG DATA")
            r["zarrfs_local_mbps"] = NBYTES / t / 1e6
            del buf
            t, _cpu, a = zarr_python(local)
            r["zarr_local_mbps"] = NBYTES / t / 1e6
            del a
            r["zarrfs_requests"] = s1["requests"] - s0["requests"]
            r["zarrfs_bytes_fetched"] = s1["bytes_fetched"] - s0["bytes_fetched"]
            r["zarrfs_retries"] = s1["retries"] - s0["retries"]
            r["nginx_requests_mount"] = len(net.nginx.access_entries(mark))
            r["load1"] = os.getloadavg()[0]
            log("  rep %d: zarr-python %.1f MB/s (CPU %.0f%%), zarrfs %.1f MB/s (daemon CPU %.0f%%)"
                " ratio %.2f; %d requests, byte-exact" % (
                    rep + 1, r["zarr_mbps"], r["zarr_cpu_pct"], r["zarrfs_mbps"],
                    r["zarrfs_daemon_cpu_pct"], r["ratio"], r["zarrfs_requests"]))
            log("         local directory: zarr-python %.1f MB/s, zarrfs %.1f MB/s"
                % (r["zarr_local_mbps"], r["zarrfs_local_mbps"]))
            reps.append(r)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt])
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return reps


def summarize(reps):
    keys = [k for k in reps[0] if isinstance(reps[0][k], (int, float))]
    return {"median": {k: statistics.median(r[k] for r in reps) for k in keys},
            "min": {k: min(r[k] for r in reps) for k in keys},
            "max": {k: max(r[k] for r in reps) for k in keys}}


def markdown(res):
    med, lo, hi = res["summary"]["median"], res["summary"]["min"], res["summary"]["max"]
    lines = [
        "| array | round trip | zarr-python 2.13 `z[:]` MB/s | zarrfs whole file MB/s | ratio "
        "| zarrfs requests | CPU: zarr-python / zarrfs daemon "
        "| spread (min–max): zarr-python / zarrfs MB/s | load (1 min) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
        "| %.0f MB float32, %s, %d chunks of 4 MiB (%.0f MB stored) | %.1f ms (%s) | %.1f | %.1f "
        "| **%.2f** | %d | %.0f%% / %.0f%% | %.1f–%.1f / %.1f–%.1f | %.1f–%.1f |" % (
            NBYTES / 1e6, CODEC_LABEL[res["config"]["codec"]], res["chunks"],
            res["stored_bytes"] / 1e6, res["rtt_ms"], res["latency_mode"], med["zarr_mbps"],
            med["zarrfs_mbps"], med["ratio"], med["zarrfs_requests"], med["zarr_cpu_pct"],
            med["zarrfs_daemon_cpu_pct"], lo["zarr_mbps"],
            hi["zarr_mbps"], lo["zarrfs_mbps"], hi["zarrfs_mbps"], lo["load1"], hi["load1"]),
    ]
    lines += [
        "",
        "| the same, from the local directory (page cache) | zarr-python `z[:]` MB/s "
        "| zarrfs whole file MB/s | ratio |",
        "|---|--:|--:|--:|",
        "| no network | %.1f | %.1f | %.2f |" % (
            med["zarr_local_mbps"], med["zarrfs_local_mbps"],
            statistics.median(r["zarrfs_local_mbps"] / r["zarr_local_mbps"]
                              for r in res["reps"])),
    ]
    return "\n".join(lines)


def machine():
    import numcodecs
    import numpy as np
    import zarr
    import fsspec
    import aiohttp
    info = {"nproc": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "zarr": zarr.__version__,
            "numcodecs": numcodecs.__version__, "numpy": np.__version__,
            "fsspec": fsspec.__version__, "aiohttp": aiohttp.__version__}
    v = subprocess.run(["nginx", "-v"], capture_output=True, text=True)
    info["nginx"] = v.stderr.strip()
    return info


def main():
    if sys.argv[1:2] == ["relay"]:
        relay_main(*sys.argv[2:7])
        return
    if sys.argv[1:2] == ["--report"]:
        with open(sys.argv[2]) as f:
            print(markdown(json.load(f)))
        return
    if os.geteuid() != 0:
        sys.exit("bench_remote: run as root (ip netns)")
    data_root = os.path.join(CFG["dir"], "data")
    os.makedirs(data_root, exist_ok=True)
    os.makedirs(os.path.join(CFG["dir"], "results"), exist_ok=True)
    name = generate(data_root)
    stored = store_bytes(os.path.join(data_root, name))
    log("== %s: %.0f MB float32 (%d x %d), %d chunks, %.0f MB stored, %d repetitions"
        % (name, NBYTES / 1e6, ROWS, COLS, (ROWS // CHUNK[0]) * (COLS // CHUNK[1]), stored / 1e6,
           CFG["reps"]))
    net = Net()

    def on_signal(sig, _frame):
        raise KeyboardInterrupt("signal %d" % sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        net.up()
        net.start_servers(data_root)
        rtt, conn = measure_rtt("http://%s:%d/%s/.zarray" % (NS_IP, PORT, name))
        log("  latency by %s: request round trip %.1f ms (TCP connect() %.1f ms; the relay adds "
            "the handshake's round trip to a new connection's first request instead)"
            % (net.mode, rtt, conn))
        reps = run(net, data_root, name)
    finally:
        net.down()
        log("  network namespace %s removed" % net.ns)
    res = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "config": CFG,
           "rows": ROWS, "cols": COLS, "nbytes": NBYTES,
           "chunks": (ROWS // CHUNK[0]) * (COLS // CHUNK[1]), "stored_bytes": stored,
           "latency_mode": net.mode, "rtt_ms": rtt, "connect_ms": conn, "machine": machine(),
           "reps": reps, "summary": summarize(reps)}
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
