/* Off-CPU workload: sleep_path() blocks in nanosleep and futex_path() in a futex wait, each
 * for 20 x 25 ms = 500 ms in all, on the main thread.
 * Build: cc -O1 -fno-omit-frame-pointer -g block.c -o block */
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20
#define WAIT_NS 25000000L

static uint32_t never_changes;

__attribute__((noinline)) void sleep_path(void)
{
	struct timespec ts = {0, WAIT_NS};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void futex_path(void)
{
	struct timespec ts = {0, WAIT_NS};
	/* Times out: nobody wakes this futex. */
	syscall(SYS_futex, &never_changes, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sleep_path();
		futex_path();
	}
	return 0;
}
