/* agent_files: file requests — parsing, user switch, entries, and the small operations
 * (stat, mkdir, move). Lists and removals are in agent_file_tree.c, transfers in
 * agent_file_transfer.c, watches in agent_file_watch.c. */
#include "space_agent/agent_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_file_meta.h"
#include "space_agent/agent_file_path.h"
#include "space_agent/agent_file_transfer.h"
#include "space_agent/agent_file_tree.h"
#include "space_agent/agent_file_watch.h"

bool agent_files_handles(uint8_t type)
{
        switch (type) {
        case AGENT_MSG_FILE_STAT:
        case AGENT_MSG_FILE_READ:
        case AGENT_MSG_FILE_LIST:
        case AGENT_MSG_FILE_MKDIR:
        case AGENT_MSG_FILE_MOVE:
        case AGENT_MSG_FILE_REMOVE:
        case AGENT_MSG_FILE_CREATE:
        case AGENT_MSG_FILE_COMMIT:
        case AGENT_MSG_FILE_WATCH:
        case AGENT_MSG_FILE_FETCH:
        case AGENT_MSG_FILE_DATA:
                return true;
        }
        return false;
}

static int put_string(char *dst, size_t size, const uint8_t *data, uint32_t len)
{
        if (len >= size || memchr(data, 0, len))
                return -EINVAL;
        memcpy(dst, data, len);
        dst[len] = 0;
        return 0;
}

static int get_u32(const uint8_t *data, uint32_t len, uint32_t *ret, bool *has)
{
        if (len != 4)
                return -EINVAL;
        *ret = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
        if (has)
                *has = true;
        return 0;
}

static int get_flag(const uint8_t *data, uint32_t len, bool *ret)
{
        if (len != 1)
                return -EINVAL;
        *ret = data[0] != 0;
        return 0;
}

int agent_file_request_parse(const struct agent_frame *f, struct agent_file_request *req, const char **ret_reason)
{
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        int r;

        *req = (struct agent_file_request){ .depth = 1, .saved_umask = (mode_t)-1 };
        while ((r = agent_frame_next_field(f, &cursor, &tag, &data, &len)) > 0) {
                switch (tag) {
                case AGENT_F_FILE_PATH:
                case AGENT_F_FILE_DEST: {
                        bool dest = tag == AGENT_F_FILE_DEST;
                        r = agent_file_path_normalize(data, len, dest ? req->dest : req->path, PATH_MAX);
                        if (r < 0) {
                                *ret_reason =
                                        r == -ENAMETOOLONG ? "path too long" : "paths must be absolute and free of NUL bytes";
                                return r;
                        }
                        *(dest ? &req->has_dest : &req->has_path) = true;
                        break;
                }
                case AGENT_F_FILE_USER:
                        r = put_string(req->user, sizeof req->user, data, len);
                        break;
                case AGENT_F_FILE_OWNER:
                        r = put_string(req->owner, sizeof req->owner, data, len);
                        break;
                case AGENT_F_FILE_MODE:
                        r = get_u32(data, len, &req->mode, &req->has_mode);
                        if (r == 0 && req->mode > 07777)
                                r = -EINVAL;
                        break;
                case AGENT_F_FILE_UID:
                        r = get_u32(data, len, &req->uid, &req->has_uid);
                        break;
                case AGENT_F_FILE_GID:
                        r = get_u32(data, len, &req->gid, &req->has_gid);
                        break;
                case AGENT_F_FILE_DEPTH:
                        r = get_u32(data, len, &req->depth, NULL);
                        if (r == 0 && (req->depth < 1 || req->depth > AGENT_FILE_DEPTH_MAX))
                                r = -EINVAL;
                        break;
                case AGENT_F_FILE_PARENTS:
                        r = get_flag(data, len, &req->parents);
                        break;
                case AGENT_F_FILE_RECURSIVE:
                        r = get_flag(data, len, &req->recursive);
                        break;
                case AGENT_F_FILE_WITH_ENTRY:
                        r = get_flag(data, len, &req->with_entry);
                        break;
                case AGENT_F_FILE_EXCL:
                        r = get_flag(data, len, &req->excl);
                        break;
                case AGENT_F_FILE_WITH_META:
                        r = get_flag(data, len, &req->with_meta);
                        break;
                case AGENT_F_FILE_META:
                        r = len > sizeof req->meta ? -EINVAL : agent_file_meta_check(data, len);
                        if (r == 0) {
                                memcpy(req->meta, data, len);
                                req->meta_len = len;
                        }
                        break;
                default:
                        r = 0; /* unknown tags are skipped */
                }
                if (r < 0) {
                        *ret_reason = "bad field in file request";
                        return -EINVAL;
                }
        }
        if (r < 0) {
                *ret_reason = "malformed fields";
                return -EINVAL;
        }
        return 0;
}

