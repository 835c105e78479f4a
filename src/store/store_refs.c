/* store_refs.c — kerchunk references (fsspec's ReferenceFileSystem, JSON form, spec versions 0 and
 * 1) as a read-only store: each key is inline bytes, or a whole object or a byte range of a target
 * file that lives in another store (a local directory, HTTP(S) or S3).
 *
 * At open the JSON text is parsed once into a sorted table of entries: inline values decoded
 * (text, "base64:" bytes, JSON objects as their JSON text), version 1 `templates` substituted into
 * target URLs and `gen` expanded into entries. Each target URL is split into a base (its parent:
 * a directory, an HTTP URL, s3://bucket/prefix) and a key (its last component); one store is
 * opened per distinct base, so the HTTP/S3 backends' connection reuse and retries serve every
 * chunk of a file. Reads are zf_store_get (whole targets) and zf_store_get_partial (ranges) on
 * those stores; a range that the target does not hold to its end, or a target that is missing or
 * fails, is ZF_ERR_IO with a log line naming the key and the target — never short bytes.
 *
 * Templates are jinja-style `{{ expr }}` with the simple expressions kerchunk writes: names
 * (templates, gen dimensions, call arguments), integer and quoted string literals, + - * // % ~
 * and parentheses, and `name(arg='v', ...)` to render template `name` with arguments. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrfs/json.h"
#include "zarrfs/log.h"
#include "zarrfs/mem.h"
#include "zarrfs/store.h"

#include "store_impl.h"

#define MAX_GEN_KEYS 100000000ULL /* bound on the keys one `gen` entry makes */
#define MAX_RENDER_DEPTH 8        /* templates rendering templates */
#define BOUND (INT64_MAX / 4)     /* on range arguments of gen dimensions: no overflow */

typedef enum ref_kind { REF_INLINE, REF_WHOLE, REF_RANGE } ref_kind;

typedef struct ref_entry {
    char *key;
    ref_kind kind;
    uint8_t *data; /* REF_INLINE */
    size_t len;
    char *url;     /* the target, resolved (absolute path or URL) */
    size_t base;   /* index of its base store */
    const char *tkey; /* the target's key in that store (in url) */
    uint64_t offset, length; /* REF_RANGE */
} ref_entry;

typedef struct ref_base {
    char *loc; /* a directory, http(s)://host/dir or s3://bucket/prefix */
    zf_store *store;
} ref_base;

typedef struct refs_store {
    zf_store base;
    ref_entry *e;
    size_t n, cap;
    ref_base *bases;
    size_t nb;
} refs_store;

/* ---- templates ---------------------------------------------------------------------------- */

typedef struct tval {
    bool is_str;
    int64_t i;
    char *s; /* owned when is_str */
} tval;

typedef struct tvar {
    const char *name;
    tval v;
} tvar;

typedef struct tctx {
    yajl_val templates; /* object or NULL */
    const tvar *vars;
    size_t nvars;
    const char *what; /* for messages: the key */
    int depth;
    zf_err *err;
} tctx;

typedef struct tparser {
    const char *p, *end;
    tctx *c;
    unsigned nest; /* t_primary calls in progress: parentheses, unary '-', arguments */
} tparser;

/* Deepest nesting of an expression ("((((1))))", "- - -1"): each level is a few stack frames,
 * and a reference file is untrusted input (a 4 KB key overflowed the stack before). */
#define MAX_EXPR_NEST 64

static void tval_free(tval *v)
{
    if (v->is_str)
        free(v->s);
    v->s = NULL;
}

static zf_status render(tctx *c, const char *tmpl, char **out);

static void skip_ws(tparser *t)
{
    while (t->p < t->end && isspace((unsigned char)*t->p))
        t->p++;
}

static zf_status terr(tparser *t, const char *why)
{
    return zf_fail(t->c->err, ZF_ERR_INVALID, "%s: template does not resolve: %s",
                   t->c->what, why);
}

static zf_status t_expr(tparser *t, tval *out);

static const char *tmpl_get(const tctx *c, const char *name, size_t n)
{
    if (!c->templates || !YAJL_IS_OBJECT(c->templates))
        return NULL;
    for (size_t i = 0; i < c->templates->u.object.len; i++) {
        const char *k = c->templates->u.object.keys[i];
        if (strlen(k) == n && memcmp(k, name, n) == 0) {
            yajl_val v = c->templates->u.object.values[i];
            return YAJL_IS_STRING(v) ? v->u.string : NULL;
        }
    }
    return NULL;
}

static zf_status t_primary_1(tparser *t, tval *out);

static zf_status t_primary(tparser *t, tval *out)
{
    if (t->nest >= MAX_EXPR_NEST) {
        *out = (tval){0};
        return terr(t, "expression nested too deep");
    }
    t->nest++;
    zf_status st = t_primary_1(t, out);
    t->nest--;
    return st;
}

