/* Statement helpers shared by the PostgreSQL backend's files (pg_statement.h). */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t pg_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void push(struct pg_args *a, const char *v, char *owned)
{
        if (a->n >= PG_MAX_ARGS) { /* a programming error: the statement will fail */
                free(owned);
                return;
        }
        a->owned[a->n] = owned;
        a->v[a->n++] = v;
}

void pg_text(struct pg_args *a, const char *v)
{
        push(a, v ? v : "", NULL);
}

void pg_optional(struct pg_args *a, const char *v)
{
        push(a, v && *v ? v : NULL, NULL);
}

void pg_nullable(struct pg_args *a, const char *v)
{
        push(a, v, NULL);
}

void pg_int(struct pg_args *a, int64_t v)
{
        if (a->n >= PG_MAX_ARGS)
                return;
        snprintf(a->num[a->n], sizeof(a->num[a->n]), "%lld", (long long)v);
        push(a, a->num[a->n], NULL);
}

void pg_json(struct pg_args *a, const json_t *v)
{
        char *text = store_json_text(v);
        push(a, text ? text : "{}", text);
}

void pg_json_or_empty(struct pg_args *a, const json_t *v)
{
        if (v)
                pg_json(a, v);
        else
                pg_text(a, "");
}

void pg_page(struct pg_args *a, const struct store_page *page)
{
        pg_int(a, page ? page->after_ms : 0);
        pg_optional(a, page ? page->after_id : NULL);
        if (page && page->limit > 0)
                pg_int(a, page->limit);
        else
                push(a, NULL, NULL);
}

static void args_release(struct pg_args *a)
{
        for (int i = 0; a && i < a->n; i++) {
                free(a->owned[i]);
                a->owned[i] = NULL;
        }
}

static int sqlstate_error(const PGresult *res)
{
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        if (!state)
                return -EIO;
        if (strncmp(state, "23", 2) == 0) /* integrity constraint violation: as SQLite's CONSTRAINT */
                return -EEXIST;
        if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0)
                return -EBUSY;
        if (strcmp(state, "53100") == 0)
                return -ENOSPC;
        if (strcmp(state, "53200") == 0)
                return -ENOMEM;
        return -EIO;
}

/* A broken connection is made again between transactions (a server restart); inside one,
 * the transaction is gone and fails to its end. */
static int ensure_connection(struct state_store *st)
{
        if (PQstatus(st->conn) == CONNECTION_OK && !st->tx_lost)
                return 0;
        if (st->in_tx) {
                st->tx_lost = true;
                return -EIO;
        }
        st->tx_lost = false;
        PQreset(st->conn);
        if (PQstatus(st->conn) != CONNECTION_OK)
                return -EIO;
        return pg_connection_setup(st);
}

/* Whether s is UTF-8 as PostgreSQL takes it: no overlong form, no surrogate, at most
 * U+10FFFF. */
