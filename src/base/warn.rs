//! Counted warnings: the crate's `WARN_ON`.
//!
//! C source: `include/asm-generic/bug.h` (`WARN_ON`, `WARN_ON_ONCE`), counted instead of printed.
//!
//! # Design
//!
//! Where the kernel would `WARN_ON` (print a backtrace, carry on), the crate counts a
//! [`Warning`] and then does exactly what the kernel does after the warning. Nothing panics.
//! Counts are kept per CPU, plus one counter for contexts that are not on a CPU (boot-time
//! static-key changes, say), plus one per kind, so a test can assert both *that* a path warned
//! and *which* warning it was; every hit counts (the kernel's `WARN_ON_ONCE` prints once but
//! its condition is still a bug every time).
//!
//! Warnings are bugs, so the counters are cold: they are packed, not padded, and updated with
//! `Relaxed` RMWs that order nothing.

use crate::cpu::{CpuId, NrCpuIds};
use crate::sync::{AtomicU64, Ordering::Relaxed, atomic_array};

/// What went wrong. Each variant names the kernel check it mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Warning {
    /// `static_key_enable` found the count above 1 (mixed with `static_key_slow_inc`).
    StaticKeyEnableCount,
    /// `static_key_disable` found a count other than 0 or 1.
    StaticKeyDisableCount,
    /// `static_key_slow_inc` would overflow the count.
    StaticKeyIncOverflow,
    /// `static_key_slow_dec` found the count already 0.
    StaticKeyDecUnderflow,
    /// A path that runs only on its own CPU was asked to act for another CPU
    /// (`SCHED_WARN_ON(cpu != smp_processor_id())` and the like).
    WrongCpu,
    /// `nohz_csd_func` ran with no kick bit pending (`WARN_ON(!(flags & NOHZ_KICK_MASK))`).
    CsdWithoutKick,
    /// `_nohz_idle_balance` was asked for BALANCE without STATS
    /// (`WARN_ON((flags & NOHZ_KICK_MASK) == NOHZ_BALANCE_KICK)`).
    BalanceWithoutStats,
    /// The owner of a csd found it still busy. The kernel's async cross-call returns `-EBUSY`
    /// and the call is silently lost; the ownership rule of `nohz_flags` makes this
    /// unreachable, so the crate counts it where the kernel is silent.
    CsdBusy,
    /// `tick_nohz_idle_enter` / `tick_nohz_idle_exit` found a next-event computation still
    /// cached (`WARN_ON_ONCE(ts->timer_expires_base)`).
    CachedNextEvent,
    /// `tick_nohz_idle_exit` ran outside the idle section
    /// (`WARN_ON_ONCE(!tick_sched_flag_test(ts, TS_FLAG_INIDLE))`).
    IdleExitOutsideIdle,
    /// `can_stop_idle_tick` on an offline CPU (`WARN_ON_ONCE(cpu_is_offline(cpu))`).
    OfflineCpuIdle,
    /// `can_stop_idle_tick` with NO_HZ_FULL CPUs and no timekeeper
    /// (`WARN_ON_ONCE(tick_cpu == TICK_DO_TIMER_NONE)`).
    NoTimekeeper,
    /// `tick_nohz_stop_tick` found the tick stopped at the expiry it wants, but the sched timer
    /// set elsewhere (the kernel's `WARN_ONCE` before reprogramming).
    TickNotProgrammed,
    /// `can_stop_idle_tick` found a softirq pending on the idle CPU (`report_idle_softirq`'s
    /// "NOHZ tick-stop error: local softirq work is pending"), and keeps the tick. Not for the
    /// hotplug-safe softirqs of a CPU going down, nor while bottom halves are blocked
    /// (PREEMPT_RT): there the kernel lets the tick stop without a word. The kernel prints only
    /// the first 10 (one limit for the whole system) and keeps the tick after that too (since
    /// 807e0d187da4, v6.18; v5.18 to v6.17 let it stop after the 10th); the limit only spares
    /// the console, so the crate counts every hit.
    IdleSoftirqPending,
    /// `tick_sched_do_timer` found the timekeeping duty orphaned (`tick_do_timer_cpu ==
    /// TICK_DO_TIMER_NONE`) while NO_HZ_FULL CPUs exist (`WARN_ON_ONCE(tick_nohz_full_running)`):
    /// their timekeeper should never have let it go. The ticking CPU takes the duty anyway.
    DoTimerOrphaned,
    /// `tick_nohz_next_event` got a next timer before its base time, the last jiffies update
    /// (`WARN_ON_ONCE(basemono > next_tick)`): the platform broke its contract. The timer
    /// counts as due at the base.
    NextTimerInPast,
    /// `tick_nohz_get_sleep_length` outside the idle section
    /// (`WARN_ON_ONCE(!tick_sched_flag_test(ts, TS_FLAG_INIDLE))`): its "now", the idle entry
    /// time, is stale there. It answers anyway.
    SleepLengthOutsideIdle,
}

