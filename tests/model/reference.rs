//! The sequential reference model of the observable NOHZ state, written from the kernel
//! behaviour reference (spec §2-§8), not from the crate: plain `bool`s, `Vec`s and integers,
//! no atomics, nothing called in the crate.
//!
//! Time is kept as *true* time (`u128` jiffies that never wrap) and compared with `<`/`>=`;
//! only the projection turns it into the crate's wrapping word. So every wrap-safe comparison
//! in the crate is checked against exact arithmetic on each step, and a run that starts 50
//! jiffies before the wrap crosses it.
//!
//! The host platform the crate runs on is part of the modelled world: jiffies advance when a
//! step says so, or when the tick side catches them up to the nanosecond clock (which also
//! moves only when a step says so); next timers are "never"; a balance pass sets a balanced
//! runqueue's next balance 4 ticks on; asym-packing priorities and asym capacity are fixed
//! per machine. A `Step` is one thing the kernel
//! does; `Model::valid` says when the kernel can do it (used as the state machine's
//! preconditions, so shrinking never produces an impossible sequence).

use std::collections::BTreeMap;
use std::fmt;

/// The machine's capacity (`NR_CPUS`) in every run; `nr_cpu_ids` is drawn in `1..=N`.
pub const N: usize = 16;

pub const HZ: u128 = 1000;
/// `msecs_to_jiffies(LOAD_AVG_PERIOD)` at HZ=1000 (spec §2.2).
pub const NEXT_BLOCKED_PERIOD: u128 = 32;
/// What the host platform's balance pass sets a balanced runqueue's next balance to.
pub const BALANCE_INTERVAL: u128 = 4;

// spec §4.1
pub const BALANCE: u32 = 0x1;
pub const STATS: u32 = 0x2;
pub const NEWILB: u32 = 0x4;
pub const NEXT: u32 = 0x8;
pub const KICK_MASK: u32 = BALANCE | STATS | NEXT;

// spec §7.1
pub const TS_INIDLE: u32 = 1 << 0;
pub const TS_STOPPED: u32 = 1 << 1;
pub const TS_IDLE_ACTIVE: u32 = 1 << 2;
pub const TS_DO_TIMER_LAST: u32 = 1 << 3;
pub const TS_NOHZ: u32 = 1 << 4;
pub const TS_HIGHRES: u32 = 1 << 5;

// Softirq bits (TIMER is hotplug-safe, SCHED is not).
pub const SOFTIRQ_TIMER: u32 = 1 << 1;
pub const SOFTIRQ_SCHED: u32 = 1 << 7;
pub const SOFTIRQ_HOTPLUG_SAFE: u32 = (1 << 1) | (1 << 5) | (1 << 8) | (1 << 9);

/// Where the host's monotonic clock starts (it moves only when a step says so).
pub const START_NS: u64 = 1_000_000;
pub const TICK_NS: u64 = 1_000_000;
pub const MAX_DEFERMENT_NS: u64 = 10_000_000_000;
pub const KTIME_MAX: u64 = i64::MAX as u64;

/// The capacity that `check_cpu_capacity` finds reduced (1024 is full).
pub const LOW_CAPACITY: u64 = 800;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pol {
    Patched,
    Legacy,
}

/// What a policy beyond the kernel changes in `Patched`'s behaviour, where the model says it
/// too (all off: the kernel's). Each is written from the policy's description
/// (`src/beyond/paced.rs`, `src/beyond/posted.rs`), not from its code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Beyond {
    /// `Paced`'s kick: a kick that wants balancing asks STATS only if the time checks found
    /// the blocked-load refresh due (BALANCE alone otherwise, and the pass counts no warning
    /// for it); NEXT goes alone only while `nohz.next_balance` is more than a jiffy ahead.
    pub paced_kick: bool,
    /// `Paced`'s hold: a newidle look that found nothing to pull (the root domain not
    /// overloaded, or a walk that pulled nothing) and pulls the CPU's `rq->next_balance` in
    /// stores it no earlier than two jiffies after the look (the kernel's may be due at once).
    pub newidle_hold: bool,
    /// Where `find_new_ilb` starts its scan of the idle housekeeping CPUs.
    pub ilb_pick: IlbPick,
    /// Khan's patch 1: a completed pass publishes `nohz.next_balance` later by one jiffy per
    /// `KHAN_IDLE_CPUS_PER_JIFFY` registered CPUs. (The model's machines have at most 16
    /// CPUs, so the term is 0 here: `tests/posted.rs` pins it on 200.)
    pub khan_next_balance: bool,
    /// Hegde's patch: the kick returns (`EmptyMask`) when no registered CPU is a housekeeping
    /// one: once balancing is due, before its tests; when it is not, only if STATS was set.
    pub hegde_hk: bool,
}

/// `find_new_ilb`'s scan order over the registered idle housekeeping CPUs (the first one
/// that is not the kicker and is idle is picked; every order wraps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IlbPick {
    /// The kernel's: from CPU 0.
    #[default]
    Lowest,
    /// `Paced`: from `ilb_start(jiffies, nr_cpu_ids)`, a Fibonacci hash of the raw jiffies
    /// word scaled into `0..nr_cpu_ids`.
    Hashed,
    /// Khan's patch 2: from `nohz.ilb_cpu_last + 1` (at most `nr_cpu_ids`, which starts at
    /// 0), storing the CPU picked there.
    RoundRobin,
}

/// `KHAN_IDLE_CPUS_PER_JIFFY`: the idle CPUs per jiffy of Khan's patch 1 as reconstructed.
pub const KHAN_IDLE_CPUS_PER_JIFFY: usize = 64;

/// Where `Paced`'s scan starts at raw jiffies `j` on `nr` CPU ids: `j` times 2^64 / φ (the
/// Fibonacci constant), modulo 2^64, as a fraction of 2^64, times `nr`, rounded down.
pub fn paced_ilb_start(j: usize, nr: usize) -> usize {
    let h = (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((u128::from(h) * nr as u128) >> 64) as usize
}

/// The warning kinds, named as the crate names them (the projection matches by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wk {
    StaticKeyEnableCount,
    StaticKeyDisableCount,
    StaticKeyIncOverflow,
    StaticKeyDecUnderflow,
    WrongCpu,
    CsdWithoutKick,
    BalanceWithoutStats,
    CsdBusy,
    CachedNextEvent,
    IdleExitOutsideIdle,
    // (OfflineCpuIdle cannot happen here: every CPU stays online; hotplug stops at inactive.)
    NoTimekeeper,
    TickNotProgrammed,
    IdleSoftirqPending,
    DoTimerOrphaned,
}

/// One action of the platform the crate asks for (the NOHZ ones; tick hardware is left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    Ipi { from: usize, to: usize },
    Softirq(usize),
    Decay { by: usize, cpu: usize },
    RqClock { by: usize, cpu: usize },
    Balance { by: usize, cpu: usize, idle: bool },
    Newidle(usize),
    SyncRcu,
}

/// What one `kick_ilb` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    NoIlb,
    AlreadyPending(usize),
    RodeAlong(usize),
    Sent(usize),
    CsdBusy(usize),
}

/// What one `nohz_balancer_kick` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    IdleTick,
    NobodyTickless,
    EmptyMask,
    NoFlags,
    Kick { flags: u32, outcome: Outcome },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassEnd {
    Completed,
    Aborted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyErr {
    Overflow,
    Underflow,
}

/// Facts about one idle-loop stop attempt (for the seed 001 property).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopFacts {
    /// `can_stop_idle_tick` let the attempt run (or a cached event was used).
    pub attempted: bool,
    pub was_stopped: bool,
    pub registered_before: bool,
    pub stopped_after: bool,
    pub in_mask_after: bool,
}

