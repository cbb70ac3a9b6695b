/* Unit tests of the cgroup file helpers (cgroup_files.c) on ordinary temporary files: they
 * take a directory, so a fake cgroup directory exercises the parsing. */
#include <errno.h>
#include <ftw.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cgroup/cgroup_manager.h"

static char dir[4096];

static void put(const char *file, const char *text)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int make_dir(void **state)
{
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/space-cgroup-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        return mkdtemp(dir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int remove_dir(void **state)
{
        return nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_read_keyed(void **state)
{
        put("memory.events", "low 0\nhigh 12\nmax 3\noom 2\noom_kill 5\noom_group_kill 9");
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "oom_kill"), 5);
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "oom"), 2); /* not oom_kill, not oom_group_kill */
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "low"), 0);
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "high"), 12);
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "oom_group_kill"), 9); /* last line, no newline */
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "oo"), 0);             /* prefixes do not match */
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "kill"), 0);           /* nor suffixes */
        assert_int_equal(cgroup_read_keyed(dir, "memory.events", "missing"), 0);
        assert_int_equal(cgroup_read_keyed(dir, "no.such.file", "oom"), 0);

        put("cpu.stat", "usage_usec 18446744073709551615\nuser_usec 42\n");
        assert_int_equal(cgroup_read_keyed(dir, "cpu.stat", "usage_usec"), UINT64_MAX);
        assert_int_equal(cgroup_read_keyed(dir, "cpu.stat", "user_usec"), 42);

        /* cgroup v1 memory.oom_control: "oom_kill" is not "oom_kill_disable". */
        put("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
        assert_int_equal(cgroup_read_keyed(dir, "memory.oom_control", "oom_kill"), 4);
        assert_int_equal(cgroup_read_keyed(dir, "memory.oom_control", "oom_kill_disable"), 0);

        put("pids.events", "max 7\n");
        assert_int_equal(cgroup_read_keyed(dir, "pids.events", "max"), 7);
        put("empty", "");
        assert_int_equal(cgroup_read_keyed(dir, "empty", "max"), 0);
}

static void test_read_keyed_large_file(void **state)
{
        /* A key in the first 4 KiB is found even when the file is bigger. */
        char *big = malloc(20000);
        assert_non_null(big);
        size_t off = (size_t)snprintf(big, 20000, "hit 77\n");
        while (off < 19000)
                off += (size_t)snprintf(big + off, 20000 - off, "filler_%zu 1\n", off);
        put("memory.stat", big);
        free(big);
        assert_int_equal(cgroup_read_keyed(dir, "memory.stat", "hit"), 77);
}

