//! The cost model against this host: its predictions for the contention bench's two-core
//! pairs (T1, T3, T8a), made the way the bench makes its measurements.
//!
//! The bench's rig: a 2-CPU machine, each CPU alone in its LLC, irq time on; CPU 0 runs
//! idle enter+exit pairs (`nohz_balance_enter_idle`, `nohz_balance_exit_idle`) back to back
//! while CPU 1 runs the same pairs (the antagonist), or spins on nothing shared (`quiet`). Here
//! the same rig runs on the counting build, on two threads, each access through
//! [`super::cost`]'s model in time order (the CPU whose clock is behind goes next, access by
//! access), and a pair's time is its accesses' (waiting included). A little noise between
//! pairs (`PAIR_JITTER_NS`) keeps the two clocks out of step and is not counted.
//! `ci/engine-validate.sh` runs the bench and this back to back and compares them.
//!
//! Two calibration patterns ride along, with no crate code in them: both CPUs incrementing
//! one line, and two lines in turn (`rmw-1line`, `rmw-2lines`, per round of RMWs; the bench's
//! T1 times the same). They show how the model's transfer and hold rules alone compare with
//! the host, apart from what the crate's pairs add.
//!
//! The model charges the atomic accesses only; the rest of a crate pair's work (its branches,
//! calls, loads and plain stores, which the model's hits price at nothing) is a parameter of
//! the rig, `work` ns per pair, spent half after each call and counted in the pair's time.
//! `ci/engine-validate.sh` takes it from the bench's T2, which no target here is: the
//! kernel's pair on a quiet machine less two bare locked RMWs.

use super::cost::CostParams;

/// One variant's prediction: nanoseconds per pair on CPU 0.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// The bench's name for it (`T1 patched`, ...).
    pub name: &'static str,
    /// Nanoseconds per pair on CPU 0.
    pub ns: f64,
}

/// Pairs CPU 0 runs before the measured ones (the lines settle into their rhythm).
#[cfg(nohz_linecount)]
const WARM: usize = 200;
/// Pairs CPU 0 runs measured.
#[cfg(nohz_linecount)]
const PAIRS: usize = 5_000;
/// Each CPU's own time after each pair, drawn uniform from 0 to this (seeded): the timed
/// loop's work and the host's noise. Without it the two clocks lock into a rhythm (both cores
/// trading the line on every access, or one holding it for several pairs), which flips with a
/// few nanoseconds either way, as the bench's T8b notes found on the real cores; the noise
/// averages over the rhythms as the real cores do. CPU 0's noise is left out of its time per
/// pair: the model counts the atomic accesses only, and a mean of 5 ns added to a 12 ns quiet
/// pair put every sticky prediction 1.2 times the bench's.
#[cfg(nohz_linecount)]
const PAIR_JITTER_NS: u64 = 10;

/// T8a's sticky design: `Sharded` with each CPU's bit in a shard of its own.
#[cfg(nohz_linecount)]
type Sticky = nohz::Sharded<2, nohz::sharded::Contiguous<1>>;

/// Every variant the bench's T1, T3 and T8a lines compare, predicted with `params`, each crate
/// pair doing `work` ns of work besides its atomic accesses (the `mask-only` floor and the
/// calibration patterns are atomic accesses alone).
#[cfg(nohz_linecount)]
pub fn predict(params: CostParams, work: u64) -> Vec<Prediction> {
    use nohz::{Legacy, Patched, Scalable};
    vec![
        Prediction {
            name: "legacy",
            ns: pairs::<Legacy>(params, true, work),
        },
        Prediction {
            name: "patched",
            ns: pairs::<Patched>(params, true, work),
        },
        Prediction {
            name: "scalable",
            ns: pairs::<Scalable>(params, true, work),
        },
        Prediction {
            name: "mask-only",
            ns: mask_pairs(params),
        },
        Prediction {
            name: "sticky",
            ns: pairs::<Sticky>(params, true, work),
        },
        Prediction {
            name: "sticky-quiet",
            ns: pairs::<Sticky>(params, false, work),
        },
        Prediction {
            name: "rmw-1line",
            ns: rmw_rounds::<1>(params),
        },
        Prediction {
            name: "rmw-2lines",
            ns: rmw_rounds::<2>(params),
        },
    ]
}

