/* icechunk_fb.cc — the Icechunk file-format reader of include/zarrfs/icechunk.h (specification
 * versions 1 and 2, "Binary File Format", "File Formats"): the 39-byte header, the zstd payload
 * decompressed within ZF_IC_MAX_PAYLOAD, the FlatBuffers tables read through the code flatc
 * generates from icechunk.fbs, and the repository configuration's FlexBuffer.
 *
 * The only C++ file of zarrfs. Order of work on every file: header, decompression, the
 * FlatBuffers verifier over the whole payload (bounds below), then the checks the verifier cannot
 * make (indexes into lists, sort orders, node paths, dimension counts); only then do accessors
 * read fields, without further checks. Nothing here throws into C: the functions that allocate
 * with C++ (the FlexBuffer verifier's tracker) catch std::bad_alloc; the rest allocate with
 * malloc.
 *
 * Verifier bounds: depth 64 (tables and vectors nested; Icechunk's files nest 6 deep) and at most
 * len / 4 + 1000 tables visited for a payload of len bytes — every table takes at least 4 bytes,
 * so a file that is a tree passes, while a file that makes tables shared many times over (a DAG
 * whose walk is far longer than the file) is refused; the verifier's work stays linear in len.
 * The checks after it are linear too: a sorted list holds each string or index vector once. */
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <flatbuffers/flatbuffers.h>
#include <flatbuffers/flexbuffers.h>
#include <zstd.h>

#include "icechunk_impl.h" /* zarrfs/icechunk.h, with C linkage */

#include "icechunk_generated.h"

namespace fb = zf_icfb;

namespace {

const uint8_t MAGIC[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7, 0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};
const size_t ZSTD_BLOCK_MAX = 131072; /* RFC 8878: a block regenerates at most 128 KiB */

const char *file_type_name(unsigned t)
{
    switch (t) {
    case ZF_IC_FILE_SNAPSHOT: return "snapshot";
    case ZF_IC_FILE_MANIFEST: return "manifest";
    case ZF_IC_FILE_TXLOG: return "transaction log";
    case ZF_IC_FILE_REPO: return "repo info";
    }
    return "unknown";
}

/* Up to 64 bytes of s for a message: printable ASCII kept, anything else as '?'. */
const char *shown(const char *s, size_t n, char out[80])
{
    size_t k = 0;
    for (; k < n && k < 64; k++)
        out[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
    if (k < n)
        out[k++] = '.', out[k++] = '.', out[k++] = '.';
    out[k] = '\0';
    return out;
}

const char *hex(const uint8_t *b, size_t n, char out[32])
{
    static const char digits[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < n && i < 15; i++) {
        out[k++] = digits[b[i] >> 4];
        out[k++] = digits[b[i] & 15];
    }
    out[k] = '\0';
    return out;
}

int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn;
}

int cmp_str(const flatbuffers::String *a, const flatbuffers::String *b)
{
    return cmp_bytes(a->data(), a->size(), b->data(), b->size());
}

/* The header, the file type, then the payload decompressed into a malloc'd buffer. */
zf_status load(const uint8_t *data, size_t len, uint8_t type, zf_ic_header *h, uint8_t **buf,
               size_t *n, zf_err *err)
{
    zf_status st = zf_ic_header_parse(data, len, h, err);
    if (st != ZF_OK)
        return st;
    if (h->file_type != type)
        return zf_fail(err, ZF_ERR_CORRUPT, "a %s file (type %u) where a %s file was expected",
                       file_type_name(h->file_type), h->file_type, file_type_name(type));
    const uint8_t *p = data + ZF_IC_HEADER_LEN;
    size_t pn = len - ZF_IC_HEADER_LEN;
    if (h->compression == 1) {
        st = zf_ic_zstd_bounded(p, pn, ZF_IC_MAX_PAYLOAD, buf, n, err);
        if (st != ZF_OK)
            zf_err_prefix(err, "%s file payload", file_type_name(type));
        return st;
    }
    if (pn > ZF_IC_MAX_PAYLOAD)
        return zf_fail(err, ZF_ERR_TOO_LARGE, "%s file payload of %zu bytes (bound %zu)",
                       file_type_name(type), pn, (size_t)ZF_IC_MAX_PAYLOAD);
    *buf = static_cast<uint8_t *>(malloc(pn ? pn : 1));
    if (!*buf)
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    if (pn)
        memcpy(*buf, p, pn);
    *n = pn;
    return ZF_OK;
}

/* The FlatBuffers verifier over the whole payload, root table T (see the top of the file). */
template <typename T> bool verify(const uint8_t *buf, size_t n)
{
    flatbuffers::Verifier::Options o;
    o.max_depth = 64;
    o.max_tables = static_cast<flatbuffers::uoffset_t>(n / 4 + 1000);
    o.check_alignment = true;
    flatbuffers::Verifier v(buf, n, o);
    return v.VerifyBuffer<T>(nullptr);
}

/* load + verify: the root table of a verified payload. */
template <typename T>
zf_status open_file(const uint8_t *data, size_t len, uint8_t type, zf_ic_header *h, uint8_t **buf,
                    size_t *n, const T **root, zf_err *err)
{
    zf_status st = load(data, len, type, h, buf, n, err);
    if (st != ZF_OK)
        return st;
    if (!verify<T>(*buf, *n)) {
        free(*buf);
        *buf = nullptr;
        return zf_fail(err, ZF_ERR_CORRUPT, "%s file: refused by the FlatBuffers verifier",
                       file_type_name(type));
    }
    *root = flatbuffers::GetRoot<T>(*buf);
    return ZF_OK;
}

/* A node path as the specification defines it ("Node Paths"): "/" or "/" + segments joined by
 * "/", none empty, "." or ".."; no trailing "/"; no NUL (the accessors hand out C strings). */
bool valid_path(const char *p, size_t n)
{
    if (n == 0 || p[0] != '/' || memchr(p, '\0', n))
        return false;
    if (n == 1)
        return true;
    size_t start = 1;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && p[i] != '/')
            continue;
        size_t sl = i - start;
        if (sl == 0 || (sl == 1 && p[start] == '.') ||
            (sl == 2 && p[start] == '.' && p[start + 1] == '.'))
            return false;
        start = i + 1;
    }
    return true;
}

