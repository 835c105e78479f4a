/* Unit tests of the Icechunk file-format reader (include/zarrfs/icechunk.h): the upstream
 * compatibility repositories of tests/fixtures/icechunk (README.md there), whose contents
 * icechunk-python/tests/test_can_read_old.py defines: commits "Repository initialized", "empty
 * structure", "fill data" (big_chunks[:] = 42.0, small_chunks[:] = 84), "set virtual chunk"
 * (chunk 0/0 of big_chunks at s3://testbucket/can_read_old/chunk-1, length of chunk 0/1, checksum
 * datetime(9999, 12, 31)) on main; branch my-branch: "delete a chunk" (small_chunks/c/4), "some
 * more structure" (/group2/group3/group4/group5/inner); tags "it works!", "it also works!" and
 * the deleted "deleted"; the container s3://testbucket/ (s3_compatible, us-east-1,
 * http://localhost:4200, allow_http, force_path_style). The split repositories: four commits of
 * /group1/split (float32 10 x 10 in 3 x 3 chunks; 120, 12, 14) and small_chunks (0, 1, 3)
 * whose snapshots list 0, 9, 9 and 17 manifests.
 *
 * Then files flatc made at build time from the JSON files of icechunk/ (tests/store/meson.build),
 * given a header here: well-formed ones with what the specification allows (spec 1 shapes,
 * compressed locations with a zstd dictionary trained by the zstd command, empty inline chunks,
 * the store forms of the configuration), and ones each check must refuse; and hostile edits of
 * the fixtures' bytes (magic, truncation, file type, versions, compression, the verifier). */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "zarrfs/icechunk.h"

#include "icechunk_impl.h"

#ifndef IC_TEST_BINDIR
#error "IC_TEST_BINDIR is not defined (tests/store/meson.build)"
#endif
#ifndef ZF_TEST_FIXTURES
#error "ZF_TEST_FIXTURES is not defined (tests/meson.build's fixture_args)"
#endif

/* ----- helpers ----- */

typedef struct buf {
    uint8_t *data;
    size_t len;
} buf;

static bool slurp(const char *path, buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b->data = malloc(n > 0 ? (size_t)n : 1);
    b->len = (size_t)n;
    bool ok = b->data && fread(b->data, 1, b->len, f) == b->len;
    fclose(f);
    return ok;
}

/* A file of the fixtures: tests/fixtures/icechunk/REPO/REL. */
static buf fixture(const char *repo, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/icechunk/%s/%s", ZF_TEST_FIXTURES, repo, rel);
    buf b = {0};
    ck_assert_msg(slurp(path, &b), "cannot read %s", path);
    return b;
}

static bool fixture_exists(const char *repo, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/icechunk/%s/%s", ZF_TEST_FIXTURES, repo, rel);
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* The file of object `id` in directory dir ("snapshots", "manifests", "chunks"). */
static buf object_file(const char *repo, const char *dir, const uint8_t id[ZF_IC_ID_LEN])
{
    char text[ZF_IC_ID_TEXT_LEN + 1], rel[64];
    zf_ic_id_encode(id, text);
    snprintf(rel, sizeof rel, "%s/%s", dir, text);
    return fixture(repo, rel);
}

/* A payload made by flatc (IC_TEST_BINDIR/NAME.bin). */
static buf flatc_bin(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", IC_TEST_BINDIR, name);
    buf b = {0};
    ck_assert_msg(slurp(path, &b), "cannot read %s", path);
    return b;
}

/* payload with a header: writer "zarrfs-test", spec, file type; compression 1 (zstd, one frame
 * with its content size, ZSTD_compress) or 0. */
static buf wrap(const buf *payload, uint8_t spec, uint8_t type, uint8_t compression)
{
    size_t cap = ZF_IC_HEADER_LEN + ZSTD_compressBound(payload->len);
    buf b = {malloc(cap), 0};
    ck_assert_ptr_nonnull(b.data);
    static const uint8_t magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                      0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};
    memcpy(b.data, magic, 12);
    memset(b.data + 12, ' ', 24);
    memcpy(b.data + 12, "zarrfs-test", 11);
    b.data[36] = spec, b.data[37] = type, b.data[38] = compression;
    if (compression == 0) {
        memcpy(b.data + ZF_IC_HEADER_LEN, payload->data, payload->len);
        b.len = ZF_IC_HEADER_LEN + payload->len;
    } else {
        size_t r = ZSTD_compress(b.data + ZF_IC_HEADER_LEN, cap - ZF_IC_HEADER_LEN, payload->data,
                                 payload->len, 3);
        ck_assert(!ZSTD_isError(r));
        b.len = ZF_IC_HEADER_LEN + r;
    }
    return b;
}

static buf flatc_file(const char *name, uint8_t type)
{
    buf p = flatc_bin(name);
    buf b = wrap(&p, 2, type, 1);
    free(p.data);
    return b;
}

/* The decompressed payload of a fixture file. */
static buf payload_of(const buf *file)
{
    buf p;
    zf_err err = {""};
    ck_assert_msg(zf_ic_zstd_bounded(file->data + ZF_IC_HEADER_LEN, file->len - ZF_IC_HEADER_LEN,
                                     ZF_IC_MAX_PAYLOAD, &p.data, &p.len, &err) == ZF_OK,
                  "%s", err.msg);
    return p;
}

/* zstd-decompress a chunk (the fixtures' arrays use the zstd codec) of at most cap bytes. */
static size_t unzstd(const uint8_t *src, size_t n, void *out, size_t cap)
{
    size_t r = ZSTD_decompress(out, cap, src, n);
    ck_assert_msg(!ZSTD_isError(r), "zstd: %s", ZSTD_getErrorName(r));
    return r;
}

static zf_ic_repo *repo_of(const buf *b)
{
    zf_ic_repo *r;
    zf_err err = {""};
    ck_assert_msg(zf_ic_repo_parse(b->data, b->len, &r, &err) == ZF_OK, "%s", err.msg);
    return r;
}

static zf_ic_snapshot *snapshot_of(const buf *b)
{
    zf_ic_snapshot *s;
    zf_err err = {""};
    ck_assert_msg(zf_ic_snapshot_parse(b->data, b->len, &s, &err) == ZF_OK, "%s", err.msg);
    return s;
}

static zf_ic_manifest *manifest_of(const buf *b)
{
    zf_ic_manifest *m;
    zf_err err = {""};
    ck_assert_msg(zf_ic_manifest_parse(b->data, b->len, &m, &err) == ZF_OK, "%s", err.msg);
    return m;
}

static zf_ic_snapshot *load_snapshot(const char *repo, const uint8_t id[ZF_IC_ID_LEN])
{
    buf b = object_file(repo, "snapshots", id);
    zf_ic_snapshot *s = snapshot_of(&b);
    free(b.data);
    return s;
}

/* What each parser says of a whole file (errors expected). */
static zf_status repo_status(const buf *b, zf_err *err)
{
    zf_ic_repo *r = NULL;
    zf_status st = zf_ic_repo_parse(b->data, b->len, &r, err);
    zf_ic_repo_free(r);
    return st;
}

static zf_status snapshot_status(const buf *b, zf_err *err)
{
    zf_ic_snapshot *s = NULL;
    zf_status st = zf_ic_snapshot_parse(b->data, b->len, &s, err);
    zf_ic_snapshot_free(s);
    return st;
}

static zf_status manifest_status(const buf *b, zf_err *err)
{
    zf_ic_manifest *m = NULL;
    zf_status st = zf_ic_manifest_parse(b->data, b->len, &m, err);
    zf_ic_manifest_free(m);
    return st;
}

/* ----- expected histories (test_can_read_old.py) ----- */

static const char *const MAIN_HISTORY[] = {"set virtual chunk", "fill data", "empty structure",
                                           "Repository initialized", NULL};
static const char *const BRANCH_HISTORY[] = {
    "some more structure", "delete a chunk", "set virtual chunk", "fill data", "empty structure",
    "Repository initialized", NULL};
static const char *const SPLIT_HISTORY[] = {"write data again with more splits",
                                            "write data again", "write data", "empty structure",
                                            "Repository initialized", NULL};
static const char *const TIP_NODES[] = {"/",
                                        "/group1",
                                        "/group1/big_chunks",
                                        "/group1/small_chunks",
                                        "/group2",
                                        "/group2/group3",
                                        "/group2/group3/group4",
                                        "/group2/group3/group4/group5",
                                        "/group2/group3/group4/group5/inner",
                                        NULL};

/* The messages from snapshot index i back through the parents of a spec-2 repo. */
static void expect_history_v2(const zf_ic_repo *r, size_t i, const char *const *want)
{
    size_t k = 0;
    for (int64_t at = (int64_t)i; at >= 0; k++) {
        ck_assert_msg(k <= zf_ic_repo_nsnapshots(r), "the parents loop");
        zf_ic_snapshot_info info;
        zf_ic_repo_snapshot(r, (size_t)at, &info);
        ck_assert_msg(want[k], "more history than expected: \"%s\"", info.message);
        ck_assert_str_eq(info.message, want[k]);
        at = info.parent;
    }
    ck_assert_ptr_null(want[k]);
}

/* The messages from a snapshot back through the parents the snapshot files of a spec-1 repo
 * name. */
