#pragma once
#include <sqlite3.h>
/* Brings the schema to the latest version. -EPROTO if the file is newer than this binary. */
int sqlite_migrations_apply(sqlite3 *db, int *ret_version);
/* The same, stopping at version target (tests: a database as an older spaced left it). */
int sqlite_migrations_apply_upto(sqlite3 *db, int target, int *ret_version);

/* The migration that moved pid, pid_start and uid_base into sandboxes.runtime_state. */
#define SQLITE_MIGRATION_RUNTIME_STATE 9
/* The migration that made operation_refs (a table of what an operation names). */
#define SQLITE_MIGRATION_OPERATION_REFS 10
