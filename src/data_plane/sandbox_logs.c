#include "data_plane/sandbox_logs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "data_plane/command_log.h"

struct candidate {
        char name[64]; /* the command's directory */
        uint64_t first_seq, size;
        int64_t mtime_ns;
        bool newest; /* the log's newest segment: compacted to the exit (if finished), not dropped */
};

struct census {
        struct candidate *c;
        size_t n, cap;
        uint64_t total;
};

static int census_add(struct census *s, const char *name, const struct command_log_segment *seg, bool newest)
{
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                struct candidate *grown = realloc(s->c, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                s->c = grown;
                s->cap = cap;
        }
        struct candidate *c = &s->c[s->n++];
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->first_seq = seg->first_seq;
        c->size = seg->size;
        c->mtime_ns = seg->mtime_ns;
        c->newest = newest;
        return 0;
}

/* Every segment under root: its size into s->total, itself into s->c. */
static int census_take(const char *root, struct census *s)
{
        DIR *d = opendir(root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(d));) {
                if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(((struct candidate *)0)->name))
                        continue;
                char dir[PATH_MAX];
                if (snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name) >= (int)sizeof(dir))
                        continue;
                struct command_log_segment *segs = NULL;
                size_t n = 0;
                if (command_log_segments(dir, &segs, &n) < 0)
                        continue; /* not a log (or gone meanwhile) */
                for (size_t i = 0; r == 0 && i < n; i++) {
                        s->total += segs[i].size;
                        r = census_add(s, e->d_name, &segs[i], i + 1 == n);
                }
                free(segs);
        }
        closedir(d);
        return r;
}

static int by_mtime(const void *a, const void *b)
{
        int64_t x = ((const struct candidate *)a)->mtime_ns, y = ((const struct candidate *)b)->mtime_ns;
        return x < y ? -1 : x > y;
}

int sandbox_logs_usage(const char *root, uint64_t *ret_bytes)
{
        struct census s = { 0 };
        int r = census_take(root, &s);
        free(s.c);
        if (r == 0)
                *ret_bytes = s.total;
        return r;
}

int sandbox_logs_trim(const char *root, uint64_t target, uint64_t *ret_bytes)
{
        struct census s = { 0 };
        int r = census_take(root, &s);
        if (r < 0) {
                free(s.c);
                return r;
        }
        uint64_t total = s.total;
        /* Oldest first over every log: an old finished command gives up its output (down to
         * its exit) before a newer command loses any. */
        qsort(s.c, s.n, sizeof(*s.c), by_mtime);
        for (size_t i = 0; i < s.n && total > target; i++) {
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s/%s", root, s.c[i].name);
                uint64_t freed = 0;
                if (s.c[i].newest)
                        r = command_log_compact_end(dir, &freed);
                else if ((r = command_log_drop_segment(dir, s.c[i].first_seq)) == 0)
                        freed = s.c[i].size;
                if (r == -EAGAIN || r == -EBUSY || r == -ENOENT)
                        r = 0; /* still running, rotated meanwhile, or gone: not this one */
                if (r < 0)
                        break;
                total -= freed < total ? freed : total;
        }
        free(s.c);
        if (r == 0)
                *ret_bytes = total;
        return r;
}
