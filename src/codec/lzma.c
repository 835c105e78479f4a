/* lzma.c — numcodecs "lzma": Python's lzma.decompress with `format` 1 (.xz), 2 (.lzma,
 * "alone"), 3 (raw, with a `filters` chain such as [{"id": 33, "preset": 1}]) or 0 (auto:
 * .xz or .lzma). Like Python, streams may follow each other; after the first, bytes that are not
 * a valid stream are ignored. Output is bounded by the caller's buffer (one probe byte detects
 * "more would follow"); the decoder's memory is limited so a hostile header cannot make it
 * reserve gigabytes.
 *
 * Encoding is Python's lzma.compress(data, format, check, preset, filters) as numcodecs calls
 * it: .xz with lzma_easy_encoder(preset, check) or, given filters, lzma_stream_encoder (check -1
 * meaning CRC-64); .lzma with lzma_alone_encoder (the preset's options, or the single LZMA1
 * filter given); raw with lzma_raw_encoder(filters). As in Python, format 0 cannot encode,
 * preset and filters exclude each other, and only .xz takes an integrity check. */
#include <lzma.h>
#include <stdio.h>
#include <string.h>

#include "codec_impl.h"

enum { FMT_AUTO = 0, FMT_XZ = 1, FMT_ALONE = 2, FMT_RAW = 3 };

/* Far above what any xz preset needs (64 MiB dictionary at -9). */
#define LZMA_MEMLIMIT ((uint64_t)1 << 30)

/* The largest dictionary an encoder is given (bytes; 0: as configured). A dictionary only
 * matters up to the size of the data, but liblzma allocates it and its match finder whole (some
 * 90 MiB at the default preset 6) for every chunk it encodes. The fuzz build (meson -Dfuzz=true)
 * lowers it, so that fuzzing spends its time in zarrfs rather than in mapping memory; normal
 * builds encode as numcodecs does, byte for byte. */
#ifndef ZF_LZMA_ENCODE_MAX_DICT
#define ZF_LZMA_ENCODE_MAX_DICT 0
#endif

typedef struct lzma_codec {
    zf_codec base;
    int format, check;
    long long preset; /* -1: none (for encoding) */
    size_t nfilters;
    lzma_filter filters[LZMA_FILTERS_MAX + 1];
    lzma_options_lzma lzma_opt[LZMA_FILTERS_MAX];
    lzma_options_delta delta_opt[LZMA_FILTERS_MAX];
    lzma_options_bcj bcj_opt[LZMA_FILTERS_MAX];
} lzma_codec;

static zf_status make_decoder(const lzma_codec *z, lzma_stream *s, size_t out_len, zf_err *err)
{
    lzma_ret rc;
    switch (z->format) {
    case FMT_XZ: rc = lzma_stream_decoder(s, LZMA_MEMLIMIT, 0); break;
    case FMT_ALONE: rc = lzma_alone_decoder(s, LZMA_MEMLIMIT); break;
    case FMT_AUTO: rc = lzma_auto_decoder(s, LZMA_MEMLIMIT, 0); break;
    default: {
        /* A dictionary larger than the output is never used: cap it so the decoder's memory
         * follows the chunk size, not the encoder's settings. */
        lzma_filter f[LZMA_FILTERS_MAX + 1];
        lzma_options_lzma lo[LZMA_FILTERS_MAX];
        memcpy(f, z->filters, sizeof f);
        for (size_t i = 0; i < z->nfilters; i++) {
            if (f[i].id != LZMA_FILTER_LZMA1 && f[i].id != LZMA_FILTER_LZMA2)
                continue;
            lo[i] = z->lzma_opt[i];
            uint64_t cap = out_len < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : out_len;
            if (lo[i].dict_size > cap)
                lo[i].dict_size = (uint32_t)cap;
            f[i].options = &lo[i];
        }
        rc = lzma_raw_decoder(s, f);
        break;
    }
    }
    if (rc == LZMA_OK)
        return ZF_OK;
    if (rc == LZMA_MEM_ERROR)
        return ZF_ERR_NOMEM;
    return zf_fail(err, ZF_ERR_INVALID, "lzma: cannot set up the decoder (error %d)", (int)rc);
}

/* Decode one stream into out[0..cap). *bad_data marks errors Python's loop ignores after the
 * first stream (LZMAError while decoding, not "ended before the end-of-stream marker");
 * *produced is SIZE_MAX when the stream holds more than cap bytes. total: the whole output's
 * size for messages (ZF_SIZE_UNKNOWN: bounded); limit: the most the whole output may hold. */
