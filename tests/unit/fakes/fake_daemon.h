/* fake_daemon: a spaced_context for unit tests of the operations and the controller, wired
 * as spaced_main.c wires it but on fakes: the SQLite store on a file in a temporary state
 * directory behind a fault_store, one fake_driver (the default runtime), a pool directory
 * that is not btrfs (only its paths are used: templates/base exists, snapshots are made
 * there by the fake driver), a healthy pool monitor, and an operation queue. One
 * fault_plan is shared by the store and the driver. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "spaced/spaced_context.h"

#include "fake_driver.h"
#include "fault_plan.h"
#include "fault_store.h"

#define FAKE_TEMPLATE "base"

struct fake_daemon {
        struct spaced_context ctx;
        struct fault_plan faults;
        const struct runtime_driver *driver; /* the fake, owned by ctx.runtimes */
        char dir[PATH_MAX];                  /* the state directory */
        char db[PATH_MAX + 16];
        int workers;
};

/* 0, or -errno. */
int fake_daemon_start(struct fake_daemon *fd, int workers);
void fake_daemon_stop(struct fake_daemon *fd);
/* What a kill -9 and a new start do: the queue stops (running handlers finish first; under
 * a crash plan they change nothing), the store is closed and opened again, the fault plan is
 * disarmed, a new queue starts and reconciler_startup runs. 0 or -errno. */
int fake_daemon_restart(struct fake_daemon *fd);
/* The same with the plan armed as given once the store is open again, so that the start
 * itself (the reconciler's steps and the operations it resumes) meets the fault. Its result
 * is reconciler_startup's. */
int fake_daemon_restart_faulty(struct fake_daemon *fd, enum fault_mode mode, long n, const char *only);
/* Waits (up to 10 s) until op_id has ended, read from the inner store; 0 or -ETIMEDOUT. */
int fake_daemon_wait(struct fake_daemon *fd, const char *op_id, struct operation *ret);
/* Waits (up to 10 s) until no operation is pending or running. 0 or -ETIMEDOUT. */
int fake_daemon_drain(struct fake_daemon *fd);
/* Waits until the plan fired or op_id ended (NULL: every operation), as the inner store
 * says, then stops the queue: after a crash nothing more may run. Returns whether the plan
 * fired. */
bool fake_daemon_halt(struct fake_daemon *fd, const char *op_id);
/* The sandbox as the inner store has it; 0 or -errno. */
int fake_daemon_sandbox(struct fake_daemon *fd, const char *id, struct sandbox *ret);

/* Whether the rows and the fake host agree (through the inner store): every sandbox is in a
 * settled state and holds exactly what that state needs (running and paused: its rootfs and
 * its init with the handle its row names; stopped: its rootfs only; failed and destroyed:
 * nothing), no host resource lacks a live row, no operation is unfinished and every failed
 * one says why, no snapshot row is left "creating" and every ready one has its data.
 * 0, or -1 with the first disagreement in why. */
int fake_daemon_check(struct fake_daemon *fd, char *why, size_t size);
/* The same without what the controller is there to finish: rows in a transient state (and
 * what they hold) and snapshots left "creating" are not checked. What an operation leaves
 * once it has ended must pass this before any repair. */
int fake_daemon_check_settled(struct fake_daemon *fd, char *why, size_t size);

/* Submits a create from FAKE_TEMPLATE (timeout_s 0: none); 0 or -1 with err. */
int fake_daemon_create(struct fake_daemon *fd, int64_t timeout_s, const char *on_timeout, char *ret_id, struct operation *ret_op,
                       struct space_error *err);
