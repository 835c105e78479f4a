/* chain.c — the codec pipeline: resolve representations forwards, decode backwards.
 *
 * Decoding runs the codecs last to first. Every step but the final one writes into one of two
 * scratch buffers (ping-pong), the final step writes into the caller's buffer, so a chain of one
 * codec decodes straight into place. Each step's output size comes from zf_chain_resolve; where
 * that is unknown (anything after a compressor or a sharding codec in encode order) the codec's
 * decoded_size op says it from the data, or its decode_bounded op decodes into a buffer bounded
 * by zf_chain_unknown_bound and says how much it wrote (see include/zarrfs/codec.h). */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "zarrfs/mem.h"

void zf_codec_free(zf_codec *c)
{
    if (c)
        c->ops->destroy(c);
}

zf_status zf_chain_append(zf_codec_chain *chain, zf_codec *c)
{
    zf_codec **v = realloc(chain->codecs, (chain->n + 1) * sizeof *v);
    if (!v)
        return ZF_ERR_NOMEM;
    v[chain->n++] = c;
    chain->codecs = v;
    return ZF_OK;
}

void zf_chain_clear(zf_codec_chain *chain)
{
    for (size_t i = 0; i < chain->n; i++)
        zf_codec_free(chain->codecs[i]);
    free(chain->codecs);
    chain->codecs = NULL;
    chain->n = 0;
}

zf_status zf_chain_resolve(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                           zf_chunk_repr *reprs, zf_err *err)
{
    reprs[0] = *decoded;
    for (size_t i = 0; i < chain->n; i++) {
        const zf_codec *c = chain->codecs[i];
        zf_status st = c->ops->resolve(c, &reprs[i], &reprs[i + 1], err);
        if (st != ZF_OK)
            return st;
    }
    return ZF_OK;
}

/* A growable scratch buffer: from zf_alloc_chunk, so that an intermediate result of 2 MiB or
 * more comes from (and goes back to) the pool of huge-page buffers rather than from malloc,
 * which maps fresh 4 KiB pages for it whenever consecutive chunks differ in size (a
 * rectilinear chunk grid's: 8 times the page faults in a blosc chain). */
typedef struct scratch {
    uint8_t *p;
    size_t cap;
} scratch;

static uint8_t *scratch_get(scratch *s, size_t n)
{
    if (n == 0)
        n = 1;
    if (s->cap < n) {
        zf_free_chunk(s->p, s->cap);
        s->p = zf_alloc_chunk(n);
        s->cap = s->p ? n : 0;
    }
    return s->p;
}

static void scratch_free(scratch *s)
{
    zf_free_chunk(s->p, s->cap);
}

#define STACK_REPRS 6

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
    return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* S of zf_chain_unknown_bound: what the sharding codecs of a chain add to their shards beyond
 * the proportional part (index, framing per inner chunk, nested shards). */
static size_t sharding_slack(const zf_codec_chain *chain, unsigned depth)
{
    size_t s = 0;
    for (size_t i = 0; i < chain->n; i++) {
        zf_sharding sh;
        if (!zf_codec_sharding(chain->codecs[i], &sh))
            continue;
        size_t per = ZF_UNKNOWN_PER_INNER_CHUNK;
        if (sh.codecs && depth < ZF_V3_MAX_DEPTH)
            per = sat_add(per, sharding_slack(sh.codecs, depth + 1));
        s = sat_add(s, sat_add(sh.index_nbytes, sat_mul((size_t)sh.nchunks, per)));
    }
    return s;
}

/* M and S of zf_chain_unknown_bound from the resolved representations. */
static void bound_terms(const zf_codec_chain *chain, const zf_chunk_repr *reprs, size_t *m,
                        size_t *s)
{
    *m = 0;
    for (size_t i = 0; i <= chain->n; i++)
        if (reprs[i].nbytes != ZF_SIZE_UNKNOWN && reprs[i].nbytes > *m)
            *m = reprs[i].nbytes;
    *s = sharding_slack(chain, 0);
}

static size_t bound_of(size_t m, size_t s)
{
    return sat_add(sat_add(sat_mul(m, 2), ZF_UNKNOWN_SLACK), s);
}

