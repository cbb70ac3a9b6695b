/* setuid_probe: what a setuid-root binary gains inside a sandbox (test_sudo.py). Static, so it
 * runs in any template. Installed twice in a sandbox: a plain copy that drops to a user and
 * execs, and a setuid-root copy that tries to become root.
 *   setuid_probe as UID PROG ARG…   setgroups(0) + setresgid/setresuid(UID), then exec PROG
 *   setuid_probe ids                prints "uid R euid E"
 *   setuid_probe root CMD           setresuid(0) (a mini sudo), then /bin/sh -c CMD, or
 *                                   "setresuid errno N" and exit 1 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        if (argc >= 4 && strcmp(argv[1], "as") == 0) {
                uid_t id = (uid_t)strtoul(argv[2], NULL, 10);
                if (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0) {
                        printf("drop errno %d\n", errno);
                        return 1;
                }
                execv(argv[3], argv + 3);
                printf("exec errno %d\n", errno);
                return 1;
        }
        if (argc == 2 && strcmp(argv[1], "ids") == 0) {
                printf("uid %u euid %u\n", (unsigned)getuid(), (unsigned)geteuid());
                return 0;
        }
        if (argc == 3 && strcmp(argv[1], "root") == 0) {
                if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0) {
                        printf("setresuid errno %d\n", errno);
                        return 1;
                }
                execl("/bin/sh", "sh", "-c", argv[2], (char *)NULL);
                printf("exec errno %d\n", errno);
                return 1;
        }
        fprintf(stderr, "usage: setuid_probe as UID PROG ARG… | ids | root CMD\n");
        return 2;
}