static bool utf8_valid(const unsigned char *s)
{
        while (*s) {
                unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
                if (n == 9 || (n == 1 && c < 0xc2) || (n == 3 && c > 0xf4))
                        return false;
                unsigned cp = n ? c & (0x3f >> n) : c;
                for (unsigned i = 1; i <= n; i++) {
                        if ((s[i] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (s[i] & 0x3f);
                }
                if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
                        return false;
                s += n + 1;
        }
        return true;
}

static bool args_utf8(const struct pg_args *a)
{
        for (int i = 0; a && i < a->n; i++)
                if (a->v[i] && !utf8_valid((const unsigned char *)a->v[i]))
                        return false;
        return true;
}

int pg_exec(struct state_store *st, const char *sql, struct pg_args *a, PGresult **ret, int *ret_changed)
{
        /* Text that is not UTF-8 (an id from a URL's raw bytes) cannot be in a UTF-8 database,
         * where SQLite would compare its bytes: no row has it, so an UPDATE or DELETE by it
         * changes nothing and a read by it finds nothing (pg_collect, pg_fetch_one,
         * pg_query_int); it cannot be written (-EILSEQ). */
        if (!args_utf8(a)) {
                args_release(a);
                if (ret || strncmp(sql, "INSERT", 6) == 0)
                        return -EILSEQ;
                if (ret_changed)
                        *ret_changed = 0;
                return 0;
        }
        int r = ensure_connection(st);
        if (r < 0) {
                args_release(a);
                return r;
        }
        PGresult *res = PQexecParams(st->conn, sql, a ? a->n : 0, NULL, a ? a->v : NULL, NULL, NULL, 0);
        args_release(a);
        ExecStatusType status = PQresultStatus(res);
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
                r = sqlstate_error(res);
                if (PQstatus(st->conn) != CONNECTION_OK && st->in_tx)
                        st->tx_lost = true;
                PQclear(res);
                return r;
        }
        if (ret_changed) {
                const char *n = PQcmdTuples(res);
                *ret_changed = n && *n ? atoi(n) : 0;
        }
        if (ret)
                *ret = res;
        else
                PQclear(res);
        return 0;
}

int pg_exec_one(struct state_store *st, const char *sql, struct pg_args *a)
{
        int changed = 0;
        int r = pg_exec(st, sql, a, NULL, &changed);
        return r == 0 && changed == 0 ? -ENOENT : r;
}

struct result_row {
        const PGresult *res;
        int row;
};

static const char *result_text(const void *row, int col)
{
        const struct result_row *rr = row;
        return PQgetisnull(rr->res, rr->row, col) ? NULL : PQgetvalue(rr->res, rr->row, col);
}

static int64_t result_integer(const void *row, int col)
{
        const char *v = result_text(row, col);
        if (!v)
                return 0;
        if (strcmp(v, "t") == 0) /* a boolean column */
                return 1;
        return strtoll(v, NULL, 10);
}

static double result_real(const void *row, int col)
{
        const char *v = result_text(row, col);
        return v ? strtod(v, NULL) : 0;
}

static void decode_row(const PGresult *res, int row, store_row_decode decode, void *elem)
{
        const struct result_row rr = { res, row };
        const struct store_row r = { .text = result_text, .integer = result_integer, .real = result_real, .row = &rr };
        decode(&r, elem);
}

int pg_collect(struct state_store *st, const char *sql, struct pg_args *a, size_t elem_size, store_row_decode decode,
               void (*release_fn)(void *elem), void **ret, size_t *ret_n)
{
        PGresult *res;
        int r = pg_exec(st, sql, a, &res, NULL);
        if (r == -EILSEQ) { /* matches no row */
                *ret = calloc(1, elem_size);
                *ret_n = 0;
                return *ret ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        size_t n = (size_t)PQntuples(res);
        char *arr = calloc(n ? n : 1, elem_size);
        if (!arr) {
                PQclear(res);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                decode_row(res, (int)i, decode, arr + i * elem_size);
        PQclear(res);
        (void)release_fn; /* decoding does not fail part way: nothing to release */
        *ret = arr;
        *ret_n = n;
        return 0;
}

int pg_fetch_one(struct state_store *st, const char *sql, struct pg_args *a, store_row_decode decode, void *elem)
{
        PGresult *res;
        int r = pg_exec(st, sql, a, &res, NULL);
        if (r == -EILSEQ)
                return -ENOENT;
        if (r < 0)
                return r;
        if (PQntuples(res) > 0)
                decode_row(res, 0, decode, elem);
        else
                r = -ENOENT;
        PQclear(res);
        return r;
}

int pg_list(struct state_store *st, const char *sql, struct pg_args *a, size_t elem_size, store_row_decode decode,
            void (*release_fn)(void *elem), void **ret, size_t *ret_n)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_collect(st, sql, a, elem_size, decode, release_fn, ret, ret_n);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_get(struct state_store *st, const char *sql, struct pg_args *a, store_row_decode decode, void *elem)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_fetch_one(st, sql, a, decode, elem);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_write(struct state_store *st, const char *sql, struct pg_args *a, bool must_change)
{
        pthread_mutex_lock(&st->lock);
        int r = must_change ? pg_exec_one(st, sql, a) : pg_exec(st, sql, a, NULL, NULL);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_query_int(struct state_store *st, const char *sql, struct pg_args *a, int64_t *ret)
{
        PGresult *res;
        int r = pg_exec(st, sql, a, &res, NULL);
        if (r == -EILSEQ) { /* the counts and EXISTS of no row */
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r;
        if (PQntuples(res) < 1 || PQnfields(res) < 1)
                r = -EIO;
        else
                *ret = result_integer(&(struct result_row){ res, 0 }, 0);
        PQclear(res);
        return r;
}

int pg_begin(struct state_store *st)
{
        int r = pg_exec(st, "BEGIN", NULL, NULL, NULL);
        if (r == 0) {
                st->in_tx = true;
                st->tx_lost = false;
        }
        return r;
}

int pg_commit(struct state_store *st)
{
        int r = st->tx_lost ? -EIO : pg_exec(st, "COMMIT", NULL, NULL, NULL);
        st->in_tx = false;
        return r;
}

void pg_rollback(struct state_store *st)
{
        if (!st->tx_lost && PQstatus(st->conn) == CONNECTION_OK)
                PQclear(PQexec(st->conn, "ROLLBACK"));
        st->in_tx = false;
        st->tx_lost = false;
}
