/* cli_text: text from the server made safe for a terminal, and its display width. */
#pragma once

#include <stddef.h>

/* Copies s with control characters (C0 including newline, DEL, C1) replaced by '?', so an
 * answer cannot move the cursor or change the terminal's state. */
int cli_text_sanitize(const char *s, char **ret_text);

/* Width in columns, counting one per UTF-8 code point. */
size_t cli_text_width(const char *s);
