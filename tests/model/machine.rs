//! The crate's `Machine` driven step by step through the same transitions as the model, its
//! observable state projected onto the model's shape, and the properties checked after every
//! step.
//!
//! The driver plays the kernel: it keeps the scheduler facts (`nr_running`, current task,
//! `need_resched`, hotplug, isolation) through the crate's setters and the host platform, calls
//! the crate's entry points, and records what came out (the platform's event log, the kick
//! decision, the NEWILB pass). Of the model it reads only whether the kernel can take a step
//! at all (a shrunk sequence may hold one it cannot; both sides then skip it); `check`
//! compares the two afterwards.

use crate::reference::{
    BALANCE, Beyond, Call, Config, Ctx, Decision, Ev, IlbPick, KICK_MASK, KeyErr, KeyOp, Knob,
    LOW_CAPACITY, Model, N, Outcome, PassEnd, Pol, SOFTIRQ_SCHED, SOFTIRQ_TIMER, STATS, Step,
    StepOut, StopFacts, platform_topology,
};
use nohz::IdleExit;
use nohz::IrqContext;
use nohz::TICK_DEP_SCHED;
use nohz::platform::{
    Clock, CpuIdleType, CpuState, NewidleDomain, NewidleOutcome, SCHED_CAPACITY_SCALE, TickHardware,
};
use nohz::{CpuId, Jiffies, NrCpuIds, Policy, StaticKeyError, Warning};
use nohz::{IlbPass, KickDecision, KickOutcome, SCHED_MIGRATION_COST_NS};
use nohz_testing::{Event, HostPlatform, TestSleepable, World};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

/// The model's policy for a crate policy type (by identity only; no behaviour is read).
pub fn pol<P: Policy>() -> Pol {
    if P::NAME == nohz::Legacy::NAME {
        Pol::Legacy
    } else {
        Pol::Patched
    }
}

/// What the model changes in `Patched` for a crate policy beyond the kernel (by identity
/// only): `Paced`'s kick, newidle hold and hashed ILB start, Khan's scaled deadline and round robin,
/// Hegde's early return. `Scalable` and `Sharded` change no observable (the kernel's).
pub fn beyond<P: Policy>() -> Beyond {
    let khan_next_balance = Beyond {
        khan_next_balance: true,
        ..Beyond::default()
    };
    let round_robin = Beyond {
        ilb_pick: IlbPick::RoundRobin,
        ..Beyond::default()
    };
    match P::NAME {
        n if n == nohz::Paced::NAME => Beyond {
            paced_kick: true,
            newidle_hold: true,
            ilb_pick: IlbPick::Hashed,
            ..Beyond::default()
        },
        n if n == nohz::KhanNextBalance::NAME => khan_next_balance,
        n if n == nohz::KhanRoundRobin::NAME => round_robin,
        n if n == nohz::Khan::NAME => Beyond {
            khan_next_balance: true,
            ..round_robin
        },
        n if n == nohz::HegdeHk::NAME => Beyond {
            hegde_hk: true,
            ..Beyond::default()
        },
        _ => Beyond::default(),
    }
}

/// The crate's machine and its host platform (the shared rig's, from `World::unbooted`: the
/// topology is set before the boot), plus what the kernel around them knows.
pub struct Sut<P: Policy> {
    pub m: Arc<nohz::machine!(P, N)>,
    pub p: Arc<HostPlatform<N>>,
    pub nr: NrCpuIds<N>,
    cfg: Config,
    llc: Vec<usize>,
    isolated: Vec<bool>,
    /// Inside `do_idle` (between idle entry and exit).
    in_loop: Vec<bool>,
    irq_clock: u64,
    /// nohz IPIs sent and not yet handled, per target (from the event log alone).
    pub in_flight: Vec<u32>,
    /// What the last step produced, in the model's terms.
    pub out: StepOut,
    /// `nohz_flags` of every CPU before the last step.
    kick_before: Vec<u32>,
    /// The csd handler ran on these CPUs during the last step.
    csd_ran: Vec<bool>,
    /// The last step, if it was taken (not skipped).
    pub last: Option<Step>,
    /// Every step so far, and those taken.
    pub steps: Vec<Step>,
    pub taken: Vec<Step>,
}

