/* Unit tests of principal: the role -> permission table as docs/tenancy.md states it, the
 * permission check, project visibility, and what a key may grant (never more than it has). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "auth/principal.h"

static struct principal key_of(const char *project, enum principal_role role, uint32_t narrowed, int64_t expires)
{
        struct principal p = { .role = role, .expires_at_ms = expires };
        snprintf(p.project_id, sizeof(p.project_id), "%s", project);
        p.permissions = principal_role_permissions(role) & (narrowed ? narrowed : PERM_ALL);
        return p;
}

/* The table of docs/tenancy.md, written out again: a change to either must change both. */
static void test_role_table(void **state)
{
        static const struct {
                const char *perm;
                bool admin, owner, developer, viewer;
        } table[] = {
                { "server.read", 1, 1, 1, 1 },     { "sandbox.read", 1, 1, 1, 1 },   { "sandbox.write", 1, 1, 1, 0 },
                { "sandbox.exec", 1, 1, 1, 0 },    { "snapshot.read", 1, 1, 1, 1 },  { "snapshot.write", 1, 1, 1, 0 },
                { "template.read", 1, 1, 1, 1 },   { "template.write", 1, 1, 1, 0 }, { "operation.read", 1, 1, 1, 1 },
                { "operation.write", 1, 1, 1, 0 }, { "key.read", 1, 1, 0, 0 },       { "key.write", 1, 1, 0, 0 },
                { "project.read", 1, 1, 1, 1 },    { "platform", 1, 0, 0, 0 },       { "approval.write", 1, 1, 0, 0 },
                { "secret.read", 1, 1, 0, 0 },     { "secret.write", 1, 1, 0, 0 },   { "network.profile", 1, 0, 0, 0 },
        };
        uint32_t seen = 0;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                uint32_t bit = 0;
                assert_int_equal(permission_from_name(table[i].perm, &bit), 0);
                assert_string_equal(permission_name(bit), table[i].perm);
                seen |= bit;
                assert_int_equal(!!(principal_role_permissions(ROLE_ADMIN) & bit), table[i].admin);
                assert_int_equal(!!(principal_role_permissions(ROLE_OWNER) & bit), table[i].owner);
                assert_int_equal(!!(principal_role_permissions(ROLE_DEVELOPER) & bit), table[i].developer);
                assert_int_equal(!!(principal_role_permissions(ROLE_VIEWER) & bit), table[i].viewer);
        }
        assert_int_equal(seen, PERM_ALL); /* every bit has a row */
        assert_int_equal(principal_role_permissions(ROLE_NONE), 0);
        uint32_t bit;
        assert_int_equal(permission_from_name("sandbox.Read", &bit), -EINVAL);
        assert_int_equal(permission_from_name("", &bit), -EINVAL);
        assert_null(permission_name(PERM_NETWORK_PROFILE << 1));
}

static void test_role_names(void **state)
{
        static const char *const names[] = { "viewer", "developer", "owner", "admin" };
        for (size_t i = 0; i < 4; i++) {
                enum principal_role r;
                assert_int_equal(principal_role_from_name(names[i], &r), 0);
                assert_string_equal(principal_role_name(r), names[i]);
        }
        enum principal_role r = ROLE_VIEWER;
        assert_int_equal(principal_role_from_name("none", &r), -EINVAL);
        assert_int_equal(principal_role_from_name("root", &r), -EINVAL);
        assert_int_equal(principal_role_from_name(NULL, &r), -EINVAL);
        assert_int_equal(r, ROLE_VIEWER);
}

static void test_may(void **state)
{
        struct principal viewer = key_of("p1", ROLE_VIEWER, 0, 0);
        assert_true(principal_may(&viewer, PERM_SANDBOX_READ));
        assert_false(principal_may(&viewer, PERM_SANDBOX_WRITE));
        assert_false(principal_may(&viewer, PERM_SANDBOX_READ | PERM_SANDBOX_EXEC)); /* every bit is needed */
        struct principal narrowed = key_of("p1", ROLE_OWNER, PERM_SANDBOX_READ | PERM_KEY_READ, 0);
        assert_true(principal_may(&narrowed, PERM_KEY_READ));
        assert_false(principal_may(&narrowed, PERM_KEY_WRITE));
        assert_false(principal_may(&narrowed, PERM_SANDBOX_WRITE));
        struct principal nobody = { 0 };
        assert_false(principal_may(&nobody, PERM_SERVER_READ));
}