static zf_status t_primary_1(tparser *t, tval *out)
{
    skip_ws(t);
    *out = (tval){0};
    if (t->p >= t->end)
        return terr(t, "expression ends early");
    char ch = *t->p;
    if (ch == '(') {
        t->p++;
        zf_status st = t_expr(t, out);
        if (st != ZF_OK)
            return st;
        skip_ws(t);
        if (t->p >= t->end || *t->p != ')') {
            tval_free(out);
            return terr(t, "missing ')'");
        }
        t->p++;
        return ZF_OK;
    }
    if (ch == '-') {
        t->p++;
        zf_status st = t_primary(t, out);
        if (st == ZF_OK && out->is_str) {
            tval_free(out);
            return terr(t, "'-' before a string");
        }
        if (st == ZF_OK && __builtin_sub_overflow((int64_t)0, out->i, &out->i))
            return terr(t, "overflow");
        return st;
    }
    if (isdigit((unsigned char)ch)) {
        int64_t v = 0;
        while (t->p < t->end && isdigit((unsigned char)*t->p)) {
            int d = *t->p++ - '0';
            if (v > (INT64_MAX - d) / 10)
                return terr(t, "number too large");
            v = v * 10 + d;
        }
        out->i = v;
        return ZF_OK;
    }
    if (ch == '\'' || ch == '"') {
        const char *q = memchr(t->p + 1, ch, (size_t)(t->end - t->p - 1));
        if (!q)
            return terr(t, "unterminated string");
        out->is_str = true;
        if (!(out->s = strndup(t->p + 1, (size_t)(q - t->p - 1))))
            return ZF_ERR_NOMEM;
        t->p = q + 1;
        return ZF_OK;
    }
    if (!isalpha((unsigned char)ch) && ch != '_')
        return terr(t, "unexpected character");
    const char *name = t->p;
    while (t->p < t->end && (isalnum((unsigned char)*t->p) || *t->p == '_'))
        t->p++;
    size_t n = (size_t)(t->p - name);
    skip_ws(t);
    if (t->p < t->end && *t->p == '(') { /* a template called with arguments */
        t->p++;
        const char *body = tmpl_get(t->c, name, n);
        if (!body)
            return zf_fail(t->c->err, ZF_ERR_INVALID,
                           "%s: template does not resolve: no template \"%.*s\"", t->c->what,
                           (int)n, name);
        tvar args[16];
        char names[16][64];
        size_t na = 0;
        zf_status st = ZF_OK;
        skip_ws(t);
        while (st == ZF_OK && t->p < t->end && *t->p != ')') {
            const char *an = t->p;
            while (t->p < t->end && (isalnum((unsigned char)*t->p) || *t->p == '_'))
                t->p++;
            size_t anl = (size_t)(t->p - an);
            skip_ws(t);
            if (anl == 0 || anl >= 64 || na == 16 || t->p >= t->end || *t->p != '=') {
                st = terr(t, "expected name=value arguments");
                break;
            }
            t->p++;
            memcpy(names[na], an, anl);
            names[na][anl] = '\0';
            args[na].name = names[na];
            if ((st = t_expr(t, &args[na].v)) != ZF_OK)
                break;
            na++;
            skip_ws(t);
            if (t->p < t->end && *t->p == ',') {
                t->p++;
                skip_ws(t);
            }
        }
        if (st == ZF_OK && (t->p >= t->end || *t->p != ')'))
            st = terr(t, "missing ')'");
        if (st == ZF_OK) {
            t->p++;
            tvar *all = malloc((na + t->c->nvars + 1) * sizeof *all);
            if (!all) {
                st = ZF_ERR_NOMEM;
            } else {
                memcpy(all, args, na * sizeof *all);
                if (t->c->nvars)
                    memcpy(all + na, t->c->vars, t->c->nvars * sizeof *all);
                tctx sub = *t->c;
                sub.vars = all, sub.nvars = na + t->c->nvars, sub.depth++;
                out->is_str = true;
                st = render(&sub, body, &out->s);
                if (st != ZF_OK)
                    out->is_str = false;
                free(all);
            }
        }
        for (size_t i = 0; i < na; i++)
            tval_free(&args[i].v);
        return st;
    }
    for (size_t i = 0; i < t->c->nvars; i++) {
        const tvar *v = &t->c->vars[i];
        if (strlen(v->name) == n && memcmp(v->name, name, n) == 0) {
            *out = v->v;
            if (v->v.is_str && !(out->s = strdup(v->v.s)))
                return ZF_ERR_NOMEM;
            return ZF_OK;
        }
    }
    const char *tv = tmpl_get(t->c, name, n);
    if (!tv)
        return zf_fail(t->c->err, ZF_ERR_INVALID,
                       "%s: template does not resolve: no template or variable \"%.*s\"",
                       t->c->what, (int)n, name);
    out->is_str = true;
    return (out->s = strdup(tv)) ? ZF_OK : ZF_ERR_NOMEM;
}

static char *tval_text(const tval *v)
{
    if (v->is_str)
        return strdup(v->s);
    char *s;
    return asprintf(&s, "%" PRId64, v->i) < 0 ? NULL : s;
}

