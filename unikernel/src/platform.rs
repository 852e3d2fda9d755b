//! The platform traits for [`Kernel`]: every question the crate asks and every action it
//! orders, answered from the kernel's state and the hardware layer. Each method forwards, with
//! no branch or loop of its own (`ci/unikernel-glue.sh` fails on one).

use crate::hw::{self, apic::now_ns};
use crate::kernel::{self, CPUS, HZ, Kernel, NR};
use core::sync::atomic::Ordering::Relaxed;
use nohz::platform::{
    Balance, Clock, CpuIdleType, CpuState, IdleHooks, Ipi, NewidleOutcome, Softirq, TickHardware,
    Topology,
};
use nohz::{CpuId, Jiffies, Policy, Timekeeper};

type Cpu = CpuId<NR>;

/// Jiffies, kept by the crate's timekeeper from the TSC clock.
static TIME: Timekeeper<HZ> = Timekeeper::new();

impl<P: Policy> Clock for Kernel<P> {
    const HZ: u32 = HZ;
    fn jiffies(&self) -> Jiffies {
        TIME.jiffies()
    }
}
impl<P: Policy> CpuState<NR> for Kernel<P> {
    fn need_resched(&self, cpu: Cpu) -> bool {
        CPUS[cpu.index()].need_resched.load(Relaxed)
    }
    fn this_cpu(&self) -> Option<Cpu> {
        self.0.cpu(hw::cpu_index()).ok()
    }
    fn synchronize_rcu(&self) {
        kernel::synchronize_rcu();
    }
}
impl<P: Policy> Ipi<NR> for Kernel<P> {
    fn send_nohz_ipi(&self, _from: Cpu, to: Cpu) {
        kernel::send_kick(to.index());
    }
}
impl<P: Policy> Softirq<NR> for Kernel<P> {}
// One LLC for all CPUs, led by CPU 0: the default.
impl<P: Policy> Topology<NR> for Kernel<P> {}
impl<P: Policy> Balance<NR> for Kernel<P> {
    fn update_blocked_averages(&self, _by: Cpu, cpu: Cpu) -> bool {
        kernel::decay_blocked_load(cpu.index())
    }
    fn balance_domains(&self, by: Cpu, cpu: Cpu, idle: CpuIdleType) -> Jiffies {
        let interval = kernel::balance(self, by.index(), cpu.index(), idle);
        TIME.jiffies().add(interval)
    }
    fn newidle_balance(&self, cpu: Cpu, _t0: u64) -> NewidleOutcome {
        NewidleOutcome::pulled(kernel::pull(self, cpu.index(), 1) > 0)
    }
}
impl<P: Policy> TickHardware<NR> for Kernel<P> {
    fn ktime_get(&self) -> u64 {
        now_ns()
    }
    fn jiffies_update(&self) -> (Jiffies, u64) {
        TIME.jiffies_update()
    }
    fn update_jiffies(&self, now: u64) {
        TIME.update(now);
    }
    fn program_tick(&self, cpu: Cpu, expires: u64) {
        kernel::set_timer(cpu.index(), Some(expires));
    }
    fn cancel_tick(&self, cpu: Cpu) {
        kernel::set_timer(cpu.index(), None);
    }
    fn tick_expiry(&self, cpu: Cpu) -> u64 {
        CPUS[cpu.index()].tick_expiry.load(Relaxed)
    }
}
impl<P: Policy> IdleHooks<NR> for Kernel<P> {
    fn cpuidle_enter(&self, cpu: Cpu) {
        kernel::halt_idle(self, cpu.index());
    }
}