zf_status zf_chain_unknown_bound(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                                 size_t *bound, zf_err *err)
{
    *bound = 0;
    zf_chunk_repr stack[STACK_REPRS], *reprs = stack;
    if (chain->n + 1 > STACK_REPRS && !(reprs = malloc((chain->n + 1) * sizeof *reprs)))
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(chain, decoded, reprs, err);
    if (st == ZF_OK) {
        size_t m, s;
        bound_terms(chain, reprs, &m, &s);
        *bound = bound_of(m, s);
    }
    if (reprs != stack)
        free(reprs);
    return st;
}

/* One decode step whose output size resolve could not know: into scratch *buf, *len bytes.
 * bound/first: zf_chain_unknown_bound's limit and the first buffer size. Output over the bound
 * is ZF_ERR_CORRUPT with *len SIZE_MAX. */
static zf_status decode_unknown(const zf_codec *c, const uint8_t *in, size_t in_len,
                                size_t bound, size_t first, scratch *buf, const uint8_t **dst,
                                size_t *len, zf_err *err)
{
    const char *name = c->ops->name;
    zf_status st = ZF_ERR_UNSUPPORTED;
    zf_err e = {""};
    if (c->ops->decoded_size) {
        st = c->ops->decoded_size(c, in, in_len, len, &e);
        if (st == ZF_OK) {
            if (*len > bound) {
                zf_fail(err, ZF_ERR_CORRUPT,
                        "%s: the data says %zu decoded bytes, more than the %zu bytes allowed "
                        "for an intermediate result",
                        name, *len, bound);
                *len = SIZE_MAX;
                return ZF_ERR_CORRUPT;
            }
            uint8_t *out = scratch_get(buf, *len);
            if (!out)
                return ZF_ERR_NOMEM;
            zf_chunk_repr target;
            zf_repr_bytes(&target, *len);
            *dst = out;
            return c->ops->decode(c, &target, in, in_len, out, *len, err);
        }
        if (st != ZF_ERR_UNSUPPORTED || !c->ops->decode_bounded) {
            if (err)
                *err = e;
            return st;
        }
    }
    if (!c->ops->decode_bounded)
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: cannot decode here: its decoded size is not known (it follows a "
                       "codec whose output size only the data can tell)",
                       name);
    for (size_t cap = first < bound ? first : bound;; cap = bound) {
        uint8_t *out = scratch_get(buf, cap);
        if (!out)
            return ZF_ERR_NOMEM;
        size_t produced = 0;
        st = c->ops->decode_bounded(c, in, in_len, out, cap, &produced, err);
        if (st == ZF_OK) {
            *dst = out;
            *len = produced;
            return ZF_OK;
        }
        if (st != ZF_ERR_CORRUPT || produced != SIZE_MAX)
            return st;
        if (cap == bound) {
            *len = SIZE_MAX;
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "%s: data decodes to more than the %zu bytes allowed for an "
                           "intermediate result",
                           name, bound);
        }
    }
}

zf_status zf_chain_decode(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                          const uint8_t *in, size_t in_len, uint8_t *out, zf_err *err)
{
    size_t n = chain->n;
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "decoded chunk size unknown");
    if (n == 0) {
        if (in_len != decoded->nbytes)
            return zf_fail(err, ZF_ERR_CORRUPT, "chunk holds %zu bytes, expected %zu", in_len,
                           decoded->nbytes);
        if (in_len)
            memcpy(out, in, in_len);
        return ZF_OK;
    }

    zf_chunk_repr stack[STACK_REPRS], *reprs = stack;
    if (n + 1 > STACK_REPRS && !(reprs = malloc((n + 1) * sizeof *reprs)))
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(chain, decoded, reprs, err);
    scratch buf[2] = {{NULL, 0}, {NULL, 0}};
    size_t bound = 0, first = 0; /* for sizes only the data can tell; computed when needed */
    const uint8_t *cur = in;
    size_t cur_len = in_len;
    for (size_t k = 0; st == ZF_OK && k < n; k++) {
        size_t i = n - 1 - k; /* codec i turns reprs[i + 1] into reprs[i] */
        const zf_codec *c = chain->codecs[i];
        size_t len = reprs[i].nbytes;
        if (len == ZF_SIZE_UNKNOWN) { /* never i == 0: the chunk's size is known */
            if (!bound) {
                size_t m, s;
                bound_terms(chain, reprs, &m, &s);
                bound = bound_of(m, s);
                first = sat_add(sat_add(sat_add(m, m / 8), s), (size_t)64 << 10);
            }
            const uint8_t *dst = NULL;
            st = decode_unknown(c, cur, cur_len, bound, first, &buf[k & 1], &dst, &len, err);
            cur = dst;
            cur_len = len;
            continue;
        }
        uint8_t *dst = i == 0 ? out : scratch_get(&buf[k & 1], len);
        if (!dst) {
            st = ZF_ERR_NOMEM;
            break;
        }
        st = c->ops->decode(c, &reprs[i], cur, cur_len, dst, len, err);
        cur = dst;
        cur_len = len;
    }
    scratch_free(&buf[0]);
    scratch_free(&buf[1]);
    if (reprs != stack)
        free(reprs);
    return st;
}

