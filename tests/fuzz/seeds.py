#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets (tests/fuzz/fuzz_*.c) into OUTDIR/<target>/.

    /usr/bin/python3 tests/fuzz/seeds.py OUTDIR [FIXTURES] # FIXTURES: default tests/fixtures

Sources: the fixtures in FIXTURES (numcodecs' encoded chunks with their configurations,
zarr-python 2.18's and zarrita.js's v2/v3 stores and zip archives) and the integration suite's
generators (tests/integration/gen_v2.py: every v2 dtype, codec and layout, consolidated
metadata; test_draft2020.py and test_draft2022.py: both v3 drafts), and zfp streams of
python3-zfpy (zfp_seeds). Each seed is written in the
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
    if isinstance(dt, dict) and dt.get("name") == "optional":
        dt = compact(dt)  # fuzz_codec_v3.c puts a data type object as it is
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


def registry_codec_seeds():
    """codec_v3 inputs for the zarr-extensions scale_offset and conditional codecs and zarrs'
    zarrs.vlen / zarrs.vlen_v2, laid out here from the registry documents and zarrs' vlen.rs
    (docs/formats.md); numcodecs' Zstd and Shuffle, Python's gzip."""
    import gzip
    import numcodecs
    for data in registry_codec_inputs(numcodecs, gzip):
        put("codec_v3", data)


