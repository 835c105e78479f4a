/* Unit tests for the v2 metadata parser: documents, exact error messages, fill values, keys. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/meta.h"

#include "../check_main.h"

/* A .zarray with one field replaced: FIELD is spliced in as the text of `field`. */
static char *zarray(const char *field, const char *value)
{
    static const char *names[] = {"zarr_format", "shape", "chunks", "dtype", "compressor",
                                  "fill_value", "order", "filters"};
    static const char *defaults[] = {"2", "[10, 20]", "[3, 7]", "\"<f8\"", "null", "0", "\"C\"",
                                     "null"};
    char *s = malloc(4096);
    size_t o = (size_t)sprintf(s, "{");
    for (size_t i = 0; i < 8; i++) {
        const char *v = field && strcmp(field, names[i]) == 0 ? value : defaults[i];
        if (!v)
            continue; /* value NULL: leave the field out */
        o += (size_t)sprintf(s + o, "%s\"%s\": %s", o > 1 ? ", " : "", names[i], v);
    }
    sprintf(s + o, "}");
    return s;
}

static zf_status parse(const char *field, const char *value, zf_node_meta *m, zf_err *err)
{
    char *doc = zarray(field, value);
    err->msg[0] = '\0';
    zf_status st = zf_meta_parse_v2_array(".zarray", doc, strlen(doc), NULL, m, err);
    free(doc);
    return st;
}

START_TEST(valid_array)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse(NULL, NULL, &m, &err), ZF_OK);
    ck_assert_int_eq(m.kind, ZF_NODE_ARRAY);
    ck_assert_uint_eq(m.array.ndim, 2);
    ck_assert_uint_eq(m.array.shape[1], 20);
    ck_assert_uint_eq(m.array.chunks[0], 3);
    ck_assert_uint_eq(m.array.dtype.itemsize, 8);
    ck_assert_str_eq(m.array.dtype_typestr, "<f8");
    ck_assert_str_eq(m.attributes_json, "{}");
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_uint_eq(m.array.chain.n, 0);
    ck_assert_int_eq(m.array.key_encoding.separator, '.');
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("order", "\"F\"", &m, &err), ZF_OK);
    ck_assert_uint_eq(m.array.chain.n, 1); /* a transpose */
    zf_node_meta_free(&m);
}
END_TEST

/* Each bad document and the exact line the user sees. */
static const struct {
    const char *field, *value, *msg;
} BAD[] = {
    {"shape", "\"10\"", ".zarray: \"shape\": expected a list of non-negative integers"},
    {"shape", "[10, -1]", ".zarray: \"shape\": expected a list of non-negative integers"},
    {"shape", "[10, 2.5]", ".zarray: \"shape\": expected a list of non-negative integers"},
    {"shape", NULL, ".zarray: \"shape\": missing"},
    {"shape", "[4294967296, 4294967296]", ".zarray: \"shape\": the array holds more than 2^63 bytes"},
    {"shape", "[99999999999999999999, 1]", ".zarray: \"shape\": expected a list of non-negative integers"},
    {"chunks", "[3, 0]", ".zarray: \"chunks\": expected a list of positive integers"},
    {"chunks", "[3]", ".zarray: \"chunks\": expected 2 lengths, one per dimension of \"shape\""},
    {"chunks", "{}", ".zarray: \"chunks\": expected a list of positive integers"},
    {"zarr_format", "3", ".zarray: \"zarr_format\": expected 2"},
    {"zarr_format", NULL, ".zarray: \"zarr_format\": missing"},
    {"dtype", "\"<f3\"", ".zarray: \"dtype\": \"<f3\": invalid item size for kind 'f'"},
    {"dtype", "\"float64\"", ".zarray: \"dtype\": \"float64\": expected a NumPy typestr such as \"<f8\""},
    {"dtype", "7", ".zarray: \"dtype\": expected a typestr or a list of [name, type(, shape)] fields"},
    {"order", "\"X\"", ".zarray: \"order\": expected \"C\" or \"F\""},
    {"compressor", "3", ".zarray: \"compressor\": expected null or a codec object"},
    {"filters", "{}", ".zarray: \"filters\": expected null or a list of codec objects"},
    {"fill_value", "\"abc\"", ".zarray: \"fill_value\": expected a number, \"NaN\", \"Infinity\" or \"-Infinity\" for data type \"<f8\""},
};

