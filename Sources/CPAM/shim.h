/* Linux-PAM for Swift. pam_syslog and pam_prompt are variadic, so each use gets a typed
 * wrapper that passes the text through "%s" (never as a format string). */
#ifndef FINGERAUTH_CPAM_SHIM_H
#define FINGERAUTH_CPAM_SHIM_H
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <syslog.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* pam_syslog(pamh, priority, "%s", message) */
static inline void fa_pam_syslog(const pam_handle_t *pamh, int priority, const char *message) {
    pam_syslog(pamh, priority, "%s", message);
}

/* pam_prompt for a message that expects no answer (PAM_TEXT_INFO / PAM_ERROR_MSG). */
static inline int fa_pam_message(pam_handle_t *pamh, int style, const char *message) {
    return pam_prompt(pamh, style, NULL, "%s", message);
}

/* pam_get_item with a const char * result (PAM_SERVICE, PAM_RHOST, ...). */
static inline int fa_pam_get_string_item(const pam_handle_t *pamh, int item, const char **out) {
    const void *value = NULL;
    int rc = pam_get_item(pamh, item, &value);
    *out = (const char *)value;
    return rc;
}
/* pam_prompt with echo off; *answer is malloc'd by the application's conversation (or NULL).
 * The caller wipes and frees it with fa_pam_wipe_free. */
static inline int fa_pam_prompt_secret(pam_handle_t *pamh, const char *text, char **answer) {
    *answer = NULL;
    return pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, answer, "%s", text);
}

/* Stores a secret as PAM_AUTHTOK (libpam copies it). */
static inline int fa_pam_set_authtok(pam_handle_t *pamh, const char *secret) {
    return pam_set_item(pamh, PAM_AUTHTOK, secret);
}

extern void explicit_bzero(void *s, size_t n);
/* Overwrites a NUL-terminated secret (explicit_bzero: not optimised away) and frees it. */
static inline void fa_pam_wipe_free(char *secret) {
    if (secret == NULL) return;
    explicit_bzero(secret, strlen(secret));
    free(secret);
}
#endif
