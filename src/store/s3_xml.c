/* s3_xml.c — the XML documents of S3 on libxml2: ListObjectsV2 pages (ListBucketResult) and
 * error documents (<Error><Code>...</Code><Message>...</Message></Error>). Elements are matched by
 * local name, whatever their namespace; character and entity references are decoded by libxml2.
 * Parsing never reaches the network (XML_PARSE_NONET) nor substitutes external entities. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "store_impl.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void) { xmlInitParser(); }

static xmlDocPtr parse(const char *xml, size_t len)
{
    pthread_once(&xml_once, xml_init);
    if (len > INT_MAX)
        return NULL;
    return xmlReadMemory(xml, (int)len, "s3.xml", NULL,
                         XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static bool named(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static const xmlNode *child(const xmlNode *n, const char *name)
{
    for (const xmlNode *c = n->children; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

bool zf_listing_add_below(zf_store_listing *out, size_t *cap, const char *prefix, const char *full,
                         bool is_prefix)
{
    size_t pl = strlen(prefix), fl = strlen(full);
    if (fl < pl || memcmp(full, prefix, pl) != 0)
        return true;
    const char *rest = full + pl;
    size_t n = fl - pl;
    if (is_prefix) {
        if (!n || rest[n - 1] != '/')
            return true;
        n--;
    }
    if (!n || memchr(rest, '/', n) || (n == 1 && rest[0] == '.') ||
        (n == 2 && rest[0] == '.' && rest[1] == '.') || memchr(rest, '\\', n))
        return true; /* a folder marker, or a name no key can reach */
    return zf_listing_add(out, cap, rest, n, is_prefix);
}

zf_status zf_s3_list_parse(const char *xml, size_t len, const char *prefix, zf_store_listing *out,
                           size_t *cap, size_t *n_raw, char **next_token, zf_err *err)
{
    *next_token = NULL;
    *n_raw = 0;
    xmlDocPtr doc = parse(xml, len);
    const xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root || !named(root, "ListBucketResult")) {
        xmlFreeDoc(doc);
        return zf_fail(err, ZF_ERR_IO, "the listing is not an S3 ListBucketResult document");
    }
    bool ok = true, truncated = false;
    char *token = NULL;
    for (const xmlNode *c = root->children; c && ok; c = c->next) {
        const xmlNode *e = NULL;
        bool is_prefix = false;
        if (named(c, "Contents")) {
            e = child(c, "Key");
        } else if (named(c, "CommonPrefixes")) {
            e = child(c, "Prefix");
            is_prefix = true;
        } else if (named(c, "IsTruncated") || named(c, "NextContinuationToken")) {
            xmlChar *t = xmlNodeGetContent(c);
            if (!t) {
                ok = false;
            } else if (named(c, "IsTruncated")) {
                truncated = strcmp((const char *)t, "true") == 0;
            } else {
                free(token);
                ok = (token = strdup((const char *)t)) != NULL;
            }
            xmlFree(t);
        }
        if (e) {
            xmlChar *t = xmlNodeGetContent(e);
            ok = t && zf_listing_add_below(out, cap, prefix, (const char *)t, is_prefix);
            xmlFree(t);
            ++*n_raw;
        }
    }
    xmlFreeDoc(doc);
    if (!ok) {
        free(token);
        return ZF_ERR_NOMEM;
    }
    if (truncated && (!token || !*token)) {
        free(token);
        return zf_fail(err, ZF_ERR_IO, "a truncated listing without a NextContinuationToken");
    }
    if (truncated)
        *next_token = token;
    else
        free(token);
    return ZF_OK;
}

static void copy_text(const xmlNode *n, char *dst, size_t cap)
{
    if (!cap)
        return;
    dst[0] = '\0';
    xmlChar *t = n ? xmlNodeGetContent(n) : NULL;
    if (t) {
        size_t l = strlen((const char *)t);
        if (l >= cap)
            l = cap - 1;
        memcpy(dst, t, l);
        dst[l] = '\0';
        for (size_t i = 0; i < l; i++) /* one line */
            if (dst[i] == '\n' || dst[i] == '\r' || dst[i] == '\t')
                dst[i] = ' ';
        xmlFree(t);
    }
}

bool zf_s3_error_parse(const char *xml, size_t len, char *code, size_t code_n, char *msg,
                       size_t msg_n)
{
    if (!xml || !len)
        return false;
    xmlDocPtr doc = parse(xml, len);
    const xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    bool ok = root && named(root, "Error");
    if (ok) {
        copy_text(child(root, "Code"), code, code_n);
        copy_text(child(root, "Message"), msg, msg_n);
    }
    xmlFreeDoc(doc);
    return ok;
}
