//! `StaticKey`: the kernel's static keys (jump labels) without code patching.
//!
//! C source: `include/linux/jump_label.h`, `kernel/jump_label.c` (`DEFINE_STATIC_KEY_FALSE`, `static_branch_likely`, `static_key_slow_inc`, ...).
//!
//! # Design
//!
//! A kernel static key costs its readers nothing: the branch is a NOP or a JMP patched into the
//! instruction stream, so the hot path loads no data. `no_std` Rust without `unsafe` cannot
//! patch code, so [`StaticKey`] keeps the key's count in one atomic integer and reads it with
//! a single `Relaxed` load; the branch you do not expect is `#[cold]`, out of line, as the
//! kernel lays it out.
//!
//! **Why the hot path stays free of false sharing.** What made `sched_clock_irqtime` (seed 003)
//! expensive was not the load but the line: it shared a cache line with `nohz` fields that
//! other CPUs write on every idle entry and exit, so each interrupt's read missed. The count
//! here sits alone on a [`CachePadded`] line that is written only when the key is flipped, so
//! every reader's copy stays valid and the load hits in L1 (the project's measurements on a
//! two-core x86-64 machine put such a read at the cost of reading a constant, and the same flag
//! inside a line another core writes at +40-65 ns a read).
//!
//! **What it does not give.**
//! - No ordering of other data: reading the key orders nothing, and flipping it publishes
//!   nothing (there is no patched text to publish, so no release store is needed). Code that
//!   needs "once `enable` returned, no CPU still runs the old branch" needs its own quiescence
//!   handshake; the key is eventually consistent, as the kernel's is for unrelated data.
//! - No code patching, so no transitional `-1` state and no `jump_label_mutex`: every change of
//!   the count is one compare-exchange (never a plain store racing an RMW), and concurrent
//!   flips simply serialise on the word, the last one winning as under the kernel's mutex.
//! - No sleeping: the kernel's `enable`/`disable` may sleep (they take the hotplug lock and
//!   the mutex); callers that model that rule do so with their own context tokens.
//!
//! Misuse warns exactly where the kernel warns (spec §8.1): `enable` finding the count above 1,
//! `disable` finding anything but 0 or 1, `inc` overflowing, `dec` at zero. A warning is counted
//! on the [`WarnSink`] the caller passes, and the operation then does what the kernel does.

use crate::sync::{AtomicI32, Ordering::Relaxed};
use crate::warn::{WarnSink, Warning};
use core::fmt;
use crossbeam_utils::CachePadded;

/// A static key: a reference count on a cache line of its own; enabled means `count > 0`.
#[doc(alias = "static_key")]
#[doc(alias = "static_key_true")]
#[doc(alias = "static_key_false")]
#[derive(Debug)]
pub struct StaticKey {
    count: CachePadded<AtomicI32>,
}

/// Why `inc` or `dec` refused to change the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticKeyError {
    /// `inc` at `i32::MAX`: the count is left as it is.
    Overflow,
    /// `dec` at 0: the count stays 0 (it never wraps).
    Underflow,
}

impl fmt::Display for StaticKeyError {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StaticKeyError::Overflow => "static key count would overflow",
            StaticKeyError::Underflow => "static key decremented below zero",
        })
    }
}

impl core::error::Error for StaticKeyError {}

impl StaticKey {
    crate::maybe_const_fn! {
        /// A key that starts disabled (`DEFINE_STATIC_KEY_FALSE`).
        #[doc(alias = "DEFINE_STATIC_KEY_FALSE")]
        #[inline]
        pub fn new_false() -> Self {
            StaticKey { count: CachePadded::new(AtomicI32::new(0)) }
        }
    }

    crate::maybe_const_fn! {
        /// A key that starts enabled (`DEFINE_STATIC_KEY_TRUE`).
        #[doc(alias = "DEFINE_STATIC_KEY_TRUE")]
        #[inline]
        pub fn new_true() -> Self {
            StaticKey { count: CachePadded::new(AtomicI32::new(1)) }
        }
    }

