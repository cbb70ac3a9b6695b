/* ns_agent_image: the space-agent binary every sandbox executes as its PID 1, copied once
 * into a sealed memfd. A sandbox's /proc/1/exe then names "/memfd:space-agent (deleted)"
 * instead of the agent's path on the host, and nothing inside can change the image (the
 * memfd is sealed against writes, truncation and growth; the seals themselves are sealed). */
#pragma once

/* Returns the memfd (O_CLOEXEC, read-only seals applied) or -errno. */
int ns_agent_image_open(const char *path);
