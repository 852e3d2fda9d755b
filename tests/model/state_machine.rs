//! The NOHZ state machine against the reference model, for both policies
//! (`proptest-state-machine`: the model is the reference state machine, the crate the system
//! under test), plus replays of fixed sequences through the same checks and a test that the
//! generators reach the behaviours the properties are about.

use crate::machine::{Sut, check, pol};
use crate::reference::{
    Call, Config, Decision, Ev, Model, Outcome, PassEnd, Pol, STATS, Step, StopFacts, Wk,
};
use crate::strategy;
use nohz::{Legacy, Patched, Policy, Scalable};
use nohz_testing::ShardedStrict;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use std::marker::PhantomData;

/// The reference state machine and its test, for policy `P`.
pub struct NohzSm<P>(PhantomData<P>);

impl<P: Policy> ReferenceStateMachine for NohzSm<P> {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        strategy::config(pol::<P>()).prop_map(Model::new).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Step> {
        strategy::steps(state)
    }

    fn apply(mut state: Model, transition: &Step) -> Model {
        state.apply(*transition);
        state
    }

    /// Always: a step the kernel cannot take in the current state is skipped by both sides
    /// (`Model::valid` says which). The generator draws only valid steps; what this buys is
    /// shrinking: proptest-state-machine stops shrinking the machine at the first
    /// simplification a precondition refuses, and with a smaller machine (or another
    /// topology) many steps are no longer possible.
    fn preconditions(_state: &Model, _transition: &Step) -> bool {
        true
    }
}

impl<P: Policy> StateMachineTest for NohzSm<P> {
    type SystemUnderTest = Sut<P>;
    type Reference = Self;

    fn init_test(model: &Model) -> Sut<P> {
        Sut::new(&model.cfg)
    }

    fn apply(mut sut: Sut<P>, model: &Model, transition: Step) -> Sut<P> {
        sut.apply(transition, model.out.skipped);
        sut
    }

    fn check_invariants(sut: &Sut<P>, model: &Model) {
        check(sut, model);
    }
}

/// Transitions per run.
const STEPS: std::ops::RangeInclusive<usize> = 1..=60;

fn sm_config() -> ProptestConfig {
    crate::config(2000)
}

prop_state_machine! {
    #![proptest_config(sm_config())]

    /// Patched (the reference behaviour) step by step against the model.
    #[test]
    fn patched_machine_follows_the_model(sequential STEPS => NohzSm<Patched>);

    /// Legacy (v6.19) step by step against the model, whose Legacy branches say exactly where
    /// it differs.
    #[test]
    fn legacy_machine_follows_the_model(sequential STEPS => NohzSm<Legacy>);

    /// Scalable (Patched with the nohz flags read before written) against the same model, under
    /// the same projection as Patched: its saving must be invisible.
    #[test]
    fn scalable_machine_follows_the_model(sequential STEPS => NohzSm<Scalable>);

    /// Sharded with contiguous shards, ascending ILB choice and the Validated emptiness test
    /// against the same model, under the same projection as Patched: identical observables
    /// (spec sharded-idle.md §2.9, the strict differential).
    #[test]
    fn sharded_strict_machine_follows_the_model(sequential STEPS => NohzSm<ShardedStrict>);
}

/// Runs `steps` on a fresh machine and model, checking every property after each.
pub fn replay<P: Policy>(cfg: Config, steps: &[Step]) -> (Sut<P>, Model) {
    let mut model = Model::new(cfg);
    let mut sut = Sut::<P>::new(&model.cfg);
    check(&sut, &model);
    for &step in steps {
        assert!(model.valid(&step), "{step:?} cannot happen here");
        model.apply(step);
        sut.apply(step, false);
        check(&sut, &model);
    }
    (sut, model)
}

/// `nr` CPUs in one LLC, NO_HZ_FULL as given (also out of housekeeping), jiffies 50 before
/// the wrap.
pub fn machine(policy: Pol, nr: usize, nohz_full: &[usize]) -> Config {
    let full: Vec<bool> = (0..nr).map(|c| nohz_full.contains(&c)).collect();
    Config {
        policy,
        nr,
        llc: vec![0; nr],
        isolated: vec![false; nr],
        housekeeping: full.iter().map(|&f| !f).collect(),
        nohz_full: full,
        asym_prio: vec![None; nr],
        asym_capacity: false,
        start: usize::MAX - 50,
    }
}