zf_status check_refs(const flatbuffers::Vector<flatbuffers::Offset<fb::Ref>> *refs,
                     const char *what, size_t nsnap, zf_err *err)
{
    char a[80];
    for (flatbuffers::uoffset_t i = 0; i < refs->size(); i++) {
        const fb::Ref *r = refs->Get(i);
        const flatbuffers::String *name = r->name();
        if (name->size() == 0 || memchr(name->data(), '\0', name->size()))
            return zf_fail(err, ZF_ERR_CORRUPT, "repo info file: %s %u: empty name or a NUL in it",
                           what, i);
        if (i > 0 && cmp_str(refs->Get(i - 1)->name(), name) >= 0)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "repo info file: %ss not sorted by name (at \"%s\")", what,
                           shown(name->c_str(), name->size(), a));
        if (r->snapshot_index() >= nsnap)
            return zf_fail(err, ZF_ERR_CORRUPT,
                           "repo info file: %s \"%s\": snapshot index %" PRIu32
                           " outside the %zu snapshots",
                           what, shown(name->c_str(), name->size(), a), r->snapshot_index(), nsnap);
    }
    return ZF_OK;
}

/* Binary search of a sorted vector of names (Ref tables, or strings). */
const flatbuffers::String *name_of(const fb::Ref *r) { return r->name(); }
const flatbuffers::String *name_of(const flatbuffers::String *s) { return s; }

template <typename V> bool find_name(const V *v, const char *name, size_t *index)
{
    size_t nl = strlen(name), lo = 0, hi = v->size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const flatbuffers::String *s = name_of(v->Get(static_cast<flatbuffers::uoffset_t>(mid)));
        int c = cmp_bytes(s->data(), s->size(), name, nl);
        if (c == 0) {
            *index = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

} // namespace

/* ----- the handles ----- */

struct zf_ic_repo {
    uint8_t *buf; /* the payload */
    size_t len;
    const fb::Repo *root;
};

struct zf_ic_snapshot {
    uint8_t *buf;
    size_t len;
    const fb::Snapshot *root;
    uint8_t spec_version; /* the header's */
};

struct zf_ic_manifest {
    uint8_t *buf;
    size_t len;
    const fb::Manifest *root;
    ZSTD_DDict *dict; /* the location dictionary, when compressed locations need it */
    size_t nrefs;
};

/* ----- zstd ----- */

zf_status zf_ic_zstd_bounded(const uint8_t *src, size_t n, size_t bound, uint8_t **out,
                             size_t *out_len, zf_err *err)
{
    *out = nullptr;
    *out_len = 0;
    if (n == 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "no zstd frame");
    /* the frames' content sizes added up, ZSTD_CONTENTSIZE_UNKNOWN when one does not say */
    unsigned long long total = 0;
    for (size_t at = 0; at < n;) {
        unsigned long long fcs = ZSTD_getFrameContentSize(src + at, n - at);
        size_t fl = ZSTD_findFrameCompressedSize(src + at, n - at);
        if (fcs == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(fl) || fl == 0)
            return zf_fail(err, ZF_ERR_CORRUPT, "not a zstd frame, or a truncated one, at byte "
                                                "%zu", at);
        if (fcs == ZSTD_CONTENTSIZE_UNKNOWN)
            total = ZSTD_CONTENTSIZE_UNKNOWN;
        else if (total != ZSTD_CONTENTSIZE_UNKNOWN)
            total = fcs > SIZE_MAX - total ? (unsigned long long)SIZE_MAX : total + fcs;
        at += fl;
    }
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    uint8_t *buf = nullptr;
    size_t pos = 0;
    zf_status st = ZF_OK;
    if (total != ZSTD_CONTENTSIZE_UNKNOWN) {
        /* sizes declared: checked before allocating; one call decodes every frame */
        if (total / ZSTD_BLOCK_MAX > n / 3 + 1) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "zstd frames declare %llu bytes, more than %zu bytes of frames hold",
                         total, n);
        } else if (total > bound) {
            st = zf_fail(err, ZF_ERR_TOO_LARGE, "%llu bytes decompressed (bound %zu)", total,
                         bound);
        } else if (!(buf = static_cast<uint8_t *>(malloc(total ? (size_t)total : 1)))) {
            st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
        } else {
            size_t r = ZSTD_decompressDCtx(d, buf, (size_t)total, src, n);
            if (ZSTD_isError(r))
                st = zf_fail(err, ZF_ERR_CORRUPT, "zstd: %s", ZSTD_getErrorName(r));
            else if (r != total)
                st = zf_fail(err, ZF_ERR_CORRUPT, "zstd: %zu bytes decompressed, %llu declared",
                             r, total);
            pos = r;
        }
    } else {
        /* a frame without its size: stream into a growing buffer, at most bound + 1 bytes */
        size_t limit = bound < SIZE_MAX ? bound + 1 : bound;
        size_t cap = n < (SIZE_MAX - 65536) / 4 ? 4 * n + 65536 : limit;
        if (cap > limit)
            cap = limit;
        buf = static_cast<uint8_t *>(malloc(cap ? cap : 1));
        if (!buf)
            st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
        ZSTD_inBuffer in = {src, n, 0};
        while (st == ZF_OK) {
            if (pos == cap) {
                if (cap >= limit) {
                    st = zf_fail(err, ZF_ERR_TOO_LARGE, "more than %zu bytes decompressed",
                                 bound);
                    break;
                }
                size_t ncap = cap <= limit / 2 ? 2 * cap : limit;
                uint8_t *nb = static_cast<uint8_t *>(realloc(buf, ncap));
                if (!nb) {
                    st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
                    break;
                }
                buf = nb, cap = ncap;
            }
            ZSTD_outBuffer o = {buf, cap, pos};
            size_t r = ZSTD_decompressStream(d, &o, &in);
            if (ZSTD_isError(r)) {
                st = zf_fail(err, ZF_ERR_CORRUPT, "zstd: %s", ZSTD_getErrorName(r));
                break;
            }
            pos = o.pos;
            if (pos > bound) {
                st = zf_fail(err, ZF_ERR_TOO_LARGE, "more than %zu bytes decompressed", bound);
                break;
            }
            if (in.pos == in.size && pos < cap) {
                /* all input read and the output not full: the last frame ended, or it is cut */
                if (r != 0)
                    st = zf_fail(err, ZF_ERR_CORRUPT, "zstd: truncated frame");
                break;
            }
        }
    }
    ZSTD_freeDCtx(d);
    if (st != ZF_OK) {
        free(buf);
        return st;
    }
    uint8_t *nb = static_cast<uint8_t *>(realloc(buf, pos ? pos : 1)); /* the unused rest */
    if (nb)
        buf = nb;
    *out = buf;
    *out_len = pos;
    return ZF_OK;
}

