/* sidecar.c — derived files next to each array (-o sidecars, DESIGN.md "Where new parts go"):
 * NAME.hdr (ENVI), NAME.mhd (MetaImage), NAME.nhdr (detached NRRD), headers that name the array
 * file NAME as their raw data, and NAME.npy, an NPY header followed by the array's bytes (read
 * through the array, shifted by the header). Everything is generated from the array's metadata:
 * the flat encoding's data type (user.zarr.dtype) and shape, C order; spacing and labels from
 * its attributes and its group's. A derived node is remade in place (same id) when its array's
 * size changes or any metadata changed since it was made (h->meta_gen), and orphaned when its
 * array goes (zf_h_sidecar_current; zf_h_names_gone tells the hierarchy's user). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__) || defined(__i386__)
#include <tmmintrin.h> /* SSSE3's byte shuffle, used where the processor has it */
#endif

#include "hierarchy_impl.h"
#include "zarrfs/json.h"
#include "zarrfs/log.h"
#include "zarrfs/sbuf.h"

/* Where the voxels are: per dimension (C order) spacing and origin, from OME-Zarr multiscales
 * (1 and 0 otherwise), and axis labels (dimension_names, or xarray's _ARRAY_DIMENSIONS). */
typedef struct geom {
    double spacing[ZF_MAX_DIMS], origin[ZF_MAX_DIMS];
    char *labels[ZF_MAX_DIMS]; /* NULL when unknown */
    char *units[ZF_MAX_DIMS];  /* OME-Zarr axes' units ("micrometer"); NULL when not given */
    bool has_labels;
    bool from_multiscales; /* spacing and origin came from OME-Zarr multiscales */
} geom;

static void geom_free(geom *g)
{
    for (size_t i = 0; i < ZF_MAX_DIMS; i++) {
        free(g->labels[i]);
        free(g->units[i]);
    }
}

/* A text safe in every header: no quote, newline or backslash. */
static char *plain_text(yajl_val x)
{
    return YAJL_IS_STRING(x) && !strpbrk(x->u.string, "\"\n\\") ? strdup(x->u.string) : NULL;
}

/* OME-Zarr axes (NGFF 0.4 and later: objects with name, type, unit; 0.3: names) of n
 * dimensions: their units, and their names where no other labels are known. */
static void apply_axes(yajl_val axes, unsigned n, geom *g)
{
    if (!YAJL_IS_ARRAY(axes) || axes->u.array.len != n)
        return;
    bool labels = !g->has_labels;
    for (unsigned d = 0; d < n; d++) {
        yajl_val ax = axes->u.array.values[d];
        yajl_val name = YAJL_IS_STRING(ax) ? ax : zf_json_get(ax, "name");
        if (labels)
            g->labels[d] = plain_text(name);
        g->units[d] = plain_text(zf_json_get(ax, "unit"));
    }
    g->has_labels = true;
}

/* Apply a list of coordinateTransformations (scale, translation) of n dimensions to g. */
static void apply_transforms(yajl_val list, unsigned n, geom *g)
{
    if (!YAJL_IS_ARRAY(list))
        return;
    for (size_t i = 0; i < list->u.array.len; i++) {
        yajl_val t = list->u.array.values[i], type = zf_json_get(t, "type");
        if (!YAJL_IS_STRING(type))
            continue;
        bool scale = strcmp(type->u.string, "scale") == 0;
        bool trans = strcmp(type->u.string, "translation") == 0;
        yajl_val v = zf_json_get(t, scale ? "scale" : "translation");
        if ((!scale && !trans) || !YAJL_IS_ARRAY(v) || v->u.array.len != n)
            continue;
        for (unsigned d = 0; d < n; d++) {
            yajl_val x = v->u.array.values[d];
            if (!YAJL_IS_NUMBER(x))
                continue;
            double f = YAJL_GET_DOUBLE(x);
            if (scale) { /* scale after an earlier translation scales it too */
                g->spacing[d] *= f;
                g->origin[d] *= f;
            } else {
                g->origin[d] += f;
            }
        }
    }
}

/* A node's attributes (JSON text or NULL). zf_hierarchy_set_attributes replaces them under the
 * node's lock and retires the old text, which therefore stays readable after the unlock. */
static const char *attributes_of(zf_node *n)
{
    pthread_mutex_lock(&n->mu);
    const char *a = n->meta.attributes_json;
    pthread_mutex_unlock(&n->mu);
    return a;
}

/* The geometry of array node base: OME-Zarr multiscales of its parent group (attributes
 * "multiscales", or "ome": {"multiscales"} in NGFF 0.5) naming it as one of the datasets.
 * What it reads is what zf_hierarchy_dependent_ids names: the array's own metadata and
 * attributes, and its parent group's attributes. */
static void find_geom(zf_hierarchy *h, zf_node *base, geom *g)
{
    /* (a resize or zf_hierarchy_set_attributes replaces these under the node's lock and
     * retires the old texts, which stay readable) */
    pthread_mutex_lock(&base->mu);
    unsigned ndim = base->meta.array.ndim;
    const char *dims = base->meta.array.dimension_names_json;
    const char *battrs = base->meta.attributes_json;
    pthread_mutex_unlock(&base->mu);
    memset(g, 0, sizeof *g);
    for (unsigned d = 0; d < ndim; d++)
        g->spacing[d] = 1;
    /* labels */
    yajl_val doc = NULL, names = NULL;
    if (dims && zf_json_parse("dimension_names", dims, strlen(dims), &doc, NULL) == ZF_OK)
        names = doc;
    yajl_val adoc = NULL;
    if (!YAJL_IS_ARRAY(names) && battrs &&
        zf_json_parse("attributes", battrs, strlen(battrs), &adoc, NULL) == ZF_OK)
        names = zf_json_get(adoc, "_ARRAY_DIMENSIONS");
    if (YAJL_IS_ARRAY(names) && names->u.array.len == ndim) {
        g->has_labels = true;
        for (unsigned d = 0; d < ndim; d++) {
            g->labels[d] = plain_text(names->u.array.values[d]);
        }
    }
    if (doc)
        yajl_tree_free(doc);
    if (adoc)
        yajl_tree_free(adoc);
    /* OME-Zarr spacing */
    const char *slash = strrchr(base->path, '/');
    char *parent = slash ? strndup(base->path, (size_t)(slash - base->path)) : strdup("");
    const char *name = slash ? slash + 1 : base->path;
    zf_node *p;
    const char *pattrs = NULL;
    if (!parent || h->root_array_name || zf_hierarchy_lookup(h, parent, &p, NULL) != ZF_OK ||
        !p->is_dir || !(pattrs = attributes_of(p)) ||
        zf_json_parse("attributes", pattrs, strlen(pattrs), &doc, NULL) != ZF_OK) {
        free(parent);
        return;
    }
    free(parent);
    yajl_val ms = zf_json_get(doc, "multiscales");
    if (!YAJL_IS_ARRAY(ms))
        ms = zf_json_get(zf_json_get(doc, "ome"), "multiscales");
    for (size_t i = 0; YAJL_IS_ARRAY(ms) && i < ms->u.array.len; i++) {
        yajl_val m = ms->u.array.values[i], ds = zf_json_get(m, "datasets");
        for (size_t j = 0; YAJL_IS_ARRAY(ds) && j < ds->u.array.len; j++) {
            yajl_val path = zf_json_get(ds->u.array.values[j], "path");
            if (!YAJL_IS_STRING(path) || strcmp(path->u.string, name) != 0)
                continue;
            apply_transforms(zf_json_get(ds->u.array.values[j], "coordinateTransformations"),
                             ndim, g);
            apply_transforms(zf_json_get(m, "coordinateTransformations"), ndim, g);
            apply_axes(zf_json_get(m, "axes"), ndim, g);
            g->from_multiscales = true;
            yajl_tree_free(doc);
            return;
        }
    }
    yajl_tree_free(doc);
}

