/* azure_xml.c — Azure Blob Storage's List Blobs answer (EnumerationResults) on libxml2, as
 * s3_xml.c reads S3's: elements matched by local name, never the network (XML_PARSE_NONET), no
 * external entities. Error documents have S3's shape and are read by zf_s3_error_parse. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "store_impl.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void) { xmlInitParser(); }

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

/* The Name of a Blob or BlobPrefix, percent-decoded when Encoded="true" (names with characters
 * XML 1.0 cannot carry); *nul when the decoded name holds a NUL. NULL when out of memory. */
static char *entry_name(const xmlNode *name, bool *nul)
{
    xmlChar *t = xmlNodeGetContent(name);
    if (!t)
        return NULL;
    xmlChar *enc = xmlGetProp(name, (const xmlChar *)"Encoded");
    char *out;
    *nul = false;
    if (enc && strcmp((const char *)enc, "true") == 0) {
        size_t n;
        out = zf_url_decode((const char *)t, strlen((const char *)t), &n);
        *nul = out && n != strlen(out);
    } else {
        out = strdup((const char *)t);
    }
    xmlFree(enc);
    xmlFree(t);
    return out;
}

zf_status zf_azure_list_parse(const char *xml, size_t len, const char *prefix,
                              zf_store_listing *out, size_t *cap, size_t *n_raw,
                              char **next_marker, zf_err *err)
{
    *next_marker = NULL;
    *n_raw = 0;
    pthread_once(&xml_once, xml_init);
    xmlDocPtr doc = len <= INT_MAX ? xmlReadMemory(xml, (int)len, "azure.xml", NULL,
                                                   XML_PARSE_NONET | XML_PARSE_NOERROR |
                                                       XML_PARSE_NOWARNING)
                                   : NULL;
    const xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root || !named(root, "EnumerationResults")) {
        xmlFreeDoc(doc);
        return zf_fail(err, ZF_ERR_IO, "the listing is not an Azure EnumerationResults document");
    }
    bool ok = true, blobs_seen = false;
    char *marker = NULL;
    for (const xmlNode *c = root->children; c && ok; c = c->next) {
        if (named(c, "Blobs")) {
            blobs_seen = true;
            for (const xmlNode *b = c->children; b && ok; b = b->next) {
                bool is_prefix = named(b, "BlobPrefix");
                if (!is_prefix && !named(b, "Blob"))
                    continue;
                const xmlNode *nm = child(b, "Name");
                ++*n_raw;
                if (!nm)
                    continue;
                bool nul;
                char *name = entry_name(nm, &nul);
                ok = name && (nul || zf_listing_add_below(out, cap, prefix, name, is_prefix));
                free(name);
            }
        } else if (named(c, "NextMarker")) {
            xmlChar *t = xmlNodeGetContent(c);
            free(marker);
            marker = NULL;
            ok = t && (!*t || (marker = strdup((const char *)t)) != NULL);
            xmlFree(t);
        }
    }
    xmlFreeDoc(doc);
    if (!ok) {
        free(marker);
        return ZF_ERR_NOMEM;
    }
    if (!blobs_seen) {
        free(marker);
        return zf_fail(err, ZF_ERR_IO, "an Azure listing without a Blobs element");
    }
    *next_marker = marker;
    return ZF_OK;
}
