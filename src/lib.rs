#![doc = include_str!("../README.md")]
//!
//! # Entry points
//!
//! A kernel declares one [`Machine`] as a `static`, implements the [`platform`] traits for a
//! type of its own (fourteen methods have no default), and calls the machine's entry points
//! from its interrupt handlers, scheduler and idle loop (the quick start above is a whole
//! embedding):
//!
//! | when | on which CPU, in which context | call |
//! |---|---|---|
//! | boot | the boot CPU, before anything else uses the machine | [`Machine::init`], then [`Machine::tick_nohz_full_setup`] for the NO_HZ_FULL CPUs, and [`Machine::enable_sched_clock_irqtime`] if irq time is accounted |
//! | a CPU's timer is set up (every CPU, the boot CPU too, and a CPU coming back) | that CPU, IRQs off | [`Machine::cpu_starting`] |
//! | the sched timer's interrupt | that CPU, IRQs off | [`Machine::timer_interrupt`] |
//! | the nohz kick IPI | the kicked CPU, IRQs off | [`Machine::kick_interrupt`] |
//! | any other interrupt (a device, a reschedule IPI) | that CPU, IRQs off | [`Machine::interrupt`] around its handler, or [`Machine::irq_enter`] first and [`Machine::irq_exit`] last |
//! | a task is queued, dequeued or moved; the CPU switches to or from its idle task | any CPU, under the kernel's run-queue lock | [`Machine::update_rq`] (the counts and the idle task together; a NO_HZ_FULL CPU's tick dependency follows them), and [`Rq::set_avg_idle`] if the kernel measures idle periods |
//! | a remote wakeup is queued on a CPU's wake list, and that CPU runs the list (`ttwu_queue`, `sched_ttwu_pending`) | the waking CPU sets it, the target clears it with IRQs off | [`Rq::set_ttwu_pending`] on the target's runqueue; a kernel that wakes tasks only on their own CPU never calls it. Missed, `idle_cpu()` reads the target as idle while its wakeup waits: the ILB may pick it and [`Machine::sched_balance_newidle`] goes on to pull for it |
//! | the scheduler recomputes a CPU's capacity left to CFS after RT, deadline and IRQ pressure (`update_cpu_capacity`) | any CPU, where the kernel's load balancer does it | [`Rq::set_cpu_capacity`]; a kernel without capacity tracking never calls it (a fresh runqueue is at full capacity). Missed, the busy tick's capacity test (`check_cpu_capacity`) never sees the pressure, and a CPU that lost much of its capacity asks for no balancing |
//! | a task that does not fit its CPU starts or stops running there (`update_misfit_status`, on an asymmetric-capacity machine) | that CPU, under its run-queue lock | [`Rq::set_misfit_task_load`] (nonzero: the task's load; 0: it fits); [`Machine::sched_balance_newidle`] clears it itself. Missed, the busy tick on an asymmetric machine never kicks for a misfit task, so it stays on a CPU too small for it until the periodic balance |
//! | nothing left to run | that CPU, IRQs off | [`Machine::sched_balance_newidle`]; if it pulled nothing, [`Machine::do_idle`] until it returns |
//! | the cpuidle governor weighs idle states ([`platform::IdleHooks::cpuidle_select`], inside `do_idle`) | that CPU, IRQs off | [`Machine::tick_nohz_get_sleep_length`], or the `sleep` handle `cpuidle_select` gets (the same call) |
//! | something else needs a NO_HZ_FULL CPU's tick (a timer, perf) | any CPU | [`Machine::tick_dep_set_cpu`] / [`Machine::tick_dep_clear_cpu`] |
//! | taking a CPU down | its hotplug thread (may sleep), then the CPU itself in stop-machine | [`Machine::sched_cpu_deactivate`], [`Machine::cpu_dying`] |
//! | bringing it back | the CPU itself, then its hotplug thread | [`Machine::cpu_starting`], [`Machine::sched_cpu_activate`] |
//!
//! A NO_HZ_FULL CPU that idled and then runs one task with its tick stopped stays in the idle
//! mask until its next busy tick, as in the kernel (only a busy tick takes a CPU out; the
//! balancer skips it meanwhile, since it is not idle).
//!
//! # How it is built
//!
//! - **The embedding contract** is what this page lists: [`Machine`]'s entry points, the
//!   [`platform`] traits a kernel implements, and the types they mention. Everything else is
//!   internal.
//! - **The kernel paths** mirror one kernel file each, so a reader holding the C finds the
//!   Rust from the C name ([`c_names`] is the whole table): `src/fair/` (fair.c's NOHZ part
//!   and topology.c's per-LLC state), `src/sched_core/` (core.c's scheduler-tick tail, the
//!   csd handler, the hotplug steps), `src/tick_sched/` (tick-sched.c), `src/idle.rs`
//!   (idle.c's `do_idle`), `src/irqtime.rs` (cputime.c's irq time), and `src/embed/` (the
//!   kernel's order around them: irq entry and exit, the timer and IPI interrupts).
//! - **Policies** choose the kernel version at compile time, at zero cost ([`Policy`]). The
//!   seeds' own diffs are inline in the kernel paths; what the kernel does not have (`Scalable`,
//!   feature `scalable`; `Sharded`, feature `sharded`; `Paced`, feature `paced`) enters them
//!   through two hooks, the idle set and the `nohz` line, each bringing its own state, and lives
//!   in `src/beyond/`, which a build without those features does not compile.
//! - **One source of atomics.** Every atomic and fence comes from the internal `sync` module.
//!   Every ordering stronger than `Relaxed` is a named site that says what it pairs with and
//!   what it forbids; loom builds (`--cfg nohz_loom`, crate `loom-tests`) can weaken each one
//!   to prove it is needed.
//! - **The primitives**: [`CpuId`] (checked against its machine's `nr_cpu_ids`, so in a
//!   kernel an invalid CPU is unrepresentable), [`PerCpu`] (one cache-padded slot per CPU),
//!   [`CpuMask`] (an atomic bitmap whose scans are shaped for cache lines), [`Jiffies`]
//!   (wrap-safe time), [`StaticKey`] (a count on a line of its own), [`Warnings`] (the
//!   kernel's `WARN_ON`, counted instead of printed).

