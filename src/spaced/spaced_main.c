/* spaced: the space daemon. Start-up is a flat list of steps; the first failure is logged
 * once, with its reason, and the daemon exits. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "auth/secret_keyring.h"
#include "data_plane/command_channels.h"
#include "service/approval_service.h"
#include "service/approval_webhook.h"
#include "service/console_session.h"
#include "service/exec_watch_service.h"
#include "service/grant_service.h"
#include "service/periodic_task.h"
#include "auth/secret_keyring.h"
#include "auth/node_credential.h"
#include "auth/secret_file.h"
#include "api/api_auth.h"
#include "api/http_listener.h"
#include "api/metrics_http.h"
#include "controller/daemon_health.h"
#include "api/http_server.h"
#include "cleanup.h"
#include "controller/reconciler.h"
#include "controller/snapshot_sizer.h"
#include "controller/warm_pool.h"
#include "service/sandbox_create_request.h"
#include "service/sandbox_network_request.h"
#include "e2b/e2b_server.h"
#include "egress/egress_profiles.h"
#include "operations/sandbox_network.h"
#include "runtime/egress_gateway.h"
#include "runtime/platform_ca.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "runtime/runtime_registry.h"
#include "policy/policy_cache.h"
#include "spaced/instance_id.h"
#include "operations/node_lease.h"
#include "state_store/store_transfer.h"
#include "spaced/log.h"
#include "spaced/metrics.h"
#include "spaced/sd_notify.h"
#include "spaced/tls_files.h"
#include "api/tls_credentials.h"
#include "spaced/wallclock.h"
#include "spaced/spaced_config.h"
#include "state_store/state_store_postgres.h"
#include "spaced/spaced_context.h"
#include "spaced/state_dir.h"
#include "storage/btrfs_quota.h"
#include "templates/template_catalog.h"

static int fail(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const char *event, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        log_error(event, "message=\"%s\"", LOG_ESC(msg));
        fprintf(stderr, "spaced: %s\n", msg);
        return EXIT_FAILURE;
}

/* Quotas on (the sandboxes' group limited to the pool less the reserve) or off, as asked. */
static int pool_quota_setup(const struct spaced_config *cfg, const char *pool_root)
{
        if (!cfg->disk_quota)
                return btrfs_quota_disable(pool_root);
        struct statfs sfs;
        if (statfs(pool_root, &sfs) < 0)
                return -errno;
        uint64_t total = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize, limit = 0;
        uint64_t reserve = cfg->pool_reserve_bytes ? cfg->pool_reserve_bytes : total / 10;
        int r = btrfs_quota_enable(pool_root, reserve, &limit);
        if (r < 0)
                return r;
        char mode[16] = "";
        btrfs_quota_enabled(pool_root, mode, sizeof(mode));
        log_info("spaced.quota", "mode=%s pool_bytes=%llu reserve_bytes=%llu sandboxes_limit_bytes=%llu", mode,
                 (unsigned long long)total, (unsigned long long)reserve, (unsigned long long)limit);
        return 0;
}

/* Every HTTP connection holds a descriptor (and a thread): let the listeners' own limits,
 * not RLIMIT_NOFILE's soft default, decide how many there may be. */