impl<P: Policy> Sut<P> {
    pub fn new(cfg: &Config) -> Self {
        let World { m, p } = World::<P, N>::unbooted(cfg.nr, Jiffies::new(cfg.start));
        let nr = p.nr_cpu_ids();
        let sut = Sut {
            m,
            p,
            nr,
            cfg: cfg.clone(),
            llc: cfg.llc.clone(),
            isolated: cfg.isolated.clone(),
            in_loop: vec![false; cfg.nr],
            irq_clock: 0,
            in_flight: vec![0; cfg.nr],
            out: StepOut::default(),
            kick_before: vec![0; cfg.nr],
            csd_ran: vec![false; cfg.nr],
            last: None,
            steps: Vec::new(),
            taken: Vec::new(),
        };
        sut.set_platform_topology();
        // Part of the topology the domain build reads (the asym-capacity key): set before init.
        sut.p.set_asym_cpucapacity(cfg.asym_capacity);
        sut.m
            .init(cfg.nr, 0, &*sut.p)
            .expect("a consistent topology");
        for c in 0..cfg.nr {
            let cpu = sut.cpu(c);
            sut.m.tick_nohz_activate(cpu, true);
            if cfg.nohz_full[c] {
                sut.m.nohz_full().set(cpu);
                sut.p.set_vtime_accounting(cpu, true);
            }
            if !cfg.housekeeping[c] {
                sut.m.housekeeping().clear(cpu);
            }
            sut.p.set_asym_packing(cpu, cfg.asym_prio[c]);
        }
        sut
    }

    pub fn cpu(&self, c: usize) -> CpuId<N> {
        self.nr.cpu(c).expect("a CPU of this machine")
    }

    fn set_platform_topology(&self) {
        self.set_platform_topology_as(None);
    }

    /// The platform's topology as the kernel's would be with CPU `change.0` active or not
    /// (`change.1`) and the others as the crate has them: set before the crate's own hotplug
    /// steps rebuild the domains.
    fn set_platform_topology_as(&self, change: Option<(usize, bool)>) {
        let active: Vec<bool> = (0..self.nr.get())
            .map(|c| match change {
                Some((changed, on)) if changed == c => on,
                // Before init every CPU counts as active, as init makes them.
                _ => self.m.nr_cpu_ids().get() == 0 || self.m.cpu_active(self.cpu(c)),
            })
            .collect();
        for (c, (dom, leader)) in platform_topology(&self.llc, &active, &self.isolated)
            .into_iter()
            .enumerate()
        {
            let cpu = self.cpu(c);
            self.p.set_sched_domain(cpu, dom);
            self.p.set_llc(cpu, leader.map(|l| self.cpu(l)));
        }
    }

    fn rebuild(&self) {
        self.set_platform_topology();
        self.m
            .rebuild_sched_domains(&*self.p)
            .expect("the platform's topology is consistent");
    }

    fn irq_enter(&self, c: usize) {
        self.m.tick_nohz_irq_enter(self.cpu(c), &*self.p);
    }

    fn irq_exit(&self, c: usize) {
        self.m.tick_nohz_irq_exit(self.cpu(c), &*self.p);
    }

    fn set_tasks(&self, c: usize, n: u32) {
        let rq = self.m.rq(self.cpu(c));
        rq.set_nr_running(n);
        rq.set_h_nr_runnable(n);
    }

    fn handled_csd(&mut self, c: usize) {
        self.csd_ran[c] = true;
        self.in_flight[c] = self.in_flight[c].saturating_sub(1);
    }

