//! Integration tests of xpuprof-python against the real interpreters of this machine: Debian's
//! `/usr/bin/python3.11` always (CI installs it), and every pyenv interpreter 3.9-3.13 found.

mod autograd;
mod cpython_offsets;
mod interpreters;
mod reading;
