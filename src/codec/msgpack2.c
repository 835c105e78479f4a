/* msgpack2.c — the MsgPack object codec (numcodecs MsgPack, v2 id "msgpack2"): a chunk of an
 * object array is one MessagePack document, the list of its elements — nested one list per
 * dimension of the chunk, as numpy's tolist() gives them — followed by the data type's string and
 * the chunk's shape (numcodecs msgpacks.py: `items = buf.tolist(); items.extend((buf.dtype.str,
 * buf.shape)); msgpack.packb(items, use_bin_type=..., use_single_float=...)`). The document is
 * parsed by msgpack-c (Debian's libmsgpack); decoding yields text only (codec.h, "variable-length
 * elements as text"): each element one compact JSON document on a line (JSON Lines), as json2
 * and vlen-array give them:
 *
 * - nil, booleans, integers as JSON; floats (32- and 64-bit) as Python's repr writes them (the
 *   shortest digits that read back, `1.0`, `1e-05`, `1e+16`; NaN and ±Infinity bare, as
 *   Python's json module writes them);
 * - str (UTF-8, else the chunk is corrupt, as Python's unpackb would fail) as a JSON string;
 *   bin (Python bytes, which JSON cannot hold) and, with "raw": true, str too, as a JSON string
 *   of the vlen-bytes text form (\xHH for bytes that are not printable UTF-8);
 * - arrays as JSON arrays; maps as JSON objects (a key that is not a string becomes the string
 *   of its JSON text, as Python's json.dumps does for numbers); extension types are corrupt
 *   (Python would return ExtType objects, which no text form shows).
 *
 * Bounds before bytes: msgpack-c allocates an array's or map's elements from the count in its
 * header before reading them (a 5-byte chunk can ask for 2^32 elements), so every count and
 * length is first checked against the bytes left (each element takes at least one byte); the
 * chunk must be one document with nothing after it. */
#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "zarrfs/json.h"

typedef struct msgpack2_codec {
    zf_codec base;
    bool raw; /* "raw": true: str elements are bytes (Python's msgpack.unpackb(raw=True)) */
} msgpack2_codec;

/* ---- the bounds check ------------------------------------------------------------------------ */

static uint64_t be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* True when p[0, n) is exactly one MessagePack document whose counts and lengths all fit in it. */
static bool counts_fit(const uint8_t *p, size_t n)
{
    uint64_t pending = 1; /* elements still to read */
    size_t i = 0;
    while (pending > 0) {
        if (i >= n)
            return false;
        uint8_t c = p[i++];
        pending--;
        unsigned hdr = 0;     /* bytes of the count or length after c */
        uint64_t payload = 0; /* bytes of data after the header */
        uint64_t per = 0;     /* elements per count unit: 1 array, 2 map, 0 data */
        if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) {
            /* fixint, nil, false, true */
        } else if ((c & 0xf0) == 0x80) {
            pending += 2u * (c & 0x0f);
        } else if ((c & 0xf0) == 0x90) {
            pending += c & 0x0f;
        } else if ((c & 0xe0) == 0xa0) {
            payload = c & 0x1f;
        } else {
            switch (c) {
            case 0xc4: case 0xd9: hdr = 1; break;                    /* bin8, str8 */
            case 0xc5: case 0xda: hdr = 2; break;                    /* bin16, str16 */
            case 0xc6: case 0xdb: hdr = 4; break;                    /* bin32, str32 */
            case 0xc7: hdr = 1, payload = 1; break;                  /* ext8 (+ type) */
            case 0xc8: hdr = 2, payload = 1; break;                  /* ext16 */
            case 0xc9: hdr = 4, payload = 1; break;                  /* ext32 */
            case 0xcc: case 0xd0: payload = 1; break;
            case 0xcd: case 0xd1: payload = 2; break;
            case 0xca: case 0xce: case 0xd2: payload = 4; break;
            case 0xcb: case 0xcf: case 0xd3: payload = 8; break;
            case 0xd4: payload = 2; break;                           /* fixext 1..16 (+ type) */
            case 0xd5: payload = 3; break;
            case 0xd6: payload = 5; break;
            case 0xd7: payload = 9; break;
            case 0xd8: payload = 17; break;
            case 0xdc: hdr = 2, per = 1; break;                      /* array16 */
            case 0xdd: hdr = 4, per = 1; break;                      /* array32 */
            case 0xde: hdr = 2, per = 2; break;                      /* map16 */
            case 0xdf: hdr = 4, per = 2; break;                      /* map32 */
            default: return false;                                   /* 0xc1: never used */
            }
        }
        if (hdr) {
            if (n - i < hdr)
                return false;
            uint64_t v = be(p + i, hdr);
            i += hdr;
            if (per)
                pending += per * v;
            else
                payload += v;
        }
        if (payload > n - i || pending > n - i - payload)
            return false;
        i += (size_t)payload;
    }
    return i == n;
}

