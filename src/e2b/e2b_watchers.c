/* e2b_watchers: polled directory watchers (see the header). */
#include "e2b/e2b_watchers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent_protocol/agent_files_client.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_router.h"
#include "e2b/e2b_routes.h"
#include "e2b/e2b_watch_event.h"
#include "spaced/log.h"
#include "spaced/wallclock.h"

#define WATCHER_IDLE_S 600       /* dropped when not asked for events this long */
#define WATCHERS_PER_SANDBOX 64  /* then resource_exhausted */
#define WATCHER_EVENTS_MAX 10000 /* per GetWatcherEvents; the rest wait for the next */
#define WATCHER_ID_SIZE 33

struct watcher {
        struct watcher *next;
        char id[WATCHER_ID_SIZE];
        struct e2b_watch_scope scope;
        int agent;            /* -1 once the agent ended the watch */
        int refs;             /* the list's, and each call using it */
        pthread_mutex_t read; /* one GetWatcherEvents at a time reads the connection */
        int64_t used_us;
};

struct e2b_watchers {
        pthread_mutex_t lock;
        struct watcher *list;
};

int e2b_watchers_new(struct e2b_watchers **ret)
{
        struct e2b_watchers *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        *ret = w;
        return 0;
}

static void watcher_unref(struct watcher *x)
{
        /* refs change under the registry's lock */
        if (--x->refs > 0)
                return;
        if (x->agent >= 0)
                close(x->agent);
        pthread_mutex_destroy(&x->read);
        free(x);
}

void e2b_watchers_free(struct e2b_watchers *w)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        while (w->list) {
                struct watcher *x = w->list;
                w->list = x->next;
                watcher_unref(x);
        }
        pthread_mutex_unlock(&w->lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

static struct e2b_watchers *registry(struct e2b_call *call)
{
        return call->front->watchers;
}

/* Drops watchers idle too long; counts the sandbox's. Under the lock. */
static int sweep(struct e2b_watchers *w, const char *sandbox_id)
{
        int64_t now = monotonic_now_us();
        int count = 0;
        for (struct watcher **p = &w->list; *p;) {
                struct watcher *x = *p;
                if (now - x->used_us > (int64_t)WATCHER_IDLE_S * 1000000) {
                        *p = x->next;
                        log_info("e2b.watcher_expired", "sandbox=%s watcher=%s", x->scope.sandbox_id, x->id);
                        watcher_unref(x);
                        continue;
                }
                count += strcmp(x->scope.sandbox_id, sandbox_id) == 0;
                p = &x->next;
        }
        return count;
}

/* The call's watcher (a reference: watcher_release it), or NULL with err. unlink: taken out
 * of the registry too (RemoveWatcher). */
static struct watcher *watcher_get(struct e2b_call *call, const json_t *msg, bool unlink, struct space_error *err)
{
        struct e2b_watchers *w = registry(call);
        const char *id = json_string_value(json_object_get(msg, "watcherId"));
        struct watcher *found = NULL;
        pthread_mutex_lock(&w->lock);
        sweep(w, call->sandbox_id);
        for (struct watcher **p = &w->list; id && *p; p = &(*p)->next) {
                struct watcher *x = *p;
                if (strcmp(x->id, id) != 0 || strcmp(x->scope.sandbox_id, call->sandbox_id) != 0)
                        continue;
                found = x;
                x->used_us = monotonic_now_us();
                if (unlink) {
                        *p = x->next; /* the list's reference is now the caller's */
                } else {
                        x->refs++;
                }
                break;
        }
        pthread_mutex_unlock(&w->lock);
        if (!found)
                space_error_set(err, SPACE_E_NOT_FOUND, "watcher %.64s not found", id ? id : "(no watcherId)");
        return found;
}

static void watcher_release(struct e2b_watchers *w, struct watcher *x)
{
        pthread_mutex_lock(&w->lock);
        watcher_unref(x);
        pthread_mutex_unlock(&w->lock);
}

static void watcher_forget(struct e2b_watchers *w, struct watcher *x)
{
        pthread_mutex_lock(&w->lock);
        for (struct watcher **p = &w->list; *p; p = &(*p)->next) {
                if (*p == x) {
                        *p = x->next;
                        watcher_unref(x);
                        break;
                }
        }
        pthread_mutex_unlock(&w->lock);
}

void e2b_fs_create_watcher(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct e2b_watchers *w = registry(call);
        json_t *msg = NULL;
        struct watcher *x = calloc(1, sizeof(*x));
        uint8_t raw[16];
        if (!x || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
                free(x);
                space_error_set(&err, SPACE_E_INTERNAL, "cannot make a watcher");
                return e2b_connect_reply_error(resp, &err);
        }
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(x->id + 2 * i, 3, "%02x", raw[i]);
        x->agent = -1;
        x->refs = 1;
        pthread_mutex_init(&x->read, NULL);
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || (x->agent = e2b_watch_open(call, msg, &x->scope, &err)) < 0) {
                json_decref(msg);
                watcher_unref(x);
                return e2b_connect_reply_error(resp, &err);
        }
        json_decref(msg);
        x->used_us = monotonic_now_us();
        pthread_mutex_lock(&w->lock);
        int count = sweep(w, call->sandbox_id);
        if (count < WATCHERS_PER_SANDBOX) {
                x->next = w->list;
                w->list = x;
        }
        pthread_mutex_unlock(&w->lock);
        if (count >= WATCHERS_PER_SANDBOX) {
                watcher_unref(x);
                space_error_set(&err, SPACE_E_PAYLOAD_TOO_LARGE, "sandbox %s has %d watchers: remove one first", call->sandbox_id,
                                WATCHERS_PER_SANDBOX);
                return e2b_connect_reply_error(resp, &err);
        }
        e2b_connect_reply(resp, json_pack("{s:s}", "watcherId", x->id));
}

