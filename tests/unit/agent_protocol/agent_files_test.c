/* Black-box tests of space-agent's file messages: the real binary, started with --root on
 * a temporary directory that stands in for a sandbox's root, driven over the protocol.
 * Usage: agent_files_test PATH-TO-space-agent */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent_protocol/agent_file_data.h"
#include "agent_test_harness.h"

static char root[64];
static bool have_tmpfs; /* root/mem is a small tmpfs (needs root to mount) */

static void root_path(const char *rel, char *buf, size_t size)
{
        snprintf(buf, size, "%s%s", root, rel);
}

static void root_put(const char *rel, const char *text)
{
        char p[256];
        root_path(rel, p, sizeof p);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void root_mkdir(const char *rel)
{
        char p[256];
        root_path(rel, p, sizeof p);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void root_link(const char *target, const char *rel)
{
        char p[256];
        root_path(rel, p, sizeof p);
        assert_int_equal(symlink(target, p), 0);
}

static int group_setup(void **state)
{
        char p[256];
        strcpy(root, "/tmp/agent-files-root-XXXXXX");
        if (!mkdtemp(root))
                return -1;
        chmod(root, 0755);
        root_mkdir("/etc");
        root_put("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n");
        root_put("/etc/group", "root:x:0:\nuser:x:1000:\n");
        root_mkdir("/esc");
        root_link("/", "/esc/root");
        root_link("../../../../..", "/esc/up");
        root_link("/etc", "/esc/etc");
        root_link("/proc/self/root", "/esc/magic");
        root_path("/fifo", p, sizeof p);
        if (mkfifo(p, 0644) < 0)
                return -1;
        root_mkdir("/mem");
        root_path("/mem", p, sizeof p);
        have_tmpfs = mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m") == 0;
        agent_test.root = root;
        return agent_test_setup(state);
}

static int group_teardown(void **state)
{
        char cmd[128];
        agent_test_teardown(state);
        if (have_tmpfs) {
                char p[256];
                root_path("/mem", p, sizeof p);
                umount2(p, MNT_DETACH);
        }
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        return system(cmd) == 0 ? 0 : -1;
}

/* ---- requests ---- */

static void send_file_request(int fd, enum agent_msg_type type, const char *path, const char *dest)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, type);
        if (path)
                agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, path);
        if (dest)
                agent_frame_writer_put_str(&w, AGENT_F_FILE_DEST, dest);
        agent_test_send(fd, &w);
}

static void expect_error(int fd, int error)
{
        struct agent_test_reply r;
        agent_test_read(fd, &r);
        agent_test_assert_error(&r, error);
        agent_test_reply_release(&r);
}

static void send_fetch(int fd, uint64_t offset, uint64_t length)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_FETCH);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, offset);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_LENGTH, length);
        agent_test_send(fd, &w);
}

/* Reads the FILE_DATA frames of [offset, offset + length) into buf (length bytes), each
 * checked as spaced checks it: the next offset, 1..AGENT_FILE_CHUNK bytes. Returns how
 * many frames came. */
static int fetch_into(int fd, uint64_t offset, uint64_t length, char *buf)
{
        int frames = 0;
        for (uint64_t got = 0; got < length; frames++) {
                struct agent_test_reply r;
                const uint8_t *data;
                uint32_t n;
                agent_test_read(fd, &r);
                if (r.f.type == AGENT_MSG_ERROR)
                        fail_msg("fetch: errno %d", agent_test_get_i32(&r, AGENT_F_ERRNO));
                assert_int_equal(agent_file_data_check(&r.f, offset + got, length - got, &data, &n), 0);
                memcpy(buf + got, data, n);
                got += n;
                agent_test_reply_release(&r);
        }
        return frames;
}

