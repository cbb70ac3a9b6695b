/* Unit tests of sandbox_logs: one cap over all of a sandbox's command logs. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "data_plane/command_log.h"
#include "data_plane/sandbox_logs.h"
#include "spaced/dir_tree.h"

#define CAP (256u << 10) /* per log: 64 KiB segments */
#define REC 3000u

static char root[PATH_MAX];

static void log_path(const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", root, name);
}

/* A log of n records of REC bytes, ended with an exit record if ended. */
static void write_log(const char *name, unsigned n, bool ended)
{
        char dir[PATH_MAX];
        log_path(name, dir, sizeof(dir));
        struct command_log_writer *w;
        assert_int_equal(command_log_open(dir, CAP, &w), 0);
        static char buf[REC];
        memset(buf, 'x', sizeof(buf));
        for (unsigned i = 1; i <= n; i++)
                assert_int_equal(command_log_append(w, i, COMMAND_LOG_STDOUT, buf, sizeof(buf)), 0);
        if (ended)
                assert_int_equal(command_log_append(w, n + 1, COMMAND_LOG_EXIT, "{\"exit_code\":0}", 15), 0);
        command_log_close(w);
        struct timespec ts = { 0, 20 * 1000 * 1000 }; /* distinct mtimes: oldest first is well defined */
        nanosleep(&ts, NULL);
}

static int setup(void **state)
{
        const char *base = getenv("TMPDIR");
        snprintf(root, sizeof(root), "%s/space-sblogs-XXXXXX", base && *base ? base : "/tmp");
        return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
        dir_tree_remove(root);
        return 0;
}

static void test_oldest_output_goes_first(void **state)
{
        write_log("a", 60, true); /* ~180 KiB, 3 segments */
        write_log("b", 60, true);
        write_log("c", 60, false); /* still running */
        uint64_t before, after;
        assert_int_equal(sandbox_logs_usage(root, &before), 0);
        assert_true(before > 3 * 170000);
        assert_int_equal(sandbox_logs_trim(root, 300000, &after), 0);
        assert_true(after <= 300000);
        uint64_t real;
        assert_int_equal(sandbox_logs_usage(root, &real), 0);
        assert_int_equal(real, after);
        /* "c", the newest, is whole. */
        char dir[PATH_MAX];
        log_path("c", dir, sizeof(dir));
        struct command_log_reader *r;
        struct command_log_record rec;
        assert_int_equal(command_log_reader_open(dir, 0, &r), 0);
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_RECORD);
        assert_int_equal(rec.seq, 1);
        command_log_reader_close(r);
        /* "a", the oldest, announces its drop and still ends with its exit. */
        log_path("a", dir, sizeof(dir));
        assert_int_equal(command_log_reader_open(dir, 0, &r), 0);
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_DROPPED);
        assert_int_equal(rec.dropped_first, 1);
        int q;
        do
                q = command_log_reader_next(r, &rec);
        while (q == COMMAND_LOG_READ_RECORD && rec.kind != COMMAND_LOG_EXIT);
        assert_int_equal(q, COMMAND_LOG_READ_RECORD);
        assert_int_equal(rec.kind, COMMAND_LOG_EXIT);
        assert_int_equal(rec.seq, 61);
        command_log_reader_close(r);
}

static void test_finished_logs_are_compacted_to_their_exit(void **state)
{
        write_log("d", 10, true); /* one segment each: nothing to drop whole */
        write_log("e", 10, true);
        uint64_t after;
        assert_int_equal(sandbox_logs_trim(root, 1000, &after), 0);
        assert_true(after <= 2 * (16 + 15));
        char dir[PATH_MAX];
        log_path("d", dir, sizeof(dir));
        struct command_log_reader *r;
        struct command_log_record rec;
        assert_int_equal(command_log_reader_open(dir, 0, &r), 0);
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_DROPPED);
        assert_int_equal(rec.dropped_first, 1);
        assert_int_equal(rec.dropped_last, 10);
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_RECORD);
        assert_int_equal(rec.kind, COMMAND_LOG_EXIT);
        command_log_reader_close(r);
        /* Compacting again changes nothing. */
        uint64_t again;
        assert_int_equal(sandbox_logs_trim(root, 1000, &again), 0);
        assert_int_equal(again, after);
}

static void test_no_directory_is_empty(void **state)
{
        uint64_t n = 1;
        assert_int_equal(sandbox_logs_usage("/nonexistent/space-sblogs", &n), 0);
        assert_int_equal(n, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_oldest_output_goes_first, setup, teardown),
                cmocka_unit_test_setup_teardown(test_finished_logs_are_compacted_to_their_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_directory_is_empty, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
