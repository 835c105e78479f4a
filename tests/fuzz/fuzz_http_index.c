/* Fuzz target: HTML directory index pages (src/store/http_index.c, zf_html_index_parse), as an
 * HTTP store lists a prefix. Every name listed must be one valid path segment. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_init();
    zf_store_listing l = {0};
    zf_err err = {""};
    if (zf_html_index_parse((const char *)data, size, &l, &err) == ZF_OK) {
        for (size_t i = 0; i < l.n; i++) {
            const char *name = l.entries[i].name;
            FZ_CHECK(name && *name && !strchr(name, '/'), "entry \"%s\"", name ? name : "(null)");
        }
        zf_store_listing_free(&l);
    }
    return 0;
}
