/* libfprint-2 (with GLib/GObject) for Swift. */
#ifndef FINGERAUTH_CFPRINT_SHIM_H
#define FINGERAUTH_CFPRINT_SHIM_H
#include <fprint.h>
#endif
