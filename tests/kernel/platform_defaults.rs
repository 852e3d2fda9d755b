//! The platform traits' defaults, each standing for a kernel without the facility it asks
//! about: a platform that implements only the fourteen required methods (forwarding them to the
//! host platform) boots, idles, stops its tick and balances as such a kernel should.

use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, NewidleOutcome, Softirq, TickHardware,
    Topology, softirq,
};
use nohz::{
    CpuId, IdleExit, Jiffies, KickDecision, NohzFlags, Policy, TICK_DEP_SCHED, TsFlags, Warning,
};
use nohz_testing::for_each_policy;
use nohz_testing::{CPUS, Event, HostPlatform, START_JIFFIES, START_NS, World};

type Cpu = CpuId<CPUS>;
const TICK: u64 = 1_000_000;

/// A platform of `$name` over the host platform with only the required methods (and the
/// `account_idle_ticks` notification, recorded so that the vtime default shows), plus
/// `$($extra)*`.
macro_rules! minimal {
    ($name:ident { $($extra:item)* }) => {
        struct $name<'a>(&'a HostPlatform<CPUS>);
        impl Clock for $name<'_> {
            fn jiffies(&self) -> Jiffies {
                Clock::jiffies(self.0)
            }
        }
        impl CpuState<CPUS> for $name<'_> {
            fn need_resched(&self, cpu: Cpu) -> bool {
                CpuState::need_resched(self.0, cpu)
            }
            fn this_cpu(&self) -> Option<Cpu> {
                CpuState::this_cpu(self.0)
            }
            fn synchronize_rcu(&self) {
                CpuState::synchronize_rcu(self.0)
            }
        }
        impl Ipi<CPUS> for $name<'_> {
            fn send_nohz_ipi(&self, from: Cpu, to: Cpu) {
                self.0.send_nohz_ipi(from, to)
            }
        }
        impl Softirq<CPUS> for $name<'_> {}
        impl Topology<CPUS> for $name<'_> {}
        impl Balance<CPUS> for $name<'_> {
            fn balance_domains(&self, by: Cpu, cpu: Cpu, idle: CpuIdleType) -> Jiffies {
                self.0.balance_domains(by, cpu, idle)
            }
            fn newidle_balance(&self, cpu: Cpu, t0: u64) -> NewidleOutcome {
                self.0.newidle_balance(cpu, t0)
            }
        }
        impl TickHardware<CPUS> for $name<'_> {
            fn ktime_get(&self) -> u64 {
                self.0.ktime_get()
            }
            fn jiffies_update(&self) -> (Jiffies, u64) {
                self.0.jiffies_update()
            }
            fn update_jiffies(&self, now: u64) {
                TickHardware::update_jiffies(self.0, now)
            }
            fn program_tick(&self, cpu: Cpu, expires: u64) {
                self.0.program_tick(cpu, expires)
            }
            fn cancel_tick(&self, cpu: Cpu) {
                self.0.cancel_tick(cpu)
            }
            fn tick_expiry(&self, cpu: Cpu) -> u64 {
                self.0.tick_expiry(cpu)
            }
            fn account_idle_ticks(&self, cpu: Cpu, ticks: usize) {
                self.0.account_idle_ticks(cpu, ticks)
            }
            $($extra)*
        }
        impl IdleHooks<CPUS> for $name<'_> {
            fn cpuidle_enter(&self, cpu: Cpu) {
                self.0.cpuidle_enter(cpu)
            }
        }
    };
}

minimal!(Minimal {});
// A kernel with a timer softirq pending and no PREEMPT_RT bottom-half lock answer of its own.
minimal!(TimerSoftirqPending {
    fn local_softirq_pending(&self, _cpu: Cpu) -> u32 {
        softirq::TIMER
    }
});

/// A machine booted through the minimal platform, NO_HZ on every CPU.
fn world<P: Policy>() -> World<P> {
    let w = World::<P>::unbooted(4, Jiffies::new(START_JIFFIES));
    w.m.init(4, 0, &Minimal(&w.p)).expect("the host topology");
    for cpu in w.m.nr_cpu_ids().iter() {
        w.m.tick_nohz_activate(cpu, true);
    }
    w
}

