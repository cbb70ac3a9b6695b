/* agent_file_walk: the resolution agent_file_open does with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS), done one component at a time for kernels without openat2 (gVisor
 * answers ENOSYS). Every step is an O_NOFOLLOW openat relative to a descriptor already
 * held; a symlink is read and its text resolved again from the root (absolute) or its
 * directory (relative); ".." pops a held descriptor and stops at the root. So no symlink,
 * "..", or /proc magic link leads outside the root (on procfs only relative, plain links are followed). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* openat(root, rel, flags, mode) as confined above; -errno. rel is relative ("." for the root). */
int agent_file_walk_open(int root, const char *rel, int flags, mode_t mode, bool follow);
