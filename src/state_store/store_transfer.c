#include "state_store/store_transfer.h"

#include <errno.h>
#include <stdbool.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_store/state_store.h"
#include "state_store/state_store_postgres.h"

/* Parents before the rows that name them (operation_refs references operations). The
 * health check's probe row is each store's own. */
static const char *const tables[] = { "projects",  "templates",        "api_keys",       "sandboxes",
                                      "snapshots", "operations",       "operation_refs", "attach_sessions",
                                      "commands",  "audit_log",        "policies",       "approvals",
                                      "nodes",     "secret_data_keys", "secrets",        "credential_bindings" };

/* Every table of the SQLite file is one the list above moves (or the probe row's): a table a
 * later migration adds and the list forgets would otherwise be left behind without a word. */
static int all_tables_known(sqlite3 *db, char *why, size_t why_size)
{
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", -1, &s,
                               NULL) != SQLITE_OK) {
                snprintf(why, why_size, "cannot list the tables: %s", sqlite3_errmsg(db));
                return -EIO;
        }
        int r = 0;
        while (r == 0 && sqlite3_step(s) == SQLITE_ROW) {
                const char *name = (const char *)sqlite3_column_text(s, 0);
                bool known = name && strcmp(name, "store_probe") == 0;
                for (size_t i = 0; name && !known && i < sizeof(tables) / sizeof(tables[0]); i++)
                        known = strcmp(name, tables[i]) == 0;
                if (!known) {
                        snprintf(why, why_size, "the SQLite store has a table (%s) this spaced does not know how to move", name);
                        r = -EPROTO;
                }
        }
        sqlite3_finalize(s);
        return r;
}

static int pg_run(PGconn *c, const char *sql)
{
        PGresult *res = PQexec(c, sql);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
        PQclear(res);
        return ok ? 0 : -EIO;
}

static int target_empty(PGconn *c, char *why, size_t why_size)
{
        PGresult *res = PQexec(c,
                               "SELECT (SELECT count(*) FROM sandboxes) + (SELECT count(*) FROM operations) +"
                               " (SELECT count(*) FROM api_keys)");
        int r = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? 0 : -EIO;
        if (r == 0 && strcmp(PQgetvalue(res, 0, 0), "0") != 0) {
                snprintf(why, why_size, "the database already holds sandboxes, operations or keys: migrate into an empty one");
                r = -ENOTEMPTY;
        }
        PQclear(res);
        return r;
}

/* Copies one table's rows; *rows grows by how many. */
static int copy_table(sqlite3 *db, PGconn *c, const char *table, long *rows, char *why, size_t why_size)
{
        char sql[256];
        sqlite3_stmt *s = NULL;
        snprintf(sql, sizeof(sql), "SELECT * FROM %s", table);
        if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
                snprintf(why, why_size, "read %s: %s", table, sqlite3_errmsg(db));
                return -EIO;
        }
        int n = sqlite3_column_count(s), r = 0;
        char insert[4096];
        size_t len = (size_t)snprintf(insert, sizeof(insert), "INSERT INTO %s (", table);
        for (int i = 0; i < n && len < sizeof(insert); i++)
                len += (size_t)snprintf(insert + len, sizeof(insert) - len, "%s%s", i ? ", " : "", sqlite3_column_name(s, i));
        len += (size_t)snprintf(insert + len, sizeof(insert) - len, ") VALUES (");
        for (int i = 0; i < n && len < sizeof(insert); i++)
                len += (size_t)snprintf(insert + len, sizeof(insert) - len, "%s$%d", i ? ", " : "", i + 1);
        /* projects: "default" is made by every fresh database's migrations */
        len += (size_t)snprintf(insert + len, sizeof(insert) - len, ") ON CONFLICT DO NOTHING");
        if (len >= sizeof(insert) || n > 64) {
                sqlite3_finalize(s);
                snprintf(why, why_size, "table %s has too many columns", table);
                return -E2BIG;
        }
        const char *values[64];
        int rc;
        while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
                for (int i = 0; i < n; i++)
                        values[i] = sqlite3_column_type(s, i) == SQLITE_NULL ? NULL : (const char *)sqlite3_column_text(s, i);
                PGresult *res = PQexecParams(c, insert, n, NULL, values, NULL, NULL, 0);
                if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                        snprintf(why, why_size, "write %s: %s", table, PQresultErrorMessage(res));
                        r = -EIO;
                }
                PQclear(res);
                (*rows)++;
        }
        if (r == 0 && rc != SQLITE_DONE) {
                snprintf(why, why_size, "read %s: %s", table, sqlite3_errmsg(db));
                r = -EIO;
        }
        sqlite3_finalize(s);
        return r;
}

int store_transfer_sqlite_to_postgres(const char *sqlite_path, const char *pg_location, long *ret_rows, char *why,
                                      size_t why_size)
{
        struct state_store *st = NULL;
        /* Both at this spaced's schema, so that their tables have the same columns. */
        int r = state_store_sqlite.open(sqlite_path, &st);
        if (r < 0) {
                snprintf(why, why_size, "cannot open %s: %s", sqlite_path, strerror(-r));
                return r;
        }
        state_store_sqlite.close(st);
        if ((r = state_store_postgres.open(pg_location, &st)) < 0) {
                snprintf(why, why_size, "cannot open the PostgreSQL database of --database: %s", strerror(-r));
                return r;
        }
        state_store_postgres.close(st);

        sqlite3 *db = NULL;
        if (sqlite3_open_v2(sqlite_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
                snprintf(why, why_size, "cannot read %s", sqlite_path);
                sqlite3_close(db);
                return -EIO;
        }
        PGconn *c = PQconnectdb(pg_location);
        if (PQstatus(c) != CONNECTION_OK) {
                snprintf(why, why_size, "cannot connect to the PostgreSQL database of --database");
                r = -ECONNREFUSED;
                goto out;
        }
        long rows = 0;
        if ((r = all_tables_known(db, why, why_size)) < 0)
                goto out;
        if ((r = pg_run(c, "BEGIN")) < 0 || (r = pg_run(c, "LOCK TABLE sandboxes, operations, api_keys IN EXCLUSIVE MODE")) < 0 ||
            (r = target_empty(c, why, why_size)) < 0)
                goto rollback;
        for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && r == 0; i++)
                r = copy_table(db, c, tables[i], &rows, why, why_size);
        if (r == 0 && (r = pg_run(c, "COMMIT")) < 0)
                snprintf(why, why_size, "commit: %s", PQerrorMessage(c));
        if (r == 0) {
                *ret_rows = rows;
                goto out;
        }
rollback:
        if (!why[0])
                snprintf(why, why_size, "%s", PQerrorMessage(c));
        pg_run(c, "ROLLBACK");
out:
        PQfinish(c);
        sqlite3_close(db);
        return r;
}
