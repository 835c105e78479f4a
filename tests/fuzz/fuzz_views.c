/* Fuzz target: the views (src/hierarchy/tiff.c and sidecar.c's OME-XML: -o sidecars=tif;
 * netcdf.c: -o sidecars=nc) built from fuzzed metadata, then parsed back by strict readers here.
 * The input is up to three parts separated by FZ_SEP: an array's .zarray, its .zattrs (xarray's
 * _ARRAY_DIMENSIONS, attributes) and the root group's .zattrs (OME-Zarr multiscales naming the
 * array "a", global attributes). When the hierarchy shows a.tif, its whole header is read and
 * checked: byte order and version, every IFD of the chain inside the header (entries in
 * ascending tag order, known types, values inline exactly when they fit, out-of-line values
 * inside the header), the baseline fields, an ASCII description (7-bit, one NUL at its end), and
 * the strips of every page tiling the bytes after the header in order up to the view's size,
 * which is the header's plus the array's. The root group's fuzz.nc likewise: magic and version,
 * no record dimension, every list's tag and count, names netCDF accepts, attribute types of the
 * version and their values inside the header, variables' dimension ids, sizes (vsize) equal to
 * their shapes' and begins after the header, in order, apart, inside the view; and the first
 * bytes of the variable read through the view equal the array's, byte-swapped where it is
 * little-endian (also '|' or '=' with items of more than one byte: numpy reads them natively). */
#include "fuzz.h"
#include "zarrfs/hierarchy.h"

typedef struct tiff_reader {
    const uint8_t *h;
    uint64_t len;
    bool be, big;
} tiff_reader;

static uint64_t rd(const tiff_reader *r, uint64_t at, unsigned n)
{
    FZ_CHECK(at <= r->len && n <= r->len - at, "read of %u bytes at %llu past the header (%llu)",
             n, (unsigned long long)at, (unsigned long long)r->len);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->h[at + i] << (r->be ? 8 * (n - 1 - i) : 8 * i);
    return v;
}

static unsigned type_bytes(unsigned type)
{
    switch (type) {
    case 2: return 1;  /* ASCII */
    case 3: return 2;  /* SHORT */
    case 4: return 4;  /* LONG */
    case 16: return 8; /* LONG8 */
    default: return 0;
    }
}

typedef struct field {
    unsigned type;
    uint64_t count, at; /* where the values are */
} field;

/* The value k of a field (SHORT, LONG or LONG8). */
static uint64_t value(const tiff_reader *r, const field *f, uint64_t k)
{
    return rd(r, f->at + k * type_bytes(f->type), type_bytes(f->type));
}