    /// Whether the key is enabled (`static_key_enabled`): `count > 0`.
    #[doc(alias = "static_key_enabled")]
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    /// The raw count (`static_key_count`).
    #[doc(alias = "static_key_count")]
    #[inline]
    pub fn count(&self) -> i32 {
        self.count.load(Relaxed)
    }

    /// `static_branch_likely(key)`: one `Relaxed` load; the disabled arm is `#[cold]`.
    #[doc(alias = "static_branch_likely")]
    #[inline(always)]
    pub fn likely(&self) -> bool {
        if self.count.load(Relaxed) > 0 {
            true
        } else {
            cold_false()
        }
    }

    /// `static_branch_unlikely(key)`: one `Relaxed` load; the enabled arm is `#[cold]`.
    #[doc(alias = "static_branch_unlikely")]
    #[inline(always)]
    pub fn unlikely(&self) -> bool {
        if self.count.load(Relaxed) > 0 {
            cold_true()
        } else {
            false
        }
    }

    /// `static_branch_enable` / `static_key_enable`: makes the count 1 if it is 0.
    ///
    /// Finding it already positive changes nothing, and warns unless it is exactly 1 (the key
    /// is also held through [`inc`](Self::inc)). Returns whether this call enabled the key.
    #[doc(alias = "static_key_enable")]
    #[doc(alias = "static_branch_enable")]
    pub fn enable(&self, warn: &impl WarnSink) -> bool {
        let seen = self.count.load(Relaxed);
        if seen > 0 {
            warn.warn_on(seen != 1, Warning::StaticKeyEnableCount);
            return false;
        }
        // As under the kernel's mutex: 0 -> 1 once; if someone else moved the count first,
        // their change stands.
        self.count.compare_exchange(0, 1, Relaxed, Relaxed).is_ok()
    }

    /// `static_branch_disable` / `static_key_disable`: makes the count 0 if it is 1.
    ///
    /// Any other count changes nothing, and warns unless it is 0. Returns whether this call
    /// disabled the key.
    #[doc(alias = "static_key_disable")]
    #[doc(alias = "static_branch_disable")]
    #[inline]
    pub fn disable(&self, warn: &impl WarnSink) -> bool {
        let seen = self.count.load(Relaxed);
        if seen != 1 {
            warn.warn_on(seen != 0, Warning::StaticKeyDisableCount);
            return false;
        }
        self.count.compare_exchange(1, 0, Relaxed, Relaxed).is_ok()
    }

    /// `static_key_slow_inc` / `static_branch_inc`: takes one more reference.
    ///
    /// At `i32::MAX` it warns and returns [`StaticKeyError::Overflow`], leaving the count.
    #[doc(alias = "static_key_slow_inc")]
    #[doc(alias = "static_branch_inc")]
    pub fn inc(&self, warn: &impl WarnSink) -> Result<(), StaticKeyError> {
        let mut seen = self.count.load(Relaxed);
        loop {
            if seen == i32::MAX || seen < 0 {
                warn.warn(Warning::StaticKeyIncOverflow);
                return Err(StaticKeyError::Overflow);
            }
            match self
                .count
                .compare_exchange_weak(seen, seen + 1, Relaxed, Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => seen = now,
            }
        }
    }

    /// `static_key_slow_dec` / `static_branch_dec`: drops one reference.
    ///
    /// At 0 it warns and returns [`StaticKeyError::Underflow`]; the count never wraps.
    #[doc(alias = "static_key_slow_dec")]
    #[doc(alias = "static_branch_dec")]
    pub fn dec(&self, warn: &impl WarnSink) -> Result<(), StaticKeyError> {
        let mut seen = self.count.load(Relaxed);
        loop {
            if seen <= 0 {
                warn.warn(Warning::StaticKeyDecUnderflow);
                return Err(StaticKeyError::Underflow);
            }
            match self
                .count
                .compare_exchange_weak(seen, seen - 1, Relaxed, Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => seen = now,
            }
        }
    }
}

#[cold]
#[inline(never)]
fn cold_true() -> bool {
    true
}

