/* store_conformance: the state_store tests every backend must pass, written against the ops
 * table alone (struct state_store_ops), never a backend's internals. A backend's test
 * program fills a struct store_backend (its ops and how to make an empty store for one
 * test) and calls store_conformance_run(); sqlite_conformance_test.c is SQLite's, and a
 * PostgreSQL backend passes its ops and a location factory that makes a fresh database or
 * schema per test. Tests of what only one backend has (SQLite's migrations, its append-only
 * trigger) stay in that backend's own files. */
#pragma once

#include <stddef.h>

#include "state_store/state_store.h"

struct store_backend {
        const char *name;
        const struct state_store_ops *ops;
        /* Writes the location of a new, empty store for one test (a path, a URL) to buf;
         * 0 or -errno. The store is opened with ops->open(location). */
        int (*location_new)(char *buf, size_t size);
        /* Removes what location_new made, after the store was closed; NULL: nothing to do. */
        void (*location_free)(const char *location);
};

/* Runs every group on the backend; returns how many tests failed. */
int store_conformance_run(const struct store_backend *b);

/* cmocka setup / teardown of each test: an empty store of the backend being run as *state. */
int store_conformance_open(void **state);
int store_conformance_close(void **state);

/* The groups (one file each). */
int store_conformance_sandboxes(const struct store_backend *b);
int store_conformance_catalog(const struct store_backend *b);
int store_conformance_projects(const struct store_backend *b);
int store_conformance_audit(const struct store_backend *b);
int store_conformance_figures(const struct store_backend *b);
int store_conformance_policies(const struct store_backend *b);
int store_conformance_approvals(const struct store_backend *b);
int store_conformance_secrets(const struct store_backend *b);
int store_conformance_raw_ids(const struct store_backend *b);
int store_conformance_fleet(const struct store_backend *b);

/* A second connection to the store the running test opened (two claimants); close it with
 * ops->close before the test ends. -EOPNOTSUPP for a store only one connection sees. */
int store_conformance_reopen(struct state_store **ret);

/* The four audit rows the audit group's tests start from, inserted through `with`. */
void store_conformance_audit_rows(const struct state_store_ops *with, struct state_store *st);
