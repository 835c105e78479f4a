"""Real servers on 127.0.0.1 for the remote-store tests (test_remote_*.py): nginx, s3rver behind a
SigV4-checking proxy, and a fault-injecting HTTP server.

Every server listens on a free port of 127.0.0.1 only, keeps its configuration, logs and data in
its own temporary directory, and is stopped by `stop()` (the classes are context managers too).
Child processes (nginx, s3rver) get PR_SET_PDEATHSIG=SIGKILL, so they die with the test process
even when its watchdog ends it with os._exit; an atexit handler stops whatever is still running.

* Nginx(root, autoindex=True, tls=False, extra_http="", extra_server=""): Debian's nginx-light
  as a child (extra directives in its http and server blocks: auth_basic, ...), `nginx -c CONF -p
  PREFIX -e ERRLOG -g 'daemon off;'`, one process (`master_process off`), access log with one
  tab-separated line per request (`access_entries()`: method, uri, status, body bytes, Range).
  nginx's autoindex pages list no name starting with "." (.zarray, .zgroup are never shown).
* S3rver(): s3rver 3.7.1 (npm, tests/integration/js/node_modules) with bucket(s) configured at
  start; credentials S3RVER/S3RVER; run with node --openssl-legacy-provider (see start()). s3rver 3.7.1 checks only that a SigV4 request's access key id
  exists (lib/middleware/authentication.js: "Signature version 4 calculation is unimplemented"):
  a wrong secret is accepted. So the tests reach it through SigV4Proxy, which verifies every
  signature as S3 does (canonical request, scope, date, payload hash) with the known secret and
  forwards what passes; unsigned requests pass unchanged (s3rver, like a public bucket, answers
  them). s3rver 3.7.1 answers a suffix range "bytes=-N" with bytes 0-N; the proxy asks for the
  last N bytes instead. It only pages Contents (max-keys never cuts CommonPrefixes), and its
  continuation tokens need DES, hence node --openssl-legacy-provider. It reports a common prefix
  only when an object lies directly in it; SigV4Proxy(fix_common_prefixes=True) adds the others.
* S3Client: a small SigV4 client (keep-alive, threads) to upload stores and list buckets.
* Azurite(): Microsoft's Azure Storage emulator (npm azurite 3.37, tests/integration/js), its
  blob service only, in memory, account devstoreaccount1 with its published key; AzureClient
  signs with Shared Key (its own implementation, Python's hmac) to create containers, upload and
  list; account_sas() and container_sas() make SAS tokens from the key.
* FaultServer(root): http.server serving a directory (GET/HEAD, single byte ranges incl. suffix
  ranges, HTML index pages for directories like `python3 -m http.server`), with faults scheduled
  per key or per request number: 500, 503, 429, reset mid-body, truncated body, stall, a 200 that
  ignores Range, healthy.
"""

import atexit
import base64
import collections
import contextlib
import ctypes
import datetime
import fnmatch
import hashlib
import hmac
import html
import http.client
import http.server
import io
import os
import re
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import tempfile
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape as xml_escape

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")
S3RVER_BIN = os.path.join(JS, "node_modules", ".bin", "s3rver")
AZURITE_BIN = os.path.join(JS, "node_modules", ".bin", "azurite-blob")
NGINX = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin:" + os.environ.get("PATH", ""))
START_TIMEOUT = 20.0

_running = []
_running_lock = threading.Lock()


def _register(s):
    with _running_lock:
        _running.append(s)


def _unregister(s):
    with _running_lock:
        if s in _running:
            _running.remove(s)


def stop_all():
    with _running_lock:
        servers = list(_running)
    for s in reversed(servers):
        try:
            s.stop()
        except Exception as e:  # noqa: BLE001 - cleanup must go on
            print("  [servers] stopping %r: %s" % (s, e), flush=True)


atexit.register(stop_all)


def _pdeathsig():
    """preexec_fn: SIGKILL the child when the (main thread of the) test process dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port():
    """A port of 127.0.0.1 nothing listens on (connecting is refused)."""
    return free_port()


def wait_listening(port, proc=None, timeout=START_TIMEOUT, what="server", logfile=None):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            log = ""
            if logfile and os.path.exists(logfile):
                with open(logfile, errors="replace") as f:
                    log = f.read()[-3000:]
            raise RuntimeError("%s exited with status %s before listening on %d\n%s"
                               % (what, proc.returncode, port, log))
        if time.monotonic() > deadline:
            raise RuntimeError("%s did not listen on 127.0.0.1:%d within %.0f s"
                               % (what, port, timeout))
        time.sleep(0.05)


def _stop_proc(proc, sig=signal.SIGTERM):
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


# ---------------------------------------------------------------------------------------------
# nginx

def make_self_signed_cert(directory, cn="127.0.0.1"):
    """(certificate, key) made now with `openssl req -x509` for IP 127.0.0.1 and localhost."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn,
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("openssl req -x509 failed: %s" % r.stdout)
    return cert, key


ACCESS_FIELDS = ("msec", "method", "uri", "status", "bytes", "range", "connection", "conn_requests")
AccessEntry = collections.namedtuple("AccessEntry", ACCESS_FIELDS + ("path",))


