/* agent_proc_figures: the texts of the sandbox's /proc views, against the formats tools
 * parse, and the fixed lengths that sendfile(2) on the FUSE files depends on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "space_agent/agent_proc_figures.h"

static char *text_of(struct agent_proc_figures *fig, enum agent_proc_file f, size_t *ret_len)
{
        char *t = NULL;
        size_t len = 0;
        assert_int_equal(agent_proc_figures_text(fig, f, &t, &len), 0);
        assert_non_null(t);
        assert_int_equal(strlen(t), len);
        if (ret_len)
                *ret_len = len;
        return t;
}

static unsigned long long meminfo_kb(const char *text, const char *key)
{
        const char *p = strstr(text, key);
        assert_non_null(p);
        unsigned long long v = 0;
        assert_int_equal(sscanf(p + strlen(key), " %llu kB", &v), 1);
        return v;
}

static void test_meminfo_shows_the_limit(void **state)
{
        (void)state;
        struct agent_proc_figures fig;
        agent_proc_figures_init(&fig, 256ULL << 20, 1);
        char *t = text_of(&fig, AGENT_PROC_MEMINFO, NULL);
        assert_int_equal(meminfo_kb(t, "MemTotal:"), 256 * 1024);
        assert_true(meminfo_kb(t, "MemAvailable:") <= 256 * 1024);
        assert_true(meminfo_kb(t, "MemFree:") <= 256 * 1024);
        assert_int_equal(meminfo_kb(t, "SwapTotal:"), 0);
        free(t);
}

static void test_meminfo_without_a_limit_shows_the_machine(void **state)
{
        (void)state;
        struct agent_proc_figures fig;
        struct sysinfo si;
        assert_int_equal(sysinfo(&si), 0);
        agent_proc_figures_init(&fig, 0, 1);
        char *t = text_of(&fig, AGENT_PROC_MEMINFO, NULL);
        assert_int_equal(meminfo_kb(t, "MemTotal:"), (unsigned long long)si.totalram * si.mem_unit / 1024);
        free(t);
}

static void test_stat_has_one_line_per_cpu(void **state)
{
        (void)state;
        struct agent_proc_figures fig;
        agent_proc_figures_init(&fig, 1ULL << 30, 3);
        char *t = text_of(&fig, AGENT_PROC_STAT, NULL);
        int lines = 0;
        for (char *p = t; (p = strstr(p, "\ncpu")); p++)
                lines++;
        assert_int_equal(lines, 3); /* cpu0..cpu2 after the "cpu " total on the first line */
        assert_int_equal(strncmp(t, "cpu ", 4), 0);
        assert_non_null(strstr(t, "\ncpu2 "));
        assert_null(strstr(t, "\ncpu3"));
        long long btime = 0;
        const char *b = strstr(t, "btime ");
        assert_non_null(b);
        assert_int_equal(sscanf(b, "btime %lld", &btime), 1);
        assert_true(btime == (long long)fig.start_wall);
        free(t);
}

static void test_loadavg_and_uptime_parse(void **state)
{
        (void)state;
        struct agent_proc_figures fig;
        agent_proc_figures_init(&fig, 1ULL << 30, 2);
        char *t = text_of(&fig, AGENT_PROC_LOADAVG, NULL);
        double a, b, c;
        unsigned running, total, last;
        assert_int_equal(sscanf(t, "%lf %lf %lf %u/%u %u", &a, &b, &c, &running, &total, &last), 6);
        assert_true(a >= 0 && b >= 0 && c >= 0);
        assert_true(running >= 1 && total >= 1);
        free(t);
        usleep(20000);
        t = text_of(&fig, AGENT_PROC_UPTIME, NULL);
        double up, idle;
        assert_int_equal(sscanf(t, "%lf %lf", &up, &idle), 2);
        assert_true(up >= 0.01 && up < 60);
        assert_true(idle >= 0 && idle <= up * 2 + 0.01);
        free(t);
}

/* sendfile reads a FUSE file only up to the size stat reported: each text must keep its
 * length while the figures under it change. */
static void test_lengths_never_change(void **state)
{
        (void)state;
        struct agent_proc_figures fig;
        agent_proc_figures_init(&fig, 512ULL << 20, 2);
        size_t first[_AGENT_PROC_MAX];
        for (int f = 0; f < _AGENT_PROC_MAX; f++)
                free(text_of(&fig, (enum agent_proc_file)f, &first[f]));
        /* Change what the figures see: burn CPU in a child, hold memory, advance time. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                volatile unsigned long x = 0;
                for (unsigned long i = 0; i < 200000000UL; i++)
                        x += i;
                _exit(0);
        }
        void *hold = malloc(32 << 20);
        memset(hold, 1, 32 << 20);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        fig.load[0] = 123.456; /* wider than any real figure so far */
        for (int f = 0; f < _AGENT_PROC_MAX; f++) {
                size_t len;
                free(text_of(&fig, (enum agent_proc_file)f, &len));
                assert_int_equal(len, first[f]);
        }
        free(hold);
        assert_string_equal(agent_proc_file_name(AGENT_PROC_MEMINFO), "meminfo");
        assert_null(agent_proc_file_name(_AGENT_PROC_MAX));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_meminfo_shows_the_limit),
                cmocka_unit_test(test_meminfo_without_a_limit_shows_the_machine),
                cmocka_unit_test(test_stat_has_one_line_per_cpu),
                cmocka_unit_test(test_loadavg_and_uptime_parse),
                cmocka_unit_test(test_lengths_never_change),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
