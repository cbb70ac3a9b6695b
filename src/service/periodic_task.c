#include "service/periodic_task.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "spaced/spaced_context.h"

struct periodic_task {
        struct spaced_context *ctx;
        void (*run)(struct spaced_context *ctx);
        pthread_t thread;
        atomic_bool stop;
};

static void *task_main(void *arg)
{
        struct periodic_task *t = arg;
        while (!atomic_load(&t->stop) && !atomic_load(&t->ctx->shutting_down)) {
                t->run(t->ctx);
                for (int i = 0; i < 10 && !atomic_load(&t->stop); i++) {
                        struct timespec ts = { 0, 100 * 1000000L };
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

int periodic_task_start(struct spaced_context *ctx, void (*run)(struct spaced_context *ctx), struct periodic_task **ret)
{
        struct periodic_task *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->ctx = ctx;
        t->run = run;
        int r = pthread_create(&t->thread, NULL, task_main, t);
        if (r != 0) {
                free(t);
                return -r;
        }
        *ret = t;
        return 0;
}

void periodic_task_stop(struct periodic_task *t)
{
        if (!t)
                return;
        atomic_store(&t->stop, true);
        pthread_join(t->thread, NULL);
        free(t);
}