/// Knobs the kernel (not the crate) turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// RCU / arch / irq_work need the tick (`tick_nohz_next_event` keeps ticking).
    NeedsTick,
    /// The timer base refuses to go idle (the stop keeps the tick).
    TimerBaseBusy,
    /// SCHED_SOFTIRQ pending (blocks a stop, even on a CPU going down).
    SoftirqSched,
    /// TIMER_SOFTIRQ pending (hotplug-safe: ignored on a CPU going down).
    SoftirqTimer,
    /// This CPU's tick dependency (blocks the NO_HZ_FULL stop).
    TickDep,
    /// The CPU's blocked load survives the next decay.
    BlockedRemains,
    /// A remote wakeup is queued (`ttwu_pending`).
    Ttwu,
    /// RT/IRQ pressure took capacity away (`check_cpu_capacity`).
    LowCapacity,
    /// The running task does not fit this CPU (`misfit_task_load`).
    Misfit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOp {
    /// `enable_sched_clock_irqtime`.
    Enable,
    /// `disable_sched_clock_irqtime` (sleepable context).
    Disable,
    /// `static_branch_inc` on the key.
    Inc,
    /// `static_branch_dec` on the key.
    Dec,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    Task,
    Hardirq,
    Softirq,
    Ksoftirqd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    EnterIdle(usize),
    ExitIdle(usize),
}

/// One transition: something the kernel does on a CPU (or machine-wide). Its `Debug` is one
/// short line whatever the flags (proptest prints shrunk cases with `{:#?}`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The jiffies clock moves on.
    Advance(usize),
    /// The nanosecond clock moves on (jiffies follow when the tick side catches them up).
    AdvanceNs(u64),
    /// The sched timer interrupt (irq enter, tick handler with the NOHZ tail, irq exit).
    Tick(usize),
    /// A task is enqueued: runs at once if the CPU's idle task is current outside the idle
    /// loop, sets need_resched if it is in the loop, queues behind a running task otherwise.
    RunTask(usize),
    /// The running task blocks; the next one runs, or the idle task.
    StopTask(usize),
    /// `sched_balance_newidle` before entering idle. The domains are walked only if `walks`
    /// (the root domain is overloaded and the idle is long enough for a walk), after this
    /// CPU's own blocked-load refresh; the walk may pull a task. `deadline`: the base
    /// domain's next balance the look finds, as jiffies from now (its `last_balance` plus
    /// its interval; in the past when a busy period left `last_balance` old), if any.
    Newidle {
        cpu: usize,
        long_idle: bool,
        walks: bool,
        pulls: bool,
        deadline: Option<i8>,
    },
    /// `do_idle` entry: `nohz_run_idle_balance`, `tick_nohz_idle_enter`.
    IdleEnter(usize),
    /// One pass of the idle loop going through `tick_nohz_idle_stop_tick`.
    IdleStop(usize),
    /// A governor that asks to stop the tick: `tick_nohz_get_sleep_length` (which caches the
    /// next event), then `tick_nohz_idle_stop_tick` on the cached event.
    GovernorStop(usize),
    /// A governor that keeps a running tick: `tick_nohz_get_sleep_length`, then retain.
    IdleRetain(usize),
    /// The polling idle path: `tick_nohz_idle_restart_tick`.
    IdlePoll(usize),
    /// The crate's whole `do_idle`, on a platform whose idle state ends with need_resched
    /// (no cpuidle driver), then schedule.
    DoIdle(usize),
    /// A device interrupt (irq enter, irq exit).
    Irq(usize),
    /// `tick_nohz_idle_exit` after need_resched, then schedule.
    IdleExit(usize),
    /// The nohz kick IPI is delivered (irq enter, the csd handler, irq exit).
    DeliverIpi(usize),
    /// SCHED_SOFTIRQ runs.
    Softirq(usize),
    Set {
        cpu: usize,
        knob: Knob,
        on: bool,
    },
    /// `sched_cpu_deactivate`: leave the mask, synchronize, go inactive, rebuild the domains.
    Deactivate(usize),
    /// The dying CPU flushes its queued cross-calls.
    Dying(usize),
    /// The CPU comes back: active, domains rebuilt.
    Activate(usize),
    /// A cpuset change isolates the CPU (null domain) or gives it back; domains rebuilt.
    Isolate {
        cpu: usize,
        on: bool,
    },
    Rebuild,
    Key(KeyOp),
    /// `irqtime_account_irq` at `dt` ns after the previous call.
    IrqTime {
        cpu: usize,
        ctx: Ctx,
        dt: u16,
    },
    // Inputs the kernel can receive but warns about:
    /// `tick_nohz_idle_exit` outside the idle section.
    ExitOutsideIdle(usize),
    /// The csd handler with no kick pending.
    SpuriousCsd(usize),
    /// `nohz_balance_enter_idle` / `exit_idle` run from another CPU.
    Remote {
        from: usize,
        call: Call,
    },
}

impl Step {
    /// The CPU the step runs on (the caller's `smp_processor_id()`), if it runs on one.
    pub fn cpu(self) -> Option<usize> {
        match self {
            Step::Advance(_) | Step::AdvanceNs(_) | Step::Rebuild | Step::Key(_) => None,
            Step::Remote { from, .. } => Some(from),
            Step::Tick(c)
            | Step::RunTask(c)
            | Step::StopTask(c)
            | Step::Newidle { cpu: c, .. }
            | Step::IdleEnter(c)
            | Step::IdleStop(c)
            | Step::GovernorStop(c)
            | Step::IdleRetain(c)
            | Step::IdlePoll(c)
            | Step::DoIdle(c)
            | Step::Irq(c)
            | Step::IdleExit(c)
            | Step::DeliverIpi(c)
            | Step::Softirq(c)
            | Step::Set { cpu: c, .. }
            | Step::Deactivate(c)
            | Step::Dying(c)
            | Step::Activate(c)
            | Step::Isolate { cpu: c, .. }
            | Step::IrqTime { cpu: c, .. }
            | Step::ExitOutsideIdle(c)
            | Step::SpuriousCsd(c) => Some(c),
        }
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Step::Advance(n) => write!(f, "Advance({n})"),
            Step::AdvanceNs(n) => write!(f, "AdvanceNs({n})"),
            Step::Tick(c) => write!(f, "Tick({c})"),
            Step::RunTask(c) => write!(f, "RunTask({c})"),
            Step::StopTask(c) => write!(f, "StopTask({c})"),
            Step::Newidle {
                cpu,
                long_idle,
                walks,
                pulls,
                deadline,
            } => write!(
                f,
                "Newidle {{ cpu: {cpu}, long_idle: {long_idle}, walks: {walks}, pulls: {pulls}, \
                 deadline: {deadline:?} }}"
            ),
            Step::IdleEnter(c) => write!(f, "IdleEnter({c})"),
            Step::IdleStop(c) => write!(f, "IdleStop({c})"),
            Step::GovernorStop(c) => write!(f, "GovernorStop({c})"),
            Step::IdleRetain(c) => write!(f, "IdleRetain({c})"),
            Step::IdlePoll(c) => write!(f, "IdlePoll({c})"),
            Step::DoIdle(c) => write!(f, "DoIdle({c})"),
            Step::Irq(c) => write!(f, "Irq({c})"),
            Step::IdleExit(c) => write!(f, "IdleExit({c})"),
            Step::DeliverIpi(c) => write!(f, "DeliverIpi({c})"),
            Step::Softirq(c) => write!(f, "Softirq({c})"),
            Step::Set { cpu, knob, on } => write!(f, "Set {{ cpu: {cpu}, {knob:?}: {on} }}"),
            Step::Deactivate(c) => write!(f, "Deactivate({c})"),
            Step::Dying(c) => write!(f, "Dying({c})"),
            Step::Activate(c) => write!(f, "Activate({c})"),
            Step::Isolate { cpu, on } => write!(f, "Isolate {{ cpu: {cpu}, on: {on} }}"),
            Step::Rebuild => write!(f, "Rebuild"),
            Step::Key(op) => write!(f, "Key({op:?})"),
            Step::IrqTime { cpu, ctx, dt } => {
                write!(f, "IrqTime {{ cpu: {cpu}, ctx: {ctx:?}, dt: {dt} }}")
            }
            Step::ExitOutsideIdle(c) => write!(f, "ExitOutsideIdle({c})"),
            Step::SpuriousCsd(c) => write!(f, "SpuriousCsd({c})"),
            Step::Remote { from, call } => write!(f, "Remote {{ from: {from}, call: {call:?} }}"),
        }
    }
}

