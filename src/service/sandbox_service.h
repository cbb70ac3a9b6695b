/* sandbox_service: sandboxes as a caller sees and changes them, the same calls for both front
 * doors (the v1 API and E2B's). What a caller may see is decided here, inside each call
 * (sandbox_access_load, project_service_scope), so a front door cannot forget it. The
 * lifecycle (create, actions, snapshots, forks) is operations/'s. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The sandboxes p sees, in project (NULL: p's own; the platform's: all; not_found for a
 * project p does not see) and state_filter (< 0: any), paged as the store pages. */
int sandbox_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, int state_filter,
                         const struct store_page *page, struct sandbox **ret, size_t *ret_n, struct space_error *err);

/* As sandbox_access_load, and running: unavailable ("sandbox <id> is <state>") otherwise. */
int sandbox_service_get_running(struct spaced_context *ctx, const struct principal *p, const char *id, struct sandbox *ret,
                                struct space_error *err);

/* What a client may change on a sandbox after its create; each part optional. */
struct sandbox_change {
        const json_t *metadata; /* borrowed; NULL: unchanged */
        const char *on_timeout; /* pause | stop | destroy (checked by the caller's parser); NULL: unchanged */
        bool set_rolling;       /* rolling (NULL: none) replaces the policy */
        const json_t *rolling;  /* borrowed */
        bool set_idle;          /* idle (NULL: none of its own) replaces the idle policy */
        const json_t *idle;     /* borrowed: normalised (operations/idle_policy.h) */
        long long timeout_s;    /* < 0: unchanged; a new one counts from now for a running sandbox */
        bool only_extend;       /* a timeout that would end a running sandbox sooner than now is left alone */
};

/* Changes sandbox id for p: not_found as sandbox_access_load, invalid_state when it is
 * destroyed or being destroyed. *ret (may be NULL) is the row afterwards. */
int sandbox_service_change(struct spaced_context *ctx, const struct principal *p, const char *id, const struct sandbox_change *c,
                           struct sandbox *ret, struct space_error *err);

/* Takes the timeout off sandbox id (it waits without one: E2B's paused sandboxes). */
int sandbox_service_clear_expiry(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err);
/* Makes running sandbox id expire now (E2B's timeout 0): the controller applies its
 * on_timeout at its next check; its timeout_s stays. invalid_state when it is not running. */
int sandbox_service_expire_now(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err);

/* Authentication of a caller that holds one sandbox's own credential (E2B's envd token, a
 * signed URL): it acts in that sandbox's project and nowhere else, with no key's rights.
 * *ret is zeroed and, when the sandbox exists, given its project. */
void sandbox_service_token_caller(struct spaced_context *ctx, const char *id, struct principal *ret);

/* Authentication of a signed URL that names no sandbox: the ids of every running sandbox,
 * whose credentials the caller tries (the caller is not known yet). *ret is freed with free(). */
int sandbox_service_running_ids(struct spaced_context *ctx, char (**ret)[32], size_t *ret_n, struct space_error *err);

/* Brings loaded sandbox sb back when it is paused (resume) or stopped (start), through its
 * lifecycle operation, and waits for it; nothing to do when it runs. *ret_woken (may be NULL)
 * says whether it had to. invalid_state for any other state; the operation's error. */
int sandbox_service_wake(struct spaced_context *ctx, const struct sandbox *sb, bool *ret_woken, struct space_error *err);

struct runtime_stats;
/* The runtime's figures of a loaded sandbox (CPU time, memory, disk, limit hits): 0, or
 * -errno with *ret zeroed (a driver that cannot tell, a sandbox that is not running). */
int sandbox_service_usage(struct spaced_context *ctx, const struct sandbox *sb, struct runtime_stats *ret);
