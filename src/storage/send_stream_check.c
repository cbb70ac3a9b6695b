/* A streaming validator of btrfs send streams (see send_stream_check.h for the rules).
 * Layout of a stream (little endian): "btrfs-stream\0" + u32 version, then commands of
 * { u32 len; u16 cmd; u32 crc32c } + len bytes of attributes { u16 type; u16 len; data }
 * (in v2 the DATA attribute has no length: it runs to the end of the command). The CRC is
 * computed over the header (with the crc field zero) and the attributes. */
#include "storage/send_stream_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "storage/send_path_set.h"

enum {
        C_SUBVOL = 1,
        C_SNAPSHOT,
        C_MKFILE,
        C_MKDIR,
        C_MKNOD,
        C_MKFIFO,
        C_MKSOCK,
        C_SYMLINK,
        C_RENAME,
        C_LINK,
        C_UNLINK,
        C_RMDIR,
        C_SET_XATTR,
        C_REMOVE_XATTR,
        C_WRITE,
        C_CLONE,
        C_TRUNCATE,
        C_CHMOD,
        C_CHOWN,
        C_UTIMES,
        C_END,
        C_UPDATE_EXTENT,
        C_MAX_V1 = C_UPDATE_EXTENT,
        C_FALLOCATE,
        C_FILEATTR,
        C_ENCODED_WRITE,
        C_MAX_V2 = C_ENCODED_WRITE,
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
        A_CLONE_LEN,
        A_MAX_V1 = A_CLONE_LEN,
        A_FALLOCATE_MODE,
        A_FILEATTR,
        A_UNENCODED_FILE_LEN,
        A_UNENCODED_LEN,
        A_UNENCODED_OFFSET,
        A_COMPRESSION,
        A_ENCRYPTION,
        A_MAX_V2 = A_ENCRYPTION,
};

#define BIT(a) (1ull << (a))
#define STREAM_HEADER_SIZE 17 /* "btrfs-stream\0" + u32 version */
#define CMD_HEADER_SIZE 10

/* The attributes each command needs (receive refuses a command that lacks one, but
 * checking here keeps the rules below from reading attributes that are not there). */
static const uint64_t required[C_MAX_V2 + 1] = {
        [C_SUBVOL] = BIT(A_PATH) | BIT(A_UUID) | BIT(A_CTRANSID),
        [C_SNAPSHOT] = BIT(A_PATH) | BIT(A_UUID) | BIT(A_CTRANSID) | BIT(A_CLONE_UUID) | BIT(A_CLONE_CTRANSID),
        [C_MKFILE] = BIT(A_PATH) | BIT(A_INO),
        [C_MKDIR] = BIT(A_PATH) | BIT(A_INO),
        [C_MKNOD] = BIT(A_PATH) | BIT(A_INO) | BIT(A_MODE) | BIT(A_RDEV),
        [C_MKFIFO] = BIT(A_PATH) | BIT(A_INO),
        [C_MKSOCK] = BIT(A_PATH) | BIT(A_INO),
        [C_SYMLINK] = BIT(A_PATH) | BIT(A_INO) | BIT(A_PATH_LINK),
        [C_RENAME] = BIT(A_PATH) | BIT(A_PATH_TO),
        [C_LINK] = BIT(A_PATH) | BIT(A_PATH_LINK),
        [C_UNLINK] = BIT(A_PATH),
        [C_RMDIR] = BIT(A_PATH),
        [C_SET_XATTR] = BIT(A_PATH) | BIT(A_XATTR_NAME) | BIT(A_XATTR_DATA),
        [C_REMOVE_XATTR] = BIT(A_PATH) | BIT(A_XATTR_NAME),
        [C_WRITE] = BIT(A_PATH) | BIT(A_FILE_OFFSET) | BIT(A_DATA),
        [C_CLONE] = BIT(A_PATH) | BIT(A_FILE_OFFSET) | BIT(A_CLONE_LEN) | BIT(A_CLONE_UUID) | BIT(A_CLONE_CTRANSID) |
                BIT(A_CLONE_PATH) | BIT(A_CLONE_OFFSET),
        [C_TRUNCATE] = BIT(A_PATH) | BIT(A_SIZE),
        [C_CHMOD] = BIT(A_PATH) | BIT(A_MODE),
        [C_CHOWN] = BIT(A_PATH) | BIT(A_UID) | BIT(A_GID),
        [C_UTIMES] = BIT(A_PATH) | BIT(A_ATIME) | BIT(A_MTIME) | BIT(A_CTIME),
        [C_END] = 0,
        [C_UPDATE_EXTENT] = BIT(A_PATH) | BIT(A_FILE_OFFSET) | BIT(A_SIZE),
        [C_FALLOCATE] = BIT(A_PATH) | BIT(A_FALLOCATE_MODE) | BIT(A_FILE_OFFSET) | BIT(A_SIZE),
        [C_FILEATTR] = BIT(A_PATH) | BIT(A_FILEATTR),
        [C_ENCODED_WRITE] = BIT(A_PATH) | BIT(A_FILE_OFFSET) | BIT(A_UNENCODED_FILE_LEN) | BIT(A_UNENCODED_LEN) |
                BIT(A_UNENCODED_OFFSET) | BIT(A_DATA),
};

