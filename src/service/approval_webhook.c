/* See approval_webhook.h. */
#include "service/approval_webhook.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth/secret_file.h"
#include "service/approval_json.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define QUEUE_MAX 1024
#define ATTEMPTS 6
#define SECRET_MAX 4096

struct delivery {
        struct delivery *next;
        char event[32];
        char id[96]; /* X-Space-Delivery */
        char *body;
};

struct approval_webhook {
        char url[512];
        unsigned char secret[SECRET_MAX];
        size_t secret_len;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        struct delivery *head, *tail;
        size_t queued;
        atomic_bool stopping;
};

/* Waits up to ms, or until stop; true when stopping. */
static bool pause_unless_stopped(struct approval_webhook *w, long ms)
{
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w->lock);
        while (!atomic_load(&w->stopping) && pthread_cond_timedwait(&w->wake, &w->lock, &until) == 0)
                ;
        pthread_mutex_unlock(&w->lock);
        return atomic_load(&w->stopping);
}

static size_t discard_answer(char *data, size_t size, size_t n, void *cls)
{
        (void)data;
        (void)cls;
        return size * n;
}

static int abort_when_stopping(void *cls, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
        const struct approval_webhook *w = cls;
        return atomic_load(&w->stopping) ? 1 : 0;
}

/* One POST of d; the status, or -1 when none came. */
static long post_once(struct approval_webhook *w, CURL *curl, const struct delivery *d)
{
        char stamp[24], header[160], sig_hex[2 * EVP_MAX_MD_SIZE + 1];
        snprintf(stamp, sizeof(stamp), "%lld", (long long)(wallclock_now_ms() / 1000));
        size_t body_len = strlen(d->body);
        /* HMAC over "<timestamp>.<body>": a receiver can refuse replays of old deliveries. */
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        EVP_MAC_CTX *mc = mac ? EVP_MAC_CTX_new(mac) : NULL;
        OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0), OSSL_PARAM_construct_end() };
        size_t out_len = 0;
        bool signed_ok = mc && EVP_MAC_init(mc, w->secret, w->secret_len, params) == 1 &&
                EVP_MAC_update(mc, (const unsigned char *)stamp, strlen(stamp)) == 1 &&
                EVP_MAC_update(mc, (const unsigned char *)".", 1) == 1 &&
                EVP_MAC_update(mc, (const unsigned char *)d->body, body_len) == 1 &&
                EVP_MAC_final(mc, md, &out_len, sizeof(md)) == 1;
        EVP_MAC_CTX_free(mc);
        EVP_MAC_free(mac);
        md_len = (unsigned)out_len;
        if (!signed_ok)
                return -1;
        for (unsigned i = 0; i < md_len; i++)
                snprintf(sig_hex + 2 * i, 3, "%02x", md[i]);
        OPENSSL_cleanse(md, sizeof(md));
        struct curl_slist *hs = curl_slist_append(NULL, "Content-Type: application/json");
        snprintf(header, sizeof(header), "X-Space-Event: %s", d->event);
        hs = curl_slist_append(hs, header);
        snprintf(header, sizeof(header), "X-Space-Delivery: %s", d->id);
        hs = curl_slist_append(hs, header);
        snprintf(header, sizeof(header), "X-Space-Timestamp: %s", stamp);
        hs = curl_slist_append(hs, header);
        snprintf(header, sizeof(header), "X-Space-Signature: sha256=%s", sig_hex);
        hs = curl_slist_append(hs, header);
        hs = curl_slist_append(hs, "Expect:");
        curl_easy_reset(curl);
        curl_easy_setopt(curl, CURLOPT_URL, w->url);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, d->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hs);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_answer);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, abort_when_stopping);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, w);
        curl_easy_setopt(curl, CURLOPT_USERAGENT, "spaced-approval-webhook");
        CURLcode rc = curl_easy_perform(curl);
        long status = -1;
        if (rc == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        else
                log_debug("approval.webhook_attempt", "delivery=%s error=\"%s\"", d->id, curl_easy_strerror(rc));
        curl_slist_free_all(hs);
        return status;
}

