/* Unit tests of api_auth: key hashing, creation, the Bearer check and the first-start
 * admin key, on an in-memory SQLite store. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/api_auth.h"
#include "auth/secret_hash.h"
#include "service/key_service.h"
#include "spaced/spaced_context.h"
#include "store_fixture.h"

static int setup(void **state)
{
        struct spaced_context *ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -1;
        ctx->store.ops = &state_store_sqlite;
        if (ctx->store.ops->open(":memory:", &ctx->store.st) < 0)
                return -1;
        store_fixture_tmpdir(ctx->cfg.state_dir, sizeof(ctx->cfg.state_dir));
        *state = ctx;
        return 0;
}

static int teardown(void **state)
{
        struct spaced_context *ctx = *state;
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/admin.key", ctx->cfg.state_dir);
        unlink(path);
        store_fixture_rmdir(ctx->cfg.state_dir);
        ctx->store.ops->close(ctx->store.st);
        free(ctx);
        return 0;
}

static void test_hash(void **state)
{
        char buf[65];
        assert_int_equal(secret_hash("abc", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(secret_hash("", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        char small[64];
        assert_int_equal(secret_hash("abc", small, sizeof(small)), -EINVAL);
}

static void test_create_and_check(void **state)
{
        struct spaced_context *ctx = *state;
        struct space_error err = { 0 };
        struct api_key k;
        char secret[64], header[128];
        struct principal who;
        assert_int_equal(api_auth_create_key(ctx, "ci", &k, secret, sizeof(secret), &err), 0);
        assert_int_equal(strlen(secret), 46);
        assert_memory_equal(secret, "space_", 6);
        assert_int_equal(strspn(secret + 6, "0123456789abcdef"), 40);
        assert_memory_equal(k.id, "key-", 4);
        assert_int_equal(strlen(k.id), 20);
        assert_string_equal(k.name, "ci");
        char hash[65];
        secret_hash(secret, hash, sizeof(hash));
        assert_string_equal(k.hash, hash); /* only the hash is kept */
        assert_null(strstr(k.hash, secret + 6));

        static const char *const schemes[] = { "Bearer ", "bearer ", "BEARER   " };
        for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
                snprintf(header, sizeof(header), "%s%s", schemes[i], secret);
                memset(&who, 0, sizeof(who));
                assert_int_equal(api_auth_check(ctx, header, &who, &err), 0);
                assert_string_equal(who.key_id, k.id);
        }
}

