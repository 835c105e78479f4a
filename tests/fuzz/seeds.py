#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets (tests/fuzz/fuzz_*.c) into OUTDIR/<target>/.

    /usr/bin/python3 tests/fuzz/seeds.py OUTDIR [FIXTURES] # FIXTURES: default tests/fixtures

Sources: the fixtures in FIXTURES (numcodecs' encoded chunks with their configurations,
zarr-python 2.18's and zarrita.js's v2/v3 stores and zip archives) and the integration suite's
generators (tests/integration/gen_v2.py: every v2 dtype, codec and layout, consolidated
metadata; test_draft2020.py and test_draft2022.py: both v3 drafts). Each seed is written in the
input format of its target (see the comment at the top of each fuzz_*.c); seeds larger than
MAX_SEED bytes are left out. Nothing here is kept in the repository: run it at build time
(scripts/fuzz.sh does). Needs Debian's python3 with numpy, numcodecs and zarr 2.13.
"""

import base64
import glob
import hashlib
import io
import json
import os
import struct
import sys
import tempfile
import zipfile

import numpy as np

os.environ.setdefault("ZARR_V3_EXPERIMENTAL_API", "1")  # zarr 2.13 writes the 2020 draft

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

MAX_SEED = 256 * 1024
SEP = b"\n%%zf%%\n"  # fuzz.h FZ_SEP
OUT = None
counts = {}


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    path = os.path.join(d, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        counts[target] = counts.get(target, 0) + 1


# scripts/fuzz.sh's -max_len of the consolidated target: a longer seed is cut there.
CONSOLIDATED_MAX = 4 * 1024


def put_consolidated(tag, doc, nodes):
    """For a consolidated-metadata seed (tag b"2" or b"3" + doc as JSON) longer than the
    target's -max_len, another: the same document listing only the first of its nodes (the dict
    nodes, inside doc) that fit."""
    text = json.dumps(doc).encode()
    keys = sorted(nodes)
    if len(tag + text) <= CONSOLIDATED_MAX:
        return
    while keys and len(tag + text) > CONSOLIDATED_MAX:
        del nodes[keys.pop()]
        text = json.dumps(doc).encode()
    if keys:
        put("consolidated", tag + text)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def compact(v):
    return json.dumps(v, separators=(",", ":"))


def tree_files(root):
    """key -> path of every file below root (keys '/'-separated, relative)."""
    out = {}
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for fn in sorted(fns):
            p = os.path.join(dp, fn)
            out[os.path.relpath(p, root).replace(os.sep, "/")] = p
    return out


# ---- metadata documents ------------------------------------------------------------------------

def v2_tree(root):
    files = tree_files(root)
    meta = {}
    for key, path in files.items():
        base = key.rsplit("/", 1)[-1]
        prefix = key[: -len(base)]
        if base == ".zarray":
            attrs = files.get(prefix + ".zattrs")
            doc = read(path)
            put("meta_v2", doc)
            if attrs:
                put("meta_v2", doc + b"\0" + read(attrs))
            codec_v2_seeds(doc, prefix, files)
        elif base == ".zgroup":
            attrs = files.get(prefix + ".zattrs")
            put("meta_v2", read(path) + (b"\0" + read(attrs) if attrs else b""))
        elif base == ".zmetadata":
            put("consolidated", b"2" + read(path))
            try:
                doc = json.loads(read(path))
                put_consolidated(b"2", doc, doc["metadata"])
            except (ValueError, KeyError, TypeError):
                pass
        if base in (".zarray", ".zgroup", ".zattrs"):
            try:
                meta[key] = json.loads(read(path))
            except ValueError:
                pass
    if ".zgroup" in meta:  # consolidated metadata as zarr-python writes it, from the tree
        put("consolidated", b"2" + json.dumps({"zarr_consolidated_format": 1, "metadata": meta},
                                              indent=4, sort_keys=True).encode())
        put_consolidated(b"2", {"zarr_consolidated_format": 1, "metadata": meta}, meta)
    hierarchy_seeds(files)


def codec_v2_seeds(zarray, prefix, files):
    try:
        doc = json.loads(zarray)
    except ValueError:
        return
    dt = doc.get("dtype")
    if not isinstance(dt, (str, list)) or not isinstance(doc.get("chunks"), list):
        return
    codecs = list(doc.get("filters") or []) + [doc.get("compressor")]
    cfg = codecs[0] if len(codecs) == 1 else codecs
    header = "%s %s %s\n" % (dt if isinstance(dt, str) else compact(dt),
                             ",".join(str(c) for c in doc["chunks"]) or "-",
                             doc.get("order", "C"))
    n = 0
    sep = doc.get("dimension_separator", ".")
    for key, path in sorted(files.items()):
        rest = key[len(prefix):]
        if key.startswith(prefix) and rest and rest[0].isdigit() and \
                all(p.isdigit() for p in rest.replace(sep, ".").replace("/", ".").split(".")):
            put("codec_v2", header.encode() + compact(cfg).encode() + b"\0" + read(path))
            n += 1
            if n >= 3:
                break


def v3_tree(root):
    files = tree_files(root)
    nodes = {}
    for key, path in files.items():
        if key == "zarr.json" or key.endswith("/zarr.json"):
            text = read(path)
            put("meta_v3", text)
            try:
                doc = json.loads(text)
            except ValueError:
                continue
            node = key[: -len("zarr.json")].rstrip("/")
            nodes[node] = doc
            if doc.get("node_type") == "array":
                codec_v3_seeds(doc, node, files)
    root_doc = nodes.get("")
    if root_doc and root_doc.get("node_type") == "group":  # consolidated as zarr-python 3 does
        cons = dict(root_doc)
        cons["consolidated_metadata"] = {
            "kind": "inline", "must_understand": False,
            "metadata": {k: v for k, v in sorted(nodes.items()) if k}}
        text = json.dumps(cons, indent=2).encode()
        put("meta_v3", text)
        put("consolidated", b"3" + text)
        put_consolidated(b"3", cons, cons["consolidated_metadata"]["metadata"])
        # the same as a store image: the root document and the chunks
        img = {"zarr.json": text}
        img.update({k: read(p) for k, p in files.items() if "/c" in k})
        put_image(img)
    hierarchy_seeds(files)


def codec_v3_seeds(doc, node, files):
    dt = doc.get("data_type")
    grid = doc.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    if not isinstance(dt, str) or not isinstance(grid, list):
        return
    fill = compact(doc.get("fill_value"))
    header = "%s %s %s\n" % (dt, ",".join(str(c) for c in grid) or "-", fill)
    prefix = node + "/" if node else ""
    n = 0
    for key, path in sorted(files.items()):
        if key.startswith(prefix + "c") and not key.endswith("zarr.json"):
            put("codec_v3", header.encode() + compact(doc.get("codecs", [])).encode() + b"\0" +
                read(path))
            n += 1
            if n >= 3:
                break


def put_image(entries):
    put("hierarchy", SEP.join(k.encode() + b"\n" + v for k, v in entries.items()))


def hierarchy_seeds(files):
    """Store images: the whole tree (metadata first, chunks while they fit) and each node's
    metadata with its own chunks."""
    meta = {k: p for k, p in files.items()
            if k.rsplit("/", 1)[-1] in (".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json")
            or k.startswith("meta/") or k == "zarr.json"}
    img, size = {}, 0
    for k, p in sorted(meta.items()):
        img[k] = read(p)
        size += len(img[k]) + 10
    for k, p in sorted(files.items()):
        if k not in meta and size + os.path.getsize(p) < MAX_SEED // 2:
            img[k] = read(p)
            size += len(img[k]) + 10
    put_image(img)
    for k in sorted(meta):  # one array at the store root, with up to 4 chunks
        base = k.rsplit("/", 1)[-1]
        if base not in (".zarray", "zarr.json") or k in (".zarray", "zarr.json"):
            continue
        prefix = k[: -len(base)]
        sub = {base: read(meta[k])}
        for k2, p in sorted(files.items()):
            if k2.startswith(prefix) and k2 != k and "/" not in k2[len(prefix):] and len(sub) < 5:
                sub[k2[len(prefix):]] = read(p)
        put_image(sub)


def draft_tree(root, draft):
    files = tree_files(root)
    for key, path in files.items():
        text = read(path)
        if key == "zarr.json":
            which = 0
        elif key.endswith(".group.json"):
            which = 1
        elif key.endswith(".array.json"):
            which = 2
        else:
            continue
        put("meta_draft", bytes([draft | which << 1]) + text)
    hierarchy_seeds(files)


# ---- codecs ------------------------------------------------------------------------------------

def numcodecs_seeds(root):
    for cdir in sorted(glob.glob(os.path.join(root, "*", "codec.*"))):
        cfg = json.loads(read(os.path.join(cdir, "config.json")))
        arrays = sorted(glob.glob(os.path.join(os.path.dirname(cdir), "array.*.npy")))
        for i, apath in enumerate(arrays):
            enc = os.path.join(cdir, "encoded.%02d.dat" % i)
            if not os.path.exists(enc):
                continue
            a = np.load(apath, allow_pickle=True)
            header = "%s %s\n" % (a.dtype.str, ",".join(str(s) for s in a.shape) or "-")
            # an object codec is a filter of an "|O" array (no compressor after it)
            chain = [cfg, None] if a.dtype.kind == "O" else cfg
            put("codec_v2", header.encode() + compact(chain).encode() + b"\0" + read(enc))


def object_codec_seeds():
    """Chunks of object arrays for codec_v2, written by Debian's numcodecs (the fixture keeps no
    encoded chunks of object codecs): strings, None, numbers, nested values, 1-D and 2-D."""
    import numcodecs
    strs = np.array(["a", "", "caf\u00e9", "tab\there", None, "x" * 40], dtype=object)
    mixed = np.array([None, 1, -2.5, "s", [1, [2.5, None]], {"k": "v"}, True, b"\x00\xff"],
                     dtype=object)
    arrays = [np.array([np.arange(3, dtype="<i4"), np.array([], dtype="<i4")], dtype=object)]
    cases = [(numcodecs.VLenUTF8(), strs[[0, 1, 2, 3, 5]]), (numcodecs.VLenBytes(),
             np.array([b"\x00", b"", b"\xff\xfe"], dtype=object)),
             (numcodecs.JSON(), mixed[:7]), (numcodecs.MsgPack(), mixed),
             (numcodecs.MsgPack(use_single_float=True), mixed[:4]),
             (numcodecs.MsgPack(), mixed[:6].reshape(2, 3)),
             (numcodecs.VLenArray("<i4"), arrays[0])]
    for codec, a in cases:
        header = "|O %s\n" % ",".join(str(n) for n in a.shape)
        cfg = [codec.get_config(), None]
        put("codec_v2", header.encode() + compact(cfg).encode() + b"\0" + codec.encode(a))


# ---- shards (fuzz_shard.c's table) ------------------------------------------------------------

def crc32c(data):
    import gen_v3_common
    return gen_v3_common.crc32c(data)


def shard_seeds():
    import gzip
    from numcodecs import Blosc, Zstd
    rng = np.random.default_rng(1)

    def build(chunks, index_crc, at_end, empty=()):
        body, index, off = b"", b"", 0
        nidx = 16 * len(chunks) + (4 if index_crc else 0)
        base = 0 if at_end else nidx
        for i, c in enumerate(chunks):
            if i in empty:
                index += struct.pack("<QQ", 2**64 - 1, 2**64 - 1)
                continue
            index += struct.pack("<QQ", base + off, len(c))
            body += c
            off += len(c)
        if index_crc:
            index += struct.pack("<I", crc32c(index))
        return body + index if at_end else index + body

    def crc(b):
        return b + struct.pack("<I", crc32c(b))

    i2 = [rng.integers(-100, 100, 1, dtype="<i2").tobytes() for _ in range(4)]
    seeds = {
        0: [build([gzip.compress(c) for c in i2], True, True),
            build([gzip.compress(c) for c in i2], True, True, empty=(1,))],
        1: [build([rng.integers(0, 255, 4, dtype="u1").tobytes() for _ in range(4)], False, False)],
        2: [build([Zstd(level=1).encode(rng.random(2, dtype="<f4").tobytes()) for _ in range(4)],
                  False, True)],
        3: [build([crc(rng.integers(0, 9, 1, dtype="<i4").astype(">i4").tobytes()) for _ in range(4)], True,
                  False)],
        5: [build([Blosc(cname="lz4", clevel=5, shuffle=1)
                   .encode(rng.integers(0, 999, 4, dtype="<u2")) for _ in range(4)],
                  True, True)],
        6: [build([rng.random(6, dtype="<f8").tobytes() for _ in range(4)], False, True)],
        7: [build([crc(bytes([1, 0])) for _ in range(4)], True, False)],
    }
    inner = [build([rng.integers(0, 999, 2, dtype="<u2").tobytes() for _ in range(2)], True, True)
             for _ in range(2)]
    seeds[4] = [build(inner, True, True)]
    for k, shards in seeds.items():
        for s in shards:
            put("shard", bytes([k]) + s)


# ---- remote listings, URLs, keys -------------------------------------------------------------

def listing_seeds(keys):
    names = sorted({k.split("/", 1)[0] + ("/" if "/" in k else "") for k in keys})
    from urllib.parse import quote
    import html
    nginx = "<html>\r\n<head><title>Index of /d/</title></head>\r\n<body>\r\n<h1>Index of /d/</h1>" \
            "<hr><pre><a href=\"../\">../</a>\r\n" + "".join(
                "<a href=\"%s\">%s</a>      03-Jan-2024 10:00     -\r\n" % (quote(n), html.escape(n))
                for n in names) + "</pre><hr></body>\r\n</html>\r\n"
    apache = "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html><head><title>" \
             "Index of /d</title></head><body><h1>Index of /d</h1><table><tr><th>" \
             "<a href=\"?C=N;O=D\">Name</a></th></tr><tr><td><a href=\"/\">Parent Directory</a>" \
             "</td></tr>\n" + "".join("<tr><td><a href=\"%s\">%s</a></td><td align=\"right\">" \
                                      "2024-01-03 10:00</td></tr>\n" % (quote(n), html.escape(n))
                                      for n in names) + "</table></body></html>\n"
    python = "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head><title>Directory listing for /d/</title>" \
             "</head>\n<body>\n<h1>Directory listing for /d/</h1>\n<hr>\n<ul>\n" + "".join(
                 "<li><a href=\"%s\">%s</a></li>\n" % (quote(n), html.escape(n)) for n in names) + \
             "</ul>\n<hr>\n</body>\n</html>\n"
    lighttpd = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<html><head><title>Index of /d/</title>" \
               "</head><body><table><tbody>" + "".join(
                   "<tr><td class=\"n\"><a href=\"%s\">%s</a></td></tr>" % (quote(n), html.escape(n))
                   for n in names) + "</tbody></table></body></html>"
    for page in (nginx, apache, python, lighttpd):
        put("http_index", page)

    from xml.sax.saxutils import escape
    for prefix in ("", names[0] if names and names[0].endswith("/") else ""):
        below = [k for k in keys if k.startswith(prefix)]
        direct = sorted({k[len(prefix):].split("/", 1)[0] for k in below if "/" in k[len(prefix):]})
        contents = "".join("<Contents><Key>%s</Key><LastModified>2024-01-03T10:00:00.000Z"
                           "</LastModified><ETag>&quot;abc&quot;</ETag><Size>12</Size>"
                           "<StorageClass>STANDARD</StorageClass></Contents>" % escape(k)
                           for k in below if "/" not in k[len(prefix):])
        cps = "".join("<CommonPrefixes><Prefix>%s/</Prefix></CommonPrefixes>" % escape(prefix + d)
                      for d in direct)
        for trunc in (False, True):
            doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://" \
                  "s3.amazonaws.com/doc/2006-03-01/\"><Name>bucket</Name><Prefix>%s</Prefix>" \
                  "<KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>" \
                  "<IsTruncated>%s</IsTruncated>%s%s%s</ListBucketResult>" % (
                      escape(prefix), len(below), "true" if trunc else "false", contents, cps,
                      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="
                      "</NextContinuationToken>" if trunc else "")
            put("s3_xml", prefix + "\n" + doc)
    put("s3_xml", "\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
                  "<Message>The specified bucket does not exist</Message><BucketName>b"
                  "</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>")

    urls = ["http://example.org/data.zarr", "https://user:secret@example.org:8443/a/b.zarr/",
            "s3://bucket/prefix/data.zarr", "s3://my.bucket/", "s3://bucket", "http://[::1]:8080/x",
            "https://h/a%20b/c?x=1#f", "file:///tmp/x.zarr", "s3:///nobucket"]
    endpoints = ["", "http://127.0.0.1:9000", "https://minio.example.org/", "ftp://x"]
    for i, k in enumerate(sorted(keys)[:40] + ["a/../b", "./x", "a//b", "a\\b", "/abs", "caf\u00e9/1.0"]):
        put("url_key", "%s\n%s\n%s" % (urls[i % len(urls)], endpoints[i % len(endpoints)], k))


# ---- archives and references ------------------------------------------------------------------

# Entries per generated archive: zarrfs's and libzip's code runs the same for 6 entries as for 40,
# and each entry is read three times per input (fuzz.h, fz_visit_key).
ZIP_ENTRIES = 6


def zip_seeds(trees):
    for z in sorted(glob.glob(os.path.join(FIXTURES, "zarrita-fixtures", "*", "*.zip"))):
        put("zip", read(z))
    for root in trees:
        files = sorted(tree_files(root).items())[:40]
        groups = [files[i:i + ZIP_ENTRIES] for i in range(0, len(files), ZIP_ENTRIES)]
        for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                       zipfile.ZIP_LZMA):
            for gi, group in enumerate(groups):
                top = "data.zarr/" if gi % 2 else ""
                b = io.BytesIO()
                # bzip2 at level 1: 100 kB blocks, whose decoder takes 0.4 MB, not 3.6 MB, per
                # entry read (most of fuzz_zip's time went to mapping those under ASan)
                level = 1 if method == zipfile.ZIP_BZIP2 else None
                with zipfile.ZipFile(b, "w", method, compresslevel=level) as zf:
                    if top:
                        zf.writestr(top, b"")
                    for k, p in group:
                        zf.writestr(top + k, read(p))
                    if top:
                        zf.writestr("__MACOSX/._x", b"\0\5\26\7")
                put("zip", b.getvalue())


def refs_seeds(v2root):
    files = tree_files(v2root)
    refs = {}
    for k, p in sorted(files.items())[:60]:
        v = read(p)
        if k.rsplit("/", 1)[-1].startswith("."):
            refs[k] = v.decode()
        else:
            refs[k] = "base64:" + base64.b64encode(v).decode()
    put("refs", json.dumps(refs))
    put("refs", json.dumps({"version": 1, "refs": refs}))
    # ranges of the target's data.bin (256 bytes 0..255, fuzz_refs.c) and whole-file targets
    doc = {".zgroup": '{"zarr_format": 2}',
           "a/.zarray": json.dumps({"zarr_format": 2, "shape": [32], "chunks": [8], "dtype": "|u1",
                                    "compressor": None, "filters": None, "fill_value": 0,
                                    "order": "C"}),
           "a/0": ["data.bin", 0, 8], "a/1": ["./data.bin", 8, 8], "a/2": ["data.bin"],
           "a/3": ["file://data.bin", 250, 10]}
    put("refs", json.dumps(doc))
    put("refs", json.dumps({
        "version": 1, "templates": {"u": "data.bin", "v": "https://example.org/{{x}}.nc"},
        "refs": {".zgroup": '{"zarr_format":2}',
                 "a/.zarray": doc["a/.zarray"], "a/0": ["{{u}}", 0, 8],
                 "b/.zattrs": {"title": "inline object"}},
        "gen": [{"key": "a/{{i}}", "url": "{{u}}", "offset": "{{8*i}}", "length": "8",
                 "dimensions": {"i": {"start": 1, "stop": 4, "step": 1}}},
                {"key": "c/{{j}}", "url": "{{u}}", "offset": "{{j}}", "length": "1",
                 "dimensions": {"j": [0, 1, 2]}}]}))


FIXTURES = None


def views_seeds():
    """fuzz_views: an array's .zarray, its .zattrs and the root group's .zattrs (OME-Zarr
    multiscales naming it), for the TIFF view's header (OME-XML and shaped descriptions, both
    byte orders, one and several strips, classic and BigTIFF) and the netCDF view's (CDF-2 and
    CDF-5, typed attributes, a swapped fill value)."""
    def zarray(shape, dtype, fill=0):
        return json.dumps({"zarr_format": 2, "shape": shape, "chunks": [max(1, s) for s in shape],
                           "dtype": dtype, "compressor": None, "fill_value": fill, "order": "C",
                           "filters": None})
    axes5 = [{"name": "t", "type": "time", "unit": "second"}, {"name": "c", "type": "channel"},
             {"name": "z", "type": "space", "unit": "micrometer"},
             {"name": "y", "type": "space", "unit": "micrometer"},
             {"name": "x", "type": "space", "unit": "nanometer"}]
    ms5 = {"multiscales": [{"version": "0.4", "axes": axes5, "datasets": [
        {"path": "a", "coordinateTransformations": [
            {"type": "scale", "scale": [1, 1, 2.5, 0.5, 0.25]}]}]}]}
    cases = [
        (zarray([2, 3, 4, 20, 30], "<u2"), "{}", json.dumps(ms5)),
        (zarray([3, 300, 700], ">f8"), json.dumps({"_ARRAY_DIMENSIONS": ["time", "lat", "lon"]}),
         "{}"),
        (zarray([2, 2, 3, 2, 4, 5], "|i1"), "{}", "{}"),
        (zarray([3000, 1000], "<f8"), "{}", "{}"),
        (zarray([5, 32768, 32768], "|u1"), "{}", "{}"),
        (zarray([4, 5], "<c16"), "{}", "{}"),
        (zarray([4, 5, 6], ">f2"), json.dumps({"_ARRAY_DIMENSIONS": ["z", "z", "x"]}), "{}"),
        # netCDF: a fill value that shows whether the bytes are swapped; typed attributes
        (zarray([3, 7], "<f8", 1.5), json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m",
                                                  "scale": [1, 2.5], "n": 3, "o": {"k": None}}),
         json.dumps({"title": "t", "levels": [1, 2, 3]})),
        (zarray([5], "<i4", 7), json.dumps({"_ARRAY_DIMENSIONS": ["bad name"]}), "{}"),
        (zarray([2, 3], "<u8", 9), "{}", "{}"),
    ]
    for a, attrs, gattrs in cases:
        put("views", SEP.join(x.encode() for x in (a, attrs, gattrs)))


def rectilinear_seeds():
    """zarr.json documents of the zarr-extensions "rectilinear" chunk grid (README.md's example,
    zarrs' documented forms, hostile counts, refusals) for meta_v3."""
    def doc(shape, chunk_shapes, codecs=None, kind="inline"):
        return json.dumps({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "int16",
            "chunk_grid": {"name": "rectilinear",
                           "configuration": {"kind": kind, "chunk_shapes": chunk_shapes}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "gzip", "configuration": {"level": 1}}]}).encode()
    big = 2 ** 62
    for shape, cs in (([6, 6, 6, 6, 6], [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]),
                      ([26, 38], [[16, 10], [24, 14]]),
                      ([100, 10], [[[5, 3], [15, 2], 20, 35], [10]]),
                      ([8, 8], [[[1, 3], 3, 2], 4]),
                      ([11], [[3, [2, big]]]), ([11], [[3, [7, big], [9, 2 ** 63 - 1]]]),
                      ([0, 7], [[3, 4], [1, 6]]), ([7], [[[2, 3]]]), ([6], [[3, 0, 3]]),
                      ([6], [[[0, 3]]]), ([6], [[1, [6]]]), ([4, 1], [4, []])):
        put("meta_v3", doc(shape, cs))
    put("meta_v3", doc([6], [[2, 4]], kind="external"))
    le = {"name": "bytes", "configuration": {"endian": "little"}}
    put("meta_v3", doc([6], [[2, 4]], [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [le], "index_codecs": [le]}}]))
    put("meta_v3", doc([6, 4], [[2, 4], [1, 3]], [
        {"name": "transpose", "configuration": {"order": [1, 0]}}, le]))


