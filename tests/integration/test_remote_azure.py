#!/usr/bin/python3
"""Azure Blob Storage stores: zarrfs mounting az://CONTAINER/PREFIX from Azurite 3.37 (npm azurite,
pinned in js/package-lock.json; Microsoft's emulator, which checks Shared Key signatures and SAS
tokens itself) on 127.0.0.1, with -o endpoint=http://127.0.0.1:PORT/devstoreaccount1.

The hierarchies of remote_fixtures.build (zarr-python 2.13 v2 data, the zarrita v3 fixture, sharded
v3 arrays) are uploaded with remote_servers.AzureClient, whose Shared Key signing and SAS tokens
(account SAS and container SAS) are the test's own Python implementation (hmac, hashlib) from the
emulator's published key. Most mounts reach Azurite through AzureProxy below, which forwards
requests unchanged (Azurite verifies their signatures), records them, and injects faults: 503
with x-ms-retry-after-ms, a 403 on one key, a listing page cut short.

* Mounted (Shared Key): v2 arrays byte for byte against zarr-python 2.13's values (numpy), every
  tree against a LOCAL zarrfs mount of the same directory, sharded v3 against the numpy arrays
  they were built from; every request carried x-ms-version, x-ms-date and a SharedKey signature.
* Credentials: anonymous reads of a public container; account SAS from a credentials file,
  container SAS from $AZURE_STORAGE_SAS_TOKEN, a SAS in the URL (hidden in /proc/mounts, the
  command line and the logs), Shared Key from the credentials file, a bearer token sent as
  "Authorization: Bearer" (Azurite refuses OAuth over HTTP); refusals naming the
  credential (wrong key, a SAS for another container, anonymous on a private container, a
  missing container); a 403 on one key later is EACCES; an expired SAS in the credentials file
  is EACCES until the file holds a fresh one, then reads work again without a remount.
* Listing: 10^4 blobs before a group's children, over Azurite's 5,000-name pages and over pages
  of 700 (maxresults, $ZARRFS_TEST_AZURE_MAXRESULTS); a page cut short is an error (EIO), not a
  short listing.
* Faults: 503 with x-ms-retry-after-ms on requests: retried after the delay asked for; a
  redirect to another origin is not followed (the SAS stays home).
* Writes (-o rw): chunks written through the mount read back by zarr-python from Azurite; another
  writer's chunks changed between zarrfs's read and write are merged, not lost (other_writer.py).
* -o direct_io and -o disk_cache=DIR on an az:// mount; a zip archive named with a SAS.
"""

import contextlib
import errno
import http.client
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
import remote_fixtures as rf  # noqa: E402
import gen_v3_common as c3  # noqa: E402
import other_writer  # noqa: E402

import numpy as np  # noqa: E402

CONTAINER = "zarrfs"
PUBLIC = "public"
OTHER = "other"
N_PAD = 10000          # blobs before the children of wide.zarr/padded
N_MANY = 300           # child groups of wide.zarr/many

WORK = None
SRV = None
WANT = None
AZ = None
PROXY = None
REMOTE_OPTS = ["retries=3", "timeout=20"]
AZ_VARS = ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
           "ZARRFS_TEST_AZURE_MAXRESULTS")


# ---------------------------------------------------------------------------------------------
# a recording, fault-injecting proxy in front of Azurite

