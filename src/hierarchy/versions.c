/* versions.c — a repository's versions as hidden directories of the mount (hierarchy.h,
 * zf_versions): ROOT/<dir_name>/<kind>/<name>/...
 *
 * The tree: the hidden directory and one directory per kind are synthetic nodes of the mount's
 * hierarchy (in its id table, not its path table: no view path of the store leads to them); a
 * kind's entries come from the provider's `list`, kept for the metadata TTL. A version directory
 * is a graft: a hierarchy of its own (zf_h_open over the store the provider's `open` gives,
 * read-only, on the mount's chunk cache and decode workers), opened once, on its first lookup,
 * whose root node is the directory. Each opening takes a slot k >= 1 and its nodes the ids
 * k * 2^40 + 1, + 2, ... (ZF_VERSION_SHIFT), so that zf_hierarchy_node finds the slot from the
 * id alone. A text file is a synthetic derived node whose header is the text `file` gives; a new
 * text makes a new node (a new id, as changed metadata does), so that nothing the kernel cached
 * of the old one is shown as the new.
 *
 * Listings do not open versions: a version directory a listing names before anyone looked it
 * up is given as a stand-in with its root's id to come (zf_hierarchy_child_entry), and a text
 * file not read yet as its node without text, read when looked up, stat'ed or read (as a netCDF
 * view is made). A name that leaves its kind's listing leads nowhere from then on (the kernel is
 * told: zf_hierarchy_on_gone); its hierarchy or node lives on for open files until the mount
 * ends, and the name coming back opens it anew. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy_impl.h"
#include "zarrfs/log.h"

typedef struct zf_vstate zf_vstate;

/* What a synthetic node is (its dkind). */
enum { V_DIR = 1, V_KIND, V_FILE, V_STAND_IN };

/* One opening of a version directory: slot k of the mount. */
typedef struct vgraft {
    zf_hierarchy *h;    /* its hierarchy, once opened (then never changes) */
    zf_node *root;      /* h's root node: the directory (id k * 2^40 + 1) */
    bool opening;       /* a thread is opening it (the others wait on vstate.cv) */
    size_t kind;
    char *name;
    zf_node *stand_in;  /* the directory in listings before it is opened: the root's id */
} vgraft;

/* A name of a kind's listing that was looked up (or listed with its node). */
typedef struct ventry {
    struct ventry *next; /* in its kind's hash chain */
    char *name;
    uint64_t slot;       /* a version directory's graft (0: none, or left the listing) */
    zf_node *file;       /* a text file's node now (NULL: none, or left the listing) */
} ventry;

typedef struct vkind {
    char *name;
    zf_node *node;            /* its directory */
    zf_store_entry *listing;  /* what `list` last said: valid names, sorted, each once */
    size_t nlisting;
    bool listed;              /* listing holds a listing */
    double listed_at;         /* monotonic seconds */
    bool warned;              /* about invalid names */
    ventry **buckets;         /* entries by name (nbuckets a power of two) */
    size_t nbuckets, nentries;
} vkind;

struct zf_vstate {
    zf_versions v; /* the provider (dir_name and kinds: ours, below) */
    char *dir_name;
    zf_node *dir;  /* the hidden directory */
    vkind *kinds;
    size_t nkinds;
    pthread_mutex_t mu; /* everything here but the provider's own state */
    pthread_cond_t cv;  /* an opening ended */
    vgraft **slots;     /* slots[k] for k in 1 .. nslots - 1 */
    size_t nslots, cap;
};

/* A single path segment that a directory entry can be. */
static bool valid_name(const char *name)
{
    return name && !strchr(name, '/') && zf_key_is_valid(name) && strlen(name) <= NAME_MAX;
}

static size_t hash_name(const char *p)
{
    size_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const zf_store_entry *)a)->name, ((const zf_store_entry *)b)->name);
}

/* The listing's entry of name, or NULL (vs->mu held). */
static const zf_store_entry *listed(const vkind *k, const char *name)
{
    zf_store_entry key = {.name = (char *)name};
    return k->nlisting ? bsearch(&key, k->listing, k->nlisting, sizeof key, entry_cmp) : NULL;
}

