/* secret_keyring: the master key from a file, a command or made on first start (0600); a
 * value sealed under a project's data key opens only with the same key, project and name. */
#include <errno.h>
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

#include "auth/secret_keyring.h"
#include "cleanup.h"

static char dir[] = "/tmp/secret-keyring-test-XXXXXX";

static void path_in(char *buf, size_t size, const char *name)
{
        snprintf(buf, size, "%s/%s", dir, name);
}

static void test_made_once_0600(void **state)
{
        (void)state;
        char path[256];
        path_in(path, sizeof(path), "made.key");
        struct secret_keyring *k = NULL, *again = NULL;
        struct space_error err = { 0 };
        assert_int_equal(secret_keyring_open(NULL, NULL, path, &k, &err), 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(st.st_size, 65);

        _cleanup_free_ char *dk = NULL, *sealed = NULL;
        assert_int_equal(secret_keyring_new_data_key(k, "proj", &dk), 0);
        assert_int_equal(secret_keyring_seal(k, dk, "proj", "GITHUB", (const uint8_t *)"ghp_value", 9, &sealed), 0);
        assert_null(strstr(sealed, "ghp_value"));
        /* A second start reads the same key: what the first sealed opens. */
        assert_int_equal(secret_keyring_open(NULL, NULL, path, &again, &err), 0);
        _cleanup_erase_ char *plain = NULL;
        size_t len = 0;
        assert_int_equal(secret_keyring_unseal(again, dk, "proj", "GITHUB", sealed, &plain, &len), 0);
        assert_int_equal(len, 9);
        assert_string_equal(plain, "ghp_value");
        /* Another name or project: the associated data differs, nothing opens. */
        char *other = NULL;
        assert_int_equal(secret_keyring_unseal(again, dk, "proj", "NPM", sealed, &other, &len), -EBADMSG);
        assert_int_equal(secret_keyring_unseal(again, dk, "proj2", "GITHUB", sealed, &other, &len), -EBADMSG);
        assert_int_equal(secret_keyring_unseal(again, dk, "proj", "GITHUB", "bm90IHNlYWxlZA==", &other, &len), -EBADMSG);
        assert_null(other);
        secret_keyring_free(k);
        secret_keyring_free(again);
}

static void test_file_and_command(void **state)
{
        (void)state;
        char path[256], cmd[512];
        path_in(path, sizeof(path), "given.key");
        FILE *f = fopen(path, "w");
        fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
        fclose(f);
        struct secret_keyring *from_file = NULL, *from_cmd = NULL, *bad = NULL;
        struct space_error err = { 0 };
        assert_int_equal(secret_keyring_open(path, NULL, "/nonexistent/x", &from_file, &err), 0);
        snprintf(cmd, sizeof(cmd), "cat %s", path);
        assert_int_equal(secret_keyring_open(NULL, cmd, "/nonexistent/x", &from_cmd, &err), 0);
        _cleanup_free_ char *dk = NULL, *sealed = NULL;
        assert_int_equal(secret_keyring_new_data_key(from_file, "p", &dk), 0);
        assert_int_equal(secret_keyring_seal(from_file, dk, "p", "N", (const uint8_t *)"v", 1, &sealed), 0);
        _cleanup_erase_ char *plain = NULL;
        size_t len = 0;
        assert_int_equal(secret_keyring_unseal(from_cmd, dk, "p", "N", sealed, &plain, &len), 0);
        assert_string_equal(plain, "v");
        /* A command that fails or prints no key, a file that is not one: refused. */
        assert_int_equal(secret_keyring_open(NULL, "false", "/nonexistent/x", &bad, &err), -1);
        assert_int_equal(secret_keyring_open(NULL, "echo short", "/nonexistent/x", &bad, &err), -1);
        f = fopen(path, "w");
        fputs("not hex at all\n", f);
        fclose(f);
        assert_int_equal(secret_keyring_open(path, NULL, "/nonexistent/x", &bad, &err), -1);
        assert_null(bad);
        secret_keyring_free(from_file);
        secret_keyring_free(from_cmd);
}

int main(void)
{
        if (!mkdtemp(dir))
                return 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_made_once_0600),
                cmocka_unit_test(test_file_and_command),
        };
        int failed = cmocka_run_group_tests(tests, NULL, NULL);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
                return 1;
        return failed;
}
