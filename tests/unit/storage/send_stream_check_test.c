/* Unit tests of the send stream check: streams built here command by command, each fed in
 * pieces of every size from 1 byte to the whole stream, must get the same verdict. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "storage/send_stream_check.h"

enum {
        SUBVOL = 1,
        SNAPSHOT,
        MKFILE,
        MKDIR,
        MKNOD,
        MKFIFO,
        MKSOCK,
        SYMLINK,
        RENAME,
        LINK,
        UNLINK,
        RMDIR,
        SET_XATTR,
        REMOVE_XATTR,
        WRITE,
        CLONE,
        TRUNCATE,
        CHMOD,
        CHOWN,
        UTIMES,
        END,
        UPDATE_EXTENT,
        FALLOCATE,
        FILEATTR,
        ENCODED_WRITE
};
enum {
        A_UUID = 1,
        A_CTRANSID,
        A_INO,
        A_SIZE,
        A_MODE,
        A_UID,
        A_GID,
        A_RDEV,
        A_CTIME,
        A_MTIME,
        A_ATIME,
        A_OTIME,
        A_XATTR_NAME,
        A_XATTR_DATA,
        A_PATH,
        A_PATH_TO,
        A_PATH_LINK,
        A_FILE_OFFSET,
        A_DATA,
        A_CLONE_UUID,
        A_CLONE_CTRANSID,
        A_CLONE_PATH,
        A_CLONE_OFFSET,
        A_CLONE_LEN
};

static const uint8_t OWN[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t PARENT[16] = {
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11
};
static const uint8_t OTHER[16] = { 0x22 };

struct buf {
        uint8_t data[1 << 17];
        size_t len, cmd_start;
        uint32_t version;
};

static uint32_t crc32c(const uint8_t *p, size_t n)
{
        uint32_t crc = 0;
        while (n--) {
                crc ^= *p++;
                for (int k = 0; k < 8; k++)
                        crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        return crc;
}

static void put(struct buf *b, const void *p, size_t n)
{
        assert_true(b->len + n <= sizeof(b->data));
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

static void put16(struct buf *b, uint16_t v)
{
        put(b, (uint8_t[]){ (uint8_t)v, (uint8_t)(v >> 8) }, 2);
}
static void put32(struct buf *b, uint32_t v)
{
        put16(b, (uint16_t)v), put16(b, (uint16_t)(v >> 16));
}
static void put64(struct buf *b, uint64_t v)
{
        put32(b, (uint32_t)v), put32(b, (uint32_t)(v >> 32));
}

static void start(struct buf *b, uint32_t version)
{
        b->len = 0;
        b->version = version;
        put(b, "btrfs-stream", 13);
        put32(b, version);
}

static void cmd(struct buf *b, uint16_t c)
{
        b->cmd_start = b->len;
        put32(b, 0), put16(b, c), put32(b, 0);
}

static void done(struct buf *b)
{
        uint8_t *h = b->data + b->cmd_start;
        uint32_t len = (uint32_t)(b->len - b->cmd_start - 10);
        h[0] = (uint8_t)len, h[1] = (uint8_t)(len >> 8), h[2] = (uint8_t)(len >> 16), h[3] = (uint8_t)(len >> 24);
        uint32_t crc = crc32c(h, b->len - b->cmd_start);
        h[6] = (uint8_t)crc, h[7] = (uint8_t)(crc >> 8), h[8] = (uint8_t)(crc >> 16), h[9] = (uint8_t)(crc >> 24);
}

static void attr(struct buf *b, uint16_t t, const void *p, size_t n)
{
        put16(b, t);
        if (!(b->version >= 2 && t == A_DATA))
                put16(b, (uint16_t)n);
        put(b, p, n);
}

static void str(struct buf *b, uint16_t t, const char *s)
{
        attr(b, t, s, strlen(s));
}
static void u64(struct buf *b, uint16_t t, uint64_t v)
{
        put16(b, t), put16(b, 8), put64(b, v);
}

static void subvol(struct buf *b, const char *name)
{
        cmd(b, SUBVOL), str(b, A_PATH, name), attr(b, A_UUID, OWN, 16), u64(b, A_CTRANSID, 7), done(b);
}

static void snapshot(struct buf *b, const char *name, const uint8_t *parent)
{
        cmd(b, SNAPSHOT), str(b, A_PATH, name), attr(b, A_UUID, OWN, 16), u64(b, A_CTRANSID, 7);
        attr(b, A_CLONE_UUID, parent, 16), u64(b, A_CLONE_CTRANSID, 5), done(b);
}

static void path_cmd(struct buf *b, uint16_t c, const char *path)
{
        cmd(b, c), str(b, A_PATH, path);
        if (c == MKFILE || c == MKDIR || c == MKFIFO || c == MKSOCK)
                u64(b, A_INO, 257);
        done(b);
}

static void two_paths(struct buf *b, uint16_t c, const char *path, uint16_t t2, const char *other)
{
        cmd(b, c), str(b, A_PATH, path);
        if (c == SYMLINK)
                u64(b, A_INO, 258);
        str(b, t2, other), done(b);
}

static void write_cmd(struct buf *b, const char *path, size_t n)
{
        static uint8_t payload[60000];
        cmd(b, WRITE), str(b, A_PATH, path), u64(b, A_FILE_OFFSET, 0), attr(b, A_DATA, payload, n), done(b);
}

static void mode_cmd(struct buf *b, const char *path, uint64_t mode)
{
        cmd(b, CHMOD), str(b, A_PATH, path), u64(b, A_MODE, mode), done(b);
}

static void end(struct buf *b)
{
        cmd(b, END), done(b);
}

/* The verdict of feeding b in pieces of `step` bytes: 0 or -EINVAL. */
static int verdict(const struct buf *b, size_t step, size_t n_parents, char *name, size_t name_size)
{
        const uint8_t parents[2][16] = { { 0 } };
        uint8_t p[2][16];
        memcpy(p, parents, sizeof(p));
        memcpy(p[0], PARENT, 16);
        struct send_stream_check *c;
        assert_int_equal(send_stream_check_new((const uint8_t(*)[16])p, n_parents, &c), 0);
        int r = 0;
        for (size_t off = 0; off < b->len && r == 0; off += step)
                r = send_stream_check_feed(c, b->data + off, off + step > b->len ? b->len - off : step);
        if (r == 0)
                r = send_stream_check_finish(c);
        if (r < 0)
                assert_true(send_stream_check_error(c)[0] != '\0');
        if (name)
                snprintf(name, name_size, "%s", send_stream_check_subvolume(c));
        send_stream_check_free(c);
        return r;
}

