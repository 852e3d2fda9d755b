//! The simulated machine: the real `nohz` crate driven by one host thread per logical CPU.
//!
//! [`Sim`] is the embedding kernel. It implements every platform trait of the crate: a shared
//! monotonic clock and jiffies, per-CPU run queues of real CPU work, the nohz kick IPI as a
//! per-CPU mailbox plus park/unpark, the sched timer as a per-CPU deadline, and a balancer that
//! pulls tasks from the busiest run queue onto the CPU it balances for. Each CPU thread
//! ([`Sim::cpu_main`]) runs tasks while it has some, taking ticks and IPIs between slices of
//! work, and runs the crate's `do_idle` when it has none.
//!
//! Interrupts and hotplug go through the crate's entry points, as a kernel's would: the sched timer and the nohz kick IPI are [`Machine::timer_interrupt`] and
//! [`Machine::kick_interrupt`] (other timers run between [`Machine::irq_enter`] and
//! [`Machine::irq_exit`], which runs the SCHED softirq the crate keeps), a CPU comes back
//! through [`Machine::cpu_starting`] and [`Machine::sched_cpu_activate`], and the dying CPU's
//! idle task during its deactivation's grace period is the crate's own `do_idle`.
//!
//! Time is the host's monotonic clock, or in the soak ([`crate::soak`]) a virtual clock the
//! CPUs advance themselves, so that nothing waits on a host timer.
//!
//! # Quiescent snapshots
//!
//! Each CPU has a sequence counter that is odd while its thread runs crate code (an
//! interrupt, newidle, the idle loop outside its idle state, a hotplug cycle). A snapshot
//! ([`Sim::snapshot_check`]) reads every counter, the crate state, then the counters again
//! (a seqlock read): if none moved and all were even, no crate path was half done, and the
//! invariants that hold between paths are checked exactly (see [`Sim::snapshot_check`]).

use crate::measure::{ThreadClock, ThreadUsage};
use crossbeam_utils::CachePadded;
use nohz::IdleExit;
use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, KTIME_MAX, NewidleOutcome, Softirq,
    TickHardware, Topology, tick_nsec,
};
use nohz::{CpuId, Jiffies, JiffiesCell, Machine, NohzFlags, NrCpuIds, Policy, TsFlags};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The harness's CPU capacity (`NR_CPUS`): the most logical CPUs a run can have. The sharded
/// spec's line-count runs use 480 and 768; raise it (a multiple of 64) for more.
pub const CAP: usize = 768;
/// The machine type the harness drives.
pub type Mach<P> = nohz::machine!(P, CAP);
/// A CPU of the harness machine.
pub type Cpu = CpuId<CAP>;

/// Stack of the thread that builds a machine: a debug build's `Machine::new` at the harness's
/// capacity keeps several copies of the machine (about 0.9 MB each) on its stack, more than a
/// test thread's 2 MB.
const BUILD_STACK: usize = 64 * 1024 * 1024;

/// A new machine of the harness's capacity, on the heap, built on a thread with room for it.
pub fn boxed_machine<P: Policy>() -> Result<Box<Mach<P>>, String> {
    std::thread::Builder::new()
        .name("nohz-machine".into())
        .stack_size(BUILD_STACK)
        .spawn(|| Box::new(Machine::new()))
        .map_err(|e| format!("cannot start the thread that builds the machine: {e}"))?
        .join()
        .map_err(|_| "building the machine panicked".to_string())
}

/// How long a task runs between checks for interrupts.
const SLICE: Duration = Duration::from_micros(20);

std::thread_local! {
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// A bug planted for the run, to show that the invariant checks catch it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Plant {
    /// None: the crate as it is.
    #[default]
    None,
    /// The hotplug fix reverted: deactivation clears the active bit after the grace period
    /// (`nohz_testing::sched_cpu_deactivate_old_order`), so the dying CPU's idle loop
    /// re-registers it.
    HotplugOrder,
    /// The nohz kick's handler consumes the kick bits but never frees the csd
    /// (`nohz_testing::nohz_csd_ipi_without_release`).
    CsdLeak,
    /// The ILB pass's fence (`nohz.ilb.clear_fence`) removed at run time; probe builds only
    /// (`--cfg nohz_probe`), the caller holds the weakening.
    IlbFence,
}

impl Plant {
    /// Every plant, in `--plant` order.
    pub const ALL: [Plant; 4] = [
        Plant::None,
        Plant::HotplugOrder,
        Plant::CsdLeak,
        Plant::IlbFence,
    ];

    /// The plant's name (`none`, `hotplug-order`, `csd-leak`, `ilb-fence`).
    pub fn name(self) -> &'static str {
        match self {
            Plant::None => "none",
            Plant::HotplugOrder => "hotplug-order",
            Plant::CsdLeak => "csd-leak",
            Plant::IlbFence => "ilb-fence",
        }
    }
}

/// Fault injection.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Deliver each nohz IPI after a random delay up to this many microseconds.
    pub ipi_delay_us: u64,
    /// Stall a CPU thread mid-task for this many microseconds (a preempted vCPU) ...
    pub stall_us: u64,
    /// ... about once every this many milliseconds of its work.
    pub stall_every_ms: u64,
    /// Jump jiffies forward by this many ticks ...
    pub jiffies_jump: usize,
    /// ... about once every this many milliseconds.
    pub jump_every_ms: u64,
    /// Take each CPU offline (deactivate, die, stay down, come back) about once every this
    /// many milliseconds of its run (0: never). One CPU is down at a time.
    pub hotplug_every_ms: u64,
    /// How long a CPU stays down, in microseconds.
    pub offline_us: u64,
    /// Hold the timekeeping CPU (the soak): its thread takes no interrupt while about this
    /// many tick periods of virtual time pass, as a timekeeper held in stop-machine or in a
    /// long VM exit would (0: never). The others' ticks must keep jiffies moving meanwhile
    /// (`tick_sched_do_timer`'s stall fallback), which every tick checks.
    pub timekeeper_hold_ticks: u64,
}

impl Faults {
    /// The set `--faults` turns on.
    pub fn standard() -> Self {
        Faults {
            ipi_delay_us: 200,
            stall_us: 500,
            stall_every_ms: 20,
            jiffies_jump: 5,
            jump_every_ms: 50,
            hotplug_every_ms: 40,
            offline_us: 2_000,
            timekeeper_hold_ticks: 4 * nohz::TickSched::MAX_STALLED_JIFFIES as u64,
        }
    }
}

