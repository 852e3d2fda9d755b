//! The seeds' benchmark loads on the virtual-time engine: a llama team's decodes and
//! hackbench's messages, checked after every event, on small machines.

use nohz::{Legacy, Patched, Policy};
use nohz_stress::engine::scenario::{LoadOpts, VirtualScenario};
use nohz_stress::engine::topo::Shape;
use nohz_stress::engine::work::{Buffer, Hackbench, Llama, Source, Workload};
use nohz_stress::engine::{Config, Outcome, run, warmup};

fn config(shape: Shape, source: Source, ms: u64) -> Config {
    Config::new(
        shape,
        Workload {
            sources: vec![source],
        },
        ms * 1_000_000,
    )
}

fn clean(o: &Outcome) {
    assert_eq!(o.violations, 0, "{}: {:?}", o.policy, o.first_violation);
    assert_eq!(o.warnings, 0, "{}", o.policy);
}

/// Decodes a second after the warm-up.
fn decodes_per_sec(o: &Outcome, cfg: &Config) -> f64 {
    o.work_done / ((cfg.sim_ns - warmup(cfg.sim_ns)) as f64 / 1e9)
}

const TEAM: Llama = Llama {
    on: 0,
    threads: 4,
    nodes: 10,
    slice_ns: 10_000,
    main_ns: 50_000,
    spin_ns: 120_000,
    throttled_spin_ns: 40,
};

#[test]
fn a_spinning_team_decodes_at_the_pace_of_its_slices() {
    // 4 threads on 8 CPUs: each on a CPU of its own, the waits spun, so a decode takes its
    // 10 slices of 10 us, and the main thread's 50 us come between decodes: 150 us a round
    // trip, 6,667 decodes a second.
    let cfg = config(Shape::flat(8), Source::Llama(TEAM), 20);
    let o = run::<Patched, 1000>(&cfg).unwrap();
    clean(&o);
    assert_eq!(o.work_unit, "decodes");
    let ms = o.batch_ms.unwrap();
    assert!((0.100..0.101).contains(&ms), "a decode took {ms} ms");
    let rate = decodes_per_sec(&o, &cfg);
    assert!((6_600.0..6_700.0).contains(&rate), "{rate} decodes/s");
    assert_eq!(o.idle_entries, 4, "the 4 idle CPUs go idle once and stay");
}

#[test]
fn a_team_that_sleeps_at_each_barrier_waits_for_its_wakeups() {
    // No spin: every waiting thread sleeps and is woken by the round's last arrival, each
    // wakeup an IPI of 2 us to an idle CPU, so each round takes longer than its slice.
    let cfg = config(
        Shape::flat(8),
        Source::Llama(Llama { spin_ns: 0, ..TEAM }),
        20,
    );
    let o = run::<Patched, 1000>(&cfg).unwrap();
    clean(&o);
    let ms = o.batch_ms.unwrap();
    assert!(
        ms >= 0.120,
        "a decode took {ms} ms, under 10 rounds of 12 us"
    );
    assert!(
        o.idle_entries > 1_000,
        "the sleepers' CPUs idle at every barrier"
    );
}

#[test]
fn an_oversubscribed_team_spins_briefly_and_shares_its_cpus() {
    // 8 threads on 4 CPUs: libgomp's throttled spin (40 ns), two threads a CPU, so a round
    // takes at least two slices.
    let cfg = config(
        Shape::flat(4),
        Source::Llama(Llama { threads: 8, ..TEAM }),
        20,
    );
    let o = run::<Patched, 1000>(&cfg).unwrap();
    clean(&o);
    let ms = o.batch_ms.unwrap();
    assert!(
        ms >= 0.200,
        "a decode took {ms} ms, under 10 rounds of 2 slices"
    );
    assert!(o.work_done > 0.0);
}

fn hackbench(groups: usize, loops: u32, buffer: Buffer) -> Hackbench {
    Hackbench {
        on: 0,
        groups,
        fds: 20,
        loops,
        write_ns: 2_000,
        read_ns: 2_000,
        buffer,
    }
}

