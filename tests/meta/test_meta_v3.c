/* Unit tests for the final Zarr v3 parser, the v3 draft parsers (October 2020, May 2022) and
 * dialect detection: documents, data types, fill value bytes, chunk keys, exact error lines and
 * unsupported nodes. Expected bytes are written out by hand from the IEEE 754 / two's
 * complement definitions, never taken from the parser.
 *
 * The draft-2020 documents below are copied verbatim (re-serialised compactly with Python's
 * json.dumps) from what zarr-python 2.13.6 (Debian's python3-zarr) writes under
 * ZARR_V3_EXPERIMENTAL_API=1 with DirectoryStoreV3, e.g.
 *   root.create_dataset('g/a', shape=(10, 20), chunks=(3, 7), dtype='>i4', fill_value=-5,
 *                       compressor=numcodecs.GZip(level=1))
 * (its data keys were data/root/g/a/c0/0 ... and, for a 0-d array, data/root/c/c0). The
 * draft-2022 documents are built from the examples of the seed's "Array metadata" and "Entry
 * point metadata" sections. */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/meta.h"

#include "../check_main.h"
#include "../fixture_dir.h"

/* ----- helpers ----- */

#define BYTES_LE "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]"

/* A final-v3 array document, the defaults with `field` replaced by `value` (NULL: left out);
 * a field not among the defaults is added. */
static char *v3doc(const char *field, const char *value)
{
    static const char *names[] = {"zarr_format", "node_type",          "shape",
                                  "data_type",   "chunk_grid",         "chunk_key_encoding",
                                  "fill_value",  "codecs",             "attributes"};
    static const char *defaults[] = {
        "3",
        "\"array\"",
        "[4, 6]",
        "\"int32\"",
        "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, 3]}}",
        "{\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}",
        "0",
        BYTES_LE,
        "{\"a\": 1}"};
    char *s = malloc(8192);
    size_t o = (size_t)sprintf(s, "{");
    bool found = false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        bool this = field && strcmp(field, names[i]) == 0;
        found |= this;
        const char *v = this ? value : defaults[i];
        if (!v)
            continue;
        o += (size_t)sprintf(s + o, "%s\"%s\": %s", o > 1 ? ", " : "", names[i], v);
    }
    if (field && !found && value)
        o += (size_t)sprintf(s + o, ", \"%s\": %s", field, value);
    sprintf(s + o, "}");
    return s;
}

static zf_status parse3(const char *field, const char *value, zf_node_meta *m, zf_err *err)
{
    char *doc = v3doc(field, value);
    err->msg[0] = '\0';
    zf_status st = zf_meta_parse_v3("zarr.json", doc, strlen(doc), m, err);
    free(doc);
    return st;
}

static zf_status parse_text(const char *doc, zf_node_meta *m, zf_err *err)
{
    err->msg[0] = '\0';
    return zf_meta_parse_v3("zarr.json", doc, strlen(doc), m, err);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

/* ----- final v3: the zarrita fixtures ----- */

static int n_fixtures, n_arrays, n_string;

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    const char *base = strrchr(path, '/');
    if (type != FTW_F || strcmp(base ? base + 1 : path, "zarr.json") != 0)
        return 0;
    size_t len;
    char *text = read_file(path, &len);
    ck_assert_ptr_nonnull(text);
    zf_node_meta m;
    zf_err err = {""};
    zf_status st = zf_meta_parse_v3("zarr.json", text, len, &m, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s", path, err.msg);
    ck_assert_int_eq(m.format, ZF_FORMAT_V3);
    ck_assert_str_eq(m.metadata_json, text);
    ck_assert_ptr_nonnull(m.attributes_json);
    n_fixtures++;
    if (m.kind == ZF_NODE_ARRAY) {
        n_arrays++;
        if (strstr(text, "\"data_type\": \"string\"")) {
            /* zarr-python's variable-length strings: read as text (vlen-utf8) */
            n_string++;
            ck_assert_msg(m.unsupported == ZF_OK, "%s: %s", path, m.unsupported_why);
            ck_assert(zf_array_meta_is_text(&m.array));
            ck_assert_str_eq(zf_chain_text_codec(&m.array.chain), "vlen-utf8");
        } else {
            ck_assert_msg(m.unsupported == ZF_OK, "%s: %s", path, m.unsupported_why);
            ck_assert_uint_ge(m.array.chain.n, 1);
        }
    } else {
        ck_assert_int_eq(m.unsupported, ZF_OK);
    }
    zf_node_meta_free(&m);
    free(text);
    return 0;
}

START_TEST(zarrita_fixtures_parse)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/zarrita-fixtures/v3/data.zarr", zf_test_fixtures());
    n_fixtures = n_arrays = n_string = 0;
    ck_assert_int_eq(nftw(root, visit, 16, FTW_PHYS), 0);
    /* find .../v3/data.zarr -name zarr.json: 49 documents, 4 of them groups, 6 string arrays */
    ck_assert_int_eq(n_fixtures, 49);
    ck_assert_int_eq(n_arrays, 45);
    ck_assert_int_eq(n_string, 6);
}
END_TEST

static void fixture(const char *name, zf_node_meta *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/zarrita-fixtures/v3/data.zarr/%s/zarr.json",
             zf_test_fixtures(), name);
    size_t len;
    char *text = read_file(path, &len);
    ck_assert_msg(text != NULL, "%s", path);
    zf_err err = {""};
    ck_assert_msg(zf_meta_parse_v3("zarr.json", text, len, m, &err) == ZF_OK, "%s", err.msg);
    free(text);
}

START_TEST(zarrita_fixture_details)
{
    zf_node_meta m;
    char key[64];
    /* {"shape": [3, 3, 3], "data_type": "int16", chunk_shape [3, 3, 1], transpose [2, 1, 0],
     * bytes little, blosc} */
    fixture("3d.chunked.mixed.i2.F", &m);
    ck_assert_int_eq(m.kind, ZF_NODE_ARRAY);
    ck_assert_uint_eq(m.array.ndim, 3);
    ck_assert_uint_eq(m.array.shape[2], 3);
    ck_assert_uint_eq(m.array.chunks[0], 3);
    ck_assert_uint_eq(m.array.chunks[2], 1);
    ck_assert_str_eq(m.array.dtype_typestr, "<i2");
    ck_assert_uint_eq(m.array.dtype.itemsize, 2);
    ck_assert_str_eq(m.array.dtype_json, "\"int16\"");
    ck_assert_str_eq(m.array.fill_value_json, "0");
    ck_assert_uint_eq(m.array.chain.n, 3);
    ck_assert_ptr_null(m.array.dimension_names_json);
    uint64_t c[3] = {0, 2, 1};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "3d.chunked.mixed.i2.F", c, key,
                                             sizeof key),
                     ZF_OK);
    ck_assert_str_eq(key, "3d.chunked.mixed.i2.F/c/0/2/1");
    zf_node_meta_free(&m);

    /* "fill_value": false, "data_type": "bool" */
    fixture("1d.contiguous.b1", &m);
    ck_assert_str_eq(m.array.dtype_typestr, "|b1");
    ck_assert_uint_eq(m.array.fill_value[0], 0);
    zf_node_meta_free(&m);

    /* "dimension_names": null means unnamed */
    fixture("1d.chunked.i2", &m);
    ck_assert_ptr_null(m.array.dimension_names_json);
    zf_node_meta_free(&m);

    /* the root group: {"attributes": {}, "zarr_format": 3, "consolidated_metadata": null,
     * "node_type": "group"} */
    fixture(".", &m);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_str_eq(m.attributes_json, "{}");
    ck_assert_str_eq(m.metadata_key, "zarr.json");
    zf_node_meta_free(&m);

    fixture("my group with spaces", &m);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_str_eq(m.attributes_json, "{\"description\":\"A group with spaces in the name\"}");
    zf_node_meta_free(&m);
    /* a group without "attributes" at all: they default to {} */
    zf_err err = {""};
    const char *bare = "{\"zarr_format\": 3, \"node_type\": \"group\"}";
    ck_assert_int_eq(zf_meta_parse_v3("g/zarr.json", bare, strlen(bare), &m, &err), ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_str_eq(m.attributes_json, "{}");
    ck_assert_str_eq(m.metadata_key, "g/zarr.json");
    zf_node_meta_free(&m);

    /* inline consolidated metadata, "must_understand": false */
    fixture("consolidated/nested", &m);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_str_eq(m.attributes_json, "{\"description\":\"A nested group\"}");
    ck_assert_int_eq(m.unsupported, ZF_OK);
    zf_node_meta_free(&m);
}
END_TEST

/* ----- data types and fill values ----- */

static void v3fill_doc(const char *dtype, const char *fill, char *doc, size_t n)
{
    bool one_byte = (strstr(dtype, "int8") || strstr(dtype, "bool") || dtype[1] == 'r') &&
                    !strstr(dtype, "struct");
    snprintf(doc, n,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [5], \"data_type\": %s,"
             " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2]}},"
             " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": %s,"
             " \"codecs\": %s}",
             dtype, fill, one_byte ? "[{\"name\": \"bytes\"}]" : BYTES_LE);
}

/* Parse an array of data type `dtype` with fill value `fill`; check its flat typestr, item
 * size and fill bytes (written out in hex). */
static void v3fill(const char *dtype, const char *fill, const char *typestr, size_t itemsize,
                   const char *expect_hex)
{
    char doc[1024];
    v3fill_doc(dtype, fill, doc, sizeof doc);
    zf_node_meta m;
    zf_err err = {""};
    ck_assert_msg(parse_text(doc, &m, &err) == ZF_OK, "%s %s: %s", dtype, fill, err.msg);
    ck_assert_msg(m.unsupported == ZF_OK, "%s: %s", dtype, m.unsupported_why);
    ck_assert_str_eq(m.array.dtype_typestr, typestr);
    ck_assert_uint_eq(m.array.dtype.itemsize, itemsize);
    char got[256];
    hex(m.array.fill_value, itemsize, got);
    ck_assert_msg(strcmp(got, expect_hex) == 0, "%s fill %s: got %s, expected %s", dtype, fill,
                  got, expect_hex);
    if (!strchr(fill, '\\')) { /* the stored value, re-serialised compactly */
        char compact[256];
        size_t k = 0;
        for (const char *q = fill; *q; q++)
            if (*q != ' ')
                compact[k++] = *q;
        compact[k] = '\0';
        ck_assert_str_eq(m.array.fill_value_json, compact);
    }
    zf_node_meta_free(&m);
}

