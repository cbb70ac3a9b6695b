#include "spaced/fault_point.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void fault_point(const char *name, const char *detail)
{
        const char *want = getenv("SPACED_FAULT_KILL");
        if (!want || !*want)
                return;
        size_t n = strlen(name);
        if (strncmp(want, name, n) != 0)
                return;
        if (want[n] == '\0' || (want[n] == ':' && detail && strcmp(want + n + 1, detail) == 0))
                raise(SIGKILL);
}