static void expect_history_v1(const char *repo, const uint8_t tip[ZF_IC_ID_LEN],
                              const char *const *want)
{
    uint8_t id[ZF_IC_ID_LEN];
    memcpy(id, tip, sizeof id);
    for (size_t k = 0;; k++) {
        zf_ic_snapshot *s = load_snapshot(repo, id);
        zf_ic_snapshot_head h;
        zf_ic_snapshot_get_head(s, &h);
        ck_assert_uint_eq(h.spec_version, 1);
        ck_assert_msg(want[k], "more history than expected: \"%s\"", h.message);
        ck_assert_str_eq(h.message, want[k]);
        bool more = h.has_parent;
        memcpy(id, h.parent, sizeof id);
        zf_ic_snapshot_free(s);
        if (!more) {
            ck_assert_ptr_null(want[k + 1]);
            return;
        }
    }
}

/* The snapshot a spec-1 ref file names (refs/NAME/ref.json: {"snapshot":"ID"}). */
static void ref_v1(const char *repo, const char *name, uint8_t id[ZF_IC_ID_LEN])
{
    char rel[256], text[ZF_IC_ID_TEXT_LEN + 1];
    snprintf(rel, sizeof rel, "refs/%s/ref.json", name);
    buf b = fixture(repo, rel);
    char *s = strndup((const char *)b.data, b.len);
    ck_assert_int_eq(sscanf(s, "{\"snapshot\":\"%20[0-9A-Z]\"}", text), 1);
    ck_assert(zf_ic_id_decode(text, id));
    free(s);
    free(b.data);
}

static size_t ref_index(const zf_ic_repo *r, bool tags, const char *name)
{
    size_t i;
    ck_assert_msg(zf_ic_repo_lookup_ref(r, tags, name, &i), "no %s %s", tags ? "tag" : "branch",
                  name);
    return i;
}

/* ----- ids ----- */

START_TEST(ic_ids)
{
    /* the specification's example */
    const uint8_t first[ZF_IC_ID_LEN] = {0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
                                         0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
    char text[ZF_IC_ID_TEXT_LEN + 1];
    zf_ic_id_encode(first, text);
    ck_assert_str_eq(text, "1CECHNKREP0F1RSTCMT0");
    uint8_t id[ZF_IC_ID_LEN];
    ck_assert(zf_ic_id_decode("1CECHNKREP0F1RSTCMT0", id));
    ck_assert_mem_eq(id, first, ZF_IC_ID_LEN);
    /* Crockford's decoding: either case, I and L as 1, O as 0 */
    memset(id, 0, sizeof id);
    ck_assert(zf_ic_id_decode("lcechnkrepoficrstcmto", id) == false); /* 21 characters */
    ck_assert(zf_ic_id_decode("lcechnkrepofirstcmto", id));
    ck_assert_mem_eq(id, first, ZF_IC_ID_LEN);
    ck_assert(zf_ic_id_decode("ICECHNKREPOF1RSTCMT0", id));
    ck_assert_mem_eq(id, first, ZF_IC_ID_LEN);
    /* refused: lengths, characters outside the alphabet, padding bits */
    ck_assert(!zf_ic_id_decode("1CECHNKREP0F1RSTCMT", id));
    ck_assert(!zf_ic_id_decode("", id));
    ck_assert(!zf_ic_id_decode("1CECHNKREP0F1RSTCMTU", id));
    ck_assert(!zf_ic_id_decode("1CECHNKREP0F1RSTCM-0", id));
    ck_assert(!zf_ic_id_decode("1CECHNKREP0F1RSTCMT1", id)); /* last 4 bits not zero */
    ck_assert(zf_ic_id_decode("1CECHNKREP0F1RSTCMTG", id));  /* 10000: padding zero */
    ck_assert_uint_eq(id[11], 0x35);
    /* every object file of the fixtures is named by its id: decode and encode back */
    const char *dirs[] = {"test-repo-v2/snapshots", "test-repo-v2/manifests",
                          "test-repo-v2/chunks", "split-repo-v1/manifests"};
    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/icechunk/%s", ZF_TEST_FIXTURES, dirs[d]);
        DIR *dir = opendir(path);
        ck_assert_ptr_nonnull(dir);
        size_t n = 0;
        for (struct dirent *e; (e = readdir(dir));) {
            if (e->d_name[0] == '.')
                continue;
            ck_assert_msg(zf_ic_id_decode(e->d_name, id), "%s", e->d_name);
            zf_ic_id_encode(id, text);
            ck_assert_str_eq(text, e->d_name);
            n++;
        }
        closedir(dir);
        ck_assert_uint_gt(n, 0);
    }
}
END_TEST

/* ----- the header ----- */

START_TEST(ic_header)
{
    zf_ic_header h;
    zf_err err = {""};
    buf b = fixture("test-repo-v2", "repo");
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_OK);
    ck_assert_str_eq(h.writer, "ic-2.0.0-alpha.7");
    ck_assert_uint_eq(h.spec_version, 2);
    ck_assert_uint_eq(h.file_type, ZF_IC_FILE_REPO);
    ck_assert_uint_eq(h.compression, 1);
    free(b.data);
    b = fixture("test-repo-v1", "snapshots/NXH3M0HJ7EEJ0699DPP0");
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_OK);
    ck_assert_str_eq(h.writer, "ic-0.1.3");
    ck_assert_uint_eq(h.spec_version, 1);
    ck_assert_uint_eq(h.file_type, ZF_IC_FILE_SNAPSHOT);
    free(b.data);
    b = fixture("split-repo-v1", "transactions/BYJMXJ1CHYE86YSHESR0");
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_OK);
    ck_assert_str_eq(h.writer, "ic-0.2.12");
    ck_assert_uint_eq(h.file_type, ZF_IC_FILE_TXLOG);

    /* refused */
    ck_assert_int_eq(zf_ic_header_parse(b.data, 0, &h, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_ic_header_parse(b.data, 20, &h, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "truncated"));
    ck_assert_int_eq(zf_ic_header_parse(b.data, ZF_IC_HEADER_LEN - 1, &h, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_ic_header_parse((const uint8_t *)"\x93\x01\x02", 3, &h, &err),
                     ZF_ERR_CORRUPT); /* spec 0: msgpack, no header */
    ck_assert_ptr_nonnull(strstr(err.msg, "not an Icechunk file"));
    b.data[3] ^= 0x40;
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_ERR_CORRUPT);
    b.data[3] ^= 0x40;
    b.data[36] = 3;
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_ERR_UNSUPPORTED);
    b.data[36] = 0;
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_ERR_UNSUPPORTED);
    b.data[36] = 1;
    b.data[38] = 2;
    ck_assert_int_eq(zf_ic_header_parse(b.data, b.len, &h, &err), ZF_ERR_UNSUPPORTED);
    free(b.data);
}
END_TEST

/* ----- repo info files and histories ----- */

/* test-repo-v2 and test-repo-v2-migrated: refs, histories, every snapshot's file. */
static void check_repo_v2(const char *repo)
{
    buf b = fixture(repo, "repo");
    zf_ic_repo *r = repo_of(&b);
    free(b.data);
    ck_assert_uint_eq(zf_ic_repo_spec_version(r), 2);
    const char *name;
    size_t idx;
    ck_assert_uint_eq(zf_ic_repo_nrefs(r, false), 2);
    zf_ic_repo_ref(r, false, 0, &name, &idx);
    ck_assert_str_eq(name, "main");
    zf_ic_repo_ref(r, false, 1, &name, &idx);
    ck_assert_str_eq(name, "my-branch");
    ck_assert_uint_eq(zf_ic_repo_nrefs(r, true), 2);
    zf_ic_repo_ref(r, true, 0, &name, &idx);
    ck_assert_str_eq(name, "it also works!");
    zf_ic_repo_ref(r, true, 1, &name, &idx);
    ck_assert_str_eq(name, "it works!");
    ck_assert(!zf_ic_repo_lookup_ref(r, true, "deleted", &idx));
    ck_assert(!zf_ic_repo_lookup_ref(r, false, "it works!", &idx));
    ck_assert(!zf_ic_repo_lookup_ref(r, true, "main", &idx));

    expect_history_v2(r, ref_index(r, false, "main"), MAIN_HISTORY);
    expect_history_v2(r, ref_index(r, false, "my-branch"), BRANCH_HISTORY);
    expect_history_v2(r, ref_index(r, true, "it also works!"), BRANCH_HISTORY);
    expect_history_v2(r, ref_index(r, true, "it works!"), BRANCH_HISTORY + 1);

    /* each snapshot's file: the same id, message and time; a spec-1 file (migrated) names the
     * parent the repo info file gives */
    ck_assert_uint_eq(zf_ic_repo_nsnapshots(r), 6);
    for (size_t i = 0; i < zf_ic_repo_nsnapshots(r); i++) {
        zf_ic_snapshot_info info;
        zf_ic_repo_snapshot(r, i, &info);
        size_t found;
        ck_assert(zf_ic_repo_find_snapshot(r, info.id, &found));
        ck_assert_uint_eq(found, i);
        zf_ic_snapshot *s = load_snapshot(repo, info.id);
        zf_ic_snapshot_head h;
        zf_ic_snapshot_get_head(s, &h);
        ck_assert_mem_eq(h.id, info.id, ZF_IC_ID_LEN);
        ck_assert_str_eq(h.message, info.message);
        ck_assert_uint_eq(h.flushed_at, info.flushed_at);
        if (h.spec_version == 2) {
            ck_assert(!h.has_parent);
        } else {
            ck_assert_uint_eq(h.spec_version, 1);
            ck_assert_int_eq(h.has_parent, info.parent >= 0);
            if (info.parent >= 0) {
                zf_ic_snapshot_info p;
                zf_ic_repo_snapshot(r, (size_t)info.parent, &p);
                ck_assert_mem_eq(h.parent, p.id, ZF_IC_ID_LEN);
            }
        }
        zf_ic_snapshot_free(s);
    }
    uint8_t none[ZF_IC_ID_LEN] = {0xff};
    ck_assert(!zf_ic_repo_find_snapshot(r, none, &idx));
    zf_ic_repo_free(r);
}