/* The entry of name (made when absent with create), or NULL (vs->mu held; no memory). */
static ventry *entry_of(vkind *k, const char *name, bool create)
{
    if (k->nbuckets) {
        for (ventry *e = k->buckets[hash_name(name) & (k->nbuckets - 1)]; e; e = e->next)
            if (strcmp(e->name, name) == 0)
                return e;
    }
    if (!create)
        return NULL;
    if (k->nentries >= k->nbuckets) { /* twice as many buckets: chains stay short */
        size_t nb = k->nbuckets ? k->nbuckets * 2 : 64;
        ventry **b = calloc(nb, sizeof *b);
        if (!b)
            return NULL;
        for (size_t i = 0; i < k->nbuckets; i++)
            for (ventry *e = k->buckets[i], *next; e; e = next) {
                next = e->next;
                size_t j = hash_name(e->name) & (nb - 1);
                e->next = b[j];
                b[j] = e;
            }
        free(k->buckets);
        k->buckets = b;
        k->nbuckets = nb;
    }
    ventry *e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(name))) {
        free(e);
        return NULL;
    }
    size_t j = hash_name(name) & (k->nbuckets - 1);
    e->next = k->buckets[j];
    k->buckets[j] = e;
    k->nentries++;
    return e;
}

/* A synthetic node of the mount's hierarchy (in its id table). NULL without memory. */
static zf_node *synthetic_new(zf_hierarchy *h, const char *path, unsigned kind, bool is_dir)
{
    zf_node *n = zf_h_node_new(path, "");
    if (!n)
        return NULL;
    n->synthetic = true;
    n->dkind = kind;
    n->is_dir = is_dir;
    n->derived = !is_dir; /* files: read as derived ones are (zf_hierarchy_read_derived) */
    n->meta.format = h->format;
    n->mtime = h->root_mtime;
    return n;
}

static zf_node *publish_synthetic(zf_hierarchy *h, zf_node *n)
{
    pthread_mutex_lock(&h->mu);
    zf_node *in = zf_h_insert_id_locked(h, n);
    pthread_mutex_unlock(&h->mu);
    if (!in)
        zf_h_node_free(n);
    return in;
}

void zf_hierarchy_set_versions(zf_hierarchy *h, const zf_versions *v)
{
    zf_vstate *vs = NULL;
    if (h->versions || h->parent || !v->list || !v->open || !v->file) {
        zf_log_error("versions: not shown (%s)", h->versions ? "given twice"
                     : h->parent ? "a version's hierarchy has none" : "no list, open or file");
        goto fail;
    }
    if (!valid_name(v->dir_name)) {
        zf_log_error("versions: \"%s\" cannot be a directory's name; not shown",
                     v->dir_name ? v->dir_name : "");
        goto fail;
    }
    if (!(vs = calloc(1, sizeof *vs)))
        goto nomem;
    pthread_mutex_init(&vs->mu, NULL);
    pthread_cond_init(&vs->cv, NULL);
    if (!(vs->dir_name = strdup(v->dir_name)) ||
        !(vs->kinds = calloc(v->nkinds ? v->nkinds : 1, sizeof *vs->kinds)))
        goto nomem;
    vs->v = *v;
    vs->v.dir_name = vs->dir_name;
    vs->v.kinds = NULL; /* (ours: vs->kinds) */
    vs->nslots = 1; /* slot 0 is the mount's own ids */
    if (!(vs->dir = publish_synthetic(h, synthetic_new(h, vs->dir_name, V_DIR, true))))
        goto nomem;
    for (size_t i = 0; i < v->nkinds; i++) {
        const char *kn = v->kinds[i];
        bool dup = false;
        for (size_t j = 0; j < vs->nkinds && kn; j++)
            dup |= strcmp(vs->kinds[j].name, kn) == 0;
        if (!valid_name(kn) || dup) {
            zf_log_error("versions: \"%s\" cannot be a directory's name (or is given twice); "
                         "left out", kn ? kn : "");
            continue;
        }
        vkind *k = &vs->kinds[vs->nkinds];
        char *path = zf_h_join(vs->dir_name, kn);
        if (!path || !(k->name = strdup(kn)) ||
            !(k->node = publish_synthetic(h, synthetic_new(h, path, V_KIND, true)))) {
            free(path);
            free(k->name);
            goto nomem;
        }
        free(path);
        vs->nkinds++;
    }
    h->versions = vs;
    return;
nomem:
    zf_log_error("versions: out of memory; not shown");
    if (vs) {
        for (size_t i = 0; i < vs->nkinds; i++)
            free(vs->kinds[i].name);
        free(vs->kinds);
        free(vs->dir_name);
        pthread_mutex_destroy(&vs->mu);
        pthread_cond_destroy(&vs->cv);
        free(vs); /* (nodes made stay in h's id table, freed with it) */
    }
fail:
    if (v->destroy)
        v->destroy(v->ctx);
}

