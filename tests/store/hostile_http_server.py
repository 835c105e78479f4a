"""A hostile HTTP server for test_hostile_http.c: redirects across origins and to other schemes,
redirect loops, endless and huge headers, answers that drip a byte at a time, wrong Content-Range
answers and bodies longer than they say.

Usage: hostile_http_server.py. Listens on two free ports of 127.0.0.1: MAIN, which plays the
hostile server, and OTHER, a second origin (another port is another origin) that records every
request it gets. Prints "MAIN OTHER", then serves until stdin closes (or 120 s pass).

MAIN answers by the first path segment it knows (anything before it, such as an S3 bucket, is
ignored), and the value served is always VALUE (4096 bytes, byte i = (i * 7 + 3) mod 256, as the
test's pattern):

  ok/...              VALUE, HTTP/1.1 keep-alive, single byte ranges (206, 416)
  to-other/...        307 to http://127.0.0.1:OTHER/ok/...
  to-other-name/...   307 to http://localhost:OTHER/ok/... (another host name, same server)
  to-same/...         307 to /ok/... (a relative Location on the same origin)
  to-file/...         302 to file:///etc/passwd
  to-ftp/...          302 to ftp://127.0.0.1:OTHER/x
  loop/...            302 to itself
  headers-endless/... a status line, then header lines for ever (1000 bytes each)
  header-huge/...     one header line of 4 MiB
  drip-body/...       VALUE with its Content-Length, one byte every 0.5 s
  drip-headers/...    the response headers one byte every 0.5 s
  wrong-range/...     a Range a-b answered 206 with bytes (and Content-Range) a+1 to b+1
  range-longer/...    206 with the Content-Range asked for and 16 bytes more than it says
  range-shorter/...   206 with the Content-Range asked for and half its bytes
  cl-smaller/...      200, Content-Length 100, then all of VALUE (keep-alive)
  huge-cl/...         200, Content-Length 1 TiB, then VALUE and close
  endless-body/...    200 without Content-Length, the body for ever (connection close)
  big-cl/N/...        200, Content-Length N, then N bytes of VALUE repeated (HEAD: the headers)
  no-length/N/...     200 without Content-Length, N bytes of VALUE repeated, then close
  _sent/MODE          "BYTES DONE": the bytes of the body that the latest big-cl or no-length
                      request (MODE) handed to the kernel, and 1 once its sending ended (the body
                      sent whole, or the client gone), else 0
  list-endless        an S3 ListObjectsV2 answer (list-type=2 in the query) with one common
                      prefix and a new continuation token, for ever; list-empty-pages the same
                      without the prefix
  echo-auth/...       200, the body the request's Authorization header ("-" when it has none)
  _other_log          what OTHER received so far: each request's head as received, then a blank
                      line

OTHER answers every request with 200 and the body "other origin".
"""
import select
import socketserver
import sys
import threading
import time

VALUE = bytes((i * 7 + 3) & 0xFF for i in range(4096))
OTHER_LOG = []
SENT = {}
LOCK = threading.Lock()
PORTS = {}


def read_head(rfile):
    """(request line, [(name, value)], raw head) or None at the end of the connection."""
    line = rfile.readline(65537)
    if not line:
        return None
    raw = [line]
    headers = []
    while True:
        h = rfile.readline(65537)
        if not h:
            return None
        raw.append(h)
        if h in (b"\r\n", b"\n"):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return line.decode("latin-1").strip(), headers, b"".join(raw)


def parse_range(value):
    if not value.startswith("bytes="):
        return None
    a, _, b = value[6:].partition("-")
    if a == "":
        n = int(b)
        return max(0, len(VALUE) - n), len(VALUE) - 1
    a = int(a)
    b = int(b) if b else len(VALUE) - 1
    return a, min(b, len(VALUE) - 1)