/// The machine a run is built on.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    pub policy: Pol,
    /// What a policy beyond the kernel changes (the kernel's: the default).
    pub beyond: Beyond,
    pub nr: usize,
    /// The lowest CPU of each CPU's cache group (contiguous groups, 1 to 4 of them).
    pub llc: Vec<usize>,
    pub isolated: Vec<bool>,
    pub nohz_full: Vec<bool>,
    pub housekeeping: Vec<bool>,
    /// Asym-packing priority of the CPUs in the asym-packing domain (higher is preferred).
    pub asym_prio: Vec<Option<u32>>,
    /// Every CPU has an asymmetric-capacity domain.
    pub asym_capacity: bool,
    /// Raw jiffies at boot.
    pub start: usize,
}

fn list(v: &[bool]) -> Vec<usize> {
    v.iter()
        .enumerate()
        .filter_map(|(i, &b)| b.then_some(i))
        .collect()
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut groups = Vec::new();
        for c in 0..self.nr {
            if self.llc[c] == c {
                let end = (c..self.nr)
                    .take_while(|&d| self.llc[d] == c)
                    .last()
                    .unwrap();
                groups.push(if end == c {
                    format!("{c}")
                } else {
                    format!("{c}-{end}")
                });
            }
        }
        write!(
            f,
            "{:?} {{ nr: {}, llcs: [{}], isolated: {:?}, nohz_full: {:?}, housekeeping: {:?}",
            self.policy,
            self.nr,
            groups.join(", "),
            list(&self.isolated),
            list(&self.nohz_full),
            list(&self.housekeeping),
        )?;
        let asym: Vec<String> = (0..self.nr)
            .filter_map(|c| self.asym_prio[c].map(|p| format!("{c}:{p}")))
            .collect();
        if !asym.is_empty() {
            write!(f, ", asym_packing: [{}]", asym.join(", "))?;
        }
        if self.asym_capacity {
            write!(f, ", asym_capacity")?;
        }
        if self.beyond != Beyond::default() {
            write!(f, ", {:?}", self.beyond)?;
        }
        write!(f, ", jiffies: MAX-{} }}", usize::MAX - self.start)
    }
}

/// The topology the platform reports for the given hotplug and isolation state: active,
/// non-isolated CPUs form one partition; a partition of one CPU gets no domain (spec §5.6);
/// a CPU's LLC is its cache group's domain CPUs, led by the lowest, and a group of one has no
/// LLC domain.
pub fn platform_topology(
    llc: &[usize],
    active: &[bool],
    isolated: &[bool],
) -> Vec<(bool, Option<usize>)> {
    let nr = llc.len();
    let in_partition: Vec<bool> = (0..nr).map(|c| active[c] && !isolated[c]).collect();
    let partition = in_partition.iter().filter(|&&b| b).count();
    let dom: Vec<bool> = (0..nr).map(|c| in_partition[c] && partition >= 2).collect();
    (0..nr)
        .map(|c| {
            if !dom[c] {
                return (false, None);
            }
            let members: Vec<usize> = (0..nr).filter(|&d| dom[d] && llc[d] == llc[c]).collect();
            (true, (members.len() >= 2).then(|| members[0]))
        })
        .collect()
}

/// One CPU: what the kernel keeps (scheduler facts and knobs), the crate's runqueue and
/// tick-sched state as the spec describes it, and its irq time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    // The kernel's side.
    pub active: bool,
    /// Went through `cpu_dying` and not yet back (`cpu_activate`): nothing runs on it.
    pub dead: bool,
    pub isolated: bool,
    pub nr_running: u32,
    pub curr_idle: bool,
    pub ttwu: bool,
    pub need_resched: bool,
    pub low_capacity: bool,
    pub misfit: bool,
    pub blocked_remains: bool,
    pub needs_tick: bool,
    pub base_refuses: bool,
    pub softirq_bits: u32,
    pub tick_dep: bool,
    /// SCHED_SOFTIRQ raised by the crate and not yet run.
    pub softirq_raised: bool,
    // struct rq.
    pub nohz_tick_stopped: bool,
    pub nohz_flags: u32,
    pub csd_busy: bool,
    pub has_blocked_load: bool,
    pub last_blocked_update: u128,
    pub next_balance: u128,
    pub idle_balance: bool,
    pub nohz_idle_balance: u32,
    pub nohz_idle: bool,
    pub has_domain: bool,
    pub llc_leader: Option<usize>,
    // struct tick_sched.
    pub inidle: bool,
    pub stopped: bool,
    pub idle_active: bool,
    pub do_timer_last: bool,
    /// `timer_expires_base != 0`.
    pub cached: bool,
    pub timer_expires: u64,
    pub next_tick: u64,
    pub last_tick: u64,
    /// Where the host's sched timer is set.
    pub tick_expiry: u64,
    pub idle_calls: u64,
    pub idle_sleeps: u64,
    /// `last_tick_jiffies` (raw: 0 at boot and after `cpu_dying`) and `stalled_jiffies`.
    pub last_tick_jiffies: usize,
    pub stalled_jiffies: u32,
    // irqtime.
    pub irq_start: u64,
    pub hardirq_ns: u64,
    pub softirq_ns: u64,
    pub irq_total: u64,
}

impl Cpu {
    fn boot(now: u128) -> Cpu {
        Cpu {
            active: true,
            dead: false,
            isolated: false,
            nr_running: 0,
            curr_idle: true,
            ttwu: false,
            need_resched: false,
            low_capacity: false,
            misfit: false,
            blocked_remains: false,
            needs_tick: false,
            base_refuses: false,
            softirq_bits: 0,
            tick_dep: false,
            softirq_raised: false,
            nohz_tick_stopped: false,
            nohz_flags: 0,
            csd_busy: false,
            has_blocked_load: false,
            last_blocked_update: now,
            next_balance: now,
            idle_balance: false,
            nohz_idle_balance: 0,
            nohz_idle: false,
            has_domain: false,
            llc_leader: None,
            inidle: false,
            stopped: false,
            idle_active: false,
            do_timer_last: false,
            cached: false,
            timer_expires: 0,
            next_tick: 0,
            last_tick: 0,
            tick_expiry: START_NS + TICK_NS,
            idle_calls: 0,
            idle_sleeps: 0,
            last_tick_jiffies: 0,
            stalled_jiffies: 0,
            irq_start: 0,
            hardirq_ns: 0,
            softirq_ns: 0,
            irq_total: 0,
        }
    }

    pub fn idle(&self) -> bool {
        self.curr_idle && self.nr_running == 0 && !self.ttwu
    }

    pub fn ts_flags(&self) -> u32 {
        if self.dead {
            // tick_sched_timer_dying cleared every flag, NO_HZ mode included.
            return 0;
        }
        let mut f = TS_NOHZ | TS_HIGHRES;
        for (on, bit) in [
            (self.inidle, TS_INIDLE),
            (self.stopped, TS_STOPPED),
            (self.idle_active, TS_IDLE_ACTIVE),
            (self.do_timer_last, TS_DO_TIMER_LAST),
        ] {
            if on {
                f |= bit;
            }
        }
        f
    }
}

