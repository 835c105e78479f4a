#!/usr/bin/python3
"""One array read whole through each remote store of zarrfs, side by side in one run: a local
directory (the limit of the mount itself), nginx (HTTP), s3rver (S3), Azurite (Azure Blob) and
firebase-tools' Cloud Storage emulator (GCS), all on 127.0.0.1. Run it through bench/cloud.sh.

What it tells: what each backend's requests, signing and listing cost zarrfs against the others
on the same data, with the servers as they are (the emulators are node.js programs: their own
speed is part of each figure, which is why the same data over nginx and the local directory are
beside them). zarr-python cannot read gs:// or az:// here (no gcsfs or adlfs in Debian 12), so
the reference is zarr-python reading the local directory, for scale only.

Data: float32 (ZF_BENCH_CLOUD_ROWS, default 2048) x 8192, chunks 512 x 1024 (2 MiB), zlib level 1,
written once with zarr-python 2.13 (smooth fields plus noise, bench.py's generator) and uploaded
to every server. Per repetition (ZF_BENCH_REPS, default 5), for each store in turn: a fresh mount
(cold: nothing cached), the array file read whole with 4 MiB reads, checked byte for byte against
zarr-python's array in the first repetition, then unmounted. Medians over the repetitions; the
ratio to S3 is computed per repetition, then its median reported. MB = 1e6 bytes.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import gcs_servers as gs  # noqa: E402
import remote_servers as rs  # noqa: E402
import zfmount  # noqa: E402

ZARRFS = os.environ.get("ZARRFS") or os.path.join(REPO, "build", "src", "fuse", "zarrfs")
REPS = int(os.environ.get("ZF_BENCH_REPS", "5"))
ROWS = int(os.environ.get("ZF_BENCH_CLOUD_ROWS", "2048"))
COLS = 8192


def make_data(d):
    path = os.path.join(d, "data.zarr")
    rng = np.random.default_rng(7)
    y = np.linspace(0, 8, ROWS, dtype="f4")[:, None]
    x = np.linspace(0, 8, COLS, dtype="f4")[None, :]
    a = (np.sin(y) * np.cos(x) * 100 + rng.normal(0, 1, (ROWS, COLS))).astype("<f4")
    root = zarr.open_group(zarr.DirectoryStore(path), mode="w")
    root.create_dataset("field", data=a, chunks=(512, 1024), compressor=zarr.Zlib(level=1))
    return path, a


def read_whole(path):
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(4 << 20)
            if not b:
                break
            n += len(b)
    return n


def timed_mount_read(store, options, env, want=None):
    m = zfmount.Mount(store, options=options)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        m.start()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        t0 = time.perf_counter()
        n = read_whole(m.path("field"))
        t = time.perf_counter() - t0
        if want is not None:
            with open(m.path("field"), "rb") as f:
                if f.read() != want:
                    raise SystemExit("%s: the bytes differ from zarr-python's" % store)
        return n, t
    finally:
        m.stop()


def main():
    zfmount.ZARRFS = ZARRFS
    work = tempfile.mkdtemp(prefix="zf-bench-cloud-")
    path, a = make_data(work)
    want = a.tobytes()
    mb = len(want) / 1e6
    servers = []
    try:
        web = rs.Nginx(work, autoindex=True).start()
        servers.append(web)
        s3 = rs.S3rver(buckets=("bench",)).start()
        servers.append(s3)
        s3.client().upload_tree(path, "bench", "data.zarr")
        az = rs.Azurite().start()
        servers.append(az)
        azc = az.client()
        azc.create_container("bench", public=False)
        azc.upload_tree(path, "bench", "data.zarr")
        emu = gs.GcsEmulator().start()
        servers.append(emu)
        gsc = gs.GcsClient(emu.port)
        gsc.upload_tree(path, "bench", "data.zarr")
        gsc.close()
        stores = [
            ("local", path, [], {}),
            ("http", web.url("data.zarr"), [], {}),
            ("s3", "s3://bench/data.zarr", ["endpoint=" + s3.endpoint()],
             {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER"}),
            ("azure", "az://bench/data.zarr", ["endpoint=" + az.endpoint(),
                                                "account=" + rs.AZ_ACCOUNT],
             {"AZURE_STORAGE_ACCOUNT_KEY": rs.AZ_KEY}),
            ("gcs", "gs://bench/data.zarr", ["endpoint=" + emu.endpoint()],
             {"GOOGLE_OAUTH_ACCESS_TOKEN": "bench-token"}),
        ]
        times = {name: [] for name, *_ in stores}
        zp = []
        for rep in range(REPS):
            t0 = time.perf_counter()
            z = zarr.open_array(zarr.DirectoryStore(path), path="field", mode="r")[:]
            zp.append(time.perf_counter() - t0)
            del z
            for name, store, opts, env in stores:
                n, t = timed_mount_read(store, opts, env, want if rep == 0 else None)
                assert n == len(want), (name, n)
                times[name].append(t)
            print("rep %d: %s  zarr-python(local) %.3f s" % (
                rep + 1, "  ".join("%s %.3f s" % (k, v[-1]) for k, v in times.items()), zp[-1]),
                flush=True)
        print("\n%.1f MB array, %d chunks of 2 MiB (zlib 1), medians of %d repetitions, each a "
              "fresh mount:" % (mb, (ROWS // 512) * (COLS // 1024), REPS))
        print("%-8s %9s %9s %12s" % ("store", "seconds", "MB/s", "time / S3"))
        for name, _, _, _ in stores:
            ratio = statistics.median(t / s for t, s in zip(times[name], times["s3"]))
            med = statistics.median(times[name])
            print("%-8s %9.3f %9.1f %12.2f" % (name, med, mb / med, ratio))
        print("%-8s %9.3f %9.1f %12s" % ("zarr-python (local, z[:])", statistics.median(zp),
                                          mb / statistics.median(zp), ""))
    finally:
        for s in reversed(servers):
            s.stop()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
