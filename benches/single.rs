//! Single-thread costs of the hot paths: `cargo bench --bench single`.
//!
//! Criterion, because these are nanosecond-scale operations on one thread with nothing shared:
//! what they need is many iterations per sample, a warm-up, outlier detection and a confidence
//! interval per estimate, which criterion gives, and it compares each run with the last one
//! saved. It cannot do what `benches/contention/` does (an antagonist on the other core and
//! the per-thread CPU-time gate), so the targets that are ratios under contention live there;
//! the numbers here explain them (absolute nanoseconds are informational, spec/performance.md).
//!
//! - `pair`: the uncontended `nohz_balance_enter_idle` + `nohz_balance_exit_idle` pair on CPU 0 (each CPU in an LLC of
//!   its own), every policy, tight and paced (an `lfence` before each pair), against a
//!   `lock or` + `lock and` on a private word;
//! - `balancer_kick_not_due`: a busy CPU 0's `nohz_balancer_kick` when balancing is not due,
//!   with one idle CPU registered and with the mask empty, every policy, against an empty
//!   `#[inline(never)]` function called the same way (T5a's quiet ratio; CI gates T5a on the
//!   instruction count instead);
//! - `cpumask_4096_empty`: `is_empty`, `first` and `weight` on an empty 4096-bit mask
//!   (`nr_cpu_ids` 4096), and the naive word-by-word early-exit loops T6 and T7 compare with;
//! - `irqtime_read`: `irqtime_enabled()` under both policies, `StaticKey::likely` alone, and a
//!   constant.

mod common;

use common::{CPUS, Masks, Rig, START};
use common::{mask_first, mask_is_empty, mask_weight, naive_first, naive_is_empty};
use common::{rmw_word, two_rmws};
use criterion::{Criterion, criterion_group, criterion_main};
use nohz::{IlbPass, KickDecision};
use nohz::{Jiffies, Legacy, NohzFlags, Patched, Policy, Scalable, StaticKey};
use nohz_stress::measure::pace;
use std::hint::black_box;
use std::time::Duration;

/// The uncontended pair, tight and paced, every policy, and the two-RMW baseline.
fn pair(c: &mut Criterion) {
    let patched = Rig::<Patched>::new();
    let scalable = Rig::<Scalable>::new();
    let legacy = Rig::<Legacy>::new();
    let word = rmw_word();
    let mut g = c.benchmark_group("pair");
    g.bench_function(Patched::NAME, |b| b.iter(|| patched.pair(0)));
    g.bench_function(Scalable::NAME, |b| b.iter(|| scalable.pair(0)));
    g.bench_function(Legacy::NAME, |b| b.iter(|| legacy.pair(0)));
    g.bench_function("two_locked_rmws", |b| b.iter(|| two_rmws(&word)));
    g.bench_function(format!("{}_paced", Patched::NAME), |b| {
        b.iter(|| {
            pace();
            patched.pair(0)
        })
    });
    g.bench_function(format!("{}_paced", Scalable::NAME), |b| {
        b.iter(|| {
            pace();
            scalable.pair(0)
        })
    });
    g.bench_function(format!("{}_paced", Legacy::NAME), |b| {
        b.iter(|| {
            pace();
            legacy.pair(0)
        })
    });
    g.bench_function("two_locked_rmws_paced", |b| {
        b.iter(|| {
            pace();
            two_rmws(&word)
        })
    });
    g.finish();
}

/// A kick path under test: called through a pointer laundered by `black_box`, like
/// [`empty`], so both pay the same call.
type KickFn<P> = fn(&Rig<P>) -> KickDecision<CPUS>;

/// `nohz_balancer_kick` on CPU 0, out of line.
#[inline(never)]
fn kick<P: Policy>(rig: &Rig<P>) -> KickDecision<CPUS> {
    rig.m.nohz_balancer_kick(rig.cpus[0], &*rig.plat)
}

/// The empty function the not-due path is compared with: same signature, does nothing.
#[inline(never)]
fn empty<P: Policy>(_rig: &Rig<P>) -> KickDecision<CPUS> {
    KickDecision::NoFlags
}

