/* mv_driver: the microvm driver's instance and the parts of it in other files of this
 * directory. Private to src/runtime/microvm/. */
#pragma once

/* What a sandbox's cgroup allows QEMU beyond the guest's RAM (mv_driver.c). */
#define MV_VMM_OVERHEAD_MB 256

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"
#include "runtime/sandbox_host.h"

#define MV_DISK "disk.img"       /* a sandbox's disk, in its subvolume */
#define MV_QMP_SOCKET "qmp.sock" /* QEMU's monitor, in the run directory */

struct mv_driver {
        struct sandbox_host host; /* first: the shared ops read it through d->state */
        char guest_dir[PATH_MAX]; /* <state>/microvm: vmlinux, initramfs.cpio, kernel.version */
        char kernel_version[64];  /* the guest kernel's release */
        char qemu[PATH_MAX];      /* qemu-system-x86_64 */
        char qemu_version[32];
        char images_dir[PATH_MAX]; /* <pool>/disk-images: one ext4 image per template */
        bool kvm;                  /* /dev/kvm works: -accel kvm; else TCG */
        bool seccomp;              /* this QEMU has -sandbox */
        unsigned tsc_khz;          /* the guest's TSC rate (kernel argument), 0: unknown */
        char vmm_user[32];         /* QEMU drops to this user (-runas), "" for none */
};

static inline const struct mv_driver *mv_driver_of(const struct runtime_driver *d)
{
        return d->state;
}

/* The disk of sandbox sb: <pool>/sandboxes/<id>/disk.img. */
int mv_disk_path(const struct mv_driver *mv, const struct sandbox *sb, char *buf, size_t size);
/* runtime_driver_ops.create_rootfs (mv_disk.c): the sandbox's subvolume holding a reflink
 * copy of the template's ext4 image (made once per template from its subvolume), or of
 * the disk in a microvm snapshot. */
int mv_disk_create(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path, struct space_error *err);

/* The machine a memory image was saved from: a VM that loads it must be the same. */
struct mv_machine {
        unsigned memory_mb, cpus;
};

/* Starts the supervisor (space-vmlink host) of sb's VM in its cgroup (mv_launch.c); its
 * pid, or -1 with err set. The VMM's command line is mv_launch's own. With incoming, the
 * VM is that machine and waits, paused, for a memory image on its QMP socket. */
pid_t mv_launch(const struct mv_driver *mv, const struct sandbox *sb, const struct mv_machine *incoming, struct space_error *err);
/* Boots sb's VM (incoming NULL) or starts it to load a memory image; the handle goes to
 * sb->runtime_state (mv_driver.c). */
int mv_launch_vm(const struct runtime_driver *d, struct sandbox *sb, const struct mv_machine *incoming, struct space_error *err);
/* Waits until the guest's agent answers through the supervisor of h (mv_driver.c). */
int mv_wait_agent(const struct mv_driver *mv, const struct sandbox *sb, const struct init_handle *h, struct space_error *err);
/* The run directory's QMP socket of sb. */
void mv_qmp_socket_path(const struct mv_driver *mv, const char *id, char *buf, size_t size);

/* Memory state (mv_memory.c): runtime_driver_ops.checkpoint and .start_from_image, and
 * pause/resume, which stop the VM's vCPUs (QMP) as well as freeze its cgroup. */
int mv_checkpoint(const struct runtime_driver *d, const struct sandbox *sb, const char *rootfs_dst, const char *image_dir,
                  bool leave_running, int64_t *ret_pause_us, struct space_error *err);
int mv_start_from_image(const struct runtime_driver *d, struct sandbox *sb, const char *image_dir, struct space_error *err);
int mv_pause(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
int mv_resume(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