int agent_file_request_begin(struct agent_file_request *req, const char **ret_reason)
{
        int r;

        if (req->owner[0]) {
                r = agent_file_names_user(&req->names, req->owner, &req->chown_uid, &req->chown_gid);
                if (r < 0) {
                        *ret_reason = "no such owner in the sandbox's /etc/passwd";
                        return r;
                }
                req->chown = true;
        } else if (req->has_uid || req->has_gid) {
                req->chown = true;
                req->chown_uid = req->has_uid ? (uid_t)req->uid : (uid_t)-1;
                req->chown_gid = req->has_gid ? (gid_t)req->gid : (gid_t)-1;
        }
        if (req->has_uid && req->owner[0])
                req->chown_uid = (uid_t)req->uid;
        if (req->has_gid && req->owner[0])
                req->chown_gid = (gid_t)req->gid;
        if (req->user[0]) {
                r = agent_file_names_user(&req->names, req->user, &req->fsuid, &req->fsgid);
                if (r < 0) {
                        *ret_reason = "no such user in the sandbox's /etc/passwd";
                        return r;
                }
                r = agent_file_user_become(req->fsuid, req->fsgid);
                if (r < 0) {
                        *ret_reason = "cannot switch to that user";
                        return r;
                }
                req->as_user = true;
        }
        req->saved_umask = umask(0);
        return 0;
}

void agent_file_request_end(struct agent_file_request *req)
{
        if (req->saved_umask != (mode_t)-1)
                umask(req->saved_umask);
        req->saved_umask = (mode_t)-1;
        if (req->as_user)
                agent_file_user_restore();
        req->as_user = false;
        agent_file_names_release(&req->names);
}

static uint8_t entry_type(mode_t m)
{
        if (S_ISREG(m))
                return AGENT_FILE_REGULAR;
        if (S_ISDIR(m))
                return AGENT_FILE_DIRECTORY;
        if (S_ISLNK(m))
                return AGENT_FILE_SYMLINK;
        return AGENT_FILE_OTHER;
}

void agent_files_put_entry(struct agent_frame_writer *w, struct agent_file_names *names, const char *path, const struct stat *st,
                           int dir, const char *name, bool meta)
{
        char buf[256];
        const char *slash = strrchr(path, '/');
        int64_t ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;

        agent_frame_writer_put_str(w, AGENT_F_FILE_PATH, path);
        agent_frame_writer_put_str(w, AGENT_F_FILE_NAME, slash && slash[1] ? slash + 1 : "/");
        agent_frame_writer_put_u8(w, AGENT_F_FILE_TYPE, entry_type(st->st_mode));
        agent_frame_writer_put_u64(w, AGENT_F_FILE_SIZE, (uint64_t)st->st_size);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_MODE, (uint32_t)st->st_mode);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_UID, (uint32_t)st->st_uid);
        agent_frame_writer_put_u32(w, AGENT_F_FILE_GID, (uint32_t)st->st_gid);
        agent_frame_writer_put_u64(w, AGENT_F_FILE_MTIME_MS, ms > 0 ? (uint64_t)ms : 0);
        agent_file_names_uid(names, st->st_uid, buf, sizeof buf);
        if (buf[0])
                agent_frame_writer_put_str(w, AGENT_F_FILE_OWNER, buf);
        agent_file_names_gid(names, st->st_gid, buf, sizeof buf);
        if (buf[0])
                agent_frame_writer_put_str(w, AGENT_F_FILE_GROUP, buf);
        if (S_ISLNK(st->st_mode) && dir >= 0 && name) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(dir, name, target, sizeof target - 1);
                if (n >= 0)
                        agent_frame_writer_put(w, AGENT_F_FILE_LINK, target, (size_t)n);
        }
        if (meta && (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && dir >= 0 && name)
                agent_file_meta_put(w, dir, name);
}

void agent_files_reply_errno(struct agent_conn *c, int error, const char *what, const char *path)
{
        char msg[PATH_MAX + 128];

        snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(error));
        agent_conn_reply_error(c, error, msg);
}

/* Stats path (the entry itself, not a symlink's target) into a FILE_ENTRY. */
int agent_files_reply_entry(struct agent_conn *c, struct agent_file_request *req, const char *path)
{
        struct agent_frame_writer w;
        struct stat st;
        const char *name = NULL;
        _cleanup_close_ int dir = -1;

        if (strcmp(path, "/") == 0) {
                _cleanup_close_ int root = agent_file_open("/", O_PATH | O_DIRECTORY, 0, true);
                if (root < 0 || fstat(root, &st) < 0)
                        return root < 0 ? root : -errno;
        } else {
                dir = agent_file_open_parent(path, &name);
                if (dir < 0)
                        return dir;
                if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
        }
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
        agent_files_put_entry(&w, &req->names, path, &st, dir, name, req->with_meta);
        agent_conn_reply(c, &w);
        return 0;
}

