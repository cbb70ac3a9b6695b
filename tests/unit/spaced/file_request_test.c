/* Unit tests of the file routes' shared parts (file_request) and of spaced's codec for the
 * agent's file replies (agent_files_client): modes, paths, errno -> API error, entry
 * decoding and JSON, and a descriptor passed with a reply. */
#include <dirent.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/file_request.h"

static void test_mode_parse(void **state)
{
        uint32_t m = 1;
        assert_int_equal(file_mode_parse("0644", &m), 0);
        assert_int_equal(m, 0644);
        assert_int_equal(file_mode_parse("755", &m), 0);
        assert_int_equal(m, 0755);
        assert_int_equal(file_mode_parse("4755", &m), 0);
        assert_int_equal(m, 04755);
        assert_int_equal(file_mode_parse("0", &m), 0);
        assert_int_equal(m, 0);
        m = 7;
        static const char *const bad[] = { "", "8", "0x1f", "-1", "17777", "077777", "12a", " 644", "644 " };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (file_mode_parse(bad[i], &m) != -EINVAL)
                        fail_msg("mode \"%s\" accepted", bad[i]);
        assert_int_equal(m, 7); /* untouched on failure */
}

static void test_path_check(void **state)
{
        struct space_error err = { 0 };
        char *big = malloc(PATH_MAX + 1);
        assert_int_equal(file_path_check("path", "/etc", 4, &err), 0);
        assert_int_equal(file_path_check("path", "etc", 3, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        assert_non_null(strstr(err.message, "absolute"));
        assert_int_equal(file_path_check("path", NULL, 0, &err), -1);
        assert_int_equal(file_path_check("path", "/a\0b", 4, &err), -1);
        assert_non_null(strstr(err.message, "NUL"));
        big[0] = '/';
        memset(big + 1, 'a', PATH_MAX);
        assert_int_equal(file_path_check("path", big, PATH_MAX, &err), -1);
        assert_int_equal(file_path_check("path", big, PATH_MAX - 1, &err), 0);
        free(big);
        assert_true(file_user_name_ok("user"));
        assert_true(file_user_name_ok("1000"));
        assert_false(file_user_name_ok(""));
        assert_false(file_user_name_ok("a:b"));
        assert_false(file_user_name_ok("a\nb"));
}

static void test_range_parse(void **state)
{
        static const struct {
                const char *header;
                uint64_t size;
                int r;
                uint64_t offset, len;
        } cases[] = {
                { NULL, 100, 0, 0, 0 },
                { "bytes=0-9", 100, 1, 0, 10 },
                { "bytes=10-", 100, 1, 10, 90 },
                { "bytes=90-200", 100, 1, 90, 10 },
                { "bytes=-5", 100, 1, 95, 5 },
                { "bytes=-500", 100, 1, 0, 100 },
                { "bytes=99-99", 100, 1, 99, 1 },
                { "bytes=100-", 100, -ERANGE, 0, 0 },
                { "bytes=100-200", 100, -ERANGE, 0, 0 },
                { "bytes=-0", 100, -ERANGE, 0, 0 },
                { "bytes=0-", 0, -ERANGE, 0, 0 },
                { "bytes=-1", 0, -ERANGE, 0, 0 },
                { "bytes=5-1", 100, 0, 0, 0 },
                { "bytes=0-1,5-6", 100, 0, 0, 0 },
                { "items=0-1", 100, 0, 0, 0 },
                { "bytes=a-b", 100, 0, 0, 0 },
                { "bytes=-", 100, 0, 0, 0 },
                { "bytes=1", 100, 0, 0, 0 },
                { "bytes=99999999999999999999-", 100, 0, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint64_t offset = 777, len = 777;
                int r = file_range_parse(cases[i].header, cases[i].size, &offset, &len);
                if (r != cases[i].r)
                        fail_msg("%s (size %llu): %d, want %d", cases[i].header ? cases[i].header : "(none)",
                                 (unsigned long long)cases[i].size, r, cases[i].r);
                if (r == 1 && (offset != cases[i].offset || len != cases[i].len))
                        fail_msg("%s: %llu+%llu", cases[i].header, (unsigned long long)offset, (unsigned long long)len);
        }
}

static void test_errors_from_agent(void **state)
{
        static const struct {
                int e;
                enum space_error_code code;
        } map[] = {
                { ENOENT, SPACE_E_NOT_FOUND },
                { EEXIST, SPACE_E_ALREADY_EXISTS },
                { ENOTEMPTY, SPACE_E_CONFLICT },
                { EBUSY, SPACE_E_CONFLICT },
                { EACCES, SPACE_E_PERMISSION_DENIED },
                { EPERM, SPACE_E_PERMISSION_DENIED },
                { EINVAL, SPACE_E_INVALID_REQUEST },
                { EISDIR, SPACE_E_INVALID_REQUEST },
                { ENOTDIR, SPACE_E_INVALID_REQUEST },
                { ELOOP, SPACE_E_INVALID_REQUEST },
                { ESRCH, SPACE_E_INVALID_REQUEST },
                { ENAMETOOLONG, SPACE_E_INVALID_REQUEST },
                { ENOSPC, SPACE_E_PAYLOAD_TOO_LARGE },
                { ECONNRESET, SPACE_E_UNAVAILABLE },
                { EIO, SPACE_E_INTERNAL },
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
                struct space_error err = { 0 };
                assert_int_equal(file_error_from_agent(&err, -map[i].e, "stat /x: whatever"), -1);
                if (err.code != map[i].code)
                        fail_msg("%s -> %s", strerror(map[i].e), space_error_code_name(err.code));
        }
        struct space_error err = { 0 };
        file_error_from_agent(&err, -ENOENT, "");
        assert_string_equal(err.message, strerror(ENOENT));
}

static void put_entry(struct agent_frame_writer *w, const char *path, uint8_t type, const char *link)
{
        const char *slash = strrchr(path, '/');
        agent_frame_writer_put_str(w, AGENT_F_FILE_PATH, path);
        agent_frame_writer_put_str(w, AGENT_F_FILE_NAME, slash + 1);
        agent_frame_writer_put_u8(w, AGENT_F_FILE_TYPE, type);
        agent_frame_writer_put_u64(w, AGENT_F_FILE_SIZE, 5000000000ull);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_MODE, 0100640);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_UID, 1000);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_GID, 100);
        agent_frame_writer_put_u64(w, AGENT_F_FILE_MTIME_MS, 1764547200123ull);
        agent_frame_writer_put_str(w, AGENT_F_FILE_OWNER, "user");
        agent_frame_writer_put(w, 109, "zz", 2); /* unknown tags are skipped */
        if (link)
                agent_frame_writer_put_str(w, AGENT_F_FILE_LINK, link);
}

