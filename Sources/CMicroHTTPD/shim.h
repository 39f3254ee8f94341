/* libmicrohttpd for Swift. MHD_start_daemon and MHD_get_connection_info are variadic. */
#ifndef FINGERAUTH_CMICROHTTPD_SHIM_H
#define FINGERAUTH_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>
#include <microhttpd.h>
#endif
