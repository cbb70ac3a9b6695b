/* cli_args: parsing of option values (numbers, K=V pairs) and of verbs that take only
 * positional arguments. Value parsers return -EINVAL for bad input. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* A whole number in [min, max]. */
int cli_args_integer(const char *s, long long min, long long max, long long *ret_value);

/* A duration: N, Ns, Nm, Nh or Nd (N a whole number > 0) -> seconds, at most max_s. */
int cli_args_duration(const char *s, long long max_s, long long *ret_seconds);

/* A finite decimal number > 0. */
int cli_args_positive(const char *s, double *ret_value);

/* Sets object[K] = V for "K=V" (K non-empty; V may be empty). */
int cli_args_pair(json_t *object, const char *arg);

/* Parses a verb whose only flags are --help and, when no_wait is not NULL, --no-wait, and
 * which takes exactly n_positional arguments (left at argv[optind]...). Returns CLI_CONTINUE
 * or the exit status to return. */
int cli_args_simple(int argc, char **argv, const char *usage, int n_positional, bool *no_wait);

/* The same for a verb that takes min to max positional arguments. */
int cli_args_positional(int argc, char **argv, const char *usage, int min, int max, bool *no_wait);
