/* LD_PRELOAD for test_module_environment.py: every getenv and secure_getenv that the PAM
 * module itself calls (the caller's address lies in pam_fingerauth.so) appends the name
 * asked for to the file $FA_GETENV_TRACE. Calls from libpam, libc or the host are not
 * recorded; the module's own reads are what the design lists. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static char *(*next_getenv)(const char *);
static char *(*next_secure_getenv)(const char *);

static void record(const char *name, const void *caller) {
    Dl_info info;
    if (name == NULL || dladdr(caller, &info) == 0 || info.dli_fname == NULL ||
        strstr(info.dli_fname, "pam_fingerauth") == NULL)
        return;
    if (next_getenv == NULL) next_getenv = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    const char *path = next_getenv ? next_getenv("FA_GETENV_TRACE") : NULL;
    if (path == NULL) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    size_t length = strnlen(name, 256);
    if (write(fd, name, length) < 0 || write(fd, "\n", 1) < 0) { /* nothing to do */ }
    close(fd);
}

char *getenv(const char *name) {
    if (next_getenv == NULL) next_getenv = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    record(name, __builtin_return_address(0));
    return next_getenv ? next_getenv(name) : NULL;
}

char *secure_getenv(const char *name) {
    if (next_secure_getenv == NULL) next_secure_getenv = (char *(*)(const char *))dlsym(RTLD_NEXT, "secure_getenv");
    record(name, __builtin_return_address(0));
    return next_secure_getenv ? next_secure_getenv(name) : NULL;
}
