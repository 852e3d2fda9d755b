//! The scenario, driven by CPU 0's control task one step at a time, and its checks. Every
//! phase ends on a count (CPU 0's ticks, tasks, CPU states), never on a time.
//!
//! 1. CPUs 2 and 3 (NO_HZ_FULL) each run one task until their tick stops under it, then idle
//!    with the tick already stopped; CPU 1 (housekeeping) idles. (It idles rather than running
//!    a long task of its own: `find_new_ilb` only picks an idle housekeeping CPU, so with CPU
//!    1 busy no CPU could run the idle balance for CPUs 2 and 3 under either policy.)
//! 2. A burst of [`BURST`] tasks lands on CPU 0 (busy with the control task, housekeeping,
//!    timekeeper), between ILB passes and with the balance of CPUs 2 and 3 due. For
//!    [`BURST_TICKS`] of CPU 0's ticks, each tick counts the idle tickless CPUs missing from
//!    `nohz.idle_cpus_mask`; at the last one the tasks still waiting on CPU 0 and those pulled
//!    onto CPUs 2 and 3 are counted. Then the burst is killed.
//! 3. CPU 1 goes offline, stays parked for [`PARK_TICKS`] of CPU 0's ticks, comes back, idles,
//!    and must be kicked and start a task of a second burst (then that burst is killed).
//! 4. Once quiet: no kick bit or busy csd left, the warnings, the counters.

use crate::checks;
use crate::kernel::{self, CPUS, FOREVER, KICKS_SENT, Kernel, Kind, Task, VIOLATIONS, cpus, hp};
use core::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use nohz::Policy;

/// Tasks in the first burst.
pub const BURST: usize = 12;
/// CPU 0 ticks the first burst is watched for.
pub const BURST_TICKS: u64 = 300;
/// CPU 0 ticks CPU 1 stays parked.
pub const PARK_TICKS: u64 = 25;
/// Tasks in the second burst (they run until CPU 1 has started one).
const BURST2: usize = 6;
/// CPU 0 ticks any waiting phase may take before it gives up (and a check fails).
const CAP_TICKS: u64 = 2_500;

static PHASE: AtomicU8 = AtomicU8::new(0);
static PHASE_START: AtomicU64 = AtomicU64::new(0);
static CAPPED: AtomicU64 = AtomicU64::new(0);
static SAMPLING: AtomicU64 = AtomicU64::new(0);
static INVISIBLE: AtomicU64 = AtomicU64::new(0);
static WAITING: AtomicU64 = AtomicU64::new(0);
static PULLED_23: AtomicU64 = AtomicU64::new(0);
static BASE: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

fn ticks0() -> u64 {
    CPUS[0].ticks.load(Relaxed)
}

fn pulled_23() -> u64 {
    cpus()
        .filter(|&i| i >= 2)
        .map(|i| CPUS[i].pulled_in.load(Relaxed))
        .sum()
}

/// On every tick of CPU 0 (in its timer interrupt): the visibility sample while the first
/// burst is watched, and the burst's counts at its last tick.
pub fn on_cpu0_tick<P: Policy>(k: &Kernel<P>) {
    let left = SAMPLING.load(Relaxed);
    if left == 0 {
        return;
    }
    let invisible = cpus()
        .skip(1)
        .map(|i| checks::idle_tickless(k, i))
        .filter(|&(tickless, in_mask)| tickless && !in_mask)
        .count();
    INVISIBLE.fetch_add(invisible as u64, Relaxed);
    if left == 1 {
        WAITING.store(CPUS[0].rq.lock().of_generation(1) as u64, Relaxed);
        PULLED_23.store(pulled_23() - BASE[0].load(Relaxed), Relaxed);
    }
    SAMPLING.store(left - 1, Relaxed);
}

fn next(phase: u8) {
    PHASE.store(phase, Relaxed);
    PHASE_START.store(ticks0(), Relaxed);
}

/// Waits on `cond`, or gives up after [`CAP_TICKS`] (counted as a capped phase).
fn reached(cond: bool) -> bool {
    if cond {
        return true;
    }
    if ticks0() - PHASE_START.load(Relaxed) > CAP_TICKS {
        CAPPED.fetch_add(1, Relaxed);
        return true;
    }
    false
}

fn task(work: u32, generation: u32, pinned: bool, kind: Kind) -> Task {
    Task {
        work,
        generation,
        pinned,
        kind,
    }
}