bool zf_h_versions_route(zf_hierarchy *h, const zf_node *dir, const char *name)
{
    const zf_vstate *vs = h->versions;
    if (!vs || h->parent)
        return false;
    if (dir->synthetic)
        return true;
    return zf_h_owner(h, dir) == h && !dir->path[0] && strcmp(name, vs->dir_name) == 0;
}

/* The kind whose directory is n, or NULL. */
static vkind *kind_of_node(zf_vstate *vs, const zf_node *n)
{
    for (size_t i = 0; i < vs->nkinds; i++)
        if (vs->kinds[i].node == n)
            return &vs->kinds[i];
    return NULL;
}

/* The kind and name of a text file's node, from its path (DIR/KIND/NAME). */
static vkind *file_kind(zf_vstate *vs, const zf_node *n, const char **name)
{
    const char *p = n->path + strlen(vs->dir_name) + 1, *slash = strchr(p, '/');
    if (!slash)
        return NULL;
    for (size_t i = 0; i < vs->nkinds; i++)
        if (strlen(vs->kinds[i].name) == (size_t)(slash - p) &&
            strncmp(vs->kinds[i].name, p, (size_t)(slash - p)) == 0) {
            *name = slash + 1;
            return &vs->kinds[i];
        }
    return NULL;
}

/* Tell the mount's user that name of kind k no longer leads to node id (zf_hierarchy_on_gone;
 * no lock held). */
static void tell_gone(zf_hierarchy *h, const vkind *k, const char *name, uint64_t id,
                      bool deleted)
{
    if (h->gone)
        h->gone(h->gone_ctx, k->node->id, name, id, deleted);
}

/* A listing entry and where the provider listed it. */
typedef struct placed {
    zf_store_entry e;
    size_t pos;
} placed;

static int placed_cmp(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    int c = strcmp(x->e.name, y->e.name);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sort l's entries by name, keeping of equal names the one listed first. O(n log n). */
static zf_status sort_unique(zf_store_listing *l)
{
    placed *p = malloc(l->n * sizeof *p);
    if (!p)
        return ZF_ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++)
        p[i] = (placed){l->entries[i], i};
    qsort(p, l->n, sizeof *p, placed_cmp);
    size_t m = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (m && strcmp(l->entries[m - 1].name, p[i].e.name) == 0)
            free(p[i].e.name);
        else
            l->entries[m++] = p[i].e;
    }
    l->n = m;
    free(p);
    return ZF_OK;
}

typedef struct gone_item {
    char *name;
    uint64_t id;
} gone_item;

/* Kind k's listing, from `list` when older than the TTL (or never made); the names that left it
 * (or changed between version and file) lead nowhere from then on. */
