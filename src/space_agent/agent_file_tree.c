/* agent_file_tree: directory listing and recursive removal, by descriptors. */
#include "space_agent/agent_file_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_file_path.h"

/* Stop listing before the reply frame comes near AGENT_FRAME_MAX. */
#define LIST_BYTES_MAX (AGENT_FRAME_MAX - (1u << 20))
#define REMOVE_DEPTH_MAX 256

struct names {
        char **v;
        size_t n, cap;
};

static void names_release(struct names *n)
{
        for (size_t i = 0; i < n->n; i++)
                free(n->v[i]);
        free(n->v);
        *n = (struct names){};
}

static int names_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (fd taken), sorted, without "." and "..". */
static int names_read(int fd, struct names *ret)
{
        DIR *d = fdopendir(fd);
        struct dirent *de;

        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        *ret = (struct names){};
        errno = 0;
        while ((de = readdir(d))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (ret->n == ret->cap) {
                        size_t cap = ret->cap ? ret->cap * 2 : 64;
                        char **v = realloc(ret->v, cap * sizeof *v);
                        if (!v)
                                goto oom;
                        ret->v = v;
                        ret->cap = cap;
                }
                if (!(ret->v[ret->n] = strdup(de->d_name)))
                        goto oom;
                ret->n++;
        }
        closedir(d);
        if (ret->n > 1)
                qsort(ret->v, ret->n, sizeof *ret->v, names_cmp);
        return 0;
oom:
        closedir(d);
        names_release(ret);
        return -ENOMEM;
}

struct list_state {
        struct agent_frame_writer w;
        struct agent_file_names *names;
        bool meta; /* FILE_WITH_META */
        size_t count;
        bool truncated;
};

static void list_dir(struct list_state *ls, int dir, const char *path, unsigned depth_left)
{
        struct names names;
        int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || names_read(fd, &names) < 0)
                return; /* an unreadable subdirectory is listed but not entered */
        for (size_t i = 0; i < names.n && !ls->truncated; i++) {
                char child[PATH_MAX];
                struct stat st;
                if (snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") ? path : "", names.v[i]) >= (int)sizeof child)
                        continue;
                if (fstatat(dir, names.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                if (ls->count >= AGENT_FILE_LIST_MAX || ls->w.len >= LIST_BYTES_MAX) {
                        ls->truncated = true;
                        break;
                }
                agent_files_put_entry(&ls->w, ls->names, child, &st, dir, names.v[i], ls->meta);
                ls->count++;
                if (S_ISDIR(st.st_mode) && depth_left > 1) {
                        _cleanup_close_ int sub = openat(dir, names.v[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                list_dir(ls, sub, child, depth_left - 1);
                }
        }
        names_release(&names);
}

int agent_file_tree_list(struct agent_conn *c, struct agent_file_request *req)
{
        struct list_state ls = { .names = &req->names, .meta = req->with_meta };
        _cleanup_close_ int dir = agent_file_open(req->path, O_PATH | O_DIRECTORY, 0, true);

        if (dir < 0)
                return dir;
        /* Reading the directory itself must be allowed for the user. */
        int probe = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (probe < 0)
                return -errno;
        close(probe);
        agent_frame_writer_begin(&ls.w, AGENT_MSG_FILE_ENTRIES);
        list_dir(&ls, dir, req->path, req->depth);
        if (ls.truncated)
                agent_frame_writer_put_u8(&ls.w, AGENT_F_FILE_TRUNCATED, 1);
        agent_conn_reply(c, &ls.w);
        return 0;
}

/* Empties the directory name in dir (not crossing to another filesystem), then removes it. */
static int remove_tree(int dir, const char *name, dev_t dev, int depth)
{
        struct names names;
        struct stat st;

        if (depth > REMOVE_DEPTH_MAX)
                return -ELOOP;
        int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || st.st_dev != dev) {
                close(fd);
                return -EBUSY; /* a mount point */
        }
        _cleanup_close_ int sub = dup(fd);
        int r = names_read(fd, &names);
        if (r < 0)
                return r;
        if (sub < 0) {
                names_release(&names);
                return -errno;
        }
        for (size_t i = 0; i < names.n && r == 0; i++) {
                struct stat cst;
                if (fstatat(sub, names.v[i], &cst, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(cst.st_mode))
                        r = remove_tree(sub, names.v[i], dev, depth + 1);
                else if (unlinkat(sub, names.v[i], 0) < 0 && errno != ENOENT)
                        r = -errno;
        }
        names_release(&names);
        if (r < 0)
                return r;
        return unlinkat(dir, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int agent_file_tree_remove(struct agent_file_request *req)
{
        const char *name;
        struct stat st;

        if (strcmp(req->path, "/") == 0)
                return -EBUSY;
        _cleanup_close_ int dir = agent_file_open_parent(req->path, &name);
        if (dir < 0)
                return dir;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dir, name, 0) < 0 ? -errno : 0;
        struct stat parent;
        if (fstat(dir, &parent) < 0)
                return -errno;
        if (parent.st_dev != st.st_dev)
                return -EBUSY; /* a mount point (/proc, /tmp, /dev): never emptied */
        if (!req->recursive)
                return unlinkat(dir, name, AT_REMOVEDIR) < 0 ? -errno : 0;
        return remove_tree(dir, name, st.st_dev, 0);
}