/// What the last step produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepOut {
    /// The kernel cannot take the step in this state: nothing happened.
    pub skipped: bool,
    pub events: Vec<Ev>,
    /// `Some` for a tick: what `sched_tick` returned.
    pub decision: Option<Option<Decision>>,
    /// `Some` for an idle entry: the NEWILB pass, if one ran.
    pub newilb_pass: Option<Option<PassEnd>>,
    pub key: Option<Result<(), KeyErr>>,
    pub pulled: Option<bool>,
    pub stop: Option<StopFacts>,
    /// A STATS pass ran to completion during the step.
    pub stats_pass_completed: bool,
}

/// The whole modelled machine.
#[derive(Clone)]
pub struct Model {
    pub cfg: Config,
    pub now: u128,
    pub cpus: Vec<Cpu>,
    pub mask: Vec<bool>,
    pub has_blocked_load: bool,
    pub needs_update: bool,
    pub next_balance: u128,
    pub next_blocked: u128,
    /// `Legacy` only: `nohz.nr_cpus`.
    pub nr_cpus: u32,
    /// `IlbPick::RoundRobin` only: `nohz.ilb_cpu_last`.
    pub ilb_cpu_last: usize,
    /// `nr_busy_cpus`, indexed by the LLC's lowest CPU.
    pub llc_busy: Vec<i32>,
    /// `sched_asym_cpucapacity`: some CPU with a domain has an asymmetric-capacity one (set
    /// by the domain build).
    pub asym_key: bool,
    pub do_timer: Option<usize>,
    /// The host's monotonic clock and the time of its last jiffies update (ns).
    pub ns: u64,
    pub last_jiffies_update: u64,
    pub key_count: i32,
    pub legacy_irqtime: bool,
    pub irq_clock: u64,
    pub warn_cpu: Vec<u64>,
    pub warn_less: u64,
    pub warn_kind: BTreeMap<Wk, u64>,
    /// Who `smp_processor_id()` says is running the current step.
    this_cpu: Option<usize>,
    pub out: StepOut,
}

/// Only the machine is printed (it is all a shrunk case needs to be replayed).
impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cfg.fmt(f)
    }
}

impl Model {
    pub fn new(cfg: Config) -> Model {
        let now = cfg.start as u128;
        let nr = cfg.nr;
        let mut cpus: Vec<Cpu> = (0..nr).map(|_| Cpu::boot(now)).collect();
        for (c, cpu) in cpus.iter_mut().enumerate() {
            cpu.isolated = cfg.isolated[c];
        }
        let mut m = Model {
            cfg,
            now,
            cpus,
            mask: vec![false; nr],
            has_blocked_load: false,
            needs_update: false,
            next_balance: now,
            next_blocked: now,
            nr_cpus: 0,
            ilb_cpu_last: 0,
            llc_busy: vec![0; nr],
            asym_key: false,
            do_timer: Some(0),
            ns: START_NS,
            last_jiffies_update: START_NS,
            key_count: 0,
            legacy_irqtime: false,
            irq_clock: 0,
            warn_cpu: vec![0; nr],
            warn_less: 0,
            warn_kind: BTreeMap::new(),
            this_cpu: None,
            out: StepOut::default(),
        };
        m.build_domains();
        m
    }

    pub fn nr(&self) -> usize {
        self.cfg.nr
    }

    pub fn legacy(&self) -> bool {
        self.cfg.policy == Pol::Legacy
    }

    pub fn any_nohz_full(&self) -> bool {
        self.cfg.nohz_full.iter().any(|&b| b)
    }

    pub fn pending_ipis(&self) -> Vec<usize> {
        (0..self.nr()).filter(|&c| self.cpus[c].csd_busy).collect()
    }

    pub fn irqtime_enabled(&self) -> bool {
        match self.cfg.policy {
            Pol::Patched => self.key_count > 0,
            Pol::Legacy => self.legacy_irqtime,
        }
    }

    /// `nr_busy_cpus` of `cpu`'s LLC, if it has one.
    pub fn llc_busy_of(&self, cpu: usize) -> Option<i32> {
        self.cpus[cpu].llc_leader.map(|l| self.llc_busy[l])
    }

    fn warn(&mut self, at: Option<usize>, kind: Wk) {
        match at {
            Some(c) => self.warn_cpu[c] += 1,
            None => self.warn_less += 1,
        }
        *self.warn_kind.entry(kind).or_default() += 1;
    }

    fn check_on_cpu(&mut self, cpu: usize) {
        if let Some(me) = self.this_cpu
            && me != cpu
        {
            self.warn(Some(cpu), Wk::WrongCpu);
        }
    }

    fn emit(&mut self, ev: Ev) {
        self.out.events.push(ev);
    }

    fn raise(&mut self, cpu: usize) {
        self.emit(Ev::Softirq(cpu));
        self.cpus[cpu].softirq_raised = true;
    }

    // ---------------------------------------------------------------- preconditions

    /// Whether the kernel can take `step` in this state (CPUs of this machine, and the
    /// scheduler, hotplug and IPI state it needs).
    pub fn valid(&self, step: &Step) -> bool {
        let nr = self.nr();
        // Nothing runs on a dead CPU until it comes back.
        let ok = |c: usize| c < nr && !self.cpus[c].dead;
        let cpu = |c: usize| &self.cpus[c];
        match *step {
            Step::Advance(n) => n >= 1,
            Step::AdvanceNs(n) => n >= 1,
            Step::Tick(c)
            | Step::Irq(c)
            | Step::Set { cpu: c, .. }
            | Step::IrqTime { cpu: c, .. } => ok(c),
            Step::RunTask(c) => ok(c) && cpu(c).nr_running < 3,
            Step::StopTask(c) => {
                ok(c) && !cpu(c).curr_idle && cpu(c).nr_running > 0 && !cpu(c).inidle
            }
            Step::Newidle { cpu: c, .. } | Step::IdleEnter(c) => {
                ok(c) && cpu(c).curr_idle && cpu(c).nr_running == 0 && !cpu(c).inidle
            }
            Step::IdleStop(c) | Step::GovernorStop(c) | Step::IdlePoll(c) => {
                ok(c) && cpu(c).inidle && !cpu(c).need_resched
            }
            // A governor's "keep it" never reaches a stopped tick: that goes to the stop path.
            Step::IdleRetain(c) => {
                ok(c) && cpu(c).inidle && !cpu(c).need_resched && !cpu(c).stopped
            }
            Step::DoIdle(c) => {
                ok(c)
                    && cpu(c).curr_idle
                    && cpu(c).nr_running == 0
                    && !cpu(c).inidle
                    && !cpu(c).need_resched
            }
            Step::IdleExit(c) => ok(c) && cpu(c).inidle && cpu(c).need_resched,
            Step::DeliverIpi(c) => ok(c) && cpu(c).csd_busy,
            Step::Softirq(c) => ok(c) && cpu(c).softirq_raised,
            Step::Deactivate(c) => {
                ok(c)
                    && cpu(c).active
                    && self.cpus.iter().filter(|x| x.active).count() >= 2
                    // The timekeeper of a NO_HZ_FULL machine cannot go down.
                    && !(self.any_nohz_full() && self.do_timer == Some(c))
            }
            Step::Dying(c) => ok(c) && !cpu(c).active,
            Step::Activate(c) => c < nr && !cpu(c).active,
            Step::Isolate { cpu: c, on } => ok(c) && cpu(c).isolated != on,
            Step::Rebuild | Step::Key(_) => true,
            Step::ExitOutsideIdle(c) => ok(c) && !cpu(c).inidle,
            Step::SpuriousCsd(c) => ok(c) && !cpu(c).csd_busy,
            Step::Remote { from, call } => {
                let target = match call {
                    Call::EnterIdle(t) | Call::ExitIdle(t) => t,
                };
                ok(from) && ok(target) && from != target
            }
        }
    }

    // ---------------------------------------------------------------- transitions