def main():
    global OUT, FIXTURES
    OUT = sys.argv[1]
    FIXTURES = sys.argv[2] if len(sys.argv) > 2 else os.path.join(SRC, "tests", "fixtures")
    td = FIXTURES
    os.makedirs(OUT, exist_ok=True)
    v2_trees = [os.path.join(td, "zarr-python-2.18.7-fixture"),
                os.path.join(td, "zarrita-fixtures", "v2", "data.zarr")]
    v3_trees = [os.path.join(td, "zarrita-fixtures", "v3", "data.zarr")]
    tmp = tempfile.mkdtemp(prefix="zarrfs-seeds-")
    try:
        import gen_v2
        gen_v2.build_main(os.path.join(tmp, "main.zarr"))
        gen_v2.build_consolidated(os.path.join(tmp, "consolidated.zarr"))
        v2_trees += [os.path.join(tmp, "main.zarr"), os.path.join(tmp, "consolidated.zarr")]
    except Exception as e:  # noqa: BLE001 (the fixtures alone still make a corpus)
        print("seeds.py: gen_v2.py skipped: %s" % e, file=sys.stderr)
    for mod, fn, draft in (("test_draft2020", "build", 0), ("test_draft2022", "build_main", 1)):
        try:
            m = __import__(mod)
            if hasattr(m, "setUpModule"):
                m.WORK = tmp
            root = os.path.join(tmp, "draft%d" % draft)
            getattr(m, fn)(root)
            draft_tree(root, draft)
        except Exception as e:  # noqa: BLE001
            print("seeds.py: %s.%s skipped: %s" % (mod, fn, e), file=sys.stderr)
    for t in v2_trees:
        v2_tree(t)
    for t in v3_trees:
        v3_tree(t)
    numcodecs_seeds(os.path.join(td, "numcodecs-fixture"))
    object_codec_seeds()
    shard_seeds()
    rectilinear_seeds()
    keys = []
    for t in v2_trees[:2] + v3_trees:
        keys += list(tree_files(t))
    listing_seeds(keys)
    zip_seeds([os.path.join(td, "zarrita-fixtures", "v2", "data.zarr"),
               os.path.join(td, "zarrita-fixtures", "v3", "data.zarr")])
    refs_seeds(os.path.join(td, "zarrita-fixtures", "v2", "data.zarr"))
    views_seeds()
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    for t in sorted(counts):
        print("%-14s %5d seeds" % (t, counts[t]))


if __name__ == "__main__":
    main()
