/* Unit tests for a repository's versions as hidden directories (hierarchy.h, zf_versions;
 * src/hierarchy/versions.c), with a provider whose versions are plain Zarr v3 directories
 * (versions_mock.h): the hidden directory reached by name and never listed, kinds and names,
 * nodes of a version read through the mount's chunk cache, disjoint ids, writes refused, a
 * version leaving its listing after the TTL, a text file and its refresh, one opening for
 * concurrent lookups. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "versions_mock.h"
#include "zarrfs/hierarchy.h"

#include "../check_main.h"

#define SHIFT 40 /* a version's ids: slot << 40 (hierarchy.h) */

typedef struct fixture {
    mock *m;
    char base[200];
    zf_hierarchy *h;
} fixture;

/* What the hierarchy's gone function was told. */
typedef struct gone_rec {
    uint64_t dir_id, id;
    char name[64];
    bool deleted;
} gone_rec;
static gone_rec gone_log[32];
static _Atomic size_t ngone;

static void on_gone(void *ctx, uint64_t dir_id, const char *name, uint64_t id, bool deleted)
{
    (void)ctx;
    size_t i = ngone++;
    if (i < 32) {
        gone_log[i] = (gone_rec){.dir_id = dir_id, .id = id, .deleted = deleted};
        snprintf(gone_log[i].name, sizeof gone_log[i].name, "%s", name);
    }
}

static void open_fixture(fixture *f, double ttl, bool writable)
{
    f->m = mock_new();
    snprintf(f->base, sizeof f->base, "%s", f->m->base);
    char main_dir[300];
    snprintf(main_dir, sizeof main_dir, "%s/main", f->base);
    zf_store *s;
    zf_err err = {""};
    ck_assert_int_eq(zf_store_file_open(main_dir, &s, &err), ZF_OK);
    zf_hierarchy_options o = {.cache_size = 1 << 20, .threads = 2, .metadata_ttl = ttl,
                              .writable = writable};
    ck_assert_msg(zf_hierarchy_open(s, "repo.zarr", &o, &f->h, &err) == ZF_OK, "%s", err.msg);
    zf_versions v = mock_versions(f->m);
    zf_hierarchy_set_versions(f->h, &v);
    zf_hierarchy_on_gone(f->h, on_gone, NULL);
    ngone = 0;
}

static void close_fixture(fixture *f)
{
    int before = mock_destroyed;
    zf_hierarchy_free(f->h);
    ck_assert_int_eq(mock_destroyed, before + 1); /* the provider's ctx goes with it */
    mock_remove_dir(f->base);
}