/// A unit of work on a run queue.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    /// CPU work in microseconds.
    pub work_us: u64,
    /// The burst it belongs to, if any.
    pub burst: Option<usize>,
    /// Bound to its CPU (`cpus_allowed` of one CPU): the balancer never moves it.
    pub pinned: bool,
}

/// How a CPU makes its own next task when it idles (the churn workload), if at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfWake {
    /// Sleep this many ticks, at least ...
    pub min_ticks: u64,
    /// ... and at most.
    pub max_ticks: u64,
    /// Then run this many microseconds, at least ...
    pub min_work_us: u64,
    /// ... and at most.
    pub max_work_us: u64,
}

/// Per-CPU simulation state.
#[derive(Debug, Default)]
pub struct SimCpu {
    pub(crate) rq: Mutex<VecDeque<Task>>,
    pub(crate) need_resched: AtomicBool,
    pub(crate) ipi_pending: AtomicBool,
    pub(crate) ipi_at: AtomicU64,
    pub(crate) tick_expiry: AtomicU64,
    pub(crate) tick_armed: AtomicBool,
    pub(crate) next_timer: AtomicU64,
    pub(crate) base_idle: AtomicBool,
    pub(crate) blocked_load: AtomicU32,
    pub(crate) nohz_full: AtomicBool,
    pub(crate) stop_attempt_ran: AtomicBool,
    pub(crate) calls_at_entry: AtomicU64,
    pub(crate) waited_ns: AtomicU64,
    pub(crate) thread: OnceLock<Thread>,
    /// The CPU's model RCU read-side state: odd while it is inside an interrupt (the crate's
    /// tick, kick, csd and softirq paths all run there, with IRQs off in a kernel).
    pub(crate) rcu: AtomicU64,
    /// Deactivated and not yet back: no nohz IPI may reach it, it may not be in the idle mask.
    pub(crate) down: AtomicBool,
    /// Inside its own deactivation (its hotplug thread running).
    pub(crate) deactivating: AtomicBool,
    /// Odd while the CPU's thread runs crate code (see the module docs).
    pub(crate) seq: AtomicU64,
    /// Inside its idle state (`cpuidle_enter`), outside crate code.
    pub(crate) in_idle_state: AtomicBool,
    /// The jiffies watch ([`Sim::watch_jiffies`]): the jiffies this CPU's ticks last saw, ...
    pub(crate) watch_jiffies: AtomicUsize,
    /// ... on how many ticks, each at least a period after the one before (0: none yet) ...
    pub(crate) watch_run: AtomicU32,
    /// ... the last of them when.
    pub(crate) watch_at: AtomicU64,
    /// Its idle task runs during its own deactivation's grace period: the idle state waits
    /// for the grace period instead of an interrupt.
    pub(crate) grace_wait: AtomicBool,
    /// Idle transitions: idle-loop passes that registered the CPU, each ended by its first
    /// busy tick (counted at that tick).
    pub transitions: AtomicU64,
    /// nohz kick IPIs this CPU sent.
    pub kicks_sent: AtomicU64,
    /// Times `find_new_ilb` picked this CPU: the kick IPIs sent to it (the ILB-pick
    /// histogram; under `Sharded`'s `LocalFirst` order the picks should spread over the idle
    /// CPUs).
    pub ilb_picks: AtomicU64,
    /// nohz kick IPIs this CPU handled that found a queued csd.
    pub ipis_delivered: AtomicU64,
    /// Kicks this CPU's csd handed to its softirq as ILB work (it was idle).
    pub ilb_passes: AtomicU64,
    /// Invariant checks this CPU made.
    pub checks: AtomicU64,
    /// Faults injected on this CPU.
    pub faults: AtomicU64,
    /// Tasks this CPU completed.
    pub completed: AtomicU64,
    /// Times this CPU entered the idle loop.
    pub idle_entries: AtomicU64,
    /// Tasks the balancer pulled onto this CPU.
    pub pulled_in: AtomicU64,
}

impl SimCpu {
    /// The sched timer is armed and its expiry has passed.
    pub(crate) fn tick_due(&self, now: u64) -> bool {
        self.tick_armed.load(Relaxed) && now >= self.tick_expiry.load(Relaxed)
    }
}

/// Counters of the whole run (the frequent ones are per CPU, in [`SimCpu`]).
#[derive(Debug, Default)]
pub struct Counters {
    /// Ticks (of the monitor's sampling) an idle CPU spent tickless but out of the idle mask.
    pub invisible_idle_ticks: AtomicU64,
    /// Protocol violations seen (second IPI in flight, stuck kick bits, ...).
    pub invariant_violations: AtomicU64,
    /// CPUs taken offline and brought back.
    pub hotplug_cycles: AtomicU64,
    /// Deactivations the crate refused (the last active CPU, the NO_HZ_FULL timekeeper).
    pub hotplug_refused: AtomicU64,
    /// Invariant checks made on hotplug (state after deactivation, at return, IPI targets).
    pub hotplug_checks: AtomicU64,
    /// Quiescent snapshots taken (each checks every CPU).
    pub snapshots: AtomicU64,
    /// Snapshots given up because some CPU stayed inside crate code.
    pub snapshots_skipped: AtomicU64,
    /// The first violation seen: what it was and the transitions counted by then.
    pub first_violation: Mutex<Option<(String, u64)>>,
}

/// A burst of tasks arriving together.
#[derive(Debug, Clone, Copy)]
pub struct Burst {
    /// When it arrived.
    pub at: Instant,
    /// Tasks not yet completed.
    pub remaining: usize,
    /// When its last task completed.
    pub done: Option<Instant>,
}