    /// Takes `step`, or skips it (recording that) if the kernel cannot take it here.
    pub fn apply(&mut self, step: Step) {
        self.out = StepOut::default();
        if !self.valid(&step) {
            self.out.skipped = true;
            return;
        }
        self.this_cpu = step.cpu();
        match step {
            Step::Advance(n) => self.now += n as u128,
            Step::AdvanceNs(n) => self.ns += n,
            Step::Tick(c) => {
                self.irq_enter(c);
                let d = self.tick_sched_timer(c);
                self.out.decision = Some(d);
                self.irq_exit(c);
            }
            Step::RunTask(c) => {
                let cpu = &mut self.cpus[c];
                cpu.nr_running += 1;
                if cpu.inidle {
                    cpu.need_resched = true;
                } else if cpu.curr_idle {
                    cpu.curr_idle = false;
                }
            }
            Step::StopTask(c) => {
                let cpu = &mut self.cpus[c];
                cpu.nr_running -= 1;
                cpu.curr_idle = cpu.nr_running == 0;
            }
            Step::Newidle {
                cpu: c,
                long_idle,
                walks,
                pulls,
                deadline,
            } => {
                let pulled = self.newidle_balance(c, long_idle, walks, pulls, deadline);
                self.out.pulled = Some(pulled);
                if pulled {
                    let cpu = &mut self.cpus[c];
                    cpu.nr_running = 1;
                    cpu.curr_idle = false;
                }
            }
            Step::IdleEnter(c) => {
                let pass = self.run_idle_balance(c);
                self.out.newilb_pass = Some(pass);
                self.tick_nohz_idle_enter(c);
            }
            Step::IdleStop(c) => self.idle_stop_step(c),
            Step::GovernorStop(c) => {
                if self.can_stop_idle_tick(c) {
                    self.tick_nohz_next_event(c);
                }
                self.idle_stop_step(c);
            }
            Step::IdleRetain(c) => {
                if self.can_stop_idle_tick(c) {
                    self.tick_nohz_next_event(c);
                }
                self.cpus[c].cached = false;
            }
            Step::IdlePoll(c) => {
                if self.cpus[c].stopped {
                    self.restart_tick(c, self.ns);
                }
            }
            Step::DoIdle(c) => {
                // (do_idle does not report the NEWILB pass; its effects are compared.)
                self.run_idle_balance(c);
                self.tick_nohz_idle_enter(c);
                // One pass of the loop: no cpuidle driver, so the stop path; the idle state
                // ends with need_resched, which ends the loop.
                self.tick_nohz_idle_stop_tick(c);
                self.cpus[c].need_resched = true;
                self.tick_nohz_idle_exit(c);
                // flush_smp_call_function_queue: a kick queued meanwhile runs now, and the
                // softirq it raised right after.
                if self.cpus[c].csd_busy {
                    self.nohz_csd_ipi(c);
                    if self.cpus[c].softirq_raised {
                        self.cpus[c].softirq_raised = false;
                        self.balance_softirq(c);
                    }
                }
                let cpu = &mut self.cpus[c];
                cpu.need_resched = false;
                cpu.curr_idle = cpu.nr_running == 0;
            }
            Step::Irq(c) => {
                self.irq_enter(c);
                self.irq_exit(c);
            }
            Step::IdleExit(c) => {
                self.tick_nohz_idle_exit(c);
                let cpu = &mut self.cpus[c];
                cpu.need_resched = false;
                cpu.curr_idle = cpu.nr_running == 0;
            }
            Step::DeliverIpi(c) => {
                self.irq_enter(c);
                self.nohz_csd_ipi(c);
                self.irq_exit(c);
            }
            Step::Softirq(c) => {
                self.cpus[c].softirq_raised = false;
                self.balance_softirq(c);
            }
            Step::Set { cpu: c, knob, on } => {
                let cpu = &mut self.cpus[c];
                match knob {
                    Knob::NeedsTick => cpu.needs_tick = on,
                    Knob::TimerBaseBusy => cpu.base_refuses = on,
                    Knob::SoftirqSched | Knob::SoftirqTimer => {
                        let bit = if knob == Knob::SoftirqSched {
                            SOFTIRQ_SCHED
                        } else {
                            SOFTIRQ_TIMER
                        };
                        if on {
                            cpu.softirq_bits |= bit;
                        } else {
                            cpu.softirq_bits &= !bit;
                        }
                    }
                    Knob::TickDep => cpu.tick_dep = on,
                    Knob::BlockedRemains => cpu.blocked_remains = on,
                    Knob::Ttwu => cpu.ttwu = on,
                    Knob::LowCapacity => cpu.low_capacity = on,
                    Knob::Misfit => cpu.misfit = on,
                }
            }
            Step::Deactivate(c) => {
                // The crate's order: out of the mask, inactive, then the grace period.
                self.exit_idle(c);
                self.cpus[c].active = false;
                self.emit(Ev::SyncRcu);
                self.build_domains();
            }
            Step::Dying(c) => {
                if self.cpus[c].csd_busy {
                    self.nohz_csd_ipi(c);
                }
                // tick_cpu_dying: the duty goes to the lowest other active CPU.
                if self.do_timer == Some(c) {
                    self.do_timer = (0..self.nr()).find(|&o| o != c && self.cpus[o].active);
                }
                // tick_sched_timer_dying: timer cancelled, tick state reset but the stats.
                let cpu = &mut self.cpus[c];
                cpu.tick_expiry = KTIME_MAX;
                cpu.inidle = false;
                cpu.stopped = false;
                cpu.idle_active = false;
                cpu.do_timer_last = false;
                cpu.cached = false;
                cpu.timer_expires = 0;
                cpu.next_tick = 0;
                cpu.last_tick = 0;
                cpu.last_tick_jiffies = 0;
                cpu.stalled_jiffies = 0;
                cpu.tick_dep = false;
                cpu.dead = true;
            }
            Step::Activate(c) => {
                // Its tick set up again (NO_HZ mode back), then sched_cpu_activate.
                self.cpus[c].dead = false;
                self.cpus[c].active = true;
                // rebuild_sched_domains: a grace period, then the new generation.
                self.emit(Ev::SyncRcu);
                self.build_domains();
            }
            Step::Isolate { cpu: c, on } => {
                self.cpus[c].isolated = on;
                // rebuild_sched_domains: a grace period, then the new generation.
                self.emit(Ev::SyncRcu);
                self.build_domains();
            }
            Step::Rebuild => {
                self.emit(Ev::SyncRcu);
                self.build_domains();
            }
            Step::Key(op) => {
                let r = self.key(op);
                self.out.key = Some(r);
            }
            Step::IrqTime { cpu: c, ctx, dt } => {
                self.irq_clock += dt as u64;
                self.irqtime_account_irq(c, ctx, self.irq_clock);
            }
            Step::ExitOutsideIdle(c) => self.tick_nohz_idle_exit(c),
            Step::SpuriousCsd(c) => self.nohz_csd_ipi(c),
            Step::Remote { call, .. } => match call {
                Call::EnterIdle(t) => self.enter_idle(t),
                Call::ExitIdle(t) => self.exit_idle(t),
            },
        }
    }

    fn idle_stop_step(&mut self, c: usize) {
        let before = (self.cpus[c].stopped, self.cpus[c].nohz_tick_stopped);
        let attempted = self.tick_nohz_idle_stop_tick(c);
        self.out.stop = Some(StopFacts {
            attempted,
            was_stopped: before.0,
            registered_before: before.1,
            stopped_after: self.cpus[c].stopped,
            in_mask_after: self.mask[c],
        });
    }

    // ---------------------------------------------------------------- topology (spec §5.6)

