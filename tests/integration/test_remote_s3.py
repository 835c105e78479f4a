#!/usr/bin/python3
"""S3 stores: zarrfs mounting s3://BUCKET/PREFIX from s3rver 3.7.1 (npm, pinned in
js/package-lock.json) on 127.0.0.1, with -o endpoint=http://127.0.0.1:PORT,region=us-east-1.

s3rver 3.7.1 does not check SigV4 signatures (only that the access key id exists: its
lib/middleware/authentication.js says "Signature version 4 calculation is unimplemented"), so the
mounts go through remote_servers.SigV4Proxy, which verifies every signature as S3 does
(canonical request, scope, date, x-amz-content-sha256, session token) with the secret it was
given, answers S3's 403/400 errors, and forwards what passes to s3rver. The proxy's verifier is
itself checked against an independent signer, curl --aws-sigv4 (test_00). s3rver 3.7.1 also
answers a suffix range "bytes=-N" with bytes 0..N; the proxy turns those into the explicit range
of the last N bytes, as S3 answers (sharded arrays read their shard index that way). Two mounts go
to s3rver directly: v2 byte-exact, and sharded arrays, which must then read right or fail with
EIO, never return wrong bytes.

The hierarchies of remote_fixtures.build are uploaded with a SigV4 client (remote_servers.S3Client);
every mount is compared with a LOCAL zarrfs mount of the same directory (listings, sizes, xattrs,
bytes, errnos), the local v2 mount with zarr-python 2.13 and the sharded arrays with numpy.

* Mounted: v2 (consolidated and not), the zarrita v3 fixture, sharded v3: byte-exact; every
  request signed and accepted.
* Wide: a group with 1010 child arrays (s3rver returns every CommonPrefix in one page: it applies
  max-keys to Contents only) and a group whose children come after 1050 other objects (page 1 of
  ListObjectsV2 holds 1000 keys and none of them: only a backend that follows
  NextContinuationToken lists them). Reports whether the backend sends max-keys.
* Credentials: from AWS_SHARED_CREDENTIALS_FILE with -o profile (the default profile there holds a
  wrong secret); a wrong secret or an unknown access key id: refused (exit 1, a clear error,
  nothing mounted); a session token is sent; -o anonymous sends unsigned requests; with -d the
  secret, the token and the signing key never appear in zarrfs's output.
"""

import contextlib
import datetime
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import remote_fixtures as rf  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import other_writer  # noqa: E402

import numpy as np  # noqa: E402

BUCKET = "zarrfs"
REGION = "us-east-1"
ACCESS_KEY = "AKIAZARRFSTEST000001"
SECRET = "zarrfs/Test+Secret=Key0123456789abcdefXYZ"      # "/" "+" "=" like real secrets
OTHER_KEY = "AKIAZARRFSTEST000003"     # used with wrong secrets (same real secret as ACCESS_KEY)
TOKEN_KEY = "ASIAZARRFSTEST000002"
TOKEN_SECRET = "zarrfs-token-secret-9876543210zyxwvuTSRQ"
TOKEN = "IQoJb3JpZ2luX2VjEzarrfsTestSessionToken//////////Zm9vYmFy=="
N_MANY = 1010          # child arrays of wide.zarr/many
N_PAD = 1050           # non-Zarr objects before the children of wide.zarr/padded

WORK = None
SRV = None
WANT = None
S3 = None
PROXY = None
REMOTE_OPTS = ["retries=2", "timeout=20", "region=" + REGION]


