/* mv_qmp: a small client of QEMU's machine protocol (QMP) on the unix socket each microvm
 * serves in its run directory (-qmp unix:<run>/qmp.sock,server=on,wait=off). One command
 * at a time; everything QEMU sends is parsed strictly and bounded (a line of at most
 * MV_QMP_LINE_MAX bytes that is one JSON object, a greeting first, then replies that are
 * {"return": …} or {"error": {"class", "desc"}}, events skipped). A deadline bounds every
 * call. Private to src/runtime/microvm/. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "spaced/space_error.h"

#define MV_QMP_LINE_MAX 65536
#define MV_QMP_EVENTS_MAX 256 /* events skipped while waiting for one reply */

struct mv_qmp {
        int fd;
        size_t len;
        char buf[MV_QMP_LINE_MAX];
};

/* Connects to the socket at path, reads QEMU's greeting and leaves capabilities
 * negotiation (qmp_capabilities): 0, or -1 with err set. */
int mv_qmp_connect(struct mv_qmp *q, const char *path, int timeout_ms, struct space_error *err);
/* The same on a connected socket (the qmp takes it, closed by mv_qmp_close). */
int mv_qmp_attach(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err);
void mv_qmp_close(struct mv_qmp *q);

/* Runs command with arguments (NULL: none; not taken) and, when send_fd >= 0, that fd
 * passed with it (SCM_RIGHTS, for getfd). *ret (when given) gets the "return" value (a
 * new reference). An "error" reply is -1 with its class and description in err. */
int mv_qmp_execute(struct mv_qmp *q, const char *command, json_t *arguments, int send_fd, json_t **ret, int timeout_ms,
                   struct space_error *err);

/* Writes the (stopped) VM's state to fd: getfd + migrate "fd:", then query-migrate until
 * it is completed or failed. */
int mv_qmp_save(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err);
/* Loads a VM started with -incoming defer from fd: getfd + migrate-incoming "fd:", then
 * query-migrate until completed. The VM stays paused until cont. */
int mv_qmp_load(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err);
