"""Google Cloud Storage servers on 127.0.0.1 for test_remote_gcs.py.

* GcsEmulator(): the Cloud Storage emulator of firebase-tools (npm, pinned in
  gcs-js/package-lock.json), started from gcs-js/emulator.js without the `firebase` command. It is
  installed once per machine by scripts/deps.sh (zf_install_gcs_emulator) into
  ${ZF_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zarrfs-tests}/gcs-js-<first 12 hex digits of
  the lock file's SHA-256>; emulator_dir() computes the same path. It serves the JSON API (objects
  get/list/delete, media uploads) but ignores ifGenerationMatch, accepts any token or none,
  creates any bucket it is asked about, and repeats the prefixes of a delimited listing on every
  page.

* GcsProxy(emulator): a test server of our own in front of the emulator, which follows Google's
  documented protocol where the emulator does not:
  - preconditions (https://cloud.google.com/storage/docs/request-preconditions): ifGenerationMatch
    on media uploads and deletes, checked against the object's generation (0: the object must
    not exist) under one lock with the write; 412 with the JSON API's error document otherwise;
  - buckets: only those it was given exist; others answer 404 "The specified bucket does not
    exist." as GCS does;
  - OAuth 2.0 for service accounts (https://developers.google.com/identity/protocols/oauth2/
    service-account, RFC 7523): POST /token with grant_type
    urn:ietf:params:oauth:grant-type:jwt-bearer and an assertion whose RS256 signature is
    verified with `openssl dgst -sha256 -verify` against the public key of a key pair the test
    made with `openssl genpkey`, and whose claims (iss, scope, aud, iat, exp) are checked; the
    answer {"access_token", "expires_in", "token_type": "Bearer"} with a short expires_in so that
    a mount must refresh;
  - bearer tokens (with require_auth): data requests without a valid, unexpired token (issued
    above or given in `static_tokens`) answer 401 as GCS does;
  - listings (with page_size): paged as GCS pages them, items and prefixes together in name
    order with an opaque page token (the emulator pages only the items and repeats every prefix
    on every page, so a client that ignored nextPageToken would still find the groups);
  - faults: statuses answered before forwarding (`faults`: a list of (substring of the object
    name, status, Retry-After, count)), 403 for names in `forbidden`, and a listing page cut
    short (`cut_listing`: the first page of a listing of that prefix has its body cut in the
    middle, its Content-Length telling the cut length, so only the JSON tells).
  Every request is recorded in `records` (method, path, query dict, Authorization, status).
"""

import base64
import collections
import hashlib
import http.client
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

import remote_servers as rs

HERE = os.path.dirname(os.path.abspath(__file__))
LOCK = os.path.join(HERE, "gcs-js", "package-lock.json")


