#include "spaced/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LABELS_MAX 3
#define LABEL_SIZE 64
#define SLOTS 4096 /* open addressing over the series of a family: a power of two > METRICS_SERIES_MAX */

/* Upper bounds in seconds; the last bucket (+Inf) is implicit. From a millisecond (an exec,
 * a small request) to five minutes (a template build). */
static const double bucket_s[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300 };
#define BUCKETS (sizeof(bucket_s) / sizeof(bucket_s[0]))

enum family_id {
        F_HTTP_REQUESTS,
        F_HTTP_DURATION,
        F_OPERATION_DURATION,
        F_OPERATION_WAIT,
        F_CREATE_READY,
        F_STREAMS,
        F_LOG_WRITTEN,
        F_LOG_DROPPED,
        F_COUNT,
};

enum family_type { COUNTER, GAUGE, HISTOGRAM };

struct series {
        char labels[LABELS_MAX][LABEL_SIZE];
        uint32_t hash;
        int64_t value;             /* counter, gauge */
        uint64_t buckets[BUCKETS]; /* histogram: observations <= bucket_s[i] (not cumulative here) */
        uint64_t count;
        double sum_s;
};

struct family {
        const char *name, *help;
        enum family_type type;
        int nlabels;
        const char *label_names[LABELS_MAX];
        struct series *series; /* METRICS_SERIES_MAX + 1: the last is the "other" series */
        size_t n;
        int32_t slots[SLOTS]; /* index + 1 into series, 0: free */
};

struct metrics {
        pthread_mutex_t lock;
        struct family f[F_COUNT];
};

static const struct family templates[F_COUNT] = {
        [F_HTTP_REQUESTS] = { "space_http_requests_total",
                              "HTTP requests answered, by front door, route action and status",
                              COUNTER,
                              3,
                              { "door", "action", "status" } },
        [F_HTTP_DURATION] = { "space_http_request_duration_seconds",
                              "Time from a request's arrival to the end of its answer (streams: their whole life)",
                              HISTOGRAM,
                              2,
                              { "door", "action" } },
        [F_OPERATION_DURATION] = { "space_operation_duration_seconds",
                                   "Time an operation ran, from its start by a worker to its end, by kind and outcome",
                                   HISTOGRAM,
                                   2,
                                   { "kind", "outcome" } },
        [F_OPERATION_WAIT] = { "space_operation_queue_wait_seconds",
                               "Time an operation waited from its acceptance to its start by a worker",
                               HISTOGRAM,
                               1,
                               { "kind" } },
        [F_CREATE_READY] = { "space_sandbox_create_ready_seconds",
                             "Time from a sandbox create's acceptance to the sandbox running (succeeded creates)",
                             HISTOGRAM,
                             0,
                             { NULL } },
        [F_STREAMS] = { "space_streams_active",
                        "Long-lived streams open now (event streams, watches), by kind",
                        GAUGE,
                        1,
                        { "kind" } },
        [F_LOG_WRITTEN] = { "space_command_log_written_bytes_total",
                            "Bytes appended to streamed commands' logs on disk (records with their headers)",
                            COUNTER,
                            0,
                            { NULL } },
        [F_LOG_DROPPED] = { "space_command_log_dropped_bytes_total",
                            "Bytes of command-log output dropped to hold a sandbox's logs under --sandbox-log-cap",
                            COUNTER,
                            0,
                            { NULL } },
};

int metrics_new(struct metrics **ret)
{
        struct metrics *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        for (int i = 0; i < F_COUNT; i++) {
                struct family *f = &m->f[i];
                f->name = templates[i].name;
                f->help = templates[i].help;
                f->type = templates[i].type;
                f->nlabels = templates[i].nlabels;
                memcpy(f->label_names, templates[i].label_names, sizeof(f->label_names));
                f->series = calloc(METRICS_SERIES_MAX + 1, sizeof(*f->series));
                if (!f->series) {
                        metrics_free(m);
                        return -ENOMEM;
                }
        }
        *ret = m;
        return 0;
}

void metrics_free(struct metrics *m)
{
        if (!m)
                return;
        for (int i = 0; i < F_COUNT; i++)
                free(m->f[i].series);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static uint32_t labels_hash(const char (*labels)[LABEL_SIZE], int n)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (int i = 0; i < n; i++) {
                for (const char *p = labels[i]; *p; p++)
                        h = (h ^ (uint8_t)*p) * 16777619u;
                h = (h ^ 0xff) * 16777619u; /* a separator no value holds */
        }
        return h;
}

/* The series with these label values, made on first use; the "other" one when the family is
 * full. Called with the lock held. */
static struct series *series_of(struct family *f, const char *const *values)
{
        char labels[LABELS_MAX][LABEL_SIZE] = { { 0 } };
        for (int i = 0; i < f->nlabels; i++)
                snprintf(labels[i], LABEL_SIZE, "%s", values[i] ? values[i] : "");
        uint32_t h = labels_hash((const char(*)[LABEL_SIZE])labels, f->nlabels);
        for (uint32_t probe = 0; probe < SLOTS; probe++) {
                int32_t *slot = &f->slots[(h + probe) & (SLOTS - 1)];
                if (*slot == 0) {
                        if (f->n == METRICS_SERIES_MAX)
                                break;
                        struct series *s = &f->series[f->n];
                        memcpy(s->labels, labels, sizeof(labels));
                        s->hash = h;
                        *slot = (int32_t)++f->n;
                        return s;
                }
                struct series *s = &f->series[*slot - 1];
                if (s->hash == h && memcmp(s->labels, labels, sizeof(labels)) == 0)
                        return s;
        }
        struct series *other = &f->series[METRICS_SERIES_MAX];
        for (int i = 0; i < f->nlabels; i++)
                snprintf(other->labels[i], LABEL_SIZE, "other");
        return other;
}