START_TEST(data_types)
{
    /* data-types.rst "Core data types": the flat encoding is little-endian */
    v3fill("\"bool\"", "true", "|b1", 1, "01");
    v3fill("\"int8\"", "-128", "|i1", 1, "80");
    v3fill("\"int16\"", "-2", "<i2", 2, "feff");
    v3fill("\"int32\"", "258", "<i4", 4, "02010000");
    v3fill("\"int64\"", "-9223372036854775808", "<i8", 8, "0000000000000080");
    v3fill("\"uint8\"", "255", "|u1", 1, "ff");
    v3fill("\"uint16\"", "65535", "<u2", 2, "ffff");
    v3fill("\"uint32\"", "4294967295", "<u4", 4, "ffffffff");
    v3fill("\"uint64\"", "18446744073709551615", "<u8", 8, "ffffffffffffffff");
    v3fill("\"float16\"", "1.5", "<f2", 2, "003e");
    v3fill("\"float32\"", "0.1", "<f4", 4, "cdcccc3d");
    v3fill("\"float64\"", "0.1", "<f8", 8, "9a9999999999b93f");
    v3fill("\"complex64\"", "[1.5, -2]", "<c8", 8, "0000c03f000000c0");
    v3fill("\"complex128\"", "[0, 1]", "<c16", 16, "0000000000000000000000000000f03f");
    v3fill("\"r8\"", "[7]", "|V1", 1, "07");
    v3fill("\"r24\"", "[1, 2, 3]", "|V3", 3, "010203");
    /* the extension-object form of a core type */
    v3fill("{\"name\": \"uint16\"}", "513", "<u2", 2, "0102");
    /* zarr-python 3's extension types */
    v3fill("{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"ns\","
           " \"scale_factor\": 1}}",
           "1", "<M8[ns]", 8, "0100000000000000");
    v3fill("{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"s\","
           " \"scale_factor\": 10}}",
           "\"NaT\"", "<M8[10s]", 8, "0000000000000080");
    v3fill("{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"μs\","
           " \"scale_factor\": 1}}",
           "-9223372036854775808", "<m8[us]", 8, "0000000000000080");
    v3fill("{\"name\": \"numpy.timedelta64\", \"configuration\": {\"unit\": \"generic\","
           " \"scale_factor\": 1}}",
           "-2", "<m8", 8, "feffffffffffffff");
    v3fill("{\"name\": \"fixed_length_utf32\", \"configuration\": {\"length_bytes\": 12}}",
           "\"h\\u00e9\"", "<U3", 12, "68000000e900000000000000");
    v3fill("{\"name\": \"fixed_length_utf32\", \"configuration\": {\"length_bytes\": 20}}",
           "\"\"", "<U5", 20, "0000000000000000000000000000000000000000");
}
END_TEST

START_TEST(fill_values)
{
    /* data-types.rst "Permitted fill values", IEEE 754 bit patterns (little-endian bytes) */
    v3fill("\"float32\"", "\"NaN\"", "<f4", 4, "0000c07f");
    v3fill("\"float32\"", "\"0x7fc00001\"", "<f4", 4, "0100c07f"); /* a NaN payload, kept */
    v3fill("\"float32\"", "\"0xFF800000\"", "<f4", 4, "000080ff");
    v3fill("\"float32\"", "\"Infinity\"", "<f4", 4, "0000807f");
    v3fill("\"float32\"", "16777217", "<f4", 4, "0000804b"); /* 2^24+1: ties to even, 2^24 */
    v3fill("\"float32\"", "1e39", "<f4", 4, "0000807f");     /* past FLT_MAX */
    v3fill("\"float64\"", "\"NaN\"", "<f8", 8, "000000000000f87f");
    v3fill("\"float64\"", "\"-Infinity\"", "<f8", 8, "000000000000f0ff");
    v3fill("\"float64\"", "\"0x7ff0000000000001\"", "<f8", 8, "010000000000f07f"); /* sNaN */
    v3fill("\"float64\"", "-0.0", "<f8", 8, "0000000000000080");
    v3fill("\"float64\"", "3", "<f8", 8, "0000000000000840");
    v3fill("\"float16\"", "\"NaN\"", "<f2", 2, "007e");
    v3fill("\"float16\"", "65520", "<f2", 2, "007c"); /* halfway past 65504: to even, inf */
    v3fill("\"float16\"", "\"0x7c01\"", "<f2", 2, "017c");
    v3fill("\"complex64\"", "[\"NaN\", \"-Infinity\"]", "<c8", 8, "0000c07f000080ff");
    v3fill("\"complex128\"", "[1.5, \"0x7ff8000000000001\"]", "<c16", 16,
           "000000000000f83f010000000000f87f");
    v3fill("\"int32\"", "-2147483648", "<i4", 4, "00000080");
    v3fill("\"bool\"", "false", "|b1", 1, "00");
    v3fill("\"bool\"", "0", "|b1", 1, "00"); /* as zarrita.js 0.7 writes it */
    v3fill("\"bool\"", "1", "|b1", 1, "01");
    /* Python's bare NaN token, as some writers emit it */
    v3fill("\"float32\"", "NaN", "<f4", 4, "0000c07f");
}
END_TEST

/* The zarr-extensions registry's types: each README's "Fill value representation" (the
 * "NaN" constants it names: bfloat16 0x7fc0, float8_e4m3 0x7c, float8_e3m4 0x78, float8_e5m2
 * 0x7e, the fnuz types 0x80, float8_e8m0fnu 0xff) and its bit layout ("Codec compatibility":
 * 0bSEEEEMMM, ...), worked out here by hand; data-types/struct's byte layout examples. */
START_TEST(registry_data_types)
{
    v3fill("\"bfloat16\"", "\"NaN\"", "bfloat16", 2, "c07f");
    v3fill("\"bfloat16\"", "1.5", "bfloat16", 2, "c03f");          /* 0 01111111 1000000 */
    v3fill("\"bfloat16\"", "\"-Infinity\"", "bfloat16", 2, "80ff");
    v3fill("\"bfloat16\"", "\"0x7f81\"", "bfloat16", 2, "817f");   /* a NaN payload, kept */
    v3fill("{\"name\": \"bfloat16\"}", "-2", "bfloat16", 2, "00c0");
    v3fill("\"float8_e3m4\"", "\"NaN\"", "float8_e3m4", 1, "78");
    v3fill("\"float8_e3m4\"", "15.5", "float8_e3m4", 1, "6f");     /* 0 110 1111 */
    v3fill("\"float8_e4m3\"", "\"NaN\"", "float8_e4m3", 1, "7c");
    v3fill("\"float8_e4m3\"", "\"Infinity\"", "float8_e4m3", 1, "78");
    v3fill("\"float8_e4m3\"", "240", "float8_e4m3", 1, "77");      /* 0 1110 111 */
    v3fill("\"float8_e4m3\"", "-0.0", "float8_e4m3", 1, "80");
    v3fill("\"float8_e4m3\"", "\"0x01\"", "float8_e4m3", 1, "01");  /* 2^-9 */
    v3fill("\"float8_e4m3b11fnuz\"", "\"NaN\"", "float8_e4m3b11fnuz", 1, "80");
    v3fill("\"float8_e4m3b11fnuz\"", "30", "float8_e4m3b11fnuz", 1, "7f");
    v3fill("\"float8_e4m3fnuz\"", "\"NaN\"", "float8_e4m3fnuz", 1, "80");
    v3fill("\"float8_e4m3fnuz\"", "-0.0", "float8_e4m3fnuz", 1, "00"); /* no negative zero */
    v3fill("\"float8_e5m2\"", "\"NaN\"", "float8_e5m2", 1, "7e");
    v3fill("\"float8_e5m2\"", "57344", "float8_e5m2", 1, "7b");    /* 0 11110 11 */
    v3fill("\"float8_e5m2fnuz\"", "57344", "float8_e5m2fnuz", 1, "7f");
    v3fill("\"float8_e8m0fnu\"", "\"NaN\"", "float8_e8m0fnu", 1, "ff");
    v3fill("\"float8_e8m0fnu\"", "1", "float8_e8m0fnu", 1, "7f");  /* 2^(127 - 127) */
    v3fill("\"float8_e8m0fnu\"", "0.25", "float8_e8m0fnu", 1, "7d");
    v3fill("\"float6_e2m3fn\"", "7.5", "float6_e2m3fn", 1, "1f");  /* 0 11 111 */
    v3fill("\"float6_e2m3fn\"", "\"0x3f\"", "float6_e2m3fn", 1, "3f");
    v3fill("\"float6_e3m2fn\"", "-28", "float6_e3m2fn", 1, "3f");  /* 1 111 11 */
    v3fill("\"float6_e3m2fn\"", "0.0625", "float6_e3m2fn", 1, "01"); /* subnormal 2^-2 * 1/4 */
    v3fill("\"float4_e2m1fn\"", "6", "float4_e2m1fn", 1, "07");    /* 0 11 1 */
    v3fill("\"float4_e2m1fn\"", "-0.5", "float4_e2m1fn", 1, "09"); /* 1 00 1 */
    v3fill("\"float4_e2m1fn\"", "\"0x0f\"", "float4_e2m1fn", 1, "0f");
    v3fill("\"int4\"", "-8", "int4", 1, "f8");                     /* sign-extended int8 */
    v3fill("\"int4\"", "7", "int4", 1, "07");
    v3fill("\"int2\"", "-2", "int2", 1, "fe");
    v3fill("\"uint4\"", "15", "uint4", 1, "0f");
    v3fill("\"uint2\"", "3", "uint2", 1, "03");
    v3fill("\"complex_float32\"", "[1.5, -2]", "<c8", 8, "0000c03f000000c0");
    v3fill("\"complex_float64\"", "[0, 1]", "<c16", 16, "0000000000000000000000000000f03f");
    v3fill("\"complex_float16\"", "[1, \"NaN\"]", "complex_float16", 4, "003c007e");
    v3fill("\"complex_bfloat16\"", "[\"Infinity\", 0]", "complex_bfloat16", 4, "807f0000");
    v3fill("\"complex_float8_e4m3\"", "[1, -1]", "complex_float8_e4m3", 2, "38b8");
    v3fill("\"complex_float8_e5m2fnuz\"", "[\"NaN\", 0]", "complex_float8_e5m2fnuz", 2, "8000");
    v3fill("\"complex_float6_e3m2fn\"", "[1, 28]", "complex_float6_e3m2fn", 2, "0c1f");
    v3fill("\"complex_float4_e2m1fn\"", "[0.5, 6]", "complex_float4_e2m1fn", 2, "0107");
    /* struct: "id" int32, "flags" uint8, "value" float64: 13 bytes, offsets 0, 4, 5 */
    v3fill("{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"id\", "
           "\"data_type\": \"int32\"}, {\"name\": \"flags\", \"data_type\": \"uint8\"}, "
           "{\"name\": \"value\", \"data_type\": \"float64\"}]}}",
           "{\"id\": -1, \"flags\": 7, \"value\": 1}",
           "[[\"id\",\"<i4\"],[\"flags\",\"|u1\"],[\"value\",\"<f8\"]]", 13,
           "ffffffff07000000000000f03f");
    /* nested: point (x, y float32) at 0, value float64 at 8: 16 bytes */
    v3fill("{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"point\", "
           "\"data_type\": {\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": "
           "\"x\", \"data_type\": \"float32\"}, {\"name\": \"y\", \"data_type\": \"float32\"}]}}},"
           " {\"name\": \"value\", \"data_type\": {\"name\": \"float64\"}}]}}",
           "{\"point\": {\"x\": 1, \"y\": 2}, \"value\": 3}",
           "[[\"point\",[[\"x\",\"<f4\"],[\"y\",\"<f4\"]]],[\"value\",\"<f8\"]]", 16,
           "0000803f000000400000000000000840");
    /* a field NumPy has no type for: user.zarr.dtype is the data type itself */
    v3fill("{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"a\", "
           "\"data_type\": \"bfloat16\"}, {\"name\": \"b\", \"data_type\": \"uint8\"}]}}",
           "{\"a\": \"NaN\", \"b\": 1}",
           "{\"name\":\"struct\",\"configuration\":{\"fields\":[{\"name\":\"a\",\"data_type\":"
           "\"bfloat16\"},{\"name\":\"b\",\"data_type\":\"uint8\"}]}}", 3, "c07f01");
}
END_TEST

