/* fsinfo_probe: a static program test_security_procfs.py runs inside a sandbox and on the
 * host. It asks the file system of PATH who it is, with the btrfs and generic ioctls that
 * name the pool (its fsid, devices, subvolume UUIDs), and prints one line per request:
 * "<name> errno <N>", or "<name> ok" followed by what came back, decoded and as hex. With
 * "high" every request is made with bits above the 32 the kernel keeps; with "create" it
 * also tries to make a subvolume in PATH (never on the host).
 * Raw numbers (x86-64 uapi) so that it builds against any headers (musl-gcc -static). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char buf[65536];
static unsigned long high;
static int fd;

static void hex(const char *label, const unsigned char *p, size_t n)
{
        printf(" %s=", label);
        for (size_t i = 0; i < n; i++)
                printf("%02x", p[i]);
}

static int ask(const char *name, unsigned long request)
{
        long r = syscall(SYS_ioctl, fd, high | request, buf);
        if (r < 0) {
                printf("%s errno %d\n", name, errno);
                return 0;
        }
        printf("%s ok", name);
        return 1;
}

int main(int argc, char **argv)
{
        if (argc < 2)
                return 2;
        int create = 0;
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "high") == 0)
                        high = 0x5a5a000100000000UL;
                create |= strcmp(argv[i], "create") == 0;
        }
        fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 3;
        memset(buf, 0, sizeof(buf));
        if (ask("fs_info", 0x8400941f)) /* BTRFS_IOC_FS_INFO: fsid at 16 */
                hex("fsid", buf + 16, 16), hex("raw", buf, 64), putchar('\n');
        memset(buf, 0, sizeof(buf));
        buf[0] = 1; /* devid 1 */
        if (ask("dev_info", 0xd000941e)) /* BTRFS_IOC_DEV_INFO: uuid at 8, path at 3072 */
                hex("uuid", buf + 8, 16), printf(" path=%.1024s", (char *)buf + 3072),
                        hex("pathhex", buf + 3072, strnlen((char *)buf + 3072, 1024)), putchar('\n');
        memset(buf, 0, sizeof(buf));
        if (ask("get_subvol_info", 0x81f8943c)) /* BTRFS_IOC_GET_SUBVOL_INFO: uuids at 8+… */
                hex("raw", buf, 504), putchar('\n');
        memset(buf, 0, sizeof(buf));
        if (ask("getfsuuid", 0x80111500)) /* FS_IOC_GETFSUUID: len, then the uuid */
                hex("uuid", buf + 1, buf[0] <= 16 ? buf[0] : 16), putchar('\n');
        memset(buf, 0, sizeof(buf));
        if (ask("getfssysfspath", 0x80811501)) /* FS_IOC_GETFSSYSFSPATH: len, then the name */
                printf(" name=%.128s\n", (char *)buf + 1);
        memset(buf, 0, sizeof(buf));
        if (ask("getfslabel", 0x81009431)) /* FS_IOC_GETFSLABEL */
                printf(" label=%.256s\n", (char *)buf);
        memset(buf, 0, sizeof(buf));
        buf[0] = 1;
        if (ask("get_dev_stats", 0xc4089434)) /* BTRFS_IOC_GET_DEV_STATS */
                hex("raw", buf, 64), putchar('\n');
        memset(buf, 0, sizeof(buf));
        buf[0] = 5; /* the top level */
        if (ask("ino_lookup", 0xd0009412)) /* BTRFS_IOC_INO_LOOKUP */
                printf(" name=%.4080s\n", (char *)buf + 16);
        memset(buf, 0, sizeof(buf));
        if (ask("space_info", 0xc0109414)) /* BTRFS_IOC_SPACE_INFO, no slots: the count */
                hex("raw", buf, 16), putchar('\n');
        memset(buf, 0, sizeof(buf));
        if (ask("get_features", 0x80189439)) /* BTRFS_IOC_GET_FEATURES */
                hex("raw", buf, 24), putchar('\n');
        memset(buf, 0, sizeof(buf));
        strcpy((char *)buf + 8, "fsinfo-probe-subvol"); /* BTRFS_IOC_SUBVOL_CREATE at PATH */
        if (create && ask("subvol_create", 0x5000940e))
                putchar('\n');
        return 0;
}
