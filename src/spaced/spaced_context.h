/* spaced_context: what every layer of the daemon is handed — config, the state store, the
 * runtime drivers, the btrfs pool, the operation queue. One per process. */
#pragma once

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/runtime_registry.h"
#include "state_store/state_store.h"
#include "storage/btrfs_pool.h"
#include "storage/pool_health.h"

struct metrics;
struct daemon_health;

struct operation_queue;
struct egress_gateway;
struct command_channels;
struct console_sessions;
struct policy_cache;
struct exec_watch_hooks;
struct warm_pool;
struct secret_keyring;

#define SPACED_DISK_MB_MAX (16LL * 1024 * 1024) /* 16 TiB */

/* --role (docs/fleet.md): a control process serves the APIs and the database's work but is no
 * node (it owns no sandbox and claims no operation); a node and all run sandboxes. */
enum spaced_role { SPACED_ROLE_ALL = 0, SPACED_ROLE_CONTROL, SPACED_ROLE_NODE };
#define SPACED_NODE_LABELS_MAX 8

struct spaced_config {
        char state_dir[PATH_MAX];
        /* --database: a PostgreSQL URL (state_store_postgres.h); "" is the SQLite file
         * state_dir/state.db. Holds a password when the URL does: never logged. */
        char database[1024];
        char listen_addr[64];
        uint16_t listen_port;
        char unix_socket[PATH_MAX];
        char agent_path[PATH_MAX];
        char debian_mirror[256];
        char build_network[16]; /* "slirp4netns" | "none"; "" until chosen at start */
        char presets_dir[PATH_MAX];
        char console_dir[PATH_MAX]; /* the web console's files (docs/console.md) */
        uint64_t max_context_bytes; /* build contexts and import archives */
        uint64_t pool_bytes;
        bool pool_size_explicit;       /* --pool-size was given: refuse rather than cap it */
        bool pool_overcommit;          /* allow an image larger than its filesystem's free space */
        uint64_t pool_low_space_bytes; /* host free space under the image that counts as low */
        int64_t pool_trim_interval_s;  /* 0: never trim */
        int64_t destroyed_retention_s; /* rows of destroyed sandboxes are kept this long */
        int64_t audit_retention_s;     /* audit log rows are kept this long */
        int64_t operation_retention_s; /* finished operations are kept this long */
        bool durability_power;         /* --durability power: every acknowledgement is on disk first */
        uint64_t max_body_bytes;
        uint32_t exec_output_cap;
        /* every HTTP listener (src/api/http_listener.h) */
        unsigned http_header_timeout_s;    /* inactivity before a request is authenticated */
        unsigned http_idle_timeout_s;      /* inactivity after */
        unsigned http_max_connections;     /* per listener */
        unsigned http_max_per_ip;          /* per listener and client address (TCP) */
        unsigned http_max_unauthenticated; /* per listener; < http_max_connections */
        int workers;
        int log_level;
        int log_format; /* enum log_format */
        /* server default rolling snapshot policy for sandboxes that do not set one */
        int64_t rolling_interval_s; /* 0: off */
        int64_t hibernate_idle_s;   /* paused this long: hibernated where the runtime can; 0: off */
        int64_t rolling_retain_s;
        int64_t rolling_max_count;
        /* data plane */
        int64_t session_ttl_s;                       /* default attach token lifetime */
        int64_t approval_timeout_s;                  /* a held command expires (is denied) after this long (docs/governance.md) */
        char approval_webhook_url[512];              /* "" for none (service/approval_webhook.h) */
        char approval_webhook_secret_path[PATH_MAX]; /* the HMAC key the deliveries are signed with */
        int64_t claim_lease_s;                       /* --claim-lease: a node's claims lapse this long after its last heartbeat */
        int role;                                    /* --role: enum spaced_role */
        char migrate_from[1024];          /* --migrate-from sqlite:PATH: the SQLite file to copy into --database, then exit */
        int64_t node_lost_after_s;        /* --node-lost-after: a node silent this long is marked lost */
        char fleet_secret_path[PATH_MAX]; /* --fleet-secret: "" none (auth/node_credential.h) */
        /* --node-label k=v (repeatable; a key given again takes its last value): the node
         * row's labels, for placement (docs/fleet.md) */
        char node_labels[SPACED_NODE_LABELS_MAX][64];
        int node_label_count;
        uint64_t command_log_cap; /* bytes of output kept per command */
        uint64_t sandbox_log_cap; /* bytes of output kept per sandbox, all its commands */
        /* disk quotas (storage/btrfs_quota.h) */
        bool disk_quota;             /* enforced; off: disk_mb is refused */
        bool memory_import;          /* --memory-import: clients may bring memory images (runsc restore parses them) */
        bool proc_views;             /* sandboxes' own /proc figures (runtime/namespaces/ns_proc_view.h) */
        char warm_pool[512];         /* --warm-pool: "TEMPLATE=N|MIN:MAX,..." (controller/warm_pool.h) */
        uint64_t pool_reserve_bytes; /* 0: 10% of the pool */
        int64_t sandbox_disk_mb;     /* default limit of a new sandbox */
        int64_t sandbox_disk_max_mb; /* largest limit a create may ask for */
        /* egress (docs/network.md) */
        char egress_profile[64];             /* the server's default profile */
        char egress_profiles_path[PATH_MAX]; /* "" for the built-ins only */
        uint32_t egress_subnet;              /* host byte order */
        int egress_subnet_bits;
        char egress_resolver[64];           /* "" for the host's (/etc/resolv.conf) */
        char egress_upstream_ca[4096];      /* --egress-upstream-ca: "" for the host bundle */
        char egress_gateway_path[PATH_MAX]; /* the space-egress binary */
        /* ingress: sandbox ports served over HTTP (api/port_proxy.h) */
        unsigned ingress_timeout_s;   /* connect, response headers, then inactivity either way */
        unsigned ingress_connections; /* open at once per sandbox */
        /* the secret store's master key (auth/secret_keyring.h): a file, or a command that
         * prints it (a KMS); neither: state_dir/secret.key, made 0600 at the first start */
        char secret_key_file[PATH_MAX];
        char secret_key_command[1024];
        /* the microvm runtime (docs/runtimes.md) */
        char vmlink_path[PATH_MAX];          /* the space-vmlink binary */
        char microvm_guest_script[PATH_MAX]; /* microvm-guest-image, which makes its kernel and initramfs */
        char microvm_accel[8];               /* "auto" | "kvm" | "tcg" */
        /* E2B front door (src/e2b/): off unless --e2b-listen is given */
        bool e2b_enabled;
        char e2b_listen_addr[64];
        uint16_t e2b_listen_port;
        char e2b_templates[512]; /* "e2bid=space_template,..." */
        char e2b_domain[128];    /* sandboxes' hosts are <port>-<id>.<domain>; "": none (path form only) */
        /* TLS on every TCP listener (API, E2B, metrics): both paths or neither. The PEM
         * text is read by spaced_main (spaced/tls_files.h) before the listeners start. */
        char tls_cert_path[PATH_MAX];
        char tls_key_path[PATH_MAX];
        char *tls_cert_pem;
        char *tls_key_pem;
        /* /metrics without a key on a listener of its own: off unless --metrics-listen */
        bool metrics_listen_enabled;
        char metrics_listen_addr[64];
        uint16_t metrics_listen_port;
};