static const struct {
    const char *dtype, *fill, *msg;
} BAD_FILL[] = {
    {"\"int8\"", "128", "zarr.json: \"fill_value\": integer out of range for data type \"int8\""},
    {"\"uint8\"", "-1", "zarr.json: \"fill_value\": integer out of range for data type \"uint8\""},
    {"\"uint64\"", "18446744073709551616",
     "zarr.json: \"fill_value\": integer out of range for data type \"uint64\""},
    {"\"int32\"", "1.0", "zarr.json: \"fill_value\": expected an integer for data type \"int32\""},
    {"\"int32\"", "\"0x01\"", "zarr.json: \"fill_value\": expected an integer for data type \"int32\""},
    {"\"int32\"", "null", "zarr.json: \"fill_value\": expected an integer for data type \"int32\""},
    {"\"bool\"", "2",
     "zarr.json: \"fill_value\": expected true or false (or the integers 0 and 1) for data type "
     "\"bool\""},
    {"\"bool\"", "1.0",
     "zarr.json: \"fill_value\": expected true or false (or the integers 0 and 1) for data type "
     "\"bool\""},
    {"\"bool\"", "\"0\"",
     "zarr.json: \"fill_value\": expected true or false (or the integers 0 and 1) for data type "
     "\"bool\""},
    {"\"bool\"", "-1",
     "zarr.json: \"fill_value\": expected true or false (or the integers 0 and 1) for data type "
     "\"bool\""},
    {"\"float32\"", "\"nan\"",
     "zarr.json: \"fill_value\": expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
     "\"0x...\" for data type \"float32\""},
    {"\"float32\"", "\"0x7fc0000001\"",
     "zarr.json: \"fill_value\": expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
     "\"0x...\" for data type \"float32\""},
    {"\"float64\"", "\"0b0\"",
     "zarr.json: \"fill_value\": expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
     "\"0x...\" for data type \"float64\""},
    {"\"complex64\"", "[1]",
     "zarr.json: \"fill_value\": expected [real, imag] with each a number, \"NaN\", "
     "\"Infinity\", \"-Infinity\" or \"0x...\" for data type \"complex64\""},
    {"\"r16\"", "[1]",
     "zarr.json: \"fill_value\": expected a list of 2 integers in [0, 255] for data type \"r16\""},
    {"\"r8\"", "[256]",
     "zarr.json: \"fill_value\": expected a list of 1 integers in [0, 255] for data type \"r8\""},
    {"{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"s\", \"scale_factor\": 1}}",
     "\"2000-01-01\"",
     "zarr.json: \"fill_value\": expected a 64-bit integer or \"NaT\" for data type "
     "\"numpy.datetime64\""},
    {"{\"name\": \"fixed_length_utf32\", \"configuration\": {\"length_bytes\": 4}}", "0",
     "zarr.json: \"fill_value\": expected a string for data type \"fixed_length_utf32\""},
    /* the registry's types: what each README says is "not supported" */
    {"\"float4_e2m1fn\"", "\"NaN\"",
     "zarr.json: \"fill_value\": \"NaN\" (the type has no NaN) for data type \"float4_e2m1fn\""},
    {"\"float6_e2m3fn\"", "\"-Infinity\"",
     "zarr.json: \"fill_value\": an infinity (the type has none) for data type "
     "\"float6_e2m3fn\""},
    {"\"float8_e4m3fnuz\"", "\"Infinity\"",
     "zarr.json: \"fill_value\": an infinity (the type has none) for data type "
     "\"float8_e4m3fnuz\""},
    {"\"float4_e2m1fn\"", "7",
     "zarr.json: \"fill_value\": a number beyond the type's range for data type "
     "\"float4_e2m1fn\""},
    {"\"float8_e8m0fnu\"", "-1",
     "zarr.json: \"fill_value\": a negative number for a type without sign for data type "
     "\"float8_e8m0fnu\""},
    {"\"float4_e2m1fn\"", "\"0x1f\"",
     "zarr.json: \"fill_value\": expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
     "\"0x...\" for data type \"float4_e2m1fn\""},
    {"\"int4\"", "8", "zarr.json: \"fill_value\": integer out of range for data type \"int4\""},
    {"\"int2\"", "-3", "zarr.json: \"fill_value\": integer out of range for data type \"int2\""},
    {"\"uint2\"", "4", "zarr.json: \"fill_value\": integer out of range for data type \"uint2\""},
    {"{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"x\", "
     "\"data_type\": \"float32\"}, {\"name\": \"y\", \"data_type\": \"float32\"}]}}",
     "{\"x\": 1}",
     "zarr.json: \"fill_value\": field \"y\": missing"},
    {"{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"x\", "
     "\"data_type\": \"float32\"}]}}",
     "{\"x\": 1, \"z\": 2}",
     "zarr.json: \"fill_value\": \"z\" is not a field for data type \"struct\""},
    {"{\"name\": \"struct\", \"configuration\": {\"fields\": [{\"name\": \"x\", "
     "\"data_type\": \"float32\"}]}}",
     "0",
     "zarr.json: \"fill_value\": expected an object with one member per field for data type "
     "\"struct\""},
};

START_TEST(bad_fill_values)
{
    for (size_t i = 0; i < sizeof BAD_FILL / sizeof *BAD_FILL; i++) {
        char doc[1024];
        v3fill_doc(BAD_FILL[i].dtype, BAD_FILL[i].fill, doc, sizeof doc);
        zf_node_meta m;
        zf_err err;
        ck_assert_msg(parse_text(doc, &m, &err) == ZF_ERR_INVALID, "%s %s", BAD_FILL[i].dtype,
                      BAD_FILL[i].fill);
        ck_assert_str_eq(err.msg, BAD_FILL[i].msg);
    }
}
END_TEST

/* ----- final v3: documents ----- */

