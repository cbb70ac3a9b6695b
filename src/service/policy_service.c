/* Policies: CRUD scoped to the caller's project, the cached compiled set of each project,
 * the check the front doors make, and the dry run. */
#include "service/policy_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "policy/policy_cache.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static int store_error(struct space_error *err, int r, const char *what, const char *id)
{
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "policy %s not found", id);
        return space_error_errno(err, r, "cannot %s policy %s", what, id);
}

/* Validates doc: invalid_request naming the bad rule, unsupported for what is not there yet. */
int policy_service_compile(const json_t *doc, struct policy **ret, struct space_error *err)
{
        char why[480];
        bool unsupported = false;
        if (policy_compile(doc, ret, &unsupported, why, sizeof(why)) < 0)
                return space_error_set(err, unsupported ? SPACE_E_UNSUPPORTED : SPACE_E_INVALID_REQUEST, "policy: %s", why);
        return 0;
}

/* The project a policy of p goes in: the one asked for, else p's own. */
static int target_project(struct spaced_context *ctx, const struct principal *p, const char *want, const char **ret,
                          struct space_error *err)
{
        const char *scope = NULL;
        if (project_service_scope(ctx, p, want, &scope, err) < 0)
                return -1;
        *ret = scope ? scope : p->project_id;
        return 0;
}

/* A policy narrowed to a sandbox names one of its project's. */
static int check_sandbox(struct spaced_context *ctx, const char *project_id, const struct policy *pol, struct space_error *err)
{
        if (!pol->sandbox_id[0])
                return 0;
        struct sandbox sb = { 0 };
        int r = STORE(ctx, sandbox_get, pol->sandbox_id, &sb);
        bool ok = r == 0 && strcmp(sb.project_id, project_id) == 0;
        sandbox_release(&sb);
        if (r < 0 && r != -ENOENT)
                return space_error_errno(err, r, "cannot read sandbox %s", pol->sandbox_id);
        if (!ok)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "policy: sandbox_id: sandbox %s not found in project %s",
                                       pol->sandbox_id, project_id);
        return 0;
}

int policy_service_create(struct spaced_context *ctx, const struct principal *p, const char *project, const json_t *doc,
                          struct policy_record *ret, struct space_error *err)
{
        const char *project_id;
        struct policy *pol = NULL;
        if (target_project(ctx, p, project, &project_id, err) < 0 || policy_service_compile(doc, &pol, err) < 0)
                return -1;
        struct policy_record rec = { .version = 1 };
        rec.created_at_ms = rec.updated_at_ms = wallclock_now_ms();
        random_id("pol-", 8, rec.id, sizeof(rec.id));
        snprintf(rec.project_id, sizeof(rec.project_id), "%s", project_id);
        snprintf(rec.name, sizeof(rec.name), "%s", pol->name);
        snprintf(rec.sandbox_id, sizeof(rec.sandbox_id), "%s", pol->sandbox_id);
        int r = check_sandbox(ctx, project_id, pol, err);
        policy_free(pol);
        if (r < 0)
                return -1;
        rec.document = json_deep_copy(doc);
        if (!rec.document)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        r = STORE(ctx, policy_insert, &rec);
        policy_cache_forget(ctx->policies, project_id);
        if (r == -EEXIST) {
                policy_record_release(&rec);
                return space_error_set(err, SPACE_E_ALREADY_EXISTS, "project %s has a policy named %s", project_id, rec.name);
        }
        if (r < 0) {
                policy_record_release(&rec);
                return store_error(err, r, "store", rec.id);
        }
        log_info("policy.created", "policy=%s project=%s name=%s key_id=%s", rec.id, rec.project_id, rec.name,
                 p->key_id[0] ? p->key_id : "-");
        *ret = rec;
        return 0;
}

int policy_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct policy_record *ret,
                       struct space_error *err)
{
        struct policy_record rec = { 0 };
        int r = STORE(ctx, policy_get, NULL, id, &rec);
        if (r < 0)
                return store_error(err, r, "read", id);
        if (!principal_sees_project(p, rec.project_id)) {
                policy_record_release(&rec);
                return store_error(err, -ENOENT, "read", id);
        }
        *ret = rec;
        return 0;
}

int policy_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, struct policy_record **ret,
                        size_t *ret_n, struct space_error *err)
{
        const char *scope = NULL;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, policy_list, scope, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "cannot list policies") : 0;
}

