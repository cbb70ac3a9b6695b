/* command_log: segmented, sequence-numbered record files (see command_log.h). */
#include "data_plane/command_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/dir_tree.h"

#define SEGMENT_MIN (64u << 10)
#define SEGMENT_MAX (16u << 20)
#define MAX_SEGMENTS 4096

struct segment {
        uint64_t first_seq;
        uint64_t size;
};

struct command_log_writer {
        char dir[PATH_MAX];
        uint64_t cap;
        uint64_t segment_max;
        struct segment *segs; /* oldest first; the last is being written */
        size_t nsegs;
        uint64_t total;
        int fd; /* the last segment, O_APPEND */
        uint64_t last_seq;
        bool durable; /* each append reaches the disk before it returns (--durability power) */
};

struct header {
        uint32_t len;
        uint8_t kind;
        uint8_t pad[3];
        uint64_t seq;
};
_Static_assert(sizeof(struct header) == COMMAND_LOG_HEADER_SIZE, "record header is 16 bytes");

static void segment_path(const char *dir, uint64_t first_seq, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%020" PRIu64 ".seg", dir, first_seq);
}

static int cmp_segment(const void *a, const void *b)
{
        uint64_t x = ((const struct segment *)a)->first_seq, y = ((const struct segment *)b)->first_seq;
        return x < y ? -1 : x > y;
}

/* Lists the segments of dir, oldest first. */
static int segments_list(const char *dir, struct segment **ret, size_t *ret_n)
{
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct segment *segs = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        for (struct dirent *e; (e = readdir(d));) {
                char *end;
                uint64_t first = strtoull(e->d_name, &end, 10);
                if (end - e->d_name != 20 || strcmp(end, ".seg") != 0 || first == 0)
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 8;
                        struct segment *grown = cap <= MAX_SEGMENTS ? realloc(segs, cap * sizeof(*segs)) : NULL;
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        segs = grown;
                }
                char path[PATH_MAX + 32];
                struct stat st;
                segment_path(dir, first, path, sizeof(path));
                segs[n++] = (struct segment){ .first_seq = first, .size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0 };
        }
        closedir(d);
        if (r < 0) {
                free(segs);
                return r;
        }
        if (n > 1)
                qsort(segs, n, sizeof(*segs), cmp_segment);
        *ret = segs;
        *ret_n = n;
        return 0;
}

/* Walks the records of an open segment: returns the size of its whole records and the last
 * sequence number in them (first_seq - 1 when empty). */
