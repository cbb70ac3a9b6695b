/* idle_policy: what happens to a sandbox left paused (docs/memory-state.md, Idle policy).
 * A policy is {"after_s": N, "action": "hibernate" | "stop"}: once a sandbox has been paused
 * for N seconds (since its last change, as updated_at shows) the controller hibernates it
 * (its memory to disk, where its runtime has memory state; a runtime without stays paused,
 * frozen in place) or stops it (any runtime: its processes end, its files stay). after_s 0
 * is off. A sandbox holds its own policy (sb->idle, from its create, its template's IDLE or
 * a PATCH; forks inherit it) or none, and then the server's --hibernate-idle S applies, as
 * {"after_s": S, "action": "hibernate"}. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "spaced/space_error.h"

struct spaced_context;
struct sandbox;

#define IDLE_POLICY_MAX_S 604800 /* a week, as --hibernate-idle */

enum idle_action { IDLE_HIBERNATE = 0, IDLE_STOP };

struct idle_rule {
        int64_t after_s; /* 0: off */
        enum idle_action action;
};

/* "hibernate" / "stop" -> *ret; -1 for anything else. */
int idle_action_from_name(const char *name, enum idle_action *ret);
const char *idle_action_name(enum idle_action a);

/* Validates v (what a client sent as `field`) into a normalised policy (a new reference in
 * *ret): an object with after_s (required, 0 to a week) and action (default hibernate), no
 * other field. null or NULL: *ret = NULL (none of its own). -1 with an invalid_request. */
int idle_policy_parse(const json_t *v, const char *field, json_t **ret, struct space_error *err);

/* A normalised policy of these values. Returns a new reference (NULL when out of memory). */
json_t *idle_policy_new(int64_t after_s, enum idle_action action);

/* The rule that applies to sb: its own policy, else the server's default. */
void idle_policy_effective(const struct spaced_context *ctx, const struct sandbox *sb, struct idle_rule *ret);
