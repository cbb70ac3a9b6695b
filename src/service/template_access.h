/* template_access: which templates a caller sees and may change. Built-in templates (and
 * those from before projects) are shared: every project sees them, only the platform
 * (admin) changes them. A template built or imported by a project is that project's.
 * Template names are one namespace on a server. */
#pragma once

#include <stdbool.h>

#include "auth/principal.h"
#include "spaced/space_error.h"

struct spaced_context;
struct template_record;

/* Whether p sees t (its project's, or shared). */
bool template_access_sees(const struct principal *p, const struct template_record *t);
/* ref resolved: not_found when another project's; forbidden when write and t is shared
 * (or, for p without the platform permission, unless it is p's). An unknown ref passes. */
int template_access_check(struct spaced_context *ctx, const struct principal *p, const char *ref, bool write,
                          struct space_error *err);