START_TEST(valid_array)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse3("dimension_names", "[\"y\", null]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.format, ZF_FORMAT_V3);
    ck_assert_int_eq(m.kind, ZF_NODE_ARRAY);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_uint_eq(m.array.ndim, 2);
    ck_assert_uint_eq(m.array.shape[0], 4);
    ck_assert_uint_eq(m.array.shape[1], 6);
    ck_assert_uint_eq(m.array.chunks[0], 2);
    ck_assert_uint_eq(m.array.chunks[1], 3);
    ck_assert_int_eq(m.array.dtype.kind, 'i');
    ck_assert_int_eq(m.array.dtype.byteorder, '<');
    ck_assert_str_eq(m.array.dtype_typestr, "<i4");
    ck_assert_str_eq(m.array.dtype_json, "\"int32\"");
    ck_assert_str_eq(m.array.dimension_names_json, "[\"y\",null]");
    ck_assert_str_eq(m.attributes_json, "{\"a\":1}");
    ck_assert_str_eq(m.metadata_key, "zarr.json");
    ck_assert_ptr_nonnull(strstr(m.metadata_json, "\"dimension_names\": [\"y\", null]"));
    ck_assert_uint_eq(m.array.chain.n, 1); /* bytes */
    ck_assert_uint_eq(zf_array_meta_chunk_elems(&m.array), 6);
    zf_node_meta_free(&m);

    /* attributes are optional; an empty "storage_transformers" is none */
    ck_assert_int_eq(parse3("attributes", NULL, &m, &err), ZF_OK);
    ck_assert_str_eq(m.attributes_json, "{}");
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse3("storage_transformers", "[]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    zf_node_meta_free(&m);

    /* a 0-d array */
    const char *scalar =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [], \"data_type\": \"float64\","
        " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": []}},"
        " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": \"-Infinity\","
        " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]}";
    ck_assert_int_eq(parse_text(scalar, &m, &err), ZF_OK);
    ck_assert_uint_eq(m.array.ndim, 0);
    ck_assert_uint_eq(zf_array_meta_chunk_elems(&m.array), 1);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    char key[32];
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "", NULL, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "c");
    zf_node_meta_free(&m);

    /* the spec's own example ("Array metadata", "Example") */
    const char *example =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10000, 1000],"
        " \"dimension_names\": [\"rows\", \"columns\"], \"data_type\": \"float64\","
        " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [1000, 100]}},"
        " \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}},"
        " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}],"
        " \"fill_value\": \"NaN\", \"attributes\": {\"foo\": 42, \"bar\": \"apples\","
        " \"baz\": [1, 2, 3, 4]}}";
    ck_assert_int_eq(parse_text(example, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dimension_names_json, "[\"rows\",\"columns\"]");
    ck_assert_str_eq(m.array.fill_value_json, "\"NaN\"");
    ck_assert_str_eq(m.attributes_json, "{\"foo\":42,\"bar\":\"apples\",\"baz\":[1,2,3,4]}");
    zf_node_meta_free(&m);

    /* the spec's group example */
    const char *group = "{\"zarr_format\": 3, \"node_type\": \"group\","
                        " \"attributes\": {\"spam\": \"ham\", \"eggs\": 42}}";
    ck_assert_int_eq(parse_text(group, &m, &err), ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_str_eq(m.attributes_json, "{\"spam\":\"ham\",\"eggs\":42}");
    zf_node_meta_free(&m);
}
END_TEST

static const struct {
    const char *field, *value, *msg;
} BAD[] = {
    {"zarr_format", "2", "zarr.json: \"zarr_format\": expected 3"},
    {"zarr_format", NULL, "zarr.json: \"zarr_format\": missing"},
    {"node_type", "\"dataset\"", "zarr.json: \"node_type\": expected \"group\" or \"array\""},
    {"node_type", NULL, "zarr.json: \"node_type\": missing"},
    {"shape", "\"10\"", "zarr.json: \"shape\": expected a list of non-negative integers"},
    {"shape", "[4, -6]", "zarr.json: \"shape\": expected a list of non-negative integers"},
    {"shape", NULL, "zarr.json: \"shape\": missing"},
    {"shape", "[4294967296, 4294967296]",
     "zarr.json: \"shape\": the array holds more than 2^63 bytes"},
    {"chunk_grid", NULL, "zarr.json: \"chunk_grid\": missing"},
    {"chunk_grid", "[2, 3]",
     "zarr.json: \"chunk_grid\": expected an object with \"name\" and \"configuration\""},
    {"chunk_grid", "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, 0]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shape\" must be a list of positive integers"},
    {"chunk_grid", "{\"name\": \"regular\"}",
     "zarr.json: \"chunk_grid\": \"chunk_shape\" must be a list of positive integers"},
    {"chunk_grid", "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2]}}",
     "zarr.json: \"chunk_grid\": \"chunk_shape\" must have as many entries as \"shape\" (2)"},
    {"chunk_key_encoding", "{\"name\": \"default\", \"configuration\": {\"separator\": \"-\"}}",
     "zarr.json: \"chunk_key_encoding\": \"separator\" must be \"/\" or \".\""},
    {"chunk_key_encoding", NULL, "zarr.json: \"chunk_key_encoding\": missing"},
    {"data_type", NULL, "zarr.json: \"data_type\": missing"},
    {"data_type", "\"r7\"",
     "zarr.json: \"data_type\": data type \"r7\": the number of bits must be a positive "
     "multiple of 8"},
    {"data_type", "7",
     "zarr.json: \"data_type\": expected a data type name or an object with \"name\""},
    {"data_type", "{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"xs\"}}",
     "zarr.json: \"data_type\": data type \"numpy.datetime64\": \"unit\" must be one of Y, M, W, "
     "D, h, m, s, ms, us, μs, ns, ps, fs, as, generic"},
    {"data_type",
     "{\"name\": \"numpy.datetime64\", \"configuration\": {\"unit\": \"s\", \"scale_factor\": 0}}",
     "zarr.json: \"data_type\": data type \"numpy.datetime64\": \"scale_factor\" must be an "
     "integer in [1, 2147483647]"},
    {"data_type", "{\"name\": \"fixed_length_utf32\", \"configuration\": {\"length_bytes\": 6}}",
     "zarr.json: \"data_type\": data type \"fixed_length_utf32\": \"length_bytes\" must be a "
     "multiple of 4 in [0, 2147483644]"},
    {"fill_value", NULL, "zarr.json: \"fill_value\": missing"},
    {"codecs", NULL, "zarr.json: \"codecs\": missing"},
    {"codecs", "{}", "zarr.json: \"codecs\": expected a list of codecs"},
    {"attributes", "[]", "zarr.json: \"attributes\": expected a JSON object"},
    {"dimension_names", "[\"x\"]",
     "zarr.json: \"dimension_names\": expected null or a list of 2 strings or nulls, one per "
     "dimension of \"shape\""},
    {"dimension_names", "[\"x\", 3]",
     "zarr.json: \"dimension_names\": expected null or a list of 2 strings or nulls, one per "
     "dimension of \"shape\""},
    {"storage_transformers", "{}",
     "zarr.json: \"storage_transformers\": expected a list of storage transformers"},
};

START_TEST(bad_documents)
{
    zf_node_meta m;
    zf_err err;
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        ck_assert_msg(parse3(BAD[i].field, BAD[i].value, &m, &err) == ZF_ERR_INVALID, "%s %s",
                      BAD[i].field, BAD[i].value ? BAD[i].value : "(absent)");
        ck_assert_str_eq(err.msg, BAD[i].msg);
    }
    ck_assert_int_eq(parse_text("{\"zarr_format\": 3,", &m, &err), ZF_ERR_INVALID);
    ck_assert_msg(strncmp(err.msg, "zarr.json: not valid JSON", 25) == 0, "%s", err.msg);
    ck_assert_int_eq(zf_meta_parse_v3("a/b/zarr.json", "[3]", 3, &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "a/b/zarr.json: expected a JSON object");
    /* an empty list is zarrita.js's way of saying raw little-endian bytes */
    ck_assert_int_eq(parse3("codecs", "[]", &m, &err), ZF_OK);
    ck_assert_uint_eq(m.array.chain.n, 1);
    ck_assert_str_eq(m.array.chain.codecs[0]->ops->name, "bytes");
    zf_node_meta_free(&m);
    /* a codec list the codec layer refuses (no array -> bytes codec) is invalid, named */
    ck_assert_int_eq(parse3("codecs", "[{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]",
                            &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_msg(strncmp(err.msg, "zarr.json: \"codecs\": ", 21) == 0, "%s", err.msg);
    /* groups: the same "zarr_format" and "attributes" rules */
    ck_assert_int_eq(parse_text("{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": 1}",
                                &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: \"attributes\": expected a JSON object");
}
END_TEST

static const struct {
    const char *field, *value, *why;
} UNSUPPORTED[] = {
    {"data_type", "\"float8_e4m3fn\"", /* not in the registry (float8_e4m3 is) */
     "zarr.json: \"data_type\": data type \"float8_e4m3fn\" is not supported"},
    {"data_type", "{\"name\": \"bfloat8\"}",
     "zarr.json: \"data_type\": data type \"bfloat8\" is not supported"},
    {"data_type", "\"<f8\"", "zarr.json: \"data_type\": data type \"<f8\" is not supported"},
    /* variable-length bytes read as text, but only through an object codec (vlen-bytes) */
    {"data_type", "\"variable_length_bytes\"",
     "zarr.json: \"codecs\": bytes: data type |O0 has no binary representation"},
    {"data_type", "\"bytes\"",
     "zarr.json: \"codecs\": bytes: data type |O0 has no binary representation"},
    {"chunk_grid", "{\"name\": \"zarrs.regular_bounded\", \"configuration\": {}}",
     "zarr.json: \"chunk_grid\": chunk grid \"zarrs.regular_bounded\" is not supported"},
    {"chunk_key_encoding", "{\"name\": \"hashed\"}",
     "zarr.json: \"chunk_key_encoding\": chunk key encoding \"hashed\" is not supported"},
    {"storage_transformers", "[{\"name\": \"chunk-manifest-json\", \"configuration\": {}}]",
     "zarr.json: \"storage_transformers\": storage transformer \"chunk-manifest-json\" is not "
     "supported"},
    {"spatial_index", "{\"name\": \"rtree\", \"must_understand\": true}",
     "zarr.json: \"spatial_index\": unknown metadata field (not marked \"must_understand\": "
     "false) is not supported"},
    {"foo", "1",
     "zarr.json: \"foo\": unknown metadata field (not marked \"must_understand\": false) is not "
     "supported"},
};

START_TEST(unsupported_is_not_invalid)
{
    zf_node_meta m;
    zf_err err;
    for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof *UNSUPPORTED; i++) {
        ck_assert_msg(parse3(UNSUPPORTED[i].field, UNSUPPORTED[i].value, &m, &err) == ZF_OK,
                      "%s: %s", UNSUPPORTED[i].value, err.msg);
        ck_assert_int_eq(m.kind, ZF_NODE_ARRAY);
        ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
        ck_assert_str_eq(m.unsupported_why, UNSUPPORTED[i].why);
        ck_assert_ptr_nonnull(m.metadata_json);
        ck_assert_ptr_nonnull(m.array.dtype_json);
        zf_node_meta_free(&m);
    }
    /* an unknown data type has no flat encoding: no typestr (hence no user.zarr.dtype) */
    ck_assert_int_eq(parse3("data_type", "\"float8_e4m3fn\"", &m, &err), ZF_OK);
    ck_assert_ptr_null(m.array.dtype_typestr);
    ck_assert_str_eq(m.array.dtype_json, "\"float8_e4m3fn\"");
    zf_node_meta_free(&m);
    /* "string" with the vlen-utf8 codec: text; user.zarr.dtype names the stored type */
    ck_assert_int_eq(parse3("data_type", "\"string\"", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED); /* with parse3's bytes codec */
    zf_node_meta_free(&m);
    /* an unknown codec, named */
    ck_assert_int_eq(parse3("codecs", "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}},"
                            " {\"name\": \"zfp_nonexistent\"}]",
                            &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strncmp(m.unsupported_why, "zarr.json: \"codecs\": ", 21) == 0 &&
                      strstr(m.unsupported_why, "zfp_nonexistent"),
                  "%s", m.unsupported_why);
    ck_assert_uint_eq(m.array.chain.n, 0);
    zf_node_meta_free(&m);
    /* 80 GB chunks */
    ck_assert_int_eq(parse3("chunk_grid",
                            "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [100000,"
                            " 100000]}}",
                            &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why,
                     "zarr.json: \"chunk_grid\": a chunk holds more than 2147483648 bytes, "
                     "zarrfs's limit");
    zf_node_meta_free(&m);
    /* chunks past 2^63 bytes */
    ck_assert_int_eq(parse3("chunk_grid",
                            "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
                            "[4294967296, 4294967296]}}",
                            &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
    /* an unknown field of a group, too */
    ck_assert_int_eq(parse_text("{\"zarr_format\": 3, \"node_type\": \"group\", \"x\": {}}", &m,
                                &err),
                     ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why,
                     "zarr.json: \"x\": unknown metadata field (not marked \"must_understand\": "
                     "false) is not supported");
    zf_node_meta_free(&m);
}
END_TEST

/* A shard (the chunk grid's chunk) past zarrfs's chunk limit is fine when its inner chunks,
 * which are what gets decoded, are within it. */
START_TEST(large_shards)
{
    static const char *fmt =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [200000, 200000],"
        " \"data_type\": \"int32\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
        " {\"chunk_shape\": [100000, 100000]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
        " \"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\":"
        " {\"chunk_shape\": [%s], \"codecs\": [{\"name\": \"bytes\", \"configuration\":"
        " {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\":"
        " {\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]}";
    char doc[1024];
    zf_node_meta m;
    zf_err err;
    snprintf(doc, sizeof doc, fmt, "1000, 1000"); /* 4 MB inner chunks of 40 GB shards */
    ck_assert_msg(parse_text(doc, &m, &err) == ZF_OK, "%s", err.msg);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_uint_eq(m.array.chain.n, 1);
    zf_node_meta_free(&m);
    snprintf(doc, sizeof doc, fmt, "50000, 100000"); /* 20 GB inner chunks */
    ck_assert_msg(parse_text(doc, &m, &err) == ZF_OK, "%s", err.msg);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why,
                     "zarr.json: \"chunk_grid\": a chunk holds more than 2147483648 bytes, "
                     "zarrfs's limit");
    ck_assert_uint_eq(m.array.chain.n, 0);
    zf_node_meta_free(&m);
}
END_TEST

START_TEST(must_understand_false_is_ignored)
{
    zf_node_meta m;
    zf_err err;
    /* core.rst "must_understand": "An extension object MAY explicitly set must_understand=False
     * if implementations can ignore its presence." */
    ck_assert_int_eq(parse3("provenance", "{\"name\": \"prov\", \"must_understand\": false,"
                                          " \"configuration\": {\"by\": \"me\"}}",
                            &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_uint_eq(m.array.chain.n, 1);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse3("storage_transformers",
                            "[{\"name\": \"cache\", \"must_understand\": false}]", &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse_text("{\"zarr_format\": 3, \"node_type\": \"group\","
                                " \"x\": {\"must_understand\": false}}",
                                &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    zf_node_meta_free(&m);
    /* a codec marked may-be-ignored that zarrfs does not know is left out */
    ck_assert_int_eq(parse3("codecs",
                            "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
                            " {\"name\": \"unknown_checksum\","
                            " \"must_understand\": false}]",
                            &m, &err),
                     ZF_OK);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_uint_eq(m.array.chain.n, 1);
    zf_node_meta_free(&m);
}
END_TEST

static void key_of(const char *field, const char *value, unsigned ndim, const uint64_t *coords,
                   const char *prefix, const char *expect)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_msg(parse3(field, value, &m, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(m.array.ndim, 2);
    m.array.ndim = ndim; /* the key encoding does not depend on the shape */
    char key[128];
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, prefix, coords, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, expect);
    zf_node_meta_free(&m);
}

START_TEST(chunk_keys_v3)
{
    uint64_t c3[3] = {1, 23, 45}, c2[2] = {0, 7};
    /* chunk-key-encoding-default.rst: "c/1/23/45", "c.1.23.45", 0-d "c" */
    key_of(NULL, NULL, 3, c3, "", "c/1/23/45");
    key_of(NULL, NULL, 2, c2, "g/a", "g/a/c/0/7");
    key_of("chunk_key_encoding", "{\"name\": \"default\", \"configuration\": {\"separator\": \".\"}}",
           3, c3, "", "c.1.23.45");
    key_of("chunk_key_encoding", "{\"name\": \"default\"}", 3, c3, "", "c/1/23/45");
    key_of("chunk_key_encoding", "\"default\"", 2, c2, "x", "x/c/0/7");
    key_of(NULL, NULL, 0, c3, "", "c");
    /* chunk-key-encoding-v2.rst: "1.23.45", "1/23/45", 0-d "0" */
    key_of("chunk_key_encoding", "{\"name\": \"v2\", \"configuration\": {\"separator\": \".\"}}", 3,
           c3, "", "1.23.45");
    key_of("chunk_key_encoding", "{\"name\": \"v2\"}", 3, c3, "", "1.23.45");
    key_of("chunk_key_encoding", "{\"name\": \"v2\", \"configuration\": {\"separator\": \"/\"}}", 3,
           c3, "arr", "arr/1/23/45");
    key_of("chunk_key_encoding", "{\"name\": \"v2\"}", 0, c3, "s", "s/0");
}
END_TEST

/* ----- dialect detection ----- */

static zf_status detect(const char *doc, zf_format *f, zf_err *err)
{
    err->msg[0] = '\0';
    return zf_meta_detect("zarr.json", doc, strlen(doc), f, err);
}

START_TEST(dialect_detection)
{
    zf_format f = ZF_FORMAT_V2;
    zf_err err;
    ck_assert_int_eq(detect("{\"zarr_format\": 3, \"node_type\": \"group\"}", &f, &err), ZF_OK);
    ck_assert_int_eq(f, ZF_FORMAT_V3);
    /* written by zarr-python 2.13 (see the top of this file) */
    ck_assert_int_eq(detect("{\"extensions\": [], \"metadata_encoding\": "
                            "\"https://purl.org/zarr/spec/protocol/core/3.0\", "
                            "\"metadata_key_suffix\": \".json\", \"zarr_format\": "
                            "\"https://purl.org/zarr/spec/protocol/core/3.0\"}",
                            &f, &err),
                     ZF_OK);
    ck_assert_int_eq(f, ZF_FORMAT_V3_DRAFT_2020);
    /* 2020 "Entry point metadata", second example: an extension that may be ignored */
    f = ZF_FORMAT_V2;
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/protocol/core/3.0\","
                            " \"metadata_encoding\": \"https://purl.org/zarr/spec/protocol/core/3.0\","
                            " \"metadata_key_suffix\" : \".json\", \"extensions\": [{\"extension\":"
                            " \"http://example.org/zarr/extension/foo\", \"must_understand\": false,"
                            " \"configuration\": {\"foo\": \"bar\"}}]}",
                            &f, &err),
                     ZF_OK);
    ck_assert_int_eq(f, ZF_FORMAT_V3_DRAFT_2020);
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/protocol/core/3.0\","
                            " \"extensions\": [{\"extension\": \"http://example.org/x\","
                            " \"must_understand\": true}]}",
                            &f, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zarr.json: \"extensions\": extension \"http://example.org/x\" is "
                              "not supported (its \"must_understand\" is not false)");
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/protocol/core/3.0\","
                            " \"metadata_key_suffix\": \".yaml\"}",
                            &f, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zarr.json: \"metadata_key_suffix\": metadata key suffix \".yaml\" "
                              "is not supported (only \".json\")");
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/protocol/core/3.0\","
                            " \"metadata_encoding\": \"https://example.org/cbor\"}",
                            &f, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zarr.json: \"metadata_encoding\": metadata encoding "
                              "\"https://example.org/cbor\" is not supported");
    /* 2022 "Entry point metadata", both examples */
    f = ZF_FORMAT_V2;
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/core/3.0\","
                            " \"metadata_encoding\": {\"type\": \"json\", \"metadata_key_suffix\":"
                            " \".json\"}, \"extensions\": []}",
                            &f, &err),
                     ZF_OK);
    ck_assert_int_eq(f, ZF_FORMAT_V3_DRAFT_2022);
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/core/3.0\","
                            " \"metadata_encoding\": {\"type\": \"json\", \"metadata_key_suffix\":"
                            " \".json\"}, \"extensions\": [{\"extension\":"
                            " \"http://example.org/zarr/extension/foo\", \"must_understand\": false,"
                            " \"configuration\": {\"foo\": \"bar\"}}]}",
                            &f, &err),
                     ZF_OK);
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/core/3.0\","
                            " \"metadata_encoding\": {\"type\": \"json\", \"metadata_key_suffix\":"
                            " \".JSON\"}}",
                            &f, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zarr.json: \"metadata_encoding\": metadata key suffix \".JSON\" is "
                              "not supported (only \".json\")");
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/core/3.0\","
                            " \"extensions\": [{\"extension\": \"urn:x\"}]}",
                            &f, &err),
                     ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "zarr.json: \"extensions\": extension \"urn:x\" is not supported "
                              "(its \"must_understand\" is not false)");
    /* errors */
    ck_assert_int_eq(detect("{\"zarr_format\": 2}", &f, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: \"zarr_format\": expected 3, "
                              "\"https://purl.org/zarr/spec/protocol/core/3.0\" or "
                              "\"https://purl.org/zarr/spec/core/3.0\"");
    ck_assert_int_eq(detect("{\"node_type\": \"group\"}", &f, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: \"zarr_format\": missing");
    ck_assert_int_eq(detect("{\"zarr_format\": \"https://purl.org/zarr/spec/core/3.0\","
                            " \"extensions\": {}}",
                            &f, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: \"extensions\": expected a list of extension objects");
    ck_assert_int_eq(detect("[]", &f, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "zarr.json: expected a JSON object");
}
END_TEST

/* ----- the October 2020 draft, as zarr-python 2.13.6 writes it ----- */

static const char D2020_GROUP[] = "{\"attributes\": {\"title\": \"hi\"}}";
static const char D2020_B[] = /* create_dataset('b', shape=(4, 5), chunks=(2, 2), dtype='<f8',
                                 fill_value=np.nan, order='F', compressor=None) */
    "{\"attributes\": {}, \"chunk_grid\": {\"chunk_shape\": [2, 2], \"separator\": \"/\", \"type\":"
    " \"regular\"}, \"chunk_memory_layout\": \"F\", \"data_type\": \"<f8\", \"extensions\": [],"
    " \"fill_value\": \"NaN\", \"shape\": [4, 5]}";
static const char D2020_C[] = /* create_dataset('c', shape=(), dtype='u1', fill_value=7) */
    "{\"attributes\": {}, \"chunk_grid\": {\"chunk_shape\": [], \"separator\": \"/\", \"type\":"
    " \"regular\"}, \"chunk_memory_layout\": \"C\", \"data_type\": \"u1\", \"extensions\": [],"
    " \"fill_value\": 7, \"shape\": []}";
static const char D2020_GA[] =
    "{\"attributes\": {}, \"chunk_grid\": {\"chunk_shape\": [3, 7], \"separator\": \"/\", \"type\":"
    " \"regular\"}, \"chunk_memory_layout\": \"C\", \"compressor\": {\"codec\":"
    " \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"configuration\": {\"level\": 1}},"
    " \"data_type\": \">i4\", \"extensions\": [], \"fill_value\": -5, \"shape\": [10, 20]}";
#define BLOSC_2020                                                                           \
    "\"compressor\": {\"codec\": \"https://purl.org/zarr/spec/codec/blosc/1.0\","             \
    " \"configuration\": {\"blocksize\": 0, \"clevel\": 5, \"cname\": \"lz4\", \"shuffle\": 1}}"
#define GRID4 "\"chunk_grid\": {\"chunk_shape\": [4], \"separator\": \"/\", \"type\": \"regular\"}"
static const char D2020_D[] = /* dtype='<c16', fill_value=(1+2j) */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": {\"extension\": \"https://zarr-specs.readthedocs.io/en/core-protocol-v3.0-dev/"
    "protocol/extensions/complex-dtypes/v1.0.html\", \"fallback\": null, \"type\": \"<c16\"},"
    " \"extensions\": [], \"fill_value\": [1.0, 2.0], \"shape\": [6]}";
static const char D2020_E[] = /* dtype='<M8[ns]', fill_value=np.datetime64('NaT') */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": {\"extension\": \"https://zarr-specs.readthedocs.io/en/latest/extensions/"
    "data-types/datetime/v1.0.html\", \"fallback\": null, \"type\": \"<M8[ns]\"},"
    " \"extensions\": [], \"fill_value\": -9223372036854775808, \"shape\": [6]}";
static const char D2020_F[] = /* dtype='bool', fill_value=True, dimension_separator='.' */
    "{\"attributes\": {}, \"chunk_grid\": {\"chunk_shape\": [4], \"separator\": \".\", \"type\":"
    " \"regular\"}, \"chunk_memory_layout\": \"C\", " BLOSC_2020 ", \"data_type\": \"bool\","
    " \"dimension_separator\": \".\", \"extensions\": [], \"fill_value\": true, \"shape\": [6]}";
static const char D2020_H[] = /* dtype='<U3', fill_value='ab' */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": {\"extension\": \"TODO: unicode array protocol URL\", \"fallback\": null,"
    " \"type\": \"<U3\"}, \"extensions\": [], \"fill_value\": \"ab\", \"shape\": [6]}";
static const char D2020_I[] = /* dtype='|S3', fill_value=b'xy' */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": {\"extension\": \"TODO: bytestring array protocol URL\", \"fallback\": null,"
    " \"type\": \"|S3\"}, \"extensions\": [], \"fill_value\": \"eHk=\", \"shape\": [6]}";
static const char D2020_J[] = /* dtype=[('x', '<i4'), ('y', '>f2')], fill_value=None */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": {\"extension\": \"TODO: structured array protocol URL\", \"fallback\": null,"
    " \"type\": [[\"x\", \"<i4\"], [\"y\", \">f2\"]]}, \"extensions\": [], \"fill_value\": null,"
    " \"shape\": [6]}";
static const char D2020_K[] = /* dtype='<f2', fill_value=1.5, Blosc(lz4, 5, SHUFFLE) */
    "{\"attributes\": {}, " GRID4 ", \"chunk_memory_layout\": \"C\", " BLOSC_2020 ","
    " \"data_type\": \"<f2\", \"extensions\": [], \"fill_value\": 1.5, \"shape\": [6]}";
static const char D2020_O[] = /* dtype=object, object_codec=VLenUTF8() */
    "{\"attributes\": {\"filters\": [{\"id\": \"vlen-utf8\"}]}, " GRID4 ","
    " \"chunk_memory_layout\": \"C\", " BLOSC_2020 ", \"data_type\": {\"extension\": \"TODO: object"
    " array protocol URL\", \"fallback\": null, \"type\": \"|O\"}, \"extensions\": [],"
    " \"fill_value\": 0, \"shape\": [6]}";
static const char D2020_DELTA[] = /* dtype='<i4', filters=[Delta('<i4')], compressor=Zlib(1) */
    "{\"attributes\": {\"filters\": [{\"astype\": \"<i4\", \"dtype\": \"<i4\", \"id\": \"delta\"}]},"
    " \"chunk_grid\": {\"chunk_shape\": [4], \"separator\": \"/\", \"type\": \"regular\"},"
    " \"chunk_memory_layout\": \"C\", \"compressor\": {\"codec\":"
    " \"https://purl.org/zarr/spec/codec/zlib/1.0\", \"configuration\": {\"level\": 1}},"
    " \"data_type\": \"<i4\", \"extensions\": [], \"fill_value\": 0, \"shape\": [8]}";

static void d2020(const char *key, const char *doc, zf_node_meta *m)
{
    zf_err err = {""};
    ck_assert_msg(zf_meta_parse_draft_array(ZF_FORMAT_V3_DRAFT_2020, key, doc, strlen(doc), m,
                                            &err) == ZF_OK,
                  "%s: %s", key, err.msg);
    ck_assert_int_eq(m->format, ZF_FORMAT_V3_DRAFT_2020);
    ck_assert_int_eq(m->kind, ZF_NODE_ARRAY);
    ck_assert_str_eq(m->metadata_key, key);
    ck_assert_str_eq(m->metadata_json, doc);
}

static void fill_is(const zf_node_meta *m, const char *expect_hex)
{
    char got[256];
    hex(m->array.fill_value, m->array.dtype.itemsize, got);
    ck_assert_str_eq(got, expect_hex);
}

START_TEST(draft2020_zarr_python)
{
    zf_node_meta m;
    zf_err err = {""};
    char key[128];
    ck_assert_int_eq(zf_meta_parse_draft_group(ZF_FORMAT_V3_DRAFT_2020, "meta/root.group.json",
                                               D2020_GROUP, strlen(D2020_GROUP), &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_int_eq(m.format, ZF_FORMAT_V3_DRAFT_2020);
    ck_assert_str_eq(m.attributes_json, "{\"title\":\"hi\"}");
    zf_node_meta_free(&m);

    /* big-endian stays big-endian in the flat encoding (DESIGN.md) */
    d2020("meta/root/g/a.array.json", D2020_GA, &m);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, ">i4");
    ck_assert_str_eq(m.array.dtype_json, "\">i4\"");
    fill_is(&m, "fffffffb");
    ck_assert_uint_eq(m.array.chunks[1], 7);
    ck_assert_uint_eq(m.array.chain.n, 1); /* gzip */
    uint64_t c00[2] = {0, 0}, c32[2] = {3, 2};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/root/g/a", c00, key, sizeof key),
                     ZF_OK);
    ck_assert_str_eq(key, "data/root/g/a/c0/0");
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/root/g/a", c32, key, sizeof key),
                     ZF_OK);
    ck_assert_str_eq(key, "data/root/g/a/c3/2");
    zf_node_meta_free(&m);

    d2020("meta/root/b.array.json", D2020_B, &m);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "<f8");
    fill_is(&m, "000000000000f87f");
    ck_assert_uint_eq(m.array.chain.n, 1); /* the "F" layout's transpose, no compressor */
    zf_node_meta_free(&m);

    /* 0-d: zarr-python stored its chunk as data/root/c/c0 */
    d2020("meta/root/c.array.json", D2020_C, &m);
    ck_assert_uint_eq(m.array.ndim, 0);
    ck_assert_str_eq(m.array.dtype_typestr, "|u1");
    fill_is(&m, "07");
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/root/c", c00, key, sizeof key),
                     ZF_OK);
    ck_assert_str_eq(key, "data/root/c/c0");
    zf_node_meta_free(&m);

    d2020("meta/root/d.array.json", D2020_D, &m);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "<c16");
    fill_is(&m, "000000000000f03f0000000000000040");
    ck_assert_ptr_nonnull(strstr(m.array.dtype_json, "complex-dtypes"));
    zf_node_meta_free(&m);

    d2020("meta/root/e.array.json", D2020_E, &m);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "<M8[ns]");
    fill_is(&m, "0000000000000080");
    zf_node_meta_free(&m);

    d2020("meta/root/f.array.json", D2020_F, &m);
    ck_assert_str_eq(m.array.dtype_typestr, "|b1");
    fill_is(&m, "01");
    uint64_t c1[1] = {1};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/root/f", c1, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "data/root/f/c1");
    ck_assert_int_eq(m.array.key_encoding.separator, '.');
    zf_node_meta_free(&m);

    d2020("meta/root/h.array.json", D2020_H, &m);
    ck_assert_str_eq(m.array.dtype_typestr, "<U3");
    fill_is(&m, "610000006200000000000000");
    zf_node_meta_free(&m);

    d2020("meta/root/i.array.json", D2020_I, &m);
    ck_assert_str_eq(m.array.dtype_typestr, "|S3");
    fill_is(&m, "787900");
    zf_node_meta_free(&m);

    d2020("meta/root/j.array.json", D2020_J, &m);
    ck_assert_uint_eq(m.array.dtype.itemsize, 6);
    ck_assert_int_eq(m.array.dtype.kind, 'V');
    ck_assert_str_eq(m.array.dtype_typestr, "[[\"x\",\"<i4\"],[\"y\",\">f2\"]]");
    fill_is(&m, "000000000000");
    zf_node_meta_free(&m);

    d2020("meta/root/k.array.json", D2020_K, &m);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    fill_is(&m, "003e");
    ck_assert_uint_eq(m.array.chain.n, 1); /* blosc */
    zf_node_meta_free(&m);

    d2020("meta/root/o.array.json", D2020_O, &m);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why, "meta/root/o.array.json: \"data_type\": {\"extension\":"
                                        "\"TODO: object array protocol URL\",\"fallback\":null,"
                                        "\"type\":\"|O\"}: object data types are not supported");
    zf_node_meta_free(&m);

    /* zarr-python keeps v2 filters in "attributes"."filters" */
    d2020("meta/root/d.array.json", D2020_DELTA, &m);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_uint_eq(m.array.chain.n, 2); /* delta, zlib */
    ck_assert_ptr_nonnull(strstr(m.attributes_json, "\"filters\""));
    zf_node_meta_free(&m);
}
END_TEST