static void test_read_write_file(void **state)
{
        char buf[16];
        assert_int_equal(cgroup_read_file(dir, "absent", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(cgroup_write_file(dir, "absent", "1"), -ENOENT); /* never creates files */
        struct stat st;
        char path[4200];
        snprintf(path, sizeof(path), "%s/absent", dir);
        assert_int_equal(stat(path, &st), -1);

        put("pids.max", "");
        assert_int_equal(cgroup_write_file(dir, "pids.max", "256"), 0);
        assert_int_equal(cgroup_read_file(dir, "pids.max", buf, sizeof(buf)), 3);
        assert_string_equal(buf, "256");

        put("long", "0123456789abcdefghij");
        assert_int_equal(cgroup_read_file(dir, "long", buf, sizeof(buf)), 15); /* truncated, terminated */
        assert_string_equal(buf, "0123456789abcde");
        assert_int_equal(cgroup_read_file(dir, ".", buf, sizeof(buf)), -EISDIR);
}

static void test_count_procs(void **state)
{
        assert_int_equal(cgroup_count_procs_in(dir), -ENOENT);
        put("cgroup.procs", "");
        assert_int_equal(cgroup_count_procs_in(dir), 0);
        put("cgroup.procs", "101\n");
        assert_int_equal(cgroup_count_procs_in(dir), 1);
        put("cgroup.procs", "101\n102\n103\n");
        assert_int_equal(cgroup_count_procs_in(dir), 3);
}

static pid_t spawn_sleeper(void)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static void test_kill_procs(void **state)
{
        pid_t child = spawn_sleeper();
        char text[64];
        snprintf(text, sizeof(text), "%d\n", (int)child);
        put("cgroup.procs", text);
        assert_int_equal(cgroup_kill_procs_in(dir), 1);
        int status = 0;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);

        put("cgroup.procs", "");
        assert_int_equal(cgroup_kill_procs_in(dir), 0);
        put("cgroup.procs", "not-a-pid\n");
        assert_int_equal(cgroup_kill_procs_in(dir), 0);
        char sub[4200];
        snprintf(sub, sizeof(sub), "%s/gone", dir);
        assert_int_equal(cgroup_kill_procs_in(sub), -ENOENT);
}

/* cgroup.procs can be longer than one read (a sandbox may hold up to 65536 processes), and
 * a read of it can end in the middle of a pid. The digits before the cut are some other
 * process's pid: it must not be signalled. Here the file lists `inside` many times and ends
 * with a pid whose first digits are `outside`, cut right after them by the 64 KiB buffer. */
static void test_kill_procs_ignores_a_cut_off_pid(void **state)
{
        pid_t inside = spawn_sleeper(), outside = spawn_sleeper();
        enum { BUF = 65535 }; /* what one read of cgroup_kill_procs_in sees */
        char *text = malloc(BUF + 64);
        assert_non_null(text);
        char tail[32], line[16];
        int tail_len = snprintf(tail, sizeof(tail), "%d", (int)outside);
        int line_len = snprintf(line, sizeof(line), "%d\n", (int)inside);
        size_t room = BUF - (size_t)tail_len, off = 0;
        /* Pad with newlines (strtol skips them) so the pid lines end exactly at the cut. */
        while ((room - off) % (size_t)line_len != 0)
                text[off++] = '\n';
        while (off < room) {
                memcpy(text + off, line, (size_t)line_len);
                off += (size_t)line_len;
        }
        /* The real last pid is beyond pid_max, so nothing on the host can have it. */
        snprintf(text + off, BUF + 64 - off, "%s9999999\n", tail);
        put("cgroup.procs", text);
        free(text);

        assert_true(cgroup_kill_procs_in(dir) >= 1);
        int status = 0;
        assert_int_equal(waitpid(inside, &status, 0), inside);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* Ours is SIGTERM: if it dies of SIGKILL, the code under test sent that first. */
        kill(outside, SIGTERM);
        assert_int_equal(waitpid(outside, &status, 0), outside);
        assert_true(WIFSIGNALED(status));
        if (WTERMSIG(status) == SIGKILL)
                fail_msg("pid %d, the cut-off prefix of the last line, was killed", (int)outside);
        assert_int_equal(WTERMSIG(status), SIGTERM);
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_list_children(void **state)
{
        char path[4200];
        static const char *const subdirs[] = { "sb-2", "sb-1", ".hidden" };
        for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, subdirs[i]);
                assert_int_equal(mkdir(path, 0700), 0);
        }
        put("cgroup.procs", "");
        char **ids = NULL;
        size_t n = 0;
        assert_int_equal(cgroup_list_children(dir, &ids, &n), 0);
        assert_int_equal(n, 2); /* directories only, no dot entries */
        qsort(ids, n, sizeof(ids[0]), compare_names);
        assert_string_equal(ids[0], "sb-1");
        assert_string_equal(ids[1], "sb-2");
        for (size_t i = 0; i < n; i++)
                free(ids[i]);
        free(ids);

        snprintf(path, sizeof(path), "%s/not-there", dir);
        ids = (char **)0x1;
        n = 9;
        assert_int_equal(cgroup_list_children(path, &ids, &n), 0); /* no hierarchy yet: nothing */
        assert_null(ids);
        assert_int_equal(n, 0);
}

/* cgroup_find_mount reads this process's mountinfo: check what it finds is really a
 * cgroup mount, and that unknown controllers are not found. */
static void test_find_mount(void **state)
{
        char buf[4096];
        struct statfs sfs;
        assert_int_equal(cgroup_find_mount("no_such_controller", buf, sizeof(buf)), -ENOENT);
        if (cgroup_find_mount(NULL, buf, sizeof(buf)) == 0) {
                assert_int_equal(statfs(buf, &sfs), 0);
                assert_int_equal(sfs.f_type, CGROUP2_SUPER_MAGIC);
        }
        static const char *const controllers[] = { "memory", "pids", "cpu", "freezer" };
        for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
                if (cgroup_find_mount(controllers[i], buf, sizeof(buf)) != 0)
                        continue;
                assert_int_equal(statfs(buf, &sfs), 0);
                assert_int_equal(sfs.f_type, CGROUP_SUPER_MAGIC);
        }
        /* Prefixes of a controller name are not that controller ("cpu" vs "cpuacct" is
         * exact either way; "mem" is nothing). */
        assert_int_equal(cgroup_find_mount("mem", buf, sizeof(buf)), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_read_keyed, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_read_keyed_large_file, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_read_write_file, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_count_procs, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_kill_procs, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_kill_procs_ignores_a_cut_off_pid, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_list_children, make_dir, remove_dir),
                cmocka_unit_test(test_find_mount),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