impl Warning {
    /// Every kind, in declaration order.
    pub const ALL: [Warning; 17] = [
        Warning::StaticKeyEnableCount,
        Warning::StaticKeyDisableCount,
        Warning::StaticKeyIncOverflow,
        Warning::StaticKeyDecUnderflow,
        Warning::WrongCpu,
        Warning::CsdWithoutKick,
        Warning::BalanceWithoutStats,
        Warning::CsdBusy,
        Warning::CachedNextEvent,
        Warning::IdleExitOutsideIdle,
        Warning::OfflineCpuIdle,
        Warning::NoTimekeeper,
        Warning::TickNotProgrammed,
        Warning::IdleSoftirqPending,
        Warning::DoTimerOrphaned,
        Warning::NextTimerInPast,
        Warning::SleepLengthOutsideIdle,
    ];

    /// The kind's counter; the match is exhaustive, so a new kind cannot be left out here,
    /// and the check below keeps [`Warning::ALL`] in the same order.
    const fn slot(self) -> usize {
        match self {
            Warning::StaticKeyEnableCount => 0,
            Warning::StaticKeyDisableCount => 1,
            Warning::StaticKeyIncOverflow => 2,
            Warning::StaticKeyDecUnderflow => 3,
            Warning::WrongCpu => 4,
            Warning::CsdWithoutKick => 5,
            Warning::BalanceWithoutStats => 6,
            Warning::CsdBusy => 7,
            Warning::CachedNextEvent => 8,
            Warning::IdleExitOutsideIdle => 9,
            Warning::OfflineCpuIdle => 10,
            Warning::NoTimekeeper => 11,
            Warning::TickNotProgrammed => 12,
            Warning::IdleSoftirqPending => 13,
            Warning::DoTimerOrphaned => 14,
            Warning::NextTimerInPast => 15,
            Warning::SleepLengthOutsideIdle => 16,
        }
    }
}

const _: () = {
    let mut i = 0;
    while i < Warning::ALL.len() {
        assert!(Warning::ALL[i].slot() == i, "Warning::ALL out of order");
        i += 1;
    }
};

/// Where a warning is counted: something that takes a [`Warning`].
///
/// Implemented by [`WarnAt`] (a CPU's counter or the CPU-less one of a [`Warnings`] table);
/// primitives such as [`StaticKey`](crate::StaticKey) take one so the caller decides where
/// their warnings land.
pub trait WarnSink {
    /// Counts `warning`.
    fn warn(&self, warning: Warning);

    /// `WARN_ON(cond)`: counts `warning` if `cond`, and returns `cond` so the caller can go on
    /// exactly as the kernel does.
    #[inline]
    #[doc(alias = "WARN_ON")]
    #[doc(alias = "WARN_ON_ONCE")]
    fn warn_on(&self, cond: bool, warning: Warning) -> bool {
        if cond {
            cold_warn(self, warning);
        }
        cond
    }
}

#[cold]
#[inline(never)]
fn cold_warn<S: WarnSink + ?Sized>(sink: &S, warning: Warning) {
    sink.warn(warning);
}

/// Warning counters for a machine of capacity `N`.
#[derive(Debug)]
pub struct Warnings<const N: usize> {
    per_cpu: [AtomicU64; N],
    cpu_less: AtomicU64,
    by_kind: [AtomicU64; Warning::ALL.len()],
}

