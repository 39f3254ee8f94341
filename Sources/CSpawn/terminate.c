#include "fa_terminate.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

static volatile sig_atomic_t terminate_requested;

static void on_terminate(int signal) {
    (void)signal;
    terminate_requested = 1;
}

int fa_catch_terminate(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_terminate;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGTERM, &action, NULL) != 0) return -1;
    return prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
}

int fa_terminate_requested(void) { return terminate_requested != 0; }
