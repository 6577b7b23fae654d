/* child.c — see child.h. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

bool wait_child(pid_t pid, int seconds, int *status)
{
    *status = 0;
    for (int waited = 0; waited < seconds * 10; waited++) {
        if (waitpid(pid, status, WNOHANG) != 0)
            return true;
        usleep(100000);
    }
    fprintf(stderr, "child %d hung: killed\n", (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, status, 0);
    return false;
}