static void check_tiff(const uint8_t *h, uint64_t hlen, uint64_t total, uint64_t nbytes,
                       uint64_t want_pages)
{
    tiff_reader r = {h, hlen, false, false};
    FZ_CHECK(hlen >= 16 && (memcmp(h, "II", 2) == 0 || memcmp(h, "MM", 2) == 0), "byte order");
    r.be = h[0] == 'M';
    unsigned version = (unsigned)rd(&r, 2, 2);
    FZ_CHECK(version == 42 || version == 43, "version %u", version);
    r.big = version == 43;
    FZ_CHECK(total - hlen == nbytes, "view %llu bytes, header %llu, array %llu",
             (unsigned long long)total, (unsigned long long)hlen, (unsigned long long)nbytes);
    FZ_CHECK(r.big || total <= UINT32_MAX, "a classic TIFF of %llu bytes",
             (unsigned long long)total);
    unsigned fw = r.big ? 8 : 4, elen = r.big ? 20 : 12;
    if (r.big)
        FZ_CHECK(rd(&r, 4, 2) == 8 && rd(&r, 6, 2) == 0, "BigTIFF offset size");
    uint64_t ifd = r.big ? rd(&r, 8, 8) : rd(&r, 4, 4), pos = hlen, pages = 0, last_ifd = 0;
    while (ifd) {
        FZ_CHECK(ifd > last_ifd && ifd % 2 == 0, "IFD at %llu after %llu",
                 (unsigned long long)ifd, (unsigned long long)last_ifd); /* no loop */
        last_ifd = ifd;
        uint64_t n = rd(&r, ifd, r.big ? 8 : 2), at = ifd + (r.big ? 8 : 2);
        FZ_CHECK(n >= 1 && n <= 64, "%llu entries", (unsigned long long)n);
        field f[340] = {{0}};
        unsigned last = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t e = at + i * elen;
            unsigned tag = (unsigned)rd(&r, e, 2), type = (unsigned)rd(&r, e + 2, 2);
            uint64_t count = rd(&r, e + 4, fw);
            FZ_CHECK(tag > last, "tag %u after %u", tag, last);
            last = tag;
            FZ_CHECK(type_bytes(type) && count >= 1 && count <= hlen, "tag %u: type %u count %llu",
                     tag, type, (unsigned long long)count);
            uint64_t bytes = count * type_bytes(type), vat = e + 4 + fw;
            if (bytes > fw) {
                vat = rd(&r, vat, fw);
                FZ_CHECK(vat % 2 == 0 && vat <= hlen && bytes <= hlen - vat,
                         "tag %u: values at %llu", tag, (unsigned long long)vat);
            }
            if (tag < 340)
                f[tag] = (field){type, count, vat};
            if (type == 2) {
                for (uint64_t k = 0; k + 1 < count; k++)
                    FZ_CHECK(h[vat + k] && h[vat + k] < 0x80, "ASCII byte %u at %llu",
                             h[vat + k], (unsigned long long)k);
                FZ_CHECK(h[vat + count - 1] == 0, "ASCII without its NUL");
            }
        }
        static const unsigned need[] = {256, 257, 258, 259, 262, 273, 277, 278, 279, 284, 339};
        for (size_t i = 0; i < sizeof need / sizeof *need; i++)
            FZ_CHECK(f[need[i]].count, "tag %u missing", need[i]);
        FZ_CHECK(value(&r, &f[259], 0) == 1 && value(&r, &f[277], 0) == 1 &&
                     value(&r, &f[284], 0) == 1, "compression, samples, planar configuration");
        uint64_t cols = value(&r, &f[256], 0), rows = value(&r, &f[257], 0);
        uint64_t bits = value(&r, &f[258], 0), rps = value(&r, &f[278], 0);
        FZ_CHECK(cols && rows && rps && bits % 8 == 0 && bits >= 8 && bits <= 128, "geometry");
        uint64_t nstrips = (rows + rps - 1) / rps, rowbytes = cols * bits / 8;
        FZ_CHECK(f[273].count == nstrips && f[279].count == nstrips, "%llu strips",
                 (unsigned long long)nstrips);
        for (uint64_t k = 0; k < nstrips; k++) {
            uint64_t off = value(&r, &f[273], k), cnt = value(&r, &f[279], k);
            uint64_t want = (k + 1 < nstrips ? rps : rows - k * rps) * rowbytes;
            FZ_CHECK(off == pos && cnt == want, "page %llu strip %llu at %llu (%llu bytes), "
                     "expected %llu (%llu)", (unsigned long long)pages, (unsigned long long)k,
                     (unsigned long long)off, (unsigned long long)cnt,
                     (unsigned long long)pos, (unsigned long long)want);
            pos += cnt;
        }
        pages++;
        ifd = rd(&r, at + n * elen, fw);
    }
    FZ_CHECK(pages == want_pages, "%llu pages, the array has %llu planes",
             (unsigned long long)pages, (unsigned long long)want_pages);
    FZ_CHECK(pos == total, "strips end at %llu, the view at %llu",
             (unsigned long long)pos, (unsigned long long)total);
}

/* ---- netCDF classic ---- */

typedef struct nc_reader {
    const uint8_t *p;
    uint64_t len, at;
    bool v5;
} nc_reader;

static uint64_t nc_u(nc_reader *r, unsigned n)
{
    FZ_CHECK(r->at <= r->len && n <= r->len - r->at, "netCDF header ends at %llu",
             (unsigned long long)r->at);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | r->p[r->at + i];
    r->at += n;
    return v;
}

static uint64_t nc_nonneg(nc_reader *r)
{
    uint64_t v = nc_u(r, r->v5 ? 8 : 4);
    FZ_CHECK(r->v5 ? v <= INT64_MAX : v <= INT32_MAX, "negative count %llu",
             (unsigned long long)v);
    return v;
}

/* Skip n bytes and their padding to 4 (zeros). */
static const uint8_t *nc_skip(nc_reader *r, uint64_t n)
{
    FZ_CHECK(n <= r->len - r->at, "%llu bytes at %llu", (unsigned long long)n,
             (unsigned long long)r->at);
    const uint8_t *p = r->p + r->at;
    r->at += n;
    while (r->at % 4) {
        FZ_CHECK(r->at < r->len && r->p[r->at] == 0, "padding at %llu", (unsigned long long)r->at);
        r->at++;
    }
    return p;
}

