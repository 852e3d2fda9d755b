//! The soak: the crate's full kernel paths on every logical CPU as fast as the host runs
//! them, with every fault on, checking invariants all along.
//!
//! Each CPU thread runs the same platform and the same driver-layer calls as the other
//! scenarios (busy ticks through [`Machine::timer_interrupt`](nohz::Machine::timer_interrupt),
//! `sched_balance_newidle`, `do_idle` with the tick stopping and restarting, kicks and their
//! IPIs through [`Machine::kick_interrupt`](nohz::Machine::kick_interrupt) with the softirq's
//! ILB pass, NO_HZ_FULL CPUs from four CPUs up, hotplug), but nothing waits on a host timer:
//! time is a virtual clock (`Sim::vnow`) that a busy CPU moves to its tick's expiry when it
//! takes the tick, and that an idle CPU, after spinning a while with nothing arriving, moves to
//! its own next event. A task is one or two busy ticks; an idle CPU sleeps one to three ticks
//! of virtual time.
//!
//! A **transition** is one idle-loop pass that registers the CPU (its tick stopped,
//! `nohz_balance_enter_idle` run) followed by its exit on the CPU's next busy tick; it is
//! counted at that tick.
//!
//! # Invariant checks
//!
//! - every quiescent snapshot ([`Sim::snapshot_check`]) of every CPU: the idle mask and the
//!   registrations agree, only active online CPUs are in the mask, the kick bits and the csd's
//!   busy state agree and a busy csd has its IPI on the way, and (O1) a CPU settled in its idle
//!   state, registered with blocked load, has `nohz.has_blocked_load` set; a CPU takes one
//!   right after each kick it handled and one every eighth idle state;
//! - the hotplug checks of [`Sim`]'s hotplug cycle (out of the mask once deactivated, no IPI
//!   while down, a fresh CPU's state on return);
//! - at the end: no kick bit and no busy csd left, and no crate warning.
//!
//! # Planted bugs
//!
//! [`Plant`](crate::sim::Plant) reverts the hotplug fix, leaks the csd, or (probe builds) removes the ILB pass's
//! fence; the run then records the first violation and after how many transitions it came.

use crate::measure::{ThreadClock, ThreadUsage};
use crate::sim::{Cpu, Irq, Sim};
use nohz::platform::{KTIME_MAX, tick_nsec};
use nohz::{NohzFlags, Policy, TsFlags};
use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::{Duration, Instant};

/// Spins of an idle CPU with nothing arriving before it moves the clock to its next event.
/// Each spin gives a kick time to arrive (more spins: more ILB passes per transition); 4 runs
/// about 10^6 transitions a second on two cores with a few per cent of them kicked.
const PATIENCE: u32 = 4;
/// Attempts at a routine snapshot before it is given up (some CPU stayed inside crate code).
const SNAPSHOT_TRIES: u32 = 8;
/// Attempts at the snapshot right after a kick: the CPU whose registration raced the ILB
/// pass is still finishing it, and only this snapshot can see a pass that missed it before
/// the next idle entry stores the flag again.
const KICK_SNAPSHOT_TRIES: u32 = 1024;