START_TEST(bad_documents)
{
    zf_node_meta m;
    zf_err err;
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        ck_assert_int_eq(parse(BAD[i].field, BAD[i].value, &m, &err), ZF_ERR_INVALID);
        ck_assert_str_eq(err.msg, BAD[i].msg);
    }
    const char *notjson = "{\"shape\": [1,";
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", notjson, strlen(notjson), NULL, &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_msg(strncmp(err.msg, ".zarray: not valid JSON", 23) == 0, "%s", err.msg);
    ck_assert_int_eq(zf_meta_parse_v2_array("a/.zarray", "[1]", 3, NULL, &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "a/.zarray: expected a JSON object");
    ck_assert_int_eq(zf_meta_parse_v2_group(".zgroup", "{\"zarr_format\": 1}", 18, NULL, &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, ".zgroup: \"zarr_format\": expected 2");
}
END_TEST

START_TEST(unsupported_is_not_invalid)
{
    zf_node_meta m;
    zf_err err;
    ck_assert_int_eq(parse("dtype", "\"|O\"", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(m.unsupported_why, "|O"));
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("dtype", "[[\"a\", \"<i4\"], [\"b\", \"|O\"]]", &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("chunks", "[100000, 100000]", &m, &err), ZF_OK); /* 80 GB chunks */
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
}
END_TEST

START_TEST(structured_dtype)
{
    zf_node_meta m;
    zf_err err;
    const char *dt = "[[\"a\", \"<i4\"], [\"b\", [[\"x\", \">f8\"], [\"y\", \"|u1\", [2, 3]]]],"
                     " [\"c\", \"|S3\"]]";
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": %s,"
             " \"compressor\": null, \"fill_value\": \"AQAAAA==\", \"order\": \"C\","
             " \"filters\": null}", dt);
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", doc, strlen(doc), NULL, &m, &err), ZF_OK);
    ck_assert_uint_eq(m.array.dtype.itemsize, 4 + 8 + 6 + 3);
    ck_assert_uint_eq(m.array.fill_value[0], 1); /* base64 bytes, zero-padded to 21 */
    ck_assert_uint_eq(m.array.fill_value[20], 0);
    ck_assert_int_eq(m.array.dtype.kind, 'V');
    ck_assert_int_eq(m.array.dtype_typestr[0], '[');
    zf_node_meta_free(&m);
}
END_TEST

static void fill(const char *json, const char *typestr, const void *expect, size_t n)
{
    zf_dtype dt;
    ck_assert_int_eq(zf_dtype_parse(typestr, &dt, NULL), ZF_OK);
    uint8_t out[64];
    zf_err err = {""};
    ck_assert_msg(zf_meta_v2_fill_value(json, &dt, out, &err) == ZF_OK, "%s %s: %s", json,
                  typestr, err.msg);
    ck_assert_uint_eq(dt.itemsize, n);
    ck_assert_msg(memcmp(out, expect, n) == 0, "%s as %s", json, typestr);
}

START_TEST(fill_values)
{
    uint64_t umax = UINT64_MAX;
    int64_t imin = INT64_MIN;
    fill("18446744073709551615", "<u8", &umax, 8);
    fill("-9223372036854775808", "<i8", &imin, 8);
    fill("-9223372036854775808", "<M8[ns]", &imin, 8);
    fill("\"NaT\"", "<m8[s]", &imin, 8);
    uint8_t be[4] = {0x00, 0x00, 0x01, 0x02};
    fill("258", ">i4", be, 4);
    uint32_t fnan = 0x7fc00000, finf = 0x7f800000, fninf = 0xff800000;
    fill("\"NaN\"", "<f4", &fnan, 4);
    fill("\"Infinity\"", "<f4", &finf, 4);
    fill("\"-Infinity\"", "<f4", &fninf, 4);
    uint16_t h = 0x3e00;
    fill("1.5", "<f2", &h, 2);
    double d = 0.1;
    fill("0.1", "<f8", &d, 8);
    float c[2] = {1.5f, -2.0f};
    fill("[1.5, -2.0]", "<c8", c, 8);
    uint8_t t = 1;
    fill("true", "|b1", &t, 1);
    fill("\"YWJj\"", "|S5", "abc\0\0", 5);
    fill("\"AQID\"", "|V3", "\x01\x02\x03", 3);
    uint8_t u[8] = {'h', 0, 0, 0, 'i', 0, 0, 0};
    fill("\"hi\"", "<U2", u, 8);
    uint8_t u0[12] = {'0', 0, 0, 0};
    fill("0", "<U3", u0, 12); /* zarr-python 2 writes this; NumPy makes it the string "0" */
    uint8_t u1[12] = {'1', 0, 0, 0, '.', 0, 0, 0, '5', 0, 0, 0};
    fill("1.5", "<U3", u1, 12);
    uint8_t zeros[8] = {0};
    fill("null", "<f8", zeros, 8);

    zf_dtype dt;
    uint8_t out[8];
    zf_err err = {""};
    zf_dtype_parse("|u1", &dt, NULL);
    ck_assert_int_eq(zf_meta_v2_fill_value("256", &dt, out, &err), ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, "\"fill_value\": integer out of range for data type \"|u1\"");
    zf_dtype_parse("<i2", &dt, NULL);
    ck_assert_int_eq(zf_meta_v2_fill_value("-32769", &dt, out, &err), ZF_ERR_INVALID);
    zf_dtype_parse("<i8", &dt, NULL); /* past int64, or uint64: refused as NumPy refuses it */
    ck_assert_int_eq(zf_meta_v2_fill_value("9223372036854775808", &dt, out, &err),
                     ZF_ERR_INVALID);
    zf_dtype_parse("<u8", &dt, NULL);
    ck_assert_int_eq(zf_meta_v2_fill_value("18446744073709551616", &dt, out, &err),
                     ZF_ERR_INVALID);
    uint64_t thousand = 1000; /* an exponent is a float NumPy casts */
    fill("1e3", "<u8", &thousand, 8);
    double nan_bits;
    fill("NaN", "<f8", (nan_bits = NAN, &nan_bits), 8); /* Python's bare token */
    fill("0", "|S2", "0\0", 2);           /* zarr-python 2.18 writes this; NumPy: b"0" */
    fill("\"abc\"", "|S2", "ab", 2);     /* not base64: the text itself, truncated */
    fill("\"%%%\"", "|S2", "\0\0", 2);   /* base64 of nothing, as Python decodes it */
    zf_dtype_parse("|V2", &dt, NULL);
    ck_assert_int_eq(zf_meta_v2_fill_value("\"abc\"", &dt, out, &err), ZF_ERR_INVALID);
    ck_assert_int_eq(zf_meta_v2_fill_value("0", &dt, out, &err), ZF_ERR_INVALID);
}
END_TEST

START_TEST(chunk_keys)
{
    zf_node_meta m;
    zf_err err;
    char key[128];
    ck_assert_int_eq(parse(NULL, NULL, &m, &err), ZF_OK);
    uint64_t cc[2] = {3, 12};
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "", cc, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "3.12");
    m.array.key_encoding.separator = '/';
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "g/a", cc, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "g/a/3/12");
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "g/a", cc, key, 6), ZF_ERR_INVALID);
    m.array.ndim = 0;
    ck_assert_int_eq(zf_array_meta_chunk_key(&m.array, "z", cc, key, sizeof key), ZF_OK);
    ck_assert_str_eq(key, "z/0");
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("dimension_separator", "\"/\"", &m, &err), ZF_OK);
    zf_node_meta_free(&m);
}
END_TEST

