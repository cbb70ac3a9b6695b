/* ns_uid_range: host uid ranges for sandboxes' user namespaces, allocated host-wide.
 * Each range (65536 ids from UID_BASE_FIRST on) in use by any spaced on the host is a file
 * <dir>/<base> (dir: /run/space/uid-ranges by default) holding "<instance> <sandbox> <state
 * dir>". Every change happens under an exclusive flock of <dir>/.lock, so two daemons never
 * hand out the same range. A file outlives the daemon that made it (its sandboxes may run
 * on across a restart of spaced); it goes when its sandbox stops, when its owner's state
 * directory no longer holds that instance, or with /run at reboot. See docs/isolation.md. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define NS_UID_BASE_FIRST 1000000u
#define NS_UID_SLOTS 16000u
#define NS_UID_RANGE_DIR "/run/space/uid-ranges"

struct ns_uid_ranges;

/* dir NULL or "": NS_UID_RANGE_DIR. Creates it. 0 or -errno. */
int ns_uid_ranges_open(const char *dir, const char *instance, const char *state_dir, struct ns_uid_ranges **ret);
/* The same host-wide allocator over other numbered blocks: count slots first + i * stride
 * (the egress address blocks of ns_network.c use it: a /30 each, named by its address). */
int ns_uid_ranges_open_slots(const char *dir, const char *instance, const char *state_dir, uint32_t first, uint32_t stride,
                             uint32_t count, struct ns_uid_ranges **ret);
void ns_uid_ranges_free(struct ns_uid_ranges *u);
/* Takes the lowest free range for sandbox_id: 0 and *ret_base, -ENOSPC, or -errno. */
int ns_uid_ranges_take(struct ns_uid_ranges *u, const char *sandbox_id, uint32_t *ret_base);
/* Gives the range back if this instance holds it for sandbox_id; 0 otherwise too. */
int ns_uid_ranges_give(struct ns_uid_ranges *u, uint32_t base, const char *sandbox_id);
/* A sandbox's own record of the range it holds (a file in its run directory, written before
 * anything uses the range, so a crash cannot lose it): 0 for none or unreadable. */
uint32_t ns_uid_ranges_recorded(const char *path);
/* Writes that record: 0 or -errno. */
int ns_uid_ranges_record(const char *path, uint32_t base);
/* Gives back every range this instance holds for which keep(base, sandbox, arg) is false
 * (after a crash between taking a range and recording it). */
int ns_uid_ranges_sweep(struct ns_uid_ranges *u, int (*keep)(uint32_t base, const char *sandbox_id, void *arg), void *arg);
