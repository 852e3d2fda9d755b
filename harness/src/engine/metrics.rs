//! The run's metrics in one place: what the engine counts as it goes ([`Counts`]), the time
//! each CPU spends running, halted, halted invisible to the idle balancer and balancing, the
//! balancing quality (how long runnable tasks wait, and how long CPUs idle while a task they
//! may run waits elsewhere), and what a run reports ([`Outcome`], assembled by
//! [`Engine::outcome`] at the end).
//!
//! A NOHZ change is judged by what the machine gets, so each run carries balancing quality and
//! balancing cost side by side:
//!
//! - `idle_while_waiting_ms_per_s`: CPU time during which a CPU sat idle (its idle task
//!   current, not balancing) while a task it may run (same cpuset, not bound elsewhere) waited
//!   on another CPU's run queue, behind that CPU's running task or balancing: the waste
//!   balancing exists to remove. An idle CPU counts only while there are at least as many such
//!   tasks as idle CPUs before it: with one task waiting and a hundred CPUs idle, one CPU's
//!   time is wasted, not a hundred's. A task queued on an idle CPU whose wakeup is on its way
//!   does not wait behind anything and does not count. Kept exactly, per cpuset, as the
//!   integral over time of min(idle CPUs, waiting tasks).
//! - `runnable_wait_us_p50` / `_p99`: from a task becoming runnable (woken, forked, or put back
//!   behind others at the end of its slice) to its running; a migration does not restart it.
//! - `ilb_cpu_ms_per_s`, `ilb_busiest_share`: the CPU time idle CPUs spent in ILB passes (a
//!   kick's pass and the newidle-requested blocked-load pass), and the most one CPU spent
//!   there as a share of its own time; the newidle walks' and the CPUs' own periodic balances'
//!   time beside them. The ILB time splits into what it did (`ilb_domains_ms_per_s`,
//!   `ilb_blocked_ms_per_s`, `ilb_rq_lock_ms_per_s`: the idle CPUs' domain balances, their
//!   blocked-load decays, the remote run-queue locks), which sum to it.
//!
//! Those count after the warm-up ([`warmup`]). `pulled_newidle`, `pulled_periodic` and
//! `pulled_ilb`, the tasks each kind of balancing pulled (the report gives them per second),
//! count the whole run, warm-up included, as the pass and kick counts do. Everything here is
//! a function of the configuration and the seed: no host clock is read.

use super::load::Offered;
use super::{CpuSt, Engine, cost};
use nohz::{Jiffies, Policy};