static zf_status lzma_one(const lzma_codec *z, const uint8_t *in, size_t in_len, uint8_t *out,
                          size_t cap, size_t base, size_t total, size_t limit, size_t *used,
                          size_t *produced, bool *bad_data, zf_err *err)
{
    lzma_stream s = LZMA_STREAM_INIT;
    *bad_data = false;
    zf_status st = make_decoder(z, &s, limit, err);
    if (st != ZF_OK)
        return st;
    uint8_t probe;
    bool probing = false;
    s.next_in = in;
    s.avail_in = in_len;
    s.next_out = out;
    s.avail_out = cap;
    for (;;) {
        if (s.avail_out == 0) {
            if (probing) {
                st = zf_codec_too_long(err, "lzma", total);
                *produced = SIZE_MAX;
                break;
            }
            probing = true;
            s.next_out = &probe;
            s.avail_out = 1;
        }
        lzma_ret rc = lzma_code(&s, LZMA_RUN);
        if (rc == LZMA_STREAM_END) {
            if (probing && s.avail_out == 0) {
                st = zf_codec_too_long(err, "lzma", total);
                *produced = SIZE_MAX;
            }
            break;
        }
        if (rc == LZMA_OK)
            continue;
        if (rc == LZMA_BUF_ERROR) { /* no progress: the input ran out */
            if (s.avail_out == 0)
                continue;
            st = zf_codec_too_short(err, "lzma", base + (probing ? cap : cap - s.avail_out),
                                    total);
            break;
        }
        *bad_data = true;
        switch (rc) {
        case LZMA_MEM_ERROR:
            *bad_data = false;
            st = ZF_ERR_NOMEM;
            break;
        case LZMA_MEMLIMIT_ERROR:
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "lzma: decoding needs %llu MiB of memory (limit %llu)",
                         (unsigned long long)(lzma_memusage(&s) >> 20),
                         (unsigned long long)(LZMA_MEMLIMIT >> 20));
            break;
        case LZMA_FORMAT_ERROR:
            st = zf_fail(err, ZF_ERR_CORRUPT, "lzma: not %s data",
                         z->format == FMT_XZ      ? ".xz"
                         : z->format == FMT_ALONE ? ".lzma"
                                                  : ".xz or .lzma");
            break;
        case LZMA_OPTIONS_ERROR:
            st = zf_fail(err, ZF_ERR_CORRUPT, "lzma: unsupported options in the stream");
            break;
        default:
            st = zf_fail(err, ZF_ERR_CORRUPT, "lzma: corrupt stream (error %d)", (int)rc);
            break;
        }
        break;
    }
    if (st == ZF_OK) {
        *used = in_len - s.avail_in;
        *produced = probing ? cap : cap - s.avail_out;
    }
    lzma_end(&s);
    return st;
}

/* Every stream into out[0..cap), *done bytes (SIZE_MAX: more than cap); total as for
 * lzma_one. */
static zf_status lzma_streams(const lzma_codec *z, const uint8_t *in, size_t in_len,
                              uint8_t *out, size_t cap, size_t total, size_t *done, zf_err *err)
{
    size_t pos = 0;
    *done = 0;
    do {
        size_t used = 0, produced = 0;
        bool bad;
        zf_err e2 = {""};
        zf_status st = lzma_one(z, in + pos, in_len - pos, out + *done, cap - *done, *done,
                                total, cap, &used, &produced, &bad, &e2);
        if (st != ZF_OK) {
            if (pos > 0 && bad) /* trailing bytes that are not a stream: ignored */
                break;
            if (err)
                *err = e2;
            if (produced == SIZE_MAX)
                *done = SIZE_MAX;
            return st;
        }
        if (used == 0)
            return zf_fail(err, ZF_ERR_CORRUPT, "lzma: empty stream");
        pos += used;
        *done += produced;
    } while (pos < in_len);
    return ZF_OK;
}

static zf_status lzma_decode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, uint8_t *out, size_t out_len, zf_err *err)
{
    (void)decoded;
    size_t done;
    zf_status st = lzma_streams((const lzma_codec *)c, in, in_len, out, out_len, out_len, &done,
                                err);
    if (st == ZF_OK && done != out_len)
        return zf_codec_too_short(err, "lzma", done, out_len);
    return st;
}

