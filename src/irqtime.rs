//! irq time accounting gated by `sched_clock_irqtime` (seed 003).
//!
//! C source: `kernel/sched/cputime.c` (`irqtime_account_irq`), `kernel/sched/sched.h` (`irqtime_enabled`), `kernel/sched/clock.c` (`sched_clock_irqtime`, `enable_sched_clock_irqtime`, `disable_sched_clock_irqtime`).
//!
//! # Design
//!
//! Every hardirq and softirq entry and exit calls `irqtime_account_irq`, which first asks
//! `irqtime_enabled()`. Before seed 003 that read a plain `int` that happened to share a cache
//! line with the `nohz` scalars, written on every idle entry and exit elsewhere: a coherence
//! miss per interrupt. [`Patched`](crate::Patched) reads a [`StaticKey`] on a
//! line of its own (`likely`: one relaxed load that hits); [`Legacy`](crate::Legacy) keeps the
//! plain flag *inside the `nohz` scalar line*, so the difference can be measured.
//!
//! The key is enabled when a fast enough sched_clock registers, from any context. Disabling
//! may sleep in the kernel (`static_branch_disable` takes the hotplug lock and a mutex), so
//! seed 003 moved it out of atomic context: it happens only in `sched_clock_init_late` (clock
//! found unstable early) and in the work item queued when a stable clock turns unstable. The
//! crate asks for a [`MaySleep`] context there, and disables only if still enabled (the merged
//! version of the seed).
//!
//! Each CPU's [`IrqTime`] record is written only by its CPU with interrupts off; remote readers
//! see each counter as of a recent moment.

use crate::cpu::{CpuId, PerCpu};
use crate::cpus::Cpus;
use crate::fair::Fair;
use crate::platform::MaySleep;
use crate::policy::Policy;
use crate::static_key::StaticKey;
use crate::sync::{AtomicU64, Ordering::Relaxed};

/// Which context's time ends at an accounting call (`irq_count() - offset` in the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrqContext {
    /// Task time (including idle): not irq time.
    Task,
    /// A hardirq handler: accounted as `CPUTIME_IRQ`.
    Hardirq,
    /// Softirq processing: accounted as `CPUTIME_SOFTIRQ`, unless it ran in this CPU's
    /// ksoftirqd thread (then it is that task's time).
    Softirq {
        /// The softirqs ran in ksoftirqd.
        in_ksoftirqd: bool,
    },
}

/// One CPU's `struct irqtime` plus its irq and softirq cputime.
#[doc(alias = "irqtime")]
#[derive(Debug)]
pub struct IrqTime {
    irq_start_time: AtomicU64,
    total: AtomicU64,
    tick_delta: AtomicU64,
    hardirq: AtomicU64,
    softirq: AtomicU64,
}

impl IrqTime {
    crate::maybe_const_fn! {
        /// Nothing accounted yet.
        pub fn new() -> Self {
            IrqTime {
                irq_start_time: AtomicU64::new(0),
                total: AtomicU64::new(0),
                tick_delta: AtomicU64::new(0),
                hardirq: AtomicU64::new(0),
                softirq: AtomicU64::new(0),
            }
        }
    }

    crate::base::accessors::relaxed_accessors! {
        /// `irq_time_read(cpu)`: all irq and softirq time so far (ns).
        #[doc(alias = "irq_time_read")]
        pub total: u64 = total;
        /// `kcpustat.cpustat[CPUTIME_IRQ]` from irqtime (ns).
        pub hardirq: u64 = hardirq;
        /// `kcpustat.cpustat[CPUTIME_SOFTIRQ]` from irqtime (ns).
        pub softirq: u64 = softirq;
        /// `irqtime->tick_delta`: irq time not yet folded into tick accounting (ns).
        pub tick_delta: u64 = tick_delta;
        /// When the current accounting period started (`irq_start_time`).
        pub irq_start_time: u64 = irq_start_time;
    }

    // Owner-only: a load and a store, as the kernel's per-CPU `+=`.
    #[inline]
    fn add(counter: &AtomicU64, delta: u64) {
        counter.store(counter.load(Relaxed).wrapping_add(delta), Relaxed);
    }
}

impl Default for IrqTime {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// The irq-time state of a machine of capacity `N` CPUs: every CPU's [`IrqTime`] record and
/// the `sched_clock_irqtime` key (`Legacy` keeps its plain flag in the `nohz` line instead).
/// The [`Machine`](crate::Machine) owns it.
#[derive(Debug)]
pub struct IrqTimes<const N: usize> {
    per_cpu: PerCpu<IrqTime, N>,
    sched_clock_irqtime: StaticKey,
}

impl<const N: usize> IrqTimes<N> {
    crate::maybe_const_fn! {
        /// Nothing accounted, the key off.
        pub(crate) fn new() -> Self {
            IrqTimes {
                per_cpu: crate::sync::per_cpu_array!(IrqTime::new(); N),
                sched_clock_irqtime: StaticKey::new_false(),
            }
        }
    }
}

impl<const N: usize> IrqTimes<N> {
    /// `irqtime_enabled()`: `static_branch_likely(&sched_clock_irqtime)` under `Patched`; the
    /// plain flag in the `nohz` line under `Legacy`.
    #[inline(always)]
    pub fn irqtime_enabled<P: Policy, const W: usize>(&self, fair: &Fair<P, N, W>) -> bool {
        if P::IRQTIME_STATIC_KEY {
            self.sched_clock_irqtime.likely()
        } else {
            fair.nohz().scalars.legacy_irqtime.load(Relaxed) != 0
        }
    }