/// What one run did. Everything here is a function of the configuration and the seed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// The policy's name.
    pub policy: &'static str,
    /// The bug planted (`none` for the crate as it is).
    pub plant: &'static str,
    /// Logical CPUs.
    pub cpus: usize,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Tasks that ran to their end.
    pub tasks_completed: u64,
    /// Tasks the load's arrival streams made ([`Source::Arrivals`](super::work::Source)), the
    /// whole run: the offered load, the same under every policy for a seed (each stream keeps
    /// its schedule and draws from a generator of its own).
    pub arrivals: u64,
    /// Device interrupts the load raised ([`Source::Interrupts`](super::work::Source)), the
    /// whole run: likewise the same under every policy.
    pub device_interrupts: u64,
    /// Runs completed (a task's run before it blocks or exits).
    pub runs_completed: u64,
    /// Ticks that ran on a CPU running a task.
    pub busy_ticks: u64,
    /// Busy ticks whose balance trigger found balancing due (it got as far as a decision).
    pub due_ticks: u64,
    /// Ticks that ran on an idle CPU (its tick not stopped).
    pub idle_ticks: u64,
    /// nohz kick IPIs sent.
    pub kicks_sent: u64,
    /// ILB passes run (a kick handled with flags, on a CPU still idle).
    pub ilb_passes: u64,
    /// ILB passes per CPU, CPU 0 first.
    pub ilb_duty: Vec<u64>,
    /// Tasks pulled by newidle balancing.
    pub pulled_newidle: u64,
    /// Tasks pulled by a CPU's own periodic balancing.
    pub pulled_periodic: u64,
    /// Tasks pulled by an ILB pass on an idle CPU's behalf.
    pub pulled_ilb: u64,
    /// Idle-loop entries.
    pub idle_entries: u64,
    /// Idle states entered (`cpuidle_enter` that halted): more than the entries when
    /// interrupts end an idle state without ending the idle loop.
    pub halts: u64,
    /// Of those, entered with the tick stopped (the governor, if any, let it stop).
    pub stopped_halts: u64,
    /// CPUs taken offline and brought back.
    pub hotplug_cycles: u64,
    /// Takedowns the crate refused (`sched_cpu_deactivate`'s errors).
    pub hotplug_refused: u64,
    /// Nanoseconds all CPUs together spent running tasks.
    pub busy_ns: u64,
    /// Nanoseconds all CPUs together spent halted in their idle state.
    pub idle_ns: u64,
    /// Of those, halted with the tick stopped but out of the idle mask: invisible to the idle
    /// balancer (what seed 001 fixes).
    pub invisible_idle_ns: u64,
    /// Invariant checks made (each predicate on each CPU).
    pub checks: u64,
    /// Invariant violations.
    pub violations: u64,
    /// The first violation, with its time.
    pub first_violation: Option<String>,
    /// Warnings the crate counted.
    pub warnings: u64,
    /// Batches finished (closed-loop batch sources; a llama load's decodes).
    pub batches_done: u64,
    /// Median time from a batch's arrival to its last task's end (a llama decode's, from its
    /// first node's round to its last's release), in milliseconds.
    pub batch_ms: Option<f64>,
    /// The workload's own throughput after the warm-up ([`warmup`]), in `work_unit`s: a
    /// llama load's decodes (a decode's barrier rounds counted as they pass, so fractions of
    /// one count), hackbench's messages read.
    pub work_done: f64,
    /// What `work_done` counts (`decodes`, `messages`; empty for loads that count none).
    pub work_unit: &'static str,
    /// Nanoseconds all CPUs together spent in the crate's code after the warm-up
    /// ([`warmup`]), by the cost model (0 without the counting build).
    pub kernel_ns: u64,
    /// Simulated seconds measured (the run less its warm-up): what the rates below are per.
    pub measured_seconds: f64,
    /// CPU time idle while a task it may run waited on a run queue, ms per simulated second.
    pub idle_while_waiting_ms_per_s: f64,
    /// Runnable-to-running waits recorded.
    pub runnable_waits: u64,
    /// The median runnable-to-running wait, us.
    pub runnable_wait_us_p50: Option<f64>,
    /// The 99th percentile of the same, us.
    pub runnable_wait_us_p99: Option<f64>,
    /// CPU time in ILB passes (on idle CPUs), ms per simulated second.
    pub ilb_cpu_ms_per_s: f64,
    /// The ILB time of the CPU that spent most there, as a share of that CPU's time (0-1).
    pub ilb_busiest_share: f64,
    /// Of `ilb_cpu_ms_per_s`, the idle CPUs' domain balances (those `should_we_balance`
    /// declined included), ms per simulated second.
    pub ilb_domains_ms_per_s: f64,
    /// Of `ilb_cpu_ms_per_s`, the blocked-load decays (`update_nohz_stats`), ms per simulated
    /// second.
    pub ilb_blocked_ms_per_s: f64,
    /// Of `ilb_cpu_ms_per_s`, the remote run queues' locks and clock updates of due CPUs, ms
    /// per simulated second. The three sum to `ilb_cpu_ms_per_s`.
    pub ilb_rq_lock_ms_per_s: f64,
    /// CPU time in newidle walks, ms per simulated second.
    pub newidle_cpu_ms_per_s: f64,
    /// CPU time in the CPUs' own periodic balances (their softirq), ms per simulated second.
    pub periodic_cpu_ms_per_s: f64,
    /// ILB passes of a kick that a wakeup onto their CPU aborted.
    pub ilb_passes_aborted: u64,
    /// How far each completed kick pass moved `nohz.next_balance`, in jiffies (its value at
    /// the pass's end less its value at the start), and how many passes moved it so far.
    pub next_balance_advance: Vec<(i64, u64)>,
    /// How far ahead of jiffies each completed kick pass left `nohz.next_balance`, in
    /// jiffies, and how many passes left it so.
    pub next_balance_ahead: Vec<(i64, u64)>,
    /// Jiffies in which some busy tick found `nohz.next_balance` at or before `jiffies`, as a
    /// fraction of the jiffies with a busy tick: what one CPU's trace shows when its tick is
    /// the jiffy's first (Khan's, taken at `nohz_balancer_kick`'s entry).
    pub due_jiffy_fraction: Option<f64>,
    /// The balancing costs the run used ([`BalanceCosts`](super::BalanceCosts)).
    pub balance_costs: String,
    /// The cost model's findings (the counting build only).
    pub cost: Option<cost::CostReport>,
}

