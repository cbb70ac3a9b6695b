#pragma once
#include <sqlite3.h>
/* Brings the schema to the latest version. -EPROTO if the file is newer than this binary. */
int sqlite_migrations_apply(sqlite3 *db, int *ret_version);
/* The same, stopping at version target (tests of one migration start from the one before). */
int sqlite_migrations_apply_upto(sqlite3 *db, int target, int *ret_version);
