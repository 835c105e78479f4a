/* Unit tests for zarrs' optional data type in final Zarr v3 metadata (src/meta/dtype_v3.c,
 * meta_v3.c): the data type object {"name": "optional", "configuration": <inner type>}, nested;
 * fill values null / [x] / [[x]] (zarrs' codec/array_to_bytes/optional.rs, "Fill Value
 * Encoding"); the codec the type needs. The documents are zarrs' own test data
 * (tests/fixtures/zarrs-test-data/v3/array_optional*.zarr) and variants built here; expected
 * bytes are written out from the two's complement definitions. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/meta.h"

#include "../check_main.h"
#include "../fixture_dir.h"

#define OPT_CODEC(data)                                                                      \
    "[{\"name\": \"optional\", \"configuration\": {\"mask_codecs\": [{\"name\": \"packbits\"}],"  \
    " \"data_codecs\": " data "}}]"
#define BYTES_LE "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]"

static zf_status parse(const char *dtype, const char *fill, const char *codecs, zf_node_meta *m,
                       zf_err *err)
{
    char doc[4096];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [5, 4], \"data_type\": %s,"
             " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [2, "
             "3]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": %s, "
             "\"codecs\": %s}",
             dtype, fill, codecs);
    memset(m, 0, sizeof *m);
    return zf_meta_parse_v3("zarr.json", doc, strlen(doc), m, err);
}

static char *read_fixture(const char *rel, size_t *len)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/zarrs-test-data/v3/%s", zf_test_fixtures(), rel);
    FILE *f = fopen(p, "rb");
    ck_assert_msg(f != NULL, "%s", p);
    char *buf = malloc(65536);
    *len = fread(buf, 1, 65535, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

START_TEST(fixtures)
{
    size_t len;
    zf_err err = {""};
    zf_node_meta m;
    char *doc = read_fixture("array_optional.zarr/array/zarr.json", &len);
    ck_assert_int_eq(zf_meta_parse_v3("zarr.json", doc, len, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_uint_eq(m.array.optional_levels, 1);
    ck_assert_str_eq(m.array.dtype_typestr, "|u1");
    ck_assert_uint_eq(m.array.dtype.itemsize, 1);
    ck_assert_uint_eq(m.array.fill_value[0], 0);
    ck_assert_uint_eq(m.array.mask_fill, 0); /* null: missing */
    ck_assert_str_eq(m.array.fill_value_json, "null");
    uint64_t size;
    ck_assert(zf_array_meta_flat_size(&m.array, &size));
    ck_assert_uint_eq(size, 16); /* 4 x 4 uint8: the mask is not in the array's file */
    ck_assert(zf_array_meta_read_only(&m.array));
    zf_node_meta_free(&m);
    free(doc);

    doc = read_fixture("array_optional_nested.zarr/array/zarr.json", &len);
    ck_assert_int_eq(zf_meta_parse_v3("zarr.json", doc, len, &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_OK);
    ck_assert_uint_eq(m.array.optional_levels, 2);
    ck_assert_str_eq(m.array.dtype_typestr, "|u1");
    ck_assert_uint_eq(m.array.mask_fill, 1); /* [null]: Some(None) */
    ck_assert_uint_eq(m.array.fill_value[0], 0);
    zf_node_meta_free(&m);
    free(doc);
}
END_TEST

