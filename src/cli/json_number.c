#include "cli/json_number.h"

#include <stdio.h>
#include <stdlib.h>

/* The fewest significant digits (1-17) that print x back to x. */
static int json_number_digits(double x)
{
        char buf[32];

        for (int p = 1; p < 17; p++) {
                snprintf(buf, sizeof(buf), "%.*g", p, x);
                if (strtod(buf, NULL) == x)
                        return p;
        }
        return 17;
}

int json_number_precision(const json_t *v)
{
        int p = JSON_NUMBER_SERVER_PRECISION;
        const char *key;
        json_t *item;
        size_t i;

        switch (json_typeof(v)) {
        case JSON_REAL: {
                int d = json_number_digits(json_real_value(v));
                return d > p ? d : p;
        }
        case JSON_ARRAY:
                json_array_foreach(v, i, item)
                {
                        int d = json_number_precision(item);
                        p = d > p ? d : p;
                }
                return p;
        case JSON_OBJECT:
                json_object_foreach((json_t *)v, key, item)
                {
                        int d = json_number_precision(item);
                        p = d > p ? d : p;
                }
                return p;
        default:
                return p;
        }
}