static int segment_scan(int fd, uint64_t file_size, uint64_t first_seq, uint64_t *ret_good, uint64_t *ret_last)
{
        uint64_t off = 0, last = first_seq - 1;
        while (off + sizeof(struct header) <= file_size) {
                struct header h;
                if (pread(fd, &h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
                        return -EIO;
                if (h.seq != last + 1 || h.len > COMMAND_LOG_RECORD_MAX || off + sizeof(h) + h.len > file_size)
                        break;
                off += sizeof(h) + h.len;
                last = h.seq;
        }
        *ret_good = off;
        *ret_last = last;
        return 0;
}

static int segment_start(struct command_log_writer *w, uint64_t first_seq)
{
        char path[PATH_MAX + 32];
        segment_path(w->dir, first_seq, path, sizeof(path));
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        struct segment *grown = realloc(w->segs, (w->nsegs + 1) * sizeof(*w->segs));
        if (!grown) {
                close(fd);
                unlink(path);
                return -ENOMEM;
        }
        w->segs = grown;
        w->segs[w->nsegs++] = (struct segment){ .first_seq = first_seq, .size = 0 };
        if (w->durable) { /* the new segment's name too, and the log directory's own entry */
                _cleanup_close_ int dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd >= 0)
                        fsync(dfd);
        }
        if (w->fd >= 0)
                close(w->fd);
        w->fd = fd;
        return 0;
}

/* Deletes the oldest segments while the log is over its cap (never the one being written). */
static void enforce_cap(struct command_log_writer *w)
{
        while (w->nsegs > 1 && w->total > w->cap) {
                char path[PATH_MAX + 32];
                segment_path(w->dir, w->segs[0].first_seq, path, sizeof(path));
                if (unlink(path) < 0 && errno != ENOENT)
                        return;
                w->total -= w->segs[0].size;
                memmove(w->segs, w->segs + 1, (w->nsegs - 1) * sizeof(*w->segs));
                w->nsegs--;
        }
}

/* Opens the last segment of an existing log for appending, cutting a torn record. */
static int writer_recover(struct command_log_writer *w)
{
        for (size_t i = 0; i < w->nsegs; i++)
                w->total += w->segs[i].size;
        struct segment *last = &w->segs[w->nsegs - 1];
        char path[PATH_MAX + 32];
        segment_path(w->dir, last->first_seq, path, sizeof(path));
        int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        uint64_t good, last_seq;
        int r = segment_scan(fd, last->size, last->first_seq, &good, &last_seq);
        if (r == 0 && good < last->size && ftruncate(fd, (off_t)good) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return r;
        }
        w->total -= last->size - good;
        last->size = good;
        w->fd = fd;
        w->last_seq = last_seq;
        return 0;
}

int command_log_open(const char *dir, uint64_t cap_bytes, struct command_log_writer **ret)
{
        int r = dir_tree_create(dir, 0700);
        if (r < 0)
                return r;
        struct command_log_writer *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        if (snprintf(w->dir, sizeof(w->dir), "%s", dir) >= (int)sizeof(w->dir)) {
                free(w);
                return -ENAMETOOLONG;
        }
        w->fd = -1;
        w->cap = cap_bytes;
        w->segment_max = cap_bytes / 4;
        if (w->segment_max < SEGMENT_MIN)
                w->segment_max = SEGMENT_MIN;
        if (w->segment_max > SEGMENT_MAX)
                w->segment_max = SEGMENT_MAX;
        r = segments_list(dir, &w->segs, &w->nsegs);
        if (r == 0 && w->nsegs > 0)
                r = writer_recover(w);
        if (r < 0) {
                command_log_close(w);
                return r;
        }
        *ret = w;
        return 0;
}

uint64_t command_log_last_seq(const struct command_log_writer *w)
{
        return w->last_seq;
}

int command_log_append(struct command_log_writer *w, uint64_t seq, enum command_log_kind kind, const void *data, size_t len)
{
        if (seq != w->last_seq + 1 || len > COMMAND_LOG_RECORD_MAX)
                return -EINVAL;
        uint64_t rec = sizeof(struct header) + len;
        int r;
        if (w->fd < 0 || (w->segs[w->nsegs - 1].size > 0 && w->segs[w->nsegs - 1].size + rec > w->segment_max)) {
                r = segment_start(w, seq);
                if (r < 0)
                        return r;
        }
        struct header h = { .len = (uint32_t)len, .kind = (uint8_t)kind, .seq = seq };
        struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)data, len } };
        ssize_t n = writev(w->fd, iov, len ? 2 : 1);
        struct segment *cur = &w->segs[w->nsegs - 1];
        if (n != (ssize_t)rec) {
                r = n < 0 ? -errno : -ENOSPC;
                /* Leave no torn record behind for readers to trip on. */
                if (n > 0 && ftruncate(w->fd, (off_t)cur->size) < 0)
                        r = -errno;
                return r;
        }
        if (w->durable && fdatasync(w->fd) < 0) {
                r = -errno;
                if (ftruncate(w->fd, (off_t)cur->size) < 0)
                        r = -errno;
                return r; /* not acknowledged: the agent keeps it and sends it again */
        }
        cur->size += rec;
        w->total += rec;
        w->last_seq = seq;
        enforce_cap(w);
        return 0;
}

void command_log_set_durable(struct command_log_writer *w, bool durable)
{
        w->durable = durable;
}

void command_log_close(struct command_log_writer *w)
{
        if (!w)
                return;
        if (w->fd >= 0)
                close(w->fd);
        free(w->segs);
        free(w);
}

