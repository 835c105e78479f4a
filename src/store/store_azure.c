/* store_azure.c — Azure Blob Storage (az://CONTAINER/PREFIX), on the transport of
 * http_transport.c. (Being written: see include/zarrfs/store.h.) */
#include <string.h>

#include "store_impl.h"

bool zf_store_azure_url(const char *url)
{
    if (strncmp(url, "az://", 5) == 0 || strncmp(url, "abfs://", 7) == 0 ||
        strncmp(url, "abfss://", 8) == 0)
        return true;
    if (strncmp(url, "https://", 8) != 0)
        return false;
    const char *host = url + 8;
    size_t hl = strcspn(host, "/?#");
    static const char suffix[] = ".blob.core.windows.net";
    return hl > sizeof suffix - 1 && memcmp(host + hl - (sizeof suffix - 1), suffix,
                                            sizeof suffix - 1) == 0;
}

zf_status zf_store_azure_open(const char *url, const zf_store_options *opts, zf_store **out,
                              zf_err *err)
{
    (void)opts, (void)out;
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: Azure Blob Storage is not supported yet", url);
}
