#!/usr/bin/python3
"""Write the Zarr v2 stores the integration tests mount, with Debian's zarr 2.13 (/usr/bin/python3).

    /usr/bin/python3 gen_v2.py OUTDIR      # writes OUTDIR/main.zarr, consolidated.zarr, ...

build_main(): every dtype (both byte orders), order C/F, dimension_separator "." and "/" and the
pre-2.8 nested layout, fill values of every kind with chunks missing, every compressor (blosc with
every cname and shuffle), every filter, `"filters": []`, edge chunks, 0-d, zero-length dimensions,
1-d..4-d, groups with attributes, odd node names, object-dtype arrays zarrfs cannot serve.
build_consolidated(): a hierarchy with .zmetadata that differs from the per-node documents.
build_big(): a 64 MiB int64 zstd array for the concurrency tests.
build_wide(): one group with 600 long-named children; build_tinycache(): chunks and bands larger
than a 256 KiB cache.
"""

import itertools
import json
import lzma
import math
import os
import shutil
import sys

import numcodecs
import numpy as np
import zarr

STRUCT = [("a", "<i4"), ("b", [("x", ">f8"), ("y", "u1", (2, 3))]), ("c", "S3")]
STRUCT_U = [("name", ">U3"), ("v", "<f8"), ("ok", "|b1")]

BLOSC_CNAMES = ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]

TEXT = ["unsupported/vlen_utf8", "unsupported/vlen_bytes"]  # variable-length: read as text
JSON_LINES = ["unsupported/json_obj", "unsupported/vlen_array"]  # read as JSON Lines
UNSUPPORTED = ["unsupported/json_obj",
               "unsupported/vlen_array", "unsupported/pickle_obj"]

SKIPPED = []   # (what, why) that this numcodecs cannot write


def safe(dt):
    s = json.dumps(dt) if not isinstance(dt, str) else dt
    for a, b in (("<", "L"), (">", "B"), ("|", "N"), ("[", "_"), ("]", ""), (" ", ""),
                 ('"', ""), (",", "_"), ("(", ""), (")", ""), ("'", "")):
        s = s.replace(a, b)
    return s[:60]


