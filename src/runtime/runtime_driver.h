/* runtime_driver: how a sandbox's processes and root filesystem are made and managed.
 * A const ops table per driver kind (namespaces, gvisor, microvm) and an instance per
 * configured driver (runtime_registry.h); each sandbox names its driver (sb->runtime). Every function
 * is idempotent where it can be, so a crash mid-way can simply be redone. Returns 0 or -1
 * with err filled (code + message for the API caller). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct btrfs_pool;

struct runtime_config {
        const struct btrfs_pool *pool;
        const char *instance;     /* this daemon's instance id (spaced/instance_id.h) */
        const char *state_dir;    /* this daemon's state directory */
        char run_dir[4096];       /* <state>/run: per-sandbox host-side directories */
        char agent_path[4096];    /* the static space-agent binary */
        char uid_range_dir[4096]; /* host-wide uid range records; "" for the default */
        bool proc_views;          /* sandboxes' /proc shows their own figures (--proc-views) */
        /* egress (docs/network.md): where the host's rules send a sandbox's TCP and DNS
         * (127.0.0.1, space-egress), and the pool of its host-link addresses */
        uint16_t egress_tcp_port, egress_dns_port;
        bool egress_required;   /* false: a host without nftables runs, creates needing egress fail */
        uint32_t egress_subnet; /* host byte order */
        int egress_subnet_bits;
        const char *egress_ca_pem;   /* the platform CA's certificate, PEM: put in the sandboxes' trust store */
        char egress_block_dir[4096]; /* host-wide address block records; "" for the default */
        /* microvm (docs/runtimes.md): space-vmlink, the script that makes the guest's kernel
         * and initramfs, and "auto" | "kvm" | "tcg" */
        char vmlink_path[4096];
        char microvm_guest_script[4096];
        char microvm_accel[8];
};

struct exec_request {
        char **argv; /* NULL-terminated */
        char **envp; /* NULL-terminated, "K=V" */
        const char *cwd;
        const char *user; /* NULL: root of the sandbox */
        const uint8_t *stdin_data;
        size_t stdin_len;
        bool has_stdin;
        uint32_t timeout_ms;
        uint32_t output_cap;
};

struct exec_result {
        int exit_code;
        int term_signal;
        uint8_t *out;
        size_t out_len;
        uint8_t *err;
        size_t err_len;
        bool truncated;
        bool timed_out;
        bool oom_killed;
        bool pids_limit_hit;
        uint64_t duration_us;
};
void exec_result_release(struct exec_result *r);
struct runtime_stats;
/* Sets r->oom_killed / pids_limit_hit from the driver's figures before and after a command
 * (before_r / after_r: what stats() returned). A figure that could not be read says nothing:
 * both flags stay false unless both reads succeeded. */
void exec_result_set_limits(struct exec_result *r, int before_r, const struct runtime_stats *before, int after_r,
                            const struct runtime_stats *after);

struct runtime_capabilities {
        bool memory_snapshot;
        bool memory_snapshot_network; /* also of a sandbox with an egress link */
        bool pause;
        bool fd_passing;                  /* the agent connection can carry SCM_RIGHTS descriptors (same kernel) */
        bool exec_watch;                  /* the agent can watch a command's execs (seccomp user notifications) */
        char memory_snapshot_detail[160]; /* why (not), for operators; filled at init */
        char cgroup[8];                   /* the cgroup backend ("v1" | "v2"), "" for none */
        char version[48];                 /* what the driver runs on this host (runsc's version); "": ops->version */
};

/* What a driver reports about a sandbox's resource use (cgroup figures for namespaces).
 * Zero where the driver cannot tell. */
struct runtime_stats {
        uint64_t oom_kills;          /* processes killed by the OOM killer */
        uint64_t pids_max_hits;      /* fork/clone refused by the process limit */
        uint64_t cpu_usage_us;       /* total CPU time */
        uint64_t memory_bytes;       /* current usage */
        uint64_t memory_cache_bytes; /* of which page cache */
        uint64_t memory_limit_bytes; /* 0 when there is none */
        uint64_t disk_total_bytes;   /* the filesystem the sandbox's root lives on */
        uint64_t disk_free_bytes;
};

struct runtime_driver;

/* One driver implementation. Every function takes the instance it runs on: all state
 * (config, cgroups, uid ranges, the agent image) lives in d->state, none in the module, so
 * several instances (and a fake one in tests) can live in one process. A sandbox's
 * driver-owned handle is sb->runtime_state (JSON text the driver alone reads and writes). */