/// The simulated machine under policy `P`, ticking at `HZ`.
#[derive(Debug)]
pub struct Sim<P: Policy, const HZ: u32> {
    /// The crate's state for the whole machine.
    pub m: Box<Mach<P>>,
    pub(crate) nr: NrCpuIds<CAP>,
    pub(crate) start: Instant,
    pub(crate) jiffies: JiffiesCell,
    pub(crate) last_jiffies_update: Mutex<u64>,
    /// Per-CPU state.
    pub cpus: Vec<CachePadded<SimCpu>>,
    pub(crate) stop: AtomicBool,
    pub(crate) faults: Faults,
    pub(crate) self_wake: Option<SelfWake>,
    /// Counters of the run.
    pub counters: Counters,
    /// Bursts of the run.
    pub bursts: Mutex<Vec<Burst>>,
    pub(crate) jumps: AtomicUsize,
    /// The hotplug lock: one CPU changes state at a time, as the kernel's `cpu_hotplug_lock`
    /// serializes hotplug (and the crate's domain rebuilds with it).
    pub(crate) hotplug: Mutex<()>,
    /// Time is virtual: [`Sim::vnow`], advanced by the CPUs (the soak).
    pub(crate) virtual_clock: bool,
    /// The virtual clock (ns), when [`Sim::virtual_clock`] is set.
    pub(crate) vnow: AtomicU64,
    /// The bug planted for this run.
    pub plant: Plant,
    /// The blocked load each idle entry adds (halved by each decay: 4 lasts three decays).
    pub(crate) idle_load: u32,
    /// More logical CPUs than host cores: spinning waits yield.
    pub(crate) oversubscribed: bool,
}

impl<P: Policy, const HZ: u32> Sim<P, HZ> {
    /// A machine of `cpus` CPUs, those in `nohz_full` NO_HZ_FULL (out of housekeeping), all
    /// in one LLC, NO_HZ active everywhere, CPU 0 keeping time.
    pub fn new(
        cpus: usize,
        nohz_full: &[usize],
        faults: Faults,
        self_wake: Option<SelfWake>,
    ) -> Result<Box<Self>, String> {
        Self::with_clock(cpus, nohz_full, faults, self_wake, false, Plant::None)
    }

    /// [`Sim::new`], on the virtual clock if `virtual_clock` (the soak), with `plant` planted.
    pub fn with_clock(
        cpus: usize,
        nohz_full: &[usize],
        faults: Faults,
        self_wake: Option<SelfWake>,
        virtual_clock: bool,
        plant: Plant,
    ) -> Result<Box<Self>, String> {
        let nr = NrCpuIds::<CAP>::new(cpus).map_err(|e| e.to_string())?;
        let sim = Box::new(Sim {
            m: boxed_machine()?,
            nr,
            start: Instant::now(),
            jiffies: JiffiesCell::new(Jiffies::initial(HZ)),
            last_jiffies_update: Mutex::new(0),
            cpus: (0..cpus)
                .map(|_| CachePadded::new(SimCpu::default()))
                .collect(),
            stop: AtomicBool::new(false),
            faults,
            self_wake,
            counters: Counters::default(),
            bursts: Mutex::new(Vec::new()),
            jumps: AtomicUsize::new(0),
            hotplug: Mutex::new(()),
            virtual_clock,
            vnow: AtomicU64::new(0),
            plant,
            idle_load: 4,
            oversubscribed: false,
        });
        for c in &sim.cpus {
            c.tick_expiry.store(tick_nsec(HZ), Relaxed);
            c.tick_armed.store(true, Relaxed);
            c.next_timer.store(KTIME_MAX, Relaxed);
        }
        sim.m.init(cpus, 0, &*sim).map_err(|e| e.to_string())?;
        for &i in nohz_full {
            let cpu = nr.cpu(i).map_err(|e| e.to_string())?;
            sim.m.nohz_full().set(cpu);
            sim.m.housekeeping().clear(cpu);
            sim.cpus[i].nohz_full.store(true, Relaxed);
        }
        for cpu in nr.iter() {
            sim.m.tick_nohz_activate(cpu, true);
        }
        sim.m.enable_sched_clock_irqtime();
        Ok(sim)
    }

    /// `nr_cpu_ids`.
    pub fn nr(&self) -> NrCpuIds<CAP> {
        self.nr
    }

    /// CPU `i`.
    pub fn cpu(&self, i: usize) -> Cpu {
        // Callers pass indices below nr_cpu_ids; a bad one is a harness bug.
        self.nr
            .cpu(i)
            .expect("CPU index within the simulated machine")
    }

    pub(crate) fn now_ns(&self) -> u64 {
        if self.virtual_clock {
            self.vnow.load(Relaxed)
        } else {
            self.start.elapsed().as_nanos() as u64
        }
    }

    /// The virtual clock moves to `t` if it is behind (no-op on the host clock).
    pub(crate) fn advance_to(&self, t: u64) {
        if self.virtual_clock && self.vnow.load(Relaxed) < t {
            self.vnow.fetch_max(t, Relaxed);
        }
    }

    /// CPU `i`'s thread starts running crate code (its sequence counter goes odd).
    #[inline]
    pub(crate) fn enter(&self, i: usize) {
        let seq = &self.cpus[i].seq;
        seq.store(seq.load(Relaxed) + 1, Relaxed);
        // Orders the odd count before the crate's stores: a snapshot that reads one of them
        // (then fences with Acquire) reads the odd count too.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    }

    /// CPU `i`'s thread leaves crate code (its counter goes even, after everything it wrote).
    #[inline]
    pub(crate) fn leave(&self, i: usize) {
        let seq = &self.cpus[i].seq;
        seq.store(seq.load(Relaxed) + 1, std::sync::atomic::Ordering::Release);
    }

    /// Runs `f` as crate code on CPU `i` (its sequence counter odd meanwhile).
    #[inline]
    pub(crate) fn in_crate<T>(&self, i: usize, f: impl FnOnce() -> T) -> T {
        self.enter(i);
        let r = f();
        self.leave(i);
        r
    }

    /// Asks every CPU thread to finish.
    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
        for c in &self.cpus {
            c.need_resched.store(true, Relaxed);
            if let Some(t) = c.thread.get() {
                t.unpark();
            }
        }
    }

