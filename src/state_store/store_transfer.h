/* store_transfer: moves an existing SQLite store into an empty PostgreSQL database
 * (spaced --migrate-from sqlite:PATH --database URL; docs/fleet.md). Both are migrated to
 * this spaced's schema first, then every table's rows are copied in one PostgreSQL
 * transaction: all of them or none. The SQLite store's rows are only read (opening it
 * migrates an older file to this spaced's schema, as a start would). */
#pragma once

#include <stddef.h>

/* 0 and, in ret_rows, how many rows were copied; -ENOTEMPTY when the database already
 * holds sandboxes, operations or keys; -errno else. why (size why_size) says what failed. */
int store_transfer_sqlite_to_postgres(const char *sqlite_path, const char *pg_location, long *ret_rows, char *why,
                                      size_t why_size);
