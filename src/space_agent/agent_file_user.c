/* agent_file_user: passwd/group lookups inside the root and setfsuid/setfsgid. */
#include "space_agent/agent_file_user.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_file_path.h"

#define NAMES_FILE_MAX (4u << 20)

static char *read_small(const char *path)
{
        _cleanup_close_ int fd = agent_file_open(path, O_RDONLY | O_NONBLOCK, 0, true);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > NAMES_FILE_MAX)
                return calloc(1, 1);
        char *buf = malloc((size_t)st.st_size + 1);
        size_t got = 0;
        if (!buf)
                return NULL;
        while (got < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = 0;
        return buf;
}

static int names_load(struct agent_file_names *n)
{
        if (n->loaded)
                return 0;
        n->passwd = read_small("/etc/passwd");
        n->group = read_small("/etc/group");
        if (!n->passwd || !n->group) {
                agent_file_names_release(n);
                return -ENOMEM;
        }
        n->loaded = true;
        return 0;
}

void agent_file_names_release(struct agent_file_names *n)
{
        free(n->passwd);
        free(n->group);
        *n = (struct agent_file_names){};
}

/* Field i (0-based) of a ':'-separated line [line, end). */
static bool line_field(const char *line, const char *end, int i, const char **ret, size_t *ret_len)
{
        const char *p = line;

        for (; i > 0; i--) {
                p = memchr(p, ':', (size_t)(end - p));
                if (!p)
                        return false;
                p++;
        }
        const char *q = memchr(p, ':', (size_t)(end - p));
        *ret = p;
        *ret_len = (size_t)((q ? q : end) - p);
        return true;
}

static bool parse_id(const char *s, size_t len, unsigned long *ret)
{
        unsigned long v = 0;

        if (len == 0 || len > 10)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned long)(s[i] - '0');
        }
        if (v > 0xfffffffeul)
                return false;
        *ret = v;
        return true;
}

/* Finds the line whose field key_field equals key (by name) or whose id field equals id. */
static bool table_find(const char *table, int key_field, const char *key, size_t key_len, const char **ret_line,
                       const char **ret_end)
{
        for (const char *line = table; *line;) {
                const char *end = strchr(line, '\n');
                if (!end)
                        end = line + strlen(line);
                const char *f;
                size_t flen;
                if (line_field(line, end, key_field, &f, &flen) && flen == key_len && !memcmp(f, key, flen)) {
                        *ret_line = line;
                        *ret_end = end;
                        return true;
                }
                line = *end ? end + 1 : end;
        }
        return false;
}

int agent_file_names_user(struct agent_file_names *n, const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
        const char *line, *end, *f;
        size_t flen;
        unsigned long uid, gid;
        int r = names_load(n);

        if (r < 0)
                return r;
        size_t len = strlen(name);
        if (parse_id(name, len, &uid)) {
                /* A number: that uid, with its passwd group when it has a line. */
                gid = uid;
                if (table_find(n->passwd, 2, name, len, &line, &end) && line_field(line, end, 3, &f, &flen))
                        (void)parse_id(f, flen, &gid);
        } else {
                if (len == 0 || strchr(name, ':') || strchr(name, '\n') || !table_find(n->passwd, 0, name, len, &line, &end))
                        return -ESRCH;
                if (!line_field(line, end, 2, &f, &flen) || !parse_id(f, flen, &uid) || !line_field(line, end, 3, &f, &flen) ||
                    !parse_id(f, flen, &gid))
                        return -ESRCH;
        }
        *ret_uid = (uid_t)uid;
        *ret_gid = (gid_t)gid;
        return 0;
}

static void id_name(const char *table, unsigned long id, char *buf, size_t size)
{
        char key[16];
        const char *line, *end, *f;
        size_t flen;

        buf[0] = 0;
        snprintf(key, sizeof key, "%lu", id);
        if (table && table_find(table, 2, key, strlen(key), &line, &end) && line_field(line, end, 0, &f, &flen) && flen < size) {
                memcpy(buf, f, flen);
                buf[flen] = 0;
        }
}

void agent_file_names_uid(struct agent_file_names *n, uid_t uid, char *buf, size_t size)
{
        buf[0] = 0;
        if (names_load(n) == 0)
                id_name(n->passwd, uid, buf, size);
}

void agent_file_names_gid(struct agent_file_names *n, gid_t gid, char *buf, size_t size)
{
        buf[0] = 0;
        if (names_load(n) == 0)
                id_name(n->group, gid, buf, size);
}

/* Without setfsuid (gVisor), the thread's own effective ids serve: raw system calls change
 * only the calling thread, as setfsuid does, and the real and saved ids (root) bring the
 * effective ones back. */
static bool by_effective_ids;

int agent_file_user_become(uid_t uid, gid_t gid)
{
        if (!by_effective_ids) {
                (void)setfsgid(gid);
                (void)setfsuid(uid);
                /* setfsuid reports nothing: ask for the current value back. */
                if ((uid_t)setfsuid((uid_t)-1) == uid && (gid_t)setfsgid((gid_t)-1) == gid)
                        return 0;
                agent_file_user_restore();
                /* A working setfsuid answers with the current fsuid: this was a real refusal. */
                if ((uid_t)setfsuid((uid_t)-1) == geteuid())
                        return -EPERM;
                by_effective_ids = true;
        }
        if (syscall(SYS_setresgid, (gid_t)-1, gid, (gid_t)-1) < 0 || syscall(SYS_setresuid, (uid_t)-1, uid, (uid_t)-1) < 0) {
                agent_file_user_restore();
                return -EPERM;
        }
        return 0;
}

void agent_file_user_restore(void)
{
        if (by_effective_ids) {
                uid_t ruid, euid, suid;
                gid_t rgid, egid, sgid;
                if (getresuid(&ruid, &euid, &suid) == 0)
                        (void)syscall(SYS_setresuid, (uid_t)-1, suid, (uid_t)-1);
                if (getresgid(&rgid, &egid, &sgid) == 0)
                        (void)syscall(SYS_setresgid, (gid_t)-1, sgid, (gid_t)-1);
                return;
        }
        (void)setfsuid(geteuid());
        (void)setfsgid(getegid());
}
