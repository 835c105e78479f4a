#!/usr/bin/python3
"""GCS stores: zarrfs mounting gs://BUCKET/PREFIX (and https://storage.googleapis.com/BUCKET/...)
from the Cloud Storage emulator of firebase-tools (npm, installed once per machine by
scripts/deps.sh; see gcs_servers.py) with -o endpoint=http://127.0.0.1:PORT.

Most mounts go through gcs_servers.GcsProxy, a test server of our own in front of the emulator
that follows Google's documented protocol where the emulator does not (ifGenerationMatch, missing
buckets, the OAuth token endpoint with RS256-verified JWTs, bearer tokens required, listings paged
as GCS pages them) and injects faults. The hierarchies of remote_fixtures.build (zarr-python 2.13
v2 data, zarrita v3, sharded v3) are uploaded with the emulator's JSON API; every mount is compared
with a LOCAL zarrfs mount of the same directory (listings, sizes, bytes, errnos), whose bytes are
themselves checked against zarr-python.

* Reads: v2 (consolidated and not), v3, sharded: byte-exact; one mount straight on the emulator by
  its https://storage.googleapis.com/BUCKET/... URL with -o endpoint; -o direct_io; -o
  disk_cache.
* Listing: 10^4 keys beside a group's children and 1010 child arrays, in pages of 1000 and of 37
  (the proxy re-pages as GCS does); straight on the emulator (which repeats the prefixes).
* Credentials: an OAuth token from -o credentials and from $GOOGLE_OAUTH_ACCESS_TOKEN; a
  service-account key from $GOOGLE_APPLICATION_CREDENTIALS and from -o credentials (JWT verified
  by the proxy with the key pair's public key; tokens of 6 s, so that the mount refreshes);
  HMAC keys through the XML API's SigV4 (SigV4Proxy over s3rver, region "auto"); a wrong token,
  an unknown bucket and a 403 at mount refused with a message naming the credential; a key file
  readable by others refused; a later 403 is EACCES.
* Faults: 503 and 429 with Retry-After, retried; a listing page cut short is an error, not a
  short listing.
* Writes (-o rw): generation-conditional uploads and deletes read back by zarr-python; another
  writer's chunks merged, not lost (the proxy's 412s).
"""

import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import remote_fixtures as rf  # noqa: E402
import gcs_servers as gs  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import other_writer  # noqa: E402

import numpy as np  # noqa: E402

BUCKET = "zarrfs"
TOKEN = "ya29.zarrfs-static-test-token-0123456789"
EMAIL = "zarrfs-test@zarrfs-test.iam.gserviceaccount.com"
N_MANY = 1010
N_PAD = 10000
GCS_VARS = ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS")
OPTS = ["retries=3", "timeout=20"]

WORK = SRV = WANT = EMU = PROXY = CLIENT = KEY = None