    /// The domain rebuild: installs the platform's topology, every LLC's busy count restarts
    /// at its weight and every CPU's `nohz_idle` at 0. The mask is not touched.
    fn build_domains(&mut self) {
        let active: Vec<bool> = self.cpus.iter().map(|c| c.active).collect();
        let isolated: Vec<bool> = self.cpus.iter().map(|c| c.isolated).collect();
        let topo = platform_topology(&self.cfg.llc, &active, &isolated);
        self.llc_busy = vec![0; self.nr()];
        for (c, (dom, leader)) in topo.into_iter().enumerate() {
            let cpu = &mut self.cpus[c];
            cpu.has_domain = dom;
            cpu.llc_leader = leader;
            cpu.nohz_idle = false;
            if let Some(l) = leader {
                self.llc_busy[l] += 1;
            }
        }
        self.asym_key = self.cfg.asym_capacity && self.cpus.iter().any(|c| c.has_domain);
    }

    // ---------------------------------------------------------------- fair.c (spec §5)

    fn enter_idle(&mut self, c: usize) {
        self.check_on_cpu(c);
        if !self.cpus[c].active {
            return;
        }
        self.cpus[c].has_blocked_load = true;
        if !self.cpus[c].nohz_tick_stopped {
            if !self.cpus[c].has_domain {
                return;
            }
            self.cpus[c].nohz_tick_stopped = true;
            self.mask[c] = true;
            if self.legacy() {
                self.nr_cpus += 1;
            }
            self.sd_state_idle(c);
            self.needs_update = true;
        }
        self.has_blocked_load = true;
    }

    fn exit_idle(&mut self, c: usize) {
        self.check_on_cpu(c);
        if !self.cpus[c].nohz_tick_stopped {
            return;
        }
        self.cpus[c].nohz_tick_stopped = false;
        self.mask[c] = false;
        if self.legacy() {
            self.nr_cpus -= 1;
        }
        self.sd_state_busy(c);
    }

    fn sd_state_idle(&mut self, c: usize) {
        let Some(l) = self.cpus[c].llc_leader else {
            return;
        };
        if self.cpus[c].nohz_idle {
            return;
        }
        self.cpus[c].nohz_idle = true;
        self.llc_busy[l] -= 1;
    }

    fn sd_state_busy(&mut self, c: usize) {
        let Some(l) = self.cpus[c].llc_leader else {
            return;
        };
        if !self.cpus[c].nohz_idle {
            return;
        }
        self.cpus[c].nohz_idle = false;
        self.llc_busy[l] += 1;
    }

    fn sched_tick(&mut self, c: usize) -> Option<Decision> {
        self.check_on_cpu(c);
        self.cpus[c].idle_balance = self.cpus[c].idle();
        // sched_balance_trigger
        if !self.cpus[c].has_domain || !self.cpus[c].active {
            return None;
        }
        if self.now >= self.cpus[c].next_balance {
            self.raise(c);
        }
        Some(self.balancer_kick(c))
    }

    fn nobody_tickless(&self) -> bool {
        match self.cfg.policy {
            Pol::Legacy => self.nr_cpus == 0,
            Pol::Patched => !self.mask.iter().any(|&b| b),
        }
    }

    fn balancer_kick(&mut self, c: usize) -> Decision {
        let now = self.now;
        let mut flags = 0;
        if self.cpus[c].idle_balance {
            return Decision::IdleTick;
        }
        self.exit_idle(c);
        if self.legacy() && self.nobody_tickless() {
            return Decision::NobodyTickless;
        }
        if self.has_blocked_load && now > self.next_blocked {
            flags = STATS;
        }
        let due = now >= self.next_balance;
        // Hegde: no registered housekeeping CPU ends the kick, due or wanting STATS.
        if self.cfg.beyond.hegde_hk
            && (due || flags & STATS != 0)
            && !(0..self.nr()).any(|i| self.mask[i] && self.cfg.housekeeping[i])
        {
            return Decision::EmptyMask;
        }
        if due {
            if !self.legacy() && self.nobody_tickless() {
                return Decision::EmptyMask;
            }
            if self.busy_reason(c) {
                flags = if self.cfg.beyond.paced_kick {
                    flags | BALANCE
                } else {
                    STATS | BALANCE
                };
            }
        }
        if self.needs_update
            && (!self.cfg.beyond.paced_kick || flags != 0 || self.next_balance > now + 1)
        {
            flags |= NEXT;
        }
        if flags == 0 {
            return Decision::NoFlags;
        }
        let outcome = self.kick_ilb(c, flags);
        Decision::Kick { flags, outcome }
    }

    /// Is balancing worth an IPI: two tasks; capacity lost to pressure; an idle CPU that asym
    /// packing prefers; a misfit task (asymmetric systems stop there); a busy LLC.
    fn busy_reason(&self, c: usize) -> bool {
        let cpu = &self.cpus[c];
        if cpu.nr_running >= 2 {
            return true;
        }
        if cpu.has_domain && cpu.nr_running >= 1 && cpu.low_capacity {
            return true;
        }
        if let Some(mine) = self.cfg.asym_prio[c]
            && (0..self.nr())
                .any(|i| self.mask[i] && self.cfg.asym_prio[i].is_some_and(|p| p > mine))
        {
            return true;
        }
        if self.cfg.asym_capacity {
            return cpu.misfit;
        }
        self.llc_busy_of(c).is_some_and(|b| b > 1)
    }

    fn kick_ilb(&mut self, c: usize, flags: u32) -> Outcome {
        if flags & BALANCE != 0 {
            self.next_balance = self.now + 1;
        }
        let Some(ilb) = self.find_new_ilb(c) else {
            return Outcome::NoIlb;
        };
        let old = self.cpus[ilb].nohz_flags;
        if old & flags == flags {
            return Outcome::AlreadyPending(ilb);
        }
        self.cpus[ilb].nohz_flags |= flags;
        if old & KICK_MASK != 0 {
            return Outcome::RodeAlong(ilb);
        }
        if self.cpus[ilb].csd_busy {
            self.warn(Some(c), Wk::CsdBusy);
            return Outcome::CsdBusy(ilb);
        }
        self.cpus[ilb].csd_busy = true;
        self.emit(Ev::Ipi { from: c, to: ilb });
        Outcome::Sent(ilb)
    }

    /// The first registered idle housekeeping CPU but the kicker `c`, in the policy's order.
    fn find_new_ilb(&mut self, c: usize) -> Option<usize> {
        let nr = self.nr();
        let start = match self.cfg.beyond.ilb_pick {
            IlbPick::Lowest => 0,
            IlbPick::Hashed => paced_ilb_start(self.now as usize, nr),
            IlbPick::RoundRobin => (self.ilb_cpu_last + 1).min(nr),
        };
        let ilb = (start..nr)
            .chain(0..start)
            .find(|&i| self.mask[i] && self.cfg.housekeeping[i] && i != c && self.cpus[i].idle());
        if let (Some(i), IlbPick::RoundRobin) = (ilb, self.cfg.beyond.ilb_pick) {
            self.ilb_cpu_last = i;
        }
        ilb
    }

    fn nohz_csd_ipi(&mut self, c: usize) {
        self.check_on_cpu(c);
        self.cpus[c].csd_busy = false;
        let flags = self.cpus[c].nohz_flags & (KICK_MASK | NEWILB);
        self.cpus[c].nohz_flags &= !(KICK_MASK | NEWILB);
        if flags & KICK_MASK == 0 {
            self.warn(Some(c), Wk::CsdWithoutKick);
        }
        let idle = self.cpus[c].idle();
        self.cpus[c].idle_balance = idle;
        if idle {
            self.cpus[c].nohz_idle_balance = flags;
            self.raise(c);
        }
    }

    fn balance_softirq(&mut self, c: usize) {
        self.check_on_cpu(c);
        let idle = self.cpus[c].idle_balance;
        let flags = self.cpus[c].nohz_idle_balance;
        if flags != 0 {
            self.cpus[c].nohz_idle_balance = 0;
            if idle {
                self.idle_balance_pass(c, flags);
                return;
            }
        }
        self.decay(c, c);
        self.emit(Ev::Balance {
            by: c,
            cpu: c,
            idle,
        });
        self.cpus[c].next_balance = self.now + BALANCE_INTERVAL;
    }