def build_wide(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    files = {".zgroup": {"zarr_format": 2}, "many/.zgroup": {"zarr_format": 2},
             "padded/.zgroup": {"zarr_format": 2}}
    for i in range(N_MANY):
        files["many/a%04d/.zarray" % i] = {
            "zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i2", "fill_value": i,
            "order": "C", "compressor": None, "filters": None}
    for i in range(N_PAD):
        files["padded/junk%04d" % i] = b"x"
    for i in range(5):
        files["padded/zz%d/.zarray" % i] = {
            "zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<u4", "fill_value": 0,
            "order": "C", "compressor": None, "filters": None}
        files["padded/zz%d/0" % i] = (np.arange(4, dtype="<u4") + 100 * i).tobytes()
    c3.write_files(root, files)
    return root


def setUpModule():
    global WORK, SRV, WANT, S3, PROXY
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-s3-")
    SRV = os.path.join(WORK, "srv")
    WANT = rf.build(SRV)["sharded"]
    build_wide(os.path.join(SRV, "wide.zarr"))
    S3 = rs.S3rver([BUCKET]).start()
    PROXY = rs.SigV4Proxy(S3.port, {ACCESS_KEY: SECRET, OTHER_KEY: SECRET,
                                     TOKEN_KEY: (TOKEN_SECRET, TOKEN)},
                          region=REGION).start()
    c = S3.client()
    n = 0
    for name in sorted(os.listdir(SRV)):
        n += c.upload_tree(os.path.join(SRV, name), BUCKET, name, threads=6)
    log("s3rver at %s (proxy %s): %d objects uploaded" % (S3.endpoint(), PROXY.endpoint(), n))


def tearDownModule():
    if PROXY:
        PROXY.stop()
    if S3:
        S3.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


aws_env = rs.aws_env


def creds(key=ACCESS_KEY, secret=SECRET):
    return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}


def s3url(name):
    return "s3://%s/%s" % (BUCKET, name)


def opts(endpoint=None, extra=()):
    return REMOTE_OPTS + ["endpoint=" + (endpoint or PROXY.endpoint())] + list(extra)


def mount_s3(name, env, endpoint=None, extra=(), args=(), label=None):
    with aws_env(**env):
        return zfmount.Mount(s3url(name), options=opts(endpoint, extra), args=list(args),
                             label=label or "s3-" + name).start()


def refusal(name, env, extra=()):
    with aws_env(**env):
        r = zfmount.expect_refusal(s3url(name), ["-o", ",".join(opts(extra=extra))], timeout=30)
    # requests the daemon sent before exiting may still wait in the proxy's accept queue
    time.sleep(0.5)
    return r


def records_since(mark):
    with PROXY.lock:
        return list(PROXY.records[mark:])


def records_mark():
    with PROXY.lock:
        return len(PROXY.records)


class Mounted(zfmount.MountsTestCase):
    stores = ("v2.zarr", "v2nc.zarr", "v3.zarr", "sharded.zarr")

    @classmethod
    def mount_all(cls):
        cls.local, cls.remote = {}, {}
        cls.mark = records_mark()
        for name in cls.stores:
            cls.local[name] = cls.add_mount(os.path.join(SRV, name), label="local-" + name)
            with aws_env(**creds()):
                rm = cls.add_mount(s3url(name), options=opts(), label="s3-" + name)
            cls.remote[name] = rm
            log("mounted %s on %s (pid %d)" % (rm.store, rm.mnt, rm.pid))

    def compare(self, name, **kw):
        n_ok, n_bytes, n_err = rf.compare_trees(self, self.local[name].mnt, self.remote[name].mnt,
                                                what="s3 " + name, **kw)
        log("  %s: %d files byte-exact (%d bytes), %d failing alike" % (name, n_ok, n_bytes, n_err))
        return n_ok

    def test_00_proxy_checks_signatures(self):
        """The proxy's SigV4 check agrees with curl's signer: right secret 200, wrong one 403."""
        url = PROXY.endpoint() + "/%s/v2.zarr/.zgroup" % BUCKET
        for secret, want in ((SECRET, "200"), ("wrong" + SECRET, "403")):
            r = zfmount.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4",
                             "aws:amz:%s:s3" % REGION, "--user", "%s:%s" % (OTHER_KEY, secret),
                             "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url])
            self.assertEqual(r.stdout, want, "curl --aws-sigv4 with %s secret" %
                             ("the right" if want == "200" else "a wrong"))

    def test_01_references(self):
        arrays = rf.v2_arrays(os.path.join(SRV, "v2.zarr"))
        for rel in arrays:
            with self.subTest(array=rel):
                z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel))
                self.assertBytesEqual(zfmount.read_all(self.local["v2.zarr"].path(rel)),
                                      zfmount.expected_bytes(z), "local " + rel)
        for name, want in WANT.items():
            self.assertBytesEqual(zfmount.read_all(self.local["sharded.zarr"].path(name)),
                                  np.ascontiguousarray(want).tobytes(), "local " + name)

    def test_02_v2(self):
        self.assertGreaterEqual(self.compare("v2.zarr"), 14)
        self.assertGreaterEqual(self.compare("v2nc.zarr"), 14)

    def test_03_v3(self):
        self.assertGreaterEqual(self.compare("v3.zarr"), 30)

    def test_04_sharded(self):
        self.assertEqual(self.compare("sharded.zarr"), len(WANT))
        for name, want in WANT.items():
            self.assertBytesEqual(zfmount.read_all(self.remote["sharded.zarr"].path(name)),
                                  np.ascontiguousarray(want).tobytes(), name)

    def test_05_every_request_signed_and_accepted(self):
        # (requests with other keys come from other tests' refused mounts that the proxy may
        # only now be reading)
        recs = [r for r in records_since(self.mark) if r.access_key in (ACCESS_KEY, None)]
        self.assertGreater(len(recs), 20)
        bad = [r for r in recs if r.verdict != "ok"]
        with PROXY.lock:
            details = list(PROXY.mismatches)
        self.assertEqual(bad, [], "requests the SigV4 check refused or that were unsigned; "
                         "canonical requests of the mismatches (proxy's view): %r" % details)
        self.assertTrue(all(r.access_key == ACCESS_KEY for r in recs))
        ranged = [r for r in recs if r.path.startswith("/%s/sharded.zarr/" % BUCKET)]
        self.assertTrue(ranged, "no request for the sharded store")
        self.assertGreater(PROXY.suffix_fixed, 0, "no suffix range request (shard index)?")
        lists = [r for r in recs if dict(r.query).get("list-type") == "2"]
        log("  %d requests, all signed and accepted; %d ListObjectsV2 (query of one: %r)"
            % (len(recs), len(lists), lists[0].query if lists else None))


