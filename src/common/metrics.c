/* metrics.c — the process-wide histograms and counters of metrics.h, and their text exposition
 * (https://prometheus.io/docs/instrumenting/exposition_formats/, text format 0.0.4). Buckets are
 * cumulative when written; they are kept per bucket here, so an observation is one addition. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarrfs/metrics.h"

/* Upper bounds of the duration buckets, seconds: a local read takes microseconds, a cloud
 * request tens of milliseconds, a retried one seconds. */
static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10,  30};
#define NB (sizeof bounds / sizeof *bounds)

typedef struct histogram {
    _Atomic uint64_t bucket[NB + 1]; /* the last: above every bound (+Inf) */
    _Atomic uint64_t sum_ns;
} histogram;

static void observe(histogram *h, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < NB && s > bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

enum { OK, NOT_FOUND, ERROR, NOUTCOMES };
static const char *const outcome_name[NOUTCOMES] = {"ok", "not_found", "error"};

#define MAX_KINDS 32
static struct {
    _Atomic(const char *) kind;
    histogram h[NOUTCOMES];
} kinds[MAX_KINDS + 1]; /* the last: "other" */
static pthread_mutex_t kinds_mu = PTHREAD_MUTEX_INITIALIZER;

static histogram decode;
#define MAX_ERRNO 160
static _Atomic uint64_t reply_errors[MAX_ERRNO + 1]; /* the last: any larger errno */
static _Atomic uint64_t served;

uint64_t zf_metrics_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The slot of kind: found without a lock (slots are filled once, in order), added under one. */
static size_t kind_slot(const char *kind)
{
    for (size_t i = 0; i < MAX_KINDS; i++) {
        const char *k = atomic_load_explicit(&kinds[i].kind, memory_order_acquire);
        if (!k)
            break;
        if (k == kind || strcmp(k, kind) == 0)
            return i;
    }
    pthread_mutex_lock(&kinds_mu);
    size_t i = 0;
    for (; i < MAX_KINDS; i++) {
        const char *k = atomic_load_explicit(&kinds[i].kind, memory_order_acquire);
        if (!k) {
            atomic_store_explicit(&kinds[i].kind, kind, memory_order_release);
            break;
        }
        if (strcmp(k, kind) == 0)
            break;
    }
    pthread_mutex_unlock(&kinds_mu);
    return i; /* MAX_KINDS: "other" */
}

void zf_metrics_store_request(const char *kind, zf_status st, uint64_t ns)
{
    int o = st == ZF_OK                                           ? OK
            : st == ZF_ERR_NOT_FOUND || st == ZF_ERR_CONFLICT ? NOT_FOUND
                                                                  : ERROR;
    observe(&kinds[kind_slot(kind ? kind : "other")].h[o], ns);
}

void zf_metrics_decode(uint64_t ns) { observe(&decode, ns); }

void zf_metrics_reply_error(int e)
{
    if (e > 0)
        atomic_fetch_add_explicit(&reply_errors[e < MAX_ERRNO ? e : MAX_ERRNO], 1,
                                  memory_order_relaxed);
}

void zf_metrics_served(uint64_t n) { atomic_fetch_add_explicit(&served, n, memory_order_relaxed); }

void zf_metrics_label(zf_sbuf *b, const char *name, const char *value)
{
    if (b->len && b->s[b->len - 1] != '{')
        zf_sbuf_add(b, ",", 1);
    zf_sbuf_printf(b, "%s=\"", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            zf_sbuf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            zf_sbuf_add(b, "\\n", 2);
        else
            zf_sbuf_add(b, p, 1);
    }
    zf_sbuf_add(b, "\"", 1);
}

/* One histogram's samples: NAME_bucket{LABELS,le="..."} cumulative, NAME_sum, NAME_count. */
static void format_histogram(zf_sbuf *b, const char *name, const char *labels,
                             const histogram *h)
{
    uint64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (size_t i = 0; i <= NB; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < NB)
            zf_sbuf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
                           (unsigned long long)cum);
        else
            zf_sbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                           (unsigned long long)cum);
    }
    zf_sbuf_printf(b, "%s_sum{%s} %.9f\n", name, labels,
                   (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9);
    zf_sbuf_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)cum);
}

void zf_metrics_format(zf_sbuf *b, const char *labels)
{
    const char *req = "zarrfs_store_request_duration_seconds";
    zf_sbuf_printf(b, "# HELP %s Duration of store requests (reads, listings, writes) by store "
                   "kind and outcome.\n# TYPE %s histogram\n", req, req);
    for (size_t i = 0; i <= MAX_KINDS; i++) {
        const char *k = i < MAX_KINDS ? atomic_load(&kinds[i].kind) : "other";
        if (!k)
            continue;
        for (int o = 0; o < NOUTCOMES; o++) {
            uint64_t n = 0;
            for (size_t j = 0; j <= NB; j++)
                n += atomic_load(&kinds[i].h[o].bucket[j]);
            if (n == 0 && (o != OK || i == MAX_KINDS)) /* series appear once they happen, */
                continue;                              /* a known kind's ok at once */
            zf_sbuf l = {0};
            zf_sbuf_add(&l, labels, strlen(labels));
            zf_metrics_label(&l, "kind", k);
            zf_metrics_label(&l, "outcome", outcome_name[o]);
            if (!l.oom)
                format_histogram(b, req, l.s, &kinds[i].h[o]);
            else
                b->oom = true;
            free(l.s);
        }
    }
    const char *dec = "zarrfs_chunk_decode_duration_seconds";
    zf_sbuf_printf(b, "# HELP %s Duration of chunk decodes through the codec pipeline.\n"
                   "# TYPE %s histogram\n", dec, dec);
    format_histogram(b, dec, labels, &decode);
    const char *sep = labels[0] ? "," : "";
    zf_sbuf_printf(b, "# HELP zarrfs_reply_errors_total File-system requests answered with an "
                   "error, by errno.\n# TYPE zarrfs_reply_errors_total counter\n");
    for (int e = 1; e <= MAX_ERRNO; e++) {
        uint64_t n = atomic_load_explicit(&reply_errors[e], memory_order_relaxed);
        if (!n)
            continue;
        const char *name = e < MAX_ERRNO ? strerrorname_np(e) : NULL;
        zf_sbuf_printf(b, "zarrfs_reply_errors_total{%s%serrno=\"%s\"} %llu\n", labels, sep,
                       name ? name : "other", (unsigned long long)n);
    }
    zf_sbuf_printf(b, "# HELP zarrfs_served_bytes_total Bytes returned to readers of files.\n"
                   "# TYPE zarrfs_served_bytes_total counter\nzarrfs_served_bytes_total{%s} "
                   "%llu\n", labels, (unsigned long long)atomic_load(&served));
}
