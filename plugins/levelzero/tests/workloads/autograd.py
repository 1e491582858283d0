# PyTorch's autograd engine runs backward() on native threads named pt_autograd_N while the
# calling Python thread waits inside the engine, innermost in _engine_run_backward. Here a
# native thread of libpylaunch.so (argv[1]) named pt_autograd_0 launches k_engine while this
# thread waits in a C call from _engine_run_backward; the launch stack must show, above the
# engine thread's frames, this thread's Python stack (<module> -> train -> _engine_run_backward).
# A native thread with another name (k_other) gets no Python frames.
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])


def _engine_run_backward():
    lib.pylaunch_on_native_thread(b"pt_autograd_0", b"k_engine", 4)  # line 14


def train():
    _engine_run_backward()  # line 18
    lib.pylaunch_on_native_thread(b"worker", b"k_other", 4)  # line 19


lib.pylaunch_setup()
train()  # line 23
lib.pylaunch_finish()
print("autograd.py: ok")