def build_wide(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    files = {".zgroup": {"zarr_format": 2}, "many/.zgroup": {"zarr_format": 2},
             "padded/.zgroup": {"zarr_format": 2}}
    for i in range(N_MANY):
        files["many/a%04d/.zarray" % i] = {
            "zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i2", "fill_value": i,
            "order": "C", "compressor": None, "filters": None}
    for i in range(5):
        files["padded/zz%d/.zarray" % i] = {
            "zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<u4", "fill_value": 0,
            "order": "C", "compressor": None, "filters": None}
        files["padded/zz%d/0" % i] = (np.arange(4, dtype="<u4") + 100 * i).tobytes()
    c3.write_files(root, files)
    return root


def write_key(path, client_email=EMAIL, token_uri=None, mode=0o600):
    """A service-account JSON key as the Cloud console writes it, with the test's private key."""
    with open(os.path.join(WORK, "sa.pem")) as f:
        pem = f.read()
    doc = {"type": "service_account", "project_id": "zarrfs-test",
           "private_key_id": "0123456789abcdef", "private_key": pem,
           "client_email": client_email, "client_id": "1234567890",
           "auth_uri": "https://accounts.google.com/o/oauth2/auth",
           "token_uri": token_uri or PROXY.token_uri()}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    os.chmod(path, mode)
    return path


def write_credentials(name, text):
    p = os.path.join(WORK, name)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return p


def setUpModule():
    global WORK, SRV, WANT, EMU, PROXY, CLIENT
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-gcs-")
    SRV = os.path.join(WORK, "srv")
    WANT = rf.build(SRV)["sharded"]
    build_wide(os.path.join(SRV, "wide.zarr"))
    zfmount.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                 "-out", os.path.join(WORK, "sa.pem")], check=True)
    zfmount.run(["openssl", "pkey", "-in", os.path.join(WORK, "sa.pem"), "-pubout", "-out",
                 os.path.join(WORK, "sa.pub")], check=True)
    EMU = gs.GcsEmulator().start()
    PROXY = gs.GcsProxy(EMU.port, [BUCKET], public_key=os.path.join(WORK, "sa.pub"),
                        client_email=EMAIL).start()
    PROXY.page_size = 1000
    CLIENT = gs.GcsClient(EMU.port)
    n = 0
    for name in sorted(os.listdir(SRV)):
        n += CLIENT.upload_tree(os.path.join(SRV, name), BUCKET, name)
    n += CLIENT.put_many(BUCKET, (("wide.zarr/padded/junk%05d" % i, b"x") for i in range(N_PAD)),
                         threads=8)
    log("GCS emulator at %s (proxy %s): %d objects uploaded" % (EMU.endpoint(), PROXY.endpoint(),
                                                                n))


def tearDownModule():
    if CLIENT:
        CLIENT.close()
    for s in (PROXY, EMU):
        if s:
            s.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


@contextlib.contextmanager
def gcs_env(**kw):
    """os.environ without the GOOGLE_* credential variables but kw (inherited by zarrfs)."""
    saved = {k: os.environ.get(k) for k in GCS_VARS}
    try:
        for k in GCS_VARS:
            os.environ.pop(k, None)
        os.environ.update(kw)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def gsurl(name):
    return "gs://%s/%s" % (BUCKET, name)


def opts(endpoint=None, extra=()):
    return OPTS + ["endpoint=" + (endpoint or PROXY.endpoint())] + list(extra)


def mount_gcs(name, env=None, endpoint=None, extra=(), args=(), label=None, url=None):
    with gcs_env(**(env or {})):
        return zfmount.Mount(url or gsurl(name), options=opts(endpoint, extra), args=list(args),
                             label=label or "gcs-" + name).start()


def refusal(name, env=None, extra=(), url=None):
    with gcs_env(**(env or {})):
        r = zfmount.expect_refusal(url or gsurl(name), ["-o", ",".join(opts(extra=extra))],
                                   timeout=60)
    time.sleep(0.3)
    return r


@contextlib.contextmanager
def auth_required(*static):
    PROXY.require_auth = True
    PROXY.static_tokens = set(static)
    try:
        yield
    finally:
        PROXY.require_auth = False
        PROXY.static_tokens = set()


def check_v2(tc, m, preads=5):
    with zfmount.Mount(os.path.join(SRV, "v2nc.zarr"), label="local-v2nc") as lm:
        n_ok, _, _ = rf.compare_trees(tc, lm.mnt, m.mnt, what="gcs", preads=preads)
    tc.assertGreaterEqual(n_ok, 14)
    return n_ok