static zf_status lzma_decode_bounded(const zf_codec *c, const uint8_t *in, size_t in_len,
                                     uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    return lzma_streams((const lzma_codec *)c, in, in_len, out, cap, ZF_SIZE_UNKNOWN, produced,
                        err);
}

static zf_status make_encoder(const lzma_codec *z, lzma_stream *s, zf_err *err)
{
    if (z->format == FMT_AUTO)
        return zf_fail(err, ZF_ERR_INVALID,
                       "lzma: \"format\": 0 (auto) can decode but not encode (invalid container "
                       "format for compression)");
    if (z->preset >= 0 && z->nfilters)
        return zf_fail(err, ZF_ERR_INVALID,
                       "lzma: cannot specify both \"preset\" and \"filters\" for encoding");
    if (z->format != FMT_XZ && z->check != -1 && z->check != LZMA_CHECK_NONE)
        return zf_fail(err, ZF_ERR_INVALID,
                       "lzma: \"check\": integrity checks are only supported by format 1 (.xz)");
    uint32_t preset = z->preset >= 0 ? (uint32_t)z->preset : LZMA_PRESET_DEFAULT;
    lzma_check check = z->check == -1 ? LZMA_CHECK_CRC64 : (lzma_check)z->check;
    /* The filters as configured, or (.xz without filters) those of the preset, as
     * lzma_easy_encoder builds them; their LZMA options copied, to bound the dictionary. */
    lzma_filter filters[LZMA_FILTERS_MAX + 1];
    lzma_options_lzma opts[LZMA_FILTERS_MAX];
    const lzma_filter *chain = z->filters;
    if (ZF_LZMA_ENCODE_MAX_DICT && (z->format == FMT_XZ || z->format == FMT_RAW)) {
        if (z->nfilters) {
            memcpy(filters, z->filters, sizeof filters);
        } else if (z->format == FMT_XZ && !lzma_lzma_preset(&opts[0], preset)) {
            filters[0] = (lzma_filter){LZMA_FILTER_LZMA2, &opts[0]};
            filters[1] = (lzma_filter){LZMA_VLI_UNKNOWN, NULL};
        } else {
            filters[0] = (lzma_filter){LZMA_VLI_UNKNOWN, NULL}; /* an invalid preset: below */
        }
        for (size_t i = 0; i < LZMA_FILTERS_MAX && filters[i].id != LZMA_VLI_UNKNOWN; i++)
            if ((filters[i].id == LZMA_FILTER_LZMA1 || filters[i].id == LZMA_FILTER_LZMA2) &&
                filters[i].options) {
                if (filters[i].options != &opts[i])
                    opts[i] = *(const lzma_options_lzma *)filters[i].options;
                if (opts[i].dict_size > ZF_LZMA_ENCODE_MAX_DICT)
                    opts[i].dict_size = ZF_LZMA_ENCODE_MAX_DICT;
                filters[i].options = &opts[i];
            }
        if (filters[0].id != LZMA_VLI_UNKNOWN)
            chain = filters;
    }
    lzma_ret rc;
    switch (z->format) {
    case FMT_XZ:
        rc = chain != z->filters || z->nfilters ? lzma_stream_encoder(s, chain, check)
                                                : lzma_easy_encoder(s, preset, check);
        break;
    case FMT_ALONE: {
        lzma_options_lzma opt;
        if (z->nfilters) {
            if (z->nfilters != 1 || z->filters[0].id != LZMA_FILTER_LZMA1)
                return zf_fail(err, ZF_ERR_INVALID,
                               "lzma: \"filters\": format 2 (.lzma) takes a single LZMA1 filter");
            opt = z->lzma_opt[0];
        } else if (lzma_lzma_preset(&opt, preset)) {
            return zf_fail(err, ZF_ERR_INVALID, "lzma: \"preset\": %u is not a valid preset",
                           preset);
        }
        if (ZF_LZMA_ENCODE_MAX_DICT && opt.dict_size > ZF_LZMA_ENCODE_MAX_DICT)
            opt.dict_size = ZF_LZMA_ENCODE_MAX_DICT;
        rc = lzma_alone_encoder(s, &opt);
        break;
    }
    default: rc = lzma_raw_encoder(s, chain); break;
    }
    if (rc == LZMA_OK)
        return ZF_OK;
    if (rc == LZMA_MEM_ERROR)
        return ZF_ERR_NOMEM;
    return zf_fail(err, ZF_ERR_INVALID, "lzma: cannot set up the encoder (%s, error %d)",
                   rc == LZMA_OPTIONS_ERROR ? "invalid or unsupported options"
                   : rc == LZMA_UNSUPPORTED_CHECK ? "unsupported integrity check"
                                                  : "error",
                   (int)rc);
}