static zf_status draft(zf_format f, const char *doc, zf_node_meta *m, zf_err *err)
{
    err->msg[0] = '\0';
    return zf_meta_parse_draft_array(f, "meta/root/x.array.json", doc, strlen(doc), m, err);
}

START_TEST(draft2020_spec_and_errors)
{
    zf_node_meta m;
    zf_err err;
    /* the draft's own "Array metadata" example */
    const char *example =
        "{\"shape\": [10000, 1000], \"data_type\": \"<f8\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [1000, 100], \"separator\" : \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"compressor\": {\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\","
        " \"configuration\": {\"level\": 1}}, \"fill_value\": \"NaN\", \"extensions\": [],"
        " \"attributes\": {\"foo\": 42, \"bar\": \"apples\", \"baz\": [1, 2, 3, 4]}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, example, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.attributes_json, "{\"foo\":42,\"bar\":\"apples\",\"baz\":[1,2,3,4]}");
    zf_node_meta_free(&m);
    /* ... and its extension data type example: "<M8[ns]" is understood as zarr-python does */
    const char *ext =
        "{\"shape\": [10000, 1000], \"data_type\": {\"extension\":"
        " \"https://purl.org/zarr/spec/protocol/extensions/datetime-dtypes/1.0\", \"type\":"
        " \"<M8[ns]\", \"fallback\": \"<i8\"}, \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [1000, 100], \"separator\" : \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": null, \"extensions\": [], \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, ext, &m, &err), ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "<M8[ns]");
    fill_is(&m, "0000000000000000"); /* null: zeros, as Zarr v2 */
    zf_node_meta_free(&m);
    /* "0x"/"0b" fill values, in the data type's byte order; raw "r16" */
    const char *hexfill =
        "{\"shape\": [2], \"data_type\": \">u2\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"0x0102\"}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, hexfill, &m, &err), ZF_OK);
    fill_is(&m, "0102");
    zf_node_meta_free(&m);
    const char *raw =
        "{\"shape\": [2], \"data_type\": \"r16\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": null}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, raw, &m, &err), ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "|V2");
    zf_node_meta_free(&m);
    /* unknown fields are ignored (2020 "zarr_format": names not defined may be ignored) */
    const char *extra =
        "{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
        " \"future\": 1}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, extra, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_int_eq(m.array.key_encoding.separator, '/'); /* "Regular grids": default "/" */
    ck_assert_ptr_null(m.array.dimension_names_json);
    zf_node_meta_free(&m);
    /* xarray's dimension names in the attributes, as in v2 */
    const char *xr =
        "{\"shape\": [2, 3], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2, 3]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
        " \"attributes\": {\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"], \"units\": \"K\"}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, xr, &m, &err), ZF_OK);
    ck_assert_str_eq(m.array.dimension_names_json, "[\"y\",\"x\"]");
    zf_node_meta_free(&m);

    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"{\"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\", \"chunk_shape\": [2]},"
         " \"chunk_memory_layout\": \"C\", \"fill_value\": 0}",
         "meta/root/x.array.json: \"shape\": missing"},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2], \"separator\": \"-\"}, \"chunk_memory_layout\": \"C\","
         " \"fill_value\": 0}",
         "meta/root/x.array.json: \"chunk_grid\": \"separator\" must be \"/\" or \".\""},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"X\", \"fill_value\": 0}",
         "meta/root/x.array.json: \"chunk_memory_layout\": expected \"C\" or \"F\""},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"fill_value\": 0}",
         "meta/root/x.array.json: \"chunk_memory_layout\": missing"},
        {"{\"shape\": [2], \"data_type\": \"int16\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0}",
         "meta/root/x.array.json: \"data_type\": \"int16\": expected a NumPy typestr such as "
         "\"<f8\""},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 40000}",
         "meta/root/x.array.json: \"fill_value\": integer out of range for data type \"<i2\""},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\"}",
         "meta/root/x.array.json: \"fill_value\": missing"},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
         " \"compressor\": 1}",
         "meta/root/x.array.json: \"compressor\": expected null or a codec object"},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
         " \"attributes\": []}",
         "meta/root/x.array.json: \"attributes\": expected a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(draft(ZF_FORMAT_V3_DRAFT_2020, bad[i].doc, &m, &err) == ZF_ERR_INVALID,
                      "%s", bad[i].doc);
        ck_assert_str_eq(err.msg, bad[i].msg);
    }

    static const struct {
        const char *doc, *why;
    } unsup[] = {
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
         " \"extensions\": [{\"extension\": \"https://example.org/ext\", \"must_understand\":"
         " true}]}",
         "meta/root/x.array.json: \"extensions\": extension \"https://example.org/ext\" is not "
         "supported (its \"must_understand\" is not false)"},
        {"{\"shape\": [2], \"data_type\": {\"extension\": \"https://example.org/dt\", \"type\":"
         " \"rgb\"}, \"chunk_grid\": {\"type\": \"regular\", \"chunk_shape\": [2]},"
         " \"chunk_memory_layout\": \"C\", \"fill_value\": 0}",
         "meta/root/x.array.json: \"data_type\": data type extension \"https://example.org/dt\" is "
         "not supported"},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"extension\":"
         " \"https://example.org/grid\", \"type\": \"rectilinear\"}, \"chunk_memory_layout\": \"C\","
         " \"fill_value\": 0}",
         "meta/root/x.array.json: \"chunk_grid\": chunk grid \"rectilinear\" is not supported"},
        {"{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
         " \"chunk_shape\": [2]}, \"chunk_memory_layout\": {\"extension\": \"https://example.org/z\","
         " \"type\": \"zorder\"}, \"fill_value\": 0}",
         "meta/root/x.array.json: \"chunk_memory_layout\": chunk memory layout \"zorder\" is not "
         "supported"},
    };
    for (size_t i = 0; i < sizeof unsup / sizeof *unsup; i++) {
        ck_assert_msg(draft(ZF_FORMAT_V3_DRAFT_2020, unsup[i].doc, &m, &err) == ZF_OK, "%s",
                      err.msg);
        ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
        ck_assert_str_eq(m.unsupported_why, unsup[i].why);
        zf_node_meta_free(&m);
    }
    /* an extension that may be ignored is */
    const char *ignorable =
        "{\"shape\": [2], \"data_type\": \"<i2\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2]}, \"chunk_memory_layout\": \"C\", \"fill_value\": 0,"
        " \"extensions\": [{\"extension\": \"https://example.org/ext\", \"must_understand\":"
        " false}]}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2020, ignorable, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    zf_node_meta_free(&m);
    /* not a draft format */
    ck_assert_int_eq(draft(ZF_FORMAT_V3, ignorable, &m, &err), ZF_ERR_INVALID);
}
END_TEST