def sample(dtype, shape, rng):
    """Deterministic, position-dependent values of any (structured) dtype."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    if dt.fields is not None:
        a = np.zeros(n, dtype=dt)
        for name in dt.names:
            fdt = dt.fields[name][0]
            if fdt.subdtype is not None:
                base, sub = fdt.subdtype
                a[name] = sample(base, (n,) + sub, rng)
            else:
                a[name] = sample(fdt, (n,), rng)
        return a.reshape(shape)
    k = dt.kind
    if k == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif k in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt.newbyteorder("="), endpoint=True)
        if n >= 2:
            a[0], a[1] = info.min, info.max
    elif k == "f":
        a = (rng.standard_normal(n) * 1000).astype(dt.newbyteorder("="))
        specials = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).tiny, np.finfo(dt).max]
        a[:min(n, len(specials))] = specials[:min(n, len(specials))]
    elif k == "c":
        a = (rng.standard_normal(n) * 100 + 1j * rng.standard_normal(n) * 100).astype(dt.newbyteorder("="))
        if n >= 2:
            a[0] = complex(np.nan, np.inf)
            a[1] = complex(-0.0, -np.inf)
    elif k in "mM":
        a = rng.integers(-2 ** 40, 2 ** 40, n).astype("i8").view(dt.newbyteorder("="))
        if n >= 2:
            a[1] = np.array("NaT", dtype=a.dtype)
    elif k == "S":
        raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes()
        a = np.frombuffer(raw, dtype=dt).copy()
    elif k == "U":
        alphabet = list("abcXYZ \u00e9\u00df\u305f\u6f22") + ["\U0001F600", "\U00010348"]
        vals = []
        for i in range(n):
            ln = int(rng.integers(0, dt.itemsize // 4 + 1))
            vals.append("".join(alphabet[int(j)] for j in rng.integers(0, len(alphabet), ln)))
        a = np.array(vals, dtype=dt.newbyteorder("="))
    elif k == "V":
        raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes()
        a = np.frombuffer(raw, dtype=dt).copy()
    else:
        raise ValueError("no sampler for %r" % dt)
    return a.astype(dt).reshape(shape)


def smooth(dtype, shape):
    """Compressible, position-dependent data for codec tests."""
    n = int(np.prod(shape))
    x = np.arange(n, dtype="f8")
    a = np.sin(x / 37.0) * 1000 + x / 7.0
    return a.astype(dtype).reshape(shape)


def chunk_grid(z):
    return [int(math.ceil(s / c)) if c else 0 for s, c in zip(z.shape, z.chunks)]


def drop_chunks(z, pred):
    """Delete the chunk keys whose grid index satisfies pred; returns how many."""
    n = 0
    for idx in itertools.product(*[range(g) for g in chunk_grid(z)]):
        if pred(idx):
            key = z._chunk_key(idx)
            if key in z.chunk_store:
                del z.chunk_store[key]
                n += 1
    return n


def edit_zarray(store_root, path, fn):
    p = os.path.join(store_root, path, ".zarray")
    with open(p) as f:
        meta = json.load(f)
    fn(meta)
    with open(p, "w") as f:
        json.dump(meta, f, indent=4, sort_keys=True, ensure_ascii=True)


# ---------------------------------------------------------------------------------------------

def build_main(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    store = zarr.DirectoryStore(root)
    g = zarr.group(store=store)
    g.attrs.update({"title": "zarrfs integration store", "unicode": "\u00e9\u305f", "n": [1, 2.5, None]})
    rng = np.random.default_rng(20240601)

    # -- every dtype, both byte orders; 2-d with edge chunks; one chunk missing (fill visible)
    dtypes = ["|b1", "|i1", "|u1"]
    for t in ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]:
        dtypes += ["<" + t, ">" + t]
    dtypes += ["<M8[ns]", ">M8[ns]", "<M8[D]", "<M8[ms]", "<m8[s]", ">m8[s]", ">m8[us]",
               "|S7", "|S1", "<U5", ">U5", "<U1", "|V6", "|V1"]
    dgrp = g.create_group("dtypes")
    for dt in dtypes + [STRUCT, STRUCT_U]:
        name = safe(dt)
        fill = 0 if np.dtype(dt).kind in "biufcmM" else None
        z = dgrp.create_dataset(name, shape=(37, 23), chunks=(10, 7), dtype=dt, fill_value=fill,
                                compressor=numcodecs.Zlib(1))
        z[...] = sample(dt, (37, 23), rng)
        drop_chunks(z, lambda idx: idx == (1, 2))

    # -- fill values of every kind; a third of the chunks missing
    fgrp = g.create_group("fill")
    structured_fill = np.array((-7, (2.5, [[1, 2, 3], [4, 5, 6]]), b"xyz"), dtype=STRUCT)
    fills = [
        ("i8_min", "<i8", -2 ** 63), ("i8_2p53p1", ">i8", 2 ** 53 + 1), ("i8_max", "<i8", 2 ** 63 - 1),
        ("u8_max", "<u8", 2 ** 64 - 1), ("u8_max_be", ">u8", 2 ** 64 - 1),
        ("u8_2p64m2", "<u8", 2 ** 64 - 2), ("u8_2p63p1", "<u8", 2 ** 63 + 1),
        ("i1_m1", "|i1", -1), ("u1_255", "|u1", 255), ("u2_be", ">u2", 65535), ("i4", "<i4", -123456789),
        ("i2_be", ">i2", -2),
        ("f8_nan", "<f8", float("nan")), ("f4_inf", "<f4", float("inf")), ("f8_ninf_be", ">f8", float("-inf")),
        ("f2_nan", "<f2", float("nan")), ("f2_ninf", "<f2", float("-inf")), ("f2_val_be", ">f2", 1.5),
        ("f8_negzero", "<f8", -0.0), ("f8_tenth", "<f8", 0.1), ("f4_tenth_be", ">f4", 0.1),
        ("f8_max", "<f8", 1.7976931348623157e308), ("f8_denorm", "<f8", 5e-324), ("f4_third", "<f4", 1 / 3),
        ("c16", "<c16", 1 + 2j), ("c8_naninf_be", ">c8", complex(float("nan"), float("inf"))),
        ("c16_be", ">c16", complex(-0.5, 1e300)),
        ("b1_true", "|b1", True),
        ("S7", "|S7", b"ab\x00cd"), ("S7_full", "|S7", b"abcdefg"),
        ("V6", "|V6", b"\x01\x02\x03\x04\x05\xff"),
        ("U5", "<U5", "h\u00e9llo"), ("U5_be", ">U5", "\u305f\U0001F600"),
        ("M8ns", "<M8[ns]", np.datetime64("2001-02-03T04:05:06.123456789", "ns")),
        ("M8D_nat", "<M8[D]", np.datetime64("NaT", "D")),
        ("m8s_be", ">m8[s]", np.timedelta64(12345, "s")),
        ("struct", STRUCT, structured_fill.tobytes()),
        ("null_i4", "<i4", None), ("null_f8_be", ">f8", None), ("null_S7", "|S7", None),
        ("null_V6", "|V6", None), ("null_U5", "<U5", None), ("null_struct", STRUCT, None),
        ("null_c16", "<c16", None), ("null_b1", "|b1", None),
    ]
    for name, dt, fv in fills:
        z = fgrp.create_dataset(name, shape=(30, 20), chunks=(7, 6), dtype=dt, fill_value=fv,
                                compressor=numcodecs.Zstd(1))
        z[...] = sample(dt, (30, 20), rng)
        drop_chunks(z, lambda idx: (idx[0] + idx[1]) % 3 == 0)
    # a fill array with no chunk at all, and a 1-d one whose only edge chunk is missing
    z = fgrp.create_dataset("all_missing_u8", shape=(11, 5), chunks=(4, 4), dtype="<u8",
                            fill_value=2 ** 64 - 1)
    z = fgrp.create_dataset("edge_missing_f4", shape=(10,), chunks=(4,), dtype="<f4",
                            fill_value=float("nan"))
    z[...] = np.arange(10, dtype="f4")
    drop_chunks(z, lambda idx: idx == (2,))

    # -- order F
    ogrp = g.create_group("order_f")
    for dt in ["<i4", ">f8", "<U5", "|S7", "|b1", "<c16", ">u2", STRUCT]:
        name = safe(dt)
        z = ogrp.create_dataset(name, shape=(13, 17, 5), chunks=(4, 5, 3), dtype=dt, order="F",
                                compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
                                fill_value=0 if np.dtype(dt).kind in "biufc" else None)
        z[...] = sample(dt, (13, 17, 5), rng)
        drop_chunks(z, lambda idx: idx == (3, 3, 1))
    for shape, chunks in [((7, 9), (3, 4)), ((5, 6, 7, 8), (2, 3, 4, 5)), ((100,), (7,))]:
        z = ogrp.create_dataset("i8_%dd" % len(shape), shape=shape, chunks=chunks, dtype="<i8",
                                order="F", compressor=None)
        z[...] = sample("<i8", shape, rng)

    # -- dimension_separator "/" and ".", and the pre-2.8 nested layout (no key)
    sgrp = g.create_group("separators")
    for sep in [".", "/"]:
        tag = "dot" if sep == "." else "slash"
        for shape, chunks in [((50,), (8,)), ((20, 30), (6, 7)), ((9, 10, 11), (4, 3, 5)),
                              ((6, 5, 4, 3), (4, 2, 3, 2))]:
            name = "%s_%dd" % (tag, len(shape))
            z = sgrp.create_dataset(name, shape=shape, chunks=chunks, dtype="<f4",
                                    dimension_separator=sep, fill_value=-1.0,
                                    compressor=numcodecs.Zlib(3))
            z[...] = sample("<f4", shape, rng)
            drop_chunks(z, lambda idx: idx[0] == 1 and all(i == 0 for i in idx[1:]))
        z = sgrp.create_dataset("%s_F_3d" % tag, shape=(9, 10, 11), chunks=(4, 3, 5), dtype=">i2",
                                dimension_separator=sep, order="F", compressor=numcodecs.LZ4())
        z[...] = sample(">i2", (9, 10, 11), rng)
    for shape, chunks in [((20, 30), (6, 7)), ((9, 10, 11), (4, 3, 5))]:
        name = "nested_legacy_%dd" % len(shape)
        z = sgrp.create_dataset(name, shape=shape, chunks=chunks, dtype="<u4",
                                dimension_separator="/", fill_value=7,
                                compressor=numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE))
        z[...] = sample("<u4", shape, rng)
        drop_chunks(z, lambda idx: idx[0] == 0 and idx[1] == 1)
        edit_zarray(root, "separators/" + name, lambda m: m.pop("dimension_separator"))

    # nested layout without the key, only a far chunk present (no chunk (0, 0) to probe)
    z = sgrp.create_dataset("nested_legacy_sparse", shape=(20, 30), chunks=(6, 7), dtype=">i8",
                            dimension_separator="/", fill_value=-2, compressor=numcodecs.Zlib(1))
    z[12:18, 21:28] = sample(">i8", (6, 7), rng)
    edit_zarray(root, "separators/nested_legacy_sparse", lambda m: m.pop("dimension_separator"))
    # explicit "." although the chunks sit in nested directories: zarr-python finds no chunk
    # (all fill); zarrfs must not go looking for nested chunks when the key says "."
    z = sgrp.create_dataset("explicit_dot_nested_files", shape=(10, 10), chunks=(5, 5), dtype="<i2",
                            dimension_separator="/", fill_value=9, compressor=None)
    z[...] = sample("<i2", (10, 10), rng)
    edit_zarray(root, "separators/explicit_dot_nested_files",
                lambda m: m.__setitem__("dimension_separator", "."))
    # explicit "/" although the chunks are flat files: all fill as well
    z = sgrp.create_dataset("explicit_slash_flat_files", shape=(10, 10), chunks=(5, 5), dtype="<i2",
                            dimension_separator=".", fill_value=8, compressor=None)
    z[...] = sample("<i2", (10, 10), rng)
    edit_zarray(root, "separators/explicit_slash_flat_files",
                lambda m: m.__setitem__("dimension_separator", "/"))

    # -- compressors
    cgrp = g.create_group("compressors")
    comps = [
        ("none", None),
        ("zlib1", numcodecs.Zlib(1)), ("zlib9", numcodecs.Zlib(9)), ("zlib0", numcodecs.Zlib(0)),
        ("gzip1", numcodecs.GZip(1)), ("gzip9", numcodecs.GZip(9)),
        ("bz2_1", numcodecs.BZ2(1)), ("bz2_9", numcodecs.BZ2(9)),
        ("lzma_xz", numcodecs.LZMA(format=lzma.FORMAT_XZ, preset=1)),
        ("lzma_xz_sha256", numcodecs.LZMA(format=lzma.FORMAT_XZ, check=lzma.CHECK_SHA256, preset=1)),
        ("lzma_alone", numcodecs.LZMA(format=lzma.FORMAT_ALONE, preset=1)),
        ("lzma_raw", numcodecs.LZMA(format=lzma.FORMAT_RAW,
                                    filters=[dict(id=lzma.FILTER_LZMA2, preset=1)])),
        ("lzma_raw_delta", numcodecs.LZMA(format=lzma.FORMAT_RAW,
                                          filters=[dict(id=lzma.FILTER_DELTA, dist=8),
                                                   dict(id=lzma.FILTER_LZMA2, preset=1)])),
        ("zstd1", numcodecs.Zstd(1)), ("zstd19", numcodecs.Zstd(19)), ("zstd_neg", numcodecs.Zstd(-5)),
        ("lz4", numcodecs.LZ4()), ("lz4_acc10", numcodecs.LZ4(10)),
        ("blosc_autoshuffle", numcodecs.Blosc("lz4", 5, numcodecs.Blosc.AUTOSHUFFLE)),
        ("blosc_blocksize256", numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE, blocksize=256)),
        ("blosc_clevel0", numcodecs.Blosc("lz4", 0, numcodecs.Blosc.SHUFFLE)),
        ("blosc_clevel9", numcodecs.Blosc("blosclz", 9, numcodecs.Blosc.BITSHUFFLE)),
    ]
    available = numcodecs.blosc.list_compressors()
    for cname in BLOSC_CNAMES:
        if cname not in available:
            SKIPPED.append(("blosc cname %s" % cname, "not built into this numcodecs"))
            continue
        for sh in (0, 1, 2):
            comps.append(("blosc_%s_s%d" % (cname, sh), numcodecs.Blosc(cname, 5, sh)))
    for name, comp in comps:
        for dt in ("<f8", ">u2", "|u1"):
            if dt != "<f8" and not name.startswith("blosc") and name not in ("zlib1", "zstd1", "lz4", "none"):
                continue
            z = cgrp.create_dataset("%s_%s" % (name, safe(dt)), shape=(50, 40), chunks=(16, 16),
                                    dtype=dt, compressor=comp, fill_value=0)
            z[...] = smooth(dt, (50, 40))
            drop_chunks(z, lambda idx: idx == (3, 0))
    # a blosc array whose chunks are larger than blosc's default block size (several blocks)
    z = cgrp.create_dataset("blosc_multiblock_f4", shape=(300, 300), chunks=(150, 300), dtype="<f4",
                            compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE, blocksize=4096))
    z[...] = smooth("<f4", (300, 300))
    # a checksum used as the compressor
    z = cgrp.create_dataset("crc32_as_compressor", shape=(50,), chunks=(16,), dtype="<i4",
                            compressor=numcodecs.CRC32())
    z[...] = np.arange(50, dtype="<i4")

    # -- filters
    tgrp = g.create_group("filters")
    x8 = smooth("<f8", (60, 50))
    filt = [
        ("delta_i4", "<i4", [numcodecs.Delta(dtype="<i4")], numcodecs.Zlib(1),
         np.cumsum(np.arange(3000) % 7, dtype="<i4").reshape(60, 50)),
        ("delta_astype_i2", "<i8", [numcodecs.Delta(dtype="<i8", astype="<i2")], None,
         np.cumsum(np.arange(3000) % 5 - 2, dtype="<i8").reshape(60, 50)),
        ("delta_u1", "|u1", [numcodecs.Delta(dtype="|u1")], numcodecs.Zstd(1),
         (np.arange(3000) % 251).astype("u1").reshape(60, 50)),
        ("delta_be", ">i4", [numcodecs.Delta(dtype=">i4")], None,
         np.cumsum(np.arange(3000), dtype=">i4").reshape(60, 50)),
        ("fso_u2", "<f8", [numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<u2")],
         numcodecs.Zlib(1), np.abs(x8) % 1000 + 500),
        ("fso_i4", "<f8", [numcodecs.FixedScaleOffset(offset=-3.5, scale=1000, dtype="<f8", astype="<i4")],
         None, x8),
        ("fso_f4_u1", "<f4", [numcodecs.FixedScaleOffset(offset=0, scale=2, dtype="<f4", astype="|u1")],
         None, (np.arange(3000) % 100 / 2.0).astype("f4").reshape(60, 50)),
        ("astype_f8_f4", "<f8", [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")],
         numcodecs.Zstd(1), x8),
        ("astype_i8_i2", "<i8", [numcodecs.AsType(encode_dtype="<i2", decode_dtype="<i8")], None,
         (np.arange(3000) - 1500).astype("<i8").reshape(60, 50)),
        ("astype_f4_f8", "<f4", [numcodecs.AsType(encode_dtype="<f8", decode_dtype="<f4")], None,
         x8.astype("<f4")),
        ("quantize_f8_3", "<f8", [numcodecs.Quantize(digits=3, dtype="<f8")], numcodecs.Zlib(1), x8),
        ("quantize_f4_1", "<f4", [numcodecs.Quantize(digits=1, dtype="<f4", astype="<f4")], None,
         x8.astype("<f4")),
        ("quantize_f8_astype_f4", "<f8", [numcodecs.Quantize(digits=2, dtype="<f8", astype="<f4")],
         None, x8),
        ("shuffle_i4", "<i4", [numcodecs.Shuffle(elementsize=4)], numcodecs.Zlib(1),
         np.arange(3000, dtype="<i4").reshape(60, 50)),
        ("shuffle_f8", "<f8", [numcodecs.Shuffle(elementsize=8)], None, x8),
        ("packbits", "|b1", [numcodecs.PackBits()], None,
         (np.arange(3000) % 3 == 0).reshape(60, 50)),
        ("packbits_zlib", "|b1", [numcodecs.PackBits()], numcodecs.Zlib(1),
         (np.arange(3000) % 5 == 1).reshape(60, 50)),
        ("categorize_u1", "<U4", [numcodecs.Categorize(labels=["foo", "bar", "baz", "quux"],
                                                       dtype="<U4", astype="|u1")], None,
         np.array(["foo", "bar", "baz", "quux", "none"] * 600, dtype="<U4").reshape(60, 50)),
        ("categorize_u2", "<U4", [numcodecs.Categorize(labels=["\u00e9t\u00e9", "\u305f", "x"],
                                                       dtype="<U4", astype="<u2")], numcodecs.Zlib(1),
         np.array(["\u00e9t\u00e9", "\u305f", "x"] * 1000, dtype="<U4").reshape(60, 50)),
        ("crc32", "<i4", [numcodecs.CRC32()], None, np.arange(3000, dtype="<i4").reshape(60, 50)),
        ("crc32_zlib", "<f8", [numcodecs.CRC32()], numcodecs.Zlib(1), x8),
        ("adler32", "<i4", [numcodecs.Adler32()], None, np.arange(3000, dtype="<i4").reshape(60, 50)),
        ("adler32_blosc", ">f8", [numcodecs.Adler32()],
         numcodecs.Blosc("zstd", 1, numcodecs.Blosc.SHUFFLE), x8.astype(">f8")),
        ("chain_delta_shuffle_zstd", "<i4", [numcodecs.Delta(dtype="<i4"), numcodecs.Shuffle(elementsize=4)],
         numcodecs.Zstd(3), np.arange(3000, dtype="<i4").reshape(60, 50) * 3),
        ("chain_fso_delta_crc", "<f8",
         [numcodecs.FixedScaleOffset(offset=0, scale=100, dtype="<f8", astype="<i4"),
          numcodecs.Delta(dtype="<i4"), numcodecs.CRC32()], numcodecs.Zlib(1), x8),
        ("quantize_lz4", "<f4", [numcodecs.Quantize(digits=4, dtype="<f4")], numcodecs.LZ4(),
         x8.astype("<f4")),
    ]
    if hasattr(numcodecs, "BitRound"):
        filt += [("bitround_f4", "<f4", [numcodecs.BitRound(keepbits=7)], numcodecs.Zstd(1), x8.astype("<f4")),
                 ("bitround_f8", "<f8", [numcodecs.BitRound(keepbits=20)], None, x8)]
    else:
        SKIPPED.append(("bitround", "numcodecs %s has no BitRound" % numcodecs.__version__))
    for name, dt, filters, comp, data in filt:
        z = tgrp.create_dataset(name, shape=(60, 50), chunks=(16, 15), dtype=dt, filters=filters,
                                compressor=comp, fill_value=None if np.dtype(dt).kind == "U" else 0)
        z[...] = data
    drop_chunks(tgrp["delta_i4"], lambda idx: idx == (1, 1))
    # "filters": [] exists in the wild and means none
    for name, comp in [("filters_empty_list", numcodecs.Zlib(1)), ("filters_empty_list_nocomp", None)]:
        z = tgrp.create_dataset(name, shape=(20, 20), chunks=(8, 8), dtype=">i4", compressor=comp)
        z[...] = sample(">i4", (20, 20), rng)
        edit_zarray(root, "filters/" + name, lambda m: m.__setitem__("filters", []))

    # -- shapes
    hgrp = g.create_group("shapes")
    z = hgrp.create_dataset("zerod_f8", shape=(), dtype="<f8", fill_value=7.0)
    z[...] = 3.5
    z = hgrp.create_dataset("zerod_missing_i2", shape=(), dtype=">i2", fill_value=-3)
    z = hgrp.create_dataset("zerod_struct", shape=(), dtype=STRUCT, fill_value=None)
    z[...] = sample(STRUCT, (), rng)
    z = hgrp.create_dataset("zerod_null_missing", shape=(), dtype="<i8", fill_value=None)
    for name, shape, chunks in [("len0_1d", (0,), (5,)), ("len0_mid", (4, 0, 3), (2, 2, 2)),
                                ("len0_last", (3, 0), (3, 1))]:
        z = hgrp.create_dataset(name, shape=shape, chunks=chunks, dtype="<i4")
    z = hgrp.create_dataset("len0_F", shape=(0, 4), chunks=(1, 4), dtype="<f8", order="F")
    for shape, chunks in [((1000,), (64,)), ((1,), (1,)), ((33, 65), (32, 64)), ((13, 17, 19), (4, 5, 6)),
                          ((5, 6, 7, 8), (2, 3, 4, 5)), ((3, 4, 5, 6, 7), (2, 3, 2, 5, 4))]:
        name = "d%d_%s" % (len(shape), "x".join(map(str, shape)))
        z = hgrp.create_dataset(name, shape=shape, chunks=chunks, dtype="<i4", fill_value=-1,
                                compressor=numcodecs.Zlib(1))
        z[...] = sample("<i4", shape, rng)
        drop_chunks(z, lambda idx: sum(idx) == 1)
    z = hgrp.create_dataset("chunks_bigger_than_shape", shape=(10, 3), chunks=(100, 50), dtype="<u2",
                            compressor=numcodecs.Zstd(1))
    z[...] = sample("<u2", (10, 3), rng)
    z = hgrp.create_dataset("chunks_one", shape=(5, 6), chunks=(1, 1), dtype="|u1", compressor=None)
    z[...] = sample("|u1", (5, 6), rng)
    drop_chunks(z, lambda idx: idx[0] == idx[1])
    z = hgrp.create_dataset("prime_1d", shape=(4099,), chunks=(4093,), dtype="<c8",
                            compressor=numcodecs.Zlib(1))
    z[...] = sample("<c8", (4099,), rng)
    z = hgrp.create_dataset("tiny_chunks_1000", shape=(1000,), chunks=(1,), dtype="|i1",
                            compressor=None, fill_value=5)
    z[...] = sample("|i1", (1000,), rng)
    drop_chunks(z, lambda idx: idx[0] % 7 == 3)

    # -- a deep hierarchy
    d = g.create_group("deep")
    for i in range(30):
        d = d.create_group("l%02d" % i)
    d.attrs["depth"] = 31
    z = d.create_dataset("leaf", shape=(3, 3), chunks=(2, 2), dtype="<u2")
    z[...] = sample("<u2", (3, 3), rng)

    # -- structured
    stgrp = g.create_group("structured")
    for order in "CF":
        for dt, nm in [(STRUCT, "nested"), (STRUCT_U, "with_U"),
                       ([("x", "<f4"), ("y", ">i2")], "simple"),
                       ([("m", "<f8", (3,)), ("t", "<M8[s]")], "subarray")]:
            z = stgrp.create_dataset("%s_%s" % (nm, order), shape=(11, 7), chunks=(4, 3), dtype=dt,
                                     order=order, compressor=numcodecs.Blosc("zstd", 3, 1), fill_value=None)
            z[...] = sample(dt, (11, 7), rng)
            drop_chunks(z, lambda idx: idx == (2, 2))
    z = stgrp.create_dataset("nested_fill", shape=(9,), chunks=(4,), dtype=STRUCT,
                             fill_value=structured_fill.tobytes())
    z[:4] = sample(STRUCT, (4,), rng)

    # -- groups, attributes, dimension names, odd names
    a = g.create_group("attrs")
    a.attrs.update({"description": "nested groups", "nested": {"a": [1, {"b": None}]}, "pi": 3.14159})
    g1 = a.create_group("g1")
    g1.attrs["level"] = 1
    g2 = g1.create_group("g2")
    g3 = g2.create_group("g3")
    g3.attrs.update({"level": 3, "\u00fcnicode": "\u305f\U0001F600"})
    z = g3.create_dataset("deep", shape=(4, 5), chunks=(2, 2), dtype="<f4")
    z[...] = sample("<f4", (4, 5), rng)
    z.attrs.update({"units": "K", "_ARRAY_DIMENSIONS": ["y", "x"]})
    a.create_group("empty_group")
    # xarray writes float attributes such as _FillValue as bare NaN / Infinity tokens (Python's
    # json accepts them, strict JSON does not); _ARRAY_DIMENSIONS must still be found
    z = a.create_dataset("xarray_style", shape=(3, 4), chunks=(2, 2), dtype="<f4", fill_value=float("nan"))
    z[...] = sample("<f4", (3, 4), rng)
    z.attrs.update({"_FillValue": float("nan"), "valid_max": float("inf"), "valid_min": float("-inf"),
                    "_ARRAY_DIMENSIONS": ["lat", "lon"], "units": "K"})
    a.attrs["nan_attr"] = float("nan")
    z = a.create_dataset("dims3", shape=(2, 3, 4), chunks=(1, 3, 4), dtype="<i2")
    z[...] = sample("<i2", (2, 3, 4), rng)
    z.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    z = a.create_dataset("attrs_no_dims", shape=(3,), chunks=(3,), dtype="<i2")
    z[...] = [1, 2, 3]
    z.attrs.update({"long_name": "x" * 5000, "list": list(range(100))})
    ngrp = g.create_group("names")
    for nm in ["with space", "\u00fcn\u00efc\u00f6d\u00e9", "x..y", "trailing.", "-dash", "a=b,c"]:
        z = ngrp.create_dataset(nm, shape=(6,), chunks=(4,), dtype="<i4")
        z[...] = np.arange(6) * len(nm)

    # -- object dtypes: strings and bytes read as text, the others are listed, open EOPNOTSUPP
    ugrp = g.create_group("unsupported")
    z = ugrp.create_dataset("vlen_utf8", shape=(5,), chunks=(2,), dtype=object,
                            object_codec=numcodecs.VLenUTF8())
    z[...] = np.array(["a", "bb", "\u305f", "", "dddd"], dtype=object)
    z = ugrp.create_dataset("vlen_bytes", shape=(4,), chunks=(2,), dtype=object,
                            object_codec=numcodecs.VLenBytes())
    z[...] = np.array([b"a", b"bb", b"", b"ccc"], dtype=object)
    z = ugrp.create_dataset("json_obj", shape=(3,), chunks=(3,), dtype=object,
                            object_codec=numcodecs.JSON())
    z[...] = np.array([{"a": 1}, [1, 2], "x"], dtype=object)
    z = ugrp.create_dataset("vlen_array", shape=(3,), chunks=(2,), dtype=object,
                            object_codec=numcodecs.VLenArray("<i4"))
    z[...] = np.array([np.arange(2, dtype="<i4"), np.arange(3, dtype="<i4"), np.arange(0, dtype="<i4")],
                      dtype=object)
    z = ugrp.create_dataset("pickle_obj", shape=(2,), chunks=(2,), dtype=object,
                            object_codec=numcodecs.Pickle())
    z[...] = np.array([1, "x"], dtype=object)
    # a supported sibling in the same group
    z = ugrp.create_dataset("supported_sibling", shape=(5,), chunks=(2,), dtype="<i4")
    z[...] = np.arange(5)
    return root


def build_consolidated(root):
    """A consolidated hierarchy whose .zmetadata deliberately differs from the per-node files:
    an array whose .zarray was deleted, attributes changed on disk after consolidating.
    zarr.open_consolidated() gives the expected view."""
    if os.path.exists(root):
        shutil.rmtree(root)
    store = zarr.DirectoryStore(root)
    g = zarr.group(store=store)
    g.attrs["where"] = "consolidated root"
    rng = np.random.default_rng(7)
    s = g.create_group("sub")
    s.attrs["who"] = "sub"
    z = s.create_dataset("a", shape=(40, 30), chunks=(16, 16), dtype=">f4", fill_value=-9.0,
                         compressor=numcodecs.Blosc("lz4", 5, 1))
    z[...] = sample(">f4", (40, 30), rng)
    drop_chunks(z, lambda idx: idx == (1, 1))
    z.attrs["_ARRAY_DIMENSIONS"] = ["row", "col"]
    z = g.create_dataset("meta_only", shape=(100,), chunks=(30,), dtype="<i8", fill_value=42,
                         compressor=numcodecs.Zlib(1))
    z[...] = np.arange(100) * 3
    drop_chunks(z, lambda idx: idx == (1,))
    z = g.create_dataset("attrs_changed", shape=(5,), chunks=(5,), dtype="|u1")
    z[...] = np.arange(5)
    z.attrs["version"] = "consolidated"
    z = g.create_dataset("structured", shape=(6,), chunks=(4,), dtype=STRUCT, fill_value=None)
    z[...] = sample(STRUCT, (6,), rng)
    s.create_group("deeper").create_group("deepest").attrs["x"] = 1
    zarr.consolidate_metadata(store)
    # after consolidating: per-node documents no longer agree with .zmetadata
    os.unlink(os.path.join(root, "meta_only", ".zarray"))
    with open(os.path.join(root, "attrs_changed", ".zattrs"), "w") as f:
        json.dump({"version": "on disk, not consolidated"}, f)
    with open(os.path.join(root, ".zattrs"), "w") as f:
        json.dump({"where": "on disk root"}, f)
    # a node written after consolidating is not part of the consolidated view
    z = zarr.open_group(store, mode="r+").create_dataset("added_later", shape=(3,), dtype="<i2")
    z[...] = 1
    return root


def build_wide(root, n=600):
    """One group with many children with long names (readdir needs several buffers)."""
    if os.path.exists(root):
        shutil.rmtree(root)
    g = zarr.open_group(root, mode="w")
    for i in range(n):
        name = "array_%04d_%s" % (i, "abcdefghij" * 9)
        if i % 10 == 0:
            g.create_group(name.replace("array", "group"))
            continue
        z = g.create_dataset(name, shape=(i % 13 + 1,), chunks=(4,), dtype="<i2", compressor=None)
        z[...] = np.arange(i % 13 + 1) + i
    return root


def build_tinycache(root):
    """Arrays whose chunks / bands are larger than the 256 KiB cache the tests mount with."""
    if os.path.exists(root):
        shutil.rmtree(root)
    g = zarr.open_group(root, mode="w")
    z = g.create_dataset("one_chunk_4MiB", shape=(1024, 1024), chunks=(1024, 1024), dtype="<f4",
                         compressor=numcodecs.Zlib(1))
    z[...] = smooth("<f4", (1024, 1024))
    z = g.create_dataset("bands_512KiB", shape=(2048, 2048), chunks=(256, 256), dtype="|u1",
                         compressor=numcodecs.Blosc("lz4", 5, 1))
    z[...] = (np.arange(2048 * 2048) * 2654435761 % 251).astype("u1").reshape(2048, 2048)
    drop_chunks(z, lambda idx: idx == (2, 3))
    z = g.create_dataset("f_order_bands", shape=(600, 700), chunks=(200, 100), dtype=">f8",
                         order="F", compressor=numcodecs.Zstd(1))
    z[...] = smooth(">f8", (600, 700))
    return root


def build_huge(root):
    """Sparse arrays of 2^62 bytes (file offsets near the top of off_t); a few real chunks."""
    if os.path.exists(root):
        shutil.rmtree(root)
    g = zarr.open_group(root, mode="w")
    z = g.create_dataset("u1_2p62", shape=(2 ** 62,), chunks=(2 ** 20,), dtype="|u1", fill_value=7,
                         compressor=None)
    z[-5:] = [1, 2, 3, 4, 5]
    z[2 ** 61:2 ** 61 + 3] = [9, 9, 9]
    z = g.create_dataset("f8_2p59", shape=(2 ** 59,), chunks=(1000,), dtype="<f8", fill_value=1.5,
                         compressor=numcodecs.Zlib(1))
    z[-3:] = [9, 8, 7]
    z = g.create_dataset("u2_2d", shape=(2 ** 31, 2 ** 30), chunks=(1000, 1000), dtype=">u2",
                         fill_value=3, compressor=numcodecs.Zstd(1))
    z[-2:, -2:] = [[1, 2], [3, 4]]
    z[12345:12347, 2 ** 29:2 ** 29 + 2] = [[5, 6], [7, 8]]
    z = g.create_dataset("i4_4d", shape=(2 ** 15, 2 ** 15, 2 ** 15, 2 ** 14), chunks=(7, 9, 11, 13),
                         dtype="<i4", fill_value=-1, compressor=None, order="F")
    z[-1, -1, -1, -3:] = [10, 20, 30]
    return root


BIG_SHAPE = (2048, 4096)
BIG_CHUNKS = (256, 512)


def build_big(root):
    """64 MiB of int64 in 1 MiB zstd chunks: value = row * 1_000_003 + col * 7 (position-dependent)."""
    if os.path.exists(root):
        shutil.rmtree(root)
    z = zarr.open_array(root, mode="w", shape=BIG_SHAPE, chunks=BIG_CHUNKS, dtype="<i8",
                        compressor=numcodecs.Zstd(1), fill_value=-1)
    r = np.arange(BIG_SHAPE[0], dtype="<i8")[:, None] * 1000003
    c = np.arange(BIG_SHAPE[1], dtype="<i8")[None, :] * 7
    z[...] = r + c
    drop_chunks(z, lambda idx: idx == (3, 5))
    return root


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/zarrfs-gen"
    os.makedirs(out, exist_ok=True)
    for fn, name in [(build_main, "main.zarr"), (build_consolidated, "consolidated.zarr"),
                     (build_big, "big.zarr"), (build_wide, "wide.zarr"),
                     (build_tinycache, "tinycache.zarr"), (build_huge, "huge.zarr")]:
        p = fn(os.path.join(out, name))
        print("wrote", p)
    for what, why in SKIPPED:
        print("skipped %s: %s" % (what, why))
