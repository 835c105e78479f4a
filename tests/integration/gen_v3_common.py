#!/usr/bin/python3
"""Helpers shared by the Zarr v3 integration tests (test_v3_*.py, test_draft*.py): writing
stores by hand, CRC-32C, walking a final-v3 store, and checking the user.zarr.* xattrs of a
mounted node against the stored document (never against zarrfs's own output)."""

import errno
import json
import math
import os
import struct

import numpy as np

import zfmount

# NumPy typestr of the flat encoding of each final-v3 / May-2022-draft data type name: always
# little-endian (DESIGN.md, "The file-system view").
V3_TYPESTR = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
              "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
              "float16": "<f2", "float32": "<f4", "float64": "<f8",
              "complex64": "<c8", "complex128": "<c16"}


def v3_typestr(data_type):
    """r<N> raw types are N/8 opaque bytes: NumPy's |V<N/8>."""
    if isinstance(data_type, str) and data_type.startswith("r") and data_type[1:].isdigit():
        return "|V%d" % (int(data_type[1:]) // 8)
    return V3_TYPESTR[data_type]


# ---------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli), as the v3 crc32c codec defines it (codecs/crc32c.rst "Format and
# algorithm": the checksum of RFC 3720, appended as a little-endian uint32). Reflected
# polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.

_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (0x82F63B78 ^ (_c >> 1)) if _c & 1 else (_c >> 1)
    _CRC32C_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    tab = _CRC32C_TABLE
    for b in data:
        c = tab[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# RFC 3720, appendix B.4 test vectors (32 bytes of zeros, of 0xFF, ascending, descending)
assert crc32c(bytes(32)) == 0x8A9136AA
assert crc32c(b"\xff" * 32) == 0x62A8AB43
assert crc32c(bytes(range(32))) == 0x46DD794E
assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
assert crc32c(b"123456789") == 0xE3069283


def with_crc32c(data):
    return data + struct.pack("<I", crc32c(data))


# ---------------------------------------------------------------------------------------------
# writing stores

def write_files(root, files):
    """files: {relpath: bytes | str | JSON-able}; None makes a directory."""
    os.makedirs(root, exist_ok=True)
    for rel, content in files.items():
        p = os.path.join(root, rel)
        if content is None:
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if isinstance(content, (bytes, bytearray)):
            data = bytes(content)
        elif isinstance(content, str):
            data = content.encode()
        else:
            data = json.dumps(content, indent=2).encode()
        with open(p, "wb") as f:
            f.write(data)
    return root


def v3_array_doc(shape, chunk_shape, data_type, codecs, fill_value=0, separator="/",
                 chunk_key_encoding=None, attributes=None, dimension_names=None, **extra):
    """A final-v3 array zarr.json (core.rst "Array metadata")."""
    d = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": data_type,
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
         "chunk_key_encoding": chunk_key_encoding or
         {"name": "default", "configuration": {"separator": separator}},
         "fill_value": fill_value, "codecs": codecs, "attributes": attributes or {}}
    if dimension_names is not None:
        d["dimension_names"] = dimension_names
    d.update(extra)
    return d


def v3_group_doc(attributes=None, **extra):
    d = {"zarr_format": 3, "node_type": "group", "attributes": attributes or {}}
    d.update(extra)
    return d


def default_key(coords, sep="/"):
    """chunk-key-encoding-default.rst: "c" then sep + each coordinate ("c" for 0-d)."""
    return sep.join(["c"] + [str(c) for c in coords])


# ---------------------------------------------------------------------------------------------
# reading stores

def walk_v3(root):
    """(groups, arrays, docs) of a final-v3 directory store: relative node paths ('' = root)
    with a zarr.json; docs maps each path to (parsed document, stored bytes). A directory
    without zarr.json is not visited (the stores walked here have no implicit groups: zarrfs
    shows those, see test_implicit_groups.py), nor is anything below it."""
    groups, arrays, docs = [], [], {}

    def visit(rel):
        d = os.path.join(root, rel)
        p = os.path.join(d, "zarr.json")
        if not os.path.isfile(p):
            return
        with open(p, "rb") as f:
            raw = f.read()
        doc = json.loads(raw)
        docs[rel] = (doc, raw)
        if doc.get("node_type") == "array":
            arrays.append(rel)
            return
        groups.append(rel)
        for name in sorted(os.listdir(d)):
            if os.path.isdir(os.path.join(d, name)):
                visit(os.path.join(rel, name) if rel else name)

    visit("")
    return groups, arrays, docs


def children_v3(root, rel):
    """Names of the nodes directly below group rel (subdirectories holding a zarr.json)."""
    d = os.path.join(root, rel)
    return sorted(n for n in os.listdir(d)
                  if os.path.isfile(os.path.join(d, n, "zarr.json")))


def is_fixed_size(data_type):
    return isinstance(data_type, str) and (data_type in V3_TYPESTR or
                                           (data_type.startswith("r") and data_type[1:].isdigit()))


# ---------------------------------------------------------------------------------------------
# xattrs

def _norm_fill(v):
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    if isinstance(v, list):
        return [_norm_fill(x) for x in v]
    return v


def fill_equal(a, b):
    """Equality of JSON fill values; NaN == NaN, -0.0 != 0.0, "NaN" == NaN, 1 == 1.0."""
    a, b = _norm_fill(a), _norm_fill(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(fill_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def xattr_text(path, name):
    return os.getxattr(path, name, follow_symlinks=False)


def v3_fill_bytes(data_type, v):
    """The flat-encoding bytes of a final-v3 JSON fill value (data-types.rst "Permitted fill
    values"): numbers, booleans, "NaN"/"Infinity"/"-Infinity", "0x…" bit patterns, [re, im]
    for complex, a list of byte values for r<N>."""
    ts = v3_typestr(data_type)
    dt = np.dtype(ts)
    if dt.kind == "V":
        return bytes(v)
    if dt.kind == "c":
        half = np.dtype("<f%d" % (dt.itemsize // 2))
        return b"".join(_float_fill_bytes(half, x) for x in v)
    if dt.kind == "f":
        return _float_fill_bytes(dt, v)
    return np.array([v], dtype=dt).tobytes()


def _float_fill_bytes(dt, v):
    if isinstance(v, str) and v.startswith("0x"):
        return int(v, 16).to_bytes(dt.itemsize, "little")
    if isinstance(v, str):
        return np.array([float(v.replace("+", "").replace("Infinity", "inf"))], dtype=dt).tobytes()
    return np.array([v], dtype=dt).tobytes()


def check_v3_node_xattrs(tc, path, doc, raw=None, fmt=b"3", typestr=None, attributes=None,
                         chunks=None, fill_value=None, dimension_names=None, what=None,
                         fill_bytes="v3"):
    """user.zarr.* of a mounted v3 / draft node against its stored document.

    doc/raw: the parsed and stored metadata document (raw None: compared as JSON). For arrays
    `typestr` is the expected user.zarr.dtype; `attributes`, `chunks`, `fill_value`,
    `dimension_names` default to the final-v3 fields of doc (the drafts pass their own)."""
    what = what or path
    is_array = typestr is not None
    names = os.listxattr(path, follow_symlinks=False)
    want = zfmount.ARRAY_XATTRS if is_array else zfmount.GROUP_XATTRS
    missing = [n for n in want if n not in names]
    tc.assertFalse(missing, "%s: listxattr %r lacks %r" % (what, names, missing))
    if not is_array:
        extra = [n for n in zfmount.ARRAY_ONLY_XATTRS if n in names]
        tc.assertFalse(extra, "%s: a group lists array xattrs %r" % (what, extra))
    tc.assertEqual(xattr_text(path, "user.zarr.format").strip(), fmt, "%s: user.zarr.format" % what)
    got_meta = xattr_text(path, "user.zarr.metadata")
    if raw is not None:
        tc.assertEqual(got_meta, raw, "%s: user.zarr.metadata != the stored document" % what)
    else:
        tc.assertEqual(json.loads(got_meta), doc, "%s: user.zarr.metadata" % what)
    if attributes is None:
        attributes = doc.get("attributes", {})
    got_attrs = json.loads(xattr_text(path, "user.zarr.attributes"))
    tc.assertTrue(zfmount.json_equal(got_attrs, attributes),
                  "%s: user.zarr.attributes %r, stored %r" % (what, got_attrs, attributes))
    if not is_array:
        tc.assertErrno(errno.ENODATA, os.getxattr, path, "user.zarr.no_such_attribute")
        return
    tc.assertEqual(json.loads(xattr_text(path, "user.zarr.shape")), list(doc["shape"]),
                   "%s: user.zarr.shape" % what)
    if chunks is None:
        chunks = doc["chunk_grid"]["configuration"]["chunk_shape"]
    tc.assertEqual(json.loads(xattr_text(path, "user.zarr.chunks")), list(chunks),
                   "%s: user.zarr.chunks" % what)
    dt = xattr_text(path, "user.zarr.dtype").decode()
    if dt.startswith('"') or dt.startswith("["):
        dt = json.loads(dt)         # a JSON string, or a structured dtype's JSON list
    tc.assertEqual(dt, typestr, "%s: user.zarr.dtype" % what)
    if fill_value is None:
        fill_value = doc["fill_value"]
    fv = json.loads(xattr_text(path, "user.zarr.fill_value"))
    same = fill_equal(fv, fill_value)
    if not same and fill_bytes:
        # another spelling of the same value ("NaN" / "0x7fc00000", 1 / 1.0) is fine
        if fill_bytes == "v3":
            fill_bytes = lambda v: v3_fill_bytes(doc["data_type"], v)  # noqa: E731
        try:
            same = fill_bytes(fv) == fill_bytes(fill_value)
        except (TypeError, ValueError, OverflowError):
            same = False
    tc.assertTrue(same, "%s: user.zarr.fill_value %r, stored %r" % (what, fv, fill_value))
    if dimension_names is None:
        dimension_names = doc.get("dimension_names")
    dn = json.loads(xattr_text(path, "user.zarr.dimension_names"))
    tc.assertEqual(dn, dimension_names, "%s: user.zarr.dimension_names" % what)
    tc.assertErrno(errno.ENODATA, os.getxattr, path, "user.zarr.no_such_attribute")


def one_shard_int32_doc(n_inner, inner):
    """The zarr.json of a 1-D int32 array held in one shard of n_inner inner chunks of `inner`
    elements (inner codec bytes little-endian; index bytes + crc32c at the end), fill value 0."""
    return {
        "zarr_format": 3, "node_type": "array", "shape": [n_inner * inner], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n_inner * inner]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "attributes": {},
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [inner],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}],
    }


def shard_bytes(inner_chunks):
    """One shard of the Zarr v3 sharding codec (codecs/sharding-indexed) with the inner codec
    `bytes` (little-endian) and index codecs `bytes` + `crc32c`, index at the end: inner_chunks
    is a list (C order) of numpy arrays (stored as their bytes) or None (an empty inner chunk)."""
    body, index = b"", []
    for c in inner_chunks:
        if c is None:
            index.append((2**64 - 1, 2**64 - 1))
            continue
        data = c.astype(c.dtype.newbyteorder("<")).tobytes()
        index.append((len(body), len(data)))
        body += data
    return body + with_crc32c(b"".join(struct.pack("<QQ", o, n) for o, n in index))
