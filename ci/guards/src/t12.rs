//! T12 (issue 39, item 3): shared-line writes per busy tick and per idle transition, for every
//! policy, from the counting build (`--cfg nohz_linecount`): exact and host-independent.
//!
//! One thread plays 64 logical CPUs through a fixed pseudo-random schedule (the same for every
//! policy): CPUs go idle (`nohz_balance_enter_idle`, the tick stopped) and busy again
//! (`nohz_balance_exit_idle`), one jiffy passes every [`PER_JIFFY`] transitions, every busy CPU
//! then runs its tick's `nohz_balancer_kick`, and a kicked CPU takes its IPI
//! (`nohz_csd_ipi`) and runs its softirq's pass (`sched_balance_softirq`).
//!
//! A write is *shared* when it stores to or RMWs a line outside the writing CPU's own run
//! queue: the `nohz` line, the idle mask, another CPU's run queue (the kick's `nohz_flags`).
//! Each CPU's own run queue is the one line the kernel keeps per CPU; every other line some
//! other CPU reads or writes. The counts are per busy tick (the kick path, `kick_ilb`
//! included), per idle transition (an entry or an exit) and per kicked pass (the ILB's IPI and
//! softirq, printed, not gated: a pass runs on an idle CPU).
//!
//! The gate: a new design may add no shared write on the kick path or on idle entry or exit,
//! so `Paced`'s per-tick and per-transition counts are at or below `Patched`'s. And the count
//! must see a write when one is added: Khan's round robin stores `nohz.ilb_cpu_last` on every
//! pick, so its per-tick count must exceed `Patched`'s, or the measure is blind and fails.

use crate::N;
use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, Ipi, NewidleOutcome, Softirq, Topology,
};
use nohz::sync::linecount;
use nohz::{
    CpuId, HegdeHk, Khan, KhanNextBalance, KhanRoundRobin, KickDecision, KickOutcome, Legacy,
    Paced, Patched, Policy, Scalable,
};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Idle transitions between two jiffies.
const PER_JIFFY: u64 = 16;
/// Idle transitions measured, after [`WARM`] unmeasured ones.
const TRANSITIONS: u64 = 200_000;
const WARM: u64 = 4_000;

/// A platform with a clock and a deterministic balancer: each CPU's domains come due again
/// `interval(cpu)` jiffies after they were balanced (4 to 32: the kernel's base intervals for
/// domains of 4 to 32 CPUs), and an idle CPU keeps blocked load for its first refreshes.
struct Plat {
    jiffies: AtomicUsize,
}

impl Plat {
    fn interval(cpu: usize) -> usize {
        4 << (cpu % 4)
    }
}

impl Clock for Plat {
    fn jiffies(&self) -> nohz::Jiffies {
        nohz::Jiffies::new(self.jiffies.load(Relaxed))
    }
}
impl<const M: usize> CpuState<M> for Plat {
    fn need_resched(&self, _cpu: CpuId<M>) -> bool {
        false
    }
    // One thread drives every CPU: no answer to give.
    fn this_cpu(&self) -> Option<CpuId<M>> {
        None
    }
    fn synchronize_rcu(&self) {}
}
impl<const M: usize> Ipi<M> for Plat {
    fn send_nohz_ipi(&self, _from: CpuId<M>, _to: CpuId<M>) {}
}
impl<const M: usize> Softirq<M> for Plat {}
impl<const M: usize> Topology<M> for Plat {
    fn has_sched_domain(&self, _cpu: CpuId<M>) -> bool {
        true
    }
    fn llc_leader(&self, cpu: CpuId<M>) -> Option<CpuId<M>> {
        // LLCs of 8 CPUs.
        nohz::NrCpuIds::<M>::full().cpu(cpu.index() & !7).ok()
    }
}
impl<const M: usize> Balance<M> for Plat {
    fn update_blocked_averages(&self, _by: CpuId<M>, cpu: CpuId<M>) -> bool {
        // Some blocked load is left after three of every four refreshes.
        (self.jiffies.load(Relaxed) + cpu.index()) % 4 != 0
    }
    fn balance_domains(&self, _by: CpuId<M>, cpu: CpuId<M>, _idle: CpuIdleType) -> nohz::Jiffies {
        self.jiffies().add(Self::interval(cpu.index()))
    }
    fn newidle_balance(&self, _cpu: CpuId<M>, _t0: u64) -> NewidleOutcome {
        NewidleOutcome {
            pulled_task: false,
            next_balance: None,
        }
    }
}

/// Shared writes over the measured schedule.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Writes {
    /// Busy ticks run, and shared writes their kick paths made.
    pub ticks: u64,
    pub tick_writes: u64,
    /// Idle transitions (entries plus exits), and their shared writes.
    pub transitions: u64,
    pub transition_writes: u64,
    /// Kicked passes (IPI + softirq on the ILB), and their shared writes.
    pub passes: u64,
    pub pass_writes: u64,
}

impl Writes {
    pub fn per_tick(&self) -> f64 {
        self.tick_writes as f64 / self.ticks.max(1) as f64
    }
    pub fn per_transition(&self) -> f64 {
        self.transition_writes as f64 / self.transitions.max(1) as f64
    }
    pub fn per_pass(&self) -> f64 {
        self.pass_writes as f64 / self.passes.max(1) as f64
    }
}

struct Sim<P: Policy> {
    m: Box<nohz::Machine<P, N, 1>>,
    p: Plat,
    cpus: Vec<CpuId<N>>,
    rqs: Vec<Range<usize>>,
}

