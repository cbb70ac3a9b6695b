/* The microvm runtime driver: a sandbox is a QEMU microvm with its own kernel (Debian's,
 * unpacked once into <state>/microvm), its disk a reflink copy of its template's ext4
 * image (mv_disk.c), its agent space-agent behind the guest's init, reached over one
 * virtio-serial port that space-vmlink multiplexes (mv_launch.c, src/vm_link/). The
 * supervisor and QEMU run in the sandbox's cgroup; the agent socket the supervisor
 * serves in the run directory is the one every host-process driver has, so exec, files,
 * stats and the rootfs ops are sandbox_host's. KVM where /dev/kvm really works, else TCG. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/microvm/mv_driver.h"
#include "spaced/host_command.h"
#include "storage/btrfs_pool.h"

#define BOOT_WAIT_MS 180000 /* TCG on a loaded 2-core host: seconds; the supervisor gives up first */

static void mv_free(struct runtime_driver *d)
{
        struct mv_driver *mv = d ? d->state : NULL;
        if (!mv)
                return;
        free(mv->host.cgroups);
        free(mv);
        d->state = NULL;
}

/* KVM that really runs guests: the device answers, makes a VM, and is not PVM (whose
 * nested KVM hangs ordinary guest kernels: HOST-FACTS). */
static bool kvm_works(void)
{
        int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        bool ok = ioctl(fd, KVM_GET_API_VERSION, 0) == KVM_API_VERSION;
        int vm = ok ? ioctl(fd, KVM_CREATE_VM, 0) : -1;
        if (vm >= 0)
                close(vm);
        close(fd);
        return vm >= 0 && access("/sys/module/kvm_pvm", F_OK) < 0;
}

static unsigned tsc_khz(void)
{
        char line[256];
        unsigned khz = 0;
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "re");
        if (f) {
                if (fscanf(f, "%u", &khz) != 1)
                        khz = 0;
                fclose(f);
                if (khz)
                        return khz;
        }
        if (!(f = fopen("/proc/cpuinfo", "re")))
                return 0;
        while (!khz && fgets(line, sizeof(line), f)) {
                double mhz;
                if (sscanf(line, "cpu MHz : %lf", &mhz) == 1 || sscanf(line, "cpu MHz\t: %lf", &mhz) == 1)
                        khz = (unsigned)(mhz * 1000);
        }
        fclose(f);
        return khz;
}

/* "QEMU emulator version 7.2.22 (Debian ...)" → "7.2.22"; -ENOENT when it is missing. */
static int detect_qemu(struct mv_driver *mv)
{
        static const char *const paths[] = { "/usr/bin/qemu-system-x86_64", "/usr/local/bin/qemu-system-x86_64" };
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !mv->qemu[0]; i++)
                if (access(paths[i], X_OK) == 0)
                        snprintf(mv->qemu, sizeof(mv->qemu), "%s", paths[i]);
        if (!mv->qemu[0])
                return -ENOENT;
        char out[512];
        char *argv[] = { mv->qemu, "--version", NULL };
        int r = host_command_run(argv, NULL, out, sizeof(out), 30);
        const char *v = strstr(out, "version ");
        if (r != 0 || !v)
                return -ENOEXEC;
        v += strlen("version ");
        size_t n = strcspn(v, " \n(");
        snprintf(mv->qemu_version, sizeof(mv->qemu_version), "%.*s", (int)(n < sizeof(mv->qemu_version) ? n : 0), v);
        /* Debian builds QEMU with seccomp; another build may not have -sandbox */
        char *probe[] = { mv->qemu,      "-sandbox",        "on",       "-M", "none", "-display", "none",
                          "-nodefaults", "-no-user-config", "-version", NULL };
        mv->seccomp = host_command_run(probe, NULL, out, sizeof(out), 30) == 0;
        return 0;
}

