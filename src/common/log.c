/* log.c — leveled logging to stderr, one write(2) per message so threads do not interleave. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "zarrfs/log.h"

static _Atomic int log_level = ZF_LOG_WARN;

void zf_log_set_level(zf_log_level level) { log_level = level; }
zf_log_level zf_log_get_level(void) { return (zf_log_level)log_level; }

void zf_log(zf_log_level level, const char *fmt, ...)
{
    if ((int)level > log_level)
        return;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    char line[2048];
    int n = snprintf(line, sizeof line, "zarrfs: %s: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
