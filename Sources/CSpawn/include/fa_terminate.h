#ifndef FA_TERMINATE_H
#define FA_TERMINATE_H

/* A remote approval's helper (fingerauth-login): SIGTERM, from the module that asks it to
 * withdraw its request, or as its parent-death signal when fingerauth-pam is gone, only
 * sets a flag; the helper withdraws the request at the authenticator, then exits.
 * Returns 0, or -1 with errno. */
int fa_catch_terminate(void);
/* Whether SIGTERM came since fa_catch_terminate. */
int fa_terminate_requested(void);

#endif
