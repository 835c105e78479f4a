"""Check zarrfs' encodings against numcodecs, for the codec unit tests (test_encode.c).

    encode_check.py CASES_FILE RESULTS_FILE

Run with a Python that has numcodecs and NumPy (Debian's /usr/bin/python3: numcodecs 0.11,
NumPy 1.24). CASES_FILE holds the cases back to back (one file: creating thousands of small
files is slow on some file systems), each a header line

  NAME DTYPE FLAGS CONFIG_LEN INPUT_LEN ENCODED_LEN

followed by CONFIG_LEN bytes of configuration, INPUT_LEN bytes of input and ENCODED_LEN bytes of
encoding, where
  DTYPE     the NumPy dtype of the input (what zarrfs was given to encode);
  FLAGS     comma-separated words, or "-": "identical" (numcodecs' own encode must give the same
            bytes), "lossy" (the decode is compared with numcodecs' encode -> decode of the input
            rather than with the input), "noref" (numcodecs cannot handle this configuration:
            nothing to check);
  config    a numcodecs configuration (JSON), or a list of them (filters first, compressor last,
            as Zarr v2 applies them);
  input     the input, raw (the flat buffer); encoding: zarrfs' encoding of it.

For every case, numcodecs decodes encoded.bin and the result must equal the input (lossy:
numcodecs' own round trip); and numcodecs encodes the input, to tell whether the bytes are
identical. Where numcodecs differs from itself:
  - gzip headers carry the time of writing: bytes 4-7 (mtime) are left out of the comparison
    when the last codec is gzip;
  - blosc with threads (numcodecs' default) lays the blocks out in the order its threads finish
    them, so equal inputs give different bytes from run to run; numcodecs is told to compress
    single-threaded (blosc.use_threads = False: blosc_compress_ctx with one thread), which is
    deterministic and is what zarrfs does;
  - numcodecs cannot decode some of its own encodings: an empty chunk compressed with zstd, lz4
    or blosc (0.11 takes a decoded size of 0 for an error) and .xz / .lzma streams whose
    configuration has "filters" (lzma.decompress takes filters only for raw streams). The first
    passes when zarrfs' bytes are identical to numcodecs' own; the second is decoded with
    "filters" dropped, which the stream does not need.
Configurations numcodecs 0.11 does not know in full (zstd "checksum", blosc "typesize") are
decoded with those keys dropped (decoding does not depend on them) and have no reference
encoding. Inputs are given to numcodecs as writable arrays (bitround rounds in place).

RESULTS_FILE gets one line per case: "<case> <decode ok|FAIL> <identical yes|no|n/a> <note>".
Exit status: 0 when every decode matched and every case flagged "identical" was; 1 otherwise;
3 when numcodecs cannot be imported.
"""
import json
import sys
import warnings

try:
    import numpy as np
    import numcodecs
except ImportError:
    sys.exit(3)

warnings.simplefilter("ignore")
numcodecs.blosc.use_threads = False

# Keys later numcodecs versions write that 0.11's constructors do not take; decoding does not
# depend on them.
NEWER_KEYS = {"zstd": {"checksum"}, "blosc": {"typesize"}}


def as_bytes(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return np.asarray(v).tobytes(order="A")


def decoder_for(cfg):
    cfg = dict(cfg)
    for k in NEWER_KEYS.get(cfg.get("id"), ()):
        cfg.pop(k, None)
    if cfg.get("id") == "lzma" and cfg.get("format", 1) != 3:
        cfg.pop("filters", None)
    return numcodecs.get_codec(cfg)


def decode(codecs, data):
    v = data
    for c in reversed(codecs):
        v = c.decode(v)
    return as_bytes(v)


def check(config, dtype, flags, raw, ours):
    cfg = json.loads(config)
    cfgs = cfg if isinstance(cfg, list) else [cfg]
    dtype = np.dtype(dtype)
    flags = flags.split(",")
    if "noref" in flags:
        return True, "n/a", "numcodecs cannot handle this configuration"
    x = np.frombuffer(raw, dtype=dtype).copy()

    # numcodecs' own encoding of the input.
    ref, note = None, ""
    try:
        codecs = [numcodecs.get_codec(dict(c)) for c in cfgs]
        v = x
        for c in codecs:
            v = c.encode(v)
        ref = as_bytes(v)
    except Exception as e:  # a configuration 0.11 does not know in full, or an input it refuses
        note = "numcodecs cannot encode: %s: %s" % (type(e).__name__, str(e)[:80])

    dcodecs = [decoder_for(c) for c in cfgs]
    if "lossy" in flags and ref is None:
        return False, "n/a", "lossy case without a reference encoding (" + note + ")"
    try:
        expected = decode(dcodecs, ref) if "lossy" in flags else raw
        got = decode(dcodecs, ours)
        ok = got == expected
        if not ok:
            note = "numcodecs decodes it to other bytes (%d, expected %d)" % (len(got),
                                                                               len(expected))
    except Exception as e:
        ok = ours == ref  # numcodecs cannot decode its own encoding either
        note = "numcodecs cannot decode it%s: %s: %s" % (
            " (nor its own identical encoding)" if ok else "", type(e).__name__, str(e)[:80])

    if ref is None:
        identical = "n/a"
    else:
        a, b = ref, ours
        if cfgs[-1].get("id") == "gzip" and len(a) >= 10 and len(b) >= 10:
            a, b = a[:4] + a[8:], b[:4] + b[8:]
        identical = "yes" if a == b else "no"
        if identical == "no" and ok:
            note = "numcodecs writes %d bytes, zarrfs %d" % (len(ref), len(ours))
    if "identical" in flags and identical != "yes":
        ok = False
        note = note or "not identical to numcodecs' encoding"
    return ok, identical, note


def main():
    cases, results = sys.argv[1], sys.argv[2]
    failed = 0
    lines = []
    with open(cases, "rb") as f:
        while True:
            head = f.readline()
            if not head:
                break
            name, dtype, flags, nc, ni, ne = head.decode().split()
            config, raw, ours = f.read(int(nc)), f.read(int(ni)), f.read(int(ne))
            try:
                ok, identical, note = check(config, dtype, flags, raw, ours)
            except Exception as e:  # a broken case
                ok, identical, note = False, "n/a", "%s: %s" % (type(e).__name__, e)
            failed += not ok
            lines.append("%s %s %s %s\n" % (name, "ok" if ok else "FAIL", identical,
                                             note.replace("\n", " ")))
    with open(results, "w") as f:
        f.writelines(lines)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
