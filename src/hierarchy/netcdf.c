/* netcdf.c — the netCDF classic view of a group (-o sidecars=nc, GROUP.nc): a netCDF header
 * made from the metadata of the group and of the arrays directly in it, each array a variable
 * whose bytes follow the header big-endian (XDR), as the format requires; zf_hierarchy_read_
 * derived serves them from the arrays, byte-swapped where the array is little-endian.
 * Reference: the NetCDF Users Guide, "File Format Specifications" (the classic format's BNF
 * grammar: CDF-2, the 64-bit offset format, and CDF-5, the 64-bit data format). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"

enum { NC_BYTE = 1, NC_CHAR, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE, NC_UBYTE, NC_USHORT, NC_UINT,
       NC_INT64, NC_UINT64 };
enum { NC_DIMENSION = 10, NC_VARIABLE = 11, NC_ATTRIBUTE = 12 };

#define NC_MAX_NAME 256
#define NC_ALIGN 4096u /* where each variable's data begins: a page of the view */
#ifndef ZF_NC_MAX_HEADER /* (the fuzz build lowers it: meson.build) */
#define ZF_NC_MAX_HEADER (64u << 20)
#endif

typedef struct nc_att {
    char *name;
    unsigned type;
    uint64_t nelems;
    uint8_t *xdr; /* the values, big-endian, not padded */
    size_t len;
} nc_att;

typedef struct nc_atts {
    nc_att *a;
    size_t n, cap;
} nc_atts;

typedef struct nc_var {
    char *name;
    zf_node *array;
    unsigned ndims, type, itemsize;
    uint64_t dimids[ZF_MAX_DIMS];
    nc_atts atts;
    uint64_t nbytes, begin;
    bool swap; /* little-endian array: swapped while served */
} nc_var;

typedef struct nc_dim {
    char *name;
    uint64_t len;
} nc_dim;

typedef struct nc_model {
    nc_dim *dims;
    size_t ndims, dcap;
    nc_atts gatts;
    nc_var *vars;
    size_t nvars, vcap;
    bool cdf5, oom;
    char *omitted; /* "name (why), ..." */
} nc_model;

static void atts_free(nc_atts *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->a[i].name);
        free(l->a[i].xdr);
    }
    free(l->a);
}

static void model_free(nc_model *m)
{
    for (size_t i = 0; i < m->ndims; i++)
        free(m->dims[i].name);
    free(m->dims);
    atts_free(&m->gatts);
    for (size_t i = 0; i < m->nvars; i++) {
        free(m->vars[i].name);
        atts_free(&m->vars[i].atts);
    }
    free(m->vars);
    free(m->omitted);
}

/* A name netCDF classic holds and every reader accepts: an ASCII letter or '_', then letters,
 * digits and "_.+-@", at most NC_MAX_NAME bytes (the format allows more UTF-8, but tools differ). */
static bool nc_name_ok(const char *s)
{
    size_t l = strlen(s);
    if (l == 0 || l > NC_MAX_NAME)
        return false;
    for (size_t i = 0; i < l; i++) {
        char c = s[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || strchr(".+-@", c))))
            return false;
    }
    return true;
}

static void omit(nc_model *m, const char *name, const char *why)
{
    zf_log_debug("netCDF view: %s left out: %s", name, why);
    char *s;
    if (asprintf(&s, "%s%s%s (%s)", m->omitted ? m->omitted : "", m->omitted ? ", " : "", name,
                 why) < 0) {
        m->oom = true;
        return;
    }
    free(m->omitted);
    m->omitted = s;
}

/* Append an attribute (xdr: len bytes of nelems values, taken). */
static void att_add(nc_model *m, nc_atts *l, const char *name, unsigned type, uint64_t nelems,
                    uint8_t *xdr, size_t len)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        nc_att *a = realloc(l->a, cap * sizeof *a);
        if (!a) {
            free(xdr);
            m->oom = true;
            return;
        }
        l->a = a;
        l->cap = cap;
    }
    char *nm = strdup(name);
    if (!nm || (!xdr && len)) {
        free(nm);
        free(xdr);
        m->oom = true;
        return;
    }
    l->a[l->n++] = (nc_att){nm, type, nelems, xdr, len};
}

