/* Statement helpers shared by the SQLite backend's files. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int64_t sq_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sq_error(int rc)
{
        switch (rc) {
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        default:
                return -EIO;
        }
}

int sq_prepare(struct state_store *st, const char *sql, sqlite3_stmt **ret)
{
        int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, ret, NULL);
        return rc == SQLITE_OK ? 0 : sq_error(rc);
}

void sq_bind_text(sqlite3_stmt *s, int i, const char *v)
{
        sqlite3_bind_text(s, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

void sq_bind_json(sqlite3_stmt *s, int i, const json_t *v)
{
        char *text = store_json_text(v);
        sqlite3_bind_text(s, i, text ? text : "{}", -1, SQLITE_TRANSIENT);
        free(text);
}

void sq_copy_col(sqlite3_stmt *s, int i, char *dst, size_t size)
{
        const unsigned char *v = sqlite3_column_text(s, i);
        snprintf(dst, size, "%s", v ? (const char *)v : "");
}


/* Runs a statement that returns no rows. */
int sq_exec_done(sqlite3_stmt *s)
{
        int rc = sqlite3_step(s);
        sqlite3_finalize(s);
        return rc == SQLITE_DONE ? 0 : sq_error(rc);
}

static const char *column_text(const void *row, int col)
{
        return (const char *)sqlite3_column_text((sqlite3_stmt *)row, col);
}
static int64_t column_integer(const void *row, int col)
{
        return sqlite3_column_int64((sqlite3_stmt *)row, col);
}
static double column_real(const void *row, int col)
{
        return sqlite3_column_double((sqlite3_stmt *)row, col);
}

void sq_decode(sqlite3_stmt *s, store_row_decode decode, void *elem)
{
        const struct store_row r = { .text = column_text, .integer = column_integer, .real = column_real, .row = s };
        decode(&r, elem);
}

int sq_fetch_one(sqlite3_stmt *s, store_row_decode decode, void *elem)
{
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
                sq_decode(s, decode, elem);
        sqlite3_finalize(s);
        return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
}

int sq_begin(struct state_store *st)
{
        return sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}
int sq_commit(struct state_store *st)
{
        return sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}
void sq_rollback(struct state_store *st)
{
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}


int sq_collect(sqlite3_stmt *s, size_t elem_size, store_row_decode decode, void (*release_fn)(void *elem), void **ret,
               size_t *ret_n)
{
        char *arr = NULL;
        size_t n = 0, cap = 0;
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        char *grown = realloc(arr, cap * elem_size);
                        if (!grown) {
                                rc = SQLITE_NOMEM;
                                break;
                        }
                        arr = grown;
                }
                sq_decode(s, decode, arr + n++ * elem_size);
        }
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE) {
                for (size_t i = 0; release_fn && i < n; i++)
                        release_fn(arr + i * elem_size);
                free(arr);
                return sq_error(rc);
        }
        *ret = arr;
        *ret_n = n;
        return 0;
}

void sq_bind_page(sqlite3_stmt *s, const struct store_page *page)
{
        sqlite3_bind_int64(s, 61, page ? page->after_ms : 0);
        if (page && page->after_id)
                sqlite3_bind_text(s, 62, page->after_id, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(s, 62);
        sqlite3_bind_int64(s, 63, page && page->limit > 0 ? page->limit : -1);
}
