/* cli_network: the rule lists of a sandbox's network, as the create and `space network set`
 * build them. */
#pragma once

#include <jansson.h>

/* Appends rule to network[list] ("allow" or "deny"), making the list. 0, or -1 (not UTF-8,
 * out of memory). */
int cli_network_rule_add(json_t *network, const char *list, const char *rule);