/* The guest's kernel and initramfs, made now unless they are there and current. */
static int make_guest(struct mv_driver *mv, const struct runtime_config *cfg, struct space_error *err)
{
        char out[1024], path[PATH_MAX + 32];
        if (!cfg->microvm_guest_script[0] || access(cfg->microvm_guest_script, X_OK) < 0)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "microvm-guest-image not found (install space completely)");
        if (!cfg->vmlink_path[0] || access(cfg->vmlink_path, X_OK) < 0)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "space-vmlink not found; pass --vmlink PATH");
        char *argv[] = { (char *)cfg->microvm_guest_script, mv->guest_dir, (char *)cfg->vmlink_path, (char *)cfg->agent_path,
                         NULL };
        int r = host_command_run(argv, NULL, out, sizeof(out), 300);
        if (r != 0) {
                size_t n = strlen(out);
                while (n && out[n - 1] == '\n')
                        out[--n] = '\0';
                return space_error_set(err, SPACE_E_UNSUPPORTED, "the guest kernel and initramfs cannot be made (%d): %s", r,
                                       out[0] ? out : "no output");
        }
        snprintf(path, sizeof(path), "%s/kernel.version", mv->guest_dir);
        FILE *f = fopen(path, "re");
        if (!f || !fgets(mv->kernel_version, sizeof(mv->kernel_version), f))
                mv->kernel_version[0] = '\0';
        if (f)
                fclose(f);
        mv->kernel_version[strcspn(mv->kernel_version, "\n")] = '\0';
        return 0;
}

/* Images a killed spaced left half made (only one spaced uses a state directory). */
static void sweep_partial_images(const char *dir)
{
        DIR *dd = opendir(dir);
        if (!dd)
                return;
        struct dirent *de;
        while ((de = readdir(dd)))
                if (strstr(de->d_name, ".partial."))
                        unlinkat(dirfd(dd), de->d_name, 0);
        closedir(dd);
}

static int mv_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        char reason[1024] = "";
        struct mv_driver *mv = calloc(1, sizeof(*mv));
        if (!mv)
                return space_error_errno(err, ENOMEM, "microvm driver");
        d->state = mv;
        d->caps = (struct runtime_capabilities){ .pause = true, .fd_passing = false, .memory_snapshot = true };
        snprintf(d->caps.memory_snapshot_detail, sizeof(d->caps.memory_snapshot_detail),
                 "QEMU saves the VM's memory and devices (QMP migrate to a file) with its disk snapshotted while it is stopped");
        mv->host.config = *cfg;
        mv->host.socket_leaf = "agent.sock";
        snprintf(mv->guest_dir, sizeof(mv->guest_dir), "%s/microvm", cfg->state_dir);
        int r = detect_qemu(mv);
        if (r < 0) {
                space_error_set(err, SPACE_E_UNSUPPORTED,
                                r == -ENOENT ? "qemu-system-x86_64 is not installed (Debian package qemu-system-x86; "
                                               "scripts/install-deps installs it)"
                                             : "qemu-system-x86_64 does not run (%s --version failed)",
                                mv->qemu);
                goto fail;
        }
        bool want_kvm = strcmp(cfg->microvm_accel, "kvm") == 0;
        mv->kvm = strcmp(cfg->microvm_accel, "tcg") != 0 && kvm_works();
        if (want_kvm && !mv->kvm) {
                space_error_set(err, SPACE_E_UNSUPPORTED, "--microvm-accel kvm: /dev/kvm does not work on this host");
                goto fail;
        }
        mv->tsc_khz = tsc_khz();
        if (getpwnam("nobody"))
                snprintf(mv->vmm_user, sizeof(mv->vmm_user), "nobody");
        if ((mkdir(mv->guest_dir, 0700) < 0 && errno != EEXIST) || make_guest(mv, cfg, err) < 0)
                goto fail;
        if ((r = btrfs_pool_disk_images_dir(cfg->pool, mv->images_dir, sizeof(mv->images_dir))) < 0 ||
            (mkdir(mv->images_dir, 0700) < 0 && errno != EEXIST)) {
                space_error_errno(err, r < 0 ? -r : errno, "disk images of the pool");
                goto fail;
        }
        sweep_partial_images(mv->images_dir);
        snprintf(d->caps.version, sizeof(d->caps.version), "qemu %s linux %s %s", mv->qemu_version, mv->kernel_version,
                 mv->kvm ? "kvm" : "tcg");
        if ((r = cgroup_manager_detect(cfg->instance, &mv->host.cgroups, reason, sizeof(reason))) < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "%s", reason);
                goto fail;
        }
        snprintf(d->caps.cgroup, sizeof(d->caps.cgroup), "%s", mv->host.cgroups->ops->name);
        if (mkdir(cfg->run_dir, 0700) < 0 && errno != EEXIST) {
                space_error_errno(err, errno, "mkdir %s", cfg->run_dir);
                goto fail;
        }
        return 0;