/* Every piece size gives the same verdict as feeding all at once. */
static void expect(const struct buf *b, size_t n_parents, int want)
{
        size_t last = b->len < 600 ? b->len : 600; /* then a few large ones */
        for (size_t step = 1; step <= last; step++)
                assert_int_equal(verdict(b, step, n_parents, NULL, 0), want);
        for (size_t step = last; step <= b->len; step += 4093)
                assert_int_equal(verdict(b, step, n_parents, NULL, 0), want);
        assert_int_equal(verdict(b, b->len, n_parents, NULL, 0), want);
}

static struct buf B;

static void test_legitimate_v1(void **state)
{
        start(&B, 1);
        subvol(&B, "snap-0123abcd");
        cmd(&B, CHOWN), str(&B, A_PATH, ""), u64(&B, A_UID, 0), u64(&B, A_GID, 0), done(&B); /* the root */
        path_cmd(&B, MKDIR, "o257-5-0");
        two_paths(&B, RENAME, "o257-5-0", A_PATH_TO, "etc");
        path_cmd(&B, MKFILE, "o258-5-0");
        two_paths(&B, RENAME, "o258-5-0", A_PATH_TO, "etc/passwd");
        write_cmd(&B, "etc/passwd", 50000);
        mode_cmd(&B, "etc/passwd", 04755); /* setuid is data here: the pool is nosuid */
        two_paths(&B, SYMLINK, "etc/l", A_PATH_LINK, "/etc/shadow");
        two_paths(&B, RENAME, "etc/l", A_PATH_TO, "etc/m");
        two_paths(&B, LINK, "etc/n", A_PATH_LINK, "etc/passwd");
        cmd(&B, CHOWN), str(&B, A_PATH, "etc/m"), u64(&B, A_UID, 0), u64(&B, A_GID, 0), done(&B); /* lchown */
        path_cmd(&B, MKFIFO, "fifo");
        cmd(&B, MKNOD), str(&B, A_PATH, "wh"), u64(&B, A_INO, 300), u64(&B, A_MODE, S_IFCHR), u64(&B, A_RDEV, 0), done(&B);
        cmd(&B, SET_XATTR), str(&B, A_PATH, "etc"), str(&B, A_XATTR_NAME, "user.x"), str(&B, A_XATTR_DATA, "y"), done(&B);
        cmd(&B, CLONE), str(&B, A_PATH, "etc/n"), u64(&B, A_FILE_OFFSET, 0), u64(&B, A_CLONE_LEN, 4096);
        attr(&B, A_CLONE_UUID, OWN, 16), u64(&B, A_CLONE_CTRANSID, 7), str(&B, A_CLONE_PATH, "etc/passwd");
        u64(&B, A_CLONE_OFFSET, 0), done(&B);
        path_cmd(&B, UNLINK, "etc/m");
        end(&B);
        expect(&B, 0, 0);
        char name[64];
        assert_int_equal(verdict(&B, 7, 0, name, sizeof(name)), 0);
        assert_string_equal(name, "snap-0123abcd");
        start(&B, 1);
        subvol(&B, "snap-0123456789abcdef0123456789"); /* 31 bytes: the longest id */
        end(&B);
        expect(&B, 0, 0);
}

