//! Hostile inputs.
//!
//! - Inputs the kernel never sends get a clear error and change nothing: CPU ids and counts
//!   out of range, a second or bad `init`, an inconsistent topology, `StaticKey::dec` at zero
//!   (and a zero-word mask, which does not build: `compile_fail`).
//! - Inputs the kernel can send but warns about count the warning and then do what the kernel
//!   does: a path run for another CPU than the current one, idle exit without idle entry, a
//!   csd run with no kick bits, the boolean and counting key APIs mixed. Each is checked
//!   twice: the warning is counted where it belongs, and the state is what the kernel's (the
//!   model's, or the same call made from the right CPU) is.
//! - Nothing panics: any sequence of public calls with any arguments, in any state.

use crate::machine::{Sut, View, diff, sut_view};
use crate::reference::{Call, KeyOp, Knob, Pol, Step, Wk};
use crate::state_machine::{machine_for, replay};
use nohz::platform::TickHardware;
use nohz::{
    CpuError, CpuId, Jiffies, Legacy, NohzFlags, NrCpuIds, Patched, Policy, StaticKey,
    StaticKeyError, Warning, Warnings,
};
use nohz::{InitError, TopologyError};
use nohz_testing::for_each_policy;
use nohz_testing::{TestSleepable, World};
use proptest::prelude::*;

const N: usize = crate::reference::N;

/// The view with the warning counters blanked (to compare what was done, not what was said).
fn deeds(mut v: View) -> View {
    v.warnings_outside_cpus = 0;
    v.warnings_by_kind.clear();
    for c in &mut v.cpus {
        c.warnings = 0;
    }
    v
}

fn boot<P: Policy>(nr: usize, nohz_full: &[usize], setup: &[Step]) -> Sut<P> {
    let (sut, _) = replay::<P>(machine_for::<P>(nr, nohz_full), setup);
    sut
}

// ------------------------------------------------------------------------ never sent

fn out_of_range_cpus_are_errors<P: Policy>() {
    let sut = boot::<P>(6, &[], &[Step::IdleEnter(2), Step::IdleStop(2)]);
    let before = sut_view(&sut);
    for i in [6, 7, 15, 16, 17, usize::MAX] {
        let e = sut.m.cpu(i).unwrap_err();
        assert_eq!(
            e,
            CpuError::OutOfRange {
                index: i,
                nr_cpu_ids: 6
            }
        );
        assert_eq!(
            e.to_string(),
            format!("CPU {i} does not exist: this machine has CPU ids 0..6")
        );
        assert!(CpuId::new(i, sut.nr).is_err());
    }
    assert_eq!(
        NrCpuIds::<N>::new(N + 1),
        Err(CpuError::TooManyCpus {
            requested: N + 1,
            capacity: N
        })
    );
    // A mask scan started past nr_cpu_ids is refused, not clamped.
    assert_eq!(
        nohz::CpuMask::<1>::new().iter_wrap(7, sut.nr).unwrap_err(),
        CpuError::OutOfRange {
            index: 7,
            nr_cpu_ids: 6
        }
    );
    // A second init, whatever its count, is refused.
    for nr in [0, 6, 8, N + 1] {
        assert!(sut.m.init(nr, 0, &*sut.p).is_err(), "init({nr}) again");
    }
    assert_eq!(sut_view(&sut), before, "nothing changed");
}

/// What `CpuId`'s docs state for a program with two machines of one capacity: an id of the
/// larger one, used with the smaller, indexes in bounds, is neither online nor active there,
/// is never chosen as its ILB, and an on-CPU path run for it counts
/// `Warning::WrongCpu` on a platform that says which CPU it runs on.
fn an_id_of_another_machine_is_caught<P: Policy>() {
    let (big, small) = (World::<P, N>::new(8), World::<P, N>::new(4));
    let foreign = big.cpu(6);
    assert!(small.m.cpu(6).is_err(), "the small machine has no CPU 6");
    assert!(!small.m.cpu_online(foreign) && !small.m.cpu_active(foreign));
    // Its idle entry does nothing on the small machine (inactive), and counts the wrong CPU.
    small.p.set_this_cpu(Some(small.cpu(1)));
    small.idle(1);
    small.m.nohz_balance_enter_idle(foreign, &*small.p);
    assert!(small.mask().is_empty(), "an inactive CPU never registers");
    assert_eq!(small.m.warnings().of_kind(Warning::WrongCpu), 1);
    // No kick picks it.
    small.p.set_this_cpu(None);
    assert_eq!(small.m.find_new_ilb(small.cpu(0)), None);
}