fail:
        mv_free(d);
        return -1;
}

static void remove_run_dir(const struct mv_driver *mv, const char *id)
{
        static const char *const leaves[] = { "agent.sock", MV_QMP_SOCKET,     "console.log", "qemu.log",
                                              "failure",    "failure.partial", NULL };
        char path[PATH_MAX];
        for (size_t i = 0; leaves[i]; i++) {
                sandbox_host_run_path(&mv->host, id, leaves[i], path, sizeof(path));
                unlink(path);
        }
}

static int mv_stop(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        const struct cgroup_manager *cg = mv->host.cgroups;
        char path[PATH_MAX];
        struct init_handle h;
        init_handle_read(sb->runtime_state, &h);
        if (init_handle_alive(&h))
                kill(h.pid, SIGKILL);
        /* the VMM and anything it left: everything of the sandbox is in its cgroup */
        int r = cg->ops->kill_all(cg, sb->id);
        if (r < 0)
                return space_error_errno(err, -r, "kill processes of %s", sb->id);
        if ((r = cg->ops->destroy(cg, sb->id)) < 0)
                return space_error_errno(err, -r, "remove cgroup of %s", sb->id);
        remove_run_dir(mv, sb->id);
        sandbox_host_run_path(&mv->host, sb->id, NULL, path, sizeof(path));
        if (rmdir(path) < 0 && errno != ENOENT)
                return space_error_errno(err, errno, "remove %s", path);
        return 0;
}

/* Reads <run>/<id>/failure, the supervisor's reason; 1 if there is one. */
static int read_failure(const struct mv_driver *mv, const char *id, char *buf, size_t size)
{
        char path[PATH_MAX];
        sandbox_host_run_path(&mv->host, id, "failure", path, sizeof(path));
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 1;
}

static int mv_exit_reason(const struct runtime_driver *d, const struct sandbox *sb, char *buf, size_t size)
{
        return read_failure(mv_driver_of(d), sb->id, buf, size);
}

void mv_qmp_socket_path(const struct mv_driver *mv, const char *id, char *buf, size_t size)
{
        sandbox_host_run_path(&mv->host, id, MV_QMP_SOCKET, buf, size);
}

/* Waits for the guest's agent to answer through the supervisor while it lives. */
int mv_wait_agent(const struct mv_driver *mv, const struct sandbox *sb, const struct init_handle *h, struct space_error *err)
{
        char sock[PATH_MAX], reason[256];
        sandbox_host_socket_path(&mv->host, sb->id, sock, sizeof(sock));
        for (int waited_ms = 0; waited_ms < BOOT_WAIT_MS; waited_ms += 50) {
                if (!init_handle_alive(h))
                        break;
                if (access(sock, F_OK) == 0 && agent_client_hello(sock, 5000, NULL) == 0)
                        return 0;
                usleep(50000);
        }
        if (read_failure(mv, sb->id, reason, sizeof(reason)) == 1)
                return space_error_set(err, SPACE_E_INTERNAL, "the microvm of %s did not start: %s", sb->id, reason);
        return space_error_set(err, SPACE_E_INTERNAL, "the microvm of %s did not start: its agent never answered (%s)", sb->id,
                               init_handle_alive(h) ? "timed out" : "its supervisor ended");
}

