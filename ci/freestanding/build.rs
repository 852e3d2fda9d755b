// No C runtime: the binary provides its own `_start`. A hosted target's linker driver (cc)
// would add the C runtime's start files; a bare-metal target (x86_64-unknown-none, linked by
// rust-lld) has none to leave out, and its linker knows no such flag.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-nostartfiles");
    }
}
