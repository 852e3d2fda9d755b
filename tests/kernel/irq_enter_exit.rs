//! The driver layer's interrupt path (`irq_enter`, `irq_exit` with `invoke_softirq` and
//! `tick_irq_exit`, the timer interrupt, the call-function IPI and `flush_smp_call_function_queue`
//! in the idle loop), `cpu_starting` (`tick_setup_sched_timer`) and `add_nr_running`'s
//! `sched_update_tick_dependency`.

use nohz::platform::{CpuIdleType, tick_nsec};
use nohz::{IrqContext, KickOutcome, NohzFlags, Policy, RqFacts, TICK_DEP_SCHED, TsFlags, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, START_NS, World};

const TICK: u64 = 1_000_000;

fn balances<P: Policy>(w: &World<P>) -> Vec<(usize, usize, CpuIdleType)> {
    w.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::BalanceDomains { by, cpu, idle } => Some((by.index(), cpu.index(), idle)),
            _ => None,
        })
        .collect()
}

/// A busy CPU's tick raises its own balance softirq; `irq_exit` runs it once and clears it.
fn irq_exit_runs_the_raised_sched_softirq_once<P: Policy>() {
    let w = World::<P>::new(4);
    let c0 = w.cpu(0);
    w.busy(0, 1);
    assert!(!w.m.sched_softirq_pending(c0));
    w.m.irq_enter(c0, &*w.p);
    w.m.sched_tick(c0, &*w.p);
    assert!(w.m.sched_softirq_pending(c0), "its own balance is due");
    assert!(w.events().contains(&Event::Softirq { cpu: c0 }));
    w.p.take_events();
    w.m.irq_exit(c0, &*w.p);
    assert!(!w.m.sched_softirq_pending(c0));
    assert_eq!(balances(&w), [(0, 0, CpuIdleType::NotIdle)]);
    // Nothing raised: another interrupt runs no softirq.
    w.p.take_events();
    w.m.irq_enter(c0, &*w.p);
    w.m.irq_exit(c0, &*w.p);
    assert!(balances(&w).is_empty());
}

/// A kernel with its own softirq machinery runs the handler itself: the crate's bit is
/// consumed, so `irq_exit` does not run it again.
fn a_softirq_run_by_the_kernel_is_not_run_again<P: Policy>() {
    let w = World::<P>::new(4);
    let c0 = w.cpu(0);
    w.busy(0, 1);
    w.m.irq_enter(c0, &*w.p);
    w.m.sched_tick(c0, &*w.p);
    w.m.sched_balance_softirq(c0, &*w.p);
    w.p.take_events();
    w.m.irq_exit(c0, &*w.p);
    assert!(balances(&w).is_empty());
}

/// `irq_enter` ends the interrupted context's time, `irq_exit` charges the handler as hardirq
/// time, and the softirq's own time goes to softirq time.
fn the_handler_is_charged_as_hardirq_time<P: Policy>() {
    let w = World::<P>::new(4);
    let c1 = w.cpu(1);
    w.m.enable_sched_clock_irqtime();
    w.busy(1, 1);
    w.p.set_time_ns(START_NS + 10_000);
    w.m.irqtime_account_irq(c1, IrqContext::Task, START_NS + 10_000);
    w.p.set_time_ns(START_NS + 50_000);
    w.m.irq_enter(c1, &*w.p);
    w.p.set_time_ns(START_NS + 57_000);
    w.m.irq_exit(c1, &*w.p);
    let t = w.m.irqtime(c1);
    assert_eq!(
        t.hardirq(),
        7_000,
        "the task's 40 us before entry are not irq time"
    );
    assert_eq!(t.softirq(), 0, "no softirq was raised");
}