static zf_status t_term(tparser *t, tval *out)
{
    zf_status st = t_primary(t, out);
    for (;;) {
        if (st != ZF_OK)
            return st;
        skip_ws(t);
        if (t->p >= t->end || (*t->p != '*' && *t->p != '/' && *t->p != '%'))
            return ZF_OK;
        char op = *t->p++;
        bool floor_div = op == '/' && t->p < t->end && *t->p == '/';
        if (floor_div)
            t->p++;
        tval r;
        if ((st = t_primary(t, &r)) != ZF_OK) {
            tval_free(out);
            return st;
        }
        if (out->is_str || r.is_str) {
            tval_free(out);
            tval_free(&r);
            return terr(t, "arithmetic on a string");
        }
        if (op == '*') {
            if (__builtin_mul_overflow(out->i, r.i, &out->i))
                return terr(t, "overflow");
            continue;
        }
        if (r.i == 0)
            return terr(t, "division by zero");
        if (r.i == -1 && out->i == INT64_MIN)
            return terr(t, "overflow");
        int64_t q = out->i / r.i, m = out->i % r.i;
        if (m != 0 && ((m < 0) != (r.i < 0))) /* Python's floor semantics */
            q--, m += r.i;
        if (op == '%')
            out->i = m;
        else if (floor_div || m == 0)
            out->i = q;
        else
            return terr(t, "'/' gives a fraction (use '//')");
    }
}

static zf_status t_expr(tparser *t, tval *out)
{
    zf_status st = t_term(t, out);
    for (;;) {
        if (st != ZF_OK)
            return st;
        skip_ws(t);
        if (t->p >= t->end || (*t->p != '+' && *t->p != '-' && *t->p != '~'))
            return ZF_OK;
        char op = *t->p++;
        tval r;
        if ((st = t_term(t, &r)) != ZF_OK) {
            tval_free(out);
            return st;
        }
        if (op == '~' || (op == '+' && (out->is_str || r.is_str))) {
            if (op == '+' && !(out->is_str && r.is_str)) {
                tval_free(out);
                tval_free(&r);
                return terr(t, "'+' of a string and a number");
            }
            char *a = tval_text(out), *b = tval_text(&r), *s = NULL;
            tval_free(out);
            tval_free(&r);
            if (!a || !b || asprintf(&s, "%s%s", a, b) < 0) {
                free(a);
                free(b);
                return ZF_ERR_NOMEM;
            }
            free(a);
            free(b);
            *out = (tval){.is_str = true, .s = s};
            continue;
        }
        if (out->is_str || r.is_str) {
            tval_free(out);
            tval_free(&r);
            return terr(t, "arithmetic on a string");
        }
        if (op == '+' ? __builtin_add_overflow(out->i, r.i, &out->i)
                      : __builtin_sub_overflow(out->i, r.i, &out->i))
            return terr(t, "overflow");
    }
}

/* Render tmpl: each {{ expr }} replaced by its value. */
static zf_status render(tctx *c, const char *tmpl, char **out)
{
    if (c->depth > MAX_RENDER_DEPTH)
        return zf_fail(c->err, ZF_ERR_INVALID, "%s: template does not resolve: nested too deep",
                       c->what);
    size_t cap = strlen(tmpl) + 64, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return ZF_ERR_NOMEM;
    const char *p = tmpl;
    for (;;) {
        const char *open = strstr(p, "{{");
        size_t lit = open ? (size_t)(open - p) : strlen(p);
        const char *close = open ? strstr(open + 2, "}}") : NULL;
        char *val = NULL;
        if (open && !close) {
            free(buf);
            return zf_fail(c->err, ZF_ERR_INVALID, "%s: template does not resolve: \"%s\": no '}}'",
                           c->what, tmpl);
        }
        if (open) {
            tparser t = {.p = open + 2, .end = close, .c = c};
            tval v;
            zf_status st = t_expr(&t, &v);
            if (st == ZF_OK) {
                skip_ws(&t);
                if (t.p != t.end) {
                    tval_free(&v);
                    st = terr(&t, "unexpected text after the expression");
                }
            }
            if (st == ZF_OK) {
                val = tval_text(&v);
                tval_free(&v);
                if (!val)
                    st = ZF_ERR_NOMEM;
            }
            if (st != ZF_OK) {
                free(buf);
                return st;
            }
        }
        size_t vl = val ? strlen(val) : 0;
        if (n + lit + vl + 1 > cap) {
            cap = (n + lit + vl + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                free(val);
                return ZF_ERR_NOMEM;
            }
            buf = nb;
        }
        memcpy(buf + n, p, lit);
        n += lit;
        if (val)
            memcpy(buf + n, val, vl), n += vl;
        free(val);
        if (!open)
            break;
        p = close + 2;
    }
    buf[n] = '\0';
    *out = buf;
    return ZF_OK;
}

/* ---- targets -------------------------------------------------------------------------------- */

static bool is_url(const char *s, const char *scheme)
{
    return strncmp(s, scheme, strlen(scheme)) == 0;
}

