/* fa-pamtest: drives real libpam through pam_start_confdir, the way sudo or login would,
 * and prints what the user would see and the PAM code, one line each:
 *
 *   INFO <text>        PAM_TEXT_INFO
 *   ERROR <text>       PAM_ERROR_MSG
 *   PROMPT <text>      a password prompt (answered with --password, else refused)
 *   RESULT <code> <name> [<microseconds>]
 *   RSS <cycle> <kB>   with --rss-every N: resident memory after every N cycles
 *   PROMPT_AT <us>     with --prompt-timing: after each PROMPT line, microseconds since
 *                      the running pam_authenticate began (benchmarks: fall-over time)
 *   CPU <user_us> <sys_us>  with --cpu: this process's own CPU time at the end (children
 *                      not included), for per-login CPU cost in benchmarks
 *   ENV <name>=<value>|<name> unset   with --print-env NAME (repeatable): the variable as
 *                      this process sees it before PAM starts (proves what reached a setuid host)
 *   IDS <ruid> <euid>  with --print-env: the real and effective uid
 *   SESSION <code> <name>  with --open-session: pam_open_session's result after a successful
 *                      pam_authenticate (or alone with --session-only)
 *
 *   STORM <sent> <handled> <handled elsewhere>  with --signal-storm: while the logins run,
 *                      a thread sends SIGWINCH (a terminal resize: default ignored) to this
 *                      process group every 20 us, to a handler installed without
 *                      SA_RESTART; "elsewhere" counts handler runs in another process that
 *                      shares this memory (a child started with CLONE_VM that still had
 *                      this host's handler): must be 0. Run it in a session of its own.
 *
 * --tty NAME sets PAM_TTY. --session-only skips pam_authenticate and only opens a session.
 *
 * --terminal answers prompts as sudo's conversation does on a terminal: standard input is
 * read for one line, with echo off for a password prompt, instead of --password. Run it
 * on a pty that is the controlling terminal of its session (the helper's injected newline
 * then ends the read, as at a real `sudo`).
 *
 * --repeat N runs N whole transactions (pam_start_confdir … pam_end, so libpam dlopens and
 * dlcloses the modules each time) in this one process; --quiet prints only the last RESULT.
 *
 * Test support only: it is not installed. */
#include <security/pam_appl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct answers {
    const char *password;
    int terminal;
    int prompt_timing;
    long long started; /* CLOCK_MONOTONIC microseconds when pam_authenticate began */
};

static long long now_us(void);

static const char *code_name(int rc) {
    switch (rc) {
    case PAM_SUCCESS: return "PAM_SUCCESS";
    case PAM_SERVICE_ERR: return "PAM_SERVICE_ERR";
    case PAM_SYSTEM_ERR: return "PAM_SYSTEM_ERR";
    case PAM_PERM_DENIED: return "PAM_PERM_DENIED";
    case PAM_AUTH_ERR: return "PAM_AUTH_ERR";
    case PAM_CRED_INSUFFICIENT: return "PAM_CRED_INSUFFICIENT";
    case PAM_AUTHINFO_UNAVAIL: return "PAM_AUTHINFO_UNAVAIL";
    case PAM_USER_UNKNOWN: return "PAM_USER_UNKNOWN";
    case PAM_MAXTRIES: return "PAM_MAXTRIES";
    case PAM_CONV_ERR: return "PAM_CONV_ERR";
    case PAM_IGNORE: return "PAM_IGNORE";
    case PAM_ABORT: return "PAM_ABORT";
    case PAM_OPEN_ERR: return "PAM_OPEN_ERR";
    case PAM_SYMBOL_ERR: return "PAM_SYMBOL_ERR";
    default: return "PAM_OTHER";
    }
}

/* One line from the terminal on standard input, echo off when `hidden`, the newline cut;
 * NULL when it cannot be read. */
static char *terminal_line(int hidden) {
    struct termios saved, quiet;
    char line[512];
    ssize_t got;
    if (tcgetattr(STDIN_FILENO, &saved) != 0) return NULL;
    quiet = saved;
    quiet.c_lflag |= ICANON;
    if (hidden) quiet.c_lflag &= ~(tcflag_t)ECHO;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) != 0) return NULL;
    got = read(STDIN_FILENO, line, sizeof line - 1);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    if (got < 0) return NULL;
    line[got] = '\0';
    line[strcspn(line, "\n")] = '\0';
    return strdup(line);
}

static int conversation(int count, const struct pam_message **messages,
                        struct pam_response **responses, void *data) {
    struct answers *answers = data;
    struct pam_response *out = calloc((size_t)count, sizeof *out);
    if (out == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const char *text = messages[i]->msg ? messages[i]->msg : "";
        switch (messages[i]->msg_style) {
        case PAM_TEXT_INFO: printf("INFO %s\n", text); break;
        case PAM_ERROR_MSG: printf("ERROR %s\n", text); break;
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            printf("PROMPT %s\n", text);
            if (answers->prompt_timing) printf("PROMPT_AT %lld\n", now_us() - answers->started);
            if (answers->terminal) {
                fflush(stdout);
                out[i].resp = terminal_line(messages[i]->msg_style == PAM_PROMPT_ECHO_OFF);
                if (out[i].resp != NULL) break;
            }
            if (answers->password == NULL || answers->terminal) {
                fflush(stdout);
                for (int j = 0; j < i; j++) free(out[j].resp);
                free(out);
                return PAM_CONV_ERR;
            }
            out[i].resp = strdup(answers->password);
            break;
        default: break;
        }
        fflush(stdout);
    }
    *responses = out;
    return PAM_SUCCESS;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) { kb = strtol(line + 6, NULL, 10); break; }
    }
    fclose(f);
    return kb;
}

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static pid_t host_pid;
static atomic_long storm_sent, storm_handled, storm_elsewhere;
static atomic_int storm_stop;