static zf_status refresh_listing(zf_hierarchy *h, vkind *k, zf_err *err)
{
    zf_vstate *vs = h->versions;
    double now = zf_h_mono_now();
    pthread_mutex_lock(&vs->mu);
    bool fresh = k->listed && (h->ttl <= 0 || now - k->listed_at < h->ttl);
    pthread_mutex_unlock(&vs->mu);
    if (fresh)
        return ZF_OK;
    zf_store_listing l = {0};
    zf_status st = vs->v.list(vs->v.ctx, k->name, &l, err);
    if (st == ZF_ERR_NOT_FOUND) { /* nothing of that kind */
        l = (zf_store_listing){0};
        st = ZF_OK;
        if (err)
            err->msg[0] = '\0';
    }
    if (st != ZF_OK)
        return st;
    /* Keep the valid names, sorted, each once (the first). */
    size_t m = 0, bad = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (valid_name(l.entries[i].name))
            l.entries[m++] = l.entries[i];
        else {
            if (!bad++ && !k->warned)
                zf_log_warn("%s/%s: leaving out \"%.60s\": not a file name", vs->dir_name,
                            k->name, l.entries[i].name ? l.entries[i].name : "");
            free(l.entries[i].name);
        }
    }
    l.n = m;
    if (l.n > 1 && (st = sort_unique(&l)) != ZF_OK) {
        zf_store_listing_free(&l);
        return st;
    }
    gone_item *gone = NULL;
    size_t ngone = 0, gcap = 0;
    pthread_mutex_lock(&vs->mu);
    if (bad)
        k->warned = true;
    zf_store_entry *old = k->listing;
    size_t nold = k->nlisting;
    k->listing = l.entries;
    k->nlisting = l.n;
    k->listed = true;
    k->listed_at = now;
    for (size_t b = 0; b < k->nbuckets; b++)
        for (ventry *e = k->buckets[b]; e; e = e->next) {
            const zf_store_entry *in = listed(k, e->name);
            uint64_t id = 0;
            if (e->slot && (!in || !in->is_prefix)) {
                id = vs->slots[e->slot]->stand_in->id;
                e->slot = 0;
            } else if (e->file && (!in || in->is_prefix)) {
                id = e->file->id;
                e->file = NULL;
            }
            if (!id)
                continue;
            if (ngone == gcap) {
                gone_item *g = realloc(gone, (gcap = gcap ? gcap * 2 : 8) * sizeof *g);
                if (!g)
                    continue; /* (not told: the kernel's entry expires after its timeout) */
                gone = g;
            }
            if ((gone[ngone].name = strdup(e->name)) != NULL)
                gone[ngone++].id = id;
        }
    pthread_mutex_unlock(&vs->mu);
    for (size_t i = 0; i < nold; i++)
        free(old[i].name);
    free(old);
    for (size_t i = 0; i < ngone; i++) {
        tell_gone(h, k, gone[i].name, gone[i].id, true);
        free(gone[i].name);
    }
    free(gone);
    return ZF_OK;
}

/* A slot for version name of kind k (vs->mu held), with its stand-in. 0 when there is none
 * (no memory, or every slot used: *st says which). */
static uint64_t reserve_slot(zf_hierarchy *h, vkind *k, const char *name, zf_status *st)
{
    zf_vstate *vs = h->versions;
    if (vs->nslots >= ZF_VERSION_SLOTS) {
        *st = ZF_ERR_UNSUPPORTED;
        return 0;
    }
    *st = ZF_ERR_NOMEM;
    if (vs->nslots >= vs->cap) {
        size_t cap = vs->cap ? vs->cap * 2 : 16;
        vgraft **s = realloc(vs->slots, cap * sizeof *s);
        if (!s)
            return 0;
        vs->slots = s;
        vs->cap = cap;
    }
    vgraft *g = calloc(1, sizeof *g);
    char *path = zf_h_join(k->node->path, name);
    if (!g || !path || !(g->name = strdup(name)) ||
        !(g->stand_in = synthetic_new(h, path, V_STAND_IN, true))) {
        if (g)
            free(g->name);
        free(g);
        free(path);
        return 0;
    }
    free(path);
    uint64_t slot = vs->nslots++;
    g->kind = (size_t)(k - vs->kinds);
    g->stand_in->id = (slot << ZF_VERSION_SHIFT) + 1; /* the root's, when it is opened */
    g->stand_in->owner = h;
    vs->slots[slot] = g;
    *st = ZF_OK;
    return slot;
}

/* The root of the version of slot, opened now unless it is (once: concurrent callers wait for
 * the one opening it). */
static zf_status open_slot(zf_hierarchy *h, uint64_t slot, zf_node **out, zf_err *err)
{
    zf_vstate *vs = h->versions;
    pthread_mutex_lock(&vs->mu);
    vgraft *g = vs->slots[slot];
    while (!g->h && g->opening)
        pthread_cond_wait(&vs->cv, &vs->mu);
    if (g->h) {
        *out = g->root;
        pthread_mutex_unlock(&vs->mu);
        return ZF_OK;
    }
    g->opening = true;
    const char *kind = vs->kinds[g->kind].name;
    pthread_mutex_unlock(&vs->mu);

    zf_store *store = NULL;
    zf_hierarchy *child = NULL;
    zf_node *root = NULL;
    zf_err e = {""};
    zf_status st = vs->v.open(vs->v.ctx, kind, g->name, &store, &e);
    if (st == ZF_OK) {
        zf_hierarchy_options o = h->opts;
        o.writable = false;
        st = zf_h_open(store, h->store_name, &o, h, slot << ZF_VERSION_SHIFT, &child, &e);
    }
    if (st == ZF_OK && (st = zf_hierarchy_lookup(child, "", &root, &e)) == ZF_OK &&
        root->id != g->stand_in->id) /* (zf_h_open makes the root first) */
        st = zf_fail(&e, ZF_ERR_INVALID, "the root is not the version's first node");
    if (st != ZF_OK) {
        zf_hierarchy_free(child);
        zf_fail(err, st, "%s/%s/%s: %s", vs->dir_name, kind, g->name,
                e.msg[0] ? e.msg : zf_status_str(st));
    }
    pthread_mutex_lock(&vs->mu);
    g->opening = false;
    if (st == ZF_OK) {
        g->h = child;
        g->root = root;
        *out = root;
    }
    pthread_cond_broadcast(&vs->cv);
    pthread_mutex_unlock(&vs->mu);
    return st;
}