    /// Tells the crate (through `this_cpu`) which CPU the calling thread plays.
    pub(crate) fn set_current(&self, cpu: Option<usize>) {
        CURRENT.with(|c| c.set(cpu));
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    pub(crate) fn wake(&self, i: usize) {
        let c = &self.cpus[i];
        c.need_resched.store(true, Relaxed);
        if let Some(t) = c.thread.get() {
            t.unpark();
        }
    }

    /// Queues `tasks` on CPU `i` and wakes it (a wakeup: `ttwu`).
    pub fn enqueue(&self, i: usize, tasks: impl IntoIterator<Item = Task>) {
        {
            let mut rq = self.cpus[i].rq.lock().unwrap_or_else(|e| e.into_inner());
            rq.extend(tasks);
            self.sync_rq(i, rq.len(), self.m.rq(self.cpu(i)).curr_is_idle());
        }
        self.wake(i);
    }

    /// Publishes CPU `i`'s queue length (plus the running task) to the crate's `Rq`.
    pub(crate) fn sync_rq(&self, i: usize, queued: usize, idle: bool) {
        let rq = self.m.rq(self.cpu(i));
        let running = queued + usize::from(!idle);
        rq.set_nr_running(running as u32);
        rq.set_h_nr_runnable(running as u32);
    }

    /// Records a burst of `n` tasks and queues them on CPU `i`.
    pub fn burst(&self, i: usize, n: usize, work_us: u64) {
        let id = {
            let mut b = self.bursts.lock().unwrap_or_else(|e| e.into_inner());
            b.push(Burst {
                at: Instant::now(),
                remaining: n,
                done: None,
            });
            b.len() - 1
        };
        self.enqueue(
            i,
            (0..n).map(|_| Task {
                work_us,
                burst: Some(id),
                pinned: false,
            }),
        );
    }

    /// The monitor's sample, once per tick of wall time: counts idle CPUs that are tickless,
    /// in the idle section, past their stop attempt and still absent from the idle mask.
    pub fn sample_visibility(&self) {
        for cpu in self.nr.iter() {
            let ts = self.m.tick_sched(cpu);
            if ts.flags().contains(TsFlags::STOPPED | TsFlags::INIDLE)
                && self.cpus[cpu.index()].stop_attempt_ran.load(Relaxed)
                && self.m.rq(cpu).idle_cpu()
                && !self.m.nohz_idle_test(cpu)
            {
                self.counters.invisible_idle_ticks.fetch_add(1, Relaxed);
            }
        }
    }

    /// Fault: jump jiffies forward (a stalled timekeeper catching up at once).
    pub fn jump_jiffies(&self) {
        if self.faults.jiffies_jump > 0 {
            self.jiffies.advance(self.faults.jiffies_jump);
            self.jumps.fetch_add(1, Relaxed);
        }
    }

    /// One logical CPU's life: pin, then run tasks or idle until stopped. Returns its clocks.
    pub fn cpu_main(&self, i: usize, core: Option<core_affinity::CoreId>) -> (bool, ThreadUsage) {
        let pinned = core.is_some_and(core_affinity::set_for_current);
        let cpu = self.cpu(i);
        CURRENT.with(|c| c.set(Some(i)));
        let _ = self.cpus[i].thread.set(std::thread::current());
        let mut clock = ThreadClock::start();
        let mut rng = fastrand::Rng::with_seed(0x5eed_0000 + i as u64);
        let mut next_stall = self.stall_deadline(&mut rng);
        let mut next_hotplug = self.hotplug_deadline(&mut rng);
        while !self.stopping() {
            if let Some(at) = next_hotplug
                && Instant::now() >= at
            {
                self.in_crate(i, || self.hotplug_cycle(cpu));
                next_hotplug = self.hotplug_deadline(&mut rng);
            }
            self.service(cpu);
            if let Some(task) = self.pick(i) {
                self.run_task(cpu, task, &mut rng, &mut next_stall);
                continue;
            }
            if self.in_crate(i, || self.m.sched_balance_newidle(cpu, self)) {
                continue;
            }
            self.idle(cpu, &mut rng);
        }
        // Whatever kick is still in the mailbox is handled before the thread goes.
        if self.cpus[i].ipi_pending.load(Relaxed) {
            self.irq(cpu, Irq::Ipi);
        }
        clock.add_wait(Duration::from_nanos(self.cpus[i].waited_ns.load(Relaxed)));
        CURRENT.with(|c| c.set(None));
        (pinned, clock.finish())
    }

    pub(crate) fn stall_deadline(&self, rng: &mut fastrand::Rng) -> Option<Instant> {
        (self.faults.stall_us > 0 && self.faults.stall_every_ms > 0).then(|| {
            Instant::now()
                + Duration::from_millis(rng.u64(1..=self.faults.stall_every_ms.max(1) * 2))
        })
    }

    fn hotplug_deadline(&self, rng: &mut fastrand::Rng) -> Option<Instant> {
        let every = self.faults.hotplug_every_ms;
        (every > 0 && self.nr.get() > 1)
            .then(|| Instant::now() + Duration::from_millis(rng.u64(every / 2..=every * 3 / 2)))
    }

    /// Fault: `cpu` goes offline and comes back, from its own thread (its hotplug thread), in
    /// the kernel's order: `sched_cpu_deactivate` (during whose grace period the CPU idles
    /// once, its hotplug thread asleep), its tasks pushed away, `cpu_dying`, a while down,
    /// then up again (tick set up, `sched_cpu_activate`). Checks the hotplug invariants on the
    /// way: a deactivated CPU is out of the idle mask, receives no nohz IPI until it is back
    /// (checked in `send_nohz_ipi`), and comes back in a freshly booted CPU's state.
    pub(crate) fn hotplug_cycle(&self, cpu: Cpu) {
        let Ok(_lock) = self.hotplug.try_lock() else {
            return;
        };
        let i = cpu.index();
        let c = &self.cpus[i];
        self.push_tasks_away(i);
        // The hotplug thread runs on the CPU.
        let rq = self.m.rq(cpu);
        rq.set_curr_is_idle(false);
        self.sync_rq(i, 0, false);
        c.deactivating.store(true, Relaxed);
        let refused = if self.plant == Plant::HotplugOrder {
            nohz_testing::sched_cpu_deactivate_old_order(&self.m, cpu, self).is_err()
        } else {
            self.m.sched_cpu_deactivate(cpu, self).is_err()
        };
        c.deactivating.store(false, Relaxed);
        if refused {
            self.counters.hotplug_refused.fetch_add(1, Relaxed);
            return;
        }
        // From here no nohz IPI may reach it, and it may not be registered.
        c.down.store(true, Relaxed);
        self.check_that(
            !self.m.nohz_idle_test(cpu),
            "a deactivated CPU is in the idle mask",
        );
        self.push_tasks_away(i);
        // stop-machine: the dying CPU's last steps, its mailbox flushed by the crate.
        if self.m.cpu_dying(cpu, self).is_err() {
            self.check(false);
        }
        c.ipi_pending.store(false, Relaxed);
        rq.set_curr_is_idle(true);
        self.sync_rq(i, 0, true);
        if self.virtual_clock {
            // Down for a while of virtual time, the others running meanwhile.
            let until = self.now_ns() + self.faults.offline_us * 1000;
            for _ in 0..64 {
                if self.now_ns() >= until || self.stopping() {
                    break;
                }
                std::thread::yield_now();
            }
            self.check_that(
                !self.m.nohz_idle_test(cpu),
                "an offline CPU is in the idle mask",
            );
        } else {
            let until = Instant::now() + Duration::from_micros(self.faults.offline_us);
            while Instant::now() < until && !self.stopping() {
                self.check_that(
                    !self.m.nohz_idle_test(cpu),
                    "an offline CPU is in the idle mask",
                );
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        // Back: online with its tick device set up (NO_HZ mode, a periodic tick), then
        // activation. Its jiffies watch starts over, as the crate's does (`cpu_dying` reset
        // the CPU's `tick_sched`).
        c.watch_run.store(0, Relaxed);
        self.m.cpu_starting(cpu, self);
        if self.m.sched_cpu_activate(cpu, self).is_err() {
            self.check(false);
        }
        let ts = self.m.tick_sched(cpu);
        self.check_that(
            !self.m.nohz_idle_test(cpu)
                && rq.nohz_flags().load().is_empty()
                && !rq.csd_busy()
                && !rq.nohz_tick_stopped()
                && !self.m.nohz_idle(cpu)
                && ts.flags() == TsFlags::NOHZ | TsFlags::HIGHRES
                && ts.timer_expires_base() == 0
                && ts.next_tick() == 0
                && ts.tick_dep_mask() == 0,
            "a CPU back online is not in a freshly booted CPU's state",
        );
        c.down.store(false, Relaxed);
        self.counters.hotplug_cycles.fetch_add(1, Relaxed);
    }

    /// One hotplug invariant check: counts it, and a violation when it fails.
    fn check(&self, holds: bool) {
        self.check_that(holds, "hotplug invariant");
    }

    /// One hotplug invariant check, `what` naming the violation.
    fn check_that(&self, holds: bool, what: &str) {
        self.counters.hotplug_checks.fetch_add(1, Relaxed);
        if !holds {
            self.violation(what);
        }
    }

    /// Idle transitions counted so far, all CPUs.
    pub fn transitions(&self) -> u64 {
        self.cpus.iter().map(|c| c.transitions.load(Relaxed)).sum()
    }

    /// Counts an invariant violation; the first one is kept with the transitions counted by
    /// then.
    pub(crate) fn violation(&self, what: &str) {
        self.counters.invariant_violations.fetch_add(1, Relaxed);
        let mut first = self
            .counters
            .first_violation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some((what.to_string(), self.transitions()));
        }
    }

    /// Moves every task queued on CPU `i` to the other CPUs that are up (the kernel's
    /// `balance_push` and `sched_cpu_dying` migrations; bound tasks lose their binding).
    pub(crate) fn push_tasks_away(&self, i: usize) {
        let tasks: Vec<Task> = {
            let mut q = self.cpus[i].rq.lock().unwrap_or_else(|e| e.into_inner());
            let tasks = q.drain(..).collect();
            self.sync_rq(i, 0, self.m.rq(self.cpu(i)).curr_is_idle());
            tasks
        };
        let up: Vec<usize> = (0..self.nr.get())
            .filter(|&j| j != i && !self.cpus[j].down.load(Relaxed))
            .collect();
        for (k, task) in tasks.into_iter().enumerate() {
            self.enqueue(up[k % up.len()], [task]);
        }
    }

    /// The model RCU's read-side section around one interrupt of CPU `i`: the counter goes
    /// odd, a SeqCst fence (pairs with the grace period's), the body, the counter even again
    /// with Release.
    pub(crate) fn rcu_read<T>(&self, i: usize, body: impl FnOnce() -> T) -> T {
        let rcu = &self.cpus[i].rcu;
        rcu.fetch_add(1, Relaxed);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let r = body();
        rcu.fetch_add(1, std::sync::atomic::Ordering::Release);
        r
    }

    pub(crate) fn pick(&self, i: usize) -> Option<Task> {
        let mut rq = self.cpus[i].rq.lock().unwrap_or_else(|e| e.into_inner());
        let task = rq.pop_front()?;
        let rqc = self.m.rq(self.cpu(i));
        rqc.set_curr_is_idle(false);
        self.sync_rq(i, rq.len(), false);
        drop(rq);
        self.update_full_dependency(i);
        Some(task)
    }

    /// A NO_HZ_FULL CPU needs its tick while it has more than one runnable task: the crate's
    /// `sched_update_tick_dependency` (the bit, and on the CPU itself the tick at once; from
    /// another CPU the target looks again at its next interrupt's exit).
    pub(crate) fn update_full_dependency(&self, i: usize) {
        if self.cpus[i].nohz_full.load(Relaxed) {
            self.m.sched_update_tick_dependency(self.cpu(i), self);
        }
    }

    fn run_task(
        &self,
        cpu: Cpu,
        task: Task,
        rng: &mut fastrand::Rng,
        next_stall: &mut Option<Instant>,
    ) {
        let i = cpu.index();
        // Work is CPU time: a thread sharing its core with another takes longer to finish.
        let work = Duration::from_micros(task.work_us);
        let cpu_start = cpu_time::ThreadTime::now();
        loop {
            let slice_end = Instant::now() + SLICE;
            while Instant::now() < slice_end {
                std::hint::spin_loop();
            }
            if let Some(at) = *next_stall
                && Instant::now() >= at
            {
                std::thread::sleep(Duration::from_micros(self.faults.stall_us));
                *next_stall = self.stall_deadline(rng);
            }
            self.service(cpu);
            if cpu_start.elapsed() >= work || self.stopping() {
                break;
            }
        }
        self.cpus[i].completed.fetch_add(1, Relaxed);
        if let Some(b) = task.burst {
            let mut bursts = self.bursts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(burst) = bursts.get_mut(b) {
                burst.remaining = burst.remaining.saturating_sub(1);
                if burst.remaining == 0 {
                    burst.done = Some(Instant::now());
                }
            }
        }
        let queued = self.cpus[i]
            .rq
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        self.sync_rq(i, queued, false);
        self.update_full_dependency(i);
    }

    /// Takes the interrupts that are due on `cpu`.
    pub(crate) fn service(&self, cpu: Cpu) {
        let c = &self.cpus[cpu.index()];
        let now = self.now_ns();
        if c.ipi_pending.load(Relaxed) && now >= c.ipi_at.load(Relaxed) {
            self.irq(cpu, Irq::Ipi);
        }
        if c.tick_due(now) {
            self.irq(cpu, Irq::Timer);
        }
    }

    /// One interrupt on `cpu`, through the crate's driver layer, in an RCU read-side section
    /// (interrupts are off throughout in a kernel), as crate code (its sequence counter odd).
    /// Returns whether a kick's csd ran.
    pub(crate) fn irq(&self, cpu: Cpu, kind: Irq) -> bool {
        let i = cpu.index();
        self.enter(i);
        let ran = self.rcu_read(i, || self.irq_body(cpu, kind));
        self.leave(i);
        ran
    }

    fn irq_body(&self, cpu: Cpu, kind: Irq) -> bool {
        let i = cpu.index();
        let c = &self.cpus[i];
        match kind {
            Irq::Ipi => {
                // The csd may have run already: the idle loop's exit flushes it, and the
                // kernel's handler then finds the queue empty too.
                if !c.ipi_pending.swap(false, Relaxed) {
                    return false;
                }
                let ran = if self.plant == Plant::CsdLeak {
                    self.m.irq_enter(cpu, self);
                    let ran = nohz_testing::nohz_csd_ipi_without_release(&self.m, cpu, self);
                    self.m.irq_exit(cpu, self);
                    ran
                } else {
                    self.m.kick_interrupt(cpu, self).is_some()
                };
                if ran {
                    c.ipis_delivered.fetch_add(1, Relaxed);
                }
                ran
            }
            Irq::Timer => {
                let now = self.now_ns();
                let wakeup = now >= c.next_timer.load(Relaxed);
                let tick = c.tick_due(now);
                let registered = self.m.rq(cpu).nohz_tick_stopped();
                let mut ran = false;
                if wakeup {
                    // The workload's wakeup timer fires in the same interrupt as the tick (an
                    // hrtimer interrupt runs every expired timer), before it.
                    self.m.irq_enter(cpu, self);
                    self.wakeup_timer(i);
                    if tick {
                        c.tick_armed.store(false, Relaxed);
                        self.m.tick_sched_timer(cpu, self);
                        ran = true;
                    }
                    self.m.irq_exit(cpu, self);
                } else if tick {
                    // A one-shot timer fires once; the handler re-arms a periodic tick.
                    c.tick_armed.store(false, Relaxed);
                    ran = self.m.timer_interrupt(cpu, self).ran();
                }
                if ran {
                    self.watch_jiffies(i, now);
                }
                if registered && !self.m.rq(cpu).nohz_tick_stopped() {
                    // Its first busy tick took it out of the idle mask: one transition.
                    c.transitions.fetch_add(1, Relaxed);
                }
                false
            }
        }
    }

    /// The jiffies watch, after each tick CPU `i` ran (its interrupt taken at `now`): jiffies
    /// must not stay the same over more than `MAX_STALLED_JIFFIES + 1` of its ticks a period
    /// apart or more, whoever keeps time and whether or not it is held. Whoever updated them
    /// last did so before the second of those ticks began, so by the fifth tick after it a CPU
    /// has seen them stall for [`TickSched::MAX_STALLED_JIFFIES`](nohz::TickSched) ticks at
    /// least a period after that update, and updated them itself (`tick_sched_do_timer`'s
    /// fallback); ticks closer together than a period are not counted (a stopped tick
    /// reprogrammed for a near event can fire again within the period, and then jiffies have
    /// nothing to catch up).
    pub(crate) fn watch_jiffies(&self, i: usize, now: u64) {
        let c = &self.cpus[i];
        let seen = self.jiffies.get().get();
        let run = c.watch_run.load(Relaxed);
        if run == 0 || seen != c.watch_jiffies.load(Relaxed) {
            c.watch_jiffies.store(seen, Relaxed);
            c.watch_run.store(1, Relaxed);
            c.watch_at.store(now, Relaxed);
            return;
        }
        if now < c.watch_at.load(Relaxed).saturating_add(tick_nsec(HZ)) {
            return;
        }
        c.watch_at.store(now, Relaxed);
        c.watch_run.store(run + 1, Relaxed);
        if run + 1 == nohz::TickSched::MAX_STALLED_JIFFIES + 2 {
            self.violation(&format!(
                "jiffies stalled: CPU {i} saw jiffies {seen} on {} ticks a period apart (the \
                 timekeeper held, and nobody else updated them)",
                run + 1
            ));
        }
    }

    /// The workload's wakeup timer on CPU `i`: the churn workload's (and the soak's) next task.
    fn wakeup_timer(&self, i: usize) {
        let c = &self.cpus[i];
        c.next_timer.store(KTIME_MAX, Relaxed);
        if let Some(w) = self.self_wake {
            let work = fastrand::u64(w.min_work_us..=w.max_work_us.max(w.min_work_us));
            self.enqueue(
                i,
                [Task {
                    work_us: work,
                    burst: None,
                    pinned: true,
                }],
            );
        }
    }

    /// Nothing to run: the crate's idle loop, with the churn wakeup timer armed first.
    pub(crate) fn idle(&self, cpu: Cpu, rng: &mut fastrand::Rng) {
        let i = cpu.index();
        let c = &self.cpus[i];
        if let Some(w) = self.self_wake {
            let ticks = rng.u64(w.min_ticks..=w.max_ticks.max(w.min_ticks));
            c.next_timer
                .store(self.now_ns() + ticks * tick_nsec(HZ), Relaxed);
        }
        let rq = self.m.rq(cpu);
        rq.set_curr_is_idle(true);
        {
            let q = c.rq.lock().unwrap_or_else(|e| e.into_inner());
            self.sync_rq(i, q.len(), true);
        }
        rq.set_avg_idle(1_000_000);
        // Idle adds blocked load for the ILB to decay.
        c.blocked_load.store(self.idle_load, Relaxed);
        c.idle_entries.fetch_add(1, Relaxed);
        c.calls_at_entry
            .store(self.m.tick_sched(cpu).idle_calls(), Relaxed);
        c.stop_attempt_ran.store(false, Relaxed);
        let exit = self.in_crate(i, || self.m.do_idle(cpu, self));
        c.stop_attempt_ran.store(false, Relaxed);
        if exit == IdleExit::Resched {
            c.need_resched.store(false, Relaxed);
        }
    }

    /// Final checks once every CPU thread is gone: drains undelivered kicks on their CPUs' behalf
    /// and counts kick bits left behind or a csd left busy.
    pub fn final_checks(&self) {
        for cpu in self.nr.iter() {
            let c = &self.cpus[cpu.index()];
            CURRENT.with(|x| x.set(Some(cpu.index())));
            if c.ipi_pending.load(Relaxed) {
                self.irq(cpu, Irq::Ipi);
            }
            let rq = self.m.rq(cpu);
            if rq.nohz_flags().load().intersects(NohzFlags::KICK_MASK) || rq.csd_busy() {
                self.violation("kick bits or a busy csd left behind at the end");
            }
            CURRENT.with(|x| x.set(None));
        }
    }
}

/// What interrupted a CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Irq {
    Ipi,
    Timer,
}

impl<P: Policy, const HZ: u32> Clock for Sim<P, HZ> {
    const HZ: u32 = HZ;
    fn jiffies(&self) -> Jiffies {
        self.jiffies.get()
    }
}

impl<P: Policy, const HZ: u32> CpuState<CAP> for Sim<P, HZ> {
    fn need_resched(&self, cpu: Cpu) -> bool {
        self.cpus[cpu.index()].need_resched.load(Relaxed)
    }
    fn this_cpu(&self) -> Option<Cpu> {
        CURRENT.with(Cell::get).and_then(|i| self.nr.cpu(i).ok())
    }
    fn synchronize_rcu(&self) {
        let me = CURRENT.with(Cell::get);
        let dying = me.filter(|&i| self.cpus[i].deactivating.load(Relaxed));
        let Some(i) = dying else {
            return self.grace_period(me);
        };
        // The hotplug thread sleeps: the CPU runs its idle task, the crate's do_idle (the
        // crate must refuse to register it now), whose idle state waits for the grace period.
        let cpu = self.cpu(i);
        let c = &self.cpus[i];
        let rq = self.m.rq(cpu);
        rq.set_curr_is_idle(true);
        self.sync_rq(i, 0, true);
        // A reschedule already pending (a wakeup, the run's stop) waits for the idle pass.
        let pending = c.need_resched.swap(false, Relaxed);
        c.grace_wait.store(true, Relaxed);
        self.m.do_idle(cpu, self);
        if c.grace_wait.swap(false, Relaxed) {
            // The idle loop ended before its idle state (the run is stopping): wait here.
            self.grace_period(me);
        }
        c.need_resched.store(pending || self.stopping(), Relaxed);
        // The hotplug thread runs again.
        rq.set_curr_is_idle(false);
        self.sync_rq(i, 0, false);
    }
}

impl<P: Policy, const HZ: u32> Sim<P, HZ> {
    /// The idle state on the host clock: parks until the next interrupt is due or a wakeup.
    fn host_idle_state(&self, cpu: Cpu) {
        let c = &self.cpus[cpu.index()];
        loop {
            if c.need_resched.load(Relaxed) {
                return;
            }
            if self.stopping() {
                // The run's end reschedules: the idle loop returns.
                c.need_resched.store(true, Relaxed);
                return;
            }
            let now = self.now_ns();
            let ipi_due = c.ipi_pending.load(Relaxed) && now >= c.ipi_at.load(Relaxed);
            let timer_due = c.tick_due(now);
            if ipi_due || timer_due {
                // An interrupt ends the idle state.
                self.irq(cpu, if ipi_due { Irq::Ipi } else { Irq::Timer });
                return;
            }
            let mut deadline = if c.tick_armed.load(Relaxed) {
                c.tick_expiry.load(Relaxed)
            } else {
                KTIME_MAX
            };
            if c.ipi_pending.load(Relaxed) {
                deadline = deadline.min(c.ipi_at.load(Relaxed));
            }
            let wait = deadline.saturating_sub(now).min(1_000_000);
            let t0 = Instant::now();
            std::thread::park_timeout(Duration::from_nanos(wait.max(1_000)));
            c.waited_ns
                .fetch_add(t0.elapsed().as_nanos() as u64, Relaxed);
        }
    }

