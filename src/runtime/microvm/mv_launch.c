/* Starting a microvm: its supervisor (space-vmlink host, vm_link_host.c) runs QEMU's
 * microvm machine with the sandbox's disk and the agent's virtio-serial port, no network,
 * no devices but those, the sandbox's memory and vCPUs; QEMU drops to an unprivileged user
 * and, where it has seccomp, denies itself new privileges, spawning and resource control.
 * The supervisor is detached from spaced (its own session, reparented to init): it lives
 * on through a restart of spaced, which finds it again by its recorded pid. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/microvm/mv_driver.h"

#define MAX_ARGS 64

struct vmm_command {
        char *argv[MAX_ARGS];
        size_t n;
        char memory[16], smp[16], kernel[PATH_MAX], initrd[PATH_MAX], append[256], serial[PATH_MAX + 8], drive[PATH_MAX + 64],
                run_dir[PATH_MAX], machine[128], qmp[PATH_MAX + 40];
};

static void arg(struct vmm_command *c, const char *a)
{
        if (c->n + 1 < MAX_ARGS)
                c->argv[c->n++] = (char *)a;
        c->argv[c->n] = NULL;
}

static int vmm_command_build(const struct mv_driver *mv, const struct sandbox *sb, const struct mv_machine *incoming,
                             struct vmm_command *c)
{
        unsigned mb = sb->resources.memory_mb >= 64 ? (unsigned)sb->resources.memory_mb : 256;
        unsigned cpus = sb->resources.cpus > 1 ? (unsigned)(sb->resources.cpus + 0.999) : 1;
        if (incoming) { /* the machine the image was saved from, whatever the sandbox says now */
                mb = incoming->memory_mb;
                cpus = incoming->cpus;
        }
        snprintf(c->memory, sizeof(c->memory), "%u", mb);
        snprintf(c->smp, sizeof(c->smp), "%u", cpus);
        snprintf(c->kernel, sizeof(c->kernel), "%s/vmlinux", mv->guest_dir);
        snprintf(c->initrd, sizeof(c->initrd), "%s/initramfs.cpio", mv->guest_dir);
        sandbox_host_run_path(&mv->host, sb->id, NULL, c->run_dir, sizeof(c->run_dir));
        snprintf(c->serial, sizeof(c->serial), "file:%s/console.log", c->run_dir);
        snprintf(c->qmp, sizeof(c->qmp), "unix:%s/" MV_QMP_SOCKET ",server=on,wait=off", c->run_dir);
        /* The disk comes as two fds (read-write, read-only) in fd set 1: a memory save makes
         * QEMU reopen it read-only, and as its unprivileged user it could not open the path.
         * No image locking: the two are open file descriptions of their own, whose locks
         * would conflict, and the disk is this VM's alone (spaced's subvolume). */
        snprintf(c->drive, sizeof(c->drive),
                 "id=disk,driver=raw,file.driver=file,file.filename=/dev/fdset/1,file.locking=off,if=none,cache=none,"
                 "aio=threads");
        /* Under TCG the guest cannot calibrate its TSC reliably: tell it the rate. */
        if (mv->tsc_khz && !mv->kvm)
                snprintf(c->append, sizeof(c->append), "console=ttyS0 quiet panic=-1 reboot=t tsc_early_khz=%u tsc=reliable",
                         mv->tsc_khz);
        else
                snprintf(c->append, sizeof(c->append), "console=ttyS0 quiet panic=-1 reboot=t");
        snprintf(c->machine, sizeof(c->machine), "microvm,x-option-roms=off,isa-serial=on,rtc=off,pit=off,pic=off");
        c->n = 0;
        const char *fixed[] = { mv->qemu,
                                "-M",
                                c->machine,
                                "-accel",
                                mv->kvm ? "kvm" : "tcg",
                                "-cpu",
                                mv->kvm ? "host" : "max",
                                "-nodefaults",
                                "-no-user-config",
                                "-display",
                                "none",
                                "-no-reboot",
                                "-m",
                                c->memory,
                                "-smp",
                                c->smp,
                                "-kernel",
                                c->kernel,
                                "-initrd",
                                c->initrd,
                                "-append",
                                c->append,
                                "-serial",
                                c->serial,
                                "-drive",
                                c->drive,
                                "-device",
                                "virtio-blk-device,drive=disk",
                                "-device",
                                "virtio-serial-device,max_ports=2",
                                "-chardev",
                                "socket,id=agent,fd=3",
                                "-device",
                                "virtserialport,chardev=agent,name=space.agent,nr=1",
                                "-qmp",
                                c->qmp,
                                "-add-fd",
                                "fd=4,set=1",
                                "-add-fd",
                                "fd=5,set=1",
                                NULL };
        for (size_t i = 0; fixed[i]; i++)
                arg(c, fixed[i]);
        if (incoming) { /* paused, waiting for its memory image on the QMP socket */
                arg(c, "-S");
                arg(c, "-incoming");
                arg(c, "defer");
        }
        if (mv->seccomp) {
                arg(c, "-sandbox");
                /* elevateprivileges stays allowed: -runas drops to its user after seccomp is on (and
                 * then it cannot regain root: it has no capabilities left) */
                arg(c, "on,obsolete=deny,spawn=deny,resourcecontrol=deny");
        }
        if (mv->vmm_user[0]) {
                arg(c, "-runas");
                arg(c, mv->vmm_user);
        }
        return c->n + 1 < MAX_ARGS ? 0 : -E2BIG;
}

