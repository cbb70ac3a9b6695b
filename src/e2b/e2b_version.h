/* The envd version the E2B front door reports. SDKs gate features on it: 0.4.0 default
 * user, 0.5.2 closeStdin, 0.5.7 raw (octet-stream) uploads, 0.6.2 file metadata. */
#pragma once

#define E2B_ENVD_VERSION "0.5.7"
