/* CPU-bound workload built WITHOUT frame pointers (-O2 -fomit-frame-pointer), with known 5-deep
 * call paths: main -> path_a1 .. path_a4 -> spin_three does three times the work of
 * main -> path_b1 .. path_b4 -> spin_one. A frame-pointer walk cannot follow these frames; the
 * eBPF source's CFI unwind must show both full paths, rooted at _start, in a 3:1 ratio.
 * Every level does work after its call (no tail calls) and keeps values live across it.
 * `frameless ROUNDS SCALE`: ROUNDS rounds of both paths, each call SCALE million iterations x3/x1.
 * Build: cc -O2 -fomit-frame-pointer -g frameless.c -o frameless */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#include "spin.h"

static volatile unsigned long sink;
static unsigned long scale = 1;


NOINLINE unsigned long spin_three(unsigned long x)
{
	return spin(x, 3000000 * scale);
}

NOINLINE unsigned long spin_one(unsigned long x)
{
	return spin(x, 1000000 * scale);
}

#define LEVEL(name, next)                              \
	NOINLINE unsigned long name(unsigned long x)   \
	{                                              \
		unsigned long a = x * 3, b = x ^ sink; \
		unsigned long r = next(a + b);         \
		sink = r + a;                          \
		return r ^ b;                          \
	}

LEVEL(path_a4, spin_three)
LEVEL(path_a3, path_a4)
LEVEL(path_a2, path_a3)
LEVEL(path_a1, path_a2)
LEVEL(path_b4, spin_one)
LEVEL(path_b3, path_b4)
LEVEL(path_b2, path_b3)
LEVEL(path_b1, path_b2)

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 8;

	if (argc > 2)
		scale = strtoul(argv[2], NULL, 10);
	for (long i = 0; i < rounds; i++) {
		sink = path_a1(sink + i);
		sink = path_b1(sink + i);
	}
	return 0;
}
