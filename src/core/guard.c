/*
 * guard.c - SIGBUS guard for internal bulk reads of mapped files. One process-wide handler,
 * installed once, chaining to whatever handler was there before for faults outside a guard.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

static struct sigaction prev_action;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local sigjmp_buf *active;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    if (active) siglongjmp(*active, 1);
    /* Not ours: behave as the previous handler would. */
    if (prev_action.sa_flags & SA_SIGINFO) {
        if (prev_action.sa_sigaction) {
            prev_action.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (prev_action.sa_handler == SIG_IGN) {
        /* An ignored SIGBUS sent by kill() is dropped as before; a real fault cannot be
         * ignored (the instruction would fault again forever), so it kills as it would without us. */
        if (info && info->si_code <= 0) return;
    } else if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler) {
        prev_action.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &prev_action);
}

ingot_status ingot__guard(ingot__guarded_fn fn, void *arg)
{
    pthread_once(&once, install);
    sigjmp_buf env;
    sigjmp_buf *volatile outer = active;
    /* No signal mask to save: the handler runs with SA_NODEFER, so SIGBUS is never blocked when
     * we jump out of it, and skipping the mask keeps sigsetjmp free of a system call (the writer
     * guards every chunk). */
    if (sigsetjmp(env, 0)) {
        active = outer;
        return INGOT_IO_FAULT;
    }
    active = &env;
    ingot_status st = fn(arg);
    active = outer;
    return st;
}
