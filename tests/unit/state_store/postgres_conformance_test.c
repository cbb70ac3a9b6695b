/* The state_store conformance suite (store_conformance.h) on the PostgreSQL backend, against
 * a real throwaway cluster: tests/pg_cluster/pg-cluster (argv[1]) starts one in a private
 * directory with its socket there, each test gets a database of its own (CREATE DATABASE,
 * dropped after it), and the cluster is stopped and removed at the end. No PostgreSQL
 * installed is a failure, never a skip. */
#include <errno.h>
#include <libpq-fe.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state_store/state_store_postgres.h"
#include "store_conformance.h"

#define PORT "55432"

static char cluster_dir[256];
static PGconn *admin;
static int next_db;

static int run_admin(const char *sql)
{
        PGresult *res = PQexec(admin, sql);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!ok)
                fprintf(stderr, "postgres_conformance: %s: %s", sql, PQerrorMessage(admin));
        PQclear(res);
        return ok ? 0 : -1;
}

static int fresh_database(char *buf, size_t size)
{
        char sql[128];
        int n = ++next_db;
        snprintf(sql, sizeof(sql), "CREATE DATABASE conformance_%d", n);
        if (run_admin(sql) < 0)
                return -1;
        snprintf(buf, size, "postgresql://space@/conformance_%d?host=%s&port=" PORT, n, cluster_dir);
        return 0;
}

static void drop_database(const char *location)
{
        const char *name = strstr(location, "/conformance_");
        char sql[128];
        if (!name)
                return;
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %.*s WITH (FORCE)", (int)strcspn(name + 1, "?"), name + 1);
        run_admin(sql);
}

/* What only this backend has: several spaced on one database (the fleet: no lock keeps a
 * second one off; claims share the work, docs/fleet.md), its schema version, and the audit
 * log's append-only trigger. */
static void test_second_open_shares_the_database(void **state)
{
        char location[512];
        struct state_store *a = NULL, *b = NULL;
        assert_int_equal(fresh_database(location, sizeof(location)), 0);
        assert_int_equal(state_store_postgres.open(location, &a), 0);
        assert_int_equal(state_store_postgres.open(location, &b), 0);
        struct node_record n = { .capacity = 1, .started_at_ms = 1 };
        snprintf(n.id, sizeof(n.id), "node-a");
        assert_int_equal(state_store_postgres.node_register(a, &n), 0);
        struct node_record *ns = NULL;
        size_t count = 0;
        assert_int_equal(state_store_postgres.node_list(b, &ns, &count), 0); /* one database */
        assert_int_equal(count, 1);
        free(ns);
        state_store_postgres.close(a);
        state_store_postgres.close(b);
        drop_database(location);
}

static PGresult *query(const char *location, const char *sql)
{
        PGconn *c = PQconnectdb(location);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *res = PQexec(c, sql);
        PQfinish(c);
        return res;
}

static void test_schema_version_and_append_only_audit(void **state)
{
        char location[512];
        struct state_store *st = NULL;
        assert_int_equal(fresh_database(location, sizeof(location)), 0);
        assert_int_equal(state_store_postgres.open(location, &st), 0);
        store_conformance_audit_rows(&state_store_postgres, st);
        PGresult *res = query(location, "SELECT version FROM space_schema");
        assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
        assert_string_equal(PQgetvalue(res, 0, 0), "20");
        PQclear(res);
        res = query(location, "UPDATE audit_log SET status = 200");
        assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
        PQclear(res);
        state_store_postgres.close(st);
        /* Opening a migrated database again migrates nothing and keeps the rows. */
        assert_int_equal(state_store_postgres.open(location, &st), 0);
        struct audit_record *rows = NULL;
        size_t n = 0;
        struct audit_filter all = { 0 };
        assert_int_equal(state_store_postgres.audit_list(st, &all, NULL, &rows, &n), 0);
        assert_int_equal(n, 4);
        free(rows);
        state_store_postgres.close(st);
        drop_database(location);
}

/* A connection the server ends (a restart, an administrator) is made again by the next
 * statement. */
static void test_reconnects_after_the_server_ends_the_session(void **state)
{
        char location[512], sql[256];
        struct state_store *st = NULL, *other = NULL;
        int64_t n = -1;
        assert_int_equal(fresh_database(location, sizeof(location)), 0);
        assert_int_equal(state_store_postgres.open(location, &st), 0);
        const char *name = strstr(location, "/conformance_") + 1;
        snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%.*s'",
                 (int)strcspn(name, "?"), name);
        PGresult *res = PQexec(admin, sql);
        assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
        /* The statement that finds the connection gone fails; the next one reconnects. */
        int r = state_store_postgres.key_count(st, &n);
        assert_true(r == 0 || r == -EIO);
        assert_int_equal(state_store_postgres.key_count(st, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(state_store_postgres.open(location, &other), 0);
        state_store_postgres.close(other);
        state_store_postgres.close(st);
        drop_database(location);
}

static int cluster(const char *script, const char *verb)
{
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "'%s' %s '%s' " PORT, script, verb, cluster_dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: postgres_conformance_test PG_CLUSTER_SCRIPT\n");
                return 2;
        }
        snprintf(cluster_dir, sizeof(cluster_dir), "/tmp/space-pg-conformance-XXXXXX");
        if (!mkdtemp(cluster_dir)) {
                perror("mkdtemp");
                return 1;
        }
        if (cluster(argv[1], "start") < 0) {
                fprintf(stderr, "postgres_conformance: the throwaway cluster did not start\n");
                cluster(argv[1], "stop");
                return 1;
        }
        char url[512];
        snprintf(url, sizeof(url), "postgresql://space@/postgres?host=%s&port=" PORT, cluster_dir);
        admin = PQconnectdb(url);
        int failed = 1;
        if (PQstatus(admin) == CONNECTION_OK) {
                const struct store_backend pg = { .name = "postgres",
                                                  .ops = &state_store_postgres,
                                                  .location_new = fresh_database,
                                                  .location_free = drop_database };
                failed = store_conformance_run(&pg);
                const struct CMUnitTest own[] = {
                        cmocka_unit_test(test_second_open_shares_the_database),
                        cmocka_unit_test(test_schema_version_and_append_only_audit),
                        cmocka_unit_test(test_reconnects_after_the_server_ends_the_session),
                };
                failed += cmocka_run_group_tests_name("postgres backend", own, NULL, NULL);
        } else
                fprintf(stderr, "postgres_conformance: %s", PQerrorMessage(admin));
        PQfinish(admin);
        cluster(argv[1], "stop");
        return failed ? 1 : 0;
}
