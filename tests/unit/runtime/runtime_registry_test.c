/* Unit tests of runtime_registry.c: drivers by name, the default one, and how a template
 * binding or a sandbox picks its driver. The drivers here are small ops tables of the kind
 * a fake driver is made of: an instance, its own state, no module statics. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/runtime_registry.h"

struct toy_state {
        int connects;
        char config_run_dir[64];
};

static int toy_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        struct toy_state *s = calloc(1, sizeof(*s));
        if (!s)
                return space_error_errno(err, ENOMEM, "toy");
        snprintf(s->config_run_dir, sizeof(s->config_run_dir), "%s", cfg->run_dir);
        d->state = s;
        d->caps.pause = true;
        return 0;
}

static void toy_free(struct runtime_driver *d)
{
        free(d->state);
        d->state = NULL;
}

static int toy_agent_connect(const struct runtime_driver *d, const struct sandbox *sb, int timeout_ms)
{
        struct toy_state *s = d->state;
        s->connects++;
        return strcmp(sb->id, "sb-up") == 0 ? 99 : -ECONNREFUSED;
}

static int failing_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        return space_error_set(err, SPACE_E_INTERNAL, "no such hardware");
}

static const struct runtime_driver_ops toy_ops = {
        .name = "toy",
        .version = "7",
        .init = toy_init,
        .free = toy_free,
        .agent_connect = toy_agent_connect,
};
static const struct runtime_driver_ops other_ops = {
        .name = "other",
        .version = "1",
        .init = toy_init,
        .free = toy_free,
        .agent_connect = toy_agent_connect,
};
static const struct runtime_driver_ops broken_ops = { .name = "broken", .version = "0", .init = failing_init };

static struct runtime_registry reg;

static int setup(void **state)
{
        struct runtime_config cfg = { 0 };
        struct space_error err = { 0 };
        memset(&reg, 0, sizeof(reg));
        snprintf(cfg.run_dir, sizeof(cfg.run_dir), "/run/toy");
        if (runtime_registry_add(&reg, &toy_ops, &cfg, &err) < 0 || runtime_registry_add(&reg, &other_ops, &cfg, &err) < 0)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        runtime_registry_free(&reg);
        return 0;
}

static void test_find_and_default(void **state)
{
        assert_int_equal(reg.n, 2);
        const struct runtime_driver *d = runtime_registry_default(&reg);
        assert_non_null(d);
        assert_string_equal(d->ops->name, "toy"); /* the first added */
        assert_ptr_equal(runtime_registry_find(&reg, "other"), reg.drivers[1]);
        assert_null(runtime_registry_find(&reg, "Toy"));
        assert_null(runtime_registry_find(&reg, ""));
        assert_null(runtime_registry_find(&reg, NULL));
        /* Each instance has its own state, made by its init from the config. */
        assert_ptr_not_equal(reg.drivers[0]->state, reg.drivers[1]->state);
        assert_string_equal(((struct toy_state *)d->state)->config_run_dir, "/run/toy");
        assert_true(d->caps.pause);
}

static void test_add_refuses_duplicates_and_failed_inits(void **state)
{
        struct runtime_config cfg = { 0 };
        struct space_error err = { 0 };
        assert_int_equal(runtime_registry_add(&reg, &toy_ops, &cfg, &err), -1);
        assert_non_null(strstr(err.message, "added twice"));
        err = (struct space_error){ 0 };
        assert_int_equal(runtime_registry_add(&reg, &broken_ops, &cfg, &err), -1);
        assert_string_equal(err.message, "no such hardware");
        assert_int_equal(reg.n, 2);
        assert_null(runtime_registry_find(&reg, "broken"));
        struct runtime_driver *dup = calloc(1, sizeof(*dup));
        dup->ops = &other_ops;
        assert_int_equal(runtime_registry_adopt(&reg, dup), -EEXIST);
        free(dup);
}

static void test_binding_picks_the_driver(void **state)
{
        struct space_error err = { 0 };
        json_t *named = json_pack("{s:s, s:s}", "driver", "other", "digest", "sha256:00");
        json_t *unnamed = json_pack("{s:s}", "digest", "sha256:00");
        json_t *unknown = json_pack("{s:s}", "driver", "firecracker");
        json_t *wrong_type = json_pack("{s:i}", "driver", 3);
        assert_ptr_equal(runtime_registry_for_binding(&reg, named, &err), reg.drivers[1]);
        assert_ptr_equal(runtime_registry_for_binding(&reg, unnamed, &err), reg.drivers[0]);
        assert_ptr_equal(runtime_registry_for_binding(&reg, NULL, &err), reg.drivers[0]);
        /* A binding naming a runtime this daemon does not host is the caller's 4xx, not a crash. */
        assert_null(runtime_registry_for_binding(&reg, unknown, &err));
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        assert_non_null(strstr(err.message, "firecracker"));
        err = (struct space_error){ 0 };
        assert_null(runtime_registry_for_binding(&reg, wrong_type, &err));
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        json_decref(named);
        json_decref(unnamed);
        json_decref(unknown);
        json_decref(wrong_type);
}

static void test_sandbox_picks_its_recorded_driver(void **state)
{
        struct space_error err = { 0 };
        struct sandbox sb = { 0 };
        snprintf(sb.id, sizeof(sb.id), "sb-up");
        snprintf(sb.runtime, sizeof(sb.runtime), "other");
        assert_ptr_equal(runtime_registry_for(&reg, &sb, &err), reg.drivers[1]);
        snprintf(sb.runtime, sizeof(sb.runtime), "gvisor");
        assert_null(runtime_registry_for(&reg, &sb, &err));
        assert_int_equal(err.code, SPACE_E_UNAVAILABLE);
        assert_non_null(strstr(err.message, "gvisor"));
        sb.runtime[0] = '\0'; /* never the default by accident */
        assert_null(runtime_registry_for(&reg, &sb, &err));
}

static void test_agent_connect_is_checked(void **state)
{
        struct space_error err = { 0 };
        struct sandbox sb = { 0 };
        snprintf(sb.runtime, sizeof(sb.runtime), "toy");
        snprintf(sb.id, sizeof(sb.id), "sb-up");
        assert_int_equal(runtime_registry_agent_connect(&reg, &sb, 1000, &err), 99);
        snprintf(sb.id, sizeof(sb.id), "sb-down");
        assert_int_equal(runtime_registry_agent_connect(&reg, &sb, 1000, &err), -ECONNREFUSED);
        assert_int_equal(err.code, SPACE_E_UNAVAILABLE);
        assert_non_null(strstr(err.message, "sb-down"));
        assert_int_equal(((struct toy_state *)reg.drivers[0]->state)->connects, 2);
        snprintf(sb.runtime, sizeof(sb.runtime), "nope");
        err = (struct space_error){ 0 };
        assert_int_equal(runtime_registry_agent_connect(&reg, &sb, 1000, &err), -EPROTONOSUPPORT);
        assert_int_equal(err.code, SPACE_E_UNAVAILABLE);
        assert_non_null(strstr(err.message, "does not host"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_find_and_default, setup, teardown),
                cmocka_unit_test_setup_teardown(test_add_refuses_duplicates_and_failed_inits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_binding_picks_the_driver, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_picks_its_recorded_driver, setup, teardown),
                cmocka_unit_test_setup_teardown(test_agent_connect_is_checked, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