class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class AzureProxy:
    """Forwards every request to Azurite unchanged (path, query, headers, body), records
    (method, path, query, status, headers), and applies `rules`: dicts with `match` (a function
    of method, path, query), `count` (how many requests, None: all), and `status` (answered
    instead, with `headers`) or `cut` (the upstream body cut to that many bytes, sent with a
    matching Content-Length)."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.lock = threading.Lock()
        self.records = []
        self.rules = []
        self.conflicts = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                proxy.handle(self)

            do_GET = do_HEAD = do_PUT = do_DELETE = _any

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self._local = threading.local()

    def start(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def endpoint(self):
        return "http://127.0.0.1:%d/%s" % (self.port, rs.AZ_ACCOUNT)

    def mark(self):
        with self.lock:
            return len(self.records)

    def since(self, mark):
        with self.lock:
            return list(self.records[mark:])

    @contextlib.contextmanager
    def rule(self, **r):
        with self.lock:
            self.rules.append(r)
        try:
            yield r
        finally:
            with self.lock:
                self.rules.remove(r)

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.upstream,
                                                              timeout=60)
        return c

    def handle(self, h):
        u = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        act = None
        with self.lock:
            for r in self.rules:
                if r["match"](h.command, u.path, query) and r.get("count", None) != 0:
                    if r.get("count") is not None:
                        r["count"] -= 1
                    r["hits"] = r.get("hits", 0) + 1
                    act = r
                    break
        rec = {"method": h.command, "path": u.path, "query": query, "t": time.monotonic(),
               "headers": {k.lower(): v for k, v in h.headers.items()}}
        if act and "status" in act:
            code = act.get("code", "ServerBusy" if act["status"] == 503 else "AuthorizationFailure")
            data = (b"" if h.command == "HEAD" else
                    ("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code><Message>"
                     "injected by the test</Message></Error>" % code).encode())
            h.send_response(act["status"])
            for k, v in act.get("headers", {}).items():
                h.send_header(k, v)
            h.send_header("x-ms-error-code", code)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            rec["status"] = act["status"]
            with self.lock:
                self.records.append(rec)
            return
        headers = {k: v for k, v in h.headers.items()
                   if k.lower() not in ("host", "connection", "content-length")}
        if h.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        for attempt in range(2):
            c = self._conn()
            try:
                c.request(h.command, h.path, body=body if h.command in ("PUT", "POST") else None,
                          headers=headers)
                resp = c.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        if act and "cut" in act:
            data = data[:act["cut"]]
        rec["status"] = resp.status
        cond = "if-match" in rec["headers"] or "if-none-match" in rec["headers"]
        with self.lock:
            self.records.append(rec)
            if cond and resp.status in (409, 412):
                self.conflicts += 1
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() in ("transfer-encoding", "connection", "content-length", "date",
                             "server"):
                continue
            h.send_header(k, v)
        if h.command == "HEAD":
            h.send_header("Content-Length", resp.getheader("Content-Length") or "0")
        else:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)


# ---------------------------------------------------------------------------------------------

def build_wide(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    files = {".zgroup": {"zarr_format": 2}, "many/.zgroup": {"zarr_format": 2},
             "padded/.zgroup": {"zarr_format": 2}}
    for i in range(N_MANY):
        files["many/g%04d/.zgroup" % i] = {"zarr_format": 2}
    for i in range(5):
        files["padded/zz%d/.zarray" % i] = {
            "zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<u4", "fill_value": 0,
            "order": "C", "compressor": None, "filters": None}
        files["padded/zz%d/0" % i] = (np.arange(4, dtype="<u4") + 100 * i).tobytes()
    c3.write_files(root, files)
    return root


def setUpModule():
    global WORK, SRV, WANT, AZ, PROXY
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-azure-")
    SRV = os.path.join(WORK, "srv")
    WANT = rf.build(SRV)["sharded"]
    build_wide(os.path.join(SRV, "wide.zarr"))
    AZ = rs.Azurite().start()
    PROXY = AzureProxy(AZ.port).start()
    c = AZ.client()
    c.create_container(CONTAINER)
    c.create_container(PUBLIC, public=True)
    c.create_container(OTHER)
    t0 = time.monotonic()
    n = 0
    for name in sorted(os.listdir(SRV)):
        n += c.upload_tree(os.path.join(SRV, name), CONTAINER, name, threads=8)
    n += c.upload_tree(os.path.join(SRV, "v2.zarr"), PUBLIC, "v2.zarr", threads=8)
    c.put_many(CONTAINER, [("wide.zarr/padded/junk%05d" % i, b"x") for i in range(N_PAD)],
               threads=8)
    n += N_PAD
    log("Azurite at %s (proxy %s): %d blobs uploaded in %.1f s"
        % (AZ.endpoint(), PROXY.endpoint(), n, time.monotonic() - t0))


def tearDownModule():
    if PROXY:
        PROXY.stop()
    if AZ:
        AZ.stop()
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


@contextlib.contextmanager
def az_env(**kw):
    """os.environ (inherited by the zarrfs started inside) with no AZURE_* variable but kw."""
    saved = {k: os.environ.get(k) for k in AZ_VARS}
    try:
        for k in AZ_VARS:
            os.environ.pop(k, None)
        os.environ.update(kw)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


KEY_ENV = {"AZURE_STORAGE_ACCOUNT_KEY": rs.AZ_KEY}


def opts(endpoint=None, extra=(), account=True):
    o = REMOTE_OPTS + ["endpoint=" + (endpoint or PROXY.endpoint())]
    if account:
        o.append("account=" + rs.AZ_ACCOUNT)
    return o + list(extra)


def azurl(name, container=CONTAINER):
    return "az://%s/%s" % (container, name)


def mount_az(name, env, container=CONTAINER, extra=(), endpoint=None, label=None, args=()):
    with az_env(**env):
        return zfmount.Mount(azurl(name, container), options=opts(endpoint, extra),
                             args=list(args), label=label or "az-" + name).start()


def refusal(url, env, extra=()):
    with az_env(**env):
        return zfmount.expect_refusal(url, ["-o", ",".join(opts(extra=extra))], timeout=30)


def credentials_file(lines):
    fd, path = tempfile.mkstemp(prefix="az-cred-", dir=WORK)
    with os.fdopen(fd, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    os.chmod(path, 0o600)
    return path


def replace_file(path, lines):
    """Atomically, as a credentials helper would (a new inode and mtime)."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)


