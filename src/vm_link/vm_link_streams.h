/* vm_link_streams: the agent connections one end of the link carries, by stream id (a
 * small table: a sandbox's agent has a handful of connections open at a time). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vm_link/vm_link_frame.h"

#define VM_LINK_MAX_STREAMS 256

struct vm_link_streams {
        uint32_t id[VM_LINK_MAX_STREAMS];
        int fd[VM_LINK_MAX_STREAMS]; /* -1: free slot */
        /* the host end: what waits to be written to a connection that is slow to read, and
         * whether the guest closed the stream (the connection closes once that is out) */
        struct vm_link_buffer pending[VM_LINK_MAX_STREAMS];
        bool closing[VM_LINK_MAX_STREAMS];
};

void vm_link_streams_init(struct vm_link_streams *s);
/* The slot of stream id, or -1. */
int vm_link_streams_find(const struct vm_link_streams *s, uint32_t id);
/* The slot of the connection fd, or -1. */
int vm_link_streams_find_fd(const struct vm_link_streams *s, int fd);
/* Takes fd as stream id: its slot, or -ENOSPC. */
int vm_link_streams_add(struct vm_link_streams *s, uint32_t id, int fd);
/* Closes the slot's connection and frees it (and what was pending for it). */
void vm_link_streams_drop(struct vm_link_streams *s, int slot);
void vm_link_streams_drop_all(struct vm_link_streams *s);
