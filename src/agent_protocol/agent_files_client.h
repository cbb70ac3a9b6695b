/* agent_files_client: spaced's side of the file messages (docs/agent-protocol.md, "Files").
 * Blocking, one connection per request (a watch keeps its connection for its events).
 * Functions return 0 or -errno; an agent ERROR reply becomes -that errno with its message. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

struct agent_file_args {
        const char *path;
        const char *dest;
        const char *user;  /* NULL: root of the sandbox */
        const char *owner; /* chown to this user name */
        bool has_mode, has_uid, has_gid;
        uint32_t mode, uid, gid;
        uint32_t depth; /* 0: the agent's default (1) */
        bool parents, recursive;
        bool with_entry;     /* FILE_WATCH: events carry their entry */
        bool excl;           /* FILE_CREATE: the commit never replaces a file there */
        bool with_meta;      /* entries carry their user metadata (FILE_WITH_META) */
        bool sync;           /* FILE_COMMIT: make the data durable first */
        const uint8_t *meta; /* FILE_CREATE: user metadata, "key\0value\0" pairs */
        size_t meta_len;
};

/* One entry of a reply; the strings point into the frame and are not NUL-terminated. */
struct agent_file_entry {
        const char *path, *name, *owner, *group, *link;
        uint32_t path_len, name_len, owner_len, group_len, link_len;
        uint8_t type; /* enum agent_file_type */
        uint64_t size, mtime_ms;
        uint32_t mode, uid, gid;
        bool has_link;
        const uint8_t *meta; /* its user metadata, "key\0value\0" pairs (meta_len 0: none) */
        uint32_t meta_len;
};

/* A reply frame. */
struct agent_file_reply {
        struct agent_frame frame;
        uint8_t *buf;
};
void agent_file_reply_release(struct agent_file_reply *r);

/* Sends one request of the given type. */
int agent_files_send(int fd, enum agent_msg_type type, const struct agent_file_args *args);
/* Reads one reply. On an ERROR frame returns -its errno and copies its message to msg. */
int agent_files_read(int fd, struct agent_file_reply *ret, char *msg, size_t msg_size);
/* send + read, expecting a reply of type want (else -EPROTO). */
int agent_files_call(int fd, enum agent_msg_type type, const struct agent_file_args *args, enum agent_msg_type want,
                     struct agent_file_reply *ret, char *msg, size_t msg_size);

/* Entries of a FILE_ENTRY / FILE_ENTRIES / FILE_EVENT frame, in order: set *cursor = 0;
 * returns 1 with *ret filled, 0 at the end, -EPROTO when malformed. */
int agent_files_next_entry(const struct agent_frame *f, size_t *cursor, struct agent_file_entry *ret);
