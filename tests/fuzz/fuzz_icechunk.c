/* Fuzz target: the Icechunk file-format reader (src/store/icechunk_fb.cc, icechunk_config.c,
 * icechunk_id.c; include/zarrfs/icechunk.h). The first byte picks the reader (its value modulo
 * 4: 0 a repo info file, 1 a snapshot file, 2 a manifest file, 3 a spec-1 config.yaml), the rest
 * is the file: header, zstd or raw payload, FlatBuffers; or the YAML text.
 *
 * After a successful parse every accessor runs: every snapshot of a repo (the parent chain
 * walked, each id found back, its Crockford text decoded back), every branch and tag looked up
 * by name, the configuration's containers; every node of a snapshot (its path found back,
 * the bytes of its zarr.json touched, every ManifestRef); every reference of a manifest found by
 * its own index (it must be found, or be refused as corrupt). Checked besides "no crash": what
 * icechunk.h promises of a parsed file (indexes in range, sorted and valid paths, dimension
 * counts, from <= to, non-empty locations). Walks stop at FZ_IC_WALK items per list. */
#include <inttypes.h>

#include "fuzz.h"

#include "icechunk_impl.h"
#include "zarrfs/icechunk.h"

#define FZ_IC_WALK 256

static volatile size_t sink; /* what the walk reads, so that nothing is optimized away */

static void touch(const char *s)
{
    if (s)
        sink += strlen(s);
}

/* icechunk.h's rule for node paths, written again: "/" or "/" + segments joined by "/", none
 * empty, "." or "..". */
static bool path_ok(const char *p, size_t n)
{
    if (n == 0 || p[0] != '/')
        return false;
    if (n == 1)
        return true;
    for (size_t i = 1, start = 1; i <= n; i++)
        if (i == n || p[i] == '/') {
            size_t l = i - start;
            if (l == 0 || (l == 1 && p[start] == '.') ||
                (l == 2 && p[start] == '.' && p[start + 1] == '.'))
                return false;
            start = i + 1;
        }
    return true;
}

static void check_config(const zf_ic_config *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const zf_ic_container *x = &c->containers[i];
        FZ_CHECK(x->url_prefix && x->kind, "container %zu without url_prefix or kind", i);
        touch(x->url_prefix);
        touch(x->kind);
        touch(x->name);
        touch(x->endpoint_url);
        touch(x->region);
    }
}

static void walk_repo(const uint8_t *data, size_t size)
{
    zf_ic_repo *r;
    zf_err err = {""};
    if (zf_ic_repo_parse(data, size, &r, &err) != ZF_OK)
        return;
    (void)zf_ic_repo_spec_version(r);
    size_t n = zf_ic_repo_nsnapshots(r);
    for (size_t i = 0; i < n && i < FZ_IC_WALK; i++) {
        zf_ic_snapshot_info info;
        zf_ic_repo_snapshot(r, i, &info);
        FZ_CHECK(info.parent >= -1 && info.parent < (int64_t)n, "parent %" PRId64, info.parent);
        touch(info.message);
        size_t at;
        FZ_CHECK(zf_ic_repo_find_snapshot(r, info.id, &at) && at == i, "snapshot %zu not found",
                 i);
        char text[ZF_IC_ID_TEXT_LEN + 1];
        uint8_t back[ZF_IC_ID_LEN];
        zf_ic_id_encode(info.id, text);
        FZ_CHECK(strlen(text) == ZF_IC_ID_TEXT_LEN && zf_ic_id_decode(text, back) &&
                     memcmp(back, info.id, ZF_IC_ID_LEN) == 0,
                 "id text %s", text);
    }
    if (n > 0) { /* the parent chain from the last snapshot: at most n steps */
        zf_ic_snapshot_info info;
        zf_ic_repo_snapshot(r, n - 1, &info);
        for (size_t steps = 0; info.parent >= 0 && steps < n && steps < FZ_IC_WALK; steps++)
            zf_ic_repo_snapshot(r, (size_t)info.parent, &info);
    }
    for (int tags = 0; tags < 2; tags++) {
        size_t nr = zf_ic_repo_nrefs(r, tags);
        for (size_t i = 0; i < nr && i < FZ_IC_WALK; i++) {
            const char *name;
            size_t idx, found;
            zf_ic_repo_ref(r, tags, i, &name, &idx);
            FZ_CHECK(idx < n, "ref %s: index %zu of %zu", name, idx, n);
            if (zf_ic_repo_lookup_ref(r, tags, name, &found))
                FZ_CHECK(found == idx, "ref %s found at %zu, listed at %zu", name, found, idx);
            else
                FZ_CHECK(tags, "branch %s listed but not found", name);
        }
        size_t none;
        (void)zf_ic_repo_lookup_ref(r, tags, "main", &none);
    }
    zf_ic_config c;
    zf_status st = zf_ic_repo_config(r, &c, &err);
    FZ_CHECK(st == ZF_OK || st == ZF_ERR_CORRUPT || st == ZF_ERR_NOMEM, "config: status %d",
             (int)st);
    if (st == ZF_OK) {
        check_config(&c);
        zf_ic_config_free(&c);
    }
    zf_ic_repo_free(r);
}

