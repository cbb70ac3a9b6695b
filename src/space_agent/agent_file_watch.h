/* agent_file_watch: FILE_WATCH turns its connection into a stream of FILE_EVENT frames
 * (inotify on the directory, and on every subdirectory when recursive) until spaced
 * closes it. The first frame is FILE_DONE (the watch is in place). If spaced reads too
 * slowly, events are dropped and one FILE_EVENT with kind OVERFLOW says so. */
#pragma once

#include <stdint.h>

#include "space_agent/agent_files.h"

struct agent_file_watch;

/* Starts watching req->path for c (a directory); -errno when it cannot. */
int agent_file_watch_start(struct agent_conn *c, struct agent_file_request *req);
/* The epoll events c's socket needs while it carries events. */
uint32_t agent_file_watch_events(const struct agent_file_watch *w);
/* c's socket is ready (EPOLLOUT: send more; EPOLLIN/HUP: spaced went away?). */
void agent_file_watch_on_conn(struct agent_file_watch *w, uint32_t events);
/* c is closing: stop watching (the memory goes with agent_file_watch_free). */
void agent_file_watch_stop(struct agent_file_watch *w);
void agent_file_watch_free(struct agent_file_watch *w);