/// The tasks queued before any CPU runs: CPU 0's control task, and on each NO_HZ_FULL CPU
/// one task that runs until its tick stops under it. (Queued later, a NO_HZ_FULL CPU could
/// idle first and register in the idle mask, and its tick, stopped while it then runs, would
/// never take it out again: the first busy tick is what does that.)
pub fn boot_tasks<P: Policy>(k: &Kernel<P>, full: &[usize]) {
    kernel::enqueue(k, 0, &[task(FOREVER, 0, true, Kind::Control)]);
    for &i in full {
        kernel::enqueue(k, i, &[task(5_000, 0, true, Kind::UntilTickless)]);
    }
}

/// One step of the scenario (CPU 0's control task, interrupts off).
pub fn step<P: Policy>(k: &Kernel<P>) {
    let n = cpus().len();
    match PHASE.load(Relaxed) {
        0 | 1 => {
            let settled = (1..n).all(|i| {
                let (tickless, in_mask) = checks::idle_tickless(k, i);
                tickless && (i >= 2 || in_mask) && (i < 2 || CPUS[i].completed.load(Relaxed) > 0)
            });
            // The burst lands between ILB passes, with the balance of CPUs 2 and 3 due, so
            // the first pass that sees it balances them before CPU 1 (the walk ends on the ILB
            // CPU itself). A pass under way as it lands can visit CPU 2 before the tasks are
            // there, then pull for CPU 1: with CPU 1 busy no idle housekeeping CPU is left to
            // kick, and CPU 2 stays idle for the whole watch (1 boot in 5). Only this CPU's
            // tick kicks, and interrupts are off here, so none starts until the burst is
            // queued. (Not CPU 1's balance: under Legacy a pass renews it on every tick it
            // falls due, and it comes last in the walk anyway.)
            let quiet = checks::no_kick_in_flight() && (2..n).all(|i| checks::balance_due(k, i));
            if reached(settled && quiet) {
                BASE[0].store(pulled_23(), Relaxed);
                SAMPLING.store(BURST_TICKS, Relaxed);
                let burst = [task(FOREVER, 1, false, Kind::Work); BURST];
                kernel::enqueue(k, 0, &burst);
                next(2);
            }
        }
        2 if SAMPLING.load(Relaxed) == 0 => {
            kernel::KILLED.store(1, Relaxed);
            next(3);
        }
        3 => {
            let quiet = cpus().all(|i| CPUS[i].rq.lock().of_generation(1) == 0)
                && (1..n).all(|i| checks::curr_is_idle(k, i));
            if reached(quiet) {
                CPUS[1].hotplug.store(hp::DOWN, Relaxed);
                kernel::wake(1);
                next(4);
            }
        }
        4 if reached(CPUS[1].hotplug.load(Relaxed) == hp::PARKED) => next(5),
        5 if ticks0() - PHASE_START.load(Relaxed) >= PARK_TICKS => {
            CPUS[1].hotplug.store(hp::UP, Relaxed);
            kernel::wake(1);
            next(6);
        }
        6 => {
            let (tickless, in_mask) = checks::idle_tickless(k, 1);
            let back = CPUS[1].hotplug.load(Relaxed) == hp::NONE && tickless && in_mask;
            if reached(back) {
                BASE[1].store(CPUS[1].kicks_handled.load(Relaxed), Relaxed);
                BASE[2].store(CPUS[1].started.load(Relaxed), Relaxed);
                kernel::enqueue(k, 0, &[task(FOREVER, 2, false, Kind::Work); BURST2]);
                next(7);
            }
        }
        7 if reached(CPUS[1].started.load(Relaxed) > BASE[2].load(Relaxed)) => {
            kernel::KILLED.store(2, Relaxed);
            next(8);
        }
        8 => {
            let quiet = cpus().all(|i| CPUS[i].rq.lock().of_generation(2) == 0)
                && (1..n).all(|i| checks::curr_is_idle(k, i));
            if reached(quiet && checks::final_counts(k).0 == 0) {
                report(k);
            }
        }
        _ => {}
    }
}

struct Row {
    name: &'static str,
    value: u64,
    expect: &'static str,
    pass: bool,
}