static bool has_name(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static zf_node *lookup(zf_hierarchy *h, const char *path)
{
    zf_node *n = NULL;
    zf_err err = {""};
    zf_status st = zf_hierarchy_lookup(h, path, &n, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s %s", path, zf_status_str(st), err.msg);
    return n;
}

static zf_node *child(zf_hierarchy *h, zf_node *dir, const char *name)
{
    zf_node *n = NULL;
    zf_err err = {""};
    zf_status st = zf_hierarchy_child(h, dir, name, &n, &err);
    ck_assert_msg(st == ZF_OK, "%s: %s %s", name, zf_status_str(st), err.msg);
    return n;
}

/* The 16 bytes of array node n, read through its hierarchy (given the mount's). */
static void read_array(zf_hierarchy *h, zf_node *n, uint8_t out[16])
{
    zf_array *a;
    zf_err err = {""};
    ck_assert_msg(zf_hierarchy_array(h, n, &a, &err) == ZF_OK, "%s", err.msg);
    size_t got = 0;
    ck_assert_msg(zf_array_read(a, 0, out, 16, &got, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(got, 16);
}

static void check_values(zf_hierarchy *h, zf_node *n, int seed)
{
    uint8_t got[16], want[16];
    mock_values(seed, want);
    read_array(h, n, got);
    ck_assert_msg(memcmp(got, want, 16) == 0, "%s: not the values of seed %d", n->path, seed);
}

static char *read_text(zf_hierarchy *h, zf_node *n)
{
    uint64_t size;
    struct timespec t;
    zf_hierarchy_node_stat(n, &size, &t);
    char *buf = calloc(1, size + 1);
    size_t got = 0;
    zf_err err = {""};
    ck_assert_msg(zf_hierarchy_read_derived(h, n, 0, buf, size + 16, &got, &err) == ZF_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(got, size);
    return buf;
}

START_TEST(test_hidden_dir)
{
    fixture f;
    open_fixture(&f, 0, false);
    zf_node *root = lookup(f.h, "");
    ck_assert_uint_eq(root->id, 1);
    char **names;
    size_t n;
    zf_err err = {""};
    ck_assert_int_eq(zf_hierarchy_list(f.h, root, &names, &n, &err), ZF_OK);
    ck_assert(has_name(names, n, "a"));
    ck_assert(!has_name(names, n, ".icechunk")); /* reached by name, never listed */
    zf_hierarchy_names_free(names, n);
    /* (the store's own group of that name is listed without versions: the filter is theirs) */
    zf_hierarchy *plain;
    zf_store *s;
    char main_dir[300];
    snprintf(main_dir, sizeof main_dir, "%s/main", f.base);
    ck_assert_int_eq(zf_store_file_open(main_dir, &s, NULL), ZF_OK);
    zf_hierarchy_options o = {.cache_size = 1 << 20, .threads = 1};
    ck_assert_int_eq(zf_hierarchy_open(s, "repo", &o, &plain, NULL), ZF_OK);
    ck_assert_int_eq(zf_hierarchy_list(plain, lookup(plain, ""), &names, &n, &err), ZF_OK);
    ck_assert(has_name(names, n, ".icechunk"));
    zf_hierarchy_names_free(names, n);
    ck_assert(!lookup(plain, ".icechunk")->synthetic);
    zf_hierarchy_free(plain);

    zf_node *dir = child(f.h, root, ".icechunk");
    ck_assert(dir->is_dir && dir->synthetic);
    ck_assert(zf_hierarchy_node_in_versions(dir));
    ck_assert_ptr_eq(lookup(f.h, ".icechunk"), dir);
    ck_assert_ptr_eq(zf_hierarchy_node(f.h, dir->id), dir);
    ck_assert_int_eq(zf_hierarchy_list(f.h, dir, &names, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(names[0], "branches");
    ck_assert_str_eq(names[1], "tags");
    ck_assert_str_eq(names[2], "snapshots");
    zf_hierarchy_names_free(names, n);

    zf_node *branches = child(f.h, dir, "branches");
    ck_assert(branches->is_dir && branches->synthetic);
    ck_assert_int_eq(zf_hierarchy_list(f.h, branches, &names, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(has_name(names, n, "main") && has_name(names, n, "main.log"));
    zf_hierarchy_names_free(names, n);
    ck_assert_int_eq(zf_hierarchy_list(f.h, lookup(f.h, ".icechunk/tags"), &names, &n, &err),
                     ZF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(has_name(names, n, "v1") && has_name(names, n, "v2"));
    zf_hierarchy_names_free(names, n);
    ck_assert_int_eq(f.m->opens, 0); /* listings open no version */

    zf_node *x;
    ck_assert_int_eq(zf_hierarchy_child(f.h, dir, "nope", &x, NULL), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_hierarchy_child(f.h, branches, "nope", &x, NULL), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_hierarchy_child(f.h, branches, "..", &x, NULL), ZF_ERR_NOT_FOUND);
    /* only at the root: a group's child of that name is an ordinary lookup */
    ck_assert_int_eq(zf_hierarchy_lookup(f.h, "a/.icechunk", &x, NULL), ZF_ERR_NOT_FOUND);
    close_fixture(&f);
}
END_TEST

START_TEST(test_version_nodes)
{
    fixture f;
    open_fixture(&f, 0, false);
    zf_node *v1 = lookup(f.h, ".icechunk/tags/v1");
    zf_node *main_b = lookup(f.h, "a/b");
    ck_assert(v1->is_dir && !v1->synthetic);
    ck_assert_ptr_nonnull(v1->owner);
    ck_assert_ptr_ne(v1->owner, f.h);
    uint64_t slot1 = v1->id >> SHIFT;
    ck_assert_uint_ge(slot1, 1);
    ck_assert_uint_eq(v1->id, (slot1 << SHIFT) + 1); /* the version's root: its first id */
    ck_assert_ptr_eq(zf_hierarchy_node(f.h, v1->id), v1);
    ck_assert_int_eq(f.m->opens, 1);

    /* its nodes, as a mount shows them: groups, arrays, attributes */
    char **names;
    size_t n;
    zf_err err = {""};
    ck_assert_int_eq(zf_hierarchy_list(f.h, v1, &names, &n, &err), ZF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(names[0], "a");
    zf_hierarchy_names_free(names, n);
    zf_node *a = child(f.h, v1, "a");
    zf_node *b = child(f.h, a, "b");
    ck_assert_ptr_eq(lookup(f.h, ".icechunk/tags/v1/a/b"), b);
    ck_assert(!b->is_dir);
    ck_assert_uint_eq(b->size, 16);
    ck_assert_str_eq(b->path, "a/b"); /* a view path of its own hierarchy */
    ck_assert_ptr_nonnull(strstr(b->meta.attributes_json, "10"));
    ck_assert_uint_eq(a->id >> SHIFT, slot1);
    ck_assert_uint_eq(b->id >> SHIFT, slot1);
    ck_assert_ptr_eq(zf_hierarchy_node(f.h, b->id), b);
    ck_assert(zf_hierarchy_node_in_versions(b));
    ck_assert(!zf_hierarchy_node_in_versions(main_b));

    /* bytes through the mount's one cache: each array its own chunks */
    zf_cache_stats before, after;
    zf_cache_get_stats(zf_hierarchy_cache(f.h), &before);
    check_values(f.h, b, 10);
    zf_cache_get_stats(zf_hierarchy_cache(f.h), &after);
    ck_assert_uint_eq(after.misses, before.misses + 2);
    ck_assert_uint_eq(after.entries, before.entries + 2);
    check_values(f.h, main_b, 100);
    zf_node *v2b = lookup(f.h, ".icechunk/tags/v2/a/b");
    check_values(f.h, v2b, 20);
    check_values(v2b->owner, v2b, 20); /* (the version's own hierarchy, given directly) */
    check_values(f.h, b, 10);
    zf_cache_get_stats(zf_hierarchy_cache(f.h), &after);
    ck_assert_uint_eq(after.entries, before.entries + 6);

    /* ids: disjoint from the mount's (below 2^40) and between versions, and below 2^61 */
    uint64_t slot2 = v2b->id >> SHIFT;
    ck_assert_uint_ne(slot1, slot2);
    ck_assert_uint_lt(main_b->id, (uint64_t)1 << SHIFT);
    ck_assert_uint_lt(v2b->id, (uint64_t)1 << 61);
    ck_assert_ptr_null(zf_hierarchy_node(f.h, (slot2 << SHIFT) + 999)); /* not made */
    ck_assert_ptr_null(zf_hierarchy_node(f.h, ((uint64_t)12345 << SHIFT) + 1));
    ck_assert_ptr_null(zf_hierarchy_node(f.h, (uint64_t)1 << 62));
    ck_assert_ptr_null(zf_hierarchy_node(f.h, UINT64_MAX));

    /* a version whose root is an array: a directory holding one file named as the mount's
     * store ("repo.zarr" -> "repo") */
    zf_node *arr = lookup(f.h, ".icechunk/snapshots/ARR");
    ck_assert(arr->is_dir && arr->virtual_root);
    ck_assert_uint_eq(arr->id, ((arr->id >> SHIFT) << SHIFT) + 1);
    zf_node *file = child(f.h, arr, "repo");
    check_values(f.h, file, 40);
    ck_assert_int_eq(f.m->opens, 3);
    close_fixture(&f);
}
END_TEST

START_TEST(test_writes_refused)
{
    fixture f;
    open_fixture(&f, 0, true); /* -o rw over a writable store: the mount's own can be written */
    zf_err err = {""};
    ck_assert_int_eq(zf_hierarchy_can_write(f.h, &err), ZF_OK);
    zf_node *root = lookup(f.h, ""), *dir = lookup(f.h, ".icechunk");
    zf_node *tags = lookup(f.h, ".icechunk/tags"), *v1 = lookup(f.h, ".icechunk/tags/v1");
    zf_node *b = lookup(f.h, ".icechunk/tags/v1/a/b");
    zf_node *log = lookup(f.h, ".icechunk/branches/main.log");
    zf_node *out;
    uint8_t buf[4] = {1, 2, 3, 4};
    ck_assert_int_eq(zf_hierarchy_can_write(v1->owner, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_write(f.h, b, 0, buf, 4, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_write(f.h, b, 16, buf, 4, NULL), ZF_ERR_READONLY); /* growth */
    ck_assert_int_eq(zf_hierarchy_resize(f.h, b, 8, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_set_attributes(f.h, b, "{}", 2, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_set_attributes(f.h, dir, "{}", 2, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_mkdir(f.h, v1, "g", &out, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_create(f.h, v1, "f", &out, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_unlink(f.h, v1, "a", NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_mkdir(f.h, dir, "g", &out, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_mkdir(f.h, tags, "v9", &out, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_create(f.h, tags, "f", &out, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_unlink(f.h, tags, "v1", NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_unlink(f.h, root, ".icechunk", NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_rmdir(f.h, root, ".icechunk", NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_rmdir(f.h, tags, "v1", NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_set_attributes(f.h, log, "{}", 2, NULL), ZF_ERR_READONLY);
    ck_assert_int_eq(zf_hierarchy_write(f.h, log, 0, buf, 4, NULL), ZF_ERR_READONLY);
    ck_assert(zf_hierarchy_node_in_versions(log) && zf_hierarchy_node_in_versions(tags));
    check_values(f.h, b, 10); /* unchanged */
    ck_assert_int_eq(zf_hierarchy_flush(f.h, b, NULL), ZF_OK);

    /* the mount's own hierarchy is written as before */
    zf_node *mb = lookup(f.h, "a/b");
    ck_assert_int_eq(zf_hierarchy_write(f.h, mb, 0, buf, 4, &err), ZF_OK);
    ck_assert_int_eq(zf_hierarchy_flush(f.h, NULL, &err), ZF_OK);
    uint8_t got[16];
    read_array(f.h, mb, got);
    ck_assert_int_eq(memcmp(got, buf, 4), 0);
    check_values(f.h, b, 10); /* the version's chunks are its own */
    close_fixture(&f);
}
END_TEST

START_TEST(test_version_leaves_listing)
{
    fixture f;
    open_fixture(&f, 0.2, false);
    zf_node *tags = lookup(f.h, ".icechunk/tags");
    zf_node *v1 = lookup(f.h, ".icechunk/tags/v1"), *b = lookup(f.h, ".icechunk/tags/v1/a/b");
    mock_version(f.base, "tags", "v1", false); /* the tag is deleted */
    char v3[400];                            /* another made, not a hierarchy: cannot open */
    snprintf(v3, sizeof v3, "%s/tags/v3", f.base);
    mkdir(v3, 0755);
    zf_node *x;
    ck_assert_int_eq(zf_hierarchy_child(f.h, tags, "v1", &x, NULL), ZF_OK); /* within the TTL */
    ck_assert_ptr_eq(x, v1);
    usleep(300 * 1000);
    ck_assert_int_eq(zf_hierarchy_child(f.h, tags, "v1", &x, NULL), ZF_ERR_NOT_FOUND);
    char **names;
    size_t n;
    ck_assert_int_eq(zf_hierarchy_list(f.h, tags, &names, &n, NULL), ZF_OK);
    ck_assert(!has_name(names, n, "v1") && has_name(names, n, "v3") && has_name(names, n, "v2"));
    zf_hierarchy_names_free(names, n);
    /* the kernel was told: the name leads nowhere */
    ck_assert_uint_eq(ngone, 1);
    ck_assert_uint_eq(gone_log[0].dir_id, tags->id);
    ck_assert_str_eq(gone_log[0].name, "v1");
    ck_assert_uint_eq(gone_log[0].id, v1->id);
    ck_assert(gone_log[0].deleted);
    /* open files keep reading it */
    ck_assert_ptr_eq(zf_hierarchy_node(f.h, b->id), b);
    check_values(f.h, b, 10);
    /* a listed version that cannot be opened fails its lookup, with the provider's reason */
    zf_err err = {""};
    ck_assert_int_eq(zf_hierarchy_child(f.h, tags, "v3", &x, &err), ZF_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "tags/v3"));
    /* the tag made again: a new hierarchy, new ids */
    mock_version(f.base, "tags", "v1", true);
    usleep(300 * 1000);
    zf_node *again = lookup(f.h, ".icechunk/tags/v1");
    ck_assert_ptr_ne(again, v1);
    ck_assert_uint_ne(again->id >> SHIFT, v1->id >> SHIFT);
    check_values(f.h, lookup(f.h, ".icechunk/tags/v1/a/b"), 10);
    close_fixture(&f);
}
END_TEST

START_TEST(test_text_file)
{
    fixture f;
    open_fixture(&f, 0.2, false);
    zf_node *branches = lookup(f.h, ".icechunk/branches");
    /* as a listing's entry: its node and id, not read yet */
    zf_node *e;
    ck_assert_int_eq(zf_hierarchy_child_entry(f.h, branches, "main.log", &e, NULL), ZF_OK);
    ck_assert(!e->is_dir && e->synthetic && e->derived);
    ck_assert_int_eq(f.m->files, 0);
    ck_assert(!zf_hierarchy_attrs_ready(f.h, e));
    ck_assert_ptr_eq(zf_hierarchy_node(f.h, e->id), e); /* stat'ed: read now */
    ck_assert_int_eq(f.m->files, 1);
    ck_assert(zf_hierarchy_attrs_ready(f.h, e));
    zf_node *log = child(f.h, branches, "main.log");
    ck_assert_ptr_eq(log, e);
    ck_assert_int_eq(f.m->files, 1);
    char *t = read_text(f.h, log);
    ck_assert_str_eq(t, "S1 first commit\n");
    free(t);
    ck_assert_uint_eq(log->size, strlen("S1 first commit\n"));
    ck_assert_int_eq(zf_hierarchy_array(f.h, log, &(zf_array *){NULL}, NULL), ZF_ERR_INVALID);
    zf_array *da;
    uint64_t off;
    ck_assert_int_eq(zf_hierarchy_derived_data(f.h, log, 0, &da, &off, NULL), ZF_ERR_NOT_FOUND);

    /* the branch gains a commit: the same text within the TTL, the new one after it */
    mock_text(f.base, "branches", "main.log", "S2 second commit\nS1 first commit\n");
    ck_assert_ptr_eq(child(f.h, branches, "main.log"), log);
    usleep(300 * 1000);
    zf_node *log2 = child(f.h, branches, "main.log");
    ck_assert_ptr_ne(log2, log);
    ck_assert_uint_ne(log2->id, log->id);
    t = read_text(f.h, log2);
    ck_assert_str_eq(t, "S2 second commit\nS1 first commit\n");
    free(t);
    t = read_text(f.h, log); /* an open file of the old text keeps it */
    ck_assert_str_eq(t, "S1 first commit\n");
    free(t);
    ck_assert_uint_eq(ngone, 1);
    ck_assert_uint_eq(gone_log[0].dir_id, branches->id);
    ck_assert_str_eq(gone_log[0].name, "main.log");
    ck_assert_uint_eq(gone_log[0].id, log->id);
    ck_assert(!gone_log[0].deleted);
    /* unchanged after the TTL: the same node */
    usleep(300 * 1000);
    ck_assert_ptr_eq(child(f.h, branches, "main.log"), log2);
    /* gone from the listing */
    mock_text(f.base, "branches", "main.log", NULL);
    usleep(300 * 1000);
    zf_node *x;
    ck_assert_int_eq(zf_hierarchy_child(f.h, branches, "main.log", &x, NULL), ZF_ERR_NOT_FOUND);
    ck_assert_uint_eq(ngone, 2);
    ck_assert(gone_log[1].deleted && gone_log[1].id == log2->id);
    close_fixture(&f);
}
END_TEST

START_TEST(test_listing_entries)
{
    fixture f;
    open_fixture(&f, 0, false);
    zf_node *snaps = lookup(f.h, ".icechunk/snapshots");
    /* a listing's entry for a version not opened: a stand-in with its root's id to come */
    zf_node *s;
    ck_assert_int_eq(zf_hierarchy_child_entry(f.h, snaps, "S1", &s, NULL), ZF_OK);
    ck_assert(s->is_dir);
    ck_assert(!zf_hierarchy_attrs_ready(f.h, s));
    ck_assert_int_eq(f.m->opens, 0);
    uint64_t id = s->id;
    ck_assert_uint_eq(id, ((id >> SHIFT) << SHIFT) + 1);
    zf_node *root = child(f.h, snaps, "S1");
    ck_assert_int_eq(f.m->opens, 1);
    ck_assert_uint_eq(root->id, id); /* what the listing gave is what lookup gives */
    ck_assert(zf_hierarchy_attrs_ready(f.h, root));
    zf_node *again;
    ck_assert_int_eq(zf_hierarchy_child_entry(f.h, snaps, "S1", &again, NULL), ZF_OK);
    ck_assert_ptr_eq(again, root);
    /* an id a listing gave, asked for before any lookup (the kernel's stat) opens it */
    zf_node *arr;
    ck_assert_int_eq(zf_hierarchy_child_entry(f.h, snaps, "ARR", &arr, NULL), ZF_OK);
    zf_node *byid = zf_hierarchy_node(f.h, arr->id);
    ck_assert_ptr_nonnull(byid);
    ck_assert(byid->virtual_root && byid->id == arr->id);
    ck_assert_int_eq(f.m->opens, 2);
    close_fixture(&f);
}
END_TEST

/* A provider's odd names: not single path segments, twice, empty kinds. */
static const char *const odd_kinds[] = {"tags", "a/b", "..", "tags", ""};

START_TEST(test_odd_names)
{
    fixture f;
    open_fixture(&f, 0, false);
    zf_hierarchy_free(f.h); /* (again, with other kinds) */
    mock_remove_dir(f.base);
    f.m = mock_new();
    snprintf(f.base, sizeof f.base, "%s", f.m->base);
    char main_dir[300];
    snprintf(main_dir, sizeof main_dir, "%s/main", f.base);
    zf_store *st;
    zf_hierarchy_options o = {.cache_size = 1 << 20, .threads = 1};
    ck_assert_int_eq(zf_store_file_open(main_dir, &st, NULL), ZF_OK);
    ck_assert_int_eq(zf_hierarchy_open(st, "repo", &o, &f.h, NULL), ZF_OK);
    zf_versions v = mock_versions(f.m);
    v.kinds = odd_kinds;
    v.nkinds = 5;
    zf_hierarchy_set_versions(f.h, &v);
    mock_append(f.m, "tags", "a/b", true);
    mock_append(f.m, "tags", "..", true);
    mock_append(f.m, "tags", "", true);
    mock_append(f.m, "tags", "v1", false); /* (a directory first: the first wins) */
    char **names;
    size_t n;
    zf_node *dir = lookup(f.h, ".icechunk");
    ck_assert_int_eq(zf_hierarchy_list(f.h, dir, &names, &n, NULL), ZF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(names[0], "tags");
    zf_hierarchy_names_free(names, n);
    ck_assert_int_eq(zf_hierarchy_list(f.h, lookup(f.h, ".icechunk/tags"), &names, &n, NULL),
                     ZF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(names[0], "v1");
    ck_assert_str_eq(names[1], "v2");
    zf_hierarchy_names_free(names, n);
    ck_assert(lookup(f.h, ".icechunk/tags/v1")->is_dir);
    close_fixture(&f);
}
END_TEST

/* Looking a version up from several threads at once opens it once (and TSan sees no race). */
typedef struct racer {
    zf_hierarchy *h;
    zf_node *tags;
    pthread_barrier_t *go;
    zf_node *got;
    zf_status st;
    bool entry;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->st = r->entry ? zf_hierarchy_child_entry(r->h, r->tags, "v2", &r->got, NULL)
                     : zf_hierarchy_child(r->h, r->tags, "v2", &r->got, NULL);
    if (r->st == ZF_OK && !r->entry) {
        zf_node *b;
        uint8_t got[16];
        if (zf_hierarchy_lookup(r->h, ".icechunk/tags/v2/a/b", &b, NULL) == ZF_OK)
            read_array(r->h, b, got);
    }
    return NULL;
}

START_TEST(test_concurrent_open)
{
    fixture f;
    open_fixture(&f, 0, false);
    f.m->open_delay_us = 100 * 1000;
    zf_node *tags = lookup(f.h, ".icechunk/tags");
    enum { N = 4 };
    pthread_t t[N];
    racer r[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
        r[i] = (racer){.h = f.h, .tags = tags, .go = &go, .entry = i == N - 1};
        pthread_create(&t[i], NULL, race, &r[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    ck_assert_int_eq(f.m->opens, 1);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(r[i].st, ZF_OK);
        ck_assert_uint_eq(r[i].got->id, r[0].got->id);
        if (!r[i].entry)
            ck_assert_ptr_eq(r[i].got, r[0].got);
    }
    check_values(f.h, lookup(f.h, ".icechunk/tags/v2/a/b"), 20);
    close_fixture(&f);
}
END_TEST

START_TEST(test_stats)
{
    fixture f;
    open_fixture(&f, 0, false);
    char *before = zf_hierarchy_stats_json(f.h, 0);
    check_values(f.h, lookup(f.h, ".icechunk/tags/v1/a/b"), 10);
    char *after = zf_hierarchy_stats_json(f.h, 0);
    unsigned long long r0, r1;
    const char *p0 = strstr(before, "\"requests\": "), *p1 = strstr(after, "\"requests\": ");
    ck_assert(p0 && p1);
    ck_assert_int_eq(sscanf(p0, "\"requests\": %llu", &r0), 1);
    ck_assert_int_eq(sscanf(p1, "\"requests\": %llu", &r1), 1);
    ck_assert_uint_ge(r1, r0 + 2); /* the version's store's requests count: two chunks at least */
    free(before);
    free(after);
    close_fixture(&f);
}
END_TEST

ZF_CHECK_MAIN("versions", test_hidden_dir, test_version_nodes, test_writes_refused,
              test_version_leaves_listing, test_text_file, test_listing_entries, test_odd_names,
              test_concurrent_open, test_stats)