static void add(struct metrics *m, enum family_id id, const char *const *values, int64_t delta)
{
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        series_of(&m->f[id], values)->value += delta;
        pthread_mutex_unlock(&m->lock);
}

static void observe(struct metrics *m, enum family_id id, const char *const *values, int64_t us)
{
        if (!m)
                return;
        double s_ = us > 0 ? (double)us / 1e6 : 0;
        pthread_mutex_lock(&m->lock);
        struct series *s = series_of(&m->f[id], values);
        size_t b = 0;
        while (b < BUCKETS && s_ > bucket_s[b])
                b++;
        if (b < BUCKETS)
                s->buckets[b]++;
        s->count++;
        s->sum_s += s_;
        pthread_mutex_unlock(&m->lock);
}

void metrics_http_request(struct metrics *m, const char *door, const char *action, unsigned status, int64_t duration_us)
{
        char code[8];
        snprintf(code, sizeof(code), "%u", status);
        const char *counted[] = { door, action ? action : "unknown", code };
        add(m, F_HTTP_REQUESTS, counted, 1);
        observe(m, F_HTTP_DURATION, counted, duration_us);
}

void metrics_operation_ended(struct metrics *m, const char *kind, bool succeeded, int64_t waited_us, int64_t ran_us)
{
        const char *ended[] = { kind, succeeded ? "succeeded" : "failed" };
        observe(m, F_OPERATION_DURATION, ended, ran_us);
        observe(m, F_OPERATION_WAIT, ended, waited_us);
        if (succeeded && strcmp(kind, "sandbox.create") == 0)
                observe(m, F_CREATE_READY, NULL, waited_us + ran_us);
}

void metrics_command_log(struct metrics *m, uint64_t written, uint64_t dropped)
{
        if (written)
                add(m, F_LOG_WRITTEN, NULL, (int64_t)written);
        if (dropped)
                add(m, F_LOG_DROPPED, NULL, (int64_t)dropped);
}

void metrics_stream(struct metrics *m, const char *kind, int delta)
{
        const char *of[] = { kind };
        add(m, F_STREAMS, of, delta);
}

static void write_escaped(FILE *out, const char *v)
{
        for (; *v; v++) {
                if (*v == '\\' || *v == '"')
                        fprintf(out, "\\%c", *v);
                else if (*v == '\n')
                        fputs("\\n", out);
                else
                        fputc(*v, out);
        }
}

/* name{labels[, le="bound"]} value; extra_name/extra_value: one more label (le) or NULL. */
static void write_line(FILE *out, const char *name, const char *suffix, const char *const *names, const char *const *values,
                       int n, const char *extra_name, const char *extra_value, double value)
{
        fprintf(out, "%s%s", name, suffix);
        if (n > 0 || extra_name) {
                fputc('{', out);
                for (int i = 0; i < n; i++) {
                        fprintf(out, "%s%s=\"", i ? "," : "", names[i]);
                        write_escaped(out, values[i]);
                        fputc('"', out);
                }
                if (extra_name)
                        fprintf(out, "%s%s=\"%s\"", n ? "," : "", extra_name, extra_value);
                fputc('}', out);
        }
        /* Counts exactly; seconds to the microsecond they were measured in. */
        if (value == (double)(int64_t)value && value < 9007199254740992.0 && value > -9007199254740992.0)
                fprintf(out, " %lld\n", (long long)value);
        else
                fprintf(out, " %.9g\n", value);
}

void metrics_write_sample(FILE *out, const char *name, const char *const *label_names, const char *const *label_values, int n,
                          double value)
{
        write_line(out, name, "", label_names, label_values, n, NULL, NULL, value);
}

static void render_series(FILE *out, const struct family *f, const struct series *s)
{
        const char *values[LABELS_MAX];
        for (int i = 0; i < f->nlabels; i++)
                values[i] = s->labels[i];
        if (f->type != HISTOGRAM) {
                write_line(out, f->name, "", f->label_names, values, f->nlabels, NULL, NULL, (double)s->value);
                return;
        }
        uint64_t cumulative = 0;
        char bound[32];
        for (size_t b = 0; b < BUCKETS; b++) {
                cumulative += s->buckets[b];
                snprintf(bound, sizeof(bound), "%g", bucket_s[b]);
                write_line(out, f->name, "_bucket", f->label_names, values, f->nlabels, "le", bound, (double)cumulative);
        }
        write_line(out, f->name, "_bucket", f->label_names, values, f->nlabels, "le", "+Inf", (double)s->count);
        write_line(out, f->name, "_sum", f->label_names, values, f->nlabels, NULL, NULL, s->sum_s);
        write_line(out, f->name, "_count", f->label_names, values, f->nlabels, NULL, NULL, (double)s->count);
}

int metrics_render(struct metrics *m, FILE *out)
{
        static const char *const type_names[] = { [COUNTER] = "counter", [GAUGE] = "gauge", [HISTOGRAM] = "histogram" };
        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        for (int i = 0; i < F_COUNT; i++) {
                const struct family *f = &m->f[i];
                fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, type_names[f->type]);
                for (size_t k = 0; k < f->n; k++)
                        render_series(out, f, &f->series[k]);
                const struct series *other = &f->series[METRICS_SERIES_MAX];
                if (other->count || other->value)
                        render_series(out, f, other);
                /* A histogram without labels has its one series even before anything happened. */
                if (f->nlabels == 0 && f->n == 0 && !other->count)
                        render_series(out, f, other);
        }
        pthread_mutex_unlock(&m->lock);
        return ferror(out) ? -EIO : 0;
}
