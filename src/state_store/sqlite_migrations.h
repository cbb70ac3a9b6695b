#pragma once
#include <sqlite3.h>
/* Brings the schema to the latest version. -EPROTO if the file is newer than this binary. */
int sqlite_migrations_apply(sqlite3 *db, int *ret_version);
