/* store_s3.c — S3 store (stub until the libcurl backend lands). */
#include "zarrfs/store.h"

zf_status zf_store_s3_open(const char *url, const zf_store_options *opts, zf_store **out,
                          zf_err *err)
{
    (void)opts, (void)out;
    return zf_fail(err, ZF_ERR_UNSUPPORTED, "%s: S3 stores are not supported yet", url);
}