/// Counters of the run.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) events: u64,
    pub(super) tasks_completed: u64,
    pub(super) runs_completed: u64,
    pub(super) busy_ticks: u64,
    pub(super) due_ticks: u64,
    pub(super) idle_ticks: u64,
    pub(super) kicks_sent: u64,
    pub(super) ilb_passes: u64,
    pub(super) pulled_newidle: u64,
    pub(super) pulled_periodic: u64,
    pub(super) pulled_ilb: u64,
    pub(super) idle_entries: u64,
    pub(super) halts: u64,
    pub(super) stopped_halts: u64,
    pub(super) hotplug_cycles: u64,
    pub(super) hotplug_refused: u64,
    pub(super) checks: u64,
    pub(super) violations: u64,
    pub(super) first_violation: Option<String>,
    pub(super) batches_done: u64,
    pub(super) batch_ns: Vec<u64>,
    pub(super) runnable_wait: Hist,
    pub(super) ilb_aborted: u64,
    pub(super) advance: std::collections::BTreeMap<i64, u64>,
    pub(super) ahead: std::collections::BTreeMap<i64, u64>,
    /// Jiffies with a busy tick, and of those, with a busy tick that found balancing due;
    /// the last such jiffy and whether it was found due yet.
    pub(super) busy_jiffies: u64,
    pub(super) due_jiffies: u64,
    last_busy_jiffy: Option<usize>,
    last_jiffy_due: bool,
    /// The load's own work (llama decodes, hackbench messages), after the warm-up.
    pub(super) work_done: f64,
}

impl Counts {
    /// A busy tick at `jiffy`, `due` or not: counts the jiffy once, and once as due.
    pub(super) fn note_busy_jiffy(&mut self, jiffy: usize, due: bool) {
        if self.last_busy_jiffy != Some(jiffy) {
            self.last_busy_jiffy = Some(jiffy);
            self.last_jiffy_due = false;
            self.busy_jiffies += 1;
        }
        if due && !self.last_jiffy_due {
            self.last_jiffy_due = true;
            self.due_jiffies += 1;
        }
    }
}

/// What a kick's pass found at its start, to judge what it leaves.
#[derive(Debug, Clone, Copy)]
pub(super) struct PassStart {
    /// Jiffies as the kick's handler began (the pass's `now` is this or, after the handler's
    /// jiffies catch-up, later).
    pub(super) jiffies: Jiffies,
    /// `nohz.next_balance` and `nohz.next_blocked` then.
    pub(super) next_balance: Jiffies,
    pub(super) next_blocked: Jiffies,
    /// [`Engine::passes_ended`](super::Engine) and the BALANCE kicks then, to tell whether
    /// another writer of the deadlines ran meanwhile.
    pub(super) passes_ended: u64,
    pub(super) balance_kicks: u64,
}

/// What a piece of balancing work is ([`Engine::spend`](super::Engine)): how an ILB pass's
/// time splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(in crate::engine) enum Work {
    /// A domain's balance, or its `should_we_balance` declining (the costs'
    /// [`domain`](super::sched::BalanceCosts::domain) and
    /// [`declined`](super::sched::BalanceCosts::declined)); also a rebuild's per-CPU step.
    #[default]
    Domains,
    /// One run queue's blocked-load decay (`sched_balance_update_blocked_averages`).
    Blocked,
    /// A remote run queue's lock and clock update for a due CPU.
    RqLock,
}

impl Work {
    /// Every kind, in the order `CpuSt::ilb_work_ns` keeps them.
    pub(super) const ALL: [Work; 3] = [Work::Domains, Work::Blocked, Work::RqLock];

    fn index(self) -> usize {
        self as usize
    }
}

/// What a CPU's balancing time went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Balancing {
    /// An ILB pass on an idle CPU: a kick's, or the one newidle asked for (`NOHZ_NEWILB`).
    Ilb,
    /// The newidle walk of a CPU about to idle.
    Newidle,
    /// The CPU's own periodic balance (its tick's softirq), idle or busy.
    Periodic,
    /// A deactivation's domain rebuild, on the hotplug thread.
    Rebuild,
}