class Main(socketserver.StreamRequestHandler):
    def send(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def answer(self, status, headers, body=b""):
        head = "HTTP/1.1 %s\r\n" % status
        for k, v in headers:
            head += "%s: %s\r\n" % (k, v)
        self.send(head.encode() + b"\r\n" + body)

    def stream(self, mode, head, n):
        """Send head, then n bytes of VALUE repeated, counting them in SENT[mode]."""
        block = VALUE * 64  # 256 KiB
        with LOCK:
            SENT[mode] = [0, 0]
        try:
            self.send(head)
            left = n
            while left > 0:
                piece = block if left >= len(block) else block[:left]
                self.send(piece)
                left -= len(piece)
                with LOCK:
                    SENT[mode][0] += len(piece)
        finally:
            with LOCK:
                SENT[mode][1] = 1

    def redirect(self, code, location):
        self.answer("%d Redirect" % code, [("Location", location), ("Content-Length", "0")])

    def handle(self):
        try:
            while self.one():
                pass
        except (OSError, ValueError):
            pass

    def one(self):
        req = read_head(self.rfile)
        if req is None:
            return False
        line, headers, _ = req
        method, target = line.split(" ")[:2]
        hdr = dict(headers)
        segs = [s for s in target.split("?")[0].split("/") if s]
        known = ("ok", "to-other", "to-other-name", "to-same", "to-file", "to-ftp", "loop",
                 "headers-endless",
                 "header-huge", "drip-body", "drip-headers", "wrong-range", "range-longer",
                 "range-shorter", "cl-smaller", "huge-cl", "endless-body", "_other_log",
                 "list-endless", "list-empty-pages", "echo-auth", "big-cl", "no-length",
                 "_sent")
        i = next((k for k, s in enumerate(segs) if s in known), None)
        mode = segs[i] if i is not None else "missing"
        rest = "/".join(segs[i + 1:]) if i is not None else ""
        body = b"" if method == "HEAD" else VALUE
        rng = parse_range(hdr["range"]) if "range" in hdr else None
        if mode in ("list-endless", "list-empty-pages"):
            n = int(target.partition("continuation-token=t")[2].partition("&")[0] or 0) + 1
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>"
                   "<Name>b</Name><IsTruncated>true</IsTruncated>"
                   "<NextContinuationToken>t%d</NextContinuationToken>%s</ListBucketResult>"
                   % (n, "" if mode == "list-empty-pages"
                      else "<CommonPrefixes><Prefix>p%d/</Prefix></CommonPrefixes>" % n)).encode()
            self.answer("200 OK", [("Content-Type", "application/xml"),
                                   ("Content-Length", str(len(xml)))], xml)
        elif mode == "echo-auth":
            auth = hdr.get("authorization", "-").encode("latin-1")
            self.answer("200 OK", [("Content-Length", str(len(auth)))],
                        b"" if method == "HEAD" else auth)
        elif mode == "_sent":
            with LOCK:
                sent = SENT.get(rest, [0, 1])
            text = b"%d %d" % (sent[0], sent[1])
            self.answer("200 OK", [("Content-Length", str(len(text)))], text)
        elif mode in ("big-cl", "no-length"):
            n = int(rest.split("/")[0])
            if mode == "big-cl":
                head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n
            else:
                head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
            if method == "HEAD":
                self.send(head)
                return mode == "big-cl"
            self.stream(mode, head, n)
            return False
        elif mode == "_other_log":
            with LOCK:
                log = b"".join(OTHER_LOG)
            self.answer("200 OK", [("Content-Length", str(len(log)))], log)
        elif mode == "ok":
            if rng is not None:
                a, b = rng
                if a >= len(VALUE):
                    self.answer("416 Range Not Satisfiable",
                                [("Content-Range", "bytes */%d" % len(VALUE)),
                                 ("Content-Length", "0")])
                    return True
                part = VALUE[a:b + 1]
                self.answer("206 Partial Content",
                            [("Content-Range", "bytes %d-%d/%d" % (a, b, len(VALUE))),
                             ("Content-Length", str(len(part)))],
                            b"" if method == "HEAD" else part)
            else:
                self.answer("200 OK", [("Content-Length", str(len(VALUE)))], body)
        elif mode == "to-other":
            self.redirect(307, "http://127.0.0.1:%d/ok/%s" % (PORTS["other"], rest))
        elif mode == "to-other-name":
            self.redirect(307, "http://localhost:%d/ok/%s" % (PORTS["other"], rest))
        elif mode == "to-same":
            self.redirect(307, "/ok/%s" % rest)
        elif mode == "to-file":
            self.redirect(302, "file:///etc/passwd")
        elif mode == "to-ftp":
            self.redirect(302, "ftp://127.0.0.1:%d/x" % PORTS["other"])
        elif mode == "loop":
            self.redirect(302, target)
        elif mode == "headers-endless":
            self.send(b"HTTP/1.1 200 OK\r\n")
            for n in range(64 * 1024):   # 64 MiB at most, if the client never stops reading
                self.send(b"X-Junk-%d: %s\r\n" % (n, b"j" * 980))
            return False
        elif mode == "header-huge":
            self.send(b"HTTP/1.1 200 OK\r\nX-Huge: " + b"h" * (4 << 20) + b"\r\n"
                      b"Content-Length: 4096\r\n\r\n" + VALUE)
            return False
        elif mode == "drip-body":
            self.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(VALUE))
            for b in VALUE:
                self.send(bytes([b]))
                time.sleep(0.5)
            return False
        elif mode == "drip-headers":
            for b in b"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nX-Slow: " + b"s" * 1000:
                self.send(bytes([b]))
                time.sleep(0.5)
            return False
        elif mode in ("wrong-range", "range-longer", "range-shorter") and rng is not None:
            a, b = rng
            if mode == "wrong-range":
                a, b = a + 1, min(b + 1, len(VALUE) - 1)
            part = VALUE[a:b + 1]
            if mode == "range-longer":
                part = VALUE[a:b + 17]
            elif mode == "range-shorter":
                part = part[:len(part) // 2]
            self.answer("206 Partial Content",
                        [("Content-Range", "bytes %d-%d/%d" % (a, b, len(VALUE))),
                         ("Content-Length", str(len(part)))], part)
        elif mode == "cl-smaller":
            self.answer("200 OK", [("Content-Length", "100")], VALUE)
        elif mode == "huge-cl":
            self.answer("200 OK", [("Content-Length", str(1 << 40))], VALUE)
            return False
        elif mode == "endless-body":
            self.send(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            chunk = VALUE * 16
            for _ in range(64 * 16):     # 64 MiB at most
                self.send(chunk)
            return False
        else:
            self.answer("404 Not Found", [("Content-Length", "0")])
        return True


class Other(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            while True:
                req = read_head(self.rfile)
                if req is None:
                    return
                with LOCK:
                    OTHER_LOG.append(req[2] + b"\r\n")
                body = b"other origin"
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(body), body))
                self.wfile.flush()
        except (OSError, ValueError):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    main_srv = Server(("127.0.0.1", 0), Main)
    other_srv = Server(("127.0.0.1", 0), Other)
    PORTS["main"] = main_srv.server_address[1]
    PORTS["other"] = other_srv.server_address[1]
    for s in (main_srv, other_srv):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("%d %d" % (PORTS["main"], PORTS["other"]), flush=True)
    select.select([sys.stdin], [], [], 120)


if __name__ == "__main__":
    main()
