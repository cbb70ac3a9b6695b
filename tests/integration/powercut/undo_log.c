/* The undo log of the powercut filesystem (see undo_log.h). */
#include "undo_log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct undo_block {
        uint64_t index;   /* offset / UNDO_LOG_BLOCK */
        uint32_t length;  /* bytes kept: the block, or up to the synced size */
        unsigned char data[];
};

struct undo_file {
        dev_t dev;
        ino_t ino;
        int fd;                    /* our own O_RDWR descriptor of the backing file */
        uint64_t synced_size;      /* size at the last sync */
        struct undo_block **slots; /* open addressing by index */
        size_t slot_count, block_count;
        char name[256];
        pthread_mutex_t lock;
        struct undo_file *next;
};

struct undo_log {
        pthread_mutex_t lock;
        struct undo_file *files;
        uint64_t torn; /* xorshift state; 0: not torn */
};

void undo_log_set_torn(struct undo_log *log, uint64_t seed)
{
        log->torn = seed;
}

/* A coin flip of torn mode (never true when not torn). */
static bool log_coin(struct undo_log *log)
{
        if (!log->torn)
                return false;
        log->torn ^= log->torn << 13;
        log->torn ^= log->torn >> 7;
        log->torn ^= log->torn << 17;
        return log->torn & 1;
}

struct undo_log *undo_log_new(void)
{
        struct undo_log *log = calloc(1, sizeof(*log));
        if (log)
                pthread_mutex_init(&log->lock, NULL);
        return log;
}

static void file_forget_blocks(struct undo_file *f)
{
        for (size_t i = 0; i < f->slot_count; i++)
                free(f->slots[i]);
        free(f->slots);
        f->slots = NULL;
        f->slot_count = f->block_count = 0;
}

static void file_free(struct undo_file *f)
{
        file_forget_blocks(f);
        if (f->fd >= 0)
                close(f->fd);
        pthread_mutex_destroy(&f->lock);
        free(f);
}

void undo_log_free(struct undo_log *log)
{
        if (!log)
                return;
        while (log->files) {
                struct undo_file *f = log->files;
                log->files = f->next;
                file_free(f);
        }
        pthread_mutex_destroy(&log->lock);
        free(log);
}

static struct undo_file *log_find(struct undo_log *log, dev_t dev, ino_t ino)
{
        for (struct undo_file *f = log->files; f; f = f->next)
                if (f->dev == dev && f->ino == ino)
                        return f;
        return NULL;
}

int undo_log_lock_file(struct undo_log *log, int fd, const char *name, struct undo_file **ret_file)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        pthread_mutex_lock(&log->lock);
        struct undo_file *f = log_find(log, st.st_dev, st.st_ino);
        if (!f) {
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
                f = calloc(1, sizeof(*f));
                if (!f) {
                        pthread_mutex_unlock(&log->lock);
                        return -ENOMEM;
                }
                f->fd = open(proc, O_RDWR | O_CLOEXEC);
                if (f->fd < 0) {
                        int r = -errno;
                        free(f);
                        pthread_mutex_unlock(&log->lock);
                        return r;
                }
                f->dev = st.st_dev;
                f->ino = st.st_ino;
                f->synced_size = (uint64_t)st.st_size;
                /* The backing path as it is now (the FUSE path is not told with a descriptor). */
                ssize_t n = readlink(proc, f->name, sizeof(f->name) - 1);
                if (n < 0)
                        snprintf(f->name, sizeof(f->name), "%s", name ? name : "?");
                else
                        f->name[n] = '\0';
                pthread_mutex_init(&f->lock, NULL);
                f->next = log->files;
                log->files = f;
        }
        pthread_mutex_unlock(&log->lock);
        pthread_mutex_lock(&f->lock);
        *ret_file = f;
        return 0;
}

void undo_file_unlock(struct undo_file *f)
{
        pthread_mutex_unlock(&f->lock);
}

