/* consolidated.c — consolidated metadata indexed once: its keys by name (documents by binary
 * search) and its nodes by parent (a group's children are one contiguous range), so that a walk
 * of a whole hierarchy costs O(keys), not O(keys) per listing (1000 nested groups took 12.6 s).
 *
 * Children, per dialect (as zf_hierarchy_list shows them):
 * - v2 (.zmetadata): a key "P/N/.zarray" or "P/N/.zgroup" makes N a child of P ("" the root);
 * - v3 (inline consolidated_metadata): a key is a node path "P/N"; every ancestor of a key is a
 *   group too (an implicit one when it has no key of its own), so "a/b/c" makes a a child of the
 *   root, b of a, c of a/b.
 * Keys that are not valid store keys (zf_key_is_valid) and names longer than NAME_MAX are left
 * out, each warned about once, here. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy_impl.h"
#include "zarrfs/log.h"
#include "zarrfs/store.h"

/* A node named by the consolidated metadata: path[0..len) (pointing into a key), its parent
 * path[0..plen) and its name after that parent's '/'. */
typedef struct cnode {
    const char *path;
    size_t plen, len;
    bool listed; /* false: a name longer than NAME_MAX (no path can name it) */
} cnode;

struct zf_cindex {
    yajl_val md;
    size_t *order; /* md's keys by name, equal keys by position */
    cnode *nodes;  /* by parent, then name; no two alike */
    size_t nnodes, cap;
};

static int by_key(const void *a, const void *b, void *obj)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const char **keys = ((yajl_val)obj)->u.object.keys;
    int c = strcmp(keys[i], keys[j]);
    return c ? c : (i > j) - (i < j);
}

