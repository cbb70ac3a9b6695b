#include "controller/snapshot_sizer.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spaced/host_command.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "storage/memory_image.h"

struct snapshot_sizer {
        struct spaced_context *ctx;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
};

/* The measurement in progress, so that a deletion can stop it (btrfs refuses to delete a
 * subvolume while it is being sent). */
static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t current_done = PTHREAD_COND_INITIALIZER;
static char current_ids[2][32];
static pid_t current_pid;

void snapshot_sizer_release(const char *id)
{
        pthread_mutex_lock(&current_lock);
        while (current_pid > 0 && (strcmp(current_ids[0], id) == 0 || strcmp(current_ids[1], id) == 0)) {
                kill(-current_pid, SIGKILL);
                pthread_cond_wait(&current_done, &current_lock);
        }
        pthread_mutex_unlock(&current_lock);
}

static int64_t stream_size(char *const argv[], const char *id, const char *parent_id)
{
        int fd;
        pid_t pid;
        pthread_mutex_lock(&current_lock);
        if (host_command_spawn_piped(argv, true, NULL, &fd, &pid) < 0) {
                pthread_mutex_unlock(&current_lock);
                return -1;
        }
        current_pid = pid;
        snprintf(current_ids[0], sizeof(current_ids[0]), "%s", id);
        snprintf(current_ids[1], sizeof(current_ids[1]), "%s", parent_id ? parent_id : "");
        pthread_mutex_unlock(&current_lock);
        /* Only the sizer thread gets here. Not __thread: a thread-local array would be laid
         * out (and zeroed) in the TLS block of every thread of spaced, each HTTP
         * connection's included. */
        static char buf[65536];
        int64_t total = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n > 0) {
                        total += n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                break;
        }
        close(fd);
        int status = host_command_wait(pid, false);
        pthread_mutex_lock(&current_lock);
        current_pid = 0;
        current_ids[0][0] = current_ids[1][0] = '\0';
        pthread_cond_broadcast(&current_done);
        pthread_mutex_unlock(&current_lock);
        return status == 0 ? total : -1;
}

static int64_t measure(struct spaced_context *ctx, const struct snapshot *snap)
{
        char path[PATH_MAX], parent_path[PATH_MAX];
        struct snapshot parent;
        if (btrfs_pool_snapshot_path(&ctx->pool, snap->id, path, sizeof(path)) < 0)
                return -1;
        bool incremental = snap->parent_snapshot_id[0] && STORE(ctx, snapshot_get, snap->parent_snapshot_id, &parent) == 0 &&
                strcmp(parent.state, "ready") == 0 &&
                btrfs_pool_snapshot_path(&ctx->pool, parent.id, parent_path, sizeof(parent_path)) == 0 &&
                access(parent_path, F_OK) == 0;
        char *full[] = { "btrfs", "send", "-q", path, NULL };
        char *incr[] = { "btrfs", "send", "-q", "-p", parent_path, path, NULL };
        int64_t bytes = stream_size(incremental ? incr : full, snap->id, incremental ? parent.id : NULL);
        /* A memory snapshot's checkpoint image is its own, beside the subvolume. */
        int64_t image = strcmp(snap->kind, "memory") == 0 ? memory_image_bytes(&ctx->pool, snap->id) : 0;
        return bytes < 0 || image < 0 ? -1 : bytes + image;
}

int snapshot_sizer_pass(struct spaced_context *ctx, int max)
{
        struct snapshot *snaps = NULL;
        size_t n = 0;
        int done = 0;
        if (STORE(ctx, snapshot_list, NULL, NULL, NULL, &snaps, &n) < 0)
                return 0;
        for (size_t i = 0; i < n && done < max && !atomic_load(&ctx->shutting_down); i++) {
                if (strcmp(snaps[i].state, "ready") != 0 || snaps[i].bytes_exclusive >= 0)
                        continue;
                int64_t bytes = measure(ctx, &snaps[i]);
                struct snapshot now;
                /* Re-read: only the size changes, and only if it still exists. */
                if (bytes >= 0 && STORE(ctx, snapshot_get, snaps[i].id, &now) == 0) {
                        now.bytes_exclusive = bytes;
                        int r = STORE(ctx, snapshot_update, &now);
                        if (r < 0) /* still unmeasured in the store: measured again on a later pass */
                                log_warn("snapshot.size_store_failed", "snapshot=%s error=\"%s\"", now.id, strerror(-r));
                        else
                                log_debug("snapshot.sized", "snapshot=%s bytes=%lld", now.id, (long long)bytes);
                }
                done++;
        }
        free(snaps);
        return done;
}

static void *sizer_main(void *arg)
{
        struct snapshot_sizer *s = arg;
        pthread_mutex_lock(&s->lock);
        while (!s->stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 5;
                pthread_cond_timedwait(&s->wake, &s->lock, &ts);
                if (s->stopping)
                        break;
                pthread_mutex_unlock(&s->lock);
                snapshot_sizer_pass(s->ctx, 16);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

int snapshot_sizer_start(struct spaced_context *ctx, struct snapshot_sizer **ret)
{
        struct snapshot_sizer *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ctx = ctx;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->wake, NULL);
        int r = pthread_create(&s->thread, NULL, sizer_main, s);
        if (r != 0) {
                free(s);
                return -r;
        }
        *ret = s;
        return 0;
}

void snapshot_sizer_free(struct snapshot_sizer *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        free(s);
}
