//! kernel/sched/topology.c's NOHZ part: the domain build's per-LLC state (`sd_llc`,
//! `sd_llc_shared->nr_busy_cpus`, `nohz_idle`) and each CPU's capacity facts (the base
//! domain's `imbalance_pct`, `arch_scale_cpu_capacity`), published as RCU publishes new
//! domains, and the `sched_asym_cpucapacity` key.
//!
//! C source: `kernel/sched/topology.c` (`build_sched_domains`, `partition_sched_domains`, `sd_llc`, `sd_llc_shared`, `sched_asym_cpucapacity`).

use super::{Fair, TopologyError};
use crate::cpu::{CpuId, NrCpuIds};
use crate::cpus::Cpus;
use crate::fair::hooks::{IdleCpus, Policy};
use crate::platform::Platform;
use crate::sync::{Ordering::Relaxed, SCHED_DOMAINS_PUBLISH};

impl<P: Policy, const N: usize, const W: usize> Fair<P, N, W> {
    /// `build_sched_domains`' NOHZ part: check the platform's topology, wait for a grace
    /// period, publish the next generation (see [`Machine::rebuild_sched_domains`](crate::Machine::rebuild_sched_domains)).
    pub(crate) fn rebuild_sched_domains<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        plat: &Pl,
    ) -> Result<(), TopologyError> {
        let nr = cpus.nr_cpu_ids();
        self.check_topology(nr, plat)?;
        plat.synchronize_rcu();
        self.publish_topology(cpus, nr, plat);
        Ok(())
    }

    /// Every CPU's LLC leader names itself and is not above the CPU, and the idle set's own
    /// layout of it fits (`Sharded`, before its shard map is first built at init; rebuilds
    /// leave the shards alone).
    pub(crate) fn check_topology<Pl: Platform<N>>(
        &self,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) -> Result<(), TopologyError> {
        self.check_llc_leaders(nr, plat)?;
        let (set, line) = self.nohz.idle_set();
        set.check(line, nr, plat)
    }

    /// Every CPU's LLC leader names itself and is not above the CPU.
    fn check_llc_leaders<Pl: Platform<N>>(
        &self,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) -> Result<(), TopologyError> {
        for cpu in nr.iter() {
            if let Some(leader) = plat.llc_leader(cpu)
                && (leader > cpu || plat.llc_leader(leader) != Some(leader))
            {
                return Err(TopologyError::BadLlcLeader {
                    cpu: cpu.index(),
                    leader: leader.index(),
                });
            }
        }
        Ok(())
    }

    /// Builds the next domain generation in the unused copy and publishes it. The caller
    /// guarantees a grace period since the previous publish (no CPU still reads or writes the
    /// copy written here) and that no other rebuild runs.
    pub(crate) fn publish_topology<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) {
        // Only rebuilds write the word, one at a time.
        let next = self.domains_gen.load(Relaxed).wrapping_add(1);
        let slot = (next & 1) as usize;
        // The LLC domain a CPU really gets: only CPUs with a base domain are in one (an
        // isolated CPU has no domains at all), and a span of one CPU is degenerate: the kernel
        // drops it (`sd_degenerate`), so that CPU's `sd_llc` is NULL and it never touches a
        // busy count. Count each span first, in the slots (no heap, O(nr_cpu_ids)).
        let has_domain = |cpu| cpus.cpu_active(cpu) && plat.has_sched_domain(cpu);
        let leader_of = |cpu| plat.llc_leader(cpu).filter(|_| has_domain(cpu));
        for (_, llc) in self.llcs.iter(nr) {
            llc.span_weight.store(0, Relaxed);
            llc.first.store(0, Relaxed);
            llc.nr_busy_cpus[slot].store(0, Relaxed);
        }
        // Ascending, so the first CPU counted under a hardware leader is the domain's first
        // CPU: the leader itself unless it is inactive or isolated.
        for cpu in nr.iter() {
            if let Some(key) = leader_of(cpu) {
                let llc = self.llcs.get(key);
                llc.span_weight
                    .store(llc.span_weight.load(Relaxed) + 1, Relaxed);
                if llc.first.load(Relaxed) == 0 {
                    llc.first.store(cpu.index() as u32 + 1, Relaxed);
                }
            }
        }
        // The domain's first CPU (`sd_llc_id`) names it; its slot holds the busy count. A
        // first CPU other than the hardware leader names that leader, so it is no key itself.
        let first_of = |key: CpuId<N>| {
            let llc = self.llcs.get(key);
            (llc.span_weight.load(Relaxed) >= 2)
                .then(|| {
                    nr.cpu((llc.first.load(Relaxed) as usize).wrapping_sub(1))
                        .ok()
                })
                .flatten()
        };
        // What the busy tick's check_cpu_capacity reads (the base domain's imbalance_pct, the
        // CPU's capacity), asked here, in process context, and never on the tick.
        for (cpu, rq) in self.rqs.iter(nr) {
            let leader = leader_of(cpu).and_then(first_of);
            let capacity = (plat.imbalance_pct(cpu), plat.arch_capacity(cpu));
            rq.set_domains(slot, has_domain(cpu), leader.map(CpuId::index), capacity);
        }
        // Every CPU of an LLC counts as busy in a fresh domain. Nobody else touches this copy.
        for key in nr.iter() {
            if let Some(first) = first_of(key) {
                let weight = self.llcs.get(key).span_weight.load(Relaxed);
                self.llcs.get(first).nr_busy_cpus[slot].store(weight as i32, Relaxed);
            }
        }
        // rcu_assign_pointer: the copy above, then the word that makes it current.
        self.domains_gen
            .store(next, SCHED_DOMAINS_PUBLISH.ordering());
        self.update_asym_cpucapacity_key(cpus, nr, plat);
    }

    /// The domain build's `sched_asym_cpucapacity` update: the key is on while any CPU has an
    /// `SD_ASYM_CPUCAPACITY` domain (a CPU without a base domain has none, whatever the
    /// platform says). The kernel counts one reference per domain partition that has such a
    /// domain (`build_sched_domains` increments, `detach_destroy_domains` decrements); the crate
    /// rebuilds the whole machine as one partition, so the count is 0 or 1 and the boolean API
    /// keeps it there (silently: the key is the crate's own, never shared with `inc`/`dec`).
    fn update_asym_cpucapacity_key<Pl: Platform<N>>(
        &self,
        cpus: &Cpus<N, W>,
        nr: NrCpuIds<N>,
        plat: &Pl,
    ) {
        let asym = nr
            .iter()
            .any(|cpu| self.rq(cpu).has_sched_domain() && plat.has_asym_cpucapacity(cpu));
        let sink = cpus.warnings().cpu_less();
        if asym {
            self.sched_asym_cpucapacity.enable(&sink);
        } else {
            self.sched_asym_cpucapacity.disable(&sink);
        }
    }
}