/* FILE_READ path, then FILE_FETCH of all of it: the content into buf (NUL-terminated). */
static void read_file(int fd, const char *path, char *buf, size_t size)
{
        struct agent_test_reply r;
        send_file_request(fd, AGENT_MSG_FILE_READ, path, NULL);
        agent_test_read(fd, &r);
        if (r.f.type == AGENT_MSG_ERROR)
                fail_msg("read %s: errno %d", path, agent_test_get_i32(&r, AGENT_F_ERRNO));
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        if (!strstr(path, ".."))
                agent_test_assert_str(&r, AGENT_F_FILE_PATH, path); /* else: the path as normalised */
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_TYPE), AGENT_FILE_REGULAR);
        uint64_t len = agent_test_get_u64(&r, AGENT_F_FILE_SIZE);
        agent_test_reply_release(&r);
        assert_true(len < size);
        if (len)
                send_fetch(fd, 0, len);
        fetch_into(fd, 0, len, buf);
        buf[len] = 0;
}

static void test_read_sends_the_bytes(void **state)
{
        int fd = agent_test_connect();
        char buf[256];
        read_file(fd, "/etc/passwd", buf, sizeof buf);
        assert_non_null(strstr(buf, "user:x:1000"));
        close(fd);
}

/* A file of several chunks, fetched whole and by range, comes in bounded frames in order. */
static void test_fetch_ranges_in_chunks(void **state)
{
        static char want[3 * AGENT_FILE_CHUNK + 100], got[sizeof want];
        struct agent_test_reply r;
        char p[256];
        for (size_t i = 0; i < sizeof want; i++)
                want[i] = (char)(i * 7 + i / 4096);
        root_path("/big", p, sizeof p);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(want, 1, sizeof want, f), sizeof want);
        fclose(f);

        int fd = agent_test_connect();
        send_file_request(fd, AGENT_MSG_FILE_READ, "/big", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        assert_int_equal(agent_test_get_u64(&r, AGENT_F_FILE_SIZE), sizeof want);
        agent_test_reply_release(&r);
        send_fetch(fd, 0, sizeof want);
        assert_int_equal(fetch_into(fd, 0, sizeof want, got), 4);
        assert_memory_equal(got, want, sizeof want);
        /* A range across a chunk boundary, on the same open file. */
        send_fetch(fd, AGENT_FILE_CHUNK - 10, 20);
        assert_int_equal(fetch_into(fd, AGENT_FILE_CHUNK - 10, 20, got), 1);
        assert_memory_equal(got, want + AGENT_FILE_CHUNK - 10, 20);
        /* The file shrank after it was opened: the bytes that are gone are an ERROR. */
        assert_int_equal(truncate(p, 100), 0);
        send_fetch(fd, 50, 100);
        expect_error(fd, EIO);
        /* The connection still serves. */
        send_fetch(fd, 0, 100);
        fetch_into(fd, 0, 100, got);
        assert_memory_equal(got, want, 100);
        close(fd);
        unlink(p);
}

/* Transfer frames out of their place are refused or kept for the commit, never crash. */
static void test_transfer_frames_out_of_place(void **state)
{
        int fd = agent_test_connect();
        char p[256];
        /* FILE_FETCH without a FILE_READ, and with a missing field. */
        send_fetch(fd, 0, 10);
        expect_error(fd, EINVAL);
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_FETCH);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, 0);
        agent_test_send(fd, &w);
        expect_error(fd, EINVAL);
        /* FILE_DATA without an upload. */
        assert_int_equal(agent_file_data_send(fd, 0, "x", 1), 0);
        expect_error(fd, EINVAL);
        /* FILE_DATA out of order: the commit fails and nothing is linked. */
        root_mkdir("/ooo");
        send_file_request(fd, AGENT_MSG_FILE_CREATE, "/ooo/f", NULL);
        struct agent_test_reply r;
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
        agent_test_reply_release(&r);
        assert_int_equal(agent_file_data_send(fd, 0, "abc", 3), 0);
        assert_int_equal(agent_file_data_send(fd, 10, "def", 3), 0); /* a gap */
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        expect_error(fd, EPROTO);
        root_path("/ooo/f", p, sizeof p);
        assert_int_equal(access(p, F_OK), -1);
        close(fd);
}

