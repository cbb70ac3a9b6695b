/* Unit tests of the figures exec reports from a driver's stats (exec_result.c) and of the
 * cgroup backends' read_events on a fake cgroup directory: a counter that cannot be read
 * is an error with zeroed figures, never a comparison of garbage. */
#include <errno.h>
#include <ftw.h>
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

#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/runtime_driver.h"

static char dir[4096];

static void put(const char *file, const char *text)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/sb-1/%s", dir, file);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void remove_file(const char *file)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/sb-1/%s", dir, file);
        assert_int_equal(unlink(path), 0);
}

static int make_dir(void **state)
{
        const char *tmp = getenv("TMPDIR");
        char sub[4200];
        snprintf(dir, sizeof(dir), "%s/space-stats-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
                return -1;
        snprintf(sub, sizeof(sub), "%s/sb-1", dir);
        return mkdir(sub, 0700);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int remove_dir(void **state)
{
        return nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_limits_need_two_good_reads(void **state)
{
        struct runtime_stats before = { .oom_kills = 1, .pids_max_hits = 2 };
        struct runtime_stats after = { .oom_kills = 2, .pids_max_hits = 3 };
        struct exec_result r;
        memset(&r, 0xff, sizeof(r)); /* whatever was there before */
        exec_result_set_limits(&r, 0, &before, 0, &after);
        assert_true(r.oom_killed);
        assert_true(r.pids_limit_hit);
        exec_result_set_limits(&r, 0, &before, 0, &before);
        assert_false(r.oom_killed);
        assert_false(r.pids_limit_hit);
        /* The first read failed (zeroed), the second worked: not an OOM kill. */
        struct runtime_stats zero = { 0 };
        exec_result_set_limits(&r, -ENOENT, &zero, 0, &after);
        assert_false(r.oom_killed);
        assert_false(r.pids_limit_hit);
        exec_result_set_limits(&r, 0, &before, -EIO, &zero);
        assert_false(r.oom_killed);
        assert_false(r.pids_limit_hit);
}

static void test_v2_read_events(void **state)
{
        struct cgroup_manager cg = { .ops = &cgroup_manager_v2 };
        struct cgroup_events ev;
        snprintf(cg.base[0], sizeof(cg.base[0]), "%s", dir);
        /* Nothing to read: an error, and zeroes rather than what the stack held. */
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_events(&cg, "sb-1", &ev), -ENOENT);
        assert_int_equal(ev.oom_kills, 0);
        assert_int_equal(ev.pids_max_hits, 0);
        assert_int_equal(ev.memory_bytes, 0);
        put("memory.events", "low 0\nhigh 0\nmax 4\noom 2\noom_kill 3\n");
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_events(&cg, "sb-1", &ev), -ENOENT); /* pids.events still missing */
        assert_int_equal(ev.oom_kills, 0);
        put("pids.events", "max 7\n");
        put("memory.current", "123456\n");
        put("memory.max", "max\n");
        put("cpu.stat", "usage_usec 990\nuser_usec 1\n");
        assert_int_equal(cg.ops->read_events(&cg, "sb-1", &ev), 0);
        assert_int_equal(ev.oom_kills, 3);
        assert_int_equal(ev.pids_max_hits, 7);
        assert_int_equal(ev.memory_bytes, 123456);
        assert_int_equal(ev.memory_limit_bytes, 0);
        assert_int_equal(ev.cpu_usage_us, 990);
        assert_int_equal(cg.ops->read_events(&cg, "sb-nope", &ev), -ENOENT);
        /* The two limit counters alone, as an exec reads them; the rest zero. */
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_limit_hits(&cg, "sb-1", &ev), 0);
        assert_int_equal(ev.oom_kills, 3);
        assert_int_equal(ev.pids_max_hits, 7);
        assert_int_equal(ev.memory_bytes, 0);
        assert_int_equal(ev.cpu_usage_us, 0);
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_limit_hits(&cg, "sb-nope", &ev), -ENOENT);
        assert_int_equal(ev.oom_kills, 0);
}

static void test_v1_read_events(void **state)
{
        struct cgroup_manager cg = { .ops = &cgroup_manager_v1 };
        struct cgroup_events ev;
        for (int i = 0; i < _CGROUP_BASE_MAX; i++)
                if (i != CGROUP_V1_CPUACCT)
                        snprintf(cg.base[i], sizeof(cg.base[i]), "%s", dir);
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_events(&cg, "sb-1", &ev), -ENOENT);
        assert_int_equal(ev.oom_kills, 0);
        assert_int_equal(ev.pids_max_hits, 0);
        put("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
        put("pids.events", "max 1\n");
        put("memory.usage_in_bytes", "4096\n");
        assert_int_equal(cg.ops->read_events(&cg, "sb-1", &ev), 0);
        assert_int_equal(ev.oom_kills, 5);
        assert_int_equal(ev.pids_max_hits, 1);
        assert_int_equal(ev.memory_bytes, 4096);
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_limit_hits(&cg, "sb-1", &ev), 0);
        assert_int_equal(ev.oom_kills, 5);
        assert_int_equal(ev.pids_max_hits, 1);
        assert_int_equal(ev.memory_bytes, 0);
        remove_file("pids.events");
        memset(&ev, 0xa5, sizeof(ev));
        assert_int_equal(cg.ops->read_limit_hits(&cg, "sb-1", &ev), -ENOENT);
        assert_int_equal(ev.oom_kills, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_limits_need_two_good_reads),
                cmocka_unit_test_setup_teardown(test_v2_read_events, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_v1_read_events, make_dir, remove_dir),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