    fn decay(&mut self, by: usize, c: usize) {
        self.cpus[c].last_blocked_update = self.now;
        self.emit(Ev::Decay { by, cpu: c });
        if !self.cpus[c].blocked_remains {
            self.cpus[c].has_blocked_load = false;
        }
    }

    fn update_nohz_stats(&mut self, by: usize, b: usize) -> bool {
        if !self.cpus[b].has_blocked_load || !self.mask[b] {
            return false;
        }
        if self.now <= self.cpus[b].last_blocked_update {
            return true;
        }
        self.decay(by, b);
        self.cpus[b].has_blocked_load
    }

    fn idle_balance_pass(&mut self, c: usize, flags: u32) -> PassEnd {
        let now = self.now;
        let nr = self.nr();
        let mut next = now + 60 * HZ;
        let mut has_blocked = false;
        let mut update_next = false;
        let stats = flags & STATS != 0;
        if flags & KICK_MASK == BALANCE && !self.cfg.beyond.paced_kick {
            self.warn(Some(c), Wk::BalanceWithoutStats);
        }
        if stats {
            self.has_blocked_load = false;
        }
        if flags & NEXT != 0 {
            self.needs_update = false;
        }
        let start = (c + 1).min(nr);
        let order: Vec<usize> = (start..nr).chain(0..start).collect();
        let mut end = PassEnd::Completed;
        for b in order {
            if !self.mask[b] || !self.cpus[b].idle() {
                continue;
            }
            if !self.cpus[c].idle() && self.cpus[c].need_resched {
                if stats {
                    has_blocked = true;
                }
                if flags & NEXT != 0 {
                    self.needs_update = true;
                }
                end = PassEnd::Aborted;
                break;
            }
            if stats {
                has_blocked |= self.update_nohz_stats(c, b);
            }
            if now >= self.cpus[b].next_balance {
                self.emit(Ev::RqClock { by: c, cpu: b });
                if flags & BALANCE != 0 {
                    self.emit(Ev::Balance {
                        by: c,
                        cpu: b,
                        idle: true,
                    });
                    self.cpus[b].next_balance = now + BALANCE_INTERVAL;
                }
            }
            if next > self.cpus[b].next_balance {
                next = self.cpus[b].next_balance;
                update_next = true;
            }
        }
        if end == PassEnd::Completed {
            if update_next {
                self.next_balance = next;
                if self.cfg.beyond.khan_next_balance {
                    let weight = self.mask.iter().filter(|&&b| b).count();
                    self.next_balance += (weight / KHAN_IDLE_CPUS_PER_JIFFY) as u128;
                }
            }
            if stats {
                self.next_blocked = now + NEXT_BLOCKED_PERIOD;
                self.out.stats_pass_completed = true;
            }
        }
        if has_blocked {
            self.has_blocked_load = true;
        }
        end
    }

    fn newidle_balance(
        &mut self,
        c: usize,
        long_idle: bool,
        walks: bool,
        pulls: bool,
        deadline: Option<i8>,
    ) -> bool {
        self.check_on_cpu(c);
        // update_misfit_status(NULL, rq), before any early return; it returns at once unless
        // asymmetric capacity is active (on a symmetric machine the status stays).
        if self.asym_key {
            self.cpus[c].misfit = false;
        }
        if self.cpus[c].ttwu || !self.cpus[c].active {
            return false;
        }
        // The base domain's deadline, if the CPU has a domain and it is earlier than a second
        // from now.
        let next = match deadline {
            Some(d) if self.cpus[c].has_domain => {
                (self.now + HZ).min(self.now.wrapping_add_signed(i128::from(d)))
            }
            _ => self.now + HZ,
        };
        let mut pulled = false;
        // The walk, only with a domain and when it is worth it; this CPU's own blocked
        // averages are refreshed first, as update_nohz_stats refreshes a remote CPU's.
        if self.cpus[c].has_domain && walks {
            self.decay(c, c);
            self.emit(Ev::Newidle(c));
            pulled = pulls;
        }
        let stored = self.cpus[c].next_balance > next;
        if stored {
            self.cpus[c].next_balance = next;
        }
        // Paced's hold, after a look that found nothing to pull: the root domain not
        // overloaded, or a walk that pulled nothing. (Here `walks` is the overload: the
        // machine's walks cost nothing, so none is skipped for a short idle.) It changes what
        // is stored, never whether.
        let found_nothing = self.cpus[c].has_domain && !pulled;
        if self.cfg.beyond.newidle_hold
            && found_nothing
            && stored
            && self.cpus[c].next_balance < self.now + 2
        {
            self.cpus[c].next_balance = self.now + 2;
        }
        if !pulled && long_idle && self.has_blocked_load && self.now >= self.next_blocked {
            self.cpus[c].nohz_flags |= NEWILB;
        }
        pulled
    }

    fn run_idle_balance(&mut self, c: usize) -> Option<PassEnd> {
        self.check_on_cpu(c);
        let flags = self.cpus[c].nohz_flags;
        self.cpus[c].nohz_flags &= !NEWILB;
        if flags == NEWILB && !self.cpus[c].need_resched {
            return Some(self.idle_balance_pass(c, STATS));
        }
        None
    }

    // ---------------------------------------------------------------- tick-sched (spec §7)

    fn can_stop_idle_tick(&mut self, c: usize) -> bool {
        // Every CPU stays online and in NO_HZ mode.
        if self.cpus[c].need_resched {
            return false;
        }
        // local_softirq_pending() includes SCHED_SOFTIRQ, raised and not yet run.
        let mut pending = self.cpus[c].softirq_bits;
        if self.cpus[c].softirq_raised {
            pending |= SOFTIRQ_SCHED;
        }
        if !self.cpus[c].active {
            pending &= !SOFTIRQ_HOTPLUG_SAFE;
        }
        if pending != 0 {
            // report_idle_softirq (no PREEMPT_RT here): kept, and reported.
            self.warn(Some(c), Wk::IdleSoftirqPending);
            return false;
        }
        if self.any_nohz_full() {
            if self.do_timer == Some(c) {
                return false;
            }
            if self.do_timer.is_none() {
                self.warn(Some(c), Wk::NoTimekeeper);
                return false;
            }
        }
        true
    }

    /// `tick_nohz_next_event`: 0 (keep ticking) or the expiry, cached.
    fn tick_nohz_next_event(&mut self, c: usize) -> u64 {
        // get_jiffies_update: the time of the last jiffies update.
        let base = self.last_jiffies_update;
        let cpu = &mut self.cpus[c];
        cpu.cached = true;
        // No timer is ever queued; only a tick need brings the next event in.
        let next = if cpu.needs_tick {
            base + TICK_NS
        } else {
            KTIME_MAX
        };
        if next - base <= TICK_NS && !cpu.stopped {
            cpu.timer_expires = 0;
            return 0;
        }
        let bounded = self.do_timer == Some(c) || (self.do_timer.is_none() && cpu.do_timer_last);
        let limit = if bounded && MAX_DEFERMENT_NS < KTIME_MAX - base {
            base + MAX_DEFERMENT_NS
        } else {
            KTIME_MAX
        };
        let expires = limit.min(next);
        cpu.timer_expires = expires;
        expires
    }