static void on_winch(int signal) {
    (void)signal;
    if (getpid() == host_pid) atomic_fetch_add(&storm_handled, 1);
    else atomic_fetch_add(&storm_elsewhere, 1);
}

static void *storm(void *unused) {
    struct timespec pause = { 0, 20000 };
    (void)unused;
    while (!atomic_load(&storm_stop)) {
        if (killpg(0, SIGWINCH) == 0) atomic_fetch_add(&storm_sent, 1);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void usage(void) {
    fprintf(stderr, "usage: fa-pamtest --confdir DIR --service NAME --user USER "
                    "[--password PW] [--rhost HOST] [--ruser NAME] [--repeat N] [--rss-every N] [--quiet] [--timing] "
                    "[--prompt-timing] [--cpu] [--terminal] [--tty NAME] [--open-session|--session-only] [--signal-storm] "
                    "[--print-env NAME]...\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *confdir = NULL, *service = NULL, *user = NULL, *rhost = NULL, *ruser = NULL, *tty = NULL;
    const char *print_env[32];
    int print_env_count = 0, open_session = 0, session_only = 0;
    struct answers answers = { NULL, 0, 0, 0 };
    long repeat = 1, rss_every = 0;
    int timing = 0, quiet = 0, cpu = 0, signal_storm = 0;
    pthread_t storm_thread;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--timing") == 0) { timing = 1; continue; }
        if (strcmp(a, "--quiet") == 0) { quiet = 1; continue; }
        if (strcmp(a, "--prompt-timing") == 0) { answers.prompt_timing = 1; continue; }
        if (strcmp(a, "--cpu") == 0) { cpu = 1; continue; }
        if (strcmp(a, "--terminal") == 0) { answers.terminal = 1; continue; }
        if (strcmp(a, "--signal-storm") == 0) { signal_storm = 1; continue; }
        if (strcmp(a, "--open-session") == 0) { open_session = 1; continue; }
        if (strcmp(a, "--session-only") == 0) { open_session = 1; session_only = 1; continue; }
        if (v == NULL) usage();
        if (strcmp(a, "--confdir") == 0) confdir = v;
        else if (strcmp(a, "--service") == 0) service = v;
        else if (strcmp(a, "--user") == 0) user = v;
        else if (strcmp(a, "--password") == 0) answers.password = v;
        else if (strcmp(a, "--rhost") == 0) rhost = v;
        else if (strcmp(a, "--ruser") == 0) ruser = v;
        else if (strcmp(a, "--tty") == 0) tty = v;
        else if (strcmp(a, "--print-env") == 0 && print_env_count < 32) print_env[print_env_count++] = v;
        else if (strcmp(a, "--repeat") == 0) repeat = strtol(v, NULL, 10);
        else if (strcmp(a, "--rss-every") == 0) rss_every = strtol(v, NULL, 10);
        else usage();
        i++;
    }
    if (confdir == NULL || service == NULL || user == NULL || repeat < 1) usage();

    for (int i = 0; i < print_env_count; i++) {
        const char *value = getenv(print_env[i]);
        if (value) printf("ENV %s=%s\n", print_env[i], value);
        else printf("ENV %s unset\n", print_env[i]);
    }
    if (print_env_count > 0) printf("IDS %d %d\n", (int)getuid(), (int)geteuid());
    fflush(stdout);

    if (signal_storm) {
        struct sigaction winch;
        memset(&winch, 0, sizeof winch);
        winch.sa_handler = on_winch;  /* no SA_RESTART: every slow call may see EINTR */
        sigemptyset(&winch.sa_mask);
        host_pid = getpid();
        if (sigaction(SIGWINCH, &winch, NULL) != 0 || pthread_create(&storm_thread, NULL, storm, NULL) != 0) {
            perror("fa-pamtest: signal storm");
            return 2;
        }
    }

    struct pam_conv conv = { conversation, &answers };
    for (long n = 0; n < repeat; n++) {
        pam_handle_t *pamh = NULL;
        int rc = pam_start_confdir(service, user, &conv, confdir, &pamh);
        if (rc != PAM_SUCCESS) {
            printf("RESULT %d %s pam_start_confdir\n", rc, code_name(rc));
            return 1;
        }
        if (rhost != NULL) pam_set_item(pamh, PAM_RHOST, rhost);
        if (ruser != NULL) pam_set_item(pamh, PAM_RUSER, ruser);
        if (tty != NULL) pam_set_item(pamh, PAM_TTY, tty);
        long long started = now_us();
        answers.started = started;
        rc = session_only ? PAM_SUCCESS : pam_authenticate(pamh, 0);
        long long elapsed = now_us() - started;
        if (open_session && rc == PAM_SUCCESS) {
            int src = pam_open_session(pamh, 0);
            printf("SESSION %d %s\n", src, code_name(src));
        }
        pam_end(pamh, rc);
        if (!quiet || n == repeat - 1) {
            if (timing) printf("RESULT %d %s %lld\n", rc, code_name(rc), elapsed);
            else printf("RESULT %d %s\n", rc, code_name(rc));
        }
        if (rss_every > 0 && (n + 1) % rss_every == 0) printf("RSS %ld %ld\n", n + 1, rss_kb());
        fflush(stdout);
    }
    if (signal_storm) {
        atomic_store(&storm_stop, 1);
        pthread_join(storm_thread, NULL);
        printf("STORM %ld %ld %ld\n", atomic_load(&storm_sent), atomic_load(&storm_handled),
               atomic_load(&storm_elsewhere));
    }
    if (cpu) {
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        printf("CPU %lld %lld\n",
               (long long)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec,
               (long long)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec);
    }
    return 0;
}
