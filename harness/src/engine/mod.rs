//! The virtual-time engine: the real `nohz` crate driven, one event at a time, for hundreds of
//! logical CPUs on one host thread, deterministically.
//!
//! The engine is one more embedder. It implements the crate's platform traits and makes only
//! the calls of the embedding contract (`init`, `tick_nohz_full_setup`, `cpu_starting`,
//! `timer_interrupt`, `kick_interrupt`, `interrupt`, `update_rq`, `sched_balance_newidle`,
//! `do_idle`), in the order a kernel makes them; it reads the crate's state only to check it.
//!
//! # Time and events
//!
//! One clock, in nanoseconds, moved from event to event: a CPU's sched timer (programmed by
//! the crate, its interrupt arriving up to [`TICK_JITTER_NS`] late), an IPI arriving (the
//! nohz kick, a reschedule) [`Config::ipi_ns`] after it was sent, a wakeup timer (a sleeping
//! task, a new task, a batch of work, a device interrupt) and the end of a task's run. Events
//! at the same nanosecond run in the order they were made. Jiffies are the crate's
//! [`Timekeeper`], moved by the crate's own timekeeping (the timekeeper CPU's tick, a tickless
//! CPU's interrupt entry), exactly as in a kernel.
//!
//! The crate's code takes no time of its own, except in the counting build, where the
//! contention cost model ([`cost`]) charges each event's accesses to its CPU: a running task
//! then ends that much later. Each event runs whole, as its CPU's, before the next.
//!
//! # Idle
//!
//! A CPU with nothing to run goes through the crate's newidle balance and then its `do_idle`,
//! which runs on a stackful coroutine of its own ([`corosensei`]): when `do_idle` reaches the
//! idle instruction ([`IdleHooks::cpuidle_enter`]) the coroutine suspends, and the CPU's next
//! interrupt resumes it there, runs the interrupt through the crate and returns into the idle
//! loop, which stops or keeps the tick, goes back to sleep or leaves. Only one coroutine or the
//! engine's loop runs at a time, so the run is sequential and the same seed gives the same
//! run, bit for bit.
//!
//! # Scheduling and balancing
//!
//! Each CPU runs one task at a time from a FIFO queue, rotating at the tick after
//! [`SLICE_NS`] while others wait. A task runs, sleeps on a timer of the CPU it ran on, and is
//! woken by that timer (or by another task, from that task's CPU), placed as the kernel
//! places a wakeup: `select_task_rq_fair` (`wake_affine`, then an idle CPU of the target's
//! cache by `select_idle_sibling`, its scan limited by SIS_UTIL), on PELT-like signals of each
//! CPU and task. A new task is placed as the kernel places a fork (`find_idlest_group`, from
//! the forking CPU's top domain down). Each has one entry point, `wake_up` and `fork`. The
//! balancer ([`Balance`]) pulls from the busiest CPU of each scheduling domain with the
//! kernel's per-domain intervals (`balance_interval` from the domain's weight, doubled while
//! balanced, times the busy factor on a busy CPU). These scheduler parts, which the crate does
//! not mirror, are the engine's own, one file per mechanism named after its C function, in
//! `sched/`.
//!
//! # Checks
//!
//! After every event (or every [`Config::check_every`]), with nothing half done, the engine
//! checks the invariants the harness's quiescent snapshots check and the reference model's
//! cross-CPU consistencies, exactly (module `check`). [`Plant`] plants a bug to show that
//! they catch it.
//!
//! # Rooms
//!
//! This file keeps the event loop: the engine's state, its core event plumbing (the event
//! queue, run queues and `update_rq`, a task's run, block and wakeup, the interrupts and the
//! idle state), the platform trait impls through which the crate calls back (all of them
//! here, together), and the `Runner` that boots the machine and hands it each event. The
//! rest has rooms of its own:
//!
//! - `sched/`: the kernel's scheduler parts the crate does not mirror (wakeup placement, load
//!   balancing, the periodic and newidle balances, blocked load, the scheduling domains), one
//!   file per mechanism, named after its C function, each opening with its C source.
//! - `load/`: one file per kind of workload source (a benchmark's load); [`work`] describes
//!   them, publicly, for the scenarios.
//! - `block.rs`: a synchronizing load's task (llama's team, hackbench's senders and
//!   receivers) blocking on the load's object instead of a timer and woken by another task,
//!   and the wakeup and fork entry points (`wake_up`, `fork`).
//! - `metrics.rs`: the counters, each CPU's time accounting, and the run's [`Outcome`].
//! - `hotplug.rs`: CPUs taken offline and brought back, the engine's side.
//! - `governor.rs`: the menu-like cpuidle governor ([`Governor`]).
//! - `check.rs`: the invariants; [`cost`]: the contention cost model (counting build) and
//!   [`validate`] its check against the bench; [`topo`]: the machine's shape; [`scenario`]:
//!   the seeds' machines and loads.

mod block;
mod check;
pub mod cost;
mod governor;
mod hotplug;
mod load;
mod metrics;
pub mod scenario;
mod sched;
pub mod topo;
mod trace;
pub mod validate;
pub mod work;

use crate::sim::{CAP, Cpu, Mach};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use load::{BatchSt, SyncSt};
use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, KTIME_MAX, NewidleDomain,
    NewidleOutcome, Softirq, TickHardware, Topology, tick_nsec,
};
use nohz::{
    IdleExit, Jiffies, KickDecision, Machine, NohzFlags, Policy, RqFacts, Timekeeper, TsFlags,
};
use sched::Domain;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::ops::Range;
use std::rc::Rc;
use topo::Shape;
use work::{TaskKind, Workload, around};

pub use governor::{Governor, IDLE_HISTORY};
use metrics::{Counts, IdleWhileWaiting};
pub use metrics::{Outcome, warmup};
pub use sched::BalanceCosts;

/// The `Sharded` policy the engine runs: the shipped modes (shards by LLC of at most 64
/// CPUs, `LocalFirst`, `Hint`), with room for a shard per LLC down to LLCs of 8 CPUs at the
/// engine's full capacity (the frontier's 24 caches of 32 CPUs need 24 shards).
pub type Sharded = nohz::Sharded<{ CAP / 8 }>;

/// How long a task runs before the tick rotates it behind the others queued (the kernel's
/// `sysctl_sched_base_slice` order of magnitude).
pub const SLICE_NS: u64 = 3_000_000;

/// The most a sched timer's interrupt arrives after its expiry (uniform from 0): local timers
/// fire on a shared clock, so every CPU's tick comes at the same jiffy edge give or take
/// interrupt delivery, and the first shared line every tick touches sees them all at once.
pub const TICK_JITTER_NS: u64 = 2_000;

/// Stack of one CPU's idle coroutine: `do_idle` and the interrupts it takes, debug builds
/// included, with a wide margin.
const IDLE_STACK: usize = 256 * 1024;