fn bad_boot_input_is_refused_and_changes_nothing<P: Policy>() {
    let w = World::<P, N>::unbooted(N, Jiffies::new(usize::MAX - 5));
    let (m, p) = (&*w.m, &*w.p);
    assert!(matches!(
        m.init(0, 0, p),
        Err(InitError::Cpus(CpuError::OutOfRange { .. }))
    ));
    assert!(matches!(
        m.init(N + 1, 0, p),
        Err(InitError::Cpus(CpuError::TooManyCpus { .. }))
    ));
    let full = NrCpuIds::<N>::full();
    // CPU 3 names CPU 5 as its LLC's lowest CPU: above it.
    p.set_llc(full.cpu(3).unwrap(), full.cpu(5).ok());
    let e = m.init(8, 0, p).unwrap_err();
    assert_eq!(
        e,
        InitError::Topology(TopologyError::BadLlcLeader { cpu: 3, leader: 5 })
    );
    assert!(e.to_string().contains("CPU 3 names CPU 5"), "{e}");
    assert_eq!(m.nr_cpu_ids().get(), 0, "still not booted");
    assert!(m.cpu(0).is_err());
    assert_eq!(m.warnings().outside_cpus(), 0);
}

fn an_inconsistent_rebuild_changes_nothing<P: Policy>() {
    let sut = boot::<P>(
        4,
        &[],
        &[
            Step::IdleEnter(1),
            Step::IdleStop(1),
            Step::RunTask(0),
            Step::RunTask(0),
            Step::Tick(0),
        ],
    );
    let before = sut_view(&sut);
    // CPU 2 names CPU 1, which names CPU 0: not its own leader.
    sut.p.set_llc(sut.cpu(2), Some(sut.cpu(1)));
    sut.p.set_llc(sut.cpu(1), Some(sut.cpu(0)));
    assert!(sut.m.rebuild_sched_domains(&*sut.p).is_err());
    assert_eq!(sut_view(&sut), before);
}

fn static_key_dec_at_zero_is_an_error<P: Policy>() {
    // A bare key: the count stays 0, the sink counts one warning of the right kind.
    let w = Warnings::<N>::new();
    let cpu = NrCpuIds::<N>::full().cpu(5).unwrap();
    let key = StaticKey::new_false();
    assert_eq!(key.dec(&w.at(cpu)), Err(StaticKeyError::Underflow));
    assert_eq!(key.dec(&w.cpu_less()), Err(StaticKeyError::Underflow));
    assert_eq!(key.count(), 0);
    assert!(!key.enabled() && !key.likely() && !key.unlikely());
    assert_eq!((w.on_cpu(cpu), w.outside_cpus()), (1, 1));
    assert_eq!(w.of_kind(Warning::StaticKeyDecUnderflow), 2);
    assert_eq!(
        StaticKeyError::Underflow.to_string(),
        "static key decremented below zero"
    );
    // A true key brought to 0 by its boolean API, then decremented.
    let t = StaticKey::new_true();
    assert!(t.disable(&w.cpu_less()));
    assert_eq!(t.dec(&w.cpu_less()), Err(StaticKeyError::Underflow));
    assert_eq!(t.count(), 0);
    // The machine's irqtime key: only the warning changes (the model checks the rest).
    let (sut, model) = replay::<P>(
        machine_for::<P>(2, &[]),
        &[Step::Key(KeyOp::Dec), Step::Key(KeyOp::Dec)],
    );
    assert_eq!(sut.m.sched_clock_irqtime().count(), 0);
    assert_eq!(model.warn_kind.get(&Wk::StaticKeyDecUnderflow), Some(&2));
    assert_eq!(sut.m.warnings().outside_cpus(), 2);
}

// ------------------------------------------------------------------------ sent, warned about

