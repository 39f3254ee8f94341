/* libpq for Swift. Nothing here needs a shim yet: libpq has no variadic calls or
 * function-like macros on the paths fingerauthd uses; the header is included through
 * this file so that the include path comes from pkg-config (libpq). */
#ifndef FINGERAUTH_CPOSTGRES_SHIM_H
#define FINGERAUTH_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