typedef struct kind_info {
    unsigned bit;
    const char *suffix;
} kind_info;

static const kind_info KINDS[] = {
    {ZF_SIDECAR_ENVI, ".hdr"}, {ZF_SIDECAR_MHD, ".mhd"},
    {ZF_SIDECAR_NHDR, ".nhdr"}, {ZF_SIDECAR_NPY, ".npy"}, {ZF_SIDECAR_TIFF, ".tif"},
    {ZF_SIDECAR_NC, ".nc"}, /* of a group, not of an array */
    {ZF_SIDECAR_MASK, ".mask"}, /* of an optional array: its validity mask */
};
#define ARRAY_KINDS ((ZF_SIDECAR_ALL | ZF_SIDECAR_MASK) & ~ZF_SIDECAR_NC)
#define NKINDS (sizeof KINDS / sizeof KINDS[0])
_Static_assert(NKINDS == ZF_SIDECAR_KINDS, "ZF_SIDECAR_KINDS in hierarchy.h");

bool zf_sidecars_parse(const char *list, unsigned *bits)
{
    *bits = 0;
    const char *p = list;
    while (*p) {
        size_t l = strcspn(p, ",:+");
        if (l == 3 && strncmp(p, "all", 3) == 0)
            *bits |= ZF_SIDECAR_ALL;
        else if ((l == 4 && strncmp(p, "envi", 4) == 0) || (l == 3 && strncmp(p, "hdr", 3) == 0))
            *bits |= ZF_SIDECAR_ENVI;
        else if (l == 3 && strncmp(p, "mhd", 3) == 0)
            *bits |= ZF_SIDECAR_MHD;
        else if ((l == 4 && strncmp(p, "nhdr", 4) == 0) || (l == 4 && strncmp(p, "nrrd", 4) == 0))
            *bits |= ZF_SIDECAR_NHDR;
        else if (l == 3 && strncmp(p, "npy", 3) == 0)
            *bits |= ZF_SIDECAR_NPY;
        else if ((l == 3 && strncmp(p, "tif", 3) == 0) || (l == 4 && strncmp(p, "tiff", 4) == 0))
            *bits |= ZF_SIDECAR_TIFF;
        else if ((l == 2 && strncmp(p, "nc", 2) == 0) || (l == 6 && strncmp(p, "netcdf", 6) == 0))
            *bits |= ZF_SIDECAR_NC;
        else if (l != 0)
            return false;
        p += l;
        if (*p)
            p++;
    }
    return *bits != 0;
}


/* A plain NumPy typestr "<f8" of the flat encoding: byte order ('<', '>', '|'), kind, size.
 * False for structured and other data types. */
bool zf_h_plain_type(const zf_array_meta *a, char *order, char *kind, unsigned *size)
{
    const char *t = a->dtype_typestr;
    if (!t || strlen(t) < 3 || !strchr("<>|=", t[0]))
        return false;
    char *end;
    unsigned long sz = strtoul(t + 2, &end, 10);
    if (*end || sz == 0)
        return false;
    *order = t[0];
    *kind = t[1];
    *size = (unsigned)sz;
    return true;
}

/* zf_h_plain_type for the header formats, which know no booleans: bytes 0 and 1 are 'u'. */
static bool plain_type(const zf_array_meta *a, char *order, char *kind, unsigned *size)
{
    if (!zf_h_plain_type(a, order, kind, size))
        return false;
    if (*kind == 'b' && *size == 1)
        *kind = 'u';
    return true;
}

static bool is_big(char order) { return order == '>'; }

/* How each header format names a data type (kind and size in bytes, as parse_dtype gives them):
 * ENVI's "data type" code (0: none), MetaImage's ElementType, NRRD's type and OME's PixelType
 * (OME-XML 2016-06, Pixels/@Type) (NULL: none). */
typedef struct header_type {
    char kind;
    unsigned size;
    int envi;
    const char *mhd, *nrrd, *ome;
} header_type;
static const header_type HEADER_TYPES[] = {
    {'u', 1, 1, "MET_UCHAR", "uint8", "uint8"},
    {'u', 2, 12, "MET_USHORT", "uint16", "uint16"},
    {'u', 4, 13, "MET_UINT", "uint32", "uint32"},
    {'u', 8, 15, "MET_ULONG_LONG", "uint64", NULL},
    {'i', 1, 0, "MET_CHAR", "int8", "int8"},
    {'i', 2, 2, "MET_SHORT", "int16", "int16"},
    {'i', 4, 3, "MET_INT", "int32", "int32"},
    {'i', 8, 14, "MET_LONG_LONG", "int64", NULL},
    {'f', 4, 4, "MET_FLOAT", "float", "float"},
    {'f', 8, 5, "MET_DOUBLE", "double", "double"},
    {'c', 8, 6, NULL, NULL, "complex"},
    {'c', 16, 9, NULL, NULL, "double-complex"},
};

static const header_type *header_type_of(char kind, unsigned size)
{
    for (size_t i = 0; i < sizeof HEADER_TYPES / sizeof *HEADER_TYPES; i++)
        if (HEADER_TYPES[i].kind == kind && HEADER_TYPES[i].size == size)
            return &HEADER_TYPES[i];
    return NULL;
}

static int envi_code(char kind, unsigned size)
{
    const header_type *t = header_type_of(kind, size);
    return t ? t->envi : 0;
}

static const char *mhd_type(char kind, unsigned size)
{
    const header_type *t = header_type_of(kind, size);
    return t ? t->mhd : NULL;
}

static const char *nrrd_type(char kind, unsigned size)
{
    const header_type *t = header_type_of(kind, size);
    return t ? t->nrrd : NULL;
}

/* The NumPy descr of the data type as a Python literal: a typestr, or a structured descr
 * (stored as JSON lists) with each field and each shape a tuple. */
static void npy_descr(zf_sbuf *b, const char *t)
{
    if (t[0] != '[') {
        zf_sbuf_printf(b, "'%s'", t);
        return;
    }
    char stack[16]; /* what each open bracket became: '[' a list, '(' a tuple */
    int depth = 0;
    bool in_str = false;
    for (const char *p = t; *p; p++) {
        char c = *p;
        if (in_str) {
            zf_sbuf_printf(b, "%c", c);
            if (c == '\\' && p[1])
                zf_sbuf_printf(b, "%c", *++p);
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
            zf_sbuf_printf(b, "%c", c);
        } else if (c == '[') {
            char o = depth == 0 ? '[' : '('; /* the field list; a field or a shape */
            if (depth < (int)sizeof stack)
                stack[depth] = o;
            depth++;
            zf_sbuf_printf(b, "%c", o);
        } else if (c == ']') {
            depth--;
            char o = depth >= 0 && depth < (int)sizeof stack ? stack[depth] : '[';
            if (o == '[')
                zf_sbuf_printf(b, "]");
            else
                zf_sbuf_printf(b, "%s", b->len && b->s[b->len - 1] == '(' ? ")" : ",)");
        } else {
            zf_sbuf_printf(b, "%c", c);
        }
    }
}

