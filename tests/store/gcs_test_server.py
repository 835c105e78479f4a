"""A small Google Cloud Storage JSON API for the GCS store's unit tests (test_gcs.c), following
Google's documented protocol (https://cloud.google.com/storage/docs/json_api/v1/objects):

Usage: gcs_test_server.py TOKEN. Serves bucket "bkt" from memory on a free port of 127.0.0.1,
prints the port, and serves until stdin closes (or 120 s pass). Every request must carry
"Authorization: Bearer TOKEN" (else 401 with the JSON API's error document).

* objects.get: GET /storage/v1/b/bkt/o/NAME (metadata: size and generation as strings, updated
  in RFC 3339) and ?alt=media (single byte ranges a-b, a-, -n; 416; x-goog-generation);
* objects.list: GET /storage/v1/b/bkt/o with prefix, delimiter, maxResults (default 1000) and
  pageToken: items and prefixes together in name order, at most maxResults a page, an opaque
  nextPageToken; GET /stats answers the number of pages served and the maxResults values seen;
* media uploads: POST /upload/storage/v1/b/bkt/o?uploadType=media&name=NAME with optional
  ifGenerationMatch (0: must not exist), 412 when it does not hold; a new generation each time;
* objects.delete: DELETE /storage/v1/b/bkt/o/NAME with optional ifGenerationMatch; 404 when
  absent;
* other buckets: 404 "The specified bucket does not exist.".
"""
import base64
import json
import sys
import threading
import http.server
import urllib.parse

TOKEN = sys.argv[1]
OBJECTS = {}          # name -> (data, generation)
LOCK = threading.Lock()
STATS = {"pages": 0, "max_results": []}
GEN = [1700000000000000]


def error(code, message):
    return code, json.dumps({"error": {"code": code, "message": message}}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route(self, method):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if url.path == "/stats":
            with LOCK:
                return self.send(200, json.dumps(STATS).encode())
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.send(*error(401, "Invalid Credentials"))
        parts = url.path.split("/")
        upload = url.path.startswith("/upload/storage/v1/b/")
        if not (upload or url.path.startswith("/storage/v1/b/")) or len(parts) < 6:
            return self.send(*error(400, "bad path"))
        bucket = parts[5] if upload else parts[4]
        if bucket != "bkt":
            return self.send(*error(404, "The specified bucket does not exist."))
        name = q.get("name") if upload else (urllib.parse.unquote(parts[6])
                                             if len(parts) > 6 else None)
        cond = q.get("ifGenerationMatch")
        with LOCK:
            cur = OBJECTS.get(name) if name is not None else None
            if cond is not None and (cur[1] if cur else 0) != int(cond):
                return self.send(*error(412, "At least one of the pre-conditions you specified "
                                             "did not hold."))
            if method == "POST" and upload:
                GEN[0] += 1
                OBJECTS[name] = (body, GEN[0])
                return self.send(200, json.dumps({"name": name, "generation": str(GEN[0]),
                                                  "size": str(len(body))}).encode())
            if method == "DELETE" and name is not None:
                if not cur:
                    return self.send(*error(404, "No such object: bkt/" + name))
                del OBJECTS[name]
                return self.send(204, b"")
            if method == "GET" and name is None:
                return self.listing(q)
        if method != "GET" or not cur:
            return self.send(*error(404, "No such object: bkt/%s" % name))
        data, gen = cur
        if q.get("alt") != "media":
            return self.send(200, json.dumps({
                "kind": "storage#object", "name": name, "size": str(len(data)),
                "generation": str(gen), "updated": "2024-05-01T12:34:56.789Z"}).encode())
        hdr = [("x-goog-generation", str(gen)), ("Content-Type", "application/octet-stream")]
        rng = self.headers.get("Range")
        if not rng:
            return self.send(200, data, hdr)
        a, b = rng[len("bytes="):].split("-")
        if a == "":
            start, end = max(0, len(data) - int(b)), len(data) - 1
        else:
            start, end = int(a), (int(b) if b else len(data) - 1)
        if start >= len(data):
            return self.send(416, b"", [("Content-Range", "bytes */%d" % len(data))])
        end = min(end, len(data) - 1)
        return self.send(206, data[start:end + 1], hdr + [
            ("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))])

    def listing(self, q):
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        names = {}
        for name in OBJECTS:
            if not name.startswith(prefix):
                continue
            i = name.find(delim, len(prefix)) if delim else -1
            if i >= 0:
                names[name[:i + len(delim)]] = True
            else:
                names[name] = False
        order = sorted(names)
        size = int(q.get("maxResults") or 1000)
        STATS["pages"] += 1
        STATS["max_results"].append(q.get("maxResults"))
        start = 0
        if "pageToken" in q:
            after = base64.urlsafe_b64decode(q["pageToken"]).decode()
            start = next((i for i, n in enumerate(order) if n > after), len(order))
        page = order[start:start + size]
        doc = {"kind": "storage#objects"}
        if any(not names[n] for n in page):
            doc["items"] = [{"name": n, "size": str(len(OBJECTS[n][0]))} for n in page
                            if not names[n]]
        if any(names[n] for n in page):
            doc["prefixes"] = [n for n in page if names[n]]
        if start + size < len(order):
            doc["nextPageToken"] = base64.urlsafe_b64encode(page[-1].encode()).decode()
        return self.send(200, json.dumps(doc).encode(), [("Content-Type", "application/json")])

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")


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
