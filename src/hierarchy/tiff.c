/* tiff.c — the header of a TIFF view (-o sidecars=tif, NAME.tif): a TIFF 6.0 or BigTIFF file
 * header and one image file directory (IFD) per page, whose strips point into the array's flat
 * bytes, which follow the header unchanged (uncompressed, one sample per pixel). Pages run over
 * the leading dimensions in C order; the last two dimensions are each page's rows and columns.
 * References: TIFF 6.0 (Adobe, 1992) sections 2 (structure), 8 (baseline fields) and the
 * SampleFormat field of section 19; BigTIFF (libtiff's "BigTIFF design", 2004). */
#include <stdlib.h>
#include <string.h>

#include "hierarchy_impl.h"

enum { T_ASCII = 2, T_SHORT = 3, T_LONG = 4, T_LONG8 = 16 };

#define STRIP_TARGET (1u << 20) /* bytes per strip wanted: no reader loads a plane at once */
#ifndef ZF_TIFF_MAX_HEADER       /* (the fuzz build lowers it: meson.build) */
#define ZF_TIFF_MAX_HEADER (64u << 20)
#endif
#define MAX_HEADER ((uint64_t)ZF_TIFF_MAX_HEADER) /* beyond this many header bytes, no view */
#define DATA_ALIGN 4096u        /* where the pixels start: a page boundary of the view */

typedef struct tiff_writer {
    unsigned char *p;
    bool big_endian, bigtiff;
} tiff_writer;

static void put(tiff_writer *w, uint64_t at, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        unsigned shift = w->big_endian ? 8 * (bytes - 1 - i) : 8 * i;
        w->p[at + i] = (unsigned char)(v >> shift);
    }
}

static unsigned type_size(unsigned type)
{
    return type == T_SHORT ? 2 : type == T_LONG ? 4 : type == T_LONG8 ? 8 : 1;
}

/* One IFD entry at `at`: tag, type, count, then the value inline (when it fits the entry's value
 * field: 4 bytes, BigTIFF 8) or the offset of the values. */
static void entry(tiff_writer *w, uint64_t at, unsigned tag, unsigned type, uint64_t count,
                  uint64_t value)
{
    put(w, at, tag, 2);
    put(w, at + 2, type, 2);
    unsigned field = w->bigtiff ? 8 : 4;
    put(w, at + 4, count, w->bigtiff ? 8 : 4);
    uint64_t vat = at + 4 + field;
    if (count * type_size(type) <= field && type != T_ASCII)
        put(w, vat, value, type_size(type)); /* left-justified in the field */
    else
        put(w, vat, value, field);
}