zf_status zf_chain_decode_bounded(const zf_codec_chain *chain, const uint8_t *in, size_t in_len,
                                  uint8_t *out, size_t cap, size_t *produced, zf_err *err)
{
    scratch buf[2] = {{NULL, 0}, {NULL, 0}};
    const uint8_t *cur = in;
    size_t cur_len = in_len;
    zf_status st = ZF_OK;
    *produced = 0;
    for (size_t k = 0; st == ZF_OK && k < chain->n; k++) {
        const zf_codec *c = chain->codecs[chain->n - 1 - k];
        if (c->ops->kind != ZF_CODEC_BYTES_TO_BYTES) {
            st = zf_fail(err, ZF_ERR_INVALID, "%s: not a bytes -> bytes codec", c->ops->name);
            break;
        }
        const uint8_t *dst = NULL;
        size_t len = 0;
        st = decode_unknown(c, cur, cur_len, cap, cap, &buf[k & 1], &dst, &len, err);
        if (st != ZF_OK && len == SIZE_MAX)
            *produced = SIZE_MAX;
        cur = dst;
        cur_len = len;
    }
    if (st == ZF_OK && cur_len > cap) {
        *produced = SIZE_MAX;
        st = zf_fail(err, ZF_ERR_CORRUPT, "data decodes to more than %zu bytes", cap);
    }
    if (st == ZF_OK) {
        if (cur_len)
            memcpy(out, cur, cur_len);
        *produced = cur_len;
    }
    free(buf[0].p);
    free(buf[1].p);
    return st;
}

zf_status zf_chain_encode(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                          const uint8_t *in, unsigned flags, uint8_t **out, size_t *out_len,
                          zf_err *err)
{
    size_t n = chain->n;
    *out = NULL;
    *out_len = 0;
    if (decoded->nbytes == ZF_SIZE_UNKNOWN)
        return zf_fail(err, ZF_ERR_INVALID, "decoded chunk size unknown");
    zf_chunk_repr stack[STACK_REPRS], *reprs = stack;
    if (n + 1 > STACK_REPRS && !(reprs = malloc((n + 1) * sizeof *reprs)))
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(chain, decoded, reprs, err);
    /* cur is the input of codec i: `in` (borrowed) or the previous codec's output (owned). */
    const uint8_t *cur = in;
    uint8_t *owned = NULL;
    size_t cur_len = decoded->nbytes;
    for (size_t i = 0; st == ZF_OK && i < n; i++) {
        const zf_codec *c = chain->codecs[i];
        if (!c->ops->encode) {
            st = zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: encoding is not supported",
                         c->ops->name);
            break;
        }
        zf_chunk_repr r = reprs[i];
        if (r.nbytes == ZF_SIZE_UNKNOWN)
            zf_repr_bytes(&r, cur_len);
        uint8_t *next = NULL;
        size_t next_len = 0;
        st = c->ops->encode(c, &r, cur, cur_len, flags, &next, &next_len, err);
        if (st != ZF_OK)
            break;
        free(owned);
        owned = next;
        cur = next;
        cur_len = next_len;
    }
    if (reprs != stack)
        free(reprs);
    if (st != ZF_OK) {
        free(owned);
        return st;
    }
    if (!owned) { /* an empty chain: the chunk's bytes as they are */
        if (!(owned = malloc(cur_len ? cur_len : 1)))
            return ZF_ERR_NOMEM;
        if (cur_len)
            memcpy(owned, in, cur_len);
    }
    *out = owned;
    *out_len = cur_len;
    return ZF_OK;
}