/// `interrupt` brackets the kernel's handler: the handler's time is charged as hardirq time
/// (it ran after `irq_enter` and before `irq_exit`), and the balance softirq it raised runs on
/// the way out.
fn interrupt_runs_the_handler_between_entry_and_exit<P: Policy>() {
    let w = World::<P>::new(4);
    let c0 = w.cpu(0);
    w.m.enable_sched_clock_irqtime();
    w.busy(0, 1);
    w.m.irqtime_account_irq(c0, IrqContext::Task, START_NS);
    w.p.set_time_ns(START_NS + 20_000);
    w.p.take_events();
    let decision = w.m.interrupt(c0, &*w.p, || {
        w.p.set_time_ns(START_NS + 23_000);
        w.m.sched_tick(c0, &*w.p)
    });
    assert!(decision.is_some(), "the handler's value comes back");
    assert_eq!(w.m.irqtime(c0).hardirq(), 3_000, "the handler's 3 us");
    assert!(!w.m.sched_softirq_pending(c0), "its softirq ran on exit");
    assert_eq!(balances(&w), [(0, 0, CpuIdleType::NotIdle)]);
}

/// `tick_irq_exit`: an idle CPU with no reschedule pending resumes idle-time accounting; one
/// woken by the interrupt does not (it is about to leave idle).
fn tick_irq_exit_resumes_idle_accounting_unless_woken<P: Policy>() {
    let w = World::<P>::new(4);
    let c2 = w.cpu(2);
    w.idle(2);
    w.m.tick_nohz_idle_enter(c2, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c2, &*w.p);
    assert!(w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE));
    w.m.irq_enter(c2, &*w.p);
    assert!(!w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE), "paused");
    w.m.irq_exit(c2, &*w.p);
    assert!(w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE), "resumed");
    w.m.irq_enter(c2, &*w.p);
    w.p.set_need_resched(c2, true);
    w.m.irq_exit(c2, &*w.p);
    assert!(
        !w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE),
        "woken: accounting stays paused"
    );
}

/// `tick_irq_exit` on a busy NO_HZ_FULL CPU re-evaluates its tick: with one task it stops, on
/// a housekeeping CPU it never does.
fn tick_irq_exit_lets_a_busy_nohz_full_tick_stop<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    for i in [2, 3] {
        w.busy(i, 1);
        w.p.set_next_timer(w.cpu(i), START_NS + 40 * TICK);
        w.m.irq_enter(w.cpu(i), &*w.p);
        w.m.irq_exit(w.cpu(i), &*w.p);
    }
    assert!(w.ts(3).tick_stopped(), "NO_HZ_FULL with one task");
    assert!(!w.ts(2).tick_stopped(), "housekeeping");
}

/// The timer interrupt of a busy CPU: the tick (which kicks the idle CPU), then on irq exit
/// the CPU's own balance softirq; the periodic tick is re-armed one period on.
fn timer_interrupt_ticks_kicks_and_runs_the_softirq<P: Policy>() {
    let w = World::<P>::new(4);
    let c0 = w.cpu(0);
    w.enter(1);
    w.busy(0, 2);
    w.p.set_time_ns(START_NS + TICK);
    w.p.take_events();
    let decision = w.m.timer_interrupt(c0, &*w.p).kick();
    assert!(decision.is_some());
    let events = w.events();
    assert!(events.contains(&Event::Ipi {
        from: c0,
        to: w.cpu(1)
    }));
    assert!(events.contains(&Event::ProgramTick {
        cpu: c0,
        expires: START_NS + 2 * TICK
    }));
    assert_eq!(balances(&w), [(0, 0, CpuIdleType::NotIdle)]);
    assert!(!w.m.sched_softirq_pending(c0));
}

