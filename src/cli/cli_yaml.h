/* cli_yaml: a JSON value as a YAML document (see cli_yaml.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* 0, or -ENOMEM. */
int cli_yaml_print(FILE *out, const json_t *v);