def registry_codec_inputs(numcodecs, gzip):
    le = {"name": "bytes", "configuration": {"endian": "little"}}

    def one(dtype, shape, fill, codecs, chunk):
        return ("%s %s %s\n" % (dtype, shape, compact(fill))).encode() + \
            compact(codecs).encode() + b"\0" + chunk

    def so(**cfg):
        return {"name": "scale_offset", "configuration": cfg}

    out = []
    f32 = np.linspace(-3, 3, 16).astype("<f4")
    out.append(one("float32", "16", 5, [so(offset=5, scale=0.1), le], f32.tobytes()))
    out.append(one("float64", "8", "NaN", [so(offset=-10, scale="0x3fb999999999999a"), le],
                   np.array([1, np.nan, 3, 1e308, 5, 6, 7, 8], "<f8").tobytes()))
    out.append(one("int16", "8", 0, [so(offset=-1000, scale=3), le],
                   (np.arange(8, dtype="<i2") * 3).tobytes()))
    out.append(one("uint8", "8", 7, [so(offset=10, scale=2), le], bytes(range(0, 16, 2))))
    shard = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4], "codecs": [le], "index_codecs": [le], "index_location": "end"}}
    out.append(one("int32", "8", 7, [so(offset=5, scale=2), shard],
                   np.array([0, 2, 4, 6], "<i4").tobytes() +
                   struct.pack("<4Q", 0, 16, 2 ** 64 - 1, 2 ** 64 - 1)))
    zs = {"name": "zstd", "configuration": {"level": 1}}
    cond = {"name": "conditional", "configuration": {"codecs": [
        {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}, zs]}}
    a = (np.arange(64, dtype="<i4") // 3).tobytes()
    shuf = bytes(numcodecs.Shuffle(elementsize=4).encode(a))
    for mask, body in ((0, a), (1, shuf), (2, bytes(numcodecs.Zstd(level=1).encode(a))),
                       (3, bytes(numcodecs.Zstd(level=1).encode(shuf)))):
        out.append(one("int32", "64", 0, [le, cond], bytes([mask]) + body))
    g16 = {"name": "conditional", "configuration": {
        "codecs": [{"name": "gzip", "configuration": {"level": 1}}], "header_bits": 16}}
    out.append(one("uint16", "32", 0, [le, g16],
                   b"\x01\x00" + gzip.compress(np.arange(32, dtype="<u2").tobytes(), 1, mtime=0)))
    out.append(one("uint8", "32", 0, [le, {"name": "gzip"}, g16],
                   b"\x00\x00" + gzip.compress(bytes(32), 1, mtime=0)))
    items = [b"a", b"", b"caf\xc3\xa9", b"tab\tx", b"\xff\x00"]
    for dtype, index64, loc in (("string", False, "end"), ("bytes", True, "start"),
                                ("bytes", False, None)):
        its = items if dtype == "bytes" else items[:4] + [b"ok"]  # strings: valid UTF-8
        offs = np.cumsum([0] + [len(b) for b in its])
        index = offs.astype("<u8" if index64 else "<u4").tobytes()
        data = b"".join(its)
        n = struct.pack("<Q", len(index))
        chunk = data + index + n if loc == "end" else n + index + data
        cfg = {"index_codecs": [le], "data_codecs": [{"name": "bytes"}],
               "index_data_type": "uint64" if index64 else "uint32"}
        if loc:
            cfg["index_location"] = loc
        out.append(one(dtype, "5", "" if dtype == "string" else [],
                       [{"name": "zarrs.vlen", "configuration": cfg}], chunk))
    v2 = struct.pack("<I", 3) + b"".join(struct.pack("<I", len(b)) + b for b in items[:3])
    out.append(one("string", "3", "", [{"name": "zarrs.vlen_v2"}, zs],
                   bytes(numcodecs.Zstd(level=1).encode(v2))))
    out.append(one("bytes", "3", [1, 2], [{"name": "https://codec.zarrs.dev/array_to_bytes/"
                                           "vlen_v2"}], v2))
    return out


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


def zfp_seeds():
    """zfp streams (python3-zfpy, the library zarrfs links): v2 zfpy chunks of numcodecs in every
    mode for codec_v2 (the fixture's are reversible only), and v3 "zfp" (no header: zfpy with
    write_header=False, whose parameters equal zarrs' for these modes and 3-D fixed rate) and
    "numcodecs.zfpy" chunks for codec_v3, 1-4 dimensions with partial blocks."""
    try:
        from numcodecs.zfpy import ZFPY
        import zfpy
    except ImportError as e:
        print("seeds.py: zfp seeds skipped: %s" % e, file=sys.stderr)
        return
    v3name = {"<f4": "float32", "<f8": "float64", "<i4": "int32", "<i8": "int64"}
    shapes = [(7,), (5, 6), (3, 4, 5), (2, 3, 2, 5)]
    modes = [(dict(mode=2, rate=12), {"mode": "fixed_rate", "rate": 12}, dict(rate=12)),
             (dict(mode=3, precision=16), {"mode": "fixed_precision", "precision": 16},
              dict(precision=16)),
             (dict(mode=4, tolerance=0.01), {"mode": "fixed_accuracy", "tolerance": 0.01},
              dict(tolerance=0.01)),
             (dict(mode=4, tolerance=-1), {"mode": "reversible"}, {})]
    for dt in ("<f4", "<f8", "<i4", "<i8"):
        for shape in shapes:
            a = (np.sin(np.arange(int(np.prod(shape)))) * 1000).astype(dt).reshape(shape)
            dims = ",".join(str(n) for n in shape)
            for kw, v3cfg, zkw in modes:
                cfg = ZFPY(**kw).get_config()
                put("codec_v2", ("%s %s\n" % (dt, dims)).encode() + compact(cfg).encode() +
                    b"\0" + ZFPY(**kw).encode(a))
                if len(shape) == 3 or "rate" not in zkw:
                    if dt[1] == "f" or "tolerance" not in zkw:
                        put("codec_v3", ("%s %s\n" % (v3name[dt], dims)).encode() +
                            compact([{"name": "zfp", "configuration": v3cfg}]).encode() + b"\0" +
                            zfpy.compress_numpy(a, write_header=False, **zkw))
                c = {k: v for k, v in cfg.items() if k != "id"}
                put("codec_v3", ("%s %s\n" % (v3name[dt], dims)).encode() +
                    compact([{"name": "numcodecs.zfpy", "configuration": c}]).encode() + b"\0" +
                    ZFPY(**kw).encode(a))


# ---- shards (fuzz_shard.c's table) ------------------------------------------------------------

def crc32c(data):
    import gen_v3_common
    return gen_v3_common.crc32c(data)


def optional_seeds():
    """codec_v3 seeds of zarrs' optional codec (codec/array_to_bytes/optional.rs: u64 mask and
    data lengths, the mask by packbits, only the valid elements): int32 with gzip data, an
    all-missing chunk, optional(optional(uint16)); and packbits alone with padding bytes."""
    import gzip as gz
    opt_i32 = compact({"name": "optional", "configuration": {"name": "int32"}})
    data_le = [{"name": "bytes", "configuration": {"endian": "little"}}]

    def codec(data):
        return [{"name": "optional", "configuration": {"mask_codecs": [{"name": "packbits"}],
                                                       "data_codecs": data}}]

    def level(mask, data):
        m = np.packbits(np.asarray(mask, dtype=bool), bitorder="little").tobytes()
        return struct.pack("<QQ", len(m), len(data)) + m + data

    vals = np.array([5, -7, 1 << 30], dtype="<i4").tobytes()
    mask = [1, 0, 0, 1, 0, 1]
    put("codec_v3", ("%s 2,3 null\n" % opt_i32).encode() + compact(codec(data_le)).encode() +
        b"\0" + level(mask, vals))
    gzd = data_le + [{"name": "gzip", "configuration": {"level": 1}}]
    put("codec_v3", ("%s 6 [3]\n" % opt_i32).encode() + compact(codec(gzd)).encode() + b"\0" +
        level(mask, gz.compress(vals, mtime=0)))
    put("codec_v3", ("%s 6 null\n" % opt_i32).encode() + compact(codec(data_le)).encode() +
        b"\0" + level([0] * 6, b""))
    nested = compact({"name": "optional", "configuration": {"name": "optional",
                                                             "configuration": {"name": "uint16"}}})
    inner = level([1, 0, 1], np.array([9, 65535], dtype="<u2").tobytes())
    put("codec_v3", ("%s 5 [null]\n" % nested).encode() + compact(codec(codec(data_le))).encode() +
        b"\0" + level([1, 1, 0, 0, 1], inner))
    for pad in ("first_byte", "last_byte"):
        bits = np.packbits(np.array([1, 0, 1, 1, 0], dtype=bool), bitorder="little").tobytes()
        body = bytes([3]) + bits if pad == "first_byte" else bits + bytes([3])
        put("codec_v3", b"bool 5 false\n" + compact(
            [{"name": "packbits", "configuration": {"padding_encoding": pad}}]).encode() +
            b"\0" + body)
    put("codec_v3", b"int16 4\n" + compact(
        [{"name": "packbits", "configuration": {"first_bit": 2, "last_bit": 6}}]).encode() +
        b"\0" + bytes([0x21, 0x0c, 0x31]))


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

def n5_seeds():
    """codec_v3 seeds of the n5_default codec (zarr-extensions codecs/n5_default): N5 blocks
    (header: mode, ndim, dims as big-endian u16, u16, u32s; then big-endian elements, F order
    over the dims) raw and gzip'ed, whole and truncated."""
    import gzip
    import struct
    for dims, block, comp in (((6, 4), (6, 4), None), ((6, 4), (5, 3), None),
                              ((6, 4), (6, 4), "gzip"), ((3, 2, 2), (2, 2, 1), "gzip")):
        codecs = [{"name": "transpose", "configuration": {"order": list(range(len(dims)))[::-1]}},
                  {"name": "bytes", "configuration": {"endian": "big"}}]
        n = 1
        for d in block:
            n *= d
        data = b"".join(struct.pack(">i", i * 7 - 11) for i in range(n))
        if comp:
            codecs.append({"name": "gzip", "configuration": {"level": 1}})
            data = gzip.compress(data, mtime=0)
        head = struct.pack(">HH", 0, len(block)) + b"".join(struct.pack(">I", d) for d in block)
        cfg = [{"name": "n5_default", "configuration": {"codecs": codecs}}]
        put("codec_v3", ("int32 %s 0\n" % ",".join(map(str, dims))).encode() +
            compact(cfg).encode() + b"\0" + head + data)


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


def icechunk_seeds(root):
    """fuzz_icechunk.c: a selector byte (0 repo, 1 snapshot, 2 manifest, 3 config.yaml) and the
    file, from the Icechunk fixtures (tests/fixtures/icechunk); each zstd payload also
    decompressed, with the header's compression byte 0, so that mutations reach the FlatBuffers
    directly (needs the zstd command; skipped without it)."""
    import shutil
    import subprocess
    zstd = shutil.which("zstd")
    kinds = {"repo": 0, "snapshots": 1, "manifests": 2}
    for repo in sorted(glob.glob(os.path.join(root, "*"))):
        if not os.path.isdir(repo):
            continue
        files = [(0, os.path.join(repo, "repo"))]
        for d in ("snapshots", "manifests"):
            files += [(kinds[d], p) for p in sorted(glob.glob(os.path.join(repo, d, "*")))[:6]]
        for sel, path in files:
            if not os.path.isfile(path):
                continue
            data = read(path)
            put("icechunk", bytes([sel]) + data)
            if zstd and len(data) > 39 and data[38] == 1:
                r = subprocess.run([zstd, "-d", "-c", "-q"], input=data[39:], capture_output=True)
                if r.returncode == 0:
                    put("icechunk", bytes([sel]) + data[:38] + b"\0" + r.stdout)
        cfg = os.path.join(repo, "config.yaml")
        if os.path.isfile(cfg):
            put("icechunk", b"\3" + read(cfg))
    # the regression inputs: a manifest with compressed locations, a configuration's containers
    for path in sorted(glob.glob(os.path.join(HERE, "regress", "icechunk", "*"))):
        put("icechunk", read(path))
    put("icechunk", b"\3virtual_chunk_containers:\n- url_prefix: s3://a/\n"
        b"  store: {s3: {region: ~, anonymous: true}}\n- {url_prefix: x, store: in_memory}\n")


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


def registry_seeds():
    """The zarr-extensions registry's data types and its packbits and cast_value codecs: chunks
    packed here from codecs/packbits "Format and algorithm" (least significant bit first) and
    metadata documents of every registry type, struct included."""
    def pack(values, bits, pad=None):
        out = bytearray((len(values) * bits + 7) // 8)
        for i, v in enumerate(values):
            for b in range(bits):
                if (v >> b) & 1:
                    out[(i * bits + b) // 8] |= 1 << ((i * bits + b) % 8)
        padding = (8 - len(values) * bits % 8) % 8
        return (bytes([padding]) if pad == "first_byte" else b"") + bytes(out) + \
            (bytes([padding]) if pad == "last_byte" else b"")

    le = [{"name": "bytes", "configuration": {"endian": "little"}}]
    seeds = [
        ("int4 8 -1", [{"name": "packbits"}], pack([v & 15 for v in range(-4, 4)], 4)),
        ("uint2 9 3", [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}],
         pack([0, 1, 2, 3, 3, 2, 1, 0, 1], 2, "first_byte")),
        ("float6_e3m2fn 5 1", [{"name": "packbits", "configuration":
                                {"padding_encoding": "last_byte"}}],
         pack([0x0c, 0x3f, 0x04, 0x00, 0x20], 6, "last_byte")),
        ("complex_float4_e2m1fn 3", ["packbits"], pack([2, 15, 1, 7, 0, 8], 4)),
        ("int16 4", [{"name": "packbits", "configuration": {"first_bit": 2, "last_bit": 9}}],
         bytes([1, 2, 3, 4])),
        ("float4_e2m1fn 6 0.5", le, bytes([0x01, 0xf2, 0x07, 0x39, 0x0f, 0x08])),
        ("float8_e4m3 4 \"NaN\"", le, bytes([0x7c, 0x78, 0x77, 0x80])),
        ("float8_e8m0fnu 3 1", le, bytes([0x7f, 0xff, 0x00])),
        ("bfloat16 2 \"-Infinity\"", le, bytes.fromhex("c07f803f")),
        ("complex_bfloat16 1 [\"NaN\", 0]", le, bytes.fromhex("c07f803f")),
        ("float64 4", [{"name": "cast_value", "configuration": {
            "data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
            "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]],
                           "decode": [[0, "NaN"]]}}}] + le, bytes([0, 1, 200, 255])),
        ("float32 3 1", [{"name": "cast_value", "configuration": {"data_type": "float8_e4m3",
                                                                  "rounding": "nearest-away"}},
                         "bytes"], bytes([0x38, 0x7c, 0xfe])),
        ("float64 4", [{"name": "cast_value", "configuration": {
            "data_type": "int4", "out_of_range": "clamp"}}, "packbits"], bytes([0x7d, 0x28])),
        ("int32 2", [{"name": "cast_value", "configuration": {"data_type": "bfloat16",
                                                              "rounding": "towards-negative"}}]
         + le, bytes.fromhex("803fc0ff")),
    ]
    for header, codecs, chunk in seeds:
        put("codec_v3", header.encode() + b"\n" + compact(codecs).encode() + b"\0" + chunk)
    fields = [{"name": "id", "data_type": "int32"}, {"name": "p", "data_type": {
        "name": "struct", "configuration": {"fields": [{"name": "x", "data_type": "float32"},
                                                       {"name": "y", "data_type": "bfloat16"}]}}}]
    docs = [("float8_e4m3fnuz", "NaN"), ("float6_e2m3fn", 7.5), ("int2", -2), ("uint4", 15),
            ("complex_float8_e5m2", ["Infinity", "0x01"]), ("complex_float16", [1, 2]),
            ({"name": "struct", "configuration": {"fields": fields}},
             {"id": 1, "p": {"x": "NaN", "y": "-Infinity"}})]
    for dt, fill in docs:
        doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": dt,
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
               "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
        put("meta_v3", json.dumps(doc).encode())


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
    v3_trees = [os.path.join(td, "zarrita-fixtures", "v3", "data.zarr"),
                # zarrs' optional data types (optional and packbits codecs; a nested optional)
                os.path.join(td, "zarrs-test-data", "v3", "array_optional.zarr"),
                os.path.join(td, "zarrs-test-data", "v3", "array_optional_nested.zarr")]
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
    registry_codec_seeds()
    zfp_seeds()
    shard_seeds()
    n5_seeds()
    optional_seeds()
    rectilinear_seeds()
    keys = []
    for t in v2_trees[:2] + v3_trees:
        keys += list(tree_files(t))
    listing_seeds(keys)
    zip_seeds([os.path.join(td, "zarrita-fixtures", "v2", "data.zarr"),
               os.path.join(td, "zarrita-fixtures", "v3", "data.zarr")])
    refs_seeds(os.path.join(td, "zarrita-fixtures", "v2", "data.zarr"))
    views_seeds()
    registry_seeds()
    # read from the repository's fixtures always (not part of the shared test data)
    icechunk_seeds(os.path.join(SRC, "tests", "fixtures", "icechunk"))
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    for t in sorted(counts):
        print("%-14s %5d seeds" % (t, counts[t]))


if __name__ == "__main__":
    main()
