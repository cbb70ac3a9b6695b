/* agent_file_watch: inotify -> FILE_EVENT frames on the watching connection. */
#include "space_agent/agent_file_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_file_path.h"
#include "space_agent/agent_files.h"
#include "space_agent/agent_file_transfer.h"
#include "space_agent/agent_file_user.h"

#define WATCH_DIRS_MAX 8192
#define WATCH_OUT_MAX (1u << 20)
#define WATCH_MASK                                                                                                     \
        (IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | \
         IN_ONLYDIR | IN_EXCL_UNLINK)

struct watch_dir {
        int wd;
        char *path;
};

struct agent_file_watch {
        struct agent_conn *conn;
        struct agent_watch inotify;
        struct watch_dir *dirs;
        size_t n_dirs, cap_dirs;
        int root_wd;
        bool recursive, as_user, overflowed;
        bool with_entry;        /* FILE_WITH_ENTRY: an event carries its path's entry */
        bool ending;            /* the watched directory is gone: close once the queue is sent */
        uint32_t upload_cookie; /* of an upload's temporary file renamed away: its IN_MOVED_TO is a write */
        uid_t fsuid;
        gid_t fsgid;
        uint8_t *out;
        size_t out_len, out_off, out_cap;
};

static void watch_append(struct agent_file_watch *w, struct agent_frame_writer *f)
{
        if (agent_frame_writer_finish(f) < 0)
                goto out;
        if (w->out_len - w->out_off + f->len > WATCH_OUT_MAX) {
                w->overflowed = true;
                goto out;
        }
        if (w->out_off && w->out_off == w->out_len)
                w->out_off = w->out_len = 0;
        if (w->out_len + f->len > w->out_cap) {
                size_t cap = w->out_cap ? w->out_cap : 4096;
                while (cap < w->out_len + f->len)
                        cap *= 2;
                uint8_t *grown = realloc(w->out, cap);
                if (!grown) {
                        w->overflowed = true;
                        goto out;
                }
                w->out = grown;
                w->out_cap = cap;
        }
        memcpy(w->out + w->out_len, f->data, f->len);
        w->out_len += f->len;
out:
        agent_frame_writer_release(f);
}

static void watch_flush(struct agent_file_watch *w)
{
        struct agent_conn *c = w->conn;

        while (w->out_off < w->out_len) {
                ssize_t n = send(c->watch.fd, w->out + w->out_off, w->out_len - w->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n <= 0) {
                        agent_conn_close(c);
                        return;
                }
                w->out_off += (size_t)n;
        }
        if (w->out_off == w->out_len && w->ending) {
                agent_conn_close(c);
                return;
        }
        if (w->out_off == w->out_len && w->overflowed) {
                struct agent_frame_writer f;
                w->overflowed = false;
                agent_frame_writer_begin(&f, AGENT_MSG_FILE_EVENT);
                agent_frame_writer_put_u8(&f, AGENT_F_FILE_EVENT_KIND, AGENT_FILE_EVENT_OVERFLOW);
                watch_append(w, &f);
                watch_flush(w);
                return;
        }
        if (agent_server_watch_set(c->server, &c->watch, agent_file_watch_events(w)) < 0)
                agent_conn_close(c);
}

static const char *dir_path(struct agent_file_watch *w, int wd)
{
        for (size_t i = 0; i < w->n_dirs; i++)
                if (w->dirs[i].wd == wd)
                        return w->dirs[i].path;
        return NULL;
}

static void dir_forget(struct agent_file_watch *w, int wd)
{
        for (size_t i = 0; i < w->n_dirs; i++)
                if (w->dirs[i].wd == wd) {
                        free(w->dirs[i].path);
                        w->dirs[i] = w->dirs[--w->n_dirs];
                        return;
                }
}

/* A subdirectory moved away: its watches (and those below it) would report stale paths.
 * Drop them; if it moved within the tree, its IN_MOVED_TO adds it again under the new name. */
static void dir_forget_tree(struct agent_file_watch *w, const char *path)
{
        size_t len = strlen(path);

        for (size_t i = 0; i < w->n_dirs;) {
                const char *p = w->dirs[i].path;
                if (w->dirs[i].wd != w->root_wd && !strncmp(p, path, len) && (p[len] == 0 || p[len] == '/')) {
                        inotify_rm_watch(w->inotify.fd, w->dirs[i].wd);
                        free(w->dirs[i].path);
                        w->dirs[i] = w->dirs[--w->n_dirs];
                        continue;
                }
                i++;
        }
}