/// One run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The machine.
    pub shape: Shape,
    /// The load.
    pub workload: Workload,
    /// Simulated time, in nanoseconds.
    pub sim_ns: u64,
    /// The seed of every random draw.
    pub seed: u64,
    /// How long an IPI takes to arrive, in nanoseconds.
    pub ipi_ns: u64,
    /// Check the invariants after every this many events (1: after each; 0: at the end only).
    pub check_every: u64,
    /// The contention cost model's transfer costs (used by the counting build only).
    pub cost: cost::CostParams,
    /// Irq-time accounting on (`enable_sched_clock_irqtime` at boot, as x86 does with a
    /// stable TSC).
    pub irqtime: bool,
    /// A bug planted for the run, to show which the checks catch.
    pub plant: Plant,
    /// The cpuidle governor that answers `cpuidle_select`.
    pub governor: Governor,
    /// Take a CPU offline and back about this often, in nanoseconds (0: never). One CPU at a
    /// time, for half this long, never the first CPU of a cpuset.
    pub hotplug_every_ns: u64,
    /// What balancing work costs in time ([`BalanceCosts`]).
    pub costs: BalanceCosts,
}

impl Config {
    /// A run of `sim_ns` simulated nanoseconds of `workload` on `shape`, with the defaults
    /// for the rest: seed 1, IPIs arriving in 2 us, the invariants checked after every event,
    /// the cost model's and the balancing costs' defaults, no irq time, no plant, no cpuidle
    /// governor, no hotplug.
    pub fn new(shape: Shape, workload: Workload, sim_ns: u64) -> Config {
        Config {
            shape,
            workload,
            sim_ns,
            seed: 1,
            ipi_ns: 2_000,
            check_every: 1,
            cost: Default::default(),
            irqtime: false,
            plant: Plant::None,
            governor: Governor::None,
            hotplug_every_ns: 0,
            costs: BalanceCosts::default(),
        }
    }
}

/// A bug the engine can plant, to show that its checks catch it.
///
/// Of the threaded harness's plants, the engine takes `csd-leak` and `hotplug-order`;
/// `ilb-fence` (a weakened fence) cannot show in a sequential run, whose every access is seen
/// by the next in program order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Plant {
    /// None: the crate and the embedding as they are.
    #[default]
    None,
    /// The nohz kick's handler consumes the kick bits but never frees the csd (the crate's
    /// planted-bug hook, as the threaded soak plants it).
    CsdLeak,
    /// The embedder forgets `update_rq` when it queues a task on another CPU (the README's
    /// old vendoring snippet): that CPU's facts go stale.
    LostUpdateRq,
    /// `sched_cpu_deactivate` in the order before the hotplug fix (the grace period before
    /// the active bit is cleared): the dying CPU's idle pass in the grace period registers it
    /// again. Needs hotplug cycles (`hotplug_every_ns`).
    HotplugOrder,
    /// `rq.has_blocked_load` cleared after a decay that found nothing left as the crate did it
    /// before it became conditional: whatever the CPU set meanwhile
    /// (`nohz::internals::clear_has_blocked_load_unconditionally`, feature `testing`). Shows
    /// once a decay spans events and the CPU runs and idles again during it.
    BlockedClear,
}

impl Plant {
    /// The plant's name (`none`, `csd-leak`, `lost-update-rq`).
    pub fn name(self) -> &'static str {
        match self {
            Plant::None => "none",
            Plant::CsdLeak => "csd-leak",
            Plant::LostUpdateRq => "lost-update-rq",
            Plant::HotplugOrder => "hotplug-order",
            Plant::BlockedClear => "blocked-clear",
        }
    }
}

/// An event, for CPU `cpu` at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The sched timer, programmed with this generation.
    Tick(u64),
    /// The nohz kick IPI.
    Kick,
    /// A reschedule IPI (a task was queued here).
    Resched,
    /// A wakeup timer.
    Timer(u64),
    /// The running task's run ends (this generation of it).
    Done(u64),
    /// The CPU's hotplug thread wakes to take it offline.
    Hotplug,
    /// The grace period the dying CPU waits for in `sched_cpu_deactivate` ends.
    GraceEnd,
    /// The offline CPU is brought back.
    Up,
    /// The balancing work a CPU is doing (this generation of it) is done: its pass or walk
    /// goes on (see [`Engine::spend`]).
    Resume(u64),
}

/// What a CPU's idle coroutine is resumed with: go idle, or the interrupt that woke it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Irq {
    /// Not an interrupt: the CPU has nothing to run; its coroutine runs the newidle balance,
    /// then the switch to the idle task and its loop.
    Newidle,
    /// Not an interrupt either: the CPU's hotplug thread runs the takedown on its coroutine.
    Takedown,
    /// Not an interrupt: the balancing work the coroutine waits on is done
    /// ([`Ev::Resume`]).
    Resume,
    GraceEnd,
    Tick,
    Kick,
    Resched,
    Timer(u64),
}

/// An event in the queue: its time, its sequence number (ties run in the order made), its CPU.
type Queued = (u64, u64, usize, Ev);

/// What the idle coroutine suspends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halt {
    /// In the idle state, waiting for an interrupt.
    Halted,
    /// `do_idle` returned.
    Exited(IdleExit),
    /// The takedown ran: the CPU is offline.
    Down,
    /// The crate refused the takedown: the CPU stays.
    Refused,
    /// Balancing work takes time: the coroutine waits for its [`Ev::Resume`], the CPU's
    /// interrupts held meanwhile ([`Engine::spend`]).
    Busy,
    /// The newidle balance found work (pulled a task, or one was queued during its walk):
    /// the CPU schedules instead of idling.
    Pulled,
}

/// What a wakeup timer does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// Wakes a sleeping task.
    Wake(usize),
    /// A new task of source `n` arrives.
    Arrive(usize),
    /// A batch of source `n` is queued.
    Batch(usize),
    /// A device interrupt of source `n`, its stream (the CPU of its range) `lane`.
    Device(usize, usize),
}

/// A task.
#[derive(Debug, Clone)]
struct Task {
    kind: TaskKind,
    /// CPU time left in this run.
    left: u64,
    /// Runs left (0: unlimited).
    runs_left: u32,
    /// The CPU it last ran or slept on.
    prev: usize,
    /// The CPUs it may run on.
    allowed: Range<usize>,
    /// The batch source it belongs to, if any.
    batch: Option<usize>,
    /// Since when it is runnable and waiting to run (`None` while it runs or sleeps).
    runnable_since: Option<u64>,
    /// The synchronizing load (its source) that decides what it does when a stretch of its
    /// work ends (`block.rs`), if any.
    script: Option<usize>,
    /// Its placement state (PELT, wakees, `recent_used_cpu`).
    place: sched::TaskPlace,
    /// Its own generator for its runs' and sleeps' lengths (an arrival's task: `load/`);
    /// `None`: the run's.
    rng: Option<fastrand::Rng>,
}