class Nginx:
    """nginx serving `root` on 127.0.0.1:port (autoindex on/off, optional TLS)."""

    def __init__(self, root, autoindex=True, tls=False, listen="127.0.0.1", port=None,
                 master_process=False, netns=None, extra_http="", extra_server=""):
        self.root = os.path.abspath(root)
        self.autoindex = autoindex
        self.tls = tls
        self.listen = listen
        self.port = port
        self.master_process = master_process
        self.netns = netns
        self.extra_http = extra_http
        self.extra_server = extra_server     # directives of the server block (auth_basic ...)
        self.proc = None
        self.dir = None

    def __repr__(self):
        return "Nginx(%s, port %s)" % (self.root, self.port)

    @property
    def scheme(self):
        return "https" if self.tls else "http"

    def url(self, path=""):
        return "%s://%s:%d/%s" % (self.scheme, self.listen, self.port,
                                  urllib.parse.quote(path))

    def config(self):
        d = self.dir
        tls = ""
        if self.tls:
            tls = ("ssl_certificate %s;\n        ssl_certificate_key %s;\n"
                   % (self.cert, self.key))
        return """
worker_processes 1;
master_process %(master)s;
user root;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log info;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    log_format zf '$msec\\t$request_method\\t$request_uri\\t$status\\t$body_bytes_sent\\t$http_range\\t$connection\\t$connection_requests';
    access_log %(d)s/access.log zf;
    sendfile off;
    keepalive_requests 100000;
    keepalive_timeout 60s;
    client_body_temp_path %(d)s/tmp/body;
    proxy_temp_path %(d)s/tmp/proxy;
    fastcgi_temp_path %(d)s/tmp/fastcgi;
    uwsgi_temp_path %(d)s/tmp/uwsgi;
    scgi_temp_path %(d)s/tmp/scgi;
    %(extra)s
    server {
        listen %(listen)s:%(port)d%(ssl)s;
        server_name localhost;
        %(tls)s
        root %(root)s;
        %(extra_server)s
        location / {
            autoindex %(ai)s;
        }
    }
}
""" % {"master": "on" if self.master_process else "off", "d": d, "listen": self.listen,
       "port": self.port, "ssl": " ssl" if self.tls else "", "tls": tls, "root": self.root,
       "ai": "on" if self.autoindex else "off", "extra": self.extra_http,
       "extra_server": self.extra_server}

    def start(self):
        if not NGINX:
            raise RuntimeError("nginx not found (Debian package nginx-light; scripts/deps.sh)")
        self.dir = tempfile.mkdtemp(prefix="zarrfs-nginx-")
        os.makedirs(os.path.join(self.dir, "tmp"))
        if self.tls:
            self.cert, self.key = make_self_signed_cert(self.dir)
        for attempt in range(5):
            if self.port is None or attempt:
                self.port = free_port()
            conf = os.path.join(self.dir, "nginx.conf")
            with open(conf, "w") as f:
                f.write(self.config())
            errlog = os.path.join(self.dir, "stderr.log")
            errf = open(errlog, "wb")
            cmd = [NGINX, "-c", conf, "-p", self.dir + "/", "-e", os.path.join(self.dir, "error.log"),
                   "-g", "daemon off;"]
            if self.netns:
                cmd = ["ip", "netns", "exec", self.netns] + cmd
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf,
                                         stderr=subprocess.STDOUT, preexec_fn=_pdeathsig)
            errf.close()
            _register(self)
            try:
                if self.netns:
                    self._wait_in_netns()
                else:
                    wait_listening(self.port, self.proc, what="nginx",
                                   logfile=os.path.join(self.dir, "error.log"))
                return self
            except RuntimeError:
                if self.proc.poll() is None or attempt == 4:
                    self.stop()
                    raise
                with open(os.path.join(self.dir, "error.log"), errors="replace") as f:
                    if "Address already in use" not in f.read():
                        self.stop()
                        raise
        return self

    def _wait_in_netns(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with status %s" % self.proc.returncode)
            r = subprocess.run(["ip", "netns", "exec", self.netns, "ss", "-Hltn",
                                "sport = :%d" % self.port], stdout=subprocess.PIPE, text=True)
            if r.stdout.strip():
                return
            time.sleep(0.1)
        raise RuntimeError("nginx did not listen in netns %s" % self.netns)

    def stop(self):
        _stop_proc(self.proc, signal.SIGQUIT if self.master_process else signal.SIGTERM)
        _unregister(self)
        if self.dir and os.environ.get("ZARRFS_KEEP_SERVER_DIRS") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- access log
    def access_mark(self):
        """A position in the access log; access_entries(since=mark) returns what came after."""
        p = os.path.join(self.dir, "access.log")
        return os.path.getsize(p) if os.path.exists(p) else 0

    def access_entries(self, since=0):
        p = os.path.join(self.dir, "access.log")
        if not os.path.exists(p):
            return []
        with open(p, "rb") as f:
            f.seek(since)
            data = f.read().decode("utf-8", "replace")
        out = []
        for line in data.splitlines():
            fields = line.split("\t")
            if len(fields) != len(ACCESS_FIELDS):
                continue
            d = dict(zip(ACCESS_FIELDS, fields))
            d["status"] = int(d["status"])
            d["bytes"] = int(d["bytes"])
            if d["range"] == "-":
                d["range"] = ""
            d["path"] = urllib.parse.unquote(d["uri"].split("?", 1)[0]).lstrip("/")
            out.append(AccessEntry(**d))
        return out

    def error_log(self):
        p = os.path.join(self.dir, "error.log")
        if not os.path.exists(p):
            return ""
        with open(p, errors="replace") as f:
            return f.read()


# ---------------------------------------------------------------------------------------------
# AWS Signature Version 4 (docs.aws.amazon.com "Create a signed AWS API request"; S3 flavour:
# the path is URI-encoded once, "/" kept; the payload hash is the x-amz-content-sha256 header)

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def aws_quote(s):
    """URI-encode every byte except the RFC 3986 unreserved characters A-Z a-z 0-9 - _ . ~"""
    return urllib.parse.quote(s, safe="-_.~")


def canonical_uri(path):
    """path: the decoded key path, starting with '/'."""
    return "/".join(aws_quote(seg) for seg in path.split("/"))


def parse_query(raw):
    """[(name, value)] of a raw query string, percent-decoded (no '+' to space: S3 does not)."""
    pairs = []
    if not raw:
        return pairs
    for part in raw.split("&"):
        if part == "":
            continue
        k, _, v = part.partition("=")
        pairs.append((urllib.parse.unquote(k), urllib.parse.unquote(v)))
    return pairs


def canonical_query(pairs):
    enc = sorted((aws_quote(k), aws_quote(v)) for k, v in pairs)
    return "&".join("%s=%s" % kv for kv in enc)


def signing_key(secret, date, region, service="s3"):
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def _canon_header_value(v):
    return re.sub(r"\s+", " ", v.strip())


def string_to_sign(method, path, query_pairs, headers, signed, payload_hash, amzdate, scope):
    """headers: {lowercase name: value}; signed: sorted list of lowercase names."""
    creq = "\n".join([method, canonical_uri(path), canonical_query(query_pairs),
                      "".join("%s:%s\n" % (h, _canon_header_value(headers.get(h, "")))
                              for h in signed),
                      ";".join(signed), payload_hash])
    return "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                      hashlib.sha256(creq.encode()).hexdigest()]), creq


def sign_request(method, host, path, query_pairs, access_key, secret, region,
                 payload_hash="UNSIGNED-PAYLOAD", token=None, now=None, extra_headers=None):
    """Headers (Host, x-amz-date, x-amz-content-sha256, Authorization, ...) of a signed request."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amzdate = now.strftime("%Y%m%dT%H%M%SZ")
    date = amzdate[:8]
    headers = {"host": host, "x-amz-date": amzdate, "x-amz-content-sha256": payload_hash}
    if token:
        headers["x-amz-security-token"] = token
    for k, v in (extra_headers or {}).items():
        headers[k.lower()] = v
    signed = sorted(headers)
    scope = "%s/%s/s3/aws4_request" % (date, region)
    sts, _ = string_to_sign(method, path, query_pairs, headers, signed, payload_hash, amzdate, scope)
    sig = hmac.new(signing_key(secret, date, region), sts.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                                % (access_key, scope, ";".join(signed), sig))
    return headers


class TreeUploader:
    """upload_tree and put_many over a client's put(bucket_or_container, key, data), on a few
    threads (each client keeps one connection per thread; close() ends the thread's, if any)."""

    def upload_tree(self, local_dir, bucket, prefix, threads=4, skip=None):
        """Upload every file below local_dir as bucket/prefix/relpath; returns the key count."""
        files = []
        for dirpath, _dirs, names in os.walk(local_dir):
            for n in names:
                p = os.path.join(dirpath, n)
                rel = os.path.relpath(p, local_dir).replace(os.sep, "/")
                if skip and skip(rel):
                    continue
                files.append((p, (prefix.rstrip("/") + "/" + rel) if prefix else rel))
        self.put_many(bucket, [(k, p) for p, k in files], threads=threads)
        return len(files)

    def put_many(self, bucket, items, threads=4):
        """items: [(key, path or bytes)]; returns their count."""
        items = list(items)
        errors = []

        def work(part):
            try:
                for key, src in part:
                    if isinstance(src, (bytes, bytearray)):
                        data = bytes(src)
                    else:
                        with open(src, "rb") as f:
                            data = f.read()
                    self.put(bucket, key, data)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
            close = getattr(self, "close", None)
            if close:
                close()

        ts = [threading.Thread(target=work, args=(items[i::threads],)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            raise errors[0]
        return len(items)


class S3Client(TreeUploader):
    """Signed requests to an S3 endpoint (http://127.0.0.1:PORT), path-style."""

    def __init__(self, port, access_key="S3RVER", secret="S3RVER", region="us-east-1"):
        self.port = port
        self.host = "127.0.0.1:%d" % port
        self.access_key, self.secret, self.region = access_key, secret, region
        self._local = threading.local()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return c

    def request(self, method, path, query=(), body=b"", sha="UNSIGNED-PAYLOAD", secret=None,
                extra_headers=None):
        """(status, headers, body) of one signed request; path is the decoded '/bucket/key'."""
        headers = sign_request(method, self.host, path, list(query), self.access_key,
                               secret or self.secret, self.region, payload_hash=sha,
                               extra_headers=extra_headers)
        target = canonical_uri(path)
        if query:
            target += "?" + canonical_query(list(query))
        for attempt in range(3):
            c = self._conn()
            try:
                c.request(method, target, body=body if method in ("PUT", "POST") else None,
                          headers=headers)
                r = c.getresponse()
                data = r.read()
                return r.status, dict(r.getheaders()), data
            except (http.client.HTTPException, OSError):
                c.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def put(self, bucket, key, data):
        st, _, body = self.request("PUT", "/%s/%s" % (bucket, key), body=data,
                                   sha=hashlib.sha256(data).hexdigest())
        if st != 200:
            raise RuntimeError("PUT %s/%s: %d %s" % (bucket, key, st, body[:300]))

    def list_v2(self, bucket, prefix="", delimiter="/", max_keys=None, token=None):
        q = [("list-type", "2"), ("prefix", prefix)]
        if delimiter:
            q.append(("delimiter", delimiter))
        if max_keys is not None:
            q.append(("max-keys", str(max_keys)))
        if token:
            q.append(("continuation-token", token))
        st, _, body = self.request("GET", "/" + bucket, query=q)
        if st != 200:
            raise RuntimeError("ListObjectsV2 %s: %d %s" % (bucket, st, body[:300]))
        text = body.decode()
        keys = re.findall(r"<Contents><Key>(.*?)</Key>", text)
        prefixes = re.findall(r"<CommonPrefixes><Prefix>(.*?)</Prefix>", text)
        trunc = "<IsTruncated>true</IsTruncated>" in text
        m = re.search(r"<NextContinuationToken>(.*?)</NextContinuationToken>", text)
        return ([html.unescape(k) for k in keys], [html.unescape(p) for p in prefixes], trunc,
                html.unescape(m.group(1)) if m else None)


# ---------------------------------------------------------------------------------------------
# s3rver

class S3rver:
    """s3rver 3.7.1 on 127.0.0.1:port with `buckets` configured at start."""

    def __init__(self, buckets=("zarrfs",)):
        self.buckets = list(buckets)
        self.proc = None
        self.dir = None
        self.port = None

    def __repr__(self):
        return "S3rver(port %s)" % self.port

    def start(self):
        if not os.access(S3RVER_BIN, os.X_OK):
            raise RuntimeError("s3rver is not installed: run `npm ci --prefix tests/integration/js`"
                               " (scripts/test.sh does)")
        self.dir = tempfile.mkdtemp(prefix="zarrfs-s3rver-")
        os.makedirs(os.path.join(self.dir, "data"))
        self.logfile = os.path.join(self.dir, "s3rver.log")
        for attempt in range(5):
            self.port = free_port()
            # --openssl-legacy-provider: s3rver makes ListObjectsV2 continuation tokens with
            # DES, which OpenSSL 3 (Node 17+) only has in its legacy provider; without it every
            # truncated listing (more than max-keys keys) fails with 500 InternalError
            # (ERR_OSSL_EVP_UNSUPPORTED in s3rver's log)
            cmd = [shutil.which("node") or "node", "--openssl-legacy-provider",
                   os.path.realpath(S3RVER_BIN), "-d", os.path.join(self.dir, "data"),
                   "-p", str(self.port), "-a", "127.0.0.1"]
            for b in self.buckets:
                cmd += ["--configure-bucket", b]
            with open(self.logfile, "ab") as logf:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                             stderr=subprocess.STDOUT, preexec_fn=_pdeathsig)
            _register(self)
            try:
                wait_listening(self.port, self.proc, what="s3rver", logfile=self.logfile)
                return self
            except RuntimeError:
                if self.proc.poll() is None or attempt == 4:
                    self.stop()
                    raise
        return self

    def client(self, **kw):
        return S3Client(self.port, **kw)

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def log_text(self):
        try:
            with open(self.logfile, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        _stop_proc(self.proc)
        _unregister(self)
        if self.dir and os.environ.get("ZARRFS_KEEP_SERVER_DIRS") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


# ---------------------------------------------------------------------------------------------
# Azurite (Azure Blob Storage)

AZ_ACCOUNT = "devstoreaccount1"
# the emulator's published key (Microsoft's Azurite documentation), not a secret
AZ_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw"
          "==")
AZ_VERSION = "2021-08-06"


def az_date(t=None):
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))


def az_shared_key(method, url_path, query_pairs, headers, account=AZ_ACCOUNT, key=AZ_KEY):
    """The Shared Key signature of a Blob service request ("Authorize with Shared Key",
    2009-09-19 and later): url_path as sent (percent-encoded), query_pairs decoded."""
    h = {k.lower(): v for k, v in headers.items()}
    clen = h.get("content-length", "")
    if clen == "0":
        clen = ""
    fields = [method, h.get("content-encoding", ""), h.get("content-language", ""), clen,
              h.get("content-md5", ""), h.get("content-type", ""), h.get("date", ""),
              h.get("if-modified-since", ""), h.get("if-match", ""), h.get("if-none-match", ""),
              h.get("if-unmodified-since", ""), h.get("range", "")]
    canon_headers = "".join("%s:%s\n" % (k, h[k].strip()) for k in sorted(h)
                            if k.startswith("x-ms-"))
    res = "/" + account + url_path
    params = {}
    for k, v in query_pairs:
        params.setdefault(k.lower(), []).append(v)
    for k in sorted(params):
        res += "\n%s:%s" % (k, ",".join(sorted(params[k])))
    sts = "\n".join(fields) + "\n" + canon_headers + res
    mac = hmac.new(base64.b64decode(key), sts.encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def az_iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def az_sas_sign(sts, key=AZ_KEY):
    return base64.b64encode(hmac.new(base64.b64decode(key), sts.encode(),
                                     hashlib.sha256).digest()).decode()


def account_sas(expiry, permissions="rwdlac", start=None, account=AZ_ACCOUNT, key=AZ_KEY):
    """An account SAS for the blob service (sv 2019-12-12: "Create an account SAS")."""
    sv, ss, srt = "2019-12-12", "b", "sco"
    st = az_iso(start) if start else ""
    se = az_iso(expiry)
    sts = "\n".join([account, permissions, ss, srt, st, se, "", "", sv]) + "\n"
    q = [("sv", sv), ("ss", ss), ("srt", srt), ("sp", permissions)]
    if st:
        q.append(("st", st))
    q += [("se", se), ("sig", az_sas_sign(sts, key))]
    return urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe="")


def container_sas(container, expiry, permissions="rwdl", account=AZ_ACCOUNT, key=AZ_KEY):
    """A service SAS for one container (sr=c, sv 2019-12-12: "Create a service SAS")."""
    sv = "2019-12-12"
    se = az_iso(expiry)
    sts = "\n".join([permissions, "", se, "/blob/%s/%s" % (account, container), "", "", "",
                     sv, "c", "", "", "", "", "", ""])
    q = [("sv", sv), ("sr", "c"), ("sp", permissions), ("se", se),
         ("sig", az_sas_sign(sts, key))]
    return urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe="")