/// Runs `call` for CPU `target` once from `target` and once from `from` (on two machines
/// brought to the same state by `setup`): the second counts `warnings` WrongCpu warnings
/// against `target` and otherwise does exactly what the first did.
fn from_another_cpu<P: Policy>(
    nohz_full: &[usize],
    setup: &[Step],
    target: usize,
    from: usize,
    warnings: u64,
    call: impl Fn(&Sut<P>, CpuId<N>),
) {
    let right = boot::<P>(4, nohz_full, setup);
    let wrong = boot::<P>(4, nohz_full, setup);
    let before = wrong.m.warnings().on_cpu(wrong.cpu(target));
    right.p.set_this_cpu(Some(right.cpu(target)));
    wrong.p.set_this_cpu(Some(wrong.cpu(from)));
    call(&right, right.cpu(target));
    call(&wrong, wrong.cpu(target));
    let (r, w) = (sut_view(&right), sut_view(&wrong));
    assert_eq!(
        w.cpus[target].warnings - before,
        warnings,
        "WrongCpu warnings against CPU {target}"
    );
    assert_eq!(
        wrong.m.warnings().of_kind(Warning::WrongCpu),
        right.m.warnings().of_kind(Warning::WrongCpu) + warnings
    );
    assert_eq!(
        r.cpus[from].warnings, w.cpus[from].warnings,
        "not against the caller"
    );
    let d = diff(&deeds(w), &deeds(r));
    assert!(d.is_empty(), "did something else:\n  {}", d.join("\n  "));
}

fn enter_and_exit_for_another_cpu_warn_then_act<P: Policy>() {
    // nohz_balance_enter_idle for CPU 2 run on CPU 0: registers CPU 2 all the same.
    from_another_cpu::<P>(&[], &[], 2, 0, 1, |s, c| {
        s.m.nohz_balance_enter_idle(c, &*s.p)
    });
    let registered = [Step::IdleEnter(2), Step::IdleStop(2)];
    // nohz_balance_exit_idle for a registered CPU 2 run on CPU 3: leaves the mask.
    from_another_cpu::<P>(&[], &registered, 2, 3, 1, |s, c| {
        s.m.nohz_balance_exit_idle(c, &*s.p)
    });
    // The tick-side idle section entered and left from the wrong CPU.
    from_another_cpu::<P>(&[], &[], 1, 2, 1, |s, c| s.m.tick_nohz_idle_enter(c, &*s.p));
    from_another_cpu::<P>(&[], &[Step::IdleEnter(1)], 1, 0, 1, |s, c| {
        s.m.tick_nohz_idle_exit(c, &*s.p)
    });
    // Every other owner-only path: the tick (twice: the tick and the exit it makes), the csd,
    // the softirq, newidle, the NEWILB pass, deactivation.
    let busy_registered = [
        Step::IdleEnter(2),
        Step::IdleStop(2),
        Step::RunTask(2),
        Step::IdleExit(2),
    ];
    from_another_cpu::<P>(&[], &busy_registered, 2, 1, 2, |s, c| {
        s.m.sched_tick(c, &*s.p);
    });
    let kicked = [
        Step::IdleEnter(1),
        Step::IdleStop(1),
        Step::RunTask(0),
        Step::RunTask(0),
        Step::Tick(0),
    ];
    from_another_cpu::<P>(&[], &kicked, 1, 3, 1, |s, c| s.m.nohz_csd_ipi(c, &*s.p));
    let mut raised = kicked.to_vec();
    raised.push(Step::DeliverIpi(1));
    from_another_cpu::<P>(&[], &raised, 1, 0, 1, |s, c| {
        s.m.sched_balance_softirq(c, &*s.p)
    });
    from_another_cpu::<P>(&[], &[Step::Advance(2)], 3, 0, 1, |s, c| {
        s.m.sched_balance_newidle(c, &*s.p);
    });
    from_another_cpu::<P>(&[], &[], 3, 0, 1, |s, c| {
        s.m.nohz_run_idle_balance(c, &*s.p);
    });
    from_another_cpu::<P>(&[], &registered, 2, 0, 1, |s, c| {
        s.m.sched_cpu_deactivate(c, &*s.p).unwrap()
    });
}