/// The host's calibration patterns as the bench's T1 measured them (the means over
/// placements, in ns): a locked RMW on a line of the core's own while the other core does the
/// same (`rmw-local`), both cores incrementing one line (`rmw-1line`, per round) and two lines
/// in turn (`rmw-2lines`, per round).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// `rmw-local`: ns per locked RMW on an owned line.
    pub rmw_local: f64,
    /// `rmw-1line`: ns per round, both cores incrementing one line.
    pub rmw_1line: f64,
    /// `rmw-2lines`: ns per round, both cores incrementing two lines in turn.
    pub rmw_2lines: f64,
}

/// How far the model's patterns may stay from the bench's once fitted (in per cent) before
/// [`fit`] stops early: closer than the nanosecond steps of its parameters allow is noise.
#[cfg(nohz_linecount)]
const FIT_CLOSE_PCT: f64 = 2.0;

/// The model's host parameters fitted to the bench's calibration patterns, the others taken
/// from `base`. Each pattern answers for one parameter, and no target the bench checks is
/// fitted on:
/// - `t_rmw` is `rmw-local`;
/// - `t_local` (the `t_x` of two cores) is scaled until the model's `rmw-2lines` is the
///   bench's: two lines in turn move a line on nearly every access, so the pattern is a
///   transfer's price;
/// - `leave_pct` is the one of 0..=100 whose `rmw-1line` comes nearest the bench's: the later
///   a request reaches the core that has the line, the more RMWs that core runs on it first,
///   and on some hosts (AMD EPYC under KVM) a core hammering one line keeps it for many
///   (`rmw-1line` the same at a 120 ns and at a 500 ns round trip).
///
/// The two interact (a late request also moves `rmw-2lines`), so they are fitted in turn,
/// three rounds at most. Deterministic: the same patterns give the same parameters.
#[cfg(nohz_linecount)]
pub fn fit(base: CostParams, cal: Calibration) -> CostParams {
    let round = |ns: f64| (ns.round() as u64).clamp(1, 100_000);
    let mut p = CostParams {
        t_rmw: round(cal.rmw_local),
        t_local: round(cal.rmw_2lines / 2.0),
        ..base
    };
    let off = |model: f64, bench: f64| (model / bench - 1.0).abs() * 100.0;
    for _ in 0..3 {
        // t_x: the model's two lines scale with it.
        for _ in 0..4 {
            let two = rmw_rounds::<2>(p);
            if off(two, cal.rmw_2lines) <= FIT_CLOSE_PCT {
                break;
            }
            let next = round(p.t_local as f64 * cal.rmw_2lines / two);
            if next == p.t_local {
                break;
            }
            p.t_local = next;
        }
        // leave_pct: the model's one line falls as it rises; the first value at or under the
        // bench's, or the one before it, whichever is nearer.
        let one = |leave_pct| rmw_rounds::<1>(CostParams { leave_pct, ..p });
        let (mut lo, mut hi) = (0u64, 100u64);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if one(mid) <= cal.rmw_1line {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        p.leave_pct = if lo > 0 && off(one(lo - 1), cal.rmw_1line) < off(one(lo), cal.rmw_1line) {
            lo - 1
        } else {
            lo
        };
        if off(rmw_rounds::<2>(p), cal.rmw_2lines) <= FIT_CLOSE_PCT {
            break;
        }
    }
    p
}

/// Without the counting build there is no model to fit.
#[cfg(not(nohz_linecount))]
pub fn fit(base: CostParams, _cal: Calibration) -> CostParams {
    base
}

/// Without the counting build there is no model to ask.
#[cfg(not(nohz_linecount))]
pub fn predict(_params: CostParams, _work: u64) -> Vec<Prediction> {
    Vec::new()
}

/// A 2-CPU machine as the bench's rig builds it: each CPU alone in its LLC, irq time on.
#[cfg(nohz_linecount)]
fn rig<P: nohz::Policy>() -> nohz_testing::World<P, 2, { nohz::mask_words(2) }> {
    let w =
        nohz_testing::World::<P, 2, { nohz::mask_words(2) }>::booted(2, nohz::Jiffies::new(1000));
    w.p.set_llc_size(1);
    w.m.rebuild_sched_domains(&*w.p)
        .expect("one LLC per CPU is a valid topology");
    w.m.enable_sched_clock_irqtime();
    w
}

/// CPU 0's nanoseconds per `nohz_balance_enter_idle` + `nohz_balance_exit_idle` pair under
/// `P`, CPU 1 running pairs too if `contended`; each CPU spends `work` ns besides the
/// accesses, half after each call (counted, unlike the noise between pairs).
#[cfg(nohz_linecount)]
fn pairs<P: nohz::Policy>(params: CostParams, contended: bool, work: u64) -> f64 {
    let w = rig::<P>();
    let nr = w.m.nr_cpu_ids();
    let cpus = [0, 1].map(|i| nr.cpu(i).expect("2 CPUs"));
    let (first, second) = (work / 2, work - work / 2);
    alternate(params, contended, |i: usize| {
        w.m.nohz_balance_enter_idle(cpus[i], &*w.p);
        if first > 0 {
            lockstep::advance(i, first);
        }
        w.m.nohz_balance_exit_idle(cpus[i], &*w.p);
        if second > 0 {
            lockstep::advance(i, second);
        }
    })
}

/// T3's floor under churn: the idle-mask bit set, the O1 fence, the bit cleared.
#[cfg(nohz_linecount)]
fn mask_pairs(params: CostParams) -> f64 {
    let w = rig::<nohz::Scalable>();
    let nr = w.m.nr_cpu_ids();
    let cpus = [0, 1].map(|i| nr.cpu(i).expect("2 CPUs"));
    let mask = w.m.nohz().idle_cpus_mask();
    alternate(params, true, |i: usize| {
        mask.set(cpus[i]);
        nohz::sync::NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
        mask.clear(cpus[i]);
    })
}

/// A calibration round: both CPUs increment `L` lines in turn, one locked RMW each.
#[cfg(nohz_linecount)]
fn rmw_rounds<const L: usize>(params: CostParams) -> f64 {
    use nohz::sync::{Ordering::SeqCst, linecount::AtomicU64};
    let lines: [nohz::CachePadded<AtomicU64>; L] =
        std::array::from_fn(|_| nohz::CachePadded::new(AtomicU64::new(0)));
    alternate(params, true, |_| {
        for line in &lines {
            line.fetch_add(1, SeqCst);
        }
    })
}

/// Runs `one(i)` as CPU `i` on two threads, access by access in time order: each access
/// waits until its CPU's clock is the earlier one (CPU 1 runs only if `contended`), then goes
/// through the model and moves that clock on by its cost. As on the bench's two cores, CPU 1
/// can take a line between two of CPU 0's accesses in one pair. CPU 0's nanoseconds per pair.
#[cfg(nohz_linecount)]
fn alternate(params: CostParams, contended: bool, one: impl Fn(usize) + Sync) -> f64 {
    use lockstep::{State, observer};
    use nohz::sync::linecount;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let _one = lockstep::one_at_a_time();
    *lockstep::lock() = Some(State::new(params, contended));
    let stop = AtomicBool::new(false);
    let per_pair = std::thread::scope(|s| {
        if contended {
            s.spawn(|| {
                linecount::observe(Some(observer));
                let mut rng = fastrand::Rng::with_seed(2);
                while !stop.load(Relaxed) {
                    linecount::as_cpu(1, || one(1));
                    lockstep::advance(1, rng.u64(0..=PAIR_JITTER_NS));
                }
                linecount::observe(None);
                lockstep::finish(1);
            });
        }
        linecount::observe(Some(observer));
        let mut start = 0;
        let mut noise = 0;
        let mut rng = fastrand::Rng::with_seed(1);
        for k in 0..WARM + PAIRS {
            if k == WARM {
                start = lockstep::clock(0);
            }
            linecount::as_cpu(0, || one(0));
            let gap = rng.u64(0..=PAIR_JITTER_NS);
            if k >= WARM {
                noise += gap;
            }
            lockstep::advance(0, gap);
        }
        let end = lockstep::clock(0) - noise;
        linecount::observe(None);
        stop.store(true, Relaxed);
        lockstep::finish(0);
        (end - start) as f64 / PAIRS as f64
    });
    *lockstep::lock() = None;
    per_pair
}

/// The two CPUs' shared clock and model, and the turn between them.
#[cfg(nohz_linecount)]
mod lockstep {
    use super::CostParams;
    use crate::engine::cost::Model;
    use nohz::sync::linecount::Access;
    use std::sync::{Condvar, Mutex, MutexGuard};

    /// The model, each CPU's clock, which CPUs still run, and which one holds the turn.
    pub struct State {
        model: Model,
        clock: [u64; 2],
        running: [bool; 2],
        /// The CPU whose last modelled access may not have run yet: the observer runs before
        /// the atomic operation, so the CPU keeps the turn until it next calls in (its next
        /// access, `advance` or `finish`), and the operations run in the model's order. Without
        /// it the other CPU's next access could run first, read what the model says it cannot
        /// have seen yet, and take another path (Scalable's reads before its writes): the
        /// prediction then moved from run to run.
        holder: Option<usize>,
    }

    impl State {
        pub fn new(params: CostParams, contended: bool) -> State {
            State {
                model: Model::new(params, vec![0, 0]),
                clock: [0; 2],
                running: [true, contended],
                holder: None,
            }
        }

        fn my_turn(&self, cpu: usize) -> bool {
            let other = 1 - cpu;
            self.holder != Some(other)
                && (!self.running[other] || (self.clock[cpu], cpu) < (self.clock[other], other))
        }

        /// CPU `cpu` calls in: its last access has run, and the other CPU, if it waits on
        /// the turn, may go (the caller wakes it).
        fn back(&mut self, cpu: usize) {
            if self.holder == Some(cpu) {
                self.holder = None;
            }
        }
    }

    static STATE: Mutex<Option<State>> = Mutex::new(None);
    static TURN: Condvar = Condvar::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// The lockstep state is one per process: held while a prediction runs, so that two at
    /// once (tests run in parallel) do not share it.
    pub fn one_at_a_time() -> MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lock() -> MutexGuard<'static, Option<State>> {
        STATE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// CPU `cpu`'s clock.
    pub fn clock(cpu: usize) -> u64 {
        lock().as_ref().map_or(0, |s| s.clock[cpu])
    }

    /// CPU `cpu` spends `ns` on its own work.
    pub fn advance(cpu: usize, ns: u64) {
        if let Some(s) = lock().as_mut() {
            s.back(cpu);
            s.clock[cpu] += ns;
        }
        TURN.notify_all();
    }

    /// CPU `cpu` stops: the other runs on alone.
    pub fn finish(cpu: usize) {
        if let Some(s) = lock().as_mut() {
            s.back(cpu);
            s.running[cpu] = false;
        }
        TURN.notify_all();
    }

    /// The counting build's observer: waits for this access's turn, then models it. The
    /// access runs after this returns, still on the turn (`State::holder`).
    pub fn observer(a: Access) {
        #[cfg(test)]
        stall::now_and_then();
        let mut g = lock();
        if let Some(s) = g.as_mut() {
            s.back(a.cpu);
        }
        // The other CPU may wait on this one's hold: wake it before this one waits too.
        TURN.notify_all();
        while g.as_ref().is_some_and(|s| !s.my_turn(a.cpu)) {
            g = TURN.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(s) = g.as_mut() {
            let horizon = s.clock[a.cpu];
            s.model.set_time(s.clock[a.cpu], horizon);
            let (cost, _) = s.model.access(a.cpu, a.line, a.write, a.rmw);
            s.clock[a.cpu] += cost;
            s.holder = Some(a.cpu);
        }
        drop(g);
        TURN.notify_all();
        #[cfg(test)]
        stall::now_and_then();
    }

    /// Test only: a busy host, which holds a thread up now and then on either side of its
    /// modelled access (before the observer takes the turn, and between the model and the
    /// operation). It slows a prediction and must not change it: the turn, not the host's
    /// timing, orders the operations.
    #[cfg(test)]
    pub mod stall {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

        /// Whether the observer stalls now and then.
        pub static ON: AtomicBool = AtomicBool::new(false);
        static SEEN: AtomicUsize = AtomicUsize::new(0);

        /// Every third call, 20 µs of spinning: the thread keeps its core, so the other one
        /// runs meanwhile wherever the turn lets it.
        pub(super) fn now_and_then() {
            if ON.load(Relaxed) && SEEN.fetch_add(1, Relaxed).is_multiple_of(3) {
                let t = std::time::Instant::now();
                while t.elapsed() < std::time::Duration::from_micros(20) {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

#[cfg(all(test, nohz_linecount))]
mod tests {
    use super::*;

    #[test]
    fn contention_costs_transfers_and_a_quiet_pair_costs_hits() {
        let p = predict(CostParams::default(), 0);
        let ns = |name: &str| p.iter().find(|x| x.name == name).unwrap().ns;
        // Quiet, every access hits (two locked RMWs); under churn a shared line costs a
        // transfer per pair.
        assert!(ns("sticky-quiet") < 20.0);
        assert!((ns("sticky") - ns("sticky-quiet")).abs() < 1.0);
        assert!(ns("mask-only") > 70.0);
        // Patched's blind stores are one more contended line than Scalable's pair.
        assert!(ns("patched") > ns("scalable") + 50.0);
        assert!(ns("legacy") >= ns("patched"));
        // Two lines in turn cost a transfer per RMW; one line, no more than that.
        assert!(ns("rmw-2lines") > 2.0 * 60.0);
        assert!(ns("rmw-1line") <= ns("rmw-2lines") / 2.0);
    }

    #[test]
    fn a_quiet_pair_costs_its_accesses_and_not_the_noise_between_pairs() {
        // One locked RMW on a line no other CPU touches: every measured pair is one hit.
        use nohz::sync::{Ordering::SeqCst, linecount::AtomicU64};
        let line = nohz::CachePadded::new(AtomicU64::new(0));
        let params = CostParams::default();
        let ns = alternate(params, false, |_| {
            line.fetch_add(1, SeqCst);
        });
        assert_eq!(ns, params.t_rmw as f64);
    }

    #[test]
    fn a_pairs_other_work_is_counted_in_its_time_and_the_floor_has_none() {
        // Quiet, the sticky pair is its two locked RMWs on lines of its own, plus its work.
        let params = CostParams::default();
        assert_eq!(pairs::<Sticky>(params, false, 0), 2.0 * params.t_rmw as f64);
        assert_eq!(
            pairs::<Sticky>(params, false, 5),
            2.0 * params.t_rmw as f64 + 5.0
        );
        // Under churn the work moves the two CPUs' rhythm too; the floor and the calibration
        // patterns, which run no crate code, are the same with or without it.
        let ns = |p: &[Prediction], name: &str| p.iter().find(|x| x.name == name).unwrap().ns;
        let (without, with) = (predict(params, 0), predict(params, 6));
        for name in ["mask-only", "rmw-1line", "rmw-2lines"] {
            assert_eq!(ns(&with, name), ns(&without, name), "{name}");
        }
        assert!(ns(&with, "sticky") > ns(&without, "sticky") + 5.0);
    }

    #[test]
    fn a_cpu_keeps_the_turn_until_its_modelled_access_has_run() {
        use nohz::sync::linecount::Access;
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let access = |cpu| Access {
            cpu,
            line: 1,
            write: true,
            rmw: true,
        };
        let _one = lockstep::one_at_a_time();
        *lockstep::lock() = Some(lockstep::State::new(CostParams::default(), true));
        // CPU 0's access is modelled, which puts its clock past CPU 1's: CPU 1 is next by the
        // clocks, but CPU 0's operation runs only after the observer returns.
        lockstep::observer(access(0));
        let done = AtomicBool::new(false);
        let early = std::thread::scope(|s| {
            s.spawn(|| {
                lockstep::observer(access(1));
                done.store(true, SeqCst);
                lockstep::finish(1);
            });
            // Time for CPU 1 to go ahead if it could (not a bound: on the fixed rig it never
            // can, whatever the host's timing).
            std::thread::sleep(std::time::Duration::from_millis(100));
            let early = done.load(SeqCst);
            // CPU 0 calls in: its operation has run, and CPU 1 takes its turn.
            lockstep::advance(0, 0);
            early
        });
        *lockstep::lock() = None;
        assert!(!early, "CPU 1 went on before CPU 0 had called in");
        assert!(done.load(SeqCst));
    }

    #[test]
    fn the_hosts_timing_does_not_move_a_prediction() {
        // Scalable reads the shared lines before it writes them, so its accesses depend on the
        // order in which the two threads' operations really run: a thread descheduled between
        // its modelled access and the operation must not let the other one's go first.
        use std::sync::atomic::Ordering::Relaxed;
        let run = || pairs::<nohz::Scalable>(CostParams::default(), true, 0);
        let quiet = run();
        lockstep::stall::ON.store(true, Relaxed);
        let stalled = [run(), run()];
        lockstep::stall::ON.store(false, Relaxed);
        assert_eq!(stalled, [quiet; 2]);
    }

    #[test]
    fn the_fit_finds_the_parameters_that_made_the_patterns() {
        // Patterns the model itself gives at known host parameters: the fit recovers them,
        // and the targets' predictions with them.
        let host = CostParams {
            t_local: 110,
            t_rmw: 10,
            leave_pct: 70,
            ..CostParams::default()
        };
        let cal = Calibration {
            rmw_local: 10.0,
            rmw_1line: rmw_rounds::<1>(host),
            rmw_2lines: rmw_rounds::<2>(host),
        };
        let got = fit(CostParams::default(), cal);
        assert_eq!(got.t_rmw, 10);
        assert!(got.t_local.abs_diff(110) <= 3, "t_x {}", got.t_local);
        assert!(got.leave_pct.abs_diff(70) <= 3, "leave {}", got.leave_pct);
        let near = |a: f64, b: f64| (a / b - 1.0).abs() < 0.05;
        assert!(near(
            pairs::<nohz::Legacy>(got, true, 0),
            pairs::<nohz::Legacy>(host, true, 0)
        ));
        assert!(near(mask_pairs(got), mask_pairs(host)));
        // The same patterns, the same fit.
        assert_eq!(fit(CostParams::default(), cal), got);
    }

    #[test]
    fn a_dearer_rmw_transfer_and_a_later_request_move_the_calibration_patterns() {
        let ns = |p: &[Prediction], name: &str| p.iter().find(|x| x.name == name).unwrap().ns;
        let base = predict(CostParams::default(), 0);
        // A locked RMW's transfer at 125 % of t_x: two lines in turn cost that much more.
        let dear = predict(
            CostParams {
                rmw_transfer_pct: 125,
                ..CostParams::default()
            },
            0,
        );
        assert!(ns(&dear, "rmw-2lines") > 1.15 * ns(&base, "rmw-2lines"));
        assert!(ns(&dear, "legacy") > ns(&base, "legacy"));
        // A request that reaches the holder later lets it run more RMWs on one line first.
        let late = predict(
            CostParams {
                leave_pct: 75,
                ..CostParams::default()
            },
            0,
        );
        assert!(ns(&late, "rmw-1line") < ns(&base, "rmw-1line"));
    }
}
