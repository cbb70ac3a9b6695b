/* The thread that expires held commands nobody decided in time (approval_service.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "service/approval_service.h"
#include "spaced/spaced_context.h"

struct approval_expiry {
        struct spaced_context *ctx;
        pthread_t thread;
        atomic_bool stop;
};

static void *expiry_main(void *arg)
{
        struct approval_expiry *e = arg;
        while (!atomic_load(&e->stop) && !atomic_load(&e->ctx->shutting_down)) {
                approval_service_expire(e->ctx);
                for (int i = 0; i < 10 && !atomic_load(&e->stop); i++) {
                        struct timespec ts = { 0, 100 * 1000000L };
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

int approval_expiry_start(struct spaced_context *ctx, struct approval_expiry **ret)
{
        struct approval_expiry *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->ctx = ctx;
        int r = pthread_create(&e->thread, NULL, expiry_main, e);
        if (r != 0) {
                free(e);
                return -r;
        }
        *ret = e;
        return 0;
}

void approval_expiry_stop(struct approval_expiry *e)
{
        if (!e)
                return;
        atomic_store(&e->stop, true);
        pthread_join(e->thread, NULL);
        free(e);
}