static zf_status make_npy(const zf_array_meta *a, zf_sbuf *b, const char **why)
{
    if (!a->dtype_typestr || a->variable_length) {
        *why = "variable-length data type";
        return ZF_ERR_NOT_FOUND;
    }
    if (!strchr("<>|[", a->dtype_typestr[0])) { /* "bfloat16", "int4", a struct's JSON */
        *why = "a data type NumPy does not have";
        return ZF_ERR_NOT_FOUND;
    }
    if (a->dtype_typestr[0] == '[') {
        /* nested structured dtypes (a field list inside a field) are not described */
        const char *p = strstr(a->dtype_typestr, "[[");
        if (p && p != a->dtype_typestr) {
            *why = "nested structured data type";
            return ZF_ERR_NOT_FOUND;
        }
    }
    zf_sbuf d = {0};
    zf_sbuf_printf(&d, "{'descr': ");
    npy_descr(&d, a->dtype_typestr);
    zf_sbuf_printf(&d, ", 'fortran_order': False, 'shape': (");
    for (unsigned i = 0; i < a->ndim; i++)
        zf_sbuf_printf(&d, "%llu,%s", (unsigned long long)a->shape[i], i + 1 < a->ndim ? " " : "");
    zf_sbuf_printf(&d, "), }");
    if (d.oom) {
        free(d.s);
        return ZF_ERR_NOMEM;
    }
    /* magic, version, header length, dict, spaces, '\n': a multiple of 64 bytes */
    bool v2 = d.len + 1 + 10 + 64 > 65535;
    size_t pre = v2 ? 12 : 10, total = (pre + d.len + 1 + 63) / 64 * 64;
    size_t hlen = total - pre;
    zf_sbuf_printf(b, "%s", "\x93NUMPY");
    if (!zf_sbuf_reserve(b, total)) {
        free(d.s);
        return ZF_ERR_NOMEM;
    }
    unsigned char *o = (unsigned char *)b->s + b->len;
    *o++ = v2 ? 2 : 1;
    *o++ = 0;
    *o++ = (unsigned char)(hlen & 0xff);
    *o++ = (unsigned char)((hlen >> 8) & 0xff);
    if (v2) {
        *o++ = (unsigned char)((hlen >> 16) & 0xff);
        *o++ = (unsigned char)((hlen >> 24) & 0xff);
    }
    memcpy(o, d.s, d.len);
    memset(o + d.len, ' ', hlen - d.len - 1);
    o[hlen - 1] = '\n';
    b->len = total;
    b->s[b->len] = '\0';
    free(d.s);
    return ZF_OK;
}

static const char *ome_type(char kind, unsigned size)
{
    const header_type *t = header_type_of(kind, size);
    return t ? t->ome : NULL;
}

/* OME's symbol of an OME-Zarr (UDUNITS-2) length unit, as an XML character reference where it
 * is not ASCII (a TIFF description is 7-bit text); NULL: not a length OME names. */
static const char *ome_length_unit(const char *u)
{
    static const char *const U[][2] = {
        {"angstrom", "&#xC5;"}, {"picometer", "pm"}, {"nanometer", "nm"},
        {"micrometer", "&#xB5;m"}, {"millimeter", "mm"}, {"centimeter", "cm"},
        {"decimeter", "dm"}, {"meter", "m"}, {"kilometer", "km"}, {"inch", "in"},
        {"foot", "ft"}, {"yard", "yd"}, {"mile", "mi"}, {"parsec", "pc"},
    };
    for (size_t i = 0; u && i < sizeof U / sizeof *U; i++)
        if (strcmp(u, U[i][0]) == 0)
            return U[i][1];
    return NULL;
}

/* Which of OME's Z, C and T each leading dimension (all but the last two) of an n-D array is,
 * from its label (z; c or channel; t or time) when every one has a distinct known label, else by
 * position as in OME-Zarr's (t, c, z, y, x). False: more than three leading dimensions. */
static bool ome_axes(unsigned n, const geom *g, char *letter)
{
    if (n < 2 || n > 5)
        return false;
    unsigned lead = n - 2;
    bool named = g && g->has_labels;
    for (unsigned d = 0; named && d < lead; d++) {
        const char *l = g->labels[d];
        letter[d] = !l ? 0
                    : strcasecmp(l, "z") == 0 ? 'Z'
                    : strcasecmp(l, "c") == 0 || strcasecmp(l, "channel") == 0 ? 'C'
                    : strcasecmp(l, "t") == 0 || strcasecmp(l, "time") == 0 ? 'T' : 0;
        for (unsigned e = 0; letter[d] && e < d; e++)
            if (letter[e] == letter[d])
                letter[d] = 0;
        named = letter[d] != 0;
    }
    if (!named)
        for (unsigned d = 0; d < lead; d++)
            letter[d] = "TCZ"[3 - lead + d];
    return true;
}

/* Printable ASCII with XML's five special characters escaped; false (nothing added) for any
 * other byte. */
static bool xml_text(zf_sbuf *b, const char *t)
{
    for (const char *p = t; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            return false;
    for (const char *p = t; *p; p++) {
        const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;"
                        : *p == '"' ? "&quot;" : *p == '\'' ? "&apos;" : NULL;
        if (e)
            zf_sbuf_printf(b, "%s", e);
        else
            zf_sbuf_printf(b, "%c", *p);
    }
    return true;
}

/* The physical size attributes of OME dimension `letter` for array dimension d (only with
 * OME-Zarr spacing and a length unit OME names: without a unit, OME would say micrometres). */
static void ome_physical(zf_sbuf *b, char letter, unsigned d, const geom *g)
{
    const char *unit = g && g->from_multiscales ? ome_length_unit(g->units[d]) : NULL;
    double s = g ? g->spacing[d] : 0;
    if (unit && s > 0 && s < 1e300)
        zf_sbuf_printf(b, " PhysicalSize%c=\"%.17g\" PhysicalSize%cUnit=\"%s\"", letter, s, letter,
                  unit);
}

/* The first page's description of a TIFF view: OME-XML (OME 2016-06: Image, Pixels with sizes,
 * dimension order, type, physical sizes, one TiffData for every plane) where OME can describe
 * the array (2 to 5 dimensions, an OME pixel type, sizes below 2^31), else tifffile's "shaped"
 * JSON ({"shape": [...]}) so that tifffile still gives the array's full shape. */
static void tiff_description(zf_sbuf *b, const char *name, const zf_array_meta *a, char kind,
                             unsigned size, bool big, const geom *g)
{
    unsigned n = a->ndim;
    char letter[3];
    const char *type = ome_type(kind, size);
    bool ome = type && ome_axes(n, g, letter);
    for (unsigned d = 0; ome && d < n; d++)
        ome = a->shape[d] <= INT32_MAX;
    if (!ome) {
        zf_sbuf_printf(b, "{\"shape\": [");
        for (unsigned d = 0; d < n; d++)
            zf_sbuf_printf(b, "%s%llu", d ? ", " : "", (unsigned long long)a->shape[d]);
        zf_sbuf_printf(b, "]}");
        return;
    }
    unsigned long long size_of[3] = {1, 1, 1}, planes = 1; /* Z, C, T */
    char order[6] = "XY";
    size_t k = 2;
    for (unsigned d = n - 2; d-- > 0;) { /* the fastest-varying leading dimension first */
        size_of[strchr("ZCT", letter[d]) - "ZCT"] = a->shape[d];
        order[k++] = letter[d];
        planes *= a->shape[d];
    }
    for (const char *l = "ZCT"; *l; l++) /* the rest, of size 1 */
        if (!memchr(order, *l, k))
            order[k++] = *l;
    order[5] = '\0';
    zf_sbuf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\" "
                 "Creator=\"zarrfs\"><Image ID=\"Image:0\"");
    size_t at = b->len;
    zf_sbuf_printf(b, " Name=\"");
    if (xml_text(b, name))
        zf_sbuf_printf(b, "\"");
    else if (!b->oom)
        b->len = at; /* no name rather than a wrong one */
    zf_sbuf_printf(b, "><Pixels ID=\"Pixels:0\" DimensionOrder=\"%s\" Type=\"%s\" SizeX=\"%llu\" "
                 "SizeY=\"%llu\" SizeZ=\"%llu\" SizeC=\"%llu\" SizeT=\"%llu\" BigEndian=\"%s\"",
              order, type, (unsigned long long)a->shape[n - 1],
              (unsigned long long)a->shape[n - 2], size_of[0], size_of[1], size_of[2],
              big ? "true" : "false");
    ome_physical(b, 'X', n - 1, g);
    ome_physical(b, 'Y', n - 2, g);
    for (unsigned d = 0; d + 2 < n; d++)
        if (letter[d] == 'Z')
            ome_physical(b, 'Z', d, g);
    zf_sbuf_printf(b, "><TiffData IFD=\"0\" PlaneCount=\"%llu\"/></Pixels></Image></OME>", planes);
}

