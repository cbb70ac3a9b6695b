/* space-vmlink guest PORT | space-vmlink host RUN_DIR -- VMM ARGS... (vm_link.h) */
#include <stdio.h>
#include <string.h>

#include "vm_link/vm_link.h"

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "guest") == 0)
                return vm_link_guest_main(argv[2]);
        if (argc >= 5 && strcmp(argv[1], "host") == 0 && strcmp(argv[3], "--") == 0)
                return vm_link_host_main(argv[2], argv + 4);
        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
                printf("space-vmlink %s\n", SPACE_VERSION);
                return 0;
        }
        fprintf(stderr, "usage: space-vmlink guest PORT | space-vmlink host RUN_DIR -- VMM ARGS...\n");
        return 2;
}