START_TEST(ic_repo_v2)
{
    check_repo_v2("test-repo-v2");
    check_repo_v2("test-repo-v2-migrated");
    /* the initial snapshot of a spec-2 repository has the specification's well-known id */
    buf b = fixture("test-repo-v2", "repo");
    zf_ic_repo *r = repo_of(&b);
    free(b.data);
    const uint8_t first[ZF_IC_ID_LEN] = {0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
                                         0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
    size_t i;
    ck_assert(zf_ic_repo_find_snapshot(r, first, &i));
    zf_ic_snapshot_info info;
    zf_ic_repo_snapshot(r, i, &info);
    ck_assert_str_eq(info.message, "Repository initialized");
    ck_assert_int_eq(info.parent, -1);
    zf_ic_repo_free(r);
}
END_TEST

START_TEST(ic_repo_v1)
{
    const char *repo = "test-repo-v1";
    uint8_t id[ZF_IC_ID_LEN];
    ref_v1(repo, "branch.main", id);
    expect_history_v1(repo, id, MAIN_HISTORY);
    ref_v1(repo, "branch.my-branch", id);
    expect_history_v1(repo, id, BRANCH_HISTORY);
    ref_v1(repo, "tag.it also works!", id);
    expect_history_v1(repo, id, BRANCH_HISTORY);
    ref_v1(repo, "tag.it works!", id);
    expect_history_v1(repo, id, BRANCH_HISTORY + 1);
    /* spec 1 deletes a tag with a tombstone beside its ref */
    ck_assert(fixture_exists(repo, "refs/tag.deleted/ref.json.deleted"));
}
END_TEST

/* ----- snapshots and manifests of test-repo-* ----- */

static size_t node_index(const zf_ic_snapshot *s, const char *path)
{
    size_t i;
    ck_assert_msg(zf_ic_snapshot_find(s, path, strlen(path), &i), "no node %s", path);
    return i;
}

/* The reference of chunk coords of node i: through the ManifestRef whose extents hold it.
 * ZF_ERR_NOT_FOUND when none does. */
static zf_status find_chunk(const char *repo, const zf_ic_snapshot *s, size_t i,
                            const uint64_t *coords, size_t ndim, zf_ic_chunk_ref *out,
                            zf_ic_manifest **mp)
{
    zf_ic_node node;
    zf_ic_snapshot_node(s, i, &node);
    *mp = NULL;
    for (size_t j = 0; j < node.nmanifests; j++) {
        zf_ic_manifest_ref mr;
        zf_ic_snapshot_manifest_ref(s, i, j, &mr);
        ck_assert_uint_eq(mr.ndim, ndim);
        bool in = true;
        for (size_t k = 0; k < ndim; k++)
            in = in && mr.from[k] <= coords[k] && coords[k] < mr.to[k];
        if (!in)
            continue;
        buf b = object_file(repo, "manifests", mr.id);
        zf_ic_manifest *m = manifest_of(&b);
        free(b.data);
        zf_err err = {""};
        zf_status st = zf_ic_manifest_find(m, node.id, coords, ndim, out, &err);
        ck_assert_msg(st == ZF_OK || st == ZF_ERR_NOT_FOUND, "%s", err.msg);
        *mp = m; /* inline bytes live in the manifest */
        return st;
    }
    return ZF_ERR_NOT_FOUND;
}

/* A native chunk's bytes: [offset, offset + length) of chunks/ID. */
static buf native_bytes(const char *repo, const zf_ic_chunk_ref *c)
{
    buf f = object_file(repo, "chunks", c->chunk_id);
    ck_assert_uint_le(c->offset + c->length, f.len);
    buf b = {malloc(c->length ? c->length : 1), c->length};
    memcpy(b.data, f.data + c->offset, c->length);
    free(f.data);
    return b;
}

static void expect_inline_int8(const char *repo, const zf_ic_snapshot *s, size_t node,
                               uint64_t i, int8_t want)
{
    zf_ic_chunk_ref c;
    zf_ic_manifest *m;
    ck_assert_int_eq(find_chunk(repo, s, node, &i, 1, &c, &m), ZF_OK);
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_INLINE);
    int8_t v[8];
    ck_assert_uint_eq(unzstd(c.inline_data, c.inline_len, v, sizeof v), 1);
    ck_assert_int_eq(v[0], want);
    zf_ic_chunk_ref_clear(&c);
    zf_ic_manifest_free(m);
}

