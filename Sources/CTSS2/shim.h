/* tpm2-tss for Swift (the login helper and the command line only, never the PAM module):
 * ESAPI for the commands, MU to move structures in and out as TPM wire bytes (which the
 * Swift side builds and parses), the TCTI loader for `tpm_tcti`, RC for error texts. */
#ifndef FINGERAUTH_CTSS2_SHIM_H
#define FINGERAUTH_CTSS2_SHIM_H
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>
#endif
