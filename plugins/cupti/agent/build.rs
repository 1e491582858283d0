//! Links the agent with immediate binding (`-z now`): the first call of the exported
//! correlation trampoline must not go through the dynamic linker's lazy resolver, whose frame
//! would otherwise appear in the eBPF source's stack for that launch (and only that one).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,now");
}