static zf_status make_tiff(const char *name, const zf_array_meta *a, const geom *g, zf_sbuf *b,
                           const char **why)
{
    char order, kind;
    unsigned size;
    if (!plain_type(a, &order, &kind, &size)) {
        *why = "structured or variable-length data type";
        return ZF_ERR_NOT_FOUND;
    }
    if (!b) /* whether there is one: the header's size does not depend on the description */
        return zf_h_tiff_header(a->ndim, a->shape, kind, size, is_big(order), NULL, NULL, NULL,
                                why);
    zf_sbuf d = {0};
    tiff_description(&d, name, a, kind, size, is_big(order), g);
    if (d.oom) {
        free(d.s);
        return ZF_ERR_NOMEM;
    }
    unsigned char *h;
    size_t len;
    zf_status st = zf_h_tiff_header(a->ndim, a->shape, kind, size, is_big(order), d.s, &h, &len,
                                    why);
    free(d.s);
    if (st != ZF_OK)
        return st;
    free(b->s);
    b->s = (char *)h;
    b->len = b->cap = len;
    return ZF_OK;
}

static zf_status make_header(unsigned bit, const char *name, const zf_array_meta *a,
                             const geom *g, zf_sbuf *b, const char **why)
{
    if (bit == ZF_SIDECAR_NPY)
        return make_npy(a, b, why);
    if (bit == ZF_SIDECAR_TIFF)
        return make_tiff(name, a, g, b, why);
    if (bit == ZF_SIDECAR_MASK) { /* no header: the mask view's bytes, from the start */
        *why = "not an array of an optional data type";
        return a->optional_levels ? ZF_OK : ZF_ERR_NOT_FOUND;
    }
    char order, kind;
    unsigned size;
    if (!plain_type(a, &order, &kind, &size)) {
        *why = "structured or variable-length data type";
        return ZF_ERR_NOT_FOUND;
    }
    unsigned n = a->ndim;
    const uint64_t *s = a->shape;
    if (bit == ZF_SIDECAR_ENVI) {
        int code = envi_code(kind, size);
        if (!code) {
            *why = "a data type ENVI does not have";
            return ZF_ERR_NOT_FOUND;
        }
        if (n != 2 && n != 3) {
            *why = "not 2-D or 3-D";
            return ZF_ERR_NOT_FOUND;
        }
        zf_sbuf_printf(b, "ENVI\ndescription = {zarrfs: %s}\nsamples = %llu\nlines = %llu\n"
                     "bands = %llu\nheader offset = 0\nfile type = ENVI Standard\n"
                     "data type = %d\ninterleave = bsq\nbyte order = %d\n",
                  name, (unsigned long long)s[n - 1], (unsigned long long)s[n - 2],
                  (unsigned long long)(n == 3 ? s[0] : 1), code, is_big(order) ? 1 : 0);
        return b->oom ? ZF_ERR_NOMEM : ZF_OK;
    }
    if (n == 0) {
        *why = "0-d array";
        return ZF_ERR_NOT_FOUND;
    }
    if (bit == ZF_SIDECAR_MHD) {
        const char *t = mhd_type(kind, size);
        if (!t) {
            *why = "a data type MetaImage does not have";
            return ZF_ERR_NOT_FOUND;
        }
        zf_sbuf_printf(b, "ObjectType = Image\nNDims = %u\nBinaryData = True\n"
                     "BinaryDataByteOrderMSB = %s\nElementByteOrderMSB = %s\nDimSize =",
                  n, is_big(order) ? "True" : "False", is_big(order) ? "True" : "False");
        for (unsigned i = n; i-- > 0;)
            zf_sbuf_printf(b, " %llu", (unsigned long long)s[i]);
        zf_sbuf_printf(b, "\nElementSpacing =");
        for (unsigned i = n; i-- > 0;)
            zf_sbuf_printf(b, " %.17g", g ? g->spacing[i] : 1.0);
        zf_sbuf_printf(b, "\nOffset =");
        for (unsigned i = n; i-- > 0;)
            zf_sbuf_printf(b, " %.17g", g ? g->origin[i] : 0.0);
        zf_sbuf_printf(b, "\nElementType = %s\nHeaderSize = 0\nElementDataFile = %s\n", t, name);
        return b->oom ? ZF_ERR_NOMEM : ZF_OK;
    }
    /* NRRD */
    const char *t = nrrd_type(kind, size);
    if (!t) {
        *why = "a data type NRRD does not have";
        return ZF_ERR_NOT_FOUND;
    }
    zf_sbuf_printf(b, "NRRD0004\n# generated by zarrfs\ntype: %s\ndimension: %u\nsizes:", t, n);
    for (unsigned i = n; i-- > 0;)
        zf_sbuf_printf(b, " %llu", (unsigned long long)s[i]);
    zf_sbuf_printf(b, "\nkinds:");
    for (unsigned i = 0; i < n; i++)
        zf_sbuf_printf(b, " domain");
    zf_sbuf_printf(b, "\nspacings:");
    for (unsigned i = n; i-- > 0;)
        zf_sbuf_printf(b, " %.17g", g ? g->spacing[i] : 1.0);
    zf_sbuf_printf(b, "\naxis mins:");
    for (unsigned i = n; i-- > 0;)
        zf_sbuf_printf(b, " %.17g", g ? g->origin[i] : 0.0);
    zf_sbuf_printf(b, "\n");
    if (g && g->has_labels) {
        zf_sbuf_printf(b, "labels:");
        for (unsigned i = n; i-- > 0;)
            zf_sbuf_printf(b, " \"%s\"", g->labels[i] ? g->labels[i] : "");
        zf_sbuf_printf(b, "\n");
    }
    if (size > 1)
        zf_sbuf_printf(b, "endian: %s\n", is_big(order) ? "big" : "little");
    zf_sbuf_printf(b, "encoding: raw\ndata file: %s\n", name);
    return b->oom ? ZF_ERR_NOMEM : ZF_OK;
}

