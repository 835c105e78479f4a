/* Fuzz target: what GCS and Google's token endpoint answer (src/store/gcs_json.c): an objects.list
 * page (zf_gcs_list_parse, below the prefix on the input's first line), an error document
 * (zf_gcs_error_parse), a token response (zf_gcs_token_parse) and a service-account key
 * (zf_gcs_key_parse). Listed names must be single path segments, a token printable without
 * spaces. */
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
    zf_status st = zf_gcs_list_parse((const char *)p, n, prefix, &l, &cap, &n_raw, &token, &err);
    if (st == ZF_OK)
        for (size_t i = 0; i < l.n; i++)
            FZ_CHECK(l.entries[i].name && l.entries[i].name[0] && !strchr(l.entries[i].name, '/'),
                     "entry \"%s\"", l.entries[i].name ? l.entries[i].name : "(null)");
    zf_store_listing_free(&l);
    free(token);
    char msg[256];
    if (zf_gcs_error_parse((const char *)p, n, msg, sizeof msg))
        for (const char *c = msg; *c; c++)
            FZ_CHECK((unsigned char)*c >= 0x20, "control character in an error message");
    int64_t secs;
    if (zf_gcs_token_parse((const char *)p, n, &token, &secs, &err) == ZF_OK) {
        for (const char *c = token; *c; c++)
            FZ_CHECK(*c > 0x20 && *c < 0x7f, "token byte 0x%02x", (unsigned char)*c);
        FZ_CHECK(secs > 0, "expires_in %lld", (long long)secs);
        free(token);
    }
    zf_gcs_key k;
    if (zf_gcs_key_parse("key.json", (const char *)p, n, &k, &err) == ZF_OK)
        zf_gcs_key_free(&k);
    free(prefix);
    return 0;
}