/* Resolve a target as written to an absolute path or URL; relative paths are relative to dir
 * (the reference file's directory or URL). A reference file fetched from a server (dir a URL)
 * names no local file: that would let whoever serves it read the mounting user's files. */
static zf_status resolve(const char *key, const char *target, const char *dir, char **out,
                         zf_err *err)
{
    if (is_url(target, "http://") || is_url(target, "https://") || is_url(target, "s3://"))
        return (*out = strdup(target)) ? ZF_OK : ZF_ERR_NOMEM;
    bool local = is_url(target, "file://") || target[0] == '/';
    if (local && dir && strstr(dir, "://"))
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: target %s: a reference file from %s names no local file", key,
                       target, dir);
    if (is_url(target, "file://"))
        target += 7;
    else if (strstr(target, "://"))
        return zf_fail(err, ZF_ERR_UNSUPPORTED,
                       "%s: target %s: this kind of target is not supported", key, target);
    if (!*target)
        return zf_fail(err, ZF_ERR_INVALID, "%s: empty target", key);
    if (target[0] == '/' || !dir)
        return (*out = strdup(target)) ? ZF_OK : ZF_ERR_NOMEM;
    if (is_url(target, "./"))
        target += 2;
    return asprintf(out, "%s/%s", dir, target) < 0 ? ZF_ERR_NOMEM : ZF_OK;
}

static zf_status add_base(refs_store *r, ref_entry *e, const zf_store_options *opts, zf_err *err)
{
    char *slash = strrchr(e->url, '/');
    const char *scheme = strstr(e->url, "://");
    const char *host = scheme ? scheme + 3 : e->url;
    if (!slash || !slash[1] || (scheme && slash < host) ||
        (scheme && !strchr(host, '/')) || !zf_key_is_valid(slash + 1))
        return zf_fail(err, ZF_ERR_INVALID, "%s: target %s: not a file name", e->key, e->url);
    size_t bl = (size_t)(slash - e->url);
    e->tkey = slash + 1;
    if (bl == 0)
        bl = 1; /* "/file" */
    for (size_t i = r->nb; i-- > 0;) {
        if (strlen(r->bases[i].loc) == bl && memcmp(r->bases[i].loc, e->url, bl) == 0) {
            e->base = i;
            return ZF_OK;
        }
    }
    ref_base *nb = realloc(r->bases, (r->nb + 1) * sizeof *nb);
    if (!nb)
        return ZF_ERR_NOMEM;
    r->bases = nb;
    ref_base *b = &r->bases[r->nb];
    if (!(b->loc = strndup(e->url, bl)))
        return ZF_ERR_NOMEM;
    b->store = NULL;
    zf_status st;
    if (is_url(b->loc, "http://") || is_url(b->loc, "https://"))
        st = zf_store_http_open(b->loc, opts, &b->store, err);
    else if (is_url(b->loc, "s3://"))
        st = zf_store_s3_open(b->loc, opts, &b->store, err);
    else
        st = zf_store_file_open(b->loc, &b->store, err);
    if (st != ZF_OK) {
        zf_err_prefix(err, "%s: target %s", e->key, e->url);
        free(b->loc);
        return st == ZF_ERR_NOT_FOUND ? ZF_ERR_IO : st;
    }
    e->base = r->nb++;
    return ZF_OK;
}

/* ---- parsing -------------------------------------------------------------------------------- */

static ref_entry *new_entry(refs_store *r, const char *key)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        ref_entry *ne = realloc(r->e, nc * sizeof *ne);
        if (!ne)
            return NULL;
        r->e = ne, r->cap = nc;
    }
    ref_entry *e = &r->e[r->n];
    *e = (ref_entry){0};
    if (!(e->key = strdup(key)))
        return NULL;
    r->n++;
    return e;
}