/* ----- the header ----- */

zf_status zf_ic_header_parse(const uint8_t *data, size_t len, zf_ic_header *out, zf_err *err)
{
    size_t m = len < sizeof MAGIC ? len : sizeof MAGIC;
    if (len == 0 || memcmp(data, MAGIC, m) != 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "not an Icechunk file (no ICE\xf0\x9f\xa7\x8a"
                                            "CHUNK magic)");
    if (len < ZF_IC_HEADER_LEN)
        return zf_fail(err, ZF_ERR_CORRUPT, "truncated Icechunk header (%zu of %d bytes)", len,
                       ZF_IC_HEADER_LEN);
    memset(out, 0, sizeof *out);
    size_t wl = 24;
    const char *w = reinterpret_cast<const char *>(data + 12);
    const char *nul = static_cast<const char *>(memchr(w, '\0', wl));
    if (nul)
        wl = (size_t)(nul - w);
    while (wl > 0 && w[wl - 1] == ' ')
        wl--;
    memcpy(out->writer, w, wl);
    out->writer[wl] = '\0';
    out->spec_version = data[36];
    out->file_type = data[37];
    out->compression = data[38];
    if (out->spec_version != 1 && out->spec_version != 2)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "Icechunk specification version %u (zarrfs reads "
                                                "1 and 2)", out->spec_version);
    if (out->compression > 1)
        return zf_fail(err, ZF_ERR_UNSUPPORTED, "Icechunk compression algorithm %u (zarrfs "
                                                "reads 0, none, and 1, zstd)", out->compression);
    return ZF_OK;
}

/* ----- the repo info file ----- */

zf_status zf_ic_repo_parse(const uint8_t *data, size_t len, zf_ic_repo **out, zf_err *err)
{
    *out = nullptr;
    zf_ic_header h;
    uint8_t *buf = nullptr;
    size_t n = 0;
    const fb::Repo *root = nullptr;
    zf_status st = open_file(data, len, ZF_IC_FILE_REPO, &h, &buf, &n, &root, err);
    if (st != ZF_OK)
        return st;
    const auto *snaps = root->snapshots();
    size_t nsnap = snaps->size();
    char a[32], b[80];
    for (flatbuffers::uoffset_t i = 0; i < nsnap && st == ZF_OK; i++) {
        const fb::SnapshotInfo *s = snaps->Get(i);
        const uint8_t *id = s->id()->bytes()->data();
        int32_t p = s->parent_offset();
        if (i > 0 && memcmp(snaps->Get(i - 1)->id()->bytes()->data(), id, ZF_IC_ID_LEN) >= 0)
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "repo info file: snapshots not sorted by id (at %s)",
                         hex(id, ZF_IC_ID_LEN, a));
        else if (p != -1 && (p < 0 || (uint32_t)p >= nsnap))
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "repo info file: snapshot %s: parent index %" PRId32
                         " outside the %zu snapshots",
                         hex(id, ZF_IC_ID_LEN, a), p, nsnap);
    }
    if (st == ZF_OK)
        st = check_refs(root->tags(), "tag", nsnap, err);
    if (st == ZF_OK)
        st = check_refs(root->branches(), "branch", nsnap, err);
    const auto *del = root->deleted_tags();
    for (flatbuffers::uoffset_t i = 1; i < del->size() && st == ZF_OK; i++)
        if (cmp_str(del->Get(i - 1), del->Get(i)) >= 0)
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "repo info file: deleted tags not sorted (at \"%s\")",
                         shown(del->Get(i)->c_str(), del->Get(i)->size(), b));
    zf_ic_repo *r = nullptr;
    if (st == ZF_OK && !(r = static_cast<zf_ic_repo *>(calloc(1, sizeof *r))))
        st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    if (st != ZF_OK) {
        free(buf);
        return st;
    }
    r->buf = buf;
    r->len = n;
    r->root = root;
    *out = r;
    return ZF_OK;
}

