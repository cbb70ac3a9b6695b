/* Two open-addressing hash tables of byte strings: the paths, and every directory above a
 * path with the number of paths below it, so that a rename of a directory scans the paths
 * only when some lie below it (send streams rename every new inode once). */
#include "storage/send_path_set.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
        char *key; /* NULL: empty; TOMBSTONE: deleted */
        size_t len;
        size_t count;
        uint64_t hash;
};

struct table {
        struct slot *slots;
        size_t cap, used, live; /* used counts tombstones too */
};

struct send_path_set {
        struct table paths, dirs;
        size_t bytes; /* of every key in both tables */
        size_t max_bytes;
};

static char tombstone;
#define TOMBSTONE (&tombstone)

#define FNV_BASIS 1469598103934665603ull
#define FNV_STEP(h, c) (((h) ^ (uint8_t)(c)) * 1099511628211ull)

/* FNV-1a: a prefix's hash is a step of the walk over the whole path. */
static uint64_t hash(const char *s, size_t n)
{
        uint64_t h = FNV_BASIS;
        while (n--)
                h = FNV_STEP(h, *s++);
        return h;
}

static struct slot *find_hashed(const struct table *t, const char *key, size_t len, uint64_t h)
{
        if (t->cap == 0)
                return NULL;
        for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
                struct slot *s = &t->slots[i];
                if (!s->key)
                        return NULL;
                if (s->key != TOMBSTONE && s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)
                        return s;
        }
}

static struct slot *find(const struct table *t, const char *key, size_t len)
{
        return find_hashed(t, key, len, hash(key, len));
}

static int grow(struct table *t)
{
        size_t cap = t->cap ? t->cap * 2 : 64;
        if (t->live * 2 < t->cap)
                cap = t->cap; /* mostly tombstones: rehash in place */
        struct slot *slots = calloc(cap, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++) {
                struct slot *s = &t->slots[i];
                if (!s->key || s->key == TOMBSTONE)
                        continue;
                size_t j = s->hash & (cap - 1);
                while (slots[j].key)
                        j = (j + 1) & (cap - 1);
                slots[j] = *s;
        }
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
        t->used = t->live;
        return 0;
}

/* Adds n to key's count, inserting it when absent. */
static int table_add(struct send_path_set *set, struct table *t, const char *key, size_t len, size_t n)
{
        struct slot *s = find(t, key, len);
        if (s) {
                s->count += n;
                return 0;
        }
        if (set->bytes + len > set->max_bytes)
                return -E2BIG;
        if ((t->used + 1) * 4 > t->cap * 3 && grow(t) < 0)
                return -ENOMEM;
        char *copy = malloc(len ? len : 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, key, len);
        uint64_t h = hash(key, len);
        size_t i = h & (t->cap - 1);
        while (t->slots[i].key && t->slots[i].key != TOMBSTONE)
                i = (i + 1) & (t->cap - 1);
        if (!t->slots[i].key)
                t->used++;
        t->slots[i] = (struct slot){ copy, len, n, h };
        t->live++;
        set->bytes += len;
        return 0;
}

/* Takes n from key's count, dropping it at zero. */
static void table_sub(struct send_path_set *set, struct table *t, const char *key, size_t len, size_t n)
{
        struct slot *s = find(t, key, len);
        if (!s)
                return;
        if (s->count > n) {
                s->count -= n;
                return;
        }
        set->bytes -= s->len;
        free(s->key);
        s->key = TOMBSTONE;
        t->live--;
}

static void table_free(struct table *t)
{
        for (size_t i = 0; i < t->cap; i++)
                if (t->slots[i].key != TOMBSTONE)
                        free(t->slots[i].key);
        free(t->slots);
}

int send_path_set_new(size_t max_bytes, struct send_path_set **ret)
{
        struct send_path_set *set = calloc(1, sizeof(*set));
        if (!set)
                return -ENOMEM;
        set->max_bytes = max_bytes;
        *ret = set;
        return 0;
}

void send_path_set_free(struct send_path_set *set)
{
        if (!set)
                return;
        table_free(&set->paths);
        table_free(&set->dirs);
        free(set);
}

bool send_path_set_contains(const struct send_path_set *set, const char *path, size_t len)
{
        return find(&set->paths, path, len) != NULL;
}

size_t send_path_set_count(const struct send_path_set *set)
{
        return set->paths.live;
}

size_t send_path_set_bytes(const struct send_path_set *set)
{
        return set->bytes;
}

bool send_path_set_has_prefix(const struct send_path_set *set, const char *path, size_t len)
{
        if (set->paths.live == 0)
                return false;
        uint64_t h = FNV_BASIS;
        for (size_t i = 0; i < len; i++) {
                if (path[i] == '/' && i > 0 && find_hashed(&set->paths, path, i, h))
                        return true;
                h = FNV_STEP(h, path[i]);
        }
        return false;
}

int send_path_set_add(struct send_path_set *set, const char *path, size_t len)
{
        int r;
        if (find(&set->paths, path, len))
                return 0;
        for (size_t i = 1; i < len; i++)
                if (path[i] == '/' && (r = table_add(set, &set->dirs, path, i, 1)) < 0)
                        return r; /* counts above may be high: only ever over-scans */
        return table_add(set, &set->paths, path, len, 1);
}

void send_path_set_remove(struct send_path_set *set, const char *path, size_t len)
{
        if (!find(&set->paths, path, len))
                return;
        for (size_t i = 1; i < len; i++)
                if (path[i] == '/')
                        table_sub(set, &set->dirs, path, i, 1);
        table_sub(set, &set->paths, path, len, 1); /* last: path may be the key it frees */
}

int send_path_set_move(struct send_path_set *set, const char *from, size_t from_len, const char *to, size_t to_len)
{
        if (find(&set->paths, from, from_len)) {
                send_path_set_remove(set, from, from_len);
                int r = send_path_set_add(set, to, to_len);
                if (r < 0)
                        return r;
        }
        if (!find(&set->dirs, from, from_len))
                return 0;
        /* Collect the paths below from/ first: moving them while scanning would revisit some. */
        size_t n = 0, cap = 16;
        char **below = malloc(cap * sizeof(*below));
        size_t *lens = malloc(cap * sizeof(*lens));
        int r = below && lens ? 0 : -ENOMEM;
        for (size_t i = 0; r == 0 && i < set->paths.cap; i++) {
                struct slot *s = &set->paths.slots[i];
                if (!s->key || s->key == TOMBSTONE || s->len <= from_len || s->key[from_len] != '/' ||
                    memcmp(s->key, from, from_len) != 0)
                        continue;
                if (n == cap) {
                        cap *= 2;
                        char **nb = realloc(below, cap * sizeof(*below));
                        below = nb ? nb : below;
                        size_t *nl = nb ? realloc(lens, cap * sizeof(*lens)) : NULL;
                        lens = nl ? nl : lens;
                        if (!nb || !nl) {
                                r = -ENOMEM;
                                break;
                        }
                }
                below[n] = malloc(to_len + s->len - from_len);
                if (!below[n]) {
                        r = -ENOMEM;
                        break;
                }
                memcpy(below[n], to, to_len);
                memcpy(below[n] + to_len, s->key + from_len, s->len - from_len);
                lens[n] = to_len + s->len - from_len;
                send_path_set_remove(set, s->key, s->len); /* s->key is freed: s stays a tombstone */
                n++;
        }
        for (size_t i = 0; i < n; i++) {
                if (r == 0)
                        r = send_path_set_add(set, below[i], lens[i]);
                free(below[i]);
        }
        free(below);
        free(lens);
        return r;
}
