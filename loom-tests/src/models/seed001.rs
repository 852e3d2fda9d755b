//! Seed 001 under concurrency: a NO_HZ_FULL CPU stops its tick while it runs one task
//! (`tick_nohz_full_stop_tick`), then the task ends and the CPU goes idle, while an idle
//! housekeeping CPU runs an ILB pass (`_nohz_idle_balance` with STATS|NEXT).
//!
//! Under `Patched` the idle pass finds the tick already stopped and still calls
//! `nohz_balance_enter_idle` (seed 001), so the CPU ends in `nohz.idle_cpus_mask`, and O1/O2
//! hold on this path: the racing ILB pass visited it, or `nohz.has_blocked_load` and
//! `nohz.needs_update` ended 1 so that the next pass does. Under `Legacy` (the pre-seed
//! kernel) nohz_balance_enter_idle runs only on the pass that stops the tick, so the CPU stays invisible:
//! the model's first assertion fails, which the tests keep as an expected failure.

use loom::thread;
use nohz::{NohzFlags, Policy};
use nohz_testing::{Event, START_NS, World, set_busy, set_idle};

/// The assertion message when the idle NO_HZ_FULL CPU is not in the idle mask (the pre-seed
/// bug); `#[should_panic(expected = ...)]` tests match on it.
pub const INVISIBLE: &str = "seed 001: NO_HZ_FULL CPU 2 went idle with its tick stopped";

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "the racing ILB pass visited CPU 2",
    "the pass missed CPU 2, both flags ended 1",
];

/// How the NO_HZ_FULL CPU runs its idle pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdlePass {
    /// `tick_nohz_idle_enter` then `tick_nohz_idle_stop_tick`: the two calls that matter.
    StopTick,
    /// The whole `do_idle` loop (NEWILB check, idle section, one idle state that an interrupt
    /// ends, idle exit that keeps the NO_HZ_FULL tick stopped).
    DoIdle,
}

/// CPU 0 is the timekeeper (busy, never stops its tick), CPU 1 an idle housekeeping CPU,
/// CPU 2 NO_HZ_FULL (out of housekeeping), NO_HZ active on all. Before the threads start,
/// CPU 1 has registered and CPU 2, running one task with its next timer far away, has
/// stopped its tick. Then main = CPU 1 runs an ILB pass with STATS|NEXT while a spawned CPU 2
/// finishes its task and runs `pass`.
pub fn nohz_full_cpu_goes_idle<P: Policy>(pass: IdlePass) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [timekeeper, ilb, full] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        for cpu in nr.iter() {
            m.tick_nohz_activate(cpu, true);
        }
        assert_eq!(m.tick_do_timer_cpu(), Some(timekeeper));
        set_busy(m.rq(timekeeper), 1);
        m.nohz_full().set(full);
        m.housekeeping().clear(full);
        p.set_vtime_accounting(full, true);

        // CPU 2 runs one task; its tick stops (full dynticks), which never registers it.
        set_busy(m.rq(full), 1);
        p.set_next_timer(full, START_NS + 100_000_000);
        m.tick_nohz_full_stop_tick(full, &*p);
        assert!(m.tick_nohz_tick_stopped(full));
        // CPU 1 is idle and registered: the ILB.
        m.nohz_balance_enter_idle(ilb, &*p);
        // One jiffy on, so the pass really decays CPU 1's blocked load (and CPU 2's if it
        // visits it) instead of keeping nohz.has_blocked_load at 1 for CPU 1's sake: the O1
        // check below would be vacuous otherwise.
        p.clock().advance(1);
        assert!(!m.nohz_idle_test(full));

        let t = {
            let (m, p) = (m.clone(), p.clone());
            thread::spawn(move || {
                set_idle(m.rq(full));
                match pass {
                    IdlePass::StopTick => {
                        m.tick_nohz_idle_enter(full, &*p);
                        m.tick_nohz_idle_stop_tick(full, &*p);
                    }
                    IdlePass::DoIdle => {
                        m.do_idle(full, &*p);
                    }
                }
            })
        };
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS | NohzFlags::NEXT, &*p);
        t.join().unwrap();

        assert!(m.nohz_idle_test(full), "{INVISIBLE}");
        assert!(m.rq(full).nohz_tick_stopped());
        // O1/O2 on this path: the racing pass visited CPU 2, or the flags make the next one.
        let visited = p.events().contains(&Event::RqClock { by: ilb, cpu: full });
        assert!(
            visited || m.nohz().has_blocked_load(),
            "O1 (seed 001 path): the ILB pass missed CPU 2 and nohz.has_blocked_load ended 0"
        );
        assert!(
            visited || m.nohz().needs_update(),
            "O2 (seed 001 path): the ILB pass missed CPU 2 and nohz.needs_update ended 0"
        );
        assert!(
            m.tick_nohz_tick_stopped(full),
            "NO_HZ_FULL keeps its tick stopped"
        );
        assert_eq!(m.warnings().total(nr), 0);
        cases.hit(CASES[usize::from(!visited)]);
    })
}
