/* The lab's sandbox ("pause") image: what Kubernetes' build/pause/linux/pause.c does, which
 * containerd's sandbox_image names for every pod sandbox. It holds the pod's namespaces open:
 * sleep until SIGINT or SIGTERM, reaping any child that exits in between. Built static by
 * lab/images.py (gcc -static), so the image needs nothing else. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void down(int signo) { _exit(2 + signo); }

static void reap(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = down};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (getpid() != 1) {
    /* As pause.c: it is meant to be a container's pid 1. It still works, but says so. */
    static const char warning[] = "pause: not running as pid 1\n";
    (void)!write(2, warning, sizeof warning - 1);
  }
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0)
    return 1;
  for (;;) pause();
}