static size_t slot_of(const struct undo_file *f, uint64_t index)
{
        uint64_t h = index * 0x9E3779B97F4A7C15ull;
        return (size_t)(h >> 17) & (f->slot_count - 1);
}

static bool file_has_block(const struct undo_file *f, uint64_t index)
{
        if (f->slot_count == 0)
                return false;
        for (size_t i = slot_of(f, index);; i = (i + 1) & (f->slot_count - 1)) {
                if (!f->slots[i])
                        return false;
                if (f->slots[i]->index == index)
                        return true;
        }
}

static void slots_put(struct undo_block **slots, size_t count, const struct undo_file *f, struct undo_block *b)
{
        (void)count;
        size_t i = slot_of(f, b->index);
        while (slots[i])
                i = (i + 1) & (f->slot_count - 1);
        slots[i] = b;
}

static int file_add_block(struct undo_file *f, struct undo_block *b)
{
        if ((f->block_count + 1) * 2 > f->slot_count) {
                size_t old_count = f->slot_count;
                struct undo_block **old = f->slots;
                size_t count = old_count ? old_count * 2 : 64;
                struct undo_block **slots = calloc(count, sizeof(*slots));
                if (!slots)
                        return -ENOMEM;
                f->slots = slots;
                f->slot_count = count;
                for (size_t i = 0; i < old_count; i++)
                        if (old[i])
                                slots_put(slots, count, f, old[i]);
                free(old);
        }
        slots_put(f->slots, f->slot_count, f, b);
        f->block_count++;
        return 0;
}

int undo_file_save_range(struct undo_file *f, uint64_t offset, uint64_t length)
{
        if (length == 0)
                return 0;
        uint64_t last = (offset + length - 1) / UNDO_LOG_BLOCK;
        for (uint64_t index = offset / UNDO_LOG_BLOCK; index <= last; index++) {
                uint64_t start = index * UNDO_LOG_BLOCK;
                if (start >= f->synced_size)
                        break; /* beyond the synced size: the cut truncates it away */
                if (file_has_block(f, index))
                        continue; /* already holds the synced bytes */
                uint64_t n = f->synced_size - start;
                if (n > UNDO_LOG_BLOCK)
                        n = UNDO_LOG_BLOCK;
                struct undo_block *b = malloc(sizeof(*b) + n);
                if (!b)
                        return -ENOMEM;
                b->index = index;
                b->length = (uint32_t)n;
                ssize_t got = pread(f->fd, b->data, n, (off_t)start);
                if (got < 0) {
                        int r = -errno;
                        free(b);
                        return r;
                }
                if ((uint64_t)got < n) /* the file is shorter now: those bytes read as zero */
                        memset(b->data + got, 0, n - (uint64_t)got);
                int r = file_add_block(f, b);
                if (r < 0) {
                        free(b);
                        return r;
                }
        }
        return 0;
}

int undo_file_save_truncate(struct undo_file *f, uint64_t size)
{
        if (size >= f->synced_size)
                return 0;
        return undo_file_save_range(f, size, f->synced_size - size);
}

int undo_log_synced(struct undo_log *log, int fd)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        pthread_mutex_lock(&log->lock);
        struct undo_file *f = log_find(log, st.st_dev, st.st_ino);
        pthread_mutex_unlock(&log->lock);
        if (!f)
                return 0; /* never changed since it was opened: nothing to forget */
        pthread_mutex_lock(&f->lock);
        /* Records are never freed before the cut, so f stays valid here. The size is taken
         * under the file's lock: no write or truncation of this file runs meanwhile. */
        if (fstat(fd, &st) == 0) {
                file_forget_blocks(f);
                f->synced_size = (uint64_t)st.st_size;
        }
        pthread_mutex_unlock(&f->lock);
        return 0;
}

