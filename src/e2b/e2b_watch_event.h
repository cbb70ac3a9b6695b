/* e2b_watch_event: what envd's two ways of watching a directory share — the stream
 * (Filesystem.WatchDir, e2b_watch_stream.c) and the polled watchers of the Python SDK
 * (CreateWatcher / GetWatcherEvents / RemoveWatcher, e2b_watchers.c): starting the agent's
 * watch from the request, and turning its FILE_EVENT frames into FilesystemEvents. */
#pragma once

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#include "agent_protocol/agent_frame.h"
#include "spaced/space_error.h"

struct e2b_call;
struct spaced_context;

struct e2b_watch_scope {
        struct spaced_context *ctx;
        char dir[PATH_MAX]; /* the watched directory, absolute */
        char sandbox_id[32];
};

/* Starts the agent's watch for the request msg ({"path", "recursive", "includeEntry",
 * "allowNetworkMounts"}) of call: the connection carrying its events (no read timeout), or -1
 * with err. Fills *scope. */
int e2b_watch_open(struct e2b_call *call, const json_t *msg, struct e2b_watch_scope *scope, struct space_error *err);
/* A FILE_EVENT frame as a FilesystemEvent {"name", "type", "entry"?} (name relative to the
 * watched directory; with includeEntry (envd 0.6.3) the agent adds the EntryInfo of the path,
 * stat'ed as the watching user when the event happened, unless it was gone by then), or NULL for what envd does not report: lost events (overflow), unknown
 * kinds, and an upload's unnamed file. Returns a new reference. */
json_t *e2b_watch_event_new(const struct e2b_watch_scope *scope, const struct agent_frame *f);