static void test_escapes_stay_in_root(void **state)
{
        static const char *const inside[] = { "/esc/root/etc/passwd", "/esc/up/etc/passwd", "/esc/etc/passwd",
                                              "/../../../etc/passwd", "/esc/root/esc/up/esc/root/etc/passwd" };
        int fd = agent_test_connect();
        char buf[256];

        for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
                read_file(fd, inside[i], buf, sizeof buf);
                if (!strstr(buf, "user:x:1000:1000::/home/user"))
                        fail_msg("%s gave %s", inside[i], buf);
        }
        /* The host has /etc/hostname and /proc; this root has neither. */
        send_file_request(fd, AGENT_MSG_FILE_READ, "/esc/up/etc/hostname", NULL);
        expect_error(fd, ENOENT);
        send_file_request(fd, AGENT_MSG_FILE_READ, "/esc/magic/etc/passwd", NULL);
        expect_error(fd, ENOENT);
        close(fd);
}

static void test_bad_requests(void **state)
{
        int fd = agent_test_connect();
        struct agent_frame_writer w;

        send_file_request(fd, AGENT_MSG_FILE_STAT, "etc/passwd", NULL);
        expect_error(fd, EINVAL);
        send_file_request(fd, AGENT_MSG_FILE_STAT, NULL, NULL);
        expect_error(fd, EINVAL);
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_STAT);
        agent_frame_writer_put(&w, AGENT_F_FILE_PATH, "/etc\0/passwd", 12);
        agent_test_send(fd, &w);
        expect_error(fd, EINVAL);
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_LIST);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/etc");
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_DEPTH, 1); /* a u32 field */
        agent_test_send(fd, &w);
        expect_error(fd, EINVAL);
        send_file_request(fd, AGENT_MSG_FILE_MOVE, "/etc/passwd", NULL);
        expect_error(fd, EINVAL);
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        expect_error(fd, EINVAL);
        send_file_request(fd, AGENT_MSG_FILE_READ, "/fifo", NULL);
        expect_error(fd, EINVAL);
        send_file_request(fd, AGENT_MSG_FILE_READ, "/esc", NULL);
        expect_error(fd, EISDIR);
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_STAT);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/");
        agent_frame_writer_put_str(&w, AGENT_F_FILE_USER, "nosuchuser");
        agent_test_send(fd, &w);
        expect_error(fd, ESRCH);
        /* The connection is still usable. */
        char buf[256];
        read_file(fd, "/etc/group", buf, sizeof buf);
        close(fd);
}

static void test_upload_commit(void **state)
{
        int fd = agent_test_connect();
        struct agent_test_reply r;
        struct agent_frame_writer w;
        char p[256], buf[64] = "";

        agent_frame_writer_begin(&w, AGENT_MSG_FILE_CREATE);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/esc/root/up/a/new.txt");
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_PARENTS, 1);
        agent_frame_writer_put_u32(&w, AGENT_F_FILE_MODE, 0640);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
        uint8_t memory = 0;
        assert_int_equal(agent_frame_get_u8(&r.f, AGENT_F_FILE_MEMORY, &memory), 0); /* on disk */
        agent_test_reply_release(&r);
        assert_int_equal(agent_file_data_send(fd, 0, "upl", 3), 0);
        assert_int_equal(agent_file_data_send(fd, 3, "oaded", 5), 0);
        root_path("/up/a/new.txt", p, sizeof p);
        assert_int_equal(access(p, F_OK), -1); /* nothing there before the commit */
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        agent_test_assert_str(&r, AGENT_F_FILE_PATH, "/esc/root/up/a/new.txt");
        assert_int_equal(agent_test_get_u64(&r, AGENT_F_FILE_SIZE), 8);
        assert_int_equal(agent_test_get_u32(&r, AGENT_F_FILE_MODE) & 07777, 0640);
        agent_test_reply_release(&r);
        FILE *f = fopen(p, "r");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof buf, f));
        fclose(f);
        assert_string_equal(buf, "uploaded");
        close(fd);
}

/* FILE_META on FILE_CREATE: set as user.e2b.* attributes at commit; every entry carries the
 * file's (also ones set behind the agent's back), and nothing of other namespaces. */