fn idle_exit_without_entry_warns_then_acts<P: Policy>() {
    // A plain CPU: only INIDLE would have been cleared.
    let (sut, _) = replay::<P>(
        machine_for::<P>(4, &[]),
        &[Step::ExitOutsideIdle(2), Step::ExitOutsideIdle(2)],
    );
    assert_eq!(
        sut.m.warnings().of_kind(Warning::IdleExitOutsideIdle),
        2,
        "every hit counts"
    );
    assert_eq!(sut.m.warnings().on_cpu(sut.cpu(2)), 2);
    // A busy NO_HZ_FULL CPU whose tick stopped: the exit re-evaluates the full-dynticks tick
    // (still stopped, nothing depends on it), then restarts it once something does. The
    // replay checks every step against the model; here, the two outcomes.
    let steps = [
        Step::RunTask(3),
        Step::Irq(3),
        Step::ExitOutsideIdle(3),
        Step::Set {
            cpu: 3,
            knob: Knob::TickDep,
            on: true,
        },
        Step::ExitOutsideIdle(3),
    ];
    let (sut, _) = replay::<P>(machine_for::<P>(4, &[3]), &steps[..3]);
    assert!(sut.m.tick_sched(sut.cpu(3)).tick_stopped());
    let (sut, model) = replay::<P>(machine_for::<P>(4, &[3]), &steps);
    assert!(!sut.m.tick_sched(sut.cpu(3)).tick_stopped());
    assert_eq!(model.warn_kind.get(&Wk::IdleExitOutsideIdle), Some(&2));
}

fn a_csd_run_without_kick_bits_warns_then_acts<P: Policy>() {
    // Idle CPU 2: the (empty) flags go to a raised softirq, which then balances CPU 2 itself.
    let (sut, model) = replay::<P>(
        machine_for::<P>(4, &[]),
        &[Step::SpuriousCsd(2), Step::Softirq(2)],
    );
    assert_eq!(sut.m.warnings().of_kind(Warning::CsdWithoutKick), 1);
    assert_eq!(sut.m.warnings().on_cpu(sut.cpu(2)), 1);
    assert!(model.out.events.contains(&crate::reference::Ev::Balance {
        by: 2,
        cpu: 2,
        idle: true
    }));
    // A pending NEWILB is consumed with it; a busy CPU raises nothing.
    let (sut, model) = replay::<P>(
        machine_for::<P>(4, &[]),
        &[
            Step::IdleEnter(1),
            Step::IdleStop(1),
            Step::Advance(1),
            Step::Newidle {
                cpu: 3,
                long_idle: true,
                walks: true,
                pulls: false,
                deadline: None,
            },
            Step::RunTask(3),
            Step::SpuriousCsd(3),
        ],
    );
    assert_eq!(sut.m.rq(sut.cpu(3)).nohz_flags().load(), NohzFlags::empty());
    assert!(model.out.events.is_empty(), "busy: nothing raised");
    assert_eq!(sut.m.warnings().of_kind(Warning::CsdWithoutKick), 1);
}

fn mixing_the_key_apis_warns_then_acts<P: Policy>() {
    let w = Warnings::<N>::new();
    let s = w.cpu_less();
    let k = StaticKey::new_false();
    // inc, then the boolean disable at count 1: silent, and the key is off.
    k.inc(&s).unwrap();
    assert!(k.disable(&s));
    assert_eq!((k.count(), w.outside_cpus()), (0, 0));
    // Two references: enable and disable each warn and change nothing.
    k.inc(&s).unwrap();
    k.inc(&s).unwrap();
    assert!(!k.enable(&s));
    assert!(!k.disable(&s));
    assert_eq!(k.count(), 2);
    assert_eq!(w.of_kind(Warning::StaticKeyEnableCount), 1);
    assert_eq!(w.of_kind(Warning::StaticKeyDisableCount), 1);
    // enable on top of nothing, then inc: two references, two decs to turn it off.
    k.dec(&s).unwrap();
    k.dec(&s).unwrap();
    assert!(k.enable(&s));
    k.inc(&s).unwrap();
    k.dec(&s).unwrap();
    assert!(k.enabled());
    k.dec(&s).unwrap();
    assert!(!k.enabled());
    assert_eq!(w.outside_cpus(), 2);

    // The same through the machine's irqtime switch (the model says what each policy does).
    let steps = [
        Step::Key(KeyOp::Inc),
        Step::Key(KeyOp::Inc),
        Step::Key(KeyOp::Enable),
        Step::Key(KeyOp::Disable),
        Step::IrqTime {
            cpu: 1,
            ctx: crate::reference::Ctx::Hardirq,
            dt: 500,
        },
    ];
    let (sut, model) = replay::<P>(machine_for::<P>(2, &[]), &steps);
    match model.cfg.policy {
        Pol::Patched => {
            // The key held twice: enable and disable warn; irqtime stays on and accounts.
            assert_eq!(sut.m.warnings().outside_cpus(), 2);
            assert!(sut.m.irqtime_enabled());
            assert_eq!(sut.m.irqtime(sut.cpu(1)).hardirq(), 500);
        }
        Pol::Legacy => {
            // The plain flag ignores the key: enabled, then disabled, silently.
            assert_eq!(sut.m.warnings().outside_cpus(), 0);
            assert!(!sut.m.irqtime_enabled());
            assert_eq!(sut.m.irqtime(sut.cpu(1)).total(), 0);
        }
    }
    // disable_sched_clock_irqtime when already off: nothing, and no warning, however often.
    let m = <nohz::machine!(P, N)>::new();
    m.disable_sched_clock_irqtime(&TestSleepable);
    m.disable_sched_clock_irqtime(&TestSleepable);
    assert_eq!(m.warnings().outside_cpus(), 0);
}

