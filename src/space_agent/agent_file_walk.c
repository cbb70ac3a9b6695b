#include "space_agent/agent_file_walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAX_DEPTH 256
#define MAX_LINKS 40
#define PROC_SUPER_MAGIC 0x9fa0

struct walk {
        int root;
        int fds[MAX_DEPTH]; /* the directories held below the root; fds[n-1] is the current one */
        int n;
        char rest[PATH_MAX * 2]; /* what is left to resolve */
        int links;
};

static int current(const struct walk *w)
{
        return w->n ? w->fds[w->n - 1] : w->root;
}

static void pop_all(struct walk *w)
{
        while (w->n)
                close(w->fds[--w->n]);
}

/* Replaces the head of rest (name, which ended at tail) with the link's text. */
static int splice_link(struct walk *w, int dir, const char *name, const char *tail)
{
        char target[PATH_MAX];
        struct statfs fs;
        if (++w->links > MAX_LINKS)
                return -ELOOP;
        if (fstatfs(dir, &fs) < 0)
                return -errno;
        ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
        if (n < 0)
                return -errno;
        target[n] = 0;
        /* On /proc only the plain links are followed (self, thread-self, mounts: relative
         * names). Its magic ones (/proc/self/root, /proc/N/fd/M, exe, ns/…) show an absolute
         * path or "type:[…]" that is not where they lead: RESOLVE_NO_MAGICLINKS refuses them. */
        if (fs.f_type == PROC_SUPER_MAGIC && (target[0] == '/' || strchr(target, ':')))
                return -ELOOP;
        size_t tail_len = strlen(tail);
        if ((size_t)n + 1 + tail_len + 1 > sizeof(w->rest))
                return -ENAMETOOLONG;
        char joined[sizeof(w->rest)];
        memcpy(joined, target, (size_t)n);
        joined[n] = '/';
        memcpy(joined + n + 1, tail, tail_len + 1);
        memcpy(w->rest, joined, (size_t)n + 1 + tail_len + 1);
        if (target[0] == '/')
                pop_all(w); /* absolute: from the root */
        return 0;
}

int agent_file_walk_open(int root, const char *rel, int flags, mode_t mode, bool follow)
{
        struct walk w = { .root = root };
        if (strlen(rel) >= sizeof(w.rest))
                return -ENAMETOOLONG;
        strcpy(w.rest, rel);
        int r;
        for (;;) {
                char *p = w.rest;
                while (*p == '/')
                        p++;
                char *end = strchr(p, '/');
                char name[NAME_MAX + 1];
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (len > NAME_MAX) {
                        r = -ENAMETOOLONG;
                        break;
                }
                memcpy(name, p, len);
                name[len] = 0;
                const char *tail = end ? end : p + len;
                while (*tail == '/')
                        tail++;
                bool last = *tail == 0;
                if (len == 0 || strcmp(name, ".") == 0) {
                        if (last) {
                                r = openat(current(&w), ".", flags | O_CLOEXEC, mode);
                                r = r < 0 ? -errno : r;
                                break;
                        }
                        memmove(w.rest, tail, strlen(tail) + 1);
                        continue;
                }
                if (strcmp(name, "..") == 0) {
                        if (w.n)
                                close(w.fds[--w.n]);
                        if (last) {
                                r = openat(current(&w), ".", flags | O_CLOEXEC, mode);
                                r = r < 0 ? -errno : r;
                                break;
                        }
                        memmove(w.rest, tail, strlen(tail) + 1);
                        continue;
                }
                int dir = current(&w);
                struct stat st;
                bool exists = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
                if (exists && S_ISLNK(st.st_mode) && (!last || follow)) {
                        if ((r = splice_link(&w, dir, name, tail)) < 0)
                                break;
                        continue;
                }
                if (last) {
                        r = openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
                        r = r < 0 ? -errno : r;
                        break;
                }
                if (w.n >= MAX_DEPTH) {
                        r = -ENAMETOOLONG;
                        break;
                }
                int fd = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        /* a symlink put there since the fstatat: go round again */
                        if (errno == ELOOP && ++w.links <= MAX_LINKS) /* splice_link checks it next round */
                                continue;
                        r = -errno;
                        break;
                }
                w.fds[w.n++] = fd;
                memmove(w.rest, tail, strlen(tail) + 1);
        }
        pop_all(&w);
        return r;
}