fn report<P: Policy>(k: &Kernel<P>) -> ! {
    let patched = P::NAME == "patched";
    let (left, warnings, csd_without_kick, irqtime) = checks::final_counts(k);
    let sum = |f: fn(&kernel::Cpu) -> &AtomicU64| cpus().map(|i| f(&CPUS[i]).load(Relaxed)).sum();
    let handled: u64 = sum(|c| &c.kicks_handled);
    let sent = KICKS_SENT.load(Relaxed);
    let ilb = kernel::ILB_VISITS.load(Relaxed);
    let invisible = INVISIBLE.load(Relaxed);
    let pulled = PULLED_23.load(Relaxed);
    let waiting = WAITING.load(Relaxed);
    let half = (BURST / 2) as u64;
    let tickless_busy = (2..cpus().len())
        .filter(|&i| kernel::TICKLESS_BUSY[i].load(Relaxed))
        .count() as u64;
    let kicks1 = CPUS[1].kicks_handled.load(Relaxed) - BASE[1].load(Relaxed);
    let ran1 = CPUS[1].started.load(Relaxed) - BASE[2].load(Relaxed);
    let pick = |legacy: (&'static str, bool), patch: (&'static str, bool)| {
        if patched { patch } else { legacy }
    };
    let rows = [
        (
            "NO_HZ_FULL CPUs tickless while busy",
            tickless_busy,
            ("== 2", tickless_busy == 2),
            ("== 2", tickless_busy == 2),
        ),
        (
            "idle ticks invisible to the balancer",
            invisible,
            ("> 0", invisible > 0),
            ("== 0", invisible == 0),
        ),
        (
            "burst tasks pulled onto CPUs 2/3",
            pulled,
            ("== 0", pulled == 0),
            ("> 0", pulled > 0),
        ),
        (
            "burst tasks waiting on CPU 0 at tick 300",
            waiting,
            ("> 6", waiting > half),
            ("<= 6", waiting <= half),
        ),
        (
            "nohz kicks sent",
            sent,
            ("> 0", sent > 0),
            ("> 0", sent > 0),
        ),
        (
            "nohz kicks handled",
            handled,
            ("== sent", handled == sent),
            ("== sent", handled == sent),
        ),
        (
            "ILB balance passes for another idle CPU",
            ilb,
            ("== 0", ilb == 0),
            ("> 0", ilb > 0),
        ),
        (
            "irq time accounted (ns, nonzero)",
            irqtime,
            ("> 0", irqtime > 0),
            ("> 0", irqtime > 0),
        ),
        (
            "kick bits or busy csd left (lost kicks)",
            left,
            ("== 0", left == 0),
            ("== 0", left == 0),
        ),
        (
            "Warning::CsdWithoutKick",
            csd_without_kick,
            ("== 0", csd_without_kick == 0),
            ("== 0", csd_without_kick == 0),
        ),
        (
            "crate warnings, total",
            warnings,
            ("any", true),
            ("== 0", warnings == 0),
        ),
        (
            "hotplug/protocol violations",
            VIOLATIONS.load(Relaxed),
            ("== 0", VIOLATIONS.load(Relaxed) == 0),
            ("== 0", VIOLATIONS.load(Relaxed) == 0),
        ),
        (
            "CPU 1 kicks handled after coming back",
            kicks1,
            ("> 0", kicks1 > 0),
            ("> 0", kicks1 > 0),
        ),
        (
            "CPU 1 task picks after coming back",
            ran1,
            ("> 0", ran1 > 0),
            ("> 0", ran1 > 0),
        ),
        (
            "phases that hit their tick cap",
            CAPPED.load(Relaxed),
            ("== 0", CAPPED.load(Relaxed) == 0),
            ("== 0", CAPPED.load(Relaxed) == 0),
        ),
    ]
    .map(|(name, value, legacy, patch)| {
        let (expect, pass) = pick(legacy, patch);
        Row {
            name,
            value,
            expect,
            pass,
        }
    });
    crate::println!("\n== nohz unikernel, policy {} ==", P::NAME);
    crate::println!("{:<42} {:>12}  {:<10} result", "metric", "value", "expect");
    for r in &rows {
        let verdict = if r.pass { "PASS" } else { "FAIL" };
        crate::println!(
            "{:<42} {:>12}  {:<10} {}",
            r.name,
            r.value,
            r.expect,
            verdict
        );
    }
    let info = |name: &str, f: fn(&kernel::Cpu) -> &AtomicU64| {
        crate::print!("{name:<16}");
        for i in cpus() {
            crate::print!(" cpu{i}={:<8}", f(&CPUS[i]).load(Relaxed));
        }
        crate::println!();
    };
    info("ticks", |c| &c.ticks);
    info("tasks completed", |c| &c.completed);
    info("pulled in", |c| &c.pulled_in);
    info("task picks", |c| &c.started);
    info("kicks handled", |c| &c.kicks_handled);
    info("kick IPI, csd run before", |c| &c.kicks_flushed_before);
    info("idle entries", |c| &c.idle_entries);
    let ok = rows.iter().all(|r| r.pass);
    crate::println!("RESULT {} {}", P::NAME, if ok { "PASS" } else { "FAIL" });
    crate::hw::exit_qemu(if ok {
        crate::hw::EXIT_PASS
    } else {
        crate::hw::EXIT_FAIL
    })
}
