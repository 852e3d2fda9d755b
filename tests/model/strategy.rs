//! What proptest draws: a machine (`config`) and, from the model's current state, the next
//! transition (`steps`). Only transitions the kernel can take in that state are drawn (the
//! pending IPIs and raised softirqs are picked from, so they are delivered in any order and
//! after any delay). A shrunk sequence may still hold a step the kernel cannot take (a step
//! it depended on was deleted, or the machine shrank): both sides then skip it.
//!
//! Arms come simplest first: proptest's unions shrink towards earlier arms, so a shrunk
//! sequence reads as clocks, ticks and task changes wherever the failure allows.

use crate::reference::{Beyond, Call, Config, Ctx, KeyOp, Knob, Model, N, Pol, Step};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;

/// A machine of 1..=16 CPUs in 1..=4 cache groups, maybe with isolated CPUs, NO_HZ_FULL CPUs
/// (never the boot CPU: it keeps time), a smaller housekeeping set, an asym-packing domain and
/// asymmetric capacity; jiffies start just before the wrap.
///
/// Every per-CPU choice is drawn for all 16 CPUs and cut to `nr` afterwards, so shrinking `nr`
/// leaves the rest of the machine as it was.
pub fn config(policy: Pol, beyond: Beyond) -> impl Strategy<Value = Config> {
    let nr = prop_oneof![3 => 1usize..=4, 3 => 5usize..=8, 1 => 9usize..=16];
    // Each optional feature is off in half the machines, and sparse where on.
    let some = |p: f64| {
        (
            any::<bool>(),
            prop::collection::vec(prop::bool::weighted(p), N),
        )
            .prop_map(|(on, v)| if on { v } else { vec![false; N] })
    };
    (
        (nr, prop::collection::vec(1..N, 0..=3)),
        (some(0.2), some(0.3), some(0.2)),
        (
            some(0.6),
            prop::collection::vec(0u32..4, N),
            prop::bool::weighted(0.2),
        ),
        0usize..=60,
    )
        .prop_map(
            move |((nr, cuts), (isolated, full, not_hk), (in_asym, prio, asym_capacity), back)| {
                let llc = (0..nr)
                    .map(|c| cuts.iter().copied().filter(|&x| x <= c).max().unwrap_or(0))
                    .collect();
                let nohz_full: Vec<bool> = (0..nr).map(|c| c != 0 && full[c]).collect();
                Config {
                    policy,
                    beyond,
                    nr,
                    llc,
                    isolated: isolated[..nr].to_vec(),
                    housekeeping: (0..nr).map(|c| !nohz_full[c] && !not_hk[c]).collect(),
                    nohz_full,
                    asym_prio: (0..nr).map(|c| in_asym[c].then_some(prio[c])).collect(),
                    asym_capacity,
                    start: usize::MAX - back,
                }
            },
        )
}

/// One of `cands`, three times in four among the first three: failures are then mostly found
/// on low CPUs, so the machine can shrink to a few CPUs; shrinking picks earlier ones.
fn pick(cands: Vec<usize>) -> BoxedStrategy<usize> {
    let low = cands[..cands.len().min(3)].to_vec();
    prop_oneof![3 => select(low), 1 => select(cands)].boxed()
}

fn arm(
    arms: &mut Vec<(u32, BoxedStrategy<Step>)>,
    s: &Model,
    weight: u32,
    make: fn(usize) -> Step,
) {
    let cands: Vec<usize> = (0..s.nr()).filter(|&c| s.valid(&make(c))).collect();
    if !cands.is_empty() {
        arms.push((weight, pick(cands).prop_map(make).boxed()));
    }
}

/// Like `arm`, among the valid CPUs that also satisfy `also`.
fn arm_where(
    arms: &mut Vec<(u32, BoxedStrategy<Step>)>,
    s: &Model,
    weight: u32,
    make: fn(usize) -> Step,
    also: fn(&Model, usize) -> bool,
) {
    let cands: Vec<usize> = (0..s.nr())
        .filter(|&c| s.valid(&make(c)) && also(s, c))
        .collect();
    if !cands.is_empty() {
        arms.push((weight, pick(cands).prop_map(make).boxed()));
    }
}