fn remote_calls_in_the_state_machine_are_modelled<P: Policy>() {
    // The same hostile calls as state-machine steps: the model agrees with the crate.
    replay::<P>(
        machine_for::<P>(3, &[]),
        &[
            Step::Remote {
                from: 0,
                call: Call::EnterIdle(2),
            },
            Step::Remote {
                from: 1,
                call: Call::ExitIdle(2),
            },
            Step::SpuriousCsd(0),
            Step::ExitOutsideIdle(1),
        ],
    );
}

for_each_policy!(
    out_of_range_cpus_are_errors,
    an_id_of_another_machine_is_caught,
    bad_boot_input_is_refused_and_changes_nothing,
    an_inconsistent_rebuild_changes_nothing,
    static_key_dec_at_zero_is_an_error,
    enter_and_exit_for_another_cpu_warn_then_act,
    idle_exit_without_entry_warns_then_acts,
    a_csd_run_without_kick_bits_warns_then_acts,
    mixing_the_key_apis_warns_then_acts,
    remote_calls_in_the_state_machine_are_modelled,
);

// ------------------------------------------------------------------------ nothing panics

/// Any public call, with any argument the types allow.
#[derive(Debug, Clone)]
enum Raw {
    EnterIdle(usize),
    ExitIdle(usize),
    SchedTick(usize),
    BalancerKick(usize),
    KickIlb(usize, u32),
    FindNewIlb(usize),
    CsdIpi(usize),
    Softirq(usize),
    Pass(usize, u32),
    Newidle(usize),
    RunIdleBalance(usize),
    Deactivate(usize),
    Dying(usize),
    Rebuild,
    Active(usize, bool),
    Domain(usize, bool),
    Llc(usize, Option<usize>),
    ThisCpu(Option<usize>),
    NeedResched(usize, bool),
    Rq(usize, u32, bool, bool, u64),
    Jiffies(usize),
    TimeNs(u64),
    AdvanceNs(u64),
    IdleEnter(usize),
    IdleExit(usize),
    IdleStop(usize),
    Retain(usize),
    SleepLength(usize),
    RestartIdle(usize),
    Restart(usize),
    IrqEnter(usize),
    IrqExit(usize),
    FullStop(usize),
    FullUpdate(usize),
    TickStop(usize),
    TickTimer(usize),
    NextEvent(usize),
    NextTimer(usize, u64),
    NeedsTick(usize, bool),
    Online(usize, bool),
    Timekeeper(Option<usize>),
    NohzFull(usize, bool),
    Softirqs(usize, u32),
    DoIdle(usize),
    Key(u8),
    IrqTime(usize, u8, u64),
}

