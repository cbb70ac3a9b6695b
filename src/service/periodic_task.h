/* periodic_task: a thread that runs one function of the service layer about every second
 * (expiries nobody asks for: held commands, credential grants) until it is stopped or the
 * daemon shuts down. */
#pragma once

struct spaced_context;
struct periodic_task;

int periodic_task_start(struct spaced_context *ctx, void (*run)(struct spaced_context *ctx), struct periodic_task **ret);
/* Stops it and waits for its thread; NULL is fine. */
void periodic_task_stop(struct periodic_task *t);