static bool parse_u64_text(const char *s, uint64_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* One value of `refs`. tctx NULL: no template rendering (version 0). */
static zf_status parse_value(refs_store *r, const char *key, yajl_val v, tctx *c,
                             const char *dir, zf_err *err)
{
    if (!zf_key_is_valid(key))
        return zf_fail(err, ZF_ERR_INVALID, "\"%s\": not a valid key", key);
    ref_entry *e = new_entry(r, key);
    if (!e)
        return ZF_ERR_NOMEM;
    if (YAJL_IS_STRING(v)) {
        e->kind = REF_INLINE;
        const char *s = v->u.string;
        if (strncmp(s, "base64:", 7) == 0) {
            if (zf_base64_decode(s + 7, &e->data, &e->len) != ZF_OK)
                return zf_fail(err, ZF_ERR_INVALID, "%s: bad base64 value", key);
            return ZF_OK;
        }
        e->len = strlen(s);
        if (!(e->data = malloc(e->len + 1)))
            return ZF_ERR_NOMEM;
        memcpy(e->data, s, e->len + 1);
        return ZF_OK;
    }
    if (YAJL_IS_OBJECT(v)) { /* a JSON document inline: its text */
        e->kind = REF_INLINE;
        char *s = zf_json_dump(v);
        if (!s)
            return ZF_ERR_NOMEM;
        e->data = (uint8_t *)s, e->len = strlen(s);
        return ZF_OK;
    }
    size_t n = YAJL_IS_ARRAY(v) ? v->u.array.len : 0;
    if (!YAJL_IS_ARRAY(v) || (n != 1 && n != 3) || !YAJL_IS_STRING(v->u.array.values[0]))
        return zf_fail(err, ZF_ERR_INVALID,
                       "%s: expected text, \"base64:...\", [url] or [url, offset, length]", key);
    if (n == 3) {
        if (!zf_json_uint64(v->u.array.values[1], &e->offset) ||
            !zf_json_uint64(v->u.array.values[2], &e->length))
            return zf_fail(err, ZF_ERR_INVALID,
                           "%s: offset and length must be non-negative integers", key);
        if (e->offset + e->length < e->offset)
            return zf_fail(err, ZF_ERR_INVALID, "%s: range too large", key);
        e->kind = REF_RANGE;
    } else {
        e->kind = REF_WHOLE;
    }
    const char *u = v->u.array.values[0]->u.string;
    char *rendered = NULL;
    zf_status st;
    if (c && strstr(u, "{{")) {
        c->what = key;
        if ((st = render(c, u, &rendered)) != ZF_OK)
            return st;
        u = rendered;
    }
    st = resolve(key, u, dir, &e->url, err);
    free(rendered);
    return st;
}

static zf_status dim_value(const char *gkey, yajl_val d, uint64_t idx, tval *out, zf_err *err)
{
    *out = (tval){0};
    if (YAJL_IS_ARRAY(d)) {
        yajl_val x = d->u.array.values[idx];
        if (YAJL_IS_STRING(x)) {
            out->is_str = true;
            return (out->s = strdup(x->u.string)) ? ZF_OK : ZF_ERR_NOMEM;
        }
        if (!zf_json_int64(x, &out->i))
            return zf_fail(err, ZF_ERR_INVALID, "gen %s: dimension values must be integers or "
                           "strings", gkey);
        return ZF_OK;
    }
    int64_t start = 0, step = 1;
    yajl_val s = zf_json_get(d, "start"), p = zf_json_get(d, "step");
    if (s)
        zf_json_int64(s, &start);
    if (p)
        zf_json_int64(p, &step);
    out->i = start + (int64_t)idx * step;
    return ZF_OK;
}

/* The number of values of a dimension: a list, or {"start", "stop", "step"} as Python's range. */
static zf_status dim_count(const char *gkey, const char *name, yajl_val d, uint64_t *n,
                           zf_err *err)
{
    if (YAJL_IS_ARRAY(d)) {
        *n = d->u.array.len;
        return ZF_OK;
    }
    int64_t start = 0, stop, step = 1;
    yajl_val s = zf_json_get(d, "start"), e = zf_json_get(d, "stop"), p = zf_json_get(d, "step");
    if (!YAJL_IS_OBJECT(d) || !e || !zf_json_int64(e, &stop) ||
        (s && !zf_json_int64(s, &start)) || (p && !zf_json_int64(p, &step)) ||
        step == 0 || start < -BOUND || start > BOUND || stop < -BOUND || stop > BOUND ||
        step < -BOUND || step > BOUND)
        return zf_fail(err, ZF_ERR_INVALID,
                       "gen %s: dimension \"%s\": expected a list or {\"start\", \"stop\", "
                       "\"step\"} integers (step not 0)", gkey, name);
    if (step > 0)
        *n = stop > start ? (uint64_t)((stop - start + step - 1) / step) : 0;
    else
        *n = start > stop ? (uint64_t)((start - stop - step - 1) / -step) : 0;
    return ZF_OK;
}

static const char *gen_field(yajl_val g, const char *name, char *num, size_t num_n)
{
    yajl_val v = zf_json_get(g, name);
    if (YAJL_IS_STRING(v))
        return v->u.string;
    int64_t i;
    if (v && zf_json_int64(v, &i)) {
        snprintf(num, num_n, "%" PRId64, i);
        return num;
    }
    return NULL;
}

static zf_status expand_gen(refs_store *r, yajl_val g, yajl_val templates, const char *dir,
                            zf_err *err)
{
    char onum[32], lnum[32];
    yajl_val kv = zf_json_get(g, "key"), uv = zf_json_get(g, "url");
    const char *key = YAJL_IS_STRING(kv) ? kv->u.string : NULL;
    const char *url = YAJL_IS_STRING(uv) ? uv->u.string : NULL;
    const char *off = gen_field(g, "offset", onum, sizeof onum);
    const char *len = gen_field(g, "length", lnum, sizeof lnum);
    yajl_val dims = zf_json_get(g, "dimensions");
    const char *gkey = key ? key : "?";
    if (!YAJL_IS_OBJECT(g) || !key || !url || !YAJL_IS_OBJECT(dims))
        return zf_fail(err, ZF_ERR_INVALID,
                       "gen: each entry needs \"key\", \"url\" (strings) and \"dimensions\"");
    if (!off != !len)
        return zf_fail(err, ZF_ERR_INVALID, "gen %s: \"offset\" and \"length\" go together",
                       gkey);
    size_t nd = dims->u.object.len;
    uint64_t *count = calloc(nd + 1, sizeof *count), *idx = calloc(nd + 1, sizeof *idx);
    tvar *vars = calloc(nd + 1, sizeof *vars);
    zf_status st = ZF_OK;
    uint64_t total = 1;
    if (!count || !idx || !vars)
        st = ZF_ERR_NOMEM;
    for (size_t i = 0; st == ZF_OK && i < nd; i++) {
        st = dim_count(gkey, dims->u.object.keys[i], dims->u.object.values[i], &count[i], err);
        if (st == ZF_OK && count[i] && total > MAX_GEN_KEYS / count[i])
            st = zf_fail(err, ZF_ERR_INVALID, "gen %s: too many keys", gkey);
        total *= count[i];
        vars[i].name = dims->u.object.keys[i];
    }
    for (uint64_t k = 0; st == ZF_OK && k < total; k++) {
        for (size_t i = 0; st == ZF_OK && i < nd; i++) {
            tval_free(&vars[i].v);
            st = dim_value(gkey, dims->u.object.values[i], idx[i], &vars[i].v, err);
        }
        if (st != ZF_OK)
            break;
        tctx c = {.templates = templates, .vars = vars, .nvars = nd, .what = gkey, .err = err};
        char *rk = NULL, *ru = NULL, *ro = NULL, *rl = NULL, *abs = NULL;
        if ((st = render(&c, key, &rk)) == ZF_OK && (st = render(&c, url, &ru)) == ZF_OK &&
            (!off || ((st = render(&c, off, &ro)) == ZF_OK &&
                      (st = render(&c, len, &rl)) == ZF_OK))) {
            ref_entry *e;
            if (!zf_key_is_valid(rk))
                st = zf_fail(err, ZF_ERR_INVALID, "gen: \"%s\": not a valid key", rk);
            else if (!(e = new_entry(r, rk)))
                st = ZF_ERR_NOMEM;
            else if ((st = resolve(rk, ru, dir, &abs, err)) == ZF_OK) {
                e->url = abs;
                e->kind = off ? REF_RANGE : REF_WHOLE;
                if (off && (!parse_u64_text(ro, &e->offset) || !parse_u64_text(rl, &e->length) ||
                            e->offset + e->length < e->offset))
                    st = zf_fail(err, ZF_ERR_INVALID,
                                 "gen %s: offset \"%s\" and length \"%s\" must be non-negative "
                                 "integers", rk, ro, rl);
            }
        }
        free(rk);
        free(ru);
        free(ro);
        free(rl);
        for (size_t i = nd; i-- > 0;) { /* odometer: the last dimension fastest */
            if (++idx[i] < count[i])
                break;
            idx[i] = 0;
        }
    }
    for (size_t i = 0; vars && i < nd; i++)
        tval_free(&vars[i].v);
    free(vars);
    free(count);
    free(idx);
    return st;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const ref_entry *)a)->key, ((const ref_entry *)b)->key);
}

