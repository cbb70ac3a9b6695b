/* command_channels: one output channel per sandbox that runs streamed commands.
 *
 * A channel is a thread holding the agent's output channel (JOB_SUBSCRIBE): it appends
 * each event to its command's log, then acknowledges it, so an event is acknowledged only
 * once it is on disk; after a restart of spaced the agent resends what was not, and the
 * log skips what it already has — no loss, no duplicates. It records exits in the state
 * store, and when the sandbox's agent goes away (stop, destroy, crash) it ends the
 * sandbox's unfinished commands with a "lost" exit saying why.
 *
 * Readers (event streams, waiters) learn about new records through watches: a per-command
 * condition signalled on every append. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"

struct spaced_context;
struct command_channels;

int command_channels_create(struct spaced_context *ctx, struct command_channels **ret);
/* Stops every channel thread without touching commands (they go on in the agents). */
void command_channels_free(struct command_channels *chs);

/* Starts the sandbox's channel if it is not running. */
int command_channels_ensure(struct command_channels *chs, const char *sandbox_id);
/* At start: a channel for every sandbox with unfinished commands. */
void command_channels_resume_all(struct command_channels *chs);
/* At start: removes the command logs of sandboxes that are destroyed or unknown. */
void command_channels_remove_orphan_logs(struct spaced_context *ctx);

/* Starting a command and a channel's reconciliation (which ends commands the agent does
 * not know) exclude each other per sandbox. */
void command_channels_lock_starts(struct command_channels *chs, const char *sandbox_id);
void command_channels_unlock_starts(struct command_channels *chs, const char *sandbox_id);

/* Why a command was lost, as a sentence: reason is one of sandbox_destroyed, sandbox_stopped,
 * sandbox_failed, agent_unreachable, agent_restarted (stored as the command's reason). */
const char *command_lost_message(const char *reason);

/* The log directory of a command, and of all a sandbox's commands. */
void command_channels_log_dir(const struct spaced_context *ctx, const char *sandbox_id, const char *command_id, char *buf,
                              size_t size);

enum command_wait { COMMAND_WAIT_TIMEOUT = 0, COMMAND_WAIT_CHANGED = 1, COMMAND_WAIT_NOT_LIVE = 2 };
/* Waits up to timeout_ms for the command to get records after seen_seq or to end.
 * NOT_LIVE at once when no channel follows the command (it ended, or spaced is starting):
 * the log and the store then say all there is. */
enum command_wait command_channels_wait(struct command_channels *chs, const char *command_id, uint64_t seen_seq, bool seen_end,
                                        int timeout_ms);
/* Wakes the command's waiters (after appending to its log outside a channel). */
void command_channels_notify(struct command_channels *chs, const char *command_id, uint64_t last_seq, bool ended);
