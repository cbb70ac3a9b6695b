/* agent_file_user: the sandbox's users and groups (its own /etc/passwd and /etc/group,
 * read through the confined root) and the fsuid/fsgid switch that makes a file operation
 * run as one of them. The agent is single threaded, so switching around one operation
 * affects nothing else. Functions return -errno. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* /etc/passwd and /etc/group as read once for one request (missing files are empty). */
struct agent_file_names {
        char *passwd;
        char *group;
        bool loaded;
};

void agent_file_names_release(struct agent_file_names *n);
/* A user name or a decimal uid -> uid and primary gid: -ESRCH when there is no such user. */
int agent_file_names_user(struct agent_file_names *n, const char *name, uid_t *ret_uid, gid_t *ret_gid);
/* uid -> name into buf ("" when unknown). */
void agent_file_names_uid(struct agent_file_names *n, uid_t uid, char *buf, size_t size);
void agent_file_names_gid(struct agent_file_names *n, gid_t gid, char *buf, size_t size);

/* Operates as uid/gid until agent_file_user_restore(). */
int agent_file_user_become(uid_t uid, gid_t gid);
void agent_file_user_restore(void);
