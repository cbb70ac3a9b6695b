/* send_path_set: a set of relative paths (byte strings, not NUL-terminated) that follows
 * renames of the paths themselves and of directories above them, for send_stream_check to
 * know which paths of a stream are symlinks. -errno on failure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct send_path_set;

/* Adding past max_bytes of keys (paths and the directories above them) is -E2BIG. */
int send_path_set_new(size_t max_bytes, struct send_path_set **ret);
void send_path_set_free(struct send_path_set *set);
bool send_path_set_contains(const struct send_path_set *set, const char *path, size_t len);
int send_path_set_add(struct send_path_set *set, const char *path, size_t len);
void send_path_set_remove(struct send_path_set *set, const char *path, size_t len);
/* Renames from → to: the path itself if it is in the set, and every path below from/. */
int send_path_set_move(struct send_path_set *set, const char *from, size_t from_len, const char *to, size_t to_len);
size_t send_path_set_count(const struct send_path_set *set);
/* Memory held for keys, to bound it. */
size_t send_path_set_bytes(const struct send_path_set *set);
/* True when a proper prefix of path ending before a '/' is in the set: O(len). */
bool send_path_set_has_prefix(const struct send_path_set *set, const char *path, size_t len);