static const kind_info *kind_of(unsigned enabled, const char *name, size_t *base_len)
{
    size_t l = strlen(name);
    for (size_t i = 0; i < NKINDS; i++) {
        size_t sl = strlen(KINDS[i].suffix);
        if ((enabled & KINDS[i].bit) && l > sl && strcmp(name + l - sl, KINDS[i].suffix) == 0) {
            *base_len = l - sl;
            return &KINDS[i];
        }
    }
    return NULL;
}

/* The array's file is readable with a known size (else nothing is derived from it). */
static bool servable(const zf_node *n)
{
    return n && !n->is_dir && !n->pending && !n->derived && n->meta.unsupported == ZF_OK &&
           !n->meta.array.variable_length;
}

/* The bytes of derived node n after its header, its array being base_size bytes: the array's
 * (.npy, .tif), its mask's (one byte per element), or none. */
static uint64_t appended_size(const zf_node *n, const zf_node *base, uint64_t base_size)
{
    if (!n->dappend_data)
        return 0;
    size_t isz = base->meta.array.dtype.itemsize;
    return n->dkind == ZF_SIDECAR_MASK ? (isz ? base_size / isz : 0) : base_size;
}

/* The array whose bytes follow derived node n's header: its base array's flat view, or for a
 * mask that array's mask view. */
static zf_status appended_array(zf_hierarchy *h, zf_node *n, zf_array **a, zf_err *err)
{
    zf_status st = zf_hierarchy_array(h, n->base, a, err);
    if (st == ZF_OK && n->dkind == ZF_SIDECAR_MASK && !(*a = zf_array_mask(*a)))
        return zf_fail(err, ZF_ERR_INVALID, "%s: the array has no mask", n->path);
    return st;
}

/* A new derived node at path from base (its metadata's format, mtime now), of kind `kind`, made
 * from the metadata as of change count gen; the caller sets its header and size. */
static zf_node *derived_new(const char *path, zf_node *base, unsigned kind, uint64_t gen)
{
    zf_node *n = zf_h_node_new(path, base->prefix);
    if (!n)
        return NULL;
    n->derived = true;
    n->base = base;
    n->dgen = gen;
    n->dkind = kind;
    n->meta.format = base->meta.format;
    n->meta.kind = ZF_NODE_ARRAY;
    n->meta.unsupported = ZF_ERR_UNSUPPORTED; /* no array of its own */
    n->loaded = zf_h_mono_now();
    return n;
}

/* A netCDF view's dbase_size until it is made (its node exists for a listing's entry). */
#define NC_UNMADE UINT64_MAX

/* Make the netCDF view of group `base` at `path` (replacing `old`, a view made for an earlier
 * version of the group, when not NULL); with `entry`, only its node (made when next used). */
static zf_status nc_lookup(zf_hierarchy *h, const char *path, zf_node *base, zf_node *old,
                           bool entry, zf_node **out)
{
    uint64_t gen = atomic_load_explicit(&h->meta_gen, memory_order_acquire); /* before reading */
    unsigned char *hdr = NULL;
    size_t hlen = 0, nsegs = 0;
    zf_view_segment *segs = NULL;
    uint64_t size = 0;
    zf_status st = entry ? ZF_OK : zf_h_nc_view(h, base, &hdr, &hlen, &segs, &nsegs, &size);
    if (st != ZF_OK)
        return st;
    zf_node *n = derived_new(path, base, ZF_SIDECAR_NC, gen);
    if (!n) {
        free(hdr);
        free(segs);
        return ZF_ERR_NOMEM;
    }
    n->dhdr = (char *)hdr;
    n->dhdr_len = hlen;
    n->dsegs = segs;
    n->ndsegs = nsegs;
    n->dbase_size = entry ? NC_UNMADE : 0;
    n->size = size;
    clock_gettime(CLOCK_REALTIME, &n->mtime);
    return zf_h_publish(h, n, old, out);
}

zf_status zf_h_sidecar_lookup(zf_hierarchy *h, const char *path, bool entry, zf_node **out,
                              zf_err *err)
{
    size_t bl;
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    const kind_info *k = h->sidecars ? kind_of(h->sidecars, name, &bl) : NULL;
    if (!k)
        return ZF_ERR_NOT_FOUND;
    size_t dl = (size_t)(name - path);
    char *bpath = strndup(path, dl + bl);
    if (!bpath)
        return ZF_ERR_NOMEM;
    zf_node *base;
    zf_status st = zf_hierarchy_lookup(h, bpath, &base, err);
    if (st == ZF_OK && base->synthetic) /* the versions' hidden directory: no Zarr node */
        st = ZF_ERR_NOT_FOUND;
    if (k->bit == ZF_SIDECAR_NC) { /* GROUP.nc; the root's: STORE.nc */
        free(bpath);
        if ((st != ZF_OK || !base->is_dir || base->virtual_root || base->derived) &&
            h->nc_root_name && strcmp(path, h->nc_root_name) == 0)
            st = zf_hierarchy_lookup(h, "", &base, err);
        if (st != ZF_OK || !base->is_dir || base->virtual_root)
            return st == ZF_OK || st == ZF_ERR_NOT_FOUND ? ZF_ERR_NOT_FOUND : st;
        pthread_mutex_lock(&h->mu);
        zf_node *old = zf_h_find_locked(h, path);
        if (old && old->derived && old->base == base) {
            pthread_mutex_unlock(&h->mu);
            if (!entry)
                zf_h_sidecar_refresh(h, old);
            *out = old;
            return ZF_OK;
        }
        pthread_mutex_unlock(&h->mu);
        return nc_lookup(h, path, base, old, entry, out);
    }
    if (st != ZF_OK || !servable(base)) {
        if (st == ZF_OK)
            zf_log_debug("%s: no sidecar: %s is not a readable array", path, bpath);
        free(bpath);
        return st == ZF_OK || st == ZF_ERR_NOT_FOUND ? ZF_ERR_NOT_FOUND : st;
    }
    /* A derived node already made for this base array (same path and same base node): brought
     * up to date in place, so that it keeps its id (the kernel's inode) across changes. */
    pthread_mutex_lock(&h->mu);
    zf_node *old = zf_h_find_locked(h, path);
    if (old && old->derived && old->base == base) {
        pthread_mutex_unlock(&h->mu);
        free(bpath);
        zf_h_sidecar_refresh(h, old);
        *out = old;
        return ZF_OK;
    }
    pthread_mutex_unlock(&h->mu);
    zf_sbuf b = {0};
    const char *why = NULL;
    geom g;
    uint64_t gen = atomic_load_explicit(&h->meta_gen, memory_order_acquire); /* before reading */
    find_geom(h, base, &g);
    pthread_mutex_lock(&base->mu); /* (a resize replaces its metadata and size under it) */
    st = make_header(k->bit, bpath + dl, &base->meta.array, &g, &b, &why);
    uint64_t base_size = base->size;
    struct timespec base_mtime = base->mtime;
    pthread_mutex_unlock(&base->mu);
    geom_free(&g);
    free(bpath);
    if (st != ZF_OK) {
        free(b.s);
        if (st == ZF_ERR_NOT_FOUND)
            zf_log_debug("%s: no sidecar: %s", path, why ? why : "not describable");
        return st;
    }
    zf_node *n = derived_new(path, base, k->bit, gen);
    if (!n) {
        free(b.s);
        return ZF_ERR_NOMEM;
    }
    n->dhdr = b.s;
    n->dhdr_len = b.len;
    n->dappend_data = k->bit == ZF_SIDECAR_NPY || k->bit == ZF_SIDECAR_TIFF ||
                      k->bit == ZF_SIDECAR_MASK;
    n->dbase_size = base_size;
    n->size = b.len + appended_size(n, base, base_size);
    n->mtime = base_mtime;
    return zf_h_publish(h, n, old, out); /* old: made for an older version of the array */
}