struct command_log_reader {
        char dir[PATH_MAX];
        int fd;             /* the segment being read, -1 before the first */
        uint64_t first_seq; /* its name */
        uint64_t off;       /* next record's offset in it */
        uint64_t position;  /* last sequence number returned */
        uint8_t *buf;
        size_t buf_cap;
};

int command_log_reader_open(const char *dir, uint64_t after_seq, struct command_log_reader **ret)
{
        struct stat st;
        if (stat(dir, &st) < 0)
                return -errno;
        struct command_log_reader *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        snprintf(r->dir, sizeof(r->dir), "%s", dir);
        r->fd = -1;
        r->position = after_seq;
        *ret = r;
        return 0;
}

int command_log_end_seq(const char *dir, uint64_t *ret)
{
        struct segment *segs;
        size_t n;
        int r = segments_list(dir, &segs, &n);
        if (r < 0)
                return r;
        uint64_t last = 0;
        /* The newest segment holds the end; an empty one (just started) follows the one
         * before it, whose last record is first_seq - 1. */
        if (n > 0) {
                char path[PATH_MAX + 32];
                segment_path(dir, segs[n - 1].first_seq, path, sizeof(path));
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0) {
                        r = -errno;
                        if (fd >= 0)
                                close(fd);
                        free(segs);
                        return r == -ENOENT ? command_log_end_seq(dir, ret) : r; /* dropped for the cap */
                }
                uint64_t good;
                r = segment_scan(fd, (uint64_t)st.st_size, segs[n - 1].first_seq, &good, &last);
                close(fd);
        }
        free(segs);
        if (r < 0)
                return r;
        *ret = last;
        return 0;
}

uint64_t command_log_reader_position(const struct command_log_reader *r)
{
        return r->position;
}

#define SKIP_BLOCK (1u << 20)

/* Moves r->off over the records of the open segment from *seq (its first) up to want,
 * leaving *seq at the first record not skipped. */
static int reader_skip(struct command_log_reader *r, uint64_t want, uint64_t *seq)
{
        if (r->buf_cap < SKIP_BLOCK) {
                uint8_t *grown = realloc(r->buf, SKIP_BLOCK);
                if (!grown)
                        return -ENOMEM;
                r->buf = grown;
                r->buf_cap = SKIP_BLOCK;
        }
        while (*seq < want) {
                ssize_t n = pread(r->fd, r->buf, SKIP_BLOCK, (off_t)r->off);
                if (n < 0)
                        return -errno;
                size_t pos = 0;
                while (*seq < want && pos + sizeof(struct header) <= (size_t)n) {
                        struct header h;
                        memcpy(&h, r->buf + pos, sizeof(h));
                        if (h.seq != *seq || h.len > COMMAND_LOG_RECORD_MAX)
                                return 0;
                        pos += sizeof(h) + h.len;
                        (*seq)++;
                }
                if (pos == 0)
                        return 0; /* not even a whole header: the end of what is written */
                /* A record whose payload runs past the block is checked when read. */
                r->off += pos;
        }
        return 0;
}

/* Opens the segment that holds position + 1, or reports what was dropped before the oldest
 * segment. Returns 0 (positioned, or nothing to read yet), DROPPED, or -errno. */