START_TEST(fill_values)
{
    static const struct {
        const char *dtype, *fill;
        unsigned levels;
        uint8_t depth;
        size_t size;
        const char *bytes;
    } ok[] = {
        {"{\"name\": \"optional\", \"configuration\": {\"name\": \"int16\", \"configuration\": "
         "{}}}", "null", 1, 0, 2, "\x00\x00"},
        {"{\"name\": \"zarrs.optional\", \"configuration\": {\"name\": \"int16\"}}", "[-2]", 1, 1,
         2, "\xfe\xff"},
        {"{\"name\": \"optional\", \"configuration\": {\"name\": \"float32\"}}", "[\"NaN\"]", 1,
         1, 4, "\x00\x00\xc0\x7f"},
        {"{\"name\": \"optional\", \"configuration\": {\"name\": \"optional\", \"configuration\": "
         "{\"name\": \"uint16\"}}}", "[[513]]", 2, 2, 2, "\x01\x02"},
        {"{\"name\": \"optional\", \"configuration\": {\"name\": \"optional\", \"configuration\": "
         "{\"name\": \"uint16\"}}}", "null", 2, 0, 2, "\x00\x00"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        zf_node_meta m;
        zf_err err = {""};
        const char *codecs = ok[i].levels == 1
                                 ? OPT_CODEC(BYTES_LE)
                                 : OPT_CODEC("[{\"name\": \"optional\", \"configuration\": "
                                             "{\"mask_codecs\": [\"packbits\"], \"data_codecs\": "
                                             BYTES_LE "}}]");
        ck_assert_msg(parse(ok[i].dtype, ok[i].fill, codecs, &m, &err) == ZF_OK, "%zu: %s", i,
                      err.msg);
        ck_assert_msg(m.unsupported == ZF_OK, "%zu: %s", i, m.unsupported_why);
        ck_assert_uint_eq(m.array.optional_levels, ok[i].levels);
        ck_assert_uint_eq(m.array.mask_fill, ok[i].depth);
        ck_assert_uint_eq(m.array.dtype.itemsize, ok[i].size);
        ck_assert_mem_eq(m.array.fill_value, ok[i].bytes, ok[i].size);
        zf_node_meta_free(&m);
    }
    /* invalid fill values: the document is invalid */
    static const char *bad[] = {"0", "[]", "[1, 2]", "\"x\"", "[\"x\"]", "[70000]", "[[1]]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        zf_node_meta m;
        zf_err err = {""};
        ck_assert_msg(parse("{\"name\": \"optional\", \"configuration\": {\"name\": \"int16\"}}",
                            bad[i], OPT_CODEC(BYTES_LE), &m, &err) == ZF_ERR_INVALID,
                      "%s", bad[i]);
        ck_assert_msg(strstr(err.msg, "fill_value") != NULL, "%s", err.msg);
        zf_node_meta_free(&m);
    }
}
END_TEST

START_TEST(refused)
{
    zf_node_meta m;
    zf_err err = {""};
    const char *opt16 = "{\"name\": \"optional\", \"configuration\": {\"name\": \"int16\"}}";
    /* an inner type zarrfs has no flat encoding for: unsupported, named */
    ck_assert_int_eq(parse("{\"name\": \"optional\", \"configuration\": {\"name\": \"string\"}}",
                           "null", OPT_CODEC("[\"vlen-utf8\"]"), &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m.unsupported_why, "optional"), "%s", m.unsupported_why);
    zf_node_meta_free(&m);
    /* in a rectilinear chunk grid (its chunks' masks would start at other offsets): refused */
    char rect[4096];
    snprintf(rect, sizeof rect,
             "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [5, 4], \"data_type\": "
             "%s, \"chunk_grid\": {\"name\": \"rectilinear\", \"configuration\": {\"kind\": "
             "\"inline\", \"chunk_shapes\": [[2, 3], 4]}}, \"chunk_key_encoding\": {\"name\": "
             "\"default\"}, \"fill_value\": null, \"codecs\": %s}",
             opt16, OPT_CODEC(BYTES_LE));
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(zf_meta_parse_v3("zarr.json", rect, strlen(rect), &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m.unsupported_why, "rectilinear"), "%s", m.unsupported_why);
    zf_node_meta_free(&m);
    /* nested deeper than 8 levels */
    char deep[2048] = "{\"name\": \"int8\"}";
    for (int i = 0; i < 9; i++) { /* 40 bytes more per level: far below 2048 */
        char t[sizeof deep + 64];
        snprintf(t, sizeof t, "{\"name\": \"optional\", \"configuration\": %s}", deep);
        ck_assert_uint_lt(strlen(t), sizeof deep);
        strcpy(deep, t);
    }
    ck_assert_int_eq(parse(deep, "null", OPT_CODEC(BYTES_LE), &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    zf_node_meta_free(&m);
    /* the codec nested less deep than the type: unsupported, never misread */
    ck_assert_int_eq(parse("{\"name\": \"optional\", \"configuration\": {\"name\": \"optional\", "
                           "\"configuration\": {\"name\": \"int16\"}}}", "null",
                           OPT_CODEC(BYTES_LE), &m, &err), ZF_OK);
    ck_assert_int_eq(m.unsupported, ZF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(m.unsupported_why, "optional codec"), "%s", m.unsupported_why);
    zf_node_meta_free(&m);
    /* an optional type with a plain bytes codec, or the optional codec on a plain type */
    ck_assert_int_eq(parse(opt16, "null", BYTES_LE, &m, &err), ZF_ERR_INVALID);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("\"int16\"", "0", OPT_CODEC(BYTES_LE), &m, &err), ZF_ERR_INVALID);
    zf_node_meta_free(&m);
    /* a configuration that is not a data type */
    ck_assert_int_eq(parse("{\"name\": \"optional\"}", "null", OPT_CODEC(BYTES_LE), &m, &err),
                     ZF_ERR_INVALID);
    zf_node_meta_free(&m);
    ck_assert_int_eq(parse("{\"name\": \"optional\", \"configuration\": {}}", "null",
                           OPT_CODEC(BYTES_LE), &m, &err), ZF_ERR_INVALID);
    zf_node_meta_free(&m);
}
END_TEST

ZF_CHECK_MAIN("meta-optional", fixtures, fill_values, refused)