/* The tip of my-branch and of main of one of the test-repo-* directories. */
static void check_test_repo_data(const char *repo, const uint8_t main_tip[ZF_IC_ID_LEN],
                                 const uint8_t branch_tip[ZF_IC_ID_LEN])
{
    /* my-branch: the hierarchy */
    zf_ic_snapshot *s = load_snapshot(repo, branch_tip);
    ck_assert_uint_eq(zf_ic_snapshot_nnodes(s), 9);
    ck_assert_uint_gt(zf_ic_snapshot_bytes(s), 0);
    for (size_t i = 0; TIP_NODES[i]; i++) {
        zf_ic_node n;
        zf_ic_snapshot_node(s, i, &n);
        ck_assert_str_eq(n.path, TIP_NODES[i]);
        ck_assert_uint_eq(n.path_len, strlen(TIP_NODES[i]));
        ck_assert_uint_eq(node_index(s, TIP_NODES[i]), i);
        bool array = strstr(n.path, "chunks") || strstr(n.path, "inner");
        ck_assert_int_eq(n.is_array, array);
        char *doc = strndup((const char *)n.user_data, n.user_data_len);
        if (i > 0)
            ck_assert_msg(strstr(doc, array ? "is a nice array" : "is a nice group"), "%s", doc);
        ck_assert_ptr_nonnull(strstr(doc, "\"zarr_format\": 3"));
        free(doc);
        if (array)
            ck_assert_uint_eq(n.ndim, strstr(n.path, "small") ? 1 : 2);
        else
            ck_assert_uint_eq(n.nmanifests, 0);
    }
    size_t i;
    ck_assert(!zf_ic_snapshot_find(s, "/group3", 7, &i));
    ck_assert(!zf_ic_snapshot_find(s, "/group1/", 8, &i));
    ck_assert(!zf_ic_snapshot_find(s, "/group1/big", 11, &i));
    ck_assert(zf_ic_snapshot_find(s, "/group1/big_chunksX", 18, &i)); /* len counts */
    /* inner: never written (all fill value); small_chunks' chunk 4 deleted */
    zf_ic_node inner;
    zf_ic_snapshot_node(s, node_index(s, "/group2/group3/group4/group5/inner"), &inner);
    ck_assert_uint_eq(inner.nmanifests, 0);
    size_t small = node_index(s, "/group1/small_chunks");
    for (uint64_t k = 0; k < 4; k++)
        expect_inline_int8(repo, s, small, k, 84);
    zf_ic_chunk_ref c;
    zf_ic_manifest *m;
    uint64_t four = 4;
    ck_assert_int_eq(find_chunk(repo, s, small, &four, 1, &c, &m), ZF_ERR_NOT_FOUND);
    zf_ic_manifest_free(m);
    zf_ic_snapshot_free(s);

    /* main: big_chunks' native chunks (42.0) and the virtual one; all five small chunks */
    s = load_snapshot(repo, main_tip);
    ck_assert_uint_eq(zf_ic_snapshot_nnodes(s), 4);
    small = node_index(s, "/group1/small_chunks");
    for (uint64_t k = 0; k < 5; k++)
        expect_inline_int8(repo, s, small, k, 84);
    size_t big = node_index(s, "/group1/big_chunks");
    uint64_t native_len = 0;
    for (uint64_t y = 0; y < 2; y++)
        for (uint64_t x = 0; x < 2; x++) {
            uint64_t at[2] = {y, x};
            ck_assert_int_eq(find_chunk(repo, s, big, at, 2, &c, &m), ZF_OK);
            if (y == 0 && x == 0) {
                zf_ic_chunk_ref_clear(&c);
                zf_ic_manifest_free(m);
                continue;
            }
            ck_assert_int_eq(c.kind, ZF_IC_CHUNK_NATIVE);
            buf bytes = native_bytes(repo, &c);
            float v[25];
            ck_assert_uint_eq(unzstd(bytes.data, bytes.len, v, sizeof v), sizeof v);
            for (size_t e = 0; e < 25; e++)
                ck_assert(v[e] == 42.0f);
            if (y == 0 && x == 1)
                native_len = c.length;
            free(bytes.data);
            zf_ic_chunk_ref_clear(&c);
            zf_ic_manifest_free(m);
        }
    uint64_t origin[2] = {0, 0};
    ck_assert_int_eq(find_chunk(repo, s, big, origin, 2, &c, &m), ZF_OK);
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_VIRTUAL);
    ck_assert_str_eq(c.location, "s3://testbucket/can_read_old/chunk-1");
    ck_assert_uint_eq(c.offset, 0);
    ck_assert_uint_eq(c.length, native_len); /* the size of chunk 0/1, the generator says */
    ck_assert_ptr_null(c.etag);
    /* datetime(9999, 12, 31, UTC) = 253402214400 s, kept in 32 bits (2106-01-28) */
    ck_assert_uint_eq(c.last_modified, (uint32_t)(253402214400ULL % 4294967296ULL));
    zf_ic_chunk_ref_clear(&c);
    ck_assert_ptr_null(c.location);
    /* the array's own manifest: other dimensions counts, indexes past 2^32, other nodes */
    zf_ic_node n;
    zf_ic_snapshot_node(s, big, &n);
    zf_err err = {""};
    ck_assert_int_eq(zf_ic_manifest_find(m, n.id, origin, 1, &c, &err), ZF_ERR_CORRUPT);
    uint64_t far[2] = {0, (uint64_t)1 << 32};
    ck_assert_int_eq(zf_ic_manifest_find(m, n.id, far, 2, &c, &err), ZF_ERR_NOT_FOUND);
    uint64_t past[2] = {2, 0};
    ck_assert_int_eq(zf_ic_manifest_find(m, n.id, past, 2, &c, &err), ZF_ERR_NOT_FOUND);
    uint8_t other[ZF_IC_NODE_ID_LEN] = {0};
    ck_assert_int_eq(zf_ic_manifest_find(m, other, origin, 2, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_uint_eq(zf_ic_manifest_nrefs(m), 4);
    ck_assert_uint_gt(zf_ic_manifest_bytes(m), 0);
    zf_ic_manifest_free(m);
    zf_ic_snapshot_free(s);
}

START_TEST(ic_test_repo_data)
{
    const char *const v2[] = {"test-repo-v2", "test-repo-v2-migrated"};
    for (size_t k = 0; k < 2; k++) {
        buf b = fixture(v2[k], "repo");
        zf_ic_repo *r = repo_of(&b);
        free(b.data);
        zf_ic_snapshot_info main_tip, branch_tip;
        zf_ic_repo_snapshot(r, ref_index(r, false, "main"), &main_tip);
        zf_ic_repo_snapshot(r, ref_index(r, false, "my-branch"), &branch_tip);
        check_test_repo_data(v2[k], main_tip.id, branch_tip.id);
        zf_ic_repo_free(r);
    }
    uint8_t main_id[ZF_IC_ID_LEN], branch_id[ZF_IC_ID_LEN];
    ref_v1("test-repo-v1", "branch.main", main_id);
    ref_v1("test-repo-v1", "branch.my-branch", branch_id);
    check_test_repo_data("test-repo-v1", main_id, branch_id);
}
END_TEST

/* ----- split-repo-*: manifest splitting ----- */

static size_t distinct_manifests(const zf_ic_snapshot *s)
{
    uint8_t seen[64][ZF_IC_ID_LEN];
    size_t n = 0;
    for (size_t i = 0; i < zf_ic_snapshot_nnodes(s); i++) {
        zf_ic_node node;
        zf_ic_snapshot_node(s, i, &node);
        for (size_t j = 0; j < node.nmanifests; j++) {
            zf_ic_manifest_ref mr;
            zf_ic_snapshot_manifest_ref(s, i, j, &mr);
            bool dup = false;
            for (size_t k = 0; k < n && !dup; k++)
                dup = memcmp(seen[k], mr.id, ZF_IC_ID_LEN) == 0;
            if (!dup) {
                ck_assert_uint_lt(n, 64);
                memcpy(seen[n++], mr.id, ZF_IC_ID_LEN);
            }
        }
    }
    return n;
}

static void check_split_snapshot(const char *repo, const uint8_t id[ZF_IC_ID_LEN])
{
    zf_ic_snapshot *s = load_snapshot(repo, id);
    zf_ic_snapshot_head h;
    zf_ic_snapshot_get_head(s, &h);
    static const struct {
        const char *message;
        size_t manifests;
    } want[] = {{"Repository initialized", 0},
                {"empty structure", 0},
                {"write data", 9},
                {"write data again", 9},
                {"write data again with more splits", 17}};
    bool known = false;
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        if (strcmp(want[k].message, h.message) == 0) {
            ck_assert_msg(distinct_manifests(s) == want[k].manifests, "%s: %zu manifests",
                          h.message, distinct_manifests(s));
            known = true;
        }
    ck_assert_msg(known, "%s", h.message);
    if (strcmp(h.message, "write data again with more splits") == 0) {
        /* every chunk of split (10 x 10 float32 in 3 x 3 chunks) holds 14 inside the array,
         * in the one manifest whose extents hold it; small_chunks holds 3 */
        size_t split = node_index(s, "/group1/split");
        for (uint64_t y = 0; y < 4; y++)
            for (uint64_t x = 0; x < 4; x++) {
                uint64_t at[2] = {y, x};
                zf_ic_chunk_ref c;
                zf_ic_manifest *m;
                ck_assert_int_eq(find_chunk(repo, s, split, at, 2, &c, &m), ZF_OK);
                ck_assert_int_eq(c.kind, ZF_IC_CHUNK_NATIVE);
                buf bytes = native_bytes(repo, &c);
                float v[9];
                ck_assert_uint_eq(unzstd(bytes.data, bytes.len, v, sizeof v), sizeof v);
                for (size_t e = 0; e < 9; e++)
                    if (y * 3 + e / 3 < 10 && x * 3 + e % 3 < 10)
                        ck_assert(v[e] == 14.0f);
                free(bytes.data);
                zf_ic_chunk_ref_clear(&c);
                zf_ic_manifest_free(m);
            }
        size_t small = node_index(s, "/group1/small_chunks");
        for (uint64_t k = 0; k < 5; k++)
            expect_inline_int8(repo, s, small, k, 3);
    }
    zf_ic_snapshot_free(s);
}

START_TEST(ic_split_repos)
{
    const char *const v2[] = {"split-repo-v2", "split-repo-v2-migrated"};
    for (size_t k = 0; k < 2; k++) {
        buf b = fixture(v2[k], "repo");
        zf_ic_repo *r = repo_of(&b);
        free(b.data);
        size_t tip = ref_index(r, false, "main");
        expect_history_v2(r, tip, SPLIT_HISTORY);
        for (int64_t at = (int64_t)tip; at >= 0;) {
            zf_ic_snapshot_info info;
            zf_ic_repo_snapshot(r, (size_t)at, &info);
            check_split_snapshot(v2[k], info.id);
            at = info.parent;
        }
        zf_ic_config c;
        zf_err err = {""};
        ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_OK, "%s", err.msg);
        ck_assert_uint_eq(c.n, 0); /* written without a virtual chunk container */
        zf_ic_config_free(&c);
        zf_ic_repo_free(r);
    }
    uint8_t id[ZF_IC_ID_LEN];
    ref_v1("split-repo-v1", "branch.main", id);
    expect_history_v1("split-repo-v1", id, SPLIT_HISTORY);
    for (bool more = true; more;) {
        check_split_snapshot("split-repo-v1", id);
        zf_ic_snapshot *s = load_snapshot("split-repo-v1", id);
        zf_ic_snapshot_head h;
        zf_ic_snapshot_get_head(s, &h);
        more = h.has_parent;
        memcpy(id, h.parent, sizeof id);
        zf_ic_snapshot_free(s);
    }
}
END_TEST

/* ----- configuration ----- */

static const zf_ic_container *container(const zf_ic_config *c, const char *url_prefix)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->containers[i].url_prefix, url_prefix) == 0)
            return &c->containers[i];
    ck_abort_msg("no container %s", url_prefix);
    return NULL;
}

static void expect_str(const char *got, const char *want)
{
    if (!want)
        ck_assert_ptr_null(got);
    else {
        ck_assert_ptr_nonnull(got);
        ck_assert_str_eq(got, want);
    }
}

/* mk_repo of test_can_read_old.py: s3_store(region="us-east-1",
 * endpoint_url="http://localhost:4200", allow_http=True, s3_compatible=True,
 * force_path_style=True) */
static void expect_test_s3(const zf_ic_container *s3)
{
    expect_str(s3->kind, "s3_compatible");
    expect_str(s3->region, "us-east-1");
    expect_str(s3->endpoint_url, "http://localhost:4200");
    ck_assert(!s3->anonymous);
    ck_assert(s3->allow_http);
    ck_assert(s3->force_path_style);
}

/* test-repo-v1's config.yaml, as that file says (the migration copied it into the repo file) */
static void expect_v1_containers(const zf_ic_config *c)
{
    ck_assert_uint_eq(c->n, 5);
    const zf_ic_container *s3 = container(c, "s3://testbucket");
    expect_str(s3->name, "s3");
    expect_test_s3(s3);
    const zf_ic_container *t = container(c, "tigris");
    expect_str(t->name, "tigris");
    expect_str(t->kind, "tigris");
    expect_str(t->region, NULL);
    expect_str(t->endpoint_url, "https://fly.storage.tigris.dev");
    ck_assert(!t->anonymous && !t->allow_http);
    expect_str(container(c, "az")->kind, "azure");
    expect_str(container(c, "file")->kind, "local_file_system");
    expect_str(container(c, "gcs")->kind, "gcs");
    expect_str(container(c, "gcs")->endpoint_url, NULL);
}

