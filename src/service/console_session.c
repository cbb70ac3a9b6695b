#include "service/console_session.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/secret_hash.h"
#include "service/key_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct console_entry {
        char token_hash[SECRET_HASH_SIZE]; /* "" : a free slot */
        char key_hash[SECRET_HASH_SIZE];
        struct console_session s;
};

struct console_sessions {
        pthread_mutex_t lock;
        struct console_entry entries[CONSOLE_SESSIONS_MAX];
};

int console_sessions_new(struct console_sessions **ret)
{
        struct console_sessions *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        *ret = s;
        return 0;
}

void console_sessions_free(struct console_sessions *s)
{
        if (!s)
                return;
        explicit_bzero(s->entries, sizeof(s->entries));
        pthread_mutex_destroy(&s->lock);
        free(s);
}

static void entry_clear(struct console_entry *e)
{
        explicit_bzero(e, sizeof(*e));
}

/* The live entry of token_hash (expired ones are cleared on the way), or NULL. Locked. */
static struct console_entry *entry_find(struct console_sessions *s, const char *token_hash, int64_t now)
{
        for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
                struct console_entry *e = &s->entries[i];
                if (!e->token_hash[0])
                        continue;
                if (e->s.expires_at_ms <= now) {
                        entry_clear(e);
                        continue;
                }
                if (strcmp(e->token_hash, token_hash) == 0)
                        return e;
        }
        return NULL;
}

static struct console_sessions *sessions_of(struct spaced_context *ctx, struct space_error *err)
{
        if (!ctx->console_sessions)
                space_error_set(err, SPACE_E_UNAVAILABLE, "console sessions are not enabled in this spaced");
        return ctx->console_sessions;
}

int console_session_open(struct spaced_context *ctx, const char *api_key, int64_t ttl_s, struct principal *ret_p,
                         struct console_session *ret, char ret_token[CONSOLE_TOKEN_SIZE], struct space_error *err)
{
        struct console_sessions *s = sessions_of(ctx, err);
        struct console_entry fresh = { 0 };
        struct principal p = { 0 };
        char token[CONSOLE_TOKEN_SIZE];
        if (!s)
                return -1;
        if (!*api_key || strlen(api_key) > 128 || secret_hash(api_key, fresh.key_hash, sizeof(fresh.key_hash)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        if (key_service_authenticate_hash(ctx, fresh.key_hash, &p, err) < 0)
                return -1;
        int r = random_id(CONSOLE_TOKEN_PREFIX, 20, token, sizeof(token));
        if (r == 0)
                r = random_id("", 20, fresh.s.csrf, sizeof(fresh.s.csrf));
        if (r == 0)
                r = random_id("cs-", 8, fresh.s.id, sizeof(fresh.s.id));
        if (r < 0)
                return space_error_errno(err, r, "random session token");
        secret_hash(token, fresh.token_hash, sizeof(fresh.token_hash));
        int64_t now = wallclock_now_ms();
        fresh.s.created_at_ms = now;
        fresh.s.expires_at_ms = now + (ttl_s > 0 ? ttl_s : 3600) * 1000;
        if (p.expires_at_ms && p.expires_at_ms < fresh.s.expires_at_ms)
                fresh.s.expires_at_ms = p.expires_at_ms;
        pthread_mutex_lock(&s->lock);
        entry_find(s, fresh.token_hash, now); /* clears the expired */
        struct console_entry *slot = NULL;
        for (size_t i = 0; i < CONSOLE_SESSIONS_MAX && !slot; i++)
                if (!s->entries[i].token_hash[0])
                        slot = &s->entries[i];
        if (slot)
                *slot = fresh;
        pthread_mutex_unlock(&s->lock);
        explicit_bzero(fresh.key_hash, sizeof(fresh.key_hash));
        if (!slot) {
                explicit_bzero(token, sizeof(token));
                return space_error_set(err, SPACE_E_UNAVAILABLE, "%d console sessions are open: sign one out or wait",
                                       CONSOLE_SESSIONS_MAX);
        }
        *ret_p = p;
        *ret = fresh.s;
        memcpy(ret_token, token, CONSOLE_TOKEN_SIZE);
        explicit_bzero(token, sizeof(token));
        return 0;
}

int console_session_authenticate(struct spaced_context *ctx, const char *token, struct principal *ret_p,
                                 struct console_session *ret, struct space_error *err)
{
        struct console_sessions *s = sessions_of(ctx, err);
        char hash[SECRET_HASH_SIZE], key_hash[SECRET_HASH_SIZE];
        struct console_session found = { 0 };
        if (!s)
                return -1;
        if (strncmp(token, CONSOLE_TOKEN_PREFIX, strlen(CONSOLE_TOKEN_PREFIX)) != 0 || strlen(token) > 64 ||
            secret_hash(token, hash, sizeof(hash)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid console session");
        pthread_mutex_lock(&s->lock);
        struct console_entry *e = entry_find(s, hash, wallclock_now_ms());
        if (e) {
                memcpy(key_hash, e->key_hash, sizeof(key_hash));
                found = e->s;
        }
        pthread_mutex_unlock(&s->lock);
        if (!e)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "console session expired or signed out: sign in again");
        int r = key_service_authenticate_hash(ctx, key_hash, ret_p, err);
        explicit_bzero(key_hash, sizeof(key_hash));
        if (r < 0)
                return -1;
        *ret = found;
        return 0;
}

int console_session_close(struct spaced_context *ctx, const char *token, struct space_error *err)
{
        struct console_sessions *s = sessions_of(ctx, err);
        char hash[SECRET_HASH_SIZE];
        if (!s)
                return -1;
        if (secret_hash(token, hash, sizeof(hash)) < 0)
                return space_error_set(err, SPACE_E_NOT_FOUND, "no console session");
        pthread_mutex_lock(&s->lock);
        struct console_entry *e = entry_find(s, hash, wallclock_now_ms());
        if (e)
                entry_clear(e);
        pthread_mutex_unlock(&s->lock);
        return e ? 0 : space_error_set(err, SPACE_E_NOT_FOUND, "no console session");
}
