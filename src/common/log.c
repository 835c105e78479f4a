/* log.c — leveled logging: to stderr, one write(2) per message so threads do not interleave, or
 * to syslog(3) once the daemon runs in the background. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "zarrfs/log.h"

static _Atomic int log_level = ZF_LOG_WARN;
static atomic_bool use_syslog = false;

void zf_log_set_level(zf_log_level level) { log_level = level; }
zf_log_level zf_log_get_level(void) { return (zf_log_level)log_level; }

bool zf_log_parse_level(const char *name, zf_log_level *out)
{
    static const struct {
        const char *name;
        zf_log_level level;
    } names[] = {{"error", ZF_LOG_ERROR}, {"warn", ZF_LOG_WARN},   {"warning", ZF_LOG_WARN},
                 {"info", ZF_LOG_INFO},   {"debug", ZF_LOG_DEBUG}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].level;
            return true;
        }
    return false;
}

void zf_log_to_syslog(bool on)
{
    if (on)
        openlog("zarrfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    use_syslog = on;
    if (!on)
        closelog();
}

/* label: "error", ..., or NULL for zf_log_always. */
static void emit(int prio, const char *label, const char *fmt, va_list ap)
{
    char line[2048];
    int n = label ? snprintf(line, sizeof line, "%s: ", label) : 0;
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    if (use_syslog) {
        line[len] = '\0';
        syslog(prio, "%s", line);
        return;
    }
    char out[2100];
    int k = snprintf(out, sizeof out, "zarrfs: %.*s\n", (int)len, line);
    ssize_t w = write(STDERR_FILENO, out, k < 0 ? 0 : (size_t)k);
    (void)w;
}

void zf_log(zf_log_level level, const char *fmt, ...)
{
    if ((int)level > log_level)
        return;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    static const int prios[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    va_list ap;
    va_start(ap, fmt);
    emit(prios[level], names[level], fmt, ap);
    va_end(ap);
}

void zf_log_always(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(LOG_INFO, NULL, fmt, ap);
    va_end(ap);
}