static const ref_entry *find(const refs_store *r, const char *key)
{
    ref_entry k = {.key = (char *)key};
    return r->n ? bsearch(&k, r->e, r->n, sizeof k, entry_cmp) : NULL;
}

static bool has_zarr_metadata(const refs_store *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const char *s = strrchr(r->e[i].key, '/');
        s = s ? s + 1 : r->e[i].key;
        if (!strcmp(s, ".zgroup") || !strcmp(s, ".zarray") || !strcmp(s, "zarr.json"))
            return true;
    }
    return false;
}

static zf_status parse_refs(refs_store *r, yajl_val doc, const char *dir,
                            const zf_store_options *opts, zf_err *err)
{
    if (!YAJL_IS_OBJECT(doc))
        return zf_fail(err, ZF_ERR_INVALID, "not kerchunk references (not a JSON object)");
    yajl_val ver = zf_json_get(doc, "version"), refs = doc, templates = NULL;
    zf_status st;
    int64_t vn = 0;
    if (ver) {
        if (!zf_json_int64(ver, &vn) || vn != 1)
            return zf_fail(err, ZF_ERR_UNSUPPORTED,
                           "\"version\": only versions 0 and 1 of kerchunk references are "
                           "supported");
        refs = zf_json_get(doc, "refs");
        templates = zf_json_get(doc, "templates");
        if (refs && !YAJL_IS_OBJECT(refs))
            return zf_fail(err, ZF_ERR_INVALID, "\"refs\": expected an object");
        if (templates && !YAJL_IS_OBJECT(templates))
            return zf_fail(err, ZF_ERR_INVALID, "\"templates\": expected an object");
        yajl_val gen = zf_json_get(doc, "gen");
        if (gen && !YAJL_IS_ARRAY(gen))
            return zf_fail(err, ZF_ERR_INVALID, "\"gen\": expected a list");
        for (size_t i = 0; gen && i < gen->u.array.len; i++)
            if ((st = expand_gen(r, gen->u.array.values[i], templates, dir, err)) != ZF_OK)
                return st;
    }
    tctx c = {.templates = templates, .err = err};
    for (size_t i = 0; refs && i < refs->u.object.len; i++)
        if ((st = parse_value(r, refs->u.object.keys[i], refs->u.object.values[i],
                              vn == 1 ? &c : NULL, dir, err)) != ZF_OK)
            return st;
    if (r->n) /* no entries: r->e is NULL, which qsort must not get */
        qsort(r->e, r->n, sizeof *r->e, entry_cmp);
    for (size_t i = 0; i + 1 < r->n; i++) /* refs after gen: a later key wins */
        if (!strcmp(r->e[i].key, r->e[i + 1].key))
            return zf_fail(err, ZF_ERR_INVALID, "%s: defined twice (gen and refs)", r->e[i].key);
    if (vn == 0 && !has_zarr_metadata(r))
        return zf_fail(err, ZF_ERR_INVALID,
                       "not kerchunk references (no \"version\": 1 and no .zgroup or .zarray key)");
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].kind != REF_INLINE && (st = add_base(r, &r->e[i], opts, err)) != ZF_OK)
            return st;
    return ZF_OK;
}

