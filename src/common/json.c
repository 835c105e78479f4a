/* json.c — yajl tree helpers, base64 and UTF-8 -> UTF-32. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "zarrfs/json.h"

/* Python's json module writes NaN, Infinity and -Infinity as bare tokens (zarr-python and
 * xarray attributes such as _FillValue: NaN). yajl rejects them, so outside strings each becomes
 * a string marked with a leading \x1f, which zf_json_special recognises and zf_json_dump writes
 * back bare. */
#define SPECIAL_MARK '\x1f'
static const char *const SPECIALS[] = {"-Infinity", "Infinity", "NaN"};

/* The text yajl parses: a NUL-terminated copy of text (which holds no NUL) with the specials
 * marked, in *out; and whether arrays and objects nest at most ZF_JSON_MAX_DEPTH deep (brackets
 * in strings aside), in *depth_ok. One pass, which jumps over ordinary bytes with strcspn: the
 * fuzz build instruments every comparison of a byte loop. ZF_ERR_NOMEM, else ZF_OK. */
static zf_status prepare(const char *text, size_t len, char **out, bool *depth_ok)
{
    char *src = malloc(len + 1);
    /* A token becomes "\u001f" + token + quotes: NaN (3 bytes) grows most, to 11 bytes. */
    char *dst = malloc(4 * len + 1), *o = dst;
    if (!src || !dst) {
        free(src);
        free(dst);
        return ZF_ERR_NOMEM;
    }
    memcpy(src, text, len);
    src[len] = '\0';
    size_t depth = 0;
    *depth_ok = true;
    const char *p = src;
    while (*p) {
        size_t k = strcspn(p, "\"[]{}-IN"); /* outside strings */
        memcpy(o, p, k);
        o += k, p += k;
        char c = *p;
        if (c == '\0')
            break;
        if (c == '"') { /* a string, to its closing quote; a backslash escapes the next byte */
            const char *q = p + 1;
            for (;;) {
                q += strcspn(q, "\"\\");
                if (*q != '\\' || q[1] == '\0')
                    break;
                q += 2;
            }
            if (*q == '\\' || *q == '"')
                q++;
            memcpy(o, p, (size_t)(q - p));
            o += q - p, p = q;
            continue;
        }
        if (c == '[' || c == '{') {
            if (++depth > ZF_JSON_MAX_DEPTH) {
                *depth_ok = false;
                break;
            }
        } else if (c == ']' || c == '}') {
            if (depth)
                depth--;
        } else {
            size_t i;
            for (i = 0; i < 3; i++) {
                size_t n = strlen(SPECIALS[i]);
                if (strncmp(p, SPECIALS[i], n) == 0)
                    break;
            }
            if (i < 3) {
                o += sprintf(o, "\"\\u001f%s\"", SPECIALS[i]);
                p += strlen(SPECIALS[i]);
                continue;
            }
        }
        *o++ = *p++;
    }
    *o = '\0';
    free(src);
    *out = dst;
    return ZF_OK;
}

const char *zf_json_special(yajl_val v)
{
    if (!YAJL_IS_STRING(v) || v->u.string[0] != SPECIAL_MARK)
        return NULL;
    for (size_t k = 0; k < 3; k++)
        if (strcmp(v->u.string + 1, SPECIALS[k]) == 0)
            return SPECIALS[k];
    return NULL;
}

zf_status zf_json_parse(const char *key, const char *text, size_t len, yajl_val *out, zf_err *err)
{
    if (len > ZF_JSON_MAX_TEXT)
        return zf_fail(err, ZF_ERR_INVALID, "%s: JSON document larger than %zu MiB", key,
                       ZF_JSON_MAX_TEXT >> 20);
    if (memchr(text, '\0', len))
        return zf_fail(err, ZF_ERR_INVALID, "%s: not valid JSON (contains a NUL byte)", key);
    char *copy;
    bool depth_ok;
    if (prepare(text, len, &copy, &depth_ok) != ZF_OK)
        return ZF_ERR_NOMEM;
    if (!depth_ok) {
        free(copy);
        return zf_fail(err, ZF_ERR_INVALID, "%s: JSON nested deeper than %d levels", key,
                       ZF_JSON_MAX_DEPTH);
    }
    char ebuf[256] = "";
    yajl_val v = yajl_tree_parse(copy, ebuf, sizeof ebuf);
    free(copy);
    if (!v) {
        char *nl = strchr(ebuf, '\n'); /* yajl's message spans lines; keep the first */
        if (nl)
            *nl = '\0';
        return zf_fail(err, ZF_ERR_INVALID, "%s: not valid JSON (%s)", key,
                       ebuf[0] ? ebuf : "parse error");
    }
    *out = v;
    return ZF_OK;
}

