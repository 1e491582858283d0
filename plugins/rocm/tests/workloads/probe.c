/* Calls the real hipLaunchKernel of Debian's libamdhip64 from two call paths (3 and 2 times).
 * Without a GPU every call fails (hipErrorNoDevice): the eBPF source's uprobe on
 * hipLaunchKernel must still catch each call with its stack.
 *   cc -O1 -g -fno-omit-frame-pointer -fno-inline probe.c -o probe -lamdhip64 */
#include <stdio.h>

#include "hip_subset.h"

static const dim3 GRID = {1, 1, 1}, BLOCK = {64, 1, 1};
static char kernel_stub;
static int failures;

static void path_a(void) { failures += hipLaunchKernel(&kernel_stub, GRID, BLOCK, NULL, 0, NULL) != 0; }
static void path_b(void) { failures += hipLaunchKernel(&kernel_stub, GRID, BLOCK, NULL, 0, NULL) != 0; }

int main(void)
{
    for (int i = 0; i < 3; i++)
        path_a();
    for (int i = 0; i < 2; i++)
        path_b();
    printf("%d of 5 launches failed (no GPU)\n", failures);
    return 0;
}
