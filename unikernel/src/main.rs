//! A bootable SMP x86-64 unikernel around `nohz`: real interrupts, a real LAPIC tick that the
//! crate stops and restarts, real nohz kick IPIs, `hlt` idle, hotplug, and a scenario whose
//! checks are counts printed over serial. See `ci/unikernel.sh`.
//!
//! # What it is
//!
//! The same kernel `harness/src/sim.rs` models with host threads, on (emulated) hardware: each
//! CPU runs a scheduler loop over a fixed-size run queue of tasks that do real CPU work (an
//! integer hash, in chunks); the LAPIC timer is the sched tick; the crate's `do_idle` is the
//! idle loop, halting with `sti; hlt`; the crate's kick is a LAPIC IPI whose handler calls its
//! csd entry; the balancer pulls tasks between run queues. Booted by QEMU's PVH loader
//! (`-kernel`), it takes `policy=legacy|patched` and `cpus=N` from the command line, runs the
//! scenario of [`scenario`] under that policy and exits through `isa-debug-exit`.
//!
//! # Layout
//!
//! - [`hw`]: boot (PVH note, 32-bit entry, long mode, AP trampoline), GDT/TSS/IST, IDT and
//!   its asm stubs, LAPIC, TSC clock, LAPIC timer, PIT calibration, IPIs, serial, exit.
//!   Nothing there knows about `nohz`.
//! - [`kernel`]: tasks, run queues, the scheduler loop, wakeups, the pull, round robin, the
//!   sched timer's software state, the model RCU.
//! - [`platform`]: every trait impl; [`glue`]: the embedding's helpers (CPU ids, the run-queue
//!   facts, the interrupt dispatch). The kernel calls the crate's entry points inline where it
//!   does each thing; `ci/unikernel-glue.sh` counts all of it, and fails if a trait impl
//!   holds a branch or a loop (an impl forwards; the kernel decides).
//! - [`checks`]: the reads of the crate's state the scenario's checks make.
//! - [`scenario`]: the phases and the table.
//!
//! # Memory map
//!
//! | physical | what |
//! |---|---|
//! | `0x8000` | the AP trampoline (copied there at boot; SIPI vector 8) |
//! | `0x10_0000` (1 MiB) | the image: `.note.Xen`, `.text`, `.rodata`, `.data`, then `.bss`: boot page tables, per-CPU kernel stacks (64 KiB) and IST stacks (2 x 32 KiB), both machines, run queues |
//! | `0xFEE0_0000` | the LAPIC, mapped uncached |
//!
//! The boot page tables identity-map the first 4 GiB with 2 MiB pages. No heap: every
//! structure is a fixed-size static (`MAX_CPUS` = 8 CPUs, 32 queued tasks per CPU).
//!
//! # Crates used, and why
//!
//! - `x86_64` (no default features, `instructions`): the GDT, TSS and IDT structures and the
//!   instructions that load them, port I/O. Interrupt entry is our own asm stubs (through
//!   `set_handler_addr`), since `extern "x86-interrupt"` is unstable and the handlers must
//!   save the SSE state the precompiled `core` uses.
//! - `x2apic` (xAPIC mode: QEMU's TCG has no x2APIC): the LAPIC's registers, timer modes and
//!   IPIs, INIT and SIPI. Its `LocalApic` is `!Send`, so each CPU keeps its own.
//! - `uart_16550`: COM1, the console.
//! - `spin`: the locks (run queues, the console, the jiffies update) and one-time init.
//!
//! Writing these by hand would be as many lines again, and each is a known-good reading of
//! the same manuals.
//!
//! # What is simplified
//!
//! - Scheduling is round robin: a task runs in chunks; the tick sets `need_resched` once the
//!   task has had [`kernel::SLICE_TICKS`] ticks and others are queued, and the task is put
//!   back at the tail at the next chunk boundary (preemption only at chunk boundaries).
//! - The balancer pulls up to two tasks from the busiest run queue, as the harness does; no
//!   load weights. One LLC; every CPU has a domain.
//! - `synchronize_rcu` waits until every other online CPU has taken an interrupt or entered
//!   idle after the call (a reschedule IPI makes a halted one take one).
//! - Hotplug parks the CPU in a `hlt` loop with its timer stopped (no INIT again) and brings
//!   it back with a reschedule IPI.
//! - No timer wheel: the next timer event is always "never"; only the tick programs the LAPIC.
#![no_std]
#![no_main]