static bool all_zero(const unsigned char *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

static void file_report(const struct undo_file *f, uint64_t size, FILE *out)
{
        if (out)
                fprintf(out, "file %s size=%llu synced=%llu blocks=%zu\n", f->name, (unsigned long long)size,
                        (unsigned long long)f->synced_size, f->block_count);
}

/* Torn mode: the file keeps its new size, and each new block past the synced size is kept
 * or zeroed. Returns 1 when it did (the file is not truncated then). */
static int file_keep_tail(struct undo_log *log, struct undo_file *f, uint64_t size)
{
        if (size <= f->synced_size || !log_coin(log))
                return 0;
        uint64_t first = (f->synced_size + UNDO_LOG_BLOCK - 1) / UNDO_LOG_BLOCK;
        for (uint64_t index = first; index * UNDO_LOG_BLOCK < size; index++) {
                if (!log_coin(log))
                        continue;
                off_t start = (off_t)(index * UNDO_LOG_BLOCK);
                if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, start, UNDO_LOG_BLOCK) < 0)
                        return -errno;
        }
        return 1;
}

static int file_apply(struct undo_log *log, struct undo_file *f, struct undo_log_stats *stats, FILE *out)
{
        struct stat st;
        if (fstat(f->fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size > f->synced_size)
                stats->bytes_beyond += (uint64_t)st.st_size - f->synced_size;
        if (f->block_count || (uint64_t)st.st_size != f->synced_size) {
                stats->files++;
                file_report(f, (uint64_t)st.st_size, out);
        }
        int kept = file_keep_tail(log, f, (uint64_t)st.st_size);
        if (kept < 0)
                return kept;
        if (!kept && ftruncate(f->fd, (off_t)f->synced_size) < 0)
                return -errno;
        for (size_t i = 0; i < f->slot_count; i++) {
                struct undo_block *b = f->slots[i];
                if (!b || log_coin(log))
                        continue; /* torn: this block keeps its new bytes */
                off_t start = (off_t)(b->index * UNDO_LOG_BLOCK);
                stats->blocks++;
                /* Keep sparse images sparse: a block that was a hole (or zeros) becomes one. */
                if (all_zero(b->data, b->length) &&
                    fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, start, b->length) == 0)
                        continue;
                if (pwrite(f->fd, b->data, b->length, start) != (ssize_t)b->length)
                        return errno ? -errno : -EIO;
        }
        return 0;
}

int undo_log_apply(struct undo_log *log, struct undo_log_stats *ret_stats, FILE *out)
{
        struct undo_log_stats stats = { 0 };
        int result = 0;
        pthread_mutex_lock(&log->lock);
        while (log->files) {
                struct undo_file *f = log->files;
                log->files = f->next;
                pthread_mutex_lock(&f->lock);
                int r = file_apply(log, f, &stats, out);
                pthread_mutex_unlock(&f->lock);
                if (r < 0 && result == 0)
                        result = r;
                file_free(f);
        }
        pthread_mutex_unlock(&log->lock);
        if (ret_stats)
                *ret_stats = stats;
        return result;
}

void undo_log_stats(struct undo_log *log, struct undo_log_stats *ret_stats, FILE *out)
{
        struct undo_log_stats stats = { 0 };
        pthread_mutex_lock(&log->lock);
        for (struct undo_file *f = log->files; f; f = f->next) {
                pthread_mutex_lock(&f->lock);
                struct stat st;
                uint64_t size = fstat(f->fd, &st) == 0 ? (uint64_t)st.st_size : f->synced_size;
                if (f->block_count || size != f->synced_size) {
                        stats.files++;
                        stats.blocks += f->block_count;
                        if (size > f->synced_size)
                                stats.bytes_beyond += size - f->synced_size;
                        file_report(f, size, out);
                }
                pthread_mutex_unlock(&f->lock);
        }
        pthread_mutex_unlock(&log->lock);
        if (ret_stats)
                *ret_stats = stats;
}
