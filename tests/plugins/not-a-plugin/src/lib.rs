//! `not-a-plugin`: a shared library named like a plugin that exports no plugin root module,
//! to prove the host says so plainly.

/// An exported function, so the library is a normal shared object.
#[no_mangle]
pub extern "C" fn not_a_plugin_answer() -> u32 {
    42
}