    /// Takes `step`; with `skip`, the kernel cannot take it in this state and nothing happens
    /// (the model says which: validity is a fact about the kernel's state, not an output).
    pub fn apply(&mut self, step: Step, skip: bool) {
        let nr = self.nr.get();
        self.out = StepOut::default();
        self.kick_before = (0..nr)
            .map(|c| self.m.rq(self.cpu(c)).nohz_flags().load().bits())
            .collect();
        self.csd_ran = vec![false; nr];
        self.steps.push(step);
        if skip {
            self.out.skipped = true;
            self.last = None;
            return;
        }
        let this = step.cpu();
        self.p.set_this_cpu(this.map(|c| self.cpu(c)));
        let (m, p) = (&*self.m, &*self.p);
        match step {
            Step::Advance(n) => {
                p.clock().advance(n);
            }
            // The clock alone: jiffies follow only where the tick side catches them up.
            Step::AdvanceNs(n) => p.set_time_ns(p.time_ns() + n),
            Step::Tick(c) => {
                self.irq_enter(c);
                let d = m.tick_sched_timer(self.cpu(c), p);
                self.out.decision = Some(d.map(decision));
                self.irq_exit(c);
            }
            Step::RunTask(c) => {
                let rq = m.rq(self.cpu(c));
                self.set_tasks(c, rq.nr_running() + 1);
                if self.in_loop[c] {
                    p.set_need_resched(self.cpu(c), true);
                } else if rq.curr_is_idle() {
                    rq.set_curr_is_idle(false);
                }
            }
            Step::StopTask(c) => {
                let rq = m.rq(self.cpu(c));
                let n = rq.nr_running() - 1;
                self.set_tasks(c, n);
                rq.set_curr_is_idle(n == 0);
            }
            Step::Newidle {
                cpu: c,
                long_idle,
                walks,
                pulls,
                deadline,
            } => {
                let cpu = self.cpu(c);
                m.rq(cpu).set_avg_idle(if long_idle {
                    SCHED_MIGRATION_COST_NS
                } else {
                    SCHED_MIGRATION_COST_NS - 1
                });
                // The base domain's deadline, the same whether the look walks or not.
                let now = p.jiffies();
                let deadline = deadline.map(|d| {
                    if d < 0 {
                        now.sub(usize::from(d.unsigned_abs()))
                    } else {
                        now.add(usize::from(d.unsigned_abs()))
                    }
                });
                p.set_newidle_domain(NewidleDomain {
                    rd_overloaded: walks,
                    next_balance: deadline,
                    ..NewidleDomain::ALWAYS_WALK
                });
                p.set_newidle_outcome(NewidleOutcome {
                    pulled_task: pulls,
                    next_balance: deadline,
                });
                let pulled = m.sched_balance_newidle(cpu, p);
                self.out.pulled = Some(pulled);
                if pulled {
                    self.set_tasks(c, 1);
                    m.rq(cpu).set_curr_is_idle(false);
                }
            }
            Step::IdleEnter(c) => {
                let cpu = self.cpu(c);
                let pass = m.nohz_run_idle_balance(cpu, p);
                self.out.newilb_pass = Some(pass.map(|e| match e {
                    IlbPass::Completed => PassEnd::Completed,
                    IlbPass::Aborted => PassEnd::Aborted,
                }));
                m.tick_nohz_idle_enter(cpu, p);
                self.in_loop[c] = true;
            }
            Step::IdleStop(c) | Step::GovernorStop(c) => {
                let cpu = self.cpu(c);
                let ts = m.tick_sched(cpu);
                if let Step::GovernorStop(_) = step {
                    m.tick_nohz_get_sleep_length(cpu, p);
                }
                let (was_stopped, registered_before, calls) = (
                    ts.tick_stopped(),
                    m.rq(cpu).nohz_tick_stopped(),
                    ts.idle_calls(),
                );
                m.tick_nohz_idle_stop_tick(cpu, p);
                self.out.stop = Some(StopFacts {
                    attempted: ts.idle_calls() > calls,
                    was_stopped,
                    registered_before,
                    stopped_after: ts.tick_stopped(),
                    in_mask_after: m.nohz_idle_test(cpu),
                });
            }
            Step::IdleRetain(c) => {
                let cpu = self.cpu(c);
                m.tick_nohz_get_sleep_length(cpu, p);
                m.tick_nohz_idle_retain_tick(cpu);
            }
            Step::IdlePoll(c) => m.tick_nohz_idle_restart_tick(self.cpu(c), p),
            Step::DoIdle(c) => {
                let cpu = self.cpu(c);
                let queued = m.rq(cpu).csd_busy();
                let exit = m.do_idle(cpu, p);
                assert_eq!(
                    exit,
                    IdleExit::Resched,
                    "an online CPU leaves idle to schedule"
                );
                // schedule(): nothing to run, the idle task again.
                p.set_need_resched(cpu, false);
                if queued {
                    // do_idle's exit flushed it.
                    self.handled_csd(c);
                }
            }
            Step::Irq(c) => {
                self.irq_enter(c);
                self.irq_exit(c);
            }
            Step::IdleExit(c) => {
                let cpu = self.cpu(c);
                m.tick_nohz_idle_exit(cpu, p);
                self.in_loop[c] = false;
                // schedule(): the woken task runs.
                p.set_need_resched(cpu, false);
                let rq = m.rq(cpu);
                rq.set_curr_is_idle(rq.nr_running() == 0);
            }
            Step::DeliverIpi(c) => {
                self.irq_enter(c);
                m.nohz_csd_ipi(self.cpu(c), p);
                self.irq_exit(c);
                self.handled_csd(c);
            }
            Step::Softirq(c) => m.sched_balance_softirq(self.cpu(c), p),
            Step::Set { cpu: c, knob, on } => {
                let cpu = self.cpu(c);
                let rq = m.rq(cpu);
                match knob {
                    Knob::NeedsTick => p.set_needs_tick(cpu, on),
                    Knob::TimerBaseBusy => p.set_timer_base_refuses_idle(cpu, on),
                    Knob::SoftirqSched | Knob::SoftirqTimer => {
                        let bit = if knob == Knob::SoftirqSched {
                            SOFTIRQ_SCHED
                        } else {
                            SOFTIRQ_TIMER
                        };
                        let bits = p.local_softirq_pending(cpu);
                        p.set_softirq_pending(cpu, if on { bits | bit } else { bits & !bit });
                    }
                    Knob::TickDep => {
                        let ts = m.tick_sched(cpu);
                        if on {
                            ts.tick_dep_set_cpu(TICK_DEP_SCHED);
                        } else {
                            ts.tick_dep_clear_cpu(TICK_DEP_SCHED);
                        }
                    }
                    Knob::BlockedRemains => p.set_blocked_load_remains(cpu, on),
                    Knob::Ttwu => rq.set_ttwu_pending(on),
                    Knob::LowCapacity => rq.set_cpu_capacity(if on {
                        LOW_CAPACITY
                    } else {
                        SCHED_CAPACITY_SCALE
                    }),
                    Knob::Misfit => rq.set_misfit_task_load(on as u64),
                }
            }
            Step::Deactivate(c) => {
                let cpu = self.cpu(c);
                // The platform's view of the topology first, so the crate's rebuild at the
                // end of the deactivation sees the CPU gone.
                self.set_platform_topology_as(Some((c, false)));
                m.sched_cpu_deactivate(cpu, p)
                    .expect("the model only deactivates a CPU that may go");
            }
            Step::Dying(c) => {
                let busy = m.rq(self.cpu(c)).csd_busy();
                m.cpu_dying(self.cpu(c), p).expect("deactivated first");
                if busy {
                    self.handled_csd(c);
                }
                // Its idle loop is gone with it; it comes back outside one.
                self.in_loop[c] = false;
            }
            Step::Activate(c) => {
                let cpu = self.cpu(c);
                // A CPU that died comes back online with its tick set up again (what
                // cpu_starting does, but for the first tick, which the model does not program).
                if !m.cpu_online(cpu) {
                    m.set_cpu_online(cpu, true);
                    m.tick_nohz_activate(cpu, true);
                }
                self.set_platform_topology_as(Some((c, true)));
                m.sched_cpu_activate(cpu, p)
                    .expect("the model only activates an inactive CPU");
            }
            Step::Isolate { cpu: c, on } => {
                self.isolated[c] = on;
                self.rebuild();
            }
            Step::Rebuild => self.rebuild(),
            Step::Key(op) => {
                let key = m.sched_clock_irqtime();
                let sink = m.warnings().cpu_less();
                let r = match op {
                    KeyOp::Enable => {
                        m.enable_sched_clock_irqtime();
                        Ok(())
                    }
                    KeyOp::Disable => {
                        m.disable_sched_clock_irqtime(&TestSleepable);
                        Ok(())
                    }
                    KeyOp::Inc => key.inc(&sink),
                    KeyOp::Dec => key.dec(&sink),
                };
                self.out.key = Some(r.map_err(|e| match e {
                    StaticKeyError::Overflow => KeyErr::Overflow,
                    StaticKeyError::Underflow => KeyErr::Underflow,
                }));
            }
            Step::IrqTime { cpu: c, ctx, dt } => {
                self.irq_clock += dt as u64;
                let ended = match ctx {
                    Ctx::Task => IrqContext::Task,
                    Ctx::Hardirq => IrqContext::Hardirq,
                    Ctx::Softirq => IrqContext::Softirq {
                        in_ksoftirqd: false,
                    },
                    Ctx::Ksoftirqd => IrqContext::Softirq { in_ksoftirqd: true },
                };
                m.irqtime_account_irq(self.cpu(c), ended, self.irq_clock);
            }
            Step::ExitOutsideIdle(c) => m.tick_nohz_idle_exit(self.cpu(c), p),
            Step::SpuriousCsd(c) => {
                m.nohz_csd_ipi(self.cpu(c), p);
                self.handled_csd(c);
            }
            Step::Remote { call, .. } => match call {
                Call::EnterIdle(t) => m.nohz_balance_enter_idle(self.cpu(t), p),
                Call::ExitIdle(t) => m.nohz_balance_exit_idle(self.cpu(t), p),
            },
        }
        self.out.events = self.p.take_events().into_iter().filter_map(event).collect();
        for ev in &self.out.events {
            if let Ev::Ipi { to, .. } = *ev {
                self.in_flight[to] += 1;
            }
        }
        self.last = Some(step);
        self.taken.push(step);
    }
}

