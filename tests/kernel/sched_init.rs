//! `sched_init` / `init_sched_fair_class`: what `Machine::init` checks and the defaults it sets.

use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, Ipi, NewidleOutcome, Softirq, Topology,
};
use nohz::{CpuId, Jiffies, NohzFlags, Policy};
use nohz::{InitError, SCHED_MIGRATION_COST_NS, TopologyError};
use nohz_testing::for_each_policy;
use nohz_testing::{CPUS as N, HostPlatform, START_JIFFIES, World};

/// A platform that builds its CPU ids the natural way, from the machine (`machine.cpu(i)`),
/// which answers only once `nr_cpu_ids` is set. Every CPU names CPU `leader` as the lowest
/// CPU of its LLC; everything else is the host platform's.
struct MachineIds<'a, P: Policy> {
    host: &'a HostPlatform<N>,
    m: &'a nohz::machine!(P, N),
    leader: usize,
}

impl<P: Policy> Clock for MachineIds<'_, P> {
    fn jiffies(&self) -> Jiffies {
        self.host.jiffies()
    }
}

impl<P: Policy> CpuState<N> for MachineIds<'_, P> {
    fn need_resched(&self, cpu: CpuId<N>) -> bool {
        self.host.need_resched(cpu)
    }
    fn this_cpu(&self) -> Option<CpuId<N>> {
        self.host.this_cpu()
    }
    fn synchronize_rcu(&self) {
        self.host.synchronize_rcu();
    }
}

impl<P: Policy> Ipi<N> for MachineIds<'_, P> {
    fn send_nohz_ipi(&self, from: CpuId<N>, target: CpuId<N>) {
        self.host.send_nohz_ipi(from, target);
    }
}

impl<P: Policy> Softirq<N> for MachineIds<'_, P> {
    fn raise_sched_softirq(&self, cpu: CpuId<N>) {
        self.host.raise_sched_softirq(cpu);
    }
}

impl<P: Policy> Topology<N> for MachineIds<'_, P> {
    fn has_sched_domain(&self, cpu: CpuId<N>) -> bool {
        self.host.has_sched_domain(cpu)
    }
    fn llc_leader(&self, _cpu: CpuId<N>) -> Option<CpuId<N>> {
        self.m.cpu(self.leader).ok()
    }
}

impl<P: Policy> Balance<N> for MachineIds<'_, P> {
    fn update_blocked_averages(&self, by: CpuId<N>, cpu: CpuId<N>) -> bool {
        self.host.update_blocked_averages(by, cpu)
    }
    fn update_rq_clock(&self, by: CpuId<N>, cpu: CpuId<N>) {
        self.host.update_rq_clock(by, cpu);
    }
    fn balance_domains(&self, by: CpuId<N>, cpu: CpuId<N>, idle: CpuIdleType) -> Jiffies {
        self.host.balance_domains(by, cpu, idle)
    }
    fn sched_clock_cpu(&self, cpu: CpuId<N>) -> u64 {
        self.host.sched_clock_cpu(cpu)
    }
    fn newidle_balance(&self, cpu: CpuId<N>, t0: u64) -> NewidleOutcome {
        self.host.newidle_balance(cpu, t0)
    }
}

fn unbooted<P: Policy>(nr: usize) -> World<P> {
    World::unbooted(nr, Jiffies::new(START_JIFFIES))
}

/// The topology is checked with the platform's answers once the count is known: a platform
/// whose ids come from the machine gets the same check at init as at a rebuild.
fn a_bad_topology_from_machine_built_ids_is_refused_and_changes_nothing<P: Policy>() {
    let w = unbooted::<P>(8);
    let (p, m) = (&*w.p, &*w.m);
    let bad = MachineIds {
        host: p,
        m,
        leader: 3,
    };
    assert_eq!(
        m.init(8, 0, &bad),
        Err(InitError::Topology(TopologyError::BadLlcLeader {
            cpu: 0,
            leader: 3
        })),
        "CPU 0 names CPU 3, above it, as its LLC's lowest CPU"
    );
    assert_eq!(m.nr_cpu_ids().get(), 0, "refused: still not booted");
    assert!(m.cpu(0).is_err());
    assert_eq!(m.tick_do_timer_cpu(), None);
    assert_eq!(m.warnings().outside_cpus(), 0);
    // Nothing was applied: a good init afterwards builds its own topology from scratch.
    let good = MachineIds {
        host: p,
        m,
        leader: 0,
    };
    assert_eq!(m.init(8, 0, &good).map(|n| n.get()), Ok(8));
    for cpu in m.nr_cpu_ids().iter() {
        assert_eq!(m.llc_leader(cpu), Some(0));
    }
    assert_eq!(m.llc_nr_busy_cpus(m.cpu(5).unwrap()), Some(8));
}

/// `sched_init` starts every rq's `avg_idle` at twice the migration cost, so a machine whose
/// embedding never sets it still gets its newidle blocked-load refreshes.
fn init_sets_avg_idle_so_newidle_requests_a_refresh<P: Policy>() {
    let w = unbooted::<P>(4);
    let (p, m) = (&*w.p, &*w.m);
    m.init(4, 0, p).unwrap();
    for cpu in m.nr_cpu_ids().iter() {
        assert_eq!(m.rq(cpu).avg_idle(), 2 * SCHED_MIGRATION_COST_NS);
    }
    // CPU 1 registers idle (blocked load pending); CPU 3 goes idle pulling nothing.
    let (c1, c3) = (m.cpu(1).unwrap(), m.cpu(3).unwrap());
    m.rq(c1).set_curr_is_idle(true);
    m.nohz_balance_enter_idle(c1, p);
    m.rq(c3).set_curr_is_idle(true);
    p.clock().advance(1);
    assert!(!m.sched_balance_newidle(c3, p));
    assert!(
        m.rq(c3).nohz_flags().load().contains(NohzFlags::NEWILB),
        "a NEWILB pass is requested with no set_avg_idle"
    );
}

for_each_policy!(
    a_bad_topology_from_machine_built_ids_is_refused_and_changes_nothing,
    init_sets_avg_idle_so_newidle_requests_a_refresh,
);