/* ----- text chains (codec.h, "variable-length elements as text") ----- */

/* Index of the object codec of a text chain, or chain->n when it is not one. */
static size_t text_codec_index(const zf_codec_chain *chain)
{
    size_t k = 0;
    unsigned nd, order[ZF_MAX_DIMS];
    while (k < chain->n && !chain->codecs[k]->ops->decode_text) {
        if (!zf_codec_transpose_order(chain->codecs[k], &nd, order))
            return chain->n;
        k++;
    }
    if (k == chain->n)
        return k;
    for (size_t i = k + 1; i < chain->n; i++)
        if (chain->codecs[i]->ops->kind != ZF_CODEC_BYTES_TO_BYTES)
            return chain->n;
    return k;
}

bool zf_chain_is_text(const zf_codec_chain *chain)
{
    return text_codec_index(chain) < chain->n;
}

const char *zf_chain_text_codec(const zf_codec_chain *chain)
{
    size_t k = text_codec_index(chain);
    return k < chain->n ? chain->codecs[k]->ops->name : NULL;
}

zf_status zf_chain_text_fill(const zf_codec_chain *chain, yajl_val fill, char **line,
                             size_t *len, zf_err *err)
{
    size_t k = text_codec_index(chain);
    if (k == chain->n)
        return zf_fail(err, ZF_ERR_INVALID, "not a chain of variable-length elements");
    const zf_codec *c = chain->codecs[k];
    return c->ops->fill_text(c, fill, line, len, err);
}

/* The limit on an intermediate byte string of a text chain: chunks of variable-length elements
 * have no size the metadata could give, so zarrfs's chunk limit bounds them (the fuzz build
 * sets a smaller one, within libFuzzer's malloc limit). */
#ifndef ZF_TEXT_BOUND
#define ZF_TEXT_BOUND ((size_t)1 << 31)
#endif
#define TEXT_BOUND ((size_t)ZF_TEXT_BOUND)

zf_status zf_chain_decode_text(const zf_codec_chain *chain, const zf_chunk_repr *decoded,
                               const uint8_t *in, size_t in_len, zf_text_chunk **out,
                               zf_err *err)
{
    *out = NULL;
    size_t n = chain->n, k = text_codec_index(chain);
    if (k == n)
        return zf_fail(err, ZF_ERR_INVALID, "not a chain of variable-length elements");
    zf_chunk_repr stack[STACK_REPRS], *reprs = stack;
    if (n + 1 > STACK_REPRS && !(reprs = malloc((n + 1) * sizeof *reprs)))
        return ZF_ERR_NOMEM;
    zf_status st = zf_chain_resolve(chain, decoded, reprs, err);
    scratch buf[2] = {{NULL, 0}, {NULL, 0}};
    size_t first = sat_add(sat_mul(in_len, 4), (size_t)1 << 20);
    const uint8_t *cur = in;
    size_t cur_len = in_len;
    for (size_t i = n - 1; st == ZF_OK && i > k; i--) {
        const uint8_t *dst = NULL;
        size_t len = 0;
        st = decode_unknown(chain->codecs[i], cur, cur_len, TEXT_BOUND, first, &buf[i & 1], &dst,
                            &len, err);
        cur = dst;
        cur_len = len;
    }
    zf_text_chunk *t = NULL;
    if (st == ZF_OK)
        st = chain->codecs[k]->ops->decode_text(chain->codecs[k], &reprs[k], cur, cur_len, &t,
                                                err);
    scratch_free(&buf[0]);
    scratch_free(&buf[1]);
    for (size_t i = k; st == ZF_OK && i-- > 0;) { /* transposes: reprs[i + 1] -> reprs[i] */
        unsigned nd, order[ZF_MAX_DIMS];
        zf_codec_transpose_order(chain->codecs[i], &nd, order);
        zf_text_chunk *u;
        if ((st = zf_text_transpose(t, nd, reprs[i + 1].shape, order, &u)) == ZF_OK) {
            free(t);
            t = u;
        }
    }
    if (reprs != stack)
        free(reprs);
    if (st != ZF_OK) {
        free(t);
        return st;
    }
    *out = t;
    return ZF_OK;
}
