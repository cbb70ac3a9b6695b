#include "service/metrics_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "controller/warm_pool.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"

static void family(FILE *out, const char *name, const char *type, const char *help)
{
        fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One gauge family from a tally of the store: label names a, b. */
static int write_tally(struct spaced_context *ctx, FILE *out, bool sandboxes)
{
        struct store_tally *rows = NULL;
        size_t n = 0;
        int r = sandboxes ? STORE(ctx, sandbox_tally, &rows, &n) : STORE(ctx, operation_tally, &rows, &n);
        if (r < 0)
                return r;
        static const char *const sandbox_labels[] = { "state", "runtime" }, *const op_labels[] = { "kind", "state" };
        const char *name = sandboxes ? "space_sandboxes" : "space_operations_unfinished";
        family(out, name, "gauge",
               sandboxes ? "Sandboxes that are not destroyed, by state and runtime"
                         : "Operations accepted and not yet ended, by kind and state");
        for (size_t i = 0; i < n; i++) {
                const char *values[] = { rows[i].a, rows[i].b };
                metrics_write_sample(out, name, sandboxes ? sandbox_labels : op_labels, values, 2, (double)rows[i].n);
        }
        free(rows);
        return 0;
}

static void write_pool(struct spaced_context *ctx, FILE *out)
{
        static const char *const cond_label[] = { "condition" };
        struct pool_health h;
        pool_monitor_get(&ctx->pool_health, &h);
        family(out, "space_pool_condition", "gauge", "1 for the btrfs pool's condition at its last check, 0 for the others");
        for (enum pool_condition c = POOL_OK; c <= POOL_FAILED; c++) {
                const char *v[] = { pool_condition_name(c) };
                metrics_write_sample(out, "space_pool_condition", cond_label, v, 1, c == h.condition ? 1 : 0);
        }
        family(out, "space_pool_bytes", "gauge", "Size of the btrfs pool's filesystem");
        metrics_write_sample(out, "space_pool_bytes", NULL, NULL, 0, (double)h.pool_bytes);
        family(out, "space_pool_free_bytes", "gauge", "Free space in the btrfs pool");
        metrics_write_sample(out, "space_pool_free_bytes", NULL, NULL, 0, (double)h.pool_free_bytes);
        family(out, "space_pool_device_errors", "gauge", "Errors the pool's btrfs device counters report");
        metrics_write_sample(out, "space_pool_device_errors", NULL, NULL, 0, (double)h.device_errors);
        if (ctx->pool.image[0]) {
                family(out, "space_pool_image_allocated_bytes", "gauge", "Host disk the pool's image file really takes");
                metrics_write_sample(out, "space_pool_image_allocated_bytes", NULL, NULL, 0, (double)h.image_allocated_bytes);
                family(out, "space_pool_host_free_bytes", "gauge", "Free space of the host filesystem under the pool image");
                metrics_write_sample(out, "space_pool_host_free_bytes", NULL, NULL, 0, (double)h.host_free_bytes);
        }
}

static void write_warm_pools(struct spaced_context *ctx, FILE *out)
{
        static const struct {
                const char *name, *type, *help;
        } fams[] = {
                { "space_warm_pool_ready", "gauge", "Warm sandboxes ready to be claimed, by template" },
                { "space_warm_pool_target", "gauge", "How many the warm pool of a template aims to hold now" },
                { "space_warm_pool_claims_total", "counter", "Creates answered with a warm sandbox" },
                { "space_warm_pool_misses_total", "counter", "Creates of a pooled template that found no matching warm sandbox" },
                { "space_warm_pool_made_total", "counter", "Warm sandboxes made" },
                { "space_warm_pool_failures_total", "counter", "Warm sandboxes that could not be made" },
        };
        static const char *const label[] = { "template" };
        struct warm_pool_figures f;
        if (!warm_pool_figures(ctx->warm, 0, &f))
                return;
        for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
                family(out, fams[k].name, fams[k].type, fams[k].help);
                for (size_t i = 0; warm_pool_figures(ctx->warm, i, &f); i++) {
                        const double v[] = { f.ready,          f.target,       (double)f.claims,
                                             (double)f.misses, (double)f.made, (double)f.failed };
                        const char *values[] = { f.template_name };
                        metrics_write_sample(out, fams[k].name, label, values, 1, v[k]);
                }
        }
}

int metrics_service_text(struct spaced_context *ctx, char **ret, size_t *ret_len, struct space_error *err)
{
        static const char *const version_label[] = { "version" };
        static const char *const version_value[] = { SPACE_VERSION };
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        if (!out)
                return space_error_errno(err, -ENOMEM, "metrics");
        family(out, "space_build_info", "gauge", "Always 1; the version of spaced as a label");
        metrics_write_sample(out, "space_build_info", version_label, version_value, 1, 1);
        int r = metrics_render(ctx->metrics, out);
        if (r == 0)
                r = write_tally(ctx, out, true);
        if (r == 0)
                r = write_tally(ctx, out, false);
        if (r == 0) {
                write_pool(ctx, out);
                write_warm_pools(ctx, out);
        }
        if (fclose(out) != 0 && r == 0)
                r = -EIO;
        if (r < 0) {
                free(text);
                return space_error_errno(err, r, "read the figures for metrics");
        }
        *ret = text;
        *ret_len = len;
        return 0;
}