/* Commands that act on a symlink itself rather than through it (receive uses rename,
 * link, unlink, lchown, utimensat(AT_SYMLINK_NOFOLLOW), lsetxattr): they may name one. */
#define ON_SYMLINK_OK \
        (BIT(C_RENAME) | BIT(C_LINK) | BIT(C_UNLINK) | BIT(C_CHOWN) | BIT(C_UTIMES) | BIT(C_SET_XATTR) | BIT(C_REMOVE_XATTR))

struct attr {
        const uint8_t *data;
        uint32_t len;
};

enum phase { PHASE_HEADER, PHASE_COMMANDS, PHASE_DONE, PHASE_REFUSED };

struct send_stream_check {
        enum phase phase;
        uint32_t version;
        uint8_t *buf; /* the command being assembled */
        size_t have, need, cap;
        uint64_t commands;
        uint8_t parent_uuids[2][16];
        size_t n_parent_uuids;
        uint8_t uuid[16]; /* of the subvolume the stream makes */
        bool incremental;
        char subvolume[64];
        struct send_path_set *symlinks; /* made by this stream */
        char error[256];
};

static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;
                for (int k = 0; k < 8; k++)
                        c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
                crc32c_table[i] = c;
        }
}

static uint32_t crc32c_bytes(uint32_t crc, const uint8_t *p, size_t n)
{
        while (n--)
                crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
        return crc;
}

#if defined(__x86_64__)
/* The SSE 4.2 crc32 instruction is this very CRC (Castagnoli, reflected, no inversion). */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
        uint64_t c = crc;
        for (; n >= 8; p += 8, n -= 8) {
                uint64_t v;
                memcpy(&v, p, 8);
                c = __builtin_ia32_crc32di(c, v);
        }
        return crc32c_bytes((uint32_t)c, p, n);
}
#endif

/* btrfs send's crc32c: seed 0, no final inversion. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
        if (__builtin_cpu_supports("sse4.2"))
                return crc32c_sse42(crc, p, n);
#endif
        return crc32c_bytes(crc, p, n);
}

static uint16_t le16(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t le32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p)
{
        return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

__attribute__((format(printf, 2, 3))) static int refuse(struct send_stream_check *c, const char *fmt, ...)
{
        va_list ap;
        int n = snprintf(c->error, sizeof(c->error), "command %llu: ", (unsigned long long)c->commands + 1);
        va_start(ap, fmt);
        vsnprintf(c->error + n, sizeof(c->error) - (size_t)n, fmt, ap);
        va_end(ap);
        c->phase = PHASE_REFUSED;
        return -EINVAL;
}

int send_stream_check_new(const uint8_t (*parent_uuids)[16], size_t n_parent_uuids, struct send_stream_check **ret)
{
        if (n_parent_uuids > 2)
                return -EINVAL;
        if (!crc32c_table[1])
                crc32c_init(); /* idempotent: racing threads write the same values */
        struct send_stream_check *c = calloc(1, sizeof(*c));
        if (!c || !(c->buf = malloc(c->cap = 4096)) || send_path_set_new(SEND_STREAM_CHECK_MAX_SYMLINK_BYTES, &c->symlinks) < 0) {
                send_stream_check_free(c);
                return -ENOMEM;
        }
        memcpy(c->parent_uuids, parent_uuids, n_parent_uuids * 16);
        c->n_parent_uuids = n_parent_uuids;
        c->need = STREAM_HEADER_SIZE;
        *ret = c;
        return 0;
}

void send_stream_check_free(struct send_stream_check *c)
{
        if (!c)
                return;
        send_path_set_free(c->symlinks);
        free(c->buf);
        free(c);
}