/// The kick IPI runs the csd and, on irq exit, the ILB pass it handed over; an IPI that finds
/// the csd already run does nothing and warns of nothing.
fn kick_interrupt_runs_the_csd_then_the_ilb_pass<P: Policy>() {
    let w = World::<P>::new(4);
    let (c0, c1) = (w.cpu(0), w.cpu(1));
    w.enter(1);
    w.enter(2);
    w.busy(0, 2);
    let flags = NohzFlags::STATS | NohzFlags::BALANCE;
    assert_eq!(w.m.kick_ilb(c0, flags, &*w.p), KickOutcome::Sent(c1));
    w.p.take_events();
    assert_eq!(w.m.kick_interrupt(c1, &*w.p), Some(flags));
    let rq = w.m.rq(c1);
    assert!(!rq.csd_busy() && rq.nohz_flags().load().is_empty());
    let visited: Vec<usize> = balances(&w).into_iter().map(|(_, cpu, _)| cpu).collect();
    assert!(
        visited.contains(&2) && visited.contains(&1),
        "the pass balanced for CPU 2 and for itself: {visited:?}"
    );
    assert!(balances(&w).iter().all(|&(by, _, _)| by == 1));
    w.p.take_events();
    assert_eq!(w.m.kick_interrupt(c1, &*w.p), None, "nothing queued");
    assert!(balances(&w).is_empty());
    assert_eq!(w.warnings(), 0);
}

