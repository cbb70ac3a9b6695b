/* runtime_driver: how a sandbox's processes and root filesystem are made and managed.
 * A const table per driver (namespaces now, microvm later), chosen at start. Every function
 * is idempotent where it can be, so a crash mid-way can simply be redone. Returns 0 or -1
 * with err filled (code + message for the API caller). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct btrfs_pool;
struct cgroup_manager;

struct runtime_config {
        const struct btrfs_pool *pool;
        const struct cgroup_manager *cgroups;
        char run_dir[4096];    /* <state>/run: per-sandbox host-side directories */
        char agent_path[4096]; /* the static space-agent binary */
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

struct runtime_capabilities {
        bool memory_snapshot;
        bool pause;
        char memory_snapshot_detail[160]; /* why (not), for operators; filled at init */
};

struct runtime_driver {
        const char *name;
        const char *version;
        struct runtime_capabilities *caps_detected; /* filled by init */
        int (*init)(const struct runtime_config *cfg, struct space_error *err);
        /* Makes the sandbox's root filesystem from a template's (writable copy). */
        int (*create_rootfs)(const struct sandbox *sb, const char *template_path, struct space_error *err);
        int (*destroy_rootfs)(const struct sandbox *sb, struct space_error *err);
        /* A read-only, consistent copy of the rootfs at dst: a running sandbox is frozen for it
         * (the time frozen goes to *ret_pause_us). Its cost does not grow with the data. */
        int (*snapshot_rootfs)(const struct sandbox *sb, const char *dst, int64_t *ret_pause_us, struct space_error *err);
        /* Replaces the rootfs of a stopped sandbox with a writable copy of src, atomically:
         * redone after a crash, it finishes the swap. */
        int (*restore_rootfs)(const struct sandbox *sb, const char *src, struct space_error *err);
        /* Launches the sandbox; fills sb->pid and sb->pid_start. Kills any leftover first. */
        int (*start)(struct sandbox *sb, struct space_error *err);
        /* Kills every process of the sandbox and removes its host-side run state. */
        int (*stop)(const struct sandbox *sb, struct space_error *err);
        int (*pause)(const struct sandbox *sb, struct space_error *err);
        int (*resume)(const struct sandbox *sb, struct space_error *err);
        int (*exec)(const struct sandbox *sb, const struct exec_request *req, struct exec_result *ret, struct space_error *err);
        /* 1 if the sandbox's init is alive (and, when deep, its agent answers), 0 if not. */
        int (*probe)(const struct sandbox *sb, bool deep);
        /* The path of the unix socket where the sandbox's agent listens (the data plane's way in). */
        int (*agent_socket)(const struct sandbox *sb, char *buf, size_t size);
        /* Ids that have host resources (rootfs, cgroup or run dir), for the orphan sweep. */
        int (*list_resources)(char ***ret_ids, size_t *ret_n);
};

extern const struct runtime_driver runtime_driver_namespaces;
