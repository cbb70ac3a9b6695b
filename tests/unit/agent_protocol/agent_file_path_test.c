/* Unit tests of agent_file_path: the path checks and the confined resolution every file
 * request of space-agent goes through (a temporary directory stands in for the root). */
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

#include "space_agent/agent_file_path.h"
#include "space_agent/agent_file_walk.h"

static char root[64];

static int norm(const char *in, char *out)
{
        return agent_file_path_normalize((const uint8_t *)in, strlen(in), out, PATH_MAX);
}

static void test_normalize(void **state)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "/", "/" },
                { "/a", "/a" },
                { "//a//b/", "/a/b" },
                { "/a/./b/.", "/a/b" },
                { "/a/b/..", "/a" },
                { "/a/b/../..", "/" },
                { "/../../etc/passwd", "/etc/passwd" },
                { "/a/../../../b/../c", "/c" },
                { "/...", "/..." },
                { "/a/..b/.c", "/a/..b/.c" },
                { "/..", "/" },
        };
        char out[PATH_MAX];

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                assert_int_equal(norm(cases[i].in, out), 0);
                if (strcmp(out, cases[i].out) != 0)
                        fail_msg("%s -> %s, want %s", cases[i].in, out, cases[i].out);
        }
}

static void test_normalize_refuses(void **state)
{
        char out[PATH_MAX], *big = malloc(PATH_MAX + 10);

        assert_int_equal(norm("", out), -EINVAL);
        assert_int_equal(norm("relative", out), -EINVAL);
        assert_int_equal(norm("./x", out), -EINVAL);
        assert_int_equal(agent_file_path_normalize((const uint8_t *)"/a\0b", 4, out, sizeof out), -EINVAL);
        big[0] = '/';
        memset(big + 1, 'a', PATH_MAX + 8);
        assert_int_equal(agent_file_path_normalize((const uint8_t *)big, PATH_MAX + 9, out, sizeof out), -ENAMETOOLONG);
        assert_int_equal(agent_file_path_normalize((const uint8_t *)big, PATH_MAX - 1, out, sizeof out), 0);
        free(big);
}

static void put(const char *rel, const char *text)
{
        char p[256];
        snprintf(p, sizeof p, "%s/%s", root, rel);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void link_in(const char *target, const char *rel)
{
        char p[256];
        snprintf(p, sizeof p, "%s/%s", root, rel);
        assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
        char p[256];
        strcpy(root, "/tmp/agent-file-path-test-XXXXXX");
        if (!mkdtemp(root))
                return -1;
        snprintf(p, sizeof p, "%s/etc", root);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/dir", root);
        mkdir(p, 0755);
        put("etc/passwd", "inside\n");
        link_in("/", "dir/root");
        link_in("../../../../..", "dir/up");
        link_in("/etc", "dir/etc");
        link_in("/etc/passwd", "dir/passwd");
        link_in("/proc/self/root", "dir/magic");
        return agent_file_root_set(root);
}

static int teardown(void **state)
{
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void assert_reads_inside(const char *path)
{
        char buf[32] = "";
        int fd = agent_file_open(path, O_RDONLY, 0, true);
        if (fd < 0)
                fail_msg("%s: %s", path, strerror(-fd));
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        assert_true(n > 0);
        if (strcmp(buf, "inside\n") != 0)
                fail_msg("%s read %s", path, buf);
}

static void test_links_stay_inside(void **state)
{
        char out[PATH_MAX];

        assert_reads_inside("/etc/passwd");
        assert_reads_inside("/dir/root/etc/passwd");
        assert_reads_inside("/dir/up/etc/passwd");
        assert_reads_inside("/dir/etc/passwd");
        assert_reads_inside("/dir/passwd");
        assert_reads_inside("/dir/root/dir/root/dir/up/etc/passwd");
        assert_int_equal(norm("/dir/../../../etc/passwd", out), 0);
        assert_reads_inside(out);
        /* The host's /proc is not inside this root: the link leads nowhere. */
        assert_true(agent_file_open("/dir/magic/etc/passwd", O_RDONLY, 0, true) < 0);
        /* Not following the last component refuses a symlink there. */
        assert_int_equal(agent_file_open("/dir/passwd", O_RDONLY, 0, false), -ELOOP);
}

/* The same confinement without openat2 (what the agent does under gVisor). */
static void assert_walk_reads_inside(int rootfd, const char *rel)
{
        char buf[32] = "";
        int fd = agent_file_walk_open(rootfd, rel, O_RDONLY, 0, true);
        if (fd < 0)
                fail_msg("%s: %s", rel, strerror(-fd));
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        assert_true(n > 0);
        if (strcmp(buf, "inside\n") != 0)
                fail_msg("%s read %s", rel, buf);
}

static void test_walk_stays_inside(void **state)
{
        int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(rootfd >= 0);
        assert_walk_reads_inside(rootfd, "etc/passwd");
        assert_walk_reads_inside(rootfd, "dir/root/etc/passwd");
        assert_walk_reads_inside(rootfd, "dir/up/etc/passwd");
        assert_walk_reads_inside(rootfd, "dir/etc/passwd");
        assert_walk_reads_inside(rootfd, "dir/passwd");
        assert_walk_reads_inside(rootfd, "dir/root/dir/root/dir/up/etc/passwd");
        assert_walk_reads_inside(rootfd, "../../../etc/passwd");
        assert_walk_reads_inside(rootfd, "dir/../../etc/./passwd");
        assert_true(agent_file_walk_open(rootfd, "dir/magic/etc/passwd", O_RDONLY, 0, true) < 0);
        assert_int_equal(agent_file_walk_open(rootfd, "dir/passwd", O_RDONLY, 0, false), -ELOOP);
        /* A create through an absolute link lands inside the root. */
        int fd = agent_file_walk_open(rootfd, "dir/root/created", O_WRONLY | O_CREAT, 0644, true);
        assert_true(fd >= 0);
        close(fd);
        char p[256];
        snprintf(p, sizeof p, "%s/created", root);
        assert_int_equal(access(p, F_OK), 0);
        fd = agent_file_walk_open(rootfd, ".", O_PATH | O_DIRECTORY, 0, true);
        assert_true(fd >= 0);
        close(fd);
        close(rootfd);
}

static void test_parent_and_mkdir(void **state)
{
        const char *name;
        struct stat st;
        char p[256];

        assert_int_equal(agent_file_open_parent("/", &name), -EINVAL);
        int fd = agent_file_open_parent("/dir/root/made", &name);
        assert_true(fd >= 0);
        assert_string_equal(name, "made");
        close(fd);
        /* mkdir -p through an absolute symlink creates inside the root. */
        assert_int_equal(agent_file_mkdir_parents("/dir/root/new/a/b", 0755, (uid_t)-1, (gid_t)-1), 0);
        snprintf(p, sizeof p, "%s/new/a/b", root);
        assert_int_equal(stat(p, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(agent_file_mkdir_parents("/etc/passwd/x", 0755, (uid_t)-1, (gid_t)-1), -ENOTDIR);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalize),         cmocka_unit_test(test_normalize_refuses),
                cmocka_unit_test(test_links_stay_inside), cmocka_unit_test(test_parent_and_mkdir),
                cmocka_unit_test(test_walk_stays_inside),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