static zf_status lzma_encode(const zf_codec *c, const zf_chunk_repr *decoded, const uint8_t *in,
                             size_t in_len, unsigned flags, uint8_t **out, size_t *out_len,
                             zf_err *err)
{
    (void)decoded;
    (void)flags;
    const lzma_codec *z = (const lzma_codec *)c;
    lzma_stream s = LZMA_STREAM_INIT;
    zf_status st = make_encoder(z, &s, err);
    if (st != ZF_OK)
        return st;
    size_t cap = in_len + in_len / 16 + 1024;
    uint8_t *buf = zf_enc_alloc(cap);
    if (!buf) {
        lzma_end(&s);
        return ZF_ERR_NOMEM;
    }
    s.next_in = in;
    s.avail_in = in_len;
    s.next_out = buf;
    s.avail_out = cap;
    for (;;) {
        if (s.avail_out == 0) {
            size_t ncap = cap + cap / 2 + 64;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                st = ZF_ERR_NOMEM;
                break;
            }
            buf = nb;
            s.next_out = buf + cap;
            s.avail_out = ncap - cap;
            cap = ncap;
        }
        lzma_ret rc = lzma_code(&s, LZMA_FINISH);
        if (rc == LZMA_STREAM_END)
            break;
        if (rc == LZMA_OK)
            continue;
        st = rc == LZMA_MEM_ERROR
                 ? ZF_ERR_NOMEM
                 : zf_fail(err, ZF_ERR_INVALID, "lzma: compression failed (error %d)", (int)rc);
        break;
    }
    size_t n = cap - s.avail_out;
    lzma_end(&s);
    if (st != ZF_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *out_len = n;
    return ZF_OK;
}

/* --- configuration --- */

static bool key_in(const char *key, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strcmp(key, *allowed) == 0)
            return true;
    return false;
}

/* One entry of "filters", as Python's _lzma parses a filter specifier. */
static zf_status parse_filter(lzma_codec *z, size_t i, yajl_val f, zf_err *err)
{
    char what[32];
    snprintf(what, sizeof what, "lzma: \"filters\"[%zu]", i);
    if (!YAJL_IS_OBJECT(f))
        return zf_fail(err, ZF_ERR_INVALID, "%s: expected an object such as {\"id\": 33}", what);
    yajl_val idv = zf_cfg_get(f, "id");
    if (!YAJL_IS_INTEGER(idv))
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"id\": expected an integer filter id", what);
    lzma_vli id = (lzma_vli)idv->u.number.i;
    static const char *const lzma_keys[] = {"id", "preset", "dict_size", "lc", "lp", "pb",
                                            "mode", "nice_len", "mf", "depth", NULL};
    static const char *const delta_keys[] = {"id", "dist", NULL};
    static const char *const bcj_keys[] = {"id", "start_offset", NULL};
    const char *const *keys;
    zf_status st;
    long long v;
    if (id == LZMA_FILTER_LZMA1 || id == LZMA_FILTER_LZMA2) {
        keys = lzma_keys;
        if ((st = zf_cfg_int(f, what, "preset", false, false, LZMA_PRESET_DEFAULT, 0,
                             UINT32_MAX, &v, err)))
            return st;
        if (lzma_lzma_preset(&z->lzma_opt[i], (uint32_t)v))
            return zf_fail(err, ZF_ERR_INVALID, "%s: \"preset\": %lld is not a valid preset", what,
                           v);
        static const struct {
            const char *key;
            long long min, max;
        } fields[] = {{"dict_size", LZMA_DICT_SIZE_MIN, UINT32_MAX},
                      {"lc", 0, LZMA_LCLP_MAX},
                      {"lp", 0, LZMA_LCLP_MAX},
                      {"pb", 0, LZMA_PB_MAX},
                      {"mode", 0, 255},
                      {"nice_len", 0, UINT32_MAX},
                      {"mf", 0, 255},
                      {"depth", 0, UINT32_MAX}};
        lzma_options_lzma *o = &z->lzma_opt[i];
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
            if (!zf_cfg_get(f, fields[k].key))
                continue;
            if ((st = zf_cfg_int(f, what, fields[k].key, true, false, 0, fields[k].min,
                                 fields[k].max, &v, err)))
                return st;
            switch (k) {
            case 0: o->dict_size = (uint32_t)v; break;
            case 1: o->lc = (uint32_t)v; break;
            case 2: o->lp = (uint32_t)v; break;
            case 3: o->pb = (uint32_t)v; break;
            case 4: o->mode = (lzma_mode)v; break;
            case 5: o->nice_len = (uint32_t)v; break;
            case 6: o->mf = (lzma_match_finder)v; break;
            default: o->depth = (uint32_t)v; break;
            }
        }
        z->filters[i].options = o;
    } else if (id == LZMA_FILTER_DELTA) {
        keys = delta_keys;
        if ((st = zf_cfg_int(f, what, "dist", false, false, 1, 1, LZMA_DELTA_DIST_MAX, &v, err)))
            return st;
        z->delta_opt[i].type = LZMA_DELTA_TYPE_BYTE;
        z->delta_opt[i].dist = (uint32_t)v;
        z->filters[i].options = &z->delta_opt[i];
    } else if (id >= LZMA_FILTER_X86 && id <= LZMA_FILTER_SPARC) {
        keys = bcj_keys;
        if ((st = zf_cfg_int(f, what, "start_offset", false, false, 0, 0, UINT32_MAX, &v, err)))
            return st;
        z->bcj_opt[i].start_offset = (uint32_t)v;
        z->filters[i].options = &z->bcj_opt[i];
    } else {
        return zf_fail(err, ZF_ERR_INVALID, "%s: \"id\": unknown filter id %lld", what,
                       idv->u.number.i);
    }
    for (size_t k = 0; k < f->u.object.len; k++)
        if (!key_in(f->u.object.keys[k], keys))
            return zf_fail(err, ZF_ERR_INVALID, "%s: unknown option \"%s\"", what,
                           f->u.object.keys[k]);
    z->filters[i].id = id;
    return ZF_OK;
}