static struct agent_frame frame_of(struct agent_frame_writer *w)
{
        assert_int_equal(agent_frame_writer_finish(w), 0);
        uint8_t type;
        int64_t len = agent_frame_header_decode(w->data, &type);
        assert_true(len >= 0);
        return (struct agent_frame){ .type = type, .payload = w->data + AGENT_FRAME_HEADER_SIZE, .payload_len = (uint32_t)len };
}

static void test_entries_decode_and_render(void **state)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRIES);
        put_entry(&w, "/home/a", AGENT_FILE_REGULAR, NULL);
        put_entry(&w, "/home/l", AGENT_FILE_SYMLINK, "/etc");
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_TRUNCATED, 1);
        struct agent_frame f = frame_of(&w);
        struct agent_file_entry e;
        size_t cursor = 0;

        assert_int_equal(agent_files_next_entry(&f, &cursor, &e), 1);
        json_t *j = file_render_entry(&e);
        assert_string_equal(json_string_value(json_object_get(j, "path")), "/home/a");
        assert_string_equal(json_string_value(json_object_get(j, "name")), "a");
        assert_string_equal(json_string_value(json_object_get(j, "type")), "file");
        assert_string_equal(json_string_value(json_object_get(j, "mode")), "0640");
        assert_int_equal(json_integer_value(json_object_get(j, "size")), 5000000000ll);
        assert_int_equal(json_integer_value(json_object_get(j, "uid")), 1000);
        assert_string_equal(json_string_value(json_object_get(j, "owner")), "user");
        assert_true(json_is_null(json_object_get(j, "group")));
        assert_string_equal(json_string_value(json_object_get(j, "modified_at")), "2025-12-01T00:00:00.123Z");
        assert_null(json_object_get(j, "symlink_target"));
        json_decref(j);

        assert_int_equal(agent_files_next_entry(&f, &cursor, &e), 1);
        j = file_render_entry(&e);
        assert_string_equal(json_string_value(json_object_get(j, "type")), "symlink");
        assert_string_equal(json_string_value(json_object_get(j, "symlink_target")), "/etc");
        json_decref(j);
        assert_int_equal(agent_files_next_entry(&f, &cursor, &e), 0);
        agent_frame_writer_release(&w);

        /* A known field of the wrong size is malformed. */
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/x");
        agent_frame_writer_put_u32(&w, AGENT_F_FILE_SIZE, 1);
        f = frame_of(&w);
        cursor = 0;
        assert_int_equal(agent_files_next_entry(&f, &cursor, &e), -EPROTO);
        agent_frame_writer_release(&w);

        /* Names that are not UTF-8 still render (as U+FFFD). */
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
        agent_frame_writer_put(&w, AGENT_F_FILE_PATH, "/\xff\xfe", 3);
        agent_frame_writer_put(&w, AGENT_F_FILE_NAME, "\xff\xfe", 2);
        f = frame_of(&w);
        cursor = 0;
        assert_int_equal(agent_files_next_entry(&f, &cursor, &e), 1);
        j = file_render_entry(&e);
        assert_non_null(j);
        assert_non_null(json_string_value(json_object_get(j, "name")));
        json_decref(j);
        agent_frame_writer_release(&w);
}

