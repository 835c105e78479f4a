/* icechunk_config.c — the virtual chunk containers of an Icechunk repository's configuration:
 * spec 1's `config.yaml` through libyaml (zf_ic_config_yaml), the list both forms fill
 * (zf_ic_config_push, zf_ic_config_free). Spec 2's FlexBuffer form is read in icechunk_fb.cc.
 *
 * config.yaml as Icechunk 0.x and 1.x write it (serde_yaml): a mapping whose
 * `virtual_chunk_containers` maps a name to {name, url_prefix, store}, the store a YAML tag
 * naming its kind over its options: `store: !s3_compatible {region: ..., endpoint_url: ...}`,
 * `!local_file_system ''`, `!azure {}`. Also read: the store as a one-key mapping
 * (`store: {s3: {...}}`, serde's other enum form) or a plain kind name, and the containers as a
 * sequence.
 *
 * Bounds: the document is parsed once as events first, refusing nesting deeper than 64 (libyaml's
 * scanner does work proportional to the flow depth at each token: a file of 40,000 `[` took 7 s)
 * and more than 64 aliases (the loader looks each alias up in a list of every anchor; and an
 * alias repeats its node in the walk below). Only then is it loaded as a document. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "zarrfs/icechunk.h"

#include "icechunk_impl.h"

#define YAML_MAX_DEPTH 64
#define YAML_MAX_ALIASES 64

zf_ic_container *zf_ic_config_push(zf_ic_config *c)
{
    if ((c->n & (c->n - 1)) == 0) { /* capacity: the powers of two */
        size_t cap = c->n ? 2 * c->n : 1;
        if (cap > SIZE_MAX / sizeof *c->containers)
            return NULL;
        zf_ic_container *nc = realloc(c->containers, cap * sizeof *nc);
        if (!nc)
            return NULL;
        c->containers = nc;
    }
    zf_ic_container *x = &c->containers[c->n++];
    memset(x, 0, sizeof *x);
    return x;
}

void zf_ic_config_free(zf_ic_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        zf_ic_container *x = &c->containers[i];
        free(x->name);
        free(x->url_prefix);
        free(x->kind);
        free(x->endpoint_url);
        free(x->account);
        free(x->region);
    }
    free(c->containers);
    c->containers = NULL;
    c->n = 0;
}

static zf_status yaml_failure(const yaml_parser_t *p, zf_err *err)
{
    if (p->error == YAML_MEMORY_ERROR)
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    return zf_fail(err, ZF_ERR_CORRUPT, "config.yaml: not YAML: %s at line %zu",
                   p->problem ? p->problem : "error", (size_t)p->problem_mark.line + 1);
}

/* The event pass: nesting depth and aliases within their bounds, the whole stream well formed. */
static zf_status prescan(const char *text, size_t len, zf_err *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    zf_status st = ZF_OK;
    int depth = 0, aliases = 0;
    for (bool done = false; !done && st == ZF_OK;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_failure(&p, err);
            break;
        }
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > YAML_MAX_DEPTH)
                st = zf_fail(err, ZF_ERR_CORRUPT, "config.yaml: nested more than %d deep",
                             YAML_MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_ALIAS_EVENT:
            if (++aliases > YAML_MAX_ALIASES)
                st = zf_fail(err, ZF_ERR_CORRUPT, "config.yaml: more than %d aliases",
                             YAML_MAX_ALIASES);
            break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return st;
}

typedef struct walk {
    yaml_document_t *doc;
    zf_err *err;
} walk;

static bool is_scalar(const yaml_node_t *n) { return n && n->type == YAML_SCALAR_NODE; }

static bool scalar_is(const yaml_node_t *n, const char *s)
{
    size_t l = strlen(s);
    return is_scalar(n) && n->data.scalar.length == l && memcmp(n->data.scalar.value, s, l) == 0;
}

/* A local tag (`!s3_compatible`): the kind of a store. */
static bool has_local_tag(const yaml_node_t *n)
{
    return n && n->tag && n->tag[0] == '!' && n->tag[1];
}

/* A plain null: ~, null, Null, NULL or nothing (YAML 1.2 core schema), or tagged !!null; not a
 * node with a local tag (`store: !local_file_system` with nothing after it). */
static bool is_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || has_local_tag(n))
        return false;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null") ||
            scalar_is(n, "Null") || scalar_is(n, "NULL"));
}

/* The value of key in mapping m; NULL when absent (or m is not a mapping). */
static yaml_node_t *map_get(const walk *w, const yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++)
        if (scalar_is(yaml_document_get_node(w->doc, p->key), key))
            return yaml_document_get_node(w->doc, p->value);
    return NULL;
}

static zf_status copy_scalar(const walk *w, const yaml_node_t *n, const char *what, char **out)
{
    size_t l = n->data.scalar.length;
    if (memchr(n->data.scalar.value, '\0', l))
        return zf_fail(w->err, ZF_ERR_CORRUPT, "a NUL inside \"%s\"", what);
    char *s = malloc(l + 1);
    if (!s)
        return zf_fail(w->err, ZF_ERR_NOMEM, "out of memory");
    memcpy(s, n->data.scalar.value, l);
    s[l] = '\0';
    *out = s;
    return ZF_OK;
}

/* A string field of mapping m: absent or null leaves *out NULL (an error when required). */
static zf_status get_string(const walk *w, const yaml_node_t *m, const char *key, bool required,
                            char **out)
{
    const yaml_node_t *v = map_get(w, m, key);
    if (is_null(v))
        return required ? zf_fail(w->err, ZF_ERR_CORRUPT, "no \"%s\"", key) : ZF_OK;
    if (!is_scalar(v))
        return zf_fail(w->err, ZF_ERR_CORRUPT, "\"%s\" is not a string", key);
    return copy_scalar(w, v, key, out);
}