/* ----- the May 2022 draft ----- */

/* The seed's "Array metadata" example with the draft's own names: its data type table names
 * float64 "float64" (the example still shows the 2020 "<f8"), and its gzip codec URI as
 * codec.h documents the draft's codecs. */
static const char D2022_EXAMPLE[] =
    "{\"shape\": [10000, 1000], \"data_type\": \"float64\", \"chunk_grid\": {\"type\": \"regular\","
    " \"chunk_shape\": [1000, 100], \"separator\" : \"/\"}, \"chunk_memory_layout\": \"C\","
    " \"codecs\": [{\"codec\": \"https://purl.org/zarr/spec/codec/gzip/1.0\", \"configuration\":"
    " {\"level\": 1}}], \"fill_value\": \"NaN\", \"extensions\": [], \"attributes\": {\"foo\": 42,"
    " \"bar\": \"apples\", \"baz\": [1, 2, 3, 4]}}";

/* A 2022 array with one field replaced (value NULL: left out; an unknown field is added). */
static char *d2022doc(const char *field, const char *value)
{
    static const char *names[] = {"shape", "data_type", "chunk_grid", "chunk_memory_layout",
                                  "fill_value", "extensions", "attributes"};
    static const char *defaults[] = {
        "[6, 4]", "\"uint16\"",
        "{\"type\": \"regular\", \"chunk_shape\": [2, 4], \"separator\": \"/\"}", "\"C\"", "7",
        "[]", "{}"};
    char *s = malloc(4096);
    size_t o = (size_t)sprintf(s, "{");
    bool found = false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        bool this = field && strcmp(field, names[i]) == 0;
        found |= this;
        const char *v = this ? value : defaults[i];
        if (v)
            o += (size_t)sprintf(s + o, "%s\"%s\": %s", o > 1 ? ", " : "", names[i], v);
    }
    if (field && !found && value)
        o += (size_t)sprintf(s + o, ", \"%s\": %s", field, value);
    sprintf(s + o, "}");
    return s;
}

