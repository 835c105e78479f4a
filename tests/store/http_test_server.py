"""An HTTP/1.1 file server for the HTTP store's unit tests (test_remote_http.c).

Usage: http_test_server.py DIRECTORY. Serves DIRECTORY on 127.0.0.1 at a free port, prints the
port on stdout, and serves until stdin closes (or 60 s pass), so it never outlives its test.

Directory pages are those of Python's http.server; single byte ranges (bytes=a-b, a-, -n) are
served as 206 with Content-Range, or 416 with "bytes */size". Files carry Last-Modified and an
ETag made of their mtime (ns) and size, as nginx's (s) and size. The first path segment selects a
fault (counted per path and method):
  flaky/...      500 for the first two requests, then the file
  truncate/...   the first GET sends the headers and only 1000 bytes of the body, then closes
  truncated/...  every GET does that
  short206/...   the first range GET answers 206 with half the range asked (Content-Range says so)
  fail/...       503 always
  slow/...       sleeps 3 s first
  norange/...    ignores Range (200 with the whole file)
  forbidden/...  403
  chunked/...    GET without Content-Length (chunked), HEAD without Content-Length
  text/...       directories are answered as text/plain
"""
import http.server
import os
import re
import sys
import threading
import time

COUNTS = {}
LOCK = threading.Lock()


def count(key):
    with LOCK:
        COUNTS[key] = COUNTS.get(key, 0) + 1
        return COUNTS[key]


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def fault(self):
        return self.path.lstrip("/").split("/", 1)[0]

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def error(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def serve(self, head):
        fault = self.fault()
        n = count((self.command, self.path))
        if fault == "flaky" and n <= 2:
            return self.error(500, b"oops")
        if fault == "fail":
            return self.error(503, b"down")
        if fault == "forbidden":
            return self.error(403, b"no")
        if fault == "slow":
            time.sleep(3)
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            if fault == "text" and self.path.endswith("/"):
                body = b"a\nb\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)
                return
            return super().do_HEAD() if head else super().do_GET()
        if not os.path.isfile(path) or self.path.endswith("/"):
            return self.error(404, b"not found")
        with open(path, "rb") as f:
            data = f.read()
        size = len(data)
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng or "")
        if m and fault != "norange" and (m.group(1) or m.group(2)):
            a, b = m.group(1), m.group(2)
            if a == "":
                first, last = max(0, size - int(b)), size - 1
            else:
                first = int(a)
                last = min(int(b), size - 1) if b else size - 1
            if first >= size or size == 0:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if fault == "short206" and not head and count(("short", self.path)) == 1:
                last = first + (last - first) // 2
            body = data[first:last + 1]
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        st = os.stat(path)
        self.send_header("Last-Modified", self.date_time_string(int(st.st_mtime)))
        self.send_header("ETag", '"%x-%x"' % (st.st_mtime_ns, st.st_size))
        if fault == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if not head:
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if body else
                                 b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if (fault == "truncate" and n == 1) or fault == "truncated":
            self.wfile.write(body[:1000])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


def main():
    directory = sys.argv[1]

    def handler(*args, **kwargs):
        return Handler(*args, directory=directory, **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # until the test closes our stdin (or dies), at most 60 s
    t = threading.Thread(target=sys.stdin.read, daemon=True)
    t.start()
    t.join(60)
    server.shutdown()


if __name__ == "__main__":
    main()