static void deliver(struct approval_webhook *w, CURL *curl, const struct delivery *d)
{
        long wait_ms = 1000;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                long status = post_once(w, curl, d);
                if (status >= 200 && status < 300) {
                        log_info("approval.webhook_delivered", "delivery=%s status=%ld attempt=%d", d->id, status, attempt);
                        return;
                }
                if (attempt == ATTEMPTS || atomic_load(&w->stopping))
                        break;
                log_info("approval.webhook_retry", "delivery=%s status=%ld attempt=%d wait_ms=%ld", d->id, status, attempt,
                         wait_ms);
                if (pause_unless_stopped(w, wait_ms))
                        break;
                wait_ms *= 2;
        }
        log_warn("approval.webhook_failed",
                 "delivery=%s url=%s note=\"not delivered; a pending request goes again at the next start\"", d->id, w->url);
}

static void *sender(void *arg)
{
        struct approval_webhook *w = arg;
        CURL *curl = curl_easy_init();
        for (;;) {
                pthread_mutex_lock(&w->lock);
                while (!w->head && !atomic_load(&w->stopping))
                        pthread_cond_wait(&w->wake, &w->lock);
                struct delivery *d = atomic_load(&w->stopping) ? NULL : w->head;
                if (d) {
                        w->head = d->next;
                        if (!w->head)
                                w->tail = NULL;
                        w->queued--;
                }
                pthread_mutex_unlock(&w->lock);
                if (!d)
                        break;
                if (curl)
                        deliver(w, curl, d);
                free(d->body);
                free(d);
        }
        if (curl)
                curl_easy_cleanup(curl);
        return NULL;
}

int approval_webhook_start(struct spaced_context *ctx, struct approval_webhook **ret, char *reason, size_t reason_size)
{
        *ret = NULL;
        if (!ctx->cfg.approval_webhook_url[0])
                return 0;
        struct approval_webhook *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        snprintf(w->url, sizeof(w->url), "%s", ctx->cfg.approval_webhook_url);
        int r = secret_file_read(ctx->cfg.approval_webhook_secret_path, "the webhook secret", 16, w->secret, SECRET_MAX,
                                 &w->secret_len, reason, reason_size);
        if (r == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                snprintf(reason, reason_size, "libcurl could not start");
                r = -EIO;
        }
        if (r < 0) {
                OPENSSL_cleanse(w->secret, sizeof(w->secret));
                free(w);
                return r;
        }
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        if ((r = -pthread_create(&w->thread, NULL, sender, w)) < 0) {
                snprintf(reason, reason_size, "cannot start the webhook sender: %s", strerror(-r));
                OPENSSL_cleanse(w->secret, sizeof(w->secret));
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

void approval_webhook_send(struct approval_webhook *w, const char *event, const struct approval_record *a)
{
        if (!w)
                return;
        struct delivery *d = calloc(1, sizeof(*d));
        json_t *body = d ? json_object() : NULL;
        if (body) {
                snprintf(d->event, sizeof(d->event), "%s", event);
                snprintf(d->id, sizeof(d->id), "%s.%s", a->id, event);
                json_object_set_new(body, "event", json_string(event));
                json_object_set_new(body, "delivery", json_string(d->id));
                json_object_set_new(body, "approval", approval_json(a));
                d->body = json_dumps(body, JSON_COMPACT);
        }
        json_decref(body);
        if (!d || !d->body) {
                if (d)
                        free(d->body);
                free(d);
                log_warn("approval.webhook_dropped", "approval=%s event=%s reason=\"out of memory\"", a->id, event);
                return;
        }
        struct delivery *dropped = NULL;
        pthread_mutex_lock(&w->lock);
        if (w->queued >= QUEUE_MAX) {
                dropped = w->head;
                w->head = dropped->next;
                if (!w->head)
                        w->tail = NULL;
                w->queued--;
        }
        if (w->tail)
                w->tail->next = d;
        else
                w->head = d;
        w->tail = d;
        w->queued++;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        if (dropped) {
                log_warn("approval.webhook_dropped", "delivery=%s reason=\"more than %d deliveries waiting\"", dropped->id,
                         QUEUE_MAX);
                free(dropped->body);
                free(dropped);
        }
}

void approval_webhook_stop(struct approval_webhook *w)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->stopping, true);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        for (struct delivery *d = w->head, *next; d; d = next) {
                next = d->next;
                free(d->body);
                free(d);
        }
        OPENSSL_cleanse(w->secret, sizeof(w->secret));
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w);
}