//! # Footprint
//!
//! A machine is one `static`; every field of a fresh machine is zero, so it lands in `.bss`
//! and costs a kernel image nothing (`ci/guards.sh` checks it, T11). Its size grows by about
//! 905 bytes per CPU of capacity (each CPU's runqueue, `tick_sched`, irq-time record and LLC
//! slot on lines of their own), measured on x86-64 (128-byte lines):
//!
//! | `NR_CPUS` | `size_of::<Machine<P, N, W>>()` |
//! |---|---|
//! | 8 | 8,832 bytes |
//! | 64 | 59,520 bytes |
//! | 256 | 233,088 bytes |
//! | 1024 | 927,360 bytes |
//! | 8192 | 7,411,712 bytes |
//!
//! `Legacy` and `Scalable` are the same size (`Scalable`'s kick deadline shares the `nohz`
//! scalar line); `Sharded` adds its shard words and tables, and each CPU's place in the shards
//! on a line beside its runqueue (128 bytes a CPU).
//!
//! **Targets.** Any target with 64-bit atomics (`target_has_atomic = "64"`; elsewhere the
//! crate refuses to build with a message saying so). `CachePadded` pads to 128 bytes on
//! x86-64 and aarch64 and to the line size crossbeam documents elsewhere.
//!
//! # Layout
//!
//! False sharing is what two of the three seeds fix, so layout is a tested property: masks,
//! per-CPU slots, static keys and the jiffies counter each occupy whole [`CachePadded`] lines
//! (128 bytes on x86-64 and aarch64), checked at compile time against `CachePadded`'s alignment
//! so the checks stay right on every target.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

#[cfg(not(target_has_atomic = "64"))]
compile_error!(
    "nohz needs 64-bit atomics (AtomicU64: the cpumask words, the kick deadline, the tick-side \
     times); this target has none"
);

#[cfg(all(nohz_loom, not(feature = "loom")))]
compile_error!("--cfg nohz_loom needs the `loom` feature: run loom through `-p loom-tests`");

#[cfg(any(nohz_loom, nohz_probe, nohz_linecount, test))]
extern crate std;

