/* agent_file_path: every path a file request names is resolved here, inside the agent's
 * root ("/" in a sandbox after pivot_root; --root DIR when run on the host for tests).
 *
 * Paths are absolute, at most PATH_MAX-1 bytes, without NUL; "." and ".." are collapsed
 * lexically (".." at the root stays at the root). Resolution uses openat2() with
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS from a descriptor of the root, so neither an
 * absolute symlink, nor "..", nor a /proc magic link (/proc/self/root, /proc/N/fd/M) can
 * lead outside it. Functions return -errno. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Opens dir as the root of file paths (default "/", opened on first use). */
int agent_file_root_set(const char *dir);

/* Checks and normalises the wire path (len bytes, not NUL-terminated) into ret (PATH_MAX):
 * -EINVAL when relative, empty or holding NUL, -ENAMETOOLONG when too long. */
int agent_file_path_normalize(const uint8_t *data, size_t len, char *ret, size_t size);

/* openat2 of a normalised path inside the root. follow: follow a symlink in the last
 * component (inside the root) instead of opening or refusing it (O_NOFOLLOW). */
int agent_file_open(const char *path, int flags, mode_t mode, bool follow);

/* Opens the directory holding path's last component (O_PATH) and points *ret_name at that
 * component inside path. -EINVAL for "/" itself. */
int agent_file_open_parent(const char *path, const char **ret_name);

/* mkdir -p of a normalised path (each component resolved inside the root). The directories
 * it makes are chowned to uid/gid unless both are -1 (a refused chown takes back the one
 * just made and fails). */
int agent_file_mkdir_parents(const char *path, mode_t mode, uid_t uid, gid_t gid);