static void test_upload_metadata(void **state)
{
        int fd = agent_test_connect();
        struct agent_test_reply r;
        struct agent_frame_writer w;
        const uint8_t *data;
        uint32_t len;
        char p[256], v[16] = "";
        static const char pairs[] = "author\0ada\0empty\0"; /* with its terminating NUL: "" */

        agent_frame_writer_begin(&w, AGENT_MSG_FILE_CREATE);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/meta.txt");
        agent_frame_writer_put(&w, AGENT_F_FILE_META, pairs, sizeof pairs);
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_WITH_META, 1);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
        agent_test_reply_release(&r);
        assert_int_equal(agent_file_data_send(fd, 0, "m", 1), 0);
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        assert_int_equal(agent_frame_find(&r.f, AGENT_F_FILE_META, &data, &len), 1);
        assert_int_equal(len, sizeof pairs);
        assert_memory_equal(data, pairs, len);
        agent_test_reply_release(&r);
        root_path("/meta.txt", p, sizeof p);
        assert_int_equal(getxattr(p, "user.e2b.author", v, sizeof v), 3);
        assert_memory_equal(v, "ada", 3);
        assert_int_equal(setxattr(p, "user.e2b.later", "x", 1, 0), 0);
        assert_int_equal(setxattr(p, "user.other", "hidden", 6, 0), 0);
        assert_int_equal(removexattr(p, "user.e2b.empty"), 0);
        /* Entries carry metadata only when asked (FILE_WITH_META). */
        send_file_request(fd, AGENT_MSG_FILE_STAT, "/meta.txt", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(agent_frame_find(&r.f, AGENT_F_FILE_META, &data, &len), 0);
        agent_test_reply_release(&r);
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_STAT);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/meta.txt");
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_WITH_META, 1);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        assert_int_equal(agent_frame_find(&r.f, AGENT_F_FILE_META, &data, &len), 1);
        /* In the order the filesystem lists them. */
        bool a = len == 19 && memcmp(data, "author\0ada\0later\0x\0", 19) == 0;
        bool b = len == 19 && memcmp(data, "later\0x\0author\0ada\0", 19) == 0;
        assert_true(a || b);
        agent_test_reply_release(&r);
        /* A file with none has no field; malformed pairs are refused. */
        send_file_request(fd, AGENT_MSG_FILE_STAT, "/etc/passwd", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(agent_frame_find(&r.f, AGENT_F_FILE_META, &data, &len), 0);
        agent_test_reply_release(&r);
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_CREATE);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/meta-bad.txt");
        agent_frame_writer_put(&w, AGENT_F_FILE_META, "key-without-value", 18);
        agent_test_send(fd, &w);
        expect_error(fd, EINVAL);
        close(fd);
}

/* FILE_EXCL: a commit onto a name that is taken fails (EEXIST) and replaces nothing; onto a
 * free one it links as usual. */
static void test_upload_excl(void **state)
{
        int fd = agent_test_connect();
        struct agent_test_reply r;
        struct agent_frame_writer w;
        char buf[128] = "";

        for (int i = 0; i < 2; i++) {
                const char *path = i == 0 ? "/etc/passwd" : "/excl-new";
                agent_frame_writer_begin(&w, AGENT_MSG_FILE_CREATE);
                agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, path);
                agent_frame_writer_put_u8(&w, AGENT_F_FILE_EXCL, 1);
                agent_test_send(fd, &w);
                agent_test_read(fd, &r);
                assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
                agent_test_reply_release(&r);
                assert_int_equal(agent_file_data_send(fd, 0, "replaced", 8), 0);
                send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
                if (i == 0) {
                        expect_error(fd, EEXIST);
                        continue;
                }
                agent_test_read(fd, &r);
                assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
                agent_test_reply_release(&r);
        }
        read_file(fd, "/etc/passwd", buf, sizeof buf);
        assert_non_null(strstr(buf, "root:x:0:0"));
        read_file(fd, "/excl-new", buf, sizeof buf);
        assert_string_equal(buf, "replaced");
        close(fd);
}

