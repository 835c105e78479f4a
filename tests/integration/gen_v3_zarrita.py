#!/usr/bin/python3
"""Final Zarr v3 hierarchies written by zarrita (js/zarrita_write.mjs), and their expected
contents computed here with numpy from the same description.

    /usr/bin/python3 gen_v3_zarrita.py OUTDIR      # writes OUTDIR/zarrita.zarr (to look at it)

`nodes()` is the description: groups with attributes, and arrays with data type, shape, chunk
shape, codecs, fill value, chunk key encoding, dimension names, attributes and a list of writes.
zarrita_write.mjs creates each array with `zarr.create` and performs the writes with `zarr.set`:
each write stores, over a selection, either a scalar or the generated values of the elements
there — `values()` below is the numpy twin of `valueAt` in zarrita_write.mjs, a function of the
element's flat C-order index over the whole array. Chunks no write touches are never stored and
read as the fill value.

`expected(node)` is the whole array after the writes, built with numpy only (np.full(fill) and
the writes replayed), as C-order little-endian bytes: the flat encoding zarrfs exposes for final
v3 (DESIGN.md: names data types are little-endian whatever the bytes codec stores).
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")
NODE_TIMEOUT = 120

TYPESTR = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
           "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float16": "<f2",
           "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16"}

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]

# Non-zero fill values; the 64-bit ones are exact doubles (zarrita parses JSON numbers as
# doubles) with high bits set, written as exact JSON text.
FILLS = {
    "bool": (True, None),
    "int8": (-7, None),
    "int16": (-300, None),
    "int32": (123456, None),
    "int64": (-9223372036854774784, "-9223372036854774784"),      # -2**63 + 1024
    "uint8": (200, None),
    "uint16": (65000, None),
    "uint32": (4000000000, None),
    "uint64": (18446744073709549568, "18446744073709549568"),      # 2**64 - 2048
    "float16": (-2.5, None),
    "float32": ("NaN", None),
    "float64": ("-Infinity", None),
}

M64 = (1 << 64) - 1
BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64,
        "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def values(data_type, shape, seed):
    """numpy twin of valueAt() in js/zarrita_write.mjs, for every element of an array."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    k = np.arange(n, dtype=np.int64)
    if data_type == "bool":
        out = ((k * 7 + seed) % 3) == 0
    elif data_type in BITS:
        bits = BITS[data_type]
        with np.errstate(over="ignore"):
            h = k.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            h = h + np.uint64((seed * 0x632BE59BD9B4E019 + 0x1234567) & M64)
        h = h >> np.uint64(64 - bits)
        out = h.astype("<u%d" % (bits // 8))
        if data_type.startswith("int"):
            out = out.view("<i%d" % (bits // 8))
    elif data_type in ("float16", "float32", "float64"):
        r = ((k * 37 + seed) % 2001).astype(np.float64)
        step = 0.125 if data_type == "float16" else 0.1
        v = (r - 1000) * step
        m = k % 53
        v[m == 7] = np.nan
        v[m == 11] = np.inf
        v[m == 13] = -np.inf
        v[m == 17] = -0.0
        out = v.astype(TYPESTR[data_type])
    else:
        raise ValueError(data_type)
    return out.astype(TYPESTR[data_type]).reshape(shape)


def fill_scalar(data_type, fv):
    """A v3 JSON fill value (data-types.rst, "Permitted fill values") as a numpy scalar array."""
    dt = np.dtype(TYPESTR[data_type])
    if isinstance(fv, str):
        if fv.startswith("0x"):
            return np.array([int(fv, 16)], dtype="<u%d" % dt.itemsize).view(dt)
        return np.array([float(fv.replace("Infinity", "inf"))], dtype=dt)
    return np.array([fv], dtype=dt)


def expected(node):
    """The whole array after the writes, built with numpy: C-order little-endian bytes."""
    dt = node["data_type"]
    shape = tuple(node["shape"])
    a = np.empty(shape, dtype=TYPESTR[dt])
    a[...] = fill_scalar(dt, node["fill_value"])[0]
    full = values(dt, shape, node.get("seed", 0))
    for w in node.get("writes", []):
        sel = tuple(slice(x, y) for x, y in (w["sel"] or [[0, s] for s in shape]))
        if "scalar" in w:
            a[sel] = fill_scalar(dt, w["scalar"])[0]
        else:
            a[sel] = full[sel]
    return np.ascontiguousarray(a).tobytes()


def _bytes_codec(dt, endian="little"):
    if np.dtype(TYPESTR[dt]).itemsize == 1:
        return {"name": "bytes"}                 # endian is optional for single-byte types
    return {"name": "bytes", "configuration": {"endian": endian}}


def _array(path, dt, shape, chunks, codecs=None, fill=None, seed=1, writes=None, **kw):
    fv, fjson = FILLS[dt] if fill is None else (fill, None)
    node = {"kind": "array", "path": path, "data_type": dt, "shape": list(shape),
            "chunk_shape": list(chunks), "codecs": codecs or [_bytes_codec(dt)],
            "fill_value": fv, "seed": seed,
            "writes": writes if writes is not None else [{"sel": None}]}
    if fjson is not None:
        node["fill_value_json"] = fjson
    node.update(kw)
    return node


def _group(path, attributes=None):
    return {"kind": "group", "path": path, "attributes": attributes or {}}


BLOSC_CNAMES = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]


def nodes():
    n = []
    n.append(_group("", {"title": "written by zarrita 0.7.5", "answer": 42,
                         "nested": {"list": [1, 2.5, None, True], "unicode": "gr\u00fc\u00dfe \u2713"}}))

    # every data type zarrita writes: 2-d, edge chunks, one chunk half written, some never
    n.append(_group("dtypes", {"what": "every data type, bytes little"}))
    for i, dt in enumerate(DTYPES):
        n.append(_array("dtypes/" + dt, dt, (7, 9), (3, 4), seed=i,
                        writes=[{"sel": [[0, 6], [0, 9]]}, {"sel": [[6, 7], [1, 3]]}]))
    # big-endian bytes codec (the flat file stays little-endian)
    n.append(_group("big_endian"))
    for i, dt in enumerate(DTYPES):
        if np.dtype(TYPESTR[dt]).itemsize > 1:
            n.append(_array("big_endian/" + dt, dt, (50,), (16,), [_bytes_codec(dt, "big")],
                            seed=100 + i, writes=[{"sel": [[0, 40]]}]))
    # compressors
    n.append(_group("gzip"))
    for lvl in (1, 9):
        for dt in ("int32", "float64", "uint16"):
            n.append(_array("gzip/%s_l%d" % (dt, lvl), dt, (33, 20), (10, 8),
                            [_bytes_codec(dt), {"name": "gzip", "configuration": {"level": lvl}}],
                            seed=lvl, writes=[{"sel": [[0, 30], [0, 20]]}]))
    n.append(_group("zstd"))
    for lvl in (0, 3, 19):
        n.append(_array("zstd/int64_l%d" % lvl, "int64", (30, 25), (8, 8),
                        [_bytes_codec("int64"),
                         {"name": "zstd", "configuration": {"level": lvl, "checksum": False}}],
                        seed=lvl, writes=[{"sel": [[0, 24], [0, 25]]}, {"sel": [[24, 30], [0, 7]]}]))
    n.append(_group("blosc"))
    for cname in BLOSC_CNAMES:
        for shuffle in ("noshuffle", "shuffle", "bitshuffle"):
            n.append(_array("blosc/%s_%s" % (cname, shuffle), "float32", (40, 30), (16, 16),
                            [_bytes_codec("float32"),
                             {"name": "blosc", "configuration": {
                                 "cname": cname, "clevel": 5, "shuffle": shuffle,
                                 "typesize": 4, "blocksize": 0}}],
                            seed=7, writes=[{"sel": [[0, 32], [0, 30]]}, {"sel": [[32, 40], [0, 10]]}]))
    # transpose (array -> array) before bytes; combined with big endian and compression
    n.append(_group("transpose"))
    n.append(_array("transpose/2d", "int16", (13, 17), (5, 6),
                    [{"name": "transpose", "configuration": {"order": [1, 0]}}, _bytes_codec("int16")],
                    seed=3, writes=[{"sel": [[0, 10], [0, 17]]}, {"sel": [[10, 13], [6, 12]]}]))
    n.append(_array("transpose/3d_be_gzip", "float32", (5, 6, 7), (2, 3, 4),
                    [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                     _bytes_codec("float32", "big"), {"name": "gzip", "configuration": {"level": 5}}],
                    seed=4, writes=[{"sel": [[0, 4], [0, 6], [0, 7]]}, {"sel": [[4, 5], [0, 3], [4, 7]]}]))
    n.append(_array("transpose/3d_blosc", "uint64", (6, 5, 4), (4, 4, 3),
                    [{"name": "transpose", "configuration": {"order": [1, 2, 0]}}, _bytes_codec("uint64"),
                     {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 3,
                                                         "shuffle": "shuffle", "typesize": 8,
                                                         "blocksize": 0}}],
                    seed=5, writes=[{"sel": [[0, 4], [0, 5], [0, 4]]}]))
    n.append(_array("transpose/identity", "uint32", (9, 4), (4, 4),
                    [{"name": "transpose", "configuration": {"order": [0, 1]}}, _bytes_codec("uint32")],
                    seed=6))
    # crc32c (bytes -> bytes checksum), encoder added to zarrita by zarrita_write.mjs
    n.append(_group("crc32c"))
    n.append(_array("crc32c/plain", "int32", (20,), (6,),
                    [_bytes_codec("int32"), {"name": "crc32c"}], seed=8, writes=[{"sel": [[0, 12]]}]))
    n.append(_array("crc32c/gzip_be", "float64", (11, 5), (4, 5),
                    [_bytes_codec("float64", "big"), {"name": "gzip", "configuration": {"level": 1}},
                     {"name": "crc32c", "configuration": {}}], seed=9))
    # numcodecs codecs under zarr-python 3's "numcodecs.<id>" names
    n.append(_group("numcodecs"))
    n.append(_array("numcodecs/lz4", "int16", (100,), (32,),
                    [_bytes_codec("int16"), {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}],
                    seed=10, writes=[{"sel": [[0, 64]]}, {"sel": [[96, 100]]}]))
    n.append(_array("numcodecs/shuffle_zstd", "float32", (10, 10), (5, 10),
                    [_bytes_codec("float32"), {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
                     {"name": "zstd", "configuration": {"level": 1, "checksum": False}}], seed=11))
    # chunk key encodings: default with "/" and ".", v2 with "." and "/", and their defaults
    n.append(_group("keys"))
    for name, sep, cke in [("default_slash", "/", None), ("default_dot", ".", None),
                           ("default_noconf", "/", {"name": "default"}),
                           ("v2_dot", "/", {"name": "v2", "configuration": {"separator": "."}}),
                           ("v2_slash", "/", {"name": "v2", "configuration": {"separator": "/"}}),
                           ("v2_noconf", "/", {"name": "v2"})]:
        kw = {"separator": sep}
        if cke:
            kw["chunk_key_encoding"] = cke
        n.append(_array("keys/" + name, "uint8", (6, 7, 5), (4, 3, 2), seed=12,
                        writes=[{"sel": [[0, 4], [0, 7], [0, 5]]}, {"sel": [[4, 6], [3, 6], [0, 2]]}],
                        **kw))
    # 0-d and zero-length arrays
    n.append(_group("zerod"))
    n.append(_array("zerod/int32_written", "int32", (), (), seed=13, writes=[{"sel": None}]))
    n.append(_array("zerod/float64_fill", "float64", (), (), fill=2.5, writes=[]))
    n.append(_array("zerod/bool_written", "bool", (), (), fill=False, seed=0, writes=[{"sel": None}]))
    n.append(_array("zerod/uint16_v2key_gzip", "uint16", (), (),
                    [_bytes_codec("uint16", "big"), {"name": "gzip", "configuration": {"level": 1}}],
                    seed=14, chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}}))
    n.append(_group("empty"))
    n.append(_array("empty/len0", "int16", (0,), (4,), writes=[]))
    n.append(_array("empty/3x0", "float32", (3, 0), (2, 2), writes=[]))
    n.append(_array("empty/0x5_gzip", "uint64", (0, 5), (3, 3),
                    [_bytes_codec("uint64"), {"name": "gzip", "configuration": {"level": 1}}], writes=[]))
    # nested groups, attributes, dimension names, scalar writes
    n.append(_group("g1", {"level": 1, "tags": ["a", "b"]}))
    n.append(_group("g1/g2", {"level": 2, "float": 0.5}))
    n.append(_group("g1/g2/g3", {"level": 3, "empty": {}}))
    n.append(_group("g1/g2/g3/empty_group"))
    n.append(_array("g1/g2/g3/leaf", "int16", (4, 6), (2, 3), seed=15,
                    dimension_names=["row", "col"], attributes={"units": "m", "scale": [1, 2]}))
    n.append(_array("g1/with spaces & symbols", "uint8", (5,), (2,), seed=16))
    n.append(_array("g1/dims_partial", "float32", (3, 4, 2), (2, 2, 2), seed=17,
                    dimension_names=["t", None, "x"]))
    n.append(_array("g1/scalar_writes", "int32", (10, 10), (4, 4), seed=18,
                    writes=[{"sel": [[0, 5], [0, 5]], "scalar": -1}, {"sel": [[5, 10], [2, 9]]},
                            {"sel": [[8, 9], [0, 10]], "scalar": 77}]))
    # a larger array for random preads across many chunks, one chunk never written
    n.append(_array("big_f32_gzip", "float32", (200, 300), (64, 64),
                    [_bytes_codec("float32"), {"name": "gzip", "configuration": {"level": 1}}],
                    fill=-1.5, seed=19,
                    writes=[{"sel": [[0, 128], [0, 300]]}, {"sel": [[128, 200], [0, 256]]}]))
    return n


def arrays(ns):
    return [x for x in ns if x["kind"] == "array"]


def groups(ns):
    return [x for x in ns if x["kind"] == "group"]


def node_modules_ok():
    return os.path.isdir(os.path.join(JS, "node_modules", "zarrita"))


def write(root, ns=None, name="spec.json"):
    """Write the hierarchy `ns` (default nodes()) into `root` with zarrita; returns the nodes."""
    ns = nodes() if ns is None else ns
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    spec = os.path.join(os.path.dirname(root), os.path.basename(root) + "." + name)
    with open(spec, "w") as f:
        json.dump({"nodes": ns}, f, indent=1)
    r = subprocess.run(["node", os.path.join(JS, "zarrita_write.mjs"), spec, root],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=NODE_TIMEOUT, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError("zarrita_write.mjs failed (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
    return ns


def zarrita_read(store, paths, outdir, consolidated=False):
    """Read arrays with js/zarrita_read.mjs: {path: result dict with 'data' bytes when ok}.
    consolidated=True: through zarrita's withConsolidatedMetadata; the result then also has the
    key None: the list of {path, kind} zarrita knows from the root's consolidated metadata."""
    os.makedirs(outdir, exist_ok=True)
    opt = ["--consolidated"] if consolidated else []
    r = subprocess.run(["node", os.path.join(JS, "zarrita_read.mjs")] + opt + [store, outdir] + list(paths),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=NODE_TIMEOUT, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError("zarrita_read.mjs failed (%d): %s" % (r.returncode, r.stderr))
    res = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        if "contents" in d:
            res[None] = d["contents"]
            continue
        if d.get("ok") and "file" in d:
            with open(d["file"], "rb") as f:
                d["data"] = f.read()
        res[d["path"]] = d
    missing = [p for p in paths if p not in res]
    if missing:
        raise RuntimeError("zarrita_read.mjs gave no result for %r; stderr: %s" % (missing, r.stderr))
    return res


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    root = os.path.join(out, "zarrita.zarr")
    ns = write(root)
    print("wrote %d nodes into %s" % (len(ns), root))