static void walk_snapshot(const uint8_t *data, size_t size)
{
    zf_ic_snapshot *s;
    zf_err err = {""};
    if (zf_ic_snapshot_parse(data, size, &s, &err) != ZF_OK)
        return;
    zf_ic_snapshot_head h;
    zf_ic_snapshot_get_head(s, &h);
    touch(h.message);
    FZ_CHECK(h.spec_version == 1 || h.spec_version == 2, "spec %u", h.spec_version);
    sink += zf_ic_snapshot_bytes(s);
    size_t n = zf_ic_snapshot_nnodes(s);
    const char *prev = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < n && i < FZ_IC_WALK; i++) {
        zf_ic_node node;
        zf_ic_snapshot_node(s, i, &node);
        FZ_CHECK(strlen(node.path) == node.path_len, "path with a NUL");
        FZ_CHECK(path_ok(node.path, node.path_len), "invalid path %s", node.path);
        if (prev) {
            int c = memcmp(prev, node.path, prev_len < node.path_len ? prev_len : node.path_len);
            FZ_CHECK(c < 0 || (c == 0 && prev_len < node.path_len), "unsorted at %s", node.path);
        }
        prev = node.path, prev_len = node.path_len;
        size_t at;
        FZ_CHECK(zf_ic_snapshot_find(s, node.path, node.path_len, &at) && at == i,
                 "node %s not found", node.path);
        if (node.user_data_len) {
            sink += node.user_data[0] ^ node.user_data[node.user_data_len - 1];
        }
        if (!node.is_array) {
            FZ_CHECK(node.ndim == 0 && node.nmanifests == 0, "group with dimensions");
            continue;
        }
        FZ_CHECK(node.ndim <= ZF_MAX_DIMS, "ndim %zu", node.ndim);
        for (size_t j = 0; j < node.nmanifests && j < FZ_IC_WALK; j++) {
            zf_ic_manifest_ref mr;
            zf_ic_snapshot_manifest_ref(s, i, j, &mr);
            FZ_CHECK(mr.ndim <= ZF_MAX_DIMS, "extents of %zu dimensions", mr.ndim);
            for (size_t k = 0; k < mr.ndim; k++)
                FZ_CHECK(mr.from[k] <= mr.to[k], "extent [%u, %u)", mr.from[k], mr.to[k]);
        }
    }
    size_t at;
    (void)zf_ic_snapshot_find(s, "/", 1, &at);
    (void)zf_ic_snapshot_find(s, "/zz", 3, &at);
    zf_ic_snapshot_free(s);
}

static void walk_manifest(const uint8_t *data, size_t size)
{
    zf_ic_manifest *m;
    zf_err err = {""};
    if (zf_ic_manifest_parse(data, size, &m, &err) != ZF_OK)
        return;
    sink += zf_ic_manifest_bytes(m);
    size_t total = 0, walked = 0;
    for (size_t i = 0; i < zf_ic_manifest_narrays(m); i++) {
        uint8_t node[ZF_IC_NODE_ID_LEN];
        size_t nrefs;
        zf_ic_manifest_array(m, i, node, &nrefs);
        total += nrefs;
        for (size_t j = 0; j < nrefs && walked < FZ_IC_WALK; j++, walked++) {
            uint64_t coords[ZF_MAX_DIMS];
            size_t ndim = zf_ic_manifest_ref_index(m, i, j, coords, ZF_MAX_DIMS);
            if (ndim > ZF_MAX_DIMS)
                continue;
            zf_ic_chunk_ref c;
            zf_status st = zf_ic_manifest_find(m, node, coords, ndim, &c, &err);
            FZ_CHECK(st == ZF_OK || st == ZF_ERR_CORRUPT || st == ZF_ERR_NOMEM,
                     "reference %zu of array %zu: status %d", j, i, (int)st);
            if (st != ZF_OK) {
                FZ_CHECK(!c.location && !c.etag, "a refused reference keeps memory");
                continue;
            }
            switch (c.kind) {
            case ZF_IC_CHUNK_INLINE:
                if (c.inline_len) {
                    sink += c.inline_data[0] ^ c.inline_data[c.inline_len - 1];
                }
                break;
            case ZF_IC_CHUNK_NATIVE: break;
            case ZF_IC_CHUNK_VIRTUAL:
                FZ_CHECK(c.location && c.location[0], "virtual reference without a location");
                touch(c.etag);
                break;
            default: FZ_CHECK(false, "kind %d", (int)c.kind);
            }
            zf_ic_chunk_ref_clear(&c);
            /* a neighbour that may be absent */
            if (ndim > 0 && coords[ndim - 1] < UINT32_MAX) {
                coords[ndim - 1]++;
                st = zf_ic_manifest_find(m, node, coords, ndim, &c, &err);
                if (st == ZF_OK)
                    zf_ic_chunk_ref_clear(&c);
            }
        }
    }
    FZ_CHECK(total == zf_ic_manifest_nrefs(m), "%zu references, nrefs %zu", total,
             zf_ic_manifest_nrefs(m));
    uint8_t none[ZF_IC_NODE_ID_LEN] = {0};
    uint64_t zero[1] = {0};
    zf_ic_chunk_ref c;
    if (zf_ic_manifest_find(m, none, zero, 1, &c, &err) == ZF_OK)
        zf_ic_chunk_ref_clear(&c);
    zf_ic_manifest_free(m);
}

static void walk_yaml(const uint8_t *data, size_t size)
{
    zf_ic_config c;
    zf_err err = {""};
    zf_status st = zf_ic_config_yaml((const char *)data, size, &c, &err);
    FZ_CHECK(st == ZF_OK || st == ZF_ERR_CORRUPT || st == ZF_ERR_NOMEM, "yaml: status %d",
             (int)st);
    if (st == ZF_OK) {
        check_config(&c);
        zf_ic_config_free(&c);
    } else {
        FZ_CHECK(c.containers == NULL && c.n == 0, "a refused configuration keeps containers");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    if (size < 1)
        return 0;
    const uint8_t *file = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0: walk_repo(file, n); break;
    case 1: walk_snapshot(file, n); break;
    case 2: walk_manifest(file, n); break;
    default: walk_yaml(file, n); break;
    }
    return 0;
}
