/* agent_file_tree: operations on a directory tree — list to a depth, remove recursively.
 * Neither follows symlinks below the path it was given nor crosses into another
 * filesystem while removing. */
#pragma once

#include "space_agent/agent_files.h"

/* Replies FILE_ENTRIES for req->path (a directory, or a symlink to one). */
int agent_file_tree_list(struct agent_conn *c, struct agent_file_request *req);
/* Removes req->path; a non-empty directory only when req->recursive (else -ENOTEMPTY). */
int agent_file_tree_remove(struct agent_file_request *req);