#[cold]
#[inline(never)]
fn cold_false() -> bool {
    false
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;
    use crate::{NrCpuIds, Warnings};

    #[test]
    fn false_and_true_keys_start_where_the_kernel_starts() {
        let f = StaticKey::new_false();
        let t = StaticKey::new_true();
        assert_eq!(
            (f.count(), f.enabled(), f.likely(), f.unlikely()),
            (0, false, false, false)
        );
        assert_eq!(
            (t.count(), t.enabled(), t.likely(), t.unlikely()),
            (1, true, true, true)
        );
    }

    #[test]
    fn boolean_api_is_idempotent_and_silent() {
        let w = Warnings::<1>::new();
        let k = StaticKey::new_false();
        assert!(k.enable(&w.cpu_less()));
        assert!(!k.enable(&w.cpu_less()));
        assert_eq!(k.count(), 1);
        assert!(k.disable(&w.cpu_less()));
        assert!(!k.disable(&w.cpu_less()));
        assert_eq!(k.count(), 0);
        assert_eq!(w.outside_cpus(), 0);
    }

    #[test]
    fn counting_api_counts() {
        let w = Warnings::<1>::new();
        let k = StaticKey::new_false();
        for _ in 0..3 {
            k.inc(&w.cpu_less()).unwrap();
        }
        assert_eq!(k.count(), 3);
        k.dec(&w.cpu_less()).unwrap();
        k.dec(&w.cpu_less()).unwrap();
        assert!(k.enabled());
        k.dec(&w.cpu_less()).unwrap();
        assert!(!k.enabled());
        assert_eq!(w.outside_cpus(), 0);
    }

    #[test]
    fn dec_at_zero_is_an_error_never_a_wrap() {
        let w = Warnings::<2>::new();
        let cpu = NrCpuIds::<2>::full().cpu(1).unwrap();
        let k = StaticKey::new_false();
        assert_eq!(k.dec(&w.at(cpu)), Err(StaticKeyError::Underflow));
        assert_eq!(k.count(), 0);
        assert_eq!(w.on_cpu(cpu), 1);
        assert_eq!(w.of_kind(Warning::StaticKeyDecUnderflow), 1);
    }

    #[test]
    fn inc_at_max_is_an_error_never_a_wrap() {
        let w = Warnings::<1>::new();
        let k = StaticKey::new_false();
        k.count.swap(i32::MAX, Relaxed);
        assert_eq!(k.inc(&w.cpu_less()), Err(StaticKeyError::Overflow));
        assert_eq!(k.count(), i32::MAX);
        assert_eq!(w.of_kind(Warning::StaticKeyIncOverflow), 1);
    }

    #[test]
    fn mixing_the_apis_warns_where_the_kernel_does() {
        let w = Warnings::<1>::new();
        let s = w.cpu_less();
        let k = StaticKey::new_false();
        // inc then disable at count 1: silent, and the key ends disabled.
        k.inc(&s).unwrap();
        assert!(k.disable(&s));
        assert_eq!((k.count(), w.outside_cpus()), (0, 0));
        // enable finding 2: warns, changes nothing.
        k.inc(&s).unwrap();
        k.inc(&s).unwrap();
        assert!(!k.enable(&s));
        assert_eq!(k.count(), 2);
        assert_eq!(w.of_kind(Warning::StaticKeyEnableCount), 1);
        // disable finding 2: warns, changes nothing.
        assert!(!k.disable(&s));
        assert_eq!(k.count(), 2);
        assert_eq!(w.of_kind(Warning::StaticKeyDisableCount), 1);
        // enable then inc: a second reference; dec twice disables it.
        k.dec(&s).unwrap();
        k.dec(&s).unwrap();
        assert!(k.enable(&s));
        k.inc(&s).unwrap();
        assert_eq!(k.count(), 2);
        k.dec(&s).unwrap();
        k.dec(&s).unwrap();
        assert!(!k.enabled());
        assert_eq!(w.outside_cpus(), 2);
    }
}