static void test_dropped_upload_leaves_nothing(void **state)
{
        int fd = agent_test_connect();
        struct agent_test_reply r;
        char p[256];

        root_mkdir("/drop");
        send_file_request(fd, AGENT_MSG_FILE_CREATE, "/drop/never", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
        agent_test_reply_release(&r);
        assert_int_equal(agent_file_data_send(fd, 0, "partial", 7), 0);
        close(fd);
        /* Ask something on a new connection: by then the agent has seen the hang-up. */
        fd = agent_test_connect();
        send_file_request(fd, AGENT_MSG_FILE_LIST, "/drop", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRIES);
        assert_int_equal(r.f.payload_len, 0);
        agent_test_reply_release(&r);
        root_path("/drop/never", p, sizeof p);
        assert_int_equal(access(p, F_OK), -1);
        close(fd);
}

/* A memory-backed target is flagged FILE_MEMORY; the agent fills it (inside the
 * sandbox's cgroup) and a write past the tmpfs's size fails the commit. */
static void test_upload_to_memory(void **state)
{
        struct agent_test_reply r;
        char p[256], buf[16] = "";

        if (!have_tmpfs)
                agent_test_skip("no tmpfs could be mounted for the memory-backed target");
        int fd = agent_test_connect();
        send_file_request(fd, AGENT_MSG_FILE_CREATE, "/mem/inband", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_UPLOAD);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_MEMORY), 1);
        agent_test_reply_release(&r);
        assert_int_equal(agent_file_data_send(fd, 0, "in band", 7), 0);
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_ENTRY);
        assert_int_equal(agent_test_get_u64(&r, AGENT_F_FILE_SIZE), 7);
        agent_test_reply_release(&r);
        root_path("/mem/inband", p, sizeof p);
        FILE *f = fopen(p, "r");
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof buf, f));
        fclose(f);
        assert_string_equal(buf, "in band");

        /* More than the tmpfs holds: the rest is dropped and the commit says why. */
        send_file_request(fd, AGENT_MSG_FILE_CREATE, "/mem/too-big", NULL);
        agent_test_read(fd, &r);
        agent_test_reply_release(&r);
        static char chunk[1 << 20];
        for (int i = 0; i < 16; i++)
                assert_int_equal(agent_file_data_send(fd, (uint64_t)i << 20, chunk, sizeof chunk), 0);
        send_file_request(fd, AGENT_MSG_FILE_COMMIT, NULL, NULL);
        expect_error(fd, ENOSPC);
        root_path("/mem/too-big", p, sizeof p);
        assert_int_equal(access(p, F_OK), -1);
        close(fd);
}

static void test_watch_streams_events(void **state)
{
        int fd = agent_test_connect_timeout(5);
        struct agent_test_reply r;
        char p[256];

        root_mkdir("/w");
        send_file_request(fd, AGENT_MSG_FILE_WATCH, "/w", NULL);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_DONE);
        agent_test_reply_release(&r);
        root_put("/w/f", "x");
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_EVENT);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_CREATE);
        agent_test_assert_str(&r, AGENT_F_FILE_PATH, "/w/f");
        agent_test_assert_str(&r, AGENT_F_FILE_NAME, "f");
        agent_test_reply_release(&r);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_WRITE);
        agent_test_reply_release(&r);
        root_path("/w/f", p, sizeof p);
        assert_int_equal(unlink(p), 0);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_REMOVE);
        agent_test_reply_release(&r);
        /* Removing the watched directory ends the stream. */
        root_path("/w", p, sizeof p);
        assert_int_equal(rmdir(p), 0);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_REMOVE);
        agent_test_reply_release(&r);
        uint8_t byte;
        assert_int_equal(read(fd, &byte, 1), 0);
        close(fd);
}

/* The fields of an event frame after its second FILE_PATH (the entry FILE_WITH_ENTRY adds):
 * how many such paths, and the entry's size. */
static int event_entries(const struct agent_test_reply *r, uint64_t *ret_size)
{
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        int paths = 0;
        while (agent_frame_next_field(&r->f, &cursor, &tag, &data, &len) == 1) {
                paths += tag == AGENT_F_FILE_PATH;
                if (paths == 2 && tag == AGENT_F_FILE_SIZE && len == 8) {
                        *ret_size = 0;
                        for (int i = 7; i >= 0; i--)
                                *ret_size = *ret_size << 8 | data[i];
                }
        }
        return paths - 1;
}