/// Seed 001's scenario: NO_HZ_FULL CPU 3 stops its tick while running one task (at irq exit),
/// the task ends and the CPU goes idle.
const SEED_001: [Step; 5] = [
    Step::RunTask(3),
    Step::Irq(3),
    Step::StopTask(3),
    Step::IdleEnter(3),
    Step::IdleStop(3),
];

fn seed_001_facts<P: Policy>() -> StopFacts {
    let (_, model) = replay::<P>(machine(pol::<P>(), 4, &[3]), &SEED_001);
    model.out.stop.expect("an idle stop attempt")
}

#[test]
fn the_model_shows_where_legacy_breaks_seed_001() {
    let patched = seed_001_facts::<Patched>();
    let legacy = seed_001_facts::<Legacy>();
    let stopped_earlier = StopFacts {
        attempted: true,
        was_stopped: true,
        registered_before: false,
        stopped_after: true,
        in_mask_after: true,
    };
    assert_eq!(patched, stopped_earlier);
    assert_eq!(
        legacy,
        StopFacts {
            in_mask_after: false,
            ..stopped_earlier
        },
        "Legacy: stopped by the NO_HZ_FULL path before, so never registered"
    );
}

/// Where the stop attempt never ran (a softirq pending), neither policy registers, and the
/// seed 001 property makes no claim.
#[test]
fn no_claim_where_the_stop_attempt_never_ran() {
    for p in [Pol::Patched, Pol::Legacy] {
        let mut steps = vec![Step::Set {
            cpu: 3,
            knob: crate::reference::Knob::SoftirqSched,
            on: true,
        }];
        steps.extend(SEED_001);
        let facts = match p {
            Pol::Patched => replay::<Patched>(machine(p, 4, &[3]), &steps).1,
            Pol::Legacy => replay::<Legacy>(machine(p, 4, &[3]), &steps).1,
        }
        .out
        .stop
        .unwrap();
        assert!(!facts.attempted && facts.stopped_after && !facts.in_mask_after);
    }
}

/// A kick crosses the jiffies wrap: CPU 1 registers, CPU 0 runs two tasks and its tick kicks
/// CPU 1, which balances on the idle CPUs' behalf.
#[test]
fn a_kick_and_its_ilb_pass_across_the_wrap() {
    let steps = [
        Step::IdleEnter(1),
        Step::IdleStop(1),
        Step::RunTask(0),
        Step::RunTask(0),
        Step::Advance(60),
        Step::Tick(0),
        Step::DeliverIpi(1),
        Step::Softirq(1),
    ];
    let (sut, model) = replay::<Patched>(machine(Pol::Patched, 2, &[]), &steps);
    assert!(model.now > usize::MAX as u128, "crossed the wrap");
    assert_eq!(sut.m.nohz().next_blocked().get(), 60 - 51 + 32);
    assert!(model.out.events.contains(&Ev::Balance {
        by: 1,
        cpu: 1,
        idle: true
    }));
}

/// How often each behaviour a property is about shows up in generated runs (model only).
#[derive(Debug, Default)]
struct Seen {
    sent: u32,
    rode_along: u32,
    already_pending: u32,
    no_ilb: u32,
    nobody: u32,
    idle_tick: u32,
    aborted: u32,
    newilb_pass: u32,
    stats_pass: u32,
    ilb_for_others: u32,
    legacy_break: u32,
    patched_stopped_earlier: u32,
    deliver_after_delay: u32,
    two_pending: u32,
    spurious_csd: u32,
    wrong_cpu: u32,
    dying_flush: u32,
    wrapped: u32,
}