/// The next transition, drawn from those valid in `s`.
pub fn steps(s: &Model) -> BoxedStrategy<Step> {
    let nr = s.nr();
    let mut arms: Vec<(u32, BoxedStrategy<Step>)> = Vec::new();
    arms.push((
        6,
        prop_oneof![
            6 => 1usize..=3,
            2 => 4usize..=40,
            1 => 59_990usize..=60_010,
        ]
        .prop_map(Step::Advance)
        .boxed(),
    ));
    const TICK: u64 = crate::reference::TICK_NS;
    arms.push((
        3,
        prop_oneof![
            2 => Just(TICK),
            2 => 1..=5 * TICK,
            1 => Just(40 * TICK),
        ]
        .prop_map(Step::AdvanceNs)
        .boxed(),
    ));
    // Ticks on busy CPUs are the ones that kick; ticks on idle CPUs mostly return at once.
    arm(&mut arms, s, 3, Step::Tick);
    arm_where(&mut arms, s, 8, Step::Tick, |s, c| !s.cpus[c].idle());
    arm(&mut arms, s, 6, Step::RunTask);
    // A task waking on a kicked ILB before its softirq runs: the pass aborts.
    arm_where(&mut arms, s, 2, Step::RunTask, |s, c| {
        s.cpus[c].softirq_raised && s.cpus[c].nohz_idle_balance != 0
    });
    arm(&mut arms, s, 6, Step::StopTask);
    arm(&mut arms, s, 7, Step::IdleEnter);
    arm(&mut arms, s, 8, Step::IdleStop);
    arm(&mut arms, s, 2, Step::GovernorStop);
    arm(&mut arms, s, 2, Step::DoIdle);
    arm(&mut arms, s, 6, Step::IdleExit);
    arm(&mut arms, s, 9, Step::DeliverIpi);
    arm(&mut arms, s, 9, Step::Softirq);
    arm(&mut arms, s, 4, Step::Irq);
    let newidle: Vec<usize> = (0..nr)
        .filter(|&c| {
            s.valid(&Step::Newidle {
                cpu: c,
                long_idle: false,
                walks: false,
                pulls: false,
                deadline: None,
            })
        })
        .collect();
    if !newidle.is_empty() {
        arms.push((
            4,
            // Most passes walk (refreshing their own blocked load first), and most walks pull
            // nothing; a pass that skips the walk cannot pull. Half find a base-domain
            // deadline, a few jiffies past (a busy period left `last_balance` old) or ahead.
            (
                pick(newidle),
                prop::bool::weighted(0.75),
                prop::bool::weighted(0.7),
                prop::bool::weighted(0.2),
                prop::option::weighted(0.5, -3i8..=3),
            )
                .prop_map(|(cpu, long_idle, walks, pulls, deadline)| Step::Newidle {
                    cpu,
                    long_idle,
                    walks,
                    pulls: walks && pulls,
                    deadline,
                })
                .boxed(),
        ));
    }
    // Nothing runs on a dead CPU (between its `cpu_dying` and its return).
    let live: Vec<usize> = (0..nr).filter(|&c| !s.cpus[c].dead).collect();
    arms.push((
        4,
        (
            pick(live.clone()),
            select(vec![
                Knob::BlockedRemains,
                Knob::NeedsTick,
                Knob::TimerBaseBusy,
                Knob::SoftirqSched,
                Knob::SoftirqTimer,
                Knob::TickDep,
                Knob::Ttwu,
                Knob::LowCapacity,
                Knob::Misfit,
            ]),
            any::<bool>(),
        )
            .prop_map(|(cpu, knob, on)| Step::Set { cpu, knob, on })
            .boxed(),
    ));
    arm(&mut arms, s, 1, Step::IdleRetain);
    arm(&mut arms, s, 1, Step::IdlePoll);
    arm(&mut arms, s, 1, Step::Deactivate);
    // A CPU going down with a kick still queued (the dying CPU's flush must handle it).
    arm_where(&mut arms, s, 1, Step::Deactivate, |s, c| s.cpus[c].csd_busy);
    arm(&mut arms, s, 3, Step::Dying);
    arm(&mut arms, s, 2, Step::Activate);
    for on in [true, false] {
        let cands: Vec<usize> = live
            .iter()
            .copied()
            .filter(|&c| s.cpus[c].isolated != on)
            .collect();
        if !cands.is_empty() {
            arms.push((
                1,
                pick(cands)
                    .prop_map(move |cpu| Step::Isolate { cpu, on })
                    .boxed(),
            ));
        }
    }
    arms.push((1, Just(Step::Rebuild).boxed()));
    arms.push((
        2,
        select(vec![KeyOp::Enable, KeyOp::Disable, KeyOp::Inc, KeyOp::Dec])
            .prop_map(Step::Key)
            .boxed(),
    ));
    arms.push((
        2,
        (
            pick(live.clone()),
            select(vec![Ctx::Hardirq, Ctx::Softirq, Ctx::Task, Ctx::Ksoftirqd]),
            any::<u16>(),
        )
            .prop_map(|(cpu, ctx, dt)| Step::IrqTime { cpu, ctx, dt })
            .boxed(),
    ));
    // Inputs the kernel warns about.
    arm(&mut arms, s, 1, Step::ExitOutsideIdle);
    arm(&mut arms, s, 1, Step::SpuriousCsd);
    if live.len() >= 2 {
        let n = live.len();
        let at = live.clone();
        arms.push((
            1,
            (0..n, 1..n, any::<bool>())
                .prop_map(move |(t, k, enter)| (at[t], at[(t + k) % n], enter))
                .prop_map(move |(target, from, enter)| Step::Remote {
                    from,
                    call: if enter {
                        Call::EnterIdle(target)
                    } else {
                        Call::ExitIdle(target)
                    },
                })
                .boxed(),
        ));
    }
    Union::new_weighted(arms).boxed()
}