static void nc_name(nc_reader *r)
{
    uint64_t n = nc_nonneg(r);
    FZ_CHECK(n >= 1 && n <= 256, "name of %llu bytes", (unsigned long long)n);
    const uint8_t *s = nc_skip(r, n);
    for (uint64_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                  (i > 0 && ((c >= '0' && c <= '9') || strchr(".+-@", c)));
        FZ_CHECK(ok && c, "byte %u in a name", c);
    }
}

static unsigned nc_type_size(unsigned t, bool v5)
{
    static const unsigned size[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
    return t >= 1 && t <= (v5 ? 11u : 6u) ? size[t] : 0;
}

static void nc_atts(nc_reader *r)
{
    uint64_t tag = nc_u(r, 4), n = nc_nonneg(r);
    FZ_CHECK(tag == 12 || (tag == 0 && n == 0), "attribute list tag %llu, %llu",
             (unsigned long long)tag, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        nc_name(r);
        unsigned t = (unsigned)nc_u(r, 4), sz = nc_type_size(t, r->v5);
        FZ_CHECK(sz, "attribute type %u", t);
        uint64_t k = nc_nonneg(r);
        FZ_CHECK(k <= r->len / sz, "%llu values", (unsigned long long)k);
        nc_skip(r, k * sz);
    }
}

static void check_nc(zf_hierarchy *h, zf_node *v, const uint8_t *hd, uint64_t hlen, zf_node *a)
{
    nc_reader r = {hd, hlen, 0, false};
    FZ_CHECK(hlen >= 32 && memcmp(hd, "CDF", 3) == 0 && (hd[3] == 2 || hd[3] == 5), "magic");
    r.v5 = hd[3] == 5;
    r.at = 4;
    FZ_CHECK(nc_nonneg(&r) == 0, "records");
    uint64_t tag = nc_u(&r, 4), ndims = nc_nonneg(&r), dims[64];
    FZ_CHECK((tag == 10 || (tag == 0 && ndims == 0)) && ndims <= 64, "dimensions");
    for (uint64_t i = 0; i < ndims; i++) {
        nc_name(&r);
        dims[i] = nc_nonneg(&r);
        FZ_CHECK(dims[i] >= 1, "dimension %llu of length 0", (unsigned long long)i);
    }
    nc_atts(&r);
    tag = nc_u(&r, 4);
    uint64_t nvars = nc_nonneg(&r), end = 0, first = 0, first_len = 0;
    FZ_CHECK((tag == 11 || (tag == 0 && nvars == 0)) && nvars <= 1, "%llu variables",
             (unsigned long long)nvars);
    for (uint64_t i = 0; i < nvars; i++) {
        nc_name(&r);
        uint64_t nd = nc_nonneg(&r), bytes = 1;
        FZ_CHECK(nd <= 32, "%llu dimensions", (unsigned long long)nd);
        for (uint64_t d = 0; d < nd; d++) {
            uint64_t id = nc_nonneg(&r);
            FZ_CHECK(id < ndims, "dimension id %llu", (unsigned long long)id);
            FZ_CHECK(!__builtin_mul_overflow(bytes, dims[id], &bytes), "size");
        }
        nc_atts(&r);
        unsigned t = (unsigned)nc_u(&r, 4), sz = nc_type_size(t, r.v5);
        FZ_CHECK(sz && !__builtin_mul_overflow(bytes, sz, &bytes), "variable type %u", t);
        uint64_t vsize = nc_nonneg(&r), begin = nc_u(&r, 8);
        FZ_CHECK(vsize == ((bytes + 3) & ~(uint64_t)3), "vsize %llu for %llu bytes",
                 (unsigned long long)vsize, (unsigned long long)bytes);
        FZ_CHECK(bytes == a->size, "variable of %llu bytes, array of %llu",
                 (unsigned long long)bytes, (unsigned long long)a->size);
        FZ_CHECK(begin % 4 == 0 && begin >= end && begin <= v->size && vsize <= v->size - begin,
                 "begin %llu", (unsigned long long)begin);
        end = begin + vsize;
        if (i == 0) {
            first = begin;
            first_len = bytes;
        }
    }
    FZ_CHECK(r.at <= hlen && (nvars == 0 || first >= hlen), "header of %llu bytes, data at %llu",
             (unsigned long long)r.at, (unsigned long long)first);
    FZ_CHECK(v->size == (nvars ? end : hlen), "view of %llu bytes, data end at %llu",
             (unsigned long long)v->size, (unsigned long long)end);
    if (!nvars || !first_len)
        return;
    /* the first bytes through the view are the array's, big-endian */
    uint8_t got[64], want[64];
    size_t n = first_len < sizeof got ? (size_t)first_len : sizeof got, g = 0, w = 0;
    zf_err err = {""};
    zf_array *arr;
    if (zf_hierarchy_read_derived(h, v, first, got, n, &g, &err) != ZF_OK ||
        zf_hierarchy_array(h, a, &arr, &err) != ZF_OK ||
        zf_array_read(arr, 0, want, n, &w, &err) != ZF_OK)
        return; /* (a chunk that does not decode fails both ways) */
    FZ_CHECK(g == n && w == n, "reads of %zu and %zu bytes", g, w);
    const char *ts = a->meta.array.dtype_typestr;
    unsigned isz = a->meta.array.dtype.itemsize;
    if (ts && ts[0] != '>' && isz > 1) /* '|' and '=' of a wider type: little-endian, as numpy */
        for (size_t i = 0; i + isz <= n; i += isz)
            for (unsigned x = 0, y = isz - 1; x < y; x++, y--) {
                uint8_t t = want[i + x];
                want[i + x] = want[i + y];
                want[i + y] = t;
            }
    FZ_CHECK(memcmp(got, want, n / (isz ? isz : 1) * (isz ? isz : 1)) == 0,
             "the view's first bytes are not the array's");
}

/* The whole header of derived node v, read through the hierarchy (malloc'd; NULL when the read
 * fails), checked to be as long as the node says. */
static uint8_t *view_header(zf_hierarchy *h, zf_node *v)
{
    uint64_t hlen = v->dhdr_len;
    uint8_t *buf = malloc(hlen ? hlen : 1);
    size_t got = 0;
    zf_err err = {""};
    if (buf && zf_hierarchy_read_derived(h, v, 0, buf, hlen, &got, &err) != ZF_OK) {
        free(buf);
        return NULL;
    }
    FZ_CHECK(!buf || got == hlen, "header read %zu of %llu bytes", got, (unsigned long long)hlen);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    const uint8_t *p = data, *part[3] = {0};
    size_t n = size, part_n[3] = {0};
    for (int i = 0; i < 3 && n; i++)
        fz_split(&p, &n, FZ_SEP, &part[i], &part_n[i]);
    fz_mem_store *m = fz_mem_new();
    if (!m)
        return 0;
    static const char group[] = "{\"zarr_format\": 2}";
    fz_mem_put(m, ".zgroup", (const uint8_t *)group, sizeof group - 1);
    fz_mem_put(m, "a/.zarray", part[0] ? part[0] : (const uint8_t *)"", part_n[0]);
    if (part[1])
        fz_mem_put(m, "a/.zattrs", part[1], part_n[1]);
    if (part[2])
        fz_mem_put(m, ".zattrs", part[2], part_n[2]);
    fz_mem_seal(m);
    zf_hierarchy_options o = {.cache_size = 1u << 20, .threads = 1, .io_threads = 1,
                              .readahead = 1, .sidecars = ZF_SIDECAR_TIFF | ZF_SIDECAR_NC};
    zf_hierarchy *h;
    zf_err err = {""};
    if (zf_hierarchy_open(&m->base, "fuzz.zarr", &o, &h, &err) != ZF_OK)
        return 0;
    zf_node *v, *a;
    if (zf_hierarchy_lookup(h, "a.tif", &v, &err) == ZF_OK &&
        zf_hierarchy_lookup(h, "a", &a, &err) == ZF_OK) {
        FZ_CHECK(v->derived && v->dappend_data, "a.tif is not a view");
        uint8_t *buf = view_header(h, v);
        uint64_t planes = 1;
        for (unsigned d = 0; d + 2 < a->meta.array.ndim; d++)
            planes *= a->meta.array.shape[d];
        if (buf)
            check_tiff(buf, v->dhdr_len, v->size, a->size, planes);
        free(buf);
    }
    if (zf_hierarchy_lookup(h, "fuzz.nc", &v, &err) == ZF_OK &&
        zf_hierarchy_lookup(h, "a", &a, &err) == ZF_OK && !a->is_dir) {
        FZ_CHECK(v->derived && v->dsegs, "fuzz.nc is not a group's view");
        uint8_t *buf = view_header(h, v);
        if (buf)
            check_nc(h, v, buf, v->dhdr_len, a);
        free(buf);
    }
    zf_hierarchy_free(h);
    return 0;
}