/* Commands that may name the subvolume's own root directory, as the empty path. */
#define ROOT_OK (BIT(C_CHOWN) | BIT(C_CHMOD) | BIT(C_UTIMES) | BIT(C_SET_XATTR) | BIT(C_REMOVE_XATTR) | BIT(C_FILEATTR))

/* A path below the subvolume: relative, components neither empty nor "." nor "..". */
static bool path_ok(const struct attr *a)
{
        if (a->len == 0 || a->len >= 4096 || memchr(a->data, '\0', a->len))
                return false;
        const char *p = (const char *)a->data, *end = p + a->len;
        while (p <= end) {
                const char *slash = memchr(p, '/', (size_t)(end - p));
                size_t n = (size_t)((slash ? slash : end) - p);
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!slash)
                        break;
                p = slash + 1;
        }
        return true;
}

/* Goes through a symlink of this stream: one of its proper prefixes is one. */
static bool through_symlink(const struct send_stream_check *c, const struct attr *a)
{
        return send_path_set_has_prefix(c->symlinks, (const char *)a->data, a->len);
}

/* A bounded, printable copy of stream bytes for messages (they end up in JSON). */
static const char *shown(const struct attr *a, char *buf, size_t size)
{
        size_t n = 0;
        for (uint32_t i = 0; i < a->len && n + 4 < size; i++) {
                uint8_t ch = a->data[i];
                buf[n++] = ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' ? (char)ch : '?';
        }
        if (a->len > 0 && n + 4 >= size)
                buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
        buf[n] = '\0';
        return buf;
}

static bool is_symlink(const struct send_stream_check *c, const struct attr *a)
{
        return send_path_set_contains(c->symlinks, (const char *)a->data, a->len);
}

static bool snapshot_name_ok(const struct attr *a)
{
        if (a->len <= 5 || a->len > 31 || memcmp(a->data, "snap-", 5) != 0) /* ids fit struct snapshot */
                return false;
        for (uint32_t i = 5; i < a->len; i++) {
                uint8_t ch = a->data[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
                        return false;
        }
        return true;
}

static bool xattr_name_ok(const struct attr *a)
{
        static const char *const allowed[] = { "user.", "security.", "system.posix_acl_access", "system.posix_acl_default",
                                               "btrfs.compression" };
        if (a->len == 0 || a->len > 255 || memchr(a->data, '\0', a->len))
                return false;
        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
                size_t n = strlen(allowed[i]);
                if (a->len >= n && memcmp(a->data, allowed[i], n) == 0)
                        return n == a->len || allowed[i][n - 1] == '.';
        }
        return false;
}

static bool known_uuid(const struct send_stream_check *c, const struct attr *a, bool own_too)
{
        if (a->len != 16)
                return false;
        if (own_too && memcmp(a->data, c->uuid, 16) == 0)
                return true;
        for (size_t i = 0; i < c->n_parent_uuids; i++)
                if (memcmp(a->data, c->parent_uuids[i], 16) == 0)
                        return true;
        return false;
}

/* Splits the attributes of the assembled command; refuses repeats (receive keeps the last
 * one, which would let a check see a different value than receive applies). */
static int parse_attrs(struct send_stream_check *c, struct attr *attrs, uint64_t *ret_present)
{
        const uint8_t *p = c->buf + CMD_HEADER_SIZE;
        size_t left = c->have - CMD_HEADER_SIZE;
        unsigned max = c->version >= 2 ? A_MAX_V2 : A_MAX_V1;
        uint64_t present = 0;
        while (left > 0) {
                if (left < 2)
                        return refuse(c, "truncated attribute");
                uint16_t type = le16(p);
                p += 2, left -= 2;
                if (type == 0 || type > max)
                        return refuse(c, "unknown attribute %u", type);
                if (present & BIT(type))
                        return refuse(c, "attribute %u repeated", type);
                uint32_t len;
                if (c->version >= 2 && type == A_DATA) {
                        len = (uint32_t)left;
                } else {
                        if (left < 2)
                                return refuse(c, "truncated attribute");
                        len = le16(p);
                        p += 2, left -= 2;
                }
                if (len > left)
                        return refuse(c, "attribute %u longer than its command", type);
                attrs[type] = (struct attr){ p, len };
                present |= BIT(type);
                p += len, left -= len;
        }
        *ret_present = present;
        return 0;
}