static int open_fds(void)
{
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* Bytes travel in-band (protocol version 2): a descriptor a hostile agent passes alongside
 * a reply is never taken in by spaced. */
static void test_reply_with_descriptor(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        int passed = open("/dev/null", O_RDONLY | O_CLOEXEC);
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/x");
        assert_int_equal(agent_frame_writer_finish(&w), 0);
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = { 0 };
        struct iovec iov = { w.data, w.len };
        struct msghdr msg = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &passed, sizeof(int));
        assert_int_equal(sendmsg(sv[0], &msg, 0), (ssize_t)w.len);
        agent_frame_writer_release(&w);
        close(passed); /* the only copy left would be one spaced took in */

        int before = open_fds();
        struct agent_file_reply r;
        assert_int_equal(agent_files_read(sv[1], &r, NULL, 0), 0);
        assert_int_equal(r.frame.type, AGENT_MSG_FILE_ENTRY);
        assert_int_equal(open_fds(), before);
        agent_file_reply_release(&r);
        assert_null(r.buf);

        /* An ERROR reply becomes -errno with its message. */
        agent_frame_writer_begin(&w, AGENT_MSG_ERROR);
        agent_frame_writer_put_i32(&w, AGENT_F_ERRNO, ENOENT);
        agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, "open /x: No such file or directory");
        assert_int_equal(agent_frame_writer_finish(&w), 0);
        assert_int_equal(agent_frame_send(sv[0], &w), 0);
        agent_frame_writer_release(&w);
        char text[128];
        assert_int_equal(agent_files_read(sv[1], &r, text, sizeof(text)), -ENOENT);
        assert_string_equal(text, "open /x: No such file or directory");
        close(sv[0]);
        assert_int_equal(agent_files_read(sv[1], &r, NULL, 0), -ECONNRESET);
        close(sv[1]);
}

/* Random payloads never make the entry decoder read out of bounds (run under ASan). */
static void test_entries_decode_random_payloads(void **state)
{
        static const uint16_t tags[] = { AGENT_F_FILE_PATH, AGENT_F_FILE_NAME, AGENT_F_FILE_TYPE,  AGENT_F_FILE_SIZE,
                                         AGENT_F_FILE_MODE, AGENT_F_FILE_LINK, AGENT_F_FILE_OWNER, 7 };
        uint8_t payload[512];
        srand(42);
        for (int round = 0; round < 20000; round++) {
                size_t len = 0;
                /* Mostly well-formed fields of random sizes, sometimes a cut one. */
                while (len + 6 < sizeof(payload) && rand() % 8) {
                        uint16_t tag = tags[rand() % (int)(sizeof(tags) / sizeof(tags[0]))];
                        uint32_t flen = (uint32_t)(rand() % 12);
                        if (rand() % 16 == 0)
                                flen = 1000; /* overruns the payload */
                        memcpy(payload + len, &tag, 2);
                        memcpy(payload + len + 2, &flen, 4);
                        len += 6;
                        for (uint32_t i = 0; i < flen && len < sizeof(payload); i++)
                                payload[len++] = (uint8_t)rand();
                }
                uint8_t *copy = malloc(len ? len : 1); /* exact size, so ASan sees any overrun */
                memcpy(copy, payload, len);
                struct agent_frame f = { .type = AGENT_MSG_FILE_ENTRIES, .payload = copy, .payload_len = (uint32_t)len };
                struct agent_file_entry e;
                size_t cursor = 0;
                int r, n = 0;
                while ((r = agent_files_next_entry(&f, &cursor, &e)) == 1 && n++ < 1000) {
                        json_t *j = file_render_entry(&e);
                        assert_non_null(j);
                        json_decref(j);
                }
                assert_true(r <= 1);
                free(copy);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mode_parse),
                cmocka_unit_test(test_path_check),
                cmocka_unit_test(test_range_parse),
                cmocka_unit_test(test_errors_from_agent),
                cmocka_unit_test(test_entries_decode_and_render),
                cmocka_unit_test(test_reply_with_descriptor),
                cmocka_unit_test(test_entries_decode_random_payloads),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
