/* bench_report: space-bench's results as a table (text) and as one JSON object. */
#pragma once

#include <stdio.h>
#include <sys/utsname.h>

#include "bench_measure.h"

void bench_report_text(const struct bench_config *cfg, struct bench_results *res, const struct utsname *u);
/* Returns 0, -ENOMEM or -EIO. */
int bench_report_json(const struct bench_config *cfg, struct bench_results *res, const struct utsname *u, FILE *f);