class Writes(zfmount.TestCase):
    """-o rw on S3: writes become one signed PUT per chunk (accepted by the proxy's SigV4
    check), a chunk of fill values a DELETE, a new group a PUT of its .zgroup; zarr-python reads
    the result back from the objects downloaded with an independent client."""

    def test_01_write_and_read_back(self):
        import zarr, numcodecs
        src = os.path.join(WORK, "w-src.zarr")
        z = zarr.open_array(src, mode="w", shape=(30, 20), chunks=(8, 8), dtype="<f4",
                            fill_value=0, compressor=numcodecs.Zlib(1))
        z[:] = np.arange(600, dtype="<f4").reshape(30, 20)
        S3.client().upload_tree(src, BUCKET, "w.zarr")
        mark = records_mark()
        m = mount_s3("w.zarr", creds(), extra=["rw"], label="s3-rw")
        try:
            name = os.listdir(m.mnt)[0]
            model = np.arange(600, dtype="<f4").reshape(30, 20)
            model[3:20, 5:17] = -7
            model[8:16, 8:16] = 0          # chunk (1, 1) all fill: erased
            with open(m.path(name), "r+b") as f:
                for r in range(3, 20):
                    f.seek(4 * (r * 20 + 5))
                    f.write(model[r, 5:17].tobytes())
                f.flush()
                os.fsync(f.fileno())
        finally:
            status, how = m.stop()
        self.assertEqual((status, how), (0, "fusermount3 -u"))
        recs = [r for r in records_since(mark) if r.method in ("PUT", "DELETE")]
        self.assertTrue(recs and all(r.verdict == "ok" and r.status in (200, 204) for r in recs),
                        recs)
        puts = sorted(r.path.rsplit("/", 1)[1] for r in recs if r.method == "PUT")
        dels = sorted(r.path.rsplit("/", 1)[1] for r in recs if r.method == "DELETE")
        self.assertEqual(dels, ["1.1"])
        self.assertEqual(puts, ["0.0", "0.1", "0.2", "1.0", "1.2", "2.0", "2.1", "2.2"])
        out = os.path.join(WORK, "w-back.zarr")
        c = S3.client()
        os.makedirs(out)
        for key in [".zarray"] + puts + ["3.0", "3.1", "3.2"]:
            st, _, body = c.request("GET", "/%s/w.zarr/%s" % (BUCKET, key))
            self.assertEqual(st, 200, key)
            with open(os.path.join(out, key), "wb") as f:
                f.write(body)
        got = zarr.open_array(out, "r")[:]
        self.assertTrue(np.array_equal(got, model), got)
        log("  %d PUTs and %d DELETE, all signed and accepted; zarr-python reads the writes"
            % (len(puts), len(dels)))

    def s3_store(self, name, build):
        """other_writer.py's three callables for a store built locally and uploaded as `name`."""
        src = os.path.join(WORK, name + "-src")
        shutil.rmtree(src, ignore_errors=True)
        build(src)
        c = S3.client()
        c.upload_tree(src, BUCKET, name)

        @contextlib.contextmanager
        def mount():
            m = mount_s3(name, creds(), extra=["rw"], label="s3-" + name)
            try:
                yield m
            finally:
                self.assertEqual(m.stop(), (0, "fusermount3 -u"))

        def download(dest):
            keys, _p, trunc, _t = c.list_v2(BUCKET, name + "/", delimiter=None)
            self.assertFalse(trunc)
            for key in keys:
                st, _, body = c.request("GET", "/%s/%s" % (BUCKET, key))
                self.assertEqual(st, 200, key)
                out = os.path.join(dest, key[len(name) + 1:])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "wb") as f:
                    f.write(body)

        return mount, lambda key, data: c.put(BUCKET, name + "/" + key, data), download

    def test_02_partial_writes_keep_another_programs_chunks(self):
        """other_writer.py on S3: plain chunks (zarr-python the other writer and the reader).
        zarrfs's conditional PUTs of both chunks were refused (412: the chunks changed), so it
        read and merged them."""
        before = PROXY.preconditions_failed
        other_writer.plain_case(self, WORK, *self.s3_store("other-plain.zarr",
                                                           other_writer.build_plain))
        self.assertGreaterEqual(PROXY.preconditions_failed - before, 2)

    def test_03_partial_writes_keep_another_programs_shard(self):
        other_writer.shard_case(self, WORK, *self.s3_store("other-shard.zarr",
                                                           other_writer.write_shard_store))