def emulator_dir():
    """Where scripts/deps.sh installs firebase-tools (zf_gcs_emulator_dir)."""
    with open(LOCK, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    base = os.environ.get("ZF_TOOLS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "zarrfs-tests")
    return os.path.join(base, "gcs-js-" + digest)


class GcsEmulator:
    def __init__(self):
        self.proc = self.port = None
        self.dir = tempfile.mkdtemp(prefix="zarrfs-gcs-emu-")

    def start(self):
        modules = os.path.join(emulator_dir(), "node_modules")
        if not os.path.exists(os.path.join(modules, "firebase-tools", "package.json")):
            raise RuntimeError("firebase-tools is not installed in %s: run "
                               "`source scripts/deps.sh && zf_install_gcs_emulator`" % modules)
        self.port = rs.free_port()
        logf = os.path.join(self.dir, "emulator.log")
        env = dict(os.environ, TMPDIR=self.dir)
        with open(logf, "w") as lf:
            self.proc = subprocess.Popen(
                ["node", os.path.join(HERE, "gcs-js", "emulator.js"), modules, str(self.port)],
                stdin=subprocess.PIPE, stdout=lf, stderr=subprocess.STDOUT, cwd=self.dir,
                env=env, preexec_fn=rs._pdeathsig)
        rs._register(self)
        rs.wait_listening(self.port, self.proc, what="GCS emulator", logfile=logf)
        return self

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        rs._stop_proc(self.proc)
        if self.proc and self.proc.stdin:
            self.proc.stdin.close()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)
        rs._unregister(self)


GcsRecord = collections.namedtuple("GcsRecord", "method path query auth status")


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def error_doc(status, message):
    return json.dumps({"error": {"code": status, "message": message,
                                 "errors": [{"message": message, "domain": "global"}]}}).encode()


class GcsProxy:
    def __init__(self, upstream_port, buckets, public_key=None, token_ttl=6,
                 client_email=None):
        self.upstream_port = upstream_port
        self.buckets = set(buckets)
        self.public_key = public_key        # PEM path: verify JWT assertions
        self.client_email = client_email
        self.token_ttl = token_ttl
        self.tokens = {}                    # token -> expiry (monotonic)
        self.static_tokens = set()
        self.require_auth = False
        self.scopes = []                    # scopes of the assertions accepted
        self.token_requests = 0
        self.token_faults = 0               # token requests answered 503 first
        self.faults = []                    # [substring, status, retry_after, count]
        self.forbidden = set()
        self.cut_listing = None             # prefix whose first listing page is cut short
        self.page_size = 0                  # > 0: listings re-paged as GCS pages them (repaged)
        self.pages_served = 0
        self.listings = {}                  # (path, prefix, delimiter) -> {name: is prefix}
        self.preconditions_failed = 0
        self.records = []
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.server = self.port = None
        self.dir = tempfile.mkdtemp(prefix="zarrfs-gcs-proxy-")

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def token_uri(self):
        return self.endpoint() + "/token"

    def mark(self):
        with self.lock:
            return len(self.records)

    def since(self, mark):
        with self.lock:
            return list(self.records[mark:])

    def forward(self, method, target, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            h = {k: v for k, v in (headers or {}).items()
                 if k.lower() in ("range", "content-type")}
            if body is not None:
                h["Content-Length"] = str(len(body))
            c.request(method, target, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            c.close()

    # ---- OAuth ----------------------------------------------------------------------------

    def verify_assertion(self, jwt):
        """None when the assertion is a valid RS256 JWT of the service account, else why not."""
        parts = jwt.split(".")
        if len(parts) != 3:
            return "not a JWT"
        header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
        if header.get("alg") != "RS256":
            return "alg %r" % header.get("alg")
        with tempfile.NamedTemporaryFile(dir=self.dir) as data, \
                tempfile.NamedTemporaryFile(dir=self.dir) as sig:
            data.write((parts[0] + "." + parts[1]).encode())
            data.flush()
            sig.write(b64url_decode(parts[2]))
            sig.flush()
            r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", self.public_key,
                                "-signature", sig.name, data.name], capture_output=True)
        if r.returncode != 0:
            return "bad signature"
        now = time.time()
        if claims.get("iss") != self.client_email:
            return "iss %r" % claims.get("iss")
        if claims.get("aud") != self.token_uri():
            return "aud %r" % claims.get("aud")
        if not (now - 300 <= claims.get("iat", 0) <= now + 300) or \
                claims.get("exp", 0) - claims.get("iat", 0) > 3600 or claims.get("exp", 0) < now:
            return "iat/exp %r/%r" % (claims.get("iat"), claims.get("exp"))
        scope = claims.get("scope", "")
        if scope not in ("https://www.googleapis.com/auth/devstorage.read_only",
                         "https://www.googleapis.com/auth/devstorage.read_write"):
            return "scope %r" % scope
        with self.lock:
            self.scopes.append(scope)
        return None

    def token_answer(self, body):
        with self.lock:
            if self.token_faults > 0:
                self.token_faults -= 1
                return 503, {"error": "backendError"}
        form = urllib.parse.parse_qs(body.decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return 400, {"error": "unsupported_grant_type"}
        why = self.verify_assertion(form.get("assertion", [""])[0])
        if why:
            return 400, {"error": "invalid_grant", "error_description": why}
        with self.lock:
            self.token_requests += 1
            tok = "ya29.zarrfs-test-%d-%s" % (self.token_requests, os.urandom(6).hex())
            self.tokens[tok] = time.monotonic() + self.token_ttl
        return 200, {"access_token": tok, "expires_in": self.token_ttl, "token_type": "Bearer"}

    def authorized(self, auth):
        if not self.require_auth:
            return True
        if not auth or not auth.startswith("Bearer "):
            return False
        tok = auth[7:]
        with self.lock:
            if tok in self.static_tokens:
                return True
            exp = self.tokens.get(tok)
        return exp is not None and time.monotonic() < exp

    # ---- requests -------------------------------------------------------------------------

    def object_of(self, method, path, query):
        """(bucket, object name or None) of a JSON API request."""
        p = path.split("/")
        if path.startswith("/upload/storage/v1/b/"):
            return p[5], query.get("name")
        if path.startswith("/storage/v1/b/"):
            return p[4], (urllib.parse.unquote(p[6]) if len(p) > 6 and p[6] else None)
        return None, None

    def generation(self, bucket, name):
        st, _h, body = self.forward("GET", "/storage/v1/b/%s/o/%s" % (
            bucket, urllib.parse.quote(name, safe="")))
        return int(json.loads(body)["generation"]) if st == 200 else 0

    def repaged(self, path, query):
        """A delimited listing paged as GCS pages it (items and prefixes together, in name
        order, at most maxResults or page_size names a page, an opaque nextPageToken), made from
        the emulator's whole listing (which pages only the items and repeats the prefixes)."""
        prefix, delim = query.get("prefix", ""), query.get("delimiter", "")
        with self.lock:
            names = self.listings.get((path, prefix, delim))
        token = None
        while names is None or token:
            names = names or {}
            q = {"prefix": prefix, "delimiter": delim, "maxResults": "1000"}
            if token:
                q["pageToken"] = token
            st, hdrs, data = self.forward("GET", path + "?" + urllib.parse.urlencode(q))
            if st != 200:
                return st, hdrs, data
            doc = json.loads(data)
            for i in doc.get("items", []):
                names[i["name"]] = False
            for p in doc.get("prefixes", []):
                names[p] = True
            token = doc.get("nextPageToken")
        with self.lock:
            self.listings[(path, prefix, delim)] = names
        order = sorted(names)
        start = 0
        if "pageToken" in query:
            after = b64url_decode(query["pageToken"]).decode()
            start = next((i for i, n in enumerate(order) if n > after), len(order))
        size = min(self.page_size, int(query.get("maxResults") or self.page_size))
        page = order[start:start + size]
        doc = {"kind": "storage#objects",
               "items": [{"name": n} for n in page if not names[n]],
               "prefixes": [n for n in page if names[n]]}
        if start + size < len(order):
            doc["nextPageToken"] = base64.urlsafe_b64encode(page[-1].encode()).decode()
        with self.lock:
            self.pages_served += 1
        return 200, [("Content-Type", "application/json")], json.dumps(doc).encode()

    def handle(self, h, method):
        url = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else None
        auth = h.headers.get("Authorization")
        status, headers, data = self.answer(method, url, query, body, auth, h.headers)
        with self.lock:
            self.records.append(GcsRecord(method, url.path, query, auth, status))
        h.send_response(status)
        sent_len = False
        for k, v in headers:
            if k.lower() in ("content-type", "content-range", "x-goog-generation", "retry-after",
                             "accept-ranges"):
                h.send_header(k, v)
            if k.lower() == "content-length":
                sent_len = True
                h.send_header(k, v)
        if not sent_len:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if method != "HEAD":
            h.wfile.write(data)

    def answer(self, method, url, query, body, auth, headers):
        js = [("Content-Type", "application/json")]
        if method == "POST" and url.path == "/token":
            st, doc = self.token_answer(body or b"")
            return st, js, json.dumps(doc).encode()
        bucket, name = self.object_of(method, url.path, query)
        if bucket is not None and bucket not in self.buckets:
            return 404, js, error_doc(404, "The specified bucket does not exist.")
        if not self.authorized(auth):
            return 401, js, error_doc(401, "Invalid Credentials")
        if name is not None and name in self.forbidden:
            return 403, js, error_doc(403, "zarrfs-test@example.iam.gserviceaccount.com does not "
                                           "have storage.objects.get access")
        target = name if name is not None else query.get("prefix", "")
        with self.lock:
            for f in self.faults:
                if f[3] > 0 and f[0] in target:
                    f[3] -= 1
                    hdrs = js + ([("Retry-After", str(f[2]))] if f[2] is not None else [])
                    return f[1], hdrs, error_doc(f[1], "injected fault")
        if method in ("POST", "DELETE", "PUT"):
            with self.lock:
                self.listings.clear()
        cond = query.get("ifGenerationMatch")
        if cond is not None and method in ("POST", "DELETE") and name is not None:
            with self.write_lock:
                if self.generation(bucket, name) != int(cond):
                    with self.lock:
                        self.preconditions_failed += 1
                    return 412, js, error_doc(412, "At least one of the pre-conditions you "
                                                   "specified did not hold.")
                return self.forward(method, url.path + "?" + url.query, body, headers)
        if self.page_size and name is None and method == "GET" and url.path.endswith("/o"):
            st, hdrs, data = self.repaged(url.path, query)
        else:
            st, hdrs, data = self.forward(
                method, url.path + ("?" + url.query if url.query else ""), body, headers)
        if (self.cut_listing is not None and name is None and method == "GET" and
                query.get("prefix") == self.cut_listing and "pageToken" not in query):
            data = data[:len(data) // 2]
            hdrs = [(k, v) for k, v in hdrs if k.lower() != "content-length"]
        return st, hdrs, data

    def start(self):
        proxy = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy.handle(self, "GET")

            def do_HEAD(self):
                proxy.handle(self, "HEAD")

            def do_POST(self):
                proxy.handle(self, "POST")

            def do_DELETE(self):
                proxy.handle(self, "DELETE")

            def do_PUT(self):
                proxy.handle(self, "PUT")

        self.server = rs._ThreadingServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        rs._register(self)
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        rs._unregister(self)
        shutil.rmtree(self.dir, ignore_errors=True)


class GcsClient(rs.TreeUploader):
    """A small JSON API client (media uploads, listing, downloads) to fill the emulator."""

    def __init__(self, port):
        self.port = port
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = self.local.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return c

    def request(self, method, target, body=None, headers=None):
        for attempt in range(2):
            c = self._conn()
            try:
                c.request(method, target, body=body, headers=headers or {})
                r = c.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt:
                    raise

    def close(self):
        """Close this thread's connection."""
        c = getattr(self.local, "c", None)
        if c is not None:
            c.close()
            self.local.c = None

    def put(self, bucket, name, data):
        st, body = self.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (
            bucket, urllib.parse.quote(name, safe="")), data,
            {"Content-Type": "application/octet-stream"})
        if st != 200:
            raise RuntimeError("upload of %s: %d %r" % (name, st, body[:200]))
        return json.loads(body)

    def get(self, bucket, name):
        return self.request("GET", "/storage/v1/b/%s/o/%s?alt=media" % (
            bucket, urllib.parse.quote(name, safe="")))

    def list_all(self, bucket, prefix):
        names, token = [], None
        while True:
            q = {"prefix": prefix}
            if token:
                q["pageToken"] = token
            st, body = self.request("GET", "/storage/v1/b/%s/o?%s" % (
                bucket, urllib.parse.urlencode(q)))
            doc = json.loads(body)
            names += [i["name"] for i in doc.get("items", [])]
            token = doc.get("nextPageToken")
            if not token:
                return names
