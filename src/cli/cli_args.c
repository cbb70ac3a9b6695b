/* cli_args: option value parsing. */
#include "cli/cli_args.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_usage.h"

int cli_args_integer(const char *s, long long min, long long max, long long *ret_value)
{
        char *end;

        if (!*s || !(*s == '-' || (*s >= '0' && *s <= '9')))
                return -EINVAL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || *end != '\0' || v < min || v > max)
                return -EINVAL;
        *ret_value = v;
        return 0;
}

int cli_args_duration(const char *s, long long max_s, long long *ret_seconds)
{
        static const struct {
                char unit;
                long long seconds;
        } units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
        char digits[24];
        size_t n = strlen(s);
        long long mult = 1, v;

        if (n == 0 || n >= sizeof(digits))
                return -EINVAL;
        memcpy(digits, s, n + 1);
        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (digits[n - 1] == units[i].unit) {
                        mult = units[i].seconds;
                        digits[n - 1] = '\0';
                }
        if (digits[0] == '-' || cli_args_integer(digits, 1, max_s / mult, &v) < 0)
                return -EINVAL;
        *ret_seconds = v * mult;
        return 0;
}

int cli_args_positive(const char *s, double *ret_value)
{
        char *end;

        if (!*s || !((*s >= '0' && *s <= '9') || *s == '.'))
                return -EINVAL;
        errno = 0;
        double v = strtod(s, &end);
        if (errno != 0 || *end != '\0' || !isfinite(v) || v <= 0)
                return -EINVAL;
        *ret_value = v;
        return 0;
}

int cli_args_pair(json_t *object, const char *arg)
{
        const char *eq = strchr(arg, '=');

        if (!eq || eq == arg)
                return -EINVAL;
        json_t *value = json_string(eq + 1);
        if (!value)
                return -EINVAL; /* not UTF-8 */
        if (json_object_setn_new(object, arg, (size_t)(eq - arg), value) < 0)
                return -EINVAL;
        return 0;
}

int cli_args_simple(int argc, char **argv, const char *usage, int n_positional, bool *no_wait)
{
        return cli_args_positional(argc, argv, usage, n_positional, n_positional, no_wait);
}

int cli_args_positional(int argc, char **argv, const char *usage, int min, int max, bool *no_wait)
{
        enum { OPT_NO_WAIT = 256 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                {},
        };
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(usage);
                case OPT_NO_WAIT:
                        if (no_wait) {
                                *no_wait = true;
                                break;
                        }
                        return cli_usage_error(usage, "unknown option --no-wait");
                default:
                        return cli_usage_option_error(usage, c, argv);
                }
        }

        int have = argc - optind;
        if (have < min)
                return cli_usage_error(usage, "missing argument");
        if (have > max)
                return cli_usage_error(usage, "unexpected argument '%s'", argv[optind + max]);
        return CLI_CONTINUE;
}
