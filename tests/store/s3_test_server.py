"""A small S3 for the S3 store's unit tests (test_remote_s3.c) that checks SigV4 signatures.

Usage: s3_test_server.py DIRECTORY ACCESS_KEY SECRET_KEY REGION [SESSION_TOKEN]. Serves the
buckets that are folders of DIRECTORY path-style (http://127.0.0.1:PORT/BUCKET/KEY) on a free
port, prints the port, and serves until stdin closes (or 120 s pass).

Unlike s3rver 3.7.1, which accepts any V4 signature, every request must carry a valid AWS
Signature Version 4 computed as S3 computes it: the canonical URI and query re-encoded from their
decoded form (so a client must encode as SigV4 does), headers host, x-amz-date and
x-amz-content-sha256 (and x-amz-security-token, when a session token is configured) signed, the
scope naming REGION and service s3. Otherwise 403 with an S3 error document (AccessDenied for an
unsigned request, InvalidAccessKeyId, SignatureDoesNotMatch).

Served: GET/HEAD of objects (files below DIRECTORY/BUCKET) with single byte ranges (a-b, a-, -n)
and 416; 404 NoSuchKey / NoSuchBucket; ListObjectsV2 with prefix, delimiter, max-keys,
continuation-token (tokens with "+", "/" and "=" in them). PUT of an object (stored as the file,
parents made, replaced atomically; Content-Length required, a payload hash other than
UNSIGNED-PAYLOAD checked against the body, "Expect: 100-continue" refused for bodies up to
1 MiB, which clients have no reason to hold back), DELETE (204 whether or not it was there,
empty parent folders removed). Keys with a segment "flaky" answer 503 SlowDown twice first
(counted per method and key, GET and HEAD together), keys with a segment "broken" answer PUT and
DELETE with 500 InternalError always. Keys with a segment "huge" need no file: GET and HEAD
answer 200 with Content-Length 512 MiB + 1 (a metadata document just over zarrfs's bound), and a
GET then sends that many bytes, until the client goes away; what it managed to hand to the kernel
is written, once it stopped, to DIRECTORY/huge.sent.
"""
import base64
import datetime
import hashlib
import hmac
import http.server
import os
import re
import sys
import threading
import urllib.parse
from xml.sax.saxutils import escape

ROOT, ACCESS, SECRET, REGION = sys.argv[1:5]
TOKEN = sys.argv[5] if len(sys.argv) > 5 else None
COUNTS = {}
LOCK = threading.Lock()
PUT_LOCK = threading.Lock()


def etag(data):
    return '"%s"' % hashlib.md5(data).hexdigest()


def uri_encode(s, keep_slash):
    safe = "-_.~" + ("/" if keep_slash else "")
    return urllib.parse.quote(s, safe=safe)


def parse_query(raw):
    """Name-value pairs of a query string, percent-decoded ('+' is no space in S3)."""
    out = []
    for part in raw.split("&") if raw else []:
        k, _, v = part.partition("=")
        out.append((urllib.parse.unquote(k), urllib.parse.unquote(v)))
    return out


def sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def s3_error(self, code, status, message):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
                "<Message>%s</Message><RequestId>0</RequestId></Error>"
                % (code, escape(message))).encode()
        self.send(status, body, [("Content-Type", "application/xml")])

    def check_signature(self, raw_path, raw_query):
        auth = self.headers.get("Authorization")
        if not auth:
            return "AccessDenied", "Access Denied"
        m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request,"
                         r" ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})", auth)
        if not m:
            return "AuthorizationHeaderMalformed", "malformed Authorization: " + auth[:40]
        key, date, region, signed, signature = m.groups()
        if key != ACCESS:
            return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist"
        if region != REGION:
            return "AuthorizationHeaderMalformed", "the region '%s' is wrong; expecting '%s'" % (
                region, REGION)
        names = signed.split(";")
        needed = ["host", "x-amz-content-sha256", "x-amz-date"]
        if TOKEN:
            needed.append("x-amz-security-token")
            if self.headers.get("x-amz-security-token") != TOKEN:
                return "InvalidToken", "The provided token is malformed or otherwise invalid."
        if any(n not in names for n in needed) or names != sorted(names):
            return "AccessDenied", "signed headers: " + signed
        amz_date = self.headers.get("x-amz-date", "")
        if not amz_date.startswith(date):
            return "AccessDenied", "x-amz-date does not match the scope"
        t = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
        if abs((datetime.datetime.utcnow() - t).total_seconds()) > 900:
            return "RequestTimeTooSkewed", "The difference between the request time and the "\
                   "current time is too large."
        path = uri_encode(urllib.parse.unquote(raw_path), True)
        params = parse_query(raw_query)
        query = "&".join("%s=%s" % (k, v) for k, v in sorted(
            (uri_encode(k, False), uri_encode(v, False)) for k, v in params))
        headers = "".join("%s:%s\n" % (n, " ".join((self.headers.get(n) or "").split()))
                          for n in names)
        canonical = "\n".join([self.command, path, query, headers, signed,
                               self.headers.get("x-amz-content-sha256", "")])
        scope = "%s/%s/s3/aws4_request" % (date, REGION)
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        k = sign(("AWS4" + SECRET).encode(), date)
        for part in (REGION, "s3", "aws4_request"):
            k = sign(k, part)
        if hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest() != signature:
            return "SignatureDoesNotMatch", ("The request signature we calculated does not "
                                             "match the signature you provided. Check your key "
                                             "and signing method.")
        return None

    def do_HEAD(self):
        self.handle_request()

    def do_GET(self):
        self.handle_request()

    def do_PUT(self):
        self.handle_request()

    def do_DELETE(self):
        self.handle_request()

    def handle_request(self):
        body = None
        if self.command == "PUT":
            if "Content-Length" not in self.headers:
                self.close_connection = True
                return self.s3_error("MissingContentLength", 411, "You must provide the "
                                     "Content-Length HTTP header.")
            body = self.rfile.read(int(self.headers["Content-Length"]))
        raw_path, _, raw_query = self.path.partition("?")
        failure = self.check_signature(raw_path, raw_query)
        if failure:
            return self.s3_error(failure[0], 403 if failure[0] != "AuthorizationHeaderMalformed"
                                 else 400, failure[1])
        path = urllib.parse.unquote(raw_path)
        bucket, _, key = path.lstrip("/").partition("/")
        bdir = os.path.join(ROOT, bucket)
        if not bucket or "/" in bucket or not os.path.isdir(bdir):
            return self.s3_error("NoSuchBucket", 404, "The specified bucket does not exist")
        if not key and self.command in ("GET", "HEAD"):
            return self.list_objects(bdir, dict(parse_query(raw_query)))
        counter = key if self.command in ("GET", "HEAD") else (self.command, key)
        with LOCK:
            n = COUNTS[counter] = COUNTS.get(counter, 0) + 1
        if "flaky" in key.split("/") and n <= 2:
            return self.s3_error("SlowDown", 503, "Please reduce your request rate.")
        if self.command == "PUT":
            return self.put_object(bdir, key, body)
        if self.command == "DELETE":
            return self.delete_object(bdir, key)
        if "huge" in key.split("/"):
            return self.huge()
        fpath = os.path.join(bdir, key)
        if key.endswith("/") or not os.path.isfile(fpath):
            return self.s3_error("NoSuchKey", 404, "The specified key does not exist.")
        with open(fpath, "rb") as f:
            data = f.read()
        size = len(data)
        headers = [("Last-Modified", self.date_time_string(int(os.path.getmtime(fpath)))),
                   ("Content-Type", "binary/octet-stream"), ("Accept-Ranges", "bytes"),
                   ("ETag", etag(data))]
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if m and (m.group(1) or m.group(2)):
            a, b = m.group(1), m.group(2)
            if a == "":
                first, last = max(0, size - int(b)), size - 1
            else:
                first, last = int(a), min(int(b), size - 1) if b else size - 1
            if first >= size:
                return self.s3_error("InvalidRange", 416, "The requested range is not "
                                     "satisfiable")
            headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, size)))
            return self.send(206, data[first:last + 1], headers)
        return self.send(200, data, headers)

    def huge(self):
        size = (512 << 20) + 1
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "binary/octet-stream")
        self.end_headers()
        if self.command == "HEAD":
            return
        block, sent = b" " * (256 << 10), 0
        self.close_connection = True
        try:
            while sent < size:
                piece = block[:size - sent]
                self.wfile.write(piece)
                sent += len(piece)
        except OSError:
            pass
        finally:
            with open(os.path.join(ROOT, "huge.sent.tmp"), "w") as f:
                f.write(str(sent))
            os.replace(os.path.join(ROOT, "huge.sent.tmp"), os.path.join(ROOT, "huge.sent"))

    def object_path(self, bdir, key):
        """The file of key, or None (with an error sent) for a key this server cannot store."""
        parts = key.split("/")
        if not key or any(p in ("", ".", "..") for p in parts):
            self.s3_error("InvalidArgument", 400, "this test server stores no such key")
            return None
        if "broken" in parts:
            self.s3_error("InternalError", 500, "We encountered an internal error. Please try "
                          "again.")
            return None
        return os.path.join(bdir, *parts)

    def put_object(self, bdir, key, body):
        sha = self.headers.get("x-amz-content-sha256", "")
        if sha != "UNSIGNED-PAYLOAD" and sha != hashlib.sha256(body).hexdigest():
            return self.s3_error("XAmzContentSHA256Mismatch", 400, "The provided "
                                 "'x-amz-content-sha256' header does not match what was "
                                 "computed.")
        if self.headers.get("Expect", "").lower() == "100-continue" and len(body) <= 1 << 20:
            return self.s3_error("InvalidArgument", 400, "Expect: 100-continue for a body of "
                                 "%d bytes" % len(body))
        fpath = self.object_path(bdir, key)
        if fpath is None:
            return
        with PUT_LOCK:  # S3 conditional writes: the check and the write as one step
            return self.store_object(fpath, body)

    def store_object(self, fpath, body):
        if_match, if_none = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        if if_match is not None or if_none is not None:
            cur = None
            if os.path.isfile(fpath):
                with open(fpath, "rb") as f:
                    cur = etag(f.read())
            if (if_none == "*" and cur is not None) or (if_match is not None and
                                                         if_match != cur):
                return self.s3_error("PreconditionFailed", 412, "At least one of the "
                                     "pre-conditions you specified did not hold")
        try:
            os.makedirs(os.path.dirname(fpath), exist_ok=True)
            tmp = "%s.tmp-%d" % (fpath, threading.get_ident())
            with open(tmp, "wb") as f:
                f.write(body)
            os.replace(tmp, fpath)
        except OSError as e:
            return self.s3_error("InternalError", 500, "cannot store it here: %s" % e)
        self.send(200, b"", [("ETag", etag(body))])

    def delete_object(self, bdir, key):
        fpath = self.object_path(bdir, key)
        if fpath is None:
            return
        with PUT_LOCK:
            return self.remove_object(bdir, fpath)

    def remove_object(self, bdir, fpath):
        if_match = self.headers.get("If-Match")
        if if_match is not None:
            if not os.path.isfile(fpath):
                return self.s3_error("NoSuchKey", 404, "The specified key does not exist.")
            with open(fpath, "rb") as f:
                if etag(f.read()) != if_match:
                    return self.s3_error("PreconditionFailed", 412, "At least one of the "
                                         "pre-conditions you specified did not hold")
        if os.path.isfile(fpath):
            os.remove(fpath)
            d = os.path.dirname(fpath)
            while d != bdir and not os.listdir(d):
                os.rmdir(d)
                d = os.path.dirname(d)
        self.send(204)

    def list_objects(self, bdir, q):
        if q.get("list-type") != "2":
            return self.s3_error("NotImplemented", 501, "only ListObjectsV2")
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        max_keys = int(q.get("max-keys", "1000"))
        start = ""
        if "continuation-token" in q:
            tok = q["continuation-token"]
            if not tok.startswith("tok/") or not tok.endswith("+="):
                return self.s3_error("InvalidArgument", 400, "The continuation token provided "
                                     "is incorrect")
            start = base64.b64decode(tok[4:-2]).decode()
        keys = []
        for d, _, files in os.walk(bdir):
            for f in files:
                keys.append(os.path.relpath(os.path.join(d, f), bdir))
        names = set()
        for k in keys:
            if not k.startswith(prefix):
                continue
            rest = k[len(prefix):]
            if delim and delim in rest:
                names.add((prefix + rest[:rest.index(delim) + len(delim)], True))
            else:
                names.add((k, False))
        names = sorted(n for n in names if n[0] > start)
        page, more = names[:max_keys], len(names) > max_keys
        out = ['<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
               'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>"
               % (escape(os.path.basename(bdir)), escape(prefix), len(page), max_keys),
               "<Delimiter>%s</Delimiter><IsTruncated>%s</IsTruncated>"
               % (escape(delim), "true" if more else "false")]
        if more:
            tok = "tok/" + base64.b64encode(page[-1][0].encode()).decode() + "+="
            out.append("<NextContinuationToken>%s</NextContinuationToken>" % escape(tok))
        for name, is_prefix in page:
            if is_prefix:
                out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % escape(name))
            else:
                out.append("<Contents><Key>%s</Key><Size>%d</Size></Contents>" % (
                    escape(name), os.path.getsize(os.path.join(bdir, name))))
        out.append("</ListBucketResult>")
        self.send(200, "".join(out).encode(), [("Content-Type", "application/xml")])


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    t = threading.Thread(target=sys.stdin.read, daemon=True)
    t.start()
    t.join(120)
    server.shutdown()


if __name__ == "__main__":
    main()