    /// `tick_nohz_stop_tick`.
    fn tick_stop(&mut self, c: usize) {
        self.cpus[c].cached = false;
        let expires = self.cpus[c].timer_expires;
        if !self.cpus[c].stopped && self.cpus[c].base_refuses {
            return;
        }
        if self.do_timer == Some(c) {
            self.do_timer = None;
            self.cpus[c].do_timer_last = true;
        } else if self.do_timer.is_some() {
            self.cpus[c].do_timer_last = false;
        }
        let cpu = &self.cpus[c];
        if cpu.stopped && expires == cpu.next_tick {
            if expires == KTIME_MAX || cpu.tick_expiry == expires {
                return;
            }
            self.warn(Some(c), Wk::TickNotProgrammed);
        }
        let cpu = &mut self.cpus[c];
        if !cpu.stopped {
            cpu.last_tick = cpu.tick_expiry;
            cpu.stopped = true;
        }
        cpu.next_tick = expires;
        // Programmed there, or cancelled (which leaves it at "never" too).
        cpu.tick_expiry = expires;
    }

    /// Returns whether the attempt got past the "can stop" checks.
    fn tick_nohz_idle_stop_tick(&mut self, c: usize) -> bool {
        let expires = if self.cpus[c].cached {
            self.cpus[c].timer_expires
        } else if self.can_stop_idle_tick(c) {
            self.tick_nohz_next_event(c)
        } else {
            return false;
        };
        self.cpus[c].idle_calls += 1;
        if expires == 0 {
            self.cpus[c].cached = false;
            return true;
        }
        let was_stopped = self.cpus[c].stopped;
        self.tick_stop(c);
        self.cpus[c].idle_sleeps += 1;
        let stopped = self.cpus[c].stopped;
        let register = match self.cfg.policy {
            Pol::Patched => stopped,
            Pol::Legacy => stopped && !was_stopped,
        };
        if register {
            self.enter_idle(c);
        }
        true
    }

    fn tick_nohz_idle_enter(&mut self, c: usize) {
        self.check_on_cpu(c);
        if self.cpus[c].cached {
            self.warn(Some(c), Wk::CachedNextEvent);
        }
        self.cpus[c].inidle = true;
        self.cpus[c].idle_active = true;
    }

    fn tick_nohz_idle_exit(&mut self, c: usize) {
        self.check_on_cpu(c);
        if !self.cpus[c].inidle {
            self.warn(Some(c), Wk::IdleExitOutsideIdle);
        }
        if self.cpus[c].cached {
            self.warn(Some(c), Wk::CachedNextEvent);
        }
        self.cpus[c].inidle = false;
        let (idle_active, stopped) = (self.cpus[c].idle_active, self.cpus[c].stopped);
        if idle_active {
            self.cpus[c].idle_active = false;
        }
        if stopped {
            let now = self.ns;
            if self.cfg.nohz_full[c] {
                self.full_update_tick_at(c, now);
            } else {
                self.restart_tick(c, now);
            }
        }
    }

    /// The host's `tick_do_update_jiffies64`: whole ticks since the last update.
    fn update_jiffies(&mut self, now: u64) {
        let last = self.last_jiffies_update;
        if now < last.saturating_add(TICK_NS) {
            return;
        }
        let ticks = (now - last) / TICK_NS;
        self.now += ticks as u128;
        self.last_jiffies_update = last + ticks * TICK_NS;
    }

    fn restart_tick(&mut self, c: usize, now: u64) {
        self.update_jiffies(now);
        let cpu = &mut self.cpus[c];
        cpu.stopped = false;
        cpu.tick_expiry = forward(cpu.last_tick, now, TICK_NS);
        cpu.next_tick = 0;
    }

    fn irq_enter(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        if !cpu.stopped && !cpu.idle_active {
            return;
        }
        cpu.idle_active = false;
        if cpu.stopped {
            self.update_jiffies(self.ns);
        }
    }

    fn irq_exit(&mut self, c: usize) {
        if self.cpus[c].inidle {
            self.cpus[c].idle_active = true;
        } else if self.cfg.nohz_full[c] {
            self.full_update_tick_at(c, self.ns);
        }
    }

    fn full_update_tick_at(&mut self, c: usize, now: u64) {
        // can_stop_full_tick: online, and nothing depends on the tick.
        if !self.cpus[c].tick_dep {
            if self.tick_nohz_next_event(c) != 0 {
                self.tick_stop(c);
            } else {
                self.cpus[c].cached = false;
            }
        } else if self.cpus[c].stopped {
            self.restart_tick(c, now);
        }
    }

    fn tick_sched_timer(&mut self, c: usize) -> Option<Decision> {
        let now = self.ns;
        // tick_sched_do_timer: anyone takes an orphaned duty; under NO_HZ_FULL it is a bug.
        if self.do_timer.is_none() {
            if self.any_nohz_full() {
                self.warn(Some(c), Wk::DoTimerOrphaned);
            }
            self.do_timer = Some(c);
        }
        if self.do_timer == Some(c) {
            self.update_jiffies(now);
        }
        // The stall fallback: the fifth tick after one that saw jiffies move, on the same
        // (raw) jiffies, updates them.
        let seen = self.now as usize;
        if self.cpus[c].last_tick_jiffies != seen {
            self.cpus[c].stalled_jiffies = 0;
            self.cpus[c].last_tick_jiffies = seen;
        } else {
            self.cpus[c].stalled_jiffies += 1;
            if self.cpus[c].stalled_jiffies == 5 {
                self.update_jiffies(now);
                self.cpus[c].stalled_jiffies = 0;
                self.cpus[c].last_tick_jiffies = self.now as usize;
            }
        }
        if self.cpus[c].stopped {
            self.cpus[c].next_tick = 0;
        }
        let d = self.sched_tick(c);
        let cpu = &mut self.cpus[c];
        if !cpu.stopped {
            cpu.tick_expiry = forward(cpu.tick_expiry, now, TICK_NS);
        }
        d
    }

    // ---------------------------------------------------------------- keys and irqtime (§8)

    fn key(&mut self, op: KeyOp) -> Result<(), KeyErr> {
        match op {
            KeyOp::Enable => match self.cfg.policy {
                Pol::Patched => {
                    if self.key_count > 0 {
                        if self.key_count != 1 {
                            self.warn(None, Wk::StaticKeyEnableCount);
                        }
                    } else {
                        self.key_count = 1;
                    }
                }
                Pol::Legacy => self.legacy_irqtime = true,
            },
            KeyOp::Disable => {
                if self.irqtime_enabled() {
                    match self.cfg.policy {
                        Pol::Patched => {
                            if self.key_count == 1 {
                                self.key_count = 0;
                            } else if self.key_count != 0 {
                                self.warn(None, Wk::StaticKeyDisableCount);
                            }
                        }
                        Pol::Legacy => self.legacy_irqtime = false,
                    }
                }
            }
            KeyOp::Inc => {
                if self.key_count == i32::MAX || self.key_count < 0 {
                    self.warn(None, Wk::StaticKeyIncOverflow);
                    return Err(KeyErr::Overflow);
                }
                self.key_count += 1;
            }
            KeyOp::Dec => {
                if self.key_count <= 0 {
                    self.warn(None, Wk::StaticKeyDecUnderflow);
                    return Err(KeyErr::Underflow);
                }
                self.key_count -= 1;
            }
        }
        Ok(())
    }

    fn irqtime_account_irq(&mut self, c: usize, ctx: Ctx, now: u64) {
        if !self.irqtime_enabled() {
            return;
        }
        let cpu = &mut self.cpus[c];
        let delta = now.wrapping_sub(cpu.irq_start);
        cpu.irq_start = cpu.irq_start.wrapping_add(delta);
        match ctx {
            Ctx::Hardirq => cpu.hardirq_ns += delta,
            Ctx::Softirq => cpu.softirq_ns += delta,
            Ctx::Task | Ctx::Ksoftirqd => return,
        }
        cpu.irq_total += delta;
    }
}

/// The first `from + k * period` (k >= 0) after `now`.
fn forward(from: u64, now: u64, period: u64) -> u64 {
    if from > now {
        return from;
    }
    from.saturating_add(((now - from) / period + 1).saturating_mul(period))
}
