/* send_stream_check: a streaming validator of btrfs send streams (format v1 and v2), fed
 * the bytes of an upload before they reach btrfs receive. It refuses every stream that could
 * make receive touch anything outside the one new subvolume it creates:
 *   - the first command is SUBVOL or SNAPSHOT named like a space snapshot id (snap-[a-z0-9]+,
 *     at most 31 bytes), and
 *     there is exactly one; nothing may follow END;
 *   - every path is relative: no empty, ".", ".." or absolute components, no NUL;
 *   - no path goes through a symlink this stream made (tracked across RENAME and LINK), and
 *     no command that would follow a symlink (write, truncate, chmod, clone, …) names one;
 *   - no character or block devices (FIFOs and sockets are allowed: they are inert files);
 *     the only character device allowed is 0:0, an overlay whiteout;
 *   - SNAPSHOT's parent and every CLONE source are the stream's own subvolume or the parent
 *     snapshot the caller named (by UUID);
 *   - commands are at most SEND_STREAM_CHECK_MAX_CMD bytes, CRCs match, attributes appear
 *     once, unknown commands and attributes are refused.
 * Symlinks in the parent of an incremental stream are not known here: the confinement of
 * receive (import_confine) is what keeps those inside the subvolume.
 * Low level: -errno on failure; the reason is in check->error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEND_STREAM_CHECK_MAX_CMD (256u * 1024u)
#define SEND_STREAM_CHECK_MAX_SYMLINKS (1u << 20)
#define SEND_STREAM_CHECK_MAX_SYMLINK_BYTES (64u << 20) /* their paths and the directories above */

struct send_stream_check;

/* parent_uuids: UUIDs the parent snapshot is known by (its own, its received one), 16 bytes
 * each; n_parent_uuids 0 when the caller named no parent (then SNAPSHOT is refused). */
int send_stream_check_new(const uint8_t (*parent_uuids)[16], size_t n_parent_uuids, struct send_stream_check **ret);
void send_stream_check_free(struct send_stream_check *check);

/* Consumes len bytes. 0 when every complete command so far is acceptable (a partial one is
 * kept for the next call), -EINVAL (or -ENOMEM) when the stream is refused; after a refusal
 * every call fails. */
int send_stream_check_feed(struct send_stream_check *check, const void *data, size_t len);
/* At the end of the upload: 0 when the stream ended right after its END command. */
int send_stream_check_finish(struct send_stream_check *check);

/* Why the stream was refused ("" while it is not). */
const char *send_stream_check_error(const struct send_stream_check *check);
/* The subvolume the stream creates, once its first command was read ("" before). */
const char *send_stream_check_subvolume(const struct send_stream_check *check);
/* True when the stream is incremental (its first command is SNAPSHOT). */
bool send_stream_check_incremental(const struct send_stream_check *check);