/* Watches the directory open as fd (its path inside the root is path). */
static int dir_add(struct agent_file_watch *w, int fd, const char *path)
{
        char proc[64];

        if (w->n_dirs >= WATCH_DIRS_MAX)
                return -ENOSPC;
        if (w->n_dirs == w->cap_dirs) {
                size_t cap = w->cap_dirs ? w->cap_dirs * 2 : 16;
                struct watch_dir *d = realloc(w->dirs, cap * sizeof *d);
                if (!d)
                        return -ENOMEM;
                w->dirs = d;
                w->cap_dirs = cap;
        }
        /* Our own descriptor, named through /proc: the path resolved inside the root. */
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int wd = inotify_add_watch(w->inotify.fd, proc, WATCH_MASK);
        if (wd < 0)
                return -errno;
        if (dir_path(w, wd))
                return wd; /* already watched (a directory reached twice) */
        char *copy = strdup(path);
        if (!copy) {
                inotify_rm_watch(w->inotify.fd, wd);
                return -ENOMEM;
        }
        w->dirs[w->n_dirs++] = (struct watch_dir){ wd, copy };
        return wd;
}

/* Adds watches below the directory fd (taken) at path, not following symlinks. */
static void dir_add_tree(struct agent_file_watch *w, int fd, const char *path, int depth)
{
        _cleanup_close_ int dfd = fd;
        if (depth > 64 || dir_add(w, dfd, path) < 0)
                return;
        int list = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (list < 0)
                return;
        DIR *d = fdopendir(list);
        if (!d) {
                close(list);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                char child[PATH_MAX];
                if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") ? path : "", de->d_name) >= (int)sizeof child)
                        continue;
                int sub = openat(dfd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                        dir_add_tree(w, sub, child, depth + 1);
        }
        closedir(d);
}

/* The entry of path as it is now, stat'ed as the watching user (nothing when it is gone). */
static void watch_put_entry(struct agent_file_watch *w, struct agent_frame_writer *f, const char *path)
{
        struct agent_file_names names = { 0 };
        const char *name;
        struct stat st;

        if (w->as_user)
                (void)agent_file_user_become(w->fsuid, w->fsgid);
        int dir = agent_file_open_parent(path, &name);
        if (dir >= 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                agent_files_put_entry(f, &names, path, &st, dir, name, true);
        if (dir >= 0)
                close(dir);
        if (w->as_user)
                agent_file_user_restore();
        agent_file_names_release(&names);
}

static void watch_emit(struct agent_file_watch *w, uint8_t kind, const char *path, const char *name, bool is_dir)
{
        struct agent_frame_writer f;

        agent_frame_writer_begin(&f, AGENT_MSG_FILE_EVENT);
        agent_frame_writer_put_u8(&f, AGENT_F_FILE_EVENT_KIND, kind);
        agent_frame_writer_put_str(&f, AGENT_F_FILE_PATH, path);
        agent_frame_writer_put_str(&f, AGENT_F_FILE_NAME, name);
        agent_frame_writer_put_u8(&f, AGENT_F_FILE_TYPE, is_dir ? AGENT_FILE_DIRECTORY : AGENT_FILE_REGULAR);
        if (w->with_entry && kind != AGENT_FILE_EVENT_REMOVE)
                watch_put_entry(w, &f, path);
        watch_append(w, &f);
}

static void watch_on_event(struct agent_file_watch *w, const struct inotify_event *ev)
{
        char path[PATH_MAX];
        bool is_dir = ev->mask & IN_ISDIR;
        const char *dir = dir_path(w, ev->wd);
        uint8_t kind = 0;

        if (ev->mask & IN_Q_OVERFLOW) {
                w->overflowed = true;
                return;
        }
        if (ev->mask & IN_IGNORED) {
                dir_forget(w, ev->wd);
                if (ev->wd == w->root_wd)
                        w->ending = true;
                return;
        }
        if (!dir)
                return;
        if (ev->len == 0) {
                /* The directory itself: only the watched one is reported. */
                if (ev->wd != w->root_wd || !(ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
                        return;
                const char *slash = strrchr(dir, '/');
                watch_emit(w, ev->mask & IN_DELETE_SELF ? AGENT_FILE_EVENT_REMOVE : AGENT_FILE_EVENT_RENAME, dir,
                           slash && slash[1] ? slash + 1 : "/", true);
                return;
        }
        if (snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", ev->name) >= (int)sizeof path)
                return;
        /* An upload fills a file under a temporary name and renames it over its target: the
         * name is no one's file (not reported), and the target is written, as envd, which
         * writes in place, reports it. */
        if (agent_file_upload_temp_name(ev->name)) {
                if (ev->mask & IN_MOVED_FROM)
                        w->upload_cookie = ev->cookie;
                return;
        }
        if ((ev->mask & IN_MOVED_TO) && ev->cookie && ev->cookie == w->upload_cookie) {
                w->upload_cookie = 0;
                kind = AGENT_FILE_EVENT_WRITE;
        } else if (ev->mask & (IN_CREATE | IN_MOVED_TO))
                kind = AGENT_FILE_EVENT_CREATE;
        else if (ev->mask & IN_MODIFY)
                kind = AGENT_FILE_EVENT_WRITE;
        else if (ev->mask & IN_DELETE)
                kind = AGENT_FILE_EVENT_REMOVE;
        else if (ev->mask & IN_MOVED_FROM)
                kind = AGENT_FILE_EVENT_RENAME;
        else if (ev->mask & IN_ATTRIB)
                kind = AGENT_FILE_EVENT_CHMOD;
        if (kind)
                watch_emit(w, kind, path, ev->name, is_dir);
        if (w->recursive && is_dir && kind == AGENT_FILE_EVENT_RENAME)
                dir_forget_tree(w, path);
        if (w->recursive && is_dir && kind == AGENT_FILE_EVENT_CREATE) {
                if (w->as_user)
                        (void)agent_file_user_become(w->fsuid, w->fsgid);
                int fd = agent_file_open(path, O_PATH | O_DIRECTORY, 0, false);
                if (fd >= 0)
                        dir_add_tree(w, fd, path, 0);
                if (w->as_user)
                        agent_file_user_restore();
        }
}

static void watch_on_inotify(struct agent_watch *iw, uint32_t events)
{
        struct agent_file_watch *w = agent_container_of(iw, struct agent_file_watch, inotify);
        _Alignas(struct inotify_event) char buf[16384];

        for (int round = 0; round < 8 && !w->conn->dead; round++) {
                ssize_t n = read(iw->fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                for (ssize_t off = 0; off < n && !w->conn->dead;) {
                        const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
                        watch_on_event(w, ev);
                        off += (ssize_t)(sizeof *ev + ev->len);
                }
        }
        if (!w->conn->dead)
                watch_flush(w);
}

int agent_file_watch_start(struct agent_conn *c, struct agent_file_request *req)
{
        struct agent_frame_writer f;
        int r;

        _cleanup_close_ int dir = agent_file_open(req->path, O_PATH | O_DIRECTORY, 0, true);
        if (dir < 0)
                return dir;
        struct agent_file_watch *w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->conn = c;
        w->recursive = req->recursive;
        w->with_entry = req->with_entry;
        w->as_user = req->as_user;
        w->fsuid = req->fsuid;
        w->fsgid = req->fsgid;
        agent_watch_init(&w->inotify);
        int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ifd < 0) {
                r = -errno;
                free(w);
                return r;
        }
        r = agent_server_watch_add(c->server, &w->inotify, ifd, EPOLLIN, watch_on_inotify);
        if (r < 0) {
                free(w);
                return r;
        }
        r = dir_add(w, dir, req->path);
        if (r < 0) {
                agent_file_watch_stop(w);
                agent_file_watch_free(w);
                return r;
        }
        w->root_wd = r;
        if (req->recursive) {
                /* The top is watched already; dir_add_tree finds it again and goes on below. */
                int again = fcntl(dir, F_DUPFD_CLOEXEC, 3);
                if (again >= 0)
                        dir_add_tree(w, again, req->path, 0);
        }
        c->file_watch = w;
        agent_frame_writer_begin(&f, AGENT_MSG_FILE_DONE);
        watch_append(w, &f);
        watch_flush(w);
        return 0;
}

uint32_t agent_file_watch_events(const struct agent_file_watch *w)
{
        return EPOLLIN | EPOLLRDHUP | (w->out_off < w->out_len ? EPOLLOUT : 0);
}

void agent_file_watch_on_conn(struct agent_file_watch *w, uint32_t events)
{
        struct agent_conn *c = w->conn;
        char buf[512];

        if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) {
                /* spaced sends nothing after FILE_WATCH: bytes are ignored, EOF ends the watch. */
                ssize_t n = recv(c->watch.fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                        agent_conn_close(c);
                        return;
                }
        }
        if (events & EPOLLOUT)
                watch_flush(w);
}

void agent_file_watch_stop(struct agent_file_watch *w)
{
        agent_server_watch_close(w->conn->server, &w->inotify);
}

void agent_file_watch_free(struct agent_file_watch *w)
{
        if (!w)
                return;
        for (size_t i = 0; i < w->n_dirs; i++)
                free(w->dirs[i].path);
        free(w->dirs);
        free(w->out);
        free(w);
}