static void test_legitimate_v2_and_incremental(void **state)
{
        start(&B, 2);
        snapshot(&B, "snap-00ff", PARENT);
        write_cmd(&B, "big", 40000); /* v2: DATA runs to the end of its command */
        cmd(&B, CLONE), str(&B, A_PATH, "big"), u64(&B, A_FILE_OFFSET, 0), u64(&B, A_CLONE_LEN, 4096);
        attr(&B, A_CLONE_UUID, PARENT, 16), u64(&B, A_CLONE_CTRANSID, 5), str(&B, A_CLONE_PATH, "root/x");
        u64(&B, A_CLONE_OFFSET, 0), done(&B);
        cmd(&B, FALLOCATE), str(&B, A_PATH, "big"), put16(&B, 25), put16(&B, 4), put32(&B, 0);
        u64(&B, A_FILE_OFFSET, 0), u64(&B, A_SIZE, 10), done(&B);
        end(&B);
        expect(&B, 1, 0);
        expect(&B, 0, -EINVAL); /* an increment needs the parent named */
        start(&B, 2);
        snapshot(&B, "snap-00ff", OTHER); /* not the parent named */
        end(&B);
        expect(&B, 1, -EINVAL);
}

/* Each hostile stream: refused whatever the pieces. */
static void hostile(void (*body)(struct buf *b))
{
        start(&B, 1);
        subvol(&B, "snap-1");
        body(&B);
        end(&B);
        expect(&B, 1, -EINVAL);
}