class Wide(zfmount.TestCase):

    def test_01_listing_beyond_one_page(self):
        """`many`: 1010 child arrays; `padded`: 5 children after 1050 other keys."""
        # what s3rver does with the ListObjectsV2 pages (independent of zarrfs)
        c = rs.S3Client(S3.port)
        keys, prefixes, trunc, token = c.list_v2(BUCKET, "wide.zarr/many/")
        self.assertEqual((len(prefixes), trunc), (N_MANY, False),
                         "s3rver now pages CommonPrefixes: update the docstring")
        keys, prefixes, trunc, token = c.list_v2(BUCKET, "wide.zarr/padded/")
        self.assertEqual((len(keys), prefixes, trunc), (1000, [], True))
        keys2, prefixes2, trunc2, _ = c.list_v2(BUCKET, "wide.zarr/padded/", token=token)
        self.assertEqual(len(prefixes2), 5, "page 2 lacks the children")
        root = os.path.join(SRV, "wide.zarr")
        mark = records_mark()
        with zfmount.Mount(root, label="local-wide") as lm:
            rm = mount_s3("wide.zarr", creds())
            try:
                for g, n in (("many", N_MANY), ("padded", 5)):
                    with self.subTest(group=g):
                        want = sorted(os.listdir(lm.path(g)))
                        self.assertEqual(len(want), n, "local mount of %s" % g)
                        got = sorted(os.listdir(rm.path(g)))
                        self.assertEqual(got, want, "listing of %s: %d names, %d expected; "
                                         "missing %r" % (g, len(got), len(want),
                                                         sorted(set(want) - set(got))[:5]))
                for i in (0, 999, 1000, N_MANY - 1):
                    p = "many/a%04d" % i
                    self.assertBytesEqual(zfmount.read_all(rm.path(p)),
                                          np.full(3, i, dtype="<i2").tobytes(), p)
                for i in range(5):
                    p = "padded/zz%d" % i
                    self.assertBytesEqual(zfmount.read_all(rm.path(p)),
                                          (np.arange(4, dtype="<u4") + 100 * i).tobytes(), p)
            finally:
                status, how = rm.stop()
            self.assertEqual(status, 0)
        lists = [r for r in records_since(mark) if dict(r.query).get("list-type") == "2"]
        for g in ("many", "padded"):
            ls = [r for r in lists if dict(r.query).get("prefix") == "wide.zarr/%s/" % g]
            log("  %s: %d ListObjectsV2 requests: %r" % (
                g, len(ls), [sorted(k for k in dict(r.query) if k not in ("prefix",)) for r in ls]))
            self.assertTrue(ls, "no ListObjectsV2 request for %s" % g)
            if g == "padded":
                self.assertTrue(any("continuation-token" in dict(r.query) for r in ls),
                                "the second page was never asked for")
        mk = sorted({dict(r.query).get("max-keys") for r in lists}, key=str)
        log("  max-keys sent by the backend: %r" % mk)


