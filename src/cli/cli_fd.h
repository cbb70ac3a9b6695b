/* cli_fd: whole writes and EINTR-safe reads on file descriptors (stdout, files, pipes). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Writes all len bytes; 0 or -errno. */
int cli_fd_write_all(int fd, const void *data, size_t len);
/* One read: bytes read (0 at the end) or -errno; retries on EINTR. */
ssize_t cli_fd_read(int fd, void *buf, size_t max);