mod base;
#[cfg(any(feature = "scalable", feature = "posted", feature = "paced"))]
mod beyond;
pub mod c_names {
    #![doc = include_str!("c_names.md")]
    // The C names of the internal functions the table lists, so the docs' search finds this page.
    #![doc(alias(
        "msecs_to_jiffies",
        "MAX_JIFFY_OFFSET",
        "LOAD_AVG_PERIOD",
        "cpu_active",
        "cpu_active_mask",
        "set_cpu_active",
        "cpu_online",
        "cpu_online_mask",
        "set_cpu_online",
        "nohz",
        "idle_cpus_mask",
        "has_blocked_load",
        "needs_update",
        "next_balance",
        "next_blocked",
        "nr_cpus",
        "housekeeping_cpumask",
        "sched_asym_cpucapacity",
        "sched_asym_cpucap_active",
        "nohz_balance_enter_idle",
        "nohz_balance_exit_idle",
        "set_cpu_sd_state_idle",
        "set_cpu_sd_state_busy",
        "sched_tick",
        "sched_balance_trigger",
        "nohz_balancer_kick",
        "check_cpu_capacity",
        "kick_ilb",
        "find_new_ilb",
        "nohz_csd_func",
        "nohz_idle_balance",
        "_nohz_idle_balance",
        "update_nohz_stats",
        "sched_balance_update_blocked_averages",
        "__sched_balance_update_blocked_averages",
        "update_blocked_load_status",
        "nohz_newidle_balance",
        "nohz_run_idle_balance",
        "tick_nohz_cpu_hotpluggable",
        "local_softirq_pending",
        "tick_nohz_tick_stopped",
        "tick_nohz_tick_stopped_cpu",
        "tick_do_timer_cpu",
        "tick_nohz_full_mask",
        "tick_nohz_full_cpu",
        "tick_nohz_idle_enter",
        "tick_nohz_idle_exit",
        "tick_nohz_start_idle",
        "tick_nohz_stop_idle",
        "tick_nohz_account_idle_time",
        "tick_nohz_next_event",
        "tick_nohz_stop_tick",
        "tick_nohz_idle_stop_tick",
        "tick_nohz_idle_retain_tick",
        "tick_nohz_get_sleep_length",
        "tick_nohz_idle_restart_tick",
        "tick_nohz_restart_sched_tick",
        "tick_nohz_irq_enter",
        "tick_nohz_irq_exit",
        "can_stop_idle_tick",
        "report_idle_softirq",
        "can_stop_full_tick",
        "tick_nohz_full_stop_tick",
        "__tick_nohz_full_update_tick",
        "tick_nohz_full_update_tick",
        "tick_nohz_handler",
        "tick_sched_timer",
        "tick_sched_do_timer",
        "tick_sched_handle",
        "do_idle",
        "cpuidle_idle_call",
        "sched_clock_irqtime",
        "irqtime_enabled",
        "sched_clock_init_late",
        "__sched_clock_work",
        "irqtime_account_irq",
    ))]
    // What the table's links name. It names internal items too: those are plain code.
    #[allow(unused_imports)]
    use crate::platform::{Balance, Clock, IdleHooks, TickHardware, Topology};
    #[allow(unused_imports)]
    use crate::*;
}
mod embed;
mod fair;
mod idle;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod internals;
mod irqtime;
mod machine;
pub mod platform;
mod policy;
mod sched_core;
mod tick_sched;

// The atomics shim and the named ordering sites: for the test rigs, the loom models and the
// benches only (feature `testing`, hidden from the docs).
#[cfg(not(feature = "testing"))]
pub(crate) use base::sync;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use base::sync;
pub(crate) use base::{cpu, cpumask, cpus, jiffies, static_key, warn};

#[cfg(feature = "paced")]
pub use beyond::paced::{IDLE_HOLD_JIFFIES, Paced};
#[cfg(feature = "posted")]
pub use beyond::posted::{
    HegdeHk, KHAN_IDLE_CPUS_PER_JIFFY, Khan, KhanNextBalance, KhanRoundRobin,
};
#[cfg(feature = "scalable")]
pub use beyond::scalable::Scalable;
#[cfg(feature = "sharded")]
pub use beyond::sharded::Sharded;
pub use cpu::{CpuError, CpuId, MAX_CPUS, NrCpuIds, PerCpu};
pub use cpumask::CpuMask;
pub use crossbeam_utils::CachePadded;
pub use embed::TimerTick;
pub use fair::rq::{NohzFlags, Rq, RqFacts};
pub use fair::{KickDecision, KickOutcome, SCHED_MIGRATION_COST_NS, TopologyError};
pub use idle::IdleExit;
pub use irqtime::IrqTime;
pub use jiffies::{Jiffies, JiffiesCell, Timekeeper};
pub use machine::{InitError, Machine};
pub use platform::Platform;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use policy::Seed000;
pub use policy::{Legacy, Patched, Policy};
pub use sched_core::HotplugError;
pub use static_key::{StaticKey, StaticKeyError};
pub use tick_sched::{NohzFullError, TICK_DEP_SCHED, TickSched, TsFlags};
pub use warn::{WarnAt, WarnSink, Warning, Warnings};

// What only test rigs need (feature `testing`, hidden from the docs).
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use fair::rq::AtomicNohzFlags;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use fair::{IlbPass, Nohz};
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use irqtime::IrqContext;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use jiffies::{LOAD_AVG_PERIOD_MS, MAX_JIFFY_OFFSET, msecs_to_jiffies};

