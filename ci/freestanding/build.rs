// No C runtime: the binary provides its own `_start`.
fn main() {
    println!("cargo:rustc-link-arg-bins=-nostartfiles");
}
