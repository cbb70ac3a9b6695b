/* approval_webhook: tells an operator's URL (--approval-webhook) about each approval as it
 * is requested, decided and expires, so that a person can be asked without polling
 * /v1/approvals (docs/governance.md).
 *
 * Each delivery is a POST of {"event", "delivery", "approval": <as GET /v1/approvals/{id}>}
 * with the headers
 *   X-Space-Event: approval.requested | approval.approved | approval.denied | approval.expired
 *   X-Space-Delivery: <approval id>.<event>  (the same for every attempt and every restart)
 *   X-Space-Timestamp: <unix seconds>
 *   X-Space-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" under the secret>
 * A receiver checks the signature and the timestamp's age, and deduplicates on the delivery.
 *
 * Delivery is at least once for requests: a sender thread posts in order and retries a
 * failure (no answer, or not 2xx) five times with growing pauses; and at every start each
 * approval still pending is delivered again, so a request a crash or an unreachable
 * receiver lost reaches the receiver once it answers. Decisions and expiries are retried
 * the same way but not re-sent after a restart (the approval's state is in
 * /v1/approvals). The queue holds at most 1024 deliveries; past that the oldest is dropped
 * with a warning. The URL is the operator's, never a client's. */
#pragma once

#include "state_store/state_store.h"

struct spaced_context;
struct approval_webhook;

/* Reads the secret and starts the sender, when ctx's config names a webhook (else *ret is
 * NULL and 0 is returned). -errno with reason otherwise. */
int approval_webhook_start(struct spaced_context *ctx, struct approval_webhook **ret, char *reason, size_t reason_size);
/* Queues the delivery of event about a (NULL w: nothing). Never blocks on the network. */
void approval_webhook_send(struct approval_webhook *w, const char *event, const struct approval_record *a);
/* Stops the sender; what is still queued is dropped (pending requests go again at the next
 * start). */
void approval_webhook_stop(struct approval_webhook *w);