/* With FILE_WITH_ENTRY an event carries its path's entry as it was then; a removal none. */
static void test_watch_with_entry(void **state)
{
        int fd = agent_test_connect_timeout(5);
        struct agent_test_reply r;
        struct agent_frame_writer w;
        uint64_t size = 0;
        char p[256];

        root_mkdir("/we");
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_WATCH);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/we");
        agent_frame_writer_put_u8(&w, AGENT_F_FILE_WITH_ENTRY, 1);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_FILE_DONE);
        agent_test_reply_release(&r);
        root_put("/we/f", "four");
        agent_test_read(fd, &r); /* create */
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_CREATE);
        assert_int_equal(event_entries(&r, &size), 1);
        agent_test_reply_release(&r);
        agent_test_read(fd, &r); /* write */
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_WRITE);
        assert_int_equal(event_entries(&r, &size), 1);
        assert_int_equal(size, 4);
        agent_test_reply_release(&r);
        root_path("/we/f", p, sizeof p);
        assert_int_equal(unlink(p), 0);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_FILE_EVENT_KIND), AGENT_FILE_EVENT_REMOVE);
        assert_int_equal(event_entries(&r, &size), 0);
        agent_test_reply_release(&r);
        close(fd);
}

/* Random file requests (last: they may change the root) never bring the agent down. */
static void test_random_requests(void **state)
{
        static const uint8_t types[] = { AGENT_MSG_FILE_STAT,   AGENT_MSG_FILE_READ,   AGENT_MSG_FILE_LIST,
                                         AGENT_MSG_FILE_MKDIR,  AGENT_MSG_FILE_MOVE,   AGENT_MSG_FILE_REMOVE,
                                         AGENT_MSG_FILE_CREATE, AGENT_MSG_FILE_COMMIT, AGENT_MSG_FILE_WATCH,
                                         AGENT_MSG_FILE_FETCH,  AGENT_MSG_FILE_DATA };
        static const char *const paths[] = { "/",    "/esc/root", "/esc/up/..", "/fifo", "/etc/passwd", "/x/../y",
                                             "/mem", "/nope/a",   "relative",   "",      "/esc/magic/x" };
        srand(7);
        for (int i = 0; i < 300; i++) {
                int fd = agent_test_connect_timeout(5);
                struct agent_frame_writer w;
                agent_frame_writer_begin(&w, types[rand() % (int)sizeof types]);
                int nfields = rand() % 5;
                for (int k = 0; k < nfields; k++) {
                        uint16_t tag = (uint16_t)(80 + rand() % 20);
                        if (rand() % 2) {
                                const char *p = paths[rand() % (int)(sizeof paths / sizeof paths[0])];
                                agent_frame_writer_put(&w, tag, p, strlen(p));
                        } else {
                                uint8_t junk[8];
                                for (size_t b = 0; b < sizeof junk; b++)
                                        junk[b] = (uint8_t)rand();
                                agent_frame_writer_put(&w, tag, junk, (size_t)(rand() % 9));
                        }
                }
                agent_test_send(fd, &w);
                /* Any answer (or none, for a watch) is fine; the agent must stay up. */
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                (void)poll(&pfd, 1, 200);
                close(fd);
        }
        int fd = agent_test_connect();
        struct agent_frame_writer w;
        struct agent_test_reply r;
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        agent_test_reply_release(&r);
        close(fd);
}

int main(int argc, char **argv)
{
        int r = agent_test_init(argc, argv);
        if (r)
                return r;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read_sends_the_bytes),
                cmocka_unit_test(test_fetch_ranges_in_chunks),
                cmocka_unit_test(test_transfer_frames_out_of_place),
                cmocka_unit_test(test_escapes_stay_in_root),
                cmocka_unit_test(test_bad_requests),
                cmocka_unit_test(test_upload_commit),
                cmocka_unit_test(test_upload_metadata),
                cmocka_unit_test(test_upload_excl),
                cmocka_unit_test(test_dropped_upload_leaves_nothing),
                cmocka_unit_test(test_upload_to_memory),
                cmocka_unit_test(test_watch_streams_events),
                cmocka_unit_test(test_watch_with_entry),
                cmocka_unit_test(test_random_requests),
        };
        return agent_test_exit(cmocka_run_group_tests(tests, group_setup, group_teardown));
}