yajl_val zf_json_get(yajl_val v, const char *name)
{
    if (!YAJL_IS_OBJECT(v))
        return NULL;
    for (size_t i = 0; i < v->u.object.len; i++)
        if (strcmp(v->u.object.keys[i], name) == 0)
            return v->u.object.values[i];
    return NULL;
}

static int gen_value(yajl_gen g, yajl_val v)
{
    switch (v ? v->type : yajl_t_null) {
    case yajl_t_string: {
        const char *special = zf_json_special(v);
        if (special) /* back to Python's bare token */
            return yajl_gen_number(g, special, strlen(special));
        return yajl_gen_string(g, (const unsigned char *)v->u.string, strlen(v->u.string));
    }
    case yajl_t_number:
        return yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
    case yajl_t_object:
        if (yajl_gen_map_open(g) != yajl_gen_status_ok)
            return -1;
        for (size_t i = 0; i < v->u.object.len; i++) {
            const char *k = v->u.object.keys[i];
            if (yajl_gen_string(g, (const unsigned char *)k, strlen(k)) != yajl_gen_status_ok ||
                gen_value(g, v->u.object.values[i]) != yajl_gen_status_ok)
                return -1;
        }
        return yajl_gen_map_close(g);
    case yajl_t_array:
        if (yajl_gen_array_open(g) != yajl_gen_status_ok)
            return -1;
        for (size_t i = 0; i < v->u.array.len; i++)
            if (gen_value(g, v->u.array.values[i]) != yajl_gen_status_ok)
                return -1;
        return yajl_gen_array_close(g);
    case yajl_t_true: return yajl_gen_bool(g, 1);
    case yajl_t_false: return yajl_gen_bool(g, 0);
    default: return yajl_gen_null(g);
    }
}

static char *dump(yajl_val v, bool pretty)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g)
        return NULL;
    if (pretty) {
        yajl_gen_config(g, yajl_gen_beautify, 1);
        yajl_gen_config(g, yajl_gen_indent_string, "    ");
    }
    char *out = NULL;
    if (gen_value(g, v) == yajl_gen_status_ok) {
        const unsigned char *buf;
        size_t len;
        yajl_gen_get_buf(g, &buf, &len);
        out = malloc(len + 1);
        if (out) {
            memcpy(out, buf, len);
            out[len] = '\0';
        }
    }
    yajl_gen_free(g);
    return out;
}

char *zf_json_dump(yajl_val v) { return dump(v, false); }

zf_status zf_json_replace_member(const char *key, const char *text, size_t len,
                                 const char *member, const char *value, char **out, zf_err *err)
{
    yajl_val doc, val;
    zf_status st = zf_json_parse(key, text, len, &doc, err);
    if (st != ZF_OK)
        return st;
    if (!YAJL_IS_OBJECT(doc)) {
        yajl_tree_free(doc);
        return zf_fail(err, ZF_ERR_INVALID, "%s: not a JSON object", key);
    }
    if ((st = zf_json_parse(key, value, strlen(value), &val, err)) != ZF_OK) {
        yajl_tree_free(doc);
        return st;
    }
    size_t i = 0, n = doc->u.object.len;
    while (i < n && strcmp(doc->u.object.keys[i], member) != 0)
        i++;
    if (i < n) {
        yajl_tree_free(doc->u.object.values[i]);
        doc->u.object.values[i] = val;
    } else {
        const char **keys = realloc((void *)doc->u.object.keys, (n + 1) * sizeof *keys);
        if (keys)
            doc->u.object.keys = keys;
        yajl_val *vals = keys ? realloc(doc->u.object.values, (n + 1) * sizeof *vals) : NULL;
        if (vals)
            doc->u.object.values = vals;
        char *k = vals ? strdup(member) : NULL;
        if (!k) {
            yajl_tree_free(val);
            yajl_tree_free(doc);
            return ZF_ERR_NOMEM;
        }
        doc->u.object.keys[n] = k;
        doc->u.object.values[n] = val;
        doc->u.object.len = n + 1;
    }
    *out = dump(doc, true);
    yajl_tree_free(doc);
    return *out ? ZF_OK : ZF_ERR_NOMEM;
}

static int is_integral_text(const char *r)
{
    if (*r == '-')
        r++;
    if (!*r)
        return 0;
    for (; *r; r++)
        if (*r < '0' || *r > '9')
            return 0;
    return 1;
}

