/* Unit tests of rootfs_path (paths inside a root being built) and template_ref (names). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "templates/rootfs_path.h"
#include "templates/template_ref.h"

static void test_clean(void **state)
{
        static const struct {
                const char *in;
                bool abs;
                const char *out; /* NULL: -EINVAL */
        } cases[] = {
                { "a/b", false, "a/b" },
                { "./a//b/", false, "a/b" },
                { ".", false, "." },
                { "a/./b/.", false, "a/b" },
                { "/etc/passwd", false, NULL },
                { "/etc/passwd", true, "etc/passwd" },
                { "///", true, "." },
                { "..", false, NULL },
                { "a/../b", false, NULL },
                { "a/..b/c..", false, "a/..b/c.." },
                { "", false, NULL },
                { "../x", true, NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char out[PATH_MAX] = "untouched";
                int r = rootfs_path_clean(cases[i].in, cases[i].abs, out, sizeof(out));
                if (!cases[i].out) {
                        assert_int_equal(r, -EINVAL);
                } else {
                        assert_int_equal(r, 0);
                        assert_string_equal(out, cases[i].out);
                }
        }
        char small[4];
        assert_int_equal(rootfs_path_clean("abcdef", false, small, sizeof(small)), -ENAMETOOLONG);
}

static void test_split(void **state)
{
        char parent[PATH_MAX], leaf[PATH_MAX];
        assert_int_equal(rootfs_path_split("/a/b/c", parent, leaf), 0);
        assert_string_equal(parent, "a/b");
        assert_string_equal(leaf, "c");
        assert_int_equal(rootfs_path_split("c", parent, leaf), 0);
        assert_string_equal(parent, ".");
        assert_int_equal(rootfs_path_split("/", parent, leaf), -EINVAL);
        assert_int_equal(rootfs_path_split("a/..", parent, leaf), -EINVAL);
}

/* Links inside the root resolve inside it; mkdirs and remove never follow them out. */
static void test_resolution_stays_inside(void **state)
{
        char root[] = "/tmp/rootfs-path-test-XXXXXX", outside[] = "/tmp/rootfs-path-out-XXXXXX", path[PATH_MAX];
        assert_non_null(mkdtemp(root));
        assert_non_null(mkdtemp(outside));
        snprintf(path, sizeof(path), "%s/escape", root);
        assert_int_equal(symlink(outside, path), 0); /* an absolute link: means <root><outside> */
        snprintf(path, sizeof(path), "%s/up", root);
        assert_int_equal(symlink("../../../../..", path), 0);
        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(rootfd >= 0);

        /* The link dangles inside the root: nothing is made, least of all outside. */
        int d = rootfs_path_mkdirs(rootfd, "escape/made", 0, 0, false);
        assert_true(d < 0);
        snprintf(path, sizeof(path), "%s/made", outside);
        assert_int_equal(access(path, F_OK), -1);
        /* Once its target exists inside the root, the link leads there. */
        char cmd0[PATH_MAX * 2];
        snprintf(cmd0, sizeof(cmd0), "mkdir -p %s%s", root, outside);
        assert_int_equal(system(cmd0), 0);
        d = rootfs_path_mkdirs(rootfd, "escape/made", 0, 0, false);
        assert_true(d >= 0);
        close(d);
        assert_int_equal(access(path, F_OK), -1); /* not created outside */
        snprintf(path, sizeof(path), "%s%s/made", root, outside);
        assert_int_equal(access(path, F_OK), 0); /* but inside, where the link means */

        int fd = rootfs_path_open(rootfd, "up/etc/passwd", O_RDONLY, 0);
        assert_int_equal(fd, -ENOENT); /* ".." stops at the root */
        assert_int_equal(rootfs_path_remove_at(rootfd, ".."), -EINVAL);
        assert_int_equal(rootfs_path_remove_at(rootfd, "a/b"), -EINVAL);
        assert_int_equal(rootfs_path_remove_at(rootfd, ""), -EINVAL);
        assert_int_equal(rootfs_path_remove_at(rootfd, "escape"), 0);
        assert_int_equal(access(outside, F_OK), 0); /* removing the link leaves its target */

        char cmd[PATH_MAX * 2];
        snprintf(cmd, sizeof(cmd), "rm -rf %s %s", root, outside);
        assert_int_equal(system(cmd), 0);
        close(rootfd);
}

static void test_template_refs(void **state)
{
        static const char *const good[] = { "busybox",
                                            "my-app:v1.2",
                                            "a_b.c:latest",
                                            "x:y",
                                            "app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                            "app:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" };
        static const char *const bad[] = { "",
                                           ":tag",
                                           "name:",
                                           ".hidden",
                                           "a:.b",
                                           "a/b",
                                           "a:b:c",
                                           "sp ace",
                                           "app@sha256:0123",
                                           "app@md5:0123456789abcdef0123456789abcdef",
                                           "app@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
                                           "@sha256:x",
                                           "0123456789012345678901234567890123456789:0123456789012345678901234" };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_true(template_ref_ok(good[i]));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_false(template_ref_ok(bad[i]));
        char name[64], tag[64];
        assert_int_equal(template_ref_split("app:v2", name, sizeof(name), tag, sizeof(tag)), 0);
        assert_string_equal(name, "app");
        assert_string_equal(tag, "v2");
        assert_int_equal(template_ref_split("app", name, sizeof(name), tag, sizeof(tag)), 0);
        assert_string_equal(tag, "");
        assert_int_equal(template_ref_split("a/b", name, sizeof(name), tag, sizeof(tag)), -EINVAL);
        assert_int_equal(template_ref_split(good[4], name, sizeof(name), tag, sizeof(tag)), -EINVAL); /* not a name to build */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_clean),
                cmocka_unit_test(test_split),
                cmocka_unit_test(test_resolution_stays_inside),
                cmocka_unit_test(test_template_refs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
