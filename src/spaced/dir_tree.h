/* dir_tree: making and removing directory trees on the host (mkdir -p, rm -r). Low level:
 * returns 0 or -errno. */
#pragma once

#include <sys/types.h>

/* Creates path and any missing parents with mode. */
int dir_tree_create(const char *path, mode_t mode);
/* Removes path and everything below it without following symlinks; 0 if it is absent. */
int dir_tree_remove(const char *path);