/* Byte order of a[0..al) and b[0..bl) (a prefix first). */
static int cmp_span(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static const char *name_of(const cnode *n, size_t *len)
{
    size_t skip = n->plen ? n->plen + 1 : 0;
    *len = n->len - skip;
    return n->path + skip;
}

static int by_parent(const void *a, const void *b)
{
    const cnode *x = a, *y = b;
    int c = cmp_span(x->path, x->plen, y->path, y->plen);
    if (c)
        return c;
    size_t xl, yl;
    const char *xn = name_of(x, &xl), *yn = name_of(y, &yl);
    return cmp_span(xn, xl, yn, yl);
}

/* Add the node path[0..len) (no leading or trailing '/'). */
static zf_status add_node(zf_cindex *ix, const char *path, size_t len)
{
    if (ix->nnodes == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 64;
        cnode *nn = realloc(ix->nodes, cap * sizeof *nn);
        if (!nn)
            return ZF_ERR_NOMEM;
        ix->nodes = nn;
        ix->cap = cap;
    }
    const char *slash = memrchr(path, '/', len);
    size_t plen = slash ? (size_t)(slash - path) : 0;
    ix->nodes[ix->nnodes++] = (cnode){.path = path, .plen = plen, .len = len, .listed = true};
    return ZF_OK;
}

/* v2: the node a document key names ("P/N/.zarray" -> "P/N"), or 0 for other keys. */
static size_t v2_node_len(const char *key)
{
    static const char *const docs[] = {"/.zarray", "/.zgroup"};
    size_t kl = strlen(key);
    for (size_t d = 0; d < 2; d++) {
        size_t dl = strlen(docs[d]);
        if (kl > dl && strcmp(key + kl - dl, docs[d]) == 0)
            return kl - dl;
    }
    return 0;
}

/* Length of the longest common prefix of a and b that ends before a '/' of both, or at the end of
 * one that is followed by '/' in the other: the deepest common ancestor's path length. */
static size_t common_ancestor(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0, last = 0;
    while (i < al && i < bl && a[i] == b[i]) {
        i++;
        if ((i == al || a[i] == '/') && (i == bl || b[i] == '/'))
            last = i;
    }
    return last;
}

zf_status zf_cindex_build(yajl_val md, bool v2, const char *source, zf_cindex **out)
{
    zf_cindex *ix = calloc(1, sizeof *ix);
    size_t n = md->u.object.len;
    if (!ix || !(ix->order = malloc((n ? n : 1) * sizeof *ix->order))) {
        free(ix);
        return ZF_ERR_NOMEM;
    }
    ix->md = md;
    for (size_t i = 0; i < n; i++)
        ix->order[i] = i;
    qsort_r(ix->order, n, sizeof *ix->order, by_key, md);

    /* In key order, a key's ancestors that the previous valid key shares were added with it
     * (v3): each ancestor is visited once, so this is linear in the keys' length. */
    const char *prev = NULL;
    size_t prev_len = 0;
    zf_status st = ZF_OK;
    for (size_t k = 0; k < n && st == ZF_OK; k++) {
        const char *key = md->u.object.keys[ix->order[k]];
        if (k > 0 && strcmp(key, md->u.object.keys[ix->order[k - 1]]) == 0)
            continue; /* a key given twice: its first value counts, it is said once */
        if (!zf_key_is_valid(key)) {
            zf_log_warn("%s: ignoring invalid key \"%s\"", source, key);
            continue;
        }
        size_t len = v2 ? v2_node_len(key) : strlen(key);
        if (len == 0)
            continue; /* v2: not a document that makes a child (.zattrs, the root's own) */
        if ((st = add_node(ix, key, len)) != ZF_OK)
            break;
        if (!v2) { /* the ancestors the previous key did not share: implicit groups or not */
            size_t keep = prev ? common_ancestor(key, len, prev, prev_len) : 0;
            for (size_t e = len; st == ZF_OK;) {
                const char *slash = memrchr(key, '/', e);
                if (!slash || (size_t)(slash - key) <= keep)
                    break;
                e = (size_t)(slash - key);
                st = add_node(ix, key, e);
            }
        }
        prev = key;
        prev_len = len;
    }
    if (st == ZF_OK && ix->nnodes) {
        qsort(ix->nodes, ix->nnodes, sizeof *ix->nodes, by_parent);
        size_t m = 0;
        for (size_t i = 0; i < ix->nnodes; i++) /* one node per path */
            if (m == 0 || by_parent(&ix->nodes[m - 1], &ix->nodes[i]) != 0)
                ix->nodes[m++] = ix->nodes[i];
        ix->nnodes = m;
        for (size_t i = 0; i < m; i++) {
            size_t nl;
            const char *nm = name_of(&ix->nodes[i], &nl);
            if (nl > NAME_MAX) { /* said once here; zf_h_push_name would say it per listing */
                ix->nodes[i].listed = false;
                zf_log_warn("%s: ignoring a child named \"%.40s...\": %zu bytes, longer than "
                            "NAME_MAX (%d)", source, nm, nl, NAME_MAX);
            }
        }
    }
    if (st != ZF_OK) {
        zf_cindex_free(ix);
        return st;
    }
    *out = ix;
    return ZF_OK;
}

void zf_cindex_free(zf_cindex *ix)
{
    if (!ix)
        return;
    free(ix->order);
    free(ix->nodes);
    free(ix);
}

yajl_val zf_cindex_get(const zf_cindex *ix, const char *key)
{
    const size_t *ord = ix->order;
    const char **keys = ix->md->u.object.keys;
    size_t lo = 0, hi = ix->md->u.object.len;
    while (lo < hi) { /* the first position whose key is not below key */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(keys[ord[mid]], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ix->md->u.object.len && strcmp(keys[ord[lo]], key) == 0)
        return ix->md->u.object.values[ord[lo]];
    return NULL;
}

/* The range [*first, end) of the nodes whose parent is path; returns end. */
static size_t children(const zf_cindex *ix, const char *path, size_t *first)
{
    size_t pl = strlen(path), lo = 0, hi = ix->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const cnode *c = &ix->nodes[mid];
        if (cmp_span(c->path, c->plen, path, pl) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    size_t end = lo;
    while (end < ix->nnodes && cmp_span(ix->nodes[end].path, ix->nodes[end].plen, path, pl) == 0)
        end++;
    return end;
}

zf_status zf_cindex_list(const zf_cindex *ix, const char *path, char ***names, size_t *n,
                         size_t *cap)
{
    size_t i, end = children(ix, path, &i);
    zf_status st = ZF_OK;
    for (; i < end && st == ZF_OK; i++) {
        size_t nl;
        const char *nm = name_of(&ix->nodes[i], &nl);
        if (ix->nodes[i].listed)
            st = zf_h_push_name(names, n, cap, nm, nl);
    }
    return st;
}

bool zf_cindex_has_below(const zf_cindex *ix, const char *path)
{
    size_t first;
    return children(ix, path, &first) > first;
}
