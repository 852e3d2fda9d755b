//! Hot paths behind `#[inline(never)]`, `#[no_mangle]` wrappers, so that `ci/guards.sh` can
//! read their machine code (T9: no `cmpxchg` loop in enter/exit) and count their instructions
//! under cachegrind (T5a: the not-due `nohz_balancer_kick` path may not grow).
//!
//! `guards kick N` runs the not-due kick path N times (`kick-scalable N`: under `Scalable`,
//! `kick-paced N`: under `Paced`,
//! `kick-legacy N`: under `Legacy`); `guards pairs N` runs N enter+exit pairs under each
//! policy. Built with `--cfg nohz_linecount`, `guards t10` counts the stores a repeated idle
//! entry makes to shared lines (T10), and `guards t12` every policy's shared-line writes per
//! busy tick and per idle transition (T12), from the build's line-touch records.
//! `BSS_MACHINE` is a kernel's `static` machine, which must land in `.bss` (T11). The platform
//! is the smallest one that satisfies the traits, so the counts are the crate's own.

use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, Ipi, NewidleOutcome, Softirq, Topology,
};
use nohz::{CpuId, Jiffies, Legacy, Paced, Patched, Policy, Scalable};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[cfg(nohz_linecount)]
mod t12;
#[cfg(nohz_linecount)]
mod t8f;

const N: usize = 64;
type Cpu = CpuId<N>;

/// A kernel's `static` machine (T11: it must land in `.bss`, every field of a fresh machine
/// being zero, so that a large `NR_CPUS` costs no image size). Read at start-up so that it is
/// kept.
static BSS_MACHINE: nohz::machine!(Scalable, 1024) = nohz::Machine::new();

/// A platform with nothing in it but a clock: each CPU in an LLC of its own, nothing pending
/// (every CPU active: the machine's own mask says so from init). For machines of any size
/// (T8f's scale run has 768 CPUs).
pub struct Bare {
    jiffies: AtomicUsize,
}

