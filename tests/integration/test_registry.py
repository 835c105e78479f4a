#!/usr/bin/python3
"""The zarr-extensions registry's own sample data (tests/fixtures/zarr-extensions, CC BY 3.0),
checked against the values its documents state.

* codecs/bitround/sample_data: two arrays stored with bitround (keepbits 3). The README's
  tables give each original value and its rounded form bit by bit: the mounted files must hold
  the rounded bits, and writing the original values through `-o rw` must store exactly the
  rounded bits (zarrfs's encoder against the document's table).
* codecs/n5_default/examples/zstd_array: the document's (empty) example array: every element
  the fill value, its metadata as stored.
"""

import json
import os
import re
import shutil
import struct
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402

REGISTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "zarr-extensions")
BITROUND = os.path.join(REGISTRY, "codecs", "bitround", "sample_data")
N5_EXAMPLE = os.path.join(REGISTRY, "codecs", "n5_default", "examples", "zstd_array")


def bitround_table(section):
    """[(original bits, rounded bits)] from the README's table under `### section`."""
    with open(os.path.join(BITROUND, "README.md")) as f:
        text = f.read()
    part = text.split("### `%s`" % section, 1)[1].split("###", 1)[0]
    rows = []
    for line in part.splitlines():
        bits = re.findall(r"`([01_]+)`", line)
        if len(bits) == 2:
            rows.append(tuple(int(b.replace("_", ""), 2) for b in bits))
    return rows


class Bitround(zfmount.TestCase):
    CASES = [("bitround_float32.zarr", "bitround_float32", "<I", 9),
             ("bitround_uint8.zarr", "bitround_uint8", "<B", 10)]

    def test_read_rounded_values(self):
        for store, section, fmt, n in self.CASES:
            rows = bitround_table(section + ".zarr")
            self.assertEqual(len(rows), n, section)
            want = b"".join(struct.pack(fmt, r) for _o, r in rows)
            with zfmount.Mount(os.path.join(BITROUND, store)) as m:
                self.assertEqual(os.listdir(m.mnt), [section])
                self.assertBytesEqual(zfmount.read_all(m.path(section)), want, section)

    def test_write_rounds_as_the_document_says(self):
        work = tempfile.mkdtemp(prefix="zarrfs-itest-registry-")
        try:
            for store, section, fmt, _n in self.CASES:
                rows = bitround_table(section + ".zarr")
                d = os.path.join(work, store)
                shutil.copytree(os.path.join(BITROUND, store), d)
                os.unlink(os.path.join(d, "c", "0"))
                with zfmount.Mount(d, options=["rw"]) as m:
                    with open(m.path(section), "r+b") as f:
                        f.write(b"".join(struct.pack(fmt, o) for o, _r in rows))
                with open(os.path.join(d, "c", "0"), "rb") as f:
                    got = f.read()
                self.assertBytesEqual(got, b"".join(struct.pack(fmt, r) for _o, r in rows),
                                      section + ": the stored chunk")
        finally:
            shutil.rmtree(work, ignore_errors=True)


class N5Example(zfmount.TestCase):
    def test_example_array(self):
        with open(os.path.join(N5_EXAMPLE, "zarr.json")) as f:
            meta = json.load(f)
        with zfmount.Mount(N5_EXAMPLE) as m:
            (name,) = os.listdir(m.mnt)
            self.assertEqual(name, "zstd_array")
            p = m.path(name)
            self.assertEqual(os.stat(p).st_size, 256 * 128 * 4)
            self.assertEqual(zfmount.read_all(p), bytes(256 * 128 * 4))   # fill_value 0
            self.assertEqual(json.loads(os.getxattr(p, "user.zarr.metadata")), meta)


if __name__ == "__main__":
    zfmount.main()
