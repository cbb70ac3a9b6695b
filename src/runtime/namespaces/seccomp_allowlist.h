/* seccomp_allowlist: the system calls a sandbox may make without conditions. Everything
 * else is refused by seccomp_policy (with ENOSYS, or EPERM where the call is named there),
 * and the calls allowed only for some arguments (clone, unshare, socket, socketpair,
 * personality, ioctl) are ruled on there too. */
#pragma once

#include <stddef.h>

/* Names as libseccomp spells them; a name the native architecture lacks is skipped. */
extern const char *const seccomp_allowlist_names[];
extern const size_t seccomp_allowlist_count;

/* Allowed calls newer than the libseccomp we may build against knows by name: used by
 * number on x86-64 when the name does not resolve. */
struct seccomp_allowlist_number {
        const char *name;
        int nr;
};
extern const struct seccomp_allowlist_number seccomp_allowlist_x86_64[];
extern const size_t seccomp_allowlist_x86_64_count;