static zf_status yaml_config(const char *text, zf_ic_config *c, zf_err *err)
{
    return zf_ic_config_yaml(text, strlen(text), c, err);
}

START_TEST(ic_config_fixtures)
{
    zf_ic_config c;
    zf_err err = {""};
    buf b = fixture("test-repo-v2", "repo");
    zf_ic_repo *r = repo_of(&b);
    free(b.data);
    ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(c.n, 1);
    const zf_ic_container *s3 = container(&c, "s3://testbucket/");
    expect_str(s3->name, NULL);
    expect_test_s3(s3);
    zf_ic_config_free(&c);
    ck_assert_uint_eq(c.n, 0);
    zf_ic_repo_free(r);

    b = fixture("test-repo-v2-migrated", "repo");
    r = repo_of(&b);
    free(b.data);
    ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_OK, "%s", err.msg);
    expect_v1_containers(&c);
    zf_ic_config_free(&c);
    zf_ic_repo_free(r);

    b = fixture("test-repo-v1", "config.yaml");
    ck_assert_msg(zf_ic_config_yaml((const char *)b.data, b.len, &c, &err) == ZF_OK, "%s",
                  err.msg);
    free(b.data);
    expect_v1_containers(&c);
    zf_ic_config_free(&c);

    b = fixture("split-repo-v1", "config.yaml"); /* virtual_chunk_containers: null */
    ck_assert_msg(zf_ic_config_yaml((const char *)b.data, b.len, &c, &err) == ZF_OK, "%s",
                  err.msg);
    free(b.data);
    ck_assert_uint_eq(c.n, 0);
    zf_ic_config_free(&c);
}
END_TEST

START_TEST(ic_config_yaml)
{
    zf_ic_config c;
    zf_err err = {""};
    /* the store as a one-key mapping, a plain kind, containers as a sequence; nulls, booleans */
    ck_assert_msg(yaml_config("virtual_chunk_containers:\n"
                              "- url_prefix: s3://a/\n"
                              "  store: {s3: {region: ~, anonymous: True, endpoint_url: \"e\"}}\n"
                              "- {url_prefix: 'mem://', name: m, store: in_memory}\n"
                              "- url_prefix: x\n"
                              "  store: !http\n"
                              "    endpoint_url: null\n"
                              "- url_prefix: y\n"
                              "  store: !local_file_system\n",
                              &c, &err) == ZF_OK,
                  "%s", err.msg);
    ck_assert_uint_eq(c.n, 4);
    expect_str(c.containers[3].kind, "local_file_system");
    expect_str(c.containers[0].kind, "s3");
    expect_str(c.containers[0].region, NULL);
    expect_str(c.containers[0].endpoint_url, "e");
    ck_assert(c.containers[0].anonymous);
    expect_str(c.containers[1].kind, "in_memory");
    expect_str(c.containers[1].name, "m");
    expect_str(c.containers[2].kind, "http");
    zf_ic_config_free(&c);
    /* aliases within the bound */
    ck_assert_msg(yaml_config("base: &b {url_prefix: u, store: !gcs {}}\n"
                              "virtual_chunk_containers: {one: *b, two: *b}\n",
                              &c, &err) == ZF_OK,
                  "%s", err.msg);
    ck_assert_uint_eq(c.n, 2);
    zf_ic_config_free(&c);
    ck_assert_int_eq(yaml_config("compression: null\n", &c, &err), ZF_OK);
    ck_assert_uint_eq(c.n, 0);

    /* refused */
    const char *const bad[] = {
        "",                                   /* no document */
        "[",                                  /* not YAML */
        "- a\n- b\n",                         /* not a mapping */
        "virtual_chunk_containers: 5\n",      /* containers not a mapping */
        "virtual_chunk_containers: {a: 1}\n", /* a container not a mapping */
        "virtual_chunk_containers: {a: {store: !gcs {}}}\n",                /* no url_prefix */
        "virtual_chunk_containers: {a: {url_prefix: u}}\n",                 /* no store */
        "virtual_chunk_containers: {a: {url_prefix: u, store: ~}}\n",       /* null store */
        "virtual_chunk_containers: {a: {url_prefix: [u], store: !gcs {}}}\n", /* not a string */
        "virtual_chunk_containers: {a: {url_prefix: u, store: !s3 {allow_http: maybe}}}\n",
        "virtual_chunk_containers: {a: {url_prefix: \"u\\0v\", store: !gcs {}}}\n", /* NUL */
        "virtual_chunk_containers: {a: {url_prefix: u, store: {a: 1, b: 2}}}\n",
        "a: \"\\x01\n", /* unterminated */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = '\0';
        ck_assert_msg(yaml_config(bad[i], &c, &err) == ZF_ERR_CORRUPT, "%s", bad[i]);
        ck_assert_msg(err.msg[0] != '\0', "%s: no message", bad[i]);
        ck_assert_ptr_null(c.containers);
    }
    /* nesting deeper than 64, and a quarter of a million levels: refused at the 65th, at once */
    char *deep = malloc(500001);
    memset(deep, '[', 250000);
    memset(deep + 250000, ']', 250000);
    deep[500000] = '\0';
    ck_assert_int_eq(yaml_config(deep, &c, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "nested"));
    deep[64] = '\0', deep[65] = '\0';
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = '\0';
    ck_assert_int_eq(yaml_config(deep, &c, &err), ZF_ERR_CORRUPT); /* 64 deep: not a mapping */
    ck_assert_ptr_null(strstr(err.msg, "nested"));
    free(deep);
    /* 65 aliases */
    char many[2048] = "a: &x 1\nb: [";
    for (int i = 0; i < 65; i++)
        strcat(many, "*x, ");
    strcat(many, "1]\n");
    ck_assert_int_eq(yaml_config(many, &c, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "aliases"));
}
END_TEST

/* Reading FlatBuffers by hand, independently of the code under test (the format: a uoffset is
 * relative to where it is stored; a table starts with an soffset back to its vtable, whose third
 * and later uint16s are the offsets of the fields in the table, 0 for an absent one). */
static uint8_t *fb_deref(uint8_t *p)
{
    uint32_t o;
    memcpy(&o, p, 4);
    return p + o;
}

/* The address of field `slot` of a table (ck_assert: present). */
static uint8_t *fb_field(uint8_t *table, size_t slot)
{
    int32_t soff;
    uint16_t vsize, foff;
    memcpy(&soff, table, 4);
    const uint8_t *vt = table - soff;
    memcpy(&vsize, vt, 2);
    ck_assert_uint_gt(vsize, 4 + 2 * slot);
    memcpy(&foff, vt + 4 + 2 * slot, 2);
    ck_assert_uint_ne(foff, 0);
    return table + foff;
}

/* Element i of a vector of tables that field `slot` of a table holds. */
static uint8_t *fb_table_at(uint8_t *table, size_t slot, size_t i)
{
    uint8_t *vec = fb_deref(fb_field(table, slot));
    uint32_t n;
    memcpy(&n, vec, 4);
    ck_assert_uint_lt(i, n);
    return fb_deref(vec + 4 + 4 * i);
}

/* The bytes of a [ubyte] vector field of the root table. */
static uint8_t *fb_vector(uint8_t *p, size_t slot, size_t *len)
{
    uint8_t *vec = fb_deref(fb_field(fb_deref(p), slot));
    uint32_t n;
    memcpy(&n, vec, 4);
    *len = n;
    return vec + 4;
}

START_TEST(ic_config_flexbuffer)
{
    zf_ic_config c;
    zf_err err = {""};
    buf b = flatc_file("repo-ok", ZF_IC_FILE_REPO);
    zf_ic_repo *r = repo_of(&b);
    free(b.data);
    ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(c.n, 3); /* in the map's key order */
    expect_str(c.containers[0].url_prefix, "gs://b/");
    expect_str(c.containers[0].name, "n");
    expect_str(c.containers[0].kind, "gcs");
    expect_str(c.containers[1].url_prefix, "memory://");
    expect_str(c.containers[1].name, NULL);
    expect_str(c.containers[1].kind, "in_memory");
    expect_str(c.containers[2].url_prefix, "s3://x/");
    expect_str(c.containers[2].kind, "s3");
    expect_str(c.containers[2].region, "eu-west-1");
    expect_str(c.containers[2].endpoint_url, NULL);
    ck_assert(c.containers[2].anonymous && !c.containers[2].allow_http);
    zf_ic_config_free(&c);
    zf_ic_repo_free(r);

    b = flatc_file("repo-config-list", ZF_IC_FILE_REPO);
    r = repo_of(&b);
    free(b.data);
    ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_OK, "%s", err.msg);
    ck_assert_uint_eq(c.n, 2);
    expect_str(c.containers[0].kind, "local_file_system");
    expect_str(c.containers[1].kind, "http");
    expect_str(c.containers[1].endpoint_url, "https://h/");
    zf_ic_config_free(&c);
    zf_ic_repo_free(r);

    const char *const none[] = {"repo-no-config", "repo-config-null"};
    for (size_t i = 0; i < 2; i++) {
        b = flatc_file(none[i], ZF_IC_FILE_REPO);
        r = repo_of(&b);
        free(b.data);
        ck_assert_int_eq(zf_ic_repo_config(r, &c, &err), ZF_OK);
        ck_assert_uint_eq(c.n, 0);
        zf_ic_repo_free(r);
    }
    /* the repo info file reads; its configuration does not */
    const char *const bad[] = {"repo-config-no-prefix", "repo-config-no-store",
                               "repo-config-two-kinds", "repo-config-not-map",
                               "repo-config-region-number"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b = flatc_file(bad[i], ZF_IC_FILE_REPO);
        r = repo_of(&b);
        free(b.data);
        ck_assert_msg(zf_ic_repo_config(r, &c, &err) == ZF_ERR_CORRUPT, "%s", bad[i]);
        ck_assert_ptr_null(c.containers);
        zf_ic_repo_free(r);
    }
    /* a FlexBuffer its verifier refuses: the root's byte width (the last byte) 3, its type
     * (the byte before) out of range; a map's keys offset pointing outside */
    buf p = flatc_bin("repo-ok");
    size_t n;
    uint8_t *cfg = fb_vector(p.data, 9, &n);
    for (int k = 0; k < 2; k++) {
        uint8_t keep = cfg[n - 1 - k];
        cfg[n - 1 - k] = k == 0 ? 3 : 0xff;
        b = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
        r = repo_of(&b);
        free(b.data);
        ck_assert_int_eq(zf_ic_repo_config(r, &c, &err), ZF_ERR_CORRUPT);
        ck_assert_ptr_nonnull(strstr(err.msg, "FlexBuffers verifier"));
        zf_ic_repo_free(r);
        cfg[n - 1 - k] = keep;
    }
    free(p.data);
}
END_TEST

