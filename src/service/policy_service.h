/* policy_service: a project's policies (docs/governance.md) as a caller manages them, and the
 * check both front doors make before an action a policy can govern.
 *
 * Documents are validated by src/policy/ (invalid_request naming the bad rule; unsupported,
 * a 422, for what this step does not do: require_approval, egress). Every change empties the
 * project's entry in ctx->policies, so the next check compiles the new set once and later
 * ones only match. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "auth/principal.h"
#include "policy/policy_eval.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Stores doc as a new policy of project (as project_service_scope: NULL is p's own; the
 * platform must name one). already_exists for a name the project has. */
int policy_service_create(struct spaced_context *ctx, const struct principal *p, const char *project, const json_t *doc,
                          struct policy_record *ret, struct space_error *err);
/* not_found when unknown or another project's (unless p is the platform). */
int policy_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct policy_record *ret,
                       struct space_error *err);
/* The policies of project (as project_service_scope). policy_record_array_free. */
int policy_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, struct policy_record **ret,
                        size_t *ret_n, struct space_error *err);
/* Replaces the document (version + 1). if_version > 0: only if the stored one is that
 * version (conflict otherwise, as when another update won). */
int policy_service_update(struct spaced_context *ctx, const struct principal *p, const char *id, const json_t *doc,
                          int64_t if_version, struct policy_record *ret, struct space_error *err);
int policy_service_delete(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err);

/* Which rule holds a request for approval, and the sentence that says so. */
struct policy_hold {
        char policy_id[32];
        char rule_id[64]; /* "" when the policy's default held it */
        char reason[400];
};

/* The check before an action in project_id: 0 when allowed; 1 when a policy requires
 * approval (and none denies) and the caller can hold the request (hold given: filled);
 * -1 with policy_denied (403, the policy, rule and message in err) when a policy denies it
 * (or requires an approval the caller cannot wait for: hold NULL), or the error that kept
 * the policies from being read (then nothing is done either: a check that cannot be made
 * refuses). */
int policy_service_check(struct spaced_context *ctx, const char *project_id, const struct policy_request *rq,
                         struct policy_hold *hold, struct space_error *err);

/* The dry run of POST /v1/policies/test: what the policies of the project would decide on
 * body's "request" (with body's "policy", a draft, in place of the stored one of its name).
 * Returns a new reference: {"decision", "policy", "rule", "message", "verdicts"}. */
json_t *policy_service_dry_run_new(struct spaced_context *ctx, const struct principal *p, const json_t *body,
                                   struct space_error *err);

/* For the dry run (policy_dry_run.c): the project's compiled set (a new reference; NULL and
 * err when it cannot be read), and a document compiled with the service's errors. */
struct policy_set;
struct policy_set *policy_service_load_set(struct spaced_context *ctx, const char *project_id, struct space_error *err);
int policy_service_compile(const json_t *doc, struct policy **ret, struct space_error *err);