/// The `Sharded` policy's configuration (feature `sharded`): what a kernel choosing
/// [`Sharded`] names besides it: the shard layouts, the ILB orders, the emptiness modes, the
/// error a refused shard map reports, and the limits.
#[cfg(feature = "sharded")]
pub mod sharded {
    pub use crate::beyond::sharded::{
        ByLlc, Contiguous, Emptiness, Hint, IlbOrder, LocalFirst, LowestId, MAX_SHARD_CPUS,
        MAX_SHARDS, Placement, ShardLayout, ShardMapError, Validated,
    };
}

/// Mask words for a machine of capacity `cpus` CPUs (`NR_CPUS`): one 64-bit word per 64 CPUs,
/// rounded up. Stable Rust cannot compute an array length from a generic parameter, so the
/// machine's masks are sized in words; this computes them once, for a concrete capacity.
///
/// ```
/// assert_eq!(nohz::mask_words(1), 1);
/// assert_eq!(nohz::mask_words(64), 1);
/// assert_eq!(nohz::mask_words(65), 2);
/// assert_eq!(nohz::mask_words(8192), 128);
/// ```
pub const fn mask_words(cpus: usize) -> usize {
    cpus.div_ceil(64)
}

/// The [`Machine`](crate::Machine) type for policy `$policy` and a capacity of `$cpus` CPUs, its mask words
/// computed by [`mask_words`]: how an embedder declares the machine in one line.
///
/// ```
/// use nohz::{Machine, Patched};
/// const NR_CPUS: usize = 256;
/// static MACHINE: nohz::machine!(Patched, NR_CPUS) = Machine::new();
/// assert_eq!(MACHINE.nr_cpu_ids().get(), 0); // until init()
/// let _: &Machine<Patched, 256, 4> = &MACHINE;
/// ```
#[macro_export]
#[doc(alias = "NR_CPUS")]
macro_rules! machine {
    ($policy:ty, $cpus:expr) => {
        $crate::Machine<$policy, { $cpus }, { $crate::mask_words($cpus) }>
    };
}

/// Compile-time layout checks: every shared object fills whole `CachePadded` lines, whatever
/// the target's line size.
mod layout {
    use super::*;
    use core::mem::{align_of, size_of};
    use static_assertions::const_assert_eq;

    const LINE: usize = align_of::<CachePadded<u8>>();

    // The mask: its words packed, the whole mask on lines of its own.
    const_assert_eq!(align_of::<CpuMask<1>>(), LINE);
    const_assert_eq!(size_of::<CpuMask<1>>() % LINE, 0);
    const_assert_eq!(size_of::<CpuMask<128>>(), 1024usize.div_ceil(LINE) * LINE);
    const_assert_eq!(align_of::<CpuMask<128>>(), LINE);

    // Per-CPU slots: each a whole number of lines, so neighbours never share one.
    const_assert_eq!(align_of::<PerCpu<u8, 4>>(), LINE);
    const_assert_eq!(size_of::<PerCpu<u8, 4>>(), 4 * LINE);
    const_assert_eq!(size_of::<PerCpu<[u64; 20], 2>>() % LINE, 0);
    const_assert_eq!(
        size_of::<PerCpu<[u64; 20], 2>>(),
        2 * size_of::<CachePadded<[u64; 20]>>()
    );

    // The footprint table of the crate docs (x86-64: 128-byte lines; loom's atomics are
    // larger).
    #[cfg(all(target_arch = "x86_64", not(nohz_loom)))]
    const _: () = {
        assert!(size_of::<machine!(Patched, 8)>() == 8_832);
        assert!(size_of::<machine!(Patched, 64)>() == 59_520);
        assert!(size_of::<machine!(Patched, 256)>() == 233_088);
        assert!(size_of::<machine!(Patched, 1024)>() == 927_360);
        assert!(size_of::<machine!(Legacy, 8192)>() == 7_411_712);
    };
    #[cfg(all(target_arch = "x86_64", not(nohz_loom), feature = "scalable"))]
    const _: () = assert!(size_of::<machine!(Scalable, 256)>() == 233_088);

    // Static keys and the jiffies counter: exactly one line each.
    const_assert_eq!(size_of::<StaticKey>(), LINE);
    const_assert_eq!(align_of::<StaticKey>(), LINE);
    const_assert_eq!(size_of::<JiffiesCell>(), LINE);
    const_assert_eq!(align_of::<JiffiesCell>(), LINE);
    const_assert_eq!(size_of::<Timekeeper<1000>>(), LINE);
    const_assert_eq!(align_of::<Timekeeper<1000>>(), LINE);
}