void zf_ic_repo_free(zf_ic_repo *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

uint8_t zf_ic_repo_spec_version(const zf_ic_repo *r) { return r->root->spec_version(); }

size_t zf_ic_repo_nsnapshots(const zf_ic_repo *r) { return r->root->snapshots()->size(); }

void zf_ic_repo_snapshot(const zf_ic_repo *r, size_t i, zf_ic_snapshot_info *out)
{
    const fb::SnapshotInfo *s = r->root->snapshots()->Get(static_cast<flatbuffers::uoffset_t>(i));
    memcpy(out->id, s->id()->bytes()->data(), ZF_IC_ID_LEN);
    out->parent = s->parent_offset() < 0 ? -1 : s->parent_offset();
    out->flushed_at = s->flushed_at();
    out->message = s->message()->c_str();
}

bool zf_ic_repo_find_snapshot(const zf_ic_repo *r, const uint8_t id[ZF_IC_ID_LEN], size_t *index)
{
    const auto *snaps = r->root->snapshots();
    size_t lo = 0, hi = snaps->size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(snaps->Get(static_cast<flatbuffers::uoffset_t>(mid))->id()->bytes()->data(),
                       id, ZF_IC_ID_LEN);
        if (c == 0) {
            *index = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

size_t zf_ic_repo_nrefs(const zf_ic_repo *r, bool tags)
{
    return (tags ? r->root->tags() : r->root->branches())->size();
}

void zf_ic_repo_ref(const zf_ic_repo *r, bool tags, size_t i, const char **name,
                    size_t *snapshot_index)
{
    const fb::Ref *ref =
        (tags ? r->root->tags() : r->root->branches())->Get(static_cast<flatbuffers::uoffset_t>(i));
    *name = ref->name()->c_str();
    *snapshot_index = ref->snapshot_index();
}

bool zf_ic_repo_lookup_ref(const zf_ic_repo *r, bool tags, const char *name, size_t *index)
{
    size_t i, d;
    if (tags && find_name(r->root->deleted_tags(), name, &d))
        return false;
    if (!find_name(tags ? r->root->tags() : r->root->branches(), name, &i))
        return false;
    *index = (tags ? r->root->tags() : r->root->branches())
                 ->Get(static_cast<flatbuffers::uoffset_t>(i))
                 ->snapshot_index();
    return true;
}

/* ----- the configuration's FlexBuffer ----- */

namespace {

/* What the walk of the FlexBuffer may copy out (bytes): 16 times the buffer plus 4 KiB. A
 * FlexBuffer may share one string or map among many parents; copies of it must not grow with
 * the square of the file. */
struct flex_walk {
    const uint8_t *lo, *hi; /* the FlexBuffer */
    size_t budget;
    zf_err *err;
};

/* Key i of a map, checked to end with a NUL inside the buffer (the verifier of FlatBuffers
 * 2.0.8 does not check that: its VerifyKey accepts a key at the first non-zero byte). */
const char *flex_key(const flex_walk &w, const flexbuffers::TypedVector &keys, size_t i)
{
    flexbuffers::Reference k = keys[i];
    if (!k.IsKey())
        return nullptr;
    const uint8_t *p = reinterpret_cast<const uint8_t *>(k.AsKey());
    if (p < w.lo || p >= w.hi || !memchr(p, '\0', (size_t)(w.hi - p)))
        return nullptr;
    return reinterpret_cast<const char *>(p);
}

size_t flex_map_size(const flexbuffers::Map &m)
{
    size_t a = m.Keys().size(), b = m.Values().size();
    return a < b ? a : b;
}

/* The value of key in map m (keys are sorted: binary search). false: a malformed key; *found
 * false: no such key. */
bool flex_get(const flex_walk &w, const flexbuffers::Map &m, const char *key,
              flexbuffers::Reference *out, bool *found)
{
    flexbuffers::TypedVector keys = m.Keys();
    size_t lo = 0, hi = flex_map_size(m);
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k = flex_key(w, keys, mid);
        if (!k)
            return false;
        int c = strcmp(k, key);
        if (c == 0) {
            *out = m.Values()[mid];
            *found = true;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return true;
}

zf_status flex_copy(flex_walk &w, const char *s, size_t n, char **out)
{
    if (memchr(s, '\0', n))
        return zf_fail(w.err, ZF_ERR_CORRUPT, "a NUL inside a string");
    if (n + 1 > w.budget)
        return zf_fail(w.err, ZF_ERR_CORRUPT, "more text than the configuration holds");
    w.budget -= n + 1;
    char *c = static_cast<char *>(malloc(n + 1));
    if (!c)
        return zf_fail(w.err, ZF_ERR_NOMEM, "out of memory");
    memcpy(c, s, n);
    c[n] = '\0';
    *out = c;
    return ZF_OK;
}

/* An optional string field: absent or null leaves *out NULL. */
zf_status flex_string(flex_walk &w, const flexbuffers::Map &m, const char *key, char **out,
                      bool required)
{
    flexbuffers::Reference v;
    bool found;
    if (!flex_get(w, m, key, &v, &found))
        return zf_fail(w.err, ZF_ERR_CORRUPT, "a malformed key");
    if (!found || v.IsNull()) {
        if (required)
            return zf_fail(w.err, ZF_ERR_CORRUPT, "no \"%s\"", key);
        return ZF_OK;
    }
    if (v.GetType() != flexbuffers::FBT_STRING)
        return zf_fail(w.err, ZF_ERR_CORRUPT, "\"%s\" is not a string", key);
    flexbuffers::String s = v.AsString();
    return flex_copy(w, s.c_str(), s.size(), out);
}

zf_status flex_bool(flex_walk &w, const flexbuffers::Map &m, const char *key, bool *out)
{
    flexbuffers::Reference v;
    bool found;
    if (!flex_get(w, m, key, &v, &found))
        return zf_fail(w.err, ZF_ERR_CORRUPT, "a malformed key");
    if (!found || v.IsNull())
        *out = false;
    else if (v.IsBool() || v.IsIntOrUint())
        *out = v.AsUInt64() != 0;
    else
        return zf_fail(w.err, ZF_ERR_CORRUPT, "\"%s\" is not a boolean", key);
    return ZF_OK;
}

/* One container: {"name", "url_prefix", "store": {KIND: options}} (or "store": "KIND"). */
zf_status flex_container(flex_walk &w, flexbuffers::Reference v, zf_ic_config *out)
{
    if (!v.IsMap())
        return zf_fail(w.err, ZF_ERR_CORRUPT, "not a map");
    if (w.budget < sizeof(zf_ic_container))
        return zf_fail(w.err, ZF_ERR_CORRUPT, "more containers than the configuration holds");
    w.budget -= sizeof(zf_ic_container);
    zf_ic_container *c = zf_ic_config_push(out);
    if (!c)
        return zf_fail(w.err, ZF_ERR_NOMEM, "out of memory");
    flexbuffers::Map m = v.AsMap();
    zf_status st;
    if ((st = flex_string(w, m, "name", &c->name, false)) != ZF_OK ||
        (st = flex_string(w, m, "url_prefix", &c->url_prefix, true)) != ZF_OK)
        return st;
    flexbuffers::Reference store;
    bool found;
    if (!flex_get(w, m, "store", &store, &found))
        return zf_fail(w.err, ZF_ERR_CORRUPT, "a malformed key");
    if (!found || store.IsNull())
        return zf_fail(w.err, ZF_ERR_CORRUPT, "no \"store\"");
    if (store.GetType() == flexbuffers::FBT_STRING) { /* a store kind without options */
        flexbuffers::String s = store.AsString();
        return flex_copy(w, s.c_str(), s.size(), &c->kind);
    }
    if (!store.IsMap() || flex_map_size(store.AsMap()) != 1)
        return zf_fail(w.err, ZF_ERR_CORRUPT, "\"store\" is not a map of one store kind");
    flexbuffers::Map sm = store.AsMap();
    const char *kind = flex_key(w, sm.Keys(), 0);
    if (!kind)
        return zf_fail(w.err, ZF_ERR_CORRUPT, "a malformed key");
    if ((st = flex_copy(w, kind, strlen(kind), &c->kind)) != ZF_OK)
        return st;
    flexbuffers::Reference opts = sm.Values()[0];
    if (!opts.IsMap()) /* e.g. local_file_system's "" or gcs' empty options */
        return ZF_OK;
    flexbuffers::Map om = opts.AsMap();
    if ((st = flex_string(w, om, "endpoint_url", &c->endpoint_url, false)) != ZF_OK ||
        (st = flex_string(w, om, "region", &c->region, false)) != ZF_OK ||
        (st = flex_string(w, om, "account", &c->account, false)) != ZF_OK ||
        (st = flex_bool(w, om, "anonymous", &c->anonymous)) != ZF_OK ||
        (st = flex_bool(w, om, "allow_http", &c->allow_http)) != ZF_OK ||
        (st = flex_bool(w, om, "force_path_style", &c->force_path_style)) != ZF_OK)
        return st;
    return ZF_OK;
}

zf_status repo_config(const zf_ic_repo *r, zf_ic_config *out, zf_err *err)
{
    const flatbuffers::Vector<uint8_t> *cfg = r->root->config();
    if (!cfg || cfg->size() == 0)
        return ZF_OK;
    const uint8_t *p = cfg->data();
    size_t n = cfg->size();
    /* the reuse tracker makes the verifier visit each shared vector once (linear work) */
    std::vector<uint8_t> tracker;
    if (!flexbuffers::VerifyBuffer(p, n, &tracker))
        return zf_fail(err, ZF_ERR_CORRUPT, "repository configuration: refused by the "
                                            "FlexBuffers verifier");
    flex_walk w = {p, p + n, n < (SIZE_MAX - 4096) / 16 ? 16 * n + 4096 : SIZE_MAX, err};
    flexbuffers::Reference root = flexbuffers::GetRoot(p, n);
    if (root.IsNull())
        return ZF_OK;
    if (!root.IsMap())
        return zf_fail(err, ZF_ERR_CORRUPT, "repository configuration: not a map");
    flexbuffers::Reference vcc;
    bool found;
    if (!flex_get(w, root.AsMap(), "virtual_chunk_containers", &vcc, &found))
        return zf_fail(err, ZF_ERR_CORRUPT, "repository configuration: a malformed key");
    if (!found || vcc.IsNull())
        return ZF_OK;
    flexbuffers::Vector list = vcc.IsMap() ? vcc.AsMap().Values() : vcc.AsVector();
    if (!vcc.IsMap() && vcc.GetType() != flexbuffers::FBT_VECTOR)
        return zf_fail(err, ZF_ERR_CORRUPT, "repository configuration: "
                                            "\"virtual_chunk_containers\" is not a map");
    for (size_t i = 0; i < list.size(); i++) {
        zf_status st = flex_container(w, list[i], out);
        if (st != ZF_OK) {
            zf_err_prefix(err, "repository configuration: virtual chunk container %zu", i);
            return st;
        }
    }
    return ZF_OK;
}

} // namespace

zf_status zf_ic_repo_config(const zf_ic_repo *r, zf_ic_config *out, zf_err *err)
{
    out->containers = nullptr;
    out->n = 0;
    zf_status st;
    try {
        st = repo_config(r, out, err);
    } catch (const std::bad_alloc &) {
        st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    } catch (...) {
        st = zf_fail(err, ZF_ERR_CORRUPT, "repository configuration: unreadable");
    }
    if (st != ZF_OK)
        zf_ic_config_free(out);
    return st;
}

/* ----- snapshot files ----- */

zf_status zf_ic_snapshot_parse(const uint8_t *data, size_t len, zf_ic_snapshot **out,
                               zf_err *err)
{
    *out = nullptr;
    zf_ic_header h;
    uint8_t *buf = nullptr;
    size_t n = 0;
    const fb::Snapshot *root = nullptr;
    zf_status st = open_file(data, len, ZF_IC_FILE_SNAPSHOT, &h, &buf, &n, &root, err);
    if (st != ZF_OK)
        return st;
    const auto *nodes = root->nodes();
    char a[80];
    for (flatbuffers::uoffset_t i = 0; i < nodes->size() && st == ZF_OK; i++) {
        const fb::NodeSnapshot *node = nodes->Get(i);
        const flatbuffers::String *path = node->path();
        const char *shown_path = shown(path->c_str(), path->size(), a);
        if (!valid_path(path->c_str(), path->size())) {
            st = zf_fail(err, ZF_ERR_CORRUPT, "snapshot file: invalid node path \"%s\"",
                         shown_path);
            break;
        }
        if (i > 0 && cmp_str(nodes->Get(i - 1)->path(), path) >= 0) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "snapshot file: nodes not sorted by path (at \"%s\")", shown_path);
            break;
        }
        if (node->node_data_type() == fb::NodeData_Group)
            continue;
        const fb::ArrayNodeData *arr = node->node_data_as_Array();
        if (!arr) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "snapshot file: node \"%s\" is neither an array nor a group (%u)",
                         shown_path, (unsigned)node->node_data_type());
            break;
        }
        size_t ndim = arr->shape_v2() ? arr->shape_v2()->size() : arr->shape()->size();
        if (ndim > ZF_MAX_DIMS) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "snapshot file: array \"%s\" of %zu dimensions (at most %d)", shown_path,
                         ndim, ZF_MAX_DIMS);
            break;
        }
        const auto *mrefs = arr->manifests();
        for (flatbuffers::uoffset_t j = 0; j < mrefs->size() && st == ZF_OK; j++) {
            const auto *ext = mrefs->Get(j)->extents();
            if (ext->size() > ZF_MAX_DIMS)
                st = zf_fail(err, ZF_ERR_CORRUPT,
                             "snapshot file: array \"%s\": manifest extents of %u dimensions",
                             shown_path, ext->size());
            for (flatbuffers::uoffset_t k = 0; k < ext->size() && st == ZF_OK; k++)
                if (ext->Get(k)->from() > ext->Get(k)->to())
                    st = zf_fail(err, ZF_ERR_CORRUPT,
                                 "snapshot file: array \"%s\": manifest extent [%" PRIu32
                                 ", %" PRIu32 ") runs backwards",
                                 shown_path, ext->Get(k)->from(), ext->Get(k)->to());
        }
    }
    zf_ic_snapshot *s = nullptr;
    if (st == ZF_OK && !(s = static_cast<zf_ic_snapshot *>(calloc(1, sizeof *s))))
        st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    if (st != ZF_OK) {
        free(buf);
        return st;
    }
    s->buf = buf;
    s->len = n;
    s->root = root;
    s->spec_version = h.spec_version;
    *out = s;
    return ZF_OK;
}