/* The header of n predates its array's size or a later change of metadata (n->mu and its
 * array's mu held, in that order: nothing takes them the other way round). */
static bool header_stale_locked(const zf_node *n, uint64_t gen)
{
    return n->dgen < gen || n->dbase_size != n->base->size;
}

/* A netCDF view is stale when not made yet (a listing's entry), made before the latest change
 * of metadata (gen) or when an array's size changed since. */
static bool nc_stale(zf_node *n, uint64_t gen)
{
    pthread_mutex_lock(&n->mu);
    bool stale = n->dgen < gen || n->dbase_size == NC_UNMADE;
    size_t ns = n->ndsegs;
    zf_view_segment *was = stale ? NULL : malloc((ns ? ns : 1) * sizeof *was);
    if (was)
        memcpy(was, n->dsegs, ns * sizeof *was);
    pthread_mutex_unlock(&n->mu);
    for (size_t i = 0; was && !stale && i < ns; i++) {
        pthread_mutex_lock(&was[i].array->mu);
        stale = was[i].array->size != was[i].nbytes;
        pthread_mutex_unlock(&was[i].array->mu);
    }
    free(was); /* (out of memory: taken as not stale, left as it is) */
    return stale;
}

/* zf_h_sidecar_refresh of a netCDF view: when stale, made again (outside the locks: it lists the
 * group and looks its arrays up) and put in place. */
static void nc_refresh(zf_hierarchy *h, zf_node *n, uint64_t gen)
{
    if (!nc_stale(n, gen))
        return;
    unsigned char *hdr;
    size_t hlen, nsegs;
    zf_view_segment *segs;
    uint64_t size;
    zf_status st = zf_h_nc_view(h, n->base, &hdr, &hlen, &segs, &nsegs, &size);
    if (st != ZF_OK) {
        zf_log_debug("%s: not remade: %s", n->path, zf_status_str(st));
        return;
    }
    pthread_mutex_lock(&n->mu);
    free(n->dhdr);
    free(n->dsegs);
    n->dhdr = (char *)hdr;
    n->dhdr_len = hlen;
    n->dsegs = segs;
    n->ndsegs = nsegs;
    n->size = size;
    n->dbase_size = 0;
    clock_gettime(CLOCK_REALTIME, &n->mtime);
    if (n->dgen < gen)
        n->dgen = gen;
    pthread_mutex_unlock(&n->mu);
}

bool zf_hierarchy_attrs_ready(zf_hierarchy *h, zf_node *n)
{
    h = zf_h_owner(h, n);
    if (n->synthetic)
        return zf_h_versions_attrs_ready(n);
    if (zf_hierarchy_size_unknown(n))
        return false;
    if (!n->derived)
        return true;
    if (!zf_h_sidecar_current(h, n)) /* its array is gone */
        return false;
    if (n->dkind == ZF_SIDECAR_NC) /* (made from its arrays' metadata: by a lookup) */
        return !nc_stale(n, atomic_load_explicit(&h->meta_gen, memory_order_acquire));
    zf_h_sidecar_refresh(h, n); /* a header: from its array's metadata, at hand */
    return true;
}

void zf_h_sidecar_refresh(zf_hierarchy *h, zf_node *n)
{
    zf_node *base = n->base;
    /* Loaded before the metadata is read: a change after this load is remade next time. */
    uint64_t gen = atomic_load_explicit(&h->meta_gen, memory_order_acquire);
    if (n->dkind == ZF_SIDECAR_NC) {
        nc_refresh(h, n, gen);
        return;
    }
    pthread_mutex_lock(&n->mu);
    pthread_mutex_lock(&base->mu);
    bool stale = header_stale_locked(n, gen);
    pthread_mutex_unlock(&base->mu);
    pthread_mutex_unlock(&n->mu);
    if (!stale)
        return;
    geom g;
    find_geom(h, base, &g); /* (looks nodes up: not under the nodes' locks) */
    pthread_mutex_lock(&n->mu);
    pthread_mutex_lock(&base->mu);
    if (header_stale_locked(n, gen)) {
        const char *slash = strrchr(base->path, '/');
        zf_sbuf b = {0};
        const char *why = NULL;
        zf_status st = make_header(n->dkind, slash ? slash + 1 : base->path, &base->meta.array,
                                   &g, &b, &why);
        if (st == ZF_OK) {
            free(n->dhdr);
            n->dhdr = b.s;
            n->dhdr_len = b.len;
            n->dbase_size = base->size;
            n->size = b.len + appended_size(n, base, base->size);
            n->mtime = base->mtime;
        } else {
            free(b.s);
            zf_log_debug("%s: not remade after its array changed: %s", n->path,
                         why ? why : zf_status_str(st));
        }
        if (n->dgen < gen)
            n->dgen = gen;
    }
    pthread_mutex_unlock(&base->mu);
    pthread_mutex_unlock(&n->mu);
    geom_free(&g);
}

bool zf_h_sidecar_current(zf_hierarchy *h, const zf_node *n)
{
    pthread_mutex_lock(&h->mu);
    bool cur = zf_h_find_locked(h, n->path) == n && zf_h_find_locked(h, n->base->path) == n->base;
    pthread_mutex_unlock(&h->mu);
    return cur;
}

void zf_h_meta_changed(zf_hierarchy *h)
{
    atomic_fetch_add_explicit(&h->meta_gen, 1, memory_order_release);
}

void zf_hierarchy_on_gone(zf_hierarchy *h, zf_hierarchy_gone_fn fn, void *ctx)
{
    h->gone = fn;
    h->gone_ctx = ctx;
}