static void test_check_refuses(void **state)
{
        struct spaced_context *ctx = *state;
        struct space_error err = { 0 };
        struct api_key k;
        char secret[64], header[300];
        struct principal who = { .key_id = "untouched" };
        assert_int_equal(api_auth_create_key(ctx, "ci", &k, secret, sizeof(secret), &err), 0);
        char wrong[64];
        snprintf(wrong, sizeof(wrong), "%s", secret);
        wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
        char huge[200];
        memset(huge, 'a', sizeof(huge) - 1);
        huge[sizeof(huge) - 1] = '\0';
        char with_space[80], basic[80], no_space[80], wrong_header[80], long_header[260];
        snprintf(with_space, sizeof(with_space), "Bearer %s ", secret);
        snprintf(basic, sizeof(basic), "Basic %s", secret);
        snprintf(no_space, sizeof(no_space), "Bearer%s", secret);
        snprintf(wrong_header, sizeof(wrong_header), "Bearer %s", wrong);
        snprintf(long_header, sizeof(long_header), "Bearer %s", huge);
        const char *headers[] = { NULL,  "",       "Bearer",     "Bearer ",  "Bearer    ", secret,
                                  basic, no_space, wrong_header, with_space, long_header,  "Bearer space_" };
        for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
                memset(&err, 0, sizeof(err));
                if (api_auth_check(ctx, headers[i], &who, &err) != -1)
                        fail_msg("header %zu was accepted", i);
                assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
                assert_null(strstr(err.message, secret)); /* never echo a secret */
        }
        assert_string_equal(who.key_id, "untouched");
        /* A deleted key stops working at once. */
        snprintf(header, sizeof(header), "Bearer %s", secret);
        assert_int_equal(api_auth_check(ctx, header, &who, &err), 0);
        assert_int_equal(ctx->store.ops->key_delete(ctx->store.st, k.id, 1), 0);
        assert_int_equal(api_auth_check(ctx, header, &who, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
}

static void test_bootstrap(void **state)
{
        struct spaced_context *ctx = *state;
        struct space_error err = { 0 };
        char path[PATH_MAX + 16], secret[80] = "", header[128];
        struct principal who;
        snprintf(path, sizeof(path), "%s/admin.key", ctx->cfg.state_dir);
        assert_int_equal(api_auth_bootstrap(ctx, &err), 0);

        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        assert_non_null(fgets(secret, sizeof(secret), f));
        fclose(f);
        assert_int_equal(strlen(secret), 47);
        assert_int_equal(secret[46], '\n');
        secret[46] = '\0';
        snprintf(header, sizeof(header), "Bearer %s", secret);
        assert_int_equal(api_auth_check(ctx, header, &who, &err), 0);

        /* Second start: nothing new. */
        assert_int_equal(api_auth_bootstrap(ctx, &err), 0);
        int64_t count = 0;
        assert_int_equal(ctx->store.ops->key_count(ctx->store.st, &count), 0);
        assert_int_equal(count, 1);
        /* The file gone but keys present: no new admin key behind the operator's back. */
        unlink(path);
        assert_int_equal(api_auth_bootstrap(ctx, &err), 0);
        assert_int_equal(ctx->store.ops->key_count(ctx->store.st, &count), 0);
        assert_int_equal(count, 1);
        assert_int_equal(access(path, F_OK), -1);
}

/* The guard every control route passes: permission first (a route without one is refused),
 * then the object's project (another project's is not_found, like an unknown id). */
static void test_authorize(void **state)
{
        struct spaced_context *ctx = *state;
        struct space_error err = { 0 };
        struct sandbox sb = store_fixture_sandbox("sb-guarded", SANDBOX_RUNNING, 1);
        snprintf(sb.project_id, sizeof(sb.project_id), "pa");
        struct operation op = store_fixture_operation("op-guarded", "sandbox.create", sb.id, OPERATION_PENDING, 1);
        assert_int_equal(ctx->store.ops->sandbox_insert(ctx->store.st, &sb, &op), 0);
        sandbox_release(&sb);
        struct principal viewer = { .project_id = "pa",
                                    .role = ROLE_VIEWER,
                                    .permissions = principal_role_permissions(ROLE_VIEWER) };
        struct principal other = { .project_id = "pb",
                                   .role = ROLE_OWNER,
                                   .permissions = principal_role_permissions(ROLE_OWNER) };
        struct principal admin = { .project_id = "default", .role = ROLE_ADMIN, .permissions = PERM_ALL };

        assert_int_equal(api_auth_authorize(ctx, &viewer, PERM_SANDBOX_READ, OBJECT_SANDBOX, "sb-guarded", &err), 0);
        assert_int_equal(api_auth_authorize(ctx, &viewer, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sb-guarded", &err), -1);
        assert_int_equal(err.code, SPACE_E_FORBIDDEN);
        assert_non_null(strstr(err.message, "sandbox.write"));
        assert_int_equal(api_auth_authorize(ctx, &viewer, 0, OBJECT_NONE, NULL, &err), -1); /* fail closed */
        assert_int_equal(err.code, SPACE_E_FORBIDDEN);

        struct space_error foreign = { 0 }, unknown = { 0 };
        assert_int_equal(api_auth_authorize(ctx, &other, PERM_SANDBOX_READ, OBJECT_SANDBOX, "sb-guarded", &foreign), -1);
        assert_int_equal(api_auth_authorize(ctx, &other, PERM_SANDBOX_READ, OBJECT_SANDBOX, "sb-unknownxx", &unknown), -1);
        assert_int_equal(foreign.code, SPACE_E_NOT_FOUND);
        assert_int_equal(unknown.code, SPACE_E_NOT_FOUND);
        assert_string_equal(foreign.message, "sandbox sb-guarded not found");
        assert_string_equal(unknown.message, "sandbox sb-unknownxx not found");
        assert_int_equal(api_auth_authorize(ctx, &other, PERM_OPERATION_READ, OBJECT_OPERATION, "op-guarded", &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_int_equal(api_auth_authorize(ctx, &admin, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sb-guarded", &err), 0);
        assert_int_equal(api_auth_authorize(ctx, &admin, PERM_OPERATION_READ, OBJECT_OPERATION, "op-guarded", &err), 0);
}

/* An expired key is refused like an unknown one (401), never echoing its secret. */
static void test_expired_key(void **state)
{
        struct spaced_context *ctx = *state;
        struct space_error err = { 0 };
        struct key_spec spec = { .name = "brief", .project_id = "default", .role = ROLE_VIEWER, .expires_at_ms = 1000 };
        struct api_key k;
        char secret[KEY_SECRET_SIZE], header[128];
        struct principal who = { .key_id = "untouched" };
        assert_int_equal(key_service_mint(ctx, &spec, &k, secret, sizeof(secret), &err), 0);
        snprintf(header, sizeof(header), "Bearer %s", secret);
        assert_int_equal(api_auth_check(ctx, header, &who, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
        assert_non_null(strstr(err.message, "expired"));
        assert_null(strstr(err.message, secret));
        assert_string_equal(who.key_id, "untouched");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hash),
                cmocka_unit_test_setup_teardown(test_create_and_check, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_refuses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bootstrap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_authorize, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expired_key, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
