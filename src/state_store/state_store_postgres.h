/* The PostgreSQL backend of state_store (pg_store.c), chosen by spaced --database. */
#pragma once

#include <stdbool.h>

#include "state_store/state_store.h"

extern const struct state_store_ops state_store_postgres;

/* A --database value this backend opens: a postgresql:// or postgres:// URL. */
bool state_store_postgres_location(const char *location);