impl<P: Policy> Sim<P> {
    fn new() -> Self {
        let p = Plat {
            jiffies: AtomicUsize::new(1000),
        };
        let m = Box::new(nohz::Machine::<P, N, 1>::new());
        if let Err(e) = m.init(N, 0, &p) {
            eprintln!("T12: init failed: {e}");
            std::process::exit(2);
        }
        let cpus: Vec<_> = (0..N).map(|i| m.cpu(i).expect("initialised")).collect();
        let rqs = cpus.iter().map(|&c| linecount::lines_of(m.rq(c))).collect();
        for &c in &cpus {
            m.rq(c).set_curr_is_idle(false);
            m.rq(c).set_nr_running(1);
        }
        drop(linecount::take());
        Sim { m, p, cpus, rqs }
    }

    /// Runs `f` as CPU `i`; returns its result and the shared writes it made.
    fn run<R>(
        &self,
        i: usize,
        f: impl FnOnce(&nohz::Machine<P, N, 1>, CpuId<N>, &Plat) -> R,
    ) -> (R, u64) {
        let r = linecount::as_cpu(i, || f(&self.m, self.cpus[i], &self.p));
        let own = &self.rqs[i];
        let writes = linecount::take()
            .iter()
            .filter(|a| a.write && !own.contains(&a.line))
            .count() as u64;
        (r, writes)
    }
}

/// The xorshift the schedule draws from.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Runs the schedule under `P`.
pub fn writes<P: Policy>() -> Writes {
    let s = Sim::<P>::new();
    let mut w = Writes::default();
    let mut idle = [false; N];
    // Busy CPUs with a second task queued (their tick asks for BALANCE when it is due).
    let mut two = [false; N];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for n in 0..WARM + TRANSITIONS {
        let measured = n >= WARM;
        // About 40 % of the CPUs idle: a CPU goes idle with probability 0.4 when drawn busy
        // and wakes with probability 0.6 when drawn idle (CPU 0 stays busy, so a tick always
        // runs).
        let i = 1 + (next(&mut x) % (N as u64 - 1)) as usize;
        let r = next(&mut x) % 10;
        let flip = if idle[i] { r < 6 } else { r < 4 };
        if flip {
            let (_, wr) = if idle[i] {
                s.run(i, |m, c, p| {
                    m.rq(c).set_curr_is_idle(false);
                    m.rq(c).set_nr_running(1);
                    m.nohz_balance_exit_idle(c, p);
                })
            } else {
                s.run(i, |m, c, p| {
                    m.rq(c).set_nr_running(0);
                    m.rq(c).set_curr_is_idle(true);
                    m.nohz_balance_enter_idle(c, p);
                })
            };
            idle[i] = !idle[i];
            if !idle[i] {
                two[i] = next(&mut x) % 4 == 0;
            }
            if measured {
                w.transitions += 1;
                w.transition_writes += wr;
            }
        }
        if n % PER_JIFFY != PER_JIFFY - 1 {
            continue;
        }
        s.p.jiffies.fetch_add(1, Relaxed);
        for b in 0..N {
            if idle[b] {
                continue;
            }
            let nr = if two[b] { 2 } else { 1 };
            let (d, wr) = s.run(b, |m, c, p| {
                m.rq(c).set_nr_running(nr);
                m.nohz_balancer_kick(c, p)
            });
            if measured {
                w.ticks += 1;
                w.tick_writes += wr;
            }
            if let KickDecision::Kick {
                outcome: KickOutcome::Sent(ilb),
                ..
            } = d
            {
                let j = ilb.index();
                let (_, a) = s.run(j, |m, c, p| m.nohz_csd_ipi(c, p));
                let (_, b2) = s.run(j, |m, c, p| m.sched_balance_softirq(c, p));
                if measured {
                    w.passes += 1;
                    w.pass_writes += a + b2;
                }
            }
        }
    }
    w
}

/// Runs T12, prints one line per policy and the verdict; true if it passes.
pub fn run() -> bool {
    let rows: Vec<(&str, Writes)> = vec![
        ("legacy", writes::<Legacy>()),
        ("patched", writes::<Patched>()),
        ("scalable", writes::<Scalable>()),
        ("khan-next-balance", writes::<KhanNextBalance>()),
        ("khan-round-robin", writes::<KhanRoundRobin>()),
        ("khan", writes::<Khan>()),
        ("hegde-hk", writes::<HegdeHk>()),
        ("paced", writes::<Paced>()),
    ];
    for (name, w) in &rows {
        println!(
            "T12 {name}: shared-line writes per busy tick {:.4}, per idle transition {:.4}, per \
             kicked pass {:.2} ({} ticks, {} transitions, {} passes)",
            w.per_tick(),
            w.per_transition(),
            w.per_pass(),
            w.ticks,
            w.transitions,
            w.passes
        );
    }
    let get = |n: &str| rows.iter().find(|r| r.0 == n).expect("measured").1;
    let (patched, paced, rr) = (get("patched"), get("paced"), get("khan-round-robin"));
    let new_tick = (paced.per_tick() - patched.per_tick()).max(0.0);
    let new_transition = (paced.per_transition() - patched.per_transition()).max(0.0);
    let sees = rr.per_tick() > patched.per_tick();
    let ok = new_tick == 0.0 && new_transition == 0.0 && sees;
    println!(
        "T12 paced over patched: +{new_tick:.4} shared writes per busy tick, +{new_transition:.4} \
         per idle transition (target 0); the count sees khan-round-robin's nohz.ilb_cpu_last \
         store ({:.4} > {:.4} per tick: {sees}) -> {}",
        rr.per_tick(),
        patched.per_tick(),
        if ok { "pass" } else { "fail" }
    );
    println!("T12 new_shared_writes={:.4}", new_tick + new_transition);
    ok
}