fn event(e: Event<N>) -> Option<Ev> {
    Some(match e {
        Event::Ipi { from, to } => Ev::Ipi {
            from: from.index(),
            to: to.index(),
        },
        Event::Softirq { cpu } => Ev::Softirq(cpu.index()),
        Event::BlockedAverages { by, cpu } => Ev::Decay {
            by: by.index(),
            cpu: cpu.index(),
        },
        Event::RqClock { by, cpu } => Ev::RqClock {
            by: by.index(),
            cpu: cpu.index(),
        },
        Event::BalanceDomains { by, cpu, idle } => Ev::Balance {
            by: by.index(),
            cpu: cpu.index(),
            idle: match idle {
                CpuIdleType::Idle => true,
                CpuIdleType::NotIdle => false,
                // Never asked for on these paths: make it a mismatch, not a match.
                CpuIdleType::NewlyIdle => return Some(Ev::Newidle(usize::MAX)),
            },
        },
        Event::NewidleBalance { cpu, .. } => Ev::Newidle(cpu.index()),
        Event::SynchronizeRcu => Ev::SyncRcu,
        // Tick hardware and idle states: not part of the NOHZ projection.
        _ => return None,
    })
}

fn decision(d: KickDecision<N>) -> Decision {
    match d {
        KickDecision::IdleTick => Decision::IdleTick,
        KickDecision::NobodyTickless => Decision::NobodyTickless,
        KickDecision::EmptyMask => Decision::EmptyMask,
        KickDecision::NoFlags => Decision::NoFlags,
        KickDecision::Kick { flags, outcome } => Decision::Kick {
            flags: flags.bits(),
            outcome: match outcome {
                KickOutcome::NoIlb => Outcome::NoIlb,
                KickOutcome::AlreadyPending(c) => Outcome::AlreadyPending(c.index()),
                KickOutcome::RodeAlong(c) => Outcome::RodeAlong(c.index()),
                KickOutcome::Sent(c) => Outcome::Sent(c.index()),
                KickOutcome::CsdBusy(c) => Outcome::CsdBusy(c.index()),
            },
        },
    }
}