/// One logical CPU, as the engine keeps it.
#[derive(Debug, Default)]
struct CpuSt {
    nohz_full: bool,
    /// Inside `do_idle` (its coroutine is live).
    in_idle: Cell<bool>,
    /// Suspended in the idle state.
    halted: Cell<bool>,
    halted_at: Cell<u64>,
    halted_invisible: Cell<bool>,
    /// The idle task is current (`rq->curr == rq->idle`).
    idle_current: Cell<bool>,
    need_resched: Cell<bool>,
    curr: Cell<Option<usize>>,
    run_start: Cell<u64>,
    /// When the running task's run ends.
    done_at: Cell<u64>,
    /// Time the crate's code took from the running task since it started.
    stolen: Cell<u64>,
    /// Time the crate's code took on this CPU (the cost model).
    kernel_ns: Cell<u64>,
    queue: RefCell<VecDeque<usize>>,
    done_gen: Cell<u64>,
    tick_gen: Cell<u64>,
    tick_expiry: Cell<u64>,
    /// Kick IPIs on their way.
    kicks_in_flight: Cell<u32>,
    /// Wakeup timers pending on this CPU: (expiry, id).
    timers: RefCell<BTreeSet<(u64, u64)>>,
    domains: RefCell<Vec<Domain>>,
    busy_ns: Cell<u64>,
    idle_ns: Cell<u64>,
    invisible_ns: Cell<u64>,
    ilb_passes: Cell<u64>,
    /// A takedown has begun (no task or pull is sent here until it is back).
    leaving: Cell<bool>,
    /// Deactivated (no nohz IPI may be sent here until it is back).
    down: Cell<bool>,
    /// Parked offline.
    offline: Cell<bool>,
    /// Woken from idle for its hotplug thread.
    hotplug_pending: Cell<bool>,
    /// In the grace-period idle of `sched_cpu_deactivate`.
    grace: Cell<bool>,
    /// The last idle periods (halts), for the governor; `idle_seen` counts them all.
    idle_hist: Cell<[u64; IDLE_HISTORY]>,
    idle_seen: Cell<u64>,
    /// Inside the newidle balance, on its coroutine (interrupts off, as in `__schedule`).
    in_newidle: Cell<bool>,
    /// Handling the nohz kick (the ILB pass its softirq runs) or the sched tick: what the
    /// balancing time spent meanwhile is counted as ([`metrics::Balancing`]).
    in_kick: Cell<bool>,
    in_tick: Cell<bool>,
    /// Balancing work in progress ([`Engine::spend`]): the coroutine waits for the
    /// [`Ev::Resume`] of this generation; the CPU's interrupts are held in `held` meanwhile.
    busy: Cell<bool>,
    busy_gen: Cell<u64>,
    busy_since: Cell<u64>,
    held: RefCell<VecDeque<Ev>>,
    /// Balancing time, by what it was ([`metrics::Balancing`]).
    balance_ns: [Cell<u64>; metrics::Balancing::ALL.len()],
    /// ILB time, by the work it did ([`metrics::Work`]), and the work in progress.
    ilb_work_ns: [Cell<u64>; metrics::Work::ALL.len()],
    busy_work: Cell<metrics::Work>,
    /// The newidle balance's state (`rq->idle_stamp`, `rq->avg_idle`,
    /// `rq->max_idle_balance_cost`).
    newidle: sched::NewidleSt,
    /// How `idle_while_waiting` counts this CPU now: idle, and the movable tasks waiting on
    /// its run queue.
    iww_idle: Cell<bool>,
    iww_waiting: Cell<usize>,
    /// The kick's pass running here met its abort test with work to do.
    pass_aborted: Cell<bool>,
    /// The blocked-load pass newidle asked for (`NOHZ_NEWILB`) runs at the start of this
    /// CPU's idle loop, until its first halt.
    in_newilb: Cell<bool>,
    /// Idle accounting: jiffies when the idle tick stopped (tick-based accounting only), the
    /// ticks that ran on the idle task while it was stopped, and the ticks the restart left
    /// to account.
    tick_stop_j: Cell<Option<Jiffies>>,
    stopped_ticks: Cell<usize>,
    account_due: Cell<Option<usize>>,
}

/// The engine's state, shared by its loop and the CPUs' idle coroutines.
struct Engine<P: Policy, const HZ: u32> {
    m: Box<Mach<P>>,
    time: Timekeeper<HZ>,
    shape: Shape,
    workload: Workload,
    ipi_ns: u64,
    plant: Plant,
    governor: Governor,
    hotplug_every: u64,
    /// A CPU is on its way down, offline or coming back (one at a time).
    hotplug_busy: Cell<bool>,
    now: Cell<u64>,
    seq: Cell<u64>,
    /// The CPU whose code runs now (`smp_processor_id()`).
    current: Cell<Option<usize>>,
    events: RefCell<BinaryHeap<Reverse<Queued>>>,
    cpus: Vec<CpuSt>,
    /// Each CPU's placement state (PELT, idle stamp, its cache's shared state), in one
    /// array: fork placement reads every CPU of a domain.
    placement: Vec<sched::CpuPlace>,
    tasks: RefCell<Vec<Task>>,
    free: RefCell<Vec<usize>>,
    timers: RefCell<BTreeMap<u64, Act>>,
    /// Per cpuset: run queues with more than one task (the root domain's overload).
    overloaded: Vec<Cell<usize>>,
    batches: RefCell<Vec<BatchSt>>,
    /// Per source: a synchronizing load's state (its barrier, its buffers, its tasks' places).
    syncs: RefCell<Vec<SyncSt>>,
    /// An ILB pass with STATS ran since the last check.
    stats_pass_done: Cell<bool>,
    rng: RefCell<fastrand::Rng>,
    /// The run's seed (the open-loop streams and their tasks seed their generators from it:
    /// `load/`).
    seed: u64,
    /// Per source, the load's open-loop streams (`load/`).
    streams: RefCell<Vec<Vec<load::Stream>>>,
    counts: RefCell<Counts>,
    /// What balancing work costs.
    costs: BalanceCosts,
    /// Per cpuset: idle CPUs against waiting tasks ([`metrics`]).
    iww: RefCell<Vec<IdleWhileWaiting>>,
    /// When the measured part of the run began (the warm-up's end).
    warm_at: Cell<u64>,
    /// ILB passes that ended (kicks' and the newidle-requested ones), so a pass can tell
    /// whether another ended while it ran.
    passes_ended: Cell<u64>,
    /// Kicks with `BALANCE` made (each stores `nohz.next_balance`).
    balance_kicks: Cell<u64>,
}