static int reader_locate(struct command_log_reader *r, struct command_log_record *ret)
{
        struct segment *segs;
        size_t n;
        int q = segments_list(r->dir, &segs, &n);
        if (q < 0)
                return q;
        uint64_t want = r->position + 1;
        ssize_t pick = -1;
        for (size_t i = 0; i < n; i++)
                if (segs[i].first_seq <= want)
                        pick = (ssize_t)i;
        if (pick < 0 && n > 0) {
                /* Everything up to the oldest segment was deleted for the cap. */
                ret->dropped_first = want;
                ret->dropped_last = segs[0].first_seq - 1;
                r->position = ret->dropped_last;
                free(segs);
                return COMMAND_LOG_READ_DROPPED;
        }
        if (pick < 0) {
                free(segs);
                return 0;
        }
        char path[PATH_MAX + 32];
        segment_path(r->dir, segs[pick].first_seq, path, sizeof(path));
        uint64_t first = segs[pick].first_seq;
        free(segs);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* deleted just now: look again next time */
        if (r->fd >= 0)
                close(r->fd);
        r->fd = fd;
        r->first_seq = first;
        r->off = 0;
        /* Skip to the record after position, reading the headers in big blocks: a segment
         * of short lines holds hundreds of thousands of records. */
        uint64_t seq = first;
        q = reader_skip(r, want, &seq);
        if (q < 0)
                return q;
        if (seq < want) {
                /* Positioned after what the log has yet: look again next time, as the
                 * records up to position may go on in this segment or in a new one. */
                close(r->fd);
                r->fd = -1;
        }
        return 0;
}

/* The next segment starts at position + 1, if it exists yet. */
static int reader_advance(struct command_log_reader *r)
{
        char path[PATH_MAX + 32];
        segment_path(r->dir, r->position + 1, path, sizeof(path));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        close(r->fd);
        r->fd = fd;
        r->first_seq = r->position + 1;
        r->off = 0;
        return 0;
}

/* Reads the record at the current offset: RECORD, NONE (not all there yet), or -errno. */
static int reader_record(struct command_log_reader *r, struct command_log_record *ret)
{
        struct header h;
        ssize_t n = pread(r->fd, &h, sizeof(h), (off_t)r->off);
        if (n < 0)
                return -errno;
        if (n < (ssize_t)sizeof(h) || h.seq != r->position + 1 || h.len > COMMAND_LOG_RECORD_MAX)
                return COMMAND_LOG_READ_NONE;
        if (h.len + 1 > r->buf_cap) {
                uint8_t *grown = realloc(r->buf, h.len + 1);
                if (!grown)
                        return -ENOMEM;
                r->buf = grown;
                r->buf_cap = h.len + 1;
        }
        n = h.len ? pread(r->fd, r->buf, h.len, (off_t)(r->off + sizeof(h))) : 0;
        if (n < 0)
                return -errno;
        if (n < (ssize_t)h.len)
                return COMMAND_LOG_READ_NONE; /* the writer is mid-record */
        r->buf[h.len] = 0;
        r->off += sizeof(h) + h.len;
        r->position = h.seq;
        *ret = (struct command_log_record){ .seq = h.seq, .kind = h.kind, .data = r->buf, .len = h.len };
        return COMMAND_LOG_READ_RECORD;
}

int command_log_reader_next(struct command_log_reader *r, struct command_log_record *ret)
{
        int q;
        if (r->fd < 0) {
                q = reader_locate(r, ret);
                if (q != 0 || r->fd < 0)
                        return q;
        }
        q = reader_record(r, ret);
        if (q != COMMAND_LOG_READ_NONE)
                return q;
        /* At the end of this segment: the next one, if the writer moved on. */
        q = reader_advance(r);
        if (q == 0)
                return reader_record(r, ret);
        if (q != -ENOENT)
                return q;
        /* Segments go oldest first: while ours is still there, no successor was deleted,
         * so there is simply nothing new yet. */
        char path[PATH_MAX + 32];
        struct stat st;
        segment_path(r->dir, r->first_seq, path, sizeof(path));
        if (stat(path, &st) == 0)
                return COMMAND_LOG_READ_NONE;
        if (stat(r->dir, &st) < 0)
                return -errno;
        /* Ours was deleted for the cap, and maybe its successors: find the oldest left. */
        q = reader_locate(r, ret);
        if (q != 0 || r->fd < 0)
                return q;
        return reader_record(r, ret);
}

void command_log_reader_close(struct command_log_reader *r)
{
        if (!r)
                return;
        if (r->fd >= 0)
                close(r->fd);
        free(r->buf);
        free(r);
}