static uint64_t even(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

/* The layout, computed before anything is written. */
typedef struct layout {
    uint64_t rows, cols, pages, rowbytes, rps, nstrips, last_strip;
    unsigned ntags, field, entry_len;
    uint64_t desc_at, desc_len, counts_at, ifd0_at, ool_len, header;
    bool bigtiff;
} layout;

/* Bytes of an IFD of nt entries. */
static uint64_t ifd_bytes(const layout *L, unsigned nt)
{
    return (L->bigtiff ? 8 : 2) + (uint64_t)nt * L->entry_len + (L->bigtiff ? 8 : 4);
}

/* Width, length, bits, compression, photometric, offsets, samples, rows per strip, byte counts,
 * planar configuration, sample format; the first page also has the description. */
#define NTAGS 11

static bool plan(layout *L, unsigned ndim, const uint64_t *shape, unsigned size, size_t desc_len,
                 bool bigtiff)
{
    memset(L, 0, sizeof *L);
    L->bigtiff = bigtiff;
    L->rows = shape[ndim - 2];
    L->cols = shape[ndim - 1];
    L->pages = 1;
    for (unsigned d = 0; d + 2 < ndim; d++)
        if (__builtin_mul_overflow(L->pages, shape[d], &L->pages))
            return false;
    L->rowbytes = L->cols * size; /* cols < 2^32, size <= 16 */
    uint64_t rps = STRIP_TARGET / L->rowbytes;
    L->rps = rps < 1 ? 1 : rps > L->rows ? L->rows : rps;
    L->nstrips = (L->rows + L->rps - 1) / L->rps;
    L->last_strip = (L->rows - (L->nstrips - 1) * L->rps) * L->rowbytes;
    L->ntags = NTAGS;
    L->field = bigtiff ? 8 : 4;
    L->entry_len = bigtiff ? 20 : 12;
    uint64_t at = bigtiff ? 16 : 8;
    L->desc_len = desc_len + 1; /* with its NUL; always longer than a value field */
    L->desc_at = at;
    at = even(at + L->desc_len);
    uint64_t arr = L->nstrips * L->field; /* offsets and byte counts: LONG or LONG8 each */
    L->ool_len = arr > L->field ? even(arr) : 0; /* else inline */
    L->counts_at = at; /* one byte-count list for every page: they are all alike */
    at += L->ool_len;
    L->ifd0_at = at;
    uint64_t per_page = ifd_bytes(L, NTAGS) + L->ool_len;
    if (L->pages > (MAX_HEADER - at) / per_page)
        return false;
    L->header = at + L->entry_len + L->pages * per_page;
    L->header = (L->header + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    return L->header <= MAX_HEADER;
}

zf_status zf_h_tiff_header(unsigned ndim, const uint64_t *shape, char kind, unsigned size,
                           bool big_endian, const char *description, unsigned char **out,
                           size_t *out_len, const char **why)
{
    if (out)
        *out = NULL;
    if (ndim < 2) {
        *why = "fewer than 2 dimensions";
        return ZF_ERR_NOT_FOUND;
    }
    unsigned format = kind == 'u' ? 1 : kind == 'i' ? 2 : kind == 'f' ? 3 : kind == 'c' ? 6 : 0;
    bool size_ok = kind == 'c' ? size == 8 || size == 16
                   : kind == 'f' ? size == 2 || size == 4 || size == 8
                                 : size == 1 || size == 2 || size == 4 || size == 8;
    if (!format || !size_ok) {
        *why = "a data type TIFF does not have";
        return ZF_ERR_NOT_FOUND;
    }
    uint64_t data = size;
    for (unsigned d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *why = "an empty array";
            return ZF_ERR_NOT_FOUND;
        }
        if (__builtin_mul_overflow(data, shape[d], &data)) {
            *why = "an array too large";
            return ZF_ERR_NOT_FOUND;
        }
    }
    if (shape[ndim - 2] > UINT32_MAX || shape[ndim - 1] > UINT32_MAX) {
        *why = "a plane too large for TIFF";
        return ZF_ERR_NOT_FOUND;
    }
    size_t desc_len = description ? strlen(description) : 0;
    char pad[9];
    if (desc_len < 8) { /* a value that fits an entry's field would have to be inline */
        memset(pad, ' ', 8);
        memcpy(pad, description ? description : "", desc_len);
        pad[8] = '\0';
        description = pad;
        desc_len = 8;
    }
    layout L;
    bool fits = plan(&L, ndim, shape, size, desc_len, false);
    if (!fits || data > UINT32_MAX || L.header > UINT32_MAX - data) /* past 4 GiB: BigTIFF */
        fits = plan(&L, ndim, shape, size, desc_len, true);
    if (!fits || L.header > UINT64_MAX - data) {
        *why = "too many pages or strips for a TIFF header";
        return ZF_ERR_NOT_FOUND;
    }
    if (!out)
        return ZF_OK;
    tiff_writer w = {calloc(1, L.header), big_endian, L.bigtiff};
    if (!w.p)
        return ZF_ERR_NOMEM;
    w.p[0] = w.p[1] = big_endian ? 'M' : 'I';
    if (L.bigtiff) {
        put(&w, 2, 43, 2);
        put(&w, 4, 8, 2); /* bytes per offset */
        put(&w, 8, L.ifd0_at, 8);
    } else {
        put(&w, 2, 42, 2);
        put(&w, 4, L.ifd0_at, 4);
    }
    memcpy(w.p + L.desc_at, description, desc_len); /* the NUL: calloc's */
    unsigned ft = L.bigtiff ? T_LONG8 : T_LONG;
    bool inline_strips = L.ool_len == 0;
    uint64_t counts = inline_strips ? L.last_strip : L.counts_at;
    for (uint64_t s = 0; !inline_strips && s < L.nstrips; s++)
        put(&w, L.counts_at + s * L.field, s + 1 < L.nstrips ? L.rps * L.rowbytes : L.last_strip,
            L.field);
    uint64_t at = L.ifd0_at, plane = L.rows * L.rowbytes;
    for (uint64_t p = 0; p < L.pages; p++) {
        unsigned nt = NTAGS + (p == 0);
        uint64_t offs_at = at + ifd_bytes(&L, nt), first_strip = L.header + p * plane;
        uint64_t offsets = inline_strips ? first_strip : offs_at;
        for (uint64_t s = 0; !inline_strips && s < L.nstrips; s++)
            put(&w, offs_at + s * L.field, first_strip + s * L.rps * L.rowbytes, L.field);
        put(&w, at, nt, L.bigtiff ? 8 : 2);
        uint64_t e = at + (L.bigtiff ? 8 : 2);
#define E(tag, type, count, value) (entry(&w, e, tag, type, count, value), e += L.entry_len)
        E(256, T_LONG, 1, L.cols);                  /* ImageWidth */
        E(257, T_LONG, 1, L.rows);                  /* ImageLength */
        E(258, T_SHORT, 1, size * 8);               /* BitsPerSample (complex: both parts) */
        E(259, T_SHORT, 1, 1);                      /* Compression: none */
        E(262, T_SHORT, 1, 1);                      /* PhotometricInterpretation: BlackIsZero */
        if (p == 0)
            E(270, T_ASCII, L.desc_len, L.desc_at); /* ImageDescription */
        E(273, ft, L.nstrips, offsets);             /* StripOffsets */
        E(277, T_SHORT, 1, 1);                      /* SamplesPerPixel */
        E(278, T_LONG, 1, L.rps);                   /* RowsPerStrip */
        E(279, ft, L.nstrips, counts);              /* StripByteCounts */
        E(284, T_SHORT, 1, 1);                      /* PlanarConfiguration: chunky */
        E(339, T_SHORT, 1, format);                 /* SampleFormat */
#undef E
        uint64_t next = offs_at + L.ool_len;
        put(&w, e, p + 1 < L.pages ? next : 0, L.field); /* the next IFD's offset */
        at = next;
    }
    *out = w.p;
    *out_len = (size_t)L.header;
    return ZF_OK;
}
