/* e2b_watchers: envd's polled watchers, what the Python SDK's sync watch uses
 * (Filesystem.CreateWatcher → {"watcherId"}, GetWatcherEvents → {"events": [...]}, the
 * events since the last call, RemoveWatcher). Each holds the agent's watch of its directory
 * open between calls, the events waiting in that connection (the agent keeps up to 1 MiB
 * of them, as for a stream). A watcher belongs to its sandbox: another sandbox's token
 * cannot name it. One not asked for events for WATCHER_IDLE_S is dropped, and one whose
 * watch the agent ended (the directory went, the sandbox stopped) answers its last events,
 * then not_found. */
#pragma once

struct e2b_watchers;
struct e2b_call;
struct api_response;

int e2b_watchers_new(struct e2b_watchers **ret);
/* Ends every watch; accepts NULL. */
void e2b_watchers_free(struct e2b_watchers *w);

void e2b_fs_create_watcher(struct e2b_call *call, struct api_response *resp);
void e2b_fs_get_watcher_events(struct e2b_call *call, struct api_response *resp);
void e2b_fs_remove_watcher(struct e2b_call *call, struct api_response *resp);
