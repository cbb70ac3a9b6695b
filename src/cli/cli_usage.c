/* cli_usage: usage text and usage errors. */
#include "cli/cli_usage.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void cli_usage_line(const char *usage)
{
        size_t n = strcspn(usage, "\n");
        fprintf(stderr, "%.*s\n", (int)n, usage);
}

int cli_usage_error(const char *usage, const char *fmt, ...)
{
        va_list ap;

        fputs("space: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        cli_usage_line(usage);
        return CLI_EXIT_USAGE;
}

int cli_usage_option_error(const char *usage, int opt, char **argv)
{
        const char *arg = optind > 0 ? argv[optind - 1] : "";

        if (strncmp(arg, "--", 2) == 0) {
                int n = (int)strcspn(arg, "=");
                if (opt == ':')
                        return cli_usage_error(usage, "option %.*s needs a value", n, arg);
                if (optopt != 0)
                        return cli_usage_error(usage, "option %.*s does not take a value", n, arg);
                return cli_usage_error(usage, "unknown option %.*s", n, arg);
        }
        if (opt == ':')
                return cli_usage_error(usage, "option -%c needs a value", optopt);
        return cli_usage_error(usage, "unknown option -%c", optopt);
}

int cli_usage_print(const char *usage)
{
        fputs(usage, stdout);
        return CLI_EXIT_OK;
}