class Mounted(zfmount.MountsTestCase):
    stores = ("v2.zarr", "v2nc.zarr", "v3.zarr", "sharded.zarr")

    @classmethod
    def mount_all(cls):
        cls.local, cls.remote = {}, {}
        cls.mark = PROXY.mark()
        for name in cls.stores:
            cls.local[name] = cls.add_mount(os.path.join(SRV, name), label="local-" + name)
            with az_env(**KEY_ENV):
                rm = cls.add_mount(azurl(name), options=opts(), label="az-" + name)
            cls.remote[name] = rm
            log("mounted %s on %s (pid %d)" % (rm.store, rm.mnt, rm.pid))

    def compare(self, name, **kw):
        n_ok, n_bytes, n_err = rf.compare_trees(self, self.local[name].mnt, self.remote[name].mnt,
                                                what="az " + name, **kw)
        log("  %s: %d files byte-exact (%d bytes), %d failing alike" % (name, n_ok, n_bytes, n_err))
        return n_ok

    def test_01_v2_against_zarr_python(self):
        arrays = rf.v2_arrays(os.path.join(SRV, "v2.zarr"))
        self.assertGreaterEqual(len(arrays), 10)
        for store in ("v2.zarr", "v2nc.zarr"):
            for rel in arrays:
                with self.subTest(store=store, array=rel):
                    z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", rel))
                    self.assertBytesEqual(zfmount.read_all(self.remote[store].path(rel)),
                                          zfmount.expected_bytes(z), store + " " + rel)

    def test_02_trees(self):
        self.assertGreaterEqual(self.compare("v2.zarr"), 14)
        self.assertGreaterEqual(self.compare("v2nc.zarr"), 14)
        self.assertGreaterEqual(self.compare("v3.zarr"), 30)

    def test_03_sharded(self):
        self.assertEqual(self.compare("sharded.zarr"), len(WANT))
        for name, want in WANT.items():
            self.assertBytesEqual(zfmount.read_all(self.remote["sharded.zarr"].path(name)),
                                  np.ascontiguousarray(want).tobytes(), name)

    def test_04_every_request_signed_and_accepted(self):
        recs = PROXY.since(self.mark)
        self.assertGreater(len(recs), 20)
        for r in recs:
            h = r["headers"]
            self.assertTrue(h.get("authorization", "").startswith(
                "SharedKey %s:" % rs.AZ_ACCOUNT), r)
            self.assertIn("x-ms-date", h)
            self.assertIn("x-ms-version", h)
            self.assertIn(r["status"], (200, 206, 404), r)
        ranged = [r for r in recs if "range" in r["headers"] and r["status"] == 206]
        lists = [r for r in recs if r["query"].get("comp") == "list"]
        self.assertTrue(ranged, "no ranged Get Blob")
        self.assertTrue(lists, "no List Blobs")
        log("  %d requests, all signed and accepted (%d ranged, %d listings)"
            % (len(recs), len(ranged), len(lists)))