void zf_ic_snapshot_free(zf_ic_snapshot *s)
{
    if (!s)
        return;
    free(s->buf);
    free(s);
}

void zf_ic_snapshot_get_head(const zf_ic_snapshot *s, zf_ic_snapshot_head *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->id, s->root->id()->bytes()->data(), ZF_IC_ID_LEN);
    if (const fb::ObjectId12 *p = s->root->parent_id()) {
        out->has_parent = true;
        memcpy(out->parent, p->bytes()->data(), ZF_IC_ID_LEN);
    }
    out->flushed_at = s->root->flushed_at();
    out->message = s->root->message()->c_str();
    out->spec_version = s->spec_version;
}

size_t zf_ic_snapshot_nnodes(const zf_ic_snapshot *s) { return s->root->nodes()->size(); }

void zf_ic_snapshot_node(const zf_ic_snapshot *s, size_t i, zf_ic_node *out)
{
    const fb::NodeSnapshot *node = s->root->nodes()->Get(static_cast<flatbuffers::uoffset_t>(i));
    memset(out, 0, sizeof *out);
    out->path = node->path()->c_str();
    out->path_len = node->path()->size();
    memcpy(out->id, node->id()->bytes()->data(), ZF_IC_NODE_ID_LEN);
    out->user_data = node->user_data()->data();
    out->user_data_len = node->user_data()->size();
    if (const fb::ArrayNodeData *arr = node->node_data_as_Array()) {
        out->is_array = true;
        out->ndim = arr->shape_v2() ? arr->shape_v2()->size() : arr->shape()->size();
        out->nmanifests = arr->manifests()->size();
    }
}