/// The platform the crate sees: the engine, and on an idle CPU's coroutine the way to
/// suspend it.
struct Ctx<'a, P: Policy, const HZ: u32> {
    e: &'a Engine<P, HZ>,
    y: Option<&'a Yielder<Irq, Halt>>,
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    fn new(cfg: &Config) -> Result<Self, String> {
        cfg.shape.check().map_err(|e| e.to_string())?;
        let n = cfg.shape.cpus;
        if n > CAP {
            return Err(format!(
                "{n} CPUs, but the engine is built for at most {CAP} (`CAP` in harness/src/sim.rs)"
            ));
        }
        let initial = Jiffies::initial(HZ).get();
        let cpus = (0..n)
            .map(|c| {
                let mut domains = cfg.shape.domains(c);
                for d in &mut domains {
                    d.last_balance = initial;
                    d.last_decay_max_lb_cost = initial;
                }
                CpuSt {
                    nohz_full: cfg.shape.is_nohz_full(c),
                    domains: RefCell::new(domains),
                    // Every CPU boots into its idle task.
                    idle_current: Cell::new(true),
                    ..CpuSt::default()
                }
            })
            .collect();
        Ok(Engine {
            m: Box::new(Machine::new()),
            time: Timekeeper::new(),
            shape: cfg.shape.clone(),
            workload: cfg.workload.clone(),
            ipi_ns: cfg.ipi_ns,
            plant: cfg.plant,
            governor: cfg.governor,
            hotplug_every: if n > 1 { cfg.hotplug_every_ns } else { 0 },
            hotplug_busy: Cell::new(false),
            now: Cell::new(0),
            seq: Cell::new(0),
            current: Cell::new(None),
            events: RefCell::new(BinaryHeap::new()),
            cpus,
            placement: (0..n).map(|_| sched::CpuPlace::default()).collect(),
            tasks: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            timers: RefCell::new(BTreeMap::new()),
            overloaded: (0..cfg.shape.cpusets).map(|_| Cell::new(0)).collect(),
            batches: RefCell::new(vec![BatchSt::default(); cfg.workload.sources.len()]),
            syncs: RefCell::new(
                (0..cfg.workload.sources.len())
                    .map(|_| SyncSt::None)
                    .collect(),
            ),
            stats_pass_done: Cell::new(false),
            rng: RefCell::new(fastrand::Rng::with_seed(cfg.seed)),
            seed: cfg.seed,
            streams: RefCell::new(load::streams(&cfg.workload, cfg.seed)),
            counts: RefCell::new(Counts::default()),
            costs: cfg.costs,
            iww: RefCell::new(vec![IdleWhileWaiting::default(); cfg.shape.cpusets]),
            warm_at: Cell::new(0),
            passes_ended: Cell::new(0),
            balance_kicks: Cell::new(0),
        })
    }

    /// CPU `i`'s id (`smp_processor_id()` and friends: a per-CPU read in a kernel, so not a
    /// shared access the cost model should see).
    fn id(&self, i: usize) -> Cpu {
        cost::unrecorded(|| self.m.cpu(i)).expect("an engine CPU index is below nr_cpu_ids")
    }

    fn ctx(&self) -> Ctx<'_, P, HZ> {
        Ctx { e: self, y: None }
    }

    fn now(&self) -> u64 {
        self.now.get()
    }

    fn push(&self, at: u64, cpu: usize, ev: Ev) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.events.borrow_mut().push(Reverse((at, seq, cpu, ev)));
    }

    fn pop(&self) -> Option<(u64, usize, Ev)> {
        self.events
            .borrow_mut()
            .pop()
            .map(|Reverse((at, _, cpu, ev))| (at, cpu, ev))
    }

    fn draw(&self, f: impl FnOnce(&mut fastrand::Rng) -> u64) -> u64 {
        f(&mut self.rng.borrow_mut())
    }

    /// Tasks on `c`'s run queue, the running one included.
    fn nr(&self, c: usize) -> usize {
        let s = &self.cpus[c];
        s.queue.borrow().len() + usize::from(s.curr.get().is_some())
    }

    /// `idle_cpu(c)`: the idle task is current and nothing is queued (a CPU in its newidle
    /// walk has not switched to its idle task yet).
    fn idle_cpu(&self, c: usize) -> bool {
        self.cpus[c].idle_current.get() && self.nr(c) == 0
    }

    /// Keeps the cpuset's overload count as `c`'s run queue went from `before` tasks to
    /// what it has now.
    fn count_overload(&self, c: usize, before: usize) {
        self.update_load_avg(c);
        let nr = self.nr(c);
        let o = &self.overloaded[self.shape.cpuset_index(c)];
        match (before > 1, nr > 1) {
            (false, true) => o.set(o.get() + 1),
            (true, false) => o.set(o.get() - 1),
            _ => {}
        }
    }

    /// Tells the crate `c`'s run queue changed (`update_rq`, under the rq lock in a kernel),
    /// and keeps the cpuset's overload count.
    fn publish(&self, c: usize, before: usize) {
        let s = &self.cpus[c];
        let nr = self.nr(c);
        self.count_overload(c, before);
        self.note_waiting(c);
        self.m.update_rq(
            self.id(c),
            RqFacts::one_class(nr as u32, s.idle_current.get()),
            &self.ctx(),
        );
    }

    fn send_ipi(&self, to: usize, ev: Ev) {
        self.push(self.now() + self.ipi_ns, to, ev);
    }

    fn arm_timer(&self, cpu: usize, at: u64, act: Act) {
        let id = self.seq.get();
        self.timers.borrow_mut().insert(id, act);
        self.cpus[cpu].timers.borrow_mut().insert((at, id));
        self.push(at, cpu, Ev::Timer(id));
    }

    /// A new task of `kind` made on `cpu` (not yet queued), of batch source `batch` if any,
    /// drawing its lengths from `rng` if given, else from the run's generator.
    fn new_task(
        &self,
        kind: TaskKind,
        cpu: usize,
        batch: Option<usize>,
        mut rng: Option<fastrand::Rng>,
    ) -> usize {
        let allowed = if kind.bound {
            cpu..cpu + 1
        } else {
            self.shape.cpuset(cpu)
        };
        let left = match &mut rng {
            Some(r) => around(r, kind.run_ns),
            None => self.draw(|r| around(r, kind.run_ns)),
        };
        let task = Task {
            kind,
            rng,
            left,
            runs_left: kind.runs,
            prev: cpu,
            allowed,
            batch,
            runnable_since: None,
            script: None,
            place: sched::TaskPlace::new(self.now(), cpu),
        };
        let mut tasks = self.tasks.borrow_mut();
        match self.free.borrow_mut().pop() {
            Some(i) => {
                tasks[i] = task;
                i
            }
            None => {
                tasks.push(task);
                tasks.len() - 1
            }
        }
    }

    /// Queues task `t` on `c` and wakes `c` if it idles (need_resched, and a reschedule IPI
    /// unless `c` is this CPU); a NO_HZ_FULL CPU is sent the IPI anyway, so that it looks at
    /// its tick dependency again (`tick_nohz_full_kick_cpu`).
    fn enqueue(&self, c: usize, t: usize) {
        debug_assert!(
            !self.cpus[c].leaving.get(),
            "a task queued on leaving CPU {c}"
        );
        let before = self.nr(c);
        self.pelt_enqueue(c, t);
        {
            let task = &mut self.tasks.borrow_mut()[t];
            task.prev = c;
            task.runnable_since.get_or_insert(self.now());
        }
        self.cpus[c].queue.borrow_mut().push_back(t);
        let remote = self.current.get() != Some(c);
        if self.plant == Plant::LostUpdateRq && remote {
            self.count_overload(c, before);
            self.note_waiting(c);
        } else {
            self.publish(c, before);
        }
        let s = &self.cpus[c];
        if s.in_idle.get() {
            s.need_resched.set(true);
            if remote {
                self.send_ipi(c, Ev::Resched);
            }
        } else if s.in_newidle.get() {
            // In `__schedule` with interrupts off: the walk's end finds the task queued (the
            // kernel's recheck of `h_nr_queued`), and the IPI would find it running.
            s.need_resched.set(true);
        } else if s.nohz_full && remote {
            self.send_ipi(c, Ev::Resched);
        }
    }

    /// `c` starts running task `t` (switching from the idle task if it was current).
    fn run(&self, c: usize, t: usize) {
        let s = &self.cpus[c];
        let before = self.nr(c) + 1;
        self.note_runs(t);
        s.curr.set(Some(t));
        self.pelt_running(t, true);
        s.idle_current.set(false);
        s.need_resched.set(false);
        s.run_start.set(self.now());
        s.stolen.set(0);
        self.publish(c, before);
        let left = self.tasks.borrow()[t].left;
        s.done_at.set(self.now() + left);
        self.rearm_done(c);
    }

    /// (Re)schedules the end of `c`'s running task's run at its `done_at`.
    fn rearm_done(&self, c: usize) {
        let s = &self.cpus[c];
        let generation = s.done_gen.get() + 1;
        s.done_gen.set(generation);
        self.push(s.done_at.get(), c, Ev::Done(generation));
    }

    /// The crate's code took `spent` of `c`'s time in this event: charged to the CPU, and a
    /// running task's run ends that much later.
    fn charge(&self, c: usize, spent: u64) {
        if spent == 0 {
            return;
        }
        let s = &self.cpus[c];
        s.credit_kernel(spent);
        if s.curr.get().is_some() {
            s.stolen.set(s.stolen.get() + spent);
            s.done_at.set(s.done_at.get() + spent);
            self.rearm_done(c);
        }
    }

    /// `c` spends `ns` of modelled time on balancing `work` (a domain's balance, a
    /// blocked-load decay, a remote run queue's lock), in the platform callback the crate is
    /// in.
    ///
    /// On the CPU's coroutine (idle balancing, the newidle walk) the coroutine waits for the
    /// work to end: other CPUs' events run meanwhile, and this CPU's interrupts are held until
    /// the pass or walk is done, as the crate runs `SCHED_SOFTIRQ` inside `irq_exit` and the
    /// kernel its newidle walk with interrupts off. A wakeup onto it still sets its
    /// `need_resched` at once (the waker writes the flag), which the ILB pass reads before each
    /// CPU it visits and aborts on. On the engine's stack (a busy CPU's own balance softirq)
    /// the time is taken from the running task, whose run ends that much later.
    fn spend(&self, c: usize, ns: u64, work: metrics::Work, ctx: &Ctx<'_, P, HZ>) {
        if ns == 0 {
            return;
        }
        let s = &self.cpus[c];
        let what = self.balancing(c);
        let Some(y) = ctx.y else {
            s.credit_balancing(what, work, ns);
            if s.curr.get().is_some() {
                s.stolen.set(s.stolen.get() + ns);
                s.done_at.set(s.done_at.get() + ns);
                self.rearm_done(c);
            }
            return;
        };
        let generation = s.busy_gen.get() + 1;
        s.busy_gen.set(generation);
        s.busy.set(true);
        s.busy_since.set(self.now());
        s.busy_work.set(work);
        self.note_idle_change(c);
        self.push(self.now() + ns, c, Ev::Resume(generation));
        let irq = y.suspend(Halt::Busy);
        debug_assert_eq!(irq, Irq::Resume, "CPU {c} resumed mid-balance by {irq:?}");
        s.busy.set(false);
        self.note_idle_change(c);
        s.credit_balancing(what, work, ns);
        self.current.set(Some(c));
    }

    /// Takes the running task off `c`, crediting the time it ran; returns it.
    fn take_curr(&self, c: usize) -> Option<usize> {
        let s = &self.cpus[c];
        let t = s.curr.take()?;
        self.pelt_running(t, false);
        let ran = self.now() - s.run_start.get();
        s.credit_busy(ran);
        let mut tasks = self.tasks.borrow_mut();
        tasks[t].left = tasks[t]
            .left
            .saturating_sub(ran.saturating_sub(s.stolen.get()));
        Some(t)
    }

    /// The running task's run ended: its load decides what follows (a synchronizing load's
    /// task, `block.rs`), or it blocks on a timer here, or exits.
    fn complete(&self, c: usize) {
        if self.script_done(c) {
            return;
        }
        let before = self.nr(c);
        let Some(t) = self.take_curr(c) else { return };
        self.publish(c, before);
        self.pelt_block(t);
        self.count(|n| n.runs_completed += 1);
        let (kind, runs_left, batch) = {
            let task = &self.tasks.borrow()[t];
            (task.kind, task.runs_left, task.batch)
        };
        if let Some(src) = batch {
            self.pelt_dead(t);
            self.free.borrow_mut().push(t);
            self.count(|n| n.tasks_completed += 1);
            self.batch_task_done(src);
            return;
        }
        if runs_left == 1 || kind.sleep_ns == 0 {
            self.pelt_dead(t);
            self.free.borrow_mut().push(t);
            self.count(|n| n.tasks_completed += 1);
            return;
        }
        let own = self.tasks.borrow_mut()[t]
            .rng
            .as_mut()
            .map(|r| (around(r, kind.run_ns), around(r, kind.sleep_ns)));
        let (next, sleep) = own.unwrap_or_else(|| {
            (
                self.draw(|r| around(r, kind.run_ns)),
                self.draw(|r| around(r, kind.sleep_ns)),
            )
        });
        {
            let task = &mut self.tasks.borrow_mut()[t];
            task.left = next;
            task.runs_left = runs_left.saturating_sub(1);
        }
        self.arm_timer(c, self.now() + sleep, Act::Wake(t));
    }

    /// The busy tick's own work: rotate the running task behind the queue after a slice.
    fn tick_work(&self, c: usize) {
        let s = &self.cpus[c];
        if s.queue.borrow().is_empty() || self.now() - s.run_start.get() < SLICE_NS {
            return;
        }
        let before = self.nr(c);
        if let Some(t) = self.take_curr(c) {
            self.tasks.borrow_mut()[t].runnable_since = Some(self.now());
            s.queue.borrow_mut().push_back(t);
            self.publish(c, before);
            let next = s.queue.borrow_mut().pop_front();
            if let Some(next) = next {
                self.run(c, next);
            }
        }
    }

    /// A wakeup timer fired on `c`: a sleeping task wakes, or a source of the load acts
    /// (`load/`).
    fn fire(&self, c: usize, act: Act) {
        match act {
            Act::Wake(t) => self.wake_up(t, c, false),
            Act::Arrive(src) => self.arrive(c, src),
            Act::Device(src, lane) => self.device_interrupt(src, lane),
            Act::Batch(src) => self.batch_arrives(c, src),
        }
    }

    /// One interrupt on `c`, through the crate's driver layer.
    fn handle_irq(&self, c: usize, irq: Irq, ctx: &Ctx<'_, P, HZ>) {
        self.current.set(Some(c));
        let cpu = self.id(c);
        let s = &self.cpus[c];
        match irq {
            Irq::Newidle | Irq::Takedown | Irq::Resume => {
                unreachable!("{irq:?} is not an interrupt")
            }
            Irq::GraceEnd => {
                s.grace.set(false);
                s.need_resched.set(true);
            }
            Irq::Tick => {
                // Balancing is due for the idle CPUs once jiffies reach `nohz.next_balance`:
                // the first test of the kick (its value before the tick, jiffies after the
                // tick's own update).
                let next_balance = cost::unrecorded(|| self.m.nohz().next_balance());
                let stopped_idle = s.idle_current.get()
                    && cost::unrecorded(|| {
                        self.m.tick_sched(cpu).flags().contains(TsFlags::STOPPED)
                    });
                let generation = s.busy_gen.get();
                s.in_tick.set(true);
                let tick = self.m.timer_interrupt(cpu, ctx);
                s.in_tick.set(false);
                // Right after the kick its flags are on its target; a softirq whose balance
                // took time let the target handle them meanwhile.
                if s.busy_gen.get() == generation {
                    self.check_kick(tick.kick());
                }
                if trace::on(self.now()) {
                    self.trace_kick(c, tick.kick());
                }
                if tick.ran() && stopped_idle && s.tick_stop_j.get().is_some() {
                    s.stopped_ticks.set(s.stopped_ticks.get() + 1);
                }
                if let Some(KickDecision::Kick { flags, .. }) = tick.kick()
                    && flags.contains(NohzFlags::BALANCE)
                {
                    self.balance_kicks.set(self.balance_kicks.get() + 1);
                }
                if tick.ran() && s.curr.get().is_some() {
                    let due = !self.time.jiffies().is_before(next_balance)
                        && !matches!(tick.kick(), None | Some(KickDecision::IdleTick));
                    let jiffy = self.time.jiffies().get();
                    self.count(|n| {
                        n.busy_ticks += 1;
                        n.due_ticks += u64::from(due);
                        n.note_busy_jiffy(jiffy, due);
                    });
                    self.tick_work(c);
                } else if tick.ran() {
                    self.count(|n| n.idle_ticks += 1);
                }
            }
            Irq::Kick if self.plant == Plant::CsdLeak => {
                s.kicks_in_flight.set(s.kicks_in_flight.get() - 1);
                self.m.irq_enter(cpu, ctx);
                nohz_testing::nohz_csd_ipi_without_release(&self.m, cpu, ctx);
                self.m.irq_exit(cpu, ctx);
            }
            Irq::Kick => {
                s.kicks_in_flight.set(s.kicks_in_flight.get() - 1);
                let start = self.pass_begins(c);
                s.in_kick.set(true);
                let handed = self.m.kick_interrupt(cpu, ctx);
                s.in_kick.set(false);
                if let Some(flags) = handed
                    && !flags.is_empty()
                {
                    if flags.contains(NohzFlags::STATS) {
                        self.stats_pass_done.set(true);
                    }
                    s.ilb_passes.set(s.ilb_passes.get() + 1);
                    self.count(|n| n.ilb_passes += 1);
                    self.pass_ended(c, flags, start);
                }
                self.passes_ended.set(self.passes_ended.get() + 1);
            }
            Irq::Resched => self.m.interrupt(cpu, ctx, || {}),
            Irq::Timer(id) => {
                let Some(act) = self.timers.borrow_mut().remove(&id) else {
                    return;
                };
                s.timers.borrow_mut().retain(|&(_, t)| t != id);
                self.m.interrupt(cpu, ctx, || self.fire(c, act));
            }
        }
    }

    /// The idle state on `c` (its coroutine), until an interrupt: suspends, then runs the
    /// interrupt it was resumed with.
    fn halt(&self, c: usize, y: &Yielder<Irq, Halt>, ctx: &Ctx<'_, P, HZ>) {
        let s = &self.cpus[c];
        self.newilb_window_ends(c);
        if s.need_resched.get() {
            return;
        }
        let cpu = self.id(c);
        let (stopped, registered) = cost::unrecorded(|| {
            (
                self.m.tick_sched(cpu).flags().contains(TsFlags::STOPPED),
                self.m.nohz_idle_test(cpu),
            )
        });
        // A dying CPU idling through its grace period is out of the mask by design.
        s.halted_invisible
            .set(stopped && !registered && !s.leaving.get());
        s.halted_at.set(self.now());
        s.halted.set(true);
        self.count(|n| {
            n.halts += 1;
            n.stopped_halts += u64::from(stopped);
        });
        let irq = y.suspend(Halt::Halted);
        s.halted.set(false);
        let slept = self.now() - s.halted_at.get();
        s.credit_idle(slept);
        self.menu_update(c, irq == Irq::Tick && !stopped, slept);
        self.handle_irq(c, irq, ctx);
    }

    /// `c`'s coroutine, with nothing to run: the newidle balance (`sched_balance_newidle`,
    /// whose walk takes time, interrupts off), then the switch to the idle task and its loop;
    /// or back to the scheduler if the walk pulled a task or one was queued meanwhile.
    fn newidle_then_idle(&self, c: usize, ctx: &Ctx<'_, P, HZ>) -> Halt {
        let s = &self.cpus[c];
        let cpu = self.id(c);
        s.in_newidle.set(true);
        self.newidle_begins(c);
        self.m.sched_balance_newidle(cpu, ctx);
        s.in_newidle.set(false);
        if !s.queue.borrow().is_empty() {
            return Halt::Pulled;
        }
        // The switch to the idle task, then its loop.
        s.idle_current.set(true);
        self.set_next_task_idle(c);
        self.publish(c, 0);
        s.in_idle.set(true);
        self.note_idle_change(c);
        self.count(|n| n.idle_entries += 1);
        // `nohz_run_idle_balance`, do_idle's first step, runs a blocked-load pass if newidle
        // asked for one and nothing else is pending.
        s.in_newilb.set(cost::unrecorded(|| {
            self.m.rq(cpu).nohz_flags().load() == NohzFlags::NEWILB
        }));
        let exit = self.m.do_idle(cpu, ctx);
        self.newilb_window_ends(c);
        Halt::Exited(exit)
    }
}