/* ----- files made by flatc: what each parser accepts and refuses ----- */

START_TEST(ic_flatc_repo)
{
    buf b = flatc_file("repo-ok", ZF_IC_FILE_REPO);
    zf_ic_repo *r = repo_of(&b);
    free(b.data);
    ck_assert_uint_eq(zf_ic_repo_nsnapshots(r), 2);
    zf_ic_snapshot_info info;
    zf_ic_repo_snapshot(r, 0, &info);
    ck_assert_int_eq(info.parent, -1);
    ck_assert_uint_eq(info.flushed_at, 1000);
    ck_assert_str_eq(info.message, "first");
    ck_assert_uint_eq(info.id[0], 1);
    zf_ic_repo_snapshot(r, 1, &info);
    ck_assert_int_eq(info.parent, 0);
    ck_assert_str_eq(info.message, "second");
    ck_assert_uint_eq(ref_index(r, true, "a"), 1);
    ck_assert_uint_eq(ref_index(r, false, "dev"), 0);
    ck_assert_uint_eq(ref_index(r, false, "main"), 1);
    size_t i;
    ck_assert(!zf_ic_repo_lookup_ref(r, true, "gone", &i)); /* listed, and deleted */
    ck_assert_uint_eq(zf_ic_repo_nrefs(r, true), 2);
    zf_ic_repo_free(r);

    const char *const bad[] = {"repo-tag-index",      "repo-branch-index",
                               "repo-parent-index",   "repo-parent-negative",
                               "repo-unsorted-branches", "repo-duplicate-tags",
                               "repo-unsorted-snapshots", "repo-unsorted-deleted",
                               "repo-empty-name",     "repo-no-snapshots"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        zf_err err = {""};
        b = flatc_file(bad[k], ZF_IC_FILE_REPO);
        ck_assert_msg(repo_status(&b, &err) == ZF_ERR_CORRUPT, "%s", bad[k]);
        ck_assert_msg(err.msg[0], "%s: no message", bad[k]);
        free(b.data);
    }
}
END_TEST

START_TEST(ic_flatc_snapshot)
{
    buf b = flatc_file("snapshot-ok", ZF_IC_FILE_SNAPSHOT);
    zf_ic_snapshot *s = snapshot_of(&b);
    free(b.data);
    zf_ic_snapshot_head h;
    zf_ic_snapshot_get_head(s, &h);
    ck_assert_uint_eq(h.id[0], 7);
    ck_assert(h.has_parent);
    ck_assert_uint_eq(h.parent[0], 6);
    ck_assert_uint_eq(h.flushed_at, 3000);
    ck_assert_str_eq(h.message, "made by flatc");
    ck_assert_uint_eq(h.spec_version, 2);
    ck_assert_uint_eq(zf_ic_snapshot_nnodes(s), 5);
    /* the specification's byte order: /a < /a-b < /a/b < /ab */
    const char *const paths[] = {"/", "/a", "/a-b", "/a/b", "/ab"};
    for (size_t i = 0; i < 5; i++) {
        zf_ic_node n;
        zf_ic_snapshot_node(s, i, &n);
        ck_assert_str_eq(n.path, paths[i]);
        ck_assert_uint_eq(node_index(s, paths[i]), i);
        ck_assert_uint_eq(n.id[0], i + 1);
        ck_assert_uint_eq(n.user_data_len, 17);
        ck_assert_int_eq(memcmp(n.user_data, "{\"zarr_format\":3}", 17), 0);
    }
    zf_ic_node n;
    zf_ic_snapshot_node(s, 2, &n); /* shape_v2 of 2 dimensions, two manifests */
    ck_assert(n.is_array);
    ck_assert_uint_eq(n.ndim, 2);
    ck_assert_uint_eq(n.nmanifests, 2);
    zf_ic_manifest_ref mr;
    zf_ic_snapshot_manifest_ref(s, 2, 0, &mr);
    ck_assert_uint_eq(mr.id[0], 9);
    ck_assert_uint_eq(mr.ndim, 2);
    ck_assert_uint_eq(mr.from[0], 0);
    ck_assert_uint_eq(mr.to[0], 2);
    ck_assert_uint_eq(mr.from[1], 1);
    ck_assert_uint_eq(mr.to[1], 2);
    zf_ic_snapshot_manifest_ref(s, 2, 1, &mr);
    ck_assert_uint_eq(mr.id[0], 8);
    ck_assert_uint_eq(mr.ndim, 1);
    ck_assert_uint_eq(mr.to[0], 0);
    zf_ic_snapshot_node(s, 3, &n); /* spec 1's shape of 3 dimensions */
    ck_assert(n.is_array);
    ck_assert_uint_eq(n.ndim, 3);
    ck_assert_uint_eq(n.nmanifests, 0);
    zf_ic_snapshot_node(s, 4, &n);
    ck_assert(!n.is_array);
    size_t i;
    ck_assert(!zf_ic_snapshot_find(s, "/a/", 3, &i));
    ck_assert(!zf_ic_snapshot_find(s, "", 0, &i));
    zf_ic_snapshot_free(s);

    const char *const bad[] = {
        "snapshot-path-0",   "snapshot-path-1",  "snapshot-path-2",       "snapshot-path-3",
        "snapshot-path-4",   "snapshot-path-5",  "snapshot-path-6",       "snapshot-unsorted",
        "snapshot-duplicate", "snapshot-slash-order", "snapshot-ndim",    "snapshot-ndim-v1",
        "snapshot-extent-backwards", "snapshot-extents-ndim"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        zf_err err = {""};
        b = flatc_file(bad[k], ZF_IC_FILE_SNAPSHOT);
        ck_assert_msg(snapshot_status(&b, &err) == ZF_ERR_CORRUPT, "%s", bad[k]);
        ck_assert_msg(err.msg[0], "%s: no message", bad[k]);
        free(b.data);
    }
}
END_TEST

static zf_status find2(const zf_ic_manifest *m, uint8_t node, uint64_t y, uint64_t x,
                       zf_ic_chunk_ref *c, zf_err *err)
{
    uint8_t id[ZF_IC_NODE_ID_LEN] = {node};
    uint64_t at[2] = {y, x};
    return zf_ic_manifest_find(m, id, at, 2, c, err);
}