std::thread_local! {
    static SEQS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// What one snapshot found wrong, before it is known to be valid.
#[derive(Default)]
struct Findings {
    count: u64,
    first: Option<String>,
}

impl Findings {
    fn expect(&mut self, holds: bool, what: impl FnOnce() -> String) {
        if !holds {
            self.count += 1;
            if self.first.is_none() {
                self.first = Some(what());
            }
        }
    }
}

impl<P: Policy, const HZ: u32> Sim<P, HZ> {
    /// A quiescent snapshot taken on CPU `me` (outside crate code): if no CPU is inside crate
    /// code while it reads (seqlock read of every CPU's counter), checks on every CPU:
    ///
    /// - in the idle mask exactly when registered (`rq.nohz_tick_stopped`);
    /// - in the idle mask only if active and online (the hotplug fix);
    /// - kick bits set exactly when the csd is busy, and a busy csd has an IPI on its way (a
    ///   csd never released shows here);
    /// - O1: a CPU settled in its idle state (no reschedule pending, tick stopped, so the
    ///   idle entry ran in this idle period and no ILB pass can have skipped it as busy),
    ///   registered with `rq.has_blocked_load`, has `nohz.has_blocked_load` set: an ILB pass
    ///   that cleared the flag either saw it in the mask (and decayed it or set the flag
    ///   again) or had its clear overwritten by the CPU's store of 1. Checked on x86 (TSO),
    ///   or under a policy that fences its repeat store (`Scalable`): elsewhere the kernel
    ///   accepts the O6 imprecision this would flag.
    ///
    /// Returns whether the snapshot was valid (and so checked).
    pub fn snapshot_check(&self, me: usize) -> bool {
        self.snapshot_check_tries(me, SNAPSHOT_TRIES)
    }

    /// [`Sim::snapshot_check`], giving up after `tries` attempts.
    pub fn snapshot_check_tries(&self, me: usize, tries: u32) -> bool {
        let n = self.cpus.len();
        SEQS.with(|seqs| {
            let mut seqs = seqs.borrow_mut();
            seqs.resize(n, 0);
            for _ in 0..tries {
                let mut busy = false;
                for (j, c) in self.cpus.iter().enumerate() {
                    let s = c.seq.load(Acquire);
                    busy |= s % 2 == 1 && j != me;
                    seqs[j] = s;
                }
                if busy {
                    std::hint::spin_loop();
                    continue;
                }
                let findings = self.read_invariants();
                std::sync::atomic::fence(Acquire);
                let moved = self
                    .cpus
                    .iter()
                    .enumerate()
                    .any(|(j, c)| j != me && c.seq.load(Relaxed) != seqs[j]);
                if moved {
                    continue;
                }
                self.counters.snapshots.fetch_add(1, Relaxed);
                self.cpus[me].checks.fetch_add(5 * n as u64, Relaxed);
                if findings.count > 0 {
                    self.counters
                        .invariant_violations
                        .fetch_add(findings.count - 1, Relaxed);
                    self.violation(findings.first.as_deref().unwrap_or("snapshot"));
                }
                return true;
            }
            self.counters.snapshots_skipped.fetch_add(1, Relaxed);
            false
        })
    }

    /// The snapshot's reads and predicates (valid only if no counter moved meanwhile).
    fn read_invariants(&self) -> Findings {
        let mut f = Findings::default();
        let nohz = self.m.nohz();
        let global_blocked = nohz.has_blocked_load();
        let o1 = cfg!(any(target_arch = "x86", target_arch = "x86_64")) || P::READ_BEFORE_WRITE;
        for cpu in self.nr.iter() {
            let i = cpu.index();
            let c = &self.cpus[i];
            let rq = self.m.rq(cpu);
            let in_mask = self.m.nohz_idle_test(cpu);
            let registered = rq.nohz_tick_stopped();
            f.expect(in_mask == registered, || {
                format!("CPU {i}: in the idle mask {in_mask}, registered {registered}")
            });
            f.expect(
                !in_mask || (self.m.cpu_active(cpu) && self.m.cpu_online(cpu)),
                || format!("CPU {i}: a deactivated CPU is in the idle mask"),
            );
            let kicked = rq.nohz_flags().load().intersects(NohzFlags::KICK_MASK);
            let busy = rq.csd_busy();
            f.expect(kicked == busy, || {
                format!("CPU {i}: kick bits set {kicked}, csd busy {busy} (a csd never released?)")
            });
            f.expect(!busy || c.ipi_pending.load(Relaxed), || {
                format!("CPU {i}: a busy csd with no IPI on its way (never released)")
            });
            let settled = c.in_idle_state.load(Relaxed)
                && !c.need_resched.load(Relaxed)
                && self.m.tick_sched(cpu).flags().contains(TsFlags::STOPPED)
                && (P::ENTER_IDLE_WHENEVER_STOPPED || !c.nohz_full.load(Relaxed));
            if o1 && settled && in_mask && rq.has_blocked_load() {
                f.expect(global_blocked, || {
                    format!(
                        "O1: CPU {i} idles registered with blocked load, nohz.has_blocked_load is 0 \
                         (an ILB pass missed it)"
                    )
                });
            }
        }
        // I-S1 (sharded idle set): at a quiescent point every shard holding an idle CPU is
        // flagged in the summary, or the busy tick's "anyone tickless?" test could miss it.
        if P::SHARDED {
            for s in 0..self.m.nr_shards() {
                let word = self.m.shard_word(s);
                f.expect(word == 0 || self.m.shard_flagged(s), || {
                    format!("I-S1: shard {s} holds idle CPUs ({word:#x}) but is not flagged")
                });
            }
        }
        f
    }

    /// One soak CPU's life: pin, then busy ticks, newidle and the idle loop until stopped.
    pub(crate) fn soak_cpu_main(
        &self,
        i: usize,
        core: Option<core_affinity::CoreId>,
    ) -> (bool, ThreadUsage) {
        let pinned = core.is_some_and(core_affinity::set_for_current);
        let cpu = self.cpu(i);
        self.set_current(Some(i));
        let c = &self.cpus[i];
        let _ = c.thread.set(std::thread::current());
        let clock = ThreadClock::start();
        let mut rng = fastrand::Rng::with_seed(0x50a4_0000 + i as u64);
        let period = tick_nsec(HZ);
        while !self.stopping() {
            self.soak_faults(cpu, &mut rng);
            self.service(cpu);
            if let Some(task) = self.pick(i) {
                for _ in 0..task.work_us.max(1) {
                    // The task runs until its next tick: the clock reaches the tick's expiry
                    // (or a period on, with the tick stopped under a lone NO_HZ_FULL task).
                    if c.tick_armed.load(Relaxed) {
                        self.advance_to(c.tick_expiry.load(Relaxed));
                    } else {
                        self.advance_to(self.now_ns() + period);
                    }
                    self.service(cpu);
                }
                c.completed.fetch_add(1, Relaxed);
                let queued = c.rq.lock().unwrap_or_else(|e| e.into_inner()).len();
                self.sync_rq(i, queued, false);
                self.update_full_dependency(i);
                continue;
            }
            if self.in_crate(i, || self.m.sched_balance_newidle(cpu, self)) {
                continue;
            }
            self.idle(cpu, &mut rng);
        }
        if c.ipi_pending.load(Relaxed) {
            self.irq(cpu, Irq::Ipi);
        }
        self.set_current(None);
        (pinned, clock.finish())
    }

    /// The soak's faults, drawn once per pass of a CPU's loop: a hotplug cycle (1 in 4096),
    /// a stall (1 in 256: the thread yields a few times, as a preempted vCPU, while the others
    /// run on), a jiffies jump (1 in 1024), and on the CPU that keeps time a hold (1 in 256,
    /// [`Sim::hold_timekeeper`]). Delayed IPIs are drawn per IPI (`send_nohz_ipi`).
    fn soak_faults(&self, cpu: Cpu, rng: &mut fastrand::Rng) {
        let i = cpu.index();
        let c = &self.cpus[i];
        if self.faults.hotplug_every_ms > 0 && self.nr.get() > 1 && rng.u32(..4096) == 0 {
            c.faults.fetch_add(1, Relaxed);
            self.in_crate(i, || self.hotplug_cycle(cpu));
        }
        if self.faults.stall_us > 0 && rng.u32(..256) == 0 {
            c.faults.fetch_add(1, Relaxed);
            for _ in 0..4 {
                std::thread::yield_now();
            }
        }
        if self.faults.jiffies_jump > 0 && rng.u32(..1024) == 0 {
            c.faults.fetch_add(1, Relaxed);
            self.jump_jiffies();
        }
        if self.faults.timekeeper_hold_ticks > 0
            && rng.u32(..256) == 0
            && self.m.tick_do_timer_cpu() == Some(cpu)
        {
            c.faults.fetch_add(1, Relaxed);
            self.hold_timekeeper(cpu);
        }
    }

    /// Fault: the CPU that keeps time is held, as in stop-machine or a long VM exit: its
    /// thread takes no interrupt (its tick, the jiffies update, its kicks wait) and keeps the
    /// duty, while the others run on and move the virtual clock on by
    /// `timekeeper_hold_ticks` periods (or until it has yielded 4096 times, if they are all
    /// asleep). The jiffies watch on their ticks ([`Sim::watch_jiffies`]) checks that jiffies
    /// move meanwhile.
    fn hold_timekeeper(&self, cpu: Cpu) {
        let until = self.now_ns() + self.faults.timekeeper_hold_ticks * tick_nsec(HZ);
        for _ in 0..4096 {
            if self.now_ns() >= until || self.stopping() {
                break;
            }
            std::thread::yield_now();
        }
        debug_assert_eq!(self.m.tick_do_timer_cpu(), Some(cpu), "the duty stays");
    }

    /// The idle state on the virtual clock: spins until an interrupt is due or a wakeup; with
    /// nothing arriving for a while, moves the clock to this CPU's next event. Takes a
    /// snapshot right after each kick handled, and on every eighth entry.
    pub(crate) fn soak_idle_state(&self, cpu: Cpu) {
        let i = cpu.index();
        let c = &self.cpus[i];
        if c.idle_entries.load(Relaxed).is_multiple_of(8) {
            self.snapshot_check(i);
        }
        let mut spins = 0u32;
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
            if c.ipi_pending.load(Relaxed) && now >= c.ipi_at.load(Relaxed) {
                if self.irq(cpu, Irq::Ipi) {
                    self.snapshot_check_tries(i, KICK_SNAPSHOT_TRIES);
                }
                return;
            }
            let wakeup = c.next_timer.load(Relaxed);
            if c.tick_due(now) || now >= wakeup {
                self.irq(cpu, Irq::Timer);
                return;
            }
            spins += 1;
            if spins >= PATIENCE {
                let mut next = wakeup;
                if c.tick_armed.load(Relaxed) {
                    next = next.min(c.tick_expiry.load(Relaxed));
                }
                if c.ipi_pending.load(Relaxed) {
                    next = next.min(c.ipi_at.load(Relaxed));
                }
                if next == KTIME_MAX {
                    next = now + tick_nsec(HZ);
                }
                if self.oversubscribed {
                    // Let a CPU thread that shares this core deliver what it has for us.
                    std::thread::yield_now();
                }
                self.advance_to(next);
                spins = 0;
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// How a soak run ends.
#[derive(Debug, Clone, Copy)]
pub struct SoakStop {
    /// After this many transitions (all CPUs), if set ...
    pub transitions: Option<u64>,
    /// ... else (and at the latest) after this many seconds.
    pub seconds: f64,
    /// Print progress to stderr (only when it is a terminal).
    pub progress: bool,
}

/// Runs the soak's CPU threads on `sim` until `stop`; returns whether all were pinned, each
/// one's clocks and the seconds it lasted.
pub(crate) fn run_threads<P: Policy, const HZ: u32>(
    sim: &Sim<P, HZ>,
    cores: &[core_affinity::CoreId],
    pin: bool,
    stop: SoakStop,
) -> (bool, Vec<ThreadUsage>, f64) {
    let n = sim.nr().get();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(stop.seconds);
    let show = stop.progress && std::io::stderr().is_terminal();
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let core = (pin && !cores.is_empty()).then(|| cores[i % cores.len()]);
                s.spawn(move || sim.soak_cpu_main(i, core))
            })
            .collect();
        let mut last_print = start;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            let done = sim.transitions();
            let reached = stop.transitions.is_some_and(|t| done >= t);
            if reached || now >= deadline {
                break;
            }
            if show && now - last_print >= Duration::from_millis(250) {
                last_print = now;
                let secs = (now - start).as_secs_f64();
                let rate = done as f64 / secs.max(1e-9);
                let left = match stop.transitions {
                    Some(t) => (t.saturating_sub(done)) as f64 / rate.max(1.0),
                    None => (deadline - now).as_secs_f64(),
                };
                eprint!(
                    "\r\x1b[Ksoak: {done} transitions ({rate:.0}/s), {} violation(s), ~{left:.0}s left",
                    sim.counters.invariant_violations.load(Relaxed)
                );
                let _ = std::io::stderr().flush();
            }
        }
        if show {
            eprint!("\r\x1b[K");
        }
        sim.request_stop();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((false, ThreadUsage::default())))
            .collect::<Vec<_>>()
    });
    let secs = start.elapsed().as_secs_f64();
    sim.final_checks();
    let pinned = pin && out.iter().all(|(p, _)| *p);
    (pinned, out.into_iter().map(|(_, u)| u).collect(), secs)
}