class Credentials(zfmount.TestCase):

    def write_credentials(self, home):
        p = os.path.join(home, "credentials-test")
        with open(p, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n"
                    "[zftest]\naws_access_key_id=%s\naws_secret_access_key=%s\n"
                    % (OTHER_KEY, "not-the-" + SECRET, ACCESS_KEY, SECRET))
        return p

    def read_some(self, m):
        self.assertIn("zlib_f4", os.listdir(m.mnt))
        self.assertBytesEqual(zfmount.read_all(m.path("zlib_f4")),
                              zfmount.expected_bytes(zfmount.open_zarr_array(
                                  os.path.join(SRV, "v2.zarr", "zlib_f4"))), "zlib_f4")

    def test_01_profile_from_shared_credentials_file(self):
        with aws_env() as home:
            path = self.write_credentials(home)
        env = {"AWS_SHARED_CREDENTIALS_FILE": path}
        m = mount_s3("v2.zarr", env, extra=["profile=zftest"])
        try:
            self.read_some(m)
        finally:
            status, _ = m.stop()
        self.assertEqual(status, 0)
        log("  -o profile=zftest from AWS_SHARED_CREDENTIALS_FILE: mounted and read")
        # the same file's default profile has a wrong secret: refused
        mark = records_mark()
        status, err, mounted = refusal("v2.zarr", env)
        log("  default profile (wrong secret): status %s: %s" % (status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertTrue(any(r.verdict == "SignatureDoesNotMatch" and r.access_key == OTHER_KEY
                            for r in records_since(mark)))
        # AWS_PROFILE names the profile too
        env["AWS_PROFILE"] = "zftest"
        m = mount_s3("v2.zarr", env, label="s3-aws-profile")
        try:
            self.read_some(m)
        finally:
            status, _ = m.stop()
        self.assertEqual(status, 0)

    def test_02_wrong_secret_refused(self):
        mark = records_mark()
        status, err, mounted = refusal("v2.zarr", creds(OTHER_KEY, "wrong/" + SECRET[6:]))
        log("  wrong secret: status %s: %s" % (status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertRegex(err, r"(?i)(denied|signature|403|forbidden|credential)")
        self.assertLessEqual(len(err.strip().splitlines()), 3, "not one clear message: %r" % err)
        self.assertNotIn(SECRET[6:], err)
        recs = [r for r in records_since(mark) if r.access_key == OTHER_KEY]
        self.assertTrue(recs and all(r.verdict == "SignatureDoesNotMatch" for r in recs), recs)

    def test_03_unknown_access_key_refused(self):
        status, err, mounted = refusal("v2.zarr", creds(key="AKIAZARRFSNOSUCHKEY0"))
        log("  unknown access key: status %s: %s" % (status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertRegex(err, r"(?i)(denied|access key|403|forbidden|credential|InvalidAccessKeyId)")

    def test_04_direct_to_s3rver(self):
        """No proxy: s3rver itself (its own key S3RVER). v2 byte-exact. Sharded arrays need the
        shard index as a suffix range, which s3rver 3.7.1 answers wrongly (bytes 0-N): each read
        must then be right or EIO, never wrong bytes."""
        with zfmount.Mount(os.path.join(SRV, "v2.zarr"), label="local-v2") as lm:
            m = mount_s3("v2.zarr", creds("S3RVER", "S3RVER"), endpoint=S3.endpoint(),
                         label="s3rver-direct")
            try:
                n_ok, _, _ = rf.compare_trees(self, lm.mnt, m.mnt, what="s3rver direct", preads=5)
            finally:
                status, _ = m.stop()
        self.assertGreaterEqual(n_ok, 14)
        self.assertEqual(status, 0)
        m = mount_s3("sharded.zarr", creds("S3RVER", "S3RVER"), endpoint=S3.endpoint(),
                     label="s3rver-direct-sharded")
        outcomes = {}
        try:
            for name, want in WANT.items():
                got = rf.outcome(zfmount.read_all, m.path(name))
                if got[0] == "ok":
                    self.assertBytesEqual(got[1], np.ascontiguousarray(want).tobytes(), name)
                    outcomes[name] = "right"
                else:
                    self.assertEqual(got, ("errno", "EIO"), name)
                    outcomes[name] = "EIO"
        finally:
            status, _ = m.stop()
        self.assertEqual(status, 0)
        log("  s3rver direct: v2 byte-exact; sharded through s3rver's suffix ranges: %r" % outcomes)

    def test_05_session_token_and_no_secret_in_debug_output(self):
        """-d (FUSE and zarrfs debug logs): neither secret nor token nor signing key is printed."""
        mark = records_mark()
        env = {"AWS_ACCESS_KEY_ID": TOKEN_KEY, "AWS_SECRET_ACCESS_KEY": TOKEN_SECRET,
               "AWS_SESSION_TOKEN": TOKEN}
        m = mount_s3("v2.zarr", env, args=["-d"], label="s3-debug")
        try:
            self.read_some(m)
            os.listdir(m.path("grp"))
        finally:
            status, _ = m.stop()
        self.assertEqual(status, 0)
        err = m.stderr_text()
        self.assertIn("opcode", err, "-d printed no FUSE debug output?")
        recs = [r for r in records_since(mark) if r.access_key != OTHER_KEY]
        self.assertTrue(recs and all(r.verdict == "ok" and r.access_key == TOKEN_KEY for r in recs),
                        "requests without the session token or refused: %r" % recs[:3])
        today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")
        skey = rs.signing_key(TOKEN_SECRET, today, REGION).hex()
        for what, s in (("secret", TOKEN_SECRET), ("session token", TOKEN),
                        ("signing key", skey), ("secret (URL-encoded)", rs.aws_quote(TOKEN_SECRET))):
            self.assertNotIn(s, err, "the %s appears in zarrfs's stderr with -d" % what)
        log("  -d: %d lines of stderr, no secret, token or signing key; %d requests with the token"
            % (len(err.splitlines()), len(recs)))

    def test_06_anonymous(self):
        """-o anonymous: unsigned requests (s3rver answers them like a public bucket)."""
        mark = records_mark()
        with zfmount.Mount(os.path.join(SRV, "sharded.zarr"), label="local-sharded") as lm:
            m = mount_s3("sharded.zarr", {}, extra=["anonymous"], label="s3-anonymous")
            try:
                n_ok, _, _ = rf.compare_trees(self, lm.mnt, m.mnt, what="anonymous", preads=3)
            finally:
                status, _ = m.stop()
        self.assertEqual(status, 0)
        self.assertEqual(n_ok, len(WANT))
        recs = records_since(mark)
        self.assertTrue(recs)
        self.assertEqual([r for r in recs if r.signed], [], "signed requests with -o anonymous")

    def test_07_no_credentials_refused(self):
        """Neither environment, nor credentials file, nor anonymous: a clear refusal."""
        status, err, mounted = refusal("v2.zarr", {"AWS_SHARED_CREDENTIALS_FILE":
                                                   os.path.join(WORK, "no-such-credentials")})
        log("  no credentials: status %s: %s" % (status, err.strip()))
        self.assertEqual(status, 1, err)
        self.assertFalse(mounted)
        self.assertRegex(err, r"(?i)credential")


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