/// A kick that reached a CPU busy again hands nothing over: the request is dropped.
fn a_kick_to_a_cpu_busy_again_hands_nothing_over<P: Policy>() {
    let w = World::<P>::new(4);
    let (c0, c1) = (w.cpu(0), w.cpu(1));
    w.enter(1);
    assert_eq!(
        w.m.kick_ilb(c0, NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(c1)
    );
    w.busy(1, 1);
    w.p.take_events();
    assert_eq!(w.m.kick_interrupt(c1, &*w.p), Some(NohzFlags::empty()));
    assert!(balances(&w).is_empty());
    assert!(!w.m.sched_softirq_pending(c1));
}

/// `do_idle` leaves through `flush_smp_call_function_queue`: a kick whose IPI was elided
/// (the CPU was polling) runs on the way out, with its ILB pass; the late IPI, if one comes,
/// finds nothing.
fn do_idle_flushes_a_kick_whose_ipi_was_elided<P: Policy>() {
    let w = World::<P>::new(4);
    let (c0, c1) = (w.cpu(0), w.cpu(1));
    w.enter(2);
    w.busy(0, 2);
    w.idle(1);
    let (m, p) = (w.m.clone(), w.p.clone());
    w.p.on_idle(move |cpu| {
        // The kick lands while CPU 1 idles; its IPI is not delivered; CPU 1 wakes.
        assert_eq!(
            m.kick_ilb(c0, NohzFlags::STATS | NohzFlags::BALANCE, &*p),
            KickOutcome::Sent(cpu)
        );
        p.set_need_resched(cpu, true);
    });
    w.m.do_idle(c1, &*w.p);
    let rq = w.m.rq(c1);
    assert!(
        !rq.csd_busy() && rq.nohz_flags().load().is_empty(),
        "flushed"
    );
    assert!(!w.m.sched_softirq_pending(c1), "its softirq ran too");
    assert!(balances(&w).iter().any(|&(by, cpu, _)| by == 1 && cpu == 2));
    assert_eq!(w.m.kick_interrupt(c1, &*w.p), None, "the late IPI");
    assert_eq!(w.warnings(), 0);
}

/// `do_idle`'s exit runs no softirq when no csd was queued: the kernel's
/// `flush_smp_call_function_queue` returns at once on an empty queue, before it looks at the
/// pending softirqs, so a `SCHED_SOFTIRQ` an interrupt in the idle loop raised (and whose exit
/// did not run it) waits for the next irq exit; a flush that ran a csd runs the softirq it
/// raised.
fn do_idle_leaves_a_softirq_pending_without_a_csd_to_the_next_irq_exit<P: Policy>() {
    let w = World::<P>::new(4);
    let c1 = w.cpu(1);
    w.idle(1);
    w.advance(1);
    let (m, p) = (w.m.clone(), w.p.clone());
    w.p.on_idle(move |cpu| {
        // The tick's trigger raises the CPU's own balance (due since boot); no irq exit runs it.
        m.sched_balance_trigger(cpu, &*p);
        assert!(m.sched_softirq_pending(cpu));
        p.set_need_resched(cpu, true);
    });
    w.p.take_events();
    w.m.do_idle(c1, &*w.p);
    assert!(!w.m.rq(c1).csd_busy());
    assert!(
        balances(&w).is_empty(),
        "no softirq ran at the idle exit: {:?}",
        balances(&w)
    );
    assert!(w.m.sched_softirq_pending(c1), "left for the next irq exit");
    // The next interrupt's exit runs it: CPU 1 balances its own domains.
    w.m.irq_enter(c1, &*w.p);
    w.m.irq_exit(c1, &*w.p);
    assert!(!w.m.sched_softirq_pending(c1));
    assert!(balances(&w).iter().any(|&(by, cpu, _)| by == 1 && cpu == 1));
}

/// `cpu_starting`: online, NO_HZ high-resolution mode, and the first tick one period past the
/// last jiffies update, on the jiffies grid.
fn cpu_starting_sets_up_the_tick_on_the_jiffies_grid<P: Policy>() {
    let w = World::<P>::booted(4, nohz::Jiffies::new(nohz_testing::START_JIFFIES));
    let c2 = w.cpu(2);
    assert!(w.ts(2).flags().is_empty(), "NO_HZ not active before");
    w.p.set_time_ns(START_NS + 3 * TICK + 400);
    w.p.take_events();
    w.m.cpu_starting(c2, &*w.p);
    assert!(w.m.cpu_online(c2));
    assert_eq!(w.ts(2).flags(), TsFlags::NOHZ | TsFlags::HIGHRES);
    let period = tick_nsec(1000);
    assert_eq!(period, TICK);
    assert_eq!(
        w.events(),
        [Event::ProgramTick {
            cpu: c2,
            expires: START_NS + 4 * TICK
        }],
        "the first grid point after now (jiffies last updated at START_NS)"
    );
}

/// `add_nr_running`'s `sched_update_tick_dependency`: a NO_HZ_FULL CPU with two runnable
/// tasks needs its tick (it restarts); with one it may stop again. Housekeeping CPUs never
/// take the dependency.
fn nr_running_drives_a_nohz_full_cpus_tick_dependency<P: Policy>() {
    let w = World::<P>::new(4);
    let c3 = w.cpu(3);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(c3, START_NS + 40 * TICK);
    w.m.update_rq(
        c3,
        RqFacts {
            nr_running: 1,
            h_nr_runnable: 1,
            curr_is_idle: false,
        },
        &*w.p,
    );
    assert!(
        !w.ts(3).tick_stopped(),
        "no dependency changed: nothing to do"
    );
    w.m.irq_enter(c3, &*w.p);
    w.m.irq_exit(c3, &*w.p);
    assert!(w.ts(3).tick_stopped(), "one task: tickless");
    w.m.update_rq(
        c3,
        RqFacts {
            nr_running: 2,
            h_nr_runnable: 2,
            curr_is_idle: false,
        },
        &*w.p,
    );
    assert_eq!(w.m.rq(c3).nr_running(), 2);
    assert_eq!(w.m.rq(c3).h_nr_runnable(), 2);
    assert_ne!(w.ts(3).tick_dep_mask() & TICK_DEP_SCHED, 0);
    assert!(!w.ts(3).tick_stopped(), "two tasks: the tick restarts");
    w.m.update_rq(
        c3,
        RqFacts {
            nr_running: 1,
            h_nr_runnable: 1,
            curr_is_idle: false,
        },
        &*w.p,
    );
    assert_eq!(w.ts(3).tick_dep_mask() & TICK_DEP_SCHED, 0);
    assert!(
        w.ts(3).tick_stopped(),
        "the dependency cleared: it stops again"
    );
    // A housekeeping CPU.
    w.busy(2, 1);
    w.m.update_rq(
        w.cpu(2),
        RqFacts {
            nr_running: 3,
            h_nr_runnable: 3,
            curr_is_idle: false,
        },
        &*w.p,
    );
    assert_eq!(w.ts(2).tick_dep_mask(), 0);
    assert_eq!(w.warnings(), 0);
}

/// `update_rq` publishes the three facts together, and `idle_cpu()` reads them: a CPU woken
/// with a task queued while its idle task is still current (`RqFacts::one_class(1, true)`) is
/// not idle; after the switch (`RqFacts::tasks(1)`) it runs the task; with nothing left
/// (`RqFacts::tasks(0)`) it is idle again.
fn update_rq_publishes_the_facts_idle_cpu_reads<P: Policy>() {
    let w = World::<P>::new(4);
    let c1 = w.cpu(1);
    let rq = w.m.rq(c1);
    assert!(rq.idle_cpu(), "a fresh CPU is idle");
    w.m.update_rq(c1, RqFacts::one_class(1, true), &*w.p);
    assert_eq!(
        (rq.nr_running(), rq.h_nr_runnable(), rq.curr_is_idle()),
        (1, 1, true)
    );
    assert!(!rq.idle_cpu(), "a task is queued");
    w.m.update_rq(c1, RqFacts::tasks(1), &*w.p);
    assert_eq!(
        (rq.nr_running(), rq.h_nr_runnable(), rq.curr_is_idle()),
        (1, 1, false)
    );
    assert!(!rq.idle_cpu());
    w.m.update_rq(c1, RqFacts::one_class(3, false), &*w.p);
    assert_eq!(
        (rq.nr_running(), rq.h_nr_runnable(), rq.curr_is_idle()),
        (3, 3, false)
    );
    w.m.update_rq(c1, RqFacts::tasks(0), &*w.p);
    assert_eq!(
        (rq.nr_running(), rq.h_nr_runnable(), rq.curr_is_idle()),
        (0, 0, true)
    );
    assert!(rq.idle_cpu());
}

/// From another CPU only the dependency bit changes; the target's next irq exit applies it.
fn a_remote_enqueue_leaves_the_tick_to_the_targets_irq_exit<P: Policy>() {
    let w = World::<P>::new(4);
    let c3 = w.cpu(3);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(c3, START_NS + 40 * TICK);
    w.m.tick_nohz_full_update_tick(c3, &*w.p);
    assert!(w.ts(3).tick_stopped());
    w.p.set_this_cpu(Some(w.cpu(0)));
    w.m.update_rq(
        c3,
        RqFacts {
            nr_running: 2,
            h_nr_runnable: 2,
            curr_is_idle: false,
        },
        &*w.p,
    );
    assert_ne!(w.ts(3).tick_dep_mask() & TICK_DEP_SCHED, 0);
    assert!(w.ts(3).tick_stopped(), "not touched from CPU 0");
    w.p.set_this_cpu(Some(c3));
    w.m.irq_enter(c3, &*w.p);
    w.m.irq_exit(c3, &*w.p);
    assert!(
        !w.ts(3).tick_stopped(),
        "the reschedule IPI's exit restarted it"
    );
    assert_eq!(w.m.warnings().of_kind(Warning::WrongCpu), 0);
}

for_each_policy!(
    irq_exit_runs_the_raised_sched_softirq_once,
    a_softirq_run_by_the_kernel_is_not_run_again,
    the_handler_is_charged_as_hardirq_time,
    interrupt_runs_the_handler_between_entry_and_exit,
    update_rq_publishes_the_facts_idle_cpu_reads,
    tick_irq_exit_resumes_idle_accounting_unless_woken,
    tick_irq_exit_lets_a_busy_nohz_full_tick_stop,
    timer_interrupt_ticks_kicks_and_runs_the_softirq,
    kick_interrupt_runs_the_csd_then_the_ilb_pass,
    a_kick_to_a_cpu_busy_again_hands_nothing_over,
    do_idle_flushes_a_kick_whose_ipi_was_elided,
    do_idle_leaves_a_softirq_pending_without_a_csd_to_the_next_irq_exit,
    cpu_starting_sets_up_the_tick_on_the_jiffies_grid,
    nr_running_drives_a_nohz_full_cpus_tick_dependency,
    a_remote_enqueue_leaves_the_tick_to_the_targets_irq_exit,
);