/// No cpusets or isolation (`has_sched_domain`), identical CPUs (no asym-capacity domain), one
/// shared cache (`llc_leader`): every CPU balances, all four share one LLC led by CPU 0 whose
/// busy count starts at the LLC's weight, and the system-wide asym-capacity key stays off.
fn a_plain_smp_machine_gives_every_cpu_a_domain<P: Policy>() {
    // The host platform's own answer would be the same: give it another, to see the default.
    let w = World::<P>::unbooted(4, Jiffies::new(START_JIFFIES));
    w.p.set_llc_size(2);
    w.m.init(4, 0, &Minimal(&w.p))
        .expect("the default topology");
    for i in 0..4 {
        assert!(w.m.rq(w.cpu(i)).has_sched_domain(), "CPU {i}");
        assert_eq!(w.m.llc_leader(w.cpu(i)), Some(0), "CPU {i}");
    }
    assert_eq!(w.m.llc_nr_busy_cpus(w.cpu(3)), Some(4));
    assert!(!w.m.sched_asym_cpucap_active());
}

/// Identical CPUs: with two busy CPUs in the LLC the busy CPU's kick asks for a balance (the
/// LLC test, which an asym-capacity machine would skip for a misfit test).
fn two_busy_cpus_of_one_llc_ask_for_a_balance<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    w.busy(0, 1);
    w.busy(1, 1);
    w.m.nohz_balance_exit_idle(w.cpu(1), &p);
    w.m.nohz_balance_exit_idle(w.cpu(0), &p);
    w.enter(2);
    w.advance(2);
    match w.m.sched_tick(w.cpu(0), &p) {
        Some(KickDecision::Kick { flags, .. }) => assert!(flags.contains(NohzFlags::BALANCE)),
        other => panic!("expected a BALANCE kick, got {other:?}"),
    }
}

/// `arch_capacity` (1024) and `imbalance_pct` (117): a CPU with one task kicks a balance when
/// it lost more than about 15% of its capacity, and not when it lost less.
fn capacity_loss_beyond_the_imbalance_asks_for_a_balance<P: Policy>() {
    for (capacity, kicks) in [(800, true), (1000, false)] {
        let w = world::<P>();
        let p = Minimal(&w.p);
        w.busy(0, 1);
        w.m.rq(w.cpu(0)).set_cpu_capacity(capacity);
        // Only CPU 0 is busy in the LLC, so the LLC test asks for nothing.
        for i in 1..4 {
            w.enter(i);
        }
        w.advance(2);
        let balance = matches!(
            w.m.sched_tick(w.cpu(0), &p),
            Some(KickDecision::Kick { flags, .. }) if flags.contains(NohzFlags::BALANCE)
        );
        assert_eq!(balance, kicks, "capacity {capacity} of 1024");
    }
}

/// No load tracking (`update_blocked_averages` answers false): an idle CPU's blocked-load flag
/// clears at the first decay pass.
fn without_load_tracking_blocked_load_clears_at_the_first_pass<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    w.enter(1);
    w.enter(2);
    assert!(w.m.rq(w.cpu(1)).has_blocked_load());
    w.advance(1);
    w.m.nohz_idle_balance_pass(w.cpu(2), NohzFlags::STATS, &p);
    let rq = w.m.rq(w.cpu(1));
    assert_eq!(rq.last_blocked_load_update_tick(), w.now(), "visited");
    assert!(!rq.has_blocked_load());
    assert!(!w.m.nohz().has_blocked_load());
}

/// No timer wheel (`next_timer_interrupt` never, the timer base always idle), a clocksource
/// that never wraps (`timekeeping_max_deferment`), nothing needing the tick
/// (`cpu_needs_tick`), no softirq: an idle CPU's tick stops with nothing to wake for, the
/// timekeeper's too, without a warning.
fn without_timers_an_idle_tick_stops_with_nothing_to_wake_for<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    for i in [1, 0] {
        let c = w.cpu(i);
        w.idle(i);
        w.p.take_events();
        w.m.tick_nohz_idle_enter(c, &p);
        w.m.tick_nohz_idle_stop_tick(c, &p);
        assert!(w.ts(i).tick_stopped(), "CPU {i}");
        assert_eq!(w.events(), [Event::CancelTick { cpu: c }], "CPU {i}");
        assert_eq!(w.ts(i).next_tick(), nohz::platform::KTIME_MAX);
    }
    assert_eq!(w.warnings(), 0);
}

