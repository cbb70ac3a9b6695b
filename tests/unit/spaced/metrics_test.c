/* Unit tests of metrics (src/spaced/metrics.c): the text format, histogram buckets, label
 * escaping, the bound on series, and a NULL registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spaced/metrics.h"

static char *render(struct metrics *m)
{
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        assert_non_null(out);
        assert_int_equal(metrics_render(m, out), 0);
        fclose(out);
        return text;
}

static void assert_has_line(const char *text, const char *line)
{
        char want[512];
        snprintf(want, sizeof(want), "\n%s\n", line);
        if (!strstr(text, want))
                fail_msg("no line %s in:\n%s", line, text);
}

static void test_counts_and_histograms(void **state)
{
        (void)state;
        struct metrics *m = NULL;
        assert_int_equal(metrics_new(&m), 0);
        metrics_http_request(m, "v1", "sandbox.get", 200, 400);     /* 0.4 ms: first bucket */
        metrics_http_request(m, "v1", "sandbox.get", 200, 3000);    /* 3 ms: <= 0.005 */
        metrics_http_request(m, "v1", "sandbox.get", 404, 2000000); /* 2 s: <= 2.5 */
        metrics_http_request(m, "v1", NULL, 404, 10);
        metrics_operation_ended(m, "sandbox.create", true, 1000, 20000);
        metrics_operation_ended(m, "sandbox.create", false, 1000, 20000);
        metrics_operation_ended(m, "sandbox.stop", true, 0, 400000000); /* 400 s: only +Inf */
        metrics_stream(m, "command_events", 1);
        metrics_stream(m, "command_events", 1);
        metrics_stream(m, "command_events", -1);
        char *t = render(m);
        assert_has_line(t, "# TYPE space_http_requests_total counter");
        assert_has_line(t, "space_http_requests_total{door=\"v1\",action=\"sandbox.get\",status=\"200\"} 2");
        assert_has_line(t, "space_http_requests_total{door=\"v1\",action=\"sandbox.get\",status=\"404\"} 1");
        assert_has_line(t, "space_http_requests_total{door=\"v1\",action=\"unknown\",status=\"404\"} 1");
        assert_has_line(t, "space_http_request_duration_seconds_bucket{door=\"v1\",action=\"sandbox.get\",le=\"0.001\"} 1");
        assert_has_line(t, "space_http_request_duration_seconds_bucket{door=\"v1\",action=\"sandbox.get\",le=\"0.005\"} 2");
        assert_has_line(t, "space_http_request_duration_seconds_bucket{door=\"v1\",action=\"sandbox.get\",le=\"1\"} 2");
        assert_has_line(t, "space_http_request_duration_seconds_bucket{door=\"v1\",action=\"sandbox.get\",le=\"2.5\"} 3");
        assert_has_line(t, "space_http_request_duration_seconds_bucket{door=\"v1\",action=\"sandbox.get\",le=\"+Inf\"} 3");
        assert_has_line(t, "space_http_request_duration_seconds_count{door=\"v1\",action=\"sandbox.get\"} 3");
        assert_has_line(t, "space_http_request_duration_seconds_sum{door=\"v1\",action=\"sandbox.get\"} 2.0034");
        assert_has_line(t, "space_operation_duration_seconds_count{kind=\"sandbox.create\",outcome=\"succeeded\"} 1");
        assert_has_line(t, "space_operation_duration_seconds_count{kind=\"sandbox.create\",outcome=\"failed\"} 1");
        assert_has_line(t, "space_operation_duration_seconds_bucket{kind=\"sandbox.stop\",outcome=\"succeeded\",le=\"300\"} 0");
        assert_has_line(t, "space_operation_duration_seconds_bucket{kind=\"sandbox.stop\",outcome=\"succeeded\",le=\"+Inf\"} 1");
        assert_has_line(t, "space_operation_queue_wait_seconds_count{kind=\"sandbox.create\"} 2");
        /* create -> ready counts only the succeeded create: wait + run */
        assert_has_line(t, "space_sandbox_create_ready_seconds_count 1");
        assert_has_line(t, "space_sandbox_create_ready_seconds_sum 0.021");
        assert_has_line(t, "space_streams_active{kind=\"command_events\"} 1");
        free(t);
        metrics_free(m);
}

static void test_labels_are_escaped(void **state)
{
        (void)state;
        struct metrics *m = NULL;
        assert_int_equal(metrics_new(&m), 0);
        metrics_stream(m, "a\"b\\c\nd", 1);
        char *t = render(m);
        assert_has_line(t, "space_streams_active{kind=\"a\\\"b\\\\c\\nd\"} 1");
        free(t);
        metrics_free(m);
}

/* No caller can grow a family past METRICS_SERIES_MAX: the rest is one "other" series. */
static void test_series_are_bounded(void **state)
{
        (void)state;
        struct metrics *m = NULL;
        char kind[32];
        assert_int_equal(metrics_new(&m), 0);
        for (int i = 0; i < METRICS_SERIES_MAX + 100; i++) {
                snprintf(kind, sizeof(kind), "k%d", i);
                metrics_stream(m, kind, 1);
        }
        metrics_stream(m, "k0", 1); /* an existing series is still found */
        char *t = render(m);
        assert_has_line(t, "space_streams_active{kind=\"k0\"} 2");
        assert_has_line(t, "space_streams_active{kind=\"other\"} 100");
        size_t lines = 0;
        for (const char *p = t; (p = strstr(p, "\nspace_streams_active{")); p++)
                lines++;
        assert_int_equal(lines, METRICS_SERIES_MAX + 1);
        free(t);
        metrics_free(m);
}

static void test_null_registry_is_a_no_op(void **state)
{
        (void)state;
        metrics_http_request(NULL, "v1", "x", 200, 1);
        metrics_operation_ended(NULL, "sandbox.create", true, 1, 1);
        metrics_stream(NULL, "x", 1);
        char *t = render(NULL);
        assert_true(t == NULL || t[0] == '\0');
        free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts_and_histograms),
                cmocka_unit_test(test_labels_are_escaped),
                cmocka_unit_test(test_series_are_bounded),
                cmocka_unit_test(test_null_registry_is_a_no_op),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