class Credentials(zfmount.TestCase):

    def read_one(self, m, rel="v2.zarr/zlib_f4", root="v2.zarr"):
        z = zfmount.open_zarr_array(os.path.join(SRV, root, rel[len(root) + 1:]))
        self.assertBytesEqual(zfmount.read_all(m.path(rel[len(root) + 1:])),
                              zfmount.expected_bytes(z), rel)

    def test_01_anonymous_public_container(self):
        mark = PROXY.mark()
        with az_env():
            m = zfmount.Mount(azurl("v2.zarr", PUBLIC), options=opts(account=False),
                              label="az-public").start()
        try:
            self.assertIn("zlib_f4", os.listdir(m.mnt))
            self.read_one(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        recs = PROXY.since(mark)
        self.assertTrue(recs and all("authorization" not in r["headers"] for r in recs))
        # the same without credentials on a private container: refused, saying so
        st, err, mounted = refusal(azurl("v2.zarr"), {})
        self.assertFalse(mounted)
        self.assertNotEqual(st, 0)
        self.assertIn("no credentials", err)
        self.assertIn("access denied", err)

    def test_02_sas_from_credentials_file_and_environment(self):
        acct = rs.account_sas(time.time() + 3600)
        path = credentials_file(["azure_storage_sas_token = ?" + acct])
        m = mount_az("v2.zarr", {}, extra=["credentials=" + path], label="az-sas-file")
        try:
            self.read_one(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        csas = rs.container_sas(CONTAINER, time.time() + 3600, permissions="rl")
        mark = PROXY.mark()
        m = mount_az("v2.zarr", {"AZURE_STORAGE_SAS_TOKEN": csas}, label="az-sas-env")
        try:
            self.read_one(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        recs = PROXY.since(mark)
        self.assertTrue(recs and all(r["query"].get("sig") and r["query"].get("sr") == "c"
                                     for r in recs))
        # a container SAS of another container: refused, naming the credential
        wrong = rs.container_sas(OTHER, time.time() + 3600, permissions="rl")
        st, err, mounted = refusal(azurl("v2.zarr"), {"AZURE_STORAGE_SAS_TOKEN": wrong})
        self.assertFalse(mounted)
        self.assertNotEqual(st, 0)
        self.assertIn("access denied", err)
        self.assertIn("$AZURE_STORAGE_SAS_TOKEN", err)
        self.assertNotIn(urllib.parse.parse_qs(wrong)["sig"][0], err)

    def test_03_sas_in_url_hidden(self):
        sas = rs.account_sas(time.time() + 3600, permissions="rl")
        sig_enc = urllib.parse.quote(urllib.parse.parse_qs(sas)["sig"][0], safe="")
        self.assertIn(sig_enc, sas)
        m = mount_az("v2.zarr?" + sas, {}, args=["-d"], label="az-sas-url")
        try:
            self.read_one(m)
            mounts = [e for e in zfmount.mount_entries() if e[0] == m.mnt]
            self.assertEqual(len(mounts), 1)
            fsname = mounts[0][2] if len(mounts[0]) > 2 else ""
            with open("/proc/mounts") as f:
                proc_mounts = f.read()
            with open("/proc/%d/cmdline" % m.pid, "rb") as f:
                cmdline = f.read().decode(errors="replace")
            self.assertIn("sig=***", proc_mounts)
            self.assertNotIn(sig_enc, proc_mounts)
            self.assertNotIn(sig_enc, cmdline)
            self.assertIn("az://%s/v2.zarr?" % CONTAINER, cmdline)
            del fsname
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        log_text = m.stderr_text()
        self.assertGreater(len(log_text), 0)
        self.assertNotIn(sig_enc, log_text)
        self.assertNotIn(urllib.parse.parse_qs(sas)["sig"][0], log_text)

    def test_04_shared_key_file_and_refusals(self):
        path = credentials_file(["azure_storage_account_name = " + rs.AZ_ACCOUNT,
                                 "azure_storage_account_key = " + rs.AZ_KEY])
        with az_env():
            m = zfmount.Mount(azurl("v2.zarr"), options=opts(extra=["credentials=" + path],
                                                             account=False),
                              label="az-key-file").start()
        try:
            self.read_one(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        wrong = rs.AZ_KEY[:-4] + "AAA="
        st, err, mounted = refusal(azurl("v2.zarr"), {"AZURE_STORAGE_ACCOUNT_KEY": wrong})
        self.assertFalse(mounted)
        self.assertNotEqual(st, 0)
        self.assertIn("access denied", err)
        self.assertIn("Shared Key of $AZURE_STORAGE_ACCOUNT_KEY", err)
        self.assertNotIn(wrong, err)
        st, err, mounted = refusal(azurl("v2.zarr", "nosuchcontainer"), KEY_ENV)
        self.assertFalse(mounted)
        self.assertIn('container "nosuchcontainer" does not exist', err)
        st, err, mounted = refusal("az://Bad_Name/x", KEY_ENV)
        self.assertFalse(mounted)
        self.assertIn("not a container name", err)

    def test_05_403_later_is_eacces(self):
        m = mount_az("v2.zarr", KEY_ENV, label="az-403")
        try:
            target = "/%s/%s/v2.zarr/lz4_f8/" % (rs.AZ_ACCOUNT, CONTAINER)
            with PROXY.rule(match=lambda meth, p, q: p.startswith(target), status=403,
                            code="AuthorizationPermissionMismatch") as r:
                self.assertErrno(errno.EACCES, zfmount.read_all, m.path("lz4_f8"))
                self.assertGreater(r.get("hits", 0), 0)
            self.read_one(m)
            self.read_one(m, "v2.zarr/lz4_f8")          # once the 403s stop: readable
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        self.assertIn("AuthorizationPermissionMismatch", m.stderr_text())

    def test_06_expired_sas_replaced_while_mounted(self):
        """A SAS from the credentials file that expires while mounted: EACCES (Azurite refuses
        it, and zarrfs once it knows), one log line, then a fresh token written into the file
        is used without a remount."""
        start = time.time() - 60
        path = credentials_file(["azure_storage_sas_token = " +
                                 rs.account_sas(time.time() + 6, permissions="rl", start=start)])
        m = mount_az("v2.zarr", {}, extra=["credentials=" + path, "metadata_ttl=0"],
                     label="az-expiry")
        try:
            self.read_one(m)
            time.sleep(7.5)
            self.assertErrno(errno.EACCES, zfmount.read_all, m.path("lz4_f8"))
            self.assertErrno(errno.EACCES, zfmount.read_all, m.path("bz2_u1"))
            replace_file(path, ["azure_storage_sas_token = " +
                                rs.account_sas(time.time() + 3600, permissions="rl")])
            self.read_one(m, "v2.zarr/lz4_f8")
            self.read_one(m, "v2.zarr/bz2_u1")
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        text = m.stderr_text()
        self.assertEqual(text.count("waiting for a fresh one in the file"), 1, text)


    def test_07_bearer_token(self):
        """The credentials file's bearer_token is sent as "Authorization: Bearer" with
        x-ms-version (Azurite takes OAuth tokens only over HTTPS: it refuses this one, and the
        refusal names the credential, never the token)."""
        token = "zarrfs-test-oauth-token-0123456789"
        path = credentials_file(["bearer_token = " + token])
        mark = PROXY.mark()
        st, err, mounted = refusal(azurl("v2.zarr"), {}, extra=["credentials=" + path])
        self.assertFalse(mounted)
        self.assertNotEqual(st, 0)
        self.assertIn("the bearer token of -o credentials", err)
        self.assertNotIn(token, err)
        time.sleep(0.3)
        recs = PROXY.since(mark)
        self.assertTrue(recs)
        for r in recs:
            self.assertEqual(r["headers"].get("authorization"), "Bearer " + token)
            self.assertIn("x-ms-version", r["headers"])


class Listing(zfmount.TestCase):

    def check_padded(self, m):
        self.assertEqual(sorted(os.listdir(m.path("padded"))), ["zz%d" % i for i in range(5)])
        for i in range(5):
            self.assertEqual(np.frombuffer(zfmount.read_all(m.path("padded", "zz%d" % i)), "<u4")
                             .tolist(), [100 * i + k for k in range(4)])
        self.assertEqual(sorted(os.listdir(m.path("many"))), ["g%04d" % i for i in range(N_MANY)])

    def test_01_default_pages(self):
        mark = PROXY.mark()
        m = mount_az("wide.zarr", KEY_ENV, label="az-wide")
        try:
            self.check_padded(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        lists = [r for r in PROXY.since(mark) if r["query"].get("comp") == "list" and
                 r["query"].get("prefix") == "wide.zarr/padded/"]
        self.assertGreaterEqual(len(lists), 3, "10^4 blobs take 3 pages of 5000")
        self.assertTrue(all("maxresults" not in r["query"] for r in lists))
        self.assertTrue(any(r["query"].get("marker") for r in lists))

    def test_02_small_pages(self):
        mark = PROXY.mark()
        m = mount_az("wide.zarr", dict(KEY_ENV, ZARRFS_TEST_AZURE_MAXRESULTS="700"),
                     label="az-wide-700")
        try:
            self.check_padded(m)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        lists = [r for r in PROXY.since(mark) if r["query"].get("comp") == "list"]
        padded = [r for r in lists if r["query"].get("prefix") == "wide.zarr/padded/"]
        self.assertGreaterEqual(len(padded), (N_PAD + 10) // 700)
        self.assertTrue(all(r["query"].get("maxresults") == "700" for r in lists))
        self.assertEqual(len({r["query"].get("marker") for r in padded}), len(padded))
        log("  %d pages for wide.zarr/padded" % len(padded))

    def test_03_page_cut_short(self):
        m = mount_az("wide.zarr", KEY_ENV, label="az-cut")
        try:
            with PROXY.rule(match=lambda meth, p, q: q.get("comp") == "list" and
                            q.get("prefix") == "wide.zarr/many/", cut=3000) as r:
                self.assertErrno(errno.EIO, os.listdir, m.path("many"))
                self.assertGreater(r.get("hits", 0), 0)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        self.assertIn("many", m.stderr_text())


class Faults(zfmount.TestCase):

    def test_01_503_with_retry_after(self):
        m = mount_az("v2.zarr", KEY_ENV, label="az-503")
        try:
            mark = PROXY.mark()
            target = "/%s/%s/v2.zarr/zstd_u2_F/" % (rs.AZ_ACCOUNT, CONTAINER)
            with PROXY.rule(match=lambda meth, p, q: p.startswith(target), count=2, status=503,
                            headers={"x-ms-retry-after-ms": "700"}):
                z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", "zstd_u2_F"))
                self.assertBytesEqual(zfmount.read_all(m.path("zstd_u2_F")),
                                      zfmount.expected_bytes(z), "zstd_u2_F")
            recs = [r for r in PROXY.since(mark) if r["path"].startswith(target)]
            busy = [r for r in recs if r["status"] == 503]
            self.assertEqual(len(busy), 2)
            # each retry of a refused request came no sooner than the 700 ms asked for
            for b in busy:
                again = [r["t"] for r in recs if r["path"] == b["path"] and r["t"] > b["t"]]
                self.assertTrue(again, "%s was not retried" % b["path"])
                self.assertGreaterEqual(min(again) - b["t"], 0.65)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))


    def test_02_redirect_elsewhere(self):
        """A 307 to another origin: not followed (EIO); the other server receives nothing, so
        neither the SAS nor a signature leaves the endpoint."""
        got = []

        class Other(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                got.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_HEAD = do_GET

        other = _Server(("127.0.0.1", 0), Other)
        threading.Thread(target=other.serve_forever, daemon=True).start()
        sas = rs.account_sas(time.time() + 3600, permissions="rl")
        m = mount_az("v2.zarr?" + sas, {}, label="az-redirect")
        try:
            target = "/%s/%s/v2.zarr/bz2_u1/" % (rs.AZ_ACCOUNT, CONTAINER)
            loc = "http://127.0.0.1:%d/elsewhere" % other.server_address[1]
            with PROXY.rule(match=lambda meth, p, q: p.startswith(target), status=307,
                            code="Moved", headers={"Location": loc}) as r:
                self.assertErrno(errno.EIO, zfmount.read_all, m.path("bz2_u1"))
                self.assertGreater(r.get("hits", 0), 0)
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
            other.shutdown()
            other.server_close()
        self.assertEqual(got, [])


class Writes(zfmount.TestCase):

    def test_01_write_and_read_back(self):
        import zarr
        import numcodecs
        src = os.path.join(WORK, "w-src.zarr")
        z = zarr.open_array(src, mode="w", shape=(30, 20), chunks=(8, 8), dtype="<f4",
                            fill_value=0, compressor=numcodecs.Zlib(1))
        z[:] = np.arange(600, dtype="<f4").reshape(30, 20)
        c = AZ.client()
        c.upload_tree(src, CONTAINER, "w.zarr")
        mark = PROXY.mark()
        m = mount_az("w.zarr", KEY_ENV, extra=["rw"], label="az-rw")
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
        recs = [r for r in PROXY.since(mark) if r["method"] in ("PUT", "DELETE")]
        self.assertTrue(recs and all(r["status"] in (201, 202) for r in recs), recs)
        puts = sorted(r["path"].rsplit("/", 1)[1] for r in recs if r["method"] == "PUT")
        dels = sorted(r["path"].rsplit("/", 1)[1] for r in recs if r["method"] == "DELETE")
        self.assertEqual(dels, ["1.1"])
        self.assertEqual(puts, ["0.0", "0.1", "0.2", "1.0", "1.2", "2.0", "2.1", "2.2"])
        self.assertTrue(all(r["headers"].get("x-ms-blob-type") == "BlockBlob" and
                            ("if-match" in r["headers"] or "if-none-match" in r["headers"])
                            for r in recs if r["method"] == "PUT"), recs)
        out = os.path.join(WORK, "w-back.zarr")
        os.makedirs(out)
        for key in c.list_all(CONTAINER, "w.zarr/"):
            with open(os.path.join(out, key[len("w.zarr/"):]), "wb") as f:
                f.write(c.get(CONTAINER, key))
        got = zarr.open_array(out, "r")[:]
        self.assertTrue(np.array_equal(got, model), got)
        log("  %d Put Blob and %d Delete Blob, conditional; zarr-python reads the writes"
            % (len(puts), len(dels)))

    def test_02_new_array_through_the_mount(self):
        """A new group (mkdir) and array (an empty file, then its user.zarr.metadata) made
        through the mount, then its data: zarr-python reads them from the blobs."""
        import json
        import zarr
        c = AZ.client()
        c.put(CONTAINER, "new.zarr/.zgroup", b'{"zarr_format": 2}')
        meta = {"zarr_format": 2, "shape": [10, 12], "chunks": [5, 5], "dtype": "<i2",
                "fill_value": 0, "order": "C", "compressor": {"id": "zlib", "level": 1},
                "filters": None}
        want = (np.arange(120, dtype="<i2") * 3 - 50).reshape(10, 12)
        m = mount_az("new.zarr", KEY_ENV, extra=["rw"], label="az-new")
        try:
            os.mkdir(m.path("run2"))
            open(m.path("run2", "arr"), "wb").close()
            os.setxattr(m.path("run2", "arr"), "user.zarr.metadata", json.dumps(meta).encode())
            with open(m.path("run2", "arr"), "r+b") as f:
                f.write(want.tobytes())
                f.flush()
                os.fsync(f.fileno())
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))
        out = os.path.join(WORK, "new-back.zarr")
        keys = c.list_all(CONTAINER, "new.zarr/")
        self.assertIn("new.zarr/run2/.zgroup", keys)
        for key in keys:
            p = os.path.join(out, key[len("new.zarr/"):])
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(c.get(CONTAINER, key))
        got = zarr.open_array(os.path.join(out, "run2", "arr"), "r")[:]
        self.assertTrue(np.array_equal(got, want), got)

    def az_store(self, name, build):
        """other_writer.py's three callables for a store built locally and uploaded as name."""
        src = os.path.join(WORK, name + "-src")
        shutil.rmtree(src, ignore_errors=True)
        build(src)
        c = AZ.client()
        c.upload_tree(src, CONTAINER, name)

        @contextlib.contextmanager
        def mount():
            m = mount_az(name, KEY_ENV, extra=["rw"], label="az-" + name)
            try:
                yield m
            finally:
                self.assertEqual(m.stop(), (0, "fusermount3 -u"))

        def download(dest):
            for key in c.list_all(CONTAINER, name + "/"):
                out = os.path.join(dest, key[len(name) + 1:])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "wb") as f:
                    f.write(c.get(CONTAINER, key))

        return mount, lambda key, data: c.put(CONTAINER, name + "/" + key, data), download

    def test_03_other_writer_merged(self):
        """other_writer.py on Azure: chunks another client changed between zarrfs's read and its
        write are merged (its conditional Put Blob refused with 409/412, then read again)."""
        before = PROXY.conflicts
        other_writer.plain_case(self, WORK, *self.az_store("other-plain.zarr",
                                                           other_writer.build_plain))
        self.assertGreaterEqual(PROXY.conflicts - before, 2)


    def test_04_other_writer_shard_merged(self):
        """The same for a shard (zarrita.js reads the result)."""
        other_writer.shard_case(self, WORK, *self.az_store("other-shard.zarr",
                                                           other_writer.write_shard_store))


class Modes(zfmount.TestCase):

    def test_01_direct_io(self):
        m = mount_az("v2.zarr", KEY_ENV, extra=["direct_io"], label="az-dio")
        try:
            z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", "lz4_f8"))
            self.assertBytesEqual(zfmount.read_all(m.path("lz4_f8")), zfmount.expected_bytes(z),
                                  "lz4_f8")
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))

    def test_02_disk_cache(self):
        cache = os.path.join(WORK, "disk-cache")
        os.makedirs(cache, exist_ok=True)
        z = zfmount.open_zarr_array(os.path.join(SRV, "v2.zarr", "blosc_i4_be"))
        for round_ in range(2):
            mark = PROXY.mark()
            m = mount_az("v2.zarr", KEY_ENV, extra=["disk_cache=" + cache, "metadata_ttl=3600"],
                         label="az-dc%d" % round_)
            try:
                self.assertBytesEqual(zfmount.read_all(m.path("blosc_i4_be")),
                                      zfmount.expected_bytes(z), "blosc_i4_be")
            finally:
                self.assertEqual(m.stop(), (0, "fusermount3 -u"))
            gets = [r for r in PROXY.since(mark) if r["method"] == "GET" and
                    "/blosc_i4_be/" in r["path"]]
            if round_ == 0:
                self.assertGreater(len(gets), 0)
            else:
                self.assertEqual(gets, [], "the second mount reads chunks from the disk cache")
        self.assertTrue(any(files for _d, _s, files in os.walk(cache)))


    def test_03_zip_archive_with_sas(self):
        """A zip archive in a container, named by an az:// URL with a SAS: the archive is read
        by ranges through the container's store, which takes the SAS."""
        import zipfile
        src = os.path.join(SRV, "v2.zarr")
        zpath = os.path.join(WORK, "v2.zip")
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as zf:
            for dirpath, _d, names in os.walk(src):
                for n in names:
                    p = os.path.join(dirpath, n)
                    zf.write(p, os.path.relpath(p, src))
        with open(zpath, "rb") as f:
            AZ.client().put(CONTAINER, "archives/v2.zip", f.read())
        sas = rs.account_sas(time.time() + 3600, permissions="rl")
        m = mount_az("archives/v2.zip?" + sas, {}, label="az-zip")
        try:
            z = zfmount.open_zarr_array(os.path.join(src, "lz4_f8"))
            self.assertBytesEqual(zfmount.read_all(m.path("lz4_f8")), zfmount.expected_bytes(z),
                                  "lz4_f8 in the archive")
        finally:
            self.assertEqual(m.stop(), (0, "fusermount3 -u"))


if __name__ == "__main__":
    zfmount.main(file_timeout=400)
