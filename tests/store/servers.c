/* servers.c — test servers as children of the test that starts them. */
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_tests.h"

bool test_server_start(test_server *sv, const char *const argv[], const char *port_marker,
                       bool quiet)
{
    if (access(TEST_PYTHON, X_OK) != 0) {
        fprintf(stderr, "skipped: no %s\n", TEST_PYTHON);
        return false;
    }
    int in[2], out[2];
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        dup2(in[0], 0);
        dup2(out[1], 1);
        int null = quiet ? open("/dev/null", O_WRONLY) : -1;
        if (null >= 0)
            dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char buf[512];
    size_t n = 0;
    int port = 0;
    while (!port && n < sizeof buf - 1) {
        struct pollfd pfd = {.fd = out[0], .events = POLLIN};
        ck_assert_msg(poll(&pfd, 1, 20000) == 1, "the test server did not start");
        ssize_t r = read(out[0], buf + n, sizeof buf - 1 - n);
        ck_assert_msg(r > 0, "the test server exited");
        n += (size_t)r;
        buf[n] = '\0';
        if (!strchr(buf, '\n'))
            continue;
        const char *p = port_marker ? strstr(buf, port_marker) : buf;
        port = p ? atoi(port_marker ? p + strlen(port_marker) : p) : 0;
    }
    close(out[0]);
    ck_assert_int_gt(port, 0);
    *sv = (test_server){.pid = pid, .in_fd = in[1], .port = port};
    return true;
}

void test_server_stop(test_server *sv)
{
    close(sv->in_fd);
    kill(sv->pid, SIGTERM);
    waitpid(sv->pid, NULL, 0);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void test_remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }
