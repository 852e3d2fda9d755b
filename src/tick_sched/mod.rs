//! tick-sched: the per-CPU tickless-idle state machine (`struct tick_sched`), with seed 001.
//!
//! C source: `kernel/time/tick-sched.c`, `kernel/time/tick-sched.h` (`struct tick_sched`, `tick_nohz_idle_stop_tick`, `tick_nohz_stop_tick`, `tick_nohz_next_event`, `can_stop_idle_tick`, `tick_sched_timer`, `tick_cpu_dying`, ...).
//!
//! # Design
//!
//! Each CPU's [`TickSched`] is written only by that CPU with interrupts off, as in the kernel
//! (whose fields are plain, modified by non-atomic RMWs). Here every field is a `Relaxed`
//! atomic: on x86 and arm64 that is a plain load or store, and it makes the racy remote reads
//! (`tick_nohz_tick_stopped_cpu()`, idle-time statistics) defined. A remote reader gets each
//! field as of some recent moment, not a consistent snapshot of several: [`TickSched::flags`]
//! for "is the tick stopped", and [`TickSched::idle_sleeptime`] & co. for statistics, which can
//! lag by one idle period.
//!
//! `TS_FLAG_STOPPED` is set in one place only, [`Machine::tick_nohz_stop_tick`](crate::Machine::tick_nohz_stop_tick) (`tick_nohz_stop_tick`),
//! and only when the timer base agrees to go idle; once set, `tick_nohz_next_event` never
//! returns 0 ("keep ticking"), so every later stop attempt goes through the stop path. Seed 001
//! depends on that: under [`Patched`](crate::Patched) the idle path calls
//! `nohz_balance_enter_idle` whenever the tick *ends up* stopped, including a tick that a
//! NO_HZ_FULL CPU stopped earlier while it ran a task; under [`Legacy`](crate::Legacy) only on
//! the pass that stopped it, leaving such a CPU invisible to the idle balancer.
//!
//! Hardware (the one-shot timer, the timer wheel, timekeeping) is behind
//! [`TickHardware`](crate::platform::TickHardware).

use crate::cpu::CpuId;
use crate::cpu::{NrCpuIds, PerCpu};
use crate::cpumask::CpuMask;
use crate::cpus::Cpus;
use crate::fair::Fair;
use crate::jiffies::Jiffies;
use crate::platform::{KTIME_MAX, SleepLength, TickPlatform, softirq, tick_nsec};
use crate::policy::Policy;
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use crate::warn::{WarnSink, Warning};
use crossbeam_utils::CachePadded;

bitflags::bitflags! {
    /// `TS_FLAG_*`: the tick-sched state bits (spec §7.1).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct TsFlags: u32 {
        /// `TS_FLAG_INIDLE`: inside the idle loop's tick-idle section.
        #[doc(alias = "TS_FLAG_INIDLE")]
        const INIDLE = 1 << 0;
        /// `TS_FLAG_STOPPED`: the periodic tick is stopped (idle or full dynticks).
        #[doc(alias = "TS_FLAG_STOPPED")]
        const STOPPED = 1 << 1;
        /// `TS_FLAG_IDLE_ACTIVE`: idle time is being accumulated now.
        #[doc(alias = "TS_FLAG_IDLE_ACTIVE")]
        const IDLE_ACTIVE = 1 << 2;
        /// `TS_FLAG_DO_TIMER_LAST`: this CPU was the last timekeeper before stopping.
        #[doc(alias = "TS_FLAG_DO_TIMER_LAST")]
        const DO_TIMER_LAST = 1 << 3;
        /// `TS_FLAG_NOHZ`: NO_HZ mode is active on this CPU.
        #[doc(alias = "TS_FLAG_NOHZ")]
        const NOHZ = 1 << 4;
        /// `TS_FLAG_HIGHRES`: the tick is emulated by a high-resolution timer.
        #[doc(alias = "TS_FLAG_HIGHRES")]
        const HIGHRES = 1 << 5;
    }
}

/// Why [`Machine::tick_nohz_full_setup`](crate::Machine::tick_nohz_full_setup) refused; nothing
/// was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NohzFullError {
    /// The machine has not booted ([`Machine::init`](crate::Machine::init)).
    NotBooted,
    /// A CPU index the machine does not have.
    NoSuchCpu(crate::cpu::CpuError),
    /// The CPU keeps time (the boot CPU, right after init): it must stay a housekeeping CPU
    /// (the kernel's `housekeeping_setup` keeps the boot CPU out of `nohz_full=`).
    Timekeeper {
        /// The CPU.
        cpu: usize,
    },
    /// No housekeeping CPU would be left.
    NoHousekeeping,
}

impl core::fmt::Display for NohzFullError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            NohzFullError::NotBooted => write!(f, "the machine has not booted: call init first"),
            NohzFullError::NoSuchCpu(e) => write!(f, "nohz_full: {e}"),
            NohzFullError::Timekeeper { cpu } => write!(
                f,
                "CPU {cpu} keeps time and must stay a housekeeping CPU, not NO_HZ_FULL"
            ),
            NohzFullError::NoHousekeeping => {
                write!(f, "nohz_full would leave no housekeeping CPU")
            }
        }
    }
}

impl core::error::Error for NohzFullError {}

/// `TICK_DO_TIMER_NONE`: no CPU owns the jiffies update. The word holds the owner's index
/// plus one, so "nobody" is 0 and a fresh machine is all zeros (a `static` of it lands in
/// `.bss`).
const TICK_DO_TIMER_NONE: u32 = 0;

/// The `tick_do_timer_cpu` word's value for `cpu` owning the duty.
#[inline(always)]
fn do_timer_word<const N: usize>(cpu: CpuId<N>) -> u32 {
    cpu.index() as u32 + 1
}

/// One CPU's `struct tick_sched`.
#[doc(alias = "tick_sched")]
#[derive(Debug)]
pub struct TickSched {
    flags: AtomicU32,
    last_jiffies: AtomicUsize,
    idle_jiffies: AtomicUsize,
    idle_calls: AtomicU64,
    idle_sleeps: AtomicU64,
    idle_expires: AtomicU64,
    timer_expires: AtomicU64,
    timer_expires_base: AtomicU64,
    next_timer: AtomicU64,
    next_tick: AtomicU64,
    last_tick: AtomicU64,
    idle_entrytime: AtomicU64,
    idle_waketime: AtomicU64,
    idle_exittime: AtomicU64,
    idle_sleeptime: AtomicU64,
    iowait_sleeptime: AtomicU64,
    tick_dep_mask: AtomicU32,
    last_tick_jiffies: AtomicUsize,
    stalled_jiffies: AtomicU32,
}

impl TickSched {
    /// `MAX_STALLED_JIFFIES`: how many of a CPU's ticks may see the same jiffies, after the
    /// one that first saw them, before that CPU updates jiffies itself (`tick_sched_do_timer`'s
    /// stall fallback, kernels since v5.18: a1ff03cd6fb9, 2022).
    pub const MAX_STALLED_JIFFIES: u32 = 5;

    crate::maybe_const_fn! {
        /// All zero: periodic tick, NO_HZ not yet active.
        pub fn new() -> Self {
            TickSched {
                flags: AtomicU32::new(0),
                last_jiffies: AtomicUsize::new(0),
                idle_jiffies: AtomicUsize::new(0),
                idle_calls: AtomicU64::new(0),
                idle_sleeps: AtomicU64::new(0),
                idle_expires: AtomicU64::new(0),
                timer_expires: AtomicU64::new(0),
                timer_expires_base: AtomicU64::new(0),
                next_timer: AtomicU64::new(0),
                next_tick: AtomicU64::new(0),
                last_tick: AtomicU64::new(0),
                idle_entrytime: AtomicU64::new(0),
                idle_waketime: AtomicU64::new(0),
                idle_exittime: AtomicU64::new(0),
                idle_sleeptime: AtomicU64::new(0),
                iowait_sleeptime: AtomicU64::new(0),
                tick_dep_mask: AtomicU32::new(0),
                last_tick_jiffies: AtomicUsize::new(0),
                stalled_jiffies: AtomicU32::new(0),
            }
        }
    }

    /// `ts->flags`.
    #[inline]
    pub fn flags(&self) -> TsFlags {
        TsFlags::from_bits_retain(self.flags.load(Relaxed))
    }

    /// `tick_nohz_tick_stopped_cpu(cpu)`: the tick is stopped.
    #[doc(alias = "tick_nohz_tick_stopped_cpu")]
    #[inline]
    pub fn tick_stopped(&self) -> bool {
        self.flags().contains(TsFlags::STOPPED)
    }

    #[inline]
    fn test(&self, f: TsFlags) -> bool {
        self.flags().contains(f)
    }
    // Owner-only read-modify-writes: a load and a store, as the kernel's non-atomic RMW.
    #[inline]
    fn set(&self, f: TsFlags) {
        self.flags
            .store(self.flags.load(Relaxed) | f.bits(), Relaxed);
    }
    #[inline]
    fn clear(&self, f: TsFlags) {
        self.flags
            .store(self.flags.load(Relaxed) & !f.bits(), Relaxed);
    }
    #[inline]
    fn bump(counter: &AtomicU64) {
        counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
    }

    crate::base::accessors::relaxed_accessors! {
        /// `ts->last_jiffies`: jiffies when the next event was last computed.
        pub last_jiffies: Jiffies = last_jiffies;
        /// `ts->idle_jiffies`: jiffies at the stop transition (tick-based idle accounting).
        pub idle_jiffies: Jiffies = idle_jiffies;
        /// `ts->idle_calls`: idle-loop stop attempts that got past the "can stop" checks.
        pub idle_calls: u64 = idle_calls;
        /// `ts->idle_sleeps`: attempts that went to the stop path (counted even when the timer
        /// base kept the tick running).
        pub idle_sleeps: u64 = idle_sleeps;
        /// `ts->idle_expires`: the expiry of the last stop attempt.
        pub idle_expires: u64 = idle_expires;
        /// `ts->timer_expires`: the last computed next event (0: keep ticking).
        pub timer_expires: u64 = timer_expires;
        /// `ts->timer_expires_base`: nonzero while a next-event computation is cached.
        pub timer_expires_base: u64 = timer_expires_base;
        /// `ts->next_timer`: the next timer expiry seen.
        pub next_timer: u64 = next_timer;
        /// `ts->next_tick`: the expiry the stopped tick is programmed for (0: none).
        pub next_tick: u64 = next_tick;
        /// `ts->last_tick`: the periodic tick's expiry saved at the first stop.
        pub last_tick: u64 = last_tick;
        /// `ts->idle_entrytime`.
        pub idle_entrytime: u64 = idle_entrytime;
        /// `ts->idle_waketime`.
        pub idle_waketime: u64 = idle_waketime;
        /// `ts->idle_exittime`.
        pub idle_exittime: u64 = idle_exittime;
        /// `ts->idle_sleeptime`: idle time accumulated, not counting iowait.
        pub idle_sleeptime: u64 = idle_sleeptime;
        /// `ts->iowait_sleeptime`: idle time accumulated while tasks waited on I/O.
        pub iowait_sleeptime: u64 = iowait_sleeptime;
        /// `ts->last_tick_jiffies`: the jiffies this CPU's tick last saw move.
        pub last_tick_jiffies: Jiffies = last_tick_jiffies;
        /// `ts->stalled_jiffies`: this CPU's ticks since then that saw the same jiffies.
        pub stalled_jiffies: u32 = stalled_jiffies;
    }

    /// `tick_sched_timer_dying`'s reset: every field back to [`TickSched::new`]'s zero but
    /// the idle statistics (`idle_sleeptime`, `iowait_sleeptime`, `idle_calls`,
    /// `idle_sleeps`), which outlive the CPU's death.
    fn reset_keeping_idle_stats(&self) {
        self.flags.store(0, Relaxed);
        self.last_jiffies.store(0, Relaxed);
        self.idle_jiffies.store(0, Relaxed);
        self.last_tick_jiffies.store(0, Relaxed);
        self.stalled_jiffies.store(0, Relaxed);
        self.tick_dep_mask.store(0, Relaxed);
        for field in [
            &self.idle_expires,
            &self.timer_expires,
            &self.timer_expires_base,
            &self.next_timer,
            &self.next_tick,
            &self.last_tick,
            &self.idle_entrytime,
            &self.idle_waketime,
            &self.idle_exittime,
        ] {
            field.store(0, Relaxed);
        }
    }

    /// `ts->tick_dep_mask`: this CPU's tick dependencies.
    #[inline]
    pub fn tick_dep_mask(&self) -> u32 {
        self.tick_dep_mask.load(Relaxed)
    }

    crate::base::accessors::testing_pub! {
        /// Sets `bits` in [`tick_dep_mask`](Self::tick_dep_mask) (any CPU may call); the
        /// embedding calls [`Machine::tick_dep_set_cpu`](crate::Machine::tick_dep_set_cpu).
        #[inline]
        fn tick_dep_set_cpu(&self, bits: u32) {
            self.tick_dep_mask.fetch_or(bits, Relaxed);
        }
    }

    crate::base::accessors::testing_pub! {
        /// Clears `bits` in [`tick_dep_mask`](Self::tick_dep_mask); the embedding calls
        /// [`Machine::tick_dep_clear_cpu`](crate::Machine::tick_dep_clear_cpu).
        #[inline]
        fn tick_dep_clear_cpu(&self, bits: u32) {
            self.tick_dep_mask.fetch_and(!bits, Relaxed);
        }
    }
}

impl Default for TickSched {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// `TICK_DEP_BIT_SCHED`: the scheduler needs the tick on this CPU (more than one runnable
/// CFS task, a deadline task, ...).
#[doc(alias = "TICK_DEP_BIT_SCHED")]
pub const TICK_DEP_SCHED: u32 = 1 << 2;

/// tick-sched's machine-wide words: read on every idle stop attempt, written rarely.
#[derive(Debug)]
struct TickGlobals {
    /// `tick_do_timer_cpu`, as the owner's index plus one ([`TICK_DO_TIMER_NONE`]: nobody).
    do_timer_cpu: AtomicU32,
    /// The global `tick_dep_mask`.
    tick_dep_mask: AtomicU32,
}

/// tick-sched's state of a machine of capacity `N` CPUs (masks of `W` words): every CPU's
/// [`TickSched`], `tick_nohz_full_mask`, `tick_do_timer_cpu` and the global tick dependency
/// mask. The [`Machine`](crate::Machine) owns it; its paths take the machine's [`Cpus`] (and,
/// where they call into fair.c, its [`Fair`]) as parameters.
#[derive(Debug)]
pub struct Ticks<const N: usize, const W: usize> {
    ticks: PerCpu<TickSched, N>,
    nohz_full: CpuMask<W>,
    globals: CachePadded<TickGlobals>,
}

impl<const N: usize, const W: usize> Ticks<N, W> {
    crate::maybe_const_fn! {
        /// Every CPU ticking periodically, no NO_HZ_FULL CPU, nobody keeping time.
        pub(crate) fn new() -> Self {
            Ticks {
                ticks: crate::sync::per_cpu_array!(TickSched::new(); N),
                nohz_full: CpuMask::new(),
                globals: CachePadded::new(TickGlobals {
                    do_timer_cpu: AtomicU32::new(TICK_DO_TIMER_NONE),
                    tick_dep_mask: AtomicU32::new(0),
                }),
            }
        }
    }
}

impl<const N: usize, const W: usize> Ticks<N, W> {
    /// The CPU that owns the jiffies update (`tick_do_timer_cpu`), if any.
    #[inline]
    pub fn tick_do_timer_cpu(&self, nr: NrCpuIds<N>) -> Option<CpuId<N>> {
        let word = self.globals.do_timer_cpu.load(Relaxed) as usize;
        nr.cpu(word.wrapping_sub(1)).ok()
    }

    /// Makes `cpu` the timekeeper (boot: the boot CPU), or nobody.
    #[inline]
    pub fn set_tick_do_timer_cpu(&self, cpu: Option<CpuId<N>>) {
        self.globals
            .do_timer_cpu
            .store(cpu.map_or(TICK_DO_TIMER_NONE, do_timer_word), Relaxed);
    }

    /// `tick_dep_set(bit)`: a machine-wide tick dependency (`tick_dep_mask`).
    #[inline]
    pub fn tick_dep_set(&self, bits: u32) {
        self.globals.tick_dep_mask.fetch_or(bits, Relaxed);
    }

    /// `tick_dep_clear(bit)`.
    #[inline]
    pub fn tick_dep_clear(&self, bits: u32) {
        self.globals.tick_dep_mask.fetch_and(!bits, Relaxed);
    }

    /// `tick_nohz_cpu_hotpluggable(cpu)`: `cpu` may go offline. Not the timekeeper while
    /// NO_HZ_FULL CPUs exist: it keeps time (and the housekeeping work) on their behalf.
    /// [`sched_cpu_deactivate`](crate::Machine::sched_cpu_deactivate) checks it before changing anything.
    #[inline]
    pub fn tick_nohz_cpu_hotpluggable(&self, cpus: &Cpus<N, W>, cpu: CpuId<N>) -> bool {
        self.nohz_full.is_empty(cpus.nr_cpu_ids())
            || self.globals.do_timer_cpu.load(Relaxed) != do_timer_word(cpu)
    }

    /// `tick_cpu_dying(cpu)` with `tick_sched_timer_dying(cpu)`, on the dying CPU in
    /// stop-machine (run by [`cpu_dying`](Self::cpu_dying)): hands the timekeeping duty to the
    /// lowest other active CPU if `cpu` has it, cancels `cpu`'s sched timer and resets its
    /// `tick_sched`, keeping the idle statistics.
    #[doc(alias = "tick_sched_timer_dying")]
    pub(crate) fn tick_cpu_dying<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        let globals = &self.globals;
        if globals.do_timer_cpu.load(Relaxed) == do_timer_word(cpu) {
            let successor = cpus
                .active_mask()
                .iter(cpus.nr_cpu_ids())
                .find(|&other| other != cpu);
            self.set_tick_do_timer_cpu(successor);
        }
        // tick_sched_timer_dying: the timer goes before the state it belongs to.
        plat.cancel_tick(cpu);
        self.tick_sched(cpu).reset_keeping_idle_stats();
    }

    #[cfg(feature = "testing")]
    /// `tick_nohz_full_mask`: the NO_HZ_FULL CPUs (`nohz_full=`). Set them at boot, and take
    /// them out of [`housekeeping`](crate::Machine::housekeeping) too.
    #[doc(alias = "tick_nohz_full_mask")]
    #[inline]
    pub fn nohz_full(&self) -> &crate::CpuMask<W> {
        &self.nohz_full
    }

    /// `tick_nohz_full_mask` for the boot-time setup.
    #[inline]
    pub(crate) fn nohz_full_mask(&self) -> &crate::CpuMask<W> {
        &self.nohz_full
    }

    /// `tick_nohz_full_cpu(cpu)`.
    #[inline]
    pub fn tick_nohz_full_cpu(&self, cpu: CpuId<N>) -> bool {
        self.nohz_full.test(cpu)
    }

    /// `cpu`'s `struct tick_sched`.
    #[inline]
    pub fn tick_sched(&self, cpu: CpuId<N>) -> &TickSched {
        self.ticks.get(cpu)
    }

    /// `tick_nohz_activate` / the switch to NO_HZ mode on `cpu` (`TS_FLAG_NOHZ`, plus
    /// `TS_FLAG_HIGHRES` for the high-resolution tick). Until then the tick never stops.
    #[inline]
    pub fn tick_nohz_activate(&self, cpu: CpuId<N>, highres: bool) {
        let ts = self.tick_sched(cpu);
        ts.set(TsFlags::NOHZ);
        if highres {
            ts.set(TsFlags::HIGHRES);
        }
    }

    /// `tick_nohz_tick_stopped()` on `cpu`.
    #[inline]
    pub fn tick_nohz_tick_stopped(&self, cpu: CpuId<N>) -> bool {
        self.tick_sched(cpu).tick_stopped()
    }