static void raise_fd_limit(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int check_kernel(char *reason, size_t size)
{
        static const char *const needed[] = { "/proc/self/ns/user",   "/proc/self/ns/pid", "/proc/self/ns/net",
                                              "/proc/self/ns/cgroup", "/proc/self/ns/ipc", "/proc/self/ns/uts" };
        for (size_t i = 0; i < ARRAY_SIZE(needed); i++)
                if (access(needed[i], F_OK) < 0) {
                        snprintf(reason, size, "the kernel lacks %s (namespaces are required)", needed[i]);
                        return -ENOTSUP;
                }
        return 0;
}

/* A new pool image no larger than its filesystem can hold (the sparse image would otherwise
 * fill it one day and btrfs would force the pool read-only): the default size is capped, an
 * explicit one refused, unless the operator allows overcommit. */
static int plan_pool_image(struct spaced_config *cfg, char *reason, size_t reason_size)
{
        char image[PATH_MAX + 16];
        snprintf(image, sizeof(image), "%s/pool.img", cfg->state_dir);
        if (btrfs_pool_is_btrfs(cfg->state_dir) || access(image, F_OK) == 0 || cfg->pool_overcommit)
                return 0;
        uint64_t fits = 0, avail = 0;
        int r = pool_health_image_size(cfg->state_dir, cfg->pool_bytes, 256ULL << 20, &fits, &avail);
        if (r == -ENOSPC || (r == 0 && fits < cfg->pool_bytes && cfg->pool_size_explicit)) {
                snprintf(reason, reason_size,
                         "a %llu MiB pool image does not fit in %s (%llu MiB free): give a smaller --pool-size, free space, "
                         "or --pool-overcommit on",
                         (unsigned long long)(cfg->pool_bytes >> 20), cfg->state_dir, (unsigned long long)(avail >> 20));
                return -ENOSPC;
        }
        if (r < 0) {
                snprintf(reason, reason_size, "cannot measure free space in %s: %s", cfg->state_dir, strerror(-r));
                return r;
        }
        if (fits < cfg->pool_bytes) {
                log_warn("pool.capped", "wanted_mib=%llu size_mib=%llu free_mib=%llu note=\"the default pool size does not fit\"",
                         (unsigned long long)(cfg->pool_bytes >> 20), (unsigned long long)(fits >> 20),
                         (unsigned long long)(avail >> 20));
                cfg->pool_bytes = fits;
        }
        return 0;
}

/* At a clean stop the pool image is unmounted (its loop device goes with it), unless
 * sandboxes still run on it: they keep running across a restart of spaced. */
static void release_pool(struct spaced_context *ctx)
{
        if (!ctx->pool.image[0])
                return;
        struct sandbox *all = NULL;
        size_t n = 0, live = 0;
        if (STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, all[i].runtime);
                if (!spaced_node_owns(ctx, &all[i]))
                        continue; /* another node's: not in this pool */
                if (all[i].state == SANDBOX_RUNNING || all[i].state == SANDBOX_PAUSED || !d ||
                    d->ops->probe(d, &all[i], false) == 1)
                        live++;
        }
        sandbox_array_free(all, n);
        if (live > 0) {
                log_info("pool.kept_mounted",
                         "sandboxes=%zu note=\"running sandboxes keep the pool; it is unmounted at a stop with none\"", live);
                return;
        }
        if (umount2(ctx->pool.root, 0) < 0)
                log_warn("pool.unmount_failed", "pool=%s error=\"%s\"", ctx->pool.root, strerror(errno));
        else
                log_info("pool.unmounted", "pool=%s", ctx->pool.root);
}

/* At a reload, the TLS files are read again (an operator replaced the certificate): new
 * handshakes get the new pair; open connections keep theirs. A pair that does not load
 * leaves the old one in force. TLS itself is switched on or off only by a restart. */
static void reload_tls(struct spaced_context *ctx, struct spaced_config *fresh)
{
        bool was = ctx->cfg.tls_cert_pem != NULL, now = fresh->tls_cert_path[0] != '\0';
        if (!was || !now) {
                if (was != now)
                        log_warn("spaced.tls_unchanged", "note=\"TLS is switched %s only by a restart; it stays %s\"",
                                 now ? "on" : "off", was ? "on" : "off");
                return;
        }
        char reason[512], warning[512];
        int r = tls_files_load(fresh, reason, sizeof(reason), warning, sizeof(warning));
        if (r == 0)
                r = tls_credentials_set(fresh->tls_cert_pem, fresh->tls_key_pem, reason, sizeof(reason));
        tls_files_release(fresh);
        if (r < 0) {
                log_error("spaced.tls_reload_failed", "cert=%s key=%s reason=\"%s\" note=\"the certificate in force is kept\"",
                          fresh->tls_cert_path, fresh->tls_key_path, LOG_ESC(reason));
                return;
        }
        if (warning[0])
                log_warn("spaced.tls_key_mode", "message=\"%s\"", warning);
        log_info("spaced.tls_reloaded", "cert=%s key=%s note=\"new connections get this certificate\"", fresh->tls_cert_path,
                 fresh->tls_key_path);
}