void zf_h_names_gone(zf_hierarchy *h, const zf_node *n, bool self, bool deleted)
{
    zf_hierarchy *r = zf_h_root(h); /* (a version's ids are the mount's inode numbers too) */
    if (!r->gone || n->derived)
        return;
    const char *slash = strrchr(n->path, '/'), *name = slash ? slash + 1 : n->path;
    size_t dl = slash ? (size_t)(slash - n->path) : 0, pl = strlen(n->path);
    char *path = malloc(pl + 16); /* the node's path, then with each suffix (".nhdr" the longest) */
    if (!path)
        return;
    memcpy(path, n->path, pl + 1);
    /* names (as suffixes of the node's name: "" for itself) and the ids they led to */
    const char *suffix[NKINDS + 1];
    uint64_t ids[NKINDS + 1];
    size_t k = 0;
    pthread_mutex_lock(&h->mu);
    path[dl] = '\0';
    zf_node *dir = zf_h_find_locked(h, path);
    uint64_t dir_id = dir ? dir->id : 0;
    memcpy(path, n->path, pl + 1);
    if (self) {
        suffix[k] = "";
        ids[k++] = n->id;
    }
    for (size_t i = 0; h->sidecars && !n->is_dir && i < NKINDS; i++) {
        if (!(h->sidecars & KINDS[i].bit & ARRAY_KINDS))
            continue;
        snprintf(path + pl, 16, "%s", KINDS[i].suffix);
        zf_node *d = zf_h_find_locked(h, path);
        if (d && d->derived && d->base == n) { /* only a name the kernel may have been given */
            suffix[k] = KINDS[i].suffix;
            ids[k++] = d->id;
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (dir_id) {
        for (size_t i = 0; i < k; i++) {
            snprintf(path, pl + 16, "%s%s", name, suffix[i]);
            r->gone(r->gone_ctx, dir_id, path, ids[i], deleted);
        }
    }
    free(path);
}

zf_status zf_h_sidecar_names(zf_hierarchy *h, const zf_node *node, const char *name,
                             char ***names, size_t *n, size_t *cap)
{
    if (node->is_dir && !node->virtual_root && (h->sidecars & ZF_SIDECAR_NC)) {
        char *full; /* every group has one (with no variables when it holds no arrays) */
        if (asprintf(&full, "%s.nc", name) < 0)
            return ZF_ERR_NOMEM;
        zf_status st = zf_h_push_name(names, n, cap, full, strlen(full));
        free(full);
        return st;
    }
    if (!servable(node))
        return ZF_OK;
    for (size_t i = 0; i < NKINDS; i++) {
        if (!(h->sidecars & KINDS[i].bit & ARRAY_KINDS))
            continue;
        zf_sbuf b = {0};
        const char *why = NULL;
        /* (a TIFF header's existence is known without making it: a listing stays cheap) */
        zf_status st = make_header(KINDS[i].bit, name, &node->meta.array, NULL,
                                   KINDS[i].bit == ZF_SIDECAR_TIFF ? NULL : &b, &why);
        free(b.s);
        if (st == ZF_ERR_NOT_FOUND)
            continue;
        if (st != ZF_OK)
            return st;
        char *full;
        if (asprintf(&full, "%s%s", name, KINDS[i].suffix) < 0)
            return ZF_ERR_NOMEM;
        st = zf_h_push_name(names, n, cap, full, strlen(full));
        free(full);
        if (st != ZF_OK)
            return st;
    }
    return ZF_OK;
}

/* Node n lies directly in group g. */
static bool in_group(const zf_node *g, const zf_node *n)
{
    size_t gl = strlen(g->path);
    if (gl && (strncmp(n->path, g->path, gl) != 0 || n->path[gl] != '/'))
        return false;
    return !strchr(n->path + (gl ? gl + 1 : 0), '/');
}

size_t zf_hierarchy_derived_ids(zf_hierarchy *h, const zf_node *node, uint64_t *ids, size_t max)
{
    size_t n = 0;
    h = zf_h_owner(h, node);
    if (node->synthetic || !h->sidecars || node->derived || node->is_dir)
        return 0;
    size_t pl = strlen(node->path);
    char *path = malloc(pl + 16); /* the longest suffix is ".nhdr" */
    if (!path)
        return 0;
    memcpy(path, node->path, pl);
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < NKINDS && n < max; i++) {
        if (!(h->sidecars & KINDS[i].bit & ARRAY_KINDS))
            continue;
        snprintf(path + pl, 16, "%s", KINDS[i].suffix);
        zf_node *d = zf_h_find_locked(h, path);
        if (d && d->derived && d->base == node)
            ids[n++] = d->id;
    }
    /* its group's netCDF view, whose size follows the array's: GROUP.nc, the root's STORE.nc */
    const char *slash = strrchr(node->path, '/');
    if ((h->sidecars & ZF_SIDECAR_NC) && n < max && (slash || h->nc_root_name)) {
        if (slash)
            snprintf(path, pl + 16, "%.*s.nc", (int)(slash - node->path), node->path);
        zf_node *d = zf_h_find_locked(h, slash ? path : h->nc_root_name);
        if (d && d->derived && d->dkind == ZF_SIDECAR_NC && in_group(d->base, node))
            ids[n++] = d->id;
    }
    pthread_mutex_unlock(&h->mu);
    free(path);
    return n;
}

zf_status zf_hierarchy_dependent_ids(zf_hierarchy *h, const zf_node *node, uint64_t **ids,
                                     size_t *n)
{
    *ids = NULL;
    *n = 0;
    h = zf_h_owner(h, node);
    if (!h->sidecars || node->synthetic || node->derived || node->virtual_root)
        return ZF_OK;
    size_t cap = 0;
    zf_status st = ZF_OK;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->nnodes && st == ZF_OK; i++) {
        zf_node *d = h->by_id[i];
        if (!d->derived || zf_h_find_locked(h, d->path) != d)
            continue;
        bool dep = d->base == node ||
                   (node->is_dir && in_group(node, d->base)) || /* of an array in the group */
                   (d->dkind == ZF_SIDECAR_NC && in_group(d->base, node)); /* the group's */
        if (!dep)
            continue;
        if (*n == cap) {
            uint64_t *g = realloc(*ids, (cap = cap ? cap * 2 : 8) * sizeof *g);
            if (!g) {
                st = ZF_ERR_NOMEM;
                break;
            }
            *ids = g;
        }
        (*ids)[(*n)++] = d->id;
    }
    pthread_mutex_unlock(&h->mu);
    if (st != ZF_OK) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return st;
}

#if defined(__x86_64__) || defined(__i386__)
/* copy_swapped's 16-byte blocks with SSSE3's byte shuffle (one instruction reverses four float32
 * where bswap takes one each: the scalar loop cost more daemon time than the memory traffic);
 * returns the bytes done, a multiple of 16. dst may be src: each block is loaded before it is
 * stored. */
__attribute__((target("ssse3"))) static size_t copy_swapped_ssse3(uint8_t *dst,
                                                                  const uint8_t *src, size_t n,
                                                                  unsigned size)
{
    const __m128i rev = size == 2   ? _mm_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12,
                                                    15, 14)
                        : size == 4 ? _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14,
                                                    13, 12)
                                    : _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11,
                                                    10, 9, 8);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm_shuffle_epi8(v, rev));
    }
    return i;
}

static size_t copy_swapped_vector(uint8_t *dst, const uint8_t *src, size_t n, unsigned size)
{
    static int have = -1; /* (a benign race: every thread finds the same answer) */
    if (have < 0)
        have = __builtin_cpu_supports("ssse3") ? 1 : 0;
    return have ? copy_swapped_ssse3(dst, src, n, size) : 0;
}
#else
static size_t copy_swapped_vector(uint8_t *dst, const uint8_t *src, size_t n, unsigned size)
{
    (void)dst, (void)src, (void)n, (void)size;
    return 0;
}
#endif

/* Copy n bytes (whole items of `size` bytes: 2, 4 or 8) from src to dst, each item reversed:
 * 16-byte blocks with a vector shuffle where the processor has one, the rest with the
 * compilers' byte-swap builtins. */