class Mounted(zfmount.MountsTestCase):
    stores = ("v2.zarr", "v2nc.zarr", "v3.zarr", "sharded.zarr")

    @classmethod
    def mount_all(cls):
        cls.local, cls.remote = {}, {}
        cls.mark = PROXY.mark()
        for name in cls.stores:
            cls.local[name] = cls.add_mount(os.path.join(SRV, name), label="local-" + name)
            with gcs_env():
                cls.remote[name] = cls.add_mount(gsurl(name), options=opts(),
                                                 label="gcs-" + name)

    def compare(self, name, **kw):
        n_ok, n_bytes, n_err = rf.compare_trees(self, self.local[name].mnt,
                                                self.remote[name].mnt, what="gcs " + name, **kw)
        log("  %s: %d files byte-exact (%d bytes), %d failing alike" % (name, n_ok, n_bytes,
                                                                         n_err))
        return n_ok

    def test_01_references(self):
        for rel in rf.v2_arrays(os.path.join(SRV, "v2.zarr")):
            z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel))
            self.assertBytesEqual(zfmount.read_all(self.local["v2.zarr"].path(rel)),
                                  zfmount.expected_bytes(z), "local " + rel)

    def test_02_v2(self):
        self.assertGreaterEqual(self.compare("v2.zarr"), 14)
        self.assertGreaterEqual(self.compare("v2nc.zarr"), 14)

    def test_03_v3_and_sharded(self):
        self.assertGreaterEqual(self.compare("v3.zarr"), 30)
        self.assertEqual(self.compare("sharded.zarr"), len(WANT))
        for name, want in WANT.items():
            self.assertBytesEqual(zfmount.read_all(self.remote["sharded.zarr"].path(name)),
                                  np.ascontiguousarray(want).tobytes(), name)

    def test_04_requests(self):
        recs = PROXY.since(self.mark)
        self.assertTrue(all(r.auth is None for r in recs), "anonymous mounts sent credentials")
        media = [r for r in recs if r.query.get("alt") == "media"]
        lists = [r for r in recs if r.path.endswith("/o")]
        self.assertTrue(media and lists)
        self.assertTrue(all(r.path.startswith("/storage/v1/b/%s/o" % BUCKET) for r in recs))
        log("  %d requests (%d alt=media, %d objects.list), all anonymous"
            % (len(recs), len(media), len(lists)))


class Reads(zfmount.TestCase):

    def test_01_https_url_straight_on_the_emulator(self):
        """https://storage.googleapis.com/BUCKET/v2nc.zarr with -o endpoint=EMULATOR: no proxy;
        the emulator repeats the prefixes on every listing page (page of 1000 items in
        wide.zarr/padded: the 5 children come again on page 2..11)."""
        m = mount_gcs("v2nc.zarr", endpoint=EMU.endpoint(), label="gcs-https",
                      url="https://storage.googleapis.com/%s/v2nc.zarr" % BUCKET)
        try:
            check_v2(self, m)
        finally:
            self.assertEqual(m.stop()[0], 0)
        m = mount_gcs("wide.zarr", endpoint=EMU.endpoint(), label="gcs-wide-emulator")
        try:
            self.assertEqual(sorted(os.listdir(m.path("padded"))), ["zz%d" % i for i in range(5)])
        finally:
            self.assertEqual(m.stop()[0], 0)

    def test_02_direct_io_and_disk_cache(self):
        m = mount_gcs("v2nc.zarr", extra=["direct_io"], label="gcs-direct-io")
        try:
            check_v2(self, m)
        finally:
            self.assertEqual(m.stop()[0], 0)
        cache = os.path.join(WORK, "disk-cache")
        for run in (1, 2):
            mark = PROXY.mark()
            m = mount_gcs("v2nc.zarr", extra=["disk_cache=" + cache], label="gcs-disk-cache")
            try:
                check_v2(self, m)
            finally:
                self.assertEqual(m.stop()[0], 0)
            media = [r for r in PROXY.since(mark) if r.query.get("alt") == "media"]
            log("  disk_cache run %d: %d alt=media requests" % (run, len(media)))
        self.assertTrue(os.listdir(cache), "nothing in the disk cache")