int mv_launch_vm(const struct runtime_driver *d, struct sandbox *sb, const struct mv_machine *incoming, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        char dir[PATH_MAX], disk[PATH_MAX];
        struct init_handle h = { 0 };
        struct space_error ignored;
        if (mv_stop(d, sb, err) < 0) /* whatever an interrupted earlier attempt left */
                return -1;
        int r = mv_disk_path(mv, sb, disk, sizeof(disk));
        if (r < 0 || access(disk, R_OK | W_OK) < 0)
                return space_error_errno(err, r < 0 ? -r : errno, "the disk of %s", sb->id);
        sandbox_host_run_path(&mv->host, sb->id, NULL, dir, sizeof(dir));
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return space_error_errno(err, errno, "mkdir %s", dir);
        /* QEMU opens the disk before it drops to its user; the run dir stays root's */
        /* The cgroup holds QEMU, not only the guest: its limit is the guest's RAM plus the
         * VMM's own memory (devices, TCG's translation cache, the buffers of a memory
         * snapshot's migration), else saving a guest that touched its RAM is an OOM kill. */
        struct sandbox_resources limits = sb->resources;
        if (limits.memory_mb > 0)
                limits.memory_mb += MV_VMM_OVERHEAD_MB;
        if ((r = mv->host.cgroups->ops->create(mv->host.cgroups, sb->id, &limits)) < 0) {
                space_error_errno(err, -r, "create cgroup");
                goto fail;
        }
        pid_t pid = mv_launch(mv, sb, incoming, err);
        if (pid < 0)
                goto fail;
        h.pid = pid;
        h.pid_start = init_handle_start_time(pid);
        /* Recorded first, so that a later stop finds the sandbox. */
        if ((r = init_handle_write(&h, sb->runtime_state, sizeof(sb->runtime_state))) < 0) {
                kill(pid, SIGKILL);
                space_error_errno(err, -r, "record the handle of %s", sb->id);
                goto fail;
        }
        if (!incoming && mv_wait_agent(mv, sb, &h, err) < 0)
                goto fail;
        return 0;
fail:
        mv_stop(d, sb, &ignored);
        return -1;
}

static int mv_start(const struct runtime_driver *d, struct sandbox *sb, struct space_error *err)
{
        return mv_launch_vm(d, sb, NULL, err);
}

/* A hibernated sandbox has no VM, and is alive all the same (its memory is on disk). */
static int mv_probe(const struct runtime_driver *d, const struct sandbox *sb, bool deep)
{
        if (strcmp(sb->runtime_state, RUNTIME_STATE_HIBERNATED) == 0)
                return 1;
        return sandbox_host_probe(d, sb, deep);
}

/* The guest's kernel holds writes in its page cache: it syncs them to the disk first (a
 * best effort: a guest that does not is only less consistent), then the VM is frozen for
 * the btrfs snapshot of the subvolume that holds the disk, as for host-process sandboxes. */
static int mv_snapshot_rootfs(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                              struct space_error *err)
{
        char *argv[] = { "sync", NULL };
        char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        struct exec_request req = { .argv = argv, .envp = envp, .timeout_ms = 30000, .output_cap = 4096 };
        struct exec_result res = { 0 };
        struct space_error ignored;
        if (sb->state == SANDBOX_RUNNING && sandbox_host_exec(d, sb, &req, &res, &ignored) == 0)
                exec_result_release(&res);
        return sandbox_host_rootfs_snapshot(d, sb, dst, ret_pause_us, err);
}

/* The disk is a file the guest's kernel owns: the host cannot look into it safely. */
static int mv_path_exists(const struct runtime_driver *d, const struct sandbox *sb, const char *path)
{
        return -ENOTSUP;
}

const struct runtime_driver_ops runtime_driver_microvm = {
        .name = "microvm",
        .version = "1",
        .init = mv_init,
        .free = mv_free,
        .create_rootfs = mv_disk_create,
        .destroy_rootfs = sandbox_host_rootfs_destroy,
        .snapshot_rootfs = mv_snapshot_rootfs,
        .restore_rootfs = sandbox_host_rootfs_restore,
        .start = mv_start,
        .stop = mv_stop,
        .pause = mv_pause,
        .resume = mv_resume,
        .exec = sandbox_host_exec,
        .probe = mv_probe,
        .agent_connect = sandbox_host_agent_connect,
        .stats = sandbox_host_stats,
        .path_exists = mv_path_exists,
        .disk_limit = sandbox_host_rootfs_disk_limit,
        .changed_since = sandbox_host_rootfs_changed_since,
        .kill = sandbox_host_kill,
        .host_pid = sandbox_host_host_pid,
        .network_attach = NULL,
        .checkpoint = mv_checkpoint,
        .start_from_image = mv_start_from_image,
        .exit_reason = mv_exit_reason,
        .list_resources = sandbox_host_rootfs_list_resources,
};
