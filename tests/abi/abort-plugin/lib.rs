//! Test double for the `panic = "abort"` check (not a workspace crate): the test compiles this
//! file with `rustc -C panic=abort`, like a plugin whose Cargo profile sets `panic = "abort"`.
//! It exports the plugin root-module symbol under the name every xpuprof plugin uses (its
//! contents are never read: the host refuses the library before loading it) and has a function
//! that can panic, so the panic runtime is linked in.

#[no_mangle]
pub static _1as_0lib_1header_0root_bmodule_bloader: [u64; 4] = [0; 4];

#[no_mangle]
pub extern "C" fn might_panic(x: u32) -> u32 {
    if x == 7 {
        panic!("seven");
    }
    x + 1
}