impl Clock for Bare {
    fn jiffies(&self) -> Jiffies {
        Jiffies::new(self.jiffies.load(Relaxed))
    }
}
impl<const M: usize> CpuState<M> for Bare {
    fn need_resched(&self, _cpu: CpuId<M>) -> bool {
        false
    }
    // One thread drives every CPU here: no answer to give, so the wrong-CPU check is off.
    fn this_cpu(&self) -> Option<CpuId<M>> {
        None
    }
    fn synchronize_rcu(&self) {}
}
impl<const M: usize> Ipi<M> for Bare {
    fn send_nohz_ipi(&self, _from: CpuId<M>, _to: CpuId<M>) {}
}
impl<const M: usize> Softirq<M> for Bare {
    fn raise_sched_softirq(&self, _cpu: CpuId<M>) {}
}
impl<const M: usize> Topology<M> for Bare {
    fn has_sched_domain(&self, _cpu: CpuId<M>) -> bool {
        true
    }
    fn llc_leader(&self, cpu: CpuId<M>) -> Option<CpuId<M>> {
        // Each CPU in an LLC of its own, as the benchmarks' "pair" is defined.
        Some(cpu)
    }
}
impl<const M: usize> Balance<M> for Bare {
    fn update_blocked_averages(&self, _by: CpuId<M>, _cpu: CpuId<M>) -> bool {
        false
    }
    fn update_rq_clock(&self, _by: CpuId<M>, _cpu: CpuId<M>) {}
    fn balance_domains(&self, _by: CpuId<M>, _cpu: CpuId<M>, _idle: CpuIdleType) -> Jiffies {
        self.jiffies()
    }
    fn newidle_balance(&self, _cpu: CpuId<M>, _t0: u64) -> NewidleOutcome {
        NewidleOutcome {
            pulled_task: false,
            next_balance: None,
        }
    }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_enter_idle_patched(m: &nohz::machine!(Patched, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_enter_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_exit_idle_patched(m: &nohz::machine!(Patched, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_exit_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_enter_idle_legacy(m: &nohz::machine!(Legacy, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_enter_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_exit_idle_legacy(m: &nohz::machine!(Legacy, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_exit_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_enter_idle_scalable(m: &nohz::machine!(Scalable, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_enter_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_exit_idle_scalable(m: &nohz::machine!(Scalable, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_exit_idle(cpu, p);
}

/// The `Sharded` policy the guards read: the default layout (LLC shards of at most 64 CPUs),
/// `LocalFirst`, `Hint`; one shard per CPU here (each CPU its own LLC).
type ShardedDefault = nohz::Sharded<N>;

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_enter_idle_sharded(m: &nohz::machine!(ShardedDefault, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_enter_idle(cpu, p);
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn t9_exit_idle_sharded(m: &nohz::machine!(ShardedDefault, N), cpu: Cpu, p: &Bare) {
    m.nohz_balance_exit_idle(cpu, p);
}

/// The not-due path: a busy CPU's kick while `nohz.next_balance` is ahead, no blocked load
/// due and no update needed (returns `NoFlags`).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn t5a_kick_not_due_patched(m: &nohz::machine!(Patched, N), cpu: Cpu, p: &Bare) -> bool {
    matches!(m.nohz_balancer_kick(cpu, p), nohz::KickDecision::NoFlags)
}

/// The same not-due path under `Scalable` (one precomputed deadline word).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn t5a_kick_not_due_scalable(m: &nohz::machine!(Scalable, N), cpu: Cpu, p: &Bare) -> bool {
    matches!(m.nohz_balancer_kick(cpu, p), nohz::KickDecision::NoFlags)
}

/// The same not-due path under `Paced` (`Scalable`'s line: its not-due test is the same word;
/// issue 39 holds it to `Scalable`'s count, `ci/guards/t5a-baseline-paced.txt`).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn t5a_kick_not_due_paced(m: &nohz::machine!(Paced, N), cpu: Cpu, p: &Bare) -> bool {
    matches!(m.nohz_balancer_kick(cpu, p), nohz::KickDecision::NoFlags)
}

/// The same not-due path under `Legacy` (`nohz.nr_cpus` read first: one CPU is registered, so
/// the time checks follow).
#[unsafe(no_mangle)]
#[inline(never)]
pub fn t5a_kick_not_due_legacy(m: &nohz::machine!(Legacy, N), cpu: Cpu, p: &Bare) -> bool {
    matches!(m.nohz_balancer_kick(cpu, p), nohz::KickDecision::NoFlags)
}

/// Sets `m` up so that CPU 0's kick is on its not-due path: CPU 0 busy, and one BALANCE kick
/// (no ILB is found) moved `nohz.next_balance` to jiffies + 1 while time stands still.
fn not_due_setup<P: Policy>(m: &nohz::machine!(P, N), p: &Bare) -> Cpu {
    let cpu = m.cpu(0).unwrap_or_else(|_| std::process::exit(2));
    let rq = m.rq(cpu);
    rq.set_curr_is_idle(false);
    rq.set_nr_running(1);
    m.kick_ilb(cpu, nohz::NohzFlags::STATS | nohz::NohzFlags::BALANCE, p);
    cpu
}

fn machine<P: Policy>(p: &Bare) -> Box<nohz::machine!(P, N)> {
    let m = Box::new(<nohz::machine!(P, N)>::new());
    if let Err(e) = m.init(4, 0, p) {
        eprintln!("init failed: {e}");
        std::process::exit(2);
    }
    m
}

/// Stores to shared lines per repeated `nohz_balance_enter_idle` of a registered CPU (its tick
/// stopped, so after seed 001 every idle pass makes this call), averaged over 100 calls: from
/// the counting build's records, every write to a line outside the CPU's own runqueue (the
/// idle mask, the `nohz` scalars, an LLC's busy count, a shard's word or the summary).
#[cfg(nohz_linecount)]
fn repeat_entry_stores<P: Policy>(p: &Bare) -> u64 {
    use nohz::sync::linecount::{as_cpu, lines_of, take};
    let m = machine::<P>(p);
    let cpu = m.cpu(2).unwrap_or_else(|_| std::process::exit(2));
    m.nohz_balance_enter_idle(cpu, p);
    assert!(m.nohz_idle_test(cpu));
    let own = lines_of(m.rq(cpu));
    take();
    as_cpu(2, || {
        for _ in 0..100 {
            m.nohz_balance_enter_idle(black_box(cpu), p);
        }
    });
    let shared = take()
        .iter()
        .filter(|a| a.write && !own.contains(&a.line))
        .count() as u64;
    shared / 100
}

/// T5a's loop: sets `m` up for the not-due path (`not_due_setup`), checks that `kick` (one of
/// the `t5a_kick_not_due_*` wrappers) takes it, then calls it `n` times; the hits, which the
/// caller keeps alive. `ci/guards.sh` counts a run of `n` calls against a run of 0.
fn kick_loop<P: Policy>(
    m: &nohz::machine!(P, N),
    p: &Bare,
    n: u64,
    kick: fn(&nohz::machine!(P, N), Cpu, &Bare) -> bool,
) -> u64 {
    let cpu = not_due_setup(m, p);
    assert!(kick(m, cpu, p), "not the not-due path");
    let mut hits = 0u64;
    for _ in 0..n {
        hits += u64::from(kick(black_box(m), cpu, p));
    }
    hits
}

fn main() {
    assert_eq!(black_box(&BSS_MACHINE).nr_cpu_ids().get(), 0);
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let p = Bare {
        jiffies: AtomicUsize::new(black_box(1000)),
    };
    match mode.as_str() {
        "kick" | "kick-scalable" | "kick-legacy" | "kick-paced" => {
            let hits = match mode.as_str() {
                "kick-legacy" => {
                    let m = machine::<Legacy>(&p);
                    // Legacy reads nohz.nr_cpus first: with nobody registered it would stop
                    // there. So CPU 3 registers, and an ILB pass clears the flags its entry
                    // raised.
                    let idle = m.cpu(3).unwrap_or_else(|_| std::process::exit(2));
                    m.nohz_balance_enter_idle(idle, &p);
                    let all =
                        nohz::NohzFlags::STATS | nohz::NohzFlags::BALANCE | nohz::NohzFlags::NEXT;
                    m.nohz_idle_balance_pass(idle, all, &p);
                    kick_loop(&m, &p, n, t5a_kick_not_due_legacy)
                }
                "kick" => kick_loop(&machine::<Patched>(&p), &p, n, t5a_kick_not_due_patched),
                "kick-paced" => kick_loop(&machine::<Paced>(&p), &p, n, t5a_kick_not_due_paced),
                _ => kick_loop(&machine::<Scalable>(&p), &p, n, t5a_kick_not_due_scalable),
            };
            black_box(hits);
        }
        "pairs" => {
            let mp = machine::<Patched>(&p);
            let ml = machine::<Legacy>(&p);
            let ms = machine::<Scalable>(&p);
            let mh = machine::<ShardedDefault>(&p);
            let (cp, cl, cs) = (mp.cpu(1).unwrap(), ml.cpu(1).unwrap(), ms.cpu(1).unwrap());
            let ch = mh.cpu(1).unwrap();
            for _ in 0..n {
                t9_enter_idle_patched(black_box(&mp), cp, &p);
                t9_exit_idle_patched(black_box(&mp), cp, &p);
                t9_enter_idle_legacy(black_box(&ml), cl, &p);
                t9_exit_idle_legacy(black_box(&ml), cl, &p);
                t9_enter_idle_scalable(black_box(&ms), cs, &p);
                t9_enter_idle_scalable(black_box(&ms), cs, &p);
                t9_exit_idle_scalable(black_box(&ms), cs, &p);
                t9_enter_idle_sharded(black_box(&mh), ch, &p);
                t9_enter_idle_sharded(black_box(&mh), ch, &p);
                t9_exit_idle_sharded(black_box(&mh), ch, &p);
            }
        }
        #[cfg(nohz_linecount)]
        "t10" => {
            let patched = repeat_entry_stores::<Patched>(&p);
            let scalable = repeat_entry_stores::<Scalable>(&p);
            let ok = scalable == 0;
            println!(
                "T10 repeated nohz_balance_enter_idle on a registered CPU, shared-line stores per call: \
                 patched={patched} scalable={scalable} -> {}",
                if ok { "pass" } else { "fail" }
            );
            if !ok {
                std::process::exit(1);
            }
        }
        #[cfg(nohz_linecount)]
        "t8f" => {
            if !t8f::run() {
                std::process::exit(1);
            }
        }
        #[cfg(nohz_linecount)]
        "t12" => {
            if !t12::run() {
                std::process::exit(1);
            }
        }
        _ => {
            eprintln!(
                "usage: guards kick|pairs N (and t10, t8f, t12 in --cfg nohz_linecount builds)"
            );
            std::process::exit(2);
        }
    }
}
