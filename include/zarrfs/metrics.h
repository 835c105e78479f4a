/* metrics.h — what the daemon measures for monitoring systems, process-wide: durations of store
 * requests (by store kind and outcome) and of chunk decodes as histograms, failed replies by
 * errno, bytes served to readers. The FUSE front end exposes them with the cache's and stores'
 * counters in the Prometheus text exposition format (version 0.0.4, which node_exporter's
 * textfile collector and promtool read; names and units follow OpenMetrics: _total, _seconds,
 * _bytes) as MOUNTPOINT/.zarrfs-metrics and -o metrics_file=PATH. Every update is a few relaxed
 * atomic additions: safe from any thread, no lock. */
#ifndef ZARRFS_METRICS_H
#define ZARRFS_METRICS_H

#include <stdint.h>

#include "zarrfs/sbuf.h"
#include "zarrfs/status.h"

/* Monotonic clock in nanoseconds. */
uint64_t zf_metrics_now_ns(void);

/* One request of a store of kind `kind` (its ops' scheme: "file", "http", "s3", ...; a static
 * string) that took ns nanoseconds and ended with st: outcome "ok", "not_found" (also a
 * conditional write's conflict, a result), or "error". At most 32 kinds are told apart; more are
 * counted as "other". */
void zf_metrics_store_request(const char *kind, zf_status st, uint64_t ns);
/* One chunk decoded (or failed to) in ns nanoseconds. */
void zf_metrics_decode(uint64_t ns);
/* One FUSE reply with error e (a positive errno; ENOENT included: lookups of absent names). */
void zf_metrics_reply_error(int e);
/* n bytes returned to read() (and mmap page-ins) of files. */
void zf_metrics_served(uint64_t n);

/* Append the process-wide metrics above to b, each sample with the label set `labels` (already
 * escaped: `mount="/mnt/x",store="s3://b/p"`; "" for none), with # HELP and # TYPE lines. */
void zf_metrics_format(zf_sbuf *b, const char *labels);
/* Append `name="value"` with value escaped as the exposition format wants label values (\\, \",
 * \n), and a ',' before it when b's text does not end with '{' or is empty. */
void zf_metrics_label(zf_sbuf *b, const char *name, const char *value);

#endif
