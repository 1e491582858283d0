/* A parent that launches `k_parent` from parent_work(), then runs a child process (the path in
 * argv[1], e.g. the immediate workload) and waits for it: both processes must be traced. */
#include "common.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

__attribute__((noinline)) void parent_work(void)
{
	struct ze z = ze_setup();
	ze_command_list_handle_t l = ze_immediate(&z, z.device);
	ze_group_count_t g = {1, 1, 1};
	CHECK(zeCommandListAppendLaunchKernel(l, ze_kernel(&z, "k_parent", 16), &g, NULL, 0, NULL));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: child /path/to/workload\n");
		return 2;
	}
	parent_work();
	pid_t pid;
	char *args[] = {argv[1], NULL};
	if (posix_spawn(&pid, argv[1], NULL, NULL, args, environ) != 0) {
		perror("posix_spawn");
		return 2;
	}
	int status = 0;
	waitpid(pid, &status, 0);
	printf("child: ok (child exit %d)\n", WEXITSTATUS(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