/* SIGHUP: the settings are read again (--config file, environment, flags) and those that can
 * change while running (log level and format, the TLS certificate and key) take effect; the
 * rest wait for a restart. */
static void reload_config(struct spaced_context *ctx, int argc, char **argv)
{
        struct spaced_config *fresh = calloc(1, sizeof(*fresh));
        if (!fresh || spaced_config_load(fresh, argc, argv) != 0) {
                log_error("spaced.reload_failed",
                          "note=\"the settings could not be read (the line above says why); nothing changed\"");
                free(fresh);
                return;
        }
        /* The line saying so is in the new format, at the level in force until now. */
        ctx->cfg.log_format = fresh->log_format;
        log_set_format((enum log_format)fresh->log_format);
        static const char *const levels[] = { "debug", "info", "warn", "error" };
        log_info("spaced.reloaded", "log_level=%s log_format=%s note=\"other settings take effect at a restart\"",
                 levels[fresh->log_level & 3], fresh->log_format == LOG_FORMAT_JSON ? "json" : "text");
        ctx->cfg.log_level = fresh->log_level;
        log_set_level((enum log_level)fresh->log_level);
        reload_tls(ctx, fresh);
        free(fresh);
}

/* The warm pools of --warm-pool, made as a create with this server's defaults would be. */
static int start_warm_pool(struct spaced_context *ctx)
{
        struct warm_pool_spec spec;
        struct space_error err = { 0 };
        if (warm_pool_spec_parse(ctx->cfg.warm_pool, &spec, &err) < 0)
                return fail("spaced.warm_pool", "--warm-pool: %s", err.message);
        if (!spec.n)
                return 0;
        struct sandbox_create_request req;
        sandbox_create_request_init(ctx, &req);
        json_t *network = NULL;
        int r = sandbox_network_request_parse(ctx, NULL, &network, &err);
        if (r == 0)
                r = warm_pool_new(ctx, &spec, &req.resources, network, &ctx->warm, &err);
        json_decref(network);
        sandbox_create_request_release(&req);
        if (r < 0)
                return fail("spaced.warm_pool", "warm pool: %s", err.message);
        if ((r = warm_pool_start(ctx->warm)) < 0)
                return fail("spaced.warm_pool", "cannot start the warm pool: %s", strerror(-r));
        for (size_t i = 0; i < spec.n; i++)
                log_info("spaced.warm_pool", "template=%s min=%u max=%u", spec.pools[i].template_name, spec.pools[i].min,
                         spec.pools[i].max);
        return 0;
}

/* --migrate-from sqlite:PATH: the SQLite store into the empty PostgreSQL database of
 * --database, in one transaction; the SQLite store's rows are only read. */
