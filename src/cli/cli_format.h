/* cli_format: --format TEMPLATE, as docker users write it: one line per item, with
 * {{.path}} replaced by the item's member at that dotted path (as tables show values: "-"
 * for null or missing), {{json .path}} by its JSON and {{json .}} by the whole item; \t and
 * \n are a tab and a newline. "json" alone stands for {{json .}}. Text from spaced is made
 * safe for the terminal; JSON is printed as it is. */
#pragma once

#include <jansson.h>

/* -EINVAL: the template has an unclosed or unknown {{...}} (checked before printing). */
int cli_format_check(const char *template);
int cli_format_print(const char *template, const json_t *list);
