// shmhog: leaves a System V shared memory segment of the given MiB behind, touched so that its
// pages are charged, and exits without removing it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

int main(int argc, char **argv) {
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
	int id = shmget(IPC_PRIVATE, mib << 20, IPC_CREAT | 0600);
	if (id < 0) { perror("shmget"); return 1; }
	char *p = shmat(id, NULL, 0);
	if (p == (void *)-1) { perror("shmat"); return 1; }
	memset(p, 1, mib << 20);
	shmdt(p);
	printf("%d\n", id);
	return 0;
}
