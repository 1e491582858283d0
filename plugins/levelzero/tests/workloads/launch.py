# Level Zero launches from Python through ctypes (libpylaunch.so, argv[1]): 6 launches of
# k_small from small() and 2 of k_big from big(), both called from step(). The launch stacks
# must show step -> small / big at the lines below, under <module>.
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])


def small():
    lib.pylaunch_launch(b"k_small", 4)  # line 11


def big():
    lib.pylaunch_launch(b"k_big", 256)  # line 15


def step(i):
    small()  # line 19
    if i % 3 == 0:
        big()  # line 21


lib.pylaunch_setup()
for i in range(6):
    step(i)  # line 26
lib.pylaunch_finish()
print("launch.py: ok")