static void copy_swapped(uint8_t *dst, const uint8_t *src, size_t n, unsigned size)
{
    size_t i = copy_swapped_vector(dst, src, n, size);
    if (size == 2)
        for (uint16_t v; i + 2 <= n; i += 2) {
            memcpy(&v, src + i, 2);
            v = __builtin_bswap16(v);
            memcpy(dst + i, &v, 2);
        }
    else if (size == 4)
        for (uint32_t v; i + 4 <= n; i += 4) {
            memcpy(&v, src + i, 4);
            v = __builtin_bswap32(v);
            memcpy(dst + i, &v, 4);
        }
    else
        for (uint64_t v; i + 8 <= n; i += 8) {
            memcpy(&v, src + i, 8);
            v = __builtin_bswap64(v);
            memcpy(dst + i, &v, 8);
        }
}

/* Reverse each item of `size` bytes in p (n bytes, a multiple of size). */
static void swap_items(uint8_t *p, size_t n, unsigned size)
{
    if (size == 2 || size == 4 || size == 8) {
        copy_swapped(p, p, n, size); /* (in place: each piece is loaded before it is stored) */
        return;
    }
    for (size_t i = 0; size > 1 && i + size <= n; i += size)
        for (unsigned a = 0, b = size - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

/* Read n bytes at array offset `at` (a multiple of size, n too) into dst, each item of `size`
 * bytes (2, 4 or 8) reversed, in one pass over the cached chunks (zf_array_read_view). False,
 * nothing done, when the read cannot be described so: the caller reads and swaps. */
static bool read_swapped(zf_array *a, uint64_t at, uint8_t *dst, size_t n, unsigned size)
{
    if (size != 2 && size != 4 && size != 8)
        return false;
    zf_array_view *v = malloc(sizeof *v);
    size_t got = 0;
    zf_err err = {""};
    if (!v || zf_array_read_view(a, at, n, v, &got, &err) != ZF_OK) {
        free(v);
        return false;
    }
    bool whole = got == n;
    for (size_t i = 0; whole && i < v->npieces; i++)
        whole = v->pieces[i].iov_len % size == 0;
    for (size_t i = 0, o = 0; whole && i < v->npieces; o += v->pieces[i].iov_len, i++)
        copy_swapped(dst + o, v->pieces[i].iov_base, v->pieces[i].iov_len, size);
    zf_array_view_release(a, v);
    free(v);
    return whole;
}

/* len bytes at view offset off of a view made of segments (sorted by begin, apart): each
 * segment's part read from its array (byte-swapped where asked: a part not on item boundaries
 * is read widened to them through a bounce buffer), zeros between and after them. */
static zf_status read_segments(zf_hierarchy *h, const zf_view_segment *segs, size_t ns,
                               uint64_t off, char *buf, size_t len, zf_err *err)
{
    uint64_t pos = off; /* what is filled up to: the gaps get zeros, the rest is written once */
    for (size_t i = 0; i < ns && len; i++) {
        const zf_view_segment *s = &segs[i];
        if (off + len <= s->begin || off >= s->begin + s->nbytes)
            continue;
        if (s->begin > pos) {
            memset(buf + (pos - off), 0, (size_t)(s->begin - pos));
            pos = s->begin;
        }
        uint64_t from = off > s->begin ? off - s->begin : 0; /* within the array */
        uint64_t to = off + len - s->begin < s->nbytes ? off + len - s->begin : s->nbytes;
        char *dst = buf + (s->begin + from - off);
        unsigned sz = s->swap ? s->swap : 1;
        uint64_t a0 = from / sz * sz, a1 = (to + sz - 1) / sz * sz;
        bool bounce = a0 != from || a1 != to;
        char *tmp = bounce ? malloc((size_t)(a1 - a0)) : dst;
        if (!tmp)
            return ZF_ERR_NOMEM;
        zf_array *a;
        size_t nread = 0;
        zf_status st = zf_hierarchy_array(h, s->array, &a, err);
        bool done = st == ZF_OK && s->swap &&
                    read_swapped(a, a0, (uint8_t *)tmp, (size_t)(a1 - a0), s->swap);
        if (st == ZF_OK && !done)
            st = zf_array_read(a, a0, tmp, (size_t)(a1 - a0), &nread, err);
        if (st == ZF_OK && !done && nread != a1 - a0) /* the array shrank: remade next */
            memset(tmp + nread, 0, (size_t)(a1 - a0 - nread));
        if (st == ZF_OK && !done && s->swap)
            swap_items((uint8_t *)tmp, (size_t)(a1 - a0), s->swap);
        if (bounce) {
            if (st == ZF_OK)
                memcpy(dst, tmp + (from - a0), (size_t)(to - from));
            free(tmp);
        }
        if (st != ZF_OK)
            return st;
        pos = s->begin + to;
    }
    if (pos < off + len)
        memset(buf + (pos - off), 0, (size_t)(off + len - pos));
    return ZF_OK;
}

zf_status zf_hierarchy_derived_data(zf_hierarchy *h, zf_node *node, uint64_t off, zf_array **a,
                                    uint64_t *array_off, zf_err *err)
{
    h = zf_h_owner(h, node);
    if (!node->derived || !node->dappend_data || node->synthetic)
        return ZF_ERR_NOT_FOUND;
    zf_h_sidecar_refresh(h, node);
    pthread_mutex_lock(&node->mu);
    uint64_t hlen = node->dhdr_len;
    pthread_mutex_unlock(&node->mu);
    if (off < hlen)
        return ZF_ERR_NOT_FOUND;
    *array_off = off - hlen;
    return appended_array(h, node, a, err);
}

zf_status zf_hierarchy_read_derived(zf_hierarchy *h, zf_node *node, uint64_t off, void *buf,
                                    size_t len, size_t *got, zf_err *err)
{
    *got = 0;
    h = zf_h_owner(h, node);
    if (!node->derived)
        return ZF_ERR_INVALID;
    zf_status vst;
    if (node->synthetic && (vst = zf_h_versions_file_ready(h, node, err)) != ZF_OK)
        return vst; /* (a text of the versions tree: its text is its header, never remade) */
    if (!node->synthetic)
        zf_h_sidecar_refresh(h, node);
    pthread_mutex_lock(&node->mu); /* a refresh may replace the header */
    uint64_t size = node->size, hlen = node->dhdr_len;
    if (off >= size || len == 0) {
        pthread_mutex_unlock(&node->mu);
        return ZF_OK;
    }
    if (len > size - off)
        len = (size_t)(size - off);
    size_t done = 0;
    if (off < hlen) {
        size_t k = hlen - off < len ? (size_t)(hlen - off) : len;
        memcpy(buf, node->dhdr + off, k);
        done = k;
    }
    if (node->dsegs) { /* a group's view: copies of the segments (a refresh may replace them) */
        size_t ns = node->ndsegs;
        zf_view_segment *segs = malloc((ns ? ns : 1) * sizeof *segs);
        if (segs)
            memcpy(segs, node->dsegs, ns * sizeof *segs);
        pthread_mutex_unlock(&node->mu);
        if (!segs)
            return ZF_ERR_NOMEM;
        zf_status st = read_segments(h, segs, ns, off + done, (char *)buf + done, len - done,
                                     err);
        free(segs);
        *got = st == ZF_OK ? len : 0;
        return st;
    }
    pthread_mutex_unlock(&node->mu);
    if (done < len && node->dappend_data) {
        zf_array *a;
        zf_status st = appended_array(h, node, &a, err);
        if (st != ZF_OK)
            return st;
        size_t nread = 0;
        st = zf_array_read(a, off + done - hlen, (char *)buf + done, len - done, &nread, err);
        if (st != ZF_OK)
            return st;
        done += nread;
    }
    *got = done;
    return ZF_OK;
}