/* ---- JSON text of an object ------------------------------------------------------------------ */

typedef struct jbuf {
    char *p;
    size_t n, cap;
    bool nomem;
} jbuf;

static void put(jbuf *b, const void *s, size_t n)
{
    if (b->nomem)
        return;
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->nomem = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void puts_(jbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* x as Python's repr(float) writes it: the shortest digits that read back as x, fixed notation
 * for decimal exponents -4..15 (with ".0" when integral), else d.ddde±XX. */
static void put_float(jbuf *b, double x)
{
    if (isnan(x)) {
        puts_(b, "NaN");
        return;
    }
    if (isinf(x)) {
        puts_(b, x < 0 ? "-Infinity" : "Infinity");
        return;
    }
    char e[40];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, x);
        if (strtod(e, NULL) == x)
            break;
    }
    /* e: [-]D[.DDD]e(+|-)XX */
    const char *s = e;
    char out[64], digits[24];
    size_t k = 0, o = 0;
    if (*s == '-')
        out[o++] = *s++;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[k++] = *s;
    while (k > 1 && digits[k - 1] == '0') /* %.*e pads; the digits are the shortest already */
        k--;
    int exp = atoi(s + 1);
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out[o++] = '0', out[o++] = '.';
            for (int z = 0; z < -exp - 1; z++)
                out[o++] = '0';
            memcpy(out + o, digits, k), o += k;
        } else {
            for (int d = 0; d <= exp; d++)
                out[o++] = (size_t)d < k ? digits[d] : '0';
            out[o++] = '.';
            if ((size_t)exp + 1 < k) {
                memcpy(out + o, digits + exp + 1, k - (size_t)exp - 1);
                o += k - (size_t)exp - 1;
            } else {
                out[o++] = '0';
            }
        }
        out[o] = '\0';
    } else {
        out[o++] = digits[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, k - 1), o += k - 1;
        }
        snprintf(out + o, sizeof out - o, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    }
    puts_(b, out);
}

/* A JSON string of n bytes of UTF-8 text (escaped as JSON needs; U+2028 and U+2029 too, which
 * are line breaks to Python's splitlines). */
