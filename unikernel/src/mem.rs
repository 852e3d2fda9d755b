//! The memory routines the precompiled `core` calls (`compiler_builtins`' `mem` feature is not
//! available on stable). `rep movsb`/`rep stosb` cannot be turned back into calls to
//! themselves by the optimizer, as a plain copy loop inside `memcpy` could.

/// `memcpy`.
///
/// # Safety
/// The C contract: `n` bytes readable at `src`, writable at `dst`, not overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract; the direction flag is clear (the ABI's and ours).
    unsafe {
        core::arch::asm!("rep movsb", inout("rcx") n => _, inout("rdi") dst => _,
            inout("rsi") src => _, options(nostack, preserves_flags));
    }
    dst
}

/// `memmove`.
///
/// # Safety
/// The C contract: `n` bytes readable at `src` and writable at `dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dst as usize) <= (src as usize) || (dst as usize) >= (src as usize).wrapping_add(n) {
        // SAFETY: a forward copy is correct when dst is below src or past its end.
        return unsafe { memcpy(dst, src, n) };
    }
    // SAFETY: backwards, from the last byte, with the direction flag set and cleared again.
    unsafe {
        core::arch::asm!("std", "rep movsb", "cld", inout("rcx") n => _,
            inout("rdi") dst.add(n - 1) => _, inout("rsi") src.add(n - 1) => _,
            options(nostack));
    }
    dst
}

/// `memset`.
///
/// # Safety
/// The C contract: `n` bytes writable at `dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("rep stosb", inout("rcx") n => _, inout("rdi") dst => _,
            in("al") c as u8, options(nostack, preserves_flags));
    }
    dst
}

/// `memcmp`.
///
/// # Safety
/// The C contract: `n` bytes readable at both.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: i < n; volatile reads keep the loop a loop (never a call to memcmp).
        let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}

/// `bcmp`.
///
/// # Safety
/// The C contract: `n` bytes readable at both.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: forwarded.
    unsafe { memcmp(a, b, n) }
}

/// The host target's prebuilt `core` names this symbol in its unwind tables; with
/// `panic = "abort"` nothing calls it.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