static int check_paths(struct send_stream_check *c, unsigned cmd, const struct attr *attrs, uint64_t present)
{
        static const unsigned path_attrs[] = { A_PATH, A_PATH_TO, A_PATH_LINK, A_CLONE_PATH };
        for (size_t i = 0; i < sizeof(path_attrs) / sizeof(path_attrs[0]); i++) {
                unsigned t = path_attrs[i];
                if (!(present & BIT(t)))
                        continue;
                const struct attr *a = &attrs[t];
                if (cmd == C_SYMLINK && t == A_PATH_LINK) {
                        /* The link's target is data, resolved only inside a sandbox. */
                        if (a->len == 0 || a->len >= 4096 || memchr(a->data, '\0', a->len))
                                return refuse(c, "bad symlink target");
                        continue;
                }
                char show[84];
                if (a->len == 0 && t == A_PATH && (ROOT_OK & BIT(cmd)))
                        continue;
                if (!path_ok(a))
                        return refuse(c, "path \"%s\" is not a plain relative path", shown(a, show, sizeof(show)));
                if (t == A_CLONE_PATH && memcmp(attrs[A_CLONE_UUID].data, c->uuid, 16) != 0)
                        continue; /* a path in the parent: its symlinks are not ours to know */
                if (through_symlink(c, a))
                        return refuse(c, "path \"%s\" goes through a symlink", shown(a, show, sizeof(show)));
                bool on_itself = (t == A_PATH && (ON_SYMLINK_OK & BIT(cmd))) || (t == A_PATH_LINK && cmd == C_LINK) ||
                        (t == A_PATH_TO && cmd == C_RENAME);
                if (!on_itself && is_symlink(c, a))
                        return refuse(c, "command %u would follow the symlink \"%s\"", cmd, shown(a, show, sizeof(show)));
        }
        return 0;
}

static int track_symlinks(struct send_stream_check *c, unsigned cmd, const struct attr *attrs)
{
        const struct attr *path = &attrs[A_PATH];
        int r = 0;
        switch (cmd) {
        case C_SYMLINK:
                if (send_path_set_count(c->symlinks) >= SEND_STREAM_CHECK_MAX_SYMLINKS)
                        return refuse(c, "more than %u symlinks", SEND_STREAM_CHECK_MAX_SYMLINKS);
                r = send_path_set_add(c->symlinks, (const char *)path->data, path->len);
                break;
        case C_LINK:
                if (is_symlink(c, &attrs[A_PATH_LINK]))
                        r = send_path_set_add(c->symlinks, (const char *)path->data, path->len);
                break;
        case C_UNLINK:
                send_path_set_remove(c->symlinks, (const char *)path->data, path->len);
                break;
        case C_RENAME: {
                const struct attr *to = &attrs[A_PATH_TO];
                send_path_set_remove(c->symlinks, (const char *)to->data, to->len); /* replaced */
                r = send_path_set_move(c->symlinks, (const char *)path->data, path->len, (const char *)to->data, to->len);
                break;
        }
        default:
                break;
        }
        if (r == -E2BIG)
                return refuse(c, "more than %u bytes of symlink paths", SEND_STREAM_CHECK_MAX_SYMLINK_BYTES);
        return r < 0 ? refuse(c, "out of memory tracking symlinks") : 0;
}