static void put_string(jbuf *b, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        char esc[7] = {'\\', 0};
        if (c == '"' || c == '\\') {
            esc[1] = (char)c;
            put(b, esc, 2);
        } else if (c < 0x20) {
            const char *short_form = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                                     : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (short_form) {
                puts_(b, short_form);
            } else {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
                put(b, esc, 6);
            }
        } else if (c == 0xE2 && n - i >= 3 && s[i + 1] == 0x80 &&
                   (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
            puts_(b, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
            i += 2;
        } else {
            put(b, &s[i], 1);
        }
    }
    put(b, "\"", 1);
}

/* Bytes as a JSON string of their vlen-bytes text form. */
static void put_bytes(jbuf *b, const uint8_t *s, size_t n)
{
    size_t k = zf_text_escape_bytes(s, n, NULL);
    char *t = malloc(k ? k : 1);
    if (!t) {
        b->nomem = true;
        return;
    }
    zf_text_escape_bytes(s, n, t);
    put_string(b, (const uint8_t *)t, k);
    free(t);
}

static zf_status put_object(const msgpack2_codec *c, jbuf *b, const msgpack_object *v,
                            zf_err *err);

static zf_status put_key(const msgpack2_codec *c, jbuf *b, const msgpack_object *k, zf_err *err)
{
    if (k->type == MSGPACK_OBJECT_STR && !c->raw)
        return put_object(c, b, k, err);
    jbuf t = {0};
    zf_status st = put_object(c, &t, k, err);
    if (st == ZF_OK && !t.nomem) {
        if (t.n >= 2 && t.p[0] == '"') /* already a string (bytes) */
            put(b, t.p, t.n);
        else
            put_string(b, (const uint8_t *)t.p, t.n);
    }
    if (t.nomem)
        b->nomem = true;
    free(t.p);
    return st;
}

static zf_status put_object(const msgpack2_codec *c, jbuf *b, const msgpack_object *v,
                            zf_err *err)
{
    char num[32];
    switch (v->type) {
    case MSGPACK_OBJECT_NIL:
        puts_(b, "null");
        return ZF_OK;
    case MSGPACK_OBJECT_BOOLEAN:
        puts_(b, v->via.boolean ? "true" : "false");
        return ZF_OK;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(num, sizeof num, "%" PRIu64, v->via.u64);
        puts_(b, num);
        return ZF_OK;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(num, sizeof num, "%" PRId64, v->via.i64);
        puts_(b, num);
        return ZF_OK;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        put_float(b, v->via.f64);
        return ZF_OK;
    case MSGPACK_OBJECT_STR:
        if (c->raw) {
            put_bytes(b, (const uint8_t *)v->via.str.ptr, v->via.str.size);
            return ZF_OK;
        }
        if (!zf_text_valid_utf8((const uint8_t *)v->via.str.ptr, v->via.str.size))
            return zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: a string is not valid UTF-8");
        put_string(b, (const uint8_t *)v->via.str.ptr, v->via.str.size);
        return ZF_OK;
    case MSGPACK_OBJECT_BIN:
        put_bytes(b, (const uint8_t *)v->via.bin.ptr, v->via.bin.size);
        return ZF_OK;
    case MSGPACK_OBJECT_ARRAY:
        put(b, "[", 1);
        for (uint32_t i = 0; i < v->via.array.size; i++) {
            if (i)
                put(b, ",", 1);
            zf_status st = put_object(c, b, &v->via.array.ptr[i], err);
            if (st != ZF_OK)
                return st;
        }
        put(b, "]", 1);
        return ZF_OK;
    case MSGPACK_OBJECT_MAP:
        put(b, "{", 1);
        for (uint32_t i = 0; i < v->via.map.size; i++) {
            if (i)
                put(b, ",", 1);
            zf_status st = put_key(c, b, &v->via.map.ptr[i].key, err);
            if (st != ZF_OK)
                return st;
            put(b, ":", 1);
            if ((st = put_object(c, b, &v->via.map.ptr[i].val, err)) != ZF_OK)
                return st;
        }
        put(b, "}", 1);
        return ZF_OK;
    default:
        return zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: an extension type (not rendered as text)");
    }
}

/* ---- the chunk ------------------------------------------------------------------------------- */

/* Each element's line appended to b (line ends at ends[k]), C order. */
static zf_status collect(const msgpack2_codec *c, const msgpack_object *v, unsigned depth,
                         const zf_chunk_repr *d, jbuf *b, uint32_t *ends, uint64_t *k,
                         zf_err *err)
{
    if (depth == d->ndim) {
        zf_status st = put_object(c, b, v, err);
        if (st != ZF_OK)
            return st;
        put(b, "\n", 1);
        if (b->nomem)
            return ZF_ERR_NOMEM;
        if (b->n >= ((size_t)1 << 32))
            return zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: the chunk's text reaches 4 GiB");
        ends[(*k)++] = (uint32_t)b->n;
        return ZF_OK;
    }
    if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != d->shape[depth])
        return zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: dimension %u: expected a list of %llu "
                       "elements", depth, (unsigned long long)d->shape[depth]);
    for (uint32_t i = 0; i < v->via.array.size; i++) {
        zf_status st = collect(c, &v->via.array.ptr[i], depth + 1, d, b, ends, k, err);
        if (st != ZF_OK)
            return st;
    }
    return ZF_OK;
}