int command_log_segments(const char *dir, struct command_log_segment **ret, size_t *ret_n)
{
        struct segment *segs;
        size_t n;
        int r = segments_list(dir, &segs, &n);
        if (r < 0)
                return r;
        struct command_log_segment *out = calloc(n ? n : 1, sizeof(*out));
        if (!out) {
                free(segs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                char path[PATH_MAX + 32];
                struct stat st;
                segment_path(dir, segs[i].first_seq, path, sizeof(path));
                out[i] = (struct command_log_segment){ .first_seq = segs[i].first_seq, .size = segs[i].size };
                if (stat(path, &st) == 0)
                        out[i].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        }
        free(segs);
        *ret = out;
        *ret_n = n;
        return 0;
}

int command_log_drop_segment(const char *dir, uint64_t first_seq)
{
        struct segment *segs;
        size_t n;
        int r = segments_list(dir, &segs, &n);
        if (r < 0)
                return r;
        bool newest = n == 0 || segs[n - 1].first_seq <= first_seq;
        free(segs);
        if (newest)
                return -EBUSY;
        char path[PATH_MAX + 32];
        segment_path(dir, first_seq, path, sizeof(path));
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int command_log_compact_end(const char *dir, uint64_t *ret_freed)
{
        struct segment *segs;
        size_t n;
        int r = segments_list(dir, &segs, &n);
        if (r < 0)
                return r;
        if (n == 0) {
                free(segs);
                return -EAGAIN;
        }
        struct segment last = segs[n - 1];
        free(segs);
        char path[PATH_MAX + 32];
        segment_path(dir, last.first_seq, path, sizeof(path));
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Find the last record: it must be the exit. */
        uint64_t off = 0, exit_off = UINT64_MAX, seq = last.first_seq - 1;
        struct header h, exit_h = { 0 };
        while (off + sizeof(h) <= last.size && pread(fd, &h, sizeof(h), (off_t)off) == (ssize_t)sizeof(h) && h.seq == seq + 1 &&
               h.len <= COMMAND_LOG_RECORD_MAX && off + sizeof(h) + h.len <= last.size) {
                exit_off = h.kind == COMMAND_LOG_EXIT ? off : UINT64_MAX;
                exit_h = h;
                seq = h.seq;
                off += sizeof(h) + h.len;
        }
        if (exit_off == UINT64_MAX)
                return -EAGAIN;
        if (exit_h.seq == last.first_seq) {
                *ret_freed = 0; /* holds just the exit already */
                return 0;
        }
        _cleanup_free_ uint8_t *rec = malloc(sizeof(h) + exit_h.len);
        if (!rec || pread(fd, rec, sizeof(h) + exit_h.len, (off_t)exit_off) != (ssize_t)(sizeof(h) + exit_h.len))
                return rec ? -EIO : -ENOMEM;
        /* Beside, then in place: at every instant the log ends with its exit. */
        char tmp[PATH_MAX + 48], dst[PATH_MAX + 32];
        segment_path(dir, exit_h.seq, dst, sizeof(dst));
        snprintf(tmp, sizeof(tmp), "%s/compact.tmp", dir);
        _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        if (write(out, rec, sizeof(h) + exit_h.len) != (ssize_t)(sizeof(h) + exit_h.len) || fsync(out) < 0 ||
            rename(tmp, dst) < 0) {
                r = -errno;
                unlink(tmp);
                return r ? r : -EIO;
        }
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        *ret_freed = last.size - (sizeof(h) + exit_h.len);
        return 0;
}

int command_log_remove(const char *dir)
{
        return dir_tree_remove(dir);
}

int command_log_sweep(const char *root, bool (*keep)(const char *name, void *userdata), void *userdata)
{
        DIR *d = opendir(root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int removed = 0;
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.' || keep(e->d_name, userdata))
                        continue;
                char path[PATH_MAX];
                if (snprintf(path, sizeof(path), "%s/%s", root, e->d_name) < (int)sizeof(path) && dir_tree_remove(path) == 0)
                        removed++;
        }
        closedir(d);
        return removed;
}