/* The text of file name of kind k, as the provider gives it (never NULL on ZF_OK). */
static zf_status read_text(zf_vstate *vs, const vkind *k, const char *name, char **text,
                           size_t *len, zf_err *err)
{
    *text = NULL;
    *len = 0;
    zf_status st = vs->v.file(vs->v.ctx, k->name, name, text, len, err);
    if (st != ZF_OK)
        return st;
    if (!*text) { /* an empty text may come as NULL */
        if (*len)
            return zf_fail(err, ZF_ERR_INVALID, "%s/%s/%s: no text", vs->dir_name, k->name,
                           name);
        if (!(*text = malloc(1)))
            return ZF_ERR_NOMEM;
    }
    return ZF_OK;
}

/* Give an unread text file's node its text (n->mu taken); false when it has one already. */
static bool give_text(zf_node *n, char *text, size_t len)
{
    pthread_mutex_lock(&n->mu);
    bool unread = !n->dhdr;
    if (unread) {
        n->dhdr = text;
        n->dhdr_len = len;
        n->size = len;
        clock_gettime(CLOCK_REALTIME, &n->mtime);
    }
    pthread_mutex_unlock(&n->mu);
    return unread;
}

/* Both nodes have the same text (locks each in turn). */
static bool same_text(zf_node *a, zf_node *b)
{
    pthread_mutex_lock(&b->mu);
    const char *t = b->dhdr;
    size_t len = b->dhdr_len;
    pthread_mutex_unlock(&b->mu);
    pthread_mutex_lock(&a->mu);
    bool same = a->dhdr && t && a->dhdr_len == len && memcmp(a->dhdr, t, len) == 0;
    pthread_mutex_unlock(&a->mu);
    return same;
}

static bool has_text(zf_node *n)
{
    pthread_mutex_lock(&n->mu);
    bool has = n->dhdr != NULL;
    pthread_mutex_unlock(&n->mu);
    return has;
}

zf_status zf_h_versions_file_ready(zf_hierarchy *h, zf_node *n, zf_err *err)
{
    zf_vstate *vs = h->versions;
    const char *name;
    vkind *k = vs ? file_kind(vs, n, &name) : NULL;
    if (!k)
        return ZF_ERR_NOT_FOUND;
    if (has_text(n))
        return ZF_OK;
    char *text;
    size_t len;
    zf_status st = read_text(vs, k, name, &text, &len, err);
    if (st != ZF_OK)
        return st;
    if (!give_text(n, text, len))
        free(text); /* another thread's read came first */
    pthread_mutex_lock(&vs->mu);
    n->loaded = zf_h_mono_now();
    pthread_mutex_unlock(&vs->mu);
    return ZF_OK;
}

/* Text file name of kind k: its node; read again when older than the TTL (unless entry), a
 * new node when its text changed. */
