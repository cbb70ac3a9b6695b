/* The PostgreSQL backend of state_store (libpq): one connection serialised by a mutex, as
 * the SQLite backend's. open() takes a libpq connection string or URL
 * (postgresql://user@host:port/db, or postgresql:///db?host=/socket/dir), migrates the
 * database (pg_migrations.c). Several spaced may use one database at once: work is
 * shared through claims on operations (pg_fleet.c, docs/fleet.md), not by a lock on the
 * database. The ops of each area live in their own
 * file (pg_sandboxes.c, pg_operations.c, ...). */
#include "state_store/pg_statement.h"
#include "state_store/state_store_postgres.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet_notices(void *arg, const char *message)
{
        (void)arg;
        (void)message;
}

bool state_store_postgres_location(const char *location)
{
        return location && (strncmp(location, "postgresql://", 13) == 0 || strncmp(location, "postgres://", 11) == 0);
}

int pg_connection_setup(struct state_store *st)
{
        /* Every commit waits for the server's WAL flush, in both durabilities: a commit
         * acknowledged by PostgreSQL survives a crash of spaced and of the server. */
        PGresult *res = PQexec(st->conn, "SET synchronous_commit = on");
        int r = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -EIO;
        PQclear(res);
        return r;
}

static int postgres_open(const char *location, struct state_store **ret)
{
        struct state_store *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        if (strlen(location) >= sizeof(st->conninfo)) {
                free(st);
                return -ENAMETOOLONG;
        }
        snprintf(st->conninfo, sizeof(st->conninfo), "%s", location);
        pthread_mutex_init(&st->lock, NULL);
        st->conn = PQconnectdb(location);
        int r = 0;
        if (!st->conn)
                r = -ENOMEM;
        else if (PQstatus(st->conn) != CONNECTION_OK)
                r = -ECONNREFUSED;
        if (r == 0) {
                PQsetNoticeProcessor(st->conn, quiet_notices, NULL);
                r = pg_connection_setup(st);
        }
        if (r == 0)
                r = pg_migrations_apply(st->conn, NULL);
        if (r < 0) {
                PQfinish(st->conn);
                pthread_mutex_destroy(&st->lock);
                free(st);
                return r;
        }
        *ret = st;
        return 0;
}

static void postgres_close(struct state_store *st)
{
        if (!st)
                return;
        PQfinish(st->conn);
        pthread_mutex_destroy(&st->lock);
        free(st);
}

/* Both durabilities commit synchronously (pg_connection_setup): power is recorded only. */
static int postgres_set_durability(struct state_store *st, bool power)
{
        pthread_mutex_lock(&st->lock);
        st->power = power;
        pthread_mutex_unlock(&st->lock);
        return 0;
}

const struct state_store_ops state_store_postgres = {
        .name = "postgres",
        .open = postgres_open,
        .close = postgres_close,
        .set_durability = postgres_set_durability,
        .sandbox_insert = pg_sandbox_insert,
        .insert_batch = pg_insert_batch,
        .sandbox_get = pg_sandbox_get,
        .sandbox_list = pg_sandbox_list,
        .sandbox_tally = pg_sandbox_tally,
        .probe_write = pg_probe_write,
        .operation_tally = pg_operation_tally,
        .sandbox_transition = pg_sandbox_transition,
        .sandbox_settle = pg_sandbox_settle,
        .sandbox_purge_destroyed = pg_sandbox_purge_destroyed,
        .operation_purge_finished = pg_operation_purge_finished,
        .operation_refers = pg_operation_refers,
        .sandbox_set_runtime = pg_sandbox_set_runtime,
        .sandbox_set_expiry = pg_sandbox_set_expiry,
        .sandbox_set_head = pg_sandbox_set_head,
        .sandbox_set_settings = pg_sandbox_set_settings,
        .sandbox_set_network = pg_sandbox_set_network,
        .snapshot_get = pg_snapshot_get,
        .snapshot_list = pg_snapshot_list,
        .snapshot_update = pg_snapshot_update,
        .snapshot_delete = pg_snapshot_delete,
        .operation_insert = pg_operation_insert,
        .operation_update = pg_operation_update,
        .operation_get = pg_operation_get,
        .operation_list = pg_operation_list,
        .template_upsert = pg_template_upsert,
        .template_get = pg_template_get,
        .template_list = pg_template_list,
        .template_delete = pg_template_delete,
        .key_insert = pg_key_insert,
        .key_list = pg_key_list,
        .key_get = pg_key_get,
        .project_insert = pg_project_insert,
        .project_get = pg_project_get,
        .project_list = pg_project_list,
        .key_delete = pg_key_delete,
        .key_authenticate = pg_key_authenticate,
        .key_count = pg_key_count,
        .session_insert = pg_session_insert,
        .session_get = pg_session_get,
        .session_find_by_hash = pg_session_find_by_hash,
        .session_list = pg_session_list,
        .session_update = pg_session_update,
        .command_insert = pg_command_insert,
        .command_update = pg_command_update,
        .command_get = pg_command_get,
        .command_delete = pg_command_delete,
        .command_list = pg_command_list,
        .audit_insert = pg_audit_insert,
        .audit_list = pg_audit_list,
        .audit_purge = pg_audit_purge,
        .policy_insert = pg_policy_insert,
        .policy_get = pg_policy_get,
        .policy_list = pg_policy_list,
        .policy_update = pg_policy_update,
        .policy_delete = pg_policy_delete,
        .approval_hold = pg_approval_hold,
        .approval_get = pg_approval_get,
        .approval_list = pg_approval_list,
        .approval_decide = pg_approval_decide,
        .node_register = pg_node_register,
        .node_heartbeat = pg_node_heartbeat,
        .node_list = pg_node_list,
        .node_mark_lost = pg_node_mark_lost,
        .operation_claim = pg_operation_claim,
        .secret_data_key = pg_secret_data_key,
        .secret_insert = pg_secret_insert,
        .secret_get = pg_secret_get,
        .secret_list = pg_secret_list,
        .secret_delete = pg_secret_delete,
        .binding_insert = pg_binding_insert,
        .binding_list = pg_binding_list,
        .binding_delete = pg_binding_delete,
};