fn raw(nr: usize) -> impl Strategy<Value = Raw> {
    let c = move || 0..nr;
    prop_oneof![
        c().prop_map(Raw::EnterIdle),
        c().prop_map(Raw::ExitIdle),
        c().prop_map(Raw::SchedTick),
        c().prop_map(Raw::BalancerKick),
        (c(), any::<u32>()).prop_map(|(a, f)| Raw::KickIlb(a, f)),
        c().prop_map(Raw::FindNewIlb),
        c().prop_map(Raw::CsdIpi),
        c().prop_map(Raw::Softirq),
        (c(), any::<u32>()).prop_map(|(a, f)| Raw::Pass(a, f)),
        c().prop_map(Raw::Newidle),
        c().prop_map(Raw::RunIdleBalance),
        c().prop_map(Raw::Deactivate),
        c().prop_map(Raw::Dying),
        Just(Raw::Rebuild),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::Active(a, b)),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::Domain(a, b)),
        (c(), proptest::option::of(c())).prop_map(|(a, b)| Raw::Llc(a, b)),
        proptest::option::of(c()).prop_map(Raw::ThisCpu),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::NeedResched(a, b)),
        (c(), 0..4u32, any::<bool>(), any::<bool>(), any::<u64>())
            .prop_map(|(a, n, i, t, cap)| Raw::Rq(a, n, i, t, cap)),
        any::<usize>().prop_map(Raw::Jiffies),
        any::<u64>().prop_map(Raw::TimeNs),
        any::<u64>().prop_map(Raw::AdvanceNs),
        c().prop_map(Raw::IdleEnter),
        c().prop_map(Raw::IdleExit),
        c().prop_map(Raw::IdleStop),
        c().prop_map(Raw::Retain),
        c().prop_map(Raw::SleepLength),
        c().prop_map(Raw::RestartIdle),
        c().prop_map(Raw::Restart),
        c().prop_map(Raw::IrqEnter),
        c().prop_map(Raw::IrqExit),
        c().prop_map(Raw::FullStop),
        c().prop_map(Raw::FullUpdate),
        c().prop_map(Raw::TickStop),
        c().prop_map(Raw::TickTimer),
        c().prop_map(Raw::NextEvent),
        (c(), any::<u64>()).prop_map(|(a, t)| Raw::NextTimer(a, t)),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::NeedsTick(a, b)),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::Online(a, b)),
        proptest::option::of(c()).prop_map(Raw::Timekeeper),
        (c(), any::<bool>()).prop_map(|(a, b)| Raw::NohzFull(a, b)),
        (c(), any::<u32>()).prop_map(|(a, b)| Raw::Softirqs(a, b)),
        c().prop_map(Raw::DoIdle),
        any::<u8>().prop_map(Raw::Key),
        (c(), any::<u8>(), any::<u64>()).prop_map(|(a, k, t)| Raw::IrqTime(a, k, t)),
    ]
}

/// A machine size and up to 120 calls on it.
fn calls() -> impl Strategy<Value = (usize, Vec<Raw>)> {
    (1usize..=N).prop_flat_map(|nr| (Just(nr), prop::collection::vec(raw(nr), 0..120)))
}

