/* ns_port: a namespace sandbox's TCP ports as ingress reaches them (runtime_driver.h's
 * port_connect). Private to src/runtime/namespaces/. */
#pragma once

#include <stdint.h>

#include "runtime/runtime_driver.h"

int ns_port_connect(const struct runtime_driver *d, const struct sandbox *sb, uint16_t port, int timeout_ms, int io_timeout_ms);
