/* json_number: printing JSON numbers as they came. jansson keeps a real as a double and
 * prints it with 17 significant digits by default, so 0.1 would come out as
 * 0.10000000000000001; spaced prints reals with 12 (JSON_REAL_PRECISION(12)). */
#pragma once

#include <jansson.h>

#define JSON_NUMBER_SERVER_PRECISION 12

/* The precision to dump v with: the fewest significant digits that print every real in v
 * back to the same double, and at least spaced's 12 (so what spaced wrote prints as it
 * wrote it). Use as JSON_REAL_PRECISION(json_number_precision(v)). */
int json_number_precision(const json_t *v);