static zf_status file_child(zf_hierarchy *h, vkind *k, ventry *e, const char *name, bool entry,
                            zf_node **out, zf_err *err)
{
    zf_vstate *vs = h->versions;
    double now = zf_h_mono_now();
    pthread_mutex_lock(&vs->mu);
    zf_node *f = e->file;
    bool fresh = f && (h->ttl <= 0 || now - f->loaded < h->ttl);
    pthread_mutex_unlock(&vs->mu);
    if (f && (entry || (fresh && has_text(f)))) {
        *out = f;
        return ZF_OK;
    }
    char *text = NULL;
    size_t len = 0;
    zf_status st;
    zf_node *made = NULL;
    if (!entry) {
        if ((st = read_text(vs, k, name, &text, &len, err)) != ZF_OK)
            return st;
        if (f && give_text(f, text, len)) { /* a node a listing made: its first text */
            text = NULL;
            pthread_mutex_lock(&vs->mu);
            f->loaded = now;
            pthread_mutex_unlock(&vs->mu);
            *out = f;
            return ZF_OK;
        }
        if (f) { /* read again after the TTL: the same text keeps its node */
            pthread_mutex_lock(&f->mu);
            bool same = f->dhdr_len == len && memcmp(f->dhdr, text, len) == 0;
            pthread_mutex_unlock(&f->mu);
            if (same) {
                free(text);
                pthread_mutex_lock(&vs->mu);
                f->loaded = now;
                pthread_mutex_unlock(&vs->mu);
                *out = f;
                return ZF_OK;
            }
        }
    }
    char *path = zf_h_join(k->node->path, name);
    zf_node *n = path ? synthetic_new(h, path, V_FILE, false) : NULL;
    free(path);
    if (!n) {
        free(text);
        return ZF_ERR_NOMEM;
    }
    n->loaded = now;
    if (text)
        give_text(n, text, len);
    if (!(made = publish_synthetic(h, n)))
        return ZF_ERR_NOMEM;
    pthread_mutex_lock(&vs->mu);
    zf_node *old = e->file;
    if (old && old != f && (entry || same_text(old, made))) { /* another thread's came first */
        pthread_mutex_unlock(&vs->mu);
        *out = old; /* (made stays unused in the id table) */
        return ZF_OK;
    }
    e->file = made;
    pthread_mutex_unlock(&vs->mu);
    if (old && old != made)
        tell_gone(h, k, name, old->id, false); /* the name leads to the new text now */
    *out = made;
    return ZF_OK;
}

/* The entry `name` of kind k's directory. */
static zf_status kind_child(zf_hierarchy *h, vkind *k, const char *name, bool entry,
                            zf_node **out, zf_err *err)
{
    zf_vstate *vs = h->versions;
    if (!valid_name(name))
        return ZF_ERR_NOT_FOUND;
    zf_status st = refresh_listing(h, k, err);
    if (st != ZF_OK)
        return st;
    pthread_mutex_lock(&vs->mu);
    const zf_store_entry *le = listed(k, name);
    ventry *e = le ? entry_of(k, name, true) : NULL;
    if (!le || !e) {
        pthread_mutex_unlock(&vs->mu);
        return le ? ZF_ERR_NOMEM : ZF_ERR_NOT_FOUND;
    }
    if (!le->is_prefix) {
        pthread_mutex_unlock(&vs->mu);
        return file_child(h, k, e, name, entry, out, err);
    }
    if (!e->slot && !(e->slot = reserve_slot(h, k, name, &st))) {
        pthread_mutex_unlock(&vs->mu);
        return st == ZF_ERR_UNSUPPORTED
                   ? zf_fail(err, st, "%s/%s/%s: more than %llu versions opened by this mount",
                             vs->dir_name, k->name, name,
                             (unsigned long long)ZF_VERSION_SLOTS - 1)
                   : st;
    }
    uint64_t slot = e->slot;
    vgraft *g = vs->slots[slot];
    if (entry || g->h) {
        *out = g->h ? g->root : g->stand_in;
        pthread_mutex_unlock(&vs->mu);
        return ZF_OK;
    }
    pthread_mutex_unlock(&vs->mu);
    return open_slot(h, slot, out, err);
}

/* The version directory a stand-in stands for: its root, opened now. */
static zf_status stand_in_root(zf_hierarchy *h, const zf_node *n, zf_node **out, zf_err *err)
{
    return open_slot(h, n->id >> ZF_VERSION_SHIFT, out, err);
}

zf_status zf_h_versions_child(zf_hierarchy *h, zf_node *dir, const char *name, bool entry,
                              zf_node **out, zf_err *err)
{
    zf_vstate *vs = h->versions;
    if (!dir->synthetic) { /* the root's hidden directory */
        *out = vs->dir;
        return ZF_OK;
    }
    if (dir->dkind == V_STAND_IN) {
        zf_node *root;
        zf_status st = stand_in_root(h, dir, &root, err);
        if (st != ZF_OK)
            return st;
        return entry ? zf_hierarchy_child_entry(root->owner, root, name, out, err)
                     : zf_hierarchy_child(root->owner, root, name, out, err);
    }
    if (dir == vs->dir) {
        for (size_t i = 0; i < vs->nkinds; i++)
            if (strcmp(vs->kinds[i].name, name) == 0) {
                *out = vs->kinds[i].node;
                return ZF_OK;
            }
        return ZF_ERR_NOT_FOUND;
    }
    vkind *k = kind_of_node(vs, dir);
    return k ? kind_child(h, k, name, entry, out, err) : ZF_ERR_NOT_FOUND;
}