static void test_sees_project(void **state)
{
        struct principal owner = key_of("p1", ROLE_OWNER, 0, 0), admin = key_of("default", ROLE_ADMIN, 0, 0);
        assert_true(principal_sees_project(&owner, "p1"));
        assert_false(principal_sees_project(&owner, "p2"));
        assert_false(principal_sees_project(&owner, ""));
        assert_true(principal_sees_project(&admin, "p2"));
        assert_true(principal_sees_project(&admin, ""));
        assert_string_equal(principal_list_project(&owner), "p1");
        assert_null(principal_list_project(&admin));
        /* an admin key narrowed without the platform permission is one project's key */
        struct principal small_admin = key_of("default", ROLE_ADMIN, PERM_SANDBOX_READ, 0);
        assert_false(principal_sees_project(&small_admin, "p2"));
        assert_string_equal(principal_list_project(&small_admin), "default");
        struct principal nobody = { 0 };
        assert_false(principal_sees_project(&nobody, ""));
}

static void test_may_grant(void **state)
{
        char why[256];
        struct principal owner = key_of("p1", ROLE_OWNER, 0, 0);
        uint32_t dev = principal_role_permissions(ROLE_DEVELOPER), own = principal_role_permissions(ROLE_OWNER);
        assert_true(principal_may_grant(&owner, "p1", ROLE_DEVELOPER, dev, 0, why, sizeof(why)));
        assert_true(principal_may_grant(&owner, "p1", ROLE_OWNER, own, 0, why, sizeof(why)));
        assert_false(principal_may_grant(&owner, "p1", ROLE_ADMIN, own, 0, why, sizeof(why)));
        assert_non_null(strstr(why, "admin"));
        assert_false(
                principal_may_grant(&owner, "p2", ROLE_VIEWER, principal_role_permissions(ROLE_VIEWER), 0, why, sizeof(why)));
        assert_non_null(strstr(why, "another project"));
        assert_false(principal_may_grant(&owner, "p1", ROLE_OWNER, PERM_ALL, 0, why, sizeof(why)));
        assert_non_null(strstr(why, "platform"));

        struct principal narrowed = key_of("p1", ROLE_OWNER, PERM_KEY_WRITE | PERM_SANDBOX_READ, 0);
        assert_true(principal_may_grant(&narrowed, "p1", ROLE_VIEWER, PERM_SANDBOX_READ, 0, why, sizeof(why)));
        assert_false(
                principal_may_grant(&narrowed, "p1", ROLE_VIEWER, PERM_SANDBOX_READ | PERM_TEMPLATE_READ, 0, why, sizeof(why)));
        assert_non_null(strstr(why, "template.read"));

        struct principal expiring = key_of("p1", ROLE_OWNER, 0, 5000);
        assert_true(principal_may_grant(&expiring, "p1", ROLE_VIEWER, PERM_SANDBOX_READ, 5000, why, sizeof(why)));
        assert_true(principal_may_grant(&expiring, "p1", ROLE_VIEWER, PERM_SANDBOX_READ, 4000, why, sizeof(why)));
        assert_false(principal_may_grant(&expiring, "p1", ROLE_VIEWER, PERM_SANDBOX_READ, 5001, why, sizeof(why)));
        assert_false(principal_may_grant(&expiring, "p1", ROLE_VIEWER, PERM_SANDBOX_READ, 0, why, sizeof(why)));

        struct principal admin = key_of("default", ROLE_ADMIN, 0, 0);
        assert_true(principal_may_grant(&admin, "p2", ROLE_ADMIN, PERM_ALL, 0, why, sizeof(why)));
}

static void test_format(void **state)
{
        char buf[256];
        permission_format(PERM_SANDBOX_READ | PERM_KEY_WRITE, ", ", buf, sizeof(buf));
        assert_string_equal(buf, "sandbox.read, key.write");
        permission_format(0, ", ", buf, sizeof(buf));
        assert_string_equal(buf, "");
        char tiny[8];
        permission_format(PERM_ALL, ",", tiny, sizeof(tiny)); /* truncated, terminated */
        assert_true(strlen(tiny) < sizeof(tiny));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_role_table),   cmocka_unit_test(test_role_names), cmocka_unit_test(test_may),
                cmocka_unit_test(test_sees_project), cmocka_unit_test(test_may_grant),  cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
