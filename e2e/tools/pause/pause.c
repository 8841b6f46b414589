/*
 * The pod sandbox process of the e2e node: it holds a pod's namespaces open while the pod
 * lives. As PID 1 of the pod it reaps any orphan reparented to it, and it exits on SIGINT or
 * SIGTERM (the runtime stops the sandbox with one of them). Built static, so its image is
 * this one file.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  int saved = errno;
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
    static const char v[] = "pause (tollgate e2e)\n";
    return write(STDOUT_FILENO, v, sizeof v - 1) < 0;
  }
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  sigemptyset(&on_stop.sa_mask);
  sigemptyset(&on_child.sa_mask);
  if (sigaction(SIGINT, &on_stop, NULL) || sigaction(SIGTERM, &on_stop, NULL) || sigaction(SIGCHLD, &on_child, NULL)) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