// -------------------------------------------------------------------- projection

/// One CPU's observable state.
#[derive(Debug, PartialEq, Eq)]
pub struct CpuView {
    // What the driver keeps (a mismatch here is a driver bug, not a crate bug).
    pub nr_running: u32,
    pub curr_idle: bool,
    pub need_resched: bool,
    pub active: bool,
    pub misfit: bool,
    // struct rq.
    pub in_mask: bool,
    pub nohz_tick_stopped: bool,
    pub nohz_flags: u32,
    pub csd_busy: bool,
    pub has_blocked_load: bool,
    pub last_blocked_update: usize,
    pub next_balance: usize,
    pub idle_balance: bool,
    pub nohz_idle_balance: u32,
    pub nohz_idle: bool,
    pub has_domain: bool,
    pub llc_leader: Option<usize>,
    pub llc_nr_busy: Option<i32>,
    // struct tick_sched.
    pub ts_flags: u32,
    /// `(last_tick_jiffies, stalled_jiffies)`: the jiffies-stall watch.
    pub stall: (usize, u32),
    pub idle_calls: u64,
    pub idle_sleeps: u64,
    // irqtime.
    pub irq: [u64; 4],
    pub warnings: u64,
}

/// The machine's observable state, and what the last step produced.
#[derive(Debug, PartialEq, Eq)]
pub struct View {
    pub jiffies: usize,
    pub has_blocked_load: bool,
    pub needs_update: bool,
    pub next_balance: usize,
    pub next_blocked: usize,
    pub nr_cpus: u32,
    pub tick_do_timer_cpu: Option<usize>,
    pub key_count: i32,
    pub irqtime_enabled: bool,
    pub asym_cpucap_active: bool,
    pub warnings_outside_cpus: u64,
    pub warnings_by_kind: BTreeMap<String, u64>,
    pub cpus: Vec<CpuView>,
    pub events: Vec<Ev>,
    pub decision: Option<Option<Decision>>,
    pub newilb_pass: Option<Option<PassEnd>>,
    pub key: Option<Result<(), KeyErr>>,
    pub pulled: Option<bool>,
    pub stop: Option<StopFacts>,
    pub skipped: bool,
}

fn raw(t: u128) -> usize {
    t as usize
}

/// The model's state in the projection's shape.
pub fn model_view(m: &Model) -> View {
    View {
        jiffies: raw(m.now),
        has_blocked_load: m.has_blocked_load,
        needs_update: m.needs_update,
        next_balance: raw(m.next_balance),
        next_blocked: raw(m.next_blocked),
        nr_cpus: m.nr_cpus,
        tick_do_timer_cpu: m.do_timer,
        key_count: m.key_count,
        irqtime_enabled: m.irqtime_enabled(),
        asym_cpucap_active: m.asym_key,
        warnings_outside_cpus: m.warn_less,
        warnings_by_kind: m
            .warn_kind
            .iter()
            .map(|(k, &v)| (format!("{k:?}"), v))
            .collect(),
        cpus: (0..m.nr())
            .map(|c| {
                let x = &m.cpus[c];
                CpuView {
                    nr_running: x.nr_running,
                    curr_idle: x.curr_idle,
                    need_resched: x.need_resched,
                    active: x.active,
                    misfit: x.misfit,
                    in_mask: m.mask[c],
                    nohz_tick_stopped: x.nohz_tick_stopped,
                    nohz_flags: x.nohz_flags,
                    csd_busy: x.csd_busy,
                    has_blocked_load: x.has_blocked_load,
                    last_blocked_update: raw(x.last_blocked_update),
                    next_balance: raw(x.next_balance),
                    idle_balance: x.idle_balance,
                    nohz_idle_balance: x.nohz_idle_balance,
                    nohz_idle: x.nohz_idle,
                    has_domain: x.has_domain,
                    llc_leader: x.llc_leader,
                    llc_nr_busy: m.llc_busy_of(c),
                    ts_flags: x.ts_flags(),
                    stall: (x.last_tick_jiffies, x.stalled_jiffies),
                    idle_calls: x.idle_calls,
                    idle_sleeps: x.idle_sleeps,
                    irq: [x.irq_start, x.hardirq_ns, x.softirq_ns, x.irq_total],
                    warnings: m.warn_cpu[c],
                }
            })
            .collect(),
        events: m.out.events.clone(),
        decision: m.out.decision,
        newilb_pass: m.out.newilb_pass,
        key: m.out.key,
        pulled: m.out.pulled,
        stop: m.out.stop,
        skipped: m.out.skipped,
    }
}