class AzureClient(TreeUploader):
    """Shared Key requests to an Azurite blob endpoint (http://127.0.0.1:PORT/ACCOUNT)."""

    def __init__(self, port, account=AZ_ACCOUNT, key=AZ_KEY):
        self.port, self.account, self.key = port, account, key
        self._local = threading.local()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return c

    def request(self, method, path, query=(), body=b"", headers=None):
        """(status, headers, body); path is the decoded 'container/blob' (or 'container')."""
        url_path = "/%s/%s" % (self.account, urllib.parse.quote(path, safe="/"))
        h = {"x-ms-date": az_date(), "x-ms-version": AZ_VERSION}
        h.update(headers or {})
        if method in ("PUT", "POST"):
            h["Content-Length"] = str(len(body))
        h["Authorization"] = "SharedKey %s:%s" % (
            self.account, az_shared_key(method, url_path, list(query), h, self.account,
                                        self.key))
        target = url_path
        if query:
            target += "?" + urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote,
                                                   safe="")
        for attempt in range(3):
            c = self._conn()
            try:
                c.request(method, target, body=body if method in ("PUT", "POST") else None,
                          headers=h)
                r = c.getresponse()
                data = r.read()
                return r.status, dict(r.getheaders()), data
            except (http.client.HTTPException, OSError):
                c.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def create_container(self, name, public=False):
        h = {"x-ms-blob-public-access": "container"} if public else {}
        st, _, body = self.request("PUT", name, [("restype", "container")], headers=h)
        if st != 201:
            raise RuntimeError("Create Container %s: %d %s" % (name, st, body[:300]))

    def put(self, container, key, data, headers=None):
        h = {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream"}
        h.update(headers or {})
        st, hd, body = self.request("PUT", "%s/%s" % (container, key), body=data, headers=h)
        if st != 201:
            raise RuntimeError("Put Blob %s/%s: %d %s" % (container, key, st, body[:300]))
        return next((v for k, v in hd.items() if k.lower() == "etag"), None)

    def get(self, container, key):
        """The blob's bytes, or None when it does not exist."""
        st, _, body = self.request("GET", "%s/%s" % (container, key))
        if st == 404:
            return None
        if st != 200:
            raise RuntimeError("Get Blob %s/%s: %d %s" % (container, key, st, body[:300]))
        return body

    def delete(self, container, key):
        st, _, body = self.request("DELETE", "%s/%s" % (container, key))
        if st not in (202, 404):
            raise RuntimeError("Delete Blob %s/%s: %d %s" % (container, key, st, body[:300]))

    def list(self, container, prefix="", delimiter="/", maxresults=None, marker=None):
        """(blob names, prefixes, next marker or None) of one List Blobs page."""
        q = [("restype", "container"), ("comp", "list"), ("prefix", prefix)]
        if delimiter:
            q.append(("delimiter", delimiter))
        if maxresults:
            q.append(("maxresults", str(maxresults)))
        if marker:
            q.append(("marker", marker))
        st, _, body = self.request("GET", container, q)
        if st != 200:
            raise RuntimeError("List Blobs %s: %d %s" % (container, st, body[:300]))
        root = ET.fromstring(body)
        names = [e.findtext("Name") for e in root.iter("Blob")]
        prefixes = [e.findtext("Name") for e in root.iter("BlobPrefix")]
        return names, prefixes, (root.findtext("NextMarker") or None)

    def list_all(self, container, prefix=""):
        out, marker = [], None
        while True:
            names, _p, marker = self.list(container, prefix, delimiter=None, marker=marker)
            out += names
            if not marker:
                return out


class Azurite:
    """azurite-blob (npm azurite 3.37) on 127.0.0.1:port, in memory, --loose; stopped with
    SIGTERM (it exits on it when started with --disableTelemetry)."""

    def __init__(self):
        self.proc = None
        self.dir = None
        self.port = None

    def __repr__(self):
        return "Azurite(port %s)" % self.port

    def start(self):
        if not os.access(AZURITE_BIN, os.X_OK):
            raise RuntimeError("azurite is not installed: run `npm ci --prefix "
                               "tests/integration/js` (scripts/test.sh does)")
        self.dir = tempfile.mkdtemp(prefix="zarrfs-azurite-")
        self.logfile = os.path.join(self.dir, "azurite.log")
        for attempt in range(5):
            self.port = free_port()
            cmd = [shutil.which("node") or "node", os.path.realpath(AZURITE_BIN), "--silent",
                   "--disableTelemetry", "--inMemoryPersistence", "--loose",
                   "--blobHost", "127.0.0.1", "--blobPort", str(self.port)]
            with open(self.logfile, "ab") as logf:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                             stderr=subprocess.STDOUT, cwd=self.dir,
                                             preexec_fn=_pdeathsig)
            _register(self)
            try:
                wait_listening(self.port, self.proc, what="azurite", logfile=self.logfile)
                return self
            except RuntimeError:
                if self.proc.poll() is None or attempt == 4:
                    self.stop()
                    raise
        return self

    def client(self, **kw):
        return AzureClient(self.port, **kw)

    def endpoint(self):
        """The account's blob endpoint, as a connection string's BlobEndpoint gives it."""
        return "http://127.0.0.1:%d/%s" % (self.port, AZ_ACCOUNT)

    def stop(self):
        _stop_proc(self.proc)
        _unregister(self)
        if self.dir and os.environ.get("ZARRFS_KEEP_SERVER_DIRS") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


