/* Unit tests of command_log: segmented, sequence-numbered record files (src/data_plane/command_log.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "data_plane/command_log.h"

#define SMALL_CAP (256u << 10) /* segments of 64 KiB, the minimum */
#define REC_LEN 3000u          /* 21 records (with headers) fit in one 64 KiB segment */
#define PER_SEGMENT 21u

struct fixture {
        char tmp[PATH_MAX];
        char dir[PATH_MAX]; /* the log: tmp/cmd/log, created by command_log_open */
};

static int fixture_setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        if (!f)
                return -1;
        const char *base = getenv("TMPDIR");
        snprintf(f->tmp, sizeof(f->tmp), "%s/space-log-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(f->tmp)) {
                free(f);
                return -1;
        }
        snprintf(f->dir, sizeof(f->dir), "%s/cmd/log", f->tmp);
        *state = f;
        return 0;
}

static int fixture_teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[PATH_MAX + 16];
        command_log_remove(f->dir);
        snprintf(cmd, sizeof(cmd), "%s/cmd", f->tmp);
        rmdir(cmd);
        int r = rmdir(f->tmp);
        free(f);
        return r;
}

/* The payload of record seq: len bytes that cover every byte value (NULs, 0xff included). */
static void payload(uint64_t seq, size_t len, uint8_t *buf)
{
        for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static size_t len_of(uint64_t seq)
{
        return (size_t)(seq * 37 % 1001);
}

static enum command_log_kind kind_of(uint64_t seq)
{
        static const enum command_log_kind kinds[] = { COMMAND_LOG_STDOUT, COMMAND_LOG_STDERR, COMMAND_LOG_PTY };
        return kinds[seq % 3];
}

static void append(struct command_log_writer *w, uint64_t seq, size_t len)
{
        uint8_t *buf = malloc(len ? len : 1);
        assert_non_null(buf);
        payload(seq, len, buf);
        assert_int_equal(command_log_append(w, seq, kind_of(seq), buf, len), 0);
        assert_int_equal(command_log_last_seq(w), seq);
        free(buf);
}

static void append_range(struct command_log_writer *w, uint64_t first, uint64_t last, size_t len)
{
        for (uint64_t s = first; s <= last; s++)
                append(w, s, len);
}

static void expect_record(struct command_log_reader *r, uint64_t seq, size_t len)
{
        struct command_log_record rec;
        int q = command_log_reader_next(r, &rec);
        if (q != COMMAND_LOG_READ_RECORD)
                fail_msg("want record %" PRIu64 ", got %d", seq, q);
        assert_int_equal(rec.seq, seq);
        assert_int_equal(rec.kind, kind_of(seq));
        assert_int_equal(rec.len, len);
        uint8_t *want = malloc(len ? len : 1);
        assert_non_null(want);
        payload(seq, len, want);
        assert_memory_equal(rec.data, want, len);
        free(want);
        assert_int_equal(command_log_reader_position(r), seq);
}

static void expect_none(struct command_log_reader *r)
{
        struct command_log_record rec;
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_NONE);
}

static void expect_dropped(struct command_log_reader *r, uint64_t first, uint64_t last)
{
        struct command_log_record rec;
        int q = command_log_reader_next(r, &rec);
        if (q != COMMAND_LOG_READ_DROPPED)
                fail_msg("want dropped %" PRIu64 "..%" PRIu64 ", got %d", first, last, q);
        assert_int_equal(rec.dropped_first, first);
        assert_int_equal(rec.dropped_last, last);
        assert_int_equal(command_log_reader_position(r), last);
}

/* The segments on disk: how many, the first sequence number of the oldest, their bytes. */
struct listing {
        size_t n;
        uint64_t oldest;
        uint64_t bytes;
};

static struct listing list_segments(const char *dir)
{
        struct listing l = { .oldest = UINT64_MAX };
        DIR *d = opendir(dir);
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
                size_t len = strlen(e->d_name);
                if (len != 24 || strcmp(e->d_name + 20, ".seg") != 0)
                        continue;
                char path[PATH_MAX + 32];
                struct stat st;
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                assert_int_equal(stat(path, &st), 0);
                uint64_t first = strtoull(e->d_name, NULL, 10);
                l.n++;
                l.bytes += (uint64_t)st.st_size;
                if (first < l.oldest)
                        l.oldest = first;
        }
        closedir(d);
        return l;
}