zf_status zf_h_versions_list(zf_hierarchy *h, zf_node *dir, char ***names, size_t *n,
                             zf_err *err)
{
    zf_vstate *vs = h->versions;
    *names = NULL;
    *n = 0;
    size_t cap = 0;
    zf_status st = ZF_OK;
    if (!dir->is_dir)
        return ZF_ERR_INVALID;
    if (dir->dkind == V_STAND_IN) {
        zf_node *root;
        if ((st = stand_in_root(h, dir, &root, err)) != ZF_OK)
            return st;
        return zf_hierarchy_list(root->owner, root, names, n, err);
    }
    if (dir == vs->dir) {
        for (size_t i = 0; i < vs->nkinds && st == ZF_OK; i++)
            st = zf_h_push_name(names, n, &cap, vs->kinds[i].name, strlen(vs->kinds[i].name));
    } else {
        vkind *k = kind_of_node(vs, dir);
        if (!k)
            return ZF_ERR_INVALID;
        if ((st = refresh_listing(h, k, err)) != ZF_OK)
            return st;
        pthread_mutex_lock(&vs->mu);
        for (size_t i = 0; i < k->nlisting && st == ZF_OK; i++)
            st = zf_h_push_name(names, n, &cap, k->listing[i].name, strlen(k->listing[i].name));
        pthread_mutex_unlock(&vs->mu);
    }
    if (st != ZF_OK) {
        zf_hierarchy_names_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return st;
}

zf_node *zf_h_versions_node(zf_hierarchy *h, uint64_t id)
{
    zf_vstate *vs = h->versions;
    uint64_t slot = id >> ZF_VERSION_SHIFT;
    pthread_mutex_lock(&vs->mu);
    vgraft *g = slot < vs->nslots ? vs->slots[slot] : NULL;
    zf_hierarchy *child = g ? g->h : NULL;
    pthread_mutex_unlock(&vs->mu);
    if (!g)
        return NULL;
    if (child)
        return zf_h_own_node(child, id);
    /* Only a stand-in's id can be known before its version is opened (a listing gave it). */
    zf_node *root;
    return id == g->stand_in->id && open_slot(h, slot, &root, NULL) == ZF_OK ? root : NULL;
}

bool zf_h_versions_attrs_ready(const zf_node *n)
{
    if (n->dkind == V_STAND_IN) /* its version is not open: looked up when asked for */
        return false;
    return n->is_dir || has_text((zf_node *)n);
}

void zf_h_versions_store_stats(zf_hierarchy *h, zf_store_stats *s)
{
    zf_vstate *vs = h->versions;
    pthread_mutex_lock(&vs->mu);
    for (size_t i = 1; i < vs->nslots; i++) {
        if (!vs->slots[i]->h)
            continue;
        zf_store_stats_add(s, vs->slots[i]->h->store);
    }
    pthread_mutex_unlock(&vs->mu);
}

void zf_h_versions_free(zf_hierarchy *h)
{
    zf_vstate *vs = h->versions;
    if (!vs)
        return;
    for (size_t i = 1; i < vs->nslots; i++) {
        vgraft *g = vs->slots[i];
        zf_hierarchy_free(g->h);
        zf_h_node_free(g->stand_in);
        free(g->name);
        free(g);
    }
    free(vs->slots);
    for (size_t i = 0; i < vs->nkinds; i++) {
        vkind *k = &vs->kinds[i];
        for (size_t j = 0; j < k->nlisting; j++)
            free(k->listing[j].name);
        free(k->listing);
        for (size_t b = 0; b < k->nbuckets; b++)
            for (ventry *e = k->buckets[b], *next; e; e = next) {
                next = e->next;
                free(e->name);
                free(e);
            }
        free(k->buckets);
        free(k->name);
    }
    free(vs->kinds);
    if (vs->v.destroy) /* after the versions' stores, which may use it */
        vs->v.destroy(vs->v.ctx);
    free(vs->dir_name);
    pthread_cond_destroy(&vs->cv);
    pthread_mutex_destroy(&vs->mu);
    free(vs);
    h->versions = NULL;
}