struct runtime_driver_ops {
        const char *name;
        const char *version;
        /* Fills d->state and d->caps. On failure d->state is freed (or left NULL). */
        int (*init)(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err);
        void (*free)(struct runtime_driver *d);
        /* Makes the sandbox's root filesystem from a template's (writable copy). */
        int (*create_rootfs)(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path,
                             struct space_error *err);
        int (*destroy_rootfs)(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
        /* A read-only, consistent copy of the rootfs at dst: a running sandbox is frozen for it
         * (the time frozen goes to *ret_pause_us). Its cost does not grow with the data. */
        int (*snapshot_rootfs)(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                               struct space_error *err);
        /* Replaces the rootfs of a stopped sandbox with a writable copy of src, atomically:
         * redone after a crash, it finishes the swap. */
        int (*restore_rootfs)(const struct runtime_driver *d, const struct sandbox *sb, const char *src, struct space_error *err);
        /* Launches the sandbox; fills sb->runtime_state (the caller stores it). Kills any
         * leftover first. */
        int (*start)(const struct runtime_driver *d, struct sandbox *sb, struct space_error *err);
        /* Kills every process of the sandbox and removes its host-side run state. */
        int (*stop)(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
        int (*pause)(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
        int (*resume)(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
        int (*exec)(const struct runtime_driver *d, const struct sandbox *sb, const struct exec_request *req,
                    struct exec_result *ret, struct space_error *err);
        /* 1 if the sandbox's init is alive (and, when deep, its agent answers), 0 if not. */
        int (*probe)(const struct runtime_driver *d, const struct sandbox *sb, bool deep);
        /* A connected, blocking stream to the sandbox's agent (the data plane's way in), with
         * send/receive timeouts of timeout_ms (0: none); the caller closes it. -errno:
         * -ECONNREFUSED / -ENOENT when no agent listens. */
        int (*agent_connect)(const struct runtime_driver *d, const struct sandbox *sb, int timeout_ms);
        /* Resource figures of the sandbox; 0 or -errno (*ret is zeroed either way). */
        int (*stats)(const struct runtime_driver *d, const struct sandbox *sb, struct runtime_stats *ret);
        /* 1 if path exists in the sandbox's filesystem (resolved as inside it), 0 if not, -errno. */
        int (*path_exists)(const struct runtime_driver *d, const struct sandbox *sb, const char *path);
        /* 1 if the sandbox's rootfs changed since the snapshot snapshot_path was taken of it
         * (the rolling snapshots' "unchanged" test), 0 if not, -errno when it cannot tell. */
        int (*changed_since)(const struct runtime_driver *d, const struct sandbox *sb, const char *snapshot_path);
        /* SIGKILLs every process of the sandbox, leaving its run state for stop() (cancels). */
        int (*kill)(const struct runtime_driver *d, const struct sandbox *sb);
        /* The host pid of the sandbox's init, for host helpers that join its namespaces
         * (template builds' slirp4netns); -ENOTSUP for a driver without one. */
        int (*host_pid)(const struct runtime_driver *d, const struct sandbox *sb);
        /* Puts the sandbox's rootfs under its disk limit (limit_bytes, 0: none) and into the
         * sandboxes' quota group; repeated on every start. -ENOENT when it has no rootfs,
         * -EDQUOT when the pool's space for sandboxes is used up, -errno. */
        int (*disk_limit)(const struct runtime_driver *d, const struct sandbox *sb, uint64_t limit_bytes);
        /* Gives a started sandbox its one interface toward the host, whose traffic the host
         * lets go only to the egress gateway (TCP) and its resolver (DNS); idempotent (redone
         * at every start and after a restart of spaced). Its address (dotted IPv4, the key of
         * the gateway's policy map) goes to ret_addr. stop() takes it away. NULL: the driver
         * has no network for sandboxes. */
        int (*network_attach)(const struct runtime_driver *d, const struct sandbox *sb, char *ret_addr, size_t size,
                              struct space_error *err);
        /* A TCP connection to 127.0.0.1:port inside the sandbox (its own loopback, nothing
         * else: ingress, docs/api.md "Ports"), made within timeout_ms, blocking, with send and
         * receive timeouts of io_timeout_ms. -ECONNREFUSED when nothing listens there, -ESRCH
         * when the sandbox runs no init, -ETIMEDOUT. NULL: the driver cannot reach its ports. */
        int (*port_connect)(const struct runtime_driver *d, const struct sandbox *sb, uint16_t port, int timeout_ms,
                            int io_timeout_ms);
        /* Memory state; NULL for a driver without it (caps.memory_snapshot false). Writes the
         * sandbox's processes, kernel state included, to image_dir (an empty directory) and,
         * when rootfs_dst is given, a read-only snapshot of its rootfs there taken at the same
         * frozen moment (the time frozen goes to *ret_pause_us). leave_running: the sandbox goes
         * on as it was (running or paused); else it stays frozen, for the caller to stop once
         * the image is safe (hibernation) or to resume (resume()) when what follows fails; its
         * processes stay whole, so a checkpoint redone after a crash saves them as the first
         * did. On failure it goes on as it was. */
        int (*checkpoint)(const struct runtime_driver *d, const struct sandbox *sb, const char *rootfs_dst, const char *image_dir,
                          bool leave_running, int64_t *ret_pause_us, struct space_error *err);
        /* Like start, but the processes come back from what checkpoint wrote to image_dir, on
         * the rootfs in place (restored from the snapshot taken with it, or a copy of it). */
        int (*start_from_image)(const struct runtime_driver *d, struct sandbox *sb, const char *image_dir,
                                struct space_error *err);
        /* Why the sandbox's processes ended on their own, when the driver knows (a microvm's
         * supervisor found its guest hostile or its VM gone): 1 with the reason in buf (the
         * sandbox failed), 0 when it has none to give. NULL: never. Read before stop(). */
        int (*exit_reason)(const struct runtime_driver *d, const struct sandbox *sb, char *buf, size_t size);
        /* Ids that have host resources (rootfs, cgroup or run dir), for the orphan sweep. */
        int (*list_resources)(const struct runtime_driver *d, char ***ret_ids, size_t *ret_n);
};

/* The runtime_state of a hibernated sandbox (paused, its processes only in a memory image,
 * operations/sandbox_memory.h): no process runs, and probe answers alive. */
#define RUNTIME_STATE_HIBERNATED "{\"hibernated\":true}"

struct runtime_driver {
        const struct runtime_driver_ops *ops;
        struct runtime_capabilities caps; /* filled by init */
        void *state;                      /* the driver's own, made by init */
};

extern const struct runtime_driver_ops runtime_driver_namespaces;
extern const struct runtime_driver_ops runtime_driver_gvisor;
extern const struct runtime_driver_ops runtime_driver_microvm;