static void segment_file(const char *dir, uint64_t first, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%020" PRIu64 ".seg", dir, first);
}

static off_t file_size(const char *path)
{
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        return st.st_size;
}

static void test_round_trip_binary(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, 64u << 20, &w), 0);
        assert_int_equal(command_log_last_seq(w), 0);
        for (uint64_t s = 1; s <= 200; s++)
                append(w, s, len_of(s)); /* lengths 0..1000, record 27 is empty */
        const char exit_json[] = "{\"exit_code\":0}";
        assert_int_equal(command_log_append(w, 201, COMMAND_LOG_EXIT, exit_json, strlen(exit_json)), 0);

        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        assert_int_equal(command_log_reader_position(r), 0);
        for (uint64_t s = 1; s <= 200; s++)
                expect_record(r, s, len_of(s));
        struct command_log_record rec;
        assert_int_equal(command_log_reader_next(r, &rec), COMMAND_LOG_READ_RECORD);
        assert_int_equal(rec.seq, 201);
        assert_int_equal(rec.kind, COMMAND_LOG_EXIT);
        assert_int_equal(rec.len, strlen(exit_json));
        assert_string_equal((const char *)rec.data, exit_json); /* payloads come NUL-terminated */
        expect_none(r);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_sequence_must_follow(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        uint8_t b = 0;
        assert_int_equal(command_log_open(f->dir, 64u << 20, &w), 0);
        assert_int_equal(command_log_append(w, 0, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        assert_int_equal(command_log_append(w, 2, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        append(w, 1, 1);
        assert_int_equal(command_log_append(w, 1, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        assert_int_equal(command_log_append(w, 3, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        assert_int_equal(command_log_append(w, UINT64_MAX, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        assert_int_equal(command_log_append(w, 2, COMMAND_LOG_STDOUT, &b, (size_t)COMMAND_LOG_RECORD_MAX + 1), -EINVAL);
        assert_int_equal(command_log_last_seq(w), 1);
        append(w, 2, 5);

        struct command_log_reader *r;
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        expect_record(r, 1, 1);
        expect_record(r, 2, 5);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_reader_after_n(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        append_range(w, 1, 80, REC_LEN); /* four segments, all kept */
        assert_int_equal(list_segments(f->dir).n, 4);
        static const uint64_t afters[] = { 0, 1, 4, PER_SEGMENT - 1, PER_SEGMENT, PER_SEGMENT + 1, 2 * PER_SEGMENT, 79 };
        for (size_t i = 0; i < sizeof(afters) / sizeof(afters[0]); i++) {
                assert_int_equal(command_log_reader_open(f->dir, afters[i], &r), 0);
                assert_int_equal(command_log_reader_position(r), afters[i]);
                for (uint64_t s = afters[i] + 1; s <= 80; s++)
                        expect_record(r, s, REC_LEN);
                expect_none(r);
                command_log_reader_close(r);
        }
        /* After the last record: nothing, then what comes next. */
        assert_int_equal(command_log_reader_open(f->dir, 80, &r), 0);
        expect_none(r);
        append(w, 81, 10);
        expect_record(r, 81, 10);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_reader_after_what_exists(void **state)
{
        /* A client may resume after a sequence number the log does not have yet: it gets
         * the records after it once they are written, in this segment or a later one. */
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r, *far;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        append_range(w, 1, 5, REC_LEN);
        assert_int_equal(command_log_reader_open(f->dir, 8, &r), 0);
        assert_int_equal(command_log_reader_open(f->dir, 3 * PER_SEGMENT, &far), 0);
        expect_none(r);
        expect_none(far);
        append_range(w, 6, 8, REC_LEN);
        expect_none(r);
        append(w, 9, REC_LEN);
        expect_record(r, 9, REC_LEN);
        expect_none(far);
        append_range(w, 10, 3 * PER_SEGMENT + 2, REC_LEN);
        for (uint64_t s = 10; s <= 3 * PER_SEGMENT + 2; s++)
                expect_record(r, s, REC_LEN);
        expect_record(far, 3 * PER_SEGMENT + 1, REC_LEN);
        expect_record(far, 3 * PER_SEGMENT + 2, REC_LEN);
        expect_none(far);
        expect_none(r);
        command_log_reader_close(far);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_reader_at_end_sees_appends(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), -ENOENT);
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        expect_none(r); /* no segment yet */
        append(w, 1, 0);
        expect_record(r, 1, 0);
        expect_none(r);
        append(w, 2, 17);
        append(w, 3, 18);
        expect_record(r, 2, 17);
        expect_record(r, 3, 18);
        expect_none(r);
        /* Following the writer live across segment boundaries. */
        for (uint64_t s = 4; s <= 4 + 3 * PER_SEGMENT; s++) {
                append(w, s, REC_LEN);
                expect_record(r, s, REC_LEN);
                expect_none(r);
        }
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_segment_rollover(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, 64u << 20, &w), 0); /* segments of 16 MiB */
        append_range(w, 1, 10, REC_LEN);
        command_log_close(w);
        assert_int_equal(list_segments(f->dir).n, 1);
        assert_int_equal(command_log_remove(f->dir), 0);

        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0); /* 64 KiB segments, 256 KiB kept */
        append_range(w, 1, 80, REC_LEN);
        struct listing l = list_segments(f->dir);
        assert_int_equal(l.n, 4); /* 21 + 21 + 21 + 17 records */
        assert_int_equal(l.oldest, 1);
        assert_int_equal(l.bytes, 80 * (REC_LEN + COMMAND_LOG_HEADER_SIZE));
        char path[PATH_MAX + 32];
        for (uint64_t k = 0; k < 4; k++) {
                segment_file(f->dir, k * PER_SEGMENT + 1, path, sizeof(path));
                off_t want = (off_t)((k < 3 ? PER_SEGMENT : 80 - 3 * PER_SEGMENT) * (REC_LEN + COMMAND_LOG_HEADER_SIZE));
                assert_int_equal(file_size(path), want);
                assert_true(file_size(path) <= (64 << 10));
        }
        /* A record bigger than a segment gets one of its own. */
        append(w, 81, 100000);
        append(w, 82, 1);
        segment_file(f->dir, 81, path, sizeof(path));
        assert_int_equal(file_size(path), 100000 + COMMAND_LOG_HEADER_SIZE);
        segment_file(f->dir, 82, path, sizeof(path));
        assert_int_equal(file_size(path), 1 + COMMAND_LOG_HEADER_SIZE);

        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        l = list_segments(f->dir);
        uint64_t next = 1;
        if (l.oldest > 1) {
                expect_dropped(r, 1, l.oldest - 1);
                next = l.oldest;
        }
        for (uint64_t s = next; s <= 80; s++)
                expect_record(r, s, REC_LEN);
        expect_record(r, 81, 100000);
        expect_record(r, 82, 1);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

/* The end of a log: none, empty, one segment, several (and past the cap), a torn tail. */
static void test_end_seq(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        uint64_t end = 99;
        assert_int_equal(command_log_end_seq(f->dir, &end), -ENOENT);
        assert_int_equal(end, 99);
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_end_seq(f->dir, &end), 0);
        assert_int_equal(end, 0);
        append_range(w, 1, 5, REC_LEN);
        assert_int_equal(command_log_end_seq(f->dir, &end), 0);
        assert_int_equal(end, 5);
        append_range(w, 6, 200, REC_LEN); /* many segments, the oldest dropped for the cap */
        assert_int_equal(command_log_end_seq(f->dir, &end), 0);
        assert_int_equal(end, 200);
        /* A reader from there sees only what comes next. */
        assert_int_equal(command_log_reader_open(f->dir, end, &r), 0);
        expect_none(r);
        append(w, 201, 3);
        expect_record(r, 201, 3);
        command_log_reader_close(r);
        command_log_close(w);
        /* Half a record at the tail is not counted. */
        char path[PATH_MAX + 32];
        struct listing l = list_segments(f->dir);
        uint64_t last_first = 0;
        for (uint64_t k = l.oldest; k <= 201; k++) {
                segment_file(f->dir, k, path, sizeof(path));
                if (access(path, F_OK) == 0)
                        last_first = k;
        }
        segment_file(f->dir, last_first, path, sizeof(path));
        assert_int_equal(truncate(path, file_size(path) - 1), 0);
        assert_int_equal(command_log_end_seq(f->dir, &end), 0);
        assert_int_equal(end, 200);
}

static void test_cap_drops_oldest(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *idle, *live, *holder;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        append_range(w, 1, 30, REC_LEN);
        /* idle: opened, never read; holder: read into the first segment (holds its fd). */
        assert_int_equal(command_log_reader_open(f->dir, 0, &idle), 0);
        assert_int_equal(command_log_reader_open(f->dir, 0, &holder), 0);
        for (uint64_t s = 1; s <= 5; s++)
                expect_record(holder, s, REC_LEN);
        assert_int_equal(command_log_reader_open(f->dir, 30, &live), 0);

        for (uint64_t s = 31; s <= 1000; s++) {
                append(w, s, REC_LEN);
                expect_record(live, s, REC_LEN); /* a reader that keeps up loses nothing */
                struct listing l = list_segments(f->dir);
                assert_true(l.bytes <= SMALL_CAP);
        }
        expect_none(live);
        struct listing l = list_segments(f->dir);
        assert_true(l.oldest > 2 * PER_SEGMENT + 1);
        assert_int_equal((l.oldest - 1) % PER_SEGMENT, 0);
        char path[PATH_MAX + 32];
        segment_file(f->dir, 1, path, sizeof(path));
        assert_int_equal(access(path, F_OK), -1);

        /* The idle reader learns what it missed, then reads on without a gap. */
        expect_dropped(idle, 1, l.oldest - 1);
        for (uint64_t s = l.oldest; s <= 1000; s++)
                expect_record(idle, s, REC_LEN);
        expect_none(idle);

        /* The holder finishes the deleted segment it has open, then is told of the rest. */
        for (uint64_t s = 6; s <= PER_SEGMENT; s++)
                expect_record(holder, s, REC_LEN);
        expect_dropped(holder, PER_SEGMENT + 1, l.oldest - 1);
        for (uint64_t s = l.oldest; s <= 1000; s++)
                expect_record(holder, s, REC_LEN);
        expect_none(holder);

        /* Behind again, while in a live segment: a reader opened in the middle of the log. */
        struct command_log_reader *mid;
        assert_int_equal(command_log_reader_open(f->dir, l.oldest + 2, &mid), 0);
        expect_record(mid, l.oldest + 3, REC_LEN);
        append_range(w, 1001, 1000 + 6 * PER_SEGMENT, REC_LEN);
        struct listing l2 = list_segments(f->dir);
        for (uint64_t s = l.oldest + 4; s < l.oldest + PER_SEGMENT; s++)
                expect_record(mid, s, REC_LEN);
        expect_dropped(mid, l.oldest + PER_SEGMENT, l2.oldest - 1);
        for (uint64_t s = l2.oldest; s <= 1000 + 6 * PER_SEGMENT; s++)
                expect_record(mid, s, REC_LEN);
        expect_none(mid);

        command_log_reader_close(mid);
        command_log_reader_close(idle);
        command_log_reader_close(holder);
        command_log_reader_close(live);
        command_log_close(w);
}

static void test_cap_keeps_the_segment_being_written(void **state)
{
        /* One record larger than the cap: the segment being written is never deleted. */
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        append(w, 1, 10);
        append(w, 2, SMALL_CAP + 1);
        struct listing l = list_segments(f->dir);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.oldest, 2);
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        expect_dropped(r, 1, 1);
        expect_record(r, 2, SMALL_CAP + 1);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

/* Writes records 1..n of len bytes, closes the writer and cuts `cut` bytes off the end of
 * the last segment. */
static void write_and_tear(const char *dir, uint64_t n, size_t len, off_t cut, uint64_t *ret_last_first)
{
        struct command_log_writer *w;
        assert_int_equal(command_log_open(dir, SMALL_CAP, &w), 0);
        append_range(w, 1, n, len);
        command_log_close(w);
        uint64_t last_first = (n - 1) / PER_SEGMENT * PER_SEGMENT + 1; /* REC_LEN-sized records */
        if (len != REC_LEN)
                last_first = 1;
        char path[PATH_MAX + 32];
        segment_file(dir, last_first, path, sizeof(path));
        off_t size = file_size(path);
        assert_int_equal(truncate(path, size - cut), 0);
        *ret_last_first = last_first;
}

static void test_torn_tail_mid_payload(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *before, *after;
        uint64_t last_first;
        write_and_tear(f->dir, 10, 100, 40, &last_first);

        /* A reader of the torn log never sees the torn record. */
        assert_int_equal(command_log_reader_open(f->dir, 0, &before), 0);
        for (uint64_t s = 1; s <= 9; s++)
                expect_record(before, s, 100);
        expect_none(before);
        expect_none(before);

        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_last_seq(w), 9);
        char path[PATH_MAX + 32];
        segment_file(f->dir, last_first, path, sizeof(path));
        assert_int_equal(file_size(path), 9 * (100 + COMMAND_LOG_HEADER_SIZE));
        append(w, 10, 100);
        append(w, 11, 3);
        expect_record(before, 10, 100);
        expect_record(before, 11, 3);
        expect_none(before);

        assert_int_equal(command_log_reader_open(f->dir, 0, &after), 0);
        for (uint64_t s = 1; s <= 10; s++)
                expect_record(after, s, 100);
        expect_record(after, 11, 3);
        expect_none(after);
        command_log_reader_close(after);
        command_log_reader_close(before);
        command_log_close(w);
}

static void test_torn_tail_mid_header(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        uint64_t last_first;
        write_and_tear(f->dir, 10, 100, 100 + 9, &last_first); /* 7 bytes of record 10's header left */
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        for (uint64_t s = 1; s <= 9; s++)
                expect_record(r, s, 100);
        expect_none(r);
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_last_seq(w), 9);
        append(w, 10, 100);
        expect_record(r, 10, 100);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_torn_tail_in_a_later_segment(void **state)
{
        /* The last segment holds a single, torn record: the log ends with the segment before. */
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        uint64_t last_first;
        write_and_tear(f->dir, 2 * PER_SEGMENT + 1, REC_LEN, 1, &last_first);
        assert_int_equal(last_first, 2 * PER_SEGMENT + 1);
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_last_seq(w), 2 * PER_SEGMENT);
        char path[PATH_MAX + 32];
        segment_file(f->dir, last_first, path, sizeof(path));
        assert_int_equal(file_size(path), 0);
        append_range(w, 2 * PER_SEGMENT + 1, 3 * PER_SEGMENT + 1, REC_LEN);
        assert_int_equal(list_segments(f->dir).n, 4);
        assert_int_equal(command_log_reader_open(f->dir, PER_SEGMENT * 2 - 1, &r), 0);
        for (uint64_t s = 2 * PER_SEGMENT; s <= 3 * PER_SEGMENT + 1; s++)
                expect_record(r, s, REC_LEN);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_reopen_continues(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        command_log_close(w);
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0); /* empty: still empty */
        assert_int_equal(command_log_last_seq(w), 0);
        append_range(w, 1, 50, REC_LEN);
        command_log_close(w);

        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_last_seq(w), 50);
        uint8_t b = 1;
        assert_int_equal(command_log_append(w, 50, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        assert_int_equal(command_log_append(w, 52, COMMAND_LOG_STDOUT, &b, 1), -EINVAL);
        append_range(w, 51, 70, REC_LEN);
        command_log_close(w);
        assert_int_equal(list_segments(f->dir).n, 4); /* the last segment was continued, not restarted */

        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        assert_int_equal(command_log_last_seq(w), 70);
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        for (uint64_t s = 1; s <= 70; s++)
                expect_record(r, s, REC_LEN);
        expect_none(r);
        command_log_reader_close(r);
        command_log_close(w);
}

static void test_remove(void **state)
{
        struct fixture *f = *state;
        struct command_log_writer *w;
        struct command_log_reader *r;
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &w), 0);
        append_range(w, 1, 3 * PER_SEGMENT, REC_LEN);
        command_log_close(w);
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        expect_record(r, 1, REC_LEN);

        assert_int_equal(command_log_remove(f->dir), 0);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), -1);
        assert_int_equal(errno, ENOENT);
        assert_int_equal(command_log_remove(f->dir), 0); /* already gone: fine */

        /* The open reader finishes its segment, then learns the log is gone. */
        for (uint64_t s = 2; s <= PER_SEGMENT; s++)
                expect_record(r, s, REC_LEN);
        struct command_log_record rec;
        assert_int_equal(command_log_reader_next(r, &rec), -ENOENT);
        command_log_reader_close(r);
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), -ENOENT);
}

/* A writer thread and a reader thread: the reader sees every record it does not get told
 * was dropped, in order, intact. */
struct race {
        const char *dir;
        struct command_log_writer *w;
        atomic_uint_fast64_t written;
        atomic_bool failed;
        uint64_t last;
};

static size_t race_len(uint64_t seq)
{
        return (size_t)(seq * 2654435761u % 6000);
}

static void *race_writer(void *arg)
{
        struct race *ra = arg;
        uint8_t *buf = malloc(6000);
        for (uint64_t s = 1; s <= ra->last && buf; s++) {
                payload(s, race_len(s), buf);
                if (command_log_append(ra->w, s, kind_of(s), buf, race_len(s)) < 0) {
                        atomic_store(&ra->failed, true);
                        break;
                }
                atomic_store(&ra->written, s);
        }
        free(buf);
        return NULL;
}

static void test_concurrent_reader(void **state)
{
        struct fixture *f = *state;
        struct race ra = { .dir = f->dir, .last = 10000 };
        assert_int_equal(command_log_open(f->dir, SMALL_CAP, &ra.w), 0);
        struct command_log_reader *r;
        assert_int_equal(command_log_reader_open(f->dir, 0, &r), 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, race_writer, &ra), 0);
        uint64_t next = 1, got = 0, dropped = 0;
        uint8_t *want = malloc(6000);
        assert_non_null(want);
        while (next <= ra.last) {
                struct command_log_record rec;
                int q = command_log_reader_next(r, &rec);
                assert_true(q >= 0);
                assert_false(atomic_load(&ra.failed));
                if (q == COMMAND_LOG_READ_NONE) {
                        if (atomic_load(&ra.written) == ra.last && next <= ra.last) {
                                /* Everything is written: the reader must get to the end now. */
                                q = command_log_reader_next(r, &rec);
                                assert_int_not_equal(q, COMMAND_LOG_READ_NONE);
                        } else {
                                sched_yield();
                                continue;
                        }
                }
                if (q == COMMAND_LOG_READ_DROPPED) {
                        assert_int_equal(rec.dropped_first, next);
                        assert_true(rec.dropped_last >= next);
                        dropped += rec.dropped_last - next + 1;
                        next = rec.dropped_last + 1;
                        continue;
                }
                assert_int_equal(rec.seq, next);
                assert_int_equal(rec.len, race_len(next));
                payload(next, rec.len, want);
                assert_memory_equal(rec.data, want, rec.len);
                got++;
                next++;
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(got + dropped, ra.last);
        free(want);
        command_log_reader_close(r);
        command_log_close(ra.w);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
        const struct CMUnitTest tests[] = {
                T(test_round_trip_binary),
                T(test_sequence_must_follow),
                T(test_reader_after_n),
                T(test_reader_after_what_exists),
                T(test_reader_at_end_sees_appends),
                T(test_segment_rollover),
                T(test_end_seq),
                T(test_cap_drops_oldest),
                T(test_cap_keeps_the_segment_being_written),
                T(test_torn_tail_mid_payload),
                T(test_torn_tail_mid_header),
                T(test_torn_tail_in_a_later_segment),
                T(test_reopen_continues),
                T(test_remove),
                T(test_concurrent_reader),
        };
#undef T
        return cmocka_run_group_tests(tests, NULL, NULL);
}