bool zf_ic_snapshot_find(const zf_ic_snapshot *s, const char *path, size_t len, size_t *index)
{
    const auto *nodes = s->root->nodes();
    size_t lo = 0, hi = nodes->size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const flatbuffers::String *p = nodes->Get(static_cast<flatbuffers::uoffset_t>(mid))->path();
        int c = cmp_bytes(p->data(), p->size(), path, len);
        if (c == 0) {
            *index = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

void zf_ic_snapshot_manifest_ref(const zf_ic_snapshot *s, size_t i, size_t j,
                                 zf_ic_manifest_ref *out)
{
    const fb::NodeSnapshot *node = s->root->nodes()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const fb::ManifestRef *m =
        node->node_data_as_Array()->manifests()->Get(static_cast<flatbuffers::uoffset_t>(j));
    memset(out, 0, sizeof *out);
    memcpy(out->id, m->object_id()->bytes()->data(), ZF_IC_ID_LEN);
    const auto *ext = m->extents();
    out->ndim = ext->size();
    for (size_t k = 0; k < out->ndim; k++) {
        out->from[k] = ext->Get(static_cast<flatbuffers::uoffset_t>(k))->from();
        out->to[k] = ext->Get(static_cast<flatbuffers::uoffset_t>(k))->to();
    }
}

size_t zf_ic_snapshot_bytes(const zf_ic_snapshot *s) { return sizeof *s + s->len; }

/* ----- manifest files ----- */

namespace {

int cmp_index(const flatbuffers::Vector<uint32_t> *a, const flatbuffers::Vector<uint32_t> *b)
{
    flatbuffers::uoffset_t n = a->size() < b->size() ? a->size() : b->size();
    for (flatbuffers::uoffset_t k = 0; k < n; k++)
        if (a->Get(k) != b->Get(k))
            return a->Get(k) < b->Get(k) ? -1 : 1;
    return a->size() < b->size() ? -1 : a->size() > b->size();
}

} // namespace

zf_status zf_ic_manifest_parse(const uint8_t *data, size_t len, zf_ic_manifest **out,
                               zf_err *err)
{
    *out = nullptr;
    zf_ic_header h;
    uint8_t *buf = nullptr;
    size_t n = 0;
    const fb::Manifest *root = nullptr;
    zf_status st = open_file(data, len, ZF_IC_FILE_MANIFEST, &h, &buf, &n, &root, err);
    if (st != ZF_OK)
        return st;
    const auto *arrays = root->arrays();
    size_t nrefs = 0, ncompressed = 0;
    char a[32];
    for (flatbuffers::uoffset_t i = 0; i < arrays->size() && st == ZF_OK; i++) {
        const fb::ArrayManifest *am = arrays->Get(i);
        const uint8_t *id = am->node_id()->bytes()->data();
        if (i > 0 && memcmp(arrays->Get(i - 1)->node_id()->bytes()->data(), id,
                            ZF_IC_NODE_ID_LEN) >= 0) {
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "manifest file: arrays not sorted by node id (at %s)",
                         hex(id, ZF_IC_NODE_ID_LEN, a));
            break;
        }
        const auto *refs = am->refs();
        nrefs += refs->size();
        for (flatbuffers::uoffset_t j = 0; j < refs->size(); j++) {
            const fb::ChunkRef *r = refs->Get(j);
            if (r->index()->size() != refs->Get(0)->index()->size()) {
                st = zf_fail(err, ZF_ERR_CORRUPT,
                             "manifest file: array %s: chunk indexes of %u and %u dimensions",
                             hex(id, ZF_IC_NODE_ID_LEN, a), refs->Get(0)->index()->size(),
                             r->index()->size());
                break;
            }
            if (j > 0 && cmp_index(refs->Get(j - 1)->index(), r->index()) >= 0) {
                st = zf_fail(err, ZF_ERR_CORRUPT,
                             "manifest file: array %s: chunk references not sorted by index "
                             "(at %u)",
                             hex(id, ZF_IC_NODE_ID_LEN, a), j);
                break;
            }
            if (r->compressed_location())
                ncompressed++;
        }
    }
    ZSTD_DDict *dict = nullptr;
    if (st == ZF_OK && ncompressed > 0) {
        const auto *d = root->location_dictionary();
        if (root->compression_algorithm() != 1)
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "manifest file: compressed locations, compression algorithm %u",
                         root->compression_algorithm());
        else if (!d)
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "manifest file: compressed locations without a location dictionary");
        else if (!(dict = ZSTD_createDDict(d->data(), d->size())))
            st = zf_fail(err, ZF_ERR_CORRUPT,
                         "manifest file: the location dictionary does not load");
    }
    zf_ic_manifest *m = nullptr;
    if (st == ZF_OK && !(m = static_cast<zf_ic_manifest *>(calloc(1, sizeof *m))))
        st = zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    if (st != ZF_OK) {
        ZSTD_freeDDict(dict);
        free(buf);
        return st;
    }
    m->buf = buf;
    m->len = n;
    m->root = root;
    m->dict = dict;
    m->nrefs = nrefs;
    *out = m;
    return ZF_OK;
}