    #[cfg(feature = "testing")]
    /// The `sched_clock_irqtime` key itself (`Patched`).
    #[inline]
    pub fn sched_clock_irqtime(&self) -> &crate::StaticKey {
        &self.sched_clock_irqtime
    }

    /// `enable_sched_clock_irqtime()`: at sched_clock registration (boot). Idempotent, and
    /// callable from any context, IRQs off and under spinlocks included.
    ///
    /// The kernel's `static_branch_enable` may sleep: it takes `cpus_read_lock` and
    /// `jump_label_mutex` because it rewrites the instruction at every branch site (a
    /// breakpoint-and-IPI text patch that must not race CPU hotplug). Its boot-time caller,
    /// `sched_clock_register`, runs with IRQs off and gets away with it only because the sleep
    /// check is suppressed in early boot. The crate's [`StaticKey`] patches no
    /// code: enabling is one compare-exchange of the key's count from 0 to 1, with no lock, no
    /// waiting on other CPUs and nothing that can sleep, so it is safe anywhere and asks for
    /// no [`MaySleep`] context (which would shut out that boot caller). What it gives up is the
    /// kernel's "every CPU runs the new branch once this returns": readers see the count with a
    /// `Relaxed` load, eventually, and irq time starts being accounted on each CPU from its next
    /// accounting call that sees it.
    ///
    /// **A CPU inside a handler as the key turns on** charges, at that handler's exit (its
    /// first accounting call), everything since its `irq_start_time` to hardirq time: since 0
    /// on a CPU that never accounted, which is its whole uptime, or since its last call before
    /// a disable. The crate mirrors the kernel here, deliberately: `irqtime_account_irq` takes
    /// `sched_clock_cpu() - irq_start_time` whatever the key was before, and enabling touches
    /// no CPU's record. The kernel never meets the case (it enables the key at boot, on the
    /// boot CPU with interrupts off, before other CPUs run, and never enables it again after
    /// a disable), and mending it would cost every interrupt a store (a per-CPU "key seen"
    /// mark) or make enabling a cross-CPU operation, where the key exists to make the
    /// interrupt path cost one load. An embedding enables the key at boot, before it takes
    /// interrupts, as kernels do; one that enables it later accepts one such charge on each
    /// CPU that is inside a handler at that moment.
    #[inline]
    pub fn enable_sched_clock_irqtime<P: Policy, const W: usize>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
    ) {
        if P::IRQTIME_STATIC_KEY {
            self.sched_clock_irqtime.enable(&cpus.warnings().cpu_less());
        } else {
            fair.nohz().scalars.legacy_irqtime.store(1, Relaxed);
        }
    }

    /// `disable_sched_clock_irqtime()`, only from a context that may sleep, and only if still
    /// enabled (so repeating it costs nothing and never warns).
    pub fn disable_sched_clock_irqtime<P: Policy, const W: usize>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        _may_sleep: &impl MaySleep,
    ) {
        if !self.irqtime_enabled(fair) {
            return;
        }
        if P::IRQTIME_STATIC_KEY {
            self.sched_clock_irqtime
                .disable(&cpus.warnings().cpu_less());
        } else {
            fair.nohz().scalars.legacy_irqtime.store(0, Relaxed);
        }
    }

    #[cfg(feature = "testing")]
    /// `sched_clock_init_late()`'s irqtime part (a late initcall, so it may sleep): a clock
    /// found unstable before this point will never run the unstable-clock work, so irqtime is
    /// disabled here.
    #[inline]
    pub fn sched_clock_init_late<P: Policy, const W: usize>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        clock_stable_early: bool,
        ctx: &impl MaySleep,
    ) {
        if !clock_stable_early {
            self.disable_sched_clock_irqtime(cpus, fair, ctx);
        }
    }

    #[cfg(feature = "testing")]
    /// `__sched_clock_work()`'s irqtime part: the work item queued when a stable sched_clock
    /// is declared unstable (process context) disables irqtime.
    #[doc(alias = "__sched_clock_work")]
    #[inline]
    pub fn sched_clock_work<P: Policy, const W: usize>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        ctx: &impl MaySleep,
    ) {
        self.disable_sched_clock_irqtime(cpus, fair, ctx);
    }

    /// `cpu`'s irq time record (`per_cpu(cpu_irqtime, cpu)`).
    #[doc(alias = "cpu_irqtime")]
    #[inline]
    pub fn irqtime(&self, cpu: CpuId<N>) -> &IrqTime {
        self.per_cpu.get(cpu)
    }

    /// `irqtime_account_irq(curr, offset)` on `cpu` at `now` (`sched_clock_cpu`): charges the
    /// time since the last call to the context that just `ended`, if it was a hardirq or
    /// softirq (not one run by ksoftirqd). Nothing at all while irqtime is disabled.
    #[inline]
    pub fn irqtime_account_irq<P: Policy, const W: usize>(
        &self,
        fair: &Fair<P, N, W>,
        cpu: CpuId<N>,
        ended: IrqContext,
        now: u64,
    ) {
        if !self.irqtime_enabled(fair) {
            return;
        }
        let t = self.irqtime(cpu);
        let delta = now.wrapping_sub(t.irq_start_time.load(Relaxed));
        IrqTime::add(&t.irq_start_time, delta);
        let bucket = match ended {
            IrqContext::Hardirq => &t.hardirq,
            IrqContext::Softirq {
                in_ksoftirqd: false,
            } => &t.softirq,
            IrqContext::Task | IrqContext::Softirq { in_ksoftirqd: true } => return,
        };
        IrqTime::add(bucket, delta);
        IrqTime::add(&t.total, delta);
        IrqTime::add(&t.tick_delta, delta);
    }
}