/* ---- reading -------------------------------------------------------------------------------- */

static zf_status target_fail(refs_store *r, const ref_entry *e, zf_status st, zf_err *err,
                             const char *why)
{
    (void)r;
    if (st == ZF_ERR_NOMEM)
        return st;
    zf_log_warn("references %s: %s: target %s: %s", r->base.url, e->key, e->url, why);
    return zf_fail(err, ZF_ERR_IO, "%s: target %s: %s", e->key, e->url, why);
}

static zf_status rs_get_partial(zf_store *s, const char *key, uint64_t offset, uint64_t len,
                                zf_bytes *out, zf_err *err)
{
    refs_store *r = (refs_store *)s;
    const ref_entry *e = find(r, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    if (e->kind == REF_INLINE) {
        uint64_t n = offset >= e->len ? 0 : e->len - offset;
        if (n > len)
            n = len;
        uint8_t *p = zf_alloc_bulk(n ? (size_t)n : 1);
        if (!p)
            return ZF_ERR_NOMEM;
        if (n)
            memcpy(p, e->data + offset, (size_t)n);
        out->data = p, out->len = (size_t)n;
        return ZF_OK;
    }
    zf_store *t = r->bases[e->base].store;
    zf_err terr = {{0}};
    zf_status st;
    if (e->kind == REF_WHOLE) {
        st = offset == 0 && len == UINT64_MAX ? zf_store_get(t, e->tkey, out, &terr)
                                              : zf_store_get_partial(t, e->tkey, offset, len,
                                                                     out, &terr);
        if (st == ZF_ERR_NOT_FOUND)
            return target_fail(r, e, st, err, "no such file");
        if (st != ZF_OK)
            return target_fail(r, e, st, err, terr.msg[0] ? terr.msg : zf_status_str(st));
        return ZF_OK;
    }
    uint64_t want = offset >= e->length ? 0 : e->length - offset;
    if (want > len)
        want = len;
    if (want == 0) {
        out->data = zf_alloc_bulk(1), out->len = 0;
        return out->data ? ZF_OK : ZF_ERR_NOMEM;
    }
    st = zf_store_get_partial(t, e->tkey, e->offset + offset, want, out, &terr);
    if (st == ZF_ERR_NOT_FOUND)
        return target_fail(r, e, st, err, "no such file");
    if (st != ZF_OK)
        return target_fail(r, e, st, err, terr.msg[0] ? terr.msg : zf_status_str(st));
    if (out->len != want) {
        char why[160];
        snprintf(why, sizeof why,
                 "bytes %" PRIu64 "-%" PRIu64 " lie past the end of the file (got %zu of %" PRIu64
                 ")", e->offset + offset, e->offset + offset + want - 1, out->len, want);
        zf_bytes_free(out);
        return target_fail(r, e, ZF_ERR_IO, err, why);
    }
    return ZF_OK;
}

static zf_status rs_get(zf_store *s, const char *key, zf_bytes *out, zf_err *err)
{
    return rs_get_partial(s, key, 0, UINT64_MAX, out, err);
}

/* By the reference's length (an inline value's, or [url, offset, length]'s) before reading; a
 * whole target ([url]) by what its store announces (zf_store_get_bounded). */
static zf_status rs_get_bounded(zf_store *s, const char *key, uint64_t max_size, zf_bytes *out,
                                zf_err *err)
{
    refs_store *r = (refs_store *)s;
    const ref_entry *e = find(r, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    if (e->kind == REF_INLINE && e->len > max_size)
        return zf_store_refuse_large(err, key, max_size, e->len, "inline");
    if (e->kind == REF_RANGE && e->length > max_size)
        return zf_store_refuse_large(err, key, max_size, e->length, "in the reference");
    if (e->kind != REF_WHOLE)
        return rs_get(s, key, out, err);
    zf_err terr = {{0}};
    zf_status st = zf_store_get_bounded(r->bases[e->base].store, e->tkey, max_size, out, &terr);
    if (st == ZF_ERR_NOT_FOUND)
        return target_fail(r, e, st, err, "no such file");
    if (st == ZF_ERR_TOO_LARGE) /* not a failure of the target: keep the status */
        return zf_fail(err, st, "%s: target %s: %s", key, e->url, terr.msg);
    if (st != ZF_OK)
        return target_fail(r, e, st, err, terr.msg[0] ? terr.msg : zf_status_str(st));
    return ZF_OK;
}

static zf_status rs_stat(zf_store *s, const char *key, uint64_t *size, struct timespec *mtime,
                         zf_err *err)
{
    refs_store *r = (refs_store *)s;
    const ref_entry *e = find(r, key);
    if (!e)
        return ZF_ERR_NOT_FOUND;
    if (mtime)
        *mtime = (struct timespec){0};
    if (e->kind == REF_WHOLE) {
        zf_err terr = {{0}};
        zf_status st = zf_store_stat(r->bases[e->base].store, e->tkey, size, mtime, &terr);
        if (st != ZF_OK)
            return target_fail(r, e, st, err,
                               st == ZF_ERR_NOT_FOUND ? "no such file"
                               : terr.msg[0]          ? terr.msg
                                                      : zf_status_str(st));
        return ZF_OK;
    }
    if (size)
        *size = e->kind == REF_INLINE ? e->len : e->length;
    return ZF_OK;
}

/* First entry whose key is >= s. */
static zf_key_table key_table(const refs_store *r)
{
    return (zf_key_table){.base = r->e, .n = r->n, .size = sizeof *r->e,
                          .key_off = offsetof(ref_entry, key)};
}

static zf_status rs_list_dir(zf_store *s, const char *prefix, zf_store_listing *out, zf_err *err)
{
    (void)err;
    zf_key_table t = key_table((const refs_store *)s);
    return zf_key_table_list(&t, prefix, out);
}

static void rs_destroy(zf_store *s)
{
    refs_store *r = (refs_store *)s;
    for (size_t i = 0; i < r->n; i++) {
        free(r->e[i].key);
        free(r->e[i].data);
        free(r->e[i].url);
    }
    free(r->e);
    for (size_t i = 0; i < r->nb; i++) {
        zf_store_close(r->bases[i].store);
        free(r->bases[i].loc);
    }
    free(r->bases);
    free(r->base.url);
    free(r->base.location);
    free(r);
}

/* What reached the targets: the sum of their stores' counters (inline values cost nothing). */
static void rs_traffic(zf_store *s, zf_store_stats *out)
{
    refs_store *r = (refs_store *)s;
    *out = (zf_store_stats){0};
    for (size_t i = 0; i < r->nb; i++)
        if (r->bases[i].store)
            zf_store_stats_add(out, r->bases[i].store);
}

static const zf_store_ops refs_ops = {
    .traffic = rs_traffic,
    .scheme = "kerchunk",
    .get = rs_get,
    .get_partial = rs_get_partial,
    .stat = rs_stat,
    .list_dir = rs_list_dir,
    .destroy = rs_destroy,
    .get_bounded = rs_get_bounded,
};

zf_status zf_store_refs_open(const char *name, const char *text, size_t len, const char *dir,
                             const zf_store_options *opts, zf_store **out, zf_err *err)
{
    refs_store *r = calloc(1, sizeof *r);
    if (!r)
        return ZF_ERR_NOMEM;
    r->base.ops = &refs_ops;
    if (!(r->base.url = strdup(name)) || asprintf(&r->base.location, "kerchunk:%s", name) < 0) {
        r->base.location = NULL;
        rs_destroy(&r->base);
        return ZF_ERR_NOMEM;
    }
    yajl_val doc = NULL;
    zf_status st = zf_json_parse(name, text, len, &doc, err);
    if (st == ZF_OK) {
        st = parse_refs(r, doc, dir, opts, err);
        if (st != ZF_OK && st != ZF_ERR_NOMEM)
            zf_err_prefix(err, "%s", name);
    }
    yajl_tree_free(doc);
    if (st != ZF_OK) {
        rs_destroy(&r->base);
        return st;
    }
    for (size_t i = 0; i < r->nb; i++)
        r->base.remote |= r->bases[i].store->remote;
    zf_log_info("%s: %zu references into %zu target location(s)", name, r->n, r->nb);
    *out = &r->base;
    return ZF_OK;
}

bool zf_refs_looks_like_json(const uint8_t *head, size_t n)
{
    size_t i = 0;
    while (i < n && isspace(head[i]))
        i++;
    return i < n && head[i] == '{';
}