    /// `tick_nohz_idle_enter()` on `cpu`: entering the idle loop's tick-idle section. Warns if
    /// a next-event computation is still cached; sets INIDLE and starts idle-time accounting.
    #[inline]
    pub fn tick_nohz_idle_enter<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let ts = self.tick_sched(cpu);
        cpus.warn_at(cpu)
            .warn_on(ts.timer_expires_base() != 0, Warning::CachedNextEvent);
        ts.set(TsFlags::INIDLE);
        self.tick_nohz_start_idle(cpu, plat);
    }

    /// `tick_nohz_start_idle()`: idle time accumulates from now.
    #[inline]
    fn tick_nohz_start_idle<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        let ts = self.tick_sched(cpu);
        ts.idle_entrytime.store(plat.ktime_get(), Relaxed);
        ts.set(TsFlags::IDLE_ACTIVE);
    }

    /// `tick_nohz_stop_idle()`: fold the idle period ending at `now` into the sleep times.
    fn tick_nohz_stop_idle<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, now: u64, plat: &Pl) {
        let ts = self.tick_sched(cpu);
        let delta = now.saturating_sub(ts.idle_entrytime());
        let sum = if plat.in_iowait(cpu) {
            &ts.iowait_sleeptime
        } else {
            &ts.idle_sleeptime
        };
        sum.store(sum.load(Relaxed).wrapping_add(delta), Relaxed);
        ts.idle_entrytime.store(now, Relaxed);
        ts.clear(TsFlags::IDLE_ACTIVE);
    }

    /// `tick_nohz_irq_enter()` on `cpu`, from interrupt entry while idle or on NO_HZ_FULL:
    /// pauses idle-time accounting and, with the tick stopped, catches jiffies up.
    pub fn tick_nohz_irq_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        let ts = self.tick_sched(cpu);
        if !ts.test(TsFlags::STOPPED) && !ts.test(TsFlags::IDLE_ACTIVE) {
            return;
        }
        let now = plat.ktime_get();
        if ts.test(TsFlags::IDLE_ACTIVE) {
            self.tick_nohz_stop_idle(cpu, now, plat);
        }
        if ts.test(TsFlags::STOPPED) {
            // tick_nohz_update_jiffies
            plat.update_jiffies(now);
            ts.idle_waketime.store(now, Relaxed);
        }
    }

    /// `tick_nohz_irq_exit()` on `cpu`: in the idle section, resume idle-time accounting;
    /// otherwise give a NO_HZ_FULL CPU the chance to stop (or restart) its tick.
    #[inline]
    pub fn tick_nohz_irq_exit<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        if self.tick_sched(cpu).test(TsFlags::INIDLE) {
            self.tick_nohz_start_idle(cpu, plat);
        } else {
            self.tick_nohz_full_update_tick(cpus, cpu, plat);
        }
    }

    /// `tick_nohz_next_event()`: when `cpu` next needs a tick, or 0 to keep ticking (only
    /// while the tick is not already stopped; once STOPPED this never returns 0). Caches the
    /// result (`timer_expires`, `timer_expires_base`). A next timer before the base time (the
    /// last jiffies update) is a [`Warning::NextTimerInPast`] and counts as due at the base.
    pub fn tick_nohz_next_event<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> u64 {
        let ts = self.tick_sched(cpu);
        let tick = tick_nsec(Pl::HZ);
        let (basej, basemono) = plat.jiffies_update();
        ts.last_jiffies.store(basej.get(), Relaxed);
        ts.timer_expires_base.store(basemono, Relaxed);

        let mut next_tick = if plat.cpu_needs_tick(cpu) {
            basemono.saturating_add(tick)
        } else {
            let next = plat.next_timer_interrupt(cpu, basej, basemono);
            ts.next_timer.store(next, Relaxed);
            next
        };
        // Never before the base: a timer reported in the past is warned about, then due now.
        if cpus
            .warn_at(cpu)
            .warn_on(basemono > next_tick, Warning::NextTimerInPast)
        {
            next_tick = basemono;
        }

        // A tick due within the next period: keep ticking, unless the tick is already stopped.
        if next_tick - basemono <= tick && !ts.test(TsFlags::STOPPED) {
            ts.timer_expires.store(0, Relaxed);
            return 0;
        }

        // Only the timekeeper (or the last one, while nobody has the duty) is bounded by
        // timekeeping's max deferment; anyone else may sleep until its next timer.
        let owner = self.globals.do_timer_cpu.load(Relaxed);
        let bound = if owner == do_timer_word(cpu)
            || (owner == TICK_DO_TIMER_NONE && ts.test(TsFlags::DO_TIMER_LAST))
        {
            plat.timekeeping_max_deferment()
        } else {
            KTIME_MAX
        };
        let limit = if bound < KTIME_MAX.saturating_sub(basemono) {
            basemono + bound
        } else {
            KTIME_MAX
        };
        let expires = limit.min(next_tick);
        ts.timer_expires.store(expires, Relaxed);
        expires
    }

    /// `tick_nohz_stop_tick()`: the only place `TS_FLAG_STOPPED` is set. Consumes the cached
    /// next event; if the timer base refuses to go idle the tick keeps running. Otherwise hands
    /// off the timekeeping duty, and (unless already stopped at the same expiry) records the
    /// first stop and programs or cancels the one-shot timer.
    pub fn tick_nohz_stop_tick<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        let ts = self.tick_sched(cpu);
        let basej = ts.last_jiffies();
        let basemono = ts.timer_expires_base();
        ts.timer_expires_base.store(0, Relaxed);

        let mut expires = ts.timer_expires();
        if !ts.test(TsFlags::STOPPED) {
            match plat.timer_base_try_to_set_idle(cpu, basej, basemono) {
                // The base stays busy: keep the tick.
                None => return,
                // Never later than what the caller (and cpuidle) planned for.
                Some(base_next) => expires = expires.min(base_next),
            }
        }

        let owner = self.globals.do_timer_cpu.load(Relaxed);
        if owner == do_timer_word(cpu) {
            self.globals.do_timer_cpu.store(TICK_DO_TIMER_NONE, Relaxed);
            ts.set(TsFlags::DO_TIMER_LAST);
        } else if owner != TICK_DO_TIMER_NONE {
            ts.clear(TsFlags::DO_TIMER_LAST);
        }

        if ts.test(TsFlags::STOPPED) && expires == ts.next_tick() {
            if expires == KTIME_MAX || plat.tick_expiry(cpu) == expires {
                return;
            }
            // Stopped at this expiry, yet the timer is not set there: warn and reprogram.
            cpus.warn_at(cpu).warn(Warning::TickNotProgrammed);
        }

        if !ts.test(TsFlags::STOPPED) {
            plat.tick_stopped(cpu);
            ts.last_tick.store(plat.tick_expiry(cpu), Relaxed);
            ts.set(TsFlags::STOPPED);
        }
        ts.next_tick.store(expires, Relaxed);
        if expires == KTIME_MAX {
            plat.cancel_tick(cpu);
        } else {
            plat.program_tick(cpu, expires);
        }
    }

    /// `can_stop_idle_tick()`: may `cpu` stop its tick in the idle loop? Not without NO_HZ
    /// mode, with a reschedule or a softirq pending, nor while it must keep timekeeping going
    /// for NO_HZ_FULL CPUs. Warns for an offline CPU (and goes on) and when NO_HZ_FULL runs
    /// with no timekeeper.
    ///
    /// A pending softirq (`report_idle_softirq`) keeps the tick and is a warning
    /// ([`Warning::IdleSoftirqPending`], every time): idle should not be reached with one,
    /// since raising it outside interrupt context wakes ksoftirqd (need_resched). Only the
    /// kernel's own exceptions are silent, and then the tick may stop: a CPU going down
    /// ignores the hotplug-safe softirqs (ksoftirqd is parked), and on PREEMPT_RT blocked
    /// bottom halves ([`local_bh_blocked`](crate::platform::TickHardware::local_bh_blocked))
    /// mean the softirq waits on a lock. Older kernels (before 5.18) did not warn for
    /// `RCU_SOFTIRQ` alone; current ones do, and so does the crate. The pending bits are the
    /// platform's [`local_softirq_pending`](crate::platform::TickHardware::local_softirq_pending)
    /// and the crate's own `SCHED_SOFTIRQ` bit, under the same rules.
    ///
    /// **The report's rate limit: the crate mirrors mainline since v6.18.** Upstream
    /// 807e0d187da4 ("tick/sched: Fix bogus condition in report_idle_softirq()", tip
    /// timers/urgent, November 2025, in v6.18 and the stable trees) limits only the *print* to
    /// 10 machine-wide and keeps the tick on every report, as the code before v5.18 did. The
    /// kernels between (0345691b24c0 in v5.18 to v6.17) had the limit in the return value: once
    /// their two inverted conditions were fixed (a7e282c77785, 96c1fa04f089, 2023), the 11th
    /// report on let the tick stop with a softirq pending (before those fixes the function
    /// reported nothing at all). The crate keeps the tick every time, as mainline does; and
    /// since the limit only spares the console, every hit is counted, as every
    /// [`Warning`] is.
    #[doc(alias = "report_idle_softirq")]
    pub fn can_stop_idle_tick<P: Policy, Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> bool {
        let ts = self.tick_sched(cpu);
        cpus.warn_at(cpu)
            .warn_on(!cpus.cpu_online(cpu), Warning::OfflineCpuIdle);
        if !ts.test(TsFlags::NOHZ) {
            return false;
        }
        if plat.need_resched(cpu) {
            return false;
        }
        // local_softirq_pending(): the platform's bits and SCHED_SOFTIRQ, which the crate
        // keeps itself.
        let mut pending = plat.local_softirq_pending(cpu);
        if fair.rq(cpu).sched_softirq_pending() {
            pending |= softirq::SCHED;
        }
        if !cpus.cpu_active(cpu) {
            pending &= !softirq::HOTPLUG_SAFE_MASK;
        }
        if pending != 0 && !plat.local_bh_blocked(cpu) {
            // report_idle_softirq: a softirq idle should never see; keep the tick.
            cpus.warn_at(cpu).warn(Warning::IdleSoftirqPending);
            return false;
        }
        // With NO_HZ_FULL CPUs (the kernel's tick_nohz_full_enabled(), a static key set at
        // boot; here the mask may be set at run time, so it is scanned), the timekeeper keeps
        // its tick, and finding no timekeeper is a warning. Only those two CPUs' answers can
        // depend on the mask, so the others never scan it: one load decides for them.
        let owner = self.globals.do_timer_cpu.load(Relaxed);
        let keeps_time = owner == do_timer_word(cpu);
        if (keeps_time || owner == TICK_DO_TIMER_NONE)
            && !self.nohz_full.is_empty(cpus.nr_cpu_ids())
        {
            // Keep the tick: timekeeping must go on for the NO_HZ_FULL CPUs.
            if !keeps_time {
                cpus.warn_at(cpu)
                    .warn_on(owner == TICK_DO_TIMER_NONE, Warning::NoTimekeeper);
            }
            return false;
        }
        true
    }

    /// `tick_nohz_idle_stop_tick()` on `cpu`, from the idle loop with IRQs off: try to stop
    /// the tick and, **as patched by seed 001**, register the CPU for idle balancing whenever
    /// the tick ends up stopped (`Legacy`: only on the pass that stopped it).
    pub fn tick_nohz_idle_stop_tick<P: Policy, Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        let ts = self.tick_sched(cpu);
        let expires = if ts.timer_expires_base() != 0 {
            // The governor already computed it (tick_nohz_get_sleep_length).
            ts.timer_expires()
        } else if self.can_stop_idle_tick(cpus, fair, cpu, plat) {
            self.tick_nohz_next_event(cpus, cpu, plat)
        } else {
            return;
        };
        TickSched::bump(&ts.idle_calls);

        if expires == 0 {
            // tick_nohz_retain_tick
            ts.timer_expires_base.store(0, Relaxed);
            return;
        }
        let was_stopped = ts.tick_stopped();
        self.tick_nohz_stop_tick(cpus, cpu, plat);
        // Counted even when the timer base kept the tick running.
        TickSched::bump(&ts.idle_sleeps);
        ts.idle_expires.store(expires, Relaxed);

        let stopped = ts.tick_stopped();
        if P::ENTER_IDLE_WHENEVER_STOPPED {
            if stopped {
                // Idle accounting starts at the transition only.
                if !was_stopped {
                    ts.idle_jiffies
                        .store(ts.last_jiffies.load(Relaxed), Relaxed);
                }
                fair.nohz_balance_enter_idle(cpus, cpu, plat);
            }
        } else if !was_stopped && stopped {
            ts.idle_jiffies
                .store(ts.last_jiffies.load(Relaxed), Relaxed);
            fair.nohz_balance_enter_idle(cpus, cpu, plat);
        }
    }

    /// `tick_nohz_idle_retain_tick()`: the governor keeps the tick; drop the cached event.
    #[inline]
    pub fn tick_nohz_idle_retain_tick(&self, cpu: CpuId<N>) {
        self.tick_sched(cpu).timer_expires_base.store(0, Relaxed);
    }

    /// `tick_nohz_get_sleep_length(&delta_next)` on `cpu`, for its cpuidle governor, inside
    /// the idle section (warns otherwise: [`Warning::SleepLengthOutsideIdle`]), interrupts
    /// off. Measured from the idle entry time (`idle_entrytime`, the kernel's stand-in for
    /// now): `delta_next` to the sched timer's expiry (never, for a stopped tick with nothing
    /// to wake for); the sleep length to the next event, if the tick may stop
    /// (`can_stop_idle_tick`) and `tick_nohz_next_event` does not ask to keep it, else
    /// `delta_next`. `tick_nohz_next_event` caches the event (`timer_expires_base`), and
    /// [`tick_nohz_idle_stop_tick`](Self::tick_nohz_idle_stop_tick) then uses it without
    /// asking again; [`tick_nohz_idle_retain_tick`](Self::tick_nohz_idle_retain_tick) drops
    /// it. The kernel also takes the earliest other hrtimer into the sleep length
    /// (`hrtimer_next_event_without`); the crate knows the platform's timers only through
    /// [`next_timer_interrupt`](crate::platform::TickHardware::next_timer_interrupt).
    pub fn tick_nohz_get_sleep_length<P: Policy, Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> SleepLength {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let ts = self.tick_sched(cpu);
        cpus.warn_at(cpu)
            .warn_on(!ts.test(TsFlags::INIDLE), Warning::SleepLengthOutsideIdle);
        let now = ts.idle_entrytime();
        // dev->next_event: the sched timer, unless a stopped tick cancelled it.
        let next_tick = if ts.tick_stopped() && ts.next_tick() == KTIME_MAX {
            KTIME_MAX
        } else {
            plat.tick_expiry(cpu)
        };
        let delta_next = next_tick.saturating_sub(now);
        let keep = SleepLength {
            sleep_length: delta_next,
            delta_next,
        };
        if !self.can_stop_idle_tick(cpus, fair, cpu, plat) {
            return keep;
        }
        let next_event = self.tick_nohz_next_event(cpus, cpu, plat);
        if next_event == 0 {
            return keep;
        }
        SleepLength {
            sleep_length: next_event.saturating_sub(now),
            delta_next,
        }
    }

    /// `tick_nohz_idle_restart_tick()` (the polling idle path): restart a stopped tick and
    /// account the idle ticks. Never registers the CPU for idle balancing.
    #[inline]
    pub fn tick_nohz_idle_restart_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        if self.tick_sched(cpu).tick_stopped() {
            let now = plat.ktime_get();
            self.tick_nohz_restart_sched_tick(cpu, now, plat);
            self.tick_nohz_account_idle_time(cpu, now, plat);
        }
    }

    /// `tick_nohz_idle_exit()` on `cpu`, leaving the idle loop (IRQs off): warns unless in the
    /// idle section or if a next event is still cached; stops idle accounting; a stopped tick
    /// is restarted (on NO_HZ_FULL it may stay stopped) and the idle ticks accounted. Does
    /// not leave the idle mask: the first busy tick does that.
    pub fn tick_nohz_idle_exit<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        cpus.check_on_cpu(cpu, plat.this_cpu());
        let ts = self.tick_sched(cpu);
        let warn = cpus.warn_at(cpu);
        warn.warn_on(!ts.test(TsFlags::INIDLE), Warning::IdleExitOutsideIdle);
        warn.warn_on(ts.timer_expires_base() != 0, Warning::CachedNextEvent);
        ts.clear(TsFlags::INIDLE);
        let idle_active = ts.test(TsFlags::IDLE_ACTIVE);
        let stopped = ts.test(TsFlags::STOPPED);
        if !idle_active && !stopped {
            return;
        }
        let now = plat.ktime_get();
        if idle_active {
            self.tick_nohz_stop_idle(cpu, now, plat);
        }
        if stopped {
            if self.tick_nohz_full_cpu(cpu) {
                self.tick_nohz_full_update_tick_at(cpus, cpu, now, plat);
            } else {
                self.tick_nohz_restart_sched_tick(cpu, now, plat);
            }
            self.tick_nohz_account_idle_time(cpu, now, plat);
        }
    }

    /// `tick_nohz_account_idle_time()`: stamp the idle exit and, unless vtime accounts this
    /// CPU, account the idle ticks since the stop transition.
    fn tick_nohz_account_idle_time<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, now: u64, plat: &Pl) {
        let ts = self.tick_sched(cpu);
        ts.idle_exittime.store(now, Relaxed);
        if plat.vtime_accounting(cpu) {
            return;
        }
        let ticks = plat.jiffies().since(ts.idle_jiffies());
        if ticks != 0 && ticks < isize::MAX as usize {
            plat.account_idle_ticks(cpu, ticks);
        }
    }

    /// `tick_nohz_restart_sched_tick()`: catch jiffies up, wake the timer base, clear
    /// `TS_FLAG_STOPPED` and re-arm the periodic tick on its old phase.
    pub fn tick_nohz_restart_sched_tick<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        let ts = self.tick_sched(cpu);
        plat.update_jiffies(now);
        plat.timer_clear_idle(cpu);
        plat.tick_restarted(cpu);
        ts.clear(TsFlags::STOPPED);
        // tick_nohz_restart: the first last_tick + k * TICK_NSEC after now.
        plat.program_tick(cpu, forward(ts.last_tick(), now, tick_nsec(Pl::HZ)));
        ts.next_tick.store(0, Relaxed);
    }

    /// `can_stop_full_tick()`: a NO_HZ_FULL CPU may run tickless unless it is offline or
    /// something depends on its tick (machine-wide, this CPU, the running task or its group).
    pub fn can_stop_full_tick<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> bool {
        if !cpus.cpu_online(cpu) {
            return false;
        }
        let deps = self.globals.tick_dep_mask.load(Relaxed)
            | self.tick_sched(cpu).tick_dep_mask()
            | plat.task_tick_dependencies(cpu);
        deps == 0
    }

    /// `tick_nohz_full_stop_tick()`: stop the tick of a NO_HZ_FULL CPU while it runs a task.
    /// Never registers the CPU for idle balancing: it is busy.
    #[inline]
    pub fn tick_nohz_full_stop_tick<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        if self.tick_nohz_next_event(cpus, cpu, plat) != 0 {
            self.tick_nohz_stop_tick(cpus, cpu, plat);
        } else {
            self.tick_sched(cpu).timer_expires_base.store(0, Relaxed);
        }
    }

    /// `__tick_nohz_full_update_tick(ts, now)`: stop the tick if nothing needs it, else
    /// restart it if stopped.
    #[doc(alias = "__tick_nohz_full_update_tick")]
    pub fn tick_nohz_full_update_tick_at<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        if self.can_stop_full_tick(cpus, cpu, plat) {
            self.tick_nohz_full_stop_tick(cpus, cpu, plat);
        } else if self.tick_sched(cpu).tick_stopped() {
            self.tick_nohz_restart_sched_tick(cpu, now, plat);
        }
    }

    /// `tick_nohz_full_update_tick()`: on a NO_HZ_FULL CPU in NO_HZ mode, re-evaluate the
    /// tick (from irq exit and dependency changes).
    #[inline]
    pub fn tick_nohz_full_update_tick<Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) {
        if !self.tick_nohz_full_cpu(cpu) || !self.tick_sched(cpu).test(TsFlags::NOHZ) {
            return;
        }
        self.tick_nohz_full_update_tick_at(cpus, cpu, plat.ktime_get(), plat);
    }

    /// The sched timer firing on `cpu` (`tick_nohz_handler` / `tick_sched_timer`): takes the
    /// timekeeping duty if nobody has it, updates jiffies if it is the timekeeper, and, with the
    /// tick stopped on the idle task, bumps `idle_jiffies`; then runs the scheduler tick. A
    /// periodic tick is re-armed one period on; a stopped one is not.
    ///
    /// `tick_sched_do_timer`, as current kernels have it (since 08ae95f4fd3b): any CPU takes an
    /// orphaned duty, a NO_HZ_FULL one too, and keeps time on this very tick; if NO_HZ_FULL CPUs
    /// exist (`tick_nohz_full_running`) that is a [`Warning::DoTimerOrphaned`], since their
    /// timekeeper never gives the duty up. (Kernels before it left the duty to the next
    /// housekeeping CPU, silently.)
    ///
    /// **A stalled timekeeper** (the kernel's fallback since v5.18, a1ff03cd6fb9): the duty's
    /// owner may be unable to tick for a while and still own it: held in `stop_machine()`
    /// (the kernel's own example; [`Machine::cpu_dying`](crate::Machine::cpu_dying) runs in
    /// that context), or in a long VM exit. So every ticking CPU watches jiffies: once its
    /// ticks have seen the same value [`TickSched::MAX_STALLED_JIFFIES`] times after the one
    /// that first saw it, it updates jiffies itself (the platform's
    /// [`update_jiffies`](crate::platform::TickHardware::update_jiffies), which catches up
    /// every period missed and does nothing if someone else just did) and counts again from
    /// the new value. The duty stays with its owner. A CPU whose tick is stopped does not
    /// watch, and needs not: its next interrupt catches jiffies up on entry.
    #[doc(alias = "tick_nohz_handler")]
    #[doc(alias = "tick_sched_do_timer")]
    #[doc(alias = "tick_sched_handle")]
    pub fn tick_sched_timer<P: Policy, Pl: TickPlatform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        fair: &Fair<P, N, W>,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<crate::fair::KickDecision<N>> {
        let ts = self.tick_sched(cpu);
        let now = plat.ktime_get();
        // tick_sched_do_timer: one racy read of the owner. Two CPUs taking an orphaned duty at
        // once is harmless: the jiffies update serialises itself.
        let mut owner = self.globals.do_timer_cpu.load(Relaxed);
        if owner == TICK_DO_TIMER_NONE {
            cpus.warn_at(cpu).warn_on(
                !self.nohz_full.is_empty(cpus.nr_cpu_ids()),
                Warning::DoTimerOrphaned,
            );
            self.set_tick_do_timer_cpu(Some(cpu));
            owner = do_timer_word(cpu);
        }
        if owner == do_timer_word(cpu) {
            plat.update_jiffies(now);
        }
        // The jiffies update stalled (its owner held in stop-machine or a VM exit): after
        // MAX_STALLED_JIFFIES ticks on the same jiffies, update them from here.
        let seen = plat.jiffies();
        if ts.last_tick_jiffies() != seen {
            ts.stalled_jiffies.store(0, Relaxed);
            ts.last_tick_jiffies.store(seen.get(), Relaxed);
        } else {
            let stalled = ts.stalled_jiffies().wrapping_add(1);
            ts.stalled_jiffies.store(stalled, Relaxed);
            if stalled == TickSched::MAX_STALLED_JIFFIES {
                plat.update_jiffies(now);
                ts.stalled_jiffies.store(0, Relaxed);
                ts.last_tick_jiffies.store(plat.jiffies().get(), Relaxed);
            }
        }
        // tick_sched_handle
        if ts.tick_stopped() {
            if fair.rq(cpu).curr_is_idle() {
                ts.idle_jiffies
                    .store(ts.idle_jiffies().add(1).get(), Relaxed);
            }
            ts.next_tick.store(0, Relaxed);
        }
        let decision = crate::sched_core::sched_tick(cpus, fair, cpu, plat);
        if !ts.tick_stopped() {
            plat.program_tick(cpu, forward(plat.tick_expiry(cpu), now, tick_nsec(Pl::HZ)));
        }
        decision
    }
}

/// `hrtimer_forward`: the first `from + k * period` (k >= 0) that is after `now`.
pub(crate) fn forward(from: u64, now: u64, period: u64) -> u64 {
    if from > now || period == 0 {
        return from;
    }
    let periods = (now - from) / period + 1;
    from.saturating_add(periods.saturating_mul(period))
}

#[cfg(test)]
mod tests {
    use super::forward;

    #[test]
    fn forward_lands_on_the_old_phase_after_now() {
        assert_eq!(forward(1000, 500, 100), 1000, "already in the future");
        assert_eq!(forward(1000, 1000, 100), 1100);
        assert_eq!(forward(1000, 1099, 100), 1100);
        assert_eq!(forward(1000, 1100, 100), 1200);
        assert_eq!(forward(0, 12_345, 1000), 13_000);
    }
}