int zf_json_int64(yajl_val v, int64_t *out)
{
    if (!YAJL_IS_NUMBER(v) || !is_integral_text(v->u.number.r))
        return 0;
    errno = 0;
    char *end;
    long long x = strtoll(v->u.number.r, &end, 10);
    if (errno || *end)
        return 0;
    *out = x;
    return 1;
}

int zf_json_uint64(yajl_val v, uint64_t *out)
{
    if (!YAJL_IS_NUMBER(v) || !is_integral_text(v->u.number.r) || v->u.number.r[0] == '-')
        return 0;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(v->u.number.r, &end, 10);
    if (errno || *end)
        return 0;
    *out = x;
    return 1;
}

/* Each byte's base64 value plus one: 1-64 in the alphabet, B64_PAD for '=', 0 (skipped) for
 * the rest. A table, not comparisons: base64 chunks are decoded byte by byte. */
enum { B64_PAD = 65 };
static const uint8_t b64_table[256] = {
    ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7, ['H'] = 8,
    ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23,
    ['X'] = 24, ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30,
    ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37,
    ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44,
    ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49, ['x'] = 50, ['y'] = 51,
    ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58,
    ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64, ['='] = B64_PAD,
};

zf_status zf_base64_decode_into(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                                size_t *produced)
{
    size_t n = 0;
    unsigned quad = 0, pads = 0;
    uint32_t acc = 0;
    bool ended = false;
    for (size_t i = 0; i < in_len; i++) {
        /* whole groups of four alphabet characters: three bytes at once (the usual text) */
        while (quad == 0 && in_len - i >= 4) {
            uint32_t a = b64_table[in[i]] - 1u, b = b64_table[in[i + 1]] - 1u,
                     c = b64_table[in[i + 2]] - 1u, d = b64_table[in[i + 3]] - 1u;
            if ((a | b | c | d) > 63) /* 0 - 1 wraps: a skipped byte ends the fast way too */
                break;
            if (out) {
                if (cap - n < 3)
                    break; /* the byte loop below says where it ends */
                uint32_t x = a << 18 | b << 12 | c << 6 | d;
                out[n] = (uint8_t)(x >> 16), out[n + 1] = (uint8_t)(x >> 8), out[n + 2] = (uint8_t)x;
            }
            n += 3, i += 4;
            pads = 0;
        }
        if (i == in_len)
            break;
        unsigned v = b64_table[in[i]];
        if (v == B64_PAD) {
            if (quad >= 2 && quad + ++pads >= 4) {
                ended = true; /* a complete pad ends the data */
                break;
            }
            continue;
        }
        if (v == 0)
            continue; /* non-strict: characters outside the alphabet are skipped */
        pads = 0;
        acc = (acc << 6) | (v - 1);
        if (quad++ > 0) { /* each character after the first of a group completes a byte */
            if (out) {
                if (n == cap)
                    return ZF_ERR_CORRUPT;
                out[n] = (uint8_t)(acc >> (2 * (4 - quad)));
            }
            n++;
        }
        if (quad == 4) {
            quad = 0;
            acc = 0;
        }
    }
    if (quad != 0 && !ended)
        return ZF_ERR_INVALID;
    *produced = n;
    return ZF_OK;
}

zf_status zf_base64_decode(const char *s, uint8_t **out, size_t *len)
{
    size_t n, slen = strlen(s);
    zf_status st = zf_base64_decode_into((const uint8_t *)s, slen, NULL, 0, &n);
    if (st != ZF_OK)
        return st;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return ZF_ERR_NOMEM;
    zf_base64_decode_into((const uint8_t *)s, slen, buf, n, &n);
    *out = buf;
    *len = n;
    return ZF_OK;
}

zf_status zf_utf8_to_utf32(const char *s, size_t len, uint8_t *out, size_t n_units,
                           int big_endian)
{
    memset(out, 0, n_units * 4);
    size_t i = 0, u = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (i < len) {
        uint32_t c = p[i];
        int extra = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                  : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (extra < 0)
            return ZF_ERR_INVALID;
        if (extra)
            c &= 0x3fu >> extra;
        for (int k = 1; k <= extra; k++) {
            if (i + (size_t)k >= len || (p[i + k] & 0xc0) != 0x80)
                return ZF_ERR_INVALID;
            c = (c << 6) | (p[i + k] & 0x3f);
        }
        i += (size_t)extra + 1;
        if (u < n_units) {
            uint8_t *q = out + 4 * u;
            for (int b = 0; b < 4; b++)
                q[big_endian ? 3 - b : b] = (uint8_t)(c >> (8 * b));
        }
        u++;
    }
    return ZF_OK;
}