/// The crate's state in the projection's shape.
pub fn sut_view<P: Policy>(s: &Sut<P>) -> View {
    let (m, p) = (&*s.m, &*s.p);
    let nohz = m.nohz();
    let w = m.warnings();
    View {
        jiffies: nohz::platform::Clock::jiffies(p).get(),
        has_blocked_load: nohz.has_blocked_load(),
        needs_update: nohz.needs_update(),
        next_balance: nohz.next_balance().get(),
        next_blocked: nohz.next_blocked().get(),
        nr_cpus: nohz.nr_cpus(),
        tick_do_timer_cpu: m.tick_do_timer_cpu().map(CpuId::index),
        key_count: m.sched_clock_irqtime().count(),
        irqtime_enabled: m.irqtime_enabled(),
        asym_cpucap_active: m.sched_asym_cpucap_active(),
        warnings_outside_cpus: w.outside_cpus(),
        warnings_by_kind: Warning::ALL
            .iter()
            .filter(|&&k| w.of_kind(k) != 0)
            .map(|&k| (format!("{k:?}"), w.of_kind(k)))
            .collect(),
        cpus: s
            .nr
            .iter()
            .map(|cpu| {
                let rq = m.rq(cpu);
                let ts = m.tick_sched(cpu);
                let it = m.irqtime(cpu);
                CpuView {
                    nr_running: rq.nr_running(),
                    curr_idle: rq.curr_is_idle(),
                    need_resched: p.need_resched(cpu),
                    active: m.cpu_active(cpu),
                    misfit: rq.misfit_task_load() != 0,
                    in_mask: m.nohz_idle_test(cpu),
                    nohz_tick_stopped: rq.nohz_tick_stopped(),
                    nohz_flags: rq.nohz_flags().load().bits(),
                    csd_busy: rq.csd_busy(),
                    has_blocked_load: rq.has_blocked_load(),
                    last_blocked_update: rq.last_blocked_load_update_tick().get(),
                    next_balance: rq.next_balance().get(),
                    idle_balance: rq.idle_balance(),
                    nohz_idle_balance: rq.nohz_idle_balance().bits(),
                    nohz_idle: m.nohz_idle(cpu),
                    has_domain: rq.has_sched_domain(),
                    llc_leader: m.llc_leader(cpu),
                    llc_nr_busy: m.llc_nr_busy_cpus(cpu),
                    ts_flags: ts.flags().bits(),
                    stall: (ts.last_tick_jiffies().get(), ts.stalled_jiffies()),
                    idle_calls: ts.idle_calls(),
                    idle_sleeps: ts.idle_sleeps(),
                    irq: [it.irq_start_time(), it.hardirq(), it.softirq(), it.total()],
                    warnings: w.on_cpu(cpu),
                }
            })
            .collect(),
        events: s.out.events.clone(),
        decision: s.out.decision,
        newilb_pass: s.out.newilb_pass,
        key: s.out.key,
        pulled: s.out.pulled,
        stop: s.out.stop,
        skipped: s.out.skipped,
    }
}

/// The fields that differ, one line each (`crate` first, then `model`).
pub fn diff(sut: &View, model: &View) -> Vec<String> {
    let mut out = Vec::new();
    fn cmp<T: PartialEq + Debug>(out: &mut Vec<String>, name: &str, a: &T, b: &T) {
        if a != b {
            out.push(format!("{name}: crate {a:?}, model {b:?}"));
        }
    }
    macro_rules! fields {
        ($a:expr, $b:expr, $prefix:expr; $($f:ident),* $(,)?) => {
            $( cmp(&mut out, &format!("{}{}", $prefix, stringify!($f)), &$a.$f, &$b.$f); )*
        };
    }
    fields!(sut, model, "";
        jiffies, has_blocked_load, needs_update, next_balance, next_blocked, nr_cpus,
        tick_do_timer_cpu, key_count, irqtime_enabled, asym_cpucap_active, warnings_outside_cpus,
        warnings_by_kind,
        events, decision, newilb_pass, key, pulled, stop, skipped);
    for (c, (a, b)) in sut.cpus.iter().zip(&model.cpus).enumerate() {
        fields!(a, b, format!("cpu{c}.");
            nr_running, curr_idle, need_resched, active, misfit, in_mask, nohz_tick_stopped,
            nohz_flags, csd_busy, has_blocked_load, last_blocked_update, next_balance,
            idle_balance, nohz_idle_balance, nohz_idle, has_domain, llc_leader, llc_nr_busy,
            ts_flags, stall, idle_calls, idle_sleeps, irq, warnings);
    }
    cmp(&mut out, "nr_cpu_ids", &sut.cpus.len(), &model.cpus.len());
    out
}

// -------------------------------------------------------------------- properties

/// Every property, after every step: the projection equals the model's, and the invariants
/// hold on the crate's own state. On a failure after a short sequence, the report also gives
/// the fewest of its steps that still fail (proptest-state-machine deletes steps once, before
/// it shrinks the machine, so its minimal case can keep steps the final machine no longer
/// needs).
pub fn check<P: Policy>(s: &Sut<P>, model: &Model) {
    let problems = violations(s, model);
    if problems.is_empty() {
        return;
    }
    let at = match s.steps.last() {
        Some(step) => format!(
            "after step {} ({step:?}{})",
            s.steps.len(),
            if s.last.is_none() { ", skipped" } else { "" },
        ),
        None => "at boot".to_string(),
    };
    let fewest = if s.taken.len() <= MINIMIZE_UP_TO {
        format!(
            "\nthe fewest of those steps that still fail: {:?}",
            minimize::<P>(&s.cfg, &s.taken)
        )
    } else {
        String::new()
    };
    panic!(
        "{at}, the steps taken being {:?}:\n  {}{fewest}",
        s.taken,
        problems.join("\n  ")
    );
}

/// Sequences up to this long are minimized in a failure report (a few replays each).
const MINIMIZE_UP_TO: usize = 12;

/// What is wrong after the last step, if anything.
pub fn violations<P: Policy>(s: &Sut<P>, model: &Model) -> Vec<String> {
    let mut v: Vec<String> = diff(&sut_view(s), &model_view(model))
        .into_iter()
        .map(|d| format!("the crate differs from the model: {d}"))
        .collect();
    invariants(s, model, &mut v);
    v
}

/// Whether `steps` (skipping those the kernel cannot take) end in a violation on `cfg`; a
/// panic anywhere counts as one.
fn fails<P: Policy>(cfg: &Config, steps: &[Step]) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut model = Model::new(cfg.clone());
        let mut sut = Sut::<P>::new(cfg);
        for &step in steps {
            model.apply(step);
            sut.apply(step, model.out.skipped);
            if !violations(&sut, &model).is_empty() {
                return true;
            }
        }
        false
    }))
    .unwrap_or(true)
}

/// Greedily drops steps while the rest still fails, then the steps the kernel could not
/// take (no-ops on both sides).
fn minimize<P: Policy>(cfg: &Config, steps: &[Step]) -> Vec<Step> {
    let mut cur = steps.to_vec();
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..cur.len()).rev() {
            let mut fewer = cur.clone();
            fewer.remove(i);
            if fails::<P>(cfg, &fewer) {
                cur = fewer;
                changed = true;
            }
        }
    }
    let mut model = Model::new(cfg.clone());
    cur.into_iter()
        .filter(|&step| {
            model.apply(step);
            !model.out.skipped
        })
        .collect()
}

macro_rules! ensure {
    ($v:expr, $cond:expr, $($msg:tt)+) => {
        if !$cond {
            $v.push(format!($($msg)+));
        }
    };
}

macro_rules! ensure_eq {
    ($v:expr, $a:expr, $b:expr, $($msg:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            $v.push(format!("{}: {a:?} != {b:?}", format!($($msg)+)));
        }
    }};
}