/* The events waiting on the watcher's connection, without waiting for more. Sets *ended when
 * the agent ended the watch. */
static json_t *drain(struct watcher *x, bool *ended)
{
        json_t *events = json_array();
        while (events && x->agent >= 0 && json_array_size(events) < WATCHER_EVENTS_MAX) {
                struct pollfd p = { .fd = x->agent, .events = POLLIN };
                int r = poll(&p, 1, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                struct agent_file_reply reply;
                if (agent_files_read(x->agent, &reply, NULL, 0) < 0) {
                        close(x->agent);
                        x->agent = -1;
                        *ended = true;
                        break;
                }
                json_t *event = e2b_watch_event_new(&x->scope, &reply.frame);
                agent_file_reply_release(&reply);
                if (event)
                        json_array_append_new(events, event);
        }
        return events;
}

void e2b_fs_get_watcher_events(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct e2b_watchers *w = registry(call);
        json_t *msg = NULL;
        if (e2b_connect_request(&call->req, &msg, &err) < 0)
                return e2b_connect_reply_error(resp, &err);
        struct watcher *x = watcher_get(call, msg, false, &err);
        json_decref(msg);
        if (!x)
                return e2b_connect_reply_error(resp, &err);
        bool ended = false, was_dead;
        pthread_mutex_lock(&x->read);
        was_dead = x->agent < 0;
        json_t *events = was_dead ? NULL : drain(x, &ended);
        pthread_mutex_unlock(&x->read);
        if (was_dead || (ended && json_array_size(events) == 0)) {
                json_decref(events);
                watcher_forget(w, x);
                watcher_release(w, x);
                space_error_set(&err, SPACE_E_NOT_FOUND, "the watch ended: its directory or its sandbox is gone");
                return e2b_connect_reply_error(resp, &err);
        }
        watcher_release(w, x);
        if (!events) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return e2b_connect_reply_error(resp, &err);
        }
        e2b_connect_reply(resp, json_pack("{s:o}", "events", events));
}

void e2b_fs_remove_watcher(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        if (e2b_connect_request(&call->req, &msg, &err) < 0)
                return e2b_connect_reply_error(resp, &err);
        struct watcher *x = watcher_get(call, msg, true, &err);
        json_decref(msg);
        if (!x)
                return e2b_connect_reply_error(resp, &err);
        watcher_release(registry(call), x);
        e2b_connect_reply(resp, json_object());
}