static int migrate_store(const struct spaced_config *cfg)
{
        if (!cfg->database[0])
                return fail("spaced.migrate", "--migrate-from needs --database, the PostgreSQL database to copy into");
        char why[1024] = "";
        long rows = 0;
        int r = store_transfer_sqlite_to_postgres(cfg->migrate_from, cfg->database, &rows, why, sizeof(why));
        if (r < 0)
                return fail("spaced.migrate", "cannot migrate %s: %s", cfg->migrate_from, why);
        log_info("spaced.migrated", "from=%s rows=%ld", cfg->migrate_from, rows);
        printf("migrated %ld rows from %s into the PostgreSQL database of --database\n", rows, cfg->migrate_from);
        return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
        static struct spaced_context ctx;
        char reason[1024] = "";
        struct space_error err = { 0 };
        json_erase_on_free(); /* before any JSON: secrets pass through it (cleanup.h) */
        int r = spaced_config_load(&ctx.cfg, argc, argv);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : 2;
        log_set_level((enum log_level)ctx.cfg.log_level);
        log_set_format((enum log_format)ctx.cfg.log_format);
        /* One thread per HTTP connection (event streams stay open for hours): glibc would give
         * them up to 8 arenas per core, each keeping freed memory; two serve them as well.
         * And a fixed mmap threshold: glibc raises it after big buffers are freed (streamed
         * output moves 256 KiB records), after which every stream's buffers came from the
         * heap, touched and kept; mapped, they cost only what is used and go back when freed. */
        mallopt(M_ARENA_MAX, 2);
        mallopt(M_MMAP_THRESHOLD, 64 << 10);

        /* Signals are taken synchronously by main; every thread inherits the mask. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);

        if (ctx.cfg.migrate_from[0]) /* a one-off: nothing else starts */
                return migrate_store(&ctx.cfg);
        if (geteuid() != 0)
                return fail("spaced.not_root", "spaced must run as root: it creates namespaces, cgroups and btrfs subvolumes");
        if (check_kernel(reason, sizeof(reason)) < 0)
                return fail("spaced.kernel", "%s", reason);
        if (!ctx.cfg.agent_path[0] || access(ctx.cfg.agent_path, X_OK) < 0)
                return fail("spaced.agent", "space-agent not found (%s); pass --agent PATH",
                            ctx.cfg.agent_path[0] ? ctx.cfg.agent_path : "not next to spaced");
        if (state_dir_secure(ctx.cfg.state_dir, reason, sizeof(reason)) < 0)
                return fail("spaced.state_dir", "%s", reason);
        raise_fd_limit();

        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/spaced.lock", ctx.cfg.state_dir);
        int lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
                return fail("spaced.locked", "another spaced is using %s", ctx.cfg.state_dir);
        char tls_warning[512];
        if (tls_files_load(&ctx.cfg, reason, sizeof(reason), tls_warning, sizeof(tls_warning)) < 0)
                return fail("spaced.tls", "%s", reason);
        if (ctx.cfg.tls_cert_pem && tls_credentials_set(ctx.cfg.tls_cert_pem, ctx.cfg.tls_key_pem, reason, sizeof(reason)) < 0)
                return fail("spaced.tls", "the certificate %s or its key %s was refused: %s", ctx.cfg.tls_cert_path,
                            ctx.cfg.tls_key_path, reason);
        if (tls_warning[0])
                log_warn("spaced.tls_key_mode", "message=\"%s\"", tls_warning);
        /* The ports are bound before anything is touched: a port in use ends the start here,
         * with one line and a non-zero exit. */
        int api_fd = http_listener_bind(ctx.cfg.listen_addr, ctx.cfg.listen_port, reason, sizeof(reason));
        if (api_fd < 0)
                return fail("spaced.listen", "%s", reason);
        int e2b_fd = -1;
        /* Two sockets of one process with SO_REUSEADDR may both bind one port: refuse here. */
        if (ctx.cfg.e2b_enabled && ctx.cfg.e2b_listen_port == ctx.cfg.listen_port)
                return fail("spaced.listen", "the E2B front door cannot listen on --listen's port %u", ctx.cfg.listen_port);
        if (ctx.cfg.e2b_enabled &&
            (e2b_fd = http_listener_bind(ctx.cfg.e2b_listen_addr, ctx.cfg.e2b_listen_port, reason, sizeof(reason))) < 0)
                return fail("spaced.listen", "E2B front door: %s", reason);
        int metrics_fd = -1;
        if (ctx.cfg.metrics_listen_enabled &&
            (ctx.cfg.metrics_listen_port == ctx.cfg.listen_port ||
             (ctx.cfg.e2b_enabled && ctx.cfg.metrics_listen_port == ctx.cfg.e2b_listen_port)))
                return fail("spaced.listen", "--metrics-listen needs a port of its own, not %u", ctx.cfg.metrics_listen_port);
        if (ctx.cfg.metrics_listen_enabled &&
            (metrics_fd = http_listener_bind(ctx.cfg.metrics_listen_addr, ctx.cfg.metrics_listen_port, reason, sizeof(reason))) <
                    0)
                return fail("spaced.listen", "metrics: %s", reason);
        if ((r = metrics_new(&ctx.metrics)) < 0 || (r = daemon_health_new(&ctx.health)) < 0)
                return fail("spaced.metrics", "%s", strerror(-r));

        /* The store: PostgreSQL when --database names one (its URL may hold a password: the
         * messages never show it), else the state directory's SQLite file. */
        snprintf(path, sizeof(path), "%s/state.db", ctx.cfg.state_dir);
        ctx.store.ops = &state_store_sqlite;
        if (ctx.cfg.database[0]) {
                ctx.store.ops = &state_store_postgres;
                snprintf(path, sizeof(path), "the PostgreSQL database of --database");
        }
        if ((r = ctx.store.ops->open(ctx.cfg.database[0] ? ctx.cfg.database : path, &ctx.store.st)) < 0) {
                return fail("spaced.store", "cannot open %s: %s", path, strerror(-r));
        }
        log_info("spaced.store", "backend=%s", ctx.store.ops->name);
        if ((r = ctx.store.ops->set_durability(ctx.store.st, ctx.cfg.durability_power)) < 0)
                return fail("spaced.store", "cannot set the durability of %s: %s", path, strerror(-r));
        if (plan_pool_image(&ctx.cfg, reason, sizeof(reason)) < 0)
                return fail("spaced.pool", "btrfs pool: %s", reason);
        if ((r = btrfs_pool_open(ctx.cfg.state_dir, ctx.cfg.pool_bytes, &ctx.pool, reason, sizeof(reason))) < 0)
                return fail("spaced.pool", "btrfs pool: %s", reason);
        /* Health is known before the first request: a pool left read-only is reported as such,
         * and spaced starts to say so (quotas cannot be set up on it until it is repaired). */
        pool_monitor_init(&ctx.pool_health);
        struct pool_health health = { 0 };
        pool_health_check(&ctx.pool, ctx.cfg.pool_low_space_bytes, &health);
        pool_monitor_set(&ctx.pool_health, &health);
        bool pool_writable = health.condition == POOL_OK || health.condition == POOL_LOW_SPACE;
        if (health.condition != POOL_OK)
                log_error("pool.unhealthy", "condition=%s reason=\"%s\"", pool_condition_name(health.condition), health.reason);
        if (!pool_writable)
                log_warn("spaced.quota", "note=\"quotas are left as they are: the pool cannot take writes\"");
        else if ((r = pool_quota_setup(&ctx.cfg, ctx.pool.root)) < 0)
                return fail("spaced.quota", "cannot %s btrfs quotas on %s: %s%s", ctx.cfg.disk_quota ? "enable" : "disable",
                            ctx.pool.root, strerror(-r),
                            ctx.cfg.disk_quota ? " (pass --disk-quota off to run without disk limits)" : "");
        char instance[32];
        if ((r = instance_id_load(ctx.cfg.state_dir, instance, sizeof(instance))) < 0)
                return fail("spaced.instance", "cannot read or create %s/instance: %s", ctx.cfg.state_dir, strerror(-r));
        /* The node's id, before anything asks whether a sandbox is this node's (the disk limits
         * at start did, and skipped every sandbox while it was still ""). */
        snprintf(ctx.node_id, sizeof(ctx.node_id), "%s", instance);
        char key_path[PATH_MAX + 16];
        snprintf(key_path, sizeof(key_path), "%s/secret.key", ctx.cfg.state_dir);
        if (secret_keyring_open(ctx.cfg.secret_key_file, ctx.cfg.secret_key_command, key_path, &ctx.keyring, &err) < 0)
                return fail("spaced.secrets", "%s", err.message);
        /* Egress: the profiles, then the gateway (its ports go into the driver's rules). */
        if (!(ctx.egress_profiles = egress_profiles_load_new(ctx.cfg.egress_profiles_path, reason, sizeof(reason))))
                return fail("spaced.egress", "egress profiles: %s", reason);
        if (!egress_profiles_find(ctx.egress_profiles, ctx.cfg.egress_profile))
                return fail("spaced.egress", "--egress-profile %s: no such profile", ctx.cfg.egress_profile);
        char subnet[32];
        snprintf(subnet, sizeof(subnet), "%u.%u.%u.%u/%d", ctx.cfg.egress_subnet >> 24, (ctx.cfg.egress_subnet >> 16) & 255,
                 (ctx.cfg.egress_subnet >> 8) & 255, ctx.cfg.egress_subnet & 255, ctx.cfg.egress_subnet_bits);
        /* The CA of HTTPS interception: its key stays here and in the gateway, its
         * certificate goes into each sandbox's trust store (docs/network.md). */
        static struct platform_ca egress_ca;
        if (platform_ca_ensure(ctx.cfg.state_dir, &egress_ca, &err) < 0)
                return fail("spaced.egress", "egress CA: %s", err.message);
        struct egress_gateway_config gc = { .program = ctx.cfg.egress_gateway_path,
                                            .ca_cert = egress_ca.cert_path,
                                            .ca_key = egress_ca.key_path,
                                            .upstream_ca = ctx.cfg.egress_upstream_ca,
                                            .resolver = ctx.cfg.egress_resolver,
                                            .refuse = subnet,
                                            .log_json = ctx.cfg.log_format == LOG_FORMAT_JSON,
                                            .on_record = sandbox_network_record,
                                            .record_arg = &ctx };
        if (egress_gateway_start(&gc, &ctx.egress, &err) < 0)
                return fail("spaced.egress", "%s", err.message);
        struct runtime_config rc = {
                .pool = &ctx.pool,
                .instance = instance,
                .state_dir = ctx.cfg.state_dir,
                .proc_views = ctx.cfg.proc_views,
                .egress_tcp_port = egress_gateway_tcp_port(ctx.egress),
                .egress_dns_port = egress_gateway_dns_port(ctx.egress),
                /* an operator who asked for egress gets it or no spaced */
                .egress_required = strcmp(ctx.cfg.egress_profile, "none") != 0 || ctx.cfg.egress_profiles_path[0],
                .egress_subnet = ctx.cfg.egress_subnet,
                .egress_subnet_bits = ctx.cfg.egress_subnet_bits,
                .egress_ca_pem = egress_ca.cert_pem,
        };
        snprintf(rc.run_dir, sizeof(rc.run_dir), "%s/run", ctx.cfg.state_dir);
        snprintf(rc.agent_path, sizeof(rc.agent_path), "%s", ctx.cfg.agent_path);
        snprintf(rc.vmlink_path, sizeof(rc.vmlink_path), "%s", ctx.cfg.vmlink_path);
        snprintf(rc.microvm_guest_script, sizeof(rc.microvm_guest_script), "%s", ctx.cfg.microvm_guest_script);
        snprintf(rc.microvm_accel, sizeof(rc.microvm_accel), "%s", ctx.cfg.microvm_accel);
        if (runtime_registry_add(&ctx.runtimes, &runtime_driver_namespaces, &rc, &err) < 0)
                return fail("spaced.runtime", "runtime %s: %s", runtime_driver_namespaces.name, err.message);
        /* gvisor where runsc is installed; without it the server runs, and a create that
         * asks for gvisor is a 422 naming the package. */
        if (runtime_registry_add(&ctx.runtimes, &runtime_driver_gvisor, &rc, &err) < 0) {
                log_warn("runtime.gvisor_off", "reason=\"%s\" effect=\"sandboxes cannot run on the gvisor runtime\"",
                         LOG_ESC(err.message));
                err = (struct space_error){ 0 };
        }
        /* microvm where QEMU is installed (and the guest kernel can be unpacked): likewise. */
        if (runtime_registry_add(&ctx.runtimes, &runtime_driver_microvm, &rc, &err) < 0) {
                log_warn("runtime.microvm_off", "reason=\"%s\" effect=\"sandboxes cannot run on the microvm runtime\"",
                         LOG_ESC(err.message));
                err = (struct space_error){ 0 };
        }
        const struct runtime_driver *default_driver = runtime_registry_default(&ctx.runtimes);
        if ((r = operation_queue_new(&ctx, ctx.cfg.workers, &ctx.queue)) < 0)
                return fail("spaced.workers", "cannot start workers: %s", strerror(-r));
        if (template_catalog_init(&ctx, &err) < 0)
                return fail("spaced.templates", "%s", err.message);
        if (ctx.cfg.fleet_secret_path[0]) {
                char why[PATH_MAX + 128];
                if (secret_file_read(ctx.cfg.fleet_secret_path, "the fleet secret", FLEET_SECRET_MIN, ctx.fleet_secret,
                                     sizeof(ctx.fleet_secret), &ctx.fleet_secret_len, why, sizeof(why)) < 0)
                        return fail("spaced.fleet_secret", "%s", why);
        }
        if (api_auth_bootstrap(&ctx, &err) < 0)
                return fail("spaced.auth", "%s", err.message);
        if ((r = command_channels_create(&ctx, &ctx.channels)) < 0)
                return fail("spaced.data_plane", "cannot create command logs: %s", strerror(-r));
        if ((r = console_sessions_new(&ctx.console_sessions)) < 0)
                return fail("spaced.console", "cannot hold console sessions: %s", strerror(-r));
        if ((r = policy_cache_new(&ctx.policies)) < 0)
                return fail("spaced.policies", "cannot hold policies: %s", strerror(-r));
        ctx.exec_watch = &exec_watch_service_hooks;
        if ((r = sandbox_lifecycle_disk_limits(&ctx)) < 0)
                return fail("spaced.quota", "cannot read sandboxes: %s", strerror(-r));
        /* This node of the fleet: registered (its earlier claims let go) before the
         * reconciler claims what it runs again; heartbeating and claiming more once the
         * reconciler is done (it assumes no operation runs while it sweeps). */
        char node_url[HTTP_LISTENER_URL_MAX];
        http_listener_url(&ctx.cfg, ctx.cfg.listen_addr, ctx.cfg.listen_port, node_url, sizeof(node_url));
        if (node_lease_register(&ctx, node_url, &err) < 0)
                log_error("spaced.node_unregistered",
                          "error=\"%s\" note=\"starting without claiming work; the "
                          "registration is tried again every second\"",
                          LOG_ESC(err.message));
        if ((r = reconciler_startup(&ctx)) < 0)
                return fail("spaced.reconcile", "reconciliation failed: %s", strerror(-r));
        struct node_lease *lease = NULL;
        if ((r = node_lease_start(&ctx, &lease)) < 0)
                return fail("spaced.node", "cannot start the node heartbeat: %s", strerror(-r));
        /* Sandboxes that ran on while spaced was away get their links and policies again. */
        sandbox_network_restore(&ctx);
        /* Streamed commands that ran on while spaced was away: collect what they wrote. */
        command_channels_resume_all(ctx.channels);
        /* Held commands decided (or due) while spaced was away: run or end them now (and
         * tell the webhook, which starts first, about those still pending). */
        if ((r = approval_webhook_start(&ctx, &ctx.approval_webhook, reason, sizeof(reason))) < 0)
                return fail("spaced.approvals", "%s", reason);
        approval_service_resume(&ctx);
        /* After the orphan sweep, which removes the warm sandboxes an earlier spaced left. */
        if (start_warm_pool(&ctx) != 0)
                return EXIT_FAILURE;

        daemon_health_tick(&ctx, 0); /* the first /v1/health answer is a measured one */
        struct http_server *http = NULL;
        if (http_server_start(&ctx, api_fd, &http, reason, sizeof(reason)) < 0)
                return fail("spaced.listen", "%s", reason);
        struct e2b_server *e2b = NULL;
        if (ctx.cfg.e2b_enabled && e2b_server_start(&ctx, e2b_fd, &e2b, reason, sizeof(reason)) < 0)
                return fail("spaced.listen", "%s", reason);
        struct metrics_listener *metrics = NULL;
        if (metrics_fd >= 0 && metrics_listener_start(&ctx, metrics_fd, &metrics, reason, sizeof(reason)) < 0)
                return fail("spaced.listen", "%s", reason);
        char url[HTTP_LISTENER_URL_MAX];
        if (metrics)
                log_info("spaced.metrics_ready", "url=%s/metrics",
                         http_listener_url(&ctx.cfg, ctx.cfg.metrics_listen_addr, ctx.cfg.metrics_listen_port, url, sizeof(url)));
        if (e2b)
                log_info("spaced.e2b_ready", "url=%s",
                         http_listener_url(&ctx.cfg, ctx.cfg.e2b_listen_addr, ctx.cfg.e2b_listen_port, url, sizeof(url)));
        struct reconciler *controller = NULL;
        if ((r = reconciler_start(&ctx, &controller)) < 0)
                return fail("spaced.controller", "cannot start controller: %s", strerror(-r));
        struct snapshot_sizer *sizer = NULL;
        if ((r = snapshot_sizer_start(&ctx, &sizer)) < 0)
                return fail("spaced.controller", "cannot start snapshot sizer: %s", strerror(-r));
        struct approval_expiry *expiry = NULL;
        if ((r = approval_expiry_start(&ctx, &expiry)) < 0)
                return fail("spaced.approvals", "cannot start approval expiry: %s", strerror(-r));
        struct periodic_task *grant_expiry = NULL;
        if ((r = periodic_task_start(&ctx, grant_service_expire, &grant_expiry)) < 0)
                return fail("spaced.secrets", "cannot start grant expiry: %s", strerror(-r));

        http_listener_url(&ctx.cfg, ctx.cfg.listen_addr, ctx.cfg.listen_port, url, sizeof(url));
        log_info("spaced.ready", "url=%s admin_key=%s/admin.key state_dir=%s instance=%s runtime=%s cgroup=%s pool=%s", url,
                 ctx.cfg.state_dir, ctx.cfg.state_dir, instance, default_driver->ops->name, default_driver->caps.cgroup,
                 ctx.pool.root);
        printf("spaced %s listening on %s\nadmin key: %s/admin.key\n", SPACE_VERSION, url, ctx.cfg.state_dir);
        fflush(stdout);
        char status[160];
        snprintf(status, sizeof(status), "READY=1\nSTATUS=listening on %s\nMAINPID=%ld", url, (long)getpid());
        if ((r = sd_notify_send(status)) < 0)
                log_warn("spaced.notify_failed", "error=\"%s\" note=\"$NOTIFY_SOCKET could not be told\"", strerror(-r));

        int sig = 0;
        while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) {
                char reloading[64];
                snprintf(reloading, sizeof(reloading), "RELOADING=1\nMONOTONIC_USEC=%lld", (long long)monotonic_now_us());
                sd_notify_send(reloading);
                reload_config(&ctx, argc, argv);
                sd_notify_send("READY=1");
        }

        /* Graceful stop: no new work, let running operations finish, leave sandboxes running. */
        log_info("spaced.stopping", "signal=%d", sig);
        sd_notify_send("STOPPING=1");
        atomic_store(&ctx.shutting_down, true);
        http_server_quiesce(http);
        e2b_server_quiesce(e2b);
        metrics_listener_quiesce(metrics);
        warm_pool_stop(ctx.warm);
        approval_expiry_stop(expiry);
        approval_webhook_stop(ctx.approval_webhook);
        ctx.approval_webhook = NULL;
        periodic_task_stop(grant_expiry);
        command_channels_free(ctx.channels);
        reconciler_free(controller);
        snapshot_sizer_free(sizer);
        node_lease_free(lease); /* claims left lapse a lease later: another node, or the next start, runs them */
        operation_queue_free(ctx.queue);
        for (int i = 0;
             i < 100 && http_server_connections(http) + e2b_server_connections(e2b) + metrics_listener_connections(metrics) > 0;
             i++)
                usleep(50 * 1000);
        bool drained = http_server_connections(http) + e2b_server_connections(e2b) + metrics_listener_connections(metrics) == 0;
        /* Sandboxes run on, without egress until a spaced starts again (fail closed). */
        egress_gateway_free(ctx.egress);
        /* While the drivers are still there: it asks them whether any sandbox still runs. */
        release_pool(&ctx);
        if (drained) {
                http_server_free(http);
                e2b_server_free(e2b);
                metrics_listener_free(metrics);
                metrics_free(ctx.metrics);
                console_sessions_free(ctx.console_sessions);
                policy_cache_free(ctx.policies);
                secret_keyring_free(ctx.keyring);
                warm_pool_free(ctx.warm);
                runtime_registry_free(&ctx.runtimes); /* the egress table goes when no sandbox holds a link */
        }
        /* The store stays open to the end: command followers are detached threads that the
         * shutdown above woke, and one may still be recording what it saw; every commit is
         * already on disk (WAL), and the process's exit releases the database. */
        log_info("spaced.stopped", "drained=%s", drained ? "true" : "false");
        /* Long execs may still hold connections: exit without waiting for them. */
        _exit(EXIT_SUCCESS);
}