impl Balancing {
    /// Every kind, in the order `CpuSt::balance_ns` keeps them.
    pub(super) const ALL: [Balancing; 4] = [
        Balancing::Ilb,
        Balancing::Newidle,
        Balancing::Periodic,
        Balancing::Rebuild,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// A histogram of nanosecond durations, log-linear: 32 buckets per power of two (each within
/// about 3 % of the values it holds), so a percentile costs no list of every sample.
#[derive(Debug, Default)]
pub(super) struct Hist {
    buckets: Vec<u64>,
    n: u64,
}

/// Sub-buckets per power of two, as bits.
const SUB_BITS: u32 = 5;

impl Hist {
    fn bucket(v: u64) -> usize {
        let v = v.max(1);
        let msb = 63 - v.leading_zeros();
        if msb < SUB_BITS {
            return v as usize;
        }
        let shift = msb - SUB_BITS;
        let sub = (v >> shift) as usize & ((1 << SUB_BITS) - 1);
        (((shift + 1) as usize) << SUB_BITS) + sub
    }

    /// The smallest value bucket `b` holds, and the one past its largest.
    fn range(b: usize) -> (u64, u64) {
        let sub = (b & ((1 << SUB_BITS) - 1)) as u64;
        let shift = (b >> SUB_BITS) as u32;
        if shift == 0 {
            return (sub, sub + 1);
        }
        let base = (1u64 << SUB_BITS | sub) << (shift - 1);
        (base, base + (1 << (shift - 1)))
    }

    /// Records one duration.
    pub(super) fn record(&mut self, v: u64) {
        let b = Self::bucket(v);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.n += 1;
    }

    /// How many were recorded.
    pub(super) fn len(&self) -> u64 {
        self.n
    }

    /// The value at quantile `q` (0-1): the middle of the bucket it falls in.
    pub(super) fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = Self::range(b);
                return Some((lo + hi - 1) as f64 / 2.0);
            }
        }
        None
    }
}

/// Idle CPUs against waiting tasks, per cpuset: the integral that makes
/// `idle_while_waiting_ms_per_s`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct IdleWhileWaiting {
    /// CPUs of the cpuset idle now (idle task current, not balancing).
    idle: usize,
    /// Tasks waiting on the cpuset's busy run queues that any of its CPUs may run.
    waiting: usize,
    /// The last time either changed.
    since: u64,
    /// Idle CPU-nanoseconds that a waiting task could have used, so far.
    ns: u64,
}

impl CpuSt {
    /// A task ran `ran` ns on this CPU (its run ended, or it was taken off).
    pub(super) fn credit_busy(&self, ran: u64) {
        self.busy_ns.set(self.busy_ns.get() + ran);
    }

    /// The CPU slept `slept` ns in its idle state; invisible to the idle balancer if it
    /// halted so (`halted_invisible`).
    pub(super) fn credit_idle(&self, slept: u64) {
        self.idle_ns.set(self.idle_ns.get() + slept);
        if self.halted_invisible.get() {
            self.invisible_ns.set(self.invisible_ns.get() + slept);
        }
    }

    /// The crate's code took `spent` ns of this CPU's time (the cost model).
    pub(super) fn credit_kernel(&self, spent: u64) {
        self.kernel_ns.set(self.kernel_ns.get() + spent);
    }

    /// The CPU spent `ns` balancing, on `what`, doing `work`.
    pub(super) fn credit_balancing(&self, what: Balancing, work: Work, ns: u64) {
        let c = &self.balance_ns[what.index()];
        c.set(c.get() + ns);
        if what == Balancing::Ilb {
            let w = &self.ilb_work_ns[work.index()];
            w.set(w.get() + ns);
        }
    }

    /// Balancing ns by kind, up to `now`, the work in progress included (as what it is for).
    fn balancing_at(&self, now: u64, what: Balancing, in_progress: Balancing) -> u64 {
        let done = self.balance_ns[what.index()].get();
        if self.busy.get() && what == in_progress {
            done + (now - self.busy_since.get())
        } else {
            done
        }
    }

    /// ILB time doing `work`, up to `now`, the work in progress included (as
    /// [`balancing_at`](Self::balancing_at) counts it): over every [`Work`] it sums to the ILB
    /// time.
    fn ilb_work_at(&self, now: u64, work: Work, in_progress: Balancing) -> u64 {
        let done = self.ilb_work_ns[work.index()].get();
        if self.busy.get() && in_progress == Balancing::Ilb && self.busy_work.get() == work {
            done + (now - self.busy_since.get())
        } else {
            done
        }
    }