// ---- the platform ------------------------------------------------------------------------

impl<P: Policy, const HZ: u32> Clock for Ctx<'_, P, HZ> {
    const HZ: u32 = HZ;
    fn jiffies(&self) -> Jiffies {
        self.e.time.jiffies()
    }
}

impl<P: Policy, const HZ: u32> CpuState<CAP> for Ctx<'_, P, HZ> {
    fn need_resched(&self, cpu: Cpu) -> bool {
        let answer = self.e.cpus[cpu.index()].need_resched.get();
        self.e.note_abort_check(cpu.index(), answer);
        answer
    }
    fn this_cpu(&self) -> Option<Cpu> {
        self.e.current.get().map(|c| self.e.id(c))
    }
    fn synchronize_rcu(&self) {
        // One event at a time: no reader is ever inside a read-side section across an event,
        // so a grace period has always elapsed; but the dying CPU's hotplug thread sleeps
        // through one in `sched_cpu_deactivate`, its CPU idle meanwhile.
        if let (Some(y), Some(c)) = (self.y, self.e.current.get())
            && self.e.cpus[c].leaving.get()
            && !self.e.cpus[c].in_idle.get()
        {
            self.e.grace_idle(
                c,
                &Ctx {
                    e: self.e,
                    y: Some(y),
                },
            );
        }
    }
}