#[test]
fn a_closed_hackbench_delivers_every_message_and_every_task_exits() {
    fn closed<P: Policy>(buffer: Buffer) {
        // 2 groups of 20 + 20, 30 rounds: 24,000 messages, each checked in its sender's
        // order by its receiver (a violation otherwise); every task exits at its end.
        let cfg = config(
            Shape::flat(16),
            Source::Hackbench(hackbench(2, 30, buffer)),
            60,
        );
        let o = run::<P, 1000>(&cfg).unwrap();
        clean(&o);
        assert_eq!(
            o.tasks_completed,
            80,
            "{}: every sender and receiver",
            P::NAME
        );
        assert_eq!(o.work_unit, "messages");
        assert!(o.checks >= 24_000);
    }
    closed::<Patched>(Buffer::SOCKET);
    closed::<Legacy>(Buffer::SOCKET);
    closed::<Patched>(Buffer::PIPE);
    // One message of room: every write but the first of a burst waits for a read.
    closed::<Patched>(Buffer {
        capacity: 1,
        wake_writers_at: 0,
        wake_all_writers: true,
    });
}

#[test]
fn a_continuous_hackbench_keeps_every_cpu_of_an_overloaded_machine_busy() {
    // 4 groups (160 tasks) on 16 CPUs: each CPU reads or writes all the time, one message
    // a 4 us of CPU: 16 CPUs x 250,000 = 4,000,000 messages a second, give or take what the
    // buffers (up to 256 messages each) gain or lose over the measured window.
    let cfg = config(
        Shape::flat(16),
        Source::Hackbench(hackbench(4, 0, Buffer::SOCKET)),
        20,
    );
    let o = run::<Patched, 1000>(&cfg).unwrap();
    clean(&o);
    assert!(o.busy_ns as f64 > 0.99 * (o.busy_ns + o.idle_ns) as f64);
    let rate = o.work_done / ((cfg.sim_ns - warmup(cfg.sim_ns)) as f64 / 1e9);
    assert!(
        (3_800_000.0..=4_200_000.0).contains(&rate),
        "{rate} messages/s"
    );
}

#[test]
fn the_loads_survive_cpus_going_offline_and_back() {
    // Sleeping, spinning and queued tasks of both loads, with CPUs taken offline and back
    // every 2 ms: every invariant holds, and the loads go on.
    for source in [
        Source::Llama(Llama {
            threads: 12,
            ..TEAM
        }),
        Source::Hackbench(hackbench(1, 0, Buffer::SOCKET)),
    ] {
        let mut cfg = config(Shape::flat(16), source, 30);
        cfg.hotplug_every_ns = 2_000_000;
        let o = run::<Patched, 1000>(&cfg).unwrap();
        clean(&o);
        assert!(o.hotplug_cycles > 0);
        assert!(o.work_done > 0.0, "{}", o.work_unit);
    }
}

#[test]
fn the_benchmark_scenarios_run_checked_and_deterministic() {
    for (s, opts) in [
        (
            VirtualScenario::Llama,
            LoadOpts {
                threads: Some(16),
                ..Default::default()
            },
        ),
        (
            VirtualScenario::HackbenchProcess,
            LoadOpts {
                groups: Some(2),
                ..Default::default()
            },
        ),
        (
            VirtualScenario::HackbenchThread,
            LoadOpts {
                groups: Some(1),
                ..Default::default()
            },
        ),
    ] {
        let shape = s.shape(s.default_cpus());
        let workload = s.workload_with(&shape, &opts).unwrap();
        // hackbench makes some 40 events a simulated us on 80 CPUs: 2 ms of it.
        let ms = if s == VirtualScenario::Llama { 10 } else { 2 };
        let mut cfg = config(shape, workload.sources[0].clone(), ms);
        cfg.check_every = 4;
        let a = run::<Legacy, 1000>(&cfg).unwrap();
        let b = run::<Legacy, 1000>(&cfg).unwrap();
        clean(&a);
        assert!(a.work_done > 0.0, "{}", s.name());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}