/* fd moved to 10 or above, so that the child's dup2 onto 0-5 clobbers none of its sources. */
static int high_fd(int fd)
{
        if (fd < 0 || fd >= 10)
                return fd;
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
        close(fd);
        return high;
}

pid_t mv_launch(const struct mv_driver *mv, const struct sandbox *sb, const struct mv_machine *incoming, struct space_error *err)
{
        struct vmm_command c;
        char log[PATH_MAX + 16];
        char *argv[MAX_ARGS + 8];
        char disk[PATH_MAX];
        int gate[2] = { -1, -1 }, report[2] = { -1, -1 }, disk_rw = -1, disk_ro = -1, logfd = -1, nullfd = -1;
        int r = vmm_command_build(mv, sb, incoming, &c);
        if (r < 0 || (r = mv_disk_path(mv, sb, disk, sizeof(disk))) < 0)
                return space_error_errno(err, -r, "VMM command of %s", sb->id);
        if ((disk_rw = high_fd(open(disk, O_RDWR | O_CLOEXEC | O_NOFOLLOW))) < 0 ||
            (disk_ro = high_fd(open(disk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW))) < 0) {
                space_error_errno(err, errno, "open the disk of %s", sb->id);
                goto fail;
        }
        size_t n = 0;
        argv[n++] = "space-vmlink";
        argv[n++] = "host";
        argv[n++] = c.run_dir;
        argv[n++] = "--";
        for (size_t i = 0; i < c.n; i++)
                argv[n++] = c.argv[i];
        argv[n] = NULL;
        snprintf(log, sizeof(log), "%s/qemu.log", c.run_dir);
        logfd = high_fd(open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
        nullfd = high_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (logfd < 0 || nullfd < 0 || pipe2(gate, O_CLOEXEC) < 0 || (gate[0] = high_fd(gate[0])) < 0 ||
            pipe2(report, O_CLOEXEC) < 0) {
                space_error_errno(err, errno, "set up the VM of %s", sb->id);
                goto fail;
        }
        /* Only async-signal-safe calls between fork and exec (spaced has threads). */
        pid_t mid = fork();
        if (mid < 0) {
                space_error_errno(err, errno, "fork");
                goto fail;
        }
        if (mid == 0) {
                setsid();
                pid_t pid = fork();
                if (pid != 0) {
                        (void)!write(report[1], &pid, sizeof(pid));
                        _exit(pid < 0);
                }
                /* its sources are all at 10 or above (high_fd) */
                if (dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0 || dup2(gate[0], 3) < 0 ||
                    dup2(disk_rw, 4) < 0 || dup2(disk_ro, 5) < 0)
                        _exit(127);
                syscall(SYS_close_range, 6, ~0U, 0);
                execv(mv->host.config.vmlink_path, argv);
                _exit(127);
        }
        close(report[1]);
        report[1] = -1;
        pid_t pid = -1;
        ssize_t got = read(report[0], &pid, sizeof(pid));
        while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (got != sizeof(pid) || pid <= 0) {
                space_error_set(err, SPACE_E_INTERNAL, "cannot start the supervisor of %s", sb->id);
                goto fail;
        }
        /* In the cgroup before the go: the VMM it starts is in it from its first instruction. */
        if ((r = mv->host.cgroups->ops->attach(mv->host.cgroups, sb->id, pid)) < 0) {
                kill(pid, SIGKILL);
                space_error_errno(err, -r, "join cgroup");
                pid = -1;
                goto fail;
        }
        if (write(gate[1], "g", 1) != 1) {
                kill(pid, SIGKILL);
                space_error_errno(err, errno, "start the VM of %s", sb->id);
                pid = -1;
                goto fail;
        }
        close(gate[0]);
        close(gate[1]);
        close(report[0]);
        close(logfd);
        close(nullfd);
        close(disk_rw);
        close(disk_ro);
        return pid;
fail:
        for (int i = 0; i < 2; i++) {
                if (gate[i] >= 0)
                        close(gate[i]);
                if (report[i] >= 0)
                        close(report[i]);
        }
        if (logfd >= 0)
                close(logfd);
        if (nullfd >= 0)
                close(nullfd);
        if (disk_rw >= 0)
                close(disk_rw);
        if (disk_ro >= 0)
                close(disk_ro);
        return -1;
}
