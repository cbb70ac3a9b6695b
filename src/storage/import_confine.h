/* import_confine: runs `btrfs receive` for one snapshot import in a private mount namespace
 * where the only writable thing is the import's own staging directory, so that whatever a
 * send stream says, receive cannot create, change or read anything else on the host.
 *
 * The namespace's root is an empty read-only tmpfs holding:
 *   /usr (and the host's /bin, /lib… symlinks or read-only binds), /etc/ld.so.cache: read-only,
 *     so that btrfs itself can run;
 *   /pool: a read-only bind of the pool's top directory (receive's ioctls need the btrfs
 *     top-level subvolume as its mount root, -m), every entry of which is covered by an
 *     empty read-only tmpfs, except
 *   /pool/snapshots: a read-only tmpfs showing only the parent snapshot of an incremental
 *     stream, bound read-only at its own name (receive finds a parent by UUID, then opens
 *     its path relative to the mount root: snapshots/<id>);
 *   /pool/staging: the import's receive directory, the only writable mount.
 * receive runs with --chroot into /pool/staging, -e (stop at END), with a bounding set
 * reduced to the capabilities it needs, no_new_privs, and a seccomp filter refusing the
 * mount family, unshare/setns, ptrace, module/kexec/bpf/keyring/io_uring calls. Every mount
 * is nosuid,nodev and, but /usr, noexec. Low level: -errno. */
#pragma once

#include <sys/types.h>

struct import_confine {
        const char *pool_root;   /* the pool's top directory on the host */
        const char *staging_dir; /* a directory of the pool, empty, for this import alone: */
                                 /* it gets root/ (the namespace's root) and recv/ */
        const char *parent_id;   /* snapshot id of the incremental stream's parent, or NULL */
        const char *log_path;    /* receive's stdout and stderr, appended */
};

/* Starts receive; *ret_fd is the write end of its stdin (close-on-exec). Collect it with
 * host_command_wait() (it leads its own process group). The received subvolume appears in
 * <staging_dir>/recv/. */
int import_confine_spawn(const struct import_confine *spec, int *ret_fd, pid_t *ret_pid);