START_TEST(ic_flatc_manifest)
{
    buf b = flatc_file("manifest-ok", ZF_IC_FILE_MANIFEST);
    zf_ic_manifest *m = manifest_of(&b);
    free(b.data);
    ck_assert_uint_eq(zf_ic_manifest_nrefs(m), 11);
    zf_ic_chunk_ref c;
    zf_err err = {""};
    ck_assert_int_eq(find2(m, 1, 0, 0, &c, &err), ZF_OK);
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_INLINE);
    ck_assert_uint_eq(c.inline_len, 3);
    ck_assert_int_eq(memcmp(c.inline_data, "\1\2\3", 3), 0);
    zf_ic_chunk_ref_clear(&c);
    ck_assert_int_eq(find2(m, 1, 0, 1, &c, &err), ZF_OK);
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_NATIVE);
    ck_assert_uint_eq(c.offset, 5);
    ck_assert_uint_eq(c.length, 7);
    for (int k = 0; k < ZF_IC_ID_LEN; k++)
        ck_assert_uint_eq(c.chunk_id[k], k);
    zf_ic_chunk_ref_clear(&c);
    ck_assert_int_eq(find2(m, 1, 1, 0, &c, &err), ZF_OK);
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_VIRTUAL);
    ck_assert_str_eq(c.location, "s3://x/y");
    ck_assert_str_eq(c.etag, "\"abc\"");
    ck_assert_uint_eq(c.offset, 9);
    ck_assert_uint_eq(c.length, 10);
    ck_assert_uint_eq(c.last_modified, 0);
    zf_ic_chunk_ref_clear(&c);
    /* compressed by the zstd command with a dictionary it trained (with and without the
     * content size in the frame) */
    for (uint64_t x = 1; x <= 2; x++) {
        ck_assert_msg(find2(m, 1, 1, x, &c, &err) == ZF_OK, "%s", err.msg);
        ck_assert_int_eq(c.kind, ZF_IC_CHUNK_VIRTUAL);
        ck_assert_str_eq(c.location, "s3://testbucket/virtual/file-0500.nc");
        ck_assert_ptr_null(c.etag);
        ck_assert_uint_eq(c.last_modified, x == 1 ? 1234 : 0);
        zf_ic_chunk_ref_clear(&c);
    }
    ck_assert_int_eq(find2(m, 1, 2, 4, &c, &err), ZF_OK); /* an empty inline chunk */
    ck_assert_int_eq(c.kind, ZF_IC_CHUNK_INLINE);
    ck_assert_uint_eq(c.inline_len, 0);
    zf_ic_chunk_ref_clear(&c);
    /* two kinds, no kind, an empty location, a compressed location that is not zstd */
    for (uint64_t x = 0; x < 4; x++) {
        err.msg[0] = '\0';
        ck_assert_int_eq(find2(m, 1, 2, x, &c, &err), ZF_ERR_CORRUPT);
        ck_assert(err.msg[0]);
        ck_assert_ptr_null(c.location);
    }
    ck_assert_int_eq(find2(m, 1, 2, 5, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(find2(m, 1, 3, 0, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(find2(m, 2, 5, 0, &c, &err), ZF_ERR_CORRUPT); /* one dimension there */
    uint8_t two[ZF_IC_NODE_ID_LEN] = {2};
    uint64_t five = 5;
    ck_assert_int_eq(zf_ic_manifest_find(m, two, &five, 1, &c, &err), ZF_OK);
    ck_assert_uint_eq(c.inline_len, 1);
    ck_assert_uint_eq(c.inline_data[0], 42);
    zf_ic_chunk_ref_clear(&c);
    ck_assert_int_eq(find2(m, 3, 0, 0, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(find2(m, 0, 0, 0, &c, &err), ZF_ERR_NOT_FOUND);
    zf_ic_manifest_free(m);

    /* a dictionary that does not load, when no compressed location needs it */
    b = flatc_file("manifest-unused-bad-dict", ZF_IC_FILE_MANIFEST);
    m = manifest_of(&b);
    free(b.data);
    zf_ic_manifest_free(m);

    const char *const bad[] = {"manifest-unsorted-refs",      "manifest-duplicate-refs",
                               "manifest-index-lengths",      "manifest-unsorted-arrays",
                               "manifest-compressed-no-dict", "manifest-compressed-alg0",
                               "manifest-bad-dict"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        b = flatc_file(bad[k], ZF_IC_FILE_MANIFEST);
        err.msg[0] = '\0';
        ck_assert_msg(manifest_status(&b, &err) == ZF_ERR_CORRUPT, "%s", bad[k]);
        ck_assert_msg(err.msg[0], "%s: no message", bad[k]);
        free(b.data);
    }
}
END_TEST

/* Handles are immutable: threads read one manifest and one snapshot at once (the TSan build
 * of scripts/test.sh runs this). */
typedef struct shared {
    const zf_ic_manifest *m;
    const zf_ic_snapshot *s;
    int failures;
} shared;

static void *reader(void *arg)
{
    shared *sh = arg;
    for (int k = 0; k < 300; k++) {
        zf_ic_chunk_ref c;
        zf_err err = {""};
        if (find2(sh->m, 1, 1, 1 + k % 2, &c, &err) != ZF_OK ||
            strcmp(c.location, "s3://testbucket/virtual/file-0500.nc") != 0)
            __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
        zf_ic_chunk_ref_clear(&c);
        size_t i;
        if (!zf_ic_snapshot_find(sh->s, "/a/b", 4, &i) || i != 3)
            __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

START_TEST(ic_threads)
{
    buf b = flatc_file("manifest-ok", ZF_IC_FILE_MANIFEST);
    shared sh = {manifest_of(&b), NULL, 0};
    free(b.data);
    b = flatc_file("snapshot-ok", ZF_IC_FILE_SNAPSHOT);
    sh.s = snapshot_of(&b);
    free(b.data);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, reader, &sh), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(sh.failures, 0);
    zf_ic_manifest_free((zf_ic_manifest *)sh.m);
    zf_ic_snapshot_free((zf_ic_snapshot *)sh.s);
}
END_TEST

/* ----- hostile files ----- */

START_TEST(ic_hostile)
{
    zf_err err = {""};
    buf repo = fixture("test-repo-v2", "repo");
    buf snap = fixture("test-repo-v2", "snapshots/2768FV3XW5ZXYM84XNNG");
    buf man = fixture("test-repo-v2", "manifests/WTMRMCW414QYFTX7JJPG");
    buf tx = fixture("test-repo-v2", "transactions/2768FV3XW5ZXYM84XNNG");

    /* wrong file types */
    ck_assert_int_eq(repo_status(&snap, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "snapshot"));
    ck_assert_int_eq(repo_status(&tx, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(snapshot_status(&repo, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(snapshot_status(&man, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(manifest_status(&snap, &err), ZF_ERR_CORRUPT);

    /* bad magic, versions, compression: each parser */
    buf *files[] = {&repo, &snap, &man};
    zf_status (*parse[])(const buf *, zf_err *) = {repo_status, snapshot_status, manifest_status};
    for (size_t k = 0; k < 3; k++) {
        buf *f = files[k];
        ck_assert_int_eq(parse[k](f, &err), ZF_OK);
        f->data[0] = 'X';
        ck_assert_int_eq(parse[k](f, &err), ZF_ERR_CORRUPT);
        f->data[0] = 0x49;
        f->data[36] = 3;
        ck_assert_int_eq(parse[k](f, &err), ZF_ERR_UNSUPPORTED);
        f->data[36] = 2;
        f->data[38] = 7;
        ck_assert_int_eq(parse[k](f, &err), ZF_ERR_UNSUPPORTED);
        f->data[38] = 0; /* says uncompressed: zstd bytes are no FlatBuffer */
        ck_assert_int_eq(parse[k](f, &err), ZF_ERR_CORRUPT);
        ck_assert_ptr_nonnull(strstr(err.msg, "verifier"));
        f->data[38] = 1;
        /* truncated: the header alone, the payload cut, one byte of it changed */
        buf cut = {f->data, ZF_IC_HEADER_LEN};
        ck_assert_int_eq(parse[k](&cut, &err), ZF_ERR_CORRUPT);
        cut.len = f->len - 7;
        ck_assert_int_eq(parse[k](&cut, &err), ZF_ERR_CORRUPT);
        cut.len = f->len / 2;
        ck_assert_int_eq(parse[k](&cut, &err), ZF_ERR_CORRUPT);
        ck_assert_int_eq(parse[k](f, &err), ZF_OK);
    }

    /* the payload, uncompressed (compression 0), in two zstd frames, then corrupted */
    buf p = payload_of(&repo);
    buf raw = wrap(&p, 2, ZF_IC_FILE_REPO, 0);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_OK);
    free(raw.data);
    size_t half = p.len / 2, cap = ZSTD_compressBound(p.len) * 2 + ZF_IC_HEADER_LEN;
    buf two = {malloc(cap), 0};
    memcpy(two.data, repo.data, ZF_IC_HEADER_LEN);
    size_t r1 = ZSTD_compress(two.data + ZF_IC_HEADER_LEN, cap - ZF_IC_HEADER_LEN, p.data, half, 1);
    size_t r2 = ZSTD_compress(two.data + ZF_IC_HEADER_LEN + r1, cap - ZF_IC_HEADER_LEN - r1,
                              p.data + half, p.len - half, 1);
    ck_assert(!ZSTD_isError(r1) && !ZSTD_isError(r2));
    two.len = ZF_IC_HEADER_LEN + r1 + r2;
    ck_assert_int_eq(repo_status(&two, &err), ZF_OK);
    free(two.data);
    /* the root offset outside the buffer; the root table's vtable offset; then a string's
     * length (the first branch's name, "main") far past the end */
    uint32_t keep;
    memcpy(&keep, p.data, 4);
    memcpy(p.data, &(uint32_t){0xfffffff0u}, 4);
    raw = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "verifier"));
    free(raw.data);
    memcpy(p.data, &keep, 4);
    int32_t vt;
    memcpy(&vt, p.data + keep, 4);
    memcpy(p.data + keep, &(int32_t){-0x100000}, 4);
    raw = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_ERR_CORRUPT);
    free(raw.data);
    memcpy(p.data + keep, &vt, 4);
    /* Repo.branches (field 2), the first Ref: its name (field 0), "main", and its snapshot
     * index (field 1), 1 */
    uint8_t *main_ref = fb_table_at(fb_deref(p.data), 2, 0);
    uint8_t *main_name = fb_deref(fb_field(main_ref, 0));
    ck_assert_int_eq(memcmp(main_name, "\4\0\0\0main", 9), 0);
    memcpy(main_name, &(uint32_t){0x7fffff00u}, 4);
    raw = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "verifier"));
    free(raw.data);
    memcpy(main_name, "\4\0\0\0", 4);
    uint8_t *main_index = fb_field(main_ref, 1);
    uint32_t one;
    memcpy(&one, main_index, 4);
    ck_assert_uint_eq(one, 1);
    memcpy(main_index, &(uint32_t){6}, 4); /* 6 snapshots: indexes 0 to 5 */
    raw = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "branch \"main\": snapshot index 6"));
    free(raw.data);
    memcpy(main_index, &one, 4);
    raw = wrap(&p, 2, ZF_IC_FILE_REPO, 1);
    ck_assert_int_eq(repo_status(&raw, &err), ZF_OK); /* the edits undone */
    free(raw.data);
    free(p.data);

    /* bounds of the decompressed size */
    ck_assert_int_eq(repo_status(&(buf){repo.data, repo.len}, &err), ZF_OK);
    free(repo.data);
    free(snap.data);
    free(man.data);
    free(tx.data);
}
END_TEST

/* A snapshot payload written by hand: n entries of `nodes` all the same node table, an array
 * whose n ManifestRefs are all the same table. A DAG: the file grows with n, a walk of it with
 * n * n. */
static buf shared_tables_snapshot(uint32_t n)
{
    /* every uoffset points forward: the root, the snapshot, the node list, the node and its
     * array, the ManifestRef list, the ManifestRef, the strings */
    const size_t VT_S = 4, S = 20, NODES = 44, VT_N = NODES + 4 + 4 * (size_t)n,
                 NODE = VT_N + 16, VT_A = NODE + 28, ARR = VT_A + 12, MANIFESTS = ARR + 12,
                 VT_M = MANIFESTS + 4 + 4 * (size_t)n, MREF = VT_M + 8, STR = MREF + 20,
                 EMPTY = STR + 8, len = EMPTY + 8; /* the empty string's NUL */
    buf b = {calloc(1, len), len};
    uint8_t *p = b.data;
#define U32(at, v) memcpy(p + (at), &(uint32_t){(uint32_t)(v)}, 4)
#define U16(at, v) memcpy(p + (at), &(uint16_t){(uint16_t)(v)}, 2)
#define REF(at, to) U32(at, (to) - (at)) /* a uoffset to a later position */
    REF(0, S);
    /* Snapshot: id (struct, 12 bytes) at 4, nodes at 16, message at 20 (fields 0, 2, 4) */
    U16(VT_S, 14), U16(VT_S + 2, 24), U16(VT_S + 4, 4), U16(VT_S + 8, 16), U16(VT_S + 12, 20);
    U32(S, S - VT_S);
    REF(S + 16, NODES), REF(S + 20, EMPTY);
    /* NodeSnapshot: id (8 bytes) at 4, path 12, user_data 16, node_data 20, its type 24 */
    U16(VT_N, 14), U16(VT_N + 2, 28), U16(VT_N + 4, 4), U16(VT_N + 6, 12), U16(VT_N + 8, 16);
    U16(VT_N + 10, 24), U16(VT_N + 12, 20);
    U32(NODE, NODE - VT_N);
    REF(NODE + 12, STR), REF(NODE + 16, EMPTY), REF(NODE + 20, ARR);
    p[NODE + 24] = 1; /* NodeData_Array */
    /* ArrayNodeData: shape at 4 (empty), manifests at 8 */
    U16(VT_A, 12), U16(VT_A + 2, 12), U16(VT_A + 4, 4), U16(VT_A + 8, 8);
    U32(ARR, ARR - VT_A);
    REF(ARR + 4, EMPTY), REF(ARR + 8, MANIFESTS);
    /* ManifestRef: object_id at 4, extents at 16 (empty) */
    U16(VT_M, 8), U16(VT_M + 2, 20), U16(VT_M + 4, 4), U16(VT_M + 6, 16);
    U32(MREF, MREF - VT_M);
    REF(MREF + 16, EMPTY);
    U32(STR, 1), p[STR + 4] = '/'; /* the path "/" */
    U32(EMPTY, 0);                  /* an empty vector, string or list */
    U32(NODES, n);
    U32(MANIFESTS, n);
    for (uint32_t i = 0; i < n; i++) {
        REF(NODES + 4 + 4 * i, NODE);
        REF(MANIFESTS + 4 + 4 * i, MREF);
    }
#undef U32
#undef U16
#undef REF
    return b;
}

START_TEST(ic_shared_tables)
{
    zf_err err = {""};
    /* two entries: the verifier walks it (1 + 2 * (2 + 2) tables); the node list is refused
     * for its duplicate path */
    buf p = shared_tables_snapshot(2);
    buf f = wrap(&p, 2, ZF_IC_FILE_SNAPSHOT, 0);
    ck_assert_int_eq(snapshot_status(&f, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "not sorted by path"), "%s", err.msg);
    free(p.data);
    free(f.data);
    /* 900: a walk of 811,801 tables over 7 KB, refused by the verifier's bound of 2,800 (its
     * default, 10^6, would let it through to the sort check) */
    p = shared_tables_snapshot(900);
    f = wrap(&p, 2, ZF_IC_FILE_SNAPSHOT, 0);
    ck_assert_int_eq(snapshot_status(&f, &err), ZF_ERR_CORRUPT);
    ck_assert_msg(strstr(err.msg, "verifier"), "%s", err.msg);
    free(p.data);
    free(f.data);
}
END_TEST

/* A zstd frame of n zero bytes: with or without its content size. */
static buf zeros_frame(size_t n, bool content_size)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, content_size);
    ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 1);
    if (content_size)
        ZSTD_CCtx_setPledgedSrcSize(z, n);
    static uint8_t zero[1 << 20];
    size_t cap = 1 << 20;
    buf b = {malloc(cap), 0};
    size_t left = n;
    for (;;) {
        size_t take = left < sizeof zero ? left : sizeof zero;
        ZSTD_inBuffer in = {zero, take, 0};
        ZSTD_EndDirective end = take == left ? ZSTD_e_end : ZSTD_e_continue;
        size_t r;
        do {
            if (cap - b.len < ZSTD_CStreamOutSize()) {
                b.data = realloc(b.data, cap *= 2);
                ck_assert_ptr_nonnull(b.data);
            }
            ZSTD_outBuffer out = {b.data, cap, b.len};
            r = ZSTD_compressStream2(z, &out, &in, end);
            ck_assert(!ZSTD_isError(r));
            b.len = out.pos;
        } while (end == ZSTD_e_end ? r != 0 : in.pos < in.size);
        left -= take;
        if (end == ZSTD_e_end)
            break;
    }
    ZSTD_freeCCtx(z);
    return b;
}

START_TEST(ic_zstd_bounds)
{
    zf_err err = {""};
    uint8_t *out;
    size_t n;
    for (int cs = 0; cs < 2; cs++) {
        buf f = zeros_frame(200000, cs);
        ck_assert_int_eq(zf_ic_zstd_bounded(f.data, f.len, 200000, &out, &n, &err), ZF_OK);
        ck_assert_uint_eq(n, 200000);
        for (size_t i = 0; i < n; i += 997)
            ck_assert_uint_eq(out[i], 0);
        free(out);
        ck_assert_int_eq(zf_ic_zstd_bounded(f.data, f.len, 199999, &out, &n, &err),
                         ZF_ERR_TOO_LARGE);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(zf_ic_zstd_bounded(f.data, f.len, 1000, &out, &n, &err),
                         ZF_ERR_TOO_LARGE);
        ck_assert_int_eq(zf_ic_zstd_bounded(f.data, f.len - 1, 200000, &out, &n, &err),
                         ZF_ERR_CORRUPT); /* truncated */
        free(f.data);
    }
    /* a frame header declaring 2^40 bytes, then one RLE block of one byte: more than its 17
     * bytes can hold; refused before allocating */
    const uint8_t liar[] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0,
                            0x0b, 0x00, 0x00, 0x41};
    ck_assert_int_eq(zf_ic_zstd_bounded(liar, sizeof liar, SIZE_MAX, &out, &n, &err),
                     ZF_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err.msg, "declare"));
    ck_assert_int_eq(zf_ic_zstd_bounded(liar, 0, 100, &out, &n, &err), ZF_ERR_CORRUPT);
    ck_assert_int_eq(zf_ic_zstd_bounded((const uint8_t *)"not zstd", 8, 100, &out, &n, &err),
                     ZF_ERR_CORRUPT);

    /* a repo file whose payload declares ZF_IC_MAX_PAYLOAD + 1 bytes */
    buf big = zeros_frame(ZF_IC_MAX_PAYLOAD + 1, true);
    buf hdr = fixture("test-repo-v2", "repo");
    buf f = {malloc(ZF_IC_HEADER_LEN + big.len), ZF_IC_HEADER_LEN + big.len};
    memcpy(f.data, hdr.data, ZF_IC_HEADER_LEN);
    memcpy(f.data + ZF_IC_HEADER_LEN, big.data, big.len);
    ck_assert_int_eq(repo_status(&f, &err), ZF_ERR_TOO_LARGE);
    free(f.data);
    free(hdr.data);
    free(big.data);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("icechunk");
    TCase *tc = tcase_create("icechunk");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ic_ids);
    tcase_add_test(tc, ic_header);
    tcase_add_test(tc, ic_repo_v2);
    tcase_add_test(tc, ic_repo_v1);
    tcase_add_test(tc, ic_test_repo_data);
    tcase_add_test(tc, ic_split_repos);
    tcase_add_test(tc, ic_config_fixtures);
    tcase_add_test(tc, ic_config_yaml);
    tcase_add_test(tc, ic_config_flexbuffer);
    tcase_add_test(tc, ic_flatc_repo);
    tcase_add_test(tc, ic_flatc_snapshot);
    tcase_add_test(tc, ic_flatc_manifest);
    tcase_add_test(tc, ic_threads);
    tcase_add_test(tc, ic_hostile);
    tcase_add_test(tc, ic_shared_tables);
    tcase_add_test(tc, ic_zstd_bounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