pub mod checks;
pub mod glue;
pub mod hw;
pub mod kernel;
mod mem;
pub mod platform;
pub mod scenario;

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use kernel::{CPUS, Kernel};
use nohz::{Legacy, Machine, Patched, Policy};

/// The machine under the patched policy.
static M_PATCHED: nohz::machine!(Patched, kernel::NR) = Machine::new();
/// The machine under the legacy policy.
static M_LEGACY: nohz::machine!(Legacy, kernel::NR) = Machine::new();
static K_PATCHED: Kernel<Patched> = Kernel(&M_PATCHED);
static K_LEGACY: Kernel<Legacy> = Kernel(&M_LEGACY);

static PATCHED: AtomicBool = AtomicBool::new(true);
static GO: AtomicBool = AtomicBool::new(false);

/// A device interrupt on this CPU (from `hw::idt`), dispatched to the booted policy's kernel.
pub fn interrupt(vector: u8) {
    if !GO.load(Relaxed) {
        return;
    }
    if PATCHED.load(Relaxed) {
        glue::interrupt(&K_PATCHED, vector);
    } else {
        glue::interrupt(&K_LEGACY, vector);
    }
}

fn start<P: Policy>(k: &'static Kernel<P>, cpu: usize) -> ! {
    kernel::cpu_loop(k, cpu)
}

fn boot<P: Policy>(k: &'static Kernel<P>, n: usize) -> ! {
    let full: &[usize] = if n >= 4 { &[2, 3] } else { &[] };
    for &i in full {
        CPUS[i].nohz_full.store(true, Relaxed);
    }
    for c in &CPUS[..n] {
        c.online.store(true, Relaxed);
    }
    k.0.init(n, 0, k)
        .unwrap_or_else(|_| hw::fatal("Machine::init"));
    k.0.tick_nohz_full_setup(full.iter().copied())
        .unwrap_or_else(|_| hw::fatal("nohz_full"));
    k.0.enable_sched_clock_irqtime();
    x86_64::instructions::interrupts::without_interrupts(|| scenario::boot_tasks(k, full));
    GO.store(true, Relaxed);
    start(k, 0)
}

#[unsafe(no_mangle)]
extern "C" fn kernel_main(start_info: u32) -> ! {
    hw::serial::init();
    hw::apic::mask_pic();
    let mut buf = [0u8; 256];
    let cmdline = hw::cmdline(start_info, &mut buf);
    let arg = |key: &str| cmdline.split(' ').find_map(|w| w.strip_prefix(key));
    let n = arg("cpus=")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .clamp(1, hw::MAX_CPUS);
    let patched = arg("policy=") != Some("legacy");
    PATCHED.store(patched, Relaxed);
    kernel::NCPUS.store(n, Relaxed);
    hw::init_cpu(0);
    hw::apic::calibrate();
    let (tsc, lapic) = hw::apic::rates();
    println!("nohz unikernel: cmdline {cmdline:?}; tsc {tsc} Hz, lapic timer {lapic} Hz");
    if n > 1 && !hw::start_aps(n) {
        hw::fatal("APs did not come up");
    }
    println!(
        "boot: {} CPUs online at {} us",
        hw::online(),
        hw::apic::now_ns() / 1000
    );
    if patched {
        boot(&K_PATCHED, n)
    } else {
        boot(&K_LEGACY, n)
    }
}

#[unsafe(no_mangle)]
extern "C" fn ap_main(cpu: u32) -> ! {
    let cpu = cpu as usize;
    if cpu >= kernel::NCPUS.load(Relaxed) {
        loop {
            x86_64::instructions::interrupts::disable();
            x86_64::instructions::hlt();
        }
    }
    hw::init_cpu(cpu);
    while !GO.load(Relaxed) {
        core::hint::spin_loop();
    }
    if PATCHED.load(Relaxed) {
        start(&K_PATCHED, cpu)
    } else {
        start(&K_LEGACY, cpu)
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hw::serial::emergency(format_args!(
        "\nPANIC on cpu {}: {}\n",
        hw::cpu_index(),
        info
    ));
    hw::exit_qemu(hw::EXIT_FAIL)
}