class _ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def get_request(self):
        # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to many responses
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), a DNS lookup: not here
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


S3Record = collections.namedtuple("S3Record", "method path query signed access_key verdict status")


def _s3_error(code, message, status):
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            '</Error>' % (code, html.escape(message))).encode()
    return status, body


class _Answer:
    """An upstream answer the proxy makes itself (http.client.HTTPResponse's part it reads)."""

    def __init__(self, status, headers):
        self.status, self._headers = status, headers

    def getheaders(self):
        return list(self._headers)

    def getheader(self, name, default=None):
        return next((v for k, v in self._headers if k.lower() == name.lower()), default)


class SigV4Proxy:
    """Verifies the SigV4 signature of every request as S3 does, answers 403/400 with S3's error
    codes when it is wrong, and forwards the request to the upstream S3 server otherwise.

    s3rver 3.7.1 answers a suffix range "bytes=-N" with bytes 0..N ("Content-Range: bytes
    0-N/SIZE", N + 1 bytes) instead of the last N bytes; S3 answers the last N. With
    fix_suffix_ranges (default) the proxy asks s3rver for the last N bytes as an explicit range
    (after a HEAD for the size), as S3 would answer; `suffix_fixed` counts those.

    s3rver 3.7.1 also reports a common prefix of a delimited listing only when an object lies
    directly in it (its walk of the bucket directory skips directories below a common prefix):
    for "a/" it omits "a/b/" when a/b holds nothing but a/b/c/key; S3 reports every common
    prefix. With fix_common_prefixes (off by default) the proxy adds the missing ones to the
    first page of a delimited ListObjectsV2, found by listing the same prefix without a
    delimiter; `prefixes_fixed` counts the prefixes it added.

    s3rver 3.7.1 ignores the conditions of conditional writes (If-Match, If-None-Match: *),
    which S3 honours: the proxy checks them against the object's ETag, under one lock with the
    writes it forwards, and answers 412 PreconditionFailed itself (`preconditions_failed`).

    credentials: {access key: secret} or {access key: (secret, session token)} (a token must then
    come, signed, in x-amz-security-token). Unsigned requests are forwarded (anonymous). What is
    forwarded goes without its authentication headers (s3rver knows only its own key, S3RVER, and
    answers unsigned requests), so any access key works here. Every request is recorded in
    `records` (method, decoded path, query pairs, signed?, key, verdict, status)."""

    def __init__(self, upstream_port, credentials, region="us-east-1", skew=900,
                 fix_suffix_ranges=True, fix_common_prefixes=False):
        self.upstream_port = upstream_port
        self.fix_suffix_ranges = fix_suffix_ranges
        self.suffix_fixed = 0
        self.fix_common_prefixes = fix_common_prefixes
        self.prefixes_fixed = 0
        self.preconditions_failed = 0
        self.write_lock = threading.Lock()   # a conditional write's check and the write
        self.mismatches = []      # details of the requests whose signature did not match
        self._pool = []
        self.credentials = dict(credentials)
        self.region = region
        self.skew = skew
        self.records = []
        self.lock = threading.Lock()
        self.server = None
        self.port = None

    def __repr__(self):
        return "SigV4Proxy(port %s)" % self.port

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def upstream(self):
        """A kept-alive connection to the upstream server."""
        with self.lock:
            if self._pool:
                return self._pool.pop()
        return http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)

    def release(self, c):
        with self.lock:
            self._pool.append(c)

    def forward(self, method, target, body, headers):
        """(response, body) of one request to the upstream server; a kept-alive connection the
        server has closed meanwhile is replaced once."""
        headers = dict(headers)
        headers["Host"] = "127.0.0.1:%d" % self.upstream_port
        for attempt in range(2):
            c = self.upstream() if attempt == 0 else http.client.HTTPConnection(
                "127.0.0.1", self.upstream_port, timeout=60)
            try:
                c.request(method, target, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                if attempt == 1:
                    raise
                continue
            if r.will_close:
                c.close()
            else:
                self.release(c)
            return r, data
        raise AssertionError("unreachable")

    def precondition_failed(self, method, path, headers):
        """S3's conditional writes, which s3rver 3.7.1 ignores (a PUT or DELETE with If-Match:
        ETAG, or a PUT with If-None-Match: *): checked here against the object's ETag (a HEAD
        upstream, under write_lock with the write itself); (response, body) of a 412
        PreconditionFailed when the condition does not hold, else None."""
        if_match, if_none = headers.get("if-match"), headers.get("if-none-match")
        if method not in ("PUT", "DELETE") or (if_match is None and if_none is None):
            return None
        h, _ = self.forward("HEAD", path, None, {})
        etag = h.getheader("ETag") if h.status == 200 else None
        if (if_none == "*" and etag is not None) or (if_match is not None and if_match != etag):
            with self.lock:
                self.preconditions_failed += 1
            status, payload = _s3_error("PreconditionFailed", "At least one of the pre-conditions "
                                        "you specified did not hold", 412)
            return _Answer(status, [("Content-Type", "application/xml")]), payload
        return None

    def add_common_prefixes(self, raw_path, raw_query, data):
        """The body of a delimited ListObjectsV2 page with the common prefixes s3rver left out
        (see the class doc), or data unchanged."""
        q = dict(parse_query(raw_query))
        delim = q.get("delimiter", "")
        if (q.get("list-type") != "2" or not delim or "continuation-token" in q or
                q.get("encoding-type")):
            return data
        prefix = q.get("prefix", "")
        want, token = set(), None
        while True:
            pairs = [("list-type", "2"), ("prefix", prefix)]
            if token:
                pairs.append(("continuation-token", token))
            r, page = self.forward("GET", raw_path + "?" + canonical_query(pairs), None, {})
            if r.status != 200:
                return data
            root = ET.fromstring(page)
            for el in root.iter():
                if el.tag.rsplit("}", 1)[-1] == "Key" and el.text and el.text.startswith(prefix):
                    rest = el.text[len(prefix):]
                    i = rest.find(delim)
                    if i >= 0:
                        want.add(prefix + rest[:i + len(delim)])
            truncated = token = None
            for el in root:
                name = el.tag.rsplit("}", 1)[-1]
                if name == "IsTruncated":
                    truncated = el.text == "true"
                elif name == "NextContinuationToken":
                    token = el.text
            if not truncated or not token:
                break
        have = set(re.findall(r"<CommonPrefixes><Prefix>(.*?)</Prefix></CommonPrefixes>",
                              data.decode("utf-8")))
        have = {html.unescape(x) for x in have}
        missing = sorted(want - have)
        if not missing:
            return data
        with self.lock:
            self.prefixes_fixed += len(missing)
        extra = "".join("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>"
                        % xml_escape(p) for p in missing)
        text = data.decode("utf-8")
        end = text.rindex("</ListBucketResult>")
        return (text[:end] + extra + text[end:]).encode("utf-8")

    def verify(self, method, raw_path, raw_query, headers, body):
        """(verdict, access key): verdict "ok", "anonymous" or (status, S3 code, message)."""
        auth = headers.get("authorization")
        if auth is None:
            return "anonymous", None
        m = re.match(r"AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)/(\d{8})/([^/]+)/([^/]+)/"
                     r"aws4_request\s*,\s*SignedHeaders=([^,\s]+)\s*,\s*Signature=([0-9a-f]{64})\s*$",
                     auth)
        if not m:
            return (400, "AuthorizationHeaderMalformed", "the authorization header is malformed"), None
        ak, date, region, service, signed_s, sig = m.groups()
        if ak not in self.credentials:
            return (403, "InvalidAccessKeyId",
                    "The AWS Access Key Id you provided does not exist in our records."), ak
        secret, token = self.credentials[ak] if isinstance(self.credentials[ak], tuple) \
            else (self.credentials[ak], None)
        if token is not None and headers.get("x-amz-security-token") != token:
            return (403, "InvalidToken", "The provided token is malformed or otherwise invalid."), ak
        if region != self.region or service != "s3":
            return (400, "AuthorizationHeaderMalformed",
                    "the region '%s' is wrong; expecting '%s'" % (region, self.region)), ak
        amzdate = headers.get("x-amz-date", "")
        if not re.match(r"\d{8}T\d{6}Z$", amzdate) or amzdate[:8] != date:
            return (403, "AccessDenied", "x-amz-date missing or not the credential's date"), ak
        t = datetime.datetime.strptime(amzdate, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc)
        if abs((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()) > self.skew:
            return (403, "RequestTimeTooSkewed", "the request time is too far from now"), ak
        payload = headers.get("x-amz-content-sha256")
        if payload is None:
            return (400, "InvalidRequest", "Missing required header for this request: "
                    "x-amz-content-sha256"), ak
        if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
            return (400, "XAmzContentSHA256Mismatch", "the payload hash is wrong"), ak
        signed = signed_s.split(";")
        if signed != sorted(signed) or "host" not in signed:
            return (403, "AccessDenied", "SignedHeaders must be sorted and include host"), ak
        for h in headers:
            if h.startswith("x-amz-") and h not in signed:
                return (403, "AccessDenied", "header %s is not signed" % h), ak
        missing = [h for h in signed if h not in headers]
        if missing:
            return (403, "AccessDenied", "signed header(s) %s missing" % missing), ak
        scope = "%s/%s/%s/aws4_request" % (date, region, service)
        path = urllib.parse.unquote(raw_path)
        sts, creq = string_to_sign(method, path, parse_query(raw_query), headers, signed,
                                   payload, amzdate, scope)
        want = hmac.new(signing_key(secret, date, region, service), sts.encode(),
                        hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, sig):
            with self.lock:
                self.mismatches.append({"canonical_request": creq, "headers": headers,
                                        "raw_path": raw_path, "raw_query": raw_query})
            return (403, "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature you "
                    "provided. Check your key and signing method."), ak
        return "ok", ak

    def start(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                raw_path, _, raw_query = self.path.partition("?")
                headers = {k.lower(): v for k, v in self.headers.items()}
                verdict, ak = proxy.verify(self.command, raw_path, raw_query, headers, body)
                rec = dict(method=self.command, path=urllib.parse.unquote(raw_path),
                           query=parse_query(raw_query), signed="authorization" in headers,
                           access_key=ak, verdict=verdict if isinstance(verdict, str) else verdict[1],
                           status="pending")
                # recorded before answering: a client that exits on the answer finds it there
                with proxy.lock:
                    proxy.records.append(S3Record(**rec))
                    i = len(proxy.records) - 1
                if isinstance(verdict, tuple):
                    status, payload = _s3_error(verdict[1], verdict[2], verdict[0])
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                    rec["status"] = status
                else:
                    fwd = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "keep-alive",
                                                "proxy-connection", "te", "upgrade",
                                                "authorization")
                           and not k.lower().startswith("x-amz-")}
                    m = re.match(r"\s*bytes=-(\d+)\s*$", fwd.get("Range", ""))
                    if m and self.command == "GET" and proxy.fix_suffix_ranges:
                        # s3rver 3.7.1 answers "bytes=-N" with bytes 0-N (see the class doc):
                        # ask for the same bytes as an explicit range
                        h, _ = proxy.forward("HEAD", self.path, None, {})
                        size = int(h.getheader("Content-Length") or 0)
                        if h.status == 200 and size > 0 and int(m.group(1)) > 0:
                            fwd["Range"] = "bytes=%d-%d" % (max(0, size - int(m.group(1))),
                                                            size - 1)
                            with proxy.lock:
                                proxy.suffix_fixed += 1
                    with proxy.write_lock if self.command in ("PUT", "DELETE") else \
                            contextlib.nullcontext():
                        failed = proxy.precondition_failed(self.command, self.path, headers)
                        r, data = failed or proxy.forward(self.command, self.path, body or None,
                                                          fwd)
                    if (proxy.fix_common_prefixes and self.command == "GET" and r.status == 200
                            and "delimiter=" in raw_query):
                        data = proxy.add_common_prefixes(raw_path, raw_query, data)
                    self.send_response(r.status)
                    for k, v in r.getheaders():
                        if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                             "content-length", "date", "server"):
                            self.send_header(k, v)
                    if self.command == "HEAD":
                        self.send_header("Content-Length", r.getheader("Content-Length", "0"))
                    else:
                        self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    rec["status"] = r.status
                with proxy.lock:
                    proxy.records[i] = proxy.records[i]._replace(status=rec["status"])

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

        self.server = _ThreadingServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        _register(self)
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        with self.lock:
            for c in self._pool:
                c.close()
            self._pool = []
        _unregister(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


# ---------------------------------------------------------------------------------------------
# the fault-injecting HTTP server

FAULTS = ("ok", "500", "503", "429", "reset", "truncate", "stall", "norange")


class FaultServer:
    """Serves `root` over HTTP/1.1 with keep-alive, byte ranges, HTML index pages; injects
    faults. Faults, for one response:

      ok        healthy
      500 503   that status with a short body
      429       Too Many Requests with Retry-After: 0
      reset     status line, headers and half the body, then a TCP reset (SO_LINGER 0)
      truncate  Content-Length of the whole body, half of it sent, then the connection closed
      stall     nothing sent for `stall_seconds` (longer than the client's timeout), then close
      norange   a Range request answered 200 with the whole value (RFC 9110 allows ignoring Range)

    Schedules: `on_key(pattern, faults, then="ok")`: successive requests whose path (decoded,
    relative to root) matches the fnmatch pattern get the listed faults, then `then` for ever
    (then=None: the rule is removed); `on_request(n, fault)`: the n-th request (1-based, counted
    over the server's life) gets that fault; `random_faults(rng, p, kinds, pattern)`: each matching
    request gets a random fault with probability p. Every request is recorded in `log` as
    (n, method, path, range, fault, status)."""

    Entry = collections.namedtuple("Entry", "n method path range fault status")

    def __init__(self, root, stall_seconds=4.0, listing=True):
        self.root = os.path.abspath(root)
        self.stall_seconds = stall_seconds
        self.listing = listing
        self.lock = threading.Lock()
        self.rules = []          # [pattern, deque of faults, then]
        self.by_number = {}
        self.random = None
        self.n = 0
        self.log = []
        self.stopping = threading.Event()
        self.server = None
        self.port = None

    def __repr__(self):
        return "FaultServer(port %s)" % self.port

    def url(self, path=""):
        return "http://127.0.0.1:%d/%s" % (self.port, urllib.parse.quote(path))

    # -- schedules
    def on_key(self, pattern, faults, then="ok"):
        if isinstance(faults, str):
            faults = [faults]
        with self.lock:
            self.rules.append([pattern, collections.deque(faults), then])

    def on_request(self, n, fault):
        with self.lock:
            self.by_number[n] = fault

    def random_faults(self, rng, p, kinds, pattern="*"):
        with self.lock:
            self.random = (rng, p, list(kinds), pattern)

    def heal(self):
        with self.lock:
            self.rules = []
            self.by_number = {}
            self.random = None

    def entries(self, pattern="*", since=0):
        with self.lock:
            return [e for e in self.log[since:] if fnmatch.fnmatchcase(e.path, pattern)]

    def mark(self):
        with self.lock:
            return len(self.log)

    def _choose(self, path):
        with self.lock:
            self.n += 1
            n = self.n
            if n in self.by_number:
                return n, self.by_number.pop(n)
            for rule in self.rules:
                pattern, q, then = rule
                if fnmatch.fnmatchcase(path, pattern):
                    if q:
                        return n, q.popleft()
                    if then is None:
                        self.rules.remove(rule)
                        break
                    return n, then
            if self.random is not None:
                rng, p, kinds, pattern = self.random
                if fnmatch.fnmatchcase(path, pattern) and rng.random() < p:
                    return n, rng.choice(kinds)
            return n, "ok"

    def _record(self, *a):
        """Recorded when the request arrives (a stalled one is visible at once)."""
        with self.lock:
            self.log.append(self.Entry(*a))
            return len(self.log) - 1

    def _set_status(self, i, status):
        with self.lock:
            self.log[i] = self.log[i]._replace(status=status)

    # -- serving
    def start(self):
        fs = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "zarrfs-faults/1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self._serve(head=True)

            def do_GET(self):
                self._serve(head=False)

            def _resolve(self, raw_path):
                rel = urllib.parse.unquote(raw_path.split("?", 1)[0]).lstrip("/")
                parts = [p for p in rel.split("/") if p]
                if any(p in (".", "..") for p in parts):
                    return rel, None
                return rel, os.path.join(fs.root, *parts)

            def _send_simple(self, status, body, extra=()):
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _serve(self, head):
                rel, fspath = self._resolve(self.path)
                rng_hdr = self.headers.get("Range", "")
                n, fault = fs._choose(rel)
                i = fs._record(n, self.command, rel, rng_hdr, fault, "pending")
                status = "error"
                try:
                    status = self._respond(rel, fspath, rng_hdr, fault, head)
                finally:
                    fs._set_status(i, status)

            def _respond(self, rel, fspath, rng_hdr, fault, head):
                if fault in ("500", "503"):
                    self._send_simple(int(fault), b"injected fault %s\n" % fault.encode())
                    return int(fault)
                if fault == "429":
                    self._send_simple(429, b"slow down\n", [("Retry-After", "0")])
                    return 429
                if fault == "stall":
                    fs.stopping.wait(fs.stall_seconds)
                    self.close_connection = True
                    return "stall"
                if fspath is None:
                    self._send_simple(400, b"bad path\n")
                    return 400
                if os.path.isdir(fspath):
                    if not fs.listing:
                        self._send_simple(404, b"no listing\n")
                        return 404
                    if not self.path.split("?", 1)[0].endswith("/") and rel:
                        loc = "/" + urllib.parse.quote(rel) + "/"
                        self._send_simple(301, b"", [("Location", loc)])
                        return 301
                    body = self._listing(fspath, rel)
                    return self._send_body(200, body, [("Content-Type", "text/html; charset=utf-8")],
                                           fault, head)
                if not os.path.isfile(fspath):
                    self._send_simple(404, b"not found\n")
                    return 404
                with open(fspath, "rb") as f:
                    data = f.read()
                size = len(data)
                extra = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                         ("Last-Modified", self.date_time_string(int(os.stat(fspath).st_mtime)))]
                if rng_hdr and fault != "norange":
                    r = parse_range(rng_hdr, size)
                    if r == "unsatisfiable":
                        self._send_simple(416, b"", [("Content-Range", "bytes */%d" % size)])
                        return 416
                    if r is not None:
                        a, b = r
                        extra.append(("Content-Range", "bytes %d-%d/%d" % (a, b, size)))
                        return self._send_body(206, data[a:b + 1], extra, fault, head)
                return self._send_body(200, data, extra, fault, head)

            def _send_body(self, status, body, extra, fault, head):
                self.send_response(status)
                for k, v in extra:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if head:
                    return status
                if fault == "reset":
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return "reset"
                if fault == "truncate":
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return "truncate"
                self.wfile.write(body)
                return status

            def _listing(self, fspath, rel):
                names = sorted(os.listdir(fspath))
                out = io.StringIO()
                title = html.escape("Directory listing for /" + rel)
                out.write("<!DOCTYPE HTML>\n<html>\n<head><title>%s</title></head>\n<body>\n"
                          "<h1>%s</h1>\n<hr>\n<ul>\n" % (title, title))
                for name in names:
                    full = os.path.join(fspath, name)
                    disp = name + ("/" if os.path.isdir(full) else "")
                    out.write('<li><a href="%s">%s</a></li>\n'
                              % (urllib.parse.quote(disp), html.escape(disp)))
                out.write("</ul>\n<hr>\n</body>\n</html>\n")
                return out.getvalue().encode("utf-8")

        self.server = _ThreadingServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        _register(self)
        return self

    def stop(self):
        self.stopping.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        _unregister(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def parse_range(h, size):
    """(first, last) of a single 'bytes=' range, 'unsatisfiable', or None (ignored)."""
    m = re.match(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", h)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None
    a, b = m.group(1), m.group(2)
    if a == "":
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    a = int(a)
    if a >= size:
        return "unsatisfiable"
    last = size - 1 if b == "" else min(int(b), size - 1)
    if last < a:
        return None
    return a, last


# --------------------------------------------------------------------------------------------
# the AWS environment of the zarrfs daemons a test starts

AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
            "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL")


@contextlib.contextmanager
def aws_env(**kw):
    """os.environ (inherited by the zarrfs started inside) with no AWS_* variable but kw, and a
    HOME without ~/.aws (a new directory, yielded; a test may keep files there for later mounts:
    it is removed when the process exits); restored afterwards."""
    saved = {k: os.environ.get(k) for k in AWS_VARS + ("HOME",)}
    home = tempfile.mkdtemp(prefix="zarrfs-s3-home-")
    atexit.register(shutil.rmtree, home, True)
    try:
        for k in AWS_VARS:
            os.environ.pop(k, None)
        os.environ["HOME"] = home
        os.environ.update(kw)
        yield home
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