static const zf_codec_ops lzma_ops = {
    .name = "lzma",
    .kind = ZF_CODEC_BYTES_TO_BYTES,
    .resolve = zf_resolve_compressed,
    .decode = lzma_decode,
    .destroy = zf_codec_destroy_plain,
    .encode = lzma_encode,
    .decode_bounded = lzma_decode_bounded,
};

zf_status zf_codec_lzma_new(yajl_val cfg, zf_codec **out, zf_err *err)
{
    long long format, check, preset;
    zf_status st;
    if ((st = zf_cfg_int(cfg, "lzma", "format", false, true, FMT_XZ, FMT_AUTO, FMT_RAW, &format,
                         err)) ||
        (st = zf_cfg_int(cfg, "lzma", "check", false, true, -1, -1, LZMA_CHECK_ID_MAX, &check,
                         err)) ||
        (st = zf_cfg_int(cfg, "lzma", "preset", false, true, -1, 0, UINT32_MAX, &preset, err)))
        return st;
    yajl_val filters = zf_cfg_get(cfg, "filters");
    if (filters && !YAJL_IS_NULL(filters) && !YAJL_IS_ARRAY(filters))
        return zf_fail(err, ZF_ERR_INVALID, "lzma: \"filters\": expected null or a list");
    size_t nf = YAJL_IS_ARRAY(filters) ? filters->u.array.len : 0;
    if (nf > LZMA_FILTERS_MAX)
        return zf_fail(err, ZF_ERR_INVALID, "lzma: \"filters\": more than %d filters",
                       LZMA_FILTERS_MAX);
    if (format == FMT_RAW && nf == 0)
        return zf_fail(err, ZF_ERR_INVALID, "lzma: \"filters\": required with format 3 (raw)");
    lzma_codec *z = zf_codec_alloc(sizeof *z, &lzma_ops);
    if (!z)
        return ZF_ERR_NOMEM;
    z->format = (int)format;
    z->check = (int)check;
    z->preset = preset;
    for (size_t i = 0; i < nf; i++) {
        if ((st = parse_filter(z, i, filters->u.array.values[i], err)) != ZF_OK) {
            free(z);
            return st;
        }
    }
    z->nfilters = nf;
    z->filters[nf].id = LZMA_VLI_UNKNOWN;
    if (format == FMT_RAW) {
        lzma_vli last = z->filters[nf - 1].id;
        if (last != LZMA_FILTER_LZMA1 && last != LZMA_FILTER_LZMA2) {
            free(z);
            return zf_fail(err, ZF_ERR_INVALID,
                           "lzma: \"filters\": the last filter must be LZMA1 or LZMA2");
        }
    }
    *out = &z->base;
    return ZF_OK;
}
