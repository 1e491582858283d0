/* An application of the Acme accelerator: three launches from main -> outer -> middle -> inner.
 * It prints its functions' addresses, so a check can find them in the recorded launch stacks. */
#include <stdio.h>

#include "acme.h"

__attribute__((noinline)) int inner(void) { return acme_launch("gemm") + 1; }
__attribute__((noinline)) int middle(void) { return inner() + 1; }
__attribute__((noinline)) int outer(void) { return middle() + 1; }

int main(void) {
    int i;
    printf("inner %p\nmiddle %p\nouter %p\nmain %p\n", (void *)inner, (void *)middle, (void *)outer, (void *)main);
    fflush(stdout);
    for (i = 0; i < 3; i++) {
        if (outer() != 3) {
            return 1;
        }
    }
    return 0;
}