fn run_raw<P: Policy>(nr: usize, calls: &[Raw]) {
    let w = World::<P, N>::new_at(nr, Jiffies::new(usize::MAX - 3));
    let (m, p, ids) = (&*w.m, &*w.p, w.p.nr_cpu_ids());
    let cpu = |i: usize| ids.cpu(i).unwrap();
    for call in calls {
        match *call {
            Raw::EnterIdle(a) => m.nohz_balance_enter_idle(cpu(a), p),
            Raw::ExitIdle(a) => m.nohz_balance_exit_idle(cpu(a), p),
            Raw::SchedTick(a) => {
                m.sched_tick(cpu(a), p);
            }
            Raw::BalancerKick(a) => {
                m.nohz_balancer_kick(cpu(a), p);
            }
            Raw::KickIlb(a, f) => {
                m.kick_ilb(cpu(a), NohzFlags::from_bits_retain(f), p);
            }
            Raw::FindNewIlb(a) => {
                m.find_new_ilb(cpu(a));
            }
            Raw::CsdIpi(a) => m.nohz_csd_ipi(cpu(a), p),
            Raw::Softirq(a) => m.sched_balance_softirq(cpu(a), p),
            Raw::Pass(a, f) => {
                m.nohz_idle_balance_pass(cpu(a), NohzFlags::from_bits_retain(f), p);
            }
            Raw::Newidle(a) => {
                m.sched_balance_newidle(cpu(a), p);
            }
            Raw::RunIdleBalance(a) => {
                m.nohz_run_idle_balance(cpu(a), p);
            }
            Raw::Deactivate(a) => {
                let _ = m.sched_cpu_deactivate(cpu(a), p);
            }
            Raw::Dying(a) => {
                let _ = m.cpu_dying(cpu(a), p);
            }
            Raw::Rebuild => {
                let _ = m.rebuild_sched_domains(p);
            }
            Raw::Active(a, true) => {
                let _ = m.sched_cpu_activate(cpu(a), p);
            }
            Raw::Active(a, false) => {
                let _ = m.sched_cpu_deactivate(cpu(a), p);
            }
            Raw::Domain(a, b) => p.set_sched_domain(cpu(a), b),
            Raw::Llc(a, l) => p.set_llc(cpu(a), l.map(cpu)),
            Raw::ThisCpu(a) => p.set_this_cpu(a.map(cpu)),
            Raw::NeedResched(a, b) => p.set_need_resched(cpu(a), b),
            Raw::Rq(a, n, idle, ttwu, cap) => {
                let rq = m.rq(cpu(a));
                rq.set_nr_running(n);
                rq.set_h_nr_runnable(n);
                rq.set_curr_is_idle(idle);
                rq.set_ttwu_pending(ttwu);
                rq.set_cpu_capacity(cap);
                rq.set_avg_idle(cap);
                rq.set_misfit_task_load(cap);
                rq.set_next_balance(Jiffies::new(cap as usize));
            }
            Raw::Jiffies(j) => p.clock().set(Jiffies::new(j)),
            Raw::TimeNs(t) => p.set_time_ns(t),
            Raw::AdvanceNs(t) => p.advance_time_ns(t),
            Raw::IdleEnter(a) => m.tick_nohz_idle_enter(cpu(a), p),
            Raw::IdleExit(a) => m.tick_nohz_idle_exit(cpu(a), p),
            Raw::IdleStop(a) => m.tick_nohz_idle_stop_tick(cpu(a), p),
            Raw::Retain(a) => m.tick_nohz_idle_retain_tick(cpu(a)),
            Raw::SleepLength(a) => {
                m.tick_nohz_get_sleep_length(cpu(a), p);
            }
            Raw::RestartIdle(a) => m.tick_nohz_idle_restart_tick(cpu(a), p),
            Raw::Restart(a) => m.tick_nohz_restart_sched_tick(cpu(a), p.ktime_get(), p),
            Raw::IrqEnter(a) => m.tick_nohz_irq_enter(cpu(a), p),
            Raw::IrqExit(a) => m.tick_nohz_irq_exit(cpu(a), p),
            Raw::FullStop(a) => m.tick_nohz_full_stop_tick(cpu(a), p),
            Raw::FullUpdate(a) => m.tick_nohz_full_update_tick(cpu(a), p),
            Raw::TickStop(a) => m.tick_nohz_stop_tick(cpu(a), p),
            Raw::TickTimer(a) => {
                m.tick_sched_timer(cpu(a), p);
            }
            Raw::NextEvent(a) => {
                m.tick_nohz_next_event(cpu(a), p);
            }
            Raw::NextTimer(a, t) => p.set_next_timer(cpu(a), t),
            Raw::NeedsTick(a, b) => p.set_needs_tick(cpu(a), b),
            Raw::Online(a, b) => m.set_cpu_online(cpu(a), b),
            Raw::Timekeeper(a) => m.set_tick_do_timer_cpu(a.map(cpu)),
            Raw::NohzFull(a, b) => {
                if b {
                    m.nohz_full().set(cpu(a));
                } else {
                    m.nohz_full().clear(cpu(a));
                }
            }
            Raw::Softirqs(a, bits) => p.set_softirq_pending(cpu(a), bits),
            Raw::DoIdle(a) => {
                m.do_idle(cpu(a), p);
            }
            Raw::Key(k) => {
                let key = m.sched_clock_irqtime();
                let s = m.warnings().cpu_less();
                match k % 4 {
                    0 => m.enable_sched_clock_irqtime(),
                    1 => m.disable_sched_clock_irqtime(&TestSleepable),
                    2 => {
                        let _ = key.inc(&s);
                    }
                    _ => {
                        let _ = key.dec(&s);
                    }
                }
            }
            Raw::IrqTime(a, k, t) => {
                let ctx = match k % 4 {
                    0 => nohz::IrqContext::Task,
                    1 => nohz::IrqContext::Hardirq,
                    2 => nohz::IrqContext::Softirq {
                        in_ksoftirqd: false,
                    },
                    _ => nohz::IrqContext::Softirq { in_ksoftirqd: true },
                };
                m.irqtime_account_irq(cpu(a), ctx, t);
            }
        }
    }
    // Still answering: the warning counters add up and every scan stays below nr_cpu_ids.
    let _ = m.warnings().total(ids);
    assert!(m.nohz_idle_cpus().all(|c| c.index() < nr));
}

proptest! {
    #![proptest_config(crate::config(96))]

    /// No sequence of public calls panics, whatever the arguments and the state.
    #[test]
    fn no_call_sequence_panics((nr, calls) in calls()) {
        run_raw::<Patched>(nr, &calls);
        run_raw::<Legacy>(nr, &calls);
    }
}