static zf_status get_bool(const walk *w, const yaml_node_t *m, const char *key, bool *out)
{
    const yaml_node_t *v = map_get(w, m, key);
    *out = false;
    if (is_null(v))
        return ZF_OK;
    if (scalar_is(v, "true") || scalar_is(v, "True") || scalar_is(v, "TRUE"))
        *out = true;
    else if (!scalar_is(v, "false") && !scalar_is(v, "False") && !scalar_is(v, "FALSE"))
        return zf_fail(w->err, ZF_ERR_CORRUPT, "\"%s\" is not a boolean", key);
    return ZF_OK;
}

/* The store of a container: its kind and the node of its options (NULL: none). */
static zf_status store_kind(const walk *w, const yaml_node_t *s, zf_ic_container *c,
                            const yaml_node_t **opts)
{
    const char *tag = (const char *)s->tag;
    *opts = NULL;
    if (has_local_tag(s)) { /* !s3_compatible {...}: a local tag names the kind */
        size_t l = strlen(tag + 1);
        if (!(c->kind = malloc(l + 1)))
            return zf_fail(w->err, ZF_ERR_NOMEM, "out of memory");
        memcpy(c->kind, tag + 1, l + 1);
        *opts = s;
        return ZF_OK;
    }
    if (s->type == YAML_MAPPING_NODE &&
        s->data.mapping.pairs.top - s->data.mapping.pairs.start == 1) { /* {s3: {...}} */
        const yaml_node_t *k = yaml_document_get_node(w->doc, s->data.mapping.pairs.start->key);
        if (is_scalar(k) && !is_null(k)) {
            *opts = yaml_document_get_node(w->doc, s->data.mapping.pairs.start->value);
            return copy_scalar(w, k, "store", &c->kind);
        }
    }
    if (is_scalar(s) && !is_null(s)) /* a kind without options */
        return copy_scalar(w, s, "store", &c->kind);
    return zf_fail(w->err, ZF_ERR_CORRUPT, "\"store\" names no store kind");
}

static zf_status container(const walk *w, const yaml_node_t *n, zf_ic_config *out)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return zf_fail(w->err, ZF_ERR_CORRUPT, "not a mapping");
    zf_ic_container *c = zf_ic_config_push(out);
    if (!c)
        return zf_fail(w->err, ZF_ERR_NOMEM, "out of memory");
    zf_status st;
    if ((st = get_string(w, n, "name", false, &c->name)) != ZF_OK ||
        (st = get_string(w, n, "url_prefix", true, &c->url_prefix)) != ZF_OK)
        return st;
    const yaml_node_t *s = map_get(w, n, "store"), *opts;
    if (is_null(s))
        return zf_fail(w->err, ZF_ERR_CORRUPT, "no \"store\"");
    if ((st = store_kind(w, s, c, &opts)) != ZF_OK)
        return st;
    if (!opts || opts->type != YAML_MAPPING_NODE) /* `!local_file_system ''` */
        return ZF_OK;
    if ((st = get_string(w, opts, "endpoint_url", false, &c->endpoint_url)) != ZF_OK ||
        (st = get_string(w, opts, "region", false, &c->region)) != ZF_OK ||
        (st = get_string(w, opts, "account", false, &c->account)) != ZF_OK ||
        (st = get_bool(w, opts, "anonymous", &c->anonymous)) != ZF_OK ||
        (st = get_bool(w, opts, "allow_http", &c->allow_http)) != ZF_OK ||
        (st = get_bool(w, opts, "force_path_style", &c->force_path_style)) != ZF_OK)
        return st;
    return ZF_OK;
}

static zf_status containers(const walk *w, const yaml_node_t *root, zf_ic_config *out)
{
    if (!root || root->type != YAML_MAPPING_NODE)
        return zf_fail(w->err, ZF_ERR_CORRUPT, "config.yaml: not a mapping");
    const yaml_node_t *v = map_get(w, root, "virtual_chunk_containers");
    if (is_null(v))
        return ZF_OK;
    size_t i = 0;
    zf_status st = ZF_OK;
    if (v->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
             p < v->data.mapping.pairs.top && st == ZF_OK; p++, i++)
            st = container(w, yaml_document_get_node(w->doc, p->value), out);
    } else if (v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *p = v->data.sequence.items.start;
             p < v->data.sequence.items.top && st == ZF_OK; p++, i++)
            st = container(w, yaml_document_get_node(w->doc, *p), out);
    } else {
        return zf_fail(w->err, ZF_ERR_CORRUPT,
                       "config.yaml: \"virtual_chunk_containers\" is not a mapping");
    }
    if (st != ZF_OK)
        zf_err_prefix(w->err, "config.yaml: virtual chunk container %zu", i - 1);
    return st;
}

zf_status zf_ic_config_yaml(const char *text, size_t len, zf_ic_config *out, zf_err *err)
{
    out->containers = NULL;
    out->n = 0;
    zf_status st = prescan(text, len, err);
    if (st != ZF_OK)
        return st;
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p))
        return zf_fail(err, ZF_ERR_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &doc)) {
        st = yaml_failure(&p, err);
        yaml_parser_delete(&p);
        return st;
    }
    walk w = {&doc, err};
    st = containers(&w, yaml_document_get_root_node(&doc), out);
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    if (st != ZF_OK)
        zf_ic_config_free(out);
    return st;
}