/// Puts `rig` where a busy CPU 0's tick finds balancing not due: CPU 1 idle and registered
/// (unless `mask_empty`: then it has left again), `nohz.needs_update` cleared by an ILB pass,
/// `nohz.next_balance` 100 ticks ahead. Returns the decision CPU 0's `nohz_balancer_kick`
/// takes there.
fn set_up_not_due<P: Policy>(rig: &Rig<P>, mask_empty: bool) -> KickDecision<CPUS> {
    let (m, p) = (&*rig.m, &*rig.plat);
    let [c0, c1] = rig.cpus;
    m.rq(c0).set_curr_is_idle(false);
    m.rq(c0).set_nr_running(1);
    m.nohz_balance_enter_idle(c1, p);
    // CPU 1's own balance is due in 100 ticks; a NEXT pass makes that nohz.next_balance and
    // clears needs_update.
    m.rq(c1).set_next_balance(Jiffies::new(START + 100));
    assert_eq!(
        m.nohz_idle_balance_pass(c1, NohzFlags::NEXT, p),
        IlbPass::Completed
    );
    if mask_empty {
        m.nohz_balance_exit_idle(c1, p);
    }
    let nohz = m.nohz();
    assert!(!nohz.needs_update(), "the NEXT pass cleared needs_update");
    assert!(p.clock().get().is_before(nohz.next_balance()), "not due");
    assert_eq!(m.nohz_idle_cpus().next().is_none(), mask_empty);
    m.nohz_balancer_kick(c0, p)
}

/// The not-due path of a policy, with the mask holding one CPU and empty.
fn kick_not_due<P: Policy>(c: &mut Criterion) {
    let mut g = c.benchmark_group("balancer_kick_not_due");
    for (state, mask_empty) in [("one_idle", false), ("mask_empty", true)] {
        let rig = Rig::<P>::new();
        let decision = set_up_not_due(&rig, mask_empty);
        let expected = if mask_empty && P::NAME == Legacy::NAME {
            KickDecision::NobodyTickless
        } else {
            KickDecision::NoFlags
        };
        assert_eq!(decision, expected, "{} {state}", P::NAME);
        // Both return the decision through memory, writing only its discriminant; reading the
        // whole value back (criterion's `black_box` of it) would stall on store forwarding
        // (about 4 ns here, in both variants alike), so only the discriminant is read back.
        let f = black_box(kick::<P> as KickFn<P>);
        g.bench_function(format!("{}/{state}", P::NAME), |b| {
            b.iter(|| matches!(f(&rig), KickDecision::NoFlags))
        });
        if P::NAME == Patched::NAME && !mask_empty {
            let e = black_box(empty::<P> as KickFn<P>);
            g.bench_function("empty_fn", |b| {
                b.iter(|| matches!(e(&rig), KickDecision::NoFlags))
            });
        }
    }
    g.finish();
}

/// The scans of an empty 4096-bit mask, and the naive loops.
fn cpumask(c: &mut Criterion) {
    let m = Masks::new();
    let mut g = c.benchmark_group("cpumask_4096_empty");
    g.bench_function("is_empty", |b| {
        b.iter(|| mask_is_empty(black_box(&m.mask), m.nr))
    });
    g.bench_function("naive_is_empty", |b| {
        b.iter(|| naive_is_empty(black_box(&m.words), m.nr.get()))
    });
    g.bench_function("first", |b| b.iter(|| mask_first(black_box(&m.mask), m.nr)));
    g.bench_function("naive_first", |b| {
        b.iter(|| naive_first(black_box(&m.words), m.nr.get()))
    });
    g.bench_function("weight", |b| {
        b.iter(|| mask_weight(black_box(&m.mask), m.nr))
    });
    g.finish();
}

/// `irqtime_enabled()` per policy, the static key alone, and a constant.
fn irqtime(c: &mut Criterion) {
    let patched = Rig::<Patched>::new();
    let legacy = Rig::<Legacy>::new();
    let key = black_box(Box::new(StaticKey::new_false()));
    key.enable(&patched.m.warnings().cpu_less());
    let mut g = c.benchmark_group("irqtime_read");
    g.bench_function(format!("{}_static_key", Patched::NAME), |b| {
        b.iter(|| patched.irqtime_read())
    });
    g.bench_function(format!("{}_flag_in_nohz_line", Legacy::NAME), |b| {
        b.iter(|| legacy.irqtime_read())
    });
    g.bench_function("static_key_likely", |b| {
        b.iter(|| black_box(&*key).likely())
    });
    g.bench_function("constant", |b| b.iter(|| black_box(true)));
    g.finish();
}

/// Short runs: about 1.3 s per function keeps the whole file near half a minute.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = pair, kick_not_due::<Patched>, kick_not_due::<Scalable>, kick_not_due::<Legacy>,
        cpumask, irqtime
}
criterion_main!(benches);