/// A softirq pending without PREEMPT_RT (`local_bh_blocked` false): idle keeps its tick and
/// warns, as `report_idle_softirq` does.
fn a_pending_softirq_keeps_the_idle_tick_and_warns<P: Policy>() {
    let w = world::<P>();
    let p = TimerSoftirqPending(&w.p);
    let c = w.cpu(1);
    w.idle(1);
    w.m.tick_nohz_idle_enter(c, &p);
    w.m.tick_nohz_idle_stop_tick(c, &p);
    assert!(!w.ts(1).tick_stopped());
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 1);
}

/// No per-task tick dependency (`task_tick_dependencies` 0): a busy NO_HZ_FULL CPU with one
/// task goes tickless.
fn without_task_dependencies_a_full_cpu_goes_tickless<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    let c = w.cpu(3);
    w.m.nohz_full().set(c);
    w.m.housekeeping().clear(c);
    w.busy(3, 1);
    w.m.tick_nohz_full_update_tick(c, &p);
    assert!(w.ts(3).tick_stopped());
    assert_eq!(w.ts(3).tick_dep_mask() & TICK_DEP_SCHED, 0);
}

/// No vtime (`vtime_accounting` false) and no iowait (`in_iowait` false): the idle period is
/// idle time, and the ticks it skipped are accounted at its end.
fn idle_time_is_tick_accounted_idle_not_iowait<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    let c = w.cpu(2);
    w.idle(2);
    w.m.tick_nohz_idle_enter(c, &p);
    w.m.tick_nohz_idle_stop_tick(c, &p);
    w.p.advance_time_ns(5 * TICK);
    w.p.take_events();
    w.m.tick_nohz_idle_exit(c, &p);
    assert!(w.ts(2).idle_sleeptime() >= 5 * TICK);
    assert_eq!(w.ts(2).iowait_sleeptime(), 0);
    assert!(
        w.events()
            .iter()
            .any(|e| matches!(e, Event::IdleTicks { cpu, ticks } if *cpu == c && *ticks >= 5)),
        "{:?}",
        w.events()
    );
}

/// No forced polling (`idle_poll` false) and no cpuidle driver (`cpuidle_select` None): the
/// idle loop stops the tick and enters the idle state once per wakeup.
fn the_default_idle_loop_stops_the_tick_and_enters_idle<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    let c = w.cpu(1);
    w.idle(1);
    w.p.set_time_ns(START_NS);
    w.p.take_events();
    assert_eq!(w.m.do_idle(c, &p), IdleExit::Resched);
    let idles = w
        .events()
        .iter()
        .filter(|e| matches!(e, Event::IdleState { .. }))
        .count();
    assert_eq!(idles, 1, "entered the idle state once");
    assert!(
        w.events().contains(&Event::CancelTick { cpu: c }),
        "stopped"
    );
    assert!(w.mask().contains(&1));
    assert!(!w.ts(1).flags().contains(TsFlags::INIDLE));
}

/// No newidle cost tracking (`sched_clock_cpu`'s default): the walk's cost window opens at 0,
/// whatever the host clock says.
fn without_cost_tracking_the_walk_gets_t0_zero<P: Policy>() {
    let w = world::<P>();
    let p = Minimal(&w.p);
    let c = w.cpu(3);
    w.p.set_time_ns(START_NS + 7 * TICK);
    w.p.take_events();
    w.m.sched_balance_newidle(c, &p);
    assert_eq!(
        w.events().last(),
        Some(&Event::NewidleBalance { cpu: c, t0: 0 })
    );
}

for_each_policy!(
    without_cost_tracking_the_walk_gets_t0_zero,
    a_plain_smp_machine_gives_every_cpu_a_domain,
    two_busy_cpus_of_one_llc_ask_for_a_balance,
    capacity_loss_beyond_the_imbalance_asks_for_a_balance,
    without_load_tracking_blocked_load_clears_at_the_first_pass,
    without_timers_an_idle_tick_stops_with_nothing_to_wake_for,
    a_pending_softirq_keeps_the_idle_tick_and_warns,
    without_task_dependencies_a_full_cpu_goes_tickless,
    idle_time_is_tick_accounted_idle_not_iowait,
    the_default_idle_loop_stops_the_tick_and_enters_idle,
);
