/* log.h — one logging sink for the daemon: stderr in the foreground, syslog (facility daemon,
 * ident "zarrfs") once it has backgrounded itself. */
#ifndef ZARRFS_LOG_H
#define ZARRFS_LOG_H

#include <stdbool.h>

typedef enum zf_log_level { ZF_LOG_ERROR = 0, ZF_LOG_WARN, ZF_LOG_INFO, ZF_LOG_DEBUG } zf_log_level;

/* Messages above this level are dropped. Default ZF_LOG_WARN. */
void zf_log_set_level(zf_log_level level);
zf_log_level zf_log_get_level(void);
/* "error", "warn" (or "warning"), "info", "debug" -> level; false for anything else. */
bool zf_log_parse_level(const char *name, zf_log_level *out);

/* Send messages to syslog from now on (true) or to stderr (false, the default). */
void zf_log_to_syslog(bool on);

/* printf-style; a newline is appended. Thread-safe (one write per message). */
void zf_log(zf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A message the user asked for (e.g. -o stats_log), written whatever the level, at syslog
 * priority info. */
void zf_log_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define zf_log_error(...) zf_log(ZF_LOG_ERROR, __VA_ARGS__)
#define zf_log_warn(...) zf_log(ZF_LOG_WARN, __VA_ARGS__)
#define zf_log_info(...) zf_log(ZF_LOG_INFO, __VA_ARGS__)
#define zf_log_debug(...) zf_log(ZF_LOG_DEBUG, __VA_ARGS__)

#endif
