/* Fuzz target: Azure answers (src/store/azure_xml.c): a List Blobs page (zf_azure_list_parse,
 * below the prefix on the input's first line). Listed names must be single path segments. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    const uint8_t *p = data, *line;
    size_t n = size, line_n;
    fz_split(&p, &n, "\n", &line, &line_n);
    if (n == 0) { /* no prefix line: the whole input is the document, below the root */
        p = data;
        n = size;
        line_n = 0;
    }
    char *prefix = fz_strndup(line, line_n);
    if (!prefix)
        return 0;
    zf_store_listing l = {0};
    size_t cap = 0, n_raw = 0;
    char *token = NULL;
    zf_err err = {""};
    zf_status st = zf_azure_list_parse((const char *)p, n, prefix, &l, &cap, &n_raw, &token, &err);
    if (st == ZF_OK)
        for (size_t i = 0; i < l.n; i++)
            FZ_CHECK(l.entries[i].name && !strchr(l.entries[i].name, '/'), "entry \"%s\"",
                     l.entries[i].name ? l.entries[i].name : "(null)");
    zf_store_listing_free(&l);
    free(token);
    free(prefix);
    return 0;
}
