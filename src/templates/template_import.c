#include "templates/template_import.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"
#include "templates/oci_import.h"
#include "templates/rootfs_archive.h"
#include "templates/template_build.h"
#include "templates/template_catalog.h"

int template_import_publish(struct spaced_context *ctx, const char *id, const char *archive, const char *format, const char *row,
                            const char *project_id, struct template_record *ret, struct space_error *err)
{
        char staging[PATH_MAX], final[PATH_MAX], scratch[PATH_MAX], outer[PATH_MAX + 8], digest[80], created[32], base[32];
        struct template_record t;
        if (STORE(ctx, template_get, row, &t) == 0) {
                bool building = strcmp(t.state, "building") == 0;
                template_record_release(&t);
                if (building)
                        return space_error_set(err, SPACE_E_INVALID_STATE, "template %s is being built", row);
        }
        if (btrfs_pool_staging_path(&ctx->pool, id, staging, sizeof(staging)) < 0 ||
            btrfs_pool_template_path(&ctx->pool, row, final, sizeof(final)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "bad template name %s", row);
        template_build_dir(ctx, id, scratch, sizeof(scratch));
        snprintf(outer, sizeof(outer), "%s/outer", scratch);
        int r = btrfs_pool_subvolume_create(staging);
        if (r < 0)
                return space_error_errno(err, r, "create %s", staging);
        uint64_t max = ctx->cfg.max_context_bytes * 4;
        json_t *config = NULL;
        if (strcmp(format, "oci") == 0) {
                r = mkdir(outer, 0700) < 0 ? space_error_errno(err, -errno, "mkdir %s", outer)
                                           : oci_import_apply(archive, outer, staging, max, &config, err);
        } else {
                struct rootfs_archive_options o = { .keep_owner = true, .max_bytes = max };
                r = rootfs_archive_extract(archive, staging, &o, NULL, err);
                config = json_pack("{s:{}, s:s, s:s, s:{}}", "env", "workdir", "/", "user", "", "labels");
        }
        if (r == 0 && (r = template_digest(staging, digest, sizeof(digest))) < 0)
                space_error_errno(err, r, "digest %s", staging);
        if (r == 0 && (r = btrfs_pool_subvolume_delete(final)) < 0)
                space_error_errno(err, r, "remove old %s", final);
        if (r == 0 && (r = btrfs_pool_snapshot(staging, final, true)) < 0)
                space_error_errno(err, r, "publish %s", final);
        btrfs_pool_subvolume_delete(staging);
        if (r < 0) {
                json_decref(config);
                if (err->code == SPACE_E_INVALID_REQUEST)
                        space_error_wrap(err, "import");
                return -1;
        }
        wallclock_format(wallclock_now_ms(), created, sizeof(created));
        snprintf(base, sizeof(base), "import:%s", format);
        memset(&t, 0, sizeof(t));
        snprintf(t.name, sizeof(t.name), "%s", row);
        snprintf(t.project_id, sizeof(t.project_id), "%s", project_id);
        snprintf(t.state, sizeof(t.state), "ready");
        t.environment = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "driver", runtime_registry_default(&ctx->runtimes)->ops->name,
                                  "driver_version", runtime_registry_default(&ctx->runtimes)->ops->version, "base", base,
                                  "digest", digest, "created_at", created, "config", config);
        t.updated_at_ms = wallclock_now_ms();
        r = STORE(ctx, template_upsert, &t);
        if (r < 0) {
                json_decref(t.environment);
                btrfs_pool_subvolume_delete(final);
                return space_error_errno(err, r, "store template %s", row);
        }
        log_info("template.imported", "template=%s format=%s digest=%s", row, format, digest);
        *ret = t;
        return 0;
}