int policy_service_update(struct spaced_context *ctx, const struct principal *p, const char *id, const json_t *doc,
                          int64_t if_version, struct policy_record *ret, struct space_error *err)
{
        struct policy_record rec = { 0 };
        struct policy *pol = NULL;
        if (policy_service_get(ctx, p, id, &rec, err) < 0)
                return -1;
        if (if_version > 0 && rec.version != if_version) {
                int64_t v = rec.version;
                policy_record_release(&rec);
                return space_error_set(err, SPACE_E_CONFLICT, "policy %s is at version %lld, not %lld", id, (long long)v,
                                       (long long)if_version);
        }
        if (policy_service_compile(doc, &pol, err) < 0 || check_sandbox(ctx, rec.project_id, pol, err) < 0) {
                policy_free(pol);
                policy_record_release(&rec);
                return -1;
        }
        snprintf(rec.name, sizeof(rec.name), "%s", pol->name);
        snprintf(rec.sandbox_id, sizeof(rec.sandbox_id), "%s", pol->sandbox_id);
        policy_free(pol);
        json_decref(rec.document);
        rec.document = json_deep_copy(doc);
        rec.version++;
        rec.updated_at_ms = wallclock_now_ms();
        int r = rec.document ? STORE(ctx, policy_update, &rec) : -ENOMEM;
        policy_cache_forget(ctx->policies, rec.project_id);
        if (r < 0) {
                policy_record_release(&rec);
                if (r == -EEXIST)
                        return space_error_set(err, SPACE_E_ALREADY_EXISTS, "the project has another policy named %s", rec.name);
                if (r == -ESTALE)
                        return space_error_set(err, SPACE_E_CONFLICT, "policy %s was changed meanwhile: read it again", id);
                return store_error(err, r, "update", id);
        }
        log_info("policy.updated", "policy=%s project=%s version=%lld key_id=%s", rec.id, rec.project_id, (long long)rec.version,
                 p->key_id[0] ? p->key_id : "-");
        *ret = rec;
        return 0;
}

int policy_service_delete(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err)
{
        struct policy_record rec = { 0 };
        if (policy_service_get(ctx, p, id, &rec, err) < 0)
                return -1;
        int r = STORE(ctx, policy_delete, rec.project_id, id);
        policy_cache_forget(ctx->policies, rec.project_id);
        if (r == 0)
                log_info("policy.deleted", "policy=%s project=%s key_id=%s", rec.id, rec.project_id,
                         p->key_id[0] ? p->key_id : "-");
        policy_record_release(&rec);
        return r < 0 ? store_error(err, r, "delete", id) : 0;
}

/* The project's compiled set: the cached one, or read and compiled now (and cached).
 * Project-wide policies first, then the sandbox-narrowed ones, each by creation. */
struct policy_set *policy_service_load_set(struct spaced_context *ctx, const char *project_id, struct space_error *err)
{
        struct policy_set *set = policy_cache_get(ctx->policies, project_id);
        if (set)
                return set;
        uint64_t generation = policy_cache_generation(ctx->policies);
        struct policy_record *recs = NULL;
        size_t n = 0;
        int r = STORE(ctx, policy_list, project_id, &recs, &n);
        if (r < 0) {
                space_error_errno(err, r, "cannot read the policies of project %s", project_id);
                return NULL;
        }
        set = policy_set_new(project_id);
        for (int pass = 0; set && pass < 2; pass++)
                for (size_t i = 0; i < n; i++) {
                        if ((pass == 0) != (recs[i].sandbox_id[0] == '\0'))
                                continue;
                        struct policy *pol = NULL;
                        if (policy_service_compile(recs[i].document, &pol, err) < 0 || policy_set_add(set, pol) < 0) {
                                /* A stored document this spaced cannot read: refuse rather than ignore it. */
                                policy_free(pol);
                                space_error_set(err, SPACE_E_INTERNAL, "stored policy %s cannot be used", recs[i].id);
                                policy_set_unref(set);
                                set = NULL;
                                break;
                        }
                        snprintf(pol->id, sizeof(pol->id), "%s", recs[i].id);
                        snprintf(pol->project_id, sizeof(pol->project_id), "%s", recs[i].project_id);
                        pol->version = recs[i].version;
                }
        policy_record_array_free(recs, n);
        if (!set) {
                if (!err || err->code == SPACE_OK)
                        space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                return NULL;
        }
        policy_cache_put(ctx->policies, set, generation);
        return set;
}

int policy_service_check(struct spaced_context *ctx, const char *project_id, const struct policy_request *rq,
                         struct policy_hold *hold, struct space_error *err)
{
        struct policy_set *set = policy_service_load_set(ctx, project_id, err);
        if (!set)
                return -1;
        if (set->n == 0) {
                policy_set_unref(set);
                return 0;
        }
        struct policy_decision d;
        policy_decide((const struct policy *const *)set->items, set->n, rq, &d);
        int r = 0;
        if (d.effect == POLICY_DENY) {
                char msg[400];
                policy_decision_describe(&d, rq, msg, sizeof(msg));
                log_info("policy.denied", "project=%s sandbox=%s action=%s policy=%s rule=%s", project_id,
                         rq->sandbox_id ? rq->sandbox_id : "-", policy_action_name(rq->action), d.deciding.policy->id,
                         d.deciding.rule ? d.deciding.rule->id : "default");
                r = space_error_set(err, SPACE_E_POLICY_DENIED, "%s", msg);
        } else if (d.effect == POLICY_REQUIRE_APPROVAL) {
                char msg[400];
                policy_decision_describe(&d, rq, msg, sizeof(msg));
                if (!hold) {
                        r = space_error_set(err, SPACE_E_POLICY_DENIED, "%s, and this request cannot wait for one", msg);
                } else {
                        snprintf(hold->policy_id, sizeof(hold->policy_id), "%s", d.deciding.policy->id);
                        snprintf(hold->rule_id, sizeof(hold->rule_id), "%s", d.deciding.rule ? d.deciding.rule->id : "");
                        snprintf(hold->reason, sizeof(hold->reason), "%s", msg);
                        r = 1;
                }
        }
        policy_set_unref(set);
        return r;
}