void zf_ic_manifest_free(zf_ic_manifest *m)
{
    if (!m)
        return;
    ZSTD_freeDDict(m->dict);
    free(m->buf);
    free(m);
}

size_t zf_ic_manifest_bytes(const zf_ic_manifest *m)
{
    return sizeof *m + m->len + (m->dict ? ZSTD_sizeof_DDict(m->dict) : 0);
}

size_t zf_ic_manifest_nrefs(const zf_ic_manifest *m) { return m->nrefs; }

size_t zf_ic_manifest_narrays(const zf_ic_manifest *m) { return m->root->arrays()->size(); }

void zf_ic_manifest_array(const zf_ic_manifest *m, size_t i, uint8_t node_id[ZF_IC_NODE_ID_LEN],
                          size_t *nrefs)
{
    const fb::ArrayManifest *am = m->root->arrays()->Get(static_cast<flatbuffers::uoffset_t>(i));
    memcpy(node_id, am->node_id()->bytes()->data(), ZF_IC_NODE_ID_LEN);
    *nrefs = am->refs()->size();
}

size_t zf_ic_manifest_ref_index(const zf_ic_manifest *m, size_t i, size_t j, uint64_t *coords,
                                size_t max)
{
    const auto *idx = m->root->arrays()
                          ->Get(static_cast<flatbuffers::uoffset_t>(i))
                          ->refs()
                          ->Get(static_cast<flatbuffers::uoffset_t>(j))
                          ->index();
    for (flatbuffers::uoffset_t k = 0; k < idx->size() && k < max; k++)
        coords[k] = idx->Get(k);
    return idx->size();
}

void zf_ic_chunk_ref_clear(zf_ic_chunk_ref *r)
{
    free(r->location);
    free(r->etag);
    memset(r, 0, sizeof *r);
}