fn tally(seen: &mut Seen, before: &Model, step: Step, after: &Model) {
    if let Some(Some(d)) = after.out.decision {
        match d {
            Decision::Kick { outcome, .. } => match outcome {
                Outcome::Sent(_) => seen.sent += 1,
                Outcome::RodeAlong(_) => seen.rode_along += 1,
                Outcome::AlreadyPending(_) => seen.already_pending += 1,
                Outcome::NoIlb => seen.no_ilb += 1,
                Outcome::CsdBusy(_) => {}
            },
            Decision::EmptyMask | Decision::NobodyTickless => seen.nobody += 1,
            Decision::IdleTick => seen.idle_tick += 1,
            Decision::NoFlags => {}
        }
    }
    if after.out.newilb_pass == Some(Some(PassEnd::Completed)) {
        seen.newilb_pass += 1;
    }
    if after.out.stats_pass_completed {
        seen.stats_pass += 1;
    }
    if after
        .out
        .events
        .iter()
        .any(|e| matches!(*e, Ev::Balance { by, cpu, .. } if by != cpu))
    {
        seen.ilb_for_others += 1;
    }
    if let Step::Softirq(c) = step
        && before.cpus[c].nohz_idle_balance & STATS != 0
        && !after.out.stats_pass_completed
        && before.cpus[c].idle_balance
        && !after.cpus[c].idle()
    {
        seen.aborted += 1;
    }
    if let Some(f) = after.out.stop
        && f.attempted
        && f.was_stopped
        && !f.registered_before
        && f.stopped_after
    {
        match (after.cfg.policy, f.in_mask_after) {
            (Pol::Legacy, false) => seen.legacy_break += 1,
            (Pol::Patched, true) => seen.patched_stopped_earlier += 1,
            _ => {}
        }
    }
    if let Step::DeliverIpi(_) = step {
        seen.deliver_after_delay += 1;
    }
    if before.pending_ipis().len() >= 2 {
        seen.two_pending += 1;
    }
    if let Step::SpuriousCsd(_) = step {
        seen.spurious_csd += 1;
    }
    if let Step::Remote {
        call: Call::EnterIdle(_) | Call::ExitIdle(_),
        ..
    } = step
        && after.warn_kind.get(&Wk::WrongCpu) > before.warn_kind.get(&Wk::WrongCpu)
    {
        seen.wrong_cpu += 1;
    }
    if let Step::Dying(c) = step
        && before.cpus[c].csd_busy
    {
        seen.dying_flush += 1;
    }
    if after.now > usize::MAX as u128 && before.now <= usize::MAX as u128 {
        seen.wrapped += 1;
    }
}

fn coverage<P: Policy>(runs: usize) -> Seen {
    let mut runner = TestRunner::deterministic();
    let mut seen = Seen::default();
    for _ in 0..runs {
        let mut state = NohzSm::<P>::init_state()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        for _ in 0..*STEPS.end() {
            let step = NohzSm::<P>::transitions(&state)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            assert!(
                state.valid(&step),
                "the generator drew {step:?}, invalid here"
            );
            let before = state.clone();
            state.apply(step);
            tally(&mut seen, &before, step, &state);
        }
    }
    seen
}

/// The generators reach every behaviour the properties talk about, for both policies, in a
/// few hundred runs (so the property tests are not vacuous).
#[test]
fn the_generators_reach_every_interesting_behaviour() {
    let patched = coverage::<Patched>(200);
    let legacy = coverage::<Legacy>(200);
    for (name, seen) in [("patched", &patched), ("legacy", &legacy)] {
        let counts = [
            ("sent", seen.sent),
            ("rode_along", seen.rode_along),
            ("already_pending", seen.already_pending),
            ("no_ilb", seen.no_ilb),
            ("nobody tickless", seen.nobody),
            ("idle_tick", seen.idle_tick),
            ("aborted ILB pass", seen.aborted),
            ("NEWILB pass", seen.newilb_pass),
            ("STATS pass", seen.stats_pass),
            ("ILB balancing others", seen.ilb_for_others),
            ("deliveries", seen.deliver_after_delay),
            ("two IPIs pending", seen.two_pending),
            ("spurious csd", seen.spurious_csd),
            ("wrong cpu", seen.wrong_cpu),
            ("dying flush", seen.dying_flush),
            ("jiffies wrap", seen.wrapped),
        ];
        for (what, n) in counts {
            assert!(n > 0, "{name}: never reached {what}: {seen:?}");
        }
    }
    assert!(
        legacy.legacy_break > 0,
        "Legacy's seed 001 break: {legacy:?}"
    );
    assert!(
        patched.patched_stopped_earlier > 0,
        "Patched registering an earlier-stopped tick: {patched:?}"
    );
}