static int file_mkdir(struct agent_file_request *req)
{
        mode_t mode = req->has_mode ? (mode_t)req->mode : 0755;
        const char *name;
        struct stat st;
        bool existed = false;
        int r;

        if (req->parents) {
                _cleanup_close_ int before = agent_file_open(req->path, O_PATH, 0, true);
                existed = before >= 0;
                r = agent_file_mkdir_parents(req->path, mode, req->chown ? req->chown_uid : (uid_t)-1,
                                             req->chown ? req->chown_gid : (gid_t)-1);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int dir = agent_file_open_parent(req->path, &name);
        if (dir < 0)
                return dir == -EINVAL ? -EEXIST : dir; /* "/" exists */
        if (!req->parents && mkdirat(dir, name, mode) < 0)
                return -errno;
        if (req->chown && fchownat(dir, name, req->chown_uid, req->chown_gid, AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                /* A refused owner changes nothing: take back the directory just made. */
                if (!existed && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                        (void)unlinkat(dir, name, AT_REMOVEDIR);
                return r;
        }
        return 0;
}

static int file_move(struct agent_file_request *req)
{
        const char *src_name, *dst_name;
        _cleanup_close_ int src = agent_file_open_parent(req->path, &src_name);
        if (src < 0)
                return src;
        _cleanup_close_ int dst = agent_file_open_parent(req->dest, &dst_name);
        if (dst < 0)
                return dst;
        return renameat(src, src_name, dst, dst_name) < 0 ? -errno : 0;
}

void agent_files_dispatch(struct agent_conn *c, const struct agent_frame *f)
{
        struct agent_file_request req;
        const char *reason = NULL, *what = "";
        int r;

        /* The bytes of a transfer: no path, no user, not a request of their own. */
        if (f->type == AGENT_MSG_FILE_DATA) {
                agent_file_transfer_data(c, f);
                return;
        }
        if (f->type == AGENT_MSG_FILE_FETCH) {
                agent_file_transfer_fetch(c, f);
                return;
        }
        r = agent_file_request_parse(f, &req, &reason);
        if (r == 0 && f->type != AGENT_MSG_FILE_COMMIT && !req.has_path) {
                r = -EINVAL;
                reason = "no path";
        }
        if (r == 0 && f->type == AGENT_MSG_FILE_MOVE && !req.has_dest) {
                r = -EINVAL;
                reason = "no destination";
        }
        if (r < 0) {
                agent_conn_reply_error(c, -r, reason);
                return;
        }
        if (f->type == AGENT_MSG_FILE_COMMIT) {
                agent_file_transfer_commit(c, f);
                return;
        }
        r = agent_file_request_begin(&req, &reason);
        if (r < 0) {
                agent_file_request_end(&req);
                agent_conn_reply_error(c, -r, reason);
                return;
        }
        switch (f->type) {
        case AGENT_MSG_FILE_STAT:
                what = "stat";
                r = agent_files_reply_entry(c, &req, req.path);
                break;
        case AGENT_MSG_FILE_MKDIR:
                what = "mkdir";
                r = file_mkdir(&req);
                if (r == 0)
                        r = agent_files_reply_entry(c, &req, req.path);
                break;
        case AGENT_MSG_FILE_MOVE:
                what = "move";
                r = file_move(&req);
                if (r == 0)
                        r = agent_files_reply_entry(c, &req, req.dest);
                break;
        case AGENT_MSG_FILE_LIST:
                what = "list";
                r = agent_file_tree_list(c, &req);
                break;
        case AGENT_MSG_FILE_REMOVE:
                what = "remove";
                r = agent_file_tree_remove(&req);
                if (r == 0) {
                        struct agent_frame_writer w;
                        agent_frame_writer_begin(&w, AGENT_MSG_FILE_DONE);
                        agent_conn_reply(c, &w);
                }
                break;
        case AGENT_MSG_FILE_READ:
                what = "open";
                r = agent_file_transfer_read(c, &req);
                break;
        case AGENT_MSG_FILE_CREATE:
                what = "create";
                r = agent_file_transfer_create(c, &req);
                break;
        case AGENT_MSG_FILE_WATCH:
                what = "watch";
                r = agent_file_watch_start(c, &req);
                break;
        }
        agent_file_request_end(&req);
        if (r < 0)
                agent_files_reply_errno(c, -r, what, req.path);
}