    /// The grace period: every CPU but `me` is seen outside an interrupt, or leaves the one it
    /// is in (the Acquire pairs with its Release on leaving).
    fn grace_period(&self, me: Option<usize>) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        for (j, c) in self.cpus.iter().enumerate() {
            if Some(j) == me {
                continue;
            }
            let seen = c.rcu.load(std::sync::atomic::Ordering::Acquire);
            if seen % 2 == 1 {
                while c.rcu.load(std::sync::atomic::Ordering::Acquire) == seen {
                    std::thread::yield_now();
                }
            }
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl<P: Policy, const HZ: u32> Ipi<CAP> for Sim<P, HZ> {
    fn send_nohz_ipi(&self, from: Cpu, to: Cpu) {
        let c = &self.cpus[to.index()];
        if self.faults.hotplug_every_ms > 0 {
            // No nohz IPI to a CPU whose deactivation returned, until it is back.
            self.check_that(!c.down.load(Relaxed), "a nohz IPI to a deactivated CPU");
        }
        let delay = if self.faults.ipi_delay_us > 0 {
            self.cpus[from.index()].faults.fetch_add(1, Relaxed);
            fastrand::u64(0..=self.faults.ipi_delay_us) * 1000
        } else {
            0
        };
        c.ipi_at.store(self.now_ns() + delay, Relaxed);
        // A second IPI while one is in flight coalesces with it, as a pending interrupt
        // vector does. The csd protocol allows it only after a flush (the idle loop's exit)
        // ran the first one's csd: a send while the csd is still busy is refused by kick_ilb
        // and counted as a CsdBusy warning.
        c.ipi_pending.store(true, Relaxed);
        c.ilb_picks.fetch_add(1, Relaxed);
        self.cpus[from.index()].kicks_sent.fetch_add(1, Relaxed);
        if let Some(t) = c.thread.get() {
            t.unpark();
        }
    }
}

impl<P: Policy, const HZ: u32> Softirq<CAP> for Sim<P, HZ> {
    /// The crate keeps the pending bit and [`Machine::irq_exit`] runs the softirq; the
    /// harness only counts the raises that carry ILB work (the csd handler hands its flags to
    /// `rq.nohz_idle_balance` before raising).
    fn raise_sched_softirq(&self, cpu: Cpu) {
        if !self.m.rq(cpu).nohz_idle_balance().is_empty() {
            self.cpus[cpu.index()].ilb_passes.fetch_add(1, Relaxed);
        }
    }
}

impl<P: Policy, const HZ: u32> Topology<CAP> for Sim<P, HZ> {
    fn has_sched_domain(&self, _cpu: Cpu) -> bool {
        self.nr.get() > 1
    }
    fn llc_leader(&self, _cpu: Cpu) -> Option<Cpu> {
        self.nr.cpu(0).ok()
    }
}

impl<P: Policy, const HZ: u32> Sim<P, HZ> {
    /// Moves up to `want` queued tasks from the busiest other run queue to `to`'s.
    fn pull(&self, to: usize, want: usize) -> usize {
        let busiest = (0..self.nr.get()).filter(|&j| j != to).max_by_key(|&j| {
            self.cpus[j]
                .rq
                .lock()
                .map_or(0, |q| q.iter().filter(|t| !t.pinned).count())
        });
        let Some(from) = busiest else { return 0 };
        let moved: Vec<Task> = {
            let mut q = self.cpus[from].rq.lock().unwrap_or_else(|e| e.into_inner());
            // Leave the source as busy as the destination will be; bound tasks stay.
            let movable = q.iter().filter(|t| !t.pinned).count();
            let take = want.min(movable / 2 + movable % 2);
            let mut moved = Vec::with_capacity(take);
            while moved.len() < take {
                let Some(pos) = q.iter().rposition(|t| !t.pinned) else {
                    break;
                };
                moved.extend(q.remove(pos));
            }
            let idle = self.m.rq(self.cpu(from)).curr_is_idle();
            self.sync_rq(from, q.len(), idle);
            moved
        };
        let n = moved.len();
        if n > 0 {
            self.cpus[to].pulled_in.fetch_add(n as u64, Relaxed);
            self.enqueue(to, moved);
            self.update_full_dependency(from);
        }
        n
    }
}

impl<P: Policy, const HZ: u32> Balance<CAP> for Sim<P, HZ> {
    fn update_blocked_averages(&self, _by: Cpu, cpu: Cpu) -> bool {
        let c = &self.cpus[cpu.index()];
        let left = c.blocked_load.load(Relaxed) / 2;
        c.blocked_load.store(left, Relaxed);
        left > 0
    }
    fn update_rq_clock(&self, _by: Cpu, _cpu: Cpu) {}
    fn balance_domains(&self, _by: Cpu, cpu: Cpu, idle: CpuIdleType) -> Jiffies {
        let interval = if idle == CpuIdleType::Idle {
            let want = if self.m.rq(cpu).idle_cpu() { 2 } else { 0 };
            if want > 0 {
                self.pull(cpu.index(), want);
            }
            4
        } else {
            16
        };
        self.jiffies.get().add(interval)
    }
    fn newidle_balance(&self, cpu: Cpu, _t0: u64) -> NewidleOutcome {
        let pulled = self.pull(cpu.index(), 1) > 0;
        NewidleOutcome {
            pulled_task: pulled,
            next_balance: None,
        }
    }
}

impl<P: Policy, const HZ: u32> TickHardware<CAP> for Sim<P, HZ> {
    fn ktime_get(&self) -> u64 {
        self.now_ns()
    }
    fn jiffies_update(&self) -> (Jiffies, u64) {
        let last = *self
            .last_jiffies_update
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        (self.jiffies.get(), last)
    }
    fn update_jiffies(&self, now: u64) {
        let period = tick_nsec(HZ);
        let mut last = self
            .last_jiffies_update
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if now < last.saturating_add(period) {
            return;
        }
        let ticks = (now - *last) / period;
        self.jiffies.advance(ticks as usize);
        *last += ticks * period;
    }
    fn cpu_needs_tick(&self, _cpu: Cpu) -> bool {
        false
    }
    fn next_timer_interrupt(&self, cpu: Cpu, _basej: Jiffies, basem: u64) -> u64 {
        // A wakeup timer already expired (its interrupt not handled yet) is due now, at the
        // base, as the kernel's timer wheel reports it; never earlier (the crate warns).
        self.cpus[cpu.index()].next_timer.load(Relaxed).max(basem)
    }
    fn timer_base_try_to_set_idle(&self, cpu: Cpu, _basej: Jiffies, _basem: u64) -> Option<u64> {
        let c = &self.cpus[cpu.index()];
        c.base_idle.store(true, Relaxed);
        Some(c.next_timer.load(Relaxed))
    }
    fn timer_clear_idle(&self, cpu: Cpu) {
        self.cpus[cpu.index()].base_idle.store(false, Relaxed);
    }
    fn timekeeping_max_deferment(&self) -> u64 {
        Duration::from_secs(2).as_nanos() as u64
    }
    fn program_tick(&self, cpu: Cpu, expires: u64) {
        let c = &self.cpus[cpu.index()];
        c.tick_expiry.store(expires, Relaxed);
        c.tick_armed.store(true, Relaxed);
    }
    fn cancel_tick(&self, cpu: Cpu) {
        self.cpus[cpu.index()].tick_armed.store(false, Relaxed);
    }
    fn tick_expiry(&self, cpu: Cpu) -> u64 {
        self.cpus[cpu.index()].tick_expiry.load(Relaxed)
    }
    fn local_softirq_pending(&self, _cpu: Cpu) -> u32 {
        0
    }
    fn vtime_accounting(&self, cpu: Cpu) -> bool {
        self.cpus[cpu.index()].nohz_full.load(Relaxed)
    }
}

impl<P: Policy, const HZ: u32> IdleHooks<CAP> for Sim<P, HZ> {
    fn poll_idle(&self, cpu: Cpu) {
        self.cpuidle_enter(cpu);
    }
    fn cpuidle_enter(&self, cpu: Cpu) {
        let i = cpu.index();
        let c = &self.cpus[i];
        if c.grace_wait.swap(false, Relaxed) {
            // The dying CPU's idle state during its deactivation: the grace period passes.
            self.grace_period(Some(i));
            c.need_resched.store(true, Relaxed);
            return;
        }
        // Past the stop attempt of this idle period, if it ran (idle_calls moved).
        if self.m.tick_sched(cpu).idle_calls() > c.calls_at_entry.load(Relaxed) {
            c.stop_attempt_ran.store(true, Relaxed);
        }
        // Outside crate code until an interrupt or the return.
        c.in_idle_state.store(true, Relaxed);
        self.leave(i);
        if self.virtual_clock {
            self.soak_idle_state(cpu);
        } else {
            self.host_idle_state(cpu);
        }
        self.enter(i);
        c.in_idle_state.store(false, Relaxed);
    }
    fn report_idle_dead(&self, _cpu: Cpu) {}
}