struct spaced_context {
        struct spaced_config cfg;
        struct state_handle store;
        struct runtime_registry runtimes; /* the drivers this daemon hosts; sb->runtime picks one */
        struct btrfs_pool pool;
        struct operation_queue *queue;
        struct command_channels *channels; /* data plane: per-sandbox output channels */
        struct pool_monitor pool_health;   /* the latest check of the pool (controller) */
        struct metrics *metrics;           /* counters for /metrics (spaced/metrics.h); NULL: none kept */
        struct daemon_health *health;      /* the controller's checks of spaced itself (controller/daemon_health.h) */
        json_t *egress_profiles;           /* egress/egress_profiles.h: by name, built-ins included */
        struct egress_gateway *egress;     /* the supervised space-egress (runtime/egress_gateway.h) */
        /* the web console's sign-ins (service/console_session.h) */
        struct console_sessions *console_sessions;
        struct policy_cache *policies; /* each project's compiled policies (policy/policy_cache.h); NULL: read each time */
        /* what decides the execs a watched command makes (data_plane/exec_watch_hooks.h); NULL:
         * none is watched, and a check that arrives is denied */
        const struct exec_watch_hooks *exec_watch;
        struct warm_pool *warm; /* sandboxes made ahead of their creates (controller/warm_pool.h); NULL: none */
        struct approval_webhook *approval_webhook; /* service/approval_webhook.h; NULL: no --approval-webhook */
        struct secret_keyring *keyring;            /* seals and opens the platform-held secrets (auth/secret_keyring.h) */
        atomic_bool shutting_down;
        /* This node of the fleet (docs/fleet.md): its id (the state directory's instance),
         * which claims its operations and owns its sandboxes; "" until spaced registered it. */
        char node_id[32];
        char node_address[96];       /* its API URL, as registered */
        atomic_bool node_registered; /* its row written; until then it heartbeats and claims nothing */
        /* --fleet-secret's key (auth/node_credential.h): signs the data-plane requests this
         * process passes on to a sandbox's node and checks those other nodes pass on here;
         * length 0: none (no request is passed on, none is taken) */
        unsigned char fleet_secret[1024];
        size_t fleet_secret_len;
};

/* Whether sb lives on this node (or on none yet: a row from before the fleet): only then
 * may this node's controller probe, settle, expire or snapshot it. */
static inline bool spaced_node_owns(const struct spaced_context *ctx, const struct sandbox *sb)
{
        if (ctx->cfg.role == SPACED_ROLE_CONTROL)
                return false; /* no sandbox lives on a control process */
        return !sb->node_id[0] || strcmp(sb->node_id, ctx->node_id) == 0;
}

/* Whether this process claims and runs operations (a node of the fleet; not --role control). */
static inline bool spaced_runs_operations(const struct spaced_context *ctx)
{
        return ctx->cfg.role != SPACED_ROLE_CONTROL;
}

/* Shorthand for calling the store backend. */
#define STORE(ctx, fn, ...) ((ctx)->store.ops->fn((ctx)->store.st, __VA_ARGS__))
