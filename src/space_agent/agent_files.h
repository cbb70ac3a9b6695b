/* agent_files: the file messages (AGENT_MSG_FILE_*, docs/agent-protocol.md "Files"):
 * parsing a request, running it as the asked-for user, and the entries replies carry. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "agent_protocol/agent_frame.h"
#include "space_agent/agent_file_user.h"

struct agent_conn;

struct agent_file_request {
        char path[PATH_MAX]; /* normalised */
        char dest[PATH_MAX];
        bool has_path, has_dest;
        char user[256];
        char owner[256];
        uint32_t mode, uid, gid, depth;
        bool has_mode, has_uid, has_gid;
        bool parents, recursive;
        bool with_entry;                   /* FILE_WATCH: each event followed by its entry */
        bool excl;                         /* FILE_CREATE: the commit never replaces what is there */
        bool with_meta;                    /* FILE_WITH_META: entries carry their metadata */
        uint8_t meta[AGENT_FILE_META_MAX]; /* FILE_META: set on an upload at commit */
        uint32_t meta_len;
        /* resolved by agent_file_request_begin */
        struct agent_file_names names;
        bool chown;
        uid_t chown_uid; /* (uid_t) -1: unchanged */
        gid_t chown_gid;
        bool as_user;
        uid_t fsuid;
        gid_t fsgid;
        mode_t saved_umask;
};

bool agent_files_handles(uint8_t type);
/* Answers the file request f on c (a reply or an ERROR frame in every case). */
void agent_files_dispatch(struct agent_conn *c, const struct agent_frame *f);

/* Parses f into req: -EINVAL with *ret_reason on a bad field. */
int agent_file_request_parse(const struct agent_frame *f, struct agent_file_request *req, const char **ret_reason);
/* Resolves the user and the owner and switches to the user (umask 0 meanwhile);
 * -ESRCH for an unknown user. Pair with agent_file_request_end in every case. */
int agent_file_request_begin(struct agent_file_request *req, const char **ret_reason);
void agent_file_request_end(struct agent_file_request *req);

/* Appends one entry (FILE_PATH first) for path, whose stat is st; dir/name locate it for
 * readlinkat (a symlink's target) and, with meta, its metadata (FILE_META); dir -1: neither. */
void agent_files_put_entry(struct agent_frame_writer *w, struct agent_file_names *names, const char *path, const struct stat *st,
                           int dir, const char *name, bool meta);
/* ERROR "<what> <path>: <strerror>" on c. */
void agent_files_reply_errno(struct agent_conn *c, int error, const char *what, const char *path);
/* Replies FILE_ENTRY for path (lstat semantics); -errno when it cannot be stat'ed. */
int agent_files_reply_entry(struct agent_conn *c, struct agent_file_request *req, const char *path);
