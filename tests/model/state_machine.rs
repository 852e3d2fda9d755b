//! The NOHZ state machine against the reference model, for every policy but `ShardedHint`
//! (`sharded_hint.rs`) (`proptest-state-machine`: the model is the reference state machine,
//! the crate the system under test), plus replays of fixed sequences through the same checks
//! and tests that the generators reach the behaviours the properties are about. The policies
//! beyond the kernel that change observables (`Paced`, the posted fixes) run against the
//! model taught what each changes (`reference::Beyond`); `Scalable` and `ShardedStrict`
//! against the kernel's.

use crate::machine::{Sut, beyond, check, pol};
use crate::reference::{
    BALANCE, Beyond, Call, Config, Decision, Ev, Model, Outcome, PassEnd, Pol, STATS, Step,
    StopFacts, Wk,
};
use crate::strategy;
use nohz::{
    HegdeHk, Khan, KhanNextBalance, KhanRoundRobin, Legacy, Paced, Patched, Policy, Scalable,
};
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
        strategy::config(pol::<P>(), beyond::<P>())
            .prop_map(Model::new)
            .boxed()
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

/// The posted fixes: a quarter of the kernel's runs each (each changes one or two branches
/// of `Patched`, which runs the full count; the generators reach them in this many runs:
/// `the_generators_reach_what_each_beyond_kernel_policy_changes`).
fn beyond_config() -> ProptestConfig {
    crate::config(500)
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

    /// Paced against the model taught what it changes (`reference::Beyond`): its kick asks
    /// STATS with BALANCE only when `nohz.next_blocked` is due, NEXT alone only while
    /// `nohz.next_balance` is more than a jiffy ahead, and `find_new_ilb` scans from the
    /// hashed start. (As many runs as the kernel's: its BALANCE-alone pass is rare in them.)
    #[test]
    fn paced_machine_follows_the_model(sequential STEPS => NohzSm<Paced>);
}

// The posted fixes, each against the model taught what it changes (`reference::Beyond`),
// under the same projection as Patched.
prop_state_machine! {
    #![proptest_config(beyond_config())]

    /// Khan's patch 1: on the model's machines (16 CPUs at most, under one word of idle
    /// CPUs) the scaled deadline is `Patched`'s.
    #[test]
    fn khan_next_balance_machine_follows_the_model(sequential STEPS => NohzSm<KhanNextBalance>);

    /// Khan's patch 2: `find_new_ilb` round robin from `nohz.ilb_cpu_last`.
    #[test]
    fn khan_round_robin_machine_follows_the_model(sequential STEPS => NohzSm<KhanRoundRobin>);

    /// Both of Khan's patches.
    #[test]
    fn khan_machine_follows_the_model(sequential STEPS => NohzSm<Khan>);

    /// Hegde's patch: the kick's early return when no registered CPU is a housekeeping one.
    #[test]
    fn hegde_hk_machine_follows_the_model(sequential STEPS => NohzSm<HegdeHk>);
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

/// [`machine`] for the crate's policy `P`, with what the model changes for it.
pub fn machine_for<P: Policy>(nr: usize, nohz_full: &[usize]) -> Config {
    Config {
        beyond: beyond::<P>(),
        ..machine(pol::<P>(), nr, nohz_full)
    }
}

/// `nr` CPUs in one LLC, NO_HZ_FULL as given (also out of housekeeping), jiffies 50 before
/// the wrap; a kernel policy.
pub fn machine(policy: Pol, nr: usize, nohz_full: &[usize]) -> Config {
    let full: Vec<bool> = (0..nr).map(|c| nohz_full.contains(&c)).collect();
    Config {
        policy,
        beyond: Beyond::default(),
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
    let (_, model) = replay::<P>(machine_for::<P>(4, &[3]), &SEED_001);
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

/// Paced through the model, step by step: a pass with STATS, then, balancing due again before
/// `nohz.next_blocked`, a kick with BALANCE alone whose pass balances CPU 1 and counts no
/// warning (the branch the generated runs reach least often).
#[test]
fn a_paced_balance_kick_without_stats_follows_the_model() {
    let steps = [
        Step::IdleEnter(1),
        Step::IdleStop(1),
        Step::RunTask(0),
        Step::RunTask(0),
        Step::Advance(1),
        Step::Tick(0),
        Step::DeliverIpi(1),
        Step::Softirq(1),
        Step::Advance(4),
        Step::Tick(0),
    ];
    let (mut sut, mut model) = replay::<Paced>(machine_for::<Paced>(2, &[]), &steps);
    assert_eq!(
        model.out.decision,
        Some(Some(Decision::Kick {
            flags: BALANCE,
            outcome: Outcome::Sent(1)
        }))
    );
    for step in [Step::DeliverIpi(1), Step::Softirq(1)] {
        model.apply(step);
        sut.apply(step, false);
        check(&sut, &model);
    }
    assert!(model.out.events.contains(&Ev::Balance {
        by: 1,
        cpu: 1,
        idle: true
    }));
    assert!(
        !model
            .out
            .events
            .iter()
            .any(|e| matches!(e, Ev::Decay { .. })),
        "no blocked-load refresh"
    );
    assert_eq!(model.warn_kind.get(&Wk::BalanceWithoutStats), None);
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

/// What the model's beyond-kernel branches (`reference::Beyond`) did in generated runs of
/// `P`: steps whose outcome they changed (the same step from the same state on the kernel's
/// model ends otherwise), and ILB passes that ran with BALANCE and no STATS.
#[derive(Debug, Default)]
struct BeyondReach {
    changed: u32,
    balance_only_passes: u32,
}

fn beyond_reach<P: Policy>(runs: usize) -> BeyondReach {
    let mut runner = TestRunner::deterministic();
    let mut reach = BeyondReach::default();
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
            let mut kernel = state.clone();
            kernel.cfg.beyond = Beyond::default();
            if let Step::Softirq(c) = step {
                let cpu = &state.cpus[c];
                if cpu.idle_balance && cpu.nohz_idle_balance & (BALANCE | STATS) == BALANCE {
                    reach.balance_only_passes += 1;
                }
            }
            state.apply(step);
            kernel.apply(step);
            let same = state.out == kernel.out
                && state.cpus == kernel.cpus
                && state.warn_kind == kernel.warn_kind
                && (
                    state.next_balance,
                    state.needs_update,
                    state.has_blocked_load,
                ) == (
                    kernel.next_balance,
                    kernel.needs_update,
                    kernel.has_blocked_load,
                );
            reach.changed += u32::from(!same);
        }
    }
    reach
}

/// The generators reach what each beyond-kernel policy changes, in fewer runs than its
/// property test makes (so those tests are not vacuous): every one but Khan's patch 1, whose term is 0
/// on the model's machines of at most 16 CPUs (the model then checks that it is `Patched`
/// there; `tests/posted.rs` pins the term on 200 CPUs).
#[test]
fn the_generators_reach_what_each_beyond_kernel_policy_changes() {
    let runs = 200;
    let paced = beyond_reach::<Paced>(runs);
    assert!(paced.changed > 0, "Paced: {paced:?}");
    assert!(paced.balance_only_passes > 0, "Paced: {paced:?}");
    for (name, reach) in [
        ("KhanRoundRobin", beyond_reach::<KhanRoundRobin>(runs)),
        ("Khan", beyond_reach::<Khan>(runs)),
        ("HegdeHk", beyond_reach::<HegdeHk>(runs)),
    ] {
        assert!(reach.changed > 0, "{name}: {reach:?}");
    }
    assert_eq!(beyond_reach::<KhanNextBalance>(runs).changed, 0);
}