static zf_status msgpack2_decode_text(const zf_codec *codec, const zf_chunk_repr *decoded,
                                      const uint8_t *in, size_t in_len, zf_text_chunk **out,
                                      zf_err *err)
{
    const msgpack2_codec *c = (const msgpack2_codec *)codec;
    uint64_t want = 1;
    for (unsigned d = 0; d < decoded->ndim; d++)
        want *= decoded->shape[d];
    if (!counts_fit(in, in_len))
        return zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: not one MessagePack document (a count "
                       "or length past its end, or bytes after it)");
    msgpack_unpacked doc;
    msgpack_unpacked_init(&doc);
    size_t off = 0;
    zf_status st = ZF_OK;
    uint32_t *ends = NULL;
    jbuf b = {0};
    msgpack_unpack_return r = msgpack_unpack_next(&doc, (const char *)in, in_len, &off);
    if (r == MSGPACK_UNPACK_NOMEM_ERROR) {
        st = ZF_ERR_NOMEM;
        goto out;
    }
    if (r != MSGPACK_UNPACK_SUCCESS || off != in_len) {
        st = zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: not a MessagePack document%s",
                     r == MSGPACK_UNPACK_SUCCESS ? " (bytes after it)" : "");
        goto out;
    }
    const msgpack_object *root = &doc.data;
    uint32_t nitems = root->type == MSGPACK_OBJECT_ARRAY ? root->via.array.size : 0;
    const msgpack_object *items = nitems ? root->via.array.ptr : NULL;
    if (nitems < 2 || items[nitems - 2].type != MSGPACK_OBJECT_STR ||
        items[nitems - 1].type != MSGPACK_OBJECT_ARRAY) {
        st = zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: expected a list of the elements, the data "
                     "type and the shape");
        goto out;
    }
    const msgpack_object *shape = &items[nitems - 1];
    bool shape_ok = shape->via.array.size == decoded->ndim;
    for (unsigned d = 0; shape_ok && d < decoded->ndim; d++) {
        const msgpack_object *s = &shape->via.array.ptr[d];
        shape_ok = s->type == MSGPACK_OBJECT_POSITIVE_INTEGER && s->via.u64 == decoded->shape[d];
    }
    if (!shape_ok || decoded->ndim == 0) { /* numcodecs cannot pack a 0-d chunk (tolist) */
        st = zf_fail(err, ZF_ERR_CORRUPT, "msgpack2: the shape stored is not the chunk's");
        goto out;
    }
    if (!(ends = calloc(want + 1, sizeof *ends))) {
        st = ZF_ERR_NOMEM;
        goto out;
    }
    msgpack_object list = *root; /* the elements: all but the last two items */
    list.via.array.size = nitems - 2;
    uint64_t k = 1;
    if ((st = collect(c, &list, 0, decoded, &b, ends, &k, err)) != ZF_OK)
        goto out;
    zf_text_chunk *t = zf_text_chunk_alloc(want, b.n);
    if (!t) {
        st = ZF_ERR_NOMEM;
        goto out;
    }
    if (b.n)
        memcpy(t->text, b.p, b.n);
    memcpy(t->starts, ends, (want + 1) * sizeof *ends);
    *out = t;
out:
    free(ends);
    free(b.p);
    msgpack_unpacked_destroy(&doc);
    return st;
}

static const zf_codec_ops msgpack2_ops = {
    .name = "msgpack2",
    .kind = ZF_CODEC_ARRAY_TO_BYTES,
    .resolve = zf_vlen_resolve,
    .decode = zf_vlen_decode,
    .destroy = zf_codec_destroy_plain,
    .decode_text = msgpack2_decode_text,
    .fill_text = zf_text_json_fill,
};

zf_status zf_codec_msgpack2_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    yajl_val raw = zf_cfg_get(cfg, "raw");
    if (raw && !YAJL_IS_TRUE(raw) && !YAJL_IS_FALSE(raw))
        return zf_fail(err, ZF_ERR_INVALID, "msgpack2: \"raw\": expected true or false");
    msgpack2_codec *c = zf_codec_alloc(sizeof *c, &msgpack2_ops);
    if (!c)
        return ZF_ERR_NOMEM;
    c->raw = raw && YAJL_IS_TRUE(raw);
    *out = &c->base;
    return ZF_OK;
}
