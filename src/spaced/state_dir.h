/* state_dir: the state directory made private at every start. It holds the database, the
 * keys, command logs and the sandboxes' pool, so nobody but spaced's user may read it:
 *  - every directory on its path (as given and as resolved) must be owned by root or by
 *    spaced's user and writable by nobody else unless sticky (as /tmp): otherwise someone
 *    could swap a component for a symlink of theirs;
 *  - the directory itself must be spaced's user's and not writable by group or others (if
 *    it was, something may have been planted in it: the operator checks and fixes it);
 *  - it is then set to 0700, its directories (logs, run, command-logs and below) to 0700,
 *    and its files with secrets or sandbox data (state.db and its -wal/-shm, admin.key,
 *    e2b-token.key, instance, spaced.lock, pool.img, logs, command logs) to 0600 and to
 *    spaced's user; a symlink in their place is refused.
 * state.db is made 0600 before SQLite creates it, so its -wal and -shm follow. */
#pragma once

#include <stddef.h>

/* Creates the directory when missing (its parent must exist) and secures it. 0, or -errno
 * with a sentence in reason. */
int state_dir_secure(const char *path, char *reason, size_t reason_size);
