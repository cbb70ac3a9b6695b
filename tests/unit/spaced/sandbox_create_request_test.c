/* Unit tests of sandbox_create_request, the one create model both front doors fill: its
 * defaults, and validation failures that store nothing and, with the request released,
 * leave nothing allocated (run under ASan/LSan: the v1 create used to leak its parsed
 * rolling policy on exactly these paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "service/sandbox_create_request.h"
#include "spaced/spaced_context.h"

static struct spaced_context ctx; /* no store: validation fails before any store call */

static void fill(struct sandbox_create_request *req)
{
        sandbox_create_request_init(&ctx, req);
        req->env = json_pack("{s:s}", "A", "1");
        req->metadata = json_pack("{s:s}", "k", "v");
        req->rolling = json_pack("{s:i}", "interval_s", 3600);
        assert_non_null(req->env);
        assert_non_null(req->rolling);
}

static void test_defaults(void **state)
{
        struct sandbox_create_request req;
        ctx.cfg.disk_quota = true;
        ctx.cfg.sandbox_disk_mb = 2048;
        sandbox_create_request_init(&ctx, &req);
        assert_string_equal(req.template_ref, "busybox");
        assert_null(req.snapshot_id);
        assert_float_equal(req.resources.cpus, 1.0, 1e-9);
        assert_int_equal(req.resources.memory_mb, 512);
        assert_int_equal(req.resources.pids, 256);
        assert_int_equal(req.resources.disk_mb, 2048);
        assert_string_equal(req.on_timeout, "stop");
        assert_int_equal(req.timeout_s, 0);
        ctx.cfg.disk_quota = false;
        sandbox_create_request_init(&ctx, &req);
        assert_int_equal(req.resources.disk_mb, 0);
        sandbox_create_request_release(&req);
        sandbox_create_request_release(NULL);
}

static void expect_refused(struct sandbox_create_request *req, enum space_error_code code)
{
        struct space_error err = { 0 };
        struct sandbox sb = { .env = NULL };
        struct operation op;
        memset(&op, 0, sizeof(op));
        assert_int_equal(sandbox_create_request_submit(&ctx, req, &sb, &op, &err), -1);
        assert_int_equal(err.code, code);
        assert_true(err.message[0] != '\0');
        assert_null(sb.env); /* untouched on failure */
        assert_string_equal(op.id, "");
        sandbox_create_request_release(req);
        assert_null(req->rolling);
}

static void test_validation_failures_release_everything(void **state)
{
        struct sandbox_create_request req;
        ctx.cfg.disk_quota = false;

        fill(&req);
        snprintf(req.on_timeout, sizeof(req.on_timeout), "explode");
        expect_refused(&req, SPACE_E_INVALID_REQUEST);

        fill(&req);
        req.template_ref = "not a name!";
        expect_refused(&req, SPACE_E_INVALID_REQUEST);

        fill(&req);
        req.snapshot_id = "snap-0123456789abcdef";
        expect_refused(&req, SPACE_E_INVALID_REQUEST); /* template and snapshot */

        fill(&req);
        req.template_ref = NULL;
        expect_refused(&req, SPACE_E_INVALID_REQUEST); /* neither */

        fill(&req);
        req.disk_given = true;
        expect_refused(&req, SPACE_E_UNSUPPORTED); /* disk quotas off */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_validation_failures_release_everything),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