impl<const N: usize> Warnings<N> {
    crate::maybe_const_fn! {
        /// All counters zero.
        #[inline]
        pub fn new() -> Self {
            Warnings {
                per_cpu: atomic_array![AtomicU64::new(0); N],
                cpu_less: AtomicU64::new(0),
                by_kind: atomic_array![AtomicU64::new(0); Warning::ALL.len()],
            }
        }
    }

    /// A sink that counts against `cpu`.
    #[inline]
    pub fn at(&self, cpu: CpuId<N>) -> WarnAt<'_, N> {
        WarnAt {
            table: self,
            cpu: Some(cpu),
        }
    }

    /// A sink for contexts that are not on any CPU.
    #[inline]
    pub fn cpu_less(&self) -> WarnAt<'_, N> {
        WarnAt {
            table: self,
            cpu: None,
        }
    }

    /// Warnings counted against `cpu`.
    #[inline]
    pub fn on_cpu(&self, cpu: CpuId<N>) -> u64 {
        self.per_cpu[cpu.index()].load(Relaxed)
    }

    /// Warnings counted outside any CPU.
    #[inline]
    pub fn outside_cpus(&self) -> u64 {
        self.cpu_less.load(Relaxed)
    }

    /// Warnings of one kind, wherever counted.
    #[inline]
    pub fn of_kind(&self, kind: Warning) -> u64 {
        self.by_kind.get(kind.slot()).map_or(0, |c| c.load(Relaxed))
    }

    /// All warnings: the CPU-less ones plus those of every CPU below `nr_cpu_ids`.
    #[inline]
    pub fn total(&self, nr_cpu_ids: NrCpuIds<N>) -> u64 {
        nr_cpu_ids
            .iter()
            .map(|c| self.on_cpu(c))
            .fold(self.outside_cpus(), u64::wrapping_add)
    }
}

impl<const N: usize> Default for Warnings<N> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// A [`WarnSink`] bound to one CPU's counter, or to the CPU-less one.
#[derive(Debug, Clone, Copy)]
pub struct WarnAt<'a, const N: usize> {
    table: &'a Warnings<N>,
    cpu: Option<CpuId<N>>,
}

impl<const N: usize> WarnSink for WarnAt<'_, N> {
    fn warn(&self, warning: Warning) {
        let counter = match self.cpu {
            Some(cpu) => &self.table.per_cpu[cpu.index()],
            None => &self.table.cpu_less,
        };
        counter.fetch_add(1, Relaxed);
        // Always present (see `Warning::slot`); `get` keeps even a slip from panicking.
        if let Some(kind) = self.table.by_kind.get(warning.slot()) {
            kind.fetch_add(1, Relaxed);
        }
    }
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_per_cpu_cpu_less_and_kind() {
        let w = Warnings::<4>::new();
        let nr = NrCpuIds::<4>::new(3).unwrap();
        let c1 = nr.cpu(1).unwrap();
        assert!(!w.at(c1).warn_on(false, Warning::WrongCpu));
        assert_eq!(w.total(nr), 0);
        assert!(w.at(c1).warn_on(true, Warning::WrongCpu));
        w.at(c1).warn(Warning::WrongCpu);
        w.cpu_less().warn(Warning::StaticKeyDecUnderflow);
        assert_eq!(w.on_cpu(c1), 2);
        assert_eq!(w.on_cpu(nr.cpu(0).unwrap()), 0);
        assert_eq!(w.outside_cpus(), 1);
        assert_eq!(w.of_kind(Warning::WrongCpu), 2);
        assert_eq!(w.of_kind(Warning::StaticKeyDecUnderflow), 1);
        assert_eq!(w.of_kind(Warning::StaticKeyEnableCount), 0);
        assert_eq!(w.total(nr), 3);
    }

    #[test]
    fn every_kind_has_its_own_slot() {
        for (i, k) in Warning::ALL.iter().enumerate() {
            assert_eq!(k.slot(), i);
        }
    }
}