impl<P: Policy, const HZ: u32> Ipi<CAP> for Ctx<'_, P, HZ> {
    fn send_nohz_ipi(&self, _from: Cpu, to: Cpu) {
        let s = &self.e.cpus[to.index()];
        if s.down.get() {
            self.e.record_violation(format!(
                "at {} ns: a nohz kick sent to CPU {}, deactivated",
                self.e.now(),
                to.index()
            ));
        }
        s.kicks_in_flight.set(s.kicks_in_flight.get() + 1);
        self.e.count(|n| n.kicks_sent += 1);
        self.e.send_ipi(to.index(), Ev::Kick);
    }
}

impl<P: Policy, const HZ: u32> Softirq<CAP> for Ctx<'_, P, HZ> {}

impl<P: Policy, const HZ: u32> Topology<CAP> for Ctx<'_, P, HZ> {
    fn has_sched_domain(&self, cpu: Cpu) -> bool {
        !self.e.cpus[cpu.index()].domains.borrow().is_empty()
    }
    fn llc_leader(&self, cpu: Cpu) -> Option<Cpu> {
        // Asked once per CPU by a domain build: on the hotplug thread's coroutine (a
        // deactivation's rebuild) the build takes its time, CPU by CPU, and the other CPUs'
        // idle entries and exits go on meanwhile.
        if let Some(c) = self.e.current.get() {
            self.e
                .spend(c, self.e.costs.lb_per_cpu_ns, metrics::Work::Domains, self);
        }
        Some(self.e.id(self.e.shape.llc_of(cpu.index()).start))
    }
}