static int check_command(struct send_stream_check *c)
{
        uint32_t crc = le32(c->buf + 6);
        memset(c->buf + 6, 0, 4);
        if (crc32c(0, c->buf, c->have) != crc)
                return refuse(c, "CRC mismatch");
        unsigned cmd = le16(c->buf + 4);
        if (cmd == 0 || cmd > (c->version >= 2 ? C_MAX_V2 : C_MAX_V1))
                return refuse(c, "unknown command %u", cmd);
        struct attr attrs[A_MAX_V2 + 1] = { 0 };
        uint64_t present = 0;
        if (parse_attrs(c, attrs, &present) < 0)
                return -EINVAL;
        if ((present & required[cmd]) != required[cmd])
                return refuse(c, "command %u lacks an attribute", cmd);
        bool first = c->commands == 0;
        if ((cmd == C_SUBVOL || cmd == C_SNAPSHOT) != first)
                return refuse(c, first ? "the stream must start with its subvolume" : "a second subvolume");
        if (first) {
                char show[68];
                if (!snapshot_name_ok(&attrs[A_PATH]))
                        return refuse(c, "the stream makes \"%s\", not a space snapshot",
                                      shown(&attrs[A_PATH], show, sizeof(show)));
                if (attrs[A_UUID].len != 16)
                        return refuse(c, "bad UUID");
                memcpy(c->uuid, attrs[A_UUID].data, 16);
                snprintf(c->subvolume, sizeof(c->subvolume), "%.*s", (int)attrs[A_PATH].len, (const char *)attrs[A_PATH].data);
                c->incremental = cmd == C_SNAPSHOT;
                if (cmd == C_SNAPSHOT && !known_uuid(c, &attrs[A_CLONE_UUID], false))
                        return refuse(c,
                                      c->n_parent_uuids ? "the stream's parent is not the parent snapshot named"
                                                        : "an incremental stream needs parent_snapshot_id");
                return 0;
        }
        if (cmd == C_END) {
                c->phase = PHASE_DONE;
                return 0;
        }
        if (cmd == C_MKNOD) {
                if (attrs[A_MODE].len != 8 || attrs[A_RDEV].len != 8)
                        return refuse(c, "bad mknod attributes");
                uint64_t type = le64(attrs[A_MODE].data) & S_IFMT, rdev = le64(attrs[A_RDEV].data);
                if (!(type == S_IFIFO || type == S_IFSOCK || (type == S_IFCHR && rdev == 0)))
                        return refuse(c, "device node (mode %llo, rdev %llu)", (unsigned long long)type,
                                      (unsigned long long)rdev);
        }
        if (cmd == C_CLONE && !known_uuid(c, &attrs[A_CLONE_UUID], true))
                return refuse(c, "clone from a subvolume that is neither the stream's nor its parent");
        char show[68];
        if ((cmd == C_SET_XATTR || cmd == C_REMOVE_XATTR) && !xattr_name_ok(&attrs[A_XATTR_NAME]))
                return refuse(c, "extended attribute \"%s\" not allowed", shown(&attrs[A_XATTR_NAME], show, sizeof(show)));
        if (check_paths(c, cmd, attrs, present) < 0)
                return -EINVAL;
        return track_symlinks(c, cmd, attrs);
}

int send_stream_check_feed(struct send_stream_check *c, const void *data, size_t len)
{
        const uint8_t *p = data;
        if (c->phase == PHASE_REFUSED)
                return -EINVAL;
        while (len > 0) {
                if (c->phase == PHASE_DONE)
                        return refuse(c, "data after the end of the stream");
                size_t n = c->need - c->have < len ? c->need - c->have : len;
                memcpy(c->buf + c->have, p, n);
                c->have += n, p += n, len -= n;
                if (c->have < c->need)
                        break;
                if (c->phase == PHASE_HEADER) {
                        if (memcmp(c->buf, "btrfs-stream", 13) != 0)
                                return refuse(c, "not a btrfs send stream");
                        c->version = le32(c->buf + 13);
                        if (c->version < 1 || c->version > 2)
                                return refuse(c, "send stream version %u is not supported", c->version);
                        c->phase = PHASE_COMMANDS;
                        c->have = 0, c->need = CMD_HEADER_SIZE;
                        continue;
                }
                if (c->need == CMD_HEADER_SIZE) {
                        uint32_t clen = le32(c->buf);
                        if (clen > SEND_STREAM_CHECK_MAX_CMD)
                                return refuse(c, "a command of %u bytes (at most %u)", clen, SEND_STREAM_CHECK_MAX_CMD);
                        c->need += clen;
                        if (c->need > c->cap) {
                                uint8_t *grown = realloc(c->buf, c->need);
                                if (!grown) {
                                        refuse(c, "out of memory");
                                        return -ENOMEM;
                                }
                                c->buf = grown, c->cap = c->need;
                        }
                        if (clen > 0)
                                continue;
                }
                if (check_command(c) < 0)
                        return -EINVAL;
                c->commands++;
                c->have = 0, c->need = CMD_HEADER_SIZE;
        }
        return 0;
}

int send_stream_check_finish(struct send_stream_check *c)
{
        if (c->phase == PHASE_REFUSED)
                return -EINVAL;
        if (c->phase != PHASE_DONE)
                return refuse(c, "the stream ends before its END command");
        return 0;
}

const char *send_stream_check_error(const struct send_stream_check *c)
{
        return c->error;
}
const char *send_stream_check_subvolume(const struct send_stream_check *c)
{
        return c->subvolume;
}
bool send_stream_check_incremental(const struct send_stream_check *c)
{
        return c->incremental;
}
