/* cli_usage: usage text and usage errors (exit status 2).
 *
 * A usage text starts with one "usage: space ..." line; errors print the message and that
 * line only, --help prints the whole text. */
#pragma once

/* Prints "space: <message>" and the usage line on stderr. Returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports the option getopt_long() just rejected (it returned '?' or ':'; parse with opterr = 0
 * and an optstring starting with ':'). Returns CLI_EXIT_USAGE. */
int cli_usage_option_error(const char *usage, int opt, char **argv);

/* Prints the whole usage text on stdout. Returns CLI_EXIT_OK. */
int cli_usage_print(const char *usage);