namespace {

/* A C string copy of n bytes: no NUL inside, not empty when nonempty is set. */
zf_status copy_text(const char *s, size_t n, bool nonempty, const char *what, char **out,
                    zf_err *err)
{
    if (nonempty && n == 0)
        return zf_fail(err, ZF_ERR_CORRUPT, "empty %s", what);
    if (memchr(s, '\0', n))
        return zf_fail(err, ZF_ERR_CORRUPT, "a NUL inside the %s", what);
    char *c = static_cast<char *>(malloc(n + 1));
    if (!c)
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    memcpy(c, s, n);
    c[n] = '\0';
    *out = c;
    return ZF_OK;
}

zf_status decompress_location(const zf_ic_manifest *m, const flatbuffers::Vector<uint8_t> *z,
                              char **out, zf_err *err)
{
    unsigned long long fcs = ZSTD_getFrameContentSize(z->data(), z->size());
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
        return zf_fail(err, ZF_ERR_CORRUPT, "compressed location: not a zstd frame");
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > ZF_IC_MAX_LOCATION)
        return zf_fail(err, ZF_ERR_CORRUPT, "compressed location of %llu bytes (bound %d)", fcs,
                       ZF_IC_MAX_LOCATION);
    size_t cap = fcs != ZSTD_CONTENTSIZE_UNKNOWN ? (size_t)fcs : ZF_IC_MAX_LOCATION;
    char *buf = static_cast<char *>(malloc(cap + 1));
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!buf || !d) {
        free(buf);
        ZSTD_freeDCtx(d);
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    }
    size_t r = ZSTD_decompress_usingDDict(d, buf, cap, z->data(), z->size(), m->dict);
    ZSTD_freeDCtx(d);
    zf_status st = ZF_OK;
    if (ZSTD_isError(r))
        st = zf_fail(err, ZF_ERR_CORRUPT,
                     "compressed location does not decompress within %d bytes: %s",
                     ZF_IC_MAX_LOCATION, ZSTD_getErrorName(r));
    else
        st = copy_text(buf, r, true, "location", out, err);
    free(buf);
    return st;
}

zf_status fill_ref(const zf_ic_manifest *m, const fb::ChunkRef *r, zf_ic_chunk_ref *out,
                   zf_err *err)
{
    bool is_inline = r->inline_data() != nullptr, is_native = r->chunk_id() != nullptr,
         is_virtual = r->location() || r->compressed_location();
    int kinds = is_inline + is_native + is_virtual;
    if (kinds != 1)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "chunk reference of %s kind (inline %d, native %d, virtual %d)",
                       kinds ? "more than one" : "no", is_inline, is_native, is_virtual);
    out->offset = r->offset();
    out->length = r->length();
    if (is_inline) {
        out->kind = ZF_IC_CHUNK_INLINE;
        out->inline_data = r->inline_data()->data();
        out->inline_len = r->inline_data()->size();
        return ZF_OK;
    }
    if (is_native) {
        out->kind = ZF_IC_CHUNK_NATIVE;
        memcpy(out->chunk_id, r->chunk_id()->bytes()->data(), ZF_IC_ID_LEN);
        return ZF_OK;
    }
    out->kind = ZF_IC_CHUNK_VIRTUAL;
    zf_status st;
    if (r->compressed_location()) /* Icechunk reads it before location */
        st = decompress_location(m, r->compressed_location(), &out->location, err);
    else
        st = copy_text(r->location()->c_str(), r->location()->size(), true, "location",
                       &out->location, err);
    if (st == ZF_OK && r->checksum_etag())
        st = copy_text(r->checksum_etag()->c_str(), r->checksum_etag()->size(), false,
                       "checksum ETag", &out->etag, err);
    out->last_modified = r->checksum_last_modified();
    return st;
}

} // namespace

zf_status zf_ic_manifest_find(const zf_ic_manifest *m, const uint8_t node_id[ZF_IC_NODE_ID_LEN],
                              const uint64_t *coords, size_t ndim, zf_ic_chunk_ref *out,
                              zf_err *err)
{
    memset(out, 0, sizeof *out);
    char a[32];
    const auto *arrays = m->root->arrays();
    const fb::ArrayManifest *am = nullptr;
    size_t lo = 0, hi = arrays->size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fb::ArrayManifest *x = arrays->Get(static_cast<flatbuffers::uoffset_t>(mid));
        int c = memcmp(x->node_id()->bytes()->data(), node_id, ZF_IC_NODE_ID_LEN);
        if (c == 0) {
            am = x;
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!am)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "no chunk references of node %s",
                       hex(node_id, ZF_IC_NODE_ID_LEN, a));
    const auto *refs = am->refs();
    if (refs->size() == 0)
        return zf_fail(err, ZF_ERR_NOT_FOUND, "no chunk references of node %s",
                       hex(node_id, ZF_IC_NODE_ID_LEN, a));
    if (refs->Get(0)->index()->size() != ndim)
        return zf_fail(err, ZF_ERR_CORRUPT,
                       "chunk indexes of %u dimensions for an array of %zu (node %s)",
                       refs->Get(0)->index()->size(), ndim, hex(node_id, ZF_IC_NODE_ID_LEN, a));
    for (size_t k = 0; k < ndim; k++)
        if (coords[k] > UINT32_MAX)
            return zf_fail(err, ZF_ERR_NOT_FOUND, "no chunk reference at index %" PRIu64,
                           coords[k]);
    lo = 0, hi = refs->size();
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const fb::ChunkRef *r = refs->Get(static_cast<flatbuffers::uoffset_t>(mid));
        const auto *idx = r->index();
        int c = 0;
        for (size_t k = 0; k < ndim && c == 0; k++) {
            uint32_t x = idx->Get(static_cast<flatbuffers::uoffset_t>(k));
            c = x < coords[k] ? -1 : x > coords[k];
        }
        if (c == 0) {
            zf_status st = fill_ref(m, r, out, err);
            if (st != ZF_OK)
                zf_ic_chunk_ref_clear(out);
            return st;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return zf_fail(err, ZF_ERR_NOT_FOUND, "no chunk reference there");
}