START_TEST(attributes_and_dimension_names)
{
    zf_node_meta m;
    zf_err err = {""};
    char *doc = zarray(NULL, NULL);
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", doc, strlen(doc),
                                            "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"], \"u\": 1}",
                                            &m, &err),
                     ZF_OK);
    ck_assert_str_eq(m.array.dimension_names_json, "[\"y\",\"x\"]");
    ck_assert_ptr_nonnull(strstr(m.attributes_json, "\"u\": 1"));
    zf_node_meta_free(&m);
    /* xarray writes _FillValue: NaN as a bare token; the names are still found */
    ck_assert_int_eq(zf_meta_parse_v2_array(".zarray", doc, strlen(doc),
                                            "{\"_FillValue\": NaN, \"_ARRAY_DIMENSIONS\": [\"y\", \"x\"]}",
                                            &m, &err),
                     ZF_OK);
    ck_assert_str_eq(m.array.dimension_names_json, "[\"y\",\"x\"]");
    zf_node_meta_free(&m);
    /* invalid .zattrs is invalid metadata, named by its key */
    ck_assert_int_eq(zf_meta_parse_v2_array("g/a/.zarray", doc, strlen(doc), "{broken", &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_msg(strncmp(err.msg, "g/a/.zattrs: not valid JSON", 27) == 0, "%s", err.msg);
    ck_assert_int_eq(zf_meta_parse_v2_group(".zgroup", "{\"zarr_format\": 2}", 18, "[1]", &m, &err),
                     ZF_ERR_INVALID);
    ck_assert_str_eq(err.msg, ".zattrs: expected a JSON object");
    free(doc);
}
END_TEST

/* The names a v2 array takes from new attributes (zf_hierarchy_set_attributes): the same rule
 * as the parser's. */
START_TEST(dimension_names_of_attributes)
{
    char *out = (char *)1;
    const char *a = "{\"_FillValue\": NaN, \"_ARRAY_DIMENSIONS\": [\"lat\", \"lon\"]}";
    ck_assert_int_eq(zf_meta_v2_dimension_names(a, strlen(a), 2, &out), ZF_OK);
    ck_assert_str_eq(out, "[\"lat\",\"lon\"]");
    free(out);
    ck_assert_int_eq(zf_meta_v2_dimension_names(a, strlen(a), 3, &out), ZF_OK); /* wrong ndim */
    ck_assert_ptr_null(out);
    ck_assert_int_eq(zf_meta_v2_dimension_names("{}", 2, 2, &out), ZF_OK);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(zf_meta_v2_dimension_names("{broken", 7, 2, &out), ZF_OK);
    ck_assert_ptr_null(out);
    /* len bounds the text: the names after it are not seen */
    ck_assert_int_eq(zf_meta_v2_dimension_names("{}, \"_ARRAY_DIMENSIONS\": [1]}", 2, 1, &out),
                     ZF_OK);
    ck_assert_ptr_null(out);
}
END_TEST

ZF_CHECK_MAIN("meta", valid_array, bad_documents, unsupported_is_not_invalid, structured_dtype, fill_values, chunk_keys, attributes_and_dimension_names, dimension_names_of_attributes)
