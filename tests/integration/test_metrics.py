"""Metrics for monitoring systems: MNT/.zarrfs-metrics and -o metrics_file=PATH in the Prometheus
text format, checked by the real consumers — Debian's `promtool check metrics` (prometheus) must
accept both, and `prometheus-node-exporter` with its textfile collector must serve the file's
samples — and counters that move as a test reads data written by zarr-python 2.13 (expected
values from the array's own shape and chunking, never from zarrfs's output)."""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zfmount import Mount, TestCase, main  # noqa: E402

PROMTOOL = shutil.which("promtool")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def parse(text):
    """{(name, frozenset of label pairs): value} of the exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(samples, name, **want):
    """The one sample of name whose labels include want."""
    hits = [v for (n, l), v in samples.items()
            if n == name and all((k, w) in l for k, w in want.items())]
    assert len(hits) == 1, "%s %s: %d samples" % (name, want, len(hits))
    return hits[0]


def read_text(path):
    with open(path) as f:
        return f.read()


def promtool_check(test, text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    test.assertEqual(r.returncode, 0, "promtool check metrics:\n" + r.stdout + r.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Metrics(TestCase):
    @classmethod
    def setUpClass(cls):
        assert PROMTOOL, "promtool missing (Debian's prometheus; scripts/deps.sh installs it)"
        assert NODE_EXPORTER, "prometheus-node-exporter missing (scripts/deps.sh installs it)"
        cls.tmp = tempfile.mkdtemp(prefix="zf-metrics-")
        cls.store = os.path.join(cls.tmp, "data.zarr")
        root = zarr.open_group(zarr.DirectoryStore(cls.store), mode="w")
        cls.want = np.arange(200 * 90, dtype="<i4").reshape(200, 90)
        cls.arr = root.create_dataset("counts", data=cls.want, chunks=(50, 30),
                                      compressor=zarr.Zlib(level=1))
        cls.nchunks = (200 // 50) * (90 // 30)
        # one corrupt chunk in a second array: its read is an EIO the metrics count
        bad = root.create_dataset("broken", data=np.ones((10,), "<f8"), chunks=(10,),
                                  compressor=zarr.Zlib(level=1))
        with open(os.path.join(cls.store, "broken", "0"), "wb") as f:
            f.write(b"not zlib at all")
        del bad

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_metrics_file_counts_reads_and_promtool_accepts_it(self):
        with Mount(self.store, options=["cache_size=64M"]) as m:
            self.assertNotIn(".zarrfs-metrics", os.listdir(m.mnt))
            before = parse(read_text(m.path(".zarrfs-metrics")))
            self.assertEqual(value(before, "zarrfs_chunks_decoded_total"), 0)
            with open(m.path("counts"), "rb") as f:
                got = f.read()
            self.assertBytesEqual(got, self.want.tobytes(), "counts")
            with self.assertRaises(OSError):
                with open(m.path("broken"), "rb") as f:
                    f.read()
            text = read_text(m.path(".zarrfs-metrics"))
            promtool_check(self, text)
            self.assertTrue(text.endswith("# EOF\n"))
            s = parse(text)
            mnt = os.path.realpath(m.mnt)
            # every sample carries the mount's labels
            for (name, labels) in s:
                self.assertIn(("mount", mnt), labels, name)
            self.assertEqual(value(s, "zarrfs_chunks_decoded_total"), self.nchunks)
            # the kernel may ask again for what failed (its readahead, then the read)
            failures = value(s, "zarrfs_chunk_decode_failures_total")
            self.assertGreaterEqual(failures, 1)
            self.assertEqual(value(s, "zarrfs_cache_misses_total"), self.nchunks + failures)
            self.assertEqual(value(s, "zarrfs_served_bytes_total"), self.want.nbytes)
            self.assertGreaterEqual(value(s, "zarrfs_reply_errors_total", errno="EIO"), 1)
            self.assertEqual(value(s, "zarrfs_cache_capacity_bytes"), 64 << 20)
            # the decode histogram: one observation per decode, buckets cumulative
            self.assertEqual(value(s, "zarrfs_chunk_decode_duration_seconds_count"),
                             self.nchunks + failures)
            self.assertEqual(value(s, "zarrfs_chunk_decode_duration_seconds_bucket", le="+Inf"),
                             self.nchunks + failures)
            # the store's: the chunk files were read from the local store, each once
            ok = value(s, "zarrfs_store_request_duration_seconds_count", kind="file",
                       outcome="ok")
            self.assertGreaterEqual(ok, self.nchunks + 1)
            buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in s.items()
                             if n == "zarrfs_store_request_duration_seconds_bucket"
                             and ("kind", "file") in l and ("outcome", "ok") in l
                             and dict(l)["le"] != "+Inf")
            counts = [v for _, v in buckets]
            self.assertEqual(counts, sorted(counts), "buckets are cumulative")
            self.assertGreater(value(s, "process_resident_memory_bytes"), 1 << 20)

    def test_node_exporter_serves_the_metrics_file(self):
        textdir = os.path.join(self.tmp, "textfile")
        os.makedirs(textdir, exist_ok=True)
        path = os.path.join(textdir, "zarrfs.prom")
        with Mount(self.store, options=["metrics_file=" + path, "stats_log=1"]) as m:
            deadline = time.monotonic() + 10
            while not os.path.exists(path):
                self.assertLess(time.monotonic(), deadline, "no metrics file after 10 s")
                time.sleep(0.1)
            with open(m.path("counts"), "rb") as f:
                f.read()
            # the file is rewritten every second: the read shows up in it
            deadline = time.monotonic() + 10
            while True:
                text = read_text(path)
                self.assertTrue(text.endswith("# EOF\n"), "a partial file")
                s = parse(text)
                if value(s, "zarrfs_served_bytes_total") == self.want.nbytes:
                    break
                self.assertLess(time.monotonic(), deadline, "the file did not follow the read")
                time.sleep(0.2)
            promtool_check(self, text)
            # only the file, atomically replaced: no temporary file left beside it
            self.assertEqual(os.listdir(textdir), ["zarrfs.prom"])
            port = free_port()
            ne = subprocess.Popen([NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % port,
                                   "--collector.disable-defaults", "--collector.textfile",
                                   "--collector.textfile.directory=" + textdir],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                body = None
                deadline = time.monotonic() + 20
                while body is None:
                    try:
                        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                                    timeout=5) as r:
                            body = r.read().decode()
                        break
                    except OSError:
                        self.assertIsNone(ne.poll(), "node exporter exited")
                        self.assertLess(time.monotonic(), deadline, "node exporter not up")
                        time.sleep(0.2)
            finally:
                ne.terminate()
                ne.wait(timeout=20)
            scraped = {}
            for line in body.splitlines():
                if line.startswith(("zarrfs_", "node_textfile_scrape_error")):
                    m2 = SAMPLE.match(line)
                    scraped.setdefault(m2.group(1), []).append(float(m2.group(4)))
            self.assertEqual(scraped.get("node_textfile_scrape_error"), [0.0], body[-2000:])
            self.assertEqual(scraped.get("zarrfs_served_bytes_total"), [float(self.want.nbytes)])
            self.assertEqual(scraped.get("zarrfs_chunks_decoded_total"), [float(self.nchunks)])
        # the daemon is gone: its last file stays for the collector (and says what it did)
        self.assertTrue(os.path.exists(path))

    def test_an_unwritable_metrics_file_does_not_stop_the_mount(self):
        path = os.path.join(self.tmp, "no-such-dir", "zarrfs.prom")
        with Mount(self.store, options=["metrics_file=" + path, "stats_log=1"]) as m:
            with open(m.path("counts"), "rb") as f:
                self.assertEqual(len(f.read()), self.want.nbytes)
            time.sleep(1.5)
            self.assertTrue(m.alive())
        self.assertIn("metrics_file", m.stderr_text())


if __name__ == "__main__":
    main()