static zf_status d2022(const char *field, const char *value, zf_node_meta *m, zf_err *err)
{
    char *doc = d2022doc(field, value);
    zf_status st = draft(ZF_FORMAT_V3_DRAFT_2022, doc, m, err);
    free(doc);
    return st;
}

START_TEST(draft2022)
{
    zf_node_meta m;
    zf_err err;
    char key[64];
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, D2022_EXAMPLE, &m, &err), ZF_OK);
    ck_assert_int_eq(m.format, ZF_FORMAT_V3_DRAFT_2022);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_str_eq(m.array.dtype_typestr, "<f8");
    fill_is(&m, "000000000000f87f");
    ck_assert_uint_eq(m.array.chain.n, 2); /* the default binary representation, gzip */
    /* "Storage keys": "data/foo/baz/c1/0" */
    uint64_t c10[2] = {1, 0};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/foo/baz", c10, key, sizeof key),
                     ZF_OK);
    ck_assert_str_eq(key, "data/foo/baz/c1/0");
    zf_node_meta_free(&m);

    /* no "codecs": "equivalent to specifying an empty list" */
    ck_assert_int_eq(d2022(NULL, NULL, &m, &err), ZF_OK);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_str_eq(m.array.dtype_typestr, "<u2");
    fill_is(&m, "0700");
    zf_node_meta_free(&m);

    /* "F": a transpose before the codecs */
    ck_assert_int_eq(d2022("chunk_memory_layout", "\"F\"", &m, &err), ZF_OK);
    ck_assert_msg(m.unsupported == ZF_OK, "%s", m.unsupported_why);
    ck_assert_uint_ge(m.array.chain.n, 2);
    ck_assert_str_eq(m.array.chain.codecs[0]->ops->name, "transpose");
    zf_node_meta_free(&m);

    /* fill values: "0x…"/"0b…" for any core type, "+Infinity" */
    ck_assert_int_eq(d2022("fill_value", "\"0x0102\"", &m, &err), ZF_OK);
    fill_is(&m, "0201");
    zf_node_meta_free(&m);
    ck_assert_int_eq(d2022("fill_value", "\"0b0000000100000011\"", &m, &err), ZF_OK);
    fill_is(&m, "0301");
    zf_node_meta_free(&m);
    /* complex [real, imag] with a "0b…" component: 1.0f is 0x3f800000 (IEEE 754 binary32) */
    const char *c64 =
        "{\"shape\": [2], \"data_type\": \"complex64\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": [\"0b00111111100000000000000000000000\", 2.5], \"extensions\": [],"
        " \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, c64, &m, &err), ZF_OK);
    fill_is(&m, "0000803f00002040");
    zf_node_meta_free(&m);
    /* the registry's types are final v3's, not the draft's */
    ck_assert_int_eq(d2022("data_type", "\"bfloat16\"", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
    ck_assert_int_eq(d2022("fill_value", "\"+Infinity\"", &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"fill_value\": expected an integer for "
                              "data type \"uint16\"");
    /* a float array */
    const char *f32 =
        "{\"shape\": [2], \"data_type\": \"float32\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \".\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"+Infinity\", \"extensions\": [], \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, f32, &m, &err), ZF_OK);
    fill_is(&m, "0000807f");
    uint64_t c5[1] = {5};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data", c5, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "data/c5");
    zf_node_meta_free(&m);
    const char *f32bits =
        "{\"shape\": [2], \"data_type\": \"float32\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"0b01111111110000000000000000000001\", \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, f32bits, &m, &err), ZF_OK);
    fill_is(&m, "0100c07f");
    zf_node_meta_free(&m);
    /* raw types: the bits' digits are the bytes in order; also the final spec's byte list */
    const char *r24 =
        "{\"shape\": [2], \"data_type\": \"r24\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"0x0a0b0c\", \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, r24, &m, &err), ZF_OK);
    ck_assert_str_eq(m.array.dtype_typestr, "|V3");
    fill_is(&m, "0a0b0c");
    zf_node_meta_free(&m);
    const char *r16 =
        "{\"shape\": [2], \"data_type\": \"r16\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"0b1000000000000011\", \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, r16, &m, &err), ZF_OK);
    fill_is(&m, "8003");
    zf_node_meta_free(&m);
    const char *r16short =
        "{\"shape\": [2], \"data_type\": \"r16\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [2], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": \"0xab\", \"attributes\": {}}"; /* "all leading ... zeroes" */
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, r16short, &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"fill_value\": expected \"0x...\" or "
                              "\"0b...\" with all 16 bits, or a list of 2 integers in [0, 255] "
                              "for data type \"r16\"");
    /* 0-d: "the chunk key will consist of the string c" */
    const char *scalar =
        "{\"shape\": [], \"data_type\": \"int8\", \"chunk_grid\": {\"type\": \"regular\","
        " \"chunk_shape\": [], \"separator\": \"/\"}, \"chunk_memory_layout\": \"C\","
        " \"fill_value\": -1, \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, scalar, &m, &err), ZF_OK);
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "data/s", c5, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "data/s/c");
    fill_is(&m, "ff");
    zf_node_meta_free(&m);

    /* group */
    const char *group = "{\"attributes\": {\"spam\": \"ham\", \"eggs\": 42}}";
    ck_assert_int_eq(zf_meta_parse_draft_group(ZF_FORMAT_V3_DRAFT_2022, "meta/group.json", group,
                                               strlen(group), &m, &err),
                     ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_GROUP);
    ck_assert_int_eq(m.format, ZF_FORMAT_V3_DRAFT_2022);
    ck_assert_str_eq(m.attributes_json, "{\"spam\":\"ham\",\"eggs\":42}");
    zf_node_meta_free(&m);

    /* errors */
    ck_assert_int_eq(d2022("fill_value", "null", &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg,
                     "meta/root/x.array.json: \"fill_value\": required, null is not permitted");
    ck_assert_int_eq(d2022("fill_value", NULL, &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"fill_value\": missing");
    ck_assert_int_eq(d2022("fill_value", "65536", &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"fill_value\": integer out of range for "
                              "data type \"uint16\"");
    ck_assert_int_eq(d2022("codecs", "{}", &m, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"codecs\": expected a list of codecs");
    ck_assert_int_eq(d2022("chunk_grid", "{\"type\": \"regular\", \"chunk_shape\": [2]}", &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "meta/root/x.array.json: \"chunk_grid\": \"chunk_shape\" must have "
                              "as many entries as \"shape\" (2)");

    /* unsupported: unknown fields, extension types, storage transformers */
    static const struct {
        const char *field, *value, *why;
    } unsup[] = {
        {"compressor", "null",
         "meta/root/x.array.json: \"compressor\": unknown metadata field is not supported"},
        {"zarr_format", "3",
         "meta/root/x.array.json: \"zarr_format\": unknown metadata field is not supported"},
        {"data_type",
         "{\"extension\": \"https://purl.org/zarr/spec/extensions/data-types/datetime/1.0\","
         " \"type\": \"<M8[ns]\", \"fallback\": \"<i8\"}",
         "meta/root/x.array.json: \"data_type\": data type extension "
         "\"https://purl.org/zarr/spec/extensions/data-types/datetime/1.0\" is not supported"},
        {"data_type", "\"<f8\"",
         "meta/root/x.array.json: \"data_type\": data type \"<f8\" is not supported"},
        {"storage_transformers", "[{\"extension\": \"https://example.org/st\", \"type\": \"zip\"}]",
         "meta/root/x.array.json: \"storage_transformers\": storage transformer \"zip\" is not "
         "supported"},
        {"extensions", "[{\"extension\": \"https://example.org/ext\", \"must_understand\": true}]",
         "meta/root/x.array.json: \"extensions\": extension \"https://example.org/ext\" is not "
         "supported (its \"must_understand\" is not false)"},
    };
    for (size_t i = 0; i < sizeof unsup / sizeof *unsup; i++) {
        ck_assert_msg(d2022(unsup[i].field, unsup[i].value, &m, &err) == ZF_OK, "%s: %s",
                      unsup[i].field, err.msg);
        ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
        ck_assert_str_eq(m.unsupported_why, unsup[i].why);
        zf_node_meta_free(&m);
    }
    /* the seed's extension data type example, null fill value and all: the extension is
     * "responsible for interpreting the value of fill_value", so it is reported as not served */
    const char *ext =
        "{\"shape\": [10000, 1000], \"data_type\": {\"extension\":"
        " \"https://purl.org/zarr/spec/extensions/data-types/datetime/1.0\", \"type\": \"<M8[ns]\","
        " \"fallback\": \"<i8\"}, \"chunk_grid\": {\"type\": \"regular\", \"chunk_shape\": [1000,"
        " 100], \"separator\" : \"/\"}, \"chunk_memory_layout\": \"C\", \"codecs\": [{\"type\":"
        " \"https://purl.org/zarr/spec/codecs/gzip/1.0\", \"configuration\": {\"level\": 1}}],"
        " \"fill_value\": null, \"extensions\": [], \"attributes\": {}}";
    ck_assert_int_eq(draft(ZF_FORMAT_V3_DRAFT_2022, ext, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.unsupported_why,
                     "meta/root/x.array.json: \"data_type\": data type extension "
                     "\"https://purl.org/zarr/spec/extensions/data-types/datetime/1.0\" is not "
                     "supported");
    ck_assert_ptr_null(m.array.dtype_typestr);
    zf_node_meta_free(&m);
    /* dimension_names are read */
    ck_assert_int_eq(d2022("dimension_names", "[\"t\", \"x\"]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_str_eq(m.array.dimension_names_json, "[\"t\",\"x\"]");
    zf_node_meta_free(&m);
}
END_TEST

ZF_CHECK_MAIN("meta-v3", zarrita_fixtures_parse, zarrita_fixture_details, data_types, registry_data_types,
              fill_values,
              bad_fill_values, valid_array, bad_documents, unsupported_is_not_invalid, large_shards,
              must_understand_false_is_ignored, chunk_keys_v3, dialect_detection,
              draft2020_zarr_python, draft2020_spec_and_errors, draft2022)