static void be_put(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void att_text(nc_model *m, nc_atts *l, const char *name, const char *text)
{
    size_t n = strlen(text);
    uint8_t *x = malloc(n ? n : 1);
    if (x)
        memcpy(x, text, n);
    att_add(m, l, name, NC_CHAR, n, x, n);
}

/* A JSON number or list of numbers: its values as doubles (NaN and infinities as zarrfs's JSON
 * reader marks them), and whether every one is an integer that NC_INT holds. False: not all
 * numbers. */
static bool json_number(yajl_val v, double *d, bool *is_int)
{
    const char *sp = YAJL_IS_STRING(v) ? zf_json_special(v) : NULL;
    if (sp) {
        *d = strcmp(sp, "NaN") == 0 ? NAN : sp[0] == '-' ? -INFINITY : INFINITY;
        *is_int = false;
        return true;
    }
    if (!YAJL_IS_NUMBER(v))
        return false;
    *d = YAJL_GET_DOUBLE(v);
    *is_int = YAJL_IS_INTEGER(v) && YAJL_GET_INTEGER(v) >= INT32_MIN &&
              YAJL_GET_INTEGER(v) <= INT32_MAX;
    return true;
}

/* One Zarr attribute as netCDF's: numbers as NC_INT (integers NC_INT holds) or NC_DOUBLE, lists
 * of numbers as arrays of one of them, strings as text, anything else as its JSON text. */
static void att_from_json(nc_model *m, nc_atts *l, const char *name, yajl_val v)
{
    size_t n = YAJL_IS_ARRAY(v) ? v->u.array.len : 1;
    yajl_val *items = YAJL_IS_ARRAY(v) ? v->u.array.values : &v;
    bool numbers = n > 0, ints = true;
    for (size_t i = 0; i < n && numbers; i++) {
        double d;
        bool in = false;
        numbers = json_number(items[i], &d, &in);
        ints = ints && in;
    }
    if (numbers) {
        unsigned size = ints ? 4 : 8;
        uint8_t *x = malloc(n * size);
        for (size_t i = 0; x && i < n; i++) {
            double d = 0;
            bool in = false;
            json_number(items[i], &d, &in);
            if (ints) {
                be_put(x + i * 4, (uint32_t)(int32_t)YAJL_GET_INTEGER(items[i]), 4);
            } else {
                uint64_t bits;
                memcpy(&bits, &d, 8);
                be_put(x + i * 8, bits, 8);
            }
        }
        att_add(m, l, name, ints ? NC_INT : NC_DOUBLE, n, x, n * size);
        return;
    }
    if (YAJL_IS_STRING(v)) {
        att_text(m, l, name, v->u.string);
        return;
    }
    char *j = zf_json_dump(v);
    if (!j) {
        m->oom = true;
        return;
    }
    att_text(m, l, name, j);
    free(j);
}

/* The attributes of a JSON object (text), but `skip`'s members; ones whose names netCDF cannot
 * hold are left out (logged). */
static void atts_from_object(nc_model *m, nc_atts *l, const char *owner, const char *json)
{
    yajl_val doc;
    if (!json || zf_json_parse("attributes", json, strlen(json), &doc, NULL) != ZF_OK)
        return;
    for (size_t i = 0; YAJL_IS_OBJECT(doc) && i < doc->u.object.len; i++) {
        const char *k = doc->u.object.keys[i];
        if (strcmp(k, "_ARRAY_DIMENSIONS") == 0 || strcmp(k, "_FillValue") == 0)
            continue;
        if (!nc_name_ok(k)) {
            zf_log_debug("netCDF view: attribute of %s left out: its name", owner);
            continue;
        }
        att_from_json(m, l, k, doc->u.object.values[i]);
    }
    yajl_tree_free(doc);
}

/* The netCDF type of an array's flat data type (kind, itemsize); 0: none. */
static unsigned nc_type_of(char kind, unsigned size, bool *cdf5)
{
    *cdf5 = false;
    if (kind == 'b' && size == 1)
        return NC_BYTE; /* xarray's convention: int8 with dtype = "bool" */
    if (kind == 'i')
        return size == 1 ? NC_BYTE : size == 2 ? NC_SHORT : size == 4 ? NC_INT
               : size == 8 ? (*cdf5 = true, NC_INT64) : 0;
    if (kind == 'u') {
        *cdf5 = true;
        return size == 1 ? NC_UBYTE : size == 2 ? NC_USHORT : size == 4 ? NC_UINT
               : size == 8 ? NC_UINT64 : 0;
    }
    if (kind == 'f')
        return size == 4 ? NC_FLOAT : size == 8 ? NC_DOUBLE : 0;
    return 0;
}

/* The id of dimension `name` of length len: an existing one of that name and length, else a new
 * one; a name already used with another length gets "_LEN" appended (logged). */
static uint64_t dim_id(nc_model *m, const char *name, uint64_t len)
{
    char *nm = strdup(name);
    for (int round = 0; nm && round < 8; round++) {
        size_t i;
        for (i = 0; i < m->ndims && strcmp(m->dims[i].name, nm) != 0; i++)
            ;
        if (i < m->ndims && m->dims[i].len == len) {
            free(nm);
            return i;
        }
        if (i == m->ndims) {
            if (m->ndims == m->dcap) {
                size_t cap = m->dcap ? m->dcap * 2 : 8;
                nc_dim *d = realloc(m->dims, cap * sizeof *d);
                if (!d)
                    break;
                m->dims = d;
                m->dcap = cap;
            }
            m->dims[m->ndims] = (nc_dim){nm, len};
            return m->ndims++;
        }
        char *other;
        if (asprintf(&other, "%s_%llu", nm, (unsigned long long)len) < 0)
            break;
        zf_log_info("netCDF view: dimension %s has lengths %llu and %llu: the second is %s", nm,
                    (unsigned long long)m->dims[i].len, (unsigned long long)len, other);
        free(nm);
        nm = other;
    }
    free(nm);
    m->oom = true;
    return 0;
}

/* Add array node a (named name in its group) as a variable, or say why not. */
static void add_var(nc_model *m, zf_node *a, const char *name)
{
    pthread_mutex_lock(&a->mu); /* (a resize or new attributes replace these: retired, kept) */
    const zf_array_meta *am = &a->meta.array;
    unsigned ndim = am->ndim;
    uint64_t shape[ZF_MAX_DIMS];
    memcpy(shape, am->shape, sizeof shape);
    char order = 0, kind = 0;
    unsigned tsize = 0;
    bool plain = zf_h_plain_type(am, &order, &kind, &tsize);
    const char *dims = am->dimension_names_json;
    const char *attrs = a->meta.attributes_json, *fill_json = am->fill_value_json;
    unsigned size = am->dtype.itemsize;
    uint8_t fill[16];
    bool fill_ok = size <= sizeof fill && am->fill_value;
    if (fill_ok)
        memcpy(fill, am->fill_value, size);
    bool varlen = am->variable_length;
    uint64_t nbytes = a->size;
    pthread_mutex_unlock(&a->mu);
    if (!nc_name_ok(name)) {
        omit(m, name, "a name netCDF cannot hold");
        return;
    }
    bool need5 = false;
    unsigned type = varlen || !plain || tsize != size ? 0 : nc_type_of(kind, size, &need5);
    if (!type) {
        omit(m, name, varlen ? "variable-length data type" : "a data type netCDF has not");
        return;
    }
    for (unsigned d = 0; d < ndim; d++)
        if (shape[d] == 0) {
            omit(m, name, "a dimension of length 0 (netCDF's unlimited)");
            return;
        }
    if (m->nvars == m->vcap) {
        size_t cap = m->vcap ? m->vcap * 2 : 8;
        nc_var *v = realloc(m->vars, cap * sizeof *v);
        if (!v) {
            m->oom = true;
            return;
        }
        m->vars = v;
        m->vcap = cap;
    }
    nc_var *v = &m->vars[m->nvars];
    memset(v, 0, sizeof *v);
    if (!(v->name = strdup(name))) {
        m->oom = true;
        return;
    }
    m->nvars++;
    v->array = a;
    v->type = type;
    v->itemsize = size;
    v->ndims = ndim;
    v->nbytes = nbytes;
    v->swap = size > 1 && order != '>'; /* ('=' is little-endian, as for the headers) */
    m->cdf5 |= need5 || nbytes > UINT32_MAX - 3;
    yajl_val names = NULL;
    if (dims)
        zf_json_parse("dimension_names", dims, strlen(dims), &names, NULL);
    for (unsigned d = 0; d < ndim; d++) {
        yajl_val x = YAJL_IS_ARRAY(names) && names->u.array.len == ndim
                         ? names->u.array.values[d] : NULL;
        char gen[NC_MAX_NAME + 32];
        const char *dn = x && YAJL_IS_STRING(x) && nc_name_ok(x->u.string) ? x->u.string : NULL;
        if (!dn) {
            snprintf(gen, sizeof gen, "%s_dim%u", name, d);
            dn = gen;
        }
        v->dimids[d] = dim_id(m, dn, shape[d]);
        if (shape[d] > INT32_MAX)
            m->cdf5 = true;
    }
    if (names)
        yajl_tree_free(names);
    atts_from_object(m, &v->atts, name, attrs);
    if (kind == 'b')
        att_text(m, &v->atts, "dtype", "bool");
    if (fill_ok && fill_json && strcmp(fill_json, "null") != 0) { /* as xarray maps it */
        uint8_t *x = malloc(size);
        for (unsigned i = 0; x && i < size; i++)
            x[i] = fill[v->swap ? size - 1 - i : i];
        att_add(m, &v->atts, "_FillValue", type, 1, x, size);
    }
}

/* ---- the header ---- */

typedef struct wbuf {
    uint8_t *p; /* NULL: only count */
    uint64_t at;
    bool cdf5;
} wbuf;

static void w_int(wbuf *w, uint64_t v, unsigned n)
{
    if (w->p)
        be_put(w->p + w->at, v, n);
    w->at += n;
}

static void w_nonneg(wbuf *w, uint64_t v) { w_int(w, v, w->cdf5 ? 8 : 4); }

static void w_bytes(wbuf *w, const void *b, size_t n)
{
    if (w->p && n)
        memcpy(w->p + w->at, b, n);
    w->at += (n + 3) & ~(uint64_t)3; /* padded with zeros (the buffer starts zeroed) */
}

static void w_name(wbuf *w, const char *s)
{
    w_nonneg(w, strlen(s));
    w_bytes(w, s, strlen(s));
}

static void w_atts(wbuf *w, const nc_atts *l)
{
    w_int(w, l->n ? NC_ATTRIBUTE : 0, 4);
    w_nonneg(w, l->n);
    for (size_t i = 0; i < l->n; i++) {
        w_name(w, l->a[i].name);
        w_int(w, l->a[i].type, 4);
        w_nonneg(w, l->a[i].nelems);
        w_bytes(w, l->a[i].xdr, l->a[i].len);
    }
}

static void w_header(wbuf *w, const nc_model *m)
{
    w_bytes(w, m->cdf5 ? "CDF\x05" : "CDF\x02", 4);
    w_nonneg(w, 0); /* numrecs: no record dimension */
    w_int(w, m->ndims ? NC_DIMENSION : 0, 4);
    w_nonneg(w, m->ndims);
    for (size_t i = 0; i < m->ndims; i++) {
        w_name(w, m->dims[i].name);
        w_nonneg(w, m->dims[i].len);
    }
    w_atts(w, &m->gatts);
    w_int(w, m->nvars ? NC_VARIABLE : 0, 4);
    w_nonneg(w, m->nvars);
    for (size_t i = 0; i < m->nvars; i++) {
        const nc_var *v = &m->vars[i];
        w_name(w, v->name);
        w_nonneg(w, v->ndims);
        for (unsigned d = 0; d < v->ndims; d++)
            w_nonneg(w, v->dimids[d]);
        w_atts(w, &v->atts);
        w_int(w, v->type, 4);
        w_nonneg(w, (v->nbytes + 3) & ~(uint64_t)3); /* vsize */
        w_int(w, v->begin, 8);                       /* begin: 64-bit in CDF-2 and CDF-5 */
    }
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

zf_status zf_h_nc_view(zf_hierarchy *h, zf_node *group, unsigned char **hdr, size_t *hdr_len,
                       zf_view_segment **segs, size_t *nsegs, uint64_t *size)
{
    *hdr = NULL;
    *segs = NULL;
    *nsegs = 0;
    nc_model m = {0};
    char **names = NULL;
    size_t n = 0;
    zf_err err = {""};
    zf_status st = zf_h_list_real(h, group, &names, &n, &err);
    if (st != ZF_OK)
        return st;
    if (n > 1) /* variables in name order, whatever the store's (an empty group: no list) */
        qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n && !m.oom; i++) {
        zf_node *c;
        char *path = zf_h_join(group->path, names[i]);
        if (!path) {
            m.oom = true;
            break;
        }
        st = zf_h_lookup_real(h, path, &c, &err);
        free(path);
        if (st != ZF_OK || c->is_dir || c->derived)
            continue;
        if (c->pending || c->meta.unsupported != ZF_OK) {
            omit(&m, names[i], "not a readable array");
            continue;
        }
        add_var(&m, c, names[i]);
    }
    zf_hierarchy_names_free(names, n);
    st = ZF_OK;
    pthread_mutex_lock(&group->mu);
    const char *gattrs = group->meta.attributes_json;
    pthread_mutex_unlock(&group->mu);
    atts_from_object(&m, &m.gatts, group->path[0] ? group->path : "the root group", gattrs);
    if (m.omitted)
        att_text(&m, &m.gatts, "zarrfs_omitted_variables", m.omitted);
    if (m.oom) {
        model_free(&m);
        return ZF_ERR_NOMEM;
    }
    wbuf w = {NULL, 0, m.cdf5};
    w_header(&w, &m); /* its length (begins do not change it) */
    if (w.at > ZF_NC_MAX_HEADER) {
        zf_log_info("%s: no netCDF view: its header would take %llu bytes (at most %u)",
                    group->path[0] ? group->path : "the root group", (unsigned long long)w.at,
                    ZF_NC_MAX_HEADER);
        model_free(&m);
        return ZF_ERR_NOT_FOUND;
    }
    uint64_t at = (w.at + NC_ALIGN - 1) / NC_ALIGN * NC_ALIGN, hlen = at;
    for (size_t i = 0; i < m.nvars; i++) {
        m.vars[i].begin = at;
        at += (m.vars[i].nbytes + 3) & ~(uint64_t)3;
        at = (at + NC_ALIGN - 1) / NC_ALIGN * NC_ALIGN;
    }
    if (m.nvars) /* the file ends with the last variable's padding */
        at = m.vars[m.nvars - 1].begin + ((m.vars[m.nvars - 1].nbytes + 3) & ~(uint64_t)3);
    w = (wbuf){calloc(1, hlen), 0, m.cdf5};
    zf_view_segment *s = calloc(m.nvars ? m.nvars : 1, sizeof *s);
    if (!w.p || !s) {
        free(w.p);
        free(s);
        model_free(&m);
        return ZF_ERR_NOMEM;
    }
    w_header(&w, &m);
    for (size_t i = 0; i < m.nvars; i++)
        s[i] = (zf_view_segment){m.vars[i].begin, m.vars[i].nbytes, m.vars[i].array,
                                 m.vars[i].swap ? m.vars[i].itemsize : 0};
    *hdr = w.p;
    *hdr_len = (size_t)hlen;
    *segs = s;
    *nsegs = m.nvars;
    *size = m.nvars ? at : hlen;
    model_free(&m);
    return ZF_OK;
}