impl<P: Policy, const HZ: u32> Balance<CAP> for Ctx<'_, P, HZ> {
    fn update_blocked_averages(&self, by: Cpu, cpu: Cpu) -> bool {
        self.e
            .update_blocked_averages(by.index(), cpu.index(), self)
    }
    fn update_rq_clock(&self, by: Cpu, cpu: Cpu) {
        self.e.lock_remote_rq(by.index(), cpu.index(), self);
    }
    fn balance_domains(&self, by: Cpu, cpu: Cpu, idle: CpuIdleType) -> Jiffies {
        self.e
            .sched_balance_domains(by.index(), cpu.index(), idle, self)
    }
    fn newidle_domain(&self, cpu: Cpu) -> NewidleDomain {
        self.e.newidle_domain(cpu.index())
    }
    fn sched_clock_cpu(&self, _cpu: Cpu) -> u64 {
        self.e.now()
    }
    fn newidle_balance(&self, cpu: Cpu, t0: u64) -> NewidleOutcome {
        self.e.sched_balance_newidle(cpu.index(), t0, self)
    }
}

impl<P: Policy, const HZ: u32> TickHardware<CAP> for Ctx<'_, P, HZ> {
    fn ktime_get(&self) -> u64 {
        self.e.now()
    }
    fn jiffies_update(&self) -> (Jiffies, u64) {
        self.e.time.jiffies_update()
    }
    fn update_jiffies(&self, now: u64) {
        self.e.time.update(now);
    }
    fn next_timer_interrupt(&self, cpu: Cpu, _basej: Jiffies, basem: u64) -> u64 {
        let timers = self.e.cpus[cpu.index()].timers.borrow();
        timers.first().map_or(KTIME_MAX, |&(at, _)| at.max(basem))
    }
    fn program_tick(&self, cpu: Cpu, expires: u64) {
        let s = &self.e.cpus[cpu.index()];
        let generation = s.tick_gen.get() + 1;
        s.tick_gen.set(generation);
        s.tick_expiry.set(expires);
        // Every CPU's tick is programmed on the same jiffies grid; its interrupt arrives a
        // little after the expiry, differently on each CPU (`TICK_JITTER_NS`).
        let jitter = self.e.draw(|r| r.u64(0..=TICK_JITTER_NS));
        self.e.push(
            expires.max(self.e.now()) + jitter,
            cpu.index(),
            Ev::Tick(generation),
        );
    }
    fn cancel_tick(&self, cpu: Cpu) {
        let s = &self.e.cpus[cpu.index()];
        s.tick_gen.set(s.tick_gen.get() + 1);
    }
    fn tick_expiry(&self, cpu: Cpu) -> u64 {
        self.e.cpus[cpu.index()].tick_expiry.get()
    }
    fn vtime_accounting(&self, cpu: Cpu) -> bool {
        self.e.cpus[cpu.index()].nohz_full
    }
    fn tick_stopped(&self, cpu: Cpu) {
        self.e.idle_tick_stopped(cpu.index());
    }
    fn tick_restarted(&self, cpu: Cpu) {
        self.e.idle_tick_restarted(cpu.index());
    }
    fn account_idle_ticks(&self, cpu: Cpu, ticks: usize) {
        self.e.idle_ticks_accounted(cpu.index(), ticks);
    }
}

impl<P: Policy, const HZ: u32> IdleHooks<CAP> for Ctx<'_, P, HZ> {
    fn cpuidle_select(
        &self,
        cpu: Cpu,
        _sleep: &nohz::platform::SleepLengthQuery<'_>,
    ) -> Option<bool> {
        match self.e.governor {
            Governor::None => None,
            Governor::Menu => Some(self.e.predicted_idle(cpu.index()) >= tick_nsec(HZ)),
        }
    }
    fn cpuidle_enter(&self, cpu: Cpu) {
        let y = self
            .y
            .expect("cpuidle_enter runs on the CPU's idle coroutine");
        self.e.halt(cpu.index(), y, self);
    }
}

// ---- the loop ----------------------------------------------------------------------------

type IdleCoroutine = Coroutine<Irq, Halt, (), DefaultStack>;

/// The engine's loop: the shared state and each CPU's idle coroutine.
struct Runner<P: Policy, const HZ: u32> {
    e: Rc<Engine<P, HZ>>,
    coros: Vec<Option<IdleCoroutine>>,
    check_every: u64,
    irqtime: bool,
}

impl<P: Policy, const HZ: u32> Runner<P, HZ> {
    /// Resumes `c`'s idle coroutine with `irq` (starting it first if needed) and handles how
    /// it stops: in its idle state, or out of `do_idle`.
    fn resume(&mut self, c: usize, irq: Irq) -> Result<(), String> {
        self.e.current.set(Some(c));
        if self.coros[c].is_none() {
            let e = Rc::clone(&self.e);
            let stack = DefaultStack::new(IDLE_STACK)
                .map_err(|err| format!("cannot map an idle stack: {err}"))?;
            self.coros[c] = Some(Coroutine::with_stack(
                stack,
                move |y: &Yielder<Irq, Halt>, mut go: Irq| loop {
                    let ctx = Ctx { e: &*e, y: Some(y) };
                    let stopped = match go {
                        Irq::Takedown => e.takedown(c, &ctx),
                        Irq::Newidle => e.newidle_then_idle(c, &ctx),
                        _ => unreachable!("CPU {c}'s coroutine started by {go:?}"),
                    };
                    go = y.suspend(stopped);
                },
            ));
        }
        let stopped = self.coros[c].as_mut().expect("created above").resume(irq);
        match stopped {
            CoroutineResult::Yield(Halt::Halted | Halt::Busy) => Ok(()),
            CoroutineResult::Yield(Halt::Pulled) => self.schedule(c),
            CoroutineResult::Yield(Halt::Exited(exit)) => {
                let s = &self.e.cpus[c];
                s.in_idle.set(false);
                self.e.note_idle_change(c);
                s.need_resched.set(false);
                if exit == IdleExit::CpuDead {
                    return Err(format!(
                        "CPU {c} left do_idle as dead; a CPU goes offline from its hotplug thread"
                    ));
                }
                self.schedule(c)
            }
            CoroutineResult::Yield(Halt::Down) => {
                self.e.park_offline(c);
                Ok(())
            }
            CoroutineResult::Yield(Halt::Refused) => {
                self.e.takedown_refused(c);
                self.schedule(c)
            }
            CoroutineResult::Return(()) => unreachable!("the idle coroutine loops forever"),
        }
    }