    /// Busy, idle and invisible-idle ns up to `now`, the run or halt in progress included.
    fn times_at(&self, now: u64) -> (u64, u64, u64) {
        let busy = self.busy_ns.get() + self.curr.get().map_or(0, |_| now - self.run_start.get());
        let halted = if self.halted.get() {
            now - self.halted_at.get()
        } else {
            0
        };
        let idle = self.idle_ns.get() + halted;
        let mut invisible = self.invisible_ns.get();
        if self.halted_invisible.get() {
            invisible += halted;
        }
        (busy, idle, invisible)
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Updates the run's counters.
    pub(super) fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.borrow_mut());
    }

    /// The warm-up ([`warmup`]) is over: the crate's time so far (the boot's storm, every CPU
    /// starting at once) is not the load's cost, and the cost model forgets its counts; nor
    /// is the boot's placement of every task at once the balancing quality measured.
    pub(super) fn forget_warmup(&self) {
        #[cfg(nohz_linecount)]
        cost::reset_counts();
        let now = self.now();
        for s in &self.cpus {
            s.kernel_ns.set(0);
            for b in s.balance_ns.iter().chain(&s.ilb_work_ns) {
                b.set(0);
            }
            if s.busy.get() {
                s.busy_since.set(now);
            }
        }
        for w in self.iww.borrow_mut().iter_mut() {
            w.ns = 0;
            w.since = now;
        }
        self.count(|n| {
            n.runnable_wait = Hist::default();
            n.ilb_aborted = 0;
            n.advance.clear();
            n.ahead.clear();
            n.busy_jiffies = 0;
            n.due_jiffies = 0;
            n.work_done = 0.0;
        });
        self.warm_at.set(now);
    }

    /// Whether `c` counts as idle for `idle_while_waiting`: its idle task current (inside its
    /// idle loop), not balancing.
    fn counts_idle(&self, c: usize) -> bool {
        let s = &self.cpus[c];
        s.in_idle.get() && !s.busy.get() && !s.offline.get()
    }

    /// Brings `set`'s integral up to now.
    fn iww_advance(&self, w: &mut IdleWhileWaiting) {
        let now = self.now();
        w.ns += (now - w.since) * w.idle.min(w.waiting) as u64;
        w.since = now;
    }

    /// `c` may have become idle or stopped being idle (idle loop entered or left, balancing
    /// begun or ended): the integral follows, and so do the tasks it counts as waiting.
    pub(super) fn note_idle_change(&self, c: usize) {
        let s = &self.cpus[c];
        let idle = self.counts_idle(c);
        if idle != s.iww_idle.get() {
            s.iww_idle.set(idle);
            let mut all = self.iww.borrow_mut();
            let w = &mut all[self.shape.cpuset_index(c)];
            self.iww_advance(w);
            if idle {
                w.idle += 1;
            } else {
                w.idle -= 1;
            }
        }
        self.note_waiting(c);
    }

    /// `c`'s run queue changed: the tasks waiting there behind its running task or its
    /// balancing that another CPU may run, and the integral with them.
    pub(super) fn note_waiting(&self, c: usize) {
        let s = &self.cpus[c];
        let waiting = if s.iww_idle.get() {
            0
        } else {
            let tasks = self.tasks.borrow();
            s.queue
                .borrow()
                .iter()
                .filter(|&&t| tasks[t].allowed.len() > 1)
                .count()
        };
        let was = s.iww_waiting.replace(waiting);
        if was == waiting {
            return;
        }
        let mut all = self.iww.borrow_mut();
        let w = &mut all[self.shape.cpuset_index(c)];
        self.iww_advance(w);
        w.waiting = w.waiting + waiting - was;
    }

    /// Task `t` starts running on `c`: its wait since it became runnable is recorded.
    pub(super) fn note_runs(&self, t: usize) {
        let since = self.tasks.borrow_mut()[t].runnable_since.take();
        if let Some(since) = since {
            let wait = self.now() - since;
            self.count(|n| n.runnable_wait.record(wait));
        }
    }

    /// What `c`'s balancing time now goes to: its newidle walk, its own tick's balance, or
    /// (on an idle CPU otherwise: a kick's pass, the newidle-requested pass at the idle
    /// loop's start, a kick run at its end) an ILB pass.
    pub(super) fn balancing(&self, c: usize) -> Balancing {
        let s = &self.cpus[c];
        if s.in_newidle.get() {
            Balancing::Newidle
        } else if s.in_idle.get() && !s.in_tick.get() {
            Balancing::Ilb
        } else if s.leaving.get() && !s.in_idle.get() {
            Balancing::Rebuild
        } else {
            Balancing::Periodic
        }
    }

    /// A kick's handler begins on `c`: what its pass finds ([`PassStart`]).
    pub(super) fn pass_begins(&self, c: usize) -> PassStart {
        self.cpus[c].pass_aborted.set(false);
        let nohz = cost::unrecorded(|| self.m.nohz());
        PassStart {
            jiffies: self.time.jiffies(),
            next_balance: cost::unrecorded(|| nohz.next_balance()),
            next_blocked: cost::unrecorded(|| nohz.next_blocked()),
            passes_ended: self.passes_ended.get(),
            balance_kicks: self.balance_kicks.get(),
        }
    }

    /// The crate asked `c`'s `need_resched` and got `answer`: inside a kick's pass on a CPU
    /// that got work (not idle any more), that is the pass's abort test, and `true` aborts it.
    pub(super) fn note_abort_check(&self, c: usize, answer: bool) {
        let s = &self.cpus[c];
        if answer && s.in_kick.get() && !s.queue.borrow().is_empty() {
            s.pass_aborted.set(true);
        }
    }

    /// A kick's pass on `c` with `flags` ended, `start` what it found: an aborted pass is
    /// counted, a completed one's move of `nohz.next_balance` recorded, and the deadlines it
    /// left checked against the kernel's ([`Engine::check_pass_deadlines`]).
    pub(super) fn pass_ended(&self, c: usize, flags: nohz::NohzFlags, start: PassStart) {
        let aborted = self.cpus[c].pass_aborted.take();
        self.check_pass_deadlines(c, flags, aborted, &start);
        if aborted {
            self.count(|n| n.ilb_aborted += 1);
            return;
        }
        let after = cost::unrecorded(|| self.m.nohz().next_balance());
        let moved = after.get().wrapping_sub(start.next_balance.get()) as isize as i64;
        let ahead = after.get().wrapping_sub(self.time.jiffies().get()) as isize as i64;
        self.count(|n| {
            *n.advance.entry(moved).or_insert(0) += 1;
            *n.ahead.entry(ahead).or_insert(0) += 1;
        });
    }

    /// The blocked-load pass at the start of `c`'s idle loop, if one ran, is over (its first
    /// halt, or the loop's end).
    pub(super) fn newilb_window_ends(&self, c: usize) {
        if self.cpus[c].in_newilb.take() {
            self.passes_ended.set(self.passes_ended.get() + 1);
        }
    }

    /// What the run did, at its end (`sim_ns`), with the cost model's report if any.
    pub(super) fn outcome(&self, sim_ns: u64, cost: Option<cost::CostReport>) -> Outcome {
        let now = self.now();
        let mut busy = 0;
        let mut idle = 0;
        let mut invisible = 0;
        for s in &self.cpus {
            let (b, i, v) = s.times_at(now);
            busy += b;
            idle += i;
            invisible += v;
        }
        let measured_ns = (now - self.warm_at.get()).max(1);
        let measured = measured_ns as f64 / 1e9;
        let mut spent = [0u64; Balancing::ALL.len()];
        let mut ilb_work = [0u64; Work::ALL.len()];
        let mut ilb_top = 0u64;
        for (c, s) in self.cpus.iter().enumerate() {
            let what = self.balancing(c);
            for w in Work::ALL {
                ilb_work[w.index()] += s.ilb_work_at(now, w, what);
            }
            for k in Balancing::ALL {
                let ns = s.balancing_at(now, k, what);
                spent[k.index()] += ns;
                if k == Balancing::Ilb {
                    ilb_top = ilb_top.max(ns);
                }
            }
        }
        let iww_ns: u64 = {
            let mut all = self.iww.borrow_mut();
            all.iter_mut()
                .map(|w| {
                    self.iww_advance(w);
                    w.ns
                })
                .sum()
        };
        let ms_per_s = |ns: u64| ns as f64 / 1e6 / measured;
        let n = self.counts.borrow();
        Outcome {
            policy: P::NAME,
            plant: self.plant.name(),
            cpus: self.shape.cpus,
            sim_seconds: sim_ns as f64 / 1e9,
            events: n.events,
            tasks_completed: n.tasks_completed,
            arrivals: self.offered(Offered::Arrivals),
            device_interrupts: self.offered(Offered::Interrupts),
            runs_completed: n.runs_completed,
            busy_ticks: n.busy_ticks,
            due_ticks: n.due_ticks,
            idle_ticks: n.idle_ticks,
            kicks_sent: n.kicks_sent,
            ilb_passes: n.ilb_passes,
            ilb_duty: self.cpus.iter().map(|s| s.ilb_passes.get()).collect(),
            pulled_newidle: n.pulled_newidle,
            pulled_periodic: n.pulled_periodic,
            pulled_ilb: n.pulled_ilb,
            idle_entries: n.idle_entries,
            halts: n.halts,
            stopped_halts: n.stopped_halts,
            hotplug_cycles: n.hotplug_cycles,
            hotplug_refused: n.hotplug_refused,
            busy_ns: busy,
            idle_ns: idle,
            invisible_idle_ns: invisible,
            checks: n.checks,
            violations: n.violations,
            first_violation: n.first_violation.clone(),
            warnings: self.m.warnings().total(self.m.nr_cpu_ids()),
            batches_done: n.batches_done,
            batch_ms: {
                let ms: Vec<f64> = n.batch_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
                crate::measure::median(&ms)
            },
            work_done: n.work_done,
            work_unit: self.workload.work_unit(),
            kernel_ns: self.cpus.iter().map(|s| s.kernel_ns.get()).sum(),
            cost,
            measured_seconds: measured,
            idle_while_waiting_ms_per_s: ms_per_s(iww_ns),
            runnable_waits: n.runnable_wait.len(),
            runnable_wait_us_p50: n.runnable_wait.quantile(0.5).map(|ns| ns / 1e3),
            runnable_wait_us_p99: n.runnable_wait.quantile(0.99).map(|ns| ns / 1e3),
            ilb_cpu_ms_per_s: ms_per_s(spent[Balancing::Ilb.index()]),
            ilb_busiest_share: ilb_top as f64 / measured_ns as f64,
            ilb_domains_ms_per_s: ms_per_s(ilb_work[Work::Domains.index()]),
            ilb_blocked_ms_per_s: ms_per_s(ilb_work[Work::Blocked.index()]),
            ilb_rq_lock_ms_per_s: ms_per_s(ilb_work[Work::RqLock.index()]),
            newidle_cpu_ms_per_s: ms_per_s(spent[Balancing::Newidle.index()]),
            periodic_cpu_ms_per_s: ms_per_s(spent[Balancing::Periodic.index()]),
            ilb_passes_aborted: n.ilb_aborted,
            next_balance_advance: n.advance.iter().map(|(&k, &v)| (k, v)).collect(),
            next_balance_ahead: n.ahead.iter().map(|(&k, &v)| (k, v)).collect(),
            due_jiffy_fraction: (n.busy_jiffies > 0)
                .then(|| n.due_jiffies as f64 / n.busy_jiffies as f64),
            balance_costs: self.costs.describe(),
        }
    }
}

/// The first fifth of a run, whose kernel-function time the cost model does not count: every
/// CPU starts at time 0 and takes the shared lines at once.
pub fn warmup(sim_ns: u64) -> u64 {
    sim_ns / 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_keeps_every_value_within_its_bucket() {
        for v in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            1000,
            123_456,
            10_000_000,
            u64::MAX / 4,
        ] {
            let (lo, hi) = Hist::range(Hist::bucket(v));
            assert!(lo <= v.max(1) && v.max(1) < hi, "{v}: [{lo}, {hi})");
            assert!(
                (hi - lo) * 32 <= lo.max(32),
                "{v}: bucket [{lo}, {hi}) too wide"
            );
        }
    }

    #[test]
    fn quantiles_come_from_the_ranks() {
        let mut h = Hist::default();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.len(), 100);
        let p50 = h.quantile(0.5).unwrap();
        let p99 = h.quantile(0.99).unwrap();
        assert!((48_500.0..=51_500.0).contains(&p50), "{p50}");
        assert!((97_000.0..=101_000.0).contains(&p99), "{p99}");
    }
}