fn invariants<P: Policy>(s: &Sut<P>, model: &Model, v: &mut Vec<String>) {
    let m = &*s.m;
    let nohz = m.nohz();
    let nr = s.nr.get();

    // Sharded (whose idle set is its shards: it has no flat mask to write): every shard
    // holding a registered CPU is flagged in the summary (I-S1: sequentially no operation is
    // in flight, so it always holds); the shard map covers every CPU once, at most 64 per
    // shard.
    if P::SHARDED {
        for sh in 0..m.nr_shards() {
            ensure!(
                v,
                m.shard_word(sh) == 0 || m.shard_flagged(sh),
                "I-S1: shard {sh} holds registered CPUs but is not flagged"
            );
            ensure!(
                v,
                m.shard_members(sh).count() <= 64,
                "shard {sh} over 64 CPUs"
            );
        }
        let placed: usize = (0..m.nr_shards())
            .map(|sh| m.shard_members(sh).count())
            .sum();
        ensure_eq!(v, placed, nr, "every CPU in exactly one shard");
    }

    // The mask holds exactly the registered CPUs, and nothing at or above nr_cpu_ids.
    for cpu in NrCpuIds::<N>::full().iter() {
        let (c, bit) = (cpu.index(), m.nohz_idle_test(cpu));
        if c >= nr {
            ensure!(v, !bit, "mask bit {c} above nr_cpu_ids");
        } else {
            ensure_eq!(
                v,
                bit,
                m.rq(cpu).nohz_tick_stopped(),
                "CPU {c}'s mask bit vs its nohz_tick_stopped"
            );
        }
    }

    // Policy-private words: Legacy's nr_cpus counts the mask; Patched has no counter.
    let weight = m.nohz_idle_cpus().count() as u32;
    match pol::<P>() {
        Pol::Legacy => ensure_eq!(v, nohz.nr_cpus(), weight, "Legacy's nohz.nr_cpus"),
        Pol::Patched => ensure_eq!(v, nohz.nr_cpus(), 0, "Patched has no nr_cpus"),
    }

    // Seed 001: an active CPU with a domain whose idle stop attempt left its tick stopped is
    // registered (Patched); the model says exactly when Legacy leaves it out.
    if let (Some(Step::IdleStop(c) | Step::GovernorStop(c)), Some(f)) = (s.last, s.out.stop) {
        let cpu = s.cpu(c);
        let applies = f.attempted
            && f.stopped_after
            && m.cpu_active(cpu)
            && m.rq(cpu).has_sched_domain()
            && nr > 1;
        if applies {
            let broken = !f.in_mask_after;
            let model_broken = model.out.stop.is_some_and(|x| !x.in_mask_after);
            match pol::<P>() {
                Pol::Patched => ensure!(
                    v,
                    !broken,
                    "seed 001: CPU {c}'s idle stop left its tick stopped, but it is not in the \
                     idle mask"
                ),
                Pol::Legacy => {
                    ensure_eq!(v, broken, model_broken, "where Legacy breaks seed 001");
                    ensure!(
                        v,
                        !broken || (f.was_stopped && !f.registered_before),
                        "Legacy breaks seed 001 only for a tick stopped earlier"
                    );
                }
            }
        }
    }

    // The csd: at most one nohz IPI in flight per CPU; kick bits pending iff an IPI is in
    // flight iff the csd is busy; a kick bit disappears only in a csd handler, which takes
    // them all; a kick's bits are on its target after it.
    for c in 0..nr {
        let rq = m.rq(s.cpu(c));
        let bits = rq.nohz_flags().load().bits();
        let kick = bits & KICK_MASK != 0;
        let in_flight = s.in_flight[c];
        ensure!(v, in_flight <= 1, "{in_flight} IPIs in flight to CPU {c}");
        ensure_eq!(
            v,
            kick,
            rq.csd_busy(),
            "CPU {c}: kick bits pending vs csd busy"
        );
        ensure_eq!(
            v,
            kick,
            in_flight == 1,
            "CPU {c}: kick bits pending vs IPI in flight"
        );
        if s.csd_ran[c] {
            ensure_eq!(
                v,
                bits & KICK_MASK,
                0,
                "the csd handler left kick bits on CPU {c}"
            );
        } else {
            let lost = s.kick_before[c] & !bits & KICK_MASK;
            ensure_eq!(
                v,
                lost,
                0,
                "kick bits of CPU {c} vanished without a csd run"
            );
        }
        // BALANCE is never requested without STATS (but by Paced, by design).
        for f in [bits, rq.nohz_idle_balance().bits()] {
            ensure!(
                v,
                f & BALANCE == 0 || f & STATS != 0 || model.cfg.beyond.paced_kick,
                "BALANCE without STATS on CPU {c}: {f:#x}"
            );
        }
    }
    if let Some(Some(Decision::Kick { flags, outcome })) = s.out.decision
        && let Outcome::Sent(t) | Outcome::RodeAlong(t) | Outcome::AlreadyPending(t) = outcome
    {
        let bits = m.rq(s.cpu(t)).nohz_flags().load().bits();
        ensure_eq!(v, bits & flags, flags, "the kick's flags on CPU {t}");
    }

    // LLC busy counts: the LLC's weight less its CPUs counted idle; a rebuild resets both.
    let rebuilt = matches!(
        s.last,
        Some(Step::Rebuild | Step::Deactivate(_) | Step::Activate(_) | Step::Isolate { .. })
    );
    for leader in 0..nr {
        let members: Vec<usize> = (0..nr)
            .filter(|&c| m.llc_leader(s.cpu(c)) == Some(leader))
            .collect();
        if members.is_empty() {
            continue;
        }
        let idle = members.iter().filter(|&&c| m.nohz_idle(s.cpu(c))).count();
        ensure_eq!(
            v,
            m.llc_nr_busy_cpus(s.cpu(leader)),
            Some((members.len() - idle) as i32),
            "nr_busy_cpus of the LLC led by CPU {leader}"
        );
        if rebuilt {
            ensure_eq!(v, idle, 0, "CPUs counted idle right after a rebuild");
        }
    }

    // After a completed STATS pass the flag is set if any idle CPU it visited kept load.
    if model.out.stats_pass_completed {
        let kept = m
            .nohz_idle_cpus()
            .any(|cpu| m.rq(cpu).idle_cpu() && m.rq(cpu).has_blocked_load());
        ensure!(
            v,
            !kept || nohz.has_blocked_load(),
            "a STATS pass left blocked load on an idle CPU but nohz.has_blocked_load is clear"
        );
    }
}