    /// `c` has no task running: runs the next queued one, or (on its coroutine) balances
    /// (newidle) and idles.
    fn schedule(&mut self, c: usize) -> Result<(), String> {
        let e = &*self.e;
        e.current.set(Some(c));
        if e.cpus[c].hotplug_pending.take() {
            return self.resume(c, Irq::Takedown);
        }
        let next = e.cpus[c].queue.borrow_mut().pop_front();
        if let Some(t) = next {
            e.run(c, t);
            return Ok(());
        }
        self.resume(c, Irq::Newidle)
    }

    /// One event, then whatever `c` held while it balanced, once it is done.
    fn deliver(&mut self, c: usize, ev: Ev) -> Result<(), String> {
        self.deliver_one(c, ev)?;
        loop {
            let s = &self.e.cpus[c];
            if s.busy.get() {
                return Ok(());
            }
            let Some(ev) = s.held.borrow_mut().pop_front() else {
                return Ok(());
            };
            self.deliver_one(c, ev)?;
        }
    }

    /// One event: a CPU balancing takes none but the end of its work; the others wait for
    /// it, in order ([`Engine::spend`]).
    fn deliver_one(&mut self, c: usize, ev: Ev) -> Result<(), String> {
        let e = Rc::clone(&self.e);
        let s = &e.cpus[c];
        if let Ev::Resume(generation) = ev {
            if s.busy.get() && generation == s.busy_gen.get() {
                return self.resume(c, Irq::Resume);
            }
            return Ok(());
        }
        if s.busy.get() {
            s.held.borrow_mut().push_back(ev);
            return Ok(());
        }
        if s.offline.get() {
            if ev == Ev::Up {
                e.current.set(Some(c));
                e.bring_up(c);
                return self.schedule(c);
            }
            e.offline_event(c, ev);
            return Ok(());
        }
        let irq = match ev {
            Ev::Hotplug => return self.hotplug(c),
            Ev::Up => return Err(format!("CPU {c} brought up while online")),
            Ev::GraceEnd => Irq::GraceEnd,
            Ev::Done(generation) => {
                if generation != s.done_gen.get() || s.curr.get().is_none() {
                    return Ok(());
                }
                e.current.set(Some(c));
                e.complete(c);
                if s.curr.get().is_some() {
                    // A synchronizing load's task runs on (`block.rs`).
                    return Ok(());
                }
                return self.schedule(c);
            }
            Ev::Tick(generation) if generation != s.tick_gen.get() => return Ok(()),
            Ev::Tick(_) => Irq::Tick,
            Ev::Kick => Irq::Kick,
            Ev::Resched => Irq::Resched,
            Ev::Timer(id) => Irq::Timer(id),
            Ev::Resume(_) => unreachable!("taken above"),
        };
        if s.in_idle.get() {
            debug_assert!(
                s.halted.get(),
                "CPU {c} in do_idle but not halted between events"
            );
            self.resume(c, irq)
        } else {
            e.handle_irq(c, irq, &e.ctx());
            Ok(())
        }
    }

    fn boot(&mut self) -> Result<(), String> {
        let e = Rc::clone(&self.e);
        let n = e.shape.cpus;
        e.current.set(Some(0));
        e.m.init(n, 0, &e.ctx())
            .map_err(|err| format!("Machine::init: {err}"))?;
        let full: Vec<usize> = (0..n).filter(|&c| e.cpus[c].nohz_full).collect();
        if !full.is_empty() {
            e.m.tick_nohz_full_setup(full)
                .map_err(|err| format!("tick_nohz_full_setup: {err}"))?;
        }
        if self.irqtime {
            e.m.enable_sched_clock_irqtime();
        }
        for c in 0..n {
            e.current.set(Some(c));
            cost::on_cpu(c, 0, || e.m.cpu_starting(e.id(c), &e.ctx()));
        }
        e.start_load();
        for c in 0..n {
            let (done, spent) = cost::on_cpu(c, 0, || self.schedule(c));
            done?;
            e.charge(c, spent);
        }
        e.arm_hotplug();
        Ok(())
    }

    fn run(&mut self, sim_ns: u64) -> Result<(), String> {
        self.boot()?;
        let mut warm = false;
        while let Some((at, c, ev)) = self.e.pop() {
            if at > sim_ns {
                break;
            }
            if !warm && at >= warmup(sim_ns) {
                // The boot's storm (every CPU starting at once) is not the load's cost.
                warm = true;
                self.e.forget_warmup();
            }
            self.e.now.set(at);
            let (done, spent) = cost::on_cpu(c, at, || self.deliver(c, ev));
            done?;
            self.e.charge(c, spent);
            let events = {
                let mut n = self.e.counts.borrow_mut();
                n.events += 1;
                n.events
            };
            if self.check_every > 0 && events % self.check_every == 0 {
                self.e.check(false);
            }
        }
        self.e.now.set(sim_ns);
        self.e.check(true);
        Ok(())
    }
}

/// Stack of the thread a run makes: a machine of the engine's capacity is built in place,
/// and a debug build's `Machine::new` keeps several copies of it on the stack.
const RUN_STACK: usize = 64 * 1024 * 1024;

/// Runs the engine under policy `P` at `HZ`, on a thread of its own (a large stack for the
/// machine's construction; the run itself is one thread whatever the caller's).
pub fn run<P: Policy, const HZ: u32>(cfg: &Config) -> Result<Outcome, String> {
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("nohz-engine".into())
        .stack_size(RUN_STACK)
        .spawn(move || run_here::<P, HZ>(&cfg))
        .map_err(|e| format!("cannot start the engine's thread: {e}"))?
        .join()
        .map_err(|_| "the engine's thread panicked".to_string())?
}

fn run_here<P: Policy, const HZ: u32>(cfg: &Config) -> Result<Outcome, String> {
    let e = Rc::new(Engine::<P, HZ>::new(cfg)?);
    let mut runner = Runner {
        coros: (0..cfg.shape.cpus).map(|_| None).collect(),
        e,
        check_every: cfg.check_every,
        irqtime: cfg.irqtime,
    };
    #[cfg(nohz_linecount)]
    {
        cost::install(cost::Model::new(
            cfg.cost,
            (0..cfg.shape.cpus).map(|c| c / cfg.shape.socket).collect(),
        ));
        if cfg.cost.flag_line == cost::FlagLine::Own {
            cost::set_apart(runner.e.m.legacy_irqtime_addr());
        }
    }
    let result = runner.run(cfg.sim_ns);
    #[cfg(nohz_linecount)]
    let report = cost::uninstall().map(|m| m.report(cfg.sim_ns - warmup(cfg.sim_ns)));
    #[cfg(not(nohz_linecount))]
    let report = None;
    let outcome = runner.e.outcome(cfg.sim_ns, report);
    // The idle coroutines hold the engine: drop them (unwinding their stacks) before it.
    runner.coros.clear();
    result.map(|()| outcome)
}