class Wide(zfmount.TestCase):

    def test_01_listings_over_pages(self):
        root = os.path.join(SRV, "wide.zarr")
        for page in (1000, 37):
            PROXY.page_size = page
            mark, pages = PROXY.mark(), PROXY.pages_served
            try:
                with zfmount.Mount(root, label="local-wide") as lm:
                    m = mount_gcs("wide.zarr", label="gcs-wide-%d" % page)
                    try:
                        for g, n in (("many", N_MANY), ("padded", 5)):
                            want = sorted(os.listdir(lm.path(g)))
                            self.assertEqual(len(want), n)
                            got = sorted(os.listdir(m.path(g)))
                            self.assertEqual(got, want, "pages of %d: %s: missing %r" % (
                                page, g, sorted(set(want) - set(got))[:5]))
                        for i in (0, 999, N_MANY - 1):
                            self.assertBytesEqual(zfmount.read_all(m.path("many/a%04d" % i)),
                                                  np.full(3, i, "<i2").tobytes(), "a%04d" % i)
                        for i in range(5):
                            self.assertBytesEqual(
                                zfmount.read_all(m.path("padded/zz%d" % i)),
                                (np.arange(4, dtype="<u4") + 100 * i).tobytes(), "zz%d" % i)
                    finally:
                        self.assertEqual(m.stop()[0], 0)
            finally:
                PROXY.page_size = 1000
            lists = [r for r in PROXY.since(mark) if r.path.endswith("/o")]
            tokens = [r for r in lists if "pageToken" in r.query]
            log("  pages of %d: %d objects.list requests, %d with a pageToken"
                % (page, len(lists), len(tokens)))
            self.assertGreaterEqual(PROXY.pages_served - pages, (N_PAD + 5) // page)
            self.assertTrue(tokens)


class Credentials(zfmount.TestCase):

    def read_some(self, m):
        self.assertIn("zlib_f4", os.listdir(m.mnt))
        self.assertBytesEqual(zfmount.read_all(m.path("zlib_f4")),
                              zfmount.expected_bytes(zfmount.open_zarr_array(
                                  os.path.join(SRV, "v2nc.zarr", "zlib_f4"))), "zlib_f4")

    def test_01_token_from_credentials_file_and_env(self):
        cred = write_credentials("cred-token", "google_oauth_access_token = %s\n" % TOKEN)
        with auth_required(TOKEN):
            for how, env, extra in (("-o credentials", {}, ["credentials=" + cred]),
                                    ("$GOOGLE_OAUTH_ACCESS_TOKEN",
                                     {"GOOGLE_OAUTH_ACCESS_TOKEN": TOKEN}, [])):
                mark = PROXY.mark()
                m = mount_gcs("v2nc.zarr", env, extra=extra, args=["-d"], label="gcs-token")
                try:
                    self.read_some(m)
                finally:
                    self.assertEqual(m.stop()[0], 0)
                recs = PROXY.since(mark)
                self.assertTrue(recs)
                self.assertTrue(all(r.auth == "Bearer " + TOKEN and r.status in (200, 206, 404)
                                    for r in recs), recs[:3])
                self.assertNotIn(TOKEN, m.stderr_text(), "the token in zarrfs's -d output")
                log("  token of %s: %d requests, all with it" % (how, len(recs)))
            # a wrong token: refused at mount, naming where it came from
            status, err, mounted = refusal("v2nc.zarr", {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.no"})
        log("  wrong token: status %s: %s" % (status, err.strip()))
        self.assertEqual((status, mounted), (1, False), err)
        self.assertIn("GOOGLE_OAUTH_ACCESS_TOKEN", err)
        self.assertRegex(err, r"401|Unauthorized|Invalid Credentials")
        self.assertNotIn("ya29.no", err)

    def test_02_service_account_key_and_refresh(self):
        key = write_key(os.path.join(WORK, "sa-key.json"))
        with auth_required():
            before, scopes = PROXY.token_requests, len(PROXY.scopes)
            m = mount_gcs("v2nc.zarr", {"GOOGLE_APPLICATION_CREDENTIALS": key}, args=["-d"],
                          label="gcs-sa")
            try:
                self.read_some(m)
                time.sleep(PROXY.token_ttl + 1)     # the token has expired: refreshed first
                self.assertEqual(sorted(os.listdir(m.path("grp"))), ["sub"])
                self.assertBytesEqual(zfmount.read_all(m.path("bz2_u1")), zfmount.expected_bytes(
                    zfmount.open_zarr_array(os.path.join(SRV, "v2nc.zarr", "bz2_u1"))), "bz2_u1")
                with PROXY.lock:        # the server revokes every token: a 401, then a new one
                    PROXY.tokens.clear()
                self.assertBytesEqual(zfmount.read_all(m.path("lz4_f8")), zfmount.expected_bytes(
                    zfmount.open_zarr_array(os.path.join(SRV, "v2nc.zarr", "lz4_f8"))), "lz4_f8")
            finally:
                self.assertEqual(m.stop()[0], 0)
            n = PROXY.token_requests - before
            self.assertGreaterEqual(n, 3, "the token was not refreshed (on expiry, on a 401)")
            self.assertEqual(PROXY.scopes[scopes:],
                             ["https://www.googleapis.com/auth/devstorage.read_only"] * n)
            err = m.stderr_text()
            with open(os.path.join(WORK, "sa.pem")) as f:
                pem_line = f.read().splitlines()[5]
            self.assertNotIn(pem_line, err)
            self.assertNotIn("ya29.zarrfs-test-", err, "a token in zarrfs's -d output")
            log("  service account from $GOOGLE_APPLICATION_CREDENTIALS: %d token requests" % n)
            # the key named in the credentials file, with -o rw: the read_write scope
            cred = write_credentials("cred-sa", "google_application_credentials = %s\n" % key)
            scopes = len(PROXY.scopes)
            m = mount_gcs("v2nc.zarr", extra=["credentials=" + cred, "rw"], label="gcs-sa-rw")
            try:
                self.read_some(m)
            finally:
                self.assertEqual(m.stop()[0], 0)
            self.assertEqual(PROXY.scopes[scopes:][:1],
                             ["https://www.googleapis.com/auth/devstorage.read_write"])
            # a key the token endpoint refuses (another account's name): refused at mount
            other = write_key(os.path.join(WORK, "sa-other.json"),
                              client_email="someone-else@example.iam.gserviceaccount.com")
            status, err, mounted = refusal("v2nc.zarr", {"GOOGLE_APPLICATION_CREDENTIALS": other})
            log("  refused key: status %s: %s" % (status, err.strip()))
            self.assertEqual((status, mounted), (1, False), err)
            self.assertIn("someone-else@example.iam.gserviceaccount.com", err)
            # a key file others can read: refused before it is read
            loose = write_key(os.path.join(WORK, "sa-loose.json"), mode=0o644)
            status, err, mounted = refusal("v2nc.zarr", {"GOOGLE_APPLICATION_CREDENTIALS": loose})
            log("  key readable by others: status %s: %s" % (status, err.strip()))
            self.assertEqual((status, mounted), (1, False), err)
            self.assertIn("sa-loose.json", err)

    def test_03_token_endpoint_down_while_the_token_holds(self):
        """Tokens of 8 s are fetched again after 4 s; the token endpoint failing then (503 to
        every attempt) leaves the mount on its current token until it expires."""
        key = write_key(os.path.join(WORK, "sa-key.json"))
        PROXY.token_ttl = 8
        try:
            with auth_required():
                m = mount_gcs("v2nc.zarr", {"GOOGLE_APPLICATION_CREDENTIALS": key},
                              label="gcs-sa-endpoint-down")
                try:
                    self.read_some(m)
                    t0 = time.monotonic()
                    time.sleep(4.5)
                    PROXY.token_faults = 100
                    self.assertBytesEqual(
                        zfmount.read_all(m.path("lz4_f8")), zfmount.expected_bytes(
                            zfmount.open_zarr_array(os.path.join(SRV, "v2nc.zarr", "lz4_f8"))),
                        "lz4_f8")
                    took = time.monotonic() - t0
                    self.assertLess(PROXY.token_faults, 100, "no token request was made")
                finally:
                    PROXY.token_faults = 0
                    self.assertEqual(m.stop()[0], 0)
            self.assertIn("keeping the current token", m.stderr_text())
            log("  token endpoint down at refresh: read on the current token (%.1f s after it "
                "was issued)" % took)
        finally:
            PROXY.token_ttl = 6

    def test_04_hmac_keys_through_the_xml_api(self):
        """aws_access_key_id/aws_secret_access_key in -o credentials: the XML API, SigV4-signed
        with region "auto" (here SigV4Proxy over s3rver, which checks every signature)."""
        access, secret = "GOOGZARRFSTESTHMAC0001", "zarrfs/Hmac+Secret=0123456789abcdefGHIJ"
        s3 = rs.S3rver([BUCKET]).start()
        proxy = rs.SigV4Proxy(s3.port, {access: secret}, region="auto").start()
        try:
            s3.client().upload_tree(os.path.join(SRV, "v2nc.zarr"), BUCKET, "v2nc.zarr")
            cred = write_credentials("cred-hmac", "aws_access_key_id = %s\n"
                                     "aws_secret_access_key = %s\n" % (access, secret))
            m = mount_gcs("v2nc.zarr", endpoint=proxy.endpoint(),
                          extra=["credentials=" + cred], label="gcs-hmac")
            try:
                check_v2(self, m, preads=2)
            finally:
                self.assertEqual(m.stop()[0], 0)
            with proxy.lock:
                recs = list(proxy.records)
            self.assertTrue(recs and all(r.verdict == "ok" and r.access_key == access
                                         for r in recs), recs[:3])
            log("  HMAC: %d SigV4 requests (region auto), all accepted" % len(recs))
            # the XML API's preconditions on writes are not S3's: -o rw refused
            with gcs_env():
                status, err, mounted = zfmount.expect_refusal(gsurl("v2nc.zarr"), [
                    "-o", ",".join(opts(proxy.endpoint(), ["credentials=" + cred, "rw"]))],
                    timeout=60)
            log("  HMAC with -o rw: status %s: %s" % (status, err.strip()))
            self.assertEqual((status, mounted), (1, False), err)
            self.assertIn("without -o rw", err)
        finally:
            proxy.stop()
            s3.stop()

    def test_05_missing_bucket_and_403(self):
        status, err, mounted = refusal("x", url="gs://no-such-bucket/v2nc.zarr")
        log("  missing bucket: status %s: %s" % (status, err.strip()))
        self.assertEqual((status, mounted), (1, False), err)
        self.assertIn('bucket "no-such-bucket" does not exist', err)
        # 403 on the root's metadata: refused, naming the credential
        PROXY.forbidden = {"v2nc.zarr/.zgroup", "v2nc.zarr/.zarray", "v2nc.zarr/zarr.json",
                           "v2nc.zarr/.zmetadata", "v2nc.zarr/.zattrs"}
        try:
            status, err, mounted = refusal("v2nc.zarr", {"GOOGLE_OAUTH_ACCESS_TOKEN": TOKEN})
        finally:
            PROXY.forbidden = set()
        log("  403 at mount: status %s: %s" % (status, err.strip()))
        self.assertEqual((status, mounted), (1, False), err)
        self.assertIn("403", err)
        self.assertIn("OAuth access token of $GOOGLE_OAUTH_ACCESS_TOKEN", err)
        # a later 403: EACCES
        m = mount_gcs("v2nc.zarr", label="gcs-403")
        try:
            PROXY.forbidden = {"v2nc.zarr/lz4_f8/0.0", "v2nc.zarr/lz4_f8/0"}
            self.assertErrno(errno.EACCES, zfmount.read_all, m.path("lz4_f8"))
        finally:
            PROXY.forbidden = set()
            self.assertEqual(m.stop()[0], 0)


class Faults(zfmount.TestCase):

    def test_01_retries_and_a_cut_listing(self):
        m = mount_gcs("v2nc.zarr", label="gcs-faults")
        try:
            PROXY.faults = [["zlib_f4/0.0", 503, 1, 2], ["zlib_f4/1.1", 429, 1, 1]]
            t0 = time.monotonic()
            self.assertBytesEqual(zfmount.read_all(m.path("zlib_f4")), zfmount.expected_bytes(
                zfmount.open_zarr_array(os.path.join(SRV, "v2nc.zarr", "zlib_f4"))), "zlib_f4")
            took = time.monotonic() - t0
            self.assertEqual([f[3] for f in PROXY.faults], [0, 0], "faults not all hit")
            self.assertGreaterEqual(took, 2.0, "Retry-After: 1 not honoured?")
            log("  503 x2 and 429 with Retry-After: 1: read right in %.1f s" % took)
            PROXY.cut_listing = "v2nc.zarr/group with spaces/"
            self.assertErrno(errno.EIO, os.listdir, m.path("group with spaces"))
        finally:
            PROXY.faults = []
            PROXY.cut_listing = None
            self.assertEqual(m.stop()[0], 0)


class Writes(zfmount.TestCase):

    def download(self, name, dest):
        for key in CLIENT.list_all(BUCKET, name + "/"):
            st, body = CLIENT.get(BUCKET, key)
            self.assertEqual(st, 200, key)
            out = os.path.join(dest, key[len(name) + 1:])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(body)

    def test_01_write_and_read_back(self):
        import zarr
        import numcodecs
        src = os.path.join(WORK, "w-src.zarr")
        z = zarr.open_array(src, mode="w", shape=(30, 20), chunks=(8, 8), dtype="<f4",
                            fill_value=0, compressor=numcodecs.Zlib(1))
        z[:] = np.arange(600, dtype="<f4").reshape(30, 20)
        CLIENT.upload_tree(src, BUCKET, "w.zarr")
        mark = PROXY.mark()
        m = mount_gcs("w.zarr", extra=["rw"], label="gcs-rw")
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
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        recs = [r for r in PROXY.since(mark) if r.method in ("POST", "DELETE")]
        self.assertTrue(recs and all(r.status in (200, 204) for r in recs), recs)
        # every chunk was written in part: each upload conditional on the generation read (a
        # chunk written whole, here 1.1, is erased unconditionally, as on S3)
        self.assertTrue(all("ifGenerationMatch" in r.query for r in recs if r.method == "POST"),
                        recs)
        ups = sorted(r.query["name"].rsplit("/", 1)[1] for r in recs if r.method == "POST")
        dels = [r for r in recs if r.method == "DELETE"]
        self.assertEqual(ups, ["0.0", "0.1", "0.2", "1.0", "1.2", "2.0", "2.1", "2.2"])
        self.assertEqual(len(dels), 1)
        out = os.path.join(WORK, "w-back.zarr")
        self.download("w.zarr", out)
        self.assertFalse(os.path.exists(os.path.join(out, "1.1")))
        got = zarr.open_array(out, "r")[:]
        self.assertTrue(np.array_equal(got, model), got)
        log("  %d conditional uploads and 1 delete; zarr-python reads the writes" % len(ups))

    def test_02_another_writer_merged(self):
        name = "other-plain.zarr"
        src = os.path.join(WORK, name + "-src")
        shutil.rmtree(src, ignore_errors=True)
        other_writer.build_plain(src)
        CLIENT.upload_tree(src, BUCKET, name)

        @contextlib.contextmanager
        def mount():
            m = mount_gcs(name, extra=["rw"], label="gcs-" + name)
            try:
                yield m
            finally:
                self.assertEqual(m.stop(), (0, "fusermount3 -u"))

        before = PROXY.preconditions_failed
        other_writer.plain_case(self, WORK, mount,
                                lambda key, data: CLIENT.put(BUCKET, name + "/" + key, data),
                                lambda dest: self.download(name, dest))
        self.assertGreaterEqual(PROXY.preconditions_failed - before, 2)
        log("  %d uploads refused (412) and merged" % (PROXY.preconditions_failed - before))


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
