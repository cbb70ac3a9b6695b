/* The envd version the E2B front door reports. SDKs gate features on it: 0.4.0 default
 * user, 0.5.2 closeStdin, 0.5.7 raw (octet-stream) uploads, 0.6.2 file metadata, 0.6.3
 * watch events with their entry (includeEntry), 0.6.4 watches on network mounts
 * (allowNetworkMounts: envd refuses them without it; space refuses none, so the option
 * changes nothing). */
#pragma once

#define E2B_ENVD_VERSION "0.6.4"
