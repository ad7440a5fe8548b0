// detach: a process that outlives its command the hard way. It forks a child that leaves the
// process group (setsid), starts a thread that keeps running (it lists /work and /proc every
// 100 ms, as a process spying on later sessions would) and ends its main thread with
// pthread_exit: /proc/<pid>/stat then shows the process as a zombie ("Z") while its thread runs.
// The parent waits until that is so, prints the child's pid and state, and exits. The child
// leaves the command's output, so that nothing waits for it.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>

static void *spy(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "sluice-survivor", 0, 0, 0);
	for (;;) {
		DIR *d = opendir("/work");
		if (d) closedir(d);
		d = opendir("/proc");
		if (d) closedir(d);
		usleep(100000);
	}
	return NULL;
}

static char state(pid_t pid) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f) return '?';
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

int main(void) {
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		// Off the command's output too, as a daemon would: nothing waits for it.
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		setsid();
		prctl(PR_SET_NAME, "sluice-survivor", 0, 0, 0);
		pthread_t t;
		pthread_create(&t, NULL, spy, NULL);
		pthread_exit(NULL);
	}
	char s = '?';
	for (int i = 0; i < 100 && s != 'Z'; i++) {
		usleep(20000);
		s = state(pid);
	}
	printf("%d %c\n", pid, s);
	return 0;
}
