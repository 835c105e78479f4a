/* store_gcs.c — Google Cloud Storage (gs://BUCKET/PREFIX), on the transport of
 * http_transport.c. (Being written: see include/zarrfs/store.h.) */
#include <string.h>

#include "store_impl.h"

bool zf_store_gcs_url(const char *url)
{
    return strncmp(url, "gs://", 5) == 0 ||
           strncmp(url, "https://storage.googleapis.com/", 31) == 0;
}

zf_status zf_store_gcs_open(const char *url, const zf_store_options *opts, zf_store **out,
                            zf_err *err)
{
    (void)opts, (void)out;
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: Google Cloud Storage is not supported yet", url);
}