static void through_symlink(struct buf *b)
{
        two_paths(b, SYMLINK, "esc", A_PATH_LINK, "/tmp/host");
        path_cmd(b, MKFILE, "esc/pwned");
}
static void through_renamed_dir(struct buf *b)
{
        path_cmd(b, MKDIR, "d");
        two_paths(b, SYMLINK, "d/l", A_PATH_LINK, "/");
        two_paths(b, RENAME, "d", A_PATH_TO, "e");
        write_cmd(b, "e/l/etc/passwd", 10);
}
static void through_link(struct buf *b)
{
        two_paths(b, SYMLINK, "a", A_PATH_LINK, "/");
        two_paths(b, LINK, "b", A_PATH_LINK, "a");
        mode_cmd(b, "b", 04777);
}
static void truncate_symlink(struct buf *b)
{
        two_paths(b, SYMLINK, "a", A_PATH_LINK, "/etc/passwd");
        cmd(b, TRUNCATE), str(b, A_PATH, "a"), u64(b, A_SIZE, 0), done(b);
}
static void dotdot(struct buf *b)
{
        path_cmd(b, MKFILE, "../../../etc/cron.d/x");
}
static void absolute(struct buf *b)
{
        mode_cmd(b, "/etc/shadow", 0777);
}
static void empty_component(struct buf *b)
{
        path_cmd(b, MKFILE, "a//b");
}
static void empty_for_mkfile(struct buf *b)
{
        path_cmd(b, MKFILE, "");
}
static void rename_out(struct buf *b)
{
        two_paths(b, RENAME, "a", A_PATH_TO, "x/../../b");
}
static void clone_path_out(struct buf *b)
{
        cmd(b, CLONE), str(b, A_PATH, "f"), u64(b, A_FILE_OFFSET, 0), u64(b, A_CLONE_LEN, 4096);
        attr(b, A_CLONE_UUID, PARENT, 16), u64(b, A_CLONE_CTRANSID, 5), str(b, A_CLONE_PATH, "../../x");
        u64(b, A_CLONE_OFFSET, 0), done(b);
}
static void clone_foreign(struct buf *b)
{
        cmd(b, CLONE), str(b, A_PATH, "f"), u64(b, A_FILE_OFFSET, 0), u64(b, A_CLONE_LEN, 4096);
        attr(b, A_CLONE_UUID, OTHER, 16), u64(b, A_CLONE_CTRANSID, 5), str(b, A_CLONE_PATH, "x");
        u64(b, A_CLONE_OFFSET, 0), done(b);
}
static void block_device(struct buf *b)
{
        cmd(b, MKNOD), str(b, A_PATH, "sda"), u64(b, A_INO, 300), u64(b, A_MODE, S_IFBLK | 0600);
        u64(b, A_RDEV, makedev(8, 0)), done(b);
}
static void char_device(struct buf *b)
{
        cmd(b, MKNOD), str(b, A_PATH, "mem"), u64(b, A_INO, 300), u64(b, A_MODE, S_IFCHR | 0600);
        u64(b, A_RDEV, makedev(1, 1)), done(b);
}
static void second_subvolume(struct buf *b)
{
        subvol(b, "snap-2");
}
static void repeated_attribute(struct buf *b)
{
        cmd(b, MKFILE), str(b, A_PATH, "ok"), str(b, A_PATH, "../x"), u64(b, A_INO, 1), done(b);
}
static void unknown_command(struct buf *b)
{
        cmd(b, 99), done(b);
}
static void v2_command_in_v1(struct buf *b)
{
        cmd(b, FILEATTR), str(b, A_PATH, "a"), u64(b, 26, 0), done(b);
}
static void trusted_xattr(struct buf *b)
{
        cmd(b, SET_XATTR), str(b, A_PATH, "a"), str(b, A_XATTR_NAME, "trusted.overlay.x"), str(b, A_XATTR_DATA, "y"), done(b);
}
static void nul_in_path(struct buf *b)
{
        cmd(b, MKFILE), attr(b, A_PATH, "a\0/../b", 7), u64(b, A_INO, 1), done(b);
}
static void bad_crc(struct buf *b)
{
        path_cmd(b, MKFILE, "a");
        b->data[b->len - 1] ^= 1;
}
static void missing_attribute(struct buf *b)
{
        cmd(b, WRITE), str(b, A_PATH, "a"), done(b);
}
static void attribute_overrun(struct buf *b)
{
        cmd(b, MKFILE), put16(b, A_PATH), put16(b, 200), put(b, "abc", 3), done(b);
}

static void test_hostile(void **state)
{
        void (*const bodies[])(struct buf *) = {
                through_symlink,   through_renamed_dir, through_link,     truncate_symlink, dotdot,
                absolute,          empty_component,     empty_for_mkfile, rename_out,       clone_path_out,
                clone_foreign,     block_device,        char_device,      second_subvolume, repeated_attribute,
                unknown_command,   v2_command_in_v1,    trusted_xattr,    nul_in_path,      bad_crc,
                missing_attribute, attribute_overrun,
        };
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
                hostile(bodies[i]);
}

static void test_framing(void **state)
{
        /* Not a stream, an unsupported version, a first command that is no subvolume, a
         * subvolume that is no snapshot, bytes after END, no END, an oversized command. */
        start(&B, 1);
        B.data[0] = 'X';
        subvol(&B, "snap-1"), end(&B);
        expect(&B, 0, -EINVAL);
        start(&B, 3);
        subvol(&B, "snap-1"), end(&B);
        expect(&B, 0, -EINVAL);
        start(&B, 1);
        path_cmd(&B, MKDIR, "a"), end(&B);
        expect(&B, 0, -EINVAL);
        const char *names[] = { "sandboxes",
                                "snap-",
                                "snap-A",
                                "snap-a/b",
                                "../snap-a",
                                "snap-a\n",
                                "snap-0123456789abcdef0123456789a" /* 32 bytes: longer than any id */ };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                start(&B, 1);
                subvol(&B, names[i]), end(&B);
                expect(&B, 0, -EINVAL);
        }
        start(&B, 1);
        subvol(&B, "snap-1"), end(&B), put(&B, "x", 1);
        expect(&B, 0, -EINVAL);
        start(&B, 1);
        subvol(&B, "snap-1");
        expect(&B, 0, -EINVAL);
        start(&B, 1);
        subvol(&B, "snap-1");
        put32(&B, SEND_STREAM_CHECK_MAX_CMD + 1), put16(&B, WRITE), put32(&B, 0);
        expect(&B, 0, -EINVAL);
        start(&B, 1); /* empty body after the header */
        expect(&B, 0, -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_legitimate_v1),
                cmocka_unit_test(test_legitimate_v2_and_incremental),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_framing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
