/* testutil.c — helpers shared by the codec unit tests, and a reader for NumPy's .npy files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "testutil.h"

const char *tu_expected_dir;
const char *tu_v3_dir;

uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *nb = realloc(buf, 2 * cap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

yajl_val tu_json(const char *text)
{
    char errbuf[256];
    yajl_val v = yajl_tree_parse(text, errbuf, sizeof errbuf);
    ck_assert_msg(v != NULL, "bad JSON in test: %s: %s", text, errbuf);
    return v;
}

zf_codec *tu_codec(const char *json)
{
    yajl_val v = tu_json(json);
    zf_codec *c = NULL;
    zf_err err = {""};
    zf_status st = zf_codec_from_v2(v, &c, &err);
    yajl_tree_free(v);
    ck_assert_msg(st == ZF_OK, "%s: %s (%s)", json, zf_status_str(st), err.msg);
    return c;
}

zf_status tu_codec_status(const char *json, zf_err *err)
{
    yajl_val v = tu_json(json);
    zf_codec *c = NULL;
    zf_status st = zf_codec_from_v2(v, &c, err);
    yajl_tree_free(v);
    if (st == ZF_OK)
        zf_codec_free(c);
    else
        ck_assert_ptr_null(c);
    return st;
}

zf_status tu_decode(const zf_codec *c, const void *in, size_t in_len, void *out, size_t out_len,
                    zf_err *err)
{
    zf_chunk_repr r = {.ndim = 1, .shape = {out_len}, .nbytes = out_len};
    r.dtype.kind = 'u';
    r.dtype.byteorder = '|';
    r.dtype.itemsize = 1;
    return c->ops->decode(c, &r, in, in_len, out, out_len, err);
}

void tu_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tu_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tu_fill(uint8_t *buf, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t i = 0;
    while (i < n) {
        x = x * 1103515245u + 12345u;
        uint8_t v = (uint8_t)('a' + (x >> 16) % 8);
        size_t run = 1 + (x >> 24) % 6;
        for (size_t k = 0; k < run && i < n; k++)
            buf[i++] = v;
    }
}

/* --- .npy --- */

static const char *find_key(const char *h, const char *key)
{
    const char *p = strstr(h, key);
    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    return p;
}

bool tu_npy_load(const char *path, tu_npy *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    size_t len;
    uint8_t *f = tu_read_file(path, &len);
    if (!f) {
        snprintf(why, whylen, "%s: cannot read", path);
        return false;
    }
    out->file = f;
    if (len < 10 || memcmp(f, "\x93NUMPY", 6) != 0) {
        snprintf(why, whylen, "%s: not a .npy file", path);
        return false;
    }
    size_t hlen, hstart;
    if (f[6] == 1) {
        hlen = (size_t)f[8] | (size_t)f[9] << 8;
        hstart = 10;
    } else {
        if (len < 12) {
            snprintf(why, whylen, "%s: truncated", path);
            return false;
        }
        hlen = (size_t)f[8] | (size_t)f[9] << 8 | (size_t)f[10] << 16 | (size_t)f[11] << 24;
        hstart = 12;
    }
    if (hstart + hlen > len) {
        snprintf(why, whylen, "%s: truncated header", path);
        return false;
    }
    char *h = malloc(hlen + 1);
    memcpy(h, f + hstart, hlen);
    h[hlen] = 0;
    bool ok = false;
    const char *p = find_key(h, "'descr'");
    if (p && (*p == '\'' || *p == '"')) {
        const char *q = strchr(p + 1, *p);
        if (q && (size_t)(q - p - 1) < sizeof out->descr) {
            memcpy(out->descr, p + 1, (size_t)(q - p - 1));
            ok = true;
        }
    }
    p = find_key(h, "'fortran_order'");
    ok = ok && p;
    if (p)
        out->fortran = strncmp(p, "True", 4) == 0;
    p = find_key(h, "'shape'");
    ok = ok && p && *p == '(';
    out->nelem = 1;
    if (ok) {
        p++;
        while (*p && *p != ')') {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            out->shape[out->ndim++] = v;
            out->nelem *= (size_t)v;
            p = end;
        }
    }
    free(h);
    if (!ok) {
        snprintf(why, whylen, "%s: unreadable header", path);
        return false;
    }
    out->data = f + hstart + hlen;
    out->data_len = len - hstart - hlen;
    return true;
}

void tu_npy_free(tu_npy *n)
{
    free(n->file);
    n->file = NULL;
}

zf_chunk_repr tu_repr_of(const char *typestr, unsigned ndim, const uint64_t *shape)
{
    zf_chunk_repr r;
    memset(&r, 0, sizeof r);
    zf_err err = {""};
    ck_assert_msg(zf_dtype_parse(typestr, &r.dtype, &err) == ZF_OK, "%s: %s", typestr, err.msg);
    r.ndim = ndim;
    size_t n = 1;
    for (unsigned i = 0; i < ndim; i++) {
        r.shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    r.nbytes = n * r.dtype.itemsize;
    return r;
}

uint8_t *tu_zstd_stream(const uint8_t *in, size_t len, int level, bool checksum, size_t piece,
                        size_t *out_len)
{
    size_t cap = ZSTD_compressBound(len) + 64;
    uint8_t *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum ? 1 : 0);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
    ZSTD_outBuffer ob = {out, cap, 0};
    for (size_t pos = 0; pos < len; pos += piece) {
        ZSTD_inBuffer ib = {in + pos, pos + piece < len ? piece : len - pos, 0};
        while (ib.pos < ib.size)
            ck_assert(!ZSTD_isError(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_continue)));
    }
    ZSTD_inBuffer none = {NULL, 0, 0};
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &ob, &none, ZSTD_e_end);
        ck_assert(!ZSTD_isError(left));
    } while (left);
    ZSTD_freeCCtx(cc);
    ck_assert(ZSTD_getFrameContentSize(out, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    *out_len = ob.pos;
    return out;
}
